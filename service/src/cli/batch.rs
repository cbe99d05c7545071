//! `sheetd batch --ruleset R --in sheets.jsonl --out results.jsonl`: solve many independent
//! sheets offline, in parallel on all cores, with one compiled ruleset shared by all.
//!
//! Input lines: `{"id": "...", "steps": [...], "variables": ["AC", ...]}` (steps as in sheet
//! files; `variables` optional). Output lines, in input order:
//! `{"id": "...", "values": {"AC": "17", ...}}` or `{"id": "...", "error": [diagnostics]}`.
//! Values are encoded as everywhere in sheetd's JSON (numbers as canonical decimal strings).
//!
//! `--shard I/N` solves a deterministic share of the input: of its L sheets (non-blank lines),
//! those numbered `I·L/N` up to `(I+1)·L/N` (rounded down; `0 ≤ I < N`), so that N processes —
//! a Kubernetes Indexed Job, say — split one input without coordinating, and their outputs,
//! concatenated in shard order, are the unsharded output.

use crate::json;
use crate::problem::Problem;
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use rayon::prelude::*;
use serde::Deserialize;
use serde_json::{Map, Value as Json, json};
use std::io::{BufRead, BufReader, BufWriter, IsTerminal, Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

/// Arguments of `sheetd batch`.
#[derive(Debug, Args)]
pub struct BatchArgs {
    /// The ruleset (repeatable: later ones load on top). Default: the bundled starter ruleset.
    #[arg(long = "ruleset", value_name = "RULESET")]
    pub ruleset: Vec<PathBuf>,

    /// Input: one sheet specification per line (`-` for stdin).
    #[arg(long = "in", value_name = "FILE")]
    pub input: PathBuf,

    /// Output: one result per line, in input order (`-` for stdout).
    #[arg(long = "out", value_name = "FILE")]
    pub output: PathBuf,

    /// Worker threads (default: one per core).
    #[arg(long, value_name = "N")]
    pub jobs: Option<usize>,

    /// Solve only share I of N (0 ≤ I < N): a contiguous run of the input's sheets, the same
    /// for every run; the N outputs concatenated in order are the whole output
    /// (docs/deploy.md). E.g. `--shard $(JOB_COMPLETION_INDEX)/8` in an Indexed Job.
    #[arg(long, value_name = "I/N", value_parser = Shard::parse)]
    pub shard: Option<Shard>,
}

/// A share of a batch's input: `index` of `count`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shard {
    pub index: u64,
    pub count: u64,
}

impl Shard {
    /// `I/N` with `0 ≤ I < N`.
    pub fn parse(s: &str) -> Result<Shard, String> {
        let bad = || format!("`{s}`: a shard is I/N, two whole numbers with 0 ≤ I < N (e.g. 0/4)");
        let (i, n) = s.split_once('/').ok_or_else(bad)?;
        let (index, count) =
            (i.trim().parse::<u64>().map_err(|_| bad())?, n.trim().parse::<u64>().map_err(|_| bad())?);
        if count == 0 || index >= count {
            return Err(bad());
        }
        Ok(Shard { index, count })
    }

    /// The sheets (numbered from 0 among the input's non-blank lines) of this share, of `total`.
    pub fn range(&self, total: u64) -> std::ops::Range<u64> {
        // In u128: `total * count` cannot overflow.
        let at = |i: u64| (u128::from(total) * u128::from(i) / u128::from(self.count)) as u64;
        at(self.index)..at(self.index + 1)
    }
}

/// One input line: a sheet to solve (also `sheetd client batch`'s, sent to SolveBatch).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Spec {
    pub id: Json,
    #[serde(default)]
    pub steps: Vec<Json>,
    #[serde(default)]
    pub variables: Vec<String>,
}

/// How many lines are solved together (then written in order).
const CHUNK: usize = 4096;

fn error_line(id: Json, problems: &[Problem]) -> Json {
    json!({"id": id, "error": problems.iter().map(json::problem).collect::<Vec<_>>()})
}

/// Solves one input line into one output line; `Err` marks a failed sheet.
fn solve_line(ruleset: &Arc<data::Ruleset>, line: &str, number: usize) -> Result<Json, Json> {
    let bad =
        |message: String| error_line(Json::Null, &[Problem::of(crate::problem::Code::BadLine, message)]);
    let spec: Spec = serde_json::from_str(line).map_err(|e| bad(format!("line {number}: {e}")))?;
    let mut ops = Vec::with_capacity(spec.steps.len());
    for (i, s) in spec.steps.iter().enumerate() {
        let op = super::steps::sheet_op(s).map_err(|e| {
            let p = Problem::new(e.code(), format!("line {number}, step {i}: {}", e.message()))
                .at_operation(i, None);
            error_line(spec.id.clone(), &[p])
        })?;
        ops.push(op);
    }
    let failed = |e: &data::SheetError, ops: &[data::SheetOp]| {
        error_line(spec.id.clone(), &[Problem::of_sheet_error(e, ops)])
    };
    let mut c = data::Character::new(ruleset.clone()).map_err(|e| failed(&e, &[]))?;
    c.apply(&ops).map_err(|e| failed(&e, &ops))?;
    let mut values = Map::new();
    if spec.variables.is_empty() {
        for v in data::record::values(&c) {
            values.insert(v.var, json::record(&v.value));
        }
    } else {
        for r in &spec.variables {
            let (var, format, slot) = c
                .sheet()
                .typed_value(r)
                .map_err(|e| error_line(spec.id.clone(), &[Problem::new(e.code.as_str(), e.message)]))?;
            values.insert(var.to_string(), json::record(&data::record::Value::of(&format, &slot)));
        }
    }
    Ok(json!({"id": spec.id, "values": values}))
}

/// Runs `sheetd batch`.
pub fn run(args: BatchArgs) -> ExitCode {
    match batch(&args) {
        Ok(0) => ExitCode::SUCCESS,
        Ok(_) => ExitCode::from(1),
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}

/// On a terminal (stderr), a progress bar: with the number of sheets to solve when it is known
/// (an input file), the count, rate and time left; else a spinner with the count and rate.
/// Nothing when stderr is not a terminal (a pipe, a log file, CI).
fn progress_bar(total: Option<u64>) -> ProgressBar {
    if !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    match total {
        Some(n) => {
            let b = ProgressBar::new(n);
            b.set_style(
                ProgressStyle::with_template(
                    "{bar:30} {pos}/{len} sheets  {rate}  {elapsed} elapsed, ETA {eta} {msg}",
                )
                .map(|s| {
                    s.with_key("rate", |state: &indicatif::ProgressState, w: &mut dyn std::fmt::Write| {
                        let _ = write!(w, "{:.0} sheets/s", state.per_sec());
                    })
                })
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
            );
            b
        }
        None => {
            let b = ProgressBar::new_spinner();
            b.set_style(
                ProgressStyle::with_template("{spinner} {pos} sheets solved ({per_sec}) {elapsed} {msg}")
                    .unwrap_or_else(|_| ProgressStyle::default_spinner()),
            );
            b
        }
    }
}

/// How many sheets an input file holds (its non-blank lines), for the progress bar; `None` for
/// stdin, or when the file cannot be read (the real read reports why).
fn count_sheets(input: &std::path::Path) -> Option<u64> {
    if input.as_os_str() == "-" || !std::io::stderr().is_terminal() {
        return None;
    }
    let f = std::fs::File::open(input).ok()?;
    let mut n = 0u64;
    for line in BufReader::new(f).split(b'\n') {
        if line.ok()?.iter().any(|b| !b.is_ascii_whitespace()) {
            n += 1;
        }
    }
    Some(n)
}

type Input = Box<dyn BufRead>;
type Output = Box<dyn Write>;

/// The input (a file or stdin) and the output (a file or stdout).
fn open_files(args: &BatchArgs) -> Result<(Input, Output), String> {
    let input: Box<dyn BufRead> = if args.input.as_os_str() == "-" {
        Box::new(BufReader::new(std::io::stdin()))
    } else {
        let f = std::fs::File::open(&args.input)
            .map_err(|e| format!("cannot read {}: {e}", args.input.display()))?;
        Box::new(BufReader::new(f))
    };
    let output: Box<dyn Write> = if args.output.as_os_str() == "-" {
        Box::new(BufWriter::new(std::io::stdout()))
    } else {
        let f = std::fs::File::create(&args.output)
            .map_err(|e| format!("cannot write {}: {e}", args.output.display()))?;
        Box::new(BufWriter::new(f))
    };
    Ok((input, output))
}

/// Counts the non-blank lines of `input`, then gives it back from its start: a file is read
/// again, stdin is kept in memory.
fn count_lines(args: &BatchArgs, input: Input) -> Result<(u64, Input), String> {
    let nonblank = |l: &[u8]| l.iter().any(|b| !b.is_ascii_whitespace());
    if args.input.as_os_str() == "-" {
        let mut all = Vec::new();
        let mut input = input;
        input.read_to_end(&mut all).map_err(|e| format!("reading input: {e}"))?;
        let n = all.split(|&b| b == b'\n').filter(|l| nonblank(l)).count() as u64;
        return Ok((n, Box::new(std::io::Cursor::new(all))));
    }
    let mut n = 0;
    for line in input.split(b'\n') {
        n += u64::from(nonblank(&line.map_err(|e| format!("reading input: {e}"))?));
    }
    let f =
        std::fs::File::open(&args.input).map_err(|e| format!("cannot read {}: {e}", args.input.display()))?;
    Ok((n, Box::new(BufReader::new(f))))
}

fn batch(args: &BatchArgs) -> Result<usize, String> {
    let loaded = if args.ruleset.is_empty() { data::load_starter() } else { data::load(&args.ruleset) };
    let ruleset = Arc::new(loaded.map_err(|errors| {
        for e in &errors {
            eprint!("{}", crate::render::problem(&crate::problem::Problem::of_diagnostic(e)));
        }
        format!("the ruleset could not be loaded: {} errors", errors.len())
    })?);
    let (input, mut output) = open_files(args)?;
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(args.jobs.unwrap_or(0))
        .build()
        .map_err(|e| format!("cannot start worker threads: {e}"))?;
    let (input, share) = match args.shard {
        Some(shard) => {
            let (total, input) = count_lines(args, input)?;
            (input, shard.range(total))
        }
        None => (input, 0..u64::MAX),
    };
    let total = if args.shard.is_some() { Some(share.end - share.start) } else { count_sheets(&args.input) };
    let bar = progress_bar(total);
    let start = Instant::now();
    let (mut solved, mut failed) = (0usize, 0usize);
    let mut lines = input
        .lines()
        .enumerate()
        .filter(|(_, l)| l.as_ref().map_or(true, |l| !l.trim().is_empty()))
        .enumerate()
        .skip_while(|(k, _)| (*k as u64) < share.start)
        .take_while(|(k, _)| (*k as u64) < share.end)
        .map(|(_, line)| line);
    loop {
        let chunk: Vec<(usize, String)> = lines
            .by_ref()
            .take(CHUNK)
            .map(|(i, l)| l.map(|l| (i + 1, l)).map_err(|e| format!("reading input: {e}")))
            .collect::<Result<_, _>>()?;
        if chunk.is_empty() {
            break;
        }
        let results: Vec<Result<Json, Json>> = pool.install(|| {
            chunk
                .par_iter()
                .map(|(n, line)| {
                    let r = solve_line(&ruleset, line, *n);
                    bar.inc(1);
                    r
                })
                .collect()
        });
        for r in results {
            let line = match r {
                Ok(j) => {
                    solved += 1;
                    j
                }
                Err(j) => {
                    failed += 1;
                    j
                }
            };
            writeln!(output, "{line}").map_err(|e| format!("writing output: {e}"))?;
        }
    }
    output.flush().map_err(|e| format!("writing output: {e}"))?;
    bar.finish_and_clear();
    let secs = start.elapsed().as_secs_f64();
    eprintln!(
        "{} sheets: {solved} solved, {failed} failed in {secs:.2} s ({:.0} sheets/s)",
        solved + failed,
        (solved + failed) as f64 / secs.max(1e-9)
    );
    Ok(failed)
}
