//! The store's records: protobuf messages that the store owns, separate from the API's.
//!
//! The field numbers are those of the messages the store wrote before it had its own records
//! (the API's `Operation`, `Value`, `Change` and `VariableValue`), so data directories written
//! by earlier releases still load; a test opens one. Change a record only by adding fields.
//!
//! Each record converts to and from its domain type here, once: [`Logged`] (a revision with its
//! operations and changes, and the game step that made it) and [`Snapshot`] (every value at a
//! revision).

use super::{Logged, Snapshot};
use data::SheetOp;
use data::history::Revision;
use data::record::{Change, Kind, Value, Variable};
use events::Step;
use solver::{ModKind, ModifierSpec, Operation};

/// Where a ruleset loads from.
#[derive(Clone, PartialEq, prost::Message)]
pub struct RulesetRecord {
    #[prost(string, tag = "1")]
    pub id: String,
    #[prost(string, repeated, tag = "2")]
    pub paths: Vec<String>,
    #[prost(string, tag = "3")]
    pub inline_text: String,
    #[prost(uint64, tag = "4")]
    pub version: u64,
    /// Paths a client named (they must lie under the ruleset roots when read again).
    #[prost(bool, tag = "5")]
    pub confined: bool,
    /// The SHA-256 of the current version's content (empty in stores from before versions kept
    /// their content).
    #[prost(bytes = "vec", tag = "6")]
    pub content_hash: Vec<u8>,
}

/// The content one version of a ruleset was compiled from.
#[derive(Clone, PartialEq, prost::Message)]
pub struct RulesetVersion {
    #[prost(uint64, tag = "1")]
    pub version: u64,
    #[prost(bytes = "vec", tag = "2")]
    pub content_hash: Vec<u8>,
    /// What was loaded: paths (or, for the built-in starter, nothing).
    #[prost(string, repeated, tag = "3")]
    pub paths: Vec<String>,
    /// Every file read: path (or built-in name) and text.
    #[prost(message, repeated, tag = "4")]
    pub files: Vec<FileRecord>,
    #[prost(string, tag = "5")]
    pub inline_text: String,
    #[prost(bool, tag = "6")]
    pub builtin: bool,
    /// Files the load checked for without reading them.
    #[prost(string, repeated, tag = "7")]
    pub present: Vec<String>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct FileRecord {
    #[prost(string, tag = "1")]
    pub path: String,
    #[prost(string, tag = "2")]
    pub text: String,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct SheetRecord {
    #[prost(string, tag = "1")]
    pub id: String,
    #[prost(string, tag = "2")]
    pub ruleset_id: String,
}

/// One revision of a sheet.
#[derive(Clone, PartialEq, prost::Message)]
pub struct LogRecord {
    #[prost(uint64, tag = "1")]
    pub revision: u64,
    #[prost(uint64, tag = "2")]
    pub ruleset_version: u64,
    #[prost(message, repeated, tag = "3")]
    pub operations: Vec<OperationRecord>,
    /// What the revision changed, in order: a move to a new ruleset version first, then the
    /// operations' changes.
    #[prost(message, repeated, tag = "4")]
    pub changes: Vec<ChangeRecord>,
    /// Set when this revision moved the sheet to another ruleset version.
    #[prost(uint64, optional, tag = "5")]
    pub moved_from_version: Option<u64>,
    /// The game step (emit, choose, roll) that made the revision, when it was one: `operations`
    /// are then what its rules applied, each with its cause. A replay runs the step.
    #[prost(message, optional, tag = "6")]
    pub step: Option<OperationRecord>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct SnapshotRecord {
    #[prost(uint64, tag = "1")]
    pub revision: u64,
    #[prost(message, repeated, tag = "2")]
    pub values: Vec<VariableRecord>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct OperationRecord {
    #[prost(oneof = "Op", tags = "1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15")]
    pub op: Option<Op>,
    /// The rule that applied the operation (`SheetOp::Because`); empty for a request's own.
    #[prost(string, tag = "16")]
    pub cause: String,
}

#[derive(Clone, PartialEq, prost::Oneof)]
pub enum Op {
    #[prost(message, tag = "1")]
    AddObject(AddObjectRecord),
    #[prost(string, tag = "2")]
    RemoveObject(String),
    #[prost(message, tag = "3")]
    SetInput(SetInputRecord),
    #[prost(message, tag = "4")]
    AddModifier(AddModifierRecord),
    #[prost(string, tag = "5")]
    RemoveModifier(String),
    #[prost(string, tag = "6")]
    RemoveSource(String),
    #[prost(message, tag = "7")]
    AddInstance(AddInstanceRecord),
    #[prost(string, tag = "8")]
    RemoveInstance(String),
    #[prost(message, tag = "9")]
    Require(RequireRecord),
    #[prost(message, tag = "10")]
    Adjust(AdjustRecord),
    #[prost(message, tag = "11")]
    Tick(ClockRecord),
    #[prost(message, tag = "12")]
    SetClock(ClockRecord),
    /// Game steps (`events::Step`), only in [`LogRecord::step`].
    #[prost(message, tag = "13")]
    Emit(EmitRecord),
    #[prost(message, tag = "14")]
    Choose(ChooseRecord),
    #[prost(message, tag = "15")]
    Roll(RollRecord),
}

/// An event emitted, with its arguments as text.
#[derive(Clone, PartialEq, prost::Message)]
pub struct EmitRecord {
    #[prost(string, tag = "1")]
    pub event: String,
    #[prost(message, repeated, tag = "2")]
    pub args: Vec<ArgRecord>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct ArgRecord {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(string, tag = "2")]
    pub value: String,
}

/// The answer to a pending choice: its number and the options picked (none: declined).
#[derive(Clone, PartialEq, prost::Message)]
pub struct ChooseRecord {
    #[prost(uint64, tag = "1")]
    pub choice: u64,
    #[prost(string, repeated, tag = "2")]
    pub picks: Vec<String>,
}

/// A die's value, supplied by the client.
#[derive(Clone, PartialEq, prost::Message)]
pub struct RollRecord {
    #[prost(string, tag = "1")]
    pub die: String,
    #[prost(int64, tag = "2")]
    pub value: i64,
}

/// An adjustment of a stock (`SheetOp::Adjust`), as logged: its formula as written (a replay
/// evaluates it again, at the same point of the same history).
#[derive(Clone, PartialEq, prost::Message)]
pub struct AdjustRecord {
    #[prost(string, tag = "1")]
    pub channel: String,
    #[prost(string, optional, tag = "2")]
    pub on: Option<String>,
    #[prost(string, tag = "3")]
    pub by: String,
}

/// A guard (`solver::Guard`), as logged: its formula as written.
#[derive(Clone, PartialEq, prost::Message)]
pub struct RequireRecord {
    #[prost(string, tag = "1")]
    pub formula: String,
    #[prost(string, tag = "2")]
    pub message: String,
    #[prost(string, optional, tag = "3")]
    pub on: Option<String>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct AddObjectRecord {
    #[prost(string, tag = "1")]
    pub kind: String,
    #[prost(string, tag = "2")]
    pub key: String,
    #[prost(string, optional, tag = "3")]
    pub id: Option<String>,
    #[prost(string, optional, tag = "4")]
    pub parent: Option<String>,
    #[prost(message, optional, tag = "5")]
    pub until: Option<UntilRecord>,
}

/// An effect's `until` (`data::Until`): its clock, and `after` as written (`+1` or `3`).
#[derive(Clone, PartialEq, prost::Message)]
pub struct UntilRecord {
    #[prost(string, tag = "1")]
    pub clock: String,
    #[prost(string, optional, tag = "2")]
    pub on: Option<String>,
    #[prost(string, tag = "3")]
    pub after: String,
}

/// A clock moved (`tick` by, `set_clock` to): the clock and the decimal as text.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ClockRecord {
    #[prost(string, tag = "1")]
    pub clock: String,
    #[prost(string, optional, tag = "2")]
    pub on: Option<String>,
    #[prost(string, tag = "3")]
    pub value: String,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct SetInputRecord {
    #[prost(string, tag = "1")]
    pub channel: String,
    #[prost(string, optional, tag = "2")]
    pub on: Option<String>,
    #[prost(message, optional, tag = "3")]
    pub value: Option<ValueRecord>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct AddModifierRecord {
    #[prost(string, tag = "1")]
    pub id: String,
    #[prost(string, tag = "2")]
    pub var: String,
    #[prost(string, optional, tag = "3")]
    pub on: Option<String>,
    #[prost(string, optional, tag = "4")]
    pub from: Option<String>,
    #[prost(string, tag = "5")]
    pub kind: String,
    #[prost(string, tag = "6")]
    pub value: String,
    #[prost(uint32, tag = "7")]
    pub priority: u32,
    #[prost(string, tag = "8")]
    pub source: String,
    #[prost(string, optional, tag = "9")]
    pub condition: Option<String>,
    #[prost(message, optional, tag = "10")]
    pub until: Option<UntilRecord>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct AddInstanceRecord {
    #[prost(string, tag = "1")]
    pub key: String,
    #[prost(string, tag = "2")]
    pub scope: String,
    #[prost(string, optional, tag = "3")]
    pub parent: Option<String>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct ValueRecord {
    #[prost(string, tag = "1")]
    pub format: String,
    #[prost(oneof = "ValueKind", tags = "2, 3, 4, 5, 6")]
    pub kind: Option<ValueKind>,
}

#[derive(Clone, PartialEq, prost::Oneof)]
pub enum ValueKind {
    #[prost(string, tag = "2")]
    Number(String),
    #[prost(bool, tag = "3")]
    Boolean(bool),
    #[prost(string, tag = "4")]
    Text(String),
    #[prost(message, tag = "5")]
    List(ValueListRecord),
    #[prost(message, tag = "6")]
    Error(ValueErrorRecord),
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct ValueListRecord {
    #[prost(message, repeated, tag = "1")]
    pub items: Vec<ValueRecord>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct ValueErrorRecord {
    #[prost(string, tag = "1")]
    pub code: String,
    #[prost(string, tag = "2")]
    pub message: String,
    #[prost(string, tag = "3")]
    pub modifier: String,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct VariableRecord {
    #[prost(string, tag = "1")]
    pub r#ref: String,
    #[prost(message, optional, tag = "2")]
    pub value: Option<ValueRecord>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct ChangeRecord {
    #[prost(string, tag = "1")]
    pub r#ref: String,
    #[prost(message, optional, tag = "2")]
    pub old: Option<ValueRecord>,
    #[prost(message, optional, tag = "3")]
    pub new: Option<ValueRecord>,
}

// ---------------------------------------------------------------------------------------------
// Domain → record

impl LogRecord {
    /// A revision's operations as records.
    pub fn operations_of(r: &Revision) -> Vec<OperationRecord> {
        r.operations.iter().map(operation_record).collect()
    }

    /// The whole record with owned copies: what the tests hold the store's direct encoding
    /// (`redb.rs`, `seal_log`) to, byte for byte.
    #[cfg(test)]
    pub fn of(l: &Logged) -> LogRecord {
        LogRecord {
            revision: l.revision.number,
            ruleset_version: l.revision.ruleset_version,
            operations: Self::operations_of(&l.revision),
            changes: l.changes.iter().map(change_record).collect(),
            moved_from_version: l.revision.moved_from,
            step: l.step.as_ref().map(step_record),
        }
    }
}

/// A game step as a record (an `Ops` step is the revision's operations, and has none).
pub fn step_record(step: &Step) -> OperationRecord {
    let op = match step {
        Step::Ops(_) => None,
        Step::Emit { event, args } => Some(Op::Emit(EmitRecord {
            event: event.clone(),
            args: args
                .iter()
                .map(|(name, value)| ArgRecord { name: name.clone(), value: value.clone() })
                .collect(),
        })),
        Step::Choose { choice, picks } => {
            Some(Op::Choose(ChooseRecord { choice: *choice, picks: picks.clone() }))
        }
        Step::Roll { die, value } => Some(Op::Roll(RollRecord { die: die.clone(), value: *value })),
    };
    OperationRecord { op, cause: String::new() }
}

impl SnapshotRecord {
    pub fn of(s: &Snapshot) -> SnapshotRecord {
        SnapshotRecord {
            revision: s.revision,
            values: s
                .values
                .iter()
                .map(|v| VariableRecord { r#ref: v.var.clone(), value: Some(value_record(&v.value)) })
                .collect(),
        }
    }
}

fn operation_record(op: &SheetOp) -> OperationRecord {
    let op = match op {
        SheetOp::AddObject { kind, key, id, parent } => Op::AddObject(AddObjectRecord {
            kind: kind.clone(),
            key: key.clone(),
            id: id.clone(),
            parent: parent.clone(),
            until: None,
        }),
        SheetOp::RemoveObject(id) => Op::RemoveObject(id.clone()),
        SheetOp::Tick { clock, on, by } => {
            Op::Tick(ClockRecord { clock: clock.clone(), on: on.clone(), value: by.to_string() })
        }
        SheetOp::SetClock { clock, on, to } => {
            Op::SetClock(ClockRecord { clock: clock.clone(), on: on.clone(), value: to.to_string() })
        }
        SheetOp::Because { op, cause } => {
            let mut r = operation_record(op);
            r.cause = cause.to_string();
            return r;
        }
        SheetOp::Lasting { op, until } => {
            let mut r = operation_record(op);
            let u =
                UntilRecord { clock: until.clock.clone(), on: until.on.clone(), after: until.after_text() };
            match &mut r.op {
                Some(Op::AddObject(o)) => o.until = Some(u),
                Some(Op::AddModifier(a)) => a.until = Some(u),
                // `Lasting` holds an add_object or an add_modifier (the sheet refuses others).
                _ => {}
            }
            return r;
        }
        SheetOp::SetInput { channel, on, value } => Op::SetInput(SetInputRecord {
            channel: channel.clone(),
            on: on.clone(),
            value: Some(value_record(&Value::untyped(&Ok(value.clone())))),
        }),
        SheetOp::Solver(Operation::AddModifier(m)) => Op::AddModifier(AddModifierRecord {
            id: m.id.to_string(),
            var: m.var.to_string(),
            on: m.on.as_deref().map(str::to_owned),
            from: m.from.as_deref().map(str::to_owned),
            kind: m.kind.to_string(),
            value: m.value.text().to_owned(),
            priority: m.priority,
            source: m.source.to_string(),
            condition: m.condition.as_ref().map(|c| c.text().to_owned()),
            until: None,
        }),
        SheetOp::Solver(Operation::RemoveModifier(id)) => Op::RemoveModifier(id.clone()),
        SheetOp::Solver(Operation::RemoveSource(s)) => Op::RemoveSource(s.clone()),
        SheetOp::Solver(Operation::AddInstance { key, scope, parent }) => {
            Op::AddInstance(AddInstanceRecord {
                key: key.clone(),
                scope: scope.clone(),
                parent: parent.clone(),
            })
        }
        SheetOp::Solver(Operation::RemoveInstance(k)) => Op::RemoveInstance(k.clone()),
        SheetOp::Adjust { channel, on, by } => {
            Op::Adjust(AdjustRecord { channel: channel.clone(), on: on.clone(), by: by.text().to_owned() })
        }
        // (Never logged — the sheet refuses it — but the nearest record is a stock's.)
        SheetOp::Solver(Operation::Adjust(a)) => Op::Adjust(AdjustRecord {
            channel: a.var.to_string(),
            on: a.on.as_deref().map(str::to_owned),
            by: a.by.text().to_owned(),
        }),
        SheetOp::Solver(Operation::Require(g)) => Op::Require(RequireRecord {
            formula: g.formula.text().to_owned(),
            message: g.message.clone(),
            on: g.on.clone(),
        }),
    };
    OperationRecord { op: Some(op), cause: String::new() }
}

fn value_record(v: &Value) -> ValueRecord {
    let kind = match &v.kind {
        Kind::Number(n) => ValueKind::Number(n.clone()),
        Kind::Boolean(b) => ValueKind::Boolean(*b),
        Kind::Text(t) => ValueKind::Text(t.clone()),
        Kind::List(items) => {
            ValueKind::List(ValueListRecord { items: items.iter().map(value_record).collect() })
        }
        Kind::Error { code, message, modifier } => ValueKind::Error(ValueErrorRecord {
            code: code.clone(),
            message: message.clone(),
            modifier: modifier.clone(),
        }),
    };
    ValueRecord { format: v.format.clone(), kind: Some(kind) }
}

#[cfg(test)]
fn change_record(c: &Change) -> ChangeRecord {
    ChangeRecord {
        r#ref: c.var.clone(),
        old: c.old.as_ref().map(value_record),
        new: c.new.as_ref().map(value_record),
    }
}

// ---------------------------------------------------------------------------------------------
// Record → domain (what cannot be read back is damage, described by the error)

impl LogRecord {
    pub fn into_domain(self) -> Result<Logged, String> {
        let operations = self
            .operations
            .into_iter()
            .enumerate()
            .map(|(i, op)| operation(op).map_err(|e| format!("operation {i}: {e}")))
            .collect::<Result<_, _>>()?;
        let changes = self.changes.into_iter().map(change).collect::<Result<_, _>>()?;
        Ok(Logged {
            revision: Revision {
                number: self.revision,
                ruleset_version: self.ruleset_version,
                operations,
                moved_from: self.moved_from_version,
            },
            changes,
            step: self.step.map(step).transpose().map_err(|e| format!("its game step: {e}"))?,
        })
    }
}

impl SnapshotRecord {
    pub fn into_domain(self) -> Result<Snapshot, String> {
        let values = self
            .values
            .into_iter()
            .map(|v| Ok(Variable { value: value(v.value.ok_or("a value is missing")?)?, var: v.r#ref }))
            .collect::<Result<_, String>>()?;
        Ok(Snapshot { revision: self.revision, values })
    }
}

/// A logged game step.
fn step(op: OperationRecord) -> Result<Step, String> {
    Ok(match op.op.ok_or("the step is empty")? {
        Op::Emit(e) => {
            Step::Emit { event: e.event, args: e.args.into_iter().map(|a| (a.name, a.value)).collect() }
        }
        Op::Choose(c) => Step::Choose { choice: c.choice, picks: c.picks },
        Op::Roll(r) => Step::Roll { die: r.die, value: r.value },
        _ => return Err("a sheet operation where a game step belongs".to_owned()),
    })
}

fn operation(op: OperationRecord) -> Result<SheetOp, String> {
    let cause = op.cause;
    let op = sheet_operation(op.op.ok_or("the operation is empty")?)?;
    Ok(match cause.is_empty() {
        true => op,
        false => SheetOp::Because { op: Box::new(op), cause: cause.into() },
    })
}

fn sheet_operation(op: Op) -> Result<SheetOp, String> {
    Ok(match op {
        Op::Emit(_) | Op::Choose(_) | Op::Roll(_) => {
            return Err("a game step where a sheet operation belongs".to_owned());
        }
        Op::AddObject(o) => {
            lasting(SheetOp::AddObject { kind: o.kind, key: o.key, id: o.id, parent: o.parent }, o.until)?
        }
        Op::Tick(c) => SheetOp::Tick { by: formula::parse_decimal(&c.value)?, clock: c.clock, on: c.on },
        Op::SetClock(c) => {
            SheetOp::SetClock { to: formula::parse_decimal(&c.value)?, clock: c.clock, on: c.on }
        }
        Op::RemoveObject(id) => SheetOp::RemoveObject(id),
        Op::SetInput(i) => {
            let v = value(i.value.ok_or("set_input without a value")?)?;
            SheetOp::SetInput { channel: i.channel, on: i.on, value: v.input()? }
        }
        Op::AddModifier(m) => {
            let source = if m.source.is_empty() { "request" } else { &m.source };
            let kind = ModKind::named(&m.kind).map_err(|e| e.message)?;
            let spec = ModifierSpec::new(&m.id, &m.var, kind, &m.value, source).priority(m.priority).placed(
                m.on.as_deref(),
                m.from.as_deref(),
                m.condition.as_deref(),
            );
            lasting(SheetOp::Solver(Operation::AddModifier(spec)), m.until)?
        }
        Op::RemoveModifier(id) => SheetOp::Solver(Operation::RemoveModifier(id)),
        Op::RemoveSource(s) => SheetOp::Solver(Operation::RemoveSource(s)),
        Op::AddInstance(i) => {
            SheetOp::Solver(Operation::AddInstance { key: i.key, scope: i.scope, parent: i.parent })
        }
        Op::RemoveInstance(k) => SheetOp::Solver(Operation::RemoveInstance(k)),
        Op::Adjust(a) => SheetOp::Adjust { channel: a.channel, on: a.on, by: a.by.as_str().into() },
        Op::Require(r) => SheetOp::Solver(Operation::Require(solver::Guard {
            on: r.on,
            ..solver::Guard::new(&r.formula, &r.message)
        })),
    })
}

/// `op`, lasting until the record says, when it does.
fn lasting(op: SheetOp, until: Option<UntilRecord>) -> Result<SheetOp, String> {
    let Some(u) = until else { return Ok(op) };
    let until = data::Until::parse(&u.clock, u.on.as_deref(), &u.after)?;
    Ok(SheetOp::Lasting { op: Box::new(op), until })
}

fn value(v: ValueRecord) -> Result<Value, String> {
    let kind = match v.kind.ok_or("a value has no kind")? {
        ValueKind::Number(n) => Kind::Number(n),
        ValueKind::Boolean(b) => Kind::Boolean(b),
        ValueKind::Text(t) => Kind::Text(t),
        ValueKind::List(l) => Kind::List(l.items.into_iter().map(value).collect::<Result<_, _>>()?),
        ValueKind::Error(e) => Kind::Error { code: e.code, message: e.message, modifier: e.modifier },
    };
    Ok(Value { format: v.format, kind })
}

fn change(c: ChangeRecord) -> Result<Change, String> {
    Ok(Change { var: c.r#ref, old: c.old.map(value).transpose()?, new: c.new.map(value).transpose()? })
}
