//! Independent sheets solved in one go (the API's SolveBatch): each built from operations on a
//! ruleset's current version, answered with its values, never stored.

use super::error::{EngineError, Problem};
use super::{Engine, policy};
use data::record::{self, Variable};
use data::{Character, SheetOp};

impl Engine {
    /// Builds one sheet from `ops` on a ruleset (the default one for an empty id) and returns its
    /// values: all, or the variables named. Errors are the problems found.
    pub fn solve(
        &self,
        ruleset_id: &str,
        ops: &[SheetOp],
        variables: &[String],
    ) -> Result<Vec<Variable>, Vec<Problem>> {
        let c = self.solve_character(ruleset_id, ops)?;
        if variables.is_empty() {
            return Ok(record::values(&c));
        }
        variables
            .iter()
            .map(|r| {
                c.sheet()
                    .typed_value(r)
                    .map(|(v, f, s)| Variable::of(&v, &f, &s))
                    .map_err(|e| vec![Problem::new(e.code.as_str(), e.message)])
            })
            .collect()
    }

    /// Builds one sheet from `ops` on a ruleset (the default one for an empty id), checked
    /// against the operation limits: what [`Engine::solve`] reads its values from, for callers
    /// that read them their own way (SolveBatch writes them straight into its reply).
    pub fn solve_character(&self, ruleset_id: &str, ops: &[SheetOp]) -> Result<Character, Vec<Problem>> {
        let problems = |e: EngineError| match e.diagnosed() {
            [] => vec![Problem::new(&e.reason(), e.to_string())],
            p => p.to_vec(),
        };
        let ruleset = self
            .ruleset_entry(ruleset_id)
            .map_err(|e| vec![Problem::of(crate::problem::Code::UnknownRuleset, e.to_string())])?;
        policy::check_operations(ops, &self.limits.ops).map_err(problems)?;
        let mut c = Character::new(ruleset.current.load().ruleset().clone())
            .map_err(|e| vec![Problem::of_sheet_error(&e, &[])])?;
        c.apply(ops).map_err(|e| vec![Problem::of_sheet_error(&e, ops)])?;
        Ok(c)
    }
}
