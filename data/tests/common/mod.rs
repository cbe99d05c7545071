//! Helpers shared by the data crate's integration tests.

use data::{Character, SheetOp};

/// A variable's value as text; panics (naming the reference) when it has none.
#[allow(dead_code, reason = "not every test file uses it")]
pub fn value(c: &Character, r: &str) -> String {
    match c.sheet().value(r) {
        Ok(Ok(v)) => v.to_string(),
        other => panic!("{r}: {other:?}"),
    }
}

/// An `add_object` operation.
#[allow(dead_code, reason = "not every test file uses it")]
pub fn add(kind: &str, key: &str, id: Option<&str>, parent: Option<&str>) -> SheetOp {
    SheetOp::AddObject {
        kind: kind.into(),
        key: key.into(),
        id: id.map(Into::into),
        parent: parent.map(Into::into),
    }
}

/// Loads the PCGen campaign `t.pcc` from `files` (name, text), held in memory under one
/// folder: the ruleset, or its errors.
#[allow(dead_code, reason = "not every test file uses it")]
pub fn load_pcgen_memory(files: &[(&str, &str)]) -> Result<data::Ruleset, Vec<data::Diagnostic>> {
    const ROOT: &str = "/pcgen-memory/data/t";
    let mut bundle = data::Bundle::default();
    for (name, text) in files {
        bundle.files.insert(format!("{ROOT}/{name}"), std::sync::Arc::from(*text));
    }
    data::load_with(&[std::path::Path::new(ROOT).join("t.pcc")], &data::Files::memory(bundle))
}
