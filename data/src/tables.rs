//! Data tables and `lookup(TABLE, VALUE, COLUMN)`, PCGen's DATATABLE files.
//!
//! A table has named columns, each of a format, and rows of values; its first column is the
//! one looked up. `lookup("Item Level Cost", ItemLevel, "Price")` is the Price of the row whose
//! first column equals `ItemLevel`. The table and the column are named by string literals and
//! checked when the formula is compiled (the table exists, it has the column, the value's format
//! is the first column's), so an evaluation only compares the value with the first column.
//! A value no row has is an evaluation error naming the table and the value (PCGen gives the
//! column format's default and prints a warning).

use crate::Map;
use crate::diag::{Diagnostic, Text, codes};
use crate::draft::TableDraft;
use formula::{
    BoundFunction, CallSite, ErrorCode, EvalContext, ExternalFunction, Format, FormulaError, Value,
};
use std::sync::Arc;

/// One table, checked: its columns' names and formats, and its rows' values.
#[derive(Debug)]
pub struct Table {
    pub name: Arc<str>,
    pub columns: Vec<(Arc<str>, Format)>,
    pub rows: Vec<Box<[Value]>>,
}

/// The tables of a ruleset, by name (case-insensitive).
#[derive(Debug, Default)]
pub struct Tables {
    list: Vec<Arc<Table>>,
    by_name: Map<String, usize>,
}

impl Tables {
    /// The table named `name`, case-insensitively.
    pub fn get(&self, name: &str) -> Option<&Arc<Table>> {
        self.by_name.get(&name.to_lowercase()).map(|&i| &self.list[i])
    }

    /// Every table, in the order the data defines them.
    pub fn list(&self) -> &[Arc<Table>] {
        &self.list
    }

    /// Checks the drafts: each column's format exists, each cell is a value of its column's
    /// format, a row has as many cells as there are columns, a name is used once. `format` parses
    /// a format's name.
    pub fn compile(
        drafts: &[TableDraft],
        format: impl Fn(&str) -> Result<Format, String>,
        errors: &mut Vec<Diagnostic>,
    ) -> Tables {
        let mut tables = Tables::default();
        for d in drafts {
            let key = d.name.text.to_lowercase();
            if tables.by_name.contains_key(&key) {
                errors.push(Diagnostic::at(
                    codes::BAD_FORMAT,
                    &d.name,
                    format!("table `{}` is defined twice", d.name),
                ));
                continue;
            }
            if d.columns.is_empty() || d.columns.len() != d.formats.len() {
                let message = format!(
                    "table `{}` names {} columns and gives {} formats; a table has a row of column names, then a row of their formats",
                    d.name,
                    d.columns.len(),
                    d.formats.len()
                );
                errors.push(Diagnostic::at(codes::SYNTAX, &d.name, message));
                continue;
            }
            let mut columns = Vec::with_capacity(d.columns.len());
            for (name, f) in d.columns.iter().zip(&d.formats) {
                match format(&f.text) {
                    Ok(fmt) => columns.push((name.text.clone(), fmt)),
                    Err(m) => errors.push(Diagnostic::at(codes::UNKNOWN_FORMAT, f, m)),
                }
            }
            if columns.len() != d.columns.len() {
                continue;
            }
            let mut rows = Vec::with_capacity(d.rows.len());
            for row in &d.rows {
                if let Some(r) = Table::row(d, &columns, row, errors) {
                    rows.push(r);
                }
            }
            tables.by_name.insert(key, tables.list.len());
            tables.list.push(Arc::new(Table { name: d.name.text.clone(), columns, rows }));
        }
        tables
    }
}

impl Table {
    /// One row's cells as values of their columns' formats, or `None` (reported).
    fn row(
        d: &TableDraft,
        columns: &[(Arc<str>, Format)],
        row: &[Text],
        errors: &mut Vec<Diagnostic>,
    ) -> Option<Box<[Value]>> {
        if row.len() != columns.len() {
            let at = row.first().unwrap_or(&d.name);
            let message = format!(
                "a row of table `{}` has {} cells; the table has {} columns",
                d.name,
                row.len(),
                columns.len()
            );
            errors.push(Diagnostic::at(codes::SYNTAX, at, message));
            return None;
        }
        let mut values = Vec::with_capacity(row.len());
        for (cell, (column, fmt)) in row.iter().zip(columns) {
            match Value::parse_literal(fmt, &cell.text) {
                Ok(v) => values.push(v),
                Err(m) => {
                    errors.push(Diagnostic::at(
                        codes::BAD_VALUE,
                        cell,
                        format!("column `{column}` of table `{}`: {m}", d.name),
                    ));
                    return None;
                }
            }
        }
        Some(values.into_boxed_slice())
    }
}

/// `lookup(TABLE, VALUE, COLUMN)` over a ruleset's tables.
pub(crate) struct Lookup {
    pub tables: Arc<Tables>,
}

#[derive(Debug)]
struct BoundLookup {
    table: Arc<Table>,
    column: usize,
}

/// A string literal argument (a table's or a column's name), or an error saying so.
fn literal_name(site: &CallSite<'_>, i: usize, what: &str) -> Result<Arc<str>, FormulaError> {
    let arg = &site.args()[i];
    match &arg.constant {
        Some(Value::String(s)) => Ok(s.clone()),
        _ => Err(FormulaError::new(
            ErrorCode::InvalidArgument,
            arg.span,
            format!(
                "`lookup` takes the {what}'s name as a string literal, e.g. lookup(\"Item Level Cost\", ItemLevel, \"Price\")"
            ),
        )),
    }
}

impl ExternalFunction for Lookup {
    fn name(&self) -> &str {
        "lookup"
    }

    fn bind(&self, site: &mut CallSite<'_>) -> Result<Arc<dyn BoundFunction>, FormulaError> {
        site.expect_arity(3)?;
        let (table_arg, value_arg, column_arg) = (site.args()[0].span, &site.args()[1], site.args()[2].span);
        let name = literal_name(site, 0, "table")?;
        let Some(table) = self.tables.get(&name) else {
            let mut e = FormulaError::new(
                ErrorCode::InvalidArgument,
                table_arg,
                format!("there is no table `{name}`"),
            );
            if let Some(h) =
                formula::suggest::did_you_mean(&name, self.tables.list().iter().map(|t| &*t.name))
            {
                e = e.with_help(h);
            }
            return Err(e);
        };
        let key_format = &table.columns[0].1;
        if &value_arg.format != key_format {
            return Err(FormulaError::new(
                ErrorCode::FormatMismatch,
                value_arg.span,
                format!(
                    "table `{}` is looked up by its first column, `{}`, a {key_format}; this is a {}",
                    table.name, table.columns[0].0, value_arg.format
                ),
            ));
        }
        let column_name = literal_name(site, 2, "column")?;
        let Some(column) = table.columns.iter().position(|(c, _)| c.eq_ignore_ascii_case(&column_name))
        else {
            let mut e = FormulaError::new(
                ErrorCode::InvalidArgument,
                column_arg,
                format!("table `{}` has no column `{column_name}`", table.name),
            );
            if let Some(h) =
                formula::suggest::did_you_mean(&column_name, table.columns.iter().map(|(c, _)| &**c))
            {
                e = e.with_help(h);
            }
            return Err(e);
        };
        Ok(Arc::new(BoundLookup { table: table.clone(), column }))
    }
}

impl BoundFunction for BoundLookup {
    fn format(&self) -> Format {
        self.table.columns[self.column].1.clone()
    }

    fn is_static(&self) -> bool {
        // The tables never change: a lookup of a constant is a constant.
        true
    }

    fn eval(&self, args: &[Value], _read: &dyn EvalContext) -> Result<Value, String> {
        let wanted = &args[1];
        match self.table.rows.iter().find(|row| &row[0] == wanted) {
            Some(row) => Ok(row[self.column].clone()),
            None => Err(format!(
                "table `{}` has no row `{wanted}` in its first column, `{}`",
                self.table.name, self.table.columns[0].0
            )),
        }
    }
}
