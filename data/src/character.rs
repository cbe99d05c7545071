//! A character: a ruleset plus what the character has — objects, channel inputs, ad-hoc
//! modifiers — kept solved by a solver [`Sheet`].
//!
//! Activation follows PCGen:
//! - objects the sheet lists are active; STAT and SAVE objects (kinds with [`Presence::Always`])
//!   are always present, with their key as id; global modifiers always apply;
//! - an object with its own scope (equipment, a race, a size) gets an instance with the object's
//!   id; an equipment's parts are instances `<id>#1`, `<id>#2`, … of the part scope; an object of
//!   an attaching kind (EQUIPMOD) has no instance and applies its modifiers on its parent part;
//! - dynamic objects exist only while an active object grants them, with their key as id;
//! - MODIFYOTHER reaches every existing instance of the target scope whose object matches, and
//!   instances that appear later; it is a no-op while none exists.
//!
//! Every change is a batch of [`SheetOp`]s turned into one atomic solver batch: either all of it
//! applies, with one recomputation, or nothing does and the error names the failing operation.

use crate::draft::Presence;
use crate::ruleset::{Kind, ModTemplate, ObjectId, Ruleset, Select};
use formula::{Format, Value};
use solver::{ModKind, ModifierSpec, Operation, Report, ScopeId, Sheet, SolveError, Step, Target, VarDefId};
use std::fmt;
use std::sync::Arc;

mod clocks;
pub use clocks::{Expired, ExpiredEffect, ExpiredRef, Expiries, Until};

/// One change to a character.
#[derive(Clone, Debug)]
pub enum SheetOp {
    /// Adds an object of `kind` with `key`; `id` defaults to the key; `parent` is the instance an
    /// attaching object (EQUIPMOD) goes on: a part id or an equipment id (its first part).
    AddObject { kind: String, key: String, id: Option<String>, parent: Option<String> },
    /// Removes an object by id, with what is attached to it and what only it granted.
    RemoveObject(String),
    /// Sets a channel: `on` is the instance (`STR`), `None` for a global channel. A stock's
    /// bounds apply.
    SetInput { channel: String, on: Option<String>, value: Value },
    /// Adds to a stock (a channel declared in `[stocks]`) what the NUMBER formula `by`, read in
    /// `on`'s scope, is worth at this point of the batch; within the stock's bounds. The stock
    /// does not follow the formula afterwards. A rule's `by`, its scope known at load, comes
    /// compiled ([`solver::Instruction::Compiled`]); text is compiled when the step runs.
    Adjust { channel: String, on: Option<String>, by: solver::Instruction },
    /// Moves a clock (`[clocks]`) forward by `by` (≥ 0); the effects that last until it passes
    /// a value it now passes expire in the same batch.
    Tick { clock: String, on: Option<String>, by: rust_decimal::Decimal },
    /// Moves a clock forward to `to` (an error if that is backwards), as [`SheetOp::Tick`].
    SetClock { clock: String, on: Option<String>, to: rust_decimal::Decimal },
    /// An `add_object` or an ad-hoc `add_modifier` that lasts `until` a clock passes a value.
    Lasting { op: Box<SheetOp>, until: Until },
    /// `op`, done on behalf of something a layer above names (`rule `Payday` (tavern.toml:85:9)`):
    /// it applies as `op`; descriptions and why-changed name the cause.
    Because { op: Box<SheetOp>, cause: Arc<str> },
    /// A solver operation (ad-hoc modifiers and instances).
    Solver(Operation),
}

/// One line for people: `add EQUIPMENT `Plated Harness` as armor`, `set input STR.Rolled = 14`.
impl fmt::Display for SheetOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let on = |o: &Option<String>| o.as_deref().map(|o| format!("{o}.")).unwrap_or_default();
        match self {
            SheetOp::AddObject { kind, key, id, parent } => {
                write!(f, "add {kind} `{key}`")?;
                if let Some(id) = id {
                    write!(f, " as {id}")?;
                }
                if let Some(p) = parent {
                    write!(f, " on {p}")?;
                }
                Ok(())
            }
            SheetOp::RemoveObject(id) => write!(f, "remove object {id}"),
            SheetOp::SetInput { channel, on: o, value } => {
                let shown = match value {
                    Value::String(s) => format!("{s:?}"),
                    v => v.to_string(),
                };
                write!(f, "set input {}{channel} = {shown}", on(o))
            }
            SheetOp::Solver(Operation::AddModifier(m)) => {
                let o = m.on.as_deref().map(|o| format!("{o}.")).unwrap_or_default();
                write!(f, "add modifier {}: {} {o}{} {}", m.id, m.kind, m.var, m.value.text())
            }
            SheetOp::Solver(Operation::RemoveModifier(id)) => write!(f, "remove modifier {id}"),
            SheetOp::Solver(Operation::RemoveSource(s)) => write!(f, "remove source {s}"),
            SheetOp::Solver(Operation::AddInstance { key, scope, .. }) => {
                write!(f, "add instance {key} of {scope}")
            }
            SheetOp::Solver(Operation::RemoveInstance(k)) => write!(f, "remove instance {k}"),
            SheetOp::Adjust { channel, on: o, by } => write!(f, "adjust {}{channel} by {}", on(o), by.text()),
            SheetOp::Tick { clock, on: o, by } => write!(f, "tick {}{clock} by {by}", on(o)),
            SheetOp::SetClock { clock, on: o, to } => write!(f, "set clock {}{clock} to {to}", on(o)),
            SheetOp::Lasting { op, until } => write!(f, "{op} {until}"),
            SheetOp::Because { op, cause } => write!(f, "{op}, by {cause}"),
            SheetOp::Solver(Operation::Adjust(a)) => write!(f, "adjust modifier {} by {}", a.id, a.by.text()),
            SheetOp::Solver(Operation::Require(g)) => {
                write!(f, "require {}{} ({})", on(&g.on), g.formula.text(), g.message)
            }
        }
    }
}

/// Why a batch was rejected; the character is unchanged.
#[derive(Clone, Debug, PartialEq)]
pub struct SheetError {
    /// The failing operation's position in the batch.
    pub index: usize,
    /// A stable code: `sheet.*`, or the solver's `solver.*`.
    pub code: SheetCode,
    pub message: String,
    /// The solver's error, when the solver rejected it (cycles carry their path there).
    pub solve: Option<Box<SolveError>>,
}

impl fmt::Display for SheetError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "operation {}: {} [{}]", self.index, self.message, self.code)
    }
}

impl std::error::Error for SheetError {}

/// The stable codes of sheet errors: the sheet's own (`sheet.*`, documented in
/// `docs/ruleset-format.md`), or the solver's.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SheetCode {
    UnknownKind,
    UnknownObject,
    DuplicateId,
    NotAddable,
    NotRemovable,
    BadParent,
    UnknownId,
    UnknownChannel,
    BadValue,
    Managed,
    /// `adjust` of a channel that is not a stock.
    NotAStock,
    /// A clock moved backwards (or set with `set_input`).
    ClockBackwards,
    /// A step of a sheet file that is not one of the step kinds.
    BadStep,
    Solver(solver::Code),
}

impl SheetCode {
    /// The code as written in outputs: `sheet.unknown_object`, `solver.cycle`.
    pub fn as_str(self) -> &'static str {
        match self {
            SheetCode::UnknownKind => "sheet.unknown_kind",
            SheetCode::UnknownObject => "sheet.unknown_object",
            SheetCode::DuplicateId => "sheet.duplicate_id",
            SheetCode::NotAddable => "sheet.not_addable",
            SheetCode::NotRemovable => "sheet.not_removable",
            SheetCode::BadParent => "sheet.bad_parent",
            SheetCode::UnknownId => "sheet.unknown_id",
            SheetCode::UnknownChannel => "sheet.unknown_channel",
            SheetCode::BadValue => "sheet.bad_value",
            SheetCode::Managed => "sheet.managed",
            SheetCode::NotAStock => "sheet.not_a_stock",
            SheetCode::ClockBackwards => "sheet.clock_backwards",
            SheetCode::BadStep => "sheet.bad_step",
            SheetCode::Solver(c) => c.as_str(),
        }
    }
}

impl fmt::Display for SheetCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The sheet's codes as constants.
pub mod codes {
    use super::SheetCode;
    pub const UNKNOWN_KIND: SheetCode = SheetCode::UnknownKind;
    pub const UNKNOWN_OBJECT: SheetCode = SheetCode::UnknownObject;
    pub const DUPLICATE_ID: SheetCode = SheetCode::DuplicateId;
    pub const NOT_ADDABLE: SheetCode = SheetCode::NotAddable;
    pub const NOT_REMOVABLE: SheetCode = SheetCode::NotRemovable;
    pub const BAD_PARENT: SheetCode = SheetCode::BadParent;
    pub const UNKNOWN_ID: SheetCode = SheetCode::UnknownId;
    pub const UNKNOWN_CHANNEL: SheetCode = SheetCode::UnknownChannel;
    pub const BAD_VALUE: SheetCode = SheetCode::BadValue;
    pub const MANAGED: SheetCode = SheetCode::Managed;
    pub const NOT_A_STOCK: SheetCode = SheetCode::NotAStock;
    pub const CLOCK_BACKWARDS: SheetCode = SheetCode::ClockBackwards;
    pub const BAD_STEP: SheetCode = SheetCode::BadStep;
}

/// An object on a sheet, as [`Character::objects`] lists it.
#[derive(Clone, Debug, PartialEq)]
pub struct Placed {
    pub id: Arc<str>,
    pub kind: Arc<str>,
    pub key: Arc<str>,
    /// The object it is attached to (attaching kinds).
    pub parent: Option<Arc<str>>,
    /// Added by a step (or always present), not only granted by another object.
    pub listed: bool,
    /// Where the ruleset defines it.
    pub at: crate::Origin,
}

/// What kind of channel a sheet has set (see [`Character::channels`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum ChannelKind {
    /// A value the user enters.
    Input,
    /// A clock: only moves forward.
    Clock,
    /// A stock: changed by `adjust`.
    Stock,
}

/// An object on the sheet.
#[derive(Clone, Debug)]
struct Active {
    object: ObjectId,
    /// Activation order, for a deterministic order of modifiers.
    seq: u64,
    /// The instance of its own scope, if it has one (its id).
    instance: Option<Arc<str>>,
    /// The object it is attached to (attaching kinds).
    attached_to: Option<Arc<str>>,
    /// Objects attached to it.
    children: Vec<Arc<str>>,
    /// Its modifiers on the sheet: (modifier id, the instance it is on).
    mods: Vec<(Arc<str>, Option<Arc<str>>)>,
    /// The dynamic objects it granted.
    grants: Vec<Arc<str>>,
    /// Listed by the user (or always present), as opposed to only granted.
    listed: bool,
    /// How many active objects grant it.
    granted_by: u32,
}

/// An instance created for an object.
#[derive(Clone, Debug)]
struct Inst {
    id: Arc<str>,
    scope: ScopeId,
    object: ObjectId,
}

/// Channel inputs set: (instance, channel variable) → modifier id.
type Inputs = PMap<(Option<Arc<str>>, VarDefId), Arc<str>>;

/// A persistent map (`imbl`): a copy shares every entry, and a change copies only the path to
/// what it changes — so the copy kept before every batch costs nothing however many objects a
/// character has, where a hash table copied on its first change was a pass over all of them
/// (with 1,000 workers on the sheet, most of adding one).
type PMap<K, V> = imbl::GenericHashMap<K, V, foldhash::fast::RandomState, imbl::shared_ptr::DefaultSharedPtr>;

/// The bookkeeping around the solver sheet; copied before a batch and restored if it fails.
///
/// Its parts are persistent (`imbl`): a copy (before every batch, and for every new character
/// from the ruleset's starting one) shares them whole, and a batch copies only the paths to what
/// it changes — the objects it changes, not the table of every object. Before, the copy was
/// deep: on the example character about 11k instructions of a 69k Apply, and it grew with every
/// object on the sheet; then a shared table copied whole on a batch's first change, which still
/// grew with every object.
#[derive(Clone, Debug, Default)]
struct State {
    active: PMap<Arc<str>, Arc<Active>>,
    instances: imbl::Vector<Inst>,
    inputs: Inputs,
    /// The objects whose MODIFYOTHER reaches instances added later (`Active::reaching`, with
    /// such modifiers), by the order they came: a new instance is offered to these, not to
    /// every object on the sheet.
    reaching: imbl::OrdMap<u64, Arc<str>>,
    next_seq: u64,
    /// The clocks and the effects waiting on them (`clocks.rs`); `None` until a clock is used,
    /// so a character that has none copies nothing for them.
    timing: Option<Arc<clocks::Timing>>,
}

impl State {
    /// The objects, to change.
    fn active_mut(&mut self) -> &mut PMap<Arc<str>, Arc<Active>> {
        &mut self.active
    }

    /// Object `id`, to change (copied first if shared).
    fn object_mut(&mut self, id: &str) -> Option<&mut Active> {
        self.active.get_mut(id).map(Arc::make_mut)
    }

    /// The instances, in order: read chunk by chunk (a slice each), which a search of a few
    /// dozen instances does in a fraction of what `imbl::Vector::iter`'s element-by-element
    /// walk costs.
    fn instances(&self) -> impl Iterator<Item = &Inst> {
        self.instances.leaves().flatten()
    }

    fn instances_mut(&mut self) -> &mut imbl::Vector<Inst> {
        &mut self.instances
    }

    fn inputs_mut(&mut self) -> &mut Inputs {
        &mut self.inputs
    }
}

/// A ruleset's new character, without the ruleset (which holds it: holding the ruleset back
/// would keep both alive forever).
pub(crate) struct Blank {
    sheet: Sheet,
    state: State,
}

impl Blank {
    fn of(c: Character) -> Blank {
        Blank { sheet: c.sheet, state: c.state }
    }

    /// A new character on `ruleset`: a copy of this one.
    fn copy(&self, ruleset: Arc<Ruleset>) -> Character {
        Character {
            ruleset,
            sheet: self.sheet.clone(),
            state: self.state.clone(),
            expired: Expiries::default(),
            buffers: Buffers::default(),
        }
    }
}

/// Below this many variables, each thread keeps a ruleset's starting character of its own and
/// copies new characters from it (see [`Character::new`]).
const THREAD_BLANK_MAX_VARIABLES: usize = NATIVE_MIN_VARIABLES;

/// The most rulesets whose starting character a thread keeps. Characters of any other ruleset
/// copy its shared starting character (rather than one ruleset's evicting another's, which a
/// thread serving more rulesets in turn would pay a build for at every character).
const THREAD_BLANKS: usize = 4;

thread_local! {
    /// This thread's starting characters, by ruleset (held weakly: a dropped ruleset's is
    /// evicted at the next new character on this thread).
    static THREAD_BLANK: std::cell::RefCell<Vec<(std::sync::Weak<Ruleset>, Blank)>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

/// Variables from which a ruleset's starting sheet is compiled to native code for full solves
/// (`Sheet::compile_native`): compiling costs about 40 µs per variable, once per ruleset, and
/// below this many variables the interpreter's full solve takes microseconds anyway.
const NATIVE_MIN_VARIABLES: usize = 512;

/// A character sheet over a shared ruleset.
#[derive(Clone)]
pub struct Character {
    ruleset: Arc<Ruleset>,
    sheet: Sheet,
    state: State,
    /// What the last batch's clock moves expired.
    expired: Expiries,
    buffers: Buffers,
}

/// The vectors a batch fills and leaves empty, kept from one batch to the next so that each
/// writes memory still in cache, not fresh allocations (a tick expiring a hundred effects
/// wrote about 10 KB of new memory otherwise). A copy of the character starts without them;
/// a batch that grew them past `Buffers::KEEP` entries gives them back.
#[derive(Default)]
struct Buffers {
    steps: Vec<Step>,
    owner: Vec<usize>,
    expiring: Vec<clocks::Expiring>,
    moves: Vec<clocks::ClockMove>,
}

impl Buffers {
    const KEEP: usize = 1024;
}

impl Clone for Buffers {
    fn clone(&self) -> Buffers {
        Buffers::default()
    }
}

fn err(code: SheetCode, message: String) -> SheetError {
    SheetError { index: 0, code, message, solve: None }
}

impl Character {
    /// A new character: global modifiers applied and always-present objects (stats, saves) added.
    ///
    /// The starting state is built once per ruleset, on its first character, and copied for
    /// every character after (a copy of the solved sheet, not a rebuild).
    ///
    /// On a small ruleset (under [`THREAD_BLANK_MAX_VARIABLES`] variables) each thread copies
    /// from a starting character of its own, built the same way on the thread's first
    /// character there. A copy shares its starting character's parts (its objects' ids, its
    /// maps' nodes, its shape) and takes and gives back counts on them. With one starting
    /// character for all threads, every core wrote those counts, each write taking the cache
    /// line from the others, and the lookups that read the ids beside them waited for it
    /// (`starter_par … shared` against `… separate`; see `docs/solver.md`). A large
    /// ruleset's characters cost far more than those counts, and its starting character is
    /// compiled to native code: it is built once and shared.
    pub fn new(ruleset: Arc<Ruleset>) -> Result<Character, SheetError> {
        let blank = ruleset.later.blank.get_or_init(|| Character::build(ruleset.clone()).map(Blank::of));
        let b = match blank {
            Ok(b) => b,
            Err(e) => return Err(e.clone()),
        };
        if b.sheet.variable_count() < THREAD_BLANK_MAX_VARIABLES
            && let Some(c) = Character::from_thread_blank(&ruleset)
        {
            return Ok(c);
        }
        Ok(b.copy(ruleset.clone()))
    }

    /// [`Character::new`] from this thread's starting character of `ruleset`, built now if the
    /// thread has none and room for one (`None` if it has no room, or if building it fails,
    /// which the shared one's build did not).
    fn from_thread_blank(ruleset: &Arc<Ruleset>) -> Option<Character> {
        THREAD_BLANK.with(|cell| {
            let mut blanks = cell.borrow_mut();
            // A weak count keeps its ruleset's memory: an address held weakly is never reused
            // for another ruleset, so the same address is the same ruleset.
            let at = blanks.iter().position(|(r, _)| std::ptr::eq(r.as_ptr(), Arc::as_ptr(ruleset)));
            let at = match at {
                Some(at) => at,
                None => {
                    blanks.retain(|(r, _)| r.strong_count() > 0);
                    if blanks.len() >= THREAD_BLANKS {
                        return None;
                    }
                    let built = Character::build(ruleset.clone()).ok()?;
                    blanks.push((Arc::downgrade(ruleset), Blank::of(built)));
                    blanks.len() - 1
                }
            };
            blanks.get(at).map(|(_, b)| b.copy(ruleset.clone()))
        })
    }

    /// A new character built from the ruleset: global modifiers, then the objects always
    /// present, in one batch.
    fn build(ruleset: Arc<Ruleset>) -> Result<Character, SheetError> {
        let sheet = Sheet::with_catalog(ruleset.catalog().clone());
        let mut c = Character {
            ruleset,
            sheet,
            state: State::default(),
            expired: Expiries::default(),
            buffers: Buffers::default(),
        };
        let mut ops = Vec::new();
        for (k, m) in c.ruleset.global_modifiers().iter().enumerate() {
            ops.push(template(m, &id_of(&["global:", itoa::Buffer::new().format(k + 1)]), None));
        }
        let always: Vec<ObjectId> = (0..c.ruleset.objects().len() as u32)
            .map(ObjectId)
            .filter(|&o| c.ruleset.kind_def(c.ruleset.object(o).kind).presence == Presence::Always)
            .collect();
        let mut edit = Edit {
            r: &c.ruleset,
            state: &mut c.state,
            input_source: None,
            expired: Vec::new(),
            moves: Vec::new(),
        };
        for o in always {
            let key = sheet_key(&edit.r.object(o).key);
            edit.activate(o, key, None, true, &mut ops)?;
        }
        c.sheet.apply_steps(&ops).map_err(|e| SheetError {
            index: 0,
            code: SheetCode::Solver(e.error.code),
            message: format!("setting up the sheet: {}", e.error.message),
            solve: Some(Box::new(e.error)),
        })?;
        // Every character starts as a copy of this one: its copies share its shape, and on a
        // large ruleset its full solves run as native code (compiled once, here).
        c.sheet.prepare_to_share();
        c.sheet.compile_native(NATIVE_MIN_VARIABLES);
        Ok(c)
    }

    /// The ruleset.
    pub fn ruleset(&self) -> &Arc<Ruleset> {
        &self.ruleset
    }

    /// The solver sheet: values, traces, references.
    pub fn sheet(&self) -> &Sheet {
        &self.sheet
    }

    /// Whether reports list every variable evaluated, in order (see the solver's `Report`).
    pub fn record_evaluations(&mut self, on: bool) {
        self.sheet.record_evaluations(on);
    }

    /// Whether the sheet has an object with this id.
    pub fn has_object(&self, id: &str) -> bool {
        self.state.active.contains_key(id)
    }

    /// The ids of the objects on the sheet, in the order they were added.
    pub fn object_ids(&self) -> Vec<Arc<str>> {
        let mut v: Vec<(&u64, &Arc<str>)> = self.state.active.iter().map(|(k, a)| (&a.seq, k)).collect();
        v.sort();
        v.into_iter().map(|(_, k)| k.clone()).collect()
    }

    /// The objects on the sheet made from `object`, in the order they were added: each one's id
    /// and the instance its formulas read in (its own, or for an attached object its parent's;
    /// `None`: the global instance).
    pub fn placed(&self, object: ObjectId) -> Vec<(Arc<str>, Option<Arc<str>>)> {
        let mut v: Vec<(u64, Arc<str>, Option<Arc<str>>)> = self
            .state
            .active
            .iter()
            .filter(|(_, a)| a.object == object)
            .map(|(id, a)| {
                let on = a.instance.clone().or_else(|| {
                    let parent = self.state.active.get(a.attached_to.as_deref()?)?;
                    parent.instance.clone()
                });
                (a.seq, id.clone(), on)
            })
            .collect();
        v.sort_by_key(|e| e.0);
        v.into_iter().map(|(_, id, on)| (id, on)).collect()
    }

    /// The objects on the sheet as a front end lists them, in the order they were added: each
    /// one's id, kind, key, the object it is attached to, whether it was listed (not only
    /// granted), and where the ruleset defines it.
    pub fn objects(&self) -> Vec<Placed> {
        let r = &self.ruleset;
        let mut v: Vec<(u64, Placed)> = self
            .state
            .active
            .iter()
            .map(|(id, a)| {
                let o = r.object(a.object);
                let placed = Placed {
                    id: id.clone(),
                    kind: r.kind_def(o.kind).name.clone(),
                    key: o.key.clone(),
                    parent: a.attached_to.clone(),
                    listed: a.listed,
                    at: o.at.clone(),
                };
                (a.seq, placed)
            })
            .collect();
        v.sort_by_key(|e| e.0);
        v.into_iter().map(|(_, p)| p).collect()
    }

    /// The channels set on the sheet — inputs, clocks and stocks — each with its full
    /// reference (`STR.Rolled`, `Turn`), sorted by it.
    pub fn channels(&self) -> Vec<(String, ChannelKind)> {
        let r = &self.ruleset;
        let mut v: Vec<(String, ChannelKind)> = self
            .state
            .inputs
            .keys()
            .map(|(on, def)| {
                let name = &r.rules().var(*def).name;
                let kind = if r.is_clock(*def) {
                    ChannelKind::Clock
                } else if r.stock(*def).is_some() {
                    ChannelKind::Stock
                } else {
                    ChannelKind::Input
                };
                (solver::full_name(on.as_deref(), name), kind)
            })
            .collect();
        v.sort();
        v
    }

    /// The object an object id on the sheet was made from.
    pub fn object_of(&self, id: &str) -> Option<ObjectId> {
        self.state.active.get(id).map(|a| a.object)
    }

    /// Applies a batch atomically: all of it with one recomputation, or none of it.
    pub fn apply(&mut self, ops: &[SheetOp]) -> Result<Report, SheetError> {
        let saved = self.state.clone();
        let Buffers { steps: mut solver_ops, mut owner, expiring, moves } = std::mem::take(&mut self.buffers);
        // Most operations make one or two solver steps (an input replaced: a removal and an
        // addition); an object makes more, and the vectors grow then.
        solver_ops.reserve(2 * ops.len());
        owner.reserve(2 * ops.len());
        let mut edit =
            Edit { r: &self.ruleset, state: &mut self.state, input_source: None, expired: expiring, moves };
        for (i, op) in ops.iter().enumerate() {
            if let Err(mut e) = edit.translate(op, &mut solver_ops) {
                self.state = saved;
                e.index = i;
                return Err(e);
            }
            owner.resize(solver_ops.len(), i);
        }
        let (mut expiring, mut moves) = (std::mem::take(&mut edit.expired), std::mem::take(&mut edit.moves));
        let report = self.sheet.apply_steps(&solver_ops).map_err(|e| {
            self.state = saved;
            SheetError {
                index: owner.get(e.index).copied().unwrap_or(0),
                code: SheetCode::Solver(e.error.code),
                message: e.error.message.clone(),
                solve: Some(Box::new(e.error)),
            }
        })?;
        clocks::settle(&mut expiring, &mut moves, &mut solver_ops, &mut self.expired);
        owner.clear();
        if solver_ops.capacity().max(owner.capacity()).max(expiring.capacity()) <= Buffers::KEEP {
            self.buffers = Buffers { steps: solver_ops, owner, expiring, moves };
        }
        Ok(report)
    }

    /// What the last successful [`Character::apply`] expired: the effects whose clock moved
    /// past their `until`, removed in that batch.
    pub fn expired(&self) -> &Expiries {
        &self.expired
    }
}

/// A batch being translated: the ruleset, read, and the character's bookkeeping, changed.
///
/// The ruleset is borrowed, not counted: every character of a ruleset shares its reference
/// count, and a count taken and dropped for each object added made every thread solving
/// characters of one ruleset write the same cache line (SolveBatch on two cores ran at half the
/// speed of two processes).
struct Edit<'a> {
    r: &'a Ruleset,
    state: &'a mut State,
    /// The source of the inputs' modifiers, made once per batch (see `Edit::input_source`).
    input_source: Option<Arc<str>>,
    /// What the batch's clock moves expired (see `clocks.rs`), and the moves, which they name.
    expired: Vec<clocks::Expiring>,
    moves: Vec<clocks::ClockMove>,
}

impl Edit<'_> {
    /// The source every input's modifier names, `input`: one text per batch, not one per
    /// input (and not one shared with other characters: its count would be written by every
    /// thread).
    fn input_source(&mut self) -> &Arc<str> {
        self.input_source.get_or_insert_with(|| Arc::from("input"))
    }

    fn translate(&mut self, op: &SheetOp, ops: &mut Vec<Step>) -> Result<(), SheetError> {
        match op {
            SheetOp::AddObject { kind, key, id, parent } => {
                self.add_object(kind, key, id.as_deref(), parent.as_deref(), ops).map(drop)
            }
            SheetOp::RemoveObject(id) => {
                let Some(a) = self.state.active.get(id.as_str()) else {
                    return Err(err(codes::UNKNOWN_ID, format!("there is no object `{id}` on this sheet")));
                };
                let o = self.r.object(a.object);
                let kind = self.r.kind_def(o.kind);
                if kind.presence == Presence::Always {
                    return Err(err(
                        codes::NOT_REMOVABLE,
                        format!("{} `{id}` is always present and cannot be removed", kind.name),
                    ));
                }
                if !a.listed {
                    return Err(err(
                        codes::NOT_REMOVABLE,
                        format!(
                            "{} `{id}` is granted by another object; remove that object instead",
                            kind.name
                        ),
                    ));
                }
                let id: Arc<str> = Arc::from(id.as_str());
                self.deactivate(&id, ops);
                Ok(())
            }
            SheetOp::SetInput { channel, on, value } => {
                self.set_input(channel, on.as_deref(), Input::To(value), ops)
            }
            SheetOp::Adjust { channel, on, by } => self.set_input(channel, on.as_deref(), Input::By(by), ops),
            SheetOp::Tick { clock, on, by } => {
                self.move_clock(clock, on.as_deref(), clocks::Move::By(*by), ops)
            }
            SheetOp::SetClock { clock, on, to } => {
                self.move_clock(clock, on.as_deref(), clocks::Move::To(*to), ops)
            }
            SheetOp::Lasting { op, until } => self.lasting(op, until, ops),
            SheetOp::Because { op, .. } => self.translate(op, ops),
            SheetOp::Solver(Operation::Adjust(a)) => Err(err(
                codes::MANAGED,
                format!("modifier `{}`: stocks are adjusted with `adjust {{channel, on, by}}`", a.id),
            )),
            SheetOp::Solver(op) => {
                match op {
                    Operation::RemoveInstance(key) if self.state.instances().any(|i| *i.id == **key) => {
                        return Err(err(
                            codes::MANAGED,
                            format!("instance `{key}` belongs to an object; use remove_object"),
                        ));
                    }
                    Operation::RemoveModifier(m) => {
                        if let Some((owner, _)) =
                            self.state.active.iter().find(|(_, a)| a.mods.iter().any(|(x, _)| **x == **m))
                        {
                            return Err(err(
                                codes::MANAGED,
                                format!(
                                    "modifier `{m}` belongs to object `{owner}`; remove the object instead"
                                ),
                            ));
                        }
                    }
                    _ => {}
                }
                self.forget_removed(op);
                ops.push(Step::Op(Box::new(op.clone())));
                Ok(())
            }
        }
    }

    fn add_object(
        &mut self,
        kind: &str,
        key: &str,
        id: Option<&str>,
        parent: Option<&str>,
        ops: &mut Vec<Step>,
    ) -> Result<Arc<str>, SheetError> {
        let r = self.r;
        let Some(k) = r.kind(kind) else {
            let known: Vec<&str> = r.kinds().iter().map(|k| &*k.name).collect();
            return Err(err(
                codes::UNKNOWN_KIND,
                format!("unknown object kind `{kind}` (known: {})", known.join(", ")),
            ));
        };
        let kdef = r.kind_def(k);
        let found = r.find(k, key);
        let object = match found.as_slice() {
            [] => {
                return Err(err(codes::UNKNOWN_OBJECT, format!("the ruleset has no {} `{key}`", kdef.name)));
            }
            [one] => *one,
            several => {
                let cats: Vec<String> = several
                    .iter()
                    .map(|o| format!("CATEGORY={}|{key}", r.object(*o).category.as_deref().unwrap_or("")))
                    .collect();
                return Err(err(
                    codes::UNKNOWN_OBJECT,
                    format!("{} `{key}` is ambiguous; write one of: {}", kdef.name, cats.join(", ")),
                ));
            }
        };
        match kdef.presence {
            Presence::Always => {
                return Err(err(
                    codes::NOT_ADDABLE,
                    format!("{} objects are always present; `{key}` is already on the sheet", kdef.name),
                ));
            }
            Presence::Granted => {
                return Err(err(
                    codes::NOT_ADDABLE,
                    format!("{} objects exist only while another object grants them", kdef.name),
                ));
            }
            Presence::Listed => {}
        }
        let id: Arc<str> = Arc::from(id.unwrap_or(&r.object(object).key));
        if self.state.active.contains_key(&id) || self.state.instances().any(|i| i.id == id) {
            return Err(err(codes::DUPLICATE_ID, format!("the sheet already has an object `{id}`")));
        }
        let parent = self.parent_instance(kdef, key, parent)?;
        self.activate(object, id.clone(), parent, true, ops)?;
        Ok(id)
    }

    /// The instance an object of kind `kdef` goes on (attaching kinds) or under (kinds whose
    /// scope is not a child of the global one): a part id, or an object id whose first part (or
    /// own instance) is of the right scope. `None` for kinds that take no parent.
    fn parent_instance(
        &self,
        kdef: &Kind,
        key: &str,
        parent: Option<&str>,
    ) -> Result<Option<Arc<str>>, SheetError> {
        let r = self.r;
        let rules = r.rules();
        let scope_parent = rules.scope_def(kdef.scope).parent;
        let parent = if kdef.attach || scope_parent != Some(rules.global()) && kdef.scope != rules.global() {
            // The instance this object goes on (attach) or under: a part id, or an object id
            // whose first part (or own instance) is of the right scope.
            let want = if kdef.attach { kdef.scope } else { scope_parent.unwrap_or(rules.global()) };
            let Some(p) = parent else {
                return Err(err(
                    codes::BAD_PARENT,
                    format!(
                        "{} `{key}` goes on an instance of {}: give its parent (e.g. an equipment id)",
                        kdef.name,
                        rules.scope_def(want).name
                    ),
                ));
            };
            let first_part = |id: &str| id.strip_prefix(p) == Some("#1");
            let found = self
                .state
                .instances()
                .find(|i| (*i.id == *p || first_part(&i.id)) && i.scope == want)
                .map(|i| i.id.clone());
            let Some(found) = found else {
                return Err(err(
                    codes::BAD_PARENT,
                    format!(
                        "`{p}` is not an object or part on this sheet with an instance of {}",
                        rules.scope_def(want).name
                    ),
                ));
            };
            Some(found)
        } else {
            if let Some(p) = parent {
                return Err(err(
                    codes::BAD_PARENT,
                    format!("{} objects have no parent, but `{p}` was given", kdef.name),
                ));
            }
            None
        };
        Ok(parent)
    }

    /// Puts object `object` on the sheet as `id`: its instances, its modifiers, what it grants,
    /// its MODIFYOTHER reach, and other objects' reach into its new instances.
    fn activate(
        &mut self,
        object: ObjectId,
        id: Arc<str>,
        parent: Option<Arc<str>>,
        listed: bool,
        ops: &mut Vec<Step>,
    ) -> Result<(), SheetError> {
        let r = self.r;
        let o = r.object(object);
        let kdef = r.kind_def(o.kind);
        // Room for the object's modifiers at once (an object has a few to a dozen), rather
        // than both lists growing by doubling.
        let count = o.modify.len() + o.parts.len();
        ops.reserve(count + 1 + o.part_count as usize);
        let (home, instance, new_instances) = self.create_instances(object, &id, parent.as_ref(), ops);
        let mut mods = Vec::with_capacity(count);
        for (k, m) in o.modify.iter().enumerate() {
            let mid = id_of(&[&id, ":", itoa::Buffer::new().format(k + 1)]);
            ops.push(template(m, &mid, home.as_ref()));
            mods.push((mid, home.clone()));
        }
        for (k, (n, m)) in o.parts.iter().enumerate() {
            let on: Arc<str> = id_of(&[&id, "#", itoa::Buffer::new().format(*n)]);
            let mid = id_of(&[&on, ":", itoa::Buffer::new().format(k + 1)]);
            ops.push(template(m, &mid, Some(&on)));
            mods.push((mid, Some(on)));
        }
        let seq = self.state.next_seq;
        self.state.next_seq += 1;
        // An attached object's parent is a part `<id>#n` or an instance: find its owner.
        let attached_to = if kdef.attach { parent.as_ref().and_then(|p| self.owner_of(p)) } else { None };
        if let Some(owner) = &attached_to
            && let Some(a) = self.state.object_mut(owner)
        {
            a.children.push(id.clone());
        }
        let active = Active {
            object,
            seq,
            instance,
            attached_to,
            children: Vec::new(),
            mods,
            grants: Vec::new(),
            listed,
            granted_by: 0,
        };
        self.state.active_mut().insert(id.clone(), Arc::new(active));
        self.grant(&id, object, ops)?;
        self.reach(&id, object, seq, ops);
        self.reached_by_others(&id, new_instances, ops);
        Ok(())
    }

    /// The instances of a new object: its own (unless it attaches, or lives in the global
    /// scope) and its parts. Returns the instance its modifiers go on, its own instance, and
    /// the indexes of the instances created (pushed one after another: a range).
    fn create_instances(
        &mut self,
        object: ObjectId,
        id: &Arc<str>,
        parent: Option<&Arc<str>>,
        ops: &mut Vec<Step>,
    ) -> (Option<Arc<str>>, Option<Arc<str>>, std::ops::Range<usize>) {
        let r = self.r;
        let o = r.object(object);
        let kdef = r.kind_def(o.kind);
        let rules = r.rules();
        let first = self.state.instances.len();
        if kdef.attach {
            return (parent.cloned(), None, first..first);
        }
        if kdef.scope == rules.global() {
            return (None, None, first..first);
        }
        ops.push(Step::Instance { key: id.clone(), scope: kdef.scope, parent: parent.cloned() });
        self.state.instances_mut().push_back(Inst { id: id.clone(), scope: kdef.scope, object });
        if let Some(ps) = kdef.parts {
            for n in 1..=o.part_count {
                let pid: Arc<str> = id_of(&[id, "#", itoa::Buffer::new().format(n)]);
                ops.push(Step::Instance { key: pid.clone(), scope: ps, parent: Some(id.clone()) });
                self.state.instances_mut().push_back(Inst { id: pid, scope: ps, object });
            }
        }
        (Some(id.clone()), Some(id.clone()), first..self.state.instances.len())
    }

    /// Grants: dynamic objects, with their key as id, shared by every object granting them.
    fn grant(&mut self, id: &Arc<str>, object: ObjectId, ops: &mut Vec<Step>) -> Result<(), SheetError> {
        let r = self.r;
        for &g in &r.object(object).grants {
            // Held already: its id is the sheet's. Otherwise the sheet's own copy of the key
            // (see `sheet_key`) becomes its id.
            let key = &r.object(g).key;
            let held = self.state.active.get_key_value(&**key).map(|(gid, _)| gid.clone());
            let gid = match held {
                Some(gid) => {
                    if let Some(ga) = self.state.object_mut(&gid) {
                        ga.granted_by += 1;
                    }
                    gid
                }
                None => {
                    let gid = sheet_key(key);
                    self.activate(g, gid.clone(), None, false, ops)?;
                    if let Some(ga) = self.state.object_mut(&gid) {
                        ga.granted_by = 1;
                    }
                    gid
                }
            };
            if let Some(a) = self.state.object_mut(id) {
                a.grants.push(gid);
            }
        }
        Ok(())
    }

    /// This object's MODIFYOTHER reaches every matching instance, including its own grants',
    /// and (listed under `seq`, the object's place in order) every instance added later. An
    /// object without MODIFYOTHER (most) is not touched again.
    fn reach(&mut self, id: &Arc<str>, object: ObjectId, seq: u64, ops: &mut Vec<Step>) {
        let r = self.r;
        let other = &r.object(object).other;
        if other.is_empty() {
            return;
        }
        let mut reach = Vec::new();
        for (k, om) in other.iter().enumerate() {
            for inst in self.state.instances() {
                if inst.scope == om.scope && self.matches(&om.select, inst.object) {
                    let mid = id_of(&[id, ":o", itoa::Buffer::new().format(k + 1), ">", &inst.id]);
                    ops.push(template(&om.m, &mid, Some(&inst.id)));
                    reach.push((mid, Some(inst.id.clone())));
                }
            }
        }
        if !reach.is_empty()
            && let Some(a) = self.state.object_mut(id)
        {
            a.mods.extend(reach);
        }
        self.state.reaching.insert(seq, id.clone());
    }

    /// Other objects' MODIFYOTHER reach the new instances, in the order those objects came.
    fn reached_by_others(
        &mut self,
        id: &Arc<str>,
        new_instances: std::ops::Range<usize>,
        ops: &mut Vec<Step>,
    ) {
        let r = self.r;
        let others: Vec<Arc<str>> = self.state.reaching.values().filter(|k| *k != id).cloned().collect();
        for other in others {
            let oo = r.object(self.state.active[&other].object);
            let mut added = Vec::new();
            for ni in new_instances.clone() {
                let inst = &self.state.instances[ni];
                for (k, om) in oo.other.iter().enumerate() {
                    if inst.scope == om.scope && self.matches(&om.select, inst.object) {
                        let mid = id_of(&[&other, ":o", itoa::Buffer::new().format(k + 1), ">", &inst.id]);
                        ops.push(template(&om.m, &mid, Some(&inst.id)));
                        added.push((mid, Some(inst.id.clone())));
                    }
                }
            }
            if !added.is_empty()
                && let Some(a) = self.state.object_mut(&other)
            {
                a.mods.extend(added);
            }
        }
    }

    /// The object owning instance `inst` (itself or a part of it).
    fn owner_of(&self, inst: &str) -> Option<Arc<str>> {
        let base = inst.rsplit_once('#').map_or(inst, |(b, _)| b);
        self.state
            .active
            .get_key_value(inst)
            .or_else(|| self.state.active.get_key_value(base))
            .map(|(k, _)| k.clone())
    }

    fn matches(&self, select: &Select, object: ObjectId) -> bool {
        let o = self.r.object(object);
        match select {
            Select::All => true,
            Select::Key(k) => *o.folded_key == **k,
            Select::Group(g) => o.groups.iter().any(|x| x == g),
        }
    }

    /// Takes object `id` off the sheet, with its attached objects and the grants only it held.
    fn deactivate(&mut self, id: &Arc<str>, ops: &mut Vec<Step>) {
        let Some(a) = self.state.active_mut().remove(id) else { return };
        self.state.reaching.remove(&a.seq);
        self.forget_object(id);
        for c in &a.children {
            self.deactivate(c, ops);
        }
        for (m, _) in &a.mods {
            ops.push(Step::Remove(m.clone()));
        }
        if let Some(owner) = &a.attached_to
            && let Some(p) = self.state.object_mut(owner)
        {
            p.children.retain(|c| c != id);
        }
        for g in &a.grants {
            let release = match self.state.object_mut(g) {
                Some(ga) => {
                    ga.granted_by = ga.granted_by.saturating_sub(1);
                    ga.granted_by == 0 && !ga.listed
                }
                None => false,
            };
            if release {
                self.deactivate(g, ops);
            }
        }
        if let Some(inst) = &a.instance {
            ops.push(Step::Op(Box::new(Operation::RemoveInstance(String::from(&**inst)))));
            let prefix = format!("{inst}#");
            let gone = |i: &str| i == &**inst || i.starts_with(&prefix);
            self.state.instances_mut().retain(|i| !gone(&i.id));
            // Modifiers other objects had on these instances go with them. (Only the objects
            // that had some are changed, so only they are copied.)
            let reaching: Vec<Arc<str>> = self
                .state
                .active
                .iter()
                .filter(|(_, o)| o.mods.iter().any(|(_, on)| on.as_deref().is_some_and(gone)))
                .map(|(k, _)| k.clone())
                .collect();
            for k in reaching {
                if let Some(other) = self.state.object_mut(&k) {
                    other.mods.retain(|(_, on)| !on.as_deref().is_some_and(gone));
                }
            }
            if self.state.inputs.keys().any(|(on, _)| on.as_deref().is_some_and(gone)) {
                self.state.inputs_mut().retain(|(on, _), _| !on.as_deref().is_some_and(gone));
            }
        }
    }

    /// A stock's `set_input` or `adjust`: checked against its bounds where the batch is — the
    /// solver's adjustment reads them there (and, for `adjust`, the amount).
    fn adjust_stock(
        &mut self,
        stock: &crate::Stock,
        def: VarDefId,
        on: Option<Arc<str>>,
        mid: Arc<str>,
        input: Input<'_>,
        ops: &mut Vec<Step>,
    ) -> Result<(), SheetError> {
        let format = &self.r.rules().var(def).format;
        let (by, to) = match input {
            Input::By(by) => (by.clone(), false),
            Input::To(value) => {
                let v = convert(value, format).map_err(|m| {
                    err(codes::BAD_VALUE, format!("channel `{}`: {m}", self.r.rules().var(def).name))
                })?;
                (solver::Instruction::Literal(v.clone(), literal_text(&v)), true)
            }
        };
        // (The id is made from the channel: an input already there keeps it, and the table
        // shared with the copy kept for the batch is not copied to write it again.)
        let key = (on.clone(), def);
        if !self.state.inputs.contains_key(&key) {
            self.state.inputs_mut().insert(key, mid.clone());
        }
        ops.push(Step::Op(Box::new(Operation::Adjust(solver::Adjust {
            id: mid,
            var: Target::Def(def),
            on,
            by,
            to,
            min: stock.min.clone(),
            max: stock.max.clone(),
            clamp: stock.clamp,
            source: self.input_source().clone(),
        }))));
        Ok(())
    }

    /// The scope of object `on`'s instance (`None`: the global scope).
    fn scope_of(&self, on: Option<&str>) -> Result<ScopeId, SheetError> {
        match on {
            None => Ok(self.r.rules().global()),
            Some(o) => match self.state.instances().find(|i| *i.id == *o) {
                Some(i) => Ok(i.scope),
                None => Err(err(codes::UNKNOWN_ID, format!("there is no object `{o}` on this sheet"))),
            },
        }
    }

    fn set_input(
        &mut self,
        channel: &str,
        on: Option<&str>,
        input: Input<'_>,
        ops: &mut Vec<Step>,
    ) -> Result<(), SheetError> {
        let r = self.r;
        let rules = r.rules();
        let scope = self.scope_of(on)?;
        let def = rules
            .resolve(scope, channel)
            .filter(|&d| r.is_channel(d) && rules.var(d).scope == scope)
            .ok_or_else(|| {
            err(
                codes::UNKNOWN_CHANNEL,
                format!(
                    "there is no channel `{channel}` in scope {}{}",
                    rules.scope_def(scope).name,
                    on.map_or(String::new(), |o| format!(" (object `{o}`)"))
                ),
            )
        })?;
        if r.is_clock(def) {
            return Err(err(
                codes::CLOCK_BACKWARDS,
                format!("clock `{channel}` moves only with tick and set_clock (forward), not set_input"),
            ));
        }
        self.set_input_of(def, on, input, ops)
    }

    /// Sets (or, for a stock, adjusts) channel `def` of instance `on`.
    fn set_input_of(
        &mut self,
        def: VarDefId,
        on: Option<&str>,
        input: Input<'_>,
        ops: &mut Vec<Step>,
    ) -> Result<(), SheetError> {
        let r = self.r;
        let var = r.rules().var(def);
        let stock = r.stock(def);
        let on: Option<Arc<str>> = on.map(Arc::from);
        // An input set before keeps its id (made once, from the channel).
        let mid: Arc<str> = match self.state.inputs.get(&(on.clone(), def)) {
            Some(mid) => mid.clone(),
            None => id_of(&["input:", on.as_deref().unwrap_or("PC"), ":", &var.name]),
        };
        if let Some(stock) = stock {
            return self.adjust_stock(stock, def, on, mid, input, ops);
        }
        let Input::To(value) = input else {
            return Err(err(
                codes::NOT_A_STOCK,
                format!(
                    "channel `{}` is not a stock (declared in [stocks]): set it with set_input",
                    var.name
                ),
            ));
        };
        let v = convert(value, &var.format)
            .map_err(|m| err(codes::BAD_VALUE, format!("channel `{}`: {m}", var.name)))?;
        let key = (on.clone(), def);
        if self.state.inputs.contains_key(&key) {
            // Its modifier (the id is made from the channel) is replaced.
            ops.push(Step::Remove(mid.clone()));
        } else {
            self.state.inputs_mut().insert(key, mid.clone());
        }
        let text = literal_text(&v);
        ops.push(Step::Op(Box::new(Operation::AddModifier(ModifierSpec {
            id: mid,
            var: Target::Def(def),
            on: on.clone(),
            from: on,
            kind: ModKind::Set,
            value: solver::Instruction::Literal(v, text),
            priority: 0,
            source: self.input_source().clone(),
            condition: None,
        }))));
        Ok(())
    }
}

/// What a step does to a channel: sets it to a value, or adjusts a stock by a formula.
enum Input<'a> {
    To(&'a Value),
    By(&'a solver::Instruction),
}

/// A value as a channel of `format` takes it: numbers for NUMBER, text parsed for data formats.
fn convert(value: &Value, format: &Format) -> Result<Value, String> {
    if value.conforms_to(format) {
        return Ok(value.clone());
    }
    match value {
        Value::String(s) => Value::parse_literal(format, s),
        other => Err(format!("`{other}` is not a {format}")),
    }
}

/// A value's text as written: a whole number's digits straight into its `Arc` (an input is
/// nearly always one), anything else as it displays.
fn literal_text(v: &Value) -> Arc<str> {
    if let Value::Number(d) = v
        && let formula::Num::Int(i) = formula::Num::from_decimal(*d)
    {
        return Arc::from(itoa::Buffer::new().format(i));
    }
    match v {
        Value::Custom(c) => Arc::from(c.data.literal()),
        other => Arc::from(other.to_string()),
    }
}

/// An object's key as a sheet's id for it (an object always present, or granted): a string of
/// the sheet's own, not the ruleset's. Ids are copied and dropped with every character made;
/// had they been the ruleset's strings, every thread making characters would write their
/// counts, on the cache line that every lookup of the id reads.
fn sheet_key(key: &Arc<str>) -> Arc<str> {
    Arc::from(&**key)
}

/// The solver step linking template `m` of the ruleset's catalog as modifier `id`, on and from
/// instance `on`: an index, an id and an instance, nothing of the template copied or counted.
fn template(m: &ModTemplate, id: &Arc<str>, on: Option<&Arc<str>>) -> Step {
    Step::Template { id: id.clone(), template: m.template, on: on.cloned() }
}

/// The id made of `parts` (`sword1:2`, `input:PC:Rolled`), built without the formatting
/// machinery and in one allocation: ids are made for every modifier of every object added,
/// where `format!` costs several times the copy. A short id is put together on the stack (in
/// an `ArrayString`, which knows its parts are `str`s and so checks no UTF-8 again) and copied
/// once into its `Arc`, which the modifier and the object's list then share.
fn id_of(parts: &[&str]) -> Arc<str> {
    let mut id = arrayvec::ArrayString::<128>::new();
    if parts.iter().all(|p| id.try_push_str(p).is_ok()) {
        return Arc::from(id.as_str());
    }
    Arc::from(parts.concat())
}
