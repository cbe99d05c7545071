//! The one renderer of diagnostics for people: rustc-like, through miette, with the offending
//! text underlined. Formula errors ([`formula_error`]) and every other diagnosed problem — data
//! (ruleset files), solver, sheet, request — ([`problem`]) go through the same handler.

use crate::problem::Problem;
use formula::FormulaError;
use miette::{
    GraphicalReportHandler, LabeledSpan, MietteDiagnostic, MietteError, MietteSpanContents, NamedSource,
    Report, SourceCode, SourceSpan, SpanContents,
};
use std::io::IsTerminal;

/// The widest line shown whole; a longer one (PCGen's `.lst` lines run past 1,000 columns) is
/// shown as a window of this many characters around the offending text.
const WINDOW: usize = 96;

/// Columns a tab stands for when a line is shown (rustc's choice).
const TAB: usize = 4;

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
    let at = p.operation.map(|i| format!("operation {i}: ")).unwrap_or_default();
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
        (Some(Source::Formula(NamedSource::new("formula", text))), Some((start, (end - start).max(1))))
    } else if let Some(l) = &p.location.as_ref().filter(|l| l.line > 0) {
        let (line, span) = OneLine::new(l);
        (Some(Source::Line(line)), Some(span))
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

/// What a diagnostic points into: a formula, or a line of a file.
enum Source {
    Formula(NamedSource<String>),
    Line(OneLine),
}

impl SourceCode for Source {
    fn read_span<'a>(
        &'a self,
        span: &SourceSpan,
        before: usize,
        after: usize,
    ) -> Result<Box<dyn SpanContents<'a> + 'a>, MietteError> {
        match self {
            Source::Formula(f) => f.read_span(span, before, after),
            Source::Line(l) => l.read_span(span, before, after),
        }
    }
}

/// One line of a file, as a diagnostic shows it: tabs expanded, and a window around the
/// offending text when the line is wider than [`WINDOW`]. It tells miette the line's true line
/// and column numbers, so nothing before the line is needed (a position far down a file costs
/// nothing to show).
struct OneLine {
    name: String,
    text: String,
    /// 0-based line and column (in characters) of the offending text in the file.
    line: usize,
    col: usize,
}

impl OneLine {
    /// The line of `l` and the byte span of the offending text in what is shown.
    fn new(l: &crate::problem::Location) -> (OneLine, (usize, usize)) {
        let col = l.col.saturating_sub(1) as usize;
        let len = (l.len.max(1)) as usize;
        // Expand tabs, keeping where the offending text starts and ends (in characters).
        let mut shown: Vec<char> = Vec::with_capacity(l.line_text.len());
        let (mut start, mut end) = (None, None);
        for (i, c) in l.line_text.chars().enumerate() {
            if i == col {
                start = Some(shown.len());
            }
            if i == col + len {
                end = Some(shown.len());
            }
            match c {
                '\t' => shown.extend(std::iter::repeat_n(' ', TAB - shown.len() % TAB)),
                c => shown.push(c),
            }
        }
        let start = start.unwrap_or(shown.len());
        let end = end.unwrap_or(shown.len()).max(start);
        let (mut from, mut to) = (0, shown.len());
        if shown.len() > WINDOW {
            // A third of the window before the offending text, the rest after it.
            from = start.saturating_sub(WINDOW / 3).min(shown.len().saturating_sub(WINDOW));
            to = (from + WINDOW).min(shown.len());
        }
        let mut text = String::new();
        if from > 0 {
            text.push_str("… ");
        }
        let bytes = |chars: &[char]| chars.iter().map(|c| c.len_utf8()).sum::<usize>();
        let label_start = text.len() + bytes(&shown[from..start.clamp(from, to)]);
        let label_len = bytes(&shown[start.clamp(from, to)..end.clamp(from, to)]).max(1);
        text.extend(&shown[from..to]);
        if to < shown.len() {
            text.push_str(" …");
        }
        let line = OneLine { name: l.file.clone(), text, line: l.line.saturating_sub(1) as usize, col };
        (line, (label_start, label_len))
    }
}

impl SourceCode for OneLine {
    fn read_span<'a>(
        &'a self,
        _span: &SourceSpan,
        _before: usize,
        _after: usize,
    ) -> Result<Box<dyn SpanContents<'a> + 'a>, MietteError> {
        // The whole (shown) line, whatever part is asked for: labels never leave it.
        Ok(Box::new(MietteSpanContents::new_named(
            self.name.clone(),
            self.text.as_bytes(),
            (0, self.text.len()).into(),
            self.line,
            self.col,
            1,
        )))
    }
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

    /// A PCGen line, tab-separated and over 1,000 columns, is shown as a window around the
    /// offending text with its tabs expanded; the header keeps the true line and column.
    #[test]
    fn a_long_lst_line_shows_a_window_around_the_column() {
        let filler: Vec<String> = (0..60).map(|i| format!("BONUS:VAR|Filler{i}|{i}")).collect();
        let line = format!("Longsword\t{}\tMODIFY:ItemLevle|ADD|1\t{}", filler.join("\t"), filler.join("\t"));
        assert!(line.len() > 2_000, "{}", line.len());
        let col = line.find("ItemLevle").expect("in the line") + 1;
        let p = Problem {
            code: "data.unknown_variable".to_owned(),
            message: "variable `ItemLevle` is not defined in scope PC.EQUIPMENT or its ancestors".to_owned(),
            location: Some(Box::new(crate::problem::Location {
                file: "scr_equip.lst".to_owned(),
                line: 1234,
                col: col as u32,
                line_text: line.clone(),
                len: 9,
            })),
            help: Some("did you mean `ItemLevel`?".to_owned()),
            ..Default::default()
        };
        let shown = problem_in(&p, false);
        insta::assert_snapshot!("long_lst_line", shown);
        assert!(shown.contains(&format!("scr_equip.lst:1234:{col}")), "{shown}");
        assert!(!shown.contains('\t'), "tabs are expanded");
        assert!(shown.lines().all(|l| l.chars().count() <= 120), "{shown}");
        // Short lines are shown whole, tabs expanded to the next stop of four.
        let (one, span) = OneLine::new(&crate::problem::Location {
            file: "f.lst".to_owned(),
            line: 1,
            col: 3,
            line_text: "A\tB:x".to_owned(),
            len: 1,
        });
        assert_eq!((one.text.as_str(), span), ("A   B:x", (4, 1)), "`B` after the tab");
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
