//! # sheetd-benches: criterion benchmarks for sheetd
//!
//! The bench targets live beside this file (`formula.rs`, …) and run with
//! `cargo bench -p sheetd-benches`. This library holds the small fixtures they share: a symbol
//! table and evaluation context for one sheet's worth of NUMBER variables.
//!
//! Every bench group includes a baseline measured in the same run, so that figures from this
//! noisy 2-core machine are read relative to something.

use formula::{EvalContext, Format, Symbols, Value, VarId};
use rust_decimal::Decimal;

/// A flat table of NUMBER variables: a minimal `Symbols` + `EvalContext`, as a solver would give.
pub struct NumberVars {
    names: Vec<String>,
    values: Vec<Value>,
}

impl NumberVars {
    /// Variables named as given, each with the given value.
    pub fn new(vars: &[(&str, i64)]) -> Self {
        NumberVars {
            names: vars.iter().map(|(n, _)| n.to_ascii_lowercase()).collect(),
            values: vars.iter().map(|(_, v)| Value::Number(Decimal::from(*v))).collect(),
        }
    }
}

impl Symbols for NumberVars {
    fn resolve(&self, name: &str) -> Option<(VarId, Format)> {
        let lower = name.to_ascii_lowercase();
        self.names.iter().position(|n| *n == lower).map(|i| (VarId(i as u32), Format::Number))
    }
    fn cache_key(&self) -> Option<u64> {
        Some(1)
    }
}

impl EvalContext for NumberVars {
    fn value(&self, id: VarId) -> Option<Value> {
        self.values.get(id.0 as usize).cloned()
    }
    fn number(&self, id: VarId) -> Option<Decimal> {
        self.values.get(id.0 as usize).and_then(Value::as_number)
    }
}
