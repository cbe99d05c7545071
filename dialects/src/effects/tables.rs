//! The three card tables of `../shared/seeds/effect-strings.txt` — citizens, domains,
//! monsters — as CSV (a header row, then one row a card) or JSON (a list of objects), named by
//! the file's stem (`citizens.csv`, `monsters.json`), with the document's column names:
//!
//! | table | columns |
//! |---|---|
//! | citizens | `name`, `role`, `gold_cost`, `special_payout_on_turn`, `special_payout_off_turn` |
//! | domains | `name`, `gold_cost`, `activation_effect`, `passive_effect` |
//! | monsters | `name`, `area`, `strength`, `special_reward` |
//!
//! Every effect string is read when the table is ([`super::syntax`]), each error pointing at
//! its token inside the cell, in the file. An empty cell is no effect.

use super::syntax::{self, Effect};
use crate::Error;
use crate::creature::json::{self, Str};
use jsonc_parser::ast::Value;
use jsonc_parser::common::Ranged;
use std::ops::Range;

/// The error codes of this module.
pub mod codes {
    /// A table that is not citizens, domains or monsters; a column it does not have; a row
    /// with more or fewer cells than the header; a number that is not one.
    pub const TABLE: &str = "effects.table";
}

/// Which table a card is in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Table {
    Citizens,
    Domains,
    Monsters,
}

impl Table {
    /// The table a file's stem names.
    pub fn of(stem: &str) -> Option<Table> {
        Some(match stem {
            "citizens" => Table::Citizens,
            "domains" => Table::Domains,
            "monsters" => Table::Monsters,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            Table::Citizens => "citizens",
            Table::Domains => "domains",
            Table::Monsters => "monsters",
        }
    }

    /// Its columns that hold effect strings.
    pub fn effect_columns(self) -> &'static [&'static str] {
        match self {
            Table::Citizens => &["special_payout_on_turn", "special_payout_off_turn"],
            Table::Domains => &["activation_effect", "passive_effect"],
            Table::Monsters => &["special_reward"],
        }
    }

    /// Its other columns: text, and numbers (`gold_cost`, `strength`).
    pub fn columns(self) -> &'static [&'static str] {
        match self {
            Table::Citizens => &["name", "role", "gold_cost"],
            Table::Domains => &["name", "gold_cost"],
            Table::Monsters => &["name", "area", "strength"],
        }
    }
}

/// A card: its table, its cells (column, text), and its effects (column, what it reads as, and
/// the cell it came from).
#[derive(Clone, Debug)]
pub struct Card {
    pub table: Table,
    pub name: String,
    pub name_span: Range<usize>,
    pub fields: Vec<(&'static str, String)>,
    pub effects: Vec<(&'static str, Effect, Cell)>,
}

impl Card {
    /// A text or number column's value (`role`, `gold_cost`), if the card has it.
    pub fn field(&self, column: &str) -> Option<&str> {
        self.fields.iter().find(|(c, _)| *c == column).map(|(_, v)| v.as_str())
    }
}

fn err(message: impl Into<String>, span: Range<usize>) -> Error {
    Error { code: codes::TABLE, message: message.into(), span }
}

/// A cell: its text and where each of its bytes is in the file (`None`: only the whole cell's
/// span, when the text is not written as is).
#[derive(Clone, Debug)]
pub struct Cell {
    pub text: String,
    pub span: Range<usize>,
    raw_start: Option<usize>,
}

impl Cell {
    /// The span in the file of bytes `r` of the cell's text: exact when it is written as is,
    /// else the whole cell.
    pub fn inner(&self, r: Range<usize>) -> Range<usize> {
        match self.raw_start {
            Some(s) => s + r.start..s + r.end,
            None => self.span.clone(),
        }
    }
}

/// Reads a table file named `stem` (its table) with extension `ext` (`csv` or `json`).
pub fn read(text: &str, stem: &str, ext: &str) -> Result<Vec<Card>, Error> {
    let Some(table) = Table::of(stem) else {
        return Err(err(
            format!("`{stem}` is no table: a file is citizens, domains or monsters (.csv or .json)"),
            0..0,
        ));
    };
    let rows = if ext == "csv" { csv(text)? } else { json_rows(text)? };
    let mut cards = Vec::with_capacity(rows.len());
    for (row_span, cells) in rows {
        cards.push(card(table, row_span, cells)?);
    }
    Ok(cards)
}

/// One row (its cells by column) as a card.
fn card(table: Table, row_span: Range<usize>, cells: Vec<(Cell, Cell)>) -> Result<Card, Error> {
    let mut fields = Vec::new();
    let mut effects = Vec::new();
    let mut name = None;
    for (column, cell) in cells {
        let known = table.columns().iter().chain(table.effect_columns()).find(|c| **c == column.text);
        let Some(&col) = known else {
            return Err(err(
                format!(
                    "`{}` is no column of {} ({})",
                    column.text,
                    table.name(),
                    table
                        .columns()
                        .iter()
                        .chain(table.effect_columns())
                        .copied()
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                column.span,
            ));
        };
        if table.effect_columns().contains(&col) {
            if cell.text.trim().is_empty() {
                continue;
            }
            let e = syntax::parse(&cell.text).map_err(|e| Error { span: cell.inner(e.span.clone()), ..e })?;
            effects.push((col, e, cell));
            continue;
        }
        let value = cell.text.trim().to_owned();
        if ["gold_cost", "strength"].contains(&col) && value.parse::<u32>().is_err() {
            return Err(err(format!("`{col}`: `{value}` is not a whole number"), cell.span));
        }
        if col == "name" {
            if value.is_empty() || value.starts_with('$') || value.chars().any(char::is_control) {
                return Err(err(format!("`{value}` is not a card's name"), cell.span));
            }
            name = Some((value.clone(), cell.span.clone()));
        }
        fields.push((col, value));
    }
    let Some((name, name_span)) = name else {
        return Err(err(format!("a card of {} has no `name`", table.name()), row_span));
    };
    Ok(Card { table, name, name_span, fields, effects })
}

type Row = (Range<usize>, Vec<(Cell, Cell)>);

/// A JSON table: a list of objects whose values are strings or numbers.
fn json_rows(text: &str) -> Result<Vec<Row>, Error> {
    let root = json::parse(text)?;
    let rows = json::list(&root, "a table")?;
    let mut out = Vec::with_capacity(rows.len());
    for r in rows {
        let o = json::object(r, "a card")?;
        let mut cells = Vec::new();
        for p in &o.properties {
            let key = Cell {
                text: p.name.as_str().to_owned(),
                span: p.name.range().start..p.name.range().end,
                raw_start: None,
            };
            let cell = match &p.value {
                Value::NumberLit(n) => {
                    Cell { text: n.value.to_string(), span: n.range.start..n.range.end, raw_start: None }
                }
                v => {
                    let Str { text, span, raw_start } = json::string(text, v, "a cell")?;
                    Cell { text, span, raw_start }
                }
            };
            cells.push((key, cell));
        }
        out.push((json::span(r), cells));
    }
    Ok(out)
}

/// A CSV table: comma-separated cells, `"…"` quoting (`""` a quote), a header row first; blank
/// lines are skipped.
fn csv(text: &str) -> Result<Vec<Row>, Error> {
    let mut lines = Vec::new();
    let b = text.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let start = i;
        let mut cells = Vec::new();
        loop {
            // One cell, from `i`.
            let cell = if b.get(i) == Some(&b'"') {
                let mut t = String::new();
                let mut j = i + 1;
                let mut plain = true;
                loop {
                    match b.get(j) {
                        None => return Err(err("a quoted cell without its closing `\"`", i..text.len())),
                        Some(b'"') if b.get(j + 1) == Some(&b'"') => {
                            t.push('"');
                            plain = false;
                            j += 2;
                        }
                        Some(b'"') => break,
                        Some(_) => {
                            // (Up to the next quote: a character boundary, quotes being ASCII.)
                            let next = text[j..].find('"').map_or(text.len(), |k| j + k);
                            t.push_str(&text[j..next]);
                            j = next;
                        }
                    }
                }
                let cell = Cell { text: t, span: i..j + 1, raw_start: plain.then_some(i + 1) };
                i = j + 1;
                cell
            } else {
                let end = text[i..].find([',', '\n', '\r']).map_or(text.len(), |k| i + k);
                let cell = Cell { text: text[i..end].to_owned(), span: i..end, raw_start: Some(i) };
                i = end;
                cell
            };
            cells.push(cell);
            match b.get(i) {
                Some(b',') => i += 1,
                Some(b'\r') if b.get(i + 1) == Some(&b'\n') => {
                    i += 2;
                    break;
                }
                Some(b'\n' | b'\r') => {
                    i += 1;
                    break;
                }
                None => break,
                Some(_) => {
                    return Err(err("after a quoted cell, a `,` or the end of the line", i..i + 1));
                }
            }
        }
        let blank = cells.len() == 1 && cells[0].text.trim().is_empty();
        if !blank {
            lines.push((start..i, cells));
        }
    }
    let mut it = lines.into_iter();
    let Some((_, header)) = it.next() else { return Ok(Vec::new()) };
    let mut out = Vec::new();
    for (span, cells) in it {
        if cells.len() != header.len() {
            return Err(err(
                format!("a row of {} cells under a header of {}", cells.len(), header.len()),
                span.start..span.end.saturating_sub(1).max(span.start),
            ));
        }
        let keyed = header
            .iter()
            .map(|h| Cell { text: h.text.trim().to_owned(), span: h.span.clone(), raw_start: None })
            .zip(cells)
            .collect();
        out.push((span, keyed));
    }
    Ok(out)
}
