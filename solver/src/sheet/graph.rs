//! The dependency graph: edges counted per reading modifier (kept as each variable's counted
//! dependents, `Plan::succ`: the graph holds only the nodes), topological levels kept so that
//! every edge goes up, and the cycle check that rejects a modifier closing a cycle.

use super::*;

impl Shape {
    /// Rejects modifier `id` on `target`, reading `reads`, if an edge from something it reads to
    /// its target would close a cycle.
    pub(super) fn check_cycles(&self, id: &str, target: NodeIndex, reads: &Reads) -> Result<(), SolveError> {
        for &(_, read) in reads.iter() {
            if let Some(path) = self.path(target, read) {
                // path: target → … → read; the new edge read → target closes it.
                let mut cycle: Vec<NodeIndex> = vec![read];
                cycle.extend(path);
                let names: Vec<String> = cycle.iter().map(|&n| self.var_ref(n).to_string()).collect();
                let mut modifiers = vec![id.to_string()];
                for pair in cycle.windows(2) {
                    let (a, b) = (pair[0], pair[1]);
                    if b == target && a == read {
                        continue;
                    }
                    for &k in &self.graph[b].mods {
                        if let Some(x) = self.mods.get(k)
                            && x.reads.iter().any(|(_, n)| *n == a)
                        {
                            modifiers.push(x.id.to_string());
                        }
                    }
                }
                let mut err = SolveError::new(
                    codes::CYCLE,
                    format!(
                        "modifier `{}` on `{}` would create a cycle: {} (modifiers: {})",
                        id,
                        self.var_ref(target),
                        names.join(" → "),
                        modifiers.join(", ")
                    ),
                );
                err.cycle = names;
                err.cycle_modifiers = modifiers;
                return Err(err);
            }
        }
        Ok(())
    }

    /// A path `from → … → to` along dependency edges, if any (`[from]` when they are equal).
    /// Levels increase along every edge, so the search skips nodes above `to`'s level.
    pub(super) fn path(&self, from: NodeIndex, to: NodeIndex) -> Option<Vec<NodeIndex>> {
        if from == to {
            return Some(vec![from]);
        }
        let limit = self.plan.level_of(to);
        if self.plan.level_of(from) >= limit {
            // Levels increase along every edge: nothing at or above `to`'s level reaches it.
            return None;
        }
        let mut parent: Map<NodeIndex, NodeIndex> = Map::default();
        let mut stack = vec![from];
        while let Some(n) = stack.pop() {
            for next in self.plan.succ.of(n.index()).iter().map(|&t| NodeIndex::new(t as usize)) {
                if next == to {
                    let mut path = vec![to, n];
                    let mut cur = n;
                    while let Some(&p) = parent.get(&cur) {
                        path.push(p);
                        cur = p;
                    }
                    path.reverse();
                    return Some(path);
                }
                if self.plan.level_of(next) < limit && next != from && !parent.contains_key(&next) {
                    parent.insert(next, n);
                    stack.push(next);
                }
            }
        }
        None
    }

    pub(super) fn add_edge(&mut self, from: NodeIndex, to: NodeIndex) {
        if !self.plan.add_edge(from, to, 1) {
            return;
        }
        let needed = self.plan.level_of(from) + 1;
        if self.plan.level_of(to) < needed {
            // Raise `to` and everything after it that would no longer be above its inputs.
            self.plan.levels_changed();
            self.plan.level[to.index()] = needed;
            // (On the stack: most raises reach a few variables.)
            let mut stack: smallvec::SmallVec<[usize; 16]> = smallvec::smallvec![to.index()];
            while let Some(n) = stack.pop() {
                let level = self.plan.level[n] + 1;
                for k in 0..self.plan.succ.of(n).len() {
                    let s = self.plan.succ.of(n)[k] as usize;
                    if self.plan.level[s] < level {
                        self.plan.level[s] = level;
                        stack.push(s);
                    }
                }
            }
        }
    }

    pub(super) fn remove_edge(&mut self, from: NodeIndex, to: NodeIndex) {
        self.plan.remove_edge(from, to);
    }
}
