//! Clocks and expiring effects.
//!
//! A clock (`[clocks.SCOPE]`) is a NUMBER channel that only moves forward: `Turn`, `Phase`,
//! each creature's `TurnEnds`. A `tick` (by an amount, 1 by default) or a `set_clock` moves it;
//! moving it backwards is an error (`sheet.clock_backwards`).
//!
//! An added object or ad-hoc modifier may carry `until`: a clock and the value after which it
//! no longer applies, absolute or relative to the clock when it is added (`+1`). When a step
//! moves the clock past that value, the effect is removed in the same atomic batch — an object
//! with everything it brought, a modifier alone — and the character's [`Expired`] list says
//! what expired, so that reports and why-changed can say "expired when Turn passed 3".
//!
//! The clocks' values and the effects waiting on them are the character's bookkeeping, kept
//! beside the objects (`Timing`), copied and restored with them. A clock's value is its
//! channel's input, known here exactly (it is only ever set by these steps), so the batch
//! knows which effects expire while it is translated. A character that never used a clock
//! holds none of this (`None`: copying it costs nothing).

use super::{Edit, Input, SheetError, codes, err};
use crate::Map;
use rust_decimal::Decimal;
use solver::{Operation, Step, VarDefId};
use std::fmt;
use std::sync::Arc;

/// Until when an effect applies: while clock `clock` (on instance `on`, `None` for a global
/// clock) has not passed `after` — relative to the clock's value when the effect is added
/// when `relative` (`+1`).
#[derive(Clone, Debug, PartialEq)]
pub struct Until {
    pub clock: String,
    pub on: Option<String>,
    pub after: Decimal,
    pub relative: bool,
}

impl Until {
    /// `after` as written: `+1` (relative to the clock when the effect is added) or `3`.
    pub fn parse(clock: &str, on: Option<&str>, after: &str) -> Result<Until, String> {
        let t = after.trim();
        let (relative, number) = match t.strip_prefix('+') {
            Some(rest) => (true, rest),
            None => (false, t),
        };
        let after = formula::parse_decimal(number).map_err(|m| {
            format!("until: `{after}` is not a value of clock `{clock}` (a number, or +n after now): {m}")
        })?;
        Ok(Until { clock: clock.to_owned(), on: on.map(str::to_owned), after, relative })
    }

    /// `after` as [`Until::parse`] reads it.
    pub fn after_text(&self) -> String {
        if self.relative { format!("+{}", self.after) } else { self.after.to_string() }
    }
}

impl fmt::Display for Until {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let on = self.on.as_deref().map(|o| format!("{o}.")).unwrap_or_default();
        let sign = if self.relative && self.after >= Decimal::ZERO { "+" } else { "" };
        write!(f, "until {on}{} {sign}{}", self.clock, self.after)
    }
}

/// What a clock's move removed: `what` (displayed `object `bless``, `modifier `haste``),
/// which clock passed which value, and the clock's value after the move. The owned form of
/// an [`ExpiredRef`], for reports that outlive the character's next batch.
#[derive(Clone, Debug, PartialEq)]
pub struct Expired {
    pub what: ExpiredEffect,
    /// The clock's name (`Turn`, `Goblin.TurnEnds`).
    pub clock: std::sync::Arc<str>,
    pub after: Decimal,
    pub now: Decimal,
}

impl fmt::Display for Expired {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        ExpiredRef { what: &self.what, clock: &self.clock, after: self.after, now: self.now }.fmt(f)
    }
}

/// What the last batch's clock moves expired ([`super::Character::expired`]), in the order
/// they expired: each effect with the value its clock passed, beside the moves that expired
/// them. A move's clock name and value are held once, by the move, and each effect names
/// its move by index: a tick expiring a hundred effects takes no reference count on the name
/// per effect (each an atomic write; they were a fifth of such a tick's time).
#[derive(Clone, Debug, Default)]
pub struct Expiries {
    effects: Vec<Lapsed>,
    moves: Vec<ClockMove>,
}

#[derive(Clone, Debug)]
struct Lapsed {
    what: ExpiredEffect,
    after: Decimal,
    /// Its move, in `Expiries::moves`.
    by: u32,
}

/// A clock's move that expired something: its name (`Turn`, `Goblin.TurnEnds`) and its value
/// after the move.
#[derive(Clone, Debug)]
pub(super) struct ClockMove {
    clock: Arc<str>,
    now: Decimal,
}

impl Expiries {
    /// How many effects expired.
    pub fn len(&self) -> usize {
        self.effects.len()
    }

    pub fn is_empty(&self) -> bool {
        self.effects.is_empty()
    }

    /// Each expired effect with its clock, in the order they expired.
    pub fn iter(&self) -> impl Iterator<Item = ExpiredRef<'_>> + '_ {
        self.effects.iter().filter_map(|e| {
            // Every effect names a move pushed before it (`Edit::move_clock`): none is skipped.
            let m = self.moves.get(e.by as usize)?;
            Some(ExpiredRef { what: &e.what, clock: &m.clock, after: e.after, now: m.now })
        })
    }

    /// The effects as owned records (the clock's name shared by reference count).
    pub fn to_vec(&self) -> Vec<Expired> {
        self.iter().map(ExpiredRef::owned).collect()
    }
}

/// One expired effect, borrowed from the character's [`Expiries`]; displayed as "object
/// `bless` expired when Turn passed 3".
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ExpiredRef<'a> {
    pub what: &'a ExpiredEffect,
    /// The clock's name (`Turn`, `Goblin.TurnEnds`).
    pub clock: &'a Arc<str>,
    /// The value the clock passed.
    pub after: Decimal,
    /// The clock's value after the move.
    pub now: Decimal,
}

impl ExpiredRef<'_> {
    pub fn owned(self) -> Expired {
        Expired { what: self.what.clone(), clock: Arc::clone(self.clock), after: self.after, now: self.now }
    }
}

impl fmt::Display for ExpiredRef<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} expired when {} passed {}", self.what, self.clock, self.after)
    }
}

/// An effect a clock's move removed, by id. Its text (`object `bless``) is made when it is
/// displayed, not when the effect expires (a tick may expire hundreds).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ExpiredEffect {
    Object(Arc<str>),
    Modifier(Arc<str>),
}

impl ExpiredEffect {
    /// The object's or modifier's id.
    pub fn id(&self) -> &str {
        match self {
            ExpiredEffect::Object(id) | ExpiredEffect::Modifier(id) => id,
        }
    }
}

impl fmt::Display for ExpiredEffect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ExpiredEffect::Object(id) => write!(f, "object `{id}`"),
            ExpiredEffect::Modifier(id) => write!(f, "modifier `{id}`"),
        }
    }
}

/// An expiry recorded while a batch is translated. A modifier's id is the one its removal
/// step carries, moved into the report once the batch has succeeded ([`settle`]): a reference
/// count fewer to take and to give back per effect (each an atomic write, which a tick
/// expiring a hundred effects felt). Its clock's move is named by index, in the batch's moves.
#[derive(Debug)]
pub(super) struct Expiring {
    what: Lapse,
    after: Decimal,
    by: u32,
}

#[derive(Debug)]
enum Lapse {
    Object(Arc<str>),
    /// The modifier removed by the batch's step at this index (a `Step::Remove`).
    Removed(usize),
}

/// What `expiring` expired, named, into `out` (emptied first), with `moves`, the batch's clock
/// moves they name: the modifiers' ids taken from `steps`, the batch's solver steps, once they
/// have been applied. Leaves `expiring`, `moves` and `steps` empty (their memory kept for the
/// next batch).
pub(super) fn settle(
    expiring: &mut Vec<Expiring>,
    moves: &mut Vec<ClockMove>,
    steps: &mut Vec<Step>,
    out: &mut Expiries,
) {
    out.effects.clear();
    out.moves.clear();
    std::mem::swap(&mut out.moves, moves);
    if expiring.is_empty() {
        steps.clear();
        return;
    }
    out.effects.reserve(expiring.len());
    // The removals' indexes ascend (`move_clock` pushes them in order): one walk, `next` the
    // index of the step `steps` gives next.
    let (mut steps, mut next) = (steps.drain(..), 0);
    for e in expiring.drain(..) {
        let what = match e.what {
            Lapse::Object(id) => ExpiredEffect::Object(id),
            Lapse::Removed(i) => {
                let step = i.checked_sub(next).and_then(|skip| steps.nth(skip));
                next = i + 1;
                // `move_clock` pushed a `Step::Remove` at `i`; nothing else is there.
                match step {
                    Some(Step::Remove(id)) => ExpiredEffect::Modifier(id),
                    _ => continue,
                }
            }
        };
        out.effects.push(Lapsed { what, after: e.after, by: e.by });
    }
}

/// A clock: its instance (`None`: global) and variable.
pub(super) type ClockKey = (Option<Arc<str>>, VarDefId);

/// The clocks' values and the effects waiting on them.
#[derive(Clone, Debug, Default)]
pub(super) struct Timing {
    clocks: Map<ClockKey, Decimal>,
    waiting: Vec<Waiting>,
}

/// An effect that expires once its clock passes `after`.
#[derive(Clone, Debug)]
struct Waiting {
    clock: ClockKey,
    after: Decimal,
    effect: Effect,
}

#[derive(Clone, Debug, PartialEq)]
enum Effect {
    Object(Arc<str>),
    /// An ad-hoc modifier, with what removes it otherwise (its source; the instances it is on
    /// and from), so that it stops waiting when it goes another way.
    Modifier {
        id: Arc<str>,
        source: Arc<str>,
        on: Option<Arc<str>>,
        from: Option<Arc<str>>,
    },
}

impl super::Character {
    /// When the effect that brought modifier `modifier` expires — its object's `until`, or its
    /// own — as the clock's name and the value it must pass (`Turn`, 3); `None` for a
    /// modifier that lasts.
    pub fn expiry(&self, modifier: &str) -> Option<(String, Decimal)> {
        let t = self.state.timing.as_ref()?;
        let owner = self.state.active.iter().find(|(_, a)| a.mods.iter().any(|(m, _)| **m == *modifier));
        let owner = owner.map(|(id, _)| id);
        let w = t.waiting.iter().find(|w| match &w.effect {
            Effect::Object(o) => owner == Some(o),
            Effect::Modifier { id, .. } => **id == *modifier,
        })?;
        let name = &self.ruleset.rules().var(w.clock.1).name;
        let clock = match &w.clock.0 {
            Some(on) => format!("{on}.{name}"),
            None => name.to_string(),
        };
        Some((clock, w.after))
    }
}

/// How a step moves a clock.
pub(super) enum Move {
    By(Decimal),
    To(Decimal),
}

impl Edit<'_> {
    fn timing_mut(&mut self) -> &mut Timing {
        Arc::make_mut(self.state.timing.get_or_insert_with(Default::default))
    }

    /// How reports name a clock: `Turn`, `Goblin.TurnEnds`.
    fn clock_name(&self, key: &ClockKey) -> String {
        let name = &self.r.rules().var(key.1).name;
        match &key.0 {
            Some(on) => {
                let mut s = String::with_capacity(on.len() + 1 + name.len());
                s.push_str(on);
                s.push('.');
                s.push_str(name);
                s
            }
            None => name.to_string(),
        }
    }

    /// The clock named `clock` on instance `on` (its scope's clock), or an error.
    fn clock(&self, clock: &str, on: Option<&str>) -> Result<ClockKey, SheetError> {
        let rules = self.r.rules();
        let scope = self.scope_of(on)?;
        let def = rules.resolve(scope, clock).filter(|&d| self.r.is_clock(d) && rules.var(d).scope == scope);
        let Some(def) = def else {
            return Err(err(
                codes::UNKNOWN_CHANNEL,
                format!(
                    "there is no clock `{clock}` in scope {}{}",
                    rules.scope_def(scope).name,
                    on.map_or(String::new(), |o| format!(" (object `{o}`)"))
                ),
            ));
        };
        Ok((on.map(Arc::from), def))
    }

    /// A clock's value now (in this batch): the last it was moved to, else the default.
    fn clock_value(&self, key: &ClockKey) -> Decimal {
        let moved = self.state.timing.as_ref().and_then(|t| t.clocks.get(key).copied());
        moved.unwrap_or_else(|| match &self.r.rules().var_defaults()[key.1.0 as usize] {
            formula::Value::Number(d) => *d,
            _ => Decimal::ZERO,
        })
    }

    /// A `tick` or `set_clock`: the clock moved forward (its channel set), and every effect
    /// waiting on it that it now passes removed, in this batch.
    pub(super) fn move_clock(
        &mut self,
        clock: &str,
        on: Option<&str>,
        to: Move,
        ops: &mut Vec<Step>,
    ) -> Result<(), SheetError> {
        let key = self.clock(clock, on)?;
        let now = self.clock_value(&key);
        let new = match to {
            Move::By(by) if by < Decimal::ZERO => {
                return Err(err(
                    codes::CLOCK_BACKWARDS,
                    format!("clock `{}` only moves forward: tick by {by} is negative", self.clock_name(&key)),
                ));
            }
            Move::By(by) => now.checked_add(by).ok_or_else(|| {
                err(
                    codes::BAD_VALUE,
                    format!(
                        "clock `{}`: {now} + {by} is outside the exact decimal range",
                        self.clock_name(&key)
                    ),
                )
            })?,
            Move::To(to) => to,
        };
        if new < now {
            return Err(err(
                codes::CLOCK_BACKWARDS,
                format!("clock `{}` is at {now}: it cannot move back to {new}", self.clock_name(&key)),
            ));
        }
        self.set_input_of(key.1, on, Input::To(&formula::Value::Number(new)), ops)?;
        // The bookkeeping after the move — the clock's value, the effects still waiting — made
        // from the old one, which the batch's undo shares, without copying what expires.
        let shared = self.state.timing.take().unwrap_or_default();
        let mut due: Vec<&Waiting> = Vec::with_capacity(shared.waiting.len());
        let mut keep = Vec::new();
        for w in &shared.waiting {
            if w.clock == key && before(w.after, new) {
                due.push(w);
            } else {
                keep.push(w.clone());
            }
        }
        let mut clocks = shared.clocks.clone();
        clocks.insert(key.clone(), new);
        self.state.timing = Some(Arc::new(Timing { clocks, waiting: keep }));
        if due.is_empty() {
            return Ok(());
        }
        // The move, named once for every effect it expires (a tick may expire hundreds).
        let by = self.moves.len() as u32;
        self.moves.push(ClockMove { clock: self.clock_name(&key).into(), now: new });
        // One growth each, not one per doubling.
        ops.reserve(due.len());
        self.expired.reserve(due.len());
        for w in due {
            let what = match &w.effect {
                Effect::Object(id) => {
                    if !self.state.active.contains_key(id) {
                        continue;
                    }
                    self.deactivate(id, ops);
                    Lapse::Object(id.clone())
                }
                Effect::Modifier { id, .. } => {
                    ops.push(Step::Remove(id.clone()));
                    Lapse::Removed(ops.len() - 1)
                }
            };
            self.expired.push(Expiring { what, after: w.after, by });
        }
        Ok(())
    }

    /// An `add_object` or `add_modifier` that lasts `until`: translated, then registered.
    pub(super) fn lasting(
        &mut self,
        op: &super::SheetOp,
        until: &Until,
        ops: &mut Vec<Step>,
    ) -> Result<(), SheetError> {
        use super::SheetOp;
        match op {
            SheetOp::AddObject { kind, key, id, parent } => {
                let id = self.add_object(kind, key, id.as_deref(), parent.as_deref(), ops)?;
                self.wait(until, Waits::Object(id))
            }
            SheetOp::Solver(Operation::AddModifier(spec)) => {
                self.translate(op, ops)?;
                self.wait(until, Waits::Modifier(spec))
            }
            other => Err(err(
                codes::BAD_VALUE,
                format!("`until` goes with add_object or add_modifier, not with `{other}`"),
            )),
        }
    }

    /// Registers an effect just added (object `object`, or the modifier `modifier`) as lasting
    /// `until`.
    pub(super) fn wait(&mut self, until: &Until, effect: Waits<'_>) -> Result<(), SheetError> {
        let key = self.clock(&until.clock, until.on.as_deref())?;
        let now = self.clock_value(&key);
        let after = if until.relative {
            now.checked_add(until.after)
                .ok_or_else(|| err(codes::BAD_VALUE, format!("{until}: outside the exact decimal range")))?
        } else {
            until.after
        };
        if after < now {
            return Err(err(
                codes::BAD_VALUE,
                format!("{until}: clock `{}` is already at {now}, past {after}", self.clock_name(&key)),
            ));
        }
        let effect = match effect {
            Waits::Object(id) => Effect::Object(id),
            Waits::Modifier(spec) => Effect::Modifier {
                id: spec.id.clone(),
                source: spec.source.clone(),
                on: spec.on.clone(),
                from: spec.from.clone().or_else(|| spec.on.clone()),
            },
        };
        self.timing_mut().waiting.push(Waiting { clock: key, after, effect });
        Ok(())
    }

    /// Effects that went another way stop waiting: object `id` removed, and the ad-hoc
    /// modifiers on or from its instance or its parts' (`id#1`), which went with them.
    pub(super) fn forget_object(&mut self, id: &str) {
        let of = |i: &Option<Arc<str>>| {
            i.as_deref()
                .is_some_and(|i| i == id || i.strip_prefix(id).is_some_and(|rest| rest.starts_with('#')))
        };
        self.forget(|e| match e {
            Effect::Object(o) => &**o == id,
            Effect::Modifier { on, from, .. } => of(on) || of(from),
        });
    }

    /// Effects that went another way stop waiting: the modifiers a solver operation removes
    /// (by id, by source, or with an instance they are on or from).
    pub(super) fn forget_removed(&mut self, op: &Operation) {
        match op {
            Operation::RemoveModifier(m) => {
                self.forget(|e| matches!(e, Effect::Modifier { id, .. } if **id == **m))
            }
            Operation::RemoveSource(s) => {
                self.forget(|e| matches!(e, Effect::Modifier { source, .. } if **source == **s))
            }
            Operation::RemoveInstance(k) => self.forget(|e| {
                let here = |i: &Option<Arc<str>>| i.as_deref() == Some(k.as_str());
                matches!(e, Effect::Modifier { on, from, .. } if here(on) || here(from))
            }),
            _ => {}
        }
    }

    fn forget(&mut self, gone: impl Fn(&Effect) -> bool) {
        let Some(t) = &self.state.timing else { return };
        if t.waiting.iter().any(|w| gone(&w.effect)) {
            self.timing_mut().waiting.retain(|w| !gone(&w.effect));
        }
    }
}

/// What a `wait` registers.
pub(super) enum Waits<'a> {
    Object(Arc<str>),
    Modifier(&'a solver::ModifierSpec),
}

/// `a < b`: the mantissas compared when the scales agree (clock values nearly always do, in
/// whole turns), rust_decimal's general comparison (several times the work) otherwise.
#[inline]
fn before(a: Decimal, b: Decimal) -> bool {
    if a.scale() == b.scale() { a.mantissa() < b.mantissa() } else { a < b }
}

#[cfg(test)]
mod tests {
    use super::before;
    use proptest::prelude::*;
    use rust_decimal::Decimal;

    proptest! {
        /// The shortcut agrees with the general comparison, scales equal or not.
        #[test]
        fn before_is_less_than(a in any::<i64>(), sa in 0u32..6, b in any::<i64>(), sb in 0u32..6, same in any::<bool>()) {
            let a = Decimal::new(a, sa);
            let b = Decimal::new(b, if same { sa } else { sb });
            prop_assert_eq!(before(a, b), a < b);
        }
    }
}
