//! Event rules end to end: a rule book checked from TOML, games played by steps.

use data::{Character, SheetOp};
use events::{Code, Game, RuleBook, Step};
use std::sync::Arc;

/// The scopes, variables and objects every test here shares; each test adds its events and
/// rules.
const BASE: &str = r#"
[ruleset]
name = "test"

[scopes]
"PC.UNIT" = "PC"

[variables.PC]
Armor = "NUMBER"
Log = "NUMBER"

[variables."PC.UNIT"]
Power = "NUMBER"

[channels.PC]
Amount = "NUMBER"
Note = "STRING"

[stocks.PC]
Gold = { min = "0" }
HP = { min = "0", max = "20", bounds = "clamp" }

[stocks."PC.UNIT"]
Wounds = { min = "0" }

[clocks.PC]
Turn = {}

[kinds.UNIT]
scope = "PC.UNIT"

[kinds.ITEM]
scope = "PC"

[[object]]
kind = "UNIT"
key = "Archer"
modify = [{ var = "Power", set = "3" }]

[[object]]
kind = "ITEM"
key = "Ring"
modify = [{ var = "Armor", add = "1" }]

[[object]]
kind = "ITEM"
key = "Cloak"
modify = [{ var = "Armor", add = "2" }]
"#;

fn book(rules: &str) -> Arc<RuleBook> {
    let text = format!("{BASE}\n{rules}");
    let ruleset = data::load_str(&text, "test.toml").unwrap_or_else(|e| panic!("the ruleset loads: {e:?}"));
    Arc::new(RuleBook::compile(Arc::new(ruleset)).unwrap_or_else(|e| panic!("the rules load: {e:#?}")))
}

/// The load errors of `rules`, as `line:col code` (lines counted in `rules` alone).
fn errors(rules: &str) -> Vec<String> {
    let base_lines = BASE.lines().count() as u32 + 1;
    let text = format!("{BASE}\n{rules}");
    let ruleset = data::load_str(&text, "test.toml").unwrap_or_else(|e| panic!("the ruleset loads: {e:?}"));
    match RuleBook::compile(Arc::new(ruleset)) {
        Ok(_) => Vec::new(),
        Err(es) => es
            .iter()
            .map(|e| {
                let at = e.at.as_ref().expect("every rule error has a place");
                format!("{}:{} {}", at.line() - base_lines, at.col(), e.code)
            })
            .collect(),
    }
}

fn emit(event: &str, args: &[(&str, &str)]) -> Step {
    Step::Emit {
        event: event.to_owned(),
        args: args.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
    }
}

fn ops(ops: Vec<SheetOp>) -> Step {
    Step::Ops(ops)
}

fn set(channel: &str, value: i64) -> SheetOp {
    SheetOp::SetInput { channel: channel.to_owned(), on: None, value: formula::Value::Number(value.into()) }
}

fn add(kind: &str, key: &str, id: &str) -> SheetOp {
    SheetOp::AddObject { kind: kind.to_owned(), key: key.to_owned(), id: Some(id.to_owned()), parent: None }
}

fn value(game: &Game, var: &str) -> String {
    match game.character().sheet().value(var) {
        Ok(Ok(v)) => v.to_string(),
        other => format!("{other:?}"),
    }
}

/// A ruleset text with event `event` and one global rule of that name on it doing `actions`
/// (each a TOML inline table, one a line).
fn one_rule(event: &str, actions: &[&str]) -> String {
    let mut out =
        format!("\n[events]\n{event} = {{}}\n\n[[rule]]\nname = \"{event}\"\non = \"{event}\"\ndo = [\n");
    for a in actions {
        out.push_str(&format!("  {a},\n"));
    }
    out + "]\n"
}

fn fired(r: &events::StepReport) -> Vec<String> {
    r.fired
        .iter()
        .map(|f| match (&f.this, &f.error) {
            (_, Some(e)) => format!("{}!{}", f.rule, e.code),
            (Some(t), None) => format!("{}@{t}", f.rule),
            (None, None) => f.rule.to_string(),
        })
        .collect()
}

/// The example in `docs/examples/tavern/`, step by step: arguments into channels, an object's
/// rule with a use limit per turn, a guard, a choice that holds every other step, a lasting
/// object that expires, a roll.
#[test]
fn the_tavern_example_plays_as_documented() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/examples/tavern");
    let ruleset = Arc::new(data::load(&[dir]).expect("the tavern ruleset loads"));
    let book = Arc::new(RuleBook::compile(ruleset).expect("its rules load"));
    assert_eq!(book.rules().len(), 5);
    let mut g = Game::new(book).expect("a new game");
    g.apply(&ops(vec![
        set("HP", 20),
        SheetOp::AddObject { kind: "CARD".into(), key: "Spiked Shield".into(), id: None, parent: None },
    ]))
    .expect("set up");
    let r = g.apply(&emit("Hit", &[("amount", "6"), ("by", "melee")])).expect("a hit");
    assert_eq!(fired(&r), ["Take the hit", "Spiked Shield@Spiked Shield"]);
    assert_eq!(
        (value(&g, "HP"), value(&g, "Gold"), value(&g, "Damage")),
        ("15".into(), "1".into(), "6".into())
    );
    // Once a turn: the shield does not pay again; HP ≤ 10 now, so Second Wind asks.
    let r = g.apply(&emit("Hit", &[("amount", "7"), ("by", "melee")])).expect("a second hit");
    assert_eq!(fired(&r), ["Take the hit", "Second Wind"]);
    let p = r.pending.expect("a choice is pending");
    assert_eq!((p.choice, p.pick, p.decline), (1, 1, true));
    assert_eq!(p.options.iter().map(|o| &**o).collect::<Vec<_>>(), ["Healing Draught", "Strong Ale"]);
    let e = g.apply(&emit("EndTurn", &[])).expect_err("held while the choice is pending");
    assert_eq!(e.code, Code::ChoicePending);
    let e = g.apply(&Step::Choose { choice: 1, picks: vec!["Mead".into()] }).expect_err("not an option");
    assert_eq!(e.code, Code::BadPick);
    let r = g.apply(&Step::Choose { choice: 1, picks: vec!["healing draught".into()] }).expect("chosen");
    assert_eq!(value(&g, "Armor"), "3");
    assert!(r.pending.is_none() && g.pending().is_none());
    g.apply(&emit("EndTurn", &[])).expect("turn 1");
    let r = g.apply(&emit("Payday", &[])).expect("payday asks for a die");
    assert_eq!(r.pending.as_ref().and_then(|p| p.die.as_deref()), Some("d6"));
    let e = g.apply(&Step::Roll { die: "d6".into(), value: 7 }).expect_err("a d6 shows 1 to 6");
    assert_eq!(e.code, Code::BadRoll);
    g.apply(&Step::Roll { die: "d6".into(), value: 4 }).expect("rolled");
    assert_eq!(value(&g, "Gold"), "5");
    let r = g.apply(&emit("EndTurn", &[])).expect("turn 2");
    assert_eq!(r.expired.len(), 1, "the draught lasted until turn 1 passed");
    assert_eq!((value(&g, "Armor"), value(&g, "Turn")), ("1".into(), "2".into()));
}

/// Cascades run breadth first: an event's rules all run before the events they emit.
#[test]
fn cascades_run_breadth_first_in_reading_order() {
    let b = book(
        r#"
[events]
Start = {}
Second = {}
Third = {}

[[rule]]
name = "A"
on = "Start"
do = [{ emit = { event = "Third" } }, { adjust = { channel = "Gold", by = "1" } }]

[[rule]]
name = "B"
on = "Start"
do = [{ emit = { event = "Second" } }]

[[rule]]
name = "C"
on = "Second"
do = [{ adjust = { channel = "Gold", by = "Gold * 10" } }]

[[rule]]
name = "D"
on = "Third"
do = [{ adjust = { channel = "Gold", by = "100" } }]
"#,
    );
    let mut g = Game::new(b).expect("a game");
    let r = g.apply(&emit("Start", &[])).expect("emitted");
    // A, B (Start); then Third (queued first) → D, then Second → C.
    assert_eq!(fired(&r), ["A", "B", "D", "C"]);
    assert_eq!(value(&g, "Gold"), "1111", "1, then + 100, then + 101 × 10");
    assert_eq!(r.changed.len(), 1, "one variable, old → new across every batch");
    assert_eq!(format!("{:?}", r.changed[0].old), "Some(Ok(Number(0)))");
}

/// A loop is stopped and reported with its chain of rules; the firings before it stand (each is
/// atomic, the cascade is not), and the game goes on.
#[test]
fn a_cascade_that_does_not_end_is_stopped_with_its_chain() {
    let b = book(
        r#"
[events]
Ping = {}
Pong = {}

[[rule]]
name = "Ping back"
on = "Ping"
do = [{ adjust = { channel = "Gold", by = "1" } }, { emit = { event = "Pong" } }]

[[rule]]
name = "Pong back"
on = "Pong"
do = [{ emit = { event = "Ping" } }]
"#,
    );
    let mut g = Game::new(b).expect("a game");
    let r = g.apply(&emit("Ping", &[])).expect("the step stands, stopped");
    let e = r.stopped.expect("stopped");
    assert_eq!(e.code, Code::CascadeLoop);
    assert_eq!(e.chain.len(), events::MAX_DEPTH + 1);
    assert_eq!((&*e.chain[0], &*e.chain[1]), ("Ping back", "Pong back"));
    assert!(e.message.contains("test.toml:"), "the chain names where each rule is: {}", e.message);
    // Chains of 0, 2, …, 30 events reached Ping back: 16 firings, each +1.
    assert_eq!(value(&g, "Gold"), "16");
    assert_eq!(r.fired.len(), 32);
    assert!(g.apply(&ops(vec![set("Gold", 0)])).is_ok(), "the game goes on");
}

/// Filters, `$this`, instance arguments, guards, limits, a failing batch.
#[test]
fn filters_guards_limits_and_failing_batches() {
    let b = book(
        r#"
[events]
Shot = { target = { instance = true }, amount = "Amount" }
Buy = { price = "Amount" }

[[rule]]
name = "Wounded"
on = "Shot"
where = { target = "$this" }
object = { kind = "UNIT", key = "Archer" }
guard = "Power > 0"
do = [{ adjust = { channel = "Wounds", by = "Amount" } }]

[[rule]]
name = "Pay"
on = "Buy"
limit = 2
do = [
  { require = { formula = "Gold >= Amount", message = "can pay" } },
  { adjust = { channel = "Gold", by = "-Amount" } },
  { add_modifier = { var = "Armor", type = "ADD", value = "1" } },
]

[[rule]]
name = "Thanks"
on = "Buy"
do = [{ set_input = { channel = "Note", value = "thanks" } }]
"#,
    );
    let mut g = Game::new(b).expect("a game");
    g.apply(&ops(vec![add("UNIT", "Archer", "a1"), add("UNIT", "Archer", "a2"), set("Gold", 5)]))
        .expect("set up");
    let r = g.apply(&emit("Shot", &[("target", "a2"), ("amount", "3")])).expect("shot");
    assert_eq!(fired(&r), ["Wounded@a2"], "only the unit shot");
    assert_eq!((value(&g, "a1.Wounds"), value(&g, "a2.Wounds")), ("0".into(), "3".into()));
    let e = g.apply(&emit("Shot", &[("target", "nobody"), ("amount", "1")])).expect_err("no such instance");
    assert_eq!(e.code, Code::BadArgs);
    let e = g.apply(&emit("Shot", &[("target", "a1")])).expect_err("an argument is missing");
    assert_eq!(e.code, Code::BadArgs);
    // Buying for 4 of 5 gold: paid; again: the guard fails, the batch changes nothing, and the
    // next rule still runs.
    let r = g.apply(&emit("Buy", &[("price", "4")])).expect("bought");
    assert_eq!(fired(&r), ["Pay", "Thanks"]);
    assert_eq!((value(&g, "Gold"), value(&g, "Armor")), ("1".into(), "1".into()));
    let r = g.apply(&emit("Buy", &[("price", "4")])).expect("the step goes through");
    assert_eq!(fired(&r), ["Pay!solver.guard_failed", "Thanks"]);
    assert_eq!(value(&g, "Gold"), "1");
    // Two uses in all: the third Buy does not fire Pay.
    let r = g.apply(&emit("Buy", &[("price", "0")])).expect("the step goes through");
    assert_eq!(fired(&r), ["Thanks"]);
}

/// An ask for several picks runs the actions that read it once per pick; declining skips them.
#[test]
fn picks_fan_out_and_declining_skips() {
    let b = book(
        r#"
[events]
Loot = {}

[[rule]]
name = "Loot"
on = "Loot"
do = [
  { ask = { as = "items", options = { kind = "ITEM" }, pick = 2, decline = true } },
  { add_object = { kind = "ITEM", key = "$items", id = "$items" } },
  { adjust = { channel = "Gold", by = "1" } },
]
"#,
    );
    let mut g = Game::new(b).expect("a game");
    let r = g.apply(&emit("Loot", &[])).expect("asks");
    let p = r.pending.expect("pending");
    assert_eq!(p.options.iter().map(|o| &**o).collect::<Vec<_>>(), ["Ring", "Cloak"]);
    let e = g.apply(&Step::Choose { choice: 1, picks: vec!["Ring".into()] }).expect_err("two picks");
    assert_eq!(e.code, Code::BadPick);
    g.apply(&Step::Choose { choice: 1, picks: vec!["Ring".into(), "Cloak".into()] }).expect("picked");
    assert_eq!((value(&g, "Armor"), value(&g, "Gold")), ("3".into(), "1".into()));
    assert!(g.character().has_object("Ring") && g.character().has_object("Cloak"));
    g.apply(&emit("Loot", &[])).expect("asks again");
    let e = g.apply(&Step::Choose { choice: 1, picks: vec![] }).expect_err("question 1 was answered");
    assert_eq!(e.code, Code::NoChoice);
    g.apply(&Step::Choose { choice: 2, picks: vec![] }).expect("declined");
    assert_eq!(value(&g, "Gold"), "2", "the actions that do not read the picks still run");
}

/// `at_least`: an ask answered by any number of picks from it up to `pick` (no more than there
/// are options); more than `pick` is a load error.
#[test]
fn an_ask_may_take_a_range_of_picks() {
    let rules = |least: u32| {
        let ask = format!(
            r#"{{ ask = {{ as = "items", options = {{ kind = "ITEM" }}, pick = 5, at_least = {least} }} }}"#
        );
        one_rule("Loot", &[&ask, r#"{ add_object = { kind = "ITEM", key = "$items", id = "$items" } }"#])
    };
    let mut g = Game::new(book(&rules(1))).expect("a game");
    let p = g.apply(&emit("Loot", &[])).expect("asks").pending.expect("pending");
    // Two options: up to two picks, at least one.
    assert_eq!((p.pick, p.at_least, p.how_many()), (2, 1, "1 to 2".to_owned()));
    let e = g.apply(&Step::Choose { choice: 1, picks: vec![] }).expect_err("none");
    assert_eq!((e.code, e.message.contains("pick 1 to 2")), (Code::BadPick, true), "{}", e.message);
    g.apply(&Step::Choose { choice: 1, picks: vec!["Cloak".into()] }).expect("one is enough");
    assert_eq!(value(&g, "Armor"), "2");
    assert_eq!(errors(&rules(6)), ["9:77 events.syntax"]);
}

/// A game replayed from its steps gives the same values, fired rules, expiries and pending
/// questions; the operations each step applied, replayed on a bare character, give the same
/// values.
#[test]
fn a_game_replays_exactly_from_its_steps() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/examples/tavern");
    let ruleset = Arc::new(data::load(&[dir]).expect("loads"));
    let book = Arc::new(RuleBook::compile(ruleset.clone()).expect("rules load"));
    let steps = vec![
        ops(vec![set("HP", 20), add("CARD", "Spiked Shield", "s1"), add("CARD", "Spiked Shield", "s2")]),
        emit("Hit", &[("amount", "9"), ("by", "melee")]),
        emit("Hit", &[("amount", "5"), ("by", "spell")]),
        Step::Choose { choice: 1, picks: vec!["Strong Ale".into()] },
        emit("EndTurn", &[]),
        emit("Hit", &[("amount", "2"), ("by", "melee")]),
        emit("Payday", &[]),
        Step::Roll { die: "d6".into(), value: 6 },
        emit("EndTurn", &[]),
        emit("EndTurn", &[]),
    ];
    let play = || {
        let mut g = Game::new(book.clone()).expect("a game");
        let mut log = Vec::new();
        let mut applied = Vec::new();
        for s in &steps {
            match g.apply(s) {
                Ok(r) => {
                    log.push(format!(
                        "{:?} {:?} {:?}",
                        fired(&r),
                        r.expired,
                        r.pending.map(|p| p.to_string())
                    ));
                    applied.push(r.applied);
                }
                Err(e) => log.push(format!("error {}", e.code)),
            }
        }
        (g.character().sheet().values(), log, applied)
    };
    let (values, log, applied) = play();
    let (again, log_again, _) = play();
    assert_eq!(format!("{values:?}"), format!("{again:?}"));
    assert_eq!(log, log_again);
    assert!(
        log.iter().any(|l| l.contains("Spiked Shield")) && log.iter().any(|l| l.contains("Expired")),
        "{log:#?}"
    );
    let mut bare = Character::new(ruleset).expect("a character");
    for ops in applied {
        bare.apply(&ops).expect("what a step applied applies again");
    }
    assert_eq!(format!("{:?}", bare.sheet().values()), format!("{values:?}"));
}

/// Bad rules are load errors at the text, each with its code.
#[test]
fn bad_rules_are_reported_where_they_are_written() {
    let table: &[(&str, &[&str])] = &[
        (
            "[events]\nHit = {}\n[[rule]]\nname = \"R\"\non = \"Miss\"\ndo = []\n",
            &["5:7 events.unknown_event"],
        ),
        (
            "[events]\nHit = {}\n[[rule]]\nname = \"R\"\non = \"Hit\"\ndo = [{ emit = { event = \"Hit\" } }]\n",
            &["6:27 events.self_emit"],
        ),
        (
            "[events]\nHit = {}\n[[rule]]\nname = \"R\"\non = \"Hit\"\ndo = [{ add_object = { kind = \"ITEM\", key = \"$loot\" } }]\n",
            &["6:46 events.unknown_name"],
        ),
        (
            "[events]\nHit = {}\n[[rule]]\nname = \"R\"\non = \"Hit\"\nguard = \"Nope > 1\"\ndo = []\n",
            &["6:10 events.bad_rule"],
        ),
        (
            "[events]\nHit = {}\n[[rule]]\nname = \"R\"\non = \"Hit\"\ndo = [{ adjust = { channel = \"Armor\", by = \"1\" } }]\n",
            &["6:31 events.bad_rule"],
        ),
        ("[events]\nHit = { amount = \"Armor\" }\n", &["2:19 events.bad_rule"]),
        (
            "[events]\nHit = {}\n[[rule]]\nname = \"R\"\non = \"Hit\"\nobject = { kind = \"UNIT\", key = \"Knight\" }\ndo = []\n",
            &["6:34 events.bad_rule"],
        ),
        (
            "[events]\nHit = {}\n[[rule]]\nname = \"R\"\non = \"Hit\"\nlimit = { per = \"Gold\" }\ndo = []\n",
            &["6:18 events.bad_rule"],
        ),
        (
            "[events]\nHit = {}\n[[rule]]\nname = \"R\"\non = \"Hit\"\ndo = [{ roll = { as = \"r\", die = \"d1\" } }]\n",
            &["6:35 events.bad_rule"],
        ),
        (
            "[events]\nHit = {}\n[[rule]]\nname = \"R\"\non = \"Hit\"\ndo = [{ jump = {} }]\n",
            &["6:9 events.syntax"],
        ),
        (
            "[events]\nHit = {}\n[[rule]]\nname = \"R\"\non = \"Hit\"\ndo = []\n[[rule]]\nname = \"R\"\non = \"Hit\"\ndo = []\n",
            &["8:9 events.bad_rule"],
        ),
    ];
    for (rules, want) in table {
        assert_eq!(errors(rules), *want, "for:\n{rules}");
    }
}

/// An ask whose options are a scope's instances where a formula holds, computed when asked.
#[test]
fn options_are_computed_from_the_state_when_asked() {
    let b = book(
        r#"
[events]
Rally = {}

[[rule]]
name = "Rally"
on = "Rally"
do = [
  { ask = { as = "unit", options = { select = "PC.UNIT", where = "Wounds > 0" } } },
  { adjust = { channel = "Wounds", on = "$unit", by = "-Wounds" } },
]
"#,
    );
    let mut g = archers(b, &[("a2", 2), ("a3", 1)]);
    let r = g.apply(&emit("Rally", &[])).expect("asks");
    let p = r.pending.expect("pending");
    assert_eq!(p.options.iter().map(|o| &**o).collect::<Vec<_>>(), ["a2", "a3"]);
    g.apply(&Step::Choose { choice: 1, picks: vec!["a3".into()] }).expect("picked");
    assert_eq!((value(&g, "a2.Wounds"), value(&g, "a3.Wounds")), ("2".into(), "0".into()));
}

/// A game with three archers, `a1` to `a3`, some of them wounded.
fn archers(b: Arc<RuleBook>, wounds: &[(&str, i64)]) -> Game {
    let mut g = Game::new(b).expect("a game");
    g.apply(&ops(vec![
        add("UNIT", "Archer", "a1"),
        add("UNIT", "Archer", "a2"),
        add("UNIT", "Archer", "a3"),
    ]))
    .expect("set up");
    for (unit, n) in wounds {
        let wound = SheetOp::Adjust {
            channel: "Wounds".into(),
            on: Some((*unit).into()),
            by: n.to_string().as_str().into(),
        };
        g.apply(&ops(vec![wound])).expect("wounded");
    }
    g
}

/// `each` binds every instance that matches when it runs — after what the rule did before it —
/// without a question; the actions reading it run once per instance, and are skipped when none
/// matches.
#[test]
fn each_binds_every_matching_instance_without_a_question() {
    let b = book(&one_rule(
        "Heal",
        &[
            r#"{ adjust = { channel = "Wounds", on = "a1", by = "1" } }"#,
            r#"{ each = { as = "unit", select = "PC.UNIT", where = "Wounds > 0" } }"#,
            r#"{ adjust = { channel = "Wounds", on = "$unit", by = "-1" } }"#,
            r#"{ adjust = { channel = "Gold", by = "1" } }"#,
            r#"{ each = { as = "every", select = "PC.UNIT" } }"#,
            r#"{ set_input = { channel = "Note", value = "$every" } }"#,
        ],
    ));
    let mut g = archers(b, &[("a3", 2)]);
    let r = g.apply(&emit("Heal", &[])).expect("runs");
    assert!(r.pending.is_none());
    // a1 was wounded by the rule itself before `each` ran: it is bound with a3, not a2.
    let wounds = |g: &Game| ["a1", "a2", "a3"].map(|u| value(g, &format!("{u}.Wounds")));
    assert_eq!(wounds(&g), ["0", "0", "1"]);
    assert_eq!(value(&g, "Gold"), "1");
    // Without `where`, every instance: the last written wins.
    assert_eq!(value(&g, "Note"), "a3");
    g.apply(&emit("Heal", &[])).expect("runs");
    assert_eq!(wounds(&g), ["0", "0", "0"]);
    // A scope that does not exist, a `where` that is not a BOOLEAN formula: errors at load.
    let bad = errors(&one_rule(
        "Heal",
        &[
            r#"{ each = { as = "unit", select = "PC.NOPE" } }"#,
            r#"{ each = { as = "unit", select = "PC.UNIT", where = "Wounds +" } }"#,
            r#"{ each = { select = "PC.UNIT" } }"#,
        ],
    ));
    assert_eq!(bad.len(), 3, "{bad:?}");
}

/// `each` with `order` keeps the `first` (or `last`) N by a NUMBER variable, least first; the
/// variable must be one of the scope's, and `order` goes with one of `first` and `last`.
#[test]
fn an_ordered_each_keeps_the_first_or_last() {
    let rules = |take: &str| {
        let each = format!(r#"{{ each = {{ as = "unit", select = "PC.UNIT", order = "Wounds", {take} }} }}"#);
        one_rule(
            "Pick",
            &[
                &each,
                r#"{ set_input = { channel = "Note", value = "$unit" } }"#,
                r#"{ adjust = { channel = "Gold", by = "1" } }"#,
            ],
        )
    };
    let picked = |take: &str| {
        let mut g = archers(book(&rules(take)), &[("a2", 2), ("a3", 1)]);
        let r = g.apply(&emit("Pick", &[])).expect("runs");
        // The last instance written wins: the greatest kept.
        let writes = r.applied.iter().filter(|op| op.to_string().contains("Note")).count();
        (writes, value(&g, "Note"))
    };
    assert_eq!(picked("first = 1"), (1, "a1".to_owned()));
    assert_eq!(picked("first = 2"), (2, "a3".to_owned()));
    assert_eq!(picked("last = 2"), (2, "a2".to_owned()));
    assert_eq!(picked("last = 9"), (3, "a2".to_owned()));
    let bad = errors(&one_rule(
        "Pick",
        &[
            r#"{ each = { as = "a", select = "PC.UNIT", order = "Wounds" } }"#,
            r#"{ each = { as = "b", select = "PC.UNIT", order = "Nope", first = 1 } }"#,
            r#"{ each = { as = "c", select = "PC.UNIT", order = "Wounds", first = 1, last = 1 } }"#,
        ],
    ));
    assert_eq!(bad.len(), 3, "{bad:?}");
}

/// `read` binds a channel's value as the rule runs — after what the rule did before it — for
/// the actions after it; an empty value binds nothing, and they are skipped.
#[test]
fn read_binds_a_channels_value() {
    let b = book(&one_rule(
        "Fetch",
        &[
            r#"{ read = { as = "item", channel = "Note", on = "global" } }"#,
            r#"{ add_object = { kind = "ITEM", key = "$item", id = "$item" } }"#,
            r#"{ adjust = { channel = "Gold", by = "1" } }"#,
        ],
    ));
    let mut g = Game::new(b).expect("a game");
    g.apply(&emit("Fetch", &[])).expect("runs");
    assert_eq!((value(&g, "Armor"), value(&g, "Gold")), ("0".to_owned(), "1".to_owned()), "empty: skipped");
    let note =
        SheetOp::SetInput { channel: "Note".into(), on: None, value: formula::Value::String("Cloak".into()) };
    g.apply(&ops(vec![note])).expect("a note");
    g.apply(&emit("Fetch", &[])).expect("runs");
    assert_eq!((value(&g, "Armor"), value(&g, "Gold")), ("2".to_owned(), "2".to_owned()));
    let bad = errors(&one_rule("Fetch", &[r#"{ read = { as = "x", channel = "Nope", on = "global" } }"#]));
    assert_eq!(bad.len(), 1, "{bad:?}");
}

/// An effect a rule adds may last until a clock of an instance passes a value: the rule's own
/// object's (`on = "$this"`), one an argument names, or a global one; a clock that is not one
/// there is an error at its text.
#[test]
fn what_a_rule_adds_may_last_until_an_instance_clock() {
    let rules = r#"
[clocks."PC.UNIT"]
Ready = {}

[events]
Rally = {}
Mark = { who = { instance = true } }

[[rule]]
name = "Rally"
on = "Rally"
object = { kind = "UNIT", key = "Archer" }
do = [{ add_modifier = { var = "Power", type = "ADD", value = "2", until = { clock = "Ready", on = "$this", after = "+0" } } }]

[[rule]]
name = "Mark"
on = "Mark"
do = [{ add_object = { kind = "ITEM", key = "Ring", until = { clock = "Ready", on = "$who", after = "+1" } } }]
"#;
    let mut game = Game::new(book(rules)).expect("a game");
    game.apply(&ops(vec![add("UNIT", "Archer", "a1"), add("UNIT", "Archer", "a2")])).expect("units");
    game.apply(&emit("Rally", &[])).expect("rally");
    assert_eq!((value(&game, "a1.Power"), value(&game, "a2.Power")), ("5".into(), "5".into()));
    let tick =
        |on: &str| ops(vec![SheetOp::Tick { clock: "Ready".into(), on: Some(on.into()), by: 1.into() }]);
    // The global Turn does not end it; a1's own clock ends a1's only.
    game.apply(&ops(vec![SheetOp::Tick { clock: "Turn".into(), on: None, by: 1.into() }])).expect("turn");
    assert_eq!(value(&game, "a1.Power"), "5");
    let r = game.apply(&tick("a1")).expect("a1 ready");
    assert_eq!(r.expired.len(), 1, "{:?}", r.expired);
    assert_eq!((value(&game, "a1.Power"), value(&game, "a2.Power")), ("3".into(), "5".into()));
    // The clock of the instance an argument names, relative to its value then.
    game.apply(&emit("Mark", &[("who", "a2")])).expect("mark");
    assert_eq!(value(&game, "Armor"), "1");
    game.apply(&tick("a2")).expect("a2 ready");
    assert_eq!(value(&game, "Armor"), "1", "a2's Ready went from 0 to 1: not past +1 yet");
    game.apply(&tick("a2")).expect("a2 ready again");
    assert_eq!(value(&game, "Armor"), "0");
    // A clock that is not one where the effect lasts.
    let bad = r#"
[events]
Rally = {}

[[rule]]
name = "Rally"
on = "Rally"
object = { kind = "UNIT", key = "Archer" }
do = [{ add_modifier = { var = "Power", type = "ADD", value = "2", until = { clock = "Power", on = "$this", after = "1" } } }]
"#;
    assert_eq!(errors(bad), ["9:87 events.bad_rule"], "at `Power`, which is not a clock of the archer");
}

/// A `set_input` on an instance an argument names takes the value in the channel's format as
/// that instance has it: the text "12" into a STRING channel stays text.
#[test]
fn a_set_input_on_an_instance_known_when_it_runs_reads_its_channel_format() {
    let rules = r#"
[channels."PC.UNIT"]
Motto = "STRING"
Rank = "NUMBER"

[events]
Name = { who = { instance = true }, text = {} }
Promote = { who = { instance = true }, rank = {} }

[[rule]]
name = "Name"
on = "Name"
do = [{ set_input = { channel = "Motto", on = "$who", value = "$text" } }]

[[rule]]
name = "Promote"
on = "Promote"
do = [{ set_input = { channel = "Rank", on = "$who", value = "$rank" } }]
"#;
    let mut game = Game::new(book(rules)).expect("a game");
    game.apply(&ops(vec![add("UNIT", "Archer", "a1")])).expect("a unit");
    let r = game.apply(&emit("Name", &[("who", "a1"), ("text", "12")])).expect("named");
    assert_eq!(fired(&r), ["Name"]);
    assert_eq!(
        game.character().sheet().value("a1.Motto").expect("Motto").expect("a value"),
        formula::Value::String("12".into())
    );
    game.apply(&emit("Promote", &[("who", "a1"), ("rank", "3")])).expect("promoted");
    assert_eq!(value(&game, "a1.Rank"), "3");
    // Not a number for a NUMBER channel: the firing fails, naming the value.
    let r = game.apply(&emit("Promote", &[("who", "a1"), ("rank", "high")])).expect("runs");
    assert_eq!(fired(&r), ["Promote!events.bad_args"]);
    assert_eq!(value(&game, "a1.Rank"), "3");
}

/// `add_object` with `as`: each new object gets a fresh id — its key, then `key#2`, `key#3` —
/// bound for the actions after it; `as` with an `id` is an error at its text.
#[test]
fn an_added_object_may_be_bound_with_a_fresh_id() {
    let b = book(&one_rule(
        "Recruit",
        &[
            r#"{ add_object = { kind = "UNIT", key = "Archer", as = "unit" } }"#,
            r#"{ adjust = { channel = "Wounds", on = "$unit", by = "2" } }"#,
        ],
    ));
    let mut g = Game::new(b).expect("a game");
    for _ in 0..3 {
        let r = g.apply(&emit("Recruit", &[])).expect("runs");
        assert_eq!(fired(&r), ["Recruit"]);
    }
    for id in ["Archer", "Archer#2", "Archer#3"] {
        assert_eq!(value(&g, &format!("{id}.Wounds")), "2", "{id}");
    }
    assert!(!g.character().sheet().has_instance("Archer#4"));
    let bad = errors(&one_rule(
        "Recruit",
        &[r#"{ add_object = { kind = "UNIT", key = "Archer", id = "a", as = "unit" } }"#],
    ));
    assert_eq!(bad.len(), 1, "{bad:?}");
}

/// `read` binds a variable's value as it is now, not only a channel's.
#[test]
fn read_binds_a_variables_value_now() {
    let b = book(&one_rule(
        "Log",
        &[
            r#"{ read = { as = "armor", channel = "Armor", on = "global" } }"#,
            r#"{ set_input = { channel = "Amount", on = "global", value = "$armor" } }"#,
        ],
    ));
    let mut g = Game::new(b).expect("a game");
    g.apply(&ops(vec![add("ITEM", "Cloak", "Cloak")])).expect("a cloak");
    g.apply(&emit("Log", &[])).expect("runs");
    assert_eq!(value(&g, "Amount"), "2");
    g.apply(&ops(vec![add("ITEM", "Ring", "Ring")])).expect("a ring");
    assert_eq!(value(&g, "Amount"), "2", "a snapshot: it does not follow Armor");
}
