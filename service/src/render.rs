//! Rendering diagnostics for people: rustc-like, with the offending text underlined.

use formula::FormulaError;
use std::io::IsTerminal;

/// Renders `err` against `source` (the text its span points into), naming the source `name`.
/// Colors are used only when stderr is a terminal and `NO_COLOR` is not set.
pub fn render_error(err: &FormulaError, name: &str, source: &str) -> String {
    let color = std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none();
    let theme =
        if color { miette::GraphicalTheme::unicode() } else { miette::GraphicalTheme::unicode_nocolor() };
    let report =
        miette::Report::new(err.clone()).with_source_code(miette::NamedSource::new(name, source.to_owned()));
    let mut out = String::new();
    let handler = miette::GraphicalReportHandler::new_themed(theme).with_width(100);
    if handler.render_report(&mut out, report.as_ref()).is_err() {
        // Rendering into a String cannot fail; fall back to the plain message all the same.
        out = format!("error[{}]: {} at {}\n", err.code, err.message, err.span);
    }
    out
}
