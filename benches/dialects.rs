//! The dialects' costs, each against the native-format equivalent in the same run:
//!
//! - `load_1000_features`: 1,000 creature features (four kinds of subfeature, in turn) given
//!   to 100 creatures, 10 each — read, compiled to a native ruleset and its event rules checked
//!   — against loading the translation (`sheetd translate`'s files) and checking its rules.
//! - `load_1000_cards`: 1,000 RuleScript cards (four kinds in turn) read, compiled and their
//!   rules checked, against loading their translation.
//! - `replay_200_steps`: a 200-step game of 10 creatures (hits, uses, turns, rests, recharge
//!   rolls) played from its verbs, against the same game from the generic steps they stand for
//!   (the JSON a native game file would hold), each from a new game and its setup.
//! - `load_1000_effect_cards`: 1,000 citizens whose effect strings (four kinds in turn) are
//!   read, compiled and their rules checked, against loading their translation.
//! - `replay_200_effect_steps`: a 200-step effect strings game (citizens owned, payouts
//!   counted, exchanges, choices answered) from its verbs, against the generic steps.
//!
//! - `load_1000_roles`: 1,000 WWRF role files (four kinds of ability line in turn: a protection,
//!   an attack, a manipulation, an investigation, each with parameters) read, compiled and their
//!   rules checked, against loading their translation.
//! - `replay_200_wwrf_steps`: a 200-step WWRF game of 12 players (days of manipulations and
//!   votes, nights of protections, attacks and investigations, every selection answered) from
//!   its verbs, against the generic steps.
//!
//! `cargo bench --bench dialects`.

use criterion::{Criterion, criterion_group, criterion_main};
use dialects::creature::{self, game};
use serde_json::{Value as Json, json};
use std::hint::black_box;
use std::sync::Arc;

#[global_allocator]
static GLOBAL: sheetd::alloc::Allocator = sheetd::alloc::Allocator;

const CREATURES: usize = 100;
const PER_CREATURE: usize = 10;

/// Feature `i`: one subfeature of four kinds in turn (a passive set, a recharged action that
/// heals, a hit that deals damage, a turn start that reduces damage until the turn ends).
fn feature(i: usize) -> Json {
    let sub = match i % 4 {
        0 => json!({"trigger": "passive",
                    "effects": [{"target": "self", "effect": ["Set N = N", "SPELLDC", "(8,INT,PROF,+,+,V0,+)"]}]}),
        1 => json!({"trigger": "action", "recharge": [2, "short rest"],
                    "effects": [{"target": "creature", "condition": "(creature.ALIVE)", "effect": ["Regain X hp", "V0"]}]}),
        2 => json!({"trigger": ["hits", "self", "creature"], "conditions": "(creature.HP,0,>)",
                    "effects": [{"target": "creature", "effect": ["Deal X damage", "(V0,2,*)"]}]}),
        _ => json!({"trigger": ["turnstart", "self"],
                    "effects": [{"target": "self", "effect": ["Reduce incoming damage by X", "V0"], "duration": "End of turn"}]}),
    };
    json!({"name": format!("Feature {i}"), "text": "The {NAME} uses feature {V0}.", "subfeatures": [sub]})
}

/// The dialect's files: the features, and the creatures with 10 each.
fn files() -> Vec<(String, String)> {
    let features: Vec<Json> = (0..CREATURES * PER_CREATURE).map(feature).collect();
    let creatures: Vec<Json> = (0..CREATURES)
        .map(|c| {
            let uses: Vec<Json> = (0..PER_CREATURE)
                .map(|k| json!({"feature": format!("Feature {}", c * PER_CREATURE + k), "vars": [c % 5 + 1]}))
                .collect();
            json!({"name": format!("m{c}"), "attributes": {"INT": 2, "PROF": 3, "MAXHP": 60, "SIZE": 5}, "features": uses})
        })
        .collect();
    vec![
        ("features.json".to_owned(), Json::Array(features).to_string()),
        ("creatures.json".to_owned(), json!({"creatures": creatures}).to_string()),
    ]
}

/// A 200-step game of creatures m0…m9: each step as a verb and as the generic step it stands
/// for.
fn game_steps() -> (Json, Vec<Json>, Vec<Json>) {
    let setup = json!({"creatures": (0..10).map(|c| json!({"id": format!("m{c}"), "creature": format!("m{c}")})).collect::<Vec<_>>()});
    let mut verbs = Vec::new();
    let mut generic = Vec::new();
    for i in 0..200 {
        let (a, b) = (format!("m{}", i % 10), format!("m{}", (i + 3) % 10));
        let (verb, emit) = match i % 5 {
            0 => (
                json!({"trigger": {"event": "hits", "creature": a, "target": b, "amount": 3}}),
                json!({"emit": {"event": "Hits", "args": {"by": a, "target": b, "amount": 3}}}),
            ),
            1 => (
                json!({"use": {"creature": a, "feature": format!("Feature {}", (i % 10) * PER_CREATURE + 1), "target": b}}),
                json!({"emit": {"event": "Use", "args": {"who": a, "feature": format!("Feature {}", (i % 10) * PER_CREATURE + 1), "target": b}}}),
            ),
            2 => (
                json!({"trigger": {"event": "turnstart", "creature": a}}),
                json!({"emit": {"event": "TurnStart", "args": {"who": a}}}),
            ),
            3 => (
                json!({"trigger": {"event": "turnend", "creature": a}}),
                json!({"emit": {"event": "TurnEnd", "args": {"who": a}}}),
            ),
            _ => (json!({"rest": {"kind": "short"}}), json!({"emit": {"event": "ShortRest", "args": {}}})),
        };
        verbs.push(verb);
        generic.push(emit);
    }
    (setup, verbs, generic)
}

/// 1,000 RuleScript cards, four kinds in turn: an action in the order written, a condition
/// with an else, a target chosen with a restriction, an auto statement.
fn cards() -> Vec<(String, String)> {
    let cards: Vec<Json> = (0..1000)
        .map(|i| {
            let rules = match i % 4 {
                0 => vec!["action = {F}: bp(+100) & bp(x2)"],
                1 => vec!["action = [[if me.sp < opp.sp]] sp(+1) [[else]] hp(+500)"],
                2 => vec!["target = character@oppRing", "action = bp(-200) & +frosted oppUeot"],
                _ => vec!["auto = ~myDrawPhase~ draw() target(me)"],
            };
            json!({"name": format!("Card {i}"), "type": "character", "bp": 100 + i % 7 * 100, "rules": rules})
        })
        .collect();
    vec![("cards.json".to_owned(), Json::Array(cards).to_string())]
}

/// 1,000 citizens, four kinds of effect string in turn.
fn effect_cards() -> Vec<(String, String)> {
    let mut csv = String::from("name,role,gold_cost,special_payout_on_turn,special_payout_off_turn\n");
    for i in 0..1000 {
        let effect = match i % 4 {
            0 => "choose g 2 m 2",
            1 => "exchange s 1 g 2",
            2 => "count owned_worker g 2",
            _ => "s 3 + count owned_soldier g 1",
        };
        let role = ["worker", "soldier", "holy_citizen"][i % 3];
        csv.push_str(&format!("Citizen {i},{role},{},{effect},g 1\n", 1 + i % 4));
    }
    vec![("citizens.csv".to_owned(), csv)]
}

/// A 200-step effect strings game of players p1 and p2 and citizens c0…c19 (the first of
/// the generated ones): each step as a verb and as the generic step it stands for.
fn effect_steps() -> (Json, Vec<Json>, Vec<Json>) {
    let cards: Vec<Json> =
        (0..20).map(|i| json!({"id": format!("c{i}"), "card": format!("Citizen {i}")})).collect();
    let setup = json!({"players": {"p1": {"g": 5, "s": 5}, "p2": {"g": 5, "s": 5}}, "cards": cards});
    let (mut verbs, mut generic) = (Vec::new(), Vec::new());
    let mut choice = 0;
    for i in 0..200 {
        let player = if i % 2 == 0 { "p1" } else { "p2" };
        let card = format!("c{}", i % 20);
        if i < 20 {
            verbs.push(json!({"own": {"card": card, "player": player}}));
            generic.push(json!({"emit": {"event": "Owned", "args": {"card": card, "player": player}}}));
            continue;
        }
        let column = if i % 3 == 0 { "special_payout_off_turn" } else { "special_payout_on_turn" };
        verbs.push(json!({"activate": {"card": card, "player": player, "column": column}}));
        generic.push(json!({"emit": {"event": "Activate", "args": {"card": card, "player": player, "column": column}}}));
        // `choose g 2 m 2` (every fourth citizen, on turn) asks: answered at once.
        if column == "special_payout_on_turn" && (i % 20) % 4 == 0 {
            choice += 1;
            let answer = json!({"choose": {"choice": choice, "picks": ["g 2"]}});
            verbs.push(answer.clone());
            generic.push(answer);
        }
    }
    (setup, verbs, generic)
}

fn bench_dialects(c: &mut Criterion) {
    let mut g = c.benchmark_group("dialects");
    g.sample_size(20);
    let compiled = load_rows(&mut g, "load_1000_features", &files(), creature::compile_texts);
    load_rows(&mut g, "load_1000_cards", &cards(), dialects::rulescript::compile_texts);
    let book = Arc::new(events::RuleBook::compile(Arc::new(compiled.load().expect("loads"))).expect("rules"));
    let (setup, verbs, generic) = game_steps();
    let setup = game::setup(&setup).expect("a setup");
    // Both games end the same.
    let play = |steps: &mut dyn Iterator<Item = events::Step>| replay(&book, &setup, steps);
    let from_verbs = |verbs: &[Json]| {
        play(&mut verbs.iter().map(|v| match game::step(v).expect("a verb") {
            game::Step::Play(s) => s,
            other => panic!("not a play: {other:?}"),
        }))
    };
    let from_generic =
        |steps: &[Json]| play(&mut steps.iter().map(|s| sheetd::cli::steps::game_step(s).expect("a step")));
    let (a, b) = (from_verbs(&verbs), from_generic(&generic));
    assert_eq!(a.character().sheet().values(), b.character().sheet().values());
    g.bench_function("replay_200_steps/dialect", |b| b.iter(|| from_verbs(black_box(&verbs))));
    g.bench_function("replay_200_steps/native", |b| b.iter(|| from_generic(black_box(&generic))));
    bench_effects(&mut g);
    bench_wwrf(&mut g);
    g.finish();
}

/// The effect strings' rows (see the module docs).
fn bench_effects(g: &mut Group<'_>) {
    use dialects::effects;
    let compiled = load_rows(g, "load_1000_effect_cards", &effect_cards(), effects::compile_texts);
    let book = Arc::new(events::RuleBook::compile(Arc::new(compiled.load().expect("loads"))).expect("rules"));
    let (setup, verbs, generic) = effect_steps();
    let setup = effects::game::setup(&setup).expect("a setup");
    replay_rows(g, "replay_200_effect_steps", &book, &setup, (&verbs, &generic), effects::game::step);
}

/// 1,000 role files, four kinds of ability line in turn.
fn role_files() -> Vec<(String, String)> {
    (0..1000)
        .map(|i| {
            let (class, category, line) = match i % 4 {
                0 => (
                    "Townsfolk",
                    "Power",
                    "Start Night: Protect @Selection from `Attacks` through Active Defense (~Phase)",
                ),
                1 => ("Werewolf", "Killing", "End Night: Attack @Selection [Temporal: Night 1+]"),
                2 => (
                    "Townsfolk",
                    "Power",
                    "Immediate Day: Manipulate @Selection's public voting power by -1 (~Phase) [Quantity: 2]",
                ),
                _ => ("Townsfolk", "Investigative", "Start Night ⟨x2⟩: Role Investigate @Selection (WD, SD)"),
            };
            let text = format!(
                "**Role {i}** | {class} {category}\n__Basics__\nRole number {i}.\n\n__Formalized__\n{line}\n"
            );
            (format!("role-{i:04}.md"), text)
        })
        .collect()
}

/// A 200-step WWRF game of players p0…p11 holding roles 0…11 (three of each kind), played
/// while it is written so that every question is answered with its number (a player the
/// night killed asks nothing): each step as a verb and as the generic step it stands for.
fn wwrf_steps(book: &Arc<events::RuleBook>) -> (Json, Vec<Json>, Vec<Json>) {
    use dialects::wwrf::game as wg;
    let players: serde_json::Map<String, Json> =
        (0..12).map(|i| (format!("p{i}"), json!(format!("Role {i}")))).collect();
    let setup = json!({ "players": players });
    let mut game = events::Game::new(book.clone()).expect("a game");
    game.apply(&wg::setup(&setup).expect("a setup")).expect("set up");
    // A verb played and written down, with the generic step it stands for.
    fn push(
        game: &mut events::Game,
        out: &mut (Vec<Json>, Vec<Json>),
        verb: Json,
        native: Json,
    ) -> Option<events::Pending> {
        let step = match dialects::wwrf::game::step(&verb).expect("a verb") {
            game::Step::Play(s) => s,
            other => panic!("not a play: {other:?}"),
        };
        let pending = game.apply(&step).ok().and_then(|r| r.pending);
        out.0.push(verb);
        out.1.push(native);
        pending
    }
    let mut out = (Vec::new(), Vec::new());
    push(
        &mut game,
        &mut out,
        json!({"start_phase": {"phase": "Day 1"}}),
        json!({"emit": {"event": "Begin", "args": {"phase": "2"}}}),
    );
    let mut night = false;
    let mut round = 0;
    while out.0.len() < 200 {
        // By day the manipulators (2, 6, 10) and votes; by night the others; then the phase ends.
        let actors: &[usize] = if night { &[0, 4, 8, 1, 5, 9, 3, 7, 11] } else { &[2, 6, 10] };
        for a in actors {
            let by = format!("p{a}");
            let verb = json!({"execute": {"line": 1, "by": by}});
            let native = json!({"emit": {"event": "Execute", "args": {"player": by, "line": "1"}}});
            if let Some(q) = push(&mut game, &mut out, verb, native) {
                let pick = q.options[(a + round) % q.options.len()].to_string();
                let answer = json!({"choose": {"choice": q.choice, "picks": [pick]}});
                let step = events::Step::Choose { choice: q.choice, picks: vec![pick] };
                game.apply(&step).expect("answered");
                out.0.push(answer.clone());
                out.1.push(answer);
            }
        }
        if !night {
            for v in 0..12 {
                let (voter, vote) = (format!("p{v}"), format!("p{}", (v + round) % 12));
                let native = json!({"emit": {"event": "Vote", "args": {"voter": voter, "vote": vote}}});
                push(&mut game, &mut out, json!({"vote": {"player": voter, "for": vote}}), native);
            }
        }
        push(
            &mut game,
            &mut out,
            json!({"advance_phase": {}}),
            json!({"emit": {"event": "Advance", "args": {}}}),
        );
        night = !night;
        round += 1;
    }
    out.0.truncate(200);
    out.1.truncate(200);
    (setup, out.0, out.1)
}

/// WWRF's rows (see the module docs).
fn bench_wwrf(g: &mut Group<'_>) {
    use dialects::wwrf;
    let compiled = load_rows(g, "load_1000_roles", &role_files(), wwrf::compile_texts);
    let book = Arc::new(events::RuleBook::compile(Arc::new(compiled.load().expect("loads"))).expect("rules"));
    let (setup, verbs, generic) = wwrf_steps(&book);
    let setup = wwrf::game::setup(&setup).expect("a setup");
    replay_rows(g, "replay_200_wwrf_steps", &book, &setup, (&verbs, &generic), wwrf::game::step);
}

type Group<'a> = criterion::BenchmarkGroup<'a, criterion::measurement::WallTime>;

/// A dialect's compiler of (file name, text) pairs.
type Compile = fn(&[(String, String)]) -> Result<creature::Compiled, Vec<data::Diagnostic>>;

/// Rows `NAME/dialect` (the dialect's files read, compiled, loaded and their rules checked)
/// and `NAME/native` (their translation loaded and its rules checked); the compiled files.
fn load_rows(
    g: &mut Group<'_>,
    name: &str,
    files: &[(String, String)],
    compile: Compile,
) -> creature::Compiled {
    let compiled = compile(files).expect("the generated files compile");
    let native = compiled.files.clone();
    g.bench_function(format!("{name}/dialect"), |b| {
        b.iter(|| {
            let c = compile(black_box(files)).expect("compiles");
            events::RuleBook::compile(Arc::new(c.load().expect("loads"))).expect("rules check")
        })
    });
    g.bench_function(format!("{name}/native"), |b| {
        b.iter(|| {
            let r = data::load_texts(black_box(&native).iter().map(|(n, t)| (n.as_str(), t.as_str())))
                .expect("loads");
            events::RuleBook::compile(Arc::new(r)).expect("rules check")
        })
    });
    compiled
}

/// Rows `NAME/dialect` (a game replayed from its verbs, each made into a step by `step`; a
/// generic step, a `choose`, as it is) and `NAME/native` (from the generic steps they stand
/// for), each from a new game and its setup; both games end alike, every question answered.
fn replay_rows(
    g: &mut Group<'_>,
    name: &str,
    book: &Arc<events::RuleBook>,
    setup: &events::Step,
    (verbs, generic): (&[Json], &[Json]),
    step: fn(&Json) -> Result<game::Step, String>,
) {
    let play = |steps: &mut dyn Iterator<Item = events::Step>| replay(book, setup, steps);
    let from_verbs = |verbs: &[Json]| {
        play(&mut verbs.iter().map(|v| match step(v).expect("a verb") {
            game::Step::Play(s) => s,
            game::Step::Generic(j) => sheetd::cli::steps::game_step(&j).expect("a step"),
            other => panic!("not a play: {other:?}"),
        }))
    };
    let from_generic =
        |steps: &[Json]| play(&mut steps.iter().map(|s| sheetd::cli::steps::game_step(s).expect("a step")));
    let (a, b) = (from_verbs(verbs), from_generic(generic));
    assert!(a.pending().is_none(), "every question answered");
    assert_eq!(a.character().sheet().values(), b.character().sheet().values());
    g.bench_function(format!("{name}/dialect"), |b| b.iter(|| from_verbs(black_box(verbs))));
    g.bench_function(format!("{name}/native"), |b| b.iter(|| from_generic(black_box(generic))));
}

/// A new game of `book`, set up, then `steps` played (a step refused is left as it is).
fn replay(
    book: &Arc<events::RuleBook>,
    setup: &events::Step,
    steps: &mut dyn Iterator<Item = events::Step>,
) -> events::Game {
    let mut game = events::Game::new(book.clone()).expect("a game");
    game.apply(setup).expect("set up");
    for s in steps {
        let _ = game.apply(&s);
    }
    game
}

criterion_group!(benches, bench_dialects);
criterion_main!(benches);
