//! The store's journal (`sheetd.journal`): where Apply's revisions are made durable first.
//!
//! A revision committed straight into the B-tree costs a redb transaction: about eight
//! scattered page writes and an fsync, where the record itself is a few hundred bytes. So the
//! group commit (see [`super::redb`]) writes each group's revisions as one *frame* appended to
//! this file, and one `fdatasync` makes them durable. The journal is moved into the B-tree
//! later, many frames in one transaction (a *checkpoint*), and then emptied.
//!
//! **Format.** The file is written once with zeros to its capacity (4 MiB, more when a frame
//! needs it), so that appending rewrites blocks that exist and syncing writes data, not the
//! file's size or new extents. The zeros go in one page (4 KiB) per write, and a journal
//! that exists is written back over itself the same way when it is opened, so that the page
//! cache holds it in pages of 4 KiB: see [`PAGE`]. It starts with a 16-byte header: the
//! magic `SHEETDJ1` and the current *generation* (`u64`, little-endian). Frames follow, back
//! to back:
//!
//! | bytes | field |
//! |---|---|
//! | 4 | payload length `n` (`u32` LE, never 0) |
//! | 4 | CRC-32 of the generation's 8 bytes and the payload |
//! | 8 | generation (`u64` LE) |
//! | `n` | payload: the group's appends |
//!
//! Each append in a payload is: the sheet id (`u32` length, UTF-8 bytes), the revision (`u64`),
//! the sealed log record (`u32` length, bytes), then `0`, or `1` followed by the snapshot's
//! revision (`u64`) and its sealed record (`u32` length, bytes). The records are sealed exactly
//! as the B-tree keeps them (checksum included), so moving them there copies bytes.
//!
//! **Reading.** Frames are read from offset 16 while each has the header's generation, fits in
//! the file and matches its CRC; the first that does not ends the journal. A frame torn by a
//! crash fails its CRC (its writer was never answered); frames of an earlier generation are
//! what a checkpoint left behind. Emptying the journal writes a new generation into the header
//! and syncs it: every frame after it is then stale at once.
//!
//! **Invariant.** A revision is answered only once its frame is synced; it stays in the journal
//! until a checkpoint has committed it to the B-tree durably; opening the store replays the
//! journal into the B-tree before anything reads it. Replaying twice writes the same keys with
//! the same bytes.

use super::StoreError;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

const MAGIC: [u8; 8] = *b"SHEETDJ1";
/// The header: magic, generation.
const HEADER: u64 = 16;
/// A frame's head: length, CRC, generation.
const FRAME_HEAD: usize = 16;
/// The capacity a new journal is zeroed to.
const CAPACITY: u64 = 4 << 20;
/// How much of the journal one write puts in the page cache when it is zeroed or rewritten.
///
/// Linux (ext4 since 6.x) caches a file written in large pieces in large *folios*, and a
/// sync writes back every folio a write dirtied, whole. A frame of a few hundred bytes then
/// cost writing back up to a megabyte: `fdatasync` after a 634-byte write into a 4 MiB file
/// took 171 µs at the median when the file was zeroed in one write, 159 µs in 1 MiB writes,
/// 146 µs in 4 KiB writes, against 141 µs for a file of one page (same run, 1,200 rounds).
/// Written a page at a time, the cache holds pages, and a frame's sync writes the one or two
/// it touched.
const PAGE: usize = 4096;

/// One revision (and maybe a snapshot) for the log, sealed and ready to write.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Append {
    pub sheet: String,
    pub revision: u64,
    pub log: Vec<u8>,
    pub snapshot: Option<(u64, Vec<u8>)>,
}

/// An open journal, owned by the group commit's leader.
pub(super) struct Journal {
    file: File,
    path: PathBuf,
    generation: u64,
    /// Where the next frame goes: after the last valid one.
    end: u64,
    /// The file's length: bytes that exist (zeros beyond `end`).
    capacity: u64,
}

fn failed(path: &Path, what: &str, e: std::io::Error) -> StoreError {
    StoreError::Failed(format!("store: journal {}: {what}: {e}", path.display()))
}

fn frame_crc(generation: u64, payload: &[u8]) -> u32 {
    let mut h = crc32fast::Hasher::new();
    h.update(&generation.to_le_bytes());
    h.update(payload);
    h.finalize()
}

impl Journal {
    /// Opens the journal at `path`, creating it (zeroed, empty) when there is none; returns it
    /// with the appends of its valid frames, in order.
    pub fn open(path: &Path) -> Result<(Journal, Vec<Append>), StoreError> {
        if !path.exists() {
            let file = std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .create_new(true)
                .open(path)
                .map_err(|e| failed(path, "cannot create it", e))?;
            let mut j = Journal { file, path: path.to_owned(), generation: 1, end: HEADER, capacity: 0 };
            j.grow(CAPACITY)?;
            j.write_header()?;
            j.file.sync_all().map_err(|e| failed(path, "cannot sync it", e))?;
            // The new file's name is durable once its directory is synced.
            if let Some(dir) = path.parent() {
                File::open(dir)
                    .and_then(|d| d.sync_all())
                    .map_err(|e| failed(path, "cannot sync its directory", e))?;
            }
            return Ok((j, Vec::new()));
        }
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(path)
            .map_err(|e| failed(path, "cannot open it", e))?;
        let bytes = std::fs::read(path).map_err(|e| failed(path, "cannot read it", e))?;
        let (generation, end, appends) = read(path, &bytes)?;
        let capacity = bytes.len() as u64;
        let j = Journal { file, path: path.to_owned(), generation, end, capacity };
        j.recache(&bytes)?;
        Ok((j, appends))
    }

    /// Puts the journal back in the page cache a page at a time (see [`PAGE`]): reading it
    /// cached it in large folios. Its cached pages are dropped, then its own bytes are
    /// written back over it, page by page, and synced. The content never changes, so a
    /// crash in between leaves the file as it was.
    fn recache(&self, bytes: &[u8]) -> Result<(), StoreError> {
        #[cfg(target_os = "linux")]
        {
            use std::os::fd::AsRawFd;
            // SAFETY: a plain advisory call on an open descriptor; it reads and writes no memory.
            unsafe { libc::posix_fadvise(self.file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
        }
        for (i, page) in bytes.chunks(PAGE).enumerate() {
            self.file
                .write_all_at(page, (i * PAGE) as u64)
                .map_err(|e| failed(&self.path, "cannot rewrite it", e))?;
        }
        self.file.sync_data().map_err(|e| failed(&self.path, "cannot sync it", e))
    }

    /// Bytes of frames in the journal.
    pub fn used(&self) -> u64 {
        self.end - HEADER
    }

    /// Appends one frame holding `appends` and syncs it. On an error the frame does not count:
    /// the next one is written over it.
    pub fn write(&mut self, appends: &[&Append]) -> Result<(), StoreError> {
        let mut frame = vec![0u8; FRAME_HEAD];
        for a in appends {
            encode(a, &mut frame);
        }
        let n = frame.len() - FRAME_HEAD;
        let len = u32::try_from(n)
            .map_err(|_| StoreError::Failed(format!("store: journal: a frame of {n} bytes is too large")))?;
        let crc = frame_crc(self.generation, &frame[FRAME_HEAD..]);
        frame[0..4].copy_from_slice(&len.to_le_bytes());
        frame[4..8].copy_from_slice(&crc.to_le_bytes());
        frame[8..16].copy_from_slice(&self.generation.to_le_bytes());
        let need = self.end + frame.len() as u64;
        if need > self.capacity {
            // Room for this frame and as much again: rare (a checkpoint empties the journal
            // long before it fills), and synced before the frame relies on it.
            self.grow(need.max(self.capacity) * 2)?;
            self.file.sync_all().map_err(|e| failed(&self.path, "cannot sync it", e))?;
        }
        self.file
            .write_all_at(&frame, self.end)
            .map_err(|e| failed(&self.path, "cannot write a frame", e))?;
        self.file.sync_data().map_err(|e| failed(&self.path, "cannot sync a frame", e))?;
        self.end = need;
        Ok(())
    }

    /// Empties the journal: a new generation in the header, synced (its frames are then stale).
    pub fn reset(&mut self) -> Result<(), StoreError> {
        self.generation += 1;
        self.write_header()?;
        self.file.sync_data().map_err(|e| failed(&self.path, "cannot sync its header", e))?;
        self.end = HEADER;
        Ok(())
    }

    fn write_header(&mut self) -> Result<(), StoreError> {
        let mut header = [0u8; HEADER as usize];
        header[..8].copy_from_slice(&MAGIC);
        header[8..].copy_from_slice(&self.generation.to_le_bytes());
        self.file.write_all_at(&header, 0).map_err(|e| failed(&self.path, "cannot write its header", e))
    }

    /// Extends the file with zeros to `to` bytes, a page per write (see [`PAGE`]).
    fn grow(&mut self, to: u64) -> Result<(), StoreError> {
        let zeros = [0u8; PAGE];
        let mut at = self.capacity;
        while at < to {
            let n = ((to - at) as usize).min(PAGE);
            self.file.write_all_at(&zeros[..n], at).map_err(|e| failed(&self.path, "cannot extend it", e))?;
            at += n as u64;
        }
        self.capacity = self.capacity.max(to);
        Ok(())
    }
}

/// Reads a journal's bytes without changing anything (see the module docs): its generation,
/// where its valid frames end, and their appends. A frame that passes its CRC but does not
/// parse is damage, reported as such.
pub(super) fn read(path: &Path, bytes: &[u8]) -> Result<(u64, u64, Vec<Append>), StoreError> {
    let damaged =
        |why: String| StoreError::Damaged(format!("store: journal {} is damaged: {why}", path.display()));
    if bytes.len() < HEADER as usize || bytes[..8] != MAGIC {
        return Err(damaged("it does not start with SHEETDJ1".into()));
    }
    let generation = u64::from_le_bytes(take8(&bytes[8..16]));
    let mut appends = Vec::new();
    let mut at = HEADER as usize;
    while let Some(head) = bytes.get(at..at + FRAME_HEAD) {
        let len = u32::from_le_bytes([head[0], head[1], head[2], head[3]]) as usize;
        let crc = u32::from_le_bytes([head[4], head[5], head[6], head[7]]);
        let gen_ = u64::from_le_bytes(take8(&head[8..16]));
        let Some(payload) = bytes.get(at + FRAME_HEAD..at + FRAME_HEAD + len) else { break };
        if len == 0 || gen_ != generation || crc != frame_crc(generation, payload) {
            break;
        }
        decode(payload, &mut appends).map_err(|why| damaged(format!("the frame at byte {at}: {why}")))?;
        at += FRAME_HEAD + len;
    }
    Ok((generation, at as u64, appends))
}

fn take8(b: &[u8]) -> [u8; 8] {
    let mut out = [0u8; 8];
    out.copy_from_slice(&b[..8]);
    out
}

fn put_bytes(out: &mut Vec<u8>, b: &[u8]) {
    // Records and ids are far below 4 GiB: the API's request limit bounds them.
    out.extend_from_slice(&(b.len() as u32).to_le_bytes());
    out.extend_from_slice(b);
}

fn encode(a: &Append, out: &mut Vec<u8>) {
    put_bytes(out, a.sheet.as_bytes());
    out.extend_from_slice(&a.revision.to_le_bytes());
    put_bytes(out, &a.log);
    match &a.snapshot {
        None => out.push(0),
        Some((r, bytes)) => {
            out.push(1);
            out.extend_from_slice(&r.to_le_bytes());
            put_bytes(out, bytes);
        }
    }
}

/// Reads a payload's appends onto `out`.
fn decode(mut p: &[u8], out: &mut Vec<Append>) -> Result<(), String> {
    fn bytes<'a>(p: &mut &'a [u8]) -> Result<&'a [u8], String> {
        let n = u32::from_le_bytes(take(p, 4)?.try_into().map_err(|_| "short length")?) as usize;
        take(p, n)
    }
    fn take<'a>(p: &mut &'a [u8], n: usize) -> Result<&'a [u8], String> {
        let (head, rest) = p.split_at_checked(n).ok_or("it is truncated")?;
        *p = rest;
        Ok(head)
    }
    fn u64_(p: &mut &[u8]) -> Result<u64, String> {
        Ok(u64::from_le_bytes(take(p, 8)?.try_into().map_err(|_| "short number")?))
    }
    while !p.is_empty() {
        let sheet = std::str::from_utf8(bytes(&mut p)?).map_err(|_| "a sheet id is not UTF-8")?.to_owned();
        let revision = u64_(&mut p)?;
        let log = bytes(&mut p)?.to_vec();
        let snapshot = match take(&mut p, 1)? {
            [0] => None,
            [1] => {
                let r = u64_(&mut p)?;
                Some((r, bytes(&mut p)?.to_vec()))
            }
            _ => return Err("a snapshot flag is neither 0 nor 1".into()),
        };
        out.push(Append { sheet, revision, log, snapshot });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn append(sheet: &str, revision: u64, snapshot: bool) -> Append {
        Append {
            sheet: sheet.into(),
            revision,
            log: vec![revision as u8; 40],
            snapshot: snapshot.then(|| (revision, vec![7; 300])),
        }
    }

    /// A new journal in a temporary directory (kept alive by the first element).
    fn fresh() -> (tempfile::TempDir, PathBuf, Journal) {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("j");
        let (j, found) = Journal::open(&path).expect("create");
        assert!(found.is_empty());
        (dir, path, j)
    }

    #[test]
    fn frames_survive_reopening_and_a_reset_empties_them() {
        let (_dir, path, mut j) = fresh();
        assert_eq!(std::fs::metadata(&path).expect("meta").len(), CAPACITY);
        let (a, b, c) = (append("s1", 1, false), append("s2", 1, true), append("s1", 2, false));
        j.write(&[&a, &b]).expect("frame 1");
        j.write(&[&c]).expect("frame 2");
        drop(j);
        let (mut j, found) = Journal::open(&path).expect("reopen");
        assert_eq!(found, vec![a.clone(), b, c]);
        j.reset().expect("reset");
        drop(j);
        let (mut j, found) = Journal::open(&path).expect("reopen");
        assert!(found.is_empty(), "frames of the old generation are stale");
        // A frame written after the reset lands where the stale ones were and is read alone.
        j.write(&[&a]).expect("frame");
        drop(j);
        assert_eq!(Journal::open(&path).expect("reopen").1, vec![a]);
    }

    /// The layout the module docs (and `docs/api.md`) describe, byte by byte.
    #[test]
    fn the_bytes_are_as_documented() {
        let (_dir, path, mut j) = fresh();
        let a =
            Append { sheet: "s".into(), revision: 7, log: vec![0xAB; 3], snapshot: Some((7, vec![0xCD])) };
        j.write(&[&a]).expect("frame");
        let bytes = std::fs::read(&path).expect("read");
        assert_eq!(&bytes[..8], b"SHEETDJ1");
        assert_eq!(bytes[8..16], 1u64.to_le_bytes(), "generation 1");
        let mut payload = Vec::new();
        payload.extend_from_slice(&1u32.to_le_bytes());
        payload.extend_from_slice(b"s");
        payload.extend_from_slice(&7u64.to_le_bytes());
        payload.extend_from_slice(&3u32.to_le_bytes());
        payload.extend_from_slice(&[0xAB; 3]);
        payload.push(1);
        payload.extend_from_slice(&7u64.to_le_bytes());
        payload.extend_from_slice(&1u32.to_le_bytes());
        payload.push(0xCD);
        assert_eq!(bytes[16..20], (payload.len() as u32).to_le_bytes(), "length");
        assert_eq!(bytes[20..24], frame_crc(1, &payload).to_le_bytes(), "CRC of generation and payload");
        assert_eq!(bytes[24..32], 1u64.to_le_bytes(), "the frame's generation");
        assert_eq!(&bytes[32..32 + payload.len()], &payload[..]);
        assert!(bytes[32 + payload.len()..].iter().all(|&b| b == 0), "zeros after the last frame");
    }

    #[test]
    fn a_torn_frame_ends_the_journal_and_is_written_over() {
        let (_dir, path, mut j) = fresh();
        let (a, b) = (append("s1", 1, false), append("s1", 2, true));
        j.write(&[&a]).expect("frame 1");
        let second = j.end;
        j.write(&[&b]).expect("frame 2");
        drop(j);
        // Tear the second frame: its last byte never reached the disk.
        let f = std::fs::OpenOptions::new().write(true).open(&path).expect("open");
        let bytes = std::fs::read(&path).expect("read");
        let (_, end, _) = read(&path, &bytes).expect("read");
        f.write_all_at(&[0xA5], end - 1).expect("tear");
        let (mut j, found) = Journal::open(&path).expect("reopen");
        assert_eq!(found, vec![a.clone()]);
        assert_eq!(j.end, second);
        j.write(&[&b]).expect("rewritten");
        drop(j);
        assert_eq!(Journal::open(&path).expect("reopen").1, vec![a, b]);
    }

    #[test]
    fn a_frame_larger_than_the_file_grows_it() {
        let (_dir, path, mut j) = fresh();
        let big = Append { log: vec![3; CAPACITY as usize], ..append("s1", 1, false) };
        j.write(&[&big]).expect("frame");
        assert!(std::fs::metadata(&path).expect("meta").len() > CAPACITY);
        drop(j);
        assert_eq!(Journal::open(&path).expect("reopen").1, vec![big]);
    }

    #[test]
    fn a_file_that_is_not_a_journal_is_damage() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("j");
        std::fs::write(&path, b"not a journal at all").expect("write");
        let e = Journal::open(&path).err().expect("refused");
        assert!(matches!(&e, StoreError::Damaged(m) if m.contains("SHEETDJ1")), "{e}");
    }
}
