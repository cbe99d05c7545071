//! # sheetd-benches: criterion benchmarks for sheetd
//!
//! The bench targets live beside this file (`formula.rs`, `solver.rs`) and run with
//! `cargo bench -p sheetd-benches`. This library holds the fixtures they share: a symbol table
//! and evaluation context for NUMBER variables, and [`generator::generate_sheet`], the documented generator
//! of large sheets.
//!
//! Every bench group includes a baseline measured in the same run, so that figures from this
//! noisy 2-core machine are read relative to something.

use formula::{EvalContext, Format, Symbols, Value, VarId};
use rust_decimal::Decimal;

/// A flat table of NUMBER variables: a minimal `Symbols` + `EvalContext`, as a solver would give.
pub struct NumberVars {
    names: Vec<String>,
    values: Vec<Value>,
}

impl NumberVars {
    /// Variables named as given, each with the given value.
    pub fn new(vars: &[(&str, i64)]) -> Self {
        NumberVars {
            names: vars.iter().map(|(n, _)| n.to_ascii_lowercase()).collect(),
            values: vars.iter().map(|(_, v)| Value::Number(Decimal::from(*v))).collect(),
        }
    }
}

impl Symbols for NumberVars {
    fn resolve(&self, name: &str) -> Option<(VarId, Format)> {
        let lower = name.to_ascii_lowercase();
        self.names.iter().position(|n| *n == lower).map(|i| (VarId(i as u32), Format::Number))
    }
    fn cache_key(&self) -> Option<u64> {
        Some(1)
    }
}

impl EvalContext for NumberVars {
    fn value(&self, id: VarId) -> Option<Value> {
        self.values.get(id.0 as usize).cloned()
    }
    fn number(&self, id: VarId) -> Option<Decimal> {
        self.values.get(id.0 as usize).and_then(Value::as_number)
    }
}

pub mod workload;

/// The ruleset of `moving.rs` and `examples/moving_loop.rs`, as native-format text:
/// NUMBER variables `V0…` in chains of ten (`V{i} = V{i-1} + 1` within a chain) and a global
/// `Turn` clock.
pub fn moving_ruleset_text(vars: usize) -> String {
    use std::fmt::Write;
    let mut text = String::from("[variables.PC]\n");
    for i in 0..vars {
        writeln!(text, "V{i} = \"NUMBER\"").expect("a String takes any write");
    }
    text.push_str("[clocks.PC]\nTurn = {}\n[global]\nmodify = [\n");
    for i in (0..vars).filter(|i| i % 10 != 0) {
        writeln!(text, "  {{ var = \"V{i}\", set = \"V{} + 1\" }},", i - 1)
            .expect("a String takes any write");
    }
    text.push_str("]\n");
    text
}

/// [`moving_ruleset_text`] with a `Ping` event (its `amount` into channel `Amount`) and 10
/// rules, each adjusting its own stock `S{k}` by it: the `emit_10_rules` bench's.
pub fn emit_ruleset_text(vars: usize) -> String {
    use std::fmt::Write;
    let mut text = moving_ruleset_text(vars);
    text.push_str("[channels.PC]\nAmount = \"NUMBER\"\n[stocks.PC]\n");
    for k in 0..10 {
        writeln!(text, "S{k} = {{}}").expect("a String takes any write");
    }
    text.push_str("[events]\nPing = { amount = \"Amount\" }\n");
    for k in 0..10 {
        writeln!(
            text,
            "[[rule]]\nname = \"R{k}\"\non = \"Ping\"\ndo = [{{ adjust = {{ channel = \"S{k}\", by = \"Amount\" }} }}]"
        )
        .expect("a String takes any write");
    }
    text
}

pub mod generator {
    //! The generator of benchmark sheets, deterministic for a given seed.
    //!
    //! - `vars` global NUMBER variables `V0` … `V{vars-1}`, and a scope `PC.ITEM` with five
    //!   local NUMBER variables `L0` … `L4`.
    //! - `mods` modifiers, each on a random variable: half constants (SET, ADD, MULTIPLY by 1 or
    //!   2, MAX, MIN with small integers), half formulas reading 1 to 3 variables with lower
    //!   numbers than the target (so the graph is acyclic by construction), shaped to keep
    //!   values bounded: `floor((Va + Vb) / 2) + 1`, `max(Va, Vb, Vc) - 1`, `Va % 7 + 3`,
    //!   `min(Va, 50) + 1`. User priorities are 0, 1 or 2.
    //! - [`item_modifiers`]: the 20 modifiers an item instance carries: 10 on its own locals
    //!   (some reading globals) and 10 adding its locals to globals in the last tenth of the
    //!   order (AC-like variables that few others read).

    use formula::Format;
    use solver::{ModKind, ModifierSpec, Rules, RulesBuilder, Sheet};
    use std::sync::Arc;

    /// A small deterministic PRNG (xorshift64*), so runs are comparable without a dependency.
    pub struct Rng(u64);

    impl Rng {
        pub fn new(seed: u64) -> Self {
            Rng(seed.max(1))
        }
        pub fn next_u64(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
        }
        pub fn below(&mut self, n: usize) -> usize {
            (self.next_u64() % n as u64) as usize
        }
    }

    /// The rules: `vars` globals and the `PC.ITEM` scope.
    pub fn rules(vars: usize) -> Arc<Rules> {
        let mut b = RulesBuilder::new("PC");
        b.add_scope("PC.ITEM", "PC").expect("new scope");
        for i in 0..vars {
            b.declare(&format!("V{i}"), "PC", Format::Number, false).expect("distinct names");
        }
        for i in 0..5 {
            b.declare(&format!("L{i}"), "PC.ITEM", Format::Number, false).expect("distinct names");
        }
        Arc::new(b.build())
    }

    /// A sheet with `vars` variables and `mods` modifiers (see the module docs).
    pub fn generate_sheet(vars: usize, mods: usize, seed: u64) -> Sheet {
        let mut rng = Rng::new(seed);
        let mut sheet = Sheet::new(rules(vars));
        for m in 0..mods {
            let id = format!("m{m}");
            let spec = if m % 2 == 0 {
                let target = rng.below(vars);
                let (kind, value) = match rng.below(5) {
                    0 => ("SET", rng.below(20).to_string()),
                    1 => ("ADD", rng.below(10).to_string()),
                    2 => ("MULTIPLY", (1 + rng.below(2)).to_string()),
                    3 => ("MAX", rng.below(5).to_string()),
                    _ => ("MIN", (100 + rng.below(100)).to_string()),
                };
                ModifierSpec::new(
                    &id,
                    &format!("V{target}"),
                    ModKind::named(kind).expect("a modifier type"),
                    &value,
                    "generated",
                )
            } else {
                let target = 1 + rng.below(vars - 1);
                let shape = rng.below(4);
                let mut pick = || format!("V{}", rng.below(target));
                let formula = match shape {
                    0 => format!("floor(({} + {}) / 2) + 1", pick(), pick()),
                    1 => format!("max({}, {}, {}) - 1", pick(), pick(), pick()),
                    2 => format!("{} % 7 + 3", pick()),
                    _ => format!("min({}, 50) + 1", pick()),
                };
                ModifierSpec::new(&id, &format!("V{target}"), ModKind::Set, &formula, "generated")
            };
            let spec = spec.priority(rng.below(3) as u32);
            sheet.add_modifier(&spec).expect("generated modifiers are valid and acyclic");
        }
        sheet
    }

    /// The 20 modifiers an item instance `item` carries (see the module docs).
    pub fn item_modifiers(item: &str, vars: usize, rng: &mut Rng) -> Vec<ModifierSpec> {
        let mut out = Vec::with_capacity(20);
        for i in 0..10 {
            let local = format!("L{}", i % 5);
            let value = if i % 2 == 0 {
                (1 + rng.below(5)).to_string()
            } else {
                format!("V{} % 5 + 1", rng.below(vars))
            };
            let kind = if i < 5 { "SET" } else { "ADD" };
            out.push(
                ModifierSpec::new(
                    &format!("{item}-l{i}"),
                    &local,
                    ModKind::named(kind).expect("a modifier type"),
                    &value,
                    item,
                )
                .on(item)
                .priority(1),
            );
        }
        for i in 0..10 {
            let target = vars - 1 - rng.below(vars / 10);
            out.push(
                ModifierSpec::new(
                    &format!("{item}-g{i}"),
                    &format!("V{target}"),
                    ModKind::Add,
                    &format!("L{}", i % 5),
                    item,
                )
                .from(item)
                .priority(3),
            );
        }
        out
    }
}

/// Helpers shared by the daemon's load examples (`loadgen`, `soak`).
pub mod load {
    use std::time::Duration;

    /// The value after `--name` on the command line, or `default` when absent or unparsable.
    pub fn arg<T: std::str::FromStr>(name: &str, default: T) -> T {
        let args: Vec<String> = std::env::args().collect();
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    }

    /// The text after `--name` on the command line, if any.
    pub fn arg_str(name: &str) -> Option<String> {
        let args: Vec<String> = std::env::args().collect();
        args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).cloned()
    }

    /// A `sheetd serve` process on a free loopback port over `data_dir`, killed when dropped.
    pub struct Server {
        child: std::process::Child,
        /// Where it serves, as `http://127.0.0.1:PORT`.
        pub url: String,
    }

    impl Server {
        /// Starts the binary at `path` (logging warnings only, to this process's stderr
        /// unless `quiet`) and waits for its "serving on" line.
        pub fn start(path: &str, data_dir: &std::path::Path, quiet: bool) -> Server {
            Server::start_with(path, data_dir, &[], quiet)
        }

        /// [`Server::start`] with more arguments (`--store URL`, say).
        pub fn start_with(path: &str, data_dir: &std::path::Path, args: &[&str], quiet: bool) -> Server {
            use std::process::{Command, Stdio};
            let mut child = Command::new(path)
                .args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
                .arg(data_dir)
                .args(args)
                .env("RUST_LOG", "warn")
                .stdout(Stdio::piped())
                .stderr(if quiet { Stdio::null() } else { Stdio::inherit() })
                .spawn()
                .unwrap_or_else(|e| {
                    panic!("cannot start {path} (cargo build --release -p sheetd first): {e}")
                });
            let mut line = String::new();
            let stdout = child.stdout.take().expect("stdout");
            std::io::BufRead::read_line(&mut std::io::BufReader::new(stdout), &mut line).expect("read");
            let url = line
                .trim()
                .strip_prefix("sheetd serving on ")
                .and_then(|r| r.split_whitespace().next())
                .expect("the server prints its address")
                .to_owned();
            Server { child, url }
        }

        /// Its process id.
        pub fn pid(&self) -> u32 {
            self.child.id()
        }
    }

    impl Drop for Server {
        fn drop(&mut self) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }

    /// The release `sheetd` binary: `--server PATH`, or the workspace's `target/release/sheetd`.
    pub fn server_binary() -> String {
        arg_str("--server").unwrap_or_else(|| {
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../target/release/sheetd")
                .display()
                .to_string()
        })
    }

    /// CPU time (user + system) that process `pid` (`"self"` for this one) has used so far, in
    /// seconds, from `/proc/PID/stat` (clock ticks of 1/100 s, as Linux reports them there);
    /// `None` where there is no `/proc`.
    pub fn cpu_seconds(pid: &str) -> Option<f64> {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        // The command name (field 2) may hold spaces; the fields after its `)` are fixed.
        let rest = &stat[stat.rfind(')')? + 1..];
        let fields: Vec<&str> = rest.split_whitespace().collect();
        // utime and stime are fields 14 and 15: 11 and 12 after the name.
        let ticks = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
        Some(ticks as f64 / 100.0)
    }

    /// The `p` quantile (0 to 1) of sorted durations; zero when there are none.
    pub fn percentile(sorted: &[Duration], p: f64) -> Duration {
        if sorted.is_empty() {
            return Duration::ZERO;
        }
        let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
        sorted[i.min(sorted.len() - 1)]
    }
}
