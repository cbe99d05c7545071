//! Effect strings: every string of the seed (`../shared/seeds/effect-strings.txt`) reads, into
//! the tree its *Meaning* column describes; the *Proposed rewrites* print as the document says;
//! an old string and its unified form read into the same tree; every refusal has its code and
//! points at its text.

use super::*;

fn read(text: &str) -> Effect {
    parse(text).unwrap_or_else(|e| panic!("{text:?}: {e}"))
}

fn gain(res: Res, n: u32) -> LegKind {
    LegKind::Gain(Amount { res, n })
}

fn leg(kind: LegKind) -> Leg {
    Leg { kind, span: 0..0 }
}

fn only(kind: LegKind) -> Effect {
    Effect { timing: None, legs: vec![leg(kind)] }
}

fn a(res: Res, n: u32) -> Amount {
    Amount { res, n }
}

fn take(cond: Option<(&str, &'static str, &str)>) -> Leg {
    leg(LegKind::Take(Filter {
        table: "citizens".into(),
        cond: cond.map(|(f, op, v)| Cond {
            first: Term { field: f.into(), op, value: v.into() },
            rest: Vec::new(),
        }),
    }))
}

/// Every string of the document's tables, with the tree its *Meaning* says, and what the
/// unified grammar prints for it (the same string where the document says "no change").
// long: a table of cases, one line each.
#[test]
fn every_string_of_the_tables_reads_as_its_meaning_says() {
    use Res::*;
    let soldier_cheap = Cond {
        first: Term { field: "role".into(), op: "==", value: "soldier".into() },
        rest: vec![(Join::And, Term { field: "gold_cost".into(), op: "<=", value: "2".into() })],
    };
    let cases: Vec<(&str, Effect, &str)> = vec![
        // *Citizens*
        (
            "choose g 2 m 2",
            only(LegKind::Choose(vec![vec![leg(gain(G, 2))], vec![leg(gain(M, 2))]])),
            "choose g 2 m 2",
        ),
        ("exchange s 1 g 2", only(LegKind::Exchange { pay: a(S, 1), gain: a(G, 2) }), "exchange s 1 g 2"),
        ("exchange g 1 s 4", only(LegKind::Exchange { pay: a(G, 1), gain: a(S, 4) }), "exchange g 1 s 4"),
        ("exchange s 1 m 3", only(LegKind::Exchange { pay: a(S, 1), gain: a(M, 3) }), "exchange s 1 m 3"),
        (
            "count owned_worker g 2",
            only(LegKind::Count { by: Counted::OwnedRole("worker".into()), each: a(G, 2) }),
            "count owned_worker g 2",
        ),
        // *Domains — activation_effect*
        (
            "action.modify_monster_strength +3",
            only(LegKind::Opaque { key: "modify_monster_strength".into(), args: vec![3] }),
            "modify_monster_strength 3",
        ),
        ("choose <citizens>", only(LegKind::Choose(vec![vec![take(None)]])), "choose <citizens>"),
        (
            "m 4 + concurrent_flip_one_citizen",
            Effect {
                timing: None,
                legs: vec![
                    leg(gain(M, 4)),
                    leg(LegKind::Opaque { key: "concurrent_flip_one_citizen".into(), args: vec![] }),
                ],
            },
            "m 4 + concurrent_flip_one_citizen",
        ),
        (
            "choose <citizens where role==shadow>",
            only(LegKind::Choose(vec![vec![take(Some(("role", "==", "shadow")))]])),
            "choose <citizens where role==shadow>",
        ),
        (
            "s 3 + choose <citizens where role==soldier and gold_cost<=2>",
            Effect {
                timing: None,
                legs: vec![
                    leg(gain(S, 3)),
                    leg(LegKind::Choose(vec![vec![leg(LegKind::Take(Filter {
                        table: "citizens".into(),
                        cond: Some(soldier_cheap),
                    }))]])),
                ],
            },
            "s 3 + choose <citizens where role==soldier and gold_cost<=2>",
        ),
        (
            "manipulate_resources mode=self_convert pay=g:3 gain=v:3 optional=true",
            only(LegKind::SelfConvert { pay: a(G, 3), gain: a(V, 3), optional: true }),
            "self_convert g 3 v 3 optional",
        ),
        // *Domains — passive_effect*
        (
            "harvest.gain_per_owned_citizen_name Knight g 1",
            Effect {
                timing: Some(Timing::Harvest),
                legs: vec![leg(LegKind::GainPerOwnedName { name: "Knight".into(), each: a(G, 1) })],
            },
            "harvest.gain_per_owned_citizen_name Knight g 1",
        ),
        (
            "roll.set_one_die target=6 cost=g:2",
            Effect {
                timing: Some(Timing::Roll),
                legs: vec![leg(LegKind::SetOneDie { target: 6, cost: DieCost::Amount(a(G, 2)) })],
            },
            "roll.set_one_die target=6 cost=g:2",
        ),
        (
            "roll.set_one_die target=1 cost=g_per_owned_role:holy_citizen",
            Effect {
                timing: Some(Timing::Roll),
                legs: vec![leg(LegKind::SetOneDie {
                    target: 1,
                    cost: DieCost::PerOwnedRole { res: G, role: "holy_citizen".into() },
                })],
            },
            "roll.set_one_die target=1 cost=g_per_owned_role:holy_citizen",
        ),
        (
            "effect.add action.emeraldstronghold",
            only(LegKind::AddFlag("action.emeraldstronghold".into())),
            "effect.add action.emeraldstronghold",
        ),
        (
            "effect.add action.pratchettsplateau",
            only(LegKind::AddFlag("action.pratchettsplateau".into())),
            "effect.add action.pratchettsplateau",
        ),
        (
            "action.end manipulate_resources mode=pay_to_player gain=v:1 pay=g:1 optional=true",
            Effect {
                timing: Some(Timing::ActionEnd),
                legs: vec![leg(LegKind::PayToPlayer { pay: a(G, 1), gain: a(V, 1), optional: true })],
            },
            "action.end pay_to_player g 1 v 1 optional",
        ),
        (
            "action.end manipulate_resources mode=take_from_player take=g:1 optional=true",
            Effect {
                timing: Some(Timing::ActionEnd),
                legs: vec![leg(LegKind::TakeFromPlayer { take: a(G, 1), optional: true })],
            },
            "action.end take_from_player g 1 optional",
        ),
        (
            "action.end manipulate_resources mode=pay_to_player gain=v:1 pay=m:1 optional=true",
            Effect {
                timing: Some(Timing::ActionEnd),
                legs: vec![leg(LegKind::PayToPlayer { pay: a(M, 1), gain: a(V, 1), optional: true })],
            },
            "action.end pay_to_player m 1 v 1 optional",
        ),
        (
            "action.end manipulate_resources mode=take_from_player take=m:1 optional=true",
            Effect {
                timing: Some(Timing::ActionEnd),
                legs: vec![leg(LegKind::TakeFromPlayer { take: a(M, 1), optional: true })],
            },
            "action.end take_from_player m 1 optional",
        ),
        // *Monsters — special_reward*
        (
            "choose g 1 m 1",
            only(LegKind::Choose(vec![vec![leg(gain(G, 1))], vec![leg(gain(M, 1))]])),
            "choose g 1 m 1",
        ),
        (
            "choose g 2 m 2 s 2",
            only(LegKind::Choose(vec![vec![leg(gain(G, 2))], vec![leg(gain(M, 2))], vec![leg(gain(S, 2))]])),
            "choose g 2 m 2 s 2",
        ),
        (
            "count area Hills g 1",
            only(LegKind::Count { by: Counted::Area("Hills".into()), each: a(G, 1) }),
            "count area Hills g 1",
        ),
        (
            "count area Ruins g 2",
            only(LegKind::Count { by: Counted::Area("Ruins".into()), each: a(G, 2) }),
            "count area Ruins g 2",
        ),
        (
            "choose g 3 <citizens where name==Knight>",
            only(LegKind::Choose(vec![vec![leg(gain(G, 3))], vec![take(Some(("name", "==", "Knight")))]])),
            "choose g 3 <citizens where name==Knight>",
        ),
        (
            "choose <citizens where gold_cost<=2>",
            only(LegKind::Choose(vec![vec![take(Some(("gold_cost", "<=", "2")))]])),
            "choose <citizens where gold_cost<=2>",
        ),
        (
            "choose <count area Forest g 2> <citizens + v 1>",
            only(LegKind::Choose(vec![
                vec![leg(LegKind::Count { by: Counted::Area("Forest".into()), each: a(G, 2) })],
                vec![take(None), leg(gain(V, 1))],
            ])),
            "choose <count area Forest g 2> <citizens + v 1>",
        ),
        (
            "choose g 5 m 5 s 5",
            only(LegKind::Choose(vec![vec![leg(gain(G, 5))], vec![leg(gain(M, 5))], vec![leg(gain(S, 5))]])),
            "choose g 5 m 5 s 5",
        ),
        (
            "count area Valley m 2",
            only(LegKind::Count { by: Counted::Area("Valley".into()), each: a(M, 2) }),
            "count area Valley m 2",
        ),
        (
            "choose <citizens where gold_cost<=3>",
            only(LegKind::Choose(vec![vec![take(Some(("gold_cost", "<=", "3")))]])),
            "choose <citizens where gold_cost<=3>",
        ),
        (
            "count area Mountain g 2",
            only(LegKind::Count { by: Counted::Area("Mountain".into()), each: a(G, 2) }),
            "count area Mountain g 2",
        ),
    ];
    for (text, tree, printed) in &cases {
        let e = read(text);
        assert_eq!(&e, tree, "{text}");
        assert_eq!(unified(&e), *printed, "{text}");
        // An old string and its unified form are the same effect.
        assert_eq!(&read(printed), tree, "{printed}");
    }
}

/// *Where the syntax diverges* and *Proposed rewrites*: each `before → after` of the document,
/// the unified form printed, and the two reading into the same tree.
#[test]
fn the_proposed_rewrites_print_as_the_document_says() {
    let rewrites = [
        ("action.modify_monster_strength +3", "modify_monster_strength 3"),
        ("m 4 + concurrent_flip_one_citizen", "m 4 + concurrent_flip_one_citizen"),
        (
            "manipulate_resources mode=self_convert pay=g:3 gain=v:3 optional=true",
            "self_convert g 3 v 3 optional",
        ),
        ("choose <citizens where role==shadow>", "choose <citizens where role==shadow>"),
        (
            "s 3 + choose <citizens where role==soldier and gold_cost<=2>",
            "s 3 + choose <citizens where role==soldier and gold_cost<=2>",
        ),
        (
            "action.end manipulate_resources mode=pay_to_player gain=v:1 pay=g:1 optional=true",
            "action.end pay_to_player g 1 v 1 optional",
        ),
        (
            "action.end manipulate_resources mode=take_from_player take=g:1 optional=true",
            "action.end take_from_player g 1 optional",
        ),
        (
            "action.end manipulate_resources mode=pay_to_player gain=v:1 pay=m:1 optional=true",
            "action.end pay_to_player m 1 v 1 optional",
        ),
        (
            "action.end manipulate_resources mode=take_from_player take=m:1 optional=true",
            "action.end take_from_player m 1 optional",
        ),
        ("harvest.gain_per_owned_citizen_name Knight g 1", "harvest.gain_per_owned_citizen_name Knight g 1"),
        ("roll.set_one_die target=6 cost=g:2", "roll.set_one_die target=6 cost=g:2"),
        ("effect.add action.emeraldstronghold", "effect.add action.emeraldstronghold"),
        // *Where the syntax diverges*: the forms each section shows.
        ("manipulate_resources mode=self_convert pay=g:3 gain=v:3", "self_convert g 3 v 3"),
        (
            "action.end manipulate_resources mode=pay_to_player gain=v:1 pay=g:1",
            "action.end pay_to_player g 1 v 1",
        ),
        ("count owned_worker g 2", "count owned_worker g 2"),
        ("choose g 1 m 1", "choose g 1 m 1"),
        ("exchange s 1 g 2", "exchange s 1 g 2"),
    ];
    for (before, after) in rewrites {
        let old = read(before);
        assert_eq!(unified(&old), after, "{before}");
        assert_eq!(read(after), old, "{before} → {after}");
    }
}

/// Each refusal: its code and the text it points at, inside the string.
#[test]
fn bad_strings_are_refused_with_a_code_at_the_token() {
    let cases: &[(&str, &str, &str)] = &[
        ("", "effects.syntax", ""),
        ("g", "effects.syntax", ""),
        ("g two", "effects.syntax", "two"),
        ("x 2", "effects.unknown_verb", "x"),
        ("teleport g 2", "effects.unknown_verb", "teleport"),
        ("choose g 2 q 2", "effects.resource", "q"),
        ("choose", "effects.syntax", "choose"),
        ("choose <citizens where rank==3>", "effects.field", "rank==3"),
        ("choose <citizens where role>", "effects.syntax", "role"),
        ("choose <citizens where role==shadow and>", "effects.syntax", ""),
        ("choose <citizens", "effects.syntax", "<citizens"),
        ("choose <>", "effects.syntax", "<>"),
        ("g 2 >", "effects.syntax", ">"),
        ("g 2 +", "effects.syntax", "+"),
        ("+ g 2", "effects.syntax", "+"),
        ("g 2 + + m 1", "effects.syntax", "+"),
        ("exchange s 1 g", "effects.syntax", ""),
        ("exchange s 1 g 2 m 3", "effects.syntax", "m 3"),
        ("count owned_ g 2", "effects.syntax", "owned_"),
        ("manipulate_resources mode=steal take=g:1", "effects.syntax", "mode=steal"),
        (
            "manipulate_resources mode=self_convert pay=g:3",
            "effects.syntax",
            "manipulate_resources mode=self_convert pay=g:3",
        ),
        ("manipulate_resources mode=pay_to_player pay=g3 gain=v:1", "effects.syntax", "pay=g3"),
        (
            "manipulate_resources mode=take_from_player take=g:1 optional=maybe",
            "effects.syntax",
            "optional=maybe",
        ),
        ("roll.set_one_die target=7 cost=g:2", "effects.syntax", "set_one_die target=7 cost=g:2"),
        ("roll.set_one_die cost=g:2", "effects.syntax", "set_one_die cost=g:2"),
        ("action.end", "effects.syntax", "action.end"),
        ("<citizens>", "effects.syntax", "<citizens>"),
        ("citizens", "effects.unknown_verb", "citizens"),
        ("concurrent_flip_one_citizen now", "effects.syntax", "now"),
    ];
    for (text, code, at) in cases {
        let e = parse(text).map(|t| unified(&t)).expect_err(text);
        assert!(e.span.end <= text.len(), "{text}: {e:?}");
        assert_eq!((e.code, &text[e.span.clone()]), (*code, *at), "{text}: {}", e.message);
    }
}

/// Nothing the reader is given makes it panic; every error lies inside the text; what reads
/// prints a unified form that reads into the same tree.
#[test]
fn any_string_reads_or_is_an_error_inside_it() {
    use proptest::prelude::*;
    let parts = prop::collection::vec(
        prop::sample::select(vec![
            "g",
            "m",
            "s",
            "v",
            "q",
            " ",
            "2",
            "+3",
            " + ",
            "+",
            "choose",
            "exchange",
            "count",
            "owned_worker",
            "area",
            "Hills",
            "<",
            ">",
            "citizens",
            "where",
            "role==shadow",
            "gold_cost<=2",
            "and",
            "or",
            "manipulate_resources",
            "mode=self_convert",
            "pay=g:3",
            "gain=v:3",
            "take=g:1",
            "optional=true",
            "optional",
            "action.end",
            "harvest.",
            "roll.",
            "set_one_die",
            "target=6",
            "cost=g:2",
            "effect.add",
            "action.x",
            "ĩ",
            "=",
            ":",
        ]),
        0..24,
    );
    proptest!(|(parts in parts)| {
        let text: String = parts.concat();
        match parse(&text) {
            Err(e) => {
                prop_assert!(e.span.start <= e.span.end && e.span.end <= text.len(), "{text:?}: {e:?}");
                prop_assert!(text.is_char_boundary(e.span.start) && text.is_char_boundary(e.span.end));
            }
            Ok(t) => {
                let u = unified(&t);
                prop_assert_eq!(parse(&u).ok(), Some(t), "{:?} → {:?}", text, u);
            }
        }
    });
}

/// The example tables (`docs/examples/effects/`: every card of the document, its string in its
/// column) read, each string into its tree.
#[test]
fn the_example_tables_read() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/examples/effects/");
    let table = |file: &str| {
        let text = std::fs::read_to_string(format!("{dir}{file}")).expect("the example");
        let (stem, ext) = file.split_once('.').expect("a name and an extension");
        tables::read(&text, stem, ext).unwrap_or_else(|e| panic!("{file}: {e}"))
    };
    let (citizens, domains, monsters) = (table("citizens.csv"), table("domains.json"), table("monsters.csv"));
    assert_eq!((citizens.len(), domains.len(), monsters.len()), (6, 15, 13));
    let butcher = &citizens[4];
    assert_eq!(
        (butcher.name.as_str(), butcher.field("role"), butcher.field("gold_cost")),
        ("Butcher", Some("worker"), Some("1"))
    );
    assert_eq!(butcher.effects[0].0, "special_payout_on_turn");
    assert_eq!(butcher.effects[0].1, read("count owned_worker g 2"));
    // An empty cell is no effect: the Knight pays only off turn.
    assert_eq!(citizens[5].effects.iter().map(|e| e.0).collect::<Vec<_>>(), ["special_payout_off_turn"]);
    let wisborg = domains.iter().find(|d| d.name == "Wisborg").expect("Wisborg");
    assert_eq!(unified(&wisborg.effects[0].1), "self_convert g 3 v 3 optional");
    assert_eq!(unified(&monsters[6].effects[0].1), "choose <count area Forest g 2> <citizens + v 1>");
}

/// A table's errors point into the file: at the token inside a cell (CSV, or a JSON string
/// without escapes), at the whole cell otherwise; an unknown column, a short row, a table that
/// is none of the three, a cost that is no number.
#[test]
fn bad_tables_are_refused_in_the_file() {
    let at = |text: &str, stem: &str, ext: &str| {
        let e = tables::read(text, stem, ext).expect_err(text);
        (e.code, text[e.span.clone()].to_owned())
    };
    let csv = "name,role,gold_cost,special_payout_on_turn\nMerchant,worker,2,choose g 2 q 2\n";
    assert_eq!(at(csv, "citizens", "csv"), ("effects.resource", "q".to_owned()));
    let quoted = "name,area,strength,special_reward\n\"Troll\",Valley,6,\"count area Valley m two\"\n";
    assert_eq!(at(quoted, "monsters", "csv"), ("effects.syntax", "two".to_owned()));
    let escaped = r#"[{"name": "X", "gold_cost": 1, "activation_effect": "teleport \u0067 2"}]"#;
    assert_eq!(at(escaped, "domains", "json"), ("effects.unknown_verb", "\"teleport \\u0067 2\"".to_owned()));
    let json = r#"[{"name": "X", "gold_cost": 1, "activation_effect": "m 4 + teleport"}]"#;
    assert_eq!(at(json, "domains", "json"), ("effects.unknown_verb", "teleport".to_owned()));
    assert_eq!(at("name,colour\nX,red\n", "citizens", "csv"), ("effects.table", "colour".to_owned()));
    assert_eq!(at("name,role\nX\n", "citizens", "csv"), ("effects.table", "X".to_owned()));
    assert_eq!(at("name,gold_cost\nX,two\n", "domains", "csv"), ("effects.table", "two".to_owned()));
    assert_eq!(at("name\n\"X\n", "monsters", "csv").0, "effects.table");
    assert_eq!(at("[]", "heroes", "json").0, "effects.table");
    assert_eq!(
        at(r#"[{"role": "x"}]"#, "citizens", "json"),
        ("effects.table", r#"{"role": "x"}"#.to_owned())
    );
}

/// The example tables' citizens and monsters compiled and played: gains, a `choose` answered,
/// an exchange refused when its cost cannot be paid and then paid, payouts counted when paid,
/// and a citizen picked from the board by a filter.
// long: one game, step by step.
#[test]
fn citizens_and_monsters_compile_and_play() {
    use events::Step as S;
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/examples/effects/");
    let files: Vec<(String, String)> = ["citizens.csv", "monsters.csv"]
        .iter()
        .map(|f| (f.to_string(), std::fs::read_to_string(format!("{dir}{f}")).expect("the example")))
        .collect();
    let c = compile_texts(&files).unwrap_or_else(|e| panic!("{e:#?}"));
    assert_eq!(c.counts, [("cards", 19)]);
    let r = c.load().unwrap_or_else(|e| panic!("{e:#?}\n{}", c.files[1].1));
    let book = std::sync::Arc::new(
        events::RuleBook::compile(std::sync::Arc::new(r)).unwrap_or_else(|e| panic!("{e:#?}")),
    );
    let mut g = events::Game::new(book).expect("a game");
    let play = |g: &mut events::Game, step: serde_json::Value| -> events::StepReport {
        match game::step(&step).expect("a step") {
            crate::creature::game::Step::Play(s) => g.apply(&s).unwrap_or_else(|e| panic!("{step}: {e}")),
            other => panic!("{step}: {other:?}"),
        }
    };
    let value = |g: &events::Game, var: &str| match g.character().sheet().value(var) {
        Ok(Ok(v)) => v.to_string(),
        other => format!("{other:?}"),
    };
    let setup = serde_json::json!({
        "players": {"p1": {"g": 0, "s": 0}},
        "cards": [{"id": "merchant", "card": "Merchant"}, {"id": "butcher", "card": "Butcher"},
                  {"id": "mercenary", "card": "Mercenary"}, {"id": "knight", "card": "Knight"},
                  {"id": "champion", "card": "Champion"},
                  {"id": "ettercap", "card": "Ettercap"}, {"id": "king", "card": "Goblin King"},
                  {"id": "mage", "card": "Goblin Mage"}]
    });
    g.apply(&game::setup(&setup).expect("setup")).expect("set up");
    // Two workers owned: `count owned_worker g 2` pays 4, read when it pays.
    play(&mut g, serde_json::json!({"own": {"card": "merchant", "player": "p1"}}));
    play(&mut g, serde_json::json!({"own": {"card": "butcher", "player": "p1"}}));
    assert_eq!(value(&g, "p1.OWNED_WORKER"), "2");
    // Owned once: owning it again is refused, and counts nothing.
    let r = play(&mut g, serde_json::json!({"own": {"card": "butcher", "player": "p1"}}));
    assert_eq!(
        r.fired[0].error.as_ref().map(|e| e.code.as_str()),
        Some("solver.guard_failed"),
        "{:?}",
        r.fired
    );
    assert_eq!(value(&g, "p1.OWNED_WORKER"), "2");
    play(
        &mut g,
        serde_json::json!({"activate": {"card": "butcher", "player": "p1", "column": "special_payout_on_turn"}}),
    );
    assert_eq!(value(&g, "p1.G"), "4");
    // `choose g 2 m 2`: asked; m 2 chosen.
    let r = play(
        &mut g,
        serde_json::json!({"activate": {"card": "merchant", "player": "p1", "column": "special_payout_on_turn"}}),
    );
    let p = r.pending.expect("a choice");
    assert_eq!(p.options.iter().map(|o| &**o).collect::<Vec<_>>(), ["g 2", "m 2"]);
    g.apply(&S::Choose { choice: p.choice, picks: vec!["m 2".into()] }).expect("chosen");
    assert_eq!((value(&g, "p1.G"), value(&g, "p1.M")), ("4".to_owned(), "2".to_owned()));
    // `exchange s 1 g 2` with no s: the leg is refused whole (no g gained).
    let r = play(
        &mut g,
        serde_json::json!({"activate": {"card": "mercenary", "player": "p1", "column": "special_payout_on_turn"}}),
    );
    assert!(r.fired.iter().any(|f| f.error.is_some()), "{:?}", r.fired);
    assert_eq!((value(&g, "p1.G"), value(&g, "p1.S")), ("4".to_owned(), "0".to_owned()));
    // The Knight's off-turn payout gives the s; then the exchange goes through.
    play(
        &mut g,
        serde_json::json!({"activate": {"card": "knight", "player": "p1", "column": "special_payout_off_turn"}}),
    );
    play(
        &mut g,
        serde_json::json!({"activate": {"card": "mercenary", "player": "p1", "column": "special_payout_on_turn"}}),
    );
    assert_eq!((value(&g, "p1.G"), value(&g, "p1.S")), ("6".to_owned(), "0".to_owned()));
    // Ettercap, `choose <citizens where gold_cost<=2>`: the one option, then the citizens on
    // the board that no one owns and cost 2 or less (not the Champion, 3).
    let r = play(
        &mut g,
        serde_json::json!({"activate": {"card": "ettercap", "player": "p1", "column": "special_reward"}}),
    );
    let p = r.pending.expect("a choice");
    assert_eq!(p.options.iter().map(|o| &**o).collect::<Vec<_>>(), ["citizens where gold_cost<=2"]);
    let r = g.apply(&S::Choose { choice: p.choice, picks: vec![p.options[0].to_string()] }).expect("chosen");
    let p = r.pending.expect("a citizen to take");
    assert_eq!(p.options.iter().map(|o| &**o).collect::<Vec<_>>(), ["knight", "mercenary"]);
    g.apply(&S::Choose { choice: p.choice, picks: vec!["knight".into()] }).expect("taken");
    assert_eq!((value(&g, "knight.OWNER"), value(&g, "p1.OWNED_SOLDIER")), ("p1".to_owned(), "1".to_owned()));
    // A column the card has no effect in, a citizen bought as a domain: refused, saying so.
    let r = play(
        &mut g,
        serde_json::json!({"activate": {"card": "knight", "player": "p1", "column": "special_reward"}}),
    );
    let e = r.fired.iter().find_map(|f| f.error.as_ref()).expect("refused");
    assert!(e.message.contains("Knight has effects in special_payout_off_turn only"), "{}", e.message);
    let r =
        play(&mut g, serde_json::json!({"buy_domain": {"domain": "champion", "player": "p1", "cost": 1}}));
    let e = r.fired.iter().find_map(|f| f.error.as_ref()).expect("refused");
    assert!(e.message.contains("Champion is no domain"), "{}", e.message);
    // Two Hills monsters slain: `count area Hills g 1` pays 2.
    play(&mut g, serde_json::json!({"own": {"card": "mage", "player": "p1"}}));
    play(&mut g, serde_json::json!({"own": {"card": "king", "player": "p1"}}));
    play(
        &mut g,
        serde_json::json!({"activate": {"card": "king", "player": "p1", "column": "special_reward"}}),
    );
    assert_eq!(value(&g, "p1.G"), "8");
}

/// What has no meaning here is refused at its text, naming it: a passive without a phase that
/// is not a flag, a `roll.` passive that sets no die, a die set or a flag raised by an action.
#[test]
fn what_is_not_run_is_refused_by_name() {
    let refused = |column: &str, effect: &str| {
        let d = format!(r#"[{{"name": "X", "gold_cost": 4, "{column}": "{effect}"}}]"#);
        let e = compile_texts(&[("domains.json".to_owned(), d)]).expect_err(effect);
        (e[0].code.as_str().to_owned(), e[0].text.clone())
    };
    let unsupported = "effects.unsupported".to_owned();
    assert_eq!(refused("passive_effect", "g 1"), (unsupported.clone(), "\"g 1\"".to_owned()));
    assert_eq!(refused("passive_effect", "roll.g 1").0, unsupported);
    assert_eq!(
        refused("activation_effect", "m 1 + set_one_die target=6 cost=g:2"),
        (unsupported.clone(), "set_one_die target=6 cost=g:2".to_owned())
    );
    assert_eq!(refused("activation_effect", "effect.add action.x").0, unsupported);
    // A control character inside a word stays out of the translation's comments (found by the
    // effects fuzz target).
    let odd =
        "name,role,gold_cost,special_payout_on_turn,special_payout_off_turn\nA,worker,1,g\u{1} 1 + m 1,\n";
    let e = compile_texts(&[("citizens.csv".to_owned(), odd.to_owned())]).expect_err("g\u{1} is no resource");
    assert_eq!(e[0].code.as_str(), "effects.unknown_verb");
    let odd = "name,role,gold_cost,special_payout_on_turn,special_payout_off_turn\nA,worker,1,count owned_w\u{1} g 1,\n";
    let c = compile_texts(&[("citizens.csv".to_owned(), odd.to_owned())]).expect("compiles");
    c.load().unwrap_or_else(|e| panic!("{e:#?}"));
    // A text that starts with `=` stays text, not a formula (found by the effects fuzz target).
    let eq = "name,role,gold_cost,special_payout_on_turn,special_payout_off_turn\n=A,=>=worker,1,g 1,\n";
    let c = compile_texts(&[("citizens.csv".to_owned(), eq.to_owned())]).expect("compiles");
    let r = c.load().unwrap_or_else(|e| panic!("{e:#?}"));
    let mut g = events::Game::new(std::sync::Arc::new(
        events::RuleBook::compile(std::sync::Arc::new(r)).expect("rules"),
    ))
    .expect("a game");
    g.apply(&game::setup(&serde_json::json!({"cards": [{"id": "a", "card": "=A"}]})).expect("setup"))
        .expect("set up");
    assert_eq!(
        g.character().sheet().value("a.ROLE").map(|v| v.map(|v| v.to_string())),
        Ok(Ok("=>=worker".to_owned()))
    );
    let quoted = "name,role,gold_cost,special_payout_on_turn,special_payout_off_turn\nA,x,1,choose <citizens where role==\"\"a>,\n";
    let e = compile_texts(&[("citizens.csv".to_owned(), quoted.to_owned())]).expect_err("a quote");
    assert_eq!(e[0].code.as_str(), "effects.card");
    let twice = "name,role,gold_cost,special_payout_on_turn,special_payout_off_turn\nA,worker,1,g 1,\na,worker,1,g 2,\n";
    let e = compile_texts(&[("citizens.csv".to_owned(), twice.to_owned())]).expect_err("twice");
    assert_eq!((e[0].code.as_str(), e[0].at.as_ref().map(|a| a.line())), ("effects.card", Some(3)));
}
