//! Reading sheets, now and in the past: values (at any revision), explanations of a value
//! (its trace and the dependency graph around it), and why a value changed between revisions.
//!
//! Past values come from the nearest snapshot rolled forward by the logged changes, without
//! replaying. Why-changed is [`data::history::why_changed`] over the store's log, starting from
//! the nearest checkpoint so its cost follows the range asked.

use super::error::{EngineError, Resource};
use super::rulesets::RulesetEntry;
use super::{CHECKPOINT_EVERY, Engine};
use crate::store::{Logged, log_all};
use data::history::{self, Checkpoint, History, HistoryError, Revision, WhyChanged};
use data::record::{self, Variable};
use data::{Character, Ruleset};
use events::{Game, GameError, RuleBook};
use solver::{Trace, Var, VarRef};
use std::collections::{HashSet, VecDeque};
use std::sync::Arc;

/// One variable in an explanation's dependency graph.
#[derive(Clone, Debug, PartialEq)]
pub struct Node {
    pub var: VarRef,
    pub value: record::Value,
    /// The variables its modifiers read (its edges in the graph), in the order they read them.
    pub reads: Vec<VarRef>,
}

/// How a variable got its value.
#[derive(Clone, Debug)]
pub struct Explanation {
    pub revision: u64,
    pub trace: Trace,
    /// For each of the trace's steps, when its effect expires (`Turn passes 3`; empty when
    /// it lasts).
    pub expires: Vec<String>,
    /// The variable and everything it depends on, transitively (up to the depth asked),
    /// breadth first; the first node is the variable.
    pub nodes: Vec<Node>,
    /// What reads the variable, up to the depth asked (none when no depth was), breadth first.
    pub readers: Vec<Node>,
}

impl Engine {
    /// Values of a sheet: all, or the variables named; now, or at an earlier revision.
    pub fn values(
        &self,
        id: &str,
        variables: &[String],
        revision: Option<u64>,
    ) -> Result<(u64, Vec<Variable>), EngineError> {
        let sheet = self.fresh_sheet(id)?;
        let st = sheet.state();
        let revision = revision.unwrap_or(st.revision);
        if revision > st.revision {
            return Err(EngineError::OutOfRange(format!(
                "sheet `{id}` is at revision {}; there is no revision {revision} yet",
                st.revision
            )));
        }
        if revision == st.revision {
            let c = st.game.character().sheet();
            if variables.is_empty() {
                return Ok((revision, record::values(st.game.character())));
            }
            let values = variables
                .iter()
                .map(|r| {
                    let (var, format, slot) = c.typed_value(r).map_err(|e| EngineError::NotFound {
                        what: Resource::Variable,
                        name: r.clone(),
                        message: e.message,
                    })?;
                    Ok(Variable::of(&var, &format, &slot))
                })
                .collect::<Result<_, EngineError>>()?;
            return Ok((revision, values));
        }
        drop(st);
        let all = self.values_at(id, revision)?;
        if variables.is_empty() {
            return Ok((revision, all));
        }
        let values = variables
            .iter()
            .map(|r| {
                all.iter().find(|v| v.var.eq_ignore_ascii_case(r)).cloned().ok_or_else(|| {
                    EngineError::NotFound {
                        what: Resource::Variable,
                        name: r.clone(),
                        message: format!("no variable `{r}` at revision {revision} of `{id}`"),
                    }
                })
            })
            .collect::<Result<_, EngineError>>()?;
        Ok((revision, values))
    }

    /// Every value at a past revision: the latest snapshot before it plus the logged changes.
    fn values_at(&self, sheet: &str, revision: u64) -> Result<Vec<Variable>, EngineError> {
        let snapshot = self.store.snapshot_at_or_before(sheet, revision)?.ok_or_else(|| {
            EngineError::DataLoss(format!("sheet `{sheet}` has no snapshot before revision {revision}"))
        })?;
        let changes = if snapshot.revision < revision {
            log_all(&*self.store, sheet, snapshot.revision + 1, revision)?
        } else {
            Vec::new()
        };
        Ok(record::roll_forward(snapshot.values, changes.into_iter().flat_map(|e| e.changes)))
    }

    /// The trace of a variable and the graph of what it depends on.
    /// A variable's trace and its dependency graph: everything it reads (at most `depth` steps
    /// out, when given) and, with a depth, what reads it as far.
    pub fn explain(
        &self,
        id: &str,
        variable: &str,
        depth: Option<usize>,
    ) -> Result<Explanation, EngineError> {
        let sheet = self.fresh_sheet(id)?;
        let st = sheet.state();
        let s = st.game.character().sheet();
        let var = s.lookup(variable).map_err(|e| EngineError::NotFound {
            what: Resource::Variable,
            name: variable.to_owned(),
            message: e.message,
        })?;
        // Invariant: `var` was just found on this sheet, which nothing changes while we hold it.
        let trace = s.trace_of(var).expect("a variable just found has a trace");
        let nodes = dependency_nodes(s, var, depth.unwrap_or(usize::MAX), Way::Reads);
        let readers = match depth {
            Some(d) => dependency_nodes(s, var, d, Way::ReadBy).split_off(1),
            None => Vec::new(),
        };
        let expires = expiries(st.game.character(), &trace);
        Ok(Explanation { revision: st.revision, trace, expires, nodes, readers })
    }

    /// The instances of `scope` on sheet `id` whose BOOLEAN formula `where_` is true now
    /// ([`solver::Sheet::select`]), with the sheet's revision.
    pub fn select(&self, id: &str, scope: &str, where_: &str) -> Result<(u64, Vec<String>), EngineError> {
        let sheet = self.fresh_sheet(id)?;
        let st = sheet.state();
        let ids = st
            .game
            .character()
            .sheet()
            .select(scope, where_)
            .map_err(|e| EngineError::problems(vec![crate::problem::Problem::of_solve_error(&e)]))?;
        Ok((st.revision, ids.iter().map(|k| k.to_string()).collect()))
    }

    /// Why a variable changed between two revisions (`to`: the current one when `None`).
    pub fn why_changed(
        &self,
        id: &str,
        var: &str,
        from: u64,
        to: Option<u64>,
    ) -> Result<WhyChanged, EngineError> {
        let sheet = self.fresh_sheet(id)?;
        let current = sheet.state().revision;
        let to = to.unwrap_or(current);
        if to > current || from > to {
            return Err(EngineError::OutOfRange(format!(
                "revisions must satisfy from ≤ to ≤ {current} (the current revision); got from {from} to {to}"
            )));
        }
        // Start from the nearest checkpoint at or before `from` (the state at that revision), so
        // the cost is the range asked plus at most CHECKPOINT_EVERY revisions; else from 0.
        let start = self.checkpoints.before(id, from).map(|(revision, version, character)| Checkpoint {
            revision,
            version,
            character,
        });
        let log = StoreHistory { engine: self, sheet: id, ruleset: &sheet.ruleset };
        let mut keep = |revision: u64, version: u64, c: &Character| {
            if revision > 0 && revision.is_multiple_of(CHECKPOINT_EVERY) {
                self.checkpoints.put(id, revision, version, c);
            }
        };
        history::why_changed(&log, start, var, from, to, &mut keep).map_err(|e| match e {
            HistoryError::NoVariable { .. } => EngineError::NotFound {
                what: Resource::Variable,
                name: var.to_owned(),
                message: format!("no variable `{var}` on sheet `{id}` at revision {from} or {to}"),
            },
            HistoryError::Unreadable(m) => EngineError::Unavailable(m),
            e => EngineError::precondition(format!("replaying the history: {e}")),
        })
    }

    /// Revisions replayed by WhyChanged since the engine started.
    pub fn replayed_revisions(&self) -> u64 {
        self.replayed.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Replays a sheet's whole log against `version` of its ruleset, keeping a checkpoint every
    /// [`CHECKPOINT_EVERY`] revisions made with that version.
    pub(super) fn replay_checkpointed(
        &self,
        id: &str,
        book: Arc<RuleBook>,
        version: u64,
        log: &[Logged],
    ) -> Result<Game, String> {
        replay_each(book, log, |r, c| {
            if r.ruleset_version == version && r.number > 0 && r.number.is_multiple_of(CHECKPOINT_EVERY) {
                self.checkpoints.put(id, r.number, version, c);
            }
        })
    }
}

/// A sheet's history as the store has it, for [`history::why_changed`].
struct StoreHistory<'a> {
    engine: &'a Engine,
    sheet: &'a str,
    ruleset: &'a RulesetEntry,
}

impl History for StoreHistory<'_> {
    fn revisions(&self, from: u64, to: u64) -> Result<Vec<Revision>, HistoryError> {
        let log = log_all(&*self.engine.store, self.sheet, from, to)
            .map_err(|e| HistoryError::Unreadable(e.to_string()))?;
        self.engine.replayed.fetch_add(log.len() as u64, std::sync::atomic::Ordering::Relaxed);
        Ok(log.into_iter().map(|l| l.revision).collect())
    }

    fn ruleset(&self, version: u64) -> Result<Arc<Ruleset>, HistoryError> {
        self.engine
            .ruleset_at(self.ruleset, version)
            .map(|book| book.ruleset().clone())
            .map_err(|e| HistoryError::Ruleset { version, message: e.to_string() })
    }
}

/// Replays a log onto a new game.
pub(super) fn replay(book: Arc<RuleBook>, log: &[Logged]) -> Result<Game, String> {
    replay_each(book, log, |_, _| {})
}

/// Replays a log onto a new game, calling `after` with each revision and the character it left.
/// A revision made by a game step plays the step again (its rules fire again, with the same
/// answers and rolls, so the uses, the question pending and the values come out the same); one
/// made by a batch applies its operations.
fn replay_each(
    book: Arc<RuleBook>,
    log: &[Logged],
    mut after: impl FnMut(&Revision, &Character),
) -> Result<Game, String> {
    let mut game = Game::new(book).map_err(|e| e.to_string())?;
    for e in log {
        let failed = |err: GameError| format!("revision {}: {err}", e.revision.number);
        match &e.step {
            Some(step) => game.apply(step).map(drop).map_err(failed)?,
            None => game.apply_ops(&e.revision.operations).map(drop).map_err(failed)?,
        }
        after(&e.revision, game.character());
    }
    Ok(game)
}

/// `start` and every variable it depends on, transitively, breadth first, from the graph: each
/// once, with its value and its direct dependencies.
/// For each step of `trace`, when the effect that brought its modifier expires on `c`: `Turn
/// passes 3`, or empty.
pub fn expiries(c: &data::Character, trace: &Trace) -> Vec<String> {
    let when = |m: &str| c.expiry(m).map(|(clock, after)| format!("{clock} passes {after}"));
    trace.steps.iter().map(|s| when(&s.modifier).unwrap_or_default()).collect()
}

/// Which way a dependency graph is walked from a variable.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Way {
    /// To what it reads.
    Reads,
    /// To what reads it.
    ReadBy,
}

/// `start` and the variables `way` from it, at most `depth` steps, breadth first; each with
/// what it reads.
fn dependency_nodes(sheet: &solver::Sheet, start: Var, depth: usize, way: Way) -> Vec<Node> {
    let mut seen = HashSet::from([start]);
    let mut queue = VecDeque::from([(start, 0)]);
    let mut nodes = Vec::new();
    while let Some((v, steps)) = queue.pop_front() {
        let (Some(name), Some(format), Some(slot)) = (sheet.name(v), sheet.format(v), sheet.slot(v)) else {
            continue;
        };
        let deps = sheet.dependencies(v);
        if steps < depth {
            let next = if way == Way::Reads { deps.clone() } else { sheet.dependents(v) };
            for d in next {
                if seen.insert(d) {
                    queue.push_back((d, steps + 1));
                }
            }
        }
        let reads = deps.iter().filter_map(|&d| sheet.name(d)).collect();
        nodes.push(Node { var: name, value: record::Value::of(format, &slot), reads });
    }
    nodes
}
