//! The anchor workload (`../shared/bench/anchor-workload/`), the benchmark shared with other
//! engines: `gen.py` writes a deterministic rule set of NUMBER variables `V0…` and modifiers
//! (SET, ADD, MULTIPLY, MAX; half constants, half formulas reading lower-numbered variables),
//! and the exact values it should solve to.
//!
//! [`Workload::generate`] runs the generator in a temporary directory (the shared folder is read
//! in place, never copied) and reads its output; [`Workload::build`] turns it into a solver
//! sheet in one atomic batch with every formula compiled first. At 2,000 variables the
//! generator's checks hold: the values sum to 9,195,514; `ADD 1` on the hub (`V1`) changes 1,428
//! variables and makes the sum 9,590,433; on the leaf, 1 variable.
//!
//! Scaled versions (20,000 variables and 80,000 modifiers, 200,000 and 800,000) come from the
//! same generator with its sizes changed; they keep the shape (every read points to a lower
//! index) and take the 2,000-variable hub and leaf rules only as far as the hub is concerned
//! (`V1`; the leaf is the last variable).

use formula::Format;
use solver::{
    Catalog, Instruction, ModKind, ModifierSpec, Operation, Rules, RulesBuilder, Sheet, Step, Target,
    TemplateSpec,
};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

/// The workload compiled into a catalog: see [`Workload::templates`].
pub struct Linked {
    pub catalog: Arc<Catalog>,
    /// Every modifier, linked from its template, in file order.
    pub steps: Vec<Step>,
    /// `ADD 1` on the hub, as modifier `add-one`.
    pub hub_one: Step,
    /// `ADD 1` on the leaf, as modifier `add-one`.
    pub leaf_one: Step,
}

/// One modifier of the workload.
#[derive(Clone, Debug)]
pub struct Mod {
    pub target: usize,
    pub kind: ModKind,
    /// A constant or a formula, as written.
    pub value: String,
}

/// The workload: its modifiers, in file order, and the variables the checks change.
#[derive(Clone, Debug)]
pub struct Workload {
    pub vars: usize,
    pub mods: Vec<Mod>,
    pub hub: usize,
    pub leaf: usize,
    /// The generator's expected values (2,000 variables only): `V{i}` → value.
    pub expected: Option<Vec<i64>>,
}

/// The generator's folder, when `../shared` is beside the repository.
pub fn generator_dir() -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/bench/anchor-workload");
    dir.join("gen.py").is_file().then_some(dir)
}

impl Workload {
    /// Runs the generator for `vars` variables and `mods` modifiers (the original sizes are
    /// 2,000 and 8,000; only those come with expected values). `None`, with a notice, when the
    /// generator or python3 is absent.
    pub fn generate(vars: usize, mods: usize) -> Option<Workload> {
        let Some(dir) = generator_dir() else {
            eprintln!("notice: ../shared/bench/anchor-workload is absent; skipping the anchor workload");
            return None;
        };
        let out = tempfile::tempdir().ok()?;
        let original = vars == 2_000 && mods == 8_000;
        let script = if original {
            format!("import runpy; runpy.run_path({:?}, run_name='__main__')", dir.join("gen.py"))
        } else {
            // The generator's sizes are module constants: change them, then write the modifiers
            // in the generator's format (no reference solve: it is quadratic in Python).
            format!(
                "import sys; sys.path.insert(0, {:?}); import gen; gen.NVARS = {vars}; gen.NMODS = {mods}\n\
                 with open('workload.txt', 'w') as f:\n    f.write('HUB 1\\nLEAF {}\\n')\n    \
                 [f.write(f'M {{i}} {{t}} {{k}} {{p}}\\n') for (i, t, k, p, r) in gen.gen()]\n",
                dir,
                vars - 1
            )
        };
        let status = Command::new("python3").arg("-c").arg(&script).current_dir(out.path()).output();
        match status {
            Ok(o) if o.status.success() => {}
            Ok(o) => panic!("the anchor generator failed: {}", String::from_utf8_lossy(&o.stderr)),
            Err(e) => {
                eprintln!("notice: python3 cannot run ({e}); skipping the anchor workload");
                return None;
            }
        }
        let text = std::fs::read_to_string(out.path().join("workload.txt")).expect("workload.txt");
        let mut w = Workload::parse(&text, vars);
        if original {
            let expected = std::fs::read_to_string(out.path().join("expected.txt")).expect("expected.txt");
            w.expected = Some(parse_expected(&expected, vars));
        }
        Some(w)
    }

    /// Reads `workload.txt`: `HUB n`, `LEAF n`, then `M target TYPE C|F payload` lines.
    pub fn parse(text: &str, vars: usize) -> Workload {
        let mut w = Workload { vars, mods: Vec::new(), hub: 1, leaf: vars - 1, expected: None };
        for line in text.lines().filter(|l| !l.starts_with('#')) {
            let mut f = line.splitn(5, ' ');
            match (f.next(), f.next()) {
                (Some("HUB"), Some(n)) => w.hub = n.parse().expect("a hub index"),
                (Some("LEAF"), Some(n)) => w.leaf = n.parse().expect("a leaf index"),
                (Some("M"), Some(t)) => {
                    let target = t.parse().expect("a target index");
                    let kind = ModKind::named(f.next().expect("a type")).expect("a known type");
                    let _form = f.next();
                    let value = f.next().expect("a value").to_owned();
                    w.mods.push(Mod { target, kind, value });
                }
                _ => {}
            }
        }
        w
    }

    /// The rules: `V0…` NUMBER variables in the global scope.
    pub fn rules(&self) -> Arc<Rules> {
        let mut b = RulesBuilder::new("PC");
        for i in 0..self.vars {
            b.declare(&format!("V{i}"), "PC", Format::Number, false).expect("a fresh name");
        }
        Arc::new(b.build())
    }

    /// The modifiers as solver operations, each formula compiled and each target resolved
    /// first (as a ruleset does: a sheet then adds them by index, never by name).
    pub fn operations(&self, rules: &Rules) -> Vec<Operation> {
        let global = rules.global();
        self.mods
            .iter()
            .enumerate()
            .map(|(n, m)| {
                let value = rules
                    .instruction(&m.value, global, &Format::Number, &Format::Number)
                    .expect("the workload's formulas compile");
                let mut spec =
                    ModifierSpec::new(&format!("m{n}"), &format!("V{}", m.target), m.kind, "0", "anchor");
                spec.value = value;
                spec.var = Target::Def(rules.resolve(global, &format!("V{}", m.target)).expect("declared"));
                Operation::AddModifier(spec)
            })
            .collect()
    }

    /// The modifiers compiled once into a catalog (as a ruleset's are), with the steps that
    /// link each of them by index, under its id, on the global instance; and the `ADD 1` the
    /// hub and leaf rows add, as two more templates.
    pub fn templates(&self, rules: &Arc<Rules>) -> Linked {
        let global = rules.global();
        let mut catalog = Catalog::new(rules.clone());
        let source: Arc<str> = Arc::from("anchor");
        let mut template = |label: &str, target: usize, kind: ModKind, value: &str| {
            let spec = TemplateSpec {
                var: rules.resolve(global, &format!("V{target}")).expect("declared"),
                kind,
                value: rules
                    .instruction(value, global, &Format::Number, &Format::Number)
                    .expect("the workload's formulas compile"),
                priority: 0,
                source: source.clone(),
                condition: None,
                scope: global,
            };
            catalog.add(label, spec).expect("the workload's modifiers check")
        };
        let steps = self
            .mods
            .iter()
            .enumerate()
            .map(|(n, m)| {
                let id = format!("m{n}");
                let template = template(&id, m.target, m.kind, &m.value);
                Step::Template { id: Arc::from(id), template, on: None }
            })
            .collect();
        let one = |t| Step::Template { id: Arc::from("add-one"), template: t, on: None };
        let hub_one = one(template("add-one", self.hub, ModKind::Add, "1"));
        let leaf_one = one(template("add-one", self.leaf, ModKind::Add, "1"));
        Linked { catalog: Arc::new(catalog), steps, hub_one, leaf_one }
    }

    /// A sheet with every modifier, added in one atomic batch.
    pub fn build(&self) -> Sheet {
        let rules = self.rules();
        let ops = self.operations(&rules);
        let mut sheet = Sheet::new(rules);
        sheet.apply(&ops).expect("the workload applies");
        sheet
    }

    /// An `ADD 1` constant modifier on `V{target}`, its target resolved first, as the
    /// workload's own modifiers are (see [`Workload::operations`]).
    pub fn add_one(rules: &Rules, target: usize) -> ModifierSpec {
        let mut spec = Self::add_one_by_name(target);
        spec.var = Target::Def(rules.resolve(rules.global(), &format!("V{target}")).expect("declared"));
        spec
    }

    /// The same modifier naming its target, resolved by the sheet when it is added (as a
    /// request naming a variable is).
    pub fn add_one_by_name(target: usize) -> ModifierSpec {
        let mut spec = ModifierSpec::new("add-one", &format!("V{target}"), ModKind::Add, "1", "check");
        spec.value = Instruction::Literal(formula::Value::Number(rust_decimal::Decimal::ONE), Arc::from("1"));
        spec
    }
}

/// The sum of every value of the sheet (the workload's check).
pub fn sum(sheet: &Sheet) -> i64 {
    sheet
        .values()
        .iter()
        .map(|(_, s)| match s {
            Ok(formula::Value::Number(d)) => {
                rust_decimal::prelude::ToPrimitive::to_i64(d).expect("a whole number")
            }
            other => panic!("a NUMBER value, not {other:?}"),
        })
        .sum()
}

fn parse_expected(text: &str, vars: usize) -> Vec<i64> {
    let mut values = vec![0; vars];
    for line in text.lines() {
        if let Some((name, v)) = line.split_once(' ')
            && let Some(i) = name.strip_prefix('V').and_then(|i| i.parse::<usize>().ok())
        {
            values[i] = v.parse().expect("a value");
        }
    }
    values
}
