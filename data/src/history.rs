//! A sheet's history: why a variable changed between two revisions.
//!
//! A sheet's history is its list of [`Revision`]s, each the batch of operations that made it
//! and the ruleset version it was made with. [`why_changed`] replays the revisions in a range
//! one operation at a time and attributes each change of the variable to the operations whose
//! recomputation reached it. It is a pure function of the history: it reads revisions and
//! rulesets through [`History`], so a server's store, a test's hand-written list and the CLI's
//! sheet file all answer the same way.
//!
//! Rules of attribution:
//! - An operation *reached* the variable when its recomputation evaluated the variable or
//!   changed it. `via` lists the variables the operation changed on the way: those the
//!   variable depends on (transitively, through the dependency graph).
//! - An operation that cannot stand alone (it needs the rest of its batch, say a modifier on an
//!   instance the same batch adds) is applied with the rest of its batch.
//! - A revision that moved the sheet to another ruleset version replays the history before it
//!   against the new version (as the move did); when that changed the variable, the move is a
//!   cause of its own.

use crate::{Character, Ruleset, SheetError, SheetOp};
use formula::Format;
use solver::{Slot, Trace, TraceStep, Var, VarRef};
use std::collections::HashSet;
use std::fmt;
use std::sync::Arc;

/// One revision of a sheet: the operations that made it, with the ruleset version they were
/// applied with.
#[derive(Clone, Debug)]
pub struct Revision {
    /// Revisions count from 0 (the sheet as created).
    pub number: u64,
    pub ruleset_version: u64,
    pub operations: Vec<SheetOp>,
    /// Set when this revision moved the sheet from another ruleset version.
    pub moved_from: Option<u64>,
}

/// Where [`why_changed`] reads a sheet's history: its revisions, and its ruleset by version.
pub trait History {
    /// Revisions `from..=to`, in order.
    fn revisions(&self, from: u64, to: u64) -> Result<Vec<Revision>, HistoryError>;
    /// The ruleset as it was at `version`.
    fn ruleset(&self, version: u64) -> Result<Arc<Ruleset>, HistoryError>;
}

/// A history held in memory: a list of revisions from revision 0 and the rulesets by version.
pub struct Log<'a> {
    pub revisions: &'a [Revision],
    pub rulesets: &'a dyn Fn(u64) -> Option<Arc<Ruleset>>,
}

impl History for Log<'_> {
    fn revisions(&self, from: u64, to: u64) -> Result<Vec<Revision>, HistoryError> {
        Ok(self.revisions.iter().filter(|r| (from..=to).contains(&r.number)).cloned().collect())
    }

    fn ruleset(&self, version: u64) -> Result<Arc<Ruleset>, HistoryError> {
        (self.rulesets)(version).ok_or(HistoryError::Ruleset { version, message: "not known".to_owned() })
    }
}

/// The state after a known revision, where a replay may start instead of revision 0.
pub struct Checkpoint {
    /// The revision whose state this is.
    pub revision: u64,
    /// The ruleset version `character` uses.
    pub version: u64,
    pub character: Character,
}

/// A value with its format.
#[derive(Clone, Debug, PartialEq)]
pub struct Typed {
    pub format: Format,
    pub slot: Slot,
}

/// What made the variable change.
#[derive(Clone, Debug)]
pub enum Because {
    /// An operation of the revision, by its index in the batch.
    Operation { index: usize, operation: Box<SheetOp> },
    /// The sheet moved from one ruleset version to another.
    Moved { from_version: u64, to_version: u64 },
}

/// One cause of a change.
#[derive(Clone, Debug)]
pub struct Cause {
    pub revision: u64,
    pub because: Because,
    /// A one-line description of the cause, for people.
    pub description: String,
    /// The variable's value just before and just after (`None`: it did not exist).
    pub before: Option<Typed>,
    pub after: Option<Typed>,
    /// Variables the cause changed on its way to the variable, in the order they changed.
    pub via: Vec<VarRef>,
    /// The ways the change went through the dependency graph: each path starts at a variable
    /// the cause changed that no other it changed feeds, and goes through the changed
    /// variables that read it to the variable (`armor.ArmorAC → ArmorBonus → AC`). None when
    /// it changed the variable directly.
    pub paths: Vec<Vec<VarRef>>,
}

/// How one modifier's step compares between the two traces.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DiffKind {
    Unchanged,
    Added,
    Removed,
    Changed,
}

/// One modifier's step in the two traces.
#[derive(Clone, Debug)]
pub struct StepDiff {
    pub kind: DiffKind,
    pub modifier: Arc<str>,
    pub from: Option<TraceStep>,
    pub to: Option<TraceStep>,
}

/// Why a variable changed between two revisions.
#[derive(Clone, Debug)]
pub struct WhyChanged {
    pub from: u64,
    pub to: u64,
    pub from_value: Option<Typed>,
    pub to_value: Option<Typed>,
    pub from_trace: Option<Trace>,
    pub to_trace: Option<Trace>,
    pub causes: Vec<Cause>,
    /// The two traces compared modifier by modifier: the `to` trace's steps in order, then the
    /// steps only the `from` trace has.
    pub diff: Vec<StepDiff>,
}

/// Why a history cannot be explained.
#[derive(Clone, Debug, PartialEq)]
pub enum HistoryError {
    /// The variable exists at neither revision.
    NoVariable { var: String, from: u64, to: u64 },
    /// A revision no longer applies with its ruleset version.
    Replay { revision: u64, error: SheetError },
    /// A ruleset version is not available, or no longer compiles.
    Ruleset { version: u64, message: String },
    /// The history could not be read.
    Unreadable(String),
}

impl fmt::Display for HistoryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HistoryError::NoVariable { var, from, to } => {
                write!(f, "no variable `{var}` at revision {from} or {to}")
            }
            HistoryError::Replay { revision, error } => {
                write!(f, "revision {revision} no longer applies with the sheet's ruleset: {error}")
            }
            HistoryError::Ruleset { version, message } => write!(f, "ruleset version {version}: {message}"),
            HistoryError::Unreadable(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for HistoryError {}

/// Why `var` changed from revision `from` to revision `to` (inclusive ranges of revisions
/// after `from`), replaying from `start` when given (a state at or before `from`), else from
/// revision 0. `checkpoint` is called with the state after each revision up to `from` that is
/// replayed against the version the sheet had then, so a caller can keep some.
pub fn why_changed(
    history: &dyn History,
    start: Option<Checkpoint>,
    var: &str,
    from: u64,
    to: u64,
    checkpoint: &mut dyn FnMut(u64, u64, &Character),
) -> Result<WhyChanged, HistoryError> {
    let (revisions, mut version, mut character) = match start {
        Some(c) if c.revision <= from => (history.revisions(c.revision + 1, to)?, c.version, c.character),
        _ => {
            let revisions = history.revisions(0, to)?;
            let version = revisions.first().map_or(0, |r| r.ruleset_version);
            let character = Character::new(history.ruleset(version)?)
                .map_err(|error| HistoryError::Replay { revision: 0, error })?;
            (revisions, version, character)
        }
    };
    character.record_evaluations(true);
    let mut out = WhyChanged {
        from,
        to,
        from_value: None,
        to_value: None,
        from_trace: None,
        to_trace: None,
        causes: Vec::new(),
        diff: Vec::new(),
    };
    for revision in revisions {
        if revision.ruleset_version != version {
            let moved = move_to(history, &revision)?;
            if revision.number > from
                && let Some(cause) = moved_cause(&character, &moved, var, version, &revision)
            {
                out.causes.push(cause);
            }
            character = moved;
            version = revision.ruleset_version;
        }
        if revision.number <= from {
            character
                .apply(&revision.operations)
                .map_err(|error| HistoryError::Replay { revision: revision.number, error })?;
            checkpoint(revision.number, version, &character);
        } else {
            attribute(&mut character, &revision, var, &mut out.causes)?;
        }
        if revision.number == from {
            out.from_value = typed(&character, var);
            out.from_trace = trace(&character, var);
        }
    }
    out.to_value = typed(&character, var);
    out.to_trace = trace(&character, var);
    if out.from_trace.is_none() && out.to_trace.is_none() {
        return Err(HistoryError::NoVariable { var: var.to_owned(), from, to });
    }
    out.diff = diff_traces(out.from_trace.as_ref(), out.to_trace.as_ref());
    Ok(out)
}

/// The sheet as it was before `revision`, replayed against `revision`'s ruleset version.
fn move_to(history: &dyn History, revision: &Revision) -> Result<Character, HistoryError> {
    let ruleset = history.ruleset(revision.ruleset_version)?;
    let mut c = Character::new(ruleset).map_err(|error| HistoryError::Replay { revision: 0, error })?;
    if revision.number > 0 {
        for r in history.revisions(0, revision.number - 1)? {
            c.apply(&r.operations).map_err(|error| HistoryError::Replay { revision: r.number, error })?;
        }
    }
    c.record_evaluations(true);
    Ok(c)
}

/// The move as a cause, when it changed the variable.
fn moved_cause(
    before: &Character,
    after: &Character,
    var: &str,
    from_version: u64,
    revision: &Revision,
) -> Option<Cause> {
    let (old, new) = (typed(before, var), typed(after, var));
    if old == new {
        return None;
    }
    let to_version = revision.ruleset_version;
    Some(Cause {
        revision: revision.number,
        because: Because::Moved { from_version: revision.moved_from.unwrap_or(from_version), to_version },
        description: format!(
            "the sheet moved from version {} to {to_version} of its ruleset",
            revision.moved_from.unwrap_or(from_version)
        ),
        before: old,
        after: new,
        via: Vec::new(),
        paths: Vec::new(),
    })
}

/// Applies one revision an operation at a time, recording a cause for each operation whose
/// recomputation reached `var`.
fn attribute(
    character: &mut Character,
    revision: &Revision,
    var: &str,
    causes: &mut Vec<Cause>,
) -> Result<(), HistoryError> {
    let ops = &revision.operations;
    let mut i = 0;
    while i < ops.len() {
        let target_before = name(character, var);
        let before = typed(character, var);
        // One operation at a time; if one cannot stand alone, the rest of its batch goes with it.
        let (report, upto) = match character.apply(&ops[i..=i]) {
            Ok(r) => (r, i + 1),
            // (A logged batch applied whole once; its operations apply in order, so this is
            // only a fallback for operations whose checks look past their own position.)
            Err(_) => {
                let r = character
                    .apply(&ops[i..])
                    .map_err(|error| HistoryError::Replay { revision: revision.number, error })?;
                (r, ops.len())
            }
        };
        let target_after = name(character, var);
        let is_target = |r: &VarRef| Some(r) == target_before.as_ref() || Some(r) == target_after.as_ref();
        let changed: Vec<VarRef> = report.named(character.sheet()).into_iter().map(|c| c.var).collect();
        let reached = report.evaluated.iter().any(is_target) || changed.iter().any(is_target);
        if reached {
            let deps = dependencies(character, var);
            let via: Vec<VarRef> = changed.into_iter().filter(|r| deps.contains(r)).collect();
            let paths = target_after.as_ref().map_or_else(Vec::new, |t| paths_to(character, &via, t));
            let mut description = ops[i].to_string();
            // A clock's move names what it expired: `tick Turn by 1 (object `Shield` expired
            // when Turn passed 1)`.
            if !character.expired().is_empty() {
                let expired: Vec<String> = character.expired().iter().map(|e| e.to_string()).collect();
                description = format!("{description} ({})", expired.join("; "));
            }
            if upto > i + 1 {
                description = format!("{description} (with operations {}–{} of its batch)", i + 1, upto - 1);
            }
            causes.push(Cause {
                revision: revision.number,
                because: Because::Operation { index: i, operation: Box::new(ops[i].clone()) },
                description,
                before,
                after: typed(character, var),
                via,
                paths,
            });
        }
        i = upto;
    }
    Ok(())
}

fn name(c: &Character, var: &str) -> Option<VarRef> {
    let sheet = c.sheet();
    sheet.find(var).and_then(|v| sheet.name(v))
}

fn typed(c: &Character, var: &str) -> Option<Typed> {
    let sheet = c.sheet();
    let v = sheet.find(var)?;
    Some(Typed { format: sheet.format(v)?.clone(), slot: sheet.slot(v)?.clone() })
}

fn trace(c: &Character, var: &str) -> Option<Trace> {
    let sheet = c.sheet();
    sheet.trace_of(sheet.find(var)?)
}

/// `var` and every variable it depends on, transitively, read from the dependency graph.
fn dependencies(c: &Character, var: &str) -> HashSet<VarRef> {
    let sheet = c.sheet();
    let Some(start) = sheet.find(var) else { return HashSet::new() };
    let mut seen: HashSet<Var> = HashSet::from([start]);
    let mut stack = vec![start];
    while let Some(v) = stack.pop() {
        for d in sheet.dependencies(v) {
            if seen.insert(d) {
                stack.push(d);
            }
        }
    }
    seen.into_iter().filter_map(|v| sheet.name(v)).collect()
}

/// The most paths a cause lists (a change fanning out and in again can take many).
const MAX_PATHS: usize = 16;

/// The paths from the variables in `via` that nothing else in `via` feeds, through `via`, to
/// `target` (see [`Cause::paths`]); none when `target` is all there is.
fn paths_to(c: &Character, via: &[VarRef], target: &VarRef) -> Vec<Vec<VarRef>> {
    let sheet = c.sheet();
    if via.len() < 2 || !via.contains(target) {
        return Vec::new();
    }
    // What each changed variable reads among the changed ones.
    let feeds = |r: &VarRef| -> Vec<VarRef> {
        let Some(v) = sheet.find(&r.to_string()) else { return Vec::new() };
        let mut f: Vec<VarRef> = sheet
            .dependencies(v)
            .into_iter()
            .filter_map(|d| sheet.name(d))
            .filter(|n| n != r && via.contains(n))
            .collect();
        f.dedup();
        f
    };
    fn walk(
        at: &VarRef,
        suffix: &mut Vec<VarRef>,
        feeds: &dyn Fn(&VarRef) -> Vec<VarRef>,
        out: &mut Vec<Vec<VarRef>>,
        limit: usize,
    ) {
        if out.len() >= MAX_PATHS || suffix.len() > limit {
            return;
        }
        suffix.push(at.clone());
        let from = feeds(at);
        if from.is_empty() {
            out.push(suffix.iter().rev().cloned().collect());
        }
        for f in from {
            if !suffix.contains(&f) {
                walk(&f, suffix, feeds, out, limit);
            }
        }
        suffix.pop();
    }
    let mut out = Vec::new();
    walk(target, &mut Vec::new(), &feeds, &mut out, via.len());
    out.retain(|p| p.len() > 1);
    out
}

/// Compares two traces modifier by modifier.
pub fn diff_traces(from: Option<&Trace>, to: Option<&Trace>) -> Vec<StepDiff> {
    let from_steps = from.map_or(&[][..], |t| &t.steps);
    let to_steps = to.map_or(&[][..], |t| &t.steps);
    let mut out = Vec::new();
    for t in to_steps {
        match from_steps.iter().find(|f| f.modifier == t.modifier) {
            Some(f) => {
                let same = slot_eq(&f.after, &t.after)
                    && f.instruction == t.instruction
                    && f.condition == t.condition;
                out.push(StepDiff {
                    kind: if same { DiffKind::Unchanged } else { DiffKind::Changed },
                    modifier: t.modifier.clone(),
                    from: Some(f.clone()),
                    to: Some(t.clone()),
                });
            }
            None => out.push(StepDiff {
                kind: DiffKind::Added,
                modifier: t.modifier.clone(),
                from: None,
                to: Some(t.clone()),
            }),
        }
    }
    for f in from_steps {
        if !to_steps.iter().any(|t| t.modifier == f.modifier) {
            out.push(StepDiff {
                kind: DiffKind::Removed,
                modifier: f.modifier.clone(),
                from: Some(f.clone()),
                to: None,
            });
        }
    }
    out
}

fn slot_eq(a: &Option<Slot>, b: &Option<Slot>) -> bool {
    match (a, b) {
        (Some(Ok(x)), Some(Ok(y))) => x == y,
        (Some(Err(x)), Some(Err(y))) => x == y,
        (None, None) => true,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use formula::Value;
    use solver::{ModKind, ModifierSpec, Operation};

    /// Version 1: Total = Base + Bonus with Base 10. Version 2: Base 20.
    fn ruleset(base: &str) -> Arc<Ruleset> {
        let text = format!(
            "[ruleset]\nname = \"t\"\n[scopes]\n\"PC.ITEM\" = \"PC\"\n[defaults]\nNUMBER = 0\n\
             [variables.PC]\nBase = \"NUMBER\"\nBonus = \"NUMBER\"\nTotal = \"NUMBER\"\nOther = \"NUMBER\"\n\
             [variables.\"PC.ITEM\"]\nWeight = \"NUMBER\"\n\
             [global]\nmodify = [{{ var = \"Base\", set = \"{base}\" }}, {{ var = \"Total\", set = \"Base + Bonus\" }}]\n"
        );
        Arc::new(crate::load_str(&text, "t.toml").expect("the test ruleset compiles"))
    }

    fn add(id: &str, var: &str, kind: &str, value: &str) -> SheetOp {
        SheetOp::Solver(Operation::AddModifier(ModifierSpec::new(
            id,
            var,
            ModKind::named(kind).expect("a modifier type"),
            value,
            "test",
        )))
    }

    fn rev(number: u64, version: u64, operations: Vec<SheetOp>) -> Revision {
        let moved_from = (number > 0 && version == 2).then_some(1);
        Revision { number, ruleset_version: version, operations, moved_from }
    }

    fn history() -> Vec<Revision> {
        vec![
            rev(0, 1, vec![]),
            rev(1, 1, vec![add("b1", "Bonus", "ADD", "2")]),
            rev(2, 1, vec![add("o1", "Other", "SET", "5")]),
            rev(
                3,
                1,
                vec![SheetOp::Solver(Operation::RemoveModifier("b1".into())), add("b2", "Bonus", "ADD", "3")],
            ),
            rev(
                4,
                1,
                vec![
                    SheetOp::Solver(Operation::AddInstance {
                        key: "box".into(),
                        scope: "PC.ITEM".into(),
                        parent: None,
                    }),
                    SheetOp::Solver(Operation::AddModifier(
                        ModifierSpec::new("w", "Weight", ModKind::Set, "4", "test").on("box"),
                    )),
                    SheetOp::Solver(Operation::AddModifier(
                        ModifierSpec::new("t", "Total", ModKind::Add, "Weight", "test").from("box"),
                    )),
                ],
            ),
            rev(5, 1, vec![add("o3", "Bonus", "ADD", "Other")]),
            rev(
                6,
                1,
                vec![
                    SheetOp::Solver(Operation::RemoveModifier("o3".into())),
                    add("o2", "Other", "ADD", "Total"),
                ],
            ),
        ]
    }

    fn versions(v: u64) -> Option<Arc<Ruleset>> {
        match v {
            1 => Some(ruleset("10")),
            2 => Some(ruleset("20")),
            _ => None,
        }
    }

    fn explain(
        revisions: &[Revision],
        start: Option<Checkpoint>,
        var: &str,
        from: u64,
        to: u64,
    ) -> WhyChanged {
        let log = Log { revisions, rulesets: &versions };
        why_changed(&log, start, var, from, to, &mut |_, _, _| {}).expect("explained")
    }

    fn shown(t: &Option<Typed>) -> String {
        match t {
            Some(Typed { slot: Ok(v), .. }) => v.to_string(),
            Some(Typed { slot: Err(e), .. }) => format!("error: {}", e.message),
            None => "-".to_owned(),
        }
    }

    fn causes(w: &WhyChanged) -> Vec<(u64, String, String, String)> {
        w.causes
            .iter()
            .map(|c| (c.revision, c.description.clone(), shown(&c.before), shown(&c.after)))
            .collect()
    }

    #[test]
    fn each_operation_that_reached_the_variable_is_a_cause() {
        let w = explain(&history(), None, "total", 0, 3);
        assert_eq!((shown(&w.from_value), shown(&w.to_value)), ("10".into(), "13".into()));
        assert_eq!(
            causes(&w),
            [
                (1, "add modifier b1: ADD Bonus 2".into(), "10".into(), "12".into()),
                (3, "remove modifier b1".into(), "12".into(), "10".into()),
                (3, "add modifier b2: ADD Bonus 3".into(), "10".into(), "13".into()),
            ],
            "revision 2 did not reach Total"
        );
        let via: Vec<String> = w.causes[0].via.iter().map(|v| v.to_string()).collect();
        assert_eq!(via, ["Bonus", "Total"]);
        // The way it went: Bonus, which Total reads.
        let paths: Vec<Vec<String>> =
            w.causes[0].paths.iter().map(|p| p.iter().map(|v| v.to_string()).collect()).collect();
        assert_eq!(paths, [["Bonus", "Total"]]);
        assert!(matches!(w.causes[2].because, Because::Operation { index: 1, .. }));
        // Total's one step (the global SET) changed its value.
        assert_eq!(w.diff.iter().map(|d| d.kind).collect::<Vec<_>>(), [DiffKind::Changed]);
    }

    #[test]
    fn causes_follow_the_graph_through_instances_and_removals() {
        let w = explain(&history(), None, "Total", 3, 6);
        assert_eq!(
            causes(&w),
            [
                (4, "add modifier t: ADD Total Weight".into(), "13".into(), "17".into()),
                (5, "add modifier o3: ADD Bonus Other".into(), "17".into(), "22".into()),
                (6, "remove modifier o3".into(), "22".into(), "17".into()),
            ]
        );
        assert_eq!(w.diff.iter().map(|d| d.kind).collect::<Vec<_>>(), [DiffKind::Unchanged, DiffKind::Added]);
    }

    #[test]
    fn a_move_to_another_ruleset_version_is_a_cause() {
        let mut h = history();
        h.push(rev(7, 2, vec![]));
        let w = explain(&h, None, "Total", 6, 7);
        assert_eq!(
            causes(&w),
            [(7, "the sheet moved from version 1 to 2 of its ruleset".into(), "17".into(), "27".into())]
        );
        assert!(matches!(w.causes[0].because, Because::Moved { from_version: 1, to_version: 2 }));
        // A variable the move did not change has no cause.
        assert!(explain(&h, None, "Bonus", 6, 7).causes.is_empty());
    }

    #[test]
    fn a_checkpoint_gives_the_same_answer_as_a_replay_from_the_start() {
        let h = history();
        let mut kept = Vec::new();
        let log = Log { revisions: &h, rulesets: &versions };
        let full =
            why_changed(&log, None, "Total", 2, 4, &mut |r, v, c| kept.push((r, v, c.clone()))).expect("ok");
        assert_eq!(kept.iter().map(|k| k.0).collect::<Vec<_>>(), [0, 1, 2]);
        let (revision, version, character) = kept.swap_remove(1);
        let start = Checkpoint { revision, version, character };
        let from_checkpoint = explain(&h, Some(start), "Total", 2, 4);
        assert_eq!(causes(&from_checkpoint), causes(&full));
        assert_eq!(format!("{:?}", from_checkpoint.to_trace), format!("{:?}", full.to_trace));
    }

    #[test]
    fn unknown_variables_and_broken_history_are_errors() {
        let h = history();
        let log = Log { revisions: &h, rulesets: &versions };
        let e = why_changed(&log, None, "Nope", 0, 6, &mut |_, _, _| {}).expect_err("no such variable");
        assert_eq!(e, HistoryError::NoVariable { var: "Nope".into(), from: 0, to: 6 });
        // A local that exists only at the end still explains (it appeared).
        let w = explain(&h, None, "box.Weight", 0, 4);
        assert_eq!((shown(&w.from_value), shown(&w.to_value)), ("-".into(), "4".into()));
        let mut broken = h.clone();
        broken[2].operations =
            vec![SheetOp::SetInput { channel: "Nope".into(), on: None, value: Value::Boolean(true) }];
        let log = Log { revisions: &broken, rulesets: &versions };
        let e = why_changed(&log, None, "Total", 0, 4, &mut |_, _, _| {}).expect_err("revision 2 fails");
        assert!(matches!(e, HistoryError::Replay { revision: 2, .. }), "{e}");
    }
}
