//! A game's moving parts (issue 14), on a 2,000-variable character: NUMBER variables `V0…`
//! in chains of ten (`V{i} = V{i-1} + 1` within a chain) and a global `Turn` clock.
//!
//! - `tick_expiring_100`: a `tick` of `Turn` that expires 100 ad-hoc modifiers (`ADD 1` on
//!   100 variables, the ends of 100 chains, each lasting until Turn passes its value when
//!   added): 100 removals and 100 evaluations in one batch;
//! - baseline in the same run, `one_modifier_added`: the incremental change the issue measures
//!   against — one ad-hoc modifier added to a chain's end (removed again, untimed).
//!
//! - `emit_10_rules`: an `emit` of an event whose argument is written into a channel and
//!   which fires 10 global rules, each adjusting its own stock by the argument: 11 batches
//!   (the argument's, then one per rule), each recomputing its change, merged into one report.
//!
//! - `count_instance_added_1000`: a worker added to a scope that `count(PC.WORKER, Busy == 0)`
//!   watches, with 1,000 workers present (the worker's instance, its variables, and its
//!   modifier into the aggregate; the count and the global reading it recomputed); removed
//!   again, untimed.
//!
//! The modifiers a tick expires are added again before each tick, untimed.

#[global_allocator]
static ALLOCATOR: sheetd::alloc::Allocator = sheetd::alloc::Allocator;

use criterion::{Criterion, criterion_group, criterion_main};
use data::{Character, SheetOp, Until};
use rust_decimal::Decimal;
use solver::{ModKind, ModifierSpec, Operation};
use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

const VARS: usize = 2_000;

/// The ruleset: `V0…V1999` in chains of ten, and the `Turn` clock.
fn ruleset() -> Arc<data::Ruleset> {
    let text = sheetd_benches::moving_ruleset_text(VARS);
    Arc::new(
        data::load_str(&text, "moving.toml").unwrap_or_else(|e| panic!("the bench ruleset loads: {e:?}")),
    )
}

fn add(id: &str, var: usize) -> SheetOp {
    SheetOp::Solver(Operation::AddModifier(ModifierSpec::new(
        id,
        &format!("V{var}"),
        ModKind::Add,
        "1",
        "bench",
    )))
}

/// The 100 modifiers a tick expires: `ADD 1` on the end of every other chain, lasting until
/// Turn passes its value now.
fn lasting_100() -> Vec<SheetOp> {
    let until = Until { clock: "Turn".into(), on: None, after: Decimal::ZERO, relative: true };
    (0..100)
        .map(|k| SheetOp::Lasting { op: Box::new(add(&format!("e{k}"), k * 20 + 9)), until: until.clone() })
        .collect()
}

fn bench_moving(c: &mut Criterion) {
    let mut g = c.benchmark_group("moving_parts_2000");
    let mut character = Character::new(ruleset()).expect("a character");
    assert_eq!(character.sheet().variable_count(), VARS + 1);
    let one = [add("one", 1999)];
    let remove = [SheetOp::Solver(Operation::RemoveModifier("one".into()))];
    g.bench_function("one_modifier_added", |b| timed_then_undone(b, &mut character, &one, &remove));
    let lasting = lasting_100();
    let tick = [SheetOp::Tick { clock: "Turn".into(), on: None, by: Decimal::ONE }];
    g.bench_function("tick_expiring_100", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                character.apply(&lasting).expect("the modifiers");
                let t = Instant::now();
                black_box(character.apply(&tick).expect("ticks"));
                total += t.elapsed();
                assert_eq!(character.expired().len(), 100);
            }
            total
        })
    });
    let book = Arc::new(events::RuleBook::compile(emit_ruleset()).expect("the emit rules load"));
    let mut game = events::Game::new(book).expect("a game");
    let mut n = 0u64;
    g.bench_function("emit_10_rules", |b| {
        b.iter(|| {
            n += 1;
            let step =
                events::Step::Emit { event: "Ping".into(), args: vec![("amount".into(), n.to_string())] };
            let r = game.apply(&step).expect("emits");
            assert_eq!(r.fired.len(), 10);
            black_box(r)
        })
    });
    let mut guild = Character::new(guild_ruleset()).expect("a guild");
    let worker = |id: &str| SheetOp::AddObject {
        kind: "WORKER".into(),
        key: "Worker".into(),
        id: Some(id.into()),
        parent: None,
    };
    let workers: Vec<SheetOp> = (0..1000).map(|k| worker(&format!("w{k}"))).collect();
    guild.apply(&workers).expect("1,000 workers");
    assert_eq!(guild.sheet().value("Idle").expect("Idle").expect("a value").to_string(), "1000");
    let hire = [worker("new")];
    let fire = [SheetOp::RemoveObject("new".into())];
    g.bench_function("count_instance_added_1000", |b| timed_then_undone(b, &mut guild, &hire, &fire));
    g.finish();
}

/// Times batch `timed` on `c`, then undoes it with batch `undo`, untimed.
fn timed_then_undone(b: &mut criterion::Bencher<'_>, c: &mut Character, timed: &[SheetOp], undo: &[SheetOp]) {
    b.iter_custom(|iters| {
        let mut total = Duration::ZERO;
        for _ in 0..iters {
            let t = Instant::now();
            black_box(c.apply(timed).expect("the timed batch applies"));
            total += t.elapsed();
            c.apply(undo).expect("the batch undoing it applies");
        }
        total
    })
}

/// The moving ruleset with workers (`PC.WORKER`, with a `Busy` channel) and a global `Idle`
/// that counts the idle ones.
fn guild_ruleset() -> Arc<data::Ruleset> {
    let text = sheetd_benches::moving_ruleset_text(VARS)
        .replacen("[variables.PC]\n", "[variables.PC]\nIdle = \"NUMBER\"\n", 1)
        .replacen(
            "modify = [\n",
            "modify = [\n  { var = \"Idle\", set = \"count(PC.WORKER, Busy == 0)\" },\n",
            1,
        )
        + concat!(
            "[scopes]\n\"PC.WORKER\" = \"PC\"\n",
            "[channels.\"PC.WORKER\"]\nBusy = \"NUMBER\"\n",
            "[kinds.WORKER]\nscope = \"PC.WORKER\"\n",
            "[[object]]\nkind = \"WORKER\"\nkey = \"Worker\"\n",
        );
    Arc::new(data::load_str(&text, "guild.toml").unwrap_or_else(|e| panic!("the guild ruleset loads: {e:?}")))
}

/// The moving ruleset with a `Ping` event and 10 rules (`emit_ruleset_text`).
fn emit_ruleset() -> Arc<data::Ruleset> {
    let text = sheetd_benches::emit_ruleset_text(VARS);
    Arc::new(data::load_str(&text, "emit.toml").unwrap_or_else(|e| panic!("the emit ruleset loads: {e:?}")))
}

criterion_group!(benches, bench_moving);
criterion_main!(benches);
