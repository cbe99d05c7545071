//! `sheetd eval`: evaluate one formula, or a stream of JSON requests.
//!
//! One request (`--jsonl`, one JSON object per line; every key but `formula` optional):
//!
//! ```json
//! {"formula": "d20Mod(Score) + value()",
//!  "vars": {"Score": {"format": "NUMBER", "value": 14}},
//!  "input": {"format": "NUMBER", "value": 1},
//!  "functions": {"d20Mod": "floor((arg(0)-10)/2)"}}
//! ```
//!
//! One response per request, in order: `{"format": "NUMBER", "value": "3"}`, or
//! `{"error": {"stage": "...", "code": "...", "message": "...", "span": [start, end]}}`. Errors in a
//! function body add `"function": NAME` (the span is then in that body); errors in the request
//! itself have stage `input` and span `null`.

use crate::json::{decode_typed, encode_typed};
use crate::render::formula_error;
use clap::Args;
use formula::{
    CheckEnv, EvalContext, Format, FormatRegistry, Formula, FormulaError, Library, Limits, Symbols, Value,
    VarId,
};
use serde_json::{Map, Value as Json, json};
use std::collections::HashMap;
use std::io::{BufRead, Write};
use std::process::ExitCode;
use std::sync::Arc;

pub(crate) const AFTER_HELP: &str = "\
Examples:
  sheetd eval '2+3*4'                                   prints 14
  sheetd eval --var Score=14 'floor((Score-10)/2)'      prints 2
  sheetd eval --function 'd20Mod=floor((arg(0)-10)/2)' --var Str=7 'd20Mod(Str)'   prints -2
  sheetd eval --input 6 'value() * 2'                   prints 12
  echo '{\"formula\": \"1/3\"}' | sheetd eval --jsonl    prints {\"format\":\"NUMBER\",\"value\":\"0.3333333333333333333333333333\"}
  sheetd eval --dialect creature --var INT=3 --var PROF=2 '(8,INT,PROF,+,+)'   prints 13

With --dialect creature the formula is a creature feature's postfix formula (see
docs/dialects.md): names are the --var variables (self.NAME reads NAME), and an error points at
its token.

Variable values (--var NAME=VALUE, split at the last `=`): a decimal number is a NUMBER, true or
false a BOOLEAN, a JSON array such as [1,2,3] an ARRAY, \"quoted\" or any other text a STRING.

Exit status: 0 with the value on stdout; 1 with a diagnostic on stderr when the formula is
invalid or its evaluation fails; 2 for bad arguments. With --jsonl the status is 0 and every
line gets a response, errors included.";

/// Arguments of `sheetd eval`.
#[derive(Debug, Args)]
pub struct EvalArgs {
    /// The formula, e.g. 'floor((Score-10)/2)'. Quote it for the shell.
    #[arg(required_unless_present = "jsonl", conflicts_with = "jsonl", allow_hyphen_values = true)]
    pub formula: Option<String>,

    /// Define a variable the formula may read. Repeatable.
    #[arg(long = "var", value_name = "NAME=VALUE", allow_hyphen_values = true)]
    pub vars: Vec<String>,

    /// Define a user function whose body is a formula over arg(0), arg(1), …  Repeatable.
    #[arg(long = "function", value_name = "NAME=BODY")]
    pub functions: Vec<String>,

    /// The value that value() returns (the modified variable's value so far in a modifier).
    #[arg(long, value_name = "VALUE", allow_hyphen_values = true)]
    pub input: Option<String>,

    /// Also print the result's format, whether the formula is static, the variables it reads,
    /// and its canonical text.
    #[arg(long, short)]
    pub verbose: bool,

    /// Read one JSON request per line from stdin and write one JSON response per line to stdout.
    #[arg(long)]
    pub jsonl: bool,

    /// The language the formula is written in: `creature`, the creature features' postfix
    /// formulas, `(8,INT,PROF,+,+)` (default: sheetd's own formula language).
    #[arg(long, value_name = "DIALECT", value_parser = ["creature"], conflicts_with = "jsonl")]
    pub dialect: Option<String>,
}

/// Variables of one evaluation: a symbol table and the values, in one place.
#[derive(Default)]
pub struct VarTable {
    entries: Vec<(String, Format, Value)>,
    index: HashMap<String, usize>,
}

impl VarTable {
    /// Adds a variable; names are unique regardless of case.
    pub fn insert(&mut self, name: &str, format: Format, value: Value) -> Result<(), String> {
        let key = name.to_ascii_lowercase();
        if let Some(&i) = self.index.get(&key) {
            return Err(format!(
                "variable `{name}` is defined twice (also as `{}`); names are case-insensitive",
                self.entries[i].0
            ));
        }
        self.index.insert(key, self.entries.len());
        self.entries.push((name.to_owned(), format, value));
        Ok(())
    }
}

impl Symbols for VarTable {
    fn resolve(&self, name: &str) -> Option<(VarId, Format)> {
        let i = *self.index.get(&name.to_ascii_lowercase())?;
        Some((VarId(i as u32), self.entries[i].1.clone()))
    }

    fn scope_description(&self) -> String {
        if self.entries.is_empty() {
            "this evaluation (no variables are defined)".to_owned()
        } else {
            let mut names: Vec<&str> = self.entries.iter().map(|(n, _, _)| n.as_str()).collect();
            names.sort_unstable();
            format!("this evaluation (defined: {})", names.join(", "))
        }
    }
}

impl EvalContext for VarTable {
    fn value(&self, id: VarId) -> Option<Value> {
        self.entries.get(id.0 as usize).map(|(_, _, v)| v.clone())
    }
}

/// Where an error's span points: the formula, or the body of a user function.
#[derive(Debug)]
pub enum ErrorSite {
    Formula,
    Function(String),
}

/// A request failed: the request itself was malformed, or the formula failed.
#[derive(Debug)]
pub enum RequestError {
    Input(String),
    Formula(ErrorSite, FormulaError),
}

/// Everything needed to evaluate one formula.
pub struct Request {
    pub formula: String,
    pub vars: VarTable,
    pub input: Option<(Format, Value)>,
    pub library: Library,
}

impl Request {
    /// Compiles and evaluates the formula.
    pub fn evaluate(&self) -> Result<(Arc<Formula>, Value), RequestError> {
        let mut env = CheckEnv::new(&self.vars);
        if let Some((format, _)) = &self.input {
            env = env.with_input(format);
        }
        let fail = |e| RequestError::Formula(ErrorSite::Formula, e);
        let f =
            Arc::new(Formula::compile(&self.formula, &self.library, &env, &Limits::default()).map_err(fail)?);
        let value = f.evaluate(&self.vars, self.input.as_ref().map(|(_, v)| v)).map_err(fail)?;
        Ok((f, value))
    }
}

fn define(library: &mut Library, name: &str, body: &str) -> Result<(), RequestError> {
    library
        .define(name, body)
        .map(drop)
        .map_err(|e| RequestError::Formula(ErrorSite::Function(name.to_owned()), e))
}

/// Reads a request from one JSON line.
pub fn parse_request(line: &str) -> Result<Request, RequestError> {
    let input = |m: String| RequestError::Input(m);
    let json: Json = serde_json::from_str(line).map_err(|e| input(format!("malformed JSON: {e}")))?;
    let Json::Object(obj) = json else {
        return Err(input("a request must be a JSON object with a `formula`".to_owned()));
    };
    if let Some(k) = obj.keys().find(|k| !matches!(k.as_str(), "formula" | "vars" | "input" | "functions")) {
        return Err(input(format!("unknown key `{k}` (expected formula, vars, input, functions)")));
    }
    let formula = match obj.get("formula") {
        Some(Json::String(f)) => f.clone(),
        Some(_) => return Err(input("`formula` must be a string".to_owned())),
        None => return Err(input("missing `formula`".to_owned())),
    };
    let registry = FormatRegistry::new();
    let mut library = Library::new();
    for (name, body) in object(&obj, "functions")? {
        let Json::String(body) = body else {
            return Err(input(format!("function `{name}`: the body must be a string")));
        };
        define(&mut library, name, body)?;
    }
    let mut vars = VarTable::default();
    for (name, spec) in object(&obj, "vars")? {
        let (format, value) =
            decode_typed(&registry, spec).map_err(|e| input(format!("variable `{name}`: {e}")))?;
        vars.insert(name, format, value).map_err(input)?;
    }
    let input_value = match obj.get("input") {
        None | Some(Json::Null) => None,
        Some(spec) => Some(decode_typed(&registry, spec).map_err(|e| input(format!("`input`: {e}")))?),
    };
    Ok(Request { formula, vars, input: input_value, library })
}

fn object<'a>(obj: &'a Map<String, Json>, key: &str) -> Result<Vec<(&'a String, &'a Json)>, RequestError> {
    match obj.get(key) {
        None | Some(Json::Null) => Ok(Vec::new()),
        Some(Json::Object(m)) => Ok(m.iter().collect()),
        Some(_) => Err(RequestError::Input(format!("`{key}` must be an object"))),
    }
}

/// Answers one `--jsonl` request line with one JSON response.
pub fn eval_request(line: &str) -> Json {
    match parse_request(line).and_then(|r| r.evaluate()) {
        Ok((f, v)) => encode_typed(f.format(), &v),
        Err(e) => error_json(&e),
    }
}

/// The JSON form of a request error.
pub fn error_json(e: &RequestError) -> Json {
    match e {
        RequestError::Input(message) => json!({"error": {
            "stage": "input", "code": "input.invalid_request", "message": message, "span": null}}),
        RequestError::Formula(site, err) => {
            let mut obj = json!({
                "stage": err.stage().as_str(),
                "code": err.code.as_str(),
                "message": err.message,
                "span": [err.span.start, err.span.end],
            });
            if let ErrorSite::Function(name) = site {
                obj["function"] = json!(name);
            }
            json!({"error": obj})
        }
    }
}

/// Infers a `--var` value: number, boolean, JSON array, or string.
fn infer_value(text: &str) -> Result<(Format, Value), String> {
    if let Ok(d) = formula::parse_decimal(text) {
        return Ok((Format::Number, Value::Number(d)));
    }
    if text.eq_ignore_ascii_case("true") || text.eq_ignore_ascii_case("false") {
        return Ok((Format::Boolean, Value::Boolean(text.eq_ignore_ascii_case("true"))));
    }
    if text.starts_with('[') {
        let items: Vec<Json> =
            serde_json::from_str(text).map_err(|e| format!("`{text}` is not a JSON array: {e}"))?;
        let element = match items.first() {
            Some(Json::Bool(_)) => Format::Boolean,
            Some(Json::String(s)) if formula::parse_decimal(s).is_err() => Format::String,
            _ => Format::Number,
        };
        let format = Format::array(element);
        let value = crate::json::decode(&format, &Json::Array(items))?;
        return Ok((format, value));
    }
    let unquoted = text.strip_prefix('"').and_then(|t| t.strip_suffix('"')).unwrap_or(text);
    Ok((Format::String, Value::String(Arc::from(unquoted))))
}

fn request_from_args(args: &EvalArgs, formula: &str) -> Result<Request, RequestError> {
    let usage = |m: String| RequestError::Input(m);
    let mut library = Library::new();
    for def in &args.functions {
        let (name, body) =
            def.split_once('=').ok_or_else(|| usage(format!("--function `{def}`: expected NAME=BODY")))?;
        define(&mut library, name.trim(), body)?;
    }
    let mut vars = VarTable::default();
    for def in &args.vars {
        let (name, value) =
            def.rsplit_once('=').ok_or_else(|| usage(format!("--var `{def}`: expected NAME=VALUE")))?;
        let (format, value) = infer_value(value).map_err(|e| usage(format!("--var `{def}`: {e}")))?;
        vars.insert(name.trim(), format, value).map_err(|e| usage(format!("--var: {e}")))?;
    }
    let input = match &args.input {
        Some(t) => Some(infer_value(t).map_err(|e| usage(format!("--input: {e}")))?),
        None => None,
    };
    Ok(Request { formula: formula.to_owned(), vars, input, library })
}

/// Runs `sheetd eval`.
pub fn run(args: EvalArgs) -> ExitCode {
    if args.jsonl {
        return run_jsonl();
    }
    // clap guarantees a formula when --jsonl is absent (required_unless_present).
    let Some(formula) = args.formula.as_deref() else { return ExitCode::from(2) };
    let mut request = match request_from_args(&args, formula) {
        Ok(r) => r,
        Err(RequestError::Input(m)) => {
            eprintln!("error: {m}");
            return ExitCode::from(2);
        }
        Err(e) => return report(&args, formula, &e),
    };
    // A dialect's formula is compiled to sheetd's own first; errors point into the original.
    let mut stores = Vec::new();
    if args.dialect.is_some() {
        match postfix(formula, &request.vars) {
            Ok(c) => {
                request.formula = c.formula;
                stores = c.stores;
            }
            Err(e) => {
                let mut p = crate::problem::Problem::new(e.code, e.message.clone());
                p.formula = Some(Box::new(crate::problem::FormulaSpan {
                    text: formula.to_owned(),
                    start: e.span.start as u32,
                    end: e.span.end as u32,
                    stage: "postfix",
                    code: e.code,
                }));
                eprint!("{}", crate::render::problem(&p));
                return ExitCode::from(1);
            }
        }
    }
    let formula = request.formula.as_str();
    match request.evaluate() {
        Ok((f, value)) => {
            println!("{value}");
            if args.verbose {
                let names: Vec<&str> = f.variable_names().collect();
                println!("format:    {}", f.format());
                println!("static:    {}", if f.is_static() { "yes" } else { "no" });
                println!(
                    "reads:     {}",
                    if names.is_empty() { "(nothing)".to_owned() } else { names.join(", ") }
                );
                println!("canonical: {}", f.canonical());
                for s in &stores {
                    println!("stores:    {} = {}", s.var, s.value);
                }
            }
            ExitCode::SUCCESS
        }
        Err(e) => report(&args, formula, &e),
    }
}

/// Compiles postfix formula `text` (`--dialect creature`) over the defined variables: `NAME`
/// and `self.NAME` read variable NAME.
fn postfix(
    text: &str,
    vars: &VarTable,
) -> Result<dialects::postfix::Compiled, dialects::postfix::PostfixError> {
    dialects::postfix::compile(text, &mut |name| {
        let own = name.strip_prefix("self.").unwrap_or(name);
        match vars.resolve(own) {
            Some((id, _)) => Ok(vars.entries[id.0 as usize].0.clone()),
            None => Err(format!("unknown variable `{name}` in {}", vars.scope_description())),
        }
    })
}

fn report(args: &EvalArgs, formula: &str, e: &RequestError) -> ExitCode {
    match e {
        RequestError::Input(m) => eprintln!("error: {m}"),
        RequestError::Formula(ErrorSite::Formula, err) => {
            eprint!("{}", formula_error(err, "formula", formula))
        }
        RequestError::Formula(ErrorSite::Function(name), err) => {
            let body = args
                .functions
                .iter()
                .find_map(|d| d.split_once('=').filter(|(n, _)| n.trim() == name).map(|(_, b)| b))
                .unwrap_or("");
            eprint!("{}", formula_error(err, &format!("function {name}"), body));
        }
    }
    ExitCode::from(1)
}

fn run_jsonl() -> ExitCode {
    let stdin = std::io::stdin().lock();
    let mut stdout = std::io::stdout().lock();
    for line in stdin.lines() {
        let response = match line {
            Ok(l) => eval_request(&l),
            Err(e) => error_json(&RequestError::Input(format!("unreadable input line: {e}"))),
        };
        // A closed stdout (e.g. `| head`) ends the stream quietly.
        if writeln!(stdout, "{response}").and_then(|()| stdout.flush()).is_err() {
            break;
        }
    }
    ExitCode::SUCCESS
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::encode;

    #[test]
    fn requests_and_responses() {
        let r = |s: &str| eval_request(s);
        assert_eq!(r(r#"{"formula": "5/2"}"#), json!({"format": "NUMBER", "value": "2.5"}));
        assert_eq!(
            r(
                r#"{"formula": "d20Mod(Score) + value()", "vars": {"score": {"format": "NUMBER", "value": 14}},
                 "input": {"format": "NUMBER", "value": 1}, "functions": {"d20Mod": "floor((arg(0)-10)/2)"}}"#
            ),
            json!({"format": "NUMBER", "value": "3"})
        );
        assert_eq!(
            r(
                r#"{"formula": "slice(a, 1)", "vars": {"a": {"format": "ARRAY[NUMBER]", "value": [1, 2.50, 3]}}}"#
            ),
            json!({"format": "ARRAY[NUMBER]", "value": ["2.5", "3"]})
        );
        assert_eq!(r(r#"{"formula": "2 < 3"}"#), json!({"format": "BOOLEAN", "value": true}));
        assert_eq!(r(r#"{"formula": "\"a\" + \"b\""}"#), json!({"format": "STRING", "value": "ab"}));
        assert_eq!(
            r(r#"{"formula": "1 +* 2"}"#),
            json!({"error": {"stage": "parse", "code": "parse.unexpected_token",
                "message": "unexpected `*`; expected a number, string, name or `(`", "span": [3, 4]}})
        );
        assert_eq!(r(r#"{"formula": "1/0"}"#)["error"]["stage"], json!("evaluation"));
        assert_eq!(r(r#"{"formula": "x"}"#)["error"]["code"], json!("semantics.unknown_variable"));
        let e = r(r#"{"formula": "f(1)", "functions": {"f": "arg(0) +"}}"#);
        assert_eq!(e["error"]["function"], json!("f"));
        assert_eq!(e["error"]["span"], json!([8, 8]));
    }

    #[test]
    fn malformed_requests_get_input_errors() {
        for (line, needle) in [
            ("not json", "malformed JSON"),
            ("", "malformed JSON"),
            ("[1]", "must be a JSON object"),
            (r#"{"vars": {}}"#, "missing `formula`"),
            (r#"{"formula": 3}"#, "`formula` must be a string"),
            (r#"{"formula": "a", "var": {}}"#, "unknown key `var`"),
            (r#"{"formula": "a", "vars": {"a": {"format": "NUMBER", "value": "x"}}}"#, "variable `a`"),
            (
                r#"{"formula": "a", "vars": {"a": {"format": "NUMBER", "value": 1}, "A": {"format": "NUMBER", "value": 2}}}"#,
                "defined twice",
            ),
            (r#"{"formula": "a", "vars": []}"#, "`vars` must be an object"),
            (r#"{"formula": "value()", "input": {"format": "NUMBER"}}"#, "missing `value`"),
        ] {
            let out = eval_request(line);
            assert_eq!(out["error"]["stage"], json!("input"), "{line}");
            assert_eq!(out["error"]["span"], Json::Null, "{line}");
            let message = out["error"]["message"].as_str().unwrap_or_default();
            assert!(message.contains(needle), "{line}: {message}");
        }
    }

    #[test]
    fn var_values_are_inferred() {
        let show = |t: &str| infer_value(t).map(|(f, v)| format!("{f} {}", encode(&v)));
        assert_eq!(show("14").unwrap(), "NUMBER \"14\"");
        assert_eq!(show("-.5").unwrap(), "NUMBER \"-0.5\"");
        assert_eq!(show("True").unwrap(), "BOOLEAN true");
        assert_eq!(show("[1, 2]").unwrap(), "ARRAY[NUMBER] [\"1\",\"2\"]");
        assert_eq!(show("[true]").unwrap(), "ARRAY[BOOLEAN] [true]");
        assert_eq!(show("Valeros").unwrap(), "STRING \"Valeros\"");
        assert_eq!(show("\"14\"").unwrap(), "STRING \"14\"");
        assert!(show("[1,").is_err());
    }
}
