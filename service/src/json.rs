//! The JSON encoding of values, shared by every JSON output of sheetd.
//!
//! - NUMBER: a canonical decimal string — no exponent, no trailing zeros: `"2.5"`, `"-3"`, `"0"`.
//!   On input, a JSON number (read from its exact text) or a decimal string.
//! - BOOLEAN: `true` / `false`.
//! - STRING: a JSON string.
//! - `ARRAY[x]`: a JSON array of encoded elements.
//! - custom formats (ORDEREDPAIR, DICE, …): their literal text as a string (`"5,5"`).
//! - a value in error: `{"error": {"code", "message", "modifier"}}`.
//!
//! Diagnosed problems ([`problem`]) use the field names of the API's `Diagnostic` in the
//! protobuf JSON mapping (`code`, `message`, `operation`, `location`, `formula`, `span`, `help`,
//! `cycle`, `cycleModifiers`), so a program reads every sheetd error the same way.

use crate::problem::Problem;
use data::record;
use formula::{Format, FormatRegistry, Value, canonical_decimal, parse_decimal};
use rust_decimal::Decimal;
use serde_json::{Value as Json, json};
use solver::{Slot, Trace};
use std::sync::Arc;

/// Encodes a value as JSON.
pub fn encode(value: &Value) -> Json {
    match value {
        Value::Number(d) => Json::String(canonical_decimal(*d)),
        Value::Boolean(b) => Json::Bool(*b),
        Value::String(s) => Json::String(s.to_string()),
        Value::Array(items) => Json::Array(items.iter().map(encode).collect()),
        Value::Custom(c) => Json::String(c.data.literal()),
    }
}

/// Encodes a recorded value (as reported by the daemon and the offline tools).
pub fn record(v: &record::Value) -> Json {
    match &v.kind {
        record::Kind::Number(n) => Json::String(n.clone()),
        record::Kind::Boolean(b) => Json::Bool(*b),
        record::Kind::Text(t) => Json::String(t.clone()),
        record::Kind::List(items) => Json::Array(items.iter().map(record).collect()),
        record::Kind::Error { code, message, modifier } => {
            json!({"error": {"code": code, "message": message, "modifier": modifier}})
        }
    }
}

/// Encodes a diagnosed problem; absent fields are left out:
/// `{"code", "message", "operation", "location": {"file", "line", "col", "line_text"},
/// "formula": {"text", "stage", "code", "span": [start, end]}, "help", "cycle", "modifiers"}`.
pub fn problem(p: &Problem) -> Json {
    let mut o = serde_json::Map::new();
    o.insert("code".into(), json!(p.code));
    o.insert("message".into(), json!(p.message));
    if let Some(i) = p.operation {
        o.insert("operation".into(), json!(i));
    }
    if let Some(l) = &p.location {
        o.insert(
            "location".into(),
            json!({"file": l.file, "line": l.line, "col": l.col, "line_text": l.line_text}),
        );
    }
    if let Some(f) = &p.formula {
        let formula = json!({"text": f.text, "stage": f.stage, "code": f.code, "span": [f.start, f.end]});
        o.insert("formula".into(), formula);
    }
    if let Some(h) = &p.help {
        o.insert("help".into(), json!(h));
    }
    if !p.cycle.is_empty() {
        o.insert("cycle".into(), json!(p.cycle));
        o.insert("modifiers".into(), json!(p.cycle_modifiers));
    }
    Json::Object(o)
}

/// Encodes a variable's value, or its error, as JSON.
pub fn slot(slot: &Slot) -> Json {
    match slot {
        Ok(v) => encode(v),
        Err(e) => json!({"error": {"code": e.code, "message": e.message, "modifier": &*e.modifier}}),
    }
}

/// Encodes a trace: `{"trace": {"ref", "format", "order", "default", "steps": [...], "value"}}`.
pub fn trace(t: &Trace) -> Json {
    let step = |s: &solver::TraceStep| {
        json!({
            "modifier": &*s.modifier,
            "kind": s.kind.name(),
            "instruction": &*s.instruction,
            "priority": s.priority,
            "inherent_priority": s.inherent_priority,
            "source": &*s.source,
            "condition": s.condition,
            "reads": s.reads.iter().map(|(r, v)| (r.to_string(), v.as_ref().map_or(Json::Null, slot))).collect::<serde_json::Map<String, Json>>(),
            "after": s.after.as_ref().map_or(Json::Null, slot),
        })
    };
    json!({"trace": {
        "ref": t.var.to_string(),
        "format": t.format.to_string(),
        "order": t.order.name(),
        "default": encode(&t.default),
        "steps": t.steps.iter().map(step).collect::<Vec<_>>(),
        "value": slot(&t.value),
    }})
}

/// Encodes a value with its format: `{"format": "NUMBER", "value": "2.5"}`.
pub fn encode_typed(format: &Format, value: &Value) -> Json {
    json!({"format": format.to_string(), "value": encode(value)})
}

/// Decodes a value of `format` from JSON; the error says what was expected.
pub fn decode(format: &Format, json: &Json) -> Result<Value, String> {
    match (format, json) {
        (Format::Number, Json::Number(n)) => decimal_from_json_number(&n.to_string()).map(Value::Number),
        (Format::Number, Json::String(s)) => parse_decimal(s).map(Value::Number),
        (Format::Boolean, Json::Bool(b)) => Ok(Value::Boolean(*b)),
        (Format::String, Json::String(s)) => Ok(Value::String(Arc::from(s.as_str()))),
        (Format::Array(element), Json::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(i, item)| decode(element, item).map_err(|e| format!("element {i}: {e}")))
            .collect::<Result<Vec<_>, _>>()
            .map(|v| Value::Array(v.into())),
        (Format::Custom(_), Json::String(s)) => Value::parse_literal(format, s),
        (f, other) => Err(format!("expected a {} value, found {}", f, describe(other))),
    }
}

/// Parses the exact text of a JSON number (`5`, `-7.3`, `1e3`) into a decimal.
fn decimal_from_json_number(text: &str) -> Result<Decimal, String> {
    if text.contains(['e', 'E']) {
        return Decimal::from_scientific(text)
            .map_err(|_| format!("number {text} does not fit exact decimal arithmetic"));
    }
    parse_decimal(text)
}

fn describe(json: &Json) -> &'static str {
    match json {
        Json::Null => "null",
        Json::Bool(_) => "a boolean",
        Json::Number(_) => "a number",
        Json::String(_) => "a string",
        Json::Array(_) => "an array",
        Json::Object(_) => "an object",
    }
}

/// Decodes `{"format": "...", "value": ...}` with formats known to `registry`.
pub fn decode_typed(registry: &FormatRegistry, json: &Json) -> Result<(Format, Value), String> {
    let Json::Object(obj) = json else {
        return Err(format!(
            "expected an object {{\"format\": ..., \"value\": ...}}, found {}",
            describe(json)
        ));
    };
    let format = match obj.get("format") {
        Some(Json::String(f)) => registry.parse(f)?,
        Some(other) => return Err(format!("`format` must be a string, found {}", describe(other))),
        None => return Err("missing `format`".to_owned()),
    };
    let value = obj.get("value").ok_or("missing `value`")?;
    Ok((format.clone(), decode(&format, value)?))
}

/// A rule that fired: `{"rule", "at", "event", "this", "error"}` (`this` and `error` when set).
pub fn fired(f: &events::Fired) -> Json {
    let mut j = json!({"rule": &*f.rule, "at": f.at.to_string(), "event": &*f.event});
    if let Some(t) = &f.this {
        j["this"] = json!(&**t);
    }
    if let Some(e) = &f.error {
        j["error"] = json!({"code": e.code.as_str(), "message": e.message});
    }
    j
}

/// A pending question: `{"choice", "rule", "at", "prompt", "options", "pick", "decline"}`,
/// `at_least` when fewer picks than `pick` answer it, and `die` for a roll.
pub fn pending(p: &events::Pending) -> Json {
    let mut j = json!({
        "choice": p.choice,
        "rule": &*p.rule,
        "at": p.at.to_string(),
        "prompt": &*p.prompt,
        "options": p.options.iter().map(|o| &**o).collect::<Vec<_>>(),
        "pick": p.pick,
        "decline": p.decline,
    });
    if p.at_least < p.pick {
        j["at_least"] = json!(p.at_least);
    }
    if let Some(d) = &p.die {
        j["die"] = json!(&**d);
    }
    j
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_canonical_strings() {
        let n = |s: &str| encode(&Value::Number(parse_decimal(s).unwrap()));
        assert_eq!(n("2.50"), json!("2.5"));
        assert_eq!(n("-3"), json!("-3"));
        assert_eq!(n("-0.0"), json!("0"));
        assert_eq!(n("0.0000000000000000000000000001"), json!("0.0000000000000000000000000001"));
        assert_eq!(n("79228162514264337593543950335"), json!("79228162514264337593543950335"));
    }

    #[test]
    fn decoding_is_exact_and_checked() {
        let reg = FormatRegistry::new();
        let parse = |s: &str| decode_typed(&reg, &serde_json::from_str(s).unwrap());
        let (f, v) = parse(r#"{"format": "NUMBER", "value": -7.3}"#).unwrap();
        assert_eq!((f, encode(&v)), (Format::Number, json!("-7.3")));
        let e = parse(r#"{"format": "NUMBER", "value": 0.1000000000000000055511151231257827}"#).unwrap_err();
        assert!(
            e.contains("does not fit exact decimal arithmetic"),
            "too many digits is an error, never rounded: {e}"
        );
        let (_, v) = parse(r#"{"format": "NUMBER", "value": "2.5"}"#).unwrap();
        assert_eq!(encode(&v), json!("2.5"));
        let (_, v) = parse(r#"{"format": "NUMBER", "value": 1e3}"#).unwrap();
        assert_eq!(encode(&v), json!("1000"));
        let (f, v) = parse(r#"{"format": "ARRAY[NUMBER]", "value": [5, "6.5"]}"#).unwrap();
        assert_eq!((f.to_string(), encode(&v)), ("ARRAY[NUMBER]".to_owned(), json!(["5", "6.5"])));
        assert_eq!(parse(r#"{"format": "BOOLEAN", "value": true}"#).unwrap().1, Value::Boolean(true));
        assert!(
            parse(r#"{"format": "BOOLEAN", "value": 1}"#)
                .unwrap_err()
                .contains("expected a BOOLEAN value, found a number")
        );
        assert!(parse(r#"{"format": "NUMBER", "value": "abc"}"#).is_err());
        assert!(parse(r#"{"format": "DICE", "value": "1d8"}"#).unwrap_err().contains("unknown format"));
        assert!(
            parse(r#"{"format": "ARRAY[NUMBER]", "value": [1, true]}"#).unwrap_err().contains("element 1")
        );
        assert!(parse(r#"{"value": 1}"#).unwrap_err().contains("missing `format`"));
        assert!(parse(r#"[1]"#).is_err());
    }
}
