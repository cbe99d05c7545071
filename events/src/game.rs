//! A game: a character driven by steps, some of which fire rules.
//!
//! [`Game::apply`] takes one [`Step`]:
//! - `Ops`: a batch of sheet operations, as [`Character::apply`] takes them;
//! - `Emit`: an event. Its rules fire, each as atomic batches of its actions; events they emit
//!   are queued and run after the current event's rules (breadth first);
//! - `Choose`: the answer to the pending choice a rule asked; the rule, and the cascade it was
//!   part of, go on from there;
//! - `Roll`: a die's value, supplied (sheetd draws no randomness), answering a pending roll.
//!
//! ## The order rules run in
//! An event's rules run in reading order. A rule that belongs to an object runs once for each
//! of that object's placements on the sheet, in the order they were added, before the next rule.
//! Events emitted while an event is processed are queued, in the order emitted, and processed
//! after it: a cascade runs breadth first.
//!
//! ## One firing
//! A firing is admitted when the event's arguments pass the rule's filters, its use limit has a
//! use left (counted per rule and placement; per period of a clock when it says so), and its
//! guard is true, read now in the rule's instance. Its actions then run in order as one atomic
//! batch — up to an `ask` or a `roll`, which ends a batch: what came before is committed, the
//! step reports the question as `pending`, and the rest of the rule waits for the answer. A
//! batch that fails (a `require`, a stock's bounds) changes nothing, ends the firing, and is
//! reported with the firing; the cascade goes on. The emits of a batch are queued only when it
//! commits.
//!
//! ## Atomic firings, bounded cascades
//! A step that is refused (an unknown event, arguments that do not check, a pick that is not an
//! option) changes nothing. Once it runs, each firing is atomic, the cascade is not: a cascade
//! that does not end — past [`MAX_DEPTH`] events in one chain, or [`MAX_FIRINGS`] firings in one
//! step — is stopped, and the report says so (`stopped`: `events.cascade_loop`, naming the
//! chain of rules); the firings before it stand. (Undoing a whole cascade would mean keeping a
//! copy of the sheet through every step, and a copy's first change copies its graph.) A guard
//! or an ask's options that have no value fail that firing only. While a choice or roll is
//! pending, every other step is refused (`events.choice_pending`).

use crate::Map;
use crate::book::{Action, ArgKind, EventId, Field, Filter, Lasting, On, Options, RuleBook, RuleId, Take};
use data::{Character, Expired, Origin, SheetCode, SheetError, SheetOp};
use formula::Value;
use rust_decimal::Decimal;
use solver::{Change, Guard, ModifierSpec, Operation, Slot};
use std::collections::VecDeque;
use std::fmt;
use std::sync::Arc;

/// Events in one chain of a cascade (an event emitted by a rule fired by an event …) before the
/// chain is taken for a loop.
pub const MAX_DEPTH: usize = 32;
/// Firings in one step before its cascade is taken for a loop.
pub const MAX_FIRINGS: usize = 1000;

/// One step of a game.
#[derive(Clone, Debug)]
pub enum Step {
    /// Sheet operations, one atomic batch.
    Ops(Vec<SheetOp>),
    /// An event with its arguments (name, value as text); every declared argument is given.
    Emit { event: String, args: Vec<(String, String)> },
    /// The answer to pending choice number `choice`: the options picked (none: declined).
    Choose { choice: u64, picks: Vec<String> },
    /// The value a die came up with, answering a pending roll of that die.
    Roll { die: String, value: i64 },
}

impl From<Vec<SheetOp>> for Step {
    /// A batch of operations is a step.
    fn from(ops: Vec<SheetOp>) -> Step {
        Step::Ops(ops)
    }
}

/// A batch of operations as a step shows it: `op; op`.
struct OpsShown<'a>(&'a [SheetOp]);

impl fmt::Display for OpsShown<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, op) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str("; ")?;
            }
            write!(f, "{op}")?;
        }
        Ok(())
    }
}

impl fmt::Display for Step {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Step::Ops(ops) => OpsShown(ops).fmt(f),
            Step::Emit { event, args } => {
                let parts: Vec<String> = args.iter().map(|(k, v)| format!("{k}={v}")).collect();
                match parts.is_empty() {
                    true => write!(f, "emit {event}"),
                    false => write!(f, "emit {event}({})", parts.join(", ")),
                }
            }
            Step::Choose { choice, picks } => write!(f, "choose #{choice}: [{}]", picks.join(", ")),
            Step::Roll { die, value } => write!(f, "roll {die} = {value}"),
        }
    }
}

/// The stable codes of game errors besides the sheet's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Code {
    /// The sheet refused a batch (its own code).
    Sheet(SheetCode),
    /// A step other than the answer while a choice or roll is pending.
    ChoicePending,
    /// A `choose` or `roll` with no such question pending.
    NoChoice,
    /// Picks that are not the options, or not as many as asked.
    BadPick,
    /// An emitted event that is not declared.
    UnknownEvent,
    /// An event's arguments missing, unknown, or not of their channel's format; an instance
    /// argument naming no instance.
    BadArgs,
    /// A cascade that does not end.
    CascadeLoop,
    /// A roll's value outside what the die can show.
    BadRoll,
    /// A rule's guard or limit clock has no value.
    Guard,
}

impl Code {
    /// The code as written in outputs: `events.choice_pending`, or the sheet's.
    pub fn as_str(self) -> &'static str {
        match self {
            Code::Sheet(c) => c.as_str(),
            Code::ChoicePending => "events.choice_pending",
            Code::NoChoice => "events.no_choice",
            Code::BadPick => "events.bad_pick",
            Code::UnknownEvent => "events.unknown_event",
            Code::BadArgs => "events.bad_args",
            Code::CascadeLoop => "events.cascade_loop",
            Code::BadRoll => "events.bad_roll",
            Code::Guard => "events.guard",
        }
    }
}

impl fmt::Display for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A step the game refused, or a firing that failed.
#[derive(Clone, Debug)]
pub struct GameError {
    pub code: Code,
    pub message: String,
    /// The sheet's error, when the sheet refused a batch (its operation index and solver error).
    pub sheet: Option<Box<SheetError>>,
    /// For a loop: the rules of the chain, in firing order.
    pub chain: Vec<Arc<str>>,
}

impl GameError {
    fn new(code: Code, message: String) -> GameError {
        GameError { code, message, sheet: None, chain: Vec::new() }
    }
}

impl From<SheetError> for GameError {
    fn from(e: SheetError) -> GameError {
        GameError {
            code: Code::Sheet(e.code),
            message: e.message.clone(),
            sheet: Some(Box::new(e)),
            chain: Vec::new(),
        }
    }
}

impl fmt::Display for GameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} [{}]", self.message, self.code)
    }
}

/// A rule that fired in a step.
#[derive(Clone, Debug)]
pub struct Fired {
    pub rule: Arc<str>,
    /// Where the rule is written.
    pub at: Origin,
    pub event: Arc<str>,
    /// The object it fired for (its id), for a rule that belongs to an object.
    pub this: Option<Arc<str>>,
    /// Why its batch failed, if it did (what it committed before an ask stays).
    pub error: Option<GameError>,
}

impl fmt::Display for Fired {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "rule {} ({}) on {}", self.rule, self.at, self.event)?;
        if let Some(t) = &self.this {
            write!(f, " for {t}")?;
        }
        if let Some(e) = &self.error {
            write!(f, ": failed: {e}")?;
        }
        Ok(())
    }
}

/// A question waiting for its answer.
#[derive(Clone, Debug)]
pub struct Pending {
    /// Its number: the `choose` step names it.
    pub choice: u64,
    pub rule: Arc<str>,
    pub at: Origin,
    pub prompt: Arc<str>,
    /// The options, computed when asked (empty for a roll).
    pub options: Vec<Arc<str>>,
    /// How many to pick: at most (no more than there are options).
    pub pick: u32,
    /// The fewest picks that answer (`pick`, unless the rule asks for "up to `pick`").
    pub at_least: u32,
    /// Whether picking none is an answer.
    pub decline: bool,
    /// For a roll: the die (`2d6`), answered by a `roll` step.
    pub die: Option<Arc<str>>,
}

impl Pending {
    /// How many picks answer it, as a phrase: `2`, `1 to 5`.
    pub fn how_many(&self) -> String {
        if self.at_least < self.pick {
            format!("{} to {}", self.at_least, self.pick)
        } else {
            self.pick.to_string()
        }
    }
}

impl fmt::Display for Pending {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.die {
            Some(d) => write!(f, "#{} roll {d} (rule {})", self.choice, self.rule),
            None => {
                let opts: Vec<&str> = self.options.iter().map(|o| &**o).collect();
                write!(
                    f,
                    "#{} {}: pick {} of [{}]",
                    self.choice,
                    self.prompt,
                    self.how_many(),
                    opts.join(", ")
                )?;
                if self.decline {
                    f.write_str(" (or none)")?;
                }
                write!(f, " (rule {})", self.rule)
            }
        }
    }
}

/// What a step did.
#[derive(Clone, Debug, Default)]
pub struct StepReport {
    /// Every variable whose value the step changed: its value before the step and after it.
    pub changed: Vec<Change>,
    /// Variables evaluated, over all the step's batches.
    pub recomputed: usize,
    /// Effects the step's clock moves expired.
    pub expired: Vec<Expired>,
    /// Rules fired, in firing order.
    pub fired: Vec<Fired>,
    /// The question the step ended on, if any.
    pub pending: Option<Pending>,
    /// Why the step's cascade stopped before its end, if it did (`events.cascade_loop`, with
    /// the chain of rules): the firings before it stand, the rest did not run.
    pub stopped: Option<GameError>,
    /// The sheet operations of the batches the step committed, in order: replayed one after
    /// another on the sheet as it was, they give the same values (a log's why-changed reads them).
    pub applied: Vec<SheetOp>,
}

/// An event waiting to be processed: its arguments as text, and the rules that led to it.
#[derive(Clone, Debug)]
struct EventWork {
    event: EventId,
    args: Arc<[Arc<str>]>,
    /// The operations writing its arguments into their channels.
    writes: Vec<SheetOp>,
    chain: Arc<[RuleId]>,
}

/// An event a batch emits: the event, its arguments, the operations writing them (queued when
/// the batch commits).
type Emitted = (EventId, Vec<Arc<str>>, Vec<SheetOp>);

/// A rule firing for one placement.
#[derive(Clone, Debug)]
struct Firing {
    rule: RuleId,
    this: Option<Arc<str>>,
    on: Option<Arc<str>>,
    args: Arc<[Arc<str>]>,
    /// Per ask or roll, what it bound.
    bound: Vec<Vec<Arc<str>>>,
    /// The next action.
    next: usize,
    chain: Arc<[RuleId]>,
    /// Its number in the game (ids of the modifiers it adds).
    seq: u64,
}

/// A cascade stopped on a question.
#[derive(Clone, Debug)]
struct Suspended {
    view: Pending,
    slot: usize,
    /// For a roll: its dice and sides.
    dice: Option<(u32, u32)>,
    firing: Firing,
    current: VecDeque<Firing>,
    queue: VecDeque<EventWork>,
}

/// Uses of a rule by one placement.
#[derive(Clone, Debug, Default)]
struct Uses {
    period: Option<Decimal>,
    count: u32,
}

/// What a firing's run ended on.
enum Ran {
    Done,
    Asked(Box<Suspended>),
}

/// A character played by steps under a rule book. Cloning copies the character's own state
/// (values and bookkeeping), not the rules.
#[derive(Clone)]
pub struct Game {
    book: Arc<RuleBook>,
    character: Character,
    uses: Map<(RuleId, Option<Arc<str>>), Uses>,
    pending: Option<Box<Suspended>>,
    /// Questions asked so far: the next one's number is this plus one.
    asked: u64,
    /// Firings so far.
    firings: u64,
}

impl Game {
    /// A new game: a new character of the book's ruleset.
    pub fn new(book: Arc<RuleBook>) -> Result<Game, GameError> {
        let character = Character::new(book.ruleset().clone())?;
        Ok(Game::with_character(book, character))
    }

    /// A game over an existing character (of the book's ruleset).
    pub fn with_character(book: Arc<RuleBook>, character: Character) -> Game {
        Game { book, character, uses: Map::default(), pending: None, asked: 0, firings: 0 }
    }

    /// The character.
    pub fn character(&self) -> &Character {
        &self.character
    }

    /// The rule book.
    pub fn book(&self) -> &Arc<RuleBook> {
        &self.book
    }

    /// The question waiting for an answer, if any.
    pub fn pending(&self) -> Option<&Pending> {
        self.pending.as_ref().map(|s| &s.view)
    }

    /// Applies one step (see the module docs). A refused step changes nothing.
    pub fn apply(&mut self, step: &Step) -> Result<StepReport, GameError> {
        let mut report = StepReport::default();
        match step {
            Step::Ops(ops) => {
                self.refuse_if_pending(step)?;
                let r = self.character.apply(ops)?;
                report.recomputed = r.recomputed;
                report.changed = r.named(self.character.sheet());
                report.expired = self.character.expired().to_vec();
                report.applied = ops.clone();
                return Ok(report);
            }
            Step::Emit { event, args } => {
                self.refuse_if_pending(step)?;
                let work = self.top_event(event, args)?;
                report.stopped = self.run(VecDeque::new(), VecDeque::from([work]), &mut report).err();
            }
            Step::Choose { choice, picks } => {
                let s = self.answer(*choice, picks, step)?;
                self.pending = None;
                report.stopped = self.resume(s, &mut report).err();
            }
            Step::Roll { die, value } => {
                let s = self.rolled(die, *value)?;
                self.pending = None;
                report.stopped = self.resume(s, &mut report).err();
            }
        }
        report.changed.retain(|c| !same(&c.old, &c.new));
        Ok(report)
    }

    /// Applies a batch of sheet operations: [`Step::Ops`], with the character's own report
    /// and without copying the operations. Refused while a question is pending.
    pub fn apply_ops(&mut self, ops: &[SheetOp]) -> Result<solver::Report, GameError> {
        self.refuse_if_pending(&OpsShown(ops))?;
        Ok(self.character.apply(ops)?)
    }

    fn refuse_if_pending(&self, step: &dyn fmt::Display) -> Result<(), GameError> {
        match &self.pending {
            None => Ok(()),
            Some(s) => Err(GameError::new(
                Code::ChoicePending,
                format!("`{step}` must wait: question {} is pending; answer it first", s.view),
            )),
        }
    }

    /// The pending choice `choice`, checked against `picks`, with the picks bound.
    fn answer(&mut self, choice: u64, picks: &[String], step: &Step) -> Result<Box<Suspended>, GameError> {
        let Some(s) = &self.pending else {
            return Err(GameError::new(Code::NoChoice, format!("`{step}`: no choice is pending")));
        };
        if s.view.choice != choice || s.view.die.is_some() {
            return Err(GameError::new(
                Code::NoChoice,
                format!("`{step}`: the pending question is {}", s.view),
            ));
        }
        let want = (s.view.pick as usize).min(s.view.options.len());
        let least = (s.view.at_least as usize).min(want);
        let declined = picks.is_empty() && s.view.decline;
        if !(least..=want).contains(&picks.len()) && !declined {
            return Err(GameError::new(
                Code::BadPick,
                format!(
                    "`{step}`: pick {} of the options{}",
                    if least < want { format!("{least} to {want}") } else { want.to_string() },
                    if s.view.decline { " (or none, to decline)" } else { "" }
                ),
            ));
        }
        let mut bound = Vec::with_capacity(picks.len());
        for p in picks {
            let Some(o) = s.view.options.iter().find(|o| o.eq_ignore_ascii_case(p)) else {
                let opts: Vec<&str> = s.view.options.iter().map(|o| &**o).collect();
                return Err(GameError::new(
                    Code::BadPick,
                    format!("`{step}`: `{p}` is not an option (options: {})", opts.join(", ")),
                ));
            };
            if bound.contains(o) {
                return Err(GameError::new(Code::BadPick, format!("`{step}`: `{p}` is picked twice")));
            }
            bound.push(o.clone());
        }
        let mut s = self.pending.clone().expect("checked above: a question is pending");
        let slot = s.slot;
        s.firing.bound[slot] = bound;
        Ok(s)
    }

    /// The pending roll of `die`, checked against `value`, with the value bound.
    fn rolled(&mut self, die: &str, value: i64) -> Result<Box<Suspended>, GameError> {
        let what = format!("`roll {die} = {value}`");
        let Some(s) = &self.pending else {
            return Err(GameError::new(Code::NoChoice, format!("{what}: no roll is pending")));
        };
        let (Some(pending_die), Some((count, sides))) = (&s.view.die, s.dice) else {
            return Err(GameError::new(
                Code::NoChoice,
                format!("{what}: the pending question is {}", s.view),
            ));
        };
        if !pending_die.eq_ignore_ascii_case(die.trim()) {
            return Err(GameError::new(
                Code::NoChoice,
                format!("{what}: the pending roll is of {pending_die}"),
            ));
        }
        let (low, high) = (i64::from(count), i64::from(count) * i64::from(sides));
        if !(low..=high).contains(&value) {
            return Err(GameError::new(
                Code::BadRoll,
                format!("{what}: {pending_die} shows {low} to {high}"),
            ));
        }
        let mut s = self.pending.clone().expect("checked above: a roll is pending");
        let slot = s.slot;
        s.firing.bound[slot] = vec![Arc::from(value.to_string())];
        Ok(s)
    }

    fn resume(&mut self, s: Box<Suspended>, report: &mut StepReport) -> Result<(), GameError> {
        let Suspended { firing, mut current, queue, .. } = *s;
        current.push_front(firing);
        self.run(current, queue, report)
    }

    /// An event given by a step: declared, with exactly its arguments.
    fn top_event(&self, name: &str, given: &[(String, String)]) -> Result<EventWork, GameError> {
        let Some(event) = self.book.event(name) else {
            let known: Vec<&str> = self.book.events().iter().map(|e| &*e.name).collect();
            return Err(GameError::new(
                Code::UnknownEvent,
                format!("emit `{name}`: no such event (declared: {})", known.join(", ")),
            ));
        };
        let def = self.book.event_def(event);
        let mut args: Vec<Option<Arc<str>>> = vec![None; def.args.len()];
        for (k, v) in given {
            match def.args.iter().position(|a| a.name.eq_ignore_ascii_case(k)) {
                Some(i) => args[i] = Some(Arc::from(v.as_str())),
                None => {
                    return Err(GameError::new(
                        Code::BadArgs,
                        format!("emit `{}`: it has no argument `{k}`", def.name),
                    ));
                }
            }
        }
        let args: Option<Vec<Arc<str>>> = args.into_iter().collect();
        let Some(args) = args else {
            let names: Vec<&str> = def.args.iter().map(|a| &*a.name).collect();
            return Err(GameError::new(
                Code::BadArgs,
                format!("emit `{}`: every argument is needed ({})", def.name, names.join(", ")),
            ));
        };
        let writes = self.event_writes(event, &args)?;
        Ok(EventWork { event, args: args.into(), writes, chain: Arc::from([]) })
    }

    /// An event's arguments checked — instances on the sheet, values of their channels'
    /// formats — as the operations that write them into their channels.
    fn event_writes(&self, event: EventId, args: &[Arc<str>]) -> Result<Vec<SheetOp>, GameError> {
        let def = self.book.event_def(event);
        let mut ops = Vec::new();
        for (a, v) in def.args.iter().zip(args) {
            match &a.kind {
                ArgKind::Text => {}
                ArgKind::Instance => {
                    if !self.character.sheet().has_instance(v) {
                        return Err(GameError::new(
                            Code::BadArgs,
                            format!("event `{}`: argument `{}` names no instance `{v}`", def.name, a.name),
                        ));
                    }
                }
                ArgKind::Into { channel, format } => {
                    let value = Value::parse_literal(format, v).map_err(|m| {
                        GameError::new(
                            Code::BadArgs,
                            format!(
                                "event `{}`: argument `{}` = `{v}` is not a {format}: {m}",
                                def.name, a.name
                            ),
                        )
                    })?;
                    let set = SheetOp::SetInput { channel: channel.to_string(), on: None, value };
                    ops.push(SheetOp::Because { op: Box::new(set), cause: def.cause.clone() });
                }
            }
        }
        Ok(ops)
    }

    /// Runs firings and events until both are done or a question stops the cascade.
    fn run(
        &mut self,
        mut current: VecDeque<Firing>,
        mut queue: VecDeque<EventWork>,
        report: &mut StepReport,
    ) -> Result<(), GameError> {
        let mut firings = 0usize;
        loop {
            if let Some(mut f) = current.pop_front() {
                if f.next == 0 {
                    match self.admit(&f) {
                        Ok(true) => {}
                        Ok(false) => continue,
                        Err(e) => {
                            report.fired.push(self.fired(&f, Some(e)));
                            continue;
                        }
                    }
                }
                firings += 1;
                if firings > MAX_FIRINGS {
                    return Err(self.loop_error(
                        &f.chain,
                        f.rule,
                        format!("more than {MAX_FIRINGS} firings in one step"),
                    ));
                }
                match self.fire(&mut f, &mut queue, report)? {
                    Ran::Done => {}
                    Ran::Asked(mut s) => {
                        s.current = current;
                        s.queue = queue;
                        report.pending = Some(s.view.clone());
                        self.pending = Some(s);
                        return Ok(());
                    }
                }
            } else if let Some(ev) = queue.pop_front() {
                self.start_event(ev, &mut current, report)?;
            } else {
                return Ok(());
            }
        }
    }

    /// A firing as reported.
    fn fired(&self, f: &Firing, error: Option<GameError>) -> Fired {
        let rule = self.book.rule(f.rule);
        let event = self.book.event_def(rule.event).name.clone();
        Fired { rule: rule.name.clone(), at: rule.at.clone(), event, this: f.this.clone(), error }
    }

    fn loop_error(&self, chain: &[RuleId], last: RuleId, why: String) -> GameError {
        let names: Vec<Arc<str>> =
            chain.iter().chain([&last]).map(|r| self.book.rule(*r).name.clone()).collect();
        let shown: Vec<String> = chain
            .iter()
            .chain([&last])
            .map(|r| format!("{} ({})", self.book.rule(*r).name, self.book.rule(*r).at))
            .collect();
        GameError {
            code: Code::CascadeLoop,
            message: format!("the cascade does not end ({why}): {}", shown.join(" → ")),
            sheet: None,
            chain: names,
        }
    }

    /// Writes an event's arguments into their channels and queues its firings.
    fn start_event(
        &mut self,
        mut ev: EventWork,
        current: &mut VecDeque<Firing>,
        report: &mut StepReport,
    ) -> Result<(), GameError> {
        let book = self.book.clone();
        if !ev.writes.is_empty() {
            self.commit(std::mem::take(&mut ev.writes), report)?;
        }
        let depth = ev.chain.len();
        for &rid in book.listeners(ev.event) {
            let rule = book.rule(rid);
            if depth >= MAX_DEPTH {
                return Err(self.loop_error(
                    &ev.chain,
                    rid,
                    format!("a chain of more than {MAX_DEPTH} events"),
                ));
            }
            let placements = match rule.object {
                None => vec![(None, None)],
                Some(o) => self.character.placed(o).into_iter().map(|(id, on)| (Some(id), on)).collect(),
            };
            for (this, on) in placements {
                let passes = rule.filters.iter().all(|(i, f)| match f {
                    Filter::Equals(t) => *ev.args[*i] == **t,
                    Filter::This => {
                        this.as_deref() == Some(&*ev.args[*i]) || on.as_deref() == Some(&*ev.args[*i])
                    }
                });
                if passes {
                    current.push_back(Firing {
                        rule: rid,
                        this,
                        on,
                        args: ev.args.clone(),
                        bound: vec![Vec::new(); rule.bound.len()],
                        next: 0,
                        chain: ev.chain.clone(),
                        seq: 0,
                    });
                }
            }
        }
        Ok(())
    }

    /// Whether a firing may run: a use left, its guard true. Counts the use.
    fn admit(&mut self, f: &Firing) -> Result<bool, GameError> {
        let rule = self.book.rule(f.rule);
        // The rule's name and place, made at load: the label of any error.
        let label = &*rule.cause;
        let sheet = self.character.sheet();
        let mut period = None;
        if let Some(limit) = &rule.limit {
            if let Some((clock, read)) = &limit.per {
                let v = sheet.evaluate(label, read, f.on.as_deref()).map_err(|e| {
                    GameError::new(Code::Guard, format!("{}, reading clock {clock}", e.message))
                })?;
                period = v.as_number();
            }
            let uses = self.uses.get(&(f.rule, f.this.clone()));
            let used = match uses {
                Some(u) if u.period == period => u.count,
                _ => 0,
            };
            if used >= limit.times {
                return Ok(false);
            }
        }
        if let Some(g) = &rule.guard {
            let v = sheet.evaluate(label, g, f.on.as_deref());
            match v {
                Ok(Value::Boolean(true)) => {}
                Ok(_) => return Ok(false),
                Err(e) => return Err(GameError::new(Code::Guard, e.message)),
            }
        }
        if rule.limit.is_some() {
            let u = self.uses.entry((f.rule, f.this.clone())).or_default();
            if u.period != period {
                *u = Uses { period, count: 0 };
            }
            u.count += 1;
        }
        Ok(true)
    }

    /// Runs a firing's actions from where it is: batches up to each question.
    fn fire(
        &mut self,
        f: &mut Firing,
        queue: &mut VecDeque<EventWork>,
        report: &mut StepReport,
    ) -> Result<Ran, GameError> {
        let book = self.book.clone();
        let rule = book.rule(f.rule);
        if f.next == 0 {
            self.firings += 1;
            f.seq = self.firings;
        }
        let mut fired = self.fired(f, None);
        let mut ops = Vec::with_capacity(rule.actions.len());
        let mut emits = Vec::new();
        while let Some(action) = rule.actions.get(f.next) {
            // `each` and `read`: what came before commits, then what they read now is bound.
            // `add_object` with `as`: what came before commits, then its fresh id is bound and
            // it is added with what follows.
            if let Action::AddObject { bind: Some(slot), key, .. } = action {
                let picked = self
                    .commit_segment(std::mem::take(&mut ops), &mut emits, f, queue, report)
                    .and_then(|()| self.fresh_id(key, f));
                match picked {
                    Ok(id) => f.bound[*slot] = vec![id],
                    Err(e) => {
                        fired.error = Some(e);
                        report.fired.push(fired);
                        return Ok(Ran::Done);
                    }
                }
            }
            if matches!(action, Action::Each { .. } | Action::Read { .. }) {
                let bound = self
                    .commit_segment(std::mem::take(&mut ops), &mut emits, f, queue, report)
                    .and_then(|()| self.bind(action, f));
                if let Err(e) = bound {
                    fired.error = Some(e);
                    report.fired.push(fired);
                    return Ok(Ran::Done);
                }
                f.next += 1;
                continue;
            }
            if action.asks() {
                if let Err(e) = self.commit_segment(std::mem::take(&mut ops), &mut emits, f, queue, report) {
                    fired.error = Some(e);
                    report.fired.push(fired);
                    return Ok(Ran::Done);
                }
                f.next += 1;
                match self.ask(action, f) {
                    Ok(s) => {
                        report.fired.push(fired);
                        return Ok(Ran::Asked(s));
                    }
                    Err(e) => {
                        fired.error = Some(e);
                        report.fired.push(fired);
                        return Ok(Ran::Done);
                    }
                }
            }
            if let Err(e) = self.build(action, f, &mut ops, &mut emits) {
                fired.error = Some(e);
                report.fired.push(fired);
                return Ok(Ran::Done);
            }
            f.next += 1;
        }
        if let Err(e) = self.commit_segment(ops, &mut emits, f, queue, report) {
            fired.error = Some(e);
        }
        report.fired.push(fired);
        Ok(Ran::Done)
    }

    fn commit_segment(
        &mut self,
        ops: Vec<SheetOp>,
        emits: &mut Vec<Emitted>,
        f: &Firing,
        queue: &mut VecDeque<EventWork>,
        report: &mut StepReport,
    ) -> Result<(), GameError> {
        if !ops.is_empty() {
            self.commit(ops, report)?;
        }
        let chain: Arc<[RuleId]> = f.chain.iter().copied().chain([f.rule]).collect();
        for (event, args, writes) in emits.drain(..) {
            queue.push_back(EventWork { event, args: args.into(), writes, chain: chain.clone() });
        }
        Ok(())
    }

    /// One batch on the character, its changes merged into the step's.
    fn commit(&mut self, ops: Vec<SheetOp>, report: &mut StepReport) -> Result<(), GameError> {
        let r = self.character.apply(&ops)?;
        report.applied.extend(ops);
        report.recomputed += r.recomputed;
        report.expired.extend(self.character.expired().iter().map(data::ExpiredRef::owned));
        for c in r.named(self.character.sheet()) {
            match report.changed.iter_mut().find(|x| x.var == c.var) {
                Some(x) => x.new = c.new,
                None => report.changed.push(c),
            }
        }
        Ok(())
    }

    /// A question's view and the state to resume from.
    fn ask(&mut self, action: &Action, f: &Firing) -> Result<Box<Suspended>, GameError> {
        let rule = self.book.rule(f.rule);
        self.asked += 1;
        let mut view = Pending {
            choice: self.asked,
            rule: rule.name.clone(),
            at: rule.at.clone(),
            prompt: Arc::from(""),
            options: Vec::new(),
            pick: 1,
            at_least: 1,
            decline: false,
            die: None,
        };
        let (slot, dice) = match action {
            Action::Ask(a) => {
                view.prompt = a.prompt.clone();
                view.pick = a.pick;
                view.decline = a.decline;
                view.options = match &a.options {
                    Options::List(l) => l.clone(),
                    Options::Select { scope, where_ } => self
                        .character
                        .sheet()
                        .select(scope, where_)
                        .map_err(|e| GameError::new(Code::Guard, e.message))?,
                    Options::Kind(k) => {
                        let r = self.character.ruleset();
                        r.objects().iter().filter(|o| o.kind == *k).map(|o| o.key.clone()).collect()
                    }
                };
                // No more than there are options (when there are any): "up to all of them".
                let there = u32::try_from(view.options.len()).unwrap_or(u32::MAX);
                if there > 0 && view.pick > there {
                    view.pick = there;
                }
                view.at_least = a.at_least.min(view.pick);
                (a.slot, None)
            }
            Action::Roll { slot, die, count, sides } => {
                view.prompt = Arc::from(format!("roll {die}"));
                view.die = Some(die.clone());
                (*slot, Some((*count, *sides)))
            }
            _ => unreachable!("fire calls ask only for actions that ask"),
        };
        Ok(Box::new(Suspended {
            view,
            slot,
            dice,
            firing: f.clone(),
            current: VecDeque::new(),
            queue: VecDeque::new(),
        }))
    }

    /// What an `each` (the instances that match now) or a `read` (a channel's value now, as
    /// text: none when empty) binds, bound into the firing.
    fn bind(&self, action: &Action, f: &mut Firing) -> Result<(), GameError> {
        match action {
            Action::Each { slot, scope, where_, order } => {
                let all = self
                    .character
                    .sheet()
                    .select(scope, where_)
                    .map_err(|e| GameError::new(Code::Guard, e.message))?;
                f.bound[*slot] = match order {
                    Some((var, take)) => self.ordered(all, var, *take)?,
                    None => all,
                };
            }
            Action::Read { slot, channel, on } => {
                // On a name bound to several instances: each one's value (the empty ones none).
                let times = match on {
                    On::Field(Field::Bound(i)) => f.bound[*i].len(),
                    _ => 1,
                };
                let mut values = Vec::with_capacity(times);
                for k in 0..times {
                    let at = self.on(on, f, &|x| Game::value(x, f, k));
                    let at = at.map_or_else(|| channel.to_string(), |i| format!("{i}.{channel}"));
                    let text = match self.character.sheet().value(&at) {
                        Ok(Ok(Value::String(s))) => s.to_string(),
                        Ok(Ok(v)) => v.to_string(),
                        _ => return Err(GameError::new(Code::BadArgs, format!("read: `{at}` has no value"))),
                    };
                    if !text.is_empty() {
                        values.push(Arc::from(text));
                    }
                }
                f.bound[*slot] = values;
            }
            _ => {}
        }
        Ok(())
    }

    /// A new object's id: its key, or `key#2`, `key#3`, …, the first no object or instance on
    /// the sheet has.
    fn fresh_id(&self, key: &Field, f: &Firing) -> Result<Arc<str>, GameError> {
        let key = Game::value(key, f, 0)
            .ok_or_else(|| GameError::new(Code::BadArgs, "add_object: its key has no value".to_owned()))?;
        let taken = |id: &str| self.character.has_object(id) || self.character.sheet().has_instance(id);
        if !taken(&key) {
            return Ok(key);
        }
        let n = (2u64..).find(|n| !taken(&format!("{key}#{n}"))).unwrap_or(2);
        Ok(Arc::from(format!("{key}#{n}")))
    }

    /// An ordered `each`'s instances: the first (or last) `take` by `var`, least first; equal
    /// ones in the order they were added.
    fn ordered(&self, all: Vec<Arc<str>>, var: &str, take: Take) -> Result<Vec<Arc<str>>, GameError> {
        let mut keyed = Vec::with_capacity(all.len());
        for id in all {
            let at = format!("{id}.{var}");
            match self.character.sheet().value(&at) {
                Ok(Ok(Value::Number(d))) => keyed.push((d, id)),
                _ => {
                    return Err(GameError::new(
                        Code::Guard,
                        format!("each: `{at}` has no number to order by"),
                    ));
                }
            }
        }
        keyed.sort_by_key(|a| a.0);
        let n = |k: u32| (k as usize).min(keyed.len());
        let kept = match take {
            Take::First(k) => keyed.drain(..n(k)).collect::<Vec<_>>(),
            Take::Last(k) => {
                let from = keyed.len() - n(k);
                keyed.drain(from..).collect()
            }
        };
        Ok(kept.into_iter().map(|(_, id)| id).collect())
    }

    /// The values of a field: one, or an ask's picks (none when declined).
    /// Value number `k` of a field: its only value, or pick `k` of an ask (its first when the
    /// ask bound fewer); `None` when it has none (declined, no object).
    fn value(field: &Field, f: &Firing, k: usize) -> Option<Arc<str>> {
        match field {
            Field::Lit(t) => Some(t.clone()),
            Field::Arg(i) => Some(f.args[*i].clone()),
            Field::Bound(i) => f.bound[*i].get(k).or(f.bound[*i].first()).cloned(),
            Field::This => f.this.clone(),
        }
    }

    fn on(&self, on: &On, f: &Firing, pick: &dyn Fn(&Field) -> Option<Arc<str>>) -> Option<String> {
        match on {
            On::Rule => f.on.as_deref().map(str::to_owned),
            On::Global => None,
            On::Field(x) => pick(x).map(|s| s.to_string()),
        }
    }

    /// `op`, lasting as `until` says when it does: on the clock of the instance its `on`
    /// names now (the firing's own, one an argument names, or a global clock).
    fn lasting(
        &self,
        op: SheetOp,
        until: &Option<Lasting>,
        f: &Firing,
        pick: &dyn Fn(&Field) -> Option<Arc<str>>,
    ) -> SheetOp {
        match until {
            Some(l) => {
                let until = data::Until { on: self.on(&l.on, f, pick), ..l.until.clone() };
                SheetOp::Lasting { op: Box::new(op), until }
            }
            None => op,
        }
    }

    /// The operations (or emits) of one action: once, or once per pick of an ask it reads.
    // long: one arm per action, each building its sheet operation from resolved parts
    fn build(
        &self,
        action: &Action,
        f: &Firing,
        ops: &mut Vec<SheetOp>,
        emits: &mut Vec<Emitted>,
    ) -> Result<(), GameError> {
        let fields = action_fields(action);
        let times = fields
            .iter()
            .filter_map(|x| match x {
                Field::Bound(i) => Some(f.bound[*i].len()),
                _ => None,
            })
            .max()
            .unwrap_or(1);
        let rule = self.book.rule(f.rule);
        for k in 0..times {
            let pick = |x: &Field| Game::value(x, f, k);
            let text = |x: &Field| -> Result<String, GameError> {
                pick(x).map(|s| String::from(&*s)).ok_or_else(|| {
                    GameError::new(
                        Code::BadArgs,
                        format!("rule `{}`: a name it reads has no value", rule.name),
                    )
                })
            };
            let op = match action {
                Action::AddObject { kind, key, id, parent, until, bind } => {
                    let id = match bind {
                        Some(slot) => f.bound[*slot].first().map(|s| String::from(&**s)),
                        None => id.as_ref().map(&text).transpose()?,
                    };
                    let add = SheetOp::AddObject {
                        kind: String::from(&**kind),
                        key: text(key)?,
                        id,
                        parent: parent.as_ref().map(&text).transpose()?,
                    };
                    self.lasting(add, until, f, &pick)
                }
                Action::RemoveObject(id) => SheetOp::RemoveObject(text(id)?),
                Action::SetInput { channel, on, value, format } => {
                    let v = text(value)?;
                    let on = self.on(on, f, &pick);
                    // A channel whose instance is known only now: its format as that instance
                    // sees it (one it does not see is refused by the sheet, with its reason).
                    let seen = || {
                        let at =
                            on.as_deref().map_or_else(|| channel.to_string(), |i| format!("{i}.{channel}"));
                        self.character.sheet().typed_value(&at).ok().map(|(_, fm, _)| fm)
                    };
                    let value = match format.clone().or_else(seen) {
                        Some(fm) => Value::parse_literal(&fm, &v).map_err(|m| {
                            GameError::new(
                                Code::BadArgs,
                                format!("rule `{}`: set_input {channel} = `{v}`: {m}", rule.name),
                            )
                        })?,
                        None => guess(&v),
                    };
                    SheetOp::SetInput { channel: String::from(&**channel), on, value }
                }
                Action::Adjust { channel, on, by } => SheetOp::Adjust {
                    // (Copied, not formatted: `to_string` goes through the formatting machinery.)
                    channel: String::from(&**channel),
                    on: self.on(on, f, &pick),
                    by: by.clone(),
                },
                Action::Tick { clock, on, by } => {
                    SheetOp::Tick { clock: String::from(&**clock), on: self.on(on, f, &pick), by: *by }
                }
                Action::AddModifier { id, var, kind, value, priority, on, until } => {
                    let id = match id {
                        Some(i) => text(i)?,
                        None => format!("{}#{}.{}.{k}", rule.name, f.seq, f.next),
                    };
                    let on = self.on(on, f, &pick).map(|s| Arc::from(s.as_str()));
                    let spec = ModifierSpec {
                        id: Arc::from(id.as_str()),
                        var: var.clone(),
                        on,
                        from: None,
                        kind: *kind,
                        value: value.clone(),
                        priority: *priority,
                        source: rule.name.clone(),
                        condition: None,
                    };
                    self.lasting(SheetOp::Solver(Operation::AddModifier(spec)), until, f, &pick)
                }
                Action::RemoveModifier(id) => SheetOp::Solver(Operation::RemoveModifier(text(id)?)),
                Action::Require { formula, message, on } => SheetOp::Solver(Operation::Require(Guard {
                    formula: formula.clone(),
                    on: self.on(on, f, &pick),
                    message: message.to_string(),
                })),
                Action::Emit { event, args } => {
                    let args: Vec<Arc<str>> =
                        args.iter().map(|a| pick(a).ok_or(())).collect::<Result<_, _>>().map_err(|_| {
                            GameError::new(
                                Code::BadArgs,
                                format!("rule `{}`: an emitted argument has no value", rule.name),
                            )
                        })?;
                    let writes = self.event_writes(*event, &args)?;
                    emits.push((*event, args, writes));
                    continue;
                }
                Action::Ask(_) | Action::Roll { .. } | Action::Each { .. } | Action::Read { .. } => continue,
            };
            ops.push(SheetOp::Because { op: Box::new(op), cause: rule.cause.clone() });
        }
        Ok(())
    }
}

/// The fields of an action that may hold `$name`s.
fn action_fields(action: &Action) -> Vec<&Field> {
    fn on(o: &On) -> Option<&Field> {
        match o {
            On::Field(f) => Some(f),
            _ => None,
        }
    }
    fn until(u: &Option<Lasting>) -> Option<&Field> {
        u.as_ref().and_then(|l| on(&l.on))
    }
    match action {
        Action::AddObject { key, id, parent, until: u, .. } => {
            [Some(key), id.as_ref(), parent.as_ref(), until(u)].into_iter().flatten().collect()
        }
        Action::RemoveObject(x) | Action::RemoveModifier(x) => vec![x],
        Action::SetInput { on: o, value, .. } => [on(o), Some(value)].into_iter().flatten().collect(),
        Action::Adjust { on: o, .. } | Action::Tick { on: o, .. } | Action::Require { on: o, .. } => {
            on(o).into_iter().collect()
        }
        Action::AddModifier { id, on: o, until: u, .. } => {
            [id.as_ref(), on(o), until(u)].into_iter().flatten().collect()
        }
        Action::Emit { args, .. } => args.iter().collect(),
        Action::Read { on: o, .. } => on(o).into_iter().collect(),
        Action::Ask(_) | Action::Roll { .. } | Action::Each { .. } => Vec::new(),
    }
}

/// A value for a channel the sheet does not have (the sheet refuses the operation, naming
/// it): a number if it reads as one, a boolean, else text.
fn guess(v: &str) -> Value {
    if let Ok(d) = formula::parse_decimal(v) {
        return Value::Number(d);
    }
    match v {
        "true" => Value::Boolean(true),
        "false" => Value::Boolean(false),
        _ => Value::String(Arc::from(v)),
    }
}

/// Whether two slots hold the same value (a variable back where it was).
fn same(a: &Option<Slot>, b: &Option<Slot>) -> bool {
    match (a, b) {
        (Some(Ok(x)), Some(Ok(y))) => x == y,
        (None, None) => true,
        (Some(Err(x)), Some(Err(y))) => x.code == y.code && x.message == y.message,
        _ => false,
    }
}
