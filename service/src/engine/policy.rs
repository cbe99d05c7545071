//! The daemon's limits and policies, in one place: what one request, one connection and the
//! whole server may use ([`Limits`], every default documented in `docs/api.md#security`), which
//! ids are valid ([`check_id`]), what a batch of operations may hold ([`check_operations`]),
//! how much of a client's text a reply may echo ([`clip`]), and how untrusted text is made safe
//! for a log line ([`LogSafe`]).
//!
//! Who may call what is `grpc/auth.rs`; where ruleset files may be read from is
//! [`data::Files`], configured here by [`Limits::read`] and the ruleset roots.

use super::error::{EngineError, FormulaSpan, Problem};
use crate::problem::Code;
use data::SheetOp;
use solver::Operation;
use std::fmt;
use std::time::Duration;

/// Every limit the daemon enforces.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Largest request message the server decodes.
    pub max_request_bytes: usize,
    /// Largest reply message it sends: lists page by it, streams split by it, and a unary
    /// reply over it is refused (`request.reply_too_large`) naming what to narrow.
    pub max_reply_bytes: usize,
    /// Operations per batch, formula length and nesting.
    pub ops: OpLimits,
    /// Most sheets the server holds.
    pub max_sheets: usize,
    /// Change events buffered per watcher (live and replayed) before a slow one must resync.
    pub watch_buffer: usize,
    /// Ruleset files: bytes per file, per load, per line.
    pub read: data::ReadLimits,
    /// Largest inline ruleset text.
    pub max_inline_ruleset_bytes: usize,
    /// Calls running on blocking threads at once (solving, store writes); more wait.
    pub max_blocking: usize,
    /// Expensive calls (WhyChanged, replays) running at once; more wait.
    pub max_expensive: usize,
    /// How long a call may wait for its turn and run before it is answered DEADLINE_EXCEEDED.
    pub call_timeout: Duration,
    /// Open connections at once; more are refused until one closes.
    pub max_connections: usize,
    /// Calls in flight at once on one connection (HTTP/2 streams, a Watch counting for as long
    /// as it streams); a client's further calls wait for one to end.
    pub max_streams: u32,
    /// Time for a new connection to complete its TLS and HTTP/2 handshakes.
    pub handshake_timeout: Duration,
    /// A connection with no call in flight for this long is closed.
    pub idle_timeout: Duration,
    /// HTTP/2 keepalive ping interval, and how long to wait for the answer.
    pub keepalive_interval: Duration,
    pub keepalive_timeout: Duration,
    /// The store's page cache.
    pub store_cache_bytes: usize,
    /// After SIGTERM, how long calls in flight may take before the process exits anyway.
    pub shutdown_grace: Duration,
}

/// Size limits on operations, checked before anything is applied.
#[derive(Clone, Copy, Debug)]
pub struct OpLimits {
    pub max_operations: usize,
    pub formula: formula::Limits,
}

/// The smallest `max_reply_bytes` a server takes: room for any one listed item and status.
pub const MIN_REPLY_BYTES: usize = 64 << 10;

/// Longest sheet or ruleset id, in bytes.
pub const MAX_ID_BYTES: usize = 128;

/// Longest status message sent to a client, in bytes.
pub const MAX_STATUS_MESSAGE: usize = 1024;

/// Largest status details sent to a client, in bytes.
pub const MAX_STATUS_DETAILS: usize = 4096;

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_request_bytes: 4 << 20,
            max_reply_bytes: 4 << 20,
            ops: OpLimits { max_operations: 1000, formula: formula::Limits::default() },
            max_sheets: 100_000,
            watch_buffer: 256,
            read: data::ReadLimits::default(),
            max_inline_ruleset_bytes: 1 << 20,
            max_blocking: 64,
            max_expensive: std::thread::available_parallelism().map_or(2, |n| n.get()),
            call_timeout: Duration::from_secs(60),
            max_connections: 512,
            max_streams: 128,
            handshake_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(300),
            keepalive_interval: Duration::from_secs(60),
            keepalive_timeout: Duration::from_secs(20),
            store_cache_bytes: 32 << 20,
            shutdown_grace: Duration::from_secs(10),
        }
    }
}

/// Checks a sheet or ruleset id: 1 to [`MAX_ID_BYTES`] ASCII letters, digits, `-`, `_` or `#`.
/// No `.`, which separates an instance id from a variable name in references, and nothing a
/// terminal or a log reader would interpret.
pub fn check_id(what: &str, id: &str) -> Result<(), EngineError> {
    let ok = !id.is_empty()
        && id.len() <= MAX_ID_BYTES
        && id.bytes().all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'#'));
    if ok {
        Ok(())
    } else {
        Err(EngineError::invalid(format!(
            "{what} id `{}` must be 1 to {MAX_ID_BYTES} letters, digits, '-', '_' or '#'",
            LogSafe(&clip(id, 64))
        )))
    }
}

/// Checks a step against the limits: a batch as [`check_operations`]; an event's arguments and
/// a choice's picks count as operations.
pub fn check_step(step: &events::Step, limits: &OpLimits) -> Result<(), EngineError> {
    let (n, holder, what) = match step {
        events::Step::Ops(ops) => return check_operations(ops, limits),
        events::Step::Emit { args, .. } => (args.len(), "the event has", "arguments"),
        events::Step::Choose { picks, .. } => (picks.len(), "the choice has", "picks"),
        events::Step::Roll { .. } => return Ok(()),
    };
    if n > limits.max_operations {
        return Err(EngineError::invalid(format!(
            "{holder} {n} {what}; the limit is {} (--max-operations)",
            limits.max_operations
        )));
    }
    Ok(())
}

/// Checks a batch against the limits: how many operations, and each formula's length and (when
/// it parses) nesting. Other formula errors are left to the solver, which reports them with
/// more context.
pub fn check_operations(ops: &[SheetOp], limits: &OpLimits) -> Result<(), EngineError> {
    if ops.len() > limits.max_operations {
        return Err(EngineError::invalid(format!(
            "the batch has {} operations; the limit is {} (--max-operations)",
            ops.len(),
            limits.max_operations
        )));
    }
    for (i, op) in ops.iter().enumerate() {
        let SheetOp::Solver(Operation::AddModifier(m)) = op else { continue };
        let formulas = [(m.value.text(), "add_modifier.value")]
            .into_iter()
            .chain(m.condition.as_ref().map(|c| (c.text(), "add_modifier.condition")));
        for (text, field) in formulas {
            if let Err(p) = check_formula(text, &limits.formula) {
                return Err(EngineError::problems(vec![(*p).at_operation(i, Some(field))]));
            }
        }
    }
    Ok(())
}

fn check_formula(text: &str, limits: &formula::Limits) -> Result<(), Box<Problem>> {
    if text.len() > limits.max_len {
        return Err(Box::new(Problem::of(
            Code::FormulaTooLong,
            format!(
                "formula is {} bytes long; the limit is {} (--max-formula-length)",
                text.len(),
                limits.max_len
            ),
        )));
    }
    match formula::parse(text, limits) {
        Err(e) if e.code == formula::ErrorCode::TooComplex => {
            let mut p = Problem::of(Code::FormulaTooDeep, e.message.clone());
            p.formula = Some(Box::new(FormulaSpan::of(text, &e)));
            Err(Box::new(p))
        }
        _ => Ok(()),
    }
}

/// At most `max` bytes of `s`, cut at a character boundary, with `…` when cut.
pub fn clip(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_owned();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &s[..end])
}

/// Untrusted text for a log line: control characters (newlines, escapes) are written as
/// `\n`, `\u{1b}` and so on, so one value can never forge or garble a line.
pub struct LogSafe<'a>(pub &'a str);

impl fmt::Display for LogSafe<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for c in self.0.chars() {
            if c.is_control() {
                write!(f, "{}", c.escape_default())?;
            } else {
                fmt::Write::write_char(f, c)?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_event_s_arguments_and_a_choice_s_picks_count_as_operations() {
        let limits = OpLimits { max_operations: 2, formula: formula::Limits::default() };
        let args = |n: usize| (0..n).map(|i| (format!("a{i}"), "1".to_owned())).collect();
        let emit = |n| events::Step::Emit { event: "Hit".into(), args: args(n) };
        assert!(check_step(&emit(2), &limits).is_ok());
        let e = check_step(&emit(3), &limits).expect_err("too many").to_string();
        assert_eq!(e, "the event has 3 arguments; the limit is 2 (--max-operations)");
        let choose = events::Step::Choose { choice: 1, picks: vec!["a".into(); 3] };
        let e = check_step(&choose, &limits).expect_err("too many").to_string();
        assert_eq!(e, "the choice has 3 picks; the limit is 2 (--max-operations)");
        assert!(check_step(&events::Step::Roll { die: "d6".into(), value: 4 }, &limits).is_ok());
    }

    #[test]
    fn ids_exclude_dots_and_control_characters_and_are_bounded() {
        for ok in ["sheet-1", "a_b", "x#1", &"a".repeat(MAX_ID_BYTES)] {
            assert!(check_id("sheet", ok).is_ok(), "{ok}");
        }
        for bad in ["", "a.b", "a\nb", "a b", "é", &"a".repeat(MAX_ID_BYTES + 1), "a\u{1b}[31m"] {
            let e = check_id("sheet", bad).expect_err(bad).to_string();
            assert!(!e.contains('\n') && e.len() < 200, "{e}");
        }
    }

    #[test]
    fn log_safe_escapes_control_characters() {
        assert_eq!(LogSafe("a\nb\r\t\u{1b}c").to_string(), "a\\nb\\r\\t\\u{1b}c");
        assert_eq!(LogSafe("plain é").to_string(), "plain é");
    }

    #[test]
    fn clipping_keeps_character_boundaries() {
        assert_eq!(clip("ééé", 3), "é…");
        assert_eq!(clip("abc", 3), "abc");
    }
}
