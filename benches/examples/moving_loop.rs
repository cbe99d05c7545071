//! The tick and emit rows of `benches/moving.rs` in a fixed loop, for callgrind and perf:
//! `moving_loop <setup|tick|tick0|emit> [rounds]`. `setup` adds the 100 lasting modifiers and
//! removes them again each round; `tick` adds them and lets a tick expire them (the difference
//! is the tick); `tick0` ticks with nothing to expire (what a tick costs in itself); `emit`
//! emits the event that fires 10 rules. Prints the median time of the timed part of a round
//! (the removal, or the tick), a quick figure between criterion runs.

#[global_allocator]
static ALLOCATOR: sheetd::alloc::Allocator = sheetd::alloc::Allocator;

use data::{Character, SheetOp, Until};
use rust_decimal::Decimal;
use solver::{ModKind, ModifierSpec, Operation};
use std::sync::Arc;

fn main() {
    let mut args = std::env::args().skip(1);
    let what = args.next().unwrap_or_else(|| "tick".to_owned());
    let rounds: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(1000);
    if what == "emit" {
        return emit(rounds);
    }
    let text = sheetd_benches::moving_ruleset_text(2_000);
    let ruleset = Arc::new(data::load_str(&text, "moving.toml").expect("the ruleset loads"));
    let mut c = Character::new(ruleset).expect("a character");
    let until = Until { clock: "Turn".into(), on: None, after: Decimal::ZERO, relative: true };
    let add = |k: usize| {
        let spec =
            ModifierSpec::new(&format!("e{k}"), &format!("V{}", k * 20 + 9), ModKind::Add, "1", "bench");
        SheetOp::Lasting { op: Box::new(SheetOp::Solver(Operation::AddModifier(spec))), until: until.clone() }
    };
    let lasting: Vec<SheetOp> = (0..100).map(add).collect();
    let removal: Vec<SheetOp> =
        (0..100).map(|k| SheetOp::Solver(Operation::RemoveModifier(format!("e{k}")))).collect();
    let tick = [SheetOp::Tick { clock: "Turn".into(), on: None, by: Decimal::ONE }];
    let mut times = Vec::with_capacity(rounds);
    for _ in 0..rounds {
        if what != "tick0" {
            c.apply(&lasting).expect("the modifiers");
        }
        let t = std::time::Instant::now();
        match what.as_str() {
            "setup" => c.apply(&removal).map(drop).expect("removed"),
            _ => tick_once(&mut c, &tick),
        }
        times.push(t.elapsed());
    }
    let mean = times.iter().sum::<std::time::Duration>() / rounds.max(1) as u32;
    times.sort();
    let at = |q: usize| times.get(rounds * q / 100).copied().unwrap_or_default();
    println!(
        "{what}: {rounds} rounds, Turn at {}; median {:?} a round (the removal or the tick alone; mean {mean:?}, 90th percentile {:?})",
        c.sheet().value("Turn").expect("declared").expect("a value"),
        at(50),
        at(90),
    );
}

/// One tick, on its own (callgrind: `--toggle-collect=moving_loop::tick_once`).
#[inline(never)]
fn tick_once(c: &mut Character, tick: &[SheetOp]) {
    c.apply(tick).map(drop).expect("ticked")
}

fn emit(rounds: usize) {
    let text = sheetd_benches::emit_ruleset_text(2_000);
    let ruleset = Arc::new(data::load_str(&text, "emit.toml").expect("the ruleset loads"));
    let book = Arc::new(events::RuleBook::compile(ruleset).expect("the rules load"));
    let mut game = events::Game::new(book).expect("a game");
    let mut times = Vec::with_capacity(rounds);
    for n in 0..rounds {
        let step = events::Step::Emit { event: "Ping".into(), args: vec![("amount".into(), n.to_string())] };
        let t = std::time::Instant::now();
        emit_once(&mut game, &step);
        times.push(t.elapsed());
    }
    times.sort();
    println!(
        "emit: {rounds} rounds; median {:?} an emit",
        times.get(rounds / 2).copied().unwrap_or_default()
    );
}

/// One emit, its report dropped (callgrind: `--toggle-collect=moving_loop::emit_once`).
#[inline(never)]
fn emit_once(game: &mut events::Game, step: &events::Step) {
    std::hint::black_box(game.apply(step).expect("emits"));
}
