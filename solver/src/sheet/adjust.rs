//! Stocks: values that events change, not formulas — hit points, gold, uses left.
//!
//! A stock is a NUMBER variable whose value is held by one constant `SET` modifier, its
//! *input* (the data layer's channel input). An adjustment ([`Operation::Adjust`]) evaluates a
//! formula **now**, at its point of the batch and in its instance's scope (the batch is
//! recomputed so far first, as for a guard: see `guard.rs`), adds the result to the input's
//! value (or, `to`, makes it the value), checks the stock's bounds, and replaces the input
//! with a `SET` of the new constant. The stock does not follow the formula afterwards: "2 gold
//! per worker" pays once, at the workers of that moment.
//!
//! Bounds are formulas too (`0 ≤ HP ≤ MaxHP`), evaluated at the same point. Out of bounds, a
//! stock either clamps to the bound or rejects the adjustment (`solver.out_of_bounds`, which
//! fails the batch), as it declares. The new input's source says what happened — `adjust by
//! `2 * Workers` = 6` — so traces and why-changed name the step and the formula's value at
//! that moment.

use super::batch::Pending;
use super::guard::NowFormula;
use super::*;

/// An adjustment of a stock ([`Operation::Adjust`]).
#[derive(Clone, Debug)]
pub struct Adjust {
    /// The id of the stock's input modifier (replaced; made when the stock has none yet, its
    /// value then starting from the variable's default).
    pub id: Arc<str>,
    /// The stock's variable, seen from `on`.
    pub var: Target,
    /// The instance whose scope `by`, `min` and `max` are read in, and the variable resolved
    /// from (`None`: the global instance).
    pub on: Option<Arc<str>>,
    /// A NUMBER formula: what to add (or, with `to`, the new value).
    pub by: Instruction,
    /// `by` is the new value, not an amount to add (a bounded `set_input`).
    pub to: bool,
    /// The bounds, NUMBER formulas read in `on`'s scope.
    pub min: Option<Instruction>,
    pub max: Option<Instruction>,
    /// Out of bounds: clamp to the bound (`true`) or reject (`false`).
    pub clamp: bool,
    /// What the input's source starts with (`input`); the adjustment is appended.
    pub source: Arc<str>,
}

impl Sheet {
    /// Applies adjustment `a` at this point of the batch (see the module docs).
    pub(super) fn op_adjust(&mut self, a: &Adjust, pending: &mut Pending) -> Result<(), SolveError> {
        if self.deferred.is_some() {
            return Err(SolveError::new(
                codes::BAD_STEP,
                format!("adjustment of `{}`: the sheet defers its recomputation; settle it first", a.var),
            ));
        }
        let on = self.shape.lookup_instance_hinted(a.on.as_deref(), &mut None)?;
        let probe = ModifierSpec {
            id: a.id.clone(),
            var: a.var.clone(),
            on: a.on.clone(),
            from: a.on.clone(),
            kind: ModKind::Set,
            value: a.by.clone(),
            priority: 0,
            source: a.source.clone(),
            condition: None,
        };
        let (def, node) = self.shape.target(&probe, on)?;
        // What the errors call it: made only for one (this runs for every adjustment).
        let label = || format!("adjustment of `{}`", self.shape.var_ref(node));
        if self.shape.rules.var(def).format != Format::Number {
            return Err(SolveError::new(
                codes::BAD_VALUE,
                format!("{}: a stock is a NUMBER, not a {}", label(), self.shape.rules.var(def).format),
            ));
        }
        let number = &Format::Number;
        let by = self.formula_now(&label, &a.by, on, number)?;
        let min =
            a.min.as_ref().map(|m| self.formula_now(&|| format!("{}: its minimum", label()), m, on, number));
        let max =
            a.max.as_ref().map(|m| self.formula_now(&|| format!("{}: its maximum", label()), m, on, number));
        let (min, max) = (min.transpose()?, max.transpose()?);
        self.settle_pending(pending);
        let label = || format!("adjustment of `{}`", self.shape.var_ref(node));
        let amount = self.number_now(&label, &by, "the amount")?;
        let current = self.input_value(&a.id, def);
        let (verb, new) = if a.to {
            ("to", amount)
        } else {
            let sum = formula::number::add(current, amount).map_err(|e| {
                let e = compute::math_error(ModKind::Add, e);
                SolveError::new(
                    codes::OUT_OF_BOUNDS,
                    format!("{}: {current} + {amount}: {}", label(), e.message),
                )
            })?;
            ("by", sum)
        };
        let what = || format!("{} {verb} `{}` = {amount}", label(), by.formula.text());
        let (new, note) = self.within_bounds(&label, &what, new, [&min, &max], a.clamp)?;
        // `input: adjust by `2 * Workers` = 6`, put together without the formatting machinery
        // (this runs for every adjustment), numbers in canonical form.
        let f = by.formula.text();
        let mut source = String::with_capacity(a.source.len() + f.len() + note.len() + 40);
        for part in [&*a.source, ": adjust ", verb, " `", f, "` = "] {
            source.push_str(part);
        }
        push_decimal(&mut source, amount);
        source.push_str(&note);
        let spec = ModifierSpec { var: Target::Def(def), ..probe };
        self.set_input(spec, new, source, pending)
    }

    /// Gives stock input `spec` (its id, target, instance) the value `new`, with `source`:
    /// the input there replaced in place when it can be, else removed and added again.
    fn set_input(
        &mut self,
        spec: ModifierSpec,
        new: Decimal,
        source: String,
        pending: &mut Pending,
    ) -> Result<(), SolveError> {
        let text = Body::number_text(new);
        let held = self.shape.mods.key_of(&spec.id);
        if let Some(key) = held
            && let Some(m) = self.shape.mods.get(key).filter(|m| self.shape.mods.is_own(key) && is_input(m))
        {
            // The input is replaced in place: the same id, key and target, the new value and
            // the next sequence number — as if it were removed and another added (which takes
            // the key just freed), for several times less.
            let value = ModValue::Const(Value::Number(new));
            let body = Body { value, condition: None, text, source: Arc::from(source) };
            let m = Modifier {
                held: Held::Own(Box::new(body)),
                const_num: Some(formula::Num::from_decimal(new)),
                seq: self.shape.next_seq,
                ..m.clone()
            };
            self.op_replace(key, m, pending);
            return Ok(());
        }
        if held.is_some() {
            self.op_remove_modifier(&spec.id, pending)?;
        }
        let spec = ModifierSpec {
            // (The first input, or one not replaceable in place: its text written out.)
            value: Instruction::Literal(
                Value::Number(new),
                text.unwrap_or_else(|| Arc::from(formula::canonical_decimal(new))),
            ),
            source: Arc::from(source),
            ..spec
        };
        self.op_add_modifier(&spec, pending)
    }

    /// `f`'s NUMBER value now, or an error naming `what` it is of the adjustment `label`.
    fn number_now(
        &self,
        label: &dyn Fn() -> String,
        f: &NowFormula,
        what: &str,
    ) -> Result<Decimal, SolveError> {
        match self.evaluate_now(f) {
            Ok(Value::Number(d)) => Ok(d),
            Ok(other) => Err(SolveError::new(codes::BAD_VALUE, format!("{}: {what} is {other}", label()))),
            Err(e) => Err(SolveError::new(
                codes::OUT_OF_BOUNDS,
                format!(
                    "{}: {what} `{}` has no value: {} [{}]{}",
                    label(),
                    f.formula.text(),
                    e.message,
                    e.code,
                    self.read_values(f)
                ),
            )),
        }
    }

    /// `new` within the bounds (minimum, maximum) evaluated now: clamped, with a note saying
    /// so, or (`clamp` false) an error saying `what` would pass which bound.
    fn within_bounds(
        &self,
        label: &dyn Fn() -> String,
        what: &dyn Fn() -> String,
        mut new: Decimal,
        bounds: [&Option<NowFormula>; 2],
        clamp: bool,
    ) -> Result<(Decimal, String), SolveError> {
        let mut note = String::new();
        for (bound, f) in ["minimum", "maximum"].into_iter().zip(bounds) {
            let Some(f) = f else { continue };
            let limit = self.number_now(label, f, &format!("its {bound}"))?;
            let outside = if bound == "minimum" { new < limit } else { new > limit };
            if !outside {
                continue;
            }
            if !clamp {
                return Err(SolveError::new(
                    codes::OUT_OF_BOUNDS,
                    format!(
                        "{} would make it {new}, past its {bound} `{}` = {limit}{}",
                        what(),
                        f.formula.text(),
                        self.read_values(f)
                    ),
                ));
            }
            note = format!(", clamped to its {bound} {limit}");
            new = limit;
        }
        Ok((new, note))
    }

    /// The value stock input `id` (of variable `def`) holds: its constant, or the variable's
    /// default when it has none yet.
    fn input_value(&self, id: &str, def: VarDefId) -> Decimal {
        let held = self.shape.mods.key_of(id).and_then(|k| self.shape.mods.get(k)).and_then(|m| {
            match &m.held.body(self.shape.catalog.as_deref()).value {
                ModValue::Const(Value::Number(d)) => Some(*d),
                _ => None,
            }
        });
        held.unwrap_or_else(|| match &self.shape.defaults[def.0 as usize] {
            Value::Number(d) => *d,
            _ => Decimal::ZERO,
        })
    }
}

/// Appends `d` in canonical form (a whole number's digits without an allocation).
fn push_decimal(out: &mut String, d: Decimal) {
    match formula::Num::from_decimal(d) {
        formula::Num::Int(i) => out.push_str(itoa::Buffer::new().format(i)),
        _ => out.push_str(&formula::canonical_decimal(d)),
    }
}

/// Whether `m` is a stock's input as an adjustment leaves it: a SET to a constant NUMBER of
/// its own, with no condition and nothing read.
fn is_input(m: &Modifier) -> bool {
    m.kind == ModKind::Set
        && m.reads.is_empty()
        && matches!(
            &m.held,
            Held::Own(b) if matches!(**b, Body { value: ModValue::Const(Value::Number(_)), condition: None, .. })
        )
}

#[cfg(test)]
mod tests {
    use crate::{
        Adjust, Instruction, ModKind, ModifierSpec, Operation, Rules, RulesBuilder, Sheet, Target, codes,
    };
    use formula::Format;
    use std::sync::Arc;

    fn rules() -> Arc<Rules> {
        let mut b = RulesBuilder::new("PC");
        for v in ["Gold", "Workers", "HP", "MaxHP"] {
            b.declare(v, "PC", Format::Number, false).unwrap();
        }
        b.declare("Name", "PC", Format::String, false).unwrap();
        Arc::new(b.build())
    }

    fn adjust(var: &str, by: &str) -> Adjust {
        Adjust {
            id: Arc::from(format!("input:{var}")),
            var: Target::Name(Arc::from(var)),
            on: None,
            by: Instruction::Text(Arc::from(by)),
            to: false,
            min: None,
            max: None,
            clamp: false,
            source: Arc::from("input"),
        }
    }

    fn hp(by: &str, clamp: bool) -> Operation {
        Operation::Adjust(Adjust {
            min: Some(Instruction::Text(Arc::from("0"))),
            max: Some(Instruction::Text(Arc::from("MaxHP"))),
            clamp,
            ..adjust("HP", by)
        })
    }

    fn val(s: &Sheet, r: &str) -> String {
        s.value(r).unwrap().map(|v| v.to_string()).unwrap_or_else(|e| e.message.to_string())
    }

    fn sheet() -> Sheet {
        let mut s = Sheet::new(rules());
        let set = |var: &str, v: &str| Operation::Adjust(Adjust { to: true, ..adjust(var, v) });
        s.apply(&[set("Gold", "10"), set("Workers", "3"), set("MaxHP", "12"), set("HP", "10")]).unwrap();
        s
    }

    /// A payout of two gold a worker is paid at the workers of that moment, and stays paid.
    #[test]
    fn a_payout_does_not_follow_its_formula() {
        let mut s = sheet();
        let r = s.apply(&[Operation::Adjust(adjust("Gold", "2 * Workers"))]).unwrap();
        assert_eq!(r.len(), 1);
        assert_eq!(val(&s, "Gold"), "16");
        s.apply(&[Operation::Adjust(Adjust { to: true, ..adjust("Workers", "5") })]).unwrap();
        assert_eq!(val(&s, "Gold"), "16", "the payout does not follow Workers");
        let t = s.trace("Gold").unwrap();
        assert_eq!(&*t.steps.last().unwrap().source, "input: adjust by `2 * Workers` = 6");
        // From nothing: a stock without an input starts at its default.
        let mut fresh = Sheet::new(rules());
        fresh.apply(&[Operation::Adjust(adjust("Gold", "4"))]).unwrap();
        assert_eq!(val(&fresh, "Gold"), "4");
    }

    /// Bounds: a stock that rejects fails the batch, naming the bound and what it read; one
    /// that clamps stops at the bound and says so. The bound reads values as the batch left
    /// them.
    #[test]
    fn bounds_reject_or_clamp() {
        let mut s = sheet();
        let before = s.values();
        let e = s.apply(&[Operation::Adjust(adjust("Gold", "1")), hp("-11", false)]).unwrap_err();
        assert_eq!((e.index, e.error.code), (1, codes::OUT_OF_BOUNDS));
        assert_eq!(
            e.error.message,
            "adjustment of `HP` by `-11` = -11 would make it -1, past its minimum `0` = 0"
        );
        assert_eq!(s.values(), before);
        s.apply(&[hp("-11", true)]).unwrap();
        assert_eq!(val(&s, "HP"), "0");
        let t = s.trace("HP").unwrap();
        assert_eq!(
            &*t.steps.last().unwrap().source,
            "input: adjust by `-11` = -11, clamped to its minimum 0"
        );
        let e = s.apply(&[hp("MaxHP + 1", false)]).unwrap_err();
        assert!(
            e.error.message.ends_with("past its maximum `MaxHP` = 12 (read MaxHP = 12)"),
            "{}",
            e.error.message
        );
        // The maximum raised earlier in the batch lets it through.
        let raise = Operation::Adjust(Adjust { to: true, ..adjust("MaxHP", "20") });
        assert_eq!(s.apply(&[hp("15", false)]).unwrap_err().error.code, codes::OUT_OF_BOUNDS);
        s.apply(&[raise, hp("15", false)]).unwrap();
        assert_eq!((val(&s, "MaxHP"), val(&s, "HP")), ("20".into(), "15".into()));
    }

    #[test]
    fn bad_adjustments_are_errors() {
        let mut s = sheet();
        let code = |s: &mut Sheet, a: Adjust| s.apply(&[Operation::Adjust(a)]).unwrap_err().error.code;
        assert_eq!(code(&mut s, adjust("Nope", "1")), codes::UNKNOWN_VARIABLE);
        assert_eq!(code(&mut s, adjust("Name", "1")), codes::BAD_VALUE);
        assert_eq!(code(&mut s, adjust("Gold", "1 +")), codes::FORMULA);
        assert_eq!(code(&mut s, adjust("Gold", "Gold > 1")), codes::FORMULA);
        assert_eq!(code(&mut s, adjust("Gold", "1 / 0")), codes::OUT_OF_BOUNDS);
        assert_eq!(code(&mut s, adjust("Gold", "79228162514264337593543950335")), codes::OUT_OF_BOUNDS);
        assert_eq!(
            code(&mut s, Adjust { on: Some(Arc::from("nowhere")), ..adjust("Gold", "1") }),
            codes::UNKNOWN_INSTANCE
        );
        // A stock's input is a modifier like any other: removing it goes back to the default.
        s.apply(&[Operation::RemoveModifier("input:Gold".into())]).unwrap();
        assert_eq!(val(&s, "Gold"), "0");
        let set = ModifierSpec::new("extra", "Gold", ModKind::Add, "5", "test");
        s.apply(&[Operation::AddModifier(set), Operation::Adjust(adjust("Gold", "1"))]).unwrap();
        assert_eq!(val(&s, "Gold"), "6", "the input holds 1; the other modifier adds 5");
    }
}
