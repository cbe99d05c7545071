//! The solver's behaviour: the design document's examples, the model's rules, and a property
//! test that incremental recomputation always equals a from-scratch solve.

use super::*;
use formula::{Format, Value};
use proptest::prelude::*;
use rust_decimal::Decimal;
use std::sync::Arc;

fn num(s: &Slot) -> String {
    match s {
        Ok(v) => v.to_string(),
        Err(e) => format!("error: {}", e.message),
    }
}

fn val(sheet: &Sheet, r: &str) -> String {
    num(&sheet.value(r).unwrap())
}

fn globals(names: &[&str]) -> Arc<Rules> {
    let mut b = RulesBuilder::new("PC");
    for n in names {
        b.declare(n, "PC", Format::Number, false).unwrap();
    }
    Arc::new(b.build())
}

fn names(refs: &[VarRef]) -> Vec<String> {
    refs.iter().map(|r| r.to_string()).collect()
}

fn changes(sheet: &Sheet, r: &Report) -> Vec<String> {
    r.named(sheet)
        .iter()
        .map(|c| {
            let show = |s: &Option<Slot>| s.as_ref().map_or("null".to_owned(), num);
            format!("{} {}→{}", c.var, show(&c.old), show(&c.new))
        })
        .collect()
}

/// The graph queries: a variable's dependencies in the order its modifiers read them, its
/// dependents, and every edge of a variable whose value is an error.
#[test]
fn dependencies_and_dependents_come_from_the_graph() {
    let mut sheet = Sheet::new(globals(&["A", "B", "C", "D", "Zero"]));
    for (id, var, kind, value) in [
        ("c1", "C", "SET", "B+A"),
        ("c2", "C", "ADD", "A*2"),
        ("d", "D", "SET", "C/Zero"),
        ("b", "B", "SET", "A"),
    ] {
        sheet
            .add_modifier(&ModifierSpec::new(
                id,
                var,
                ModKind::named(kind).expect("a modifier type"),
                value,
                "data",
            ))
            .unwrap();
    }
    let var = |r: &str| sheet.find(r).unwrap();
    let show =
        |vars: Vec<Var>| vars.into_iter().map(|v| sheet.name(v).unwrap().to_string()).collect::<Vec<_>>();
    assert_eq!(show(sheet.dependencies(var("C"))), ["B", "A"], "as c1 reads them, each once");
    assert_eq!(show(sheet.dependents(var("A"))), ["B", "C"], "B's level is below C's");
    assert!(sheet.dependencies(var("A")).is_empty());
    // D is an error (division by zero), and still shows both edges.
    assert!(sheet.slot(var("D")).unwrap().is_err());
    assert_eq!(show(sheet.dependencies(var("D"))), ["C", "Zero"]);
    assert_eq!(show(sheet.dependents(var("Zero"))), ["D"]);
    // Handles are copies; lookups are case-insensitive; unknown names are None or an error.
    assert_eq!(sheet.find("c"), Some(var("C")));
    assert_eq!(sheet.find("Nope"), None);
    assert_eq!(sheet.lookup("Nope").unwrap_err().code, codes::UNKNOWN_VARIABLE);
    assert_eq!(sheet.trace_of(var("C")).unwrap(), sheet.trace("C").unwrap());
    assert_eq!(sheet.format(var("C")), Some(&Format::Number));
}

/// The proposal's walk-through: a) to f), then a SET at priority 1000 that changes nothing.
#[test]
fn appendages_walkthrough() {
    let mut sheet = Sheet::new(globals(&["Fingers", "Hands", "Feet", "Toes", "Appendages"]));
    sheet.record_evaluations(true);
    let steps = [
        ("a", "Fingers", "SET", "5"),
        ("b", "Hands", "SET", "Fingers/5"),
        ("c", "Fingers", "ADD", "5"),
        ("d", "Feet", "SET", "Toes/5"),
        ("e", "Appendages", "SET", "Fingers+Toes+Hands+Feet"),
    ];
    for (id, var, kind, value) in steps {
        sheet
            .add_modifier(&ModifierSpec::new(
                id,
                var,
                ModKind::named(kind).expect("a modifier type"),
                value,
                "data",
            ))
            .unwrap();
    }
    assert_eq!(
        [val(&sheet, "Fingers"), val(&sheet, "Hands"), val(&sheet, "Feet"), val(&sheet, "Appendages")],
        ["10", "2", "0", "12"]
    );
    let f = sheet.add_modifier(&ModifierSpec::new("f", "Toes", ModKind::Add, "10", "data")).unwrap();
    assert_eq!(names(&f.evaluated), ["Toes", "Feet", "Appendages"], "each once, in topological order");
    assert_eq!(f.recomputed, 3);
    assert_eq!(changes(&sheet, &f), ["Toes 0→10", "Feet 0→2", "Appendages 12→24"]);
    // The SET at priority 1000 recomputes Toes only: its value does not change, so nothing
    // after it is recomputed (early cutoff).
    let g = sheet
        .add_modifier(&ModifierSpec::new("g", "Toes", ModKind::Set, "10", "data").priority(1000))
        .unwrap();
    assert_eq!(names(&g.evaluated), ["Toes"]);
    assert!(g.changed.is_empty());
    let values: Vec<(String, String)> =
        sheet.values().into_iter().map(|(r, v)| (r.to_string(), num(&v))).collect();
    assert_eq!(
        values,
        [("Fingers", "10"), ("Hands", "2"), ("Feet", "2"), ("Toes", "10"), ("Appendages", "24")]
            .map(|(a, b)| (a.to_owned(), b.to_owned()))
    );
}

/// (20+10)×2+5 = 65 through priorities, whatever order the modifiers arrive in.
#[test]
fn movement_through_priorities() {
    let mods = [
        ("base", "SET", "20", 0),
        ("bonus", "ADD", "10", 0),
        ("haste", "MULTIPLY", "2", 100),
        ("late", "ADD", "5", 200),
    ];
    for order in [[0, 1, 2, 3], [3, 2, 1, 0], [2, 0, 3, 1]] {
        let mut sheet = Sheet::new(globals(&["Movement"]));
        for i in order {
            let (id, kind, value, p) = mods[i];
            sheet
                .add_modifier(
                    &ModifierSpec::new(
                        id,
                        "Movement",
                        ModKind::named(kind).expect("a modifier type"),
                        value,
                        id,
                    )
                    .priority(p),
                )
                .unwrap();
        }
        assert_eq!(val(&sheet, "Movement"), "65", "order {order:?}");
    }
}

/// Two templates set Hands; the higher PRIORITY wins whichever is added first.
#[test]
fn higher_priority_wins_either_way_round() {
    for first in [true, false] {
        let mut sheet = Sheet::new(globals(&["Hands"]));
        sheet.add_modifier(&ModifierSpec::new("race", "Hands", ModKind::Set, "2", "Race")).unwrap();
        let t1 = ModifierSpec::new("t1", "Hands", ModKind::Set, "4", "Template1").priority(10);
        let t2 = ModifierSpec::new("t2", "Hands", ModKind::Set, "6", "Template2").priority(20);
        let (a, b) = if first { (t1, t2) } else { (t2, t1) };
        sheet.add_modifier(&a).unwrap();
        sheet.add_modifier(&b).unwrap();
        assert_eq!(val(&sheet, "Hands"), "6");
        // Removing the winning template's source falls back to the other one.
        sheet.remove_source("Template2").unwrap();
        assert_eq!(val(&sheet, "Hands"), "4");
        sheet.remove_source("Template1").unwrap();
        assert_eq!(val(&sheet, "Hands"), "2");
    }
}

/// A source whose last modifier went is unknown to `remove_source`, whether its emptied list
/// is still kept for reuse or was dropped with the others (past 64 empty lists); a source
/// used again works as new.
#[test]
fn emptied_sources_are_unknown_until_used_again() {
    let mut sheet = Sheet::new(globals(&["Hands"]));
    let spec = |k: usize| ModifierSpec::new(&format!("m{k}"), "Hands", ModKind::Add, "1", &format!("S{k}"));
    // A first removal by source builds the index by source, which the rest then maintains.
    sheet.add_modifier(&ModifierSpec::new("x", "Hands", ModKind::Add, "1", "X")).unwrap();
    sheet.remove_source("X").unwrap();
    for k in 0..200 {
        sheet.add_modifier(&spec(k)).unwrap();
    }
    assert_eq!(val(&sheet, "Hands"), "200");
    for k in 0..200 {
        sheet.remove_modifier(&format!("m{k}")).unwrap();
        let e = sheet.remove_source(&format!("S{k}")).unwrap_err();
        assert_eq!(e.code, codes::UNKNOWN_MODIFIER, "source S{k}");
    }
    assert_eq!(val(&sheet, "Hands"), "0");
    // Sources reused after their lists were dropped (S0) or kept (S199).
    for k in [0, 199] {
        sheet.add_modifier(&spec(k)).unwrap();
    }
    assert_eq!(val(&sheet, "Hands"), "2");
    sheet.remove_source("S199").unwrap();
    assert_eq!(val(&sheet, "Hands"), "1");
    sheet.remove_source("S0").unwrap();
    assert_eq!(val(&sheet, "Hands"), "0");
    assert!(sheet.remove_source("S0").is_err());
}

/// `for_each_value` hands out what `values` lists — the same variables in the same order, with
/// the instance's key and the name that `VarRef::full_name` joins — plus each one's format.
#[test]
fn for_each_value_matches_values() {
    let mut b = RulesBuilder::new("PC");
    b.add_scope("PC.ITEM", "PC").unwrap();
    b.declare("AC", "PC", Format::Number, false).unwrap();
    b.declare("Worn", "PC", Format::Boolean, false).unwrap();
    b.declare("Bonus", "PC.ITEM", Format::Number, false).unwrap();
    let mut sheet = Sheet::new(Arc::new(b.build()));
    let item = |id: &str| Operation::AddInstance { key: id.into(), scope: "PC.ITEM".into(), parent: None };
    let bonus = |id: &str, v: &str| {
        Operation::AddModifier(ModifierSpec::new(id, "Bonus", ModKind::Set, v, id).on(id))
    };
    sheet.apply(&[item("sword"), item("shield"), bonus("sword", "2"), bonus("shield", "3")]).unwrap();
    sheet.apply(&[Operation::RemoveInstance("sword".into()), item("ring"), bonus("ring", "1")]).unwrap();
    let mut seen = Vec::new();
    sheet.for_each_value(|instance, name, format, slot| {
        seen.push((crate::full_name(instance, name), format.clone(), slot));
    });
    let listed: Vec<(String, Slot)> = sheet.values().into_iter().map(|(r, v)| (r.full_name(), v)).collect();
    assert_eq!(seen.iter().map(|(n, _, v)| (n.clone(), v.clone())).collect::<Vec<_>>(), listed);
    assert_eq!(
        seen.iter().map(|(n, f, _)| format!("{n}: {f}")).collect::<Vec<_>>(),
        // The ring took the removed sword's slot.
        ["AC: NUMBER", "Worn: BOOLEAN", "ring.Bonus: NUMBER", "shield.Bonus: NUMBER"]
    );
}

/// The index by source is built by the first removal by source, from the modifiers then on
/// the sheet: before it, during a batch that is rolled back, and after it, a removal by source
/// takes exactly the live modifiers of that source, and one that fails leaves a copy sharing.
#[test]
fn removal_by_source_before_and_after_the_index_is_built() {
    let mut sheet = Sheet::new(globals(&["Hands", "Feet"]));
    let spec =
        |id: &str, var: &str, v: &str, source: &str| ModifierSpec::new(id, var, ModKind::Add, v, source);
    sheet.add_modifier(&spec("a1", "Hands", "1", "A")).unwrap();
    sheet.add_modifier(&spec("b1", "Hands", "10", "B")).unwrap();
    sheet.add_modifier(&spec("a2", "Feet", "2", "A")).unwrap();
    sheet.add_modifier(&spec("b2", "Feet", "20", "B")).unwrap();
    sheet.remove_modifier("a1").unwrap();
    // A rejected removal by source copies nothing (no index is built on a shared shape).
    let copy = sheet.clone();
    let mut probe = copy.clone();
    assert_eq!(probe.remove_source("Z").unwrap_err().code, codes::UNKNOWN_MODIFIER);
    assert!(probe.shares_structure_with(&copy), "a rejected removal leaves the shape shared");
    // A batch that removes by source (building the index) and then fails is undone whole.
    let err = sheet
        .apply(&[Operation::RemoveSource("A".into()), Operation::RemoveModifier("nope".into())])
        .unwrap_err();
    assert_eq!(err.index, 1);
    assert_eq!((val(&sheet, "Hands"), val(&sheet, "Feet")), ("10".to_owned(), "22".to_owned()));
    // Then the index is kept up to date by adds and removes.
    sheet.add_modifier(&spec("a3", "Hands", "100", "A")).unwrap();
    sheet.remove_source("A").unwrap();
    assert_eq!((val(&sheet, "Hands"), val(&sheet, "Feet")), ("10".to_owned(), "20".to_owned()));
    sheet.remove_source("B").unwrap();
    assert_eq!((val(&sheet, "Hands"), val(&sheet, "Feet")), ("0".to_owned(), "0".to_owned()));
    assert!(sheet.remove_source("A").is_err() && sheet.remove_source("B").is_err());
    // The copy taken before any of it still has all three.
    assert_eq!((val(&copy, "Hands"), val(&copy, "Feet")), ("10".to_owned(), "22".to_owned()));
}

/// At one user priority: default 6 → SET 4 → MULTIPLY 2 → ADD 1 = 9, added in reverse order.
#[test]
fn inherent_priorities_at_one_user_priority() {
    let mut b = RulesBuilder::new("PC");
    b.declare("X", "PC", Format::Number, false).unwrap();
    b.set_default(Format::Number, Value::Number(6.into())).unwrap();
    let mut sheet = Sheet::new(Arc::new(b.build()));
    assert_eq!(val(&sheet, "X"), "6");
    for (id, kind, v) in [("add", "ADD", "1"), ("mul", "MULTIPLY", "2"), ("set", "SET", "4")] {
        sheet
            .add_modifier(&ModifierSpec::new(
                id,
                "X",
                ModKind::named(kind).expect("a modifier type"),
                v,
                "test",
            ))
            .unwrap();
    }
    assert_eq!(val(&sheet, "X"), "9");
    let t = sheet.trace("X").unwrap();
    assert_eq!(t.default, Value::Number(6.into()));
    let kinds: Vec<(ModKind, u8, String)> =
        t.steps.iter().map(|s| (s.kind, s.inherent_priority, num(s.after.as_ref().unwrap()))).collect();
    assert_eq!(
        kinds,
        [(ModKind::Set, 0, "4".into()), (ModKind::Multiply, 1, "8".into()), (ModKind::Add, 3, "9".into())]
    );
    // MAX and MIN come last: a floor and a cap.
    sheet.add_modifier(&ModifierSpec::new("cap", "X", ModKind::Min, "7", "test")).unwrap();
    sheet.add_modifier(&ModifierSpec::new("floor", "X", ModKind::Max, "12", "test")).unwrap();
    assert_eq!(val(&sheet, "X"), "7", "MAX 12 then MIN 7");
}

/// A default that is not a whole number (2.5 for every NUMBER here) starts each variable's
/// plan entry exactly: added one at a time and then removed, and built again in one batch,
/// every value is the hand-worked one, and each trace ends on it.
#[test]
fn decimal_defaults_start_exactly() {
    let mut b = RulesBuilder::new("PC");
    for name in ["X", "Y", "Z", "W"] {
        b.declare(name, "PC", Format::Number, false).unwrap();
    }
    b.set_default(Format::Number, Value::Number(Decimal::new(25, 1))).unwrap();
    let rules = Arc::new(b.build());
    let specs = [
        ModifierSpec::new("y", "Y", ModKind::Set, "3", "test"),
        ModifierSpec::new("mul", "X", ModKind::Multiply, "2", "test"),
        ModifierSpec::new("one", "X", ModKind::Add, "1", "test"),
        ModifierSpec::new("twice-y", "X", ModKind::Add, "Y*2", "test"),
        ModifierSpec::new("w", "W", ModKind::Add, "X", "test"),
    ];
    let values = |sheet: &Sheet| ["X", "Y", "Z", "W"].map(|v| val(sheet, v));
    let traced = |sheet: &Sheet| ["X", "Y", "Z", "W"].map(|v| num(&sheet.trace(v).unwrap().value));
    let mut sheet = Sheet::new(rules.clone());
    assert_eq!(values(&sheet), ["2.5", "2.5", "2.5", "2.5"]);
    for spec in &specs {
        sheet.add_modifier(spec).unwrap();
    }
    // X: 2.5 × 2 + 1 + 3 × 2 (MULTIPLY before ADD); W: 2.5 + X.
    assert_eq!(values(&sheet), ["12", "3", "2.5", "14.5"]);
    assert_eq!(traced(&sheet), values(&sheet));
    sheet.remove_modifier("mul").unwrap();
    assert_eq!(values(&sheet), ["9.5", "3", "2.5", "12"]);
    assert_eq!(traced(&sheet), values(&sheet));
    let ops: Vec<Operation> =
        specs.iter().filter(|s| &*s.id != "mul").cloned().map(Operation::AddModifier).collect();
    let mut whole = Sheet::new(rules);
    whole.apply(&ops).unwrap();
    assert_eq!(values(&whole), values(&sheet));
    whole.solve_all();
    assert_eq!(values(&whole), ["9.5", "3", "2.5", "12"]);
}

/// The two orders side by side: on 300, `+200` then `x2` gives 800 in PCGen's (MULTIPLY
/// before ADD) and 1000 where modifiers apply as added; user priority still comes first in
/// both, and a template linked from a catalog ranks as a modifier given whole.
#[test]
fn applied_order_ignores_inherent_priority() {
    let mut b = RulesBuilder::new("PC");
    let pcgen = b.declare("PcgenBP", "PC", Format::Number, false).unwrap();
    let applied = b.declare("BP", "PC", Format::Number, false).unwrap();
    b.set_order(applied, crate::Order::Applied).unwrap();
    b.set_order(applied, crate::Order::Applied).expect("the same order again is harmless");
    let e = b.set_order(applied, crate::Order::Inherent).unwrap_err();
    assert_eq!(e.code, codes::VARIABLE_CONFLICT);
    assert!(e.message.contains("`BP` applies its modifiers in applied order"), "{}", e.message);
    assert_eq!(b.set_order(pcgen, crate::Order::Inherent), Ok(()));
    let rules = Arc::new(b.build());
    assert_eq!(rules.var(applied).order, crate::Order::Applied);
    let mut catalog = Catalog::new(rules.clone());
    let mut template = |var, kind, value: &str| {
        let spec = TemplateSpec {
            var,
            kind,
            value: rules.instruction(value, rules.global(), &Format::Number, &Format::Number).unwrap(),
            priority: 0,
            source: Arc::from("card"),
            condition: None,
            scope: rules.global(),
        };
        catalog.add("t", spec).unwrap()
    };
    let double = [template(pcgen, ModKind::Multiply, "2"), template(applied, ModKind::Multiply, "2")];
    let mut sheet = Sheet::with_catalog(Arc::new(catalog));
    for var in ["PcgenBP", "BP"] {
        let base = ModifierSpec::new(&format!("{var}-base"), var, ModKind::Set, "300", "card");
        let plus = ModifierSpec::new(&format!("{var}-plus"), var, ModKind::Add, "200", "card");
        sheet.apply(&[Operation::AddModifier(base), Operation::AddModifier(plus)]).unwrap();
    }
    let steps: Vec<crate::Step> = ["PcgenBP", "BP"]
        .iter()
        .zip(double)
        .map(|(var, t)| crate::Step::Template {
            id: Arc::from(format!("{var}-double")),
            template: t,
            on: None,
        })
        .collect();
    sheet.apply_steps(&steps).unwrap();
    assert_eq!((val(&sheet, "PcgenBP"), val(&sheet, "BP")), ("800".to_owned(), "1000".to_owned()));
    // The trace follows the order the value was computed in.
    let after = |sheet: &Sheet, var| -> Vec<String> {
        sheet.trace(var).unwrap().steps.iter().map(|s| num(s.after.as_ref().unwrap())).collect()
    };
    assert_eq!(after(&sheet, "PcgenBP"), ["300", "600", "800"]);
    assert_eq!(after(&sheet, "BP"), ["300", "500", "1000"]);
    // A user priority still orders first: a SET at priority 1 comes after everything at 0,
    // and an ADD at priority 0 added now goes before it.
    let mut late = ModifierSpec::new("late-set", "BP", ModKind::Set, "7", "card");
    late.priority = 1;
    sheet.add_modifier(&late).unwrap();
    sheet.add_modifier(&ModifierSpec::new("early-add", "BP", ModKind::Add, "1", "card")).unwrap();
    assert_eq!(after(&sheet, "BP"), ["300", "500", "1000", "1001", "7"]);
    // Incremental and from scratch agree.
    let mut fresh = sheet.clone();
    fresh.solve_all();
    assert_eq!(fresh.values(), sheet.values());
}

fn equipment_rules() -> Arc<Rules> {
    let mut b = RulesBuilder::new("PC");
    b.add_scope("PC.EQUIPMENT", "PC").unwrap();
    b.add_scope("PC.EQUIPMENT.PART", "PC.EQUIPMENT").unwrap();
    b.add_scope("PC.SKILL", "PC").unwrap();
    b.declare("AC", "PC", Format::Number, false).unwrap();
    b.declare("Level", "PC", Format::Number, true).unwrap();
    b.declare("MyPlusValue", "PC.EQUIPMENT", Format::Number, false).unwrap();
    b.declare("Bonus", "PC.EQUIPMENT.PART", Format::Number, false).unwrap();
    b.declare("Ranks", "PC.SKILL", Format::Number, false).unwrap();
    b.declare("Name", "PC.EQUIPMENT", Format::String, false).unwrap();
    Arc::new(b.build())
}

#[test]
fn local_variables_are_independent_per_instance() {
    let mut sheet = Sheet::new(equipment_rules());
    let r = sheet.add_instance("sword1", "PC.EQUIPMENT", None).unwrap();
    assert_eq!(changes(&sheet, &r), ["sword1.MyPlusValue null→0", "sword1.Name null→"]);
    sheet.add_instance("sword2", "PC.EQUIPMENT", None).unwrap();
    sheet
        .add_modifier(&ModifierSpec::new("p1", "MyPlusValue", ModKind::Set, "1", "Longsword +1").on("sword1"))
        .unwrap();
    sheet
        .add_modifier(&ModifierSpec::new("p2", "MyPlusValue", ModKind::Set, "3", "Longsword +3").on("sword2"))
        .unwrap();
    sheet
        .add_modifier(
            &ModifierSpec::new("n1", "Name", ModKind::Set, "Longsword", "Longsword +1").on("sword1"),
        )
        .unwrap();
    assert_eq!(val(&sheet, "sword1.MyPlusValue"), "1");
    assert_eq!(val(&sheet, "sword2.myplusvalue"), "3", "names are case-insensitive");
    assert_eq!(val(&sheet, "sword1.Name"), "Longsword");
    // A part's formula reads its equipment's local variable; a global reads from an instance.
    sheet.add_instance("sword2#1", "PC.EQUIPMENT.PART", Some("sword2")).unwrap();
    sheet
        .add_modifier(
            &ModifierSpec::new("b", "Bonus", ModKind::Set, "MyPlusValue * 2", "part").on("sword2#1"),
        )
        .unwrap();
    assert_eq!(val(&sheet, "sword2#1.Bonus"), "6");
    sheet
        .add_modifier(&ModifierSpec::new("ac", "AC", ModKind::Add, "Bonus", "part").from("sword2#1"))
        .unwrap();
    assert_eq!(val(&sheet, "AC"), "6");
    // Removing the equipment removes its part, their variables and every modifier on or from them.
    let r = sheet.remove_instance("sword2").unwrap();
    assert_eq!(
        changes(&sheet, &r),
        ["sword2#1.Bonus 6→null", "sword2.MyPlusValue 3→null", "sword2.Name →null", "AC 6→0"]
    );
    assert_eq!(sheet.modifier_count(), 2);
    assert!(sheet.value("sword2.MyPlusValue").is_err());
    assert_eq!(sheet.add_instance("p", "PC.EQUIPMENT.PART", None).unwrap_err().code, codes::WRONG_PARENT);
}

#[test]
fn a_skill_cannot_name_an_equipment_variable() {
    let mut sheet = Sheet::new(equipment_rules());
    sheet.add_instance("climb", "PC.SKILL", None).unwrap();
    let e = sheet
        .add_modifier(&ModifierSpec::new("x", "Ranks", ModKind::Add, "MyPlusValue", "feat").on("climb"))
        .unwrap_err();
    assert_eq!(e.code, codes::FORMULA);
    assert!(e.message.contains("unknown variable `MyPlusValue` in scope PC.SKILL"), "{}", e.message);
    let (fe, text) = *e.formula.unwrap();
    assert_eq!((&text[fe.span.range()], fe.code), ("MyPlusValue", formula::ErrorCode::UnknownVariable));
}

#[test]
fn cycles_are_rejected_when_closed_and_change_nothing() {
    let mut sheet = Sheet::new(globals(&["Fingers", "Hands", "Appendages"]));
    sheet.add_modifier(&ModifierSpec::new("a", "Fingers", ModKind::Set, "5", "data")).unwrap();
    sheet.add_modifier(&ModifierSpec::new("b", "Hands", ModKind::Set, "Fingers/5", "data")).unwrap();
    sheet.add_modifier(&ModifierSpec::new("e", "Appendages", ModKind::Set, "Fingers+Hands", "data")).unwrap();
    let before = sheet.values();
    let e =
        sheet.add_modifier(&ModifierSpec::new("x", "Hands", ModKind::Add, "Appendages", "bad")).unwrap_err();
    assert_eq!(e.code, codes::CYCLE);
    assert_eq!(e.cycle, ["Appendages", "Hands", "Appendages"]);
    assert_eq!(e.cycle_modifiers, ["x", "e"]);
    assert_eq!(sheet.values(), before, "state unchanged");
    assert_eq!(sheet.modifier_count(), 3);
    // A longer cycle, and one through a variable's own value.
    let e = sheet
        .add_modifier(&ModifierSpec::new("y", "Fingers", ModKind::Add, "Appendages", "bad"))
        .unwrap_err();
    assert_eq!(e.cycle, ["Appendages", "Fingers", "Appendages"]);
    let e = sheet.add_modifier(&ModifierSpec::new("z", "Hands", ModKind::Add, "Hands", "bad")).unwrap_err();
    assert_eq!(e.cycle, ["Hands", "Hands"]);
    // value() is the way to read the value so far: not a cycle.
    sheet
        .add_modifier(&ModifierSpec::new("v", "Hands", ModKind::Set, "value() * 3", "ok").priority(5))
        .unwrap();
    assert_eq!(val(&sheet, "Hands"), "3");
}

#[test]
fn conditions_locks_types_and_errors() {
    let mut b = RulesBuilder::new("PC");
    b.declare("Armored", "PC", Format::Boolean, false).unwrap();
    b.declare("Speed", "PC", Format::Number, false).unwrap();
    b.declare("Divisor", "PC", Format::Number, false).unwrap();
    b.declare("Load", "PC", Format::Number, false).unwrap();
    b.declare("Level", "PC", Format::Number, true).unwrap();
    b.declare("Tags", "PC", Format::array(Format::Number), false).unwrap();
    let mut sheet = Sheet::new(Arc::new(b.build()));
    sheet.add_modifier(&ModifierSpec::new("base", "Speed", ModKind::Set, "30", "race")).unwrap();
    sheet
        .add_modifier(&ModifierSpec::new("slow", "Speed", ModKind::Add, "-10", "armor").when("Armored"))
        .unwrap();
    assert_eq!(val(&sheet, "Speed"), "30");
    let t = sheet.trace("Speed").unwrap();
    assert_eq!(
        (t.steps[1].condition, t.steps[1].after.clone()),
        (Some(false), None),
        "skipped, and the trace says so"
    );
    assert_eq!(t.steps[1].reads[0].0.to_string(), "Armored");
    sheet.add_modifier(&ModifierSpec::new("don", "Armored", ModKind::Set, "true", "armor")).unwrap();
    assert_eq!(val(&sheet, "Speed"), "20");
    let e = sheet.add_modifier(&ModifierSpec::new("l", "Level", ModKind::Set, "3", "data")).unwrap_err();
    assert_eq!(e.code, codes::LOCKED);
    let e = sheet.add_modifier(&ModifierSpec::new("m", "Armored", ModKind::Add, "true", "data")).unwrap_err();
    assert_eq!(e.code, codes::BAD_MODIFIER_TYPE);
    let e =
        sheet.add_modifier(&ModifierSpec::new("m", "Speed", ModKind::Set, "Armored", "data")).unwrap_err();
    assert_eq!(e.code, codes::FORMULA);
    assert_eq!(
        sheet.add_modifier(&ModifierSpec::new("base", "Speed", ModKind::Set, "1", "x")).unwrap_err().code,
        codes::DUPLICATE_MODIFIER
    );
    assert_eq!(sheet.remove_modifier("nope").unwrap_err().code, codes::UNKNOWN_MODIFIER);
    // A division by zero makes the variable an error, and what depends on it too, until fixed.
    sheet.add_modifier(&ModifierSpec::new("d", "Load", ModKind::Set, "Speed / Divisor", "rule")).unwrap();
    let err = sheet.value("Load").unwrap().unwrap_err();
    assert_eq!(err.code, "evaluation.division_by_zero");
    sheet.add_modifier(&ModifierSpec::new("fix", "Divisor", ModKind::Set, "4", "rule")).unwrap();
    assert_eq!(val(&sheet, "Load"), "5");
    // Arrays: APPEND adds one element (a formula of the element's format); ADD adds the
    // elements of an array not already there, as a set (as in PCGen), written `1,2` or as a
    // formula marked `=`.
    sheet.add_modifier(&ModifierSpec::new("t1", "Tags", ModKind::Append, "Speed", "x")).unwrap();
    sheet.add_modifier(&ModifierSpec::new("t2", "Tags", ModKind::Append, "7", "x")).unwrap();
    assert_eq!(val(&sheet, "Tags"), "[20, 7]");
    sheet.add_modifier(&ModifierSpec::new("t3", "Tags", ModKind::Add, "7, 8,8,9", "x")).unwrap();
    assert_eq!(val(&sheet, "Tags"), "[20, 7, 8, 9]", "7 was there, 8 is added once");
    let e = sheet
        .add_modifier(&ModifierSpec::new("t4", "Tags", ModKind::Add, "=slice(Tags, 0, 1)", "x"))
        .unwrap_err();
    assert_eq!(e.code, codes::CYCLE, "a formula is read, and this one reads Tags itself");
    let e = sheet.add_modifier(&ModifierSpec::new("t5", "Tags", ModKind::Add, "1,x", "x")).unwrap_err();
    assert!(e.message.contains("`x` is not a NUMBER") || e.message.contains("x"), "{}", e.message);
    sheet.remove_modifier("t3").unwrap();
    assert_eq!(val(&sheet, "Tags"), "[20, 7]");
}

#[test]
fn clones_are_independent_what_ifs() {
    let mut sheet = Sheet::new(globals(&["A", "B"]));
    sheet.add_modifier(&ModifierSpec::new("a", "A", ModKind::Set, "2", "x")).unwrap();
    sheet.add_modifier(&ModifierSpec::new("b", "B", ModKind::Set, "A * 10", "x")).unwrap();
    let mut what_if = sheet.clone();
    what_if.add_modifier(&ModifierSpec::new("a2", "A", ModKind::Add, "1", "y")).unwrap();
    assert_eq!((val(&sheet, "B"), val(&what_if, "B")), ("20".to_owned(), "30".to_owned()));
}

// ---- batches ----

// long: one scenario, step by step, each step asserting what the batch did.
#[test]
fn batches_apply_together_or_not_at_all() {
    let rules = {
        let mut b = RulesBuilder::new("PC");
        b.add_scope("PC.ITEM", "PC").unwrap();
        for g in ["AC", "Dex", "Total"] {
            b.declare(g, "PC", Format::Number, false).unwrap();
        }
        b.declare("Bonus", "PC.ITEM", Format::Number, false).unwrap();
        Arc::new(b.build())
    };
    let mut sheet = Sheet::new(rules);
    sheet.record_evaluations(true);
    sheet.add_modifier(&ModifierSpec::new("dex", "Dex", ModKind::Set, "3", "stats")).unwrap();
    sheet.add_modifier(&ModifierSpec::new("ac", "AC", ModKind::Set, "10 + Dex", "rules")).unwrap();
    sheet.add_modifier(&ModifierSpec::new("total", "Total", ModKind::Set, "AC * 2", "rules")).unwrap();
    let item = |id: &str| Operation::AddInstance { key: id.into(), scope: "PC.ITEM".into(), parent: None };
    let on_item = |id: &str, item: &str, value: &str| {
        Operation::AddModifier(ModifierSpec::new(id, "Bonus", ModKind::Set, value, item).on(item))
    };
    let to_ac = |id: &str, item: &str| {
        Operation::AddModifier(ModifierSpec::new(id, "AC", ModKind::Add, "Bonus", item).from(item))
    };
    // An item, its bonus, and two modifiers raising AC: AC and Total are evaluated once each.
    let report = sheet
        .apply(&[item("shield"), on_item("b", "shield", "2"), to_ac("s1", "shield"), to_ac("s2", "shield")])
        .unwrap();
    assert_eq!(val(&sheet, "AC"), "17");
    assert_eq!(val(&sheet, "Total"), "34");
    assert_eq!(names(&report.evaluated), ["shield.Bonus", "AC", "Total"]);
    let changed: Vec<String> = report.named(&sheet).iter().map(|c| c.var.to_string()).collect();
    assert_eq!(changed, ["shield.Bonus", "AC", "Total"]);
    named_parts_agree(&report, &sheet);
    assert_eq!(report.changed[0].old_value(), None, "a created variable has no old value");
    assert_eq!(
        report.changed[1].old_value(),
        Some(Ok(Value::Number(13.into()))),
        "old is the value before the batch"
    );

    // A failure at the end undoes the removal of an instance and its modifiers.
    let before = sheet.values();
    let err = sheet
        .apply(&[
            Operation::RemoveInstance("shield".into()),
            Operation::RemoveModifier("dex".into()),
            Operation::RemoveModifier("nope".into()),
        ])
        .unwrap_err();
    assert_eq!((err.index, err.error.code), (2, codes::UNKNOWN_MODIFIER));
    assert_eq!(sheet.values(), before);
    assert_eq!(sheet.trace("AC").unwrap().steps.len(), 3);
    // A later operation closing a cycle: the batch fails there and the earlier one is undone.
    let err = sheet
        .apply(&[
            Operation::AddModifier(ModifierSpec::new("x", "Dex", ModKind::Add, "1", "bad")),
            Operation::AddModifier(ModifierSpec::new("y", "Dex", ModKind::Add, "Total", "bad")),
        ])
        .unwrap_err();
    assert_eq!((err.index, err.error.code), (1, codes::CYCLE));
    assert_eq!(err.error.cycle, ["Total", "Dex", "AC", "Total"]);
    assert_eq!(sheet.values(), before);
    assert!(sheet.modifier_ids().all(|id| id != "x"));
    // Adding and removing an instance in one batch reports nothing for it.
    let report = sheet
        .apply(&[item("tmp"), on_item("t", "tmp", "5"), Operation::RemoveInstance("tmp".into())])
        .unwrap();
    assert!(report.is_empty(), "{:?}", report.changed);
    // The batch removal commits: the shield's variables are reported removed, AC drops back.
    let report = sheet.apply(&[Operation::RemoveInstance("shield".into())]).unwrap();
    let changed: Vec<String> = report.named(&sheet).iter().map(|c| c.var.to_string()).collect();
    assert_eq!(changed, ["shield.Bonus", "AC", "Total"]);
    named_parts_agree(&report, &sheet);
    assert_eq!(val(&sheet, "AC"), "13");

    // Removed instances' slots are reused: objects that come and go do not grow the sheet.
    sheet.apply(&[item("tmp"), on_item("t", "tmp", "5"), to_ac("ta", "tmp")]).unwrap();
    sheet.apply(&[Operation::RemoveInstance("tmp".into())]).unwrap();
    let slots = sheet.instance_slots();
    for _ in 0..50 {
        sheet.apply(&[item("tmp"), on_item("t", "tmp", "5"), to_ac("ta", "tmp")]).unwrap();
        assert_eq!(val(&sheet, "AC"), "18");
        sheet.apply(&[Operation::RemoveInstance("tmp".into())]).unwrap();
    }
    assert_eq!(sheet.instance_slots(), slots);
    // A failed batch that removed an instance and reused its slot puts both back as they were.
    sheet.apply(&[item("last"), on_item("l", "last", "1"), to_ac("la", "last")]).unwrap();
    let before = sheet.values();
    let err = sheet
        .apply(&[
            Operation::RemoveInstance("last".into()),
            item("reuser"),
            on_item("r", "reuser", "9"),
            Operation::RemoveModifier("nope".into()),
        ])
        .unwrap_err();
    assert_eq!(err.index, 3);
    assert_eq!(sheet.values(), before);
    assert_eq!(val(&sheet, "last.Bonus"), "1");
    sheet.apply(&[Operation::RemoveInstance("last".into()), item("reuser")]).unwrap();
    assert_eq!(val(&sheet, "reuser.Bonus"), "0");
    assert_eq!(val(&sheet, "AC"), "13");
}

// ---- property: incremental equals from scratch, nothing evaluated twice ----

#[derive(Clone, Debug)]
enum Step {
    Add {
        target: usize,
        kind: usize,
        shape: usize,
        reads: Vec<usize>,
        constant: i64,
        priority: u32,
        local: Option<usize>,
    },
    Remove(usize),
    AddItem(usize),
    RemoveItem(usize),
    /// A guard `G{var} >= bound` (from item `local`'s scope when given: `Weight >= bound`).
    Guard {
        var: usize,
        bound: i64,
        local: Option<usize>,
    },
    /// An adjustment of stock `G{var}` by `G{read} + k`, within -20..=20 (clamped or not).
    Adjust {
        var: usize,
        read: usize,
        k: i64,
        clamp: bool,
    },
}

fn arb_step() -> impl Strategy<Value = Step> {
    prop_oneof![
        6 => (0usize..8, 0usize..7, 0usize..7, prop::collection::vec(0usize..8 + AGGREGATES.len(), 0..3), -5i64..6, 0u32..3, prop::option::of(0usize..3))
            .prop_map(|(target, kind, shape, reads, constant, priority, local)| Step::Add { target, kind, shape, reads, constant, priority, local }),
        2 => (0usize..64).prop_map(Step::Remove),
        1 => (0usize..3).prop_map(Step::AddItem),
        1 => (0usize..3).prop_map(Step::RemoveItem),
        1 => (0usize..8, -8i64..12, prop::option::of(0usize..3))
            .prop_map(|(var, bound, local)| Step::Guard { var, bound, local }),
        1 => (0usize..8, 0usize..8, -9i64..10, any::<bool>())
            .prop_map(|(var, read, k, clamp)| Step::Adjust { var, read, k, clamp }),
    ]
}

fn prop_rules() -> Arc<Rules> {
    prop_rules_with(true)
}

/// [`prop_rules`], with the read through `Pick` or without (a sheet whose rules read through
/// a holder does not defer).
fn prop_rules_with(pointers: bool) -> Arc<Rules> {
    let mut b = RulesBuilder::new("PC");
    b.add_scope("PC.ITEM", "PC").unwrap();
    for i in 0..8 {
        let g = b.declare(&format!("G{i}"), "PC", Format::Number, false).unwrap();
        // G6 and G7 apply their modifiers as added (every other property holds for both orders).
        if i >= 6 {
            b.set_order(g, crate::Order::Applied).unwrap();
        }
    }
    b.declare("Weight", "PC.ITEM", Format::Number, false).unwrap();
    // `Pick` holds an item's id (set by `PICK`), read through as `Pick.Weight` by `Picked`
    // alone: links change as G0 and the items do, and never close a cycle or loop.
    let pick = b.declare("Pick", "PC", Format::String, false).unwrap();
    b.set_holds(pick, "PC.ITEM").unwrap();
    b.declare("Picked", "PC", Format::Number, false).unwrap();
    if pointers {
        b.declare_aggregates("Pick.Weight").unwrap();
    }
    for a in AGGREGATES {
        b.declare_aggregates(a).unwrap();
    }
    Arc::new(b.build())
}

/// Whether `ops` add or remove an item (which may link `Pick.Weight` anew).
fn moves_items(ops: &[Operation]) -> bool {
    ops.iter().any(|op| matches!(op, Operation::AddInstance { .. } | Operation::RemoveInstance(_)))
}

/// The modifiers that set `Pick` from G0 and read through it (see [`prop_rules`]).
fn pick_modifiers() -> [Operation; 2] {
    [
        Operation::AddModifier(ModifierSpec::new("pick", "Pick", ModKind::Set, PICK, "s")),
        Operation::AddModifier(ModifierSpec::new("picked", "Picked", ModKind::Set, "Pick.Weight", "s")),
    ]
}

const PICK: &str = "=\"item\" + text(G0)";

/// Aggregates over the items, which modifiers may read (as reads `8..`): their membership
/// changes as items come and go, and their values as the items' `Weight` (and `G1`) do.
const AGGREGATES: [&str; 5] = [
    "count(PC.ITEM, Weight > 2)",
    "sum(PC.ITEM, Weight)",
    "max(PC.ITEM, Weight + G1, Weight != 3)",
    "min(PC.ITEM, Weight)",
    // A reference to one item's variable, by its id.
    "@item1.Weight",
];

/// Each aggregate of [`AGGREGATES`] equals what its definition gives over the items on the sheet
/// now, computed directly from their values (when every item's `Weight` and `G1` have one).
fn check_aggregates(sheet: &Sheet) -> Result<(), TestCaseError> {
    let values = sheet.values();
    let number = |s: &Slot| match s {
        Ok(Value::Number(d)) => Some(*d),
        _ => None,
    };
    let weights: Option<Vec<Decimal>> = values
        .iter()
        .filter(|(r, _)| r.instance.is_some() && &*r.name == "Weight")
        .map(|(_, s)| number(s))
        .collect();
    let g1 = values.iter().find(|(r, _)| &*r.name == "G1").and_then(|(_, s)| number(s));
    // `Pick.Weight` is the Weight of the item `Pick` names, or none.
    let picked = match sheet.value("Pick").unwrap() {
        Ok(Value::String(key)) => {
            values.iter().find(|(r, _)| r.instance.as_deref() == Some(&*key) && &*r.name == "Weight")
        }
        _ => None,
    };
    if let Ok(got) = sheet.value("Pick.Weight") {
        match (picked, got) {
            (Some((_, Ok(want))), got) => prop_assert_eq!(got, Ok(want.clone())),
            (Some((_, Err(_))), got) => prop_assert!(got.is_err()),
            (None, got) => prop_assert_eq!(got.map_err(|e| e.code), Err("solver.missing_instance")),
        }
    }
    let (Some(weights), Some(g1)) = (weights, g1) else { return Ok(()) };
    let three = Decimal::from(3);
    let max = weights.iter().filter(|w| **w != three).map(|w| *w + g1).max();
    let expected = [
        Some(Decimal::from(weights.iter().filter(|w| **w > Decimal::TWO).count())),
        Some(weights.iter().sum()),
        max,
        weights.iter().min().copied(),
        values
            .iter()
            .find(|(r, _)| r.instance.as_deref() == Some("item1") && &*r.name == "Weight")
            .and_then(|(_, s)| number(s)),
    ];
    for (text, want) in AGGREGATES.iter().zip(expected) {
        let got = sheet.value(text).unwrap();
        match want {
            Some(w) => prop_assert_eq!(
                number(&got),
                Some(w),
                "{}: {:?} (weights {:?}, G1 {})",
                text,
                got,
                weights,
                g1
            ),
            None => prop_assert!(
                matches!(&got, Err(e) if e.code == "solver.empty_aggregate" || e.code == "solver.missing_instance"),
                "{text}: {got:?} over no member"
            ),
        }
    }
    Ok(())
}

/// The variable read `r` of a generated modifier names: `G{r}`, or an aggregate.
fn read_name(r: usize) -> String {
    match r.checked_sub(8) {
        Some(a) => AGGREGATES[a % AGGREGATES.len()].to_owned(),
        None => format!("G{r}"),
    }
}

/// The operation a generated step stands for (`None`: nothing to remove yet).
fn step_operation(n: usize, step: Step, ids: &[String]) -> Option<Operation> {
    let kinds = ["SET", "ADD", "MULTIPLY", "MAX", "MIN", "ADD", "DIVIDE"];
    Some(match step {
        Step::Add { target, kind, shape, reads, constant, priority, local } => {
            let mut terms: Vec<String> = reads.iter().map(|&r| read_name(r)).collect();
            terms.push(constant.to_string());
            let sum = terms.join(" + ");
            // Whole-number programs (in one register, or with a stack), decimals (x / 3,
            // x * 1.5), errors (x / 0), value().
            let formula = match shape {
                0 | 1 => sum,
                2 => format!("floor(({sum}) / 2)"),
                3 => format!("({sum}) / {}", constant.rem_euclid(4)),
                4 => format!("({sum}) * 1.5"),
                5 => format!("({sum}) * 2 - max({sum}, 1) * 3"),
                6 => format!("value() * 2 + {sum}"),
                // Floor division by constants of both signs, powers of two or not.
                _ => format!(
                    "floor(({sum}) / {})",
                    [-1, -3, 7, 3, -2, 4][constant.unsigned_abs() as usize % 6]
                ),
            };
            let id = format!("m{n}");
            let spec = match local {
                // A local variable modified from its item, read by a global.
                Some(item) => ModifierSpec::new(
                    &id,
                    "Weight",
                    ModKind::named(kinds[kind]).expect("a modifier type"),
                    &formula,
                    "s",
                )
                .on(&format!("item{item}")),
                None => ModifierSpec::new(
                    &id,
                    &format!("G{target}"),
                    ModKind::named(kinds[kind]).expect("a modifier type"),
                    &formula,
                    "s",
                )
                .priority(priority),
            };
            Operation::AddModifier(spec)
        }
        Step::Remove(i) => Operation::RemoveModifier(ids.get(i % ids.len().max(1))?.clone()),
        Step::AddItem(i) => {
            Operation::AddInstance { key: format!("item{i}"), scope: "PC.ITEM".into(), parent: None }
        }
        Step::RemoveItem(i) => Operation::RemoveInstance(format!("item{i}")),
        Step::Guard { var, bound, local: None } => {
            Operation::Require(crate::Guard::new(&format!("G{var} >= {bound}"), &format!("g{n}")))
        }
        Step::Guard { bound, local: Some(item), .. } => Operation::Require(
            crate::Guard::new(&format!("Weight >= {bound}"), &format!("g{n}")).on(&format!("item{item}")),
        ),
        Step::Adjust { var, read, k, clamp } => Operation::Adjust(crate::Adjust {
            id: Arc::from(format!("stock{var}")),
            var: Target::Name(Arc::from(format!("G{var}"))),
            on: None,
            by: Instruction::Text(Arc::from(format!("G{read} + {k}"))),
            to: false,
            min: Some(Instruction::Text(Arc::from("-20"))),
            max: Some(Instruction::Text(Arc::from("20"))),
            clamp,
            source: Arc::from("s"),
        }),
    })
}

/// A successful batch's report is its net change: every variable whose value differs from
/// `before` the batch, old → new, and no other (an instance removed and added again under its
/// key is two variables of one name, reported removed and created: not checked here).
fn check_net_change(
    before: &[(VarRef, Slot)],
    sheet: &Sheet,
    report: &Report,
    ops: &[Operation],
) -> Result<(), TestCaseError> {
    let replaced = ops.iter().any(|op| matches!(op, Operation::RemoveInstance(_)))
        && ops.iter().any(|op| matches!(op, Operation::AddInstance { .. }));
    if replaced {
        return Ok(());
    }
    let after = sheet.values();
    let show = |s: Option<&Slot>| s.map_or("null".to_owned(), num);
    let mut net: Vec<String> = Vec::new();
    for (r, v) in &after {
        let old = before.iter().find(|(b, _)| b == r).map(|(_, s)| s);
        if old != Some(v) {
            net.push(format!("{r} {}→{}", show(old), show(Some(v))));
        }
    }
    for (r, v) in before {
        if !after.iter().any(|(a, _)| a == r) {
            net.push(format!("{r} {}→null", show(Some(v))));
        }
    }
    let mut reported = changes(sheet, report);
    net.sort();
    reported.sort();
    prop_assert_eq!(reported, net);
    Ok(())
}

fn check_report(report: &Report) -> Result<(), TestCaseError> {
    check_evaluations(report, true)
}

/// `report` counts what it evaluated; with `once`, each variable once (a batch that links a
/// read through a holder anew evaluates before and after: see `pointers.rs`).
fn check_evaluations(report: &Report, once: bool) -> Result<(), TestCaseError> {
    let evaluated = names(&report.evaluated);
    let mut distinct = evaluated.clone();
    distinct.sort();
    distinct.dedup();
    if once {
        prop_assert_eq!(distinct.len(), evaluated.len(), "a variable was evaluated twice: {:?}", evaluated);
    }
    prop_assert_eq!(report.recomputed, evaluated.len());
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Random steps, applied in random batches of one to four operations. After every batch:
    /// the values equal a from-scratch solve, no variable was evaluated twice, traces agree
    /// with values; a batch succeeds exactly when its operations succeed one by one (on a
    /// copy), with the same values; a failed batch fails at the same operation and leaves the
    /// sheet exactly as it was.
    // long: one property, checked after every batch in the order the checks build on.
    #[test]
    fn incremental_equals_from_scratch(
        steps in prop::collection::vec(arb_step(), 1..40),
        sizes in prop::collection::vec(1usize..5, 40),
    ) {
        let mut sheet = Sheet::new(prop_rules());
        sheet.record_evaluations(true);
        sheet.apply(&pick_modifiers()).unwrap();
        let link = |s: &Sheet| s.modifier_ids().find(|id| id.starts_with("Pick.Weight@")).map(str::to_owned);
        let mut steps = steps.into_iter().enumerate().peekable();
        let mut sizes = sizes.into_iter();
        while steps.peek().is_some() {
            let ids: Vec<String> = sheet.modifier_ids().map(str::to_owned).collect();
            let size = sizes.next().unwrap_or(1);
            let ops: Vec<Operation> =
                steps.by_ref().take(size).filter_map(|(n, step)| step_operation(n, step, &ids)).collect();
            // The same operations one by one, on a copy.
            let mut one_by_one = sheet.clone();
            let mut before_link = link(&one_by_one);
            let mut first_failure = None;
            for (i, op) in ops.iter().enumerate() {
                let r = match op {
                    Operation::AddInstance { key, scope, parent } => one_by_one.add_instance(key, scope, parent.as_deref()),
                    Operation::RemoveInstance(k) => one_by_one.remove_instance(k),
                    Operation::AddModifier(spec) => one_by_one.add_modifier(spec),
                    Operation::RemoveModifier(id) => one_by_one.remove_modifier(id),
                    Operation::RemoveSource(s) => one_by_one.remove_source(s),
                    // A guard alone reads the values the operations before it left.
                    Operation::Require(_) | Operation::Adjust(_) => {
                        one_by_one.apply(std::slice::from_ref(op)).map_err(|e| e.error)
                    }
                };
                match r {
                    Ok(report) => {
                        let now = link(&one_by_one);
                        check_evaluations(&report, now == before_link && !moves_items(std::slice::from_ref(op)))?;
                        before_link = now;
                    }
                    Err(_) => {
                        first_failure = Some(i);
                        break;
                    }
                }
            }
            let before = sheet.values();
            let snapshot = sheet.clone();
            let before_ids: std::collections::BTreeSet<String> = sheet.modifier_ids().map(str::to_owned).collect();
            let guarded = ops.iter().any(|op| matches!(op, Operation::Require(_) | Operation::Adjust(_)));
            match (sheet.apply(&ops), first_failure) {
                (Ok(report), None) => {
                    // At a guard a variable may be evaluated again (see `guard.rs`), and around a
                    // new link (see `pointers.rs`).
                    check_evaluations(&report, !guarded && link(&sheet) == link(&snapshot) && !moves_items(&ops))?;
                    prop_assert_eq!(sheet.values(), one_by_one.values());
                    check_net_change(&before, &sheet, &report, &ops)?;
                }
                (Err(e), Some(i)) => {
                    prop_assert_eq!(e.index, i);
                    prop_assert_eq!(sheet.values(), before);
                    let after_ids: std::collections::BTreeSet<String> = sheet.modifier_ids().map(str::to_owned).collect();
                    prop_assert_eq!(after_ids, before_ids);
                    // Modifier order, sources and inputs too: every trace is as before.
                    for (r, _) in sheet.values() {
                        let r = r.to_string();
                        prop_assert_eq!(sheet.trace(&r).unwrap(), snapshot.trace(&r).unwrap());
                    }
                }
                (batch, one) => prop_assert!(false, "batch {batch:?} but one by one failed at {one:?}"),
            }
            let mut scratch = sheet.clone();
            scratch.solve_all();
            prop_assert_eq!(scratch.values(), sheet.values());
            // Aggregates follow their members: exactly what their definitions give now.
            check_aggregates(&sheet)?;
            // The plan kept across changes agrees with one laid out from nothing.
            prop_assert_eq!(sheet.replanned().values(), sheet.values());
            // Traces run the general path; values the NUMBER fast path: they must agree.
            for (r, v) in sheet.values() {
                prop_assert_eq!(sheet.trace(&r.to_string()).unwrap().value, v);
            }
        }
    }
}

/// The sheet's modifier ids in a fixed order (the sheet's own map iterates in a per-map order).
fn sorted_ids(sheet: &Sheet) -> Vec<String> {
    let mut ids: Vec<String> = sheet.modifier_ids().map(str::to_owned).collect();
    ids.sort();
    ids
}

/// A sheet's state built from steps alone, in batches of one (failures skipped).
fn built_alone(rules: Arc<Rules>, steps: &[(usize, Step)]) -> Sheet {
    let mut sheet = Sheet::new(rules);
    for (n, step) in steps {
        let ids = sorted_ids(&sheet);
        if let Some(op) = step_operation(*n, step.clone(), &ids) {
            let _ = sheet.apply(std::slice::from_ref(&op));
        }
    }
    sheet
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    /// Sheets built over one shared `Rules` are independent: interleaving two sheets' changes
    /// gives each exactly the values (and traces) it has when built alone, and a copy of a sheet
    /// does not see its original's later changes.
    #[test]
    fn sheets_sharing_rules_never_see_each_other(
        a_steps in prop::collection::vec(arb_step(), 1..25),
        b_steps in prop::collection::vec(arb_step(), 1..25),
    ) {
        let rules = prop_rules();
        let a_steps: Vec<(usize, Step)> = a_steps.into_iter().enumerate().collect();
        let b_steps: Vec<(usize, Step)> = b_steps.into_iter().enumerate().collect();
        let (mut a, mut b) = (Sheet::new(rules.clone()), Sheet::new(rules.clone()));
        let mut a_copy = None;
        for i in 0..a_steps.len().max(b_steps.len()) {
            for (sheet, steps) in [(&mut a, &a_steps), (&mut b, &b_steps)] {
                let Some((n, step)) = steps.get(i) else { continue };
                let ids = sorted_ids(sheet);
                if let Some(op) = step_operation(*n, step.clone(), &ids) {
                    let _ = sheet.apply(std::slice::from_ref(&op));
                }
            }
            if i == a_steps.len() / 2 {
                a_copy = Some((a.clone(), i));
            }
        }
        for (sheet, steps) in [(&a, &a_steps), (&b, &b_steps)] {
            let alone = built_alone(rules.clone(), steps);
            prop_assert_eq!(sheet.values(), alone.values());
            for (r, _) in sheet.values() {
                let r = r.to_string();
                prop_assert_eq!(sheet.trace(&r).unwrap(), alone.trace(&r).unwrap());
            }
        }
        if let Some((copy, at)) = a_copy {
            let upto = &a_steps[..=at.min(a_steps.len() - 1)];
            prop_assert_eq!(copy.values(), built_alone(rules.clone(), upto).values());
        }
    }
}

/// Every trace of `sheet`, by variable: the modifiers in their order of application, with their
/// values and sources.
fn all_traces(sheet: &Sheet) -> Vec<Trace> {
    sheet.values().into_iter().map(|(r, _)| sheet.trace(&r.to_string()).unwrap()).collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// A batch of additions links in bulk (`sheet/bulk.rs`: edges sorted once, one topological
    /// pass that finds cycles, lists sorted once) and must give exactly what its operations
    /// give one at a time: the same values and traces (modifiers in the same order), or the
    /// same error at the same operation with the sheet unchanged — also when an early
    /// operation closes a cycle and a later one fails otherwise.
    #[test]
    fn bulk_batches_equal_one_at_a_time(
        setup in prop::collection::vec(arb_step(), 0..16),
        adds in prop::collection::vec(
            arb_step().prop_filter("additions only", |s| matches!(s, Step::Add { .. } | Step::AddItem(_))),
            2..24,
        ),
    ) {
        let setup: Vec<(usize, Step)> = setup.into_iter().enumerate().collect();
        let mut sheet = built_alone(prop_rules(), &setup);
        let ops: Vec<Operation> =
            adds.into_iter().enumerate().filter_map(|(n, s)| step_operation(100 + n, s, &[])).collect();
        let modifiers = ops.iter().filter(|op| matches!(op, Operation::AddModifier(_))).count();
        let mut one = sheet.clone();
        let first_failure = ops.iter().position(|op| one.apply(std::slice::from_ref(op)).is_err());
        let snapshot = sheet.clone();
        let started = crate::sheet::bulk_batches();
        match (sheet.apply(&ops), first_failure) {
            (Ok(_), None) => {
                prop_assert_eq!(sheet.values(), one.values());
                prop_assert_eq!(all_traces(&sheet), all_traces(&one));
            }
            (Err(e), Some(i)) => {
                prop_assert_eq!(e.index, i);
                prop_assert_eq!(sheet.values(), snapshot.values());
                prop_assert_eq!(all_traces(&sheet), all_traces(&snapshot));
            }
            (batch, one) => prop_assert!(false, "batch {batch:?} but one at a time failed at {one:?}"),
        }
        prop_assert_eq!(crate::sheet::bulk_batches() > started, modifiers >= 2, "bulk exactly for 2+ modifiers");
        // The sheet goes on correctly: a from-scratch solve and a plan laid out again agree.
        let mut scratch = sheet.clone();
        scratch.solve_all();
        prop_assert_eq!(scratch.values(), sheet.values());
        prop_assert_eq!(sheet.replanned().values(), sheet.values());
    }
}

/// A sheet built in one batch has each variable evaluated as soon as its plan entry is
/// written, until one needs more than whole numbers (here `V6`, given a decimal): from there
/// the recomputation's own loop goes on. Either way the values are those of the same modifiers
/// added one at a time, and of a plan laid out again and solved from scratch.
#[test]
fn a_built_sheet_is_evaluated_as_its_plan_is_written() {
    let names: Vec<String> = (0..12).map(|i| format!("V{i}")).collect();
    let rules = globals(&names.iter().map(String::as_str).collect::<Vec<_>>());
    let mut ops = vec![Operation::AddModifier(spec_s("v0", "V0", ModKind::Set, "3"))];
    for i in 1..12 {
        let value = if i == 6 { "V5 + 0.5".to_owned() } else { format!("V{} * 2 + 1", i - 1) };
        ops.push(Operation::AddModifier(spec_s(&format!("v{i}"), &format!("V{i}"), ModKind::Add, &value)));
        ops.push(Operation::AddModifier(spec_s(&format!("w{i}"), &format!("V{i}"), ModKind::Max, "4")));
    }
    let (before, stops) = crate::sheet::fused_evaluations();
    let mut built = Sheet::new(rules.clone());
    let report = built.apply(&ops).unwrap();
    let (after, stops_after) = crate::sheet::fused_evaluations();
    // V0..V5 in order before V6, whose decimal the plan's whole numbers do not hold.
    assert!(after - before >= 6, "evaluated as written: {}", after - before);
    assert_eq!(stops_after - stops, 1, "the pass stopped at V6");
    assert_eq!(report.changed.len(), 12);
    let mut one = Sheet::new(rules);
    for op in &ops {
        one.apply(std::slice::from_ref(op)).unwrap();
    }
    assert_eq!(built.values(), one.values());
    assert_eq!(built.replanned().values(), built.values());
    assert_eq!(built.value("V6").unwrap().unwrap().to_string(), "127.5");
}

/// A bulk batch that fails is run again one operation at a time, which names the first
/// operation to fail: here the second closes a cycle, which bulk linking only finds at the end,
/// after the fourth failed for an unknown variable.
#[test]
fn a_bulk_batch_names_the_first_operation_to_fail() {
    let mut sheet = Sheet::new(globals(&["A", "B", "C"]));
    let add = |id: &str, var: &str, value: &str| Operation::AddModifier(spec_s(id, var, ModKind::Add, value));
    let ops = [
        add("a", "A", "B + 1"),
        add("b", "B", "A"),
        add("c", "C", "2"),
        add("d", "Nowhere", "1"),
        add("e", "C", "1"),
    ];
    let before = crate::sheet::bulk_batches();
    let err = sheet.apply(&ops).unwrap_err();
    assert!(crate::sheet::bulk_batches() > before, "the batch started in bulk");
    assert_eq!(err.index, 1);
    assert_eq!(err.error.code, codes::CYCLE);
    assert_eq!(err.error.cycle, ["A", "B", "A"]);
    // Without the second, the fourth is the first to fail; without both, all apply.
    let err = sheet.apply(&[ops[0].clone(), ops[2].clone(), ops[3].clone()]).unwrap_err();
    assert_eq!((err.index, err.error.code), (2, codes::UNKNOWN_VARIABLE));
    assert_eq!(sheet.modifier_count(), 0);
    // A cycle found only at the end of the batch (every operation passed on its own terms).
    let err = sheet.apply(&[ops[2].clone(), ops[0].clone(), ops[1].clone()]).unwrap_err();
    assert_eq!((err.index, err.error.code), (2, codes::CYCLE));
    assert_eq!(sheet.modifier_count(), 0);
    sheet.apply(&[ops[0].clone(), ops[2].clone(), ops[4].clone()]).unwrap();
    assert_eq!((val(&sheet, "A"), val(&sheet, "C")), ("1".to_owned(), "3".to_owned()));
    // A taken id, found when the bulk batch enters it, at its end: taken within the batch, or on the
    // sheet already. The sheet is unchanged, and takes later batches as before.
    let before = sheet.values();
    for (batch, index) in [
        (vec![add("x", "B", "1"), add("y", "B", "2"), add("x", "C", "1")], 2),
        (vec![add("z", "B", "1"), add("a", "B", "2")], 1),
    ] {
        let err = sheet.apply(&batch).unwrap_err();
        assert_eq!((err.index, err.error.code), (index, codes::DUPLICATE_MODIFIER));
        assert_eq!(sheet.values(), before);
        assert_eq!(sheet.modifier_count(), 3);
    }
    sheet.apply(&[add("x", "B", "1"), add("y", "B", "2")]).unwrap();
    assert_eq!(val(&sheet, "B"), "3");
}

/// Sheets over one `Rules` share its defaults instead of copying them.
#[test]
fn sheets_share_the_rules_defaults() {
    let rules = globals(&["A", "B"]);
    let (a, b) = (Sheet::new(rules.clone()), Sheet::new(rules.clone()));
    assert_eq!(Arc::strong_count(rules.var_defaults()), 3, "the rules' own, and one per sheet");
    assert_eq!((val(&a, "A"), val(&b, "B")), ("0".to_owned(), "0".to_owned()));
}

/// `ModifierSpec::new` with source `s`.
fn spec_s(id: &str, var: &str, kind: ModKind, value: &str) -> ModifierSpec {
    ModifierSpec::new(id, var, kind, value, "s")
}

/// Four chained globals: A = 3, B += A * 2 + 1, C += `c`, D = max(D, C - 1.5).
fn chain(c: &str) -> Sheet {
    let mut sheet = Sheet::new(globals(&["A", "B", "C", "D"]));
    sheet.add_modifier(&spec_s("a", "A", ModKind::Set, "3")).unwrap();
    sheet.add_modifier(&spec_s("b", "B", ModKind::Add, "A * 2 + 1")).unwrap();
    sheet.add_modifier(&spec_s("c", "C", ModKind::Add, c)).unwrap();
    sheet.add_modifier(&spec_s("d", "D", ModKind::Max, "C - 1.5")).unwrap();
    sheet
}

/// The plan is kept across structural changes, not rebuilt: entries rewritten in place, moved
/// when they grow, and every entry laid out again once garbage outweighs the rest. Through
/// thousands of changes — enough for several compactions — every value stays what the
/// reference computation (the trace) and a plan laid out from nothing say. The modifiers that
/// are removed again have formulas that need a stack (`A * (A + k)`), whose instructions the
/// plan keeps beside the steps and leaves as garbage when they go.
#[test]
fn the_kept_plan_survives_thousands_of_changes() {
    let mut sheet = chain("floor(B / 2) + A");
    let add = spec_s;
    for round in 0..3_000i64 {
        let value = match round % 3 {
            0 => format!("A + {}", round % 7),
            _ => format!("A * (A + {})", round % 7),
        };
        let id = format!("t{round}");
        sheet.add_modifier(&add(&id, "B", ModKind::Add, &value)).unwrap();
        sheet.add_modifier(&add(&format!("{id}x"), "A", ModKind::Add, "1")).unwrap();
        if round % 3 != 0 {
            sheet.remove_modifier(&id).unwrap();
        }
        sheet.remove_modifier(&format!("{id}x")).unwrap();
        if round % 500 == 0 {
            for (r, v) in sheet.values() {
                assert_eq!(sheet.trace(&r.to_string()).unwrap().value, v, "{r} at round {round}");
            }
            assert_eq!(sheet.replanned().values(), sheet.values(), "round {round}");
        }
    }
    assert!(sheet.plan_compactions() >= 2, "{} compactions", sheet.plan_compactions());
    for (r, v) in sheet.values() {
        assert_eq!(sheet.trace(&r.to_string()).unwrap().value, v, "{r}");
    }
    assert_eq!(sheet.replanned().values(), sheet.values());
    // 1,000 of the B modifiers stay: B = 7 + Σ (3 + round % 7) over rounds ≡ 0 (mod 3).
    let expected: i64 = 7 + (0..3_000i64).filter(|r| r % 3 == 0).map(|r| 3 + r % 7).sum::<i64>();
    assert_eq!(val(&sheet, "B"), expected.to_string());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    /// Batches of one to three operations applied while deferring (batches of additions in
    /// bulk) change the structure at once (and are rejected exactly when, and with the same
    /// error as, they would be otherwise) but report nothing; `settle` then recomputes once,
    /// each variable at most once, to the same values as applying them without deferring, and
    /// reports every variable whose value differs from before deferring.
    #[test]
    fn deferred_operations_settle_to_the_same_values(
        warm_up in prop::collection::vec(arb_step(), 0..10),
        steps in prop::collection::vec(arb_step(), 1..40),
        sizes in prop::collection::vec(1usize..4, 40),
    ) {
        let mut now = Sheet::new(prop_rules_with(false));
        for (n, step) in warm_up.into_iter().enumerate() {
            let ids: Vec<String> = now.modifier_ids().map(str::to_owned).collect();
            if let Some(op) = step_operation(n, step, &ids) {
                let _ = now.apply(&[op]);
            }
        }
        let mut later = now.clone();
        later.record_evaluations(true);
        let before = later.values();
        later.defer();
        prop_assert!(later.is_deferring());
        // In batches of one to three operations: batches of additions go in bulk, deferred too.
        let mut steps = steps.into_iter().enumerate().peekable();
        let mut sizes = sizes.into_iter();
        while steps.peek().is_some() {
            let ids: Vec<String> = now.modifier_ids().map(str::to_owned).collect();
            let size = sizes.next().unwrap_or(1);
            let ops: Vec<Operation> =
                steps
                    .by_ref()
                    .take(size)
                    // A deferring sheet refuses guards and adjustments (they read values).
                    .filter(|(_, step)| !matches!(step, Step::Guard { .. } | Step::Adjust { .. }))
                    .filter_map(|(n, step)| step_operation(n + 100, step, &ids))
                    .collect();
            let immediate = now.apply(&ops);
            let deferred = later.apply(&ops);
            prop_assert_eq!(immediate.as_ref().err(), deferred.as_ref().err());
            if let Ok(r) = deferred {
                prop_assert!(r.is_empty() && r.recomputed == 0, "{r:?}");
            }
        }
        let report = later.settle();
        prop_assert!(!later.is_deferring());
        check_report(&report)?;
        prop_assert_eq!(later.values(), now.values());
        let after = later.values();
        let reported: std::collections::BTreeSet<String> =
            report.named(&later).iter().map(|c| c.var.to_string()).collect();
        let old: std::collections::BTreeMap<String, Slot> =
            before.iter().map(|(r, v)| (r.to_string(), v.clone())).collect();
        let new: std::collections::BTreeMap<String, Slot> =
            after.iter().map(|(r, v)| (r.to_string(), v.clone())).collect();
        for name in old.keys().chain(new.keys()) {
            if old.get(name) != new.get(name) {
                prop_assert!(reported.contains(name), "{name} changed but is not reported");
            }
        }
        for d in &report.changed {
            if let (Some(o), Some(r)) = (d.old_value(), later.name(d.var)) {
                prop_assert_eq!(Some(&o), old.get(&r.to_string()), "{}", r);
            }
        }
        prop_assert!(later.settle().is_empty(), "settling twice reports nothing");
    }
}

/// Two batches for a copy's overlay: one that removes every modifier and then fails (all of it
/// undone: base modifiers put back), and one that replaces the first modifier by another under
/// the same id.
fn overlay_batches(sheet: &Sheet) -> [Vec<Operation>; 3] {
    // (Not the aggregates' own modifiers, `…@item0`: they go with their items.)
    let ids: Vec<String> = sorted_ids(sheet).into_iter().filter(|id| !id.contains('@')).collect();
    let mut fails: Vec<Operation> = ids.iter().cloned().map(Operation::RemoveModifier).collect();
    // Every item instance removed, and one added again under a removed key (in a freed slot),
    // before the batch fails: all of it undone, the base's instances live again.
    let items: Vec<String> =
        (0..3).map(|i| format!("item{i}")).filter(|k| sheet.value(&format!("{k}.Weight")).is_ok()).collect();
    fails.extend(items.iter().map(|k| Operation::RemoveInstance(k.clone())));
    fails.extend(items.first().map(|k| Operation::AddInstance {
        key: k.clone(),
        scope: "PC.ITEM".into(),
        parent: None,
    }));
    fails.push(Operation::RemoveModifier("no such modifier".into()));
    let replaces = ids.first().map_or_else(Vec::new, |id| {
        vec![
            Operation::RemoveModifier(id.clone()),
            Operation::AddModifier(ModifierSpec::new(id, "G0", ModKind::Add, "G1 + 1", "s")),
        ]
    });
    // An item added in the first free slot (after the failed batch's undoing).
    let readd: Vec<Operation> = (0..3)
        .map(|i| format!("item{i}"))
        .find(|k| sheet.value(&format!("{k}.Weight")).is_err())
        .map(|key| Operation::AddInstance { key, scope: "PC.ITEM".into(), parent: None })
        .into_iter()
        .collect();
    [fails, replaces, readd]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    /// Sheets copied from one built sheet share its shape (the compiled structure) and hold
    /// only their own values. Changes to one copy — new values, new or removed modifiers and
    /// instances — never show in another copy or in the original: each copy ends exactly as a
    /// sheet built alone from the original's steps and then its own, values and traces. A copy
    /// whose changes all failed still shares the original's shape (a rejected change copies
    /// nothing).
    #[test]
    fn sheets_sharing_one_compiled_shape_never_see_each_other(
        base_steps in prop::collection::vec(arb_step(), 0..20),
        own in prop::collection::vec(prop::collection::vec(arb_step(), 0..12), 3),
    ) {
        let rules = prop_rules();
        let base_steps: Vec<(usize, Step)> = base_steps.into_iter().enumerate().collect();
        let mut base = built_alone(rules.clone(), &base_steps);
        // Made the source of copies as a ruleset's starting sheet is: its modifiers become the
        // base every copy shares, each copy's changes an overlay beside it.
        base.prepare_to_share();
        // The copies share the base's native code too, and their own changes must not reach it.
        base.compile_native(0);
        let (base_values, base_traces): (Vec<_>, Vec<_>) = base
            .values()
            .into_iter()
            .map(|(r, v)| {
                let trace = base.trace(&r.to_string()).unwrap();
                ((r, v), trace)
            })
            .unzip();
        let mut copies: Vec<Sheet> = own.iter().map(|_| base.clone()).collect();
        for c in &copies {
            prop_assert!(c.shares_structure_with(&base));
        }
        let own: Vec<Vec<(usize, Step)>> = own
            .into_iter()
            .map(|steps| steps.into_iter().enumerate().map(|(n, s)| (n + 1_000, s)).collect())
            .collect();
        let mut changed = vec![false; copies.len()];
        for i in 0..own.iter().map(Vec::len).max().unwrap_or(0) {
            for (k, (copy, steps)) in copies.iter_mut().zip(&own).enumerate() {
                let Some((n, step)) = steps.get(i) else { continue };
                let ids = sorted_ids(copy);
                if let Some(op) = step_operation(*n, step.clone(), &ids) {
                    changed[k] |= copy.apply(std::slice::from_ref(&op)).is_ok();
                }
            }
        }
        // Two batches over each copy, the same over the sheet built alone below.
        for (k, copy) in copies.iter_mut().enumerate() {
            let [fails, replaces, readd] = overlay_batches(copy);
            prop_assert!(copy.apply(&fails).is_err());
            // (Undoing removals leaves the copy the shape of its own it took for them.)
            changed[k] |= fails.len() > 1;
            let replaced = copy.apply(&replaces).is_ok();
            changed[k] |= replaced && !replaces.is_empty();
            changed[k] |= !readd.is_empty() && copy.apply(&readd).is_ok();
        }
        prop_assert_eq!(base.values(), base_values.clone());
        for ((r, _), trace) in base_values.iter().zip(&base_traces) {
            prop_assert_eq!(&base.trace(&r.to_string()).unwrap(), trace);
        }
        for ((copy, steps), changed) in copies.iter().zip(&own).zip(changed) {
            let all: Vec<(usize, Step)> = base_steps.iter().chain(steps).cloned().collect();
            let mut alone = built_alone(rules.clone(), &all);
            let [fails, replaces, readd] = overlay_batches(&alone);
            prop_assert!(alone.apply(&fails).is_err());
            let _ = alone.apply(&replaces);
            let _ = alone.apply(&readd);
            prop_assert_eq!(copy.values(), alone.values());
            // A full solve from forgotten values, through the shared native code where it
            // still applies.
            let mut solved = copy.clone();
            solved.forget_values();
            solved.solve_all();
            prop_assert_eq!(solved.values(), alone.values());
            for (r, _) in copy.values() {
                let r = r.to_string();
                prop_assert_eq!(copy.trace(&r).unwrap(), alone.trace(&r).unwrap());
            }
            if !changed {
                prop_assert!(copy.shares_structure_with(&base), "a copy that changed nothing owns a shape");
            } else {
                prop_assert!(!copy.shares_structure_with(&base));
            }
        }
    }
}

// ---- property: native full solves equal interpreted ones ----

/// A report's changes, named, in a fixed order (native code and the buckets may order the
/// variables of one level differently).
fn sorted_changes(sheet: &Sheet, report: &Report) -> Vec<String> {
    let mut all = changes(sheet, report);
    all.sort();
    all
}

/// A step of the generator above, with constants that also overflow `i64` when multiplied or
/// added, and every formula shape (floor division by negative and odd constants too).
fn arb_wide_step() -> impl Strategy<Value = Step> {
    let constant = prop_oneof![
        4 => -5i64..6,
        1 => prop::sample::select(vec![1i64 << 40, -(1 << 40), 3_000_000_000, i64::MAX / 2, i64::MIN / 2, i64::MAX]),
    ];
    // Mostly what native code compiles (whole formulas, no DIVIDE), so that most variables are
    // computed natively; the rest call back.
    let kind = prop_oneof![9 => 0usize..6, 1 => Just(6usize)];
    let shape = prop_oneof![8 => prop::sample::select(vec![0usize, 1, 2, 7]), 1 => 0usize..8];
    prop_oneof![
        6 => (0usize..8, kind, shape, prop::collection::vec(0usize..8, 0..3), constant, 0u32..3, prop::option::of(0usize..3))
            .prop_map(|(target, kind, shape, reads, constant, priority, local)| Step::Add { target, kind, shape, reads, constant, priority, local }),
        2 => (0usize..64).prop_map(Step::Remove),
        1 => (0usize..3).prop_map(Step::AddItem),
        1 => (0usize..3).prop_map(Step::RemoveItem),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    /// Native code is compiled from a random point of a random sheet's life on; after every
    /// change (which hands changed variables back to the interpreter, or drops the code when
    /// variables come and go), a full solve from forgotten values — native where the code
    /// still applies — equals the interpreter's, values and errors, through overflow, exact
    /// fractions and floor division.
    #[test]
    fn native_full_solves_equal_interpreted(
        steps in prop::collection::vec(arb_wide_step(), 1..40),
        compile_at in 0usize..20,
    ) {
        let mut sheet = Sheet::new(prop_rules());
        for (n, step) in steps.into_iter().enumerate() {
            // Compiled again every third step when a change dropped the code, so that changes
            // both hand variables back (kept code) and drop it.
            if n >= compile_at && (n - compile_at) % 3 == 0 {
                prop_assert!(sheet.compile_native(0), "Cranelift supports this host");
            }
            let ids = sorted_ids(&sheet);
            if let Some(op) = step_operation(n, step, &ids) {
                // The change recomputed by native code (a sweep, in tests whenever the code
                // covers what is queued) and by the interpreter: the same changes.
                let mut plain = sheet.clone();
                plain.drop_native();
                let native = sheet.apply(std::slice::from_ref(&op)).map(|r| sorted_changes(&sheet, &r));
                let interpreted = plain.apply(std::slice::from_ref(&op)).map(|r| sorted_changes(&plain, &r));
                prop_assert_eq!(native.is_ok(), interpreted.is_ok());
                if let (Ok(native), Ok(interpreted)) = (native, interpreted) {
                    prop_assert_eq!(native, interpreted);
                }
            }
            let interpreted = sheet.replanned();
            prop_assert!(interpreted.native_coverage().is_none());
            prop_assert_eq!(sheet.values(), interpreted.values());
            let mut native = sheet.clone();
            native.forget_values();
            native.solve_all();
            prop_assert_eq!(native.values(), interpreted.values());
        }
    }
}

/// On a sheet whose entries all compile, the native code computes every variable itself, and
/// a full solve from forgotten values restores them; a changed modifier hands just its
/// variable back to the interpreter, and a new variable drops the code.
#[test]
fn native_code_computes_what_it_compiled() {
    let mut sheet = chain("floor(B / -3) + A");
    let add = spec_s;
    assert!(sheet.compile_native(0));
    // D's formula is not whole (1.5): it calls back; the rest is native.
    assert_eq!(sheet.native_coverage(), Some((4, 3)));
    let before = sheet.values();
    sheet.forget_values();
    assert_ne!(sheet.values(), before);
    sheet.solve_all();
    assert_eq!(sheet.values(), before);
    assert_eq!((val(&sheet, "B"), val(&sheet, "C"), val(&sheet, "D")), ("7".into(), "0".into(), "0".into()));
    // A changed modifier: the native code no longer computes A, the interpreter does.
    sheet.add_modifier(&add("a2", "A", ModKind::Multiply, "4")).unwrap();
    let after = sheet.values();
    sheet.forget_values();
    sheet.solve_all();
    assert_eq!(sheet.values(), after);
    assert_eq!(val(&sheet, "A"), "12");
    assert!(sheet.native_coverage().is_some());
    // Overflow in native code: the variable goes the exact way, which reports it.
    sheet.add_modifier(&add("big", "B", ModKind::Multiply, "9223372036854775807")).unwrap();
    let after = sheet.values();
    sheet.forget_values();
    sheet.solve_all();
    assert_eq!(sheet.values(), after);
    // A value that stops being whole: its dependents' code reads the marker and hands them to
    // the interpreter, in a recomputation and in a full solve.
    let mut frac = Sheet::new(globals(&["A", "B", "C"]));
    frac.add_modifier(&add("a", "A", ModKind::Set, "3")).unwrap();
    frac.add_modifier(&add("b", "B", ModKind::Add, "A + 1")).unwrap();
    frac.add_modifier(&add("c", "C", ModKind::Add, "B * 2")).unwrap();
    assert!(frac.compile_native(0));
    assert_eq!(frac.native_coverage(), Some((3, 3)));
    frac.add_modifier(&add("half", "A", ModKind::Add, "0.5")).unwrap();
    assert_eq!((val(&frac, "A"), val(&frac, "B"), val(&frac, "C")), ("3.5".into(), "4.5".into(), "9".into()));
    frac.forget_values();
    frac.solve_all();
    assert_eq!((val(&frac, "B"), val(&frac, "C")), ("4.5".into(), "9".into()));
    frac.remove_modifier("half").unwrap();
    assert_eq!((val(&frac, "B"), val(&frac, "C")), ("4".into(), "8".into()));
    // A new variable (an instance) may change the order: the code is dropped.
    let mut rules = RulesBuilder::new("PC");
    rules.add_scope("PC.ITEM", "PC").unwrap();
    rules.declare("A", "PC", Format::Number, false).unwrap();
    rules.declare("W", "PC.ITEM", Format::Number, false).unwrap();
    let mut items = Sheet::new(Arc::new(rules.build()));
    items.add_modifier(&add("a", "A", ModKind::Set, "3")).unwrap();
    assert!(items.compile_native(0));
    items.add_instance("sword", "PC.ITEM", None).unwrap();
    assert_eq!(items.native_coverage(), None);
}

/// [`Report::for_each_named`] gives what [`Report::named`] gives, in the same order.
fn named_parts_agree(report: &Report, sheet: &Sheet) {
    let mut parts = Vec::new();
    report.for_each_named(sheet, |instance, name, format, old, new| {
        let var = VarRef { instance: instance.map(Arc::from), name: Arc::from(name) };
        parts.push((var.to_string(), format.clone(), old, new));
    });
    let named: Vec<_> =
        report.named(sheet).into_iter().map(|c| (c.var.to_string(), c.format, c.old, c.new)).collect();
    assert!(!named.is_empty());
    assert_eq!(parts, named);
}

/// The template a generated modifier operation stands for, added to `catalog` (`None`: the
/// catalog rejects it), and the step linking it: the same modifier, checked once.
fn template_step(catalog: &mut crate::Catalog, op: &Operation) -> Option<crate::Step> {
    let spec = match op {
        Operation::AddModifier(spec) => spec,
        // An instance with its scope resolved, as a ruleset's objects add theirs.
        Operation::AddInstance { key, scope, parent } => {
            return Some(crate::Step::Instance {
                key: Arc::from(key.as_str()),
                scope: catalog.rules().scope(scope).ok()?,
                parent: parent.as_deref().map(Arc::from),
            });
        }
        other => return Some(crate::Step::Op(Box::new(other.clone()))),
    };
    let rules = catalog.rules().clone();
    let scope = match spec.on.as_deref() {
        Some(_) => rules.scope("PC.ITEM").expect("the item scope"),
        None => rules.global(),
    };
    let Target::Name(name) = &spec.var else { return None };
    let t = catalog
        .add(
            &spec.id,
            crate::TemplateSpec {
                var: rules.resolve(scope, name)?,
                kind: spec.kind,
                value: spec.value.clone(),
                priority: spec.priority,
                source: spec.source.clone(),
                condition: spec.condition.clone(),
                scope,
            },
        )
        .ok()?;
    Some(crate::Step::Template { id: spec.id.clone(), template: t, on: spec.on.clone() })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    /// A ruleset's modifiers compiled once into a catalog and linked by index behave as the
    /// same modifiers given whole: random batches of the same steps, one sheet linking
    /// specs and one linking templates (with room in the catalog for templates no sheet
    /// links), succeed or fail alike, at the same operation, and agree on every value,
    /// every trace and every modifier id after each batch; so does a copy of each, changed
    /// further, and the catalog's sheet solved from scratch and laid out again.
    #[test]
    fn templates_link_as_their_specs(
        steps in prop::collection::vec(arb_step(), 1..40),
        sizes in prop::collection::vec(1usize..5, 40),
    ) {
        let rules = prop_rules();
        let mut catalog = crate::Catalog::new(rules.clone());
        let mut plain = Sheet::new(rules.clone());
        let mut batches = Vec::new();
        let mut steps = steps.into_iter().enumerate().peekable();
        let mut sizes = sizes.into_iter();
        // The batches first: the catalog is complete (and shared) before any sheet uses it.
        while steps.peek().is_some() {
            let ids = sorted_ids(&plain);
            let size = sizes.next().unwrap_or(1);
            let ops: Vec<Operation> =
                steps.by_ref().take(size).filter_map(|(n, step)| step_operation(n, step, &ids)).collect();
            let linked: Option<Vec<crate::Step>> = ops.iter().map(|op| template_step(&mut catalog, op)).collect();
            let _ = plain.apply(&ops);
            batches.push((ops, linked));
        }
        let catalog = Arc::new(catalog);
        let mut plain = Sheet::new(rules);
        let mut linked = Sheet::with_catalog(catalog.clone());
        prop_assert!(Arc::ptr_eq(linked.catalog().unwrap(), &catalog));
        for (ops, steps) in &batches {
            let a = plain.apply(ops);
            match steps {
                Some(steps) => {
                    let b = linked.apply_steps(steps);
                    prop_assert_eq!(a.as_ref().err().map(|e| (e.index, e.error.code)), b.as_ref().err().map(|e| (e.index, e.error.code)));
                }
                // The catalog refused a template: the sheet refuses the spec too.
                None => prop_assert!(a.is_err(), "the catalog refused a modifier the sheet took"),
            }
            prop_assert_eq!(plain.values(), linked.values());
            prop_assert_eq!(sorted_ids(&plain), sorted_ids(&linked));
            prop_assert_eq!(all_traces(&plain), all_traces(&linked));
        }
        let mut scratch = linked.clone();
        scratch.solve_all();
        prop_assert_eq!(scratch.values(), linked.values());
        prop_assert_eq!(linked.replanned().values(), linked.values());
        // Copies link further templates on their own shapes; the original is untouched.
        let before = linked.values();
        let (mut copy_a, mut copy_b) = (plain.clone(), linked.clone());
        for (ops, steps) in batches.iter().rev().take(3) {
            if let Some(steps) = steps {
                let a = copy_a.apply(ops);
                let b = copy_b.apply_steps(steps);
                prop_assert_eq!(a.is_ok(), b.is_ok());
            }
        }
        prop_assert_eq!(copy_a.values(), copy_b.values());
        prop_assert_eq!(all_traces(&copy_a), all_traces(&copy_b));
        prop_assert_eq!(linked.values(), before);
    }
}

#[test]
fn templates_are_checked_once_and_linked_by_index() {
    let rules = prop_rules();
    let mut catalog = crate::Catalog::new(rules.clone());
    let g0 = rules.resolve(rules.global(), "G0").unwrap();
    let weight = rules.resolve(rules.scope("PC.ITEM").unwrap(), "Weight").unwrap();
    let spec = |var, value: &str| crate::TemplateSpec {
        var,
        kind: ModKind::Add,
        value: Instruction::from(value),
        priority: 0,
        source: Arc::from("test"),
        condition: None,
        scope: rules.global(),
    };
    // Checked when added: a formula that is not a NUMBER is refused there, with the solver's code.
    let bad = catalog.add("bad", spec(g0, "1 ==")).unwrap_err();
    assert_eq!(bad.code, codes::FORMULA, "{bad}");
    let add2 = catalog.add("add2", spec(g0, "2")).unwrap();
    let add_weight = catalog.add("w", spec(weight, "3")).unwrap();
    let catalog = Arc::new(catalog);
    let mut sheet = Sheet::with_catalog(catalog);
    let link = |id: &str, t, on: Option<&str>| crate::Step::Template {
        id: Arc::from(id),
        template: t,
        on: on.map(Arc::from),
    };
    sheet.apply_steps(&[link("a", add2, None), link("b", add2, None)]).unwrap();
    assert_eq!(val(&sheet, "G0"), "4");
    let t = sheet.trace("G0").unwrap();
    assert_eq!((&*t.steps[0].source, &*t.steps[0].instruction), ("test", "2"));
    // Linking checks what depends on the sheet: the id, the instance, the variable's place.
    let e = sheet.apply_steps(&[link("a", add2, None)]).unwrap_err();
    assert_eq!(e.error.code, codes::DUPLICATE_MODIFIER);
    let e = sheet.apply_steps(&[link("c", add_weight, None)]).unwrap_err();
    assert_eq!(e.error.code, codes::UNKNOWN_VARIABLE, "{}", e.error);
    let e = sheet.apply_steps(&[link("c", crate::TemplateId(99), None)]).unwrap_err();
    assert_eq!(e.error.code, codes::UNKNOWN_TEMPLATE);
    sheet
        .apply_steps(&[
            crate::Step::Instance {
                key: Arc::from("item0"),
                scope: rules.scope("PC.ITEM").unwrap(),
                parent: None,
            },
            link("c", add_weight, Some("item0")),
        ])
        .unwrap();
    assert_eq!(val(&sheet, "item0.Weight"), "3");
    // Removed by id or source like any modifier.
    sheet.remove_source("test").unwrap();
    assert_eq!((val(&sheet, "G0"), val(&sheet, "item0.Weight")), ("0".to_owned(), "0".to_owned()));
    // A sheet made without a catalog has no templates.
    let mut bare = Sheet::new(rules);
    let e = bare.apply_steps(&[link("a", add2, None)]).unwrap_err();
    assert_eq!(e.error.code, codes::UNKNOWN_TEMPLATE);
}

/// A template's reads are found once, in the catalog (the value's variables first, then the
/// condition's others, the condition's slots as positions among them): linked, such modifiers
/// read, depend and trace exactly as the same modifiers given whole — a condition reading what
/// the value reads, one reading a variable of its own, one reading both in another order.
#[test]
fn templates_with_conditions_read_as_their_specs() {
    let rules = prop_rules();
    let mut catalog = crate::Catalog::new(rules.clone());
    let g = |name: &str| rules.resolve(rules.global(), name).unwrap();
    let mods = [
        ("same", "G0", "G1 * 2", Some("G1 > 1")),
        ("own", "G0", "G2 + 1", Some("G3 == 0")),
        ("both", "G4", "G1 + G2", Some("G3 + G2 + G1 > 5")),
        ("none", "G4", "G2", None),
    ];
    let mut steps = Vec::new();
    let mut ops = Vec::new();
    for (id, var, value, condition) in mods {
        let t = catalog
            .add(
                id,
                crate::TemplateSpec {
                    var: g(var),
                    kind: ModKind::Add,
                    value: Instruction::from(value),
                    priority: 0,
                    source: Arc::from("test"),
                    condition: condition.map(Instruction::from),
                    scope: rules.global(),
                },
            )
            .unwrap();
        steps.push(crate::Step::Template { id: Arc::from(id), template: t, on: None });
        let mut spec = ModifierSpec::new(id, var, ModKind::Add, value, "test");
        spec.condition = condition.map(Instruction::from);
        ops.push(Operation::AddModifier(spec));
    }
    let mut linked = Sheet::with_catalog(Arc::new(catalog));
    let mut plain = Sheet::new(rules.clone());
    linked.apply_steps(&steps).unwrap();
    plain.apply(&ops).unwrap();
    let set = |id: &str, var: &str, value: &str| {
        Operation::AddModifier(ModifierSpec::new(id, var, ModKind::Set, value, "input"))
    };
    // Each input moved in turn: every condition flips at least once.
    let rounds = [
        vec![set("s1", "G1", "2")],
        vec![set("s3", "G3", "1")],
        vec![set("s2", "G2", "4")],
        vec![Operation::RemoveModifier("s3".into())],
        vec![Operation::RemoveModifier("s1".into())],
    ];
    let mut seen = Vec::new();
    for ops in rounds {
        let a = plain.apply(&ops).unwrap();
        let b = linked.apply(&ops).unwrap();
        assert_eq!(a.changed.len(), b.changed.len());
        assert_eq!(plain.values(), linked.values());
        assert_eq!(all_traces(&plain), all_traces(&linked));
        seen.push((val(&linked, "G0"), val(&linked, "G4")));
    }
    // The values themselves, worked by hand: G0 = [G1 > 1] 2*G1 + [G3 == 0] (G2 + 1),
    // G4 = [G1 + G2 + G3 > 5] (G1 + G2) + G2.
    let expected = [("5", "0"), ("4", "0"), ("4", "10"), ("9", "10"), ("5", "4")];
    let seen: Vec<(&str, &str)> = seen.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
    assert_eq!(seen, expected);
}

/// `select(SCOPE, WHERE)`: the instances of a scope whose formula is true, read in each one's
/// scope, by key; membership follows instances added and removed and the values they read.
#[test]
fn select_lists_the_instances_that_match() {
    let mut sheet = Sheet::new(equipment_rules());
    for (key, plus) in [("sword", "2"), ("axe", "0"), ("mace", "1")] {
        sheet.add_instance(key, "PC.EQUIPMENT", None).unwrap();
        let spec = ModifierSpec::new(&format!("p-{key}"), "MyPlusValue", ModKind::Set, plus, "t").on(key);
        sheet.add_modifier(&spec).unwrap();
    }
    let keys = |s: &Sheet, w: &str| -> Vec<String> {
        s.select("PC.EQUIPMENT", w).unwrap().iter().map(|k| k.to_string()).collect()
    };
    assert_eq!(keys(&sheet, "MyPlusValue > 0"), ["mace", "sword"]);
    assert_eq!(keys(&sheet, "MyPlusValue > 5"), Vec::<String>::new());
    // A global read from each instance's scope, and a change to what the formula reads.
    sheet.add_modifier(&ModifierSpec::new("ac", "AC", ModKind::Set, "1", "t")).unwrap();
    assert_eq!(keys(&sheet, "MyPlusValue >= AC"), ["mace", "sword"]);
    sheet.remove_instance("sword").unwrap();
    assert_eq!(keys(&sheet, "MyPlusValue >= AC"), ["mace"]);
    // Errors: an unknown scope, a formula that does not check, one with no value for an
    // instance (named).
    assert_eq!(sheet.select("PC.NOPE", "1 == 1").unwrap_err().code, codes::UNKNOWN_SCOPE);
    assert_eq!(sheet.select("PC.EQUIPMENT", "MyPlusValue + 1").unwrap_err().code, codes::FORMULA);
    let e = sheet.select("PC.EQUIPMENT", "1 / MyPlusValue > 0").unwrap_err();
    assert_eq!(e.code, codes::FORMULA);
    assert!(e.message.contains("no value for instance `axe`"), "{}", e.message);
}

/// Aggregates over a scope's instances, table-driven: what each gives as workers join, change
/// and leave; only the aggregates a change reaches are evaluated; nested aggregates; and the
/// errors of aggregates written wrong.
#[test]
// long: one story told in order, each step on the sheet the one before left
fn aggregates_follow_their_members() {
    let mut b = RulesBuilder::new("PC");
    b.add_scope("PC.WORKER", "PC").unwrap();
    b.add_scope("PC.PET", "PC").unwrap();
    b.declare("Wage", "PC.WORKER", Format::Number, false).unwrap();
    b.declare("Busy", "PC.WORKER", Format::Number, false).unwrap();
    b.declare("Bite", "PC.PET", Format::Number, false).unwrap();
    b.declare("Pay", "PC", Format::Number, false).unwrap();
    let aggregates = [
        "count(PC.WORKER)",
        "count(pc.worker, Busy == 0)",
        "sum(PC.WORKER, Wage, Busy == 1)",
        "min(PC.WORKER, Wage)",
        "max(PC.WORKER, Wage * 2)",
        // Nested: the pets' bites against the number of workers.
        "sum(PC.PET, Bite * count(PC.WORKER))",
    ];
    for a in aggregates {
        b.declare_aggregates(&format!("1 + {a}")).unwrap();
    }
    // Wrong arguments, the global scope: rejected when declared.
    for (bad, why) in [
        ("count(PC.WORKER, Busy == 0, 1)", "write count(SCOPE) or count(SCOPE, WHERE)"),
        ("sum(PC.WORKER)", "write sum(SCOPE, EXPR)"),
        ("count(PC)", "the global scope has just one"),
    ] {
        let e = b.declare_aggregates(bad).unwrap_err();
        assert_eq!(e.code, codes::BAD_AGGREGATE);
        assert!(e.message.contains(why), "{bad}: {}", e.message);
    }
    // `max(1, 2)` and `count` of something that is not a scope are ordinary calls.
    b.declare_aggregates("max(1, 2) + Pay").unwrap();
    let rules = Arc::new(b.build());
    assert!(rules.aggregate_errors().is_empty());
    assert_eq!(rules.aggregates().len(), aggregates.len(), "count(PC.WORKER) is declared once, nested too");
    let mut sheet = Sheet::new(rules.clone());
    sheet.record_evaluations(true);
    let pay = ModifierSpec::new("pay", "Pay", ModKind::Set, "sum(PC.WORKER, Wage, Busy == 1) + 100", "t");
    sheet.add_modifier(&pay).unwrap();
    let worker = |key: &str, wage: &str, busy: &str| {
        vec![
            Operation::AddInstance { key: key.into(), scope: "PC.WORKER".into(), parent: None },
            Operation::AddModifier(
                ModifierSpec::new(&format!("w-{key}"), "Wage", ModKind::Set, wage, "t").on(key),
            ),
            Operation::AddModifier(
                ModifierSpec::new(&format!("b-{key}"), "Busy", ModKind::Set, busy, "t").on(key),
            ),
        ]
    };
    let row = |s: &Sheet| -> Vec<String> {
        ["count(PC.WORKER)", "count(PC.WORKER, Busy == 0)", "sum(PC.WORKER, Wage, Busy == 1)"]
            .into_iter()
            .chain([
                "min(PC.WORKER, Wage)",
                "max(PC.WORKER, Wage * 2)",
                "sum(PC.PET, Bite * count(PC.WORKER))",
                "Pay",
            ])
            .map(|r| val(s, r))
            .collect()
    };
    let empty = "error: no instance counts towards it";
    assert_eq!(row(&sheet), ["0", "0", "0", empty, empty, "0", "100"]);
    sheet.apply(&worker("ann", "3", "1")).unwrap();
    assert_eq!(row(&sheet), ["1", "0", "3", "3", "6", "0", "103"]);
    sheet.apply(&worker("bob", "5", "0")).unwrap();
    assert_eq!(row(&sheet), ["2", "1", "3", "3", "10", "0", "103"]);
    sheet.add_instance("rex", "PC.PET", None).unwrap();
    sheet.add_modifier(&ModifierSpec::new("bite", "Bite", ModKind::Set, "4", "t").on("rex")).unwrap();
    assert_eq!(row(&sheet)[5], "8");
    // Bob gets to work: the aggregates whose WHERE reads Busy move, and only what they reach
    // is evaluated (not `max`, whose members did not change, nor the pets' sum).
    sheet.remove_modifier("b-bob").unwrap();
    let r =
        sheet.add_modifier(&ModifierSpec::new("b-bob2", "Busy", ModKind::Set, "1", "t").on("bob")).unwrap();
    let evaluated = names(&r.evaluated);
    assert_eq!(row(&sheet), ["2", "0", "8", "3", "10", "8", "108"]);
    assert!(evaluated.contains(&"Pay".to_owned()), "{evaluated:?}");
    assert!(!evaluated.iter().any(|v| v.starts_with("max(") || v.starts_with("sum(PC.PET")), "{evaluated:?}");
    // Ann leaves: every aggregate over the workers moves, the nested one with them.
    sheet.remove_instance("ann").unwrap();
    assert_eq!(row(&sheet), ["1", "0", "5", "5", "10", "4", "105"]);
    // An aggregate's own modifiers go with their instance, not otherwise.
    let e = sheet.remove_modifier("count(PC.WORKER)@bob").unwrap_err();
    assert_eq!(e.code, codes::LOCKED);
    // In a run of removals, the refused one is named by its index and nothing changes.
    let before = row(&sheet);
    let remove = |id: &str| Operation::RemoveModifier(id.into());
    let e = sheet.apply(&[remove("b-bob2"), remove("count(PC.WORKER)@bob"), remove("bite")]).unwrap_err();
    assert_eq!((e.index, e.error.code), (1, codes::LOCKED));
    let e = sheet.apply(&[remove("b-bob2"), remove("bite"), remove("nope")]).unwrap_err();
    assert_eq!((e.index, e.error.code), (2, codes::UNKNOWN_MODIFIER));
    assert_eq!(row(&sheet), before);
    // Then the run succeeds, as one removal at a time does (on copies: the rest goes on).
    let (mut run, mut one_by_one) = (sheet.clone(), sheet.clone());
    run.apply(&[remove("b-bob2"), remove("bite")]).unwrap();
    one_by_one.remove_modifier("b-bob2").unwrap();
    one_by_one.remove_modifier("bite").unwrap();
    assert_eq!(row(&run), row(&one_by_one));
    assert_ne!(row(&run), before);
    assert_eq!(sheet.remove_source("count(PC.WORKER)").unwrap_err().code, codes::LOCKED);
    // A user modifier on an aggregate is refused: its variable is locked.
    let e =
        sheet.add_modifier(&ModifierSpec::new("x", "count(PC.WORKER)", ModKind::Add, "1", "t")).unwrap_err();
    assert_eq!(e.code, codes::LOCKED);
    // An aggregate a formula writes later, that the rules did not set up: an error naming it.
    let late = ModifierSpec::new("late", "Pay", ModKind::Add, "count(PC.PET, Bite > 1)", "t");
    let e = sheet.add_modifier(&late).unwrap_err();
    assert_eq!(e.code, codes::FORMULA);
    assert!(
        e.message.contains("`count(PC.PET, Bite > 1)` is an aggregate this ruleset does not set up"),
        "{}",
        e.message
    );
    // The trace of an aggregate names each member's part, kept in the member (whose own trace
    // says how it came to be).
    let t = sheet.trace("sum(PC.WORKER, Wage, Busy == 1)").unwrap();
    let steps: Vec<(String, String, Vec<String>)> = t
        .steps
        .iter()
        .map(|s| {
            let reads = s.reads.iter().map(|(r, v)| format!("{r} = {}", num(v.as_ref().unwrap()))).collect();
            (s.modifier.to_string(), s.instruction.to_string(), reads)
        })
        .collect();
    let part = "part of sum(PC.WORKER, Wage, Busy == 1)";
    assert_eq!(
        steps,
        [(
            "sum(PC.WORKER, Wage, Busy == 1)@bob".to_owned(),
            part.to_owned(),
            vec![format!("bob.{part} = 5")]
        )]
    );
    let t = sheet.trace(&format!("bob.{part}")).unwrap();
    assert_eq!(&*t.steps[0].instruction, "if(Busy == 1, Wage, 0)");
    // From scratch, the same values.
    let mut scratch = sheet.clone();
    scratch.solve_all();
    assert_eq!(scratch.values(), sheet.values());
}

/// `@id.Var` reads instance `id`'s variable: no value (`solver.missing_instance`) while the
/// instance is not on the sheet, its value while it is, followed as it changes; and the
/// references written wrong are errors when declared.
#[test]
fn references_read_another_instance() {
    let mut b = RulesBuilder::new("PC");
    b.add_scope("PC.CREATURE", "PC").unwrap();
    b.add_scope("PC.ITEM", "PC").unwrap();
    b.declare("Speed", "PC.CREATURE", Format::Number, false).unwrap();
    b.declare("Name", "PC.CREATURE", Format::String, false).unwrap();
    b.declare("Name", "PC.ITEM", Format::Number, false).unwrap();
    b.declare("Chase", "PC", Format::Number, false).unwrap();
    b.declare_aggregates("@goblin.Speed + 5").unwrap();
    for (bad, why) in [
        ("@goblin.Nope", "no scope declares a variable `Nope`"),
        ("@goblin.Name", "`Name` is STRING in scope PC.CREATURE but NUMBER in scope PC.ITEM"),
        ("@goblin + 1", "write @id.Var"),
    ] {
        let e = b.declare_aggregates(bad).unwrap_err();
        assert_eq!(e.code, codes::BAD_REFERENCE, "{bad}");
        assert!(e.message.contains(why), "{bad}: {}", e.message);
    }
    let mut sheet = Sheet::new(Arc::new(b.build()));
    sheet.add_modifier(&ModifierSpec::new("chase", "Chase", ModKind::Set, "@goblin.Speed + 5", "t")).unwrap();
    let missing = "error: depends on `@goblin.Speed`, which has no value: no instance `goblin` on the sheet";
    assert_eq!(val(&sheet, "Chase"), missing);
    assert_eq!(sheet.value("@goblin.Speed").unwrap().unwrap_err().code, "solver.missing_instance");
    sheet.add_instance("goblin", "PC.CREATURE", None).unwrap();
    assert_eq!(val(&sheet, "Chase"), "5");
    let r = sheet
        .add_modifier(&ModifierSpec::new("fast", "Speed", ModKind::Set, "30", "t").on("goblin"))
        .unwrap();
    assert_eq!(val(&sheet, "Chase"), "35");
    assert_eq!(r.changed.len(), 3, "goblin.Speed, @goblin.Speed, Chase");
    // An instance of another scope under the key: read where the name resolves (here not).
    sheet.remove_instance("goblin").unwrap();
    assert_eq!(val(&sheet, "Chase"), missing);
    sheet.add_instance("goblin", "PC.ITEM", None).unwrap();
    assert_eq!(val(&sheet, "Chase"), missing);
    sheet.remove_instance("goblin").unwrap();
    sheet.add_instance("goblin", "PC.CREATURE", None).unwrap();
    assert_eq!(val(&sheet, "Chase"), "5");
    // The reference's modifier goes with the instance, not otherwise.
    assert_eq!(sheet.remove_source("@goblin.Speed").unwrap_err().code, codes::LOCKED);
    assert_eq!(sheet.remove_modifier("@goblin.Speed@goblin").unwrap_err().code, codes::LOCKED);
    // A reference the rules did not set up is an unknown variable in a formula added later.
    let e =
        sheet.add_modifier(&ModifierSpec::new("x", "Chase", ModKind::Add, "@orc.Speed", "t")).unwrap_err();
    assert_eq!(e.code, codes::FORMULA);
    assert!(e.message.contains("unknown variable `@orc.Speed`"), "{}", e.message);
    let mut scratch = sheet.clone();
    scratch.solve_all();
    assert_eq!(scratch.values(), sheet.values());
}

/// An instance added and removed in one batch around a guard leaves nothing behind: its
/// variables leave the graph (they once stayed, isolated, with their instance gone, and an
/// aggregate's part among them, touched by the removal, then failed the recomputation).
#[test]
fn an_instance_added_and_removed_around_a_guard_leaves_nothing() {
    let mut sheet = Sheet::new(prop_rules());
    sheet.record_evaluations(true);
    let (count, values) = (sheet.variable_count(), sheet.values());
    let ops = vec![
        Operation::AddInstance { key: "item0".into(), scope: "PC.ITEM".into(), parent: None },
        Operation::Require(crate::Guard::new("G0 >= 0", "g")),
        Operation::RemoveInstance("item0".into()),
    ];
    let report = sheet.apply(&ops).unwrap();
    assert!(report.removed.is_empty(), "{:?}", report.removed);
    assert_eq!((sheet.variable_count(), sheet.values()), (count, values));
}

/// Rules for reads through a holder: creatures with STR and Next (a creature's id), effects
/// whose `creature` holds a creature's id, and `creature.STR + 1`, `creature.Next` read.
fn pointer_rules() -> Arc<Rules> {
    let mut b = RulesBuilder::new("PC");
    b.add_scope("PC.CREATURE", "PC").unwrap();
    b.add_scope("PC.EFFECT", "PC").unwrap();
    b.add_scope("PC.ITEM", "PC").unwrap();
    b.declare("STR", "PC.CREATURE", Format::Number, false).unwrap();
    b.declare("STR", "PC.ITEM", Format::Number, false).unwrap();
    b.declare("Next", "PC.CREATURE", Format::String, false).unwrap();
    b.declare("Bonus", "PC.EFFECT", Format::Number, false).unwrap();
    b.declare("Ready", "PC.EFFECT", Format::Boolean, false).unwrap();
    b.declare("Hits", "PC", Format::Number, false).unwrap();
    let holder = b.declare("creature", "PC.EFFECT", Format::String, false).unwrap();
    b.set_holds(holder, "PC.CREATURE").unwrap();
    b.declare_aggregates("creature.STR + 1").unwrap();
    b.declare_aggregates("=if(Ready, creature.Next, \"goblin\")").unwrap();
    b.declare_aggregates("@effect1.Bonus").unwrap();
    Arc::new(b.build())
}

/// `creature.STR` reads STR of the instance whose id `creature` holds: no value while it names
/// none, followed as that instance's STR changes, and re-linked as the holder's value
/// changes — in the same batch, reported with it; the same values from scratch.
#[test]
fn a_read_through_a_holder_follows_the_instance_it_names() {
    let mut sheet = Sheet::new(pointer_rules());
    sheet.add_instance("effect1", "PC.EFFECT", None).unwrap();
    sheet
        .add_modifier(
            &ModifierSpec::new("bonus", "Bonus", ModKind::Set, "creature.STR + 1", "t").on("effect1"),
        )
        .unwrap();
    let missing = "error: depends on `effect1.creature.STR`, which has no value: `creature` holds no id of an instance on the sheet that has `STR`";
    assert_eq!(val(&sheet, "effect1.Bonus"), missing);
    assert_eq!(sheet.value("effect1.creature.STR").unwrap().unwrap_err().code, "solver.missing_instance");
    for (key, str) in [("goblin", "8"), ("orc", "16")] {
        sheet.add_instance(key, "PC.CREATURE", None).unwrap();
        sheet
            .add_modifier(&ModifierSpec::new(&format!("{key}STR"), "STR", ModKind::Set, str, "t").on(key))
            .unwrap();
    }
    // Naming an instance links the read in the same batch, and reports what changed.
    let r = sheet
        .add_modifier(&ModifierSpec::new("aim", "creature", ModKind::Set, "goblin", "t").on("effect1"))
        .unwrap();
    assert_eq!(val(&sheet, "effect1.Bonus"), "9");
    let mut changed: Vec<String> = r.named(&sheet).iter().map(|c| c.var.full_name()).collect();
    changed.sort();
    assert_eq!(
        changed,
        [
            "@effect1.Bonus",
            "effect1.Bonus",
            "effect1.creature",
            "effect1.creature.Next",
            "effect1.creature.STR"
        ]
    );
    // The graph has the edge: the goblin's STR recomputes the effect.
    let r =
        sheet.add_modifier(&ModifierSpec::new("bull", "STR", ModKind::Add, "4", "t").on("goblin")).unwrap();
    assert_eq!(val(&sheet, "effect1.Bonus"), "13");
    assert_eq!(r.changed.len(), 4, "goblin.STR, effect1.creature.STR, effect1.Bonus, @effect1.Bonus");
    // The trace names the instance read.
    let t = sheet.trace("effect1.creature.STR").unwrap();
    assert_eq!(&*t.steps[0].modifier, "creature.STR@effect1:goblin");
    // Another value, another instance; the orc's changes now count, the goblin's not.
    sheet.remove_modifier("aim").unwrap();
    sheet
        .add_modifier(&ModifierSpec::new("aim", "creature", ModKind::Set, "orc", "t").on("effect1"))
        .unwrap();
    assert_eq!(val(&sheet, "effect1.Bonus"), "17");
    let r =
        sheet.add_modifier(&ModifierSpec::new("weak", "STR", ModKind::Add, "-1", "t").on("goblin")).unwrap();
    assert_eq!(r.changed.len(), 1, "goblin.STR alone");
    // Removing the instance named leaves no value; adding it again reads it again.
    sheet.remove_instance("orc").unwrap();
    assert_eq!(val(&sheet, "effect1.Bonus"), missing);
    sheet.add_instance("orc", "PC.CREATURE", None).unwrap();
    assert_eq!(val(&sheet, "effect1.Bonus"), "1");
    // An instance of a scope the holder does not hold is not read.
    sheet.remove_instance("orc").unwrap();
    sheet.add_instance("orc", "PC.ITEM", None).unwrap();
    assert_eq!(val(&sheet, "effect1.Bonus"), missing);
    // The link is kept by the holder, never removed by hand.
    sheet.remove_instance("orc").unwrap();
    sheet.remove_modifier("aim").unwrap();
    sheet
        .add_modifier(&ModifierSpec::new("aim", "creature", ModKind::Set, "goblin", "t").on("effect1"))
        .unwrap();
    assert_eq!(sheet.remove_source("creature.STR").unwrap_err().code, codes::LOCKED);
    assert_eq!(sheet.remove_modifier("creature.STR@effect1:goblin").unwrap_err().code, codes::LOCKED);
    let mut scratch = sheet.clone();
    scratch.solve_all();
    assert_eq!(scratch.values(), sheet.values());
}

/// A link that would close a cycle fails its batch, with nothing changed; holders whose
/// values flip with what they read fail theirs (`solver.pointer_loop`); holders written wrong
/// are errors when declared.
#[test]
fn reads_through_holders_that_loop_fail_their_batch() {
    let mut sheet = Sheet::new(pointer_rules());
    sheet.add_instance("effect1", "PC.EFFECT", None).unwrap();
    sheet.add_instance("goblin", "PC.CREATURE", None).unwrap();
    sheet
        .add_modifier(
            &ModifierSpec::new("bonus", "Bonus", ModKind::Set, "creature.STR + 1", "t").on("effect1"),
        )
        .unwrap();
    sheet
        .add_modifier(&ModifierSpec::new("feed", "STR", ModKind::Set, "@effect1.Bonus", "t").on("goblin"))
        .unwrap();
    let values = sheet.values();
    let e = sheet
        .add_modifier(&ModifierSpec::new("aim", "creature", ModKind::Set, "goblin", "t").on("effect1"))
        .unwrap_err();
    assert_eq!(e.code, codes::CYCLE, "{}", e.message);
    assert_eq!(sheet.values(), values);
    assert!(sheet.value("effect1.creature").unwrap().unwrap().to_string().is_empty());
    // goblin.Next names the orc, orc.Next the goblin: once Ready, the holder reads its own
    // target's Next, and every link changes it again.
    let mut sheet = Sheet::new(pointer_rules());
    sheet.add_instance("effect1", "PC.EFFECT", None).unwrap();
    for (key, next) in [("goblin", "orc"), ("orc", "goblin")] {
        sheet.add_instance(key, "PC.CREATURE", None).unwrap();
        let spec = ModifierSpec::new(&format!("{key}Next"), "Next", ModKind::Set, next, "t");
        sheet.add_modifier(&spec.on(key)).unwrap();
    }
    let aim = "=if(Ready, creature.Next, \"goblin\")";
    sheet.add_modifier(&ModifierSpec::new("aim", "creature", ModKind::Set, aim, "t").on("effect1")).unwrap();
    assert_eq!(sheet.value("effect1.creature.Next").unwrap().unwrap().to_string(), "orc");
    let values = sheet.values();
    let e = sheet
        .add_modifier(&ModifierSpec::new("go", "Ready", ModKind::Set, "true", "t").on("effect1"))
        .unwrap_err();
    assert_eq!(e.code, codes::POINTER_LOOP, "{}", e.message);
    assert!(e.message.contains("creature.Next"), "{}", e.message);
    assert_eq!(sheet.values(), values);
    // Declared wrong.
    let mut b = RulesBuilder::new("PC");
    b.add_scope("PC.CREATURE", "PC").unwrap();
    b.declare("STR", "PC.CREATURE", Format::Number, false).unwrap();
    let n = b.declare("Count", "PC", Format::Number, false).unwrap();
    assert_eq!(b.set_holds(n, "PC.CREATURE").unwrap_err().code, codes::BAD_REFERENCE);
    let h = b.declare("target", "PC", Format::String, false).unwrap();
    assert_eq!(b.set_holds(h, "PC.NOPE").unwrap_err().code, codes::UNKNOWN_SCOPE);
    b.set_holds(h, "PC.CREATURE").unwrap();
    let e = b.declare_aggregates("target.DEX").unwrap_err();
    assert_eq!(e.code, codes::BAD_REFERENCE);
    assert!(
        e.message.contains("`target` holds instances of PC.CREATURE, which have no variable `DEX`"),
        "{}",
        e.message
    );
    // A name with a dot whose first part holds nothing is left to the formula's own check.
    b.declare_aggregates("other.STR").unwrap();
}

/// An effect added to a variable the native code computes, then taken off again (a lasting
/// modifier expiring): while it is on, the interpreter computes the variable; once it is off,
/// the code computes it again — and what it computes stays what the interpreter computes, as
/// its inputs change. An entry written anew since compiling, a constant taken off from the
/// middle of a list, or one that folded into an empty entry's start, does not go back.
#[test]
fn expired_effects_leave_the_code_computing_what_it_compiled() {
    let mut sheet = Sheet::new(globals(&["A", "B", "C", "E"]));
    let add = spec_s;
    sheet.add_modifier(&add("a", "A", ModKind::Set, "3")).unwrap();
    sheet.add_modifier(&add("b", "B", ModKind::Add, "A * 2 + 1")).unwrap();
    sheet.add_modifier(&add("c", "C", ModKind::Add, "B - A")).unwrap();
    assert!(sheet.compile_native(0));
    assert!(sheet.native_computes("B") && sheet.native_computes("C"));
    let check = |sheet: &Sheet| {
        let mut plain = sheet.clone();
        plain.drop_native();
        plain.forget_values();
        plain.solve_all();
        assert_eq!(sheet.values(), plain.values());
    };
    // One effect on, then off: B goes to the interpreter, then back to the code.
    sheet.add_modifier(&add("e1", "B", ModKind::Add, "10")).unwrap();
    assert!(!sheet.native_computes("B"));
    assert_eq!(val(&sheet, "B"), "17");
    sheet.remove_modifier("e1").unwrap();
    assert!(sheet.native_computes("B"), "back to the entry the code compiled");
    assert_eq!(val(&sheet, "B"), "7");
    // The code computes it right: A changes, B and C follow through the code.
    sheet.remove_modifier("a").unwrap();
    sheet.add_modifier(&add("a", "A", ModKind::Set, "5")).unwrap();
    assert_eq!((val(&sheet, "B"), val(&sheet, "C")), ("11".into(), "6".into()));
    check(&sheet);
    // Two effects, taken off last first: back to the code only when both are off.
    sheet.add_modifier(&add("e1", "C", ModKind::Add, "1")).unwrap();
    sheet.add_modifier(&add("e2", "C", ModKind::Add, "2")).unwrap();
    sheet.remove_modifier("e2").unwrap();
    assert!(!sheet.native_computes("C"));
    sheet.remove_modifier("e1").unwrap();
    assert!(sheet.native_computes("C"));
    check(&sheet);
    // A MULTIPLY applies before the ADDs (its inherent priority): not at the entry's end, so
    // the entry is written anew.
    sheet.add_modifier(&add("m", "B", ModKind::Multiply, "2")).unwrap();
    sheet.remove_modifier("m").unwrap();
    assert!(!sheet.native_computes("B"));
    assert_eq!(val(&sheet, "B"), "11");
    check(&sheet);
    // Taken off first first: the entry is written anew, and stays with the interpreter.
    sheet.add_modifier(&add("e1", "C", ModKind::Add, "1")).unwrap();
    sheet.add_modifier(&add("e2", "C", ModKind::Add, "2")).unwrap();
    sheet.remove_modifier("e1").unwrap();
    sheet.remove_modifier("e2").unwrap();
    assert!(!sheet.native_computes("C"));
    assert_eq!(val(&sheet, "C"), "6");
    check(&sheet);
    // A constant on a variable with no steps folds into its start: not the compiled entry.
    assert!(sheet.native_computes("E") || sheet.native_coverage().is_some());
    sheet.add_modifier(&add("e3", "E", ModKind::Add, "4")).unwrap();
    sheet.remove_modifier("e3").unwrap();
    assert_eq!(val(&sheet, "E"), "0");
    check(&sheet);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Effects come and go on a compiled sheet — constants added to variables' lists and taken
    /// off in any order, the base value changed between — and every change's values are what
    /// an interpreting twin computes from the same changes: whether the code computes a
    /// variable again after its effects went is a matter of speed, never of values.
    #[test]
    fn effects_coming_and_going_keep_native_values_exact(
        steps in prop::collection::vec((0usize..5, 0usize..4, -5i64..6), 1..60),
    ) {
        let names = ["A", "B", "C", "D"];
        let build = || {
            let mut s = Sheet::new(globals(&names));
            s.add_modifier(&spec_s("a", "A", ModKind::Set, "2")).unwrap();
            s.add_modifier(&spec_s("b", "B", ModKind::Add, "A * 2 + 1")).unwrap();
            s.add_modifier(&spec_s("c", "C", ModKind::Add, "B - A")).unwrap();
            s.add_modifier(&spec_s("d", "D", ModKind::Max, "C * 3")).unwrap();
            s
        };
        let (mut sheet, mut plain) = (build(), build());
        prop_assert!(sheet.compile_native(0));
        let mut on: Vec<String> = Vec::new();
        for (n, (what, var, k)) in steps.into_iter().enumerate() {
            let ops: Vec<Operation> = match what {
                0 | 1 => {
                    let kind = if what == 0 { ModKind::Add } else { ModKind::Max };
                    let id = format!("e{n}");
                    on.push(id.clone());
                    vec![Operation::AddModifier(spec_s(&id, names[var], kind, &k.to_string()))]
                }
                2 if !on.is_empty() => vec![Operation::RemoveModifier(on.pop().unwrap_or_default())],
                3 if !on.is_empty() => vec![Operation::RemoveModifier(on.remove(var % on.len()))],
                _ => vec![
                    Operation::RemoveModifier("a".into()),
                    Operation::AddModifier(spec_s("a", "A", ModKind::Set, &k.to_string())),
                ],
            };
            let native = sheet.apply(&ops).map(|r| sorted_changes(&sheet, &r));
            let interpreted = plain.apply(&ops).map(|r| sorted_changes(&plain, &r));
            prop_assert_eq!(native.is_ok(), interpreted.is_ok());
            if let (Ok(native), Ok(interpreted)) = (native, interpreted) {
                prop_assert_eq!(native, interpreted);
            }
            prop_assert_eq!(sheet.values(), plain.values());
        }
    }
}

/// Templates whose value formulas run as plan steps of their own (kept with the template,
/// their slots renumbered at each link): every kind of step that reads a variable, linked
/// where slot and node differ, computes what the same modifiers given whole compute — and
/// what the formulas say, worked by hand — as a sheet built in bulk, linked one at a time,
/// and changed afterwards.
#[test]
fn template_steps_read_the_variables_they_are_linked_to() {
    let rules = prop_rules();
    let mut catalog = crate::Catalog::new(rules.clone());
    let g = |name: &str| rules.resolve(rules.global(), name).unwrap();
    // Inputs G5 = 7, G6 = 3, G7 = 10; each formula reads them, not G0 (slot 0's node).
    let mods: [(&str, &str, ModKind, &str); 12] = [
        ("in5", "G5", ModKind::Set, "7"),
        ("in6", "G6", ModKind::Set, "3"),
        ("in7", "G7", ModKind::Set, "10"),
        ("load", "G1", ModKind::Add, "G7 * 2"),
        ("loadaddk", "G1", ModKind::Add, "G6 + 100"),
        ("floordiv", "G2", ModKind::Add, "floor(G7 / 3)"),
        ("mink", "G2", ModKind::Add, "min(G5, 4)"),
        ("maxk", "G2", ModKind::Add, "max(G6, 5)"),
        ("addvar", "G3", ModKind::Add, "G5 + G6"),
        ("subvar", "G3", ModKind::Add, "G7 - G5"),
        ("minmax", "G4", ModKind::Add, "min(G7, G5) + max(G6, G5)"),
        ("mulvar", "G4", ModKind::Add, "G5 * 2 * G6 - G7"),
    ];
    let mut steps = Vec::new();
    let mut ops = Vec::new();
    for (id, var, kind, value) in mods {
        let spec = crate::TemplateSpec {
            var: g(var),
            kind,
            value: Instruction::from(value),
            priority: 0,
            source: Arc::from("test"),
            condition: None,
            scope: rules.global(),
        };
        let t = catalog.add(id, spec).unwrap();
        steps.push(crate::Step::Template { id: Arc::from(id), template: t, on: None });
        ops.push(Operation::AddModifier(ModifierSpec::new(id, var, kind, value, "test")));
    }
    let catalog = Arc::new(catalog);
    let mut plain = Sheet::new(rules.clone());
    plain.apply(&ops).unwrap();
    let mut bulk = Sheet::with_catalog(catalog.clone());
    bulk.apply_steps(&steps).unwrap();
    let mut one_by_one = Sheet::with_catalog(catalog);
    for step in &steps {
        one_by_one.apply_steps(std::slice::from_ref(step)).unwrap();
    }
    // By hand: G1 = 20 + 103; G2 = 3 + 4 + 5; G3 = 10 + 3; G4 = 7 + 7 + (42 - 10).
    let expected = [("G1", "123"), ("G2", "12"), ("G3", "13"), ("G4", "46")];
    for sheet in [&plain, &bulk, &one_by_one] {
        let got: Vec<(&str, String)> = expected.iter().map(|(v, _)| (*v, val(sheet, v))).collect();
        let want: Vec<(&str, String)> = expected.iter().map(|(v, n)| (*v, n.to_string())).collect();
        assert_eq!(got, want);
    }
    // An input moved: every formula reading it follows, through the kept steps.
    let bump = [Operation::AddModifier(ModifierSpec::new("bump", "G5", ModKind::Add, "1", "test"))];
    for sheet in [&mut plain, &mut bulk, &mut one_by_one] {
        sheet.apply(&bump).unwrap();
    }
    assert_eq!(plain.values(), bulk.values());
    assert_eq!(plain.values(), one_by_one.values());
    assert_eq!(val(&bulk, "G4"), "54", "min(10, 8) + max(3, 8) + (48 - 10)");
    assert_eq!(all_traces(&plain), all_traces(&bulk));
}
