//! Protobuf encodings of `data::record` values, written by hand, for the API's replies and
//! the store's records, which share their field numbers: `Value` / `ValueRecord` (format 1,
//! then one of number 2, boolean 3, text 4, list 5, error 6), `VariableValue` /
//! `VariableRecord` (ref 1, value 2) and `Change` / `ChangeRecord` (ref 1, old 2, new 3).
//!
//! Generated code measures a nested message again at every level that encloses it, and needs
//! its own structs of owned strings to encode from. These write from the records as they are,
//! measuring each value once. The bytes are exactly those prost writes for the same messages:
//! `grpc/batch_values.rs` and `store/redb.rs` hold that in tests. Decoding stays prost's.
//!
//! Main items: `put_value` and `value_len`, `put_change`, `put_variable` and
//! `put_variable_with` (a variable whose value the caller writes) and `put_whole_variable` (a whole number).

use data::record::{Change, Kind, Value, Variable};
use prost::encoding::{WireType, encode_key, encode_varint, encoded_len_varint, key_len};

/// A proto3 string field: absent when empty.
fn str_len(tag: u32, s: &str) -> usize {
    if s.is_empty() { 0 } else { key_len(tag) + encoded_len_varint(s.len() as u64) + s.len() }
}

fn put_str(tag: u32, s: &str, buf: &mut Vec<u8>) {
    if !s.is_empty() {
        put_oneof_str(tag, s, buf);
    }
}

/// A string member of a oneof: present even when empty.
fn oneof_str_len(tag: u32, s: &str) -> usize {
    key_len(tag) + encoded_len_varint(s.len() as u64) + s.len()
}

fn put_oneof_str(tag: u32, s: &str, buf: &mut Vec<u8>) {
    encode_key(tag, WireType::LengthDelimited, buf);
    encode_varint(s.len() as u64, buf);
    buf.extend_from_slice(s.as_bytes());
}

/// A message member of a oneof: its key, its length and its body.
fn nested_len(tag: u32, body: usize) -> usize {
    key_len(tag) + encoded_len_varint(body as u64) + body
}

fn list_body_len(items: &[Value]) -> usize {
    items.iter().map(|i| nested_len(1, value_len(i))).sum()
}

fn error_body_len(code: &str, message: &str, modifier: &str) -> usize {
    str_len(1, code) + str_len(2, message) + str_len(3, modifier)
}

/// The encoded length of a `Value`'s fields.
pub(crate) fn value_len(v: &Value) -> usize {
    str_len(1, &v.format)
        + match &v.kind {
            Kind::Number(n) => oneof_str_len(2, n),
            Kind::Boolean(_) => key_len(3) + 1,
            Kind::Text(t) => oneof_str_len(4, t),
            Kind::List(items) => nested_len(5, list_body_len(items)),
            Kind::Error { code, message, modifier } => nested_len(6, error_body_len(code, message, modifier)),
        }
}

/// A `Value`'s fields, in field order, as prost writes them.
pub(crate) fn put_value(v: &Value, buf: &mut Vec<u8>) {
    put_str(1, &v.format, buf);
    match &v.kind {
        Kind::Number(n) => put_oneof_str(2, n, buf),
        Kind::Boolean(b) => {
            encode_key(3, WireType::Varint, buf);
            buf.push(u8::from(*b));
        }
        Kind::Text(t) => put_oneof_str(4, t, buf),
        Kind::List(items) => {
            encode_key(5, WireType::LengthDelimited, buf);
            encode_varint(list_body_len(items) as u64, buf);
            for item in items {
                encode_key(1, WireType::LengthDelimited, buf);
                encode_varint(value_len(item) as u64, buf);
                put_value(item, buf);
            }
        }
        Kind::Error { code, message, modifier } => {
            encode_key(6, WireType::LengthDelimited, buf);
            encode_varint(error_body_len(code, message, modifier) as u64, buf);
            put_str(1, code, buf);
            put_str(2, message, buf);
            put_str(3, modifier, buf);
        }
    }
}

/// A message field: its key, its length and its body of `len` bytes (the body follows).
fn put_head(tag: u32, len: usize, buf: &mut Vec<u8>) {
    encode_key(tag, WireType::LengthDelimited, buf);
    encode_varint(len as u64, buf);
}

/// `c` as field `tag` of its message (a `Change` / `ChangeRecord` entry of a repeated field).
pub(crate) fn put_change(tag: u32, c: &Change, buf: &mut Vec<u8>) {
    let old = c.old.as_ref().map(value_len);
    let new = c.new.as_ref().map(value_len);
    let body = str_len(1, &c.var) + old.map_or(0, |n| nested_len(2, n)) + new.map_or(0, |n| nested_len(3, n));
    put_head(tag, body, buf);
    put_str(1, &c.var, buf);
    for (field, v, n) in [(2, &c.old, old), (3, &c.new, new)] {
        if let (Some(v), Some(n)) = (v, n) {
            put_head(field, n, buf);
            put_value(v, buf);
        }
    }
}

/// `v` as field `tag` of its message (a `VariableValue` / `VariableRecord` entry).
pub(crate) fn put_variable(tag: u32, v: &Variable, buf: &mut Vec<u8>) {
    put_variable_with(tag, None, &v.var, value_len(&v.value), buf, |buf| put_value(&v.value, buf));
}

/// A variable named `instance.name` (or `name` alone) as field `tag` of its message, its value
/// `value` bytes long and written by `put`: what [`put_variable`] writes, with the name in
/// parts and the value written by the caller. Room for all of it is reserved once, and each
/// head written as the two bytes it nearly always is.
#[inline]
pub(crate) fn put_variable_with(
    tag: u32,
    instance: Option<&str>,
    name: &str,
    value: usize,
    buf: &mut Vec<u8>,
    put: impl FnOnce(&mut Vec<u8>),
) {
    let var = instance.map_or(0, |i| i.len() + 1) + name.len();
    // A proto3 string: absent when empty.
    let var_field = if var == 0 { 0 } else { nested_len(1, var) };
    let body = var_field + nested_len(2, value);
    buf.reserve(nested_len(tag, body));
    short_head(tag, body, buf);
    if var > 0 {
        short_head(1, var, buf);
        if let Some(i) = instance {
            buf.extend_from_slice(i.as_bytes());
            buf.push(b'.');
        }
        buf.extend_from_slice(name.as_bytes());
    }
    short_head(2, value, buf);
    put(buf);
}

/// A variable named `instance.name` (or `name` alone) holding a whole number's `digits` in
/// `format`, as field `tag` of its message: [`put_variable_with`] for a value of
/// [`whole_number_len`] bytes, its format then its digits. Every value of a SolveBatch reply
/// but a few goes through here.
#[inline]
pub(crate) fn put_whole_variable(
    tag: u32,
    instance: Option<&str>,
    name: &str,
    format: &str,
    digits: &str,
    buf: &mut Vec<u8>,
) {
    put_variable_with(tag, instance, name, whole_number_len(format, digits), buf, |buf| {
        if !format.is_empty() {
            short_head(1, format.len(), buf);
            buf.extend_from_slice(format.as_bytes());
        }
        short_head(2, digits.len(), buf);
        buf.extend_from_slice(digits.as_bytes());
    });
}

/// [`put_head`], as two bytes when the tag and the length fit one byte each.
#[inline(always)]
fn short_head(tag: u32, len: usize, buf: &mut Vec<u8>) {
    if tag < 16 && len < 128 {
        buf.extend_from_slice(&[((tag << 3) | WireType::LengthDelimited as u32) as u8, len as u8]);
    } else {
        put_head(tag, len, buf);
    }
}

/// The encoded length of a `Value` holding a whole number's `digits` in `format`: what
/// [`value_len`] gives for its record, without making one.
pub(crate) fn whole_number_len(format: &str, digits: &str) -> usize {
    str_len(1, format) + oneof_str_len(2, digits)
}
