//! Reads through a variable that holds an instance's id: `creature.STR` in a per-target
//! effect, where STRING variable `creature` (declared to hold instances of a scope: see
//! [`crate::Pointer`]) names the creature.
//!
//! Each instance of the holder's scope has a variable `creature.STR`, which formulas there
//! read like any other. It has at most one modifier: a SET from the instance its holder names,
//! to that instance's `STR` — so a change to the creature's STR recomputes what reads
//! `creature.STR`, an edge of the graph like any read. While the holder names no instance of
//! the scope it holds (empty, unknown, removed, of another scope), the variable has no
//! modifier and no value (`solver.missing_instance`).
//!
//! Which instance that is depends on a value, so the link is made at the end of every batch,
//! once the batch's values are known (an interim recomputation, as a guard's: see
//! `guard.rs`): each holder's value is compared with the instance its variable reads from,
//! and a link that differs is removed and the new one added, as operations of the batch —
//! checked for cycles, undone with it if it fails, reported with it. Linking changes values,
//! which may change a holder (one whose formula reads through another), so the pass repeats
//! until no link changes; a batch whose links still change after [`ROUNDS`] passes fails
//! (`solver.pointer_loop`), with nothing changed.
//!
//! Only rules that read through a holder pay for this: a pass looks at every instance once
//! (an index by scope, empty for the scopes without holders) and compares one value per read.

use super::batch::Pending;
use super::*;

/// How many linking passes a batch may take before it is a loop: one link per pass, so a
/// chain of holders each reading the next links in as many passes as it is long.
pub(super) const ROUNDS: usize = 16;

/// A link to change: on holder instance `on`, pointer `pointer` (an index into its scope's
/// [`Rules::pointers_of`]) reads from `to` instead of through modifier `from`.
struct Relink {
    on: InstanceId,
    pointer: usize,
    from: Option<ModKey>,
    to: Option<InstanceId>,
}

impl Sheet {
    /// Links every read through a holder to the instance its holder names (see the module
    /// docs), within the batch of `pending`.
    pub(super) fn link_pointers(&mut self, pending: &mut Pending) -> Result<(), SolveError> {
        let rules = Arc::clone(&self.shape.rules);
        for _ in 0..ROUNDS {
            self.settle_pending(pending);
            let relinks = self.relinks(&rules);
            if relinks.is_empty() {
                return Ok(());
            }
            for r in relinks {
                // `relinks` took `on` from the live instances and `pointer` from its scope's.
                let Some(p) = rules.pointers_of(self.shape.instance(r.on).scope).nth(r.pointer) else {
                    continue;
                };
                if let Some(k) = r.from {
                    self.op_unlink(k, pending);
                }
                if let Some(to) = r.to {
                    let m = self.shape.pointer_modifier(p, r.on, to)?;
                    self.op_link(m, pending)?;
                }
            }
        }
        let names: Vec<&str> = rules.pointers().iter().map(|p| &*rules.var(p.var).name).collect();
        Err(SolveError::new(
            codes::POINTER_LOOP,
            format!(
                "reads through holders ({}) still change what they read after {ROUNDS} passes: a holder's value depends on what it reads",
                names.join(", ")
            ),
        ))
    }

    /// The links that differ from what the holders name now.
    fn relinks(&self, rules: &Rules) -> Vec<Relink> {
        let shape = &self.shape;
        let mut out = Vec::new();
        for (on, inst) in shape.instances.iter() {
            for (pointer, p) in rules.pointers_of(inst.scope).enumerate() {
                let holder = inst.nodes[rules.var(p.holder).index as usize];
                let node = inst.nodes[rules.var(p.var).index as usize];
                let to = match self.value_of(holder) {
                    Ok(Value::String(key)) => shape
                        .instances
                        .id_of(&key)
                        .filter(|&t| rules.is_ancestor_or_self(p.held, shape.instance(t).scope)),
                    _ => None,
                };
                let from = shape.graph[node].mods.first().and_then(|&k| Some((k, shape.mods.get(k)?.from)));
                if from.map(|(_, i)| i) != to {
                    out.push(Relink { on, pointer, from: from.map(|(k, _)| k), to });
                }
            }
        }
        out
    }
}
