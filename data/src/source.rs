//! Where ruleset files come from: [`Files`] reads them from disk, optionally confined to a set
//! of root directories and always within size limits, or from a [`Bundle`] kept in memory (the
//! exact files an earlier load read). Every file a load reads goes through one `Files`, which
//! records what it read, so the same load can be repeated later from the bundle.
//!
//! Confinement (for paths a remote client names):
//! - a path is made absolute and normalized lexically (`.` and `..` resolved) and must lie under
//!   a root; a path outside is refused before the file system is asked anything about it, so the
//!   answer says nothing about whether it exists;
//! - the path is then canonicalized (symbolic links followed) and must still lie under a root;
//! - only regular files are read (no devices, pipes or `/proc` files), at most
//!   [`ReadLimits::max_file_bytes`] each and [`ReadLimits::max_total_bytes`] in all, with no line
//!   longer than [`ReadLimits::max_line_bytes`].
//!
//! Error messages name the path as given and never quote a file's content.

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

/// Size limits on reading ruleset files.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReadLimits {
    /// Largest file.
    pub max_file_bytes: u64,
    /// Most bytes one load reads, over all its files.
    pub max_total_bytes: u64,
    /// Longest line in a file.
    pub max_line_bytes: usize,
}

impl Default for ReadLimits {
    /// 16 MiB a file, 256 MiB a load, 64 KiB a line: PCGen's largest data files are a few MiB,
    /// their longest lines a few KiB.
    fn default() -> Self {
        ReadLimits { max_file_bytes: 16 << 20, max_total_bytes: 256 << 20, max_line_bytes: 64 << 10 }
    }
}

impl ReadLimits {
    /// Checks a text's lines against the line limit; the error names the line.
    pub fn check_lines(&self, name: &str, text: &str) -> Result<(), String> {
        match text.split('\n').enumerate().find(|(_, l)| l.len() > self.max_line_bytes) {
            Some((n, l)) => Err(format!(
                "{name}: line {} is {} bytes long; the limit is {} bytes",
                n + 1,
                l.len(),
                self.max_line_bytes
            )),
            None => Ok(()),
        }
    }
}

/// The files one load read: absolute, normalized path → text; and the files it only checked
/// for (a PCGen campaign names files it does not read).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Bundle {
    pub files: BTreeMap<String, Arc<str>>,
    pub present: std::collections::BTreeSet<String>,
}

impl Bundle {
    /// Total bytes of text.
    pub fn bytes(&self) -> usize {
        self.files.values().map(|t| t.len()).sum()
    }
}

enum Origin {
    /// The file system; `Some(roots)` confines reads to them (each kept as configured, made
    /// absolute and normalized, and canonicalized).
    Disk(Option<Vec<(PathBuf, PathBuf)>>),
    Memory(Bundle),
}

/// Reads ruleset files (see the module docs). Used by one load on one thread.
pub struct Files {
    origin: Origin,
    limits: ReadLimits,
    total: Cell<u64>,
    read: RefCell<Bundle>,
}

/// `path` made absolute (against the current directory) with `.` and `..` resolved lexically.
pub fn normalize(path: &Path) -> PathBuf {
    let abs = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let mut out = PathBuf::new();
    for c in abs.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

impl Files {
    /// The whole file system (for the operator's own paths), with default limits.
    pub fn disk() -> Files {
        Files::new(Origin::Disk(None))
    }

    /// Only files under `roots`. A root that does not exist is kept (it confines all the same)
    /// but matches nothing.
    pub fn confined(roots: &[PathBuf]) -> Files {
        let roots = roots
            .iter()
            .map(|r| {
                let lexical = normalize(r);
                let canonical = std::fs::canonicalize(r).unwrap_or_else(|_| lexical.clone());
                (lexical, canonical)
            })
            .collect();
        Files::new(Origin::Disk(Some(roots)))
    }

    /// Only the files of a bundle.
    pub fn memory(bundle: Bundle) -> Files {
        Files::new(Origin::Memory(bundle))
    }

    fn new(origin: Origin) -> Files {
        Files { origin, limits: ReadLimits::default(), total: Cell::new(0), read: RefCell::default() }
    }

    pub fn with_limits(mut self, limits: ReadLimits) -> Files {
        self.limits = limits;
        self
    }

    pub fn limits(&self) -> &ReadLimits {
        &self.limits
    }

    /// What has been read (and checked for) so far.
    pub fn into_bundle(self) -> Bundle {
        let mut b = self.read.into_inner();
        let Bundle { files, present } = &mut b;
        present.retain(|p| !files.contains_key(p));
        b
    }

    /// Where `path` may be read from: its canonical path, or why not.
    fn allowed(&self, path: &Path) -> Result<PathBuf, String> {
        let shown = path.display();
        let Origin::Disk(roots) = &self.origin else {
            return Err(format!("`{shown}` is not part of this ruleset version"));
        };
        let lexical = normalize(path);
        if let Some(roots) = roots
            && !roots.iter().any(|(l, c)| lexical.starts_with(l) || lexical.starts_with(c))
        {
            return Err(format!("`{shown}` is outside the ruleset roots"));
        }
        let canonical = std::fs::canonicalize(&lexical).map_err(|e| format!("cannot read `{shown}`: {e}"))?;
        if let Some(roots) = roots
            && !roots.iter().any(|(_, c)| canonical.starts_with(c))
        {
            return Err(format!("`{shown}` leads outside the ruleset roots (through a symbolic link)"));
        }
        Ok(canonical)
    }

    /// Whether `path` is a regular file this reader may read.
    pub fn is_file(&self, path: &Path) -> bool {
        match &self.origin {
            Origin::Memory(b) => {
                let k = key(path);
                b.files.contains_key(&k) || b.present.contains(&k)
            }
            Origin::Disk(_) => {
                let found = self.allowed(path).is_ok_and(|c| c.is_file());
                if found {
                    self.read.borrow_mut().present.insert(key(path));
                }
                found
            }
        }
    }

    /// Whether `path` is a directory this reader may list.
    pub fn is_dir(&self, path: &Path) -> bool {
        match &self.origin {
            Origin::Memory(b) => {
                let dir = normalize(path);
                b.files.keys().any(|k| Path::new(k).parent() == Some(dir.as_path()))
            }
            Origin::Disk(_) => self.allowed(path).is_ok_and(|c| c.is_dir()),
        }
    }

    /// The regular files directly in `dir` whose extension is `ext`, sorted by name.
    pub fn list(&self, dir: &Path, ext: &str) -> Result<Vec<PathBuf>, String> {
        let has_ext = |p: &Path| p.extension().is_some_and(|e| e.eq_ignore_ascii_case(ext));
        match &self.origin {
            Origin::Memory(b) => {
                let dir = normalize(dir);
                Ok(b.files
                    .keys()
                    .map(PathBuf::from)
                    .filter(|p| p.parent() == Some(dir.as_path()) && has_ext(p))
                    .collect())
            }
            Origin::Disk(_) => {
                self.allowed(dir)?;
                let rd = std::fs::read_dir(dir)
                    .map_err(|e| format!("cannot read directory `{}`: {e}", dir.display()))?;
                let mut files: Vec<PathBuf> = rd
                    .filter_map(Result::ok)
                    .map(|e| e.path())
                    .filter(|p| has_ext(p) && self.is_file(p))
                    .collect();
                files.sort();
                Ok(files)
            }
        }
    }

    /// Reads a file's text (invalid UTF-8 replaced), within the limits.
    pub fn read(&self, path: &Path) -> Result<Arc<str>, String> {
        let shown = path.display().to_string();
        let text: Arc<str> = match &self.origin {
            Origin::Memory(b) => b
                .files
                .get(&key(path))
                .cloned()
                .ok_or_else(|| format!("`{shown}` is not part of this ruleset version"))?,
            Origin::Disk(_) => {
                let canonical = self.allowed(path)?;
                let meta =
                    std::fs::metadata(&canonical).map_err(|e| format!("cannot read `{shown}`: {e}"))?;
                if !meta.is_file() {
                    return Err(format!("`{shown}` is not a regular file"));
                }
                let max = self.limits.max_file_bytes;
                if meta.len() > max {
                    return Err(format!("`{shown}` is {} bytes; the limit is {max} bytes", meta.len()));
                }
                let file =
                    std::fs::File::open(&canonical).map_err(|e| format!("cannot read `{shown}`: {e}"))?;
                // The size was checked, but a file can grow meanwhile: never read past the limit.
                let mut bytes = Vec::new();
                file.take(max + 1)
                    .read_to_end(&mut bytes)
                    .map_err(|e| format!("cannot read `{shown}`: {e}"))?;
                if bytes.len() as u64 > max {
                    return Err(format!("`{shown}` is over {max} bytes; the limit is {max} bytes"));
                }
                Arc::from(String::from_utf8_lossy(&bytes).as_ref())
            }
        };
        self.limits.check_lines(&shown, &text)?;
        let total = self.total.get() + text.len() as u64;
        if total > self.limits.max_total_bytes {
            return Err(format!(
                "reading `{shown}` takes this ruleset over its limit of {} bytes in all",
                self.limits.max_total_bytes
            ));
        }
        self.total.set(total);
        self.read.borrow_mut().files.insert(key(path), text.clone());
        Ok(text)
    }
}

fn key(path: &Path) -> String {
    normalize(path).display().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn confined_reads_stay_under_the_roots() {
        let dir = tempfile::tempdir().expect("temp dir");
        let root = dir.path().join("root");
        std::fs::create_dir_all(root.join("sub")).expect("mkdir");
        std::fs::write(root.join("sub/a.toml"), "x = 1\n").expect("write");
        std::fs::write(dir.path().join("secret.txt"), "top secret\n").expect("write");
        let files = Files::confined(std::slice::from_ref(&root));
        assert_eq!(&*files.read(&root.join("sub/a.toml")).expect("inside"), "x = 1\n");
        assert!(files.read(&root.join("sub/../sub/a.toml")).is_ok(), "dots inside the root");
        for outside in [
            dir.path().join("secret.txt"),
            root.join("../secret.txt"),
            root.join("sub/../../secret.txt"),
            PathBuf::from("/etc/passwd"),
            PathBuf::from("/proc/self/environ"),
            PathBuf::from("/dev/zero"),
            dir.path().join("does-not-exist"),
        ] {
            let e = files.read(&outside).expect_err("outside");
            assert!(e.contains("outside the ruleset roots"), "{e}");
            assert!(!e.contains("top secret") && !e.contains("No such file"), "{e}");
        }
        // A link inside the root that leads out is refused.
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink(dir.path().join("secret.txt"), root.join("link.toml")).expect("link");
            let e = files.read(&root.join("link.toml")).expect_err("escapes");
            assert!(e.contains("symbolic link"), "{e}");
            assert!(!files.is_file(&root.join("link.toml")));
            assert_eq!(files.list(&root, "toml").expect("list"), Vec::<PathBuf>::new());
        }
        let b = files.into_bundle();
        assert_eq!(b.files.len(), 1);
    }

    #[test]
    fn only_regular_files_within_the_limits() {
        let dir = tempfile::tempdir().expect("temp dir");
        let files = Files::disk().with_limits(ReadLimits {
            max_file_bytes: 10,
            max_total_bytes: 15,
            max_line_bytes: 4,
        });
        assert!(files.read(Path::new("/dev/zero")).expect_err("device").contains("not a regular file"));
        assert!(files.read(dir.path()).expect_err("directory").contains("not a regular file"));
        std::fs::write(dir.path().join("big"), "0123456789ab").expect("write");
        assert!(files.read(&dir.path().join("big")).expect_err("big").contains("the limit is 10 bytes"));
        std::fs::write(dir.path().join("long"), "ab\nabcde\n").expect("write");
        assert!(files.read(&dir.path().join("long")).expect_err("line").contains("line 2 is 5 bytes"));
        std::fs::write(dir.path().join("a"), "abcd\nabcd").expect("write");
        files.read(&dir.path().join("a")).expect("9 bytes");
        let e = files.read(&dir.path().join("a")).expect_err("18 bytes in all");
        assert!(e.contains("in all"), "{e}");
    }

    #[test]
    fn a_bundle_repeats_a_load_without_the_disk() {
        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::write(dir.path().join("a.toml"), "a").expect("write");
        std::fs::write(dir.path().join("b.toml"), "b").expect("write");
        let files = Files::disk();
        for p in files.list(dir.path(), "toml").expect("list") {
            files.read(&p).expect("read");
        }
        let bundle = files.into_bundle();
        std::fs::remove_file(dir.path().join("a.toml")).expect("rm");
        let again = Files::memory(bundle);
        assert!(again.is_dir(dir.path()));
        let listed = again.list(dir.path(), "toml").expect("list");
        assert_eq!(listed.len(), 2);
        assert_eq!(&*again.read(&listed[0]).expect("from memory"), "a");
        assert!(again.read(Path::new("/etc/passwd")).is_err());
    }
}
