//! The one renderer of diagnostics for people: rustc-like, through miette, with the offending
//! text underlined. Formula errors ([`formula_error`]) and every other diagnosed problem — data
//! (ruleset files), solver, sheet, request — ([`problem`]) go through the same handler.

use crate::problem::Problem;
use formula::FormulaError;
use miette::{GraphicalReportHandler, LabeledSpan, MietteDiagnostic, NamedSource, Report};
use std::io::IsTerminal;

/// Beyond this line number a file position is shown in the message only (the renderer pads the
/// source with a newline per preceding line; a diagnostic from a server could name any line).
const MAX_PADDED_LINE: u32 = 1_000_000;

/// Colors only when stderr is a terminal and `NO_COLOR` is not set.
fn colors() -> bool {
    std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none()
}

/// The handler, 100 columns wide.
fn handler(color: bool) -> GraphicalReportHandler {
    let theme =
        if color { miette::GraphicalTheme::unicode() } else { miette::GraphicalTheme::unicode_nocolor() };
    GraphicalReportHandler::new_themed(theme).with_width(100)
}

fn render(report: &Report, color: bool, fallback: impl FnOnce() -> String) -> String {
    let mut out = String::new();
    if handler(color).render_report(&mut out, report.as_ref()).is_err() {
        // Rendering into a String cannot fail; fall back to the plain message all the same.
        out = fallback();
    }
    out
}

/// Renders `err` against `source` (the text its span points into), naming the source `name`.
pub fn formula_error(err: &FormulaError, name: &str, source: &str) -> String {
    let report = Report::new(err.clone()).with_source_code(NamedSource::new(name, source.to_owned()));
    render(&report, colors(), || format!("error[{}]: {} at {}\n", err.code, err.message, err.span))
}

/// Renders a diagnosed problem: its code and message; the formula with the span underlined, or
/// the file's line (`file:line:col`) with the offending text underlined; the cycle; the help.
pub fn problem(p: &Problem) -> String {
    problem_in(p, colors())
}

/// Renders a problem that does not stop loading (an effect a dialect loads and ignores) the
/// same way, as a warning.
pub fn warning(p: &Problem) -> String {
    rendered(p, colors(), miette::Severity::Warning)
}

fn problem_in(p: &Problem, color: bool) -> String {
    rendered(p, color, miette::Severity::Error)
}

fn rendered(p: &Problem, color: bool, severity: miette::Severity) -> String {
    let mut at = p.operation.map(|i| format!("operation {i}: ")).unwrap_or_default();
    if let Some(l) = p.location.as_ref().filter(|l| l.line > MAX_PADDED_LINE) {
        at = format!("{}:{}:{}: {at}", l.file, l.line, l.col);
    }
    let mut d =
        MietteDiagnostic::new(format!("{at}{}", p.message)).with_code(p.full_code()).with_severity(severity);
    if let Some(h) = &p.help {
        d = d.with_help(h.clone());
    }
    if !p.cycle.is_empty() {
        let help = format!("the cycle: {} (modifiers {})", p.cycle.join(" → "), p.cycle_modifiers.join(", "));
        d = d.with_help(p.help.as_ref().map_or(help.clone(), |h| format!("{h}\n{help}")));
    }
    let (source, span) = if let Some(f) = &p.formula {
        let end = (f.end as usize).min(f.text.len());
        let start = (f.start as usize).min(end);
        // An empty span (the formula ended too soon) points at the place after the text.
        let text = if start == end { format!("{} ", f.text) } else { f.text.clone() };
        (Some(NamedSource::new("formula", text)), Some((start, (end - start).max(1))))
    } else if let Some(l) = &p.location.as_ref().filter(|l| l.line > 0 && l.line <= MAX_PADDED_LINE) {
        // The line alone, after as many empty lines as precede it, so miette counts lines and
        // columns as the file does.
        let padding = "\n".repeat(l.line as usize - 1);
        let col_bytes: usize =
            l.line_text.chars().take(l.col.saturating_sub(1) as usize).map(char::len_utf8).sum();
        let len = l.line_text[col_bytes..].chars().take(l.len.max(1) as usize).map(char::len_utf8).sum();
        let text = format!("{padding}{}", l.line_text);
        (Some(NamedSource::new(&l.file, text)), Some((padding.len() + col_bytes, len)))
    } else {
        (None, None)
    };
    if let Some(span) = span {
        d = d.with_label(LabeledSpan::at(span, "here"));
    }
    let word = if severity == miette::Severity::Warning { "warning" } else { "error" };
    let fallback = || format!("{word}[{}]: {at}{}\n", p.full_code(), p.message);
    let report = Report::new(d);
    let report = match source {
        Some(s) => report.with_source_code(s),
        None => report,
    };
    render(&report, color, fallback)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load_error(text: &str) -> Problem {
        let errors = data::load_str(text, "rules.toml").expect_err("the ruleset is broken");
        Problem::of_diagnostic(&errors[0])
    }

    /// A dialect's problems render the same way, at the token inside the string they came
    /// from; its warnings as warnings.
    #[test]
    fn dialect_problems_render_at_their_token() {
        let feature = "{\"name\": \"F\", \"subfeatures\": [{\"trigger\": \"passive\",\n  \"effects\": [{\"effect\": [\"Set N = N\", \"SPELLDC\", \"(8,INT,%)\"]}]}]}";
        let e = dialects::creature::compile_texts(&[("f.json".to_owned(), feature.to_owned())])
            .expect_err("a bad token");
        insta::assert_snapshot!("creature_problem", problem_in(&Problem::of_diagnostic(&e[0]), false));
        let cards =
            "[{\"name\": \"X\", \"type\": \"action\",\n  \"rules\": [\"action = [[if lambda: 1]] draw()\"]}]";
        let e = dialects::rulescript::compile_texts(&[("cards.json".to_owned(), cards.to_owned())])
            .expect_err("python");
        insta::assert_snapshot!("rulescript_problem", problem_in(&Problem::of_diagnostic(&e[0]), false));
        let warned = "{\"name\": \"F\", \"subfeatures\": [{\"trigger\": \"action\",\n  \"effects\": [{\"effect\": [\"Plane shift\"]}]}]}";
        let c =
            dialects::creature::compile_texts(&[("f.json".to_owned(), warned.to_owned())]).expect("loads");
        let w = Problem::of_diagnostic(&c.warnings[0]);
        insta::assert_snapshot!("creature_warning", rendered(&w, false, miette::Severity::Warning));
    }

    /// Data, solver and formula problems all render through miette, pointing at the text.
    #[test]
    fn every_kind_of_problem_renders_the_same_way() {
        let data = load_error(
            "[variables.PC]\nAC = \"NUMBER\"\n[global]\nmodify = [{ var = \"AC\", add = \"Nope + 1\" }]\n",
        );
        insta::assert_snapshot!("data_problem", problem_in(&data, false));
        let mut sheet = solver::Sheet::new(std::sync::Arc::new(solver::RulesBuilder::new("PC").build()));
        let spec = solver::ModifierSpec::new("m", "X", solver::ModKind::Set, "1 +", "t");
        let solver_error = sheet.add_modifier(&spec).expect_err("no X");
        insta::assert_snapshot!("solver_problem", problem_in(&Problem::of_solve_error(&solver_error), false));
        let mut rules = solver::RulesBuilder::new("PC");
        rules.declare("X", "PC", formula::Format::Number, false).expect("declared");
        let mut sheet = solver::Sheet::new(std::sync::Arc::new(rules.build()));
        let spec = solver::ModifierSpec::new("m", "X", solver::ModKind::Add, "2 * (1 +", "t");
        let formula_error = sheet.add_modifier(&spec).expect_err("bad formula");
        let mut p = Problem::of_solve_error(&formula_error).at_operation(3, Some("add_modifier.value"));
        p.help = Some("close the parenthesis".to_owned());
        insta::assert_snapshot!("formula_problem", problem_in(&p, false));
        // A position far down a file (as a server might send) is named, not padded to.
        let mut far = data.clone();
        if let Some(l) = far.location.as_mut() {
            l.line = u32::MAX;
        }
        let shown = problem_in(&far, false);
        assert!(shown.contains(&format!("rules.toml:{}:32", u32::MAX)) && shown.len() < 1_000, "{shown}");
    }
}
