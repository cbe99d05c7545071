//! The draft: what the readers (native TOML, PCGen) found in the files, not yet checked.
//!
//! Both readers fill one [`Draft`]; loading several rulesets on top of each other means reading
//! them into the same draft in order. [`crate::Ruleset::compile`] then checks everything at once
//! and reports every problem, each at the text it comes from.

use crate::diag::{Diagnostic, Origin, Text};
use std::collections::BTreeMap;
use std::sync::Arc;

/// How a kind's objects come to be on a sheet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Presence {
    /// Active when the sheet lists them (races, abilities, equipment, sizes).
    Listed,
    /// Always on every sheet, with their key as id (PCGen stats and saves).
    Always,
    /// Present only while an active object grants them (PCGen dynamic objects: movement).
    Granted,
}

/// A scope definition.
#[derive(Clone, Debug)]
pub struct ScopeDecl {
    pub name: Text,
    pub parent: Text,
}

/// The behaviour of a data format.
#[derive(Clone, Debug)]
pub enum FormatKind {
    OrderedPair,
    Dice,
    /// An enumeration; more values may be added by [`Draft::enum_values`].
    Enumeration(Vec<Text>),
}

/// A format definition.
#[derive(Clone, Debug)]
pub struct FormatDecl {
    pub name: Text,
    pub kind: FormatKind,
}

/// A variable declaration.
#[derive(Clone, Debug)]
pub struct VarDecl {
    pub name: Text,
    pub scope: Text,
    pub format: Text,
    /// A channel: a value the user enters on the sheet, read by `input("NAME")`.
    pub channel: bool,
    /// The order its modifiers apply in (`inherent` or `applied`), when it says.
    pub order: Option<Text>,
    /// A stock (`[stocks.SCOPE]`): a NUMBER channel that `adjust` steps change, with bounds.
    pub stock: Option<StockDecl>,
    /// A clock (`[clocks.SCOPE]`): a NUMBER channel that only moves forward, by `tick` and
    /// `set_clock` steps; effects may last until it passes a value.
    pub clock: bool,
    /// For a STRING variable that holds an instance's id: the scope of the instances it holds
    /// (`{ format = "STRING", holds = "PC.CREATURE" }`), read through as `Name.Var`.
    pub holds: Option<Text>,
}

impl VarDecl {
    /// A NUMBER channel `name` of `scope` (a stock or a clock says which on top of it).
    pub fn number_channel(name: Text, scope: Text) -> VarDecl {
        let format = Text::new("NUMBER", name.at.clone());
        VarDecl { name, scope, format, channel: true, order: None, stock: None, clock: false, holds: None }
    }
}

/// A stock's bounds, as written: `{ min = "0", max = "MaxHP", bounds = "clamp" }`.
#[derive(Clone, Debug, Default)]
pub struct StockDecl {
    pub min: Option<Text>,
    pub max: Option<Text>,
    /// `clamp` or `reject` (the default).
    pub bounds: Option<Text>,
}

/// An object kind: which scope its objects live in and how they become active.
#[derive(Clone, Debug)]
pub struct KindDecl {
    pub name: Text,
    pub scope: Text,
    pub presence: Presence,
    /// Objects of this kind have no instance of their own: they attach to a parent instance of
    /// `scope` (PCGen EQUIPMOD on an equipment part).
    pub attach: bool,
    /// The scope of this kind's parts (PCGen EQUIPMENT: `PC.EQUIPMENT.PART`).
    pub parts: Option<Text>,
}

/// A modifier as written.
#[derive(Clone, Debug)]
pub struct ModDraft {
    pub var: Text,
    /// `SET`, `ADD`, …
    pub kind: Text,
    pub value: Text,
    pub priority: Option<Text>,
    pub condition: Option<Text>,
    /// The whole token or table, for traces.
    pub at: Origin,
}

/// Which instances a [`OtherDraft`] reaches.
#[derive(Clone, Debug)]
pub enum Selector {
    /// Objects with this key.
    Key(Text),
    /// Every instance of the scope.
    All,
    /// Objects in this group (PCGen `GROUP=x`, matched against the object's TYPE).
    Group(Text),
}

/// A modifier on other objects' local variables (PCGen MODIFYOTHER).
#[derive(Clone, Debug)]
pub struct OtherDraft {
    pub scope: Text,
    pub select: Selector,
    pub m: ModDraft,
}

/// A dynamic object an object grants.
#[derive(Clone, Debug)]
pub struct GrantDraft {
    pub kind: Text,
    pub key: Text,
}

/// A data table as written: its name, its columns' names and formats, its rows' cells.
#[derive(Clone, Debug)]
pub struct TableDraft {
    pub name: Text,
    pub columns: Vec<Text>,
    pub formats: Vec<Text>,
    pub rows: Vec<Vec<Text>>,
}

/// A fact objects of a kind may carry (PCGen `FACTDEF:KIND|Name` with `DATAFORMAT:`).
#[derive(Clone, Debug)]
pub struct FactDef {
    pub kind: Text,
    pub name: Text,
    /// The format of its values; `None`: STRING.
    pub format: Option<Text>,
}

/// The facts and visibility of a value of an enumeration read from files (a PCGen DEITY).
#[derive(Clone, Debug)]
pub struct EnumFacts {
    /// The enumeration format (`DEITY`).
    pub kind: Arc<str>,
    pub key: Text,
    pub facts: Vec<(Text, Text)>,
    pub visible: Option<Text>,
}

/// An object as written.
#[derive(Clone, Debug)]
pub struct ObjectDraft {
    pub kind: Text,
    pub key: Text,
    pub name: Text,
    /// The category within its kind (PCGen abilities: `FEAT`, `Class Feature`); objects of
    /// different categories may share a key.
    pub category: Option<Text>,
    /// Groups the object belongs to (PCGen TYPE), for `GROUP=` selectors.
    pub groups: Vec<Text>,
    pub modify: Vec<ModDraft>,
    pub other: Vec<OtherDraft>,
    pub grants: Vec<GrantDraft>,
    /// Modifiers on the object's n-th part (1-based).
    pub parts: Vec<(u32, ModDraft)>,
    /// How many parts the object has at least (native `parts = n`).
    pub part_count: u32,
    /// Facts about it (PCGen `FACT:Name|value`), read by `getFact`; a later one of the same
    /// name replaces an earlier one.
    pub facts: Vec<(Text, Text)>,
    /// Where it shows (PCGen `VISIBLE:YES|NO|DISPLAY|EXPORT|QUALIFY`), for `listAll`'s views.
    pub visible: Option<Text>,
    pub at: Origin,
}

impl ObjectDraft {
    /// An empty object of `kind` with `key` (and the same name).
    pub fn new(kind: Text, key: Text, at: Origin) -> ObjectDraft {
        ObjectDraft {
            kind,
            name: key.clone(),
            key,
            category: None,
            groups: Vec::new(),
            modify: Vec::new(),
            other: Vec::new(),
            grants: Vec::new(),
            parts: Vec::new(),
            part_count: 0,
            facts: Vec::new(),
            visible: None,
            at,
        }
    }
}

/// Everything read from the files of one or more rulesets, in reading order.
#[derive(Clone, Debug, Default)]
pub struct Draft {
    /// The global scope's name (`PC`).
    pub global: Option<Text>,
    /// The order every variable's modifiers apply in unless it says otherwise (`[ruleset]
    /// order`).
    pub order: Option<Text>,
    pub scopes: Vec<ScopeDecl>,
    pub formats: Vec<FormatDecl>,
    /// Values added to enumerations by data files (PCGen ALIGNMENT and DEITY files).
    pub enum_values: Vec<(String, Text)>,
    /// Format defaults: (format, literal).
    pub defaults: Vec<(Text, Text)>,
    /// User functions: (name, body).
    pub functions: Vec<(Text, Text)>,
    pub variables: Vec<VarDecl>,
    pub kinds: Vec<KindDecl>,
    pub objects: Vec<ObjectDraft>,
    /// Modifiers that always apply, on the global scope (PCGen GLOBALMODIFIER files).
    pub global_mods: Vec<ModDraft>,
    /// Data tables (PCGen DATATABLE files), for `lookup`.
    pub tables: Vec<TableDraft>,
    /// The facts objects may carry (PCGen FACTDEF), for `getFact`.
    pub fact_defs: Vec<FactDef>,
    /// The facts of enumeration values read from files (PCGen DEITY and ALIGNMENT lines).
    pub enum_facts: Vec<EnumFacts>,
    /// Tokens read but not used, by token name, with where each was.
    pub skipped: BTreeMap<String, Vec<Origin>>,
    /// Files read, in order.
    pub files: Vec<String>,
    /// Problems found while reading.
    pub errors: Vec<Diagnostic>,
    /// Sections this crate reads but does not interpret (see [`LAYER_SECTIONS`]), as written,
    /// in reading order: (section name, its value).
    pub sections: Vec<(Text, Raw)>,
}

/// Top-level sections of the native format that belong to a layer above this crate (the events
/// layer's `[events]` and `[[rule]]`): the reader keeps them as [`Raw`] values with their
/// positions, [`crate::Ruleset::sections`] hands them on, and that layer checks them.
pub const LAYER_SECTIONS: &[&str] = &["events", "rule"];

/// A TOML value as written, every part with its position: what a higher layer reads from the
/// sections it owns.
#[derive(Clone, Debug)]
pub struct Raw {
    /// The whole value's source text (a string's content without its quotes) and where it is.
    pub at: Text,
    pub value: RawValue,
}

/// The shape of a [`Raw`] value.
#[derive(Clone, Debug)]
pub enum RawValue {
    /// A string's content.
    String(Text),
    /// An integer or float literal, as written.
    Number(Text),
    Boolean(bool),
    Array(Vec<Raw>),
    /// Keys (with their positions) and values, in the order written.
    Table(Vec<(Text, Raw)>),
}

impl Raw {
    /// The kind of value, for messages: `a string`, `a table`.
    pub fn type_name(&self) -> &'static str {
        match self.value {
            RawValue::String(_) => "a string",
            RawValue::Number(_) => "a number",
            RawValue::Boolean(_) => "a boolean",
            RawValue::Array(_) => "an array",
            RawValue::Table(_) => "a table",
        }
    }

    /// A scalar as text: a string's content, a number or boolean as written.
    pub fn scalar(&self) -> Option<Text> {
        match &self.value {
            RawValue::String(t) | RawValue::Number(t) => Some(t.clone()),
            RawValue::Boolean(_) => Some(self.at.clone()),
            _ => None,
        }
    }
}

impl Draft {
    /// Records a skipped token.
    pub fn skip(&mut self, token: &str, at: Origin) {
        self.skipped.entry(token.to_owned()).or_default().push(at);
    }
}
