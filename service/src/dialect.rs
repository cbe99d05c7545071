//! Rulesets written in a dialect (`--ruleset creature:PATH`, `check --dialect creature`,
//! `LoadRuleset` with a `dialect`): the dialect's files compiled to native ones, then loaded
//! like any ruleset. One place decides how a ruleset path is read, for the commands and for
//! the daemon (which keeps a dialect's paths as `creature:PATH`, so that a restart loads them
//! the same way).

use data::Diagnostic;
use std::path::{Path, PathBuf};

/// The dialects sheetd reads.
pub const DIALECTS: &[&str] = &["creature", "rulescript", "effects", "wwrf"];

/// A ruleset argument: a native ruleset's path, or `DIALECT:PATH`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Spec {
    Native(PathBuf),
    Dialect(&'static str, PathBuf),
}

/// Reads a ruleset argument. `DIALECT:PATH` names a dialect only for a known dialect, so a
/// native path with a colon still reads as a path.
pub fn spec(arg: &Path) -> Spec {
    let text = arg.to_string_lossy();
    if let Some((d, rest)) = text.split_once(':')
        && let Some(known) = DIALECTS.iter().find(|k| k.eq_ignore_ascii_case(d))
    {
        return Spec::Dialect(known, PathBuf::from(rest));
    }
    Spec::Native(arg.to_path_buf())
}

/// The known dialect `name`, or an error that lists them.
pub fn dialect(name: &str) -> Result<&'static str, String> {
    DIALECTS
        .iter()
        .find(|k| k.eq_ignore_ascii_case(name))
        .copied()
        .ok_or_else(|| format!("unknown dialect `{name}` (known: {})", DIALECTS.join(", ")))
}

/// What loading ruleset arguments gave: the ruleset, the dialect's warnings, and (for a
/// dialect) what it compiled.
pub struct Loaded {
    pub ruleset: data::Ruleset,
    pub warnings: Vec<Diagnostic>,
    pub compiled: Option<dialects::creature::Compiled>,
}

/// Compiles a dialect's files from disk.
pub fn compile(dialect: &str, paths: &[PathBuf]) -> Result<dialects::creature::Compiled, Vec<Diagnostic>> {
    compile_with(dialect, paths, &data::Files::disk())
}

/// Compiles a dialect's files read through `files` (its confinement and limits).
pub fn compile_with(
    dialect: &str,
    paths: &[PathBuf],
    files: &data::Files,
) -> Result<dialects::creature::Compiled, Vec<Diagnostic>> {
    match dialect {
        "creature" => dialects::creature::compile_with(paths, files),
        "rulescript" => dialects::rulescript::compile_with(paths, files),
        "effects" => dialects::effects::compile_with(paths, files),
        "wwrf" => dialects::wwrf::compile_with(paths, files),
        other => Err(vec![Diagnostic::nowhere(
            data::DiagCode::Layer("dialect.unknown"),
            format!("unknown dialect `{other}` (known: {})", DIALECTS.join(", ")),
        )]),
    }
}

/// Loads ruleset arguments from disk: native paths (each on top of the ones before), or the
/// paths of one dialect (all compiled together).
pub fn load(args: &[PathBuf]) -> Result<Loaded, Vec<Diagnostic>> {
    load_with(args, &data::Files::disk())
}

/// Like [`load`], reading through `files`.
pub fn load_with(args: &[PathBuf], files: &data::Files) -> Result<Loaded, Vec<Diagnostic>> {
    let specs: Vec<Spec> = args.iter().map(|a| spec(a)).collect();
    let dialect = specs.iter().find_map(|s| match s {
        Spec::Dialect(d, _) => Some(*d),
        Spec::Native(_) => None,
    });
    let Some(d) = dialect else {
        return data::load_with(args, files).map(|ruleset| Loaded {
            ruleset,
            warnings: Vec::new(),
            compiled: None,
        });
    };
    let mut paths = Vec::new();
    for s in specs {
        match s {
            Spec::Dialect(x, p) if x == d => paths.push(p),
            other => {
                return Err(vec![Diagnostic::nowhere(
                    data::DiagCode::Layer("dialect.mixed"),
                    format!(
                        "`{other:?}`: the rulesets of one sheet are all `{d}:` files, or all native (translate the dialect with `sheetd translate` to layer it with native files)"
                    ),
                )]);
            }
        }
    }
    let compiled = compile_with(d, &paths, files)?;
    let ruleset = compiled.load()?;
    Ok(Loaded { ruleset, warnings: compiled.warnings.clone(), compiled: Some(compiled) })
}

/// `path` with `dialect`'s prefix (`creature:PATH`), as the daemon keeps a dialect's paths.
pub fn prefixed(dialect: &str, path: &std::path::Path) -> PathBuf {
    PathBuf::from(format!("{dialect}:{}", path.display()))
}

/// A game file's step in `dialect`: a verb made into what runs, or a generic step as it is.
pub fn game_step(dialect: &str, step: &serde_json::Value) -> Result<dialects::creature::game::Step, String> {
    match dialect {
        "rulescript" => dialects::rulescript::game::step(step),
        "effects" => dialects::effects::game::step(step),
        "wwrf" => dialects::wwrf::game::step(step),
        _ => dialects::creature::game::step(step),
    }
}

/// The verbs of `dialect`'s game files.
pub fn verbs(dialect: &str) -> &'static [&'static str] {
    match dialect {
        "rulescript" => dialects::rulescript::game::VERBS,
        "effects" => dialects::effects::game::VERBS,
        "wwrf" => dialects::wwrf::game::VERBS,
        _ => dialects::creature::game::VERBS,
    }
}

/// A game file's setup in `dialect`, as one batch.
pub fn game_setup(dialect: &str, setup: &serde_json::Value) -> Result<events::Step, String> {
    match dialect {
        "rulescript" => dialects::rulescript::game::setup(setup),
        "effects" => dialects::effects::game::setup(setup),
        "wwrf" => dialects::wwrf::game::setup(setup),
        _ => dialects::creature::game::setup(setup),
    }
}
