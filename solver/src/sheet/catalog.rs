//! Modifiers compiled once per ruleset: a [`Catalog`] of templates that sheets link by index.
//!
//! A ruleset's objects carry modifiers that are the same on every character: the variable
//! they change, their type, value, condition, priority and source. Only where they apply —
//! the instance, and so the nodes they change and read — depends on the sheet. A catalog
//! checks each template once, when the ruleset is compiled: the variable is not locked, the
//! type fits its format, the value and condition are of the formats they must be. A sheet
//! made with the catalog ([`Sheet::with_catalog`]) then links a template with a
//! [`Step::Template`]: an id, the template's index and an instance, checked and resolved by
//! index lookups alone.
//!
//! The modifier the sheet links refers to its template by index; it holds no reference count
//! on the template's formulas or texts. That is the point: every character of a ruleset links
//! the same templates, and a count taken on each for every modifier linked (and given back
//! when the character is dropped) made every thread solving characters of one ruleset write
//! the same cache lines — two threads solving characters ran at about half the speed of two
//! processes.
//!
//! The invariants:
//! - a catalog never changes once shared (a sheet holds it by `Arc`);
//! - a modifier made from template `t` is linked only on a sheet whose catalog has `t`, and
//!   every copy of that sheet keeps the same catalog.

use super::{Formula, Held, Instruction, ModKind, ModValue, Num, Sheet, VarId};
use crate::error::{SolveError, codes};
use crate::rules::{Rules, ScopeId, VarDefId};
use std::sync::Arc;

/// A template's index in its [`Catalog`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TemplateId(pub u32);

/// A modifier to compile into a [`Catalog`]: everything about it but where it applies.
#[derive(Clone, Debug)]
pub struct TemplateSpec {
    /// The variable it changes (resolved by the caller in the scope it is written for).
    pub var: VarDefId,
    pub kind: ModKind,
    pub value: Instruction,
    /// User priority (lower applies first).
    pub priority: u32,
    /// What traces show as its source, and what `RemoveSource` matches.
    pub source: Arc<str>,
    /// A BOOLEAN formula; when false the modifier is skipped.
    pub condition: Option<Instruction>,
    /// The scope its formulas' names resolve in (text instructions are compiled there).
    pub scope: ScopeId,
}

/// A modifier's value, condition and texts: what a linked modifier holds itself (`Held::Own`)
/// or finds in its template.
#[derive(Clone, Debug)]
pub(super) struct Body {
    pub(super) value: ModValue,
    pub(super) condition: Option<Arc<Formula>>,
    /// The value as written, when the value does not say it already: `None` for a formula
    /// (its own text) and for a whole number written in its plain digits (`1`), most
    /// modifiers, which so hold, copy and give back no text of their own (each a reference
    /// count written: a tick expiring a hundred modifiers felt it). See [`Body::text`].
    pub(super) text: Option<Arc<str>>,
    pub(super) source: Arc<str>,
}

impl Body {
    /// The value as written (`1`, `floor((Score-10)/2)`, `2.50`).
    pub(super) fn text(&self) -> Arc<str> {
        match (&self.text, &self.value) {
            (Some(t), _) => t.clone(),
            (None, ModValue::Formula(f)) => f.text_arc().clone(),
            (None, ModValue::Const(formula::Value::Number(d))) => Arc::from(formula::canonical_decimal(*d)),
            // (`Body::written` keeps the text of every other constant.)
            (None, ModValue::Const(v)) => Arc::from(v.to_string()),
        }
    }

    /// What `text` holds for number `d` written in its canonical form (a stock's input):
    /// `None` for a whole number.
    pub(super) fn number_text(d: rust_decimal::Decimal) -> Option<Arc<str>> {
        match Num::from_decimal(d) {
            Num::Int(_) => None,
            Num::Dec(_) => Some(Arc::from(formula::canonical_decimal(d))),
        }
    }

    /// What `text` holds for `value` written as `written` (see `text`): `None` when the
    /// value says it.
    pub(super) fn written(value: &ModValue, written: &Instruction) -> Option<Arc<str>> {
        let says_it = match value {
            // A formula given compiled is its own text (the same record: no comparison).
            ModValue::Formula(f) => {
                matches!(written, Instruction::Compiled(g) if Arc::ptr_eq(f, g)) || f.text() == written.text()
            }
            ModValue::Const(formula::Value::Number(d)) => match Num::from_decimal(*d) {
                Num::Int(i) => itoa::Buffer::new().format(i) == written.text(),
                Num::Dec(_) => false,
            },
            ModValue::Const(_) => false,
        };
        (!says_it).then(|| written.text_arc())
    }
}

/// Where a variable's node is in any instance of its scope (in the instance's list of nodes),
/// read from its declaration once, when a template is made: linking then finds the node
/// without reading the declaration (with thousands of variables, a cache miss apiece).
#[derive(Clone, Copy, Debug)]
pub(super) struct Place {
    pub(super) scope: ScopeId,
    /// Its position in its scope's variables ([`crate::VarDef::index`]).
    pub(super) index: u32,
}

impl Place {
    /// Where `def` is.
    #[inline(always)]
    pub(super) fn of(rules: &Rules, def: VarDefId) -> Place {
        let var = rules.var(def);
        Place { scope: var.scope, index: var.index }
    }
}

/// A variable a template reads, with where it is.
pub(super) type PlacedVar = (VarId, Place);

/// One checked template.
#[derive(Debug)]
pub(super) struct Template {
    pub(super) def: VarDefId,
    /// Where `def` is.
    pub(super) place: Place,
    /// The type as it applies to the variable's format.
    pub(super) kind: ModKind,
    /// Its rank at one user priority, by the variable's order (see `Modifier::rank`).
    pub(super) rank: u8,
    pub(super) priority: u32,
    pub(super) const_num: Option<Num>,
    pub(super) body: Body,
    /// The variables its formulas read, each once: the value formula's first, in its order
    /// (its slots), then the condition's others — the order `Shape::reads` gives, found once
    /// here rather than at every link; each with where it is.
    pub(super) vars: Box<[PlacedVar]>,
    /// How many of `vars` are the value formula's.
    pub(super) value_vars: u32,
    /// The condition's variables, by its slots, as positions in `vars`.
    pub(super) cond_pos: Box<[u32]>,
    /// Whether its variable is kept by its instance ([`crate::VarDef::is_kept`]).
    pub(super) kept: bool,
    /// Its value formula's plan steps, with its slots for variables, when they are steps of
    /// their own (see [`super::plan::Plan::recipe`]): translated once, here, not at every link.
    pub(super) recipe: Option<Box<[super::plan::Step]>>,
}

impl Template {
    /// `body`'s variables as [`Template::vars`], `value_vars` and `cond_pos` hold them.
    fn reads_of(body: &Body, rules: &Rules) -> (Box<[PlacedVar]>, u32, Box<[u32]>) {
        let value = match &body.value {
            ModValue::Formula(f) => Some(f),
            ModValue::Const(_) => None,
        };
        let mut vars: Vec<VarId> = value.map_or_else(Vec::new, |f| f.variables().collect());
        let value_vars = vars.len() as u32;
        let mut cond_pos = Vec::new();
        for v in body.condition.iter().flat_map(|c| c.variables()) {
            let at = match vars.iter().position(|&r| r == v) {
                Some(at) => at,
                None => {
                    vars.push(v);
                    vars.len() - 1
                }
            };
            cond_pos.push(at as u32);
        }
        let vars = vars.into_iter().map(|v| (v, Place::of(rules, VarDefId(v.0)))).collect();
        (vars, value_vars, cond_pos.into())
    }
}

/// A ruleset's modifier templates, checked once, shared by every sheet made with it.
///
/// Aligned to 128 bytes, so that in its `Arc` the reference counts (which every sheet's copy
/// changes) and the fields every link reads are not on one cache line (see `Rules`).
#[repr(align(128))]
pub struct Catalog {
    rules: Arc<Rules>,
    templates: Vec<Template>,
}

impl std::fmt::Debug for Catalog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Catalog").field("templates", &self.templates.len()).finish_non_exhaustive()
    }
}

impl Catalog {
    /// An empty catalog over `rules`.
    pub fn new(rules: Arc<Rules>) -> Catalog {
        Catalog { rules, templates: Vec::new() }
    }

    /// The rules its templates were checked against.
    pub fn rules(&self) -> &Arc<Rules> {
        &self.rules
    }

    /// How many templates it holds.
    pub fn len(&self) -> usize {
        self.templates.len()
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.templates.is_empty()
    }

    /// Checks `spec` and adds it. Rejected when the variable is locked, the type does not fit
    /// the variable's format, or the value or condition is not of the format it must be (the
    /// errors `Sheet::add_modifier` gives; `label` names the template in them).
    pub fn add(&mut self, label: &str, spec: TemplateSpec) -> Result<TemplateId, SolveError> {
        let (kind, body, const_num) = super::modify::check_body(
            &self.rules,
            label,
            spec.var,
            spec.kind,
            &spec.value,
            spec.condition.as_ref(),
            spec.scope,
            spec.source,
        )?;
        let id = TemplateId(u32::try_from(self.templates.len()).map_err(|_| {
            SolveError::new(
                codes::BAD_STEP,
                format!("template `{label}`: a catalog holds at most 2^32 templates"),
            )
        })?);
        let rank = self.rules.var(spec.var).order.rank(kind);
        let (vars, value_vars, cond_pos) = Template::reads_of(&body, &self.rules);
        let kept = self.rules.var(spec.var).is_kept();
        let recipe = match &body.value {
            ModValue::Formula(f) => super::plan::Plan::recipe(f),
            ModValue::Const(_) => None,
        };
        self.templates.push(Template {
            recipe,
            def: spec.var,
            place: Place::of(&self.rules, spec.var),
            kind,
            rank,
            priority: spec.priority,
            const_num,
            body,
            vars,
            value_vars,
            cond_pos,
            kept,
        });
        Ok(id)
    }

    /// Template `t`, if the catalog has it.
    pub(super) fn get(&self, t: TemplateId) -> Option<&Template> {
        self.templates.get(t.0 as usize)
    }
}

impl Held {
    /// The plan steps of its template's value formula, when the template keeps them
    /// ([`Template::recipe`]; `None` for a modifier given whole).
    #[inline]
    pub(super) fn recipe<'a>(&self, catalog: Option<&'a Catalog>) -> Option<&'a [super::plan::Step]> {
        match self {
            Held::Own(_) => None,
            Held::Template(t) => catalog.and_then(|c| c.get(*t)).and_then(|t| t.recipe.as_deref()),
        }
    }

    /// The body: the modifier's own, or its template's in `catalog` (the catalog of the sheet
    /// it is linked on).
    #[inline]
    pub(super) fn body<'a>(&'a self, catalog: Option<&'a Catalog>) -> &'a Body {
        match self {
            Held::Own(b) => b,
            // A template modifier is linked only on a sheet whose catalog has its template,
            // and a sheet's catalog never changes (see the module docs).
            Held::Template(t) => {
                &catalog.and_then(|c| c.get(*t)).expect("the sheet's catalog has the template").body
            }
        }
    }
}

impl Sheet {
    /// A new sheet over the catalog's rules, which links the catalog's templates by index
    /// ([`Step::Template`](super::Step)); otherwise as [`Sheet::new`].
    pub fn with_catalog(catalog: Arc<Catalog>) -> Sheet {
        let mut sheet = Sheet::new(catalog.rules.clone());
        sheet.shape_mut().catalog = Some(catalog);
        sheet
    }

    /// The catalog this sheet links templates from, if it was made with one.
    pub fn catalog(&self) -> Option<&Arc<Catalog>> {
        self.shape.catalog.as_ref()
    }
}

#[cfg(test)]
mod tests {
    use super::{Body, Instruction, ModValue};
    use formula::Value;
    use proptest::prelude::*;
    use rust_decimal::Decimal;
    use std::sync::Arc;

    /// A constant's text as written, whichever form: kept when its digits do not say it.
    fn round_trip(written: &str, value: Decimal) -> (Option<Arc<str>>, Arc<str>) {
        let value = ModValue::Const(Value::Number(value));
        let text = Body::written(&value, &Instruction::from(written));
        let body = Body { value, condition: None, text: text.clone(), source: Arc::from("test") };
        (text, body.text())
    }

    #[test]
    fn plain_whole_numbers_hold_no_text_and_every_other_form_keeps_its_own() {
        assert_eq!(round_trip("1", Decimal::ONE), (None, Arc::from("1")));
        assert_eq!(round_trip("-12", Decimal::from(-12)), (None, Arc::from("-12")));
        for (written, value) in [("1.0", Decimal::new(10, 1)), ("+1", Decimal::ONE), ("01", Decimal::ONE)] {
            assert_eq!(round_trip(written, value), (Some(Arc::from(written)), Arc::from(written)));
        }
        assert_eq!(round_trip("2.50", Decimal::new(250, 2)).1, Arc::from("2.50"));
    }

    proptest! {
        /// Whatever a number was written as, a body gives that text back.
        #[test]
        fn a_constant_gives_back_its_text(m in any::<i64>(), scale in 0u32..4, plus in any::<bool>()) {
            let d = Decimal::new(m, scale);
            let written = if plus && m >= 0 { format!("+{d}") } else { d.to_string() };
            prop_assert_eq!(&*round_trip(&written, d).1, written.as_str());
        }
    }
}
