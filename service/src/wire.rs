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
//! `put_variable_with` (a variable whose value the caller writes), `put_whole_variable` (a whole
//! number) and `WholeHeads` (a ruleset's names and formats encoded once, for SolveBatch replies).

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

/// The bytes of a whole-number `VariableValue` that depend only on its variable's definition,
/// made once per ruleset: for each definition, its name then the heads and format of its value
/// (`name · 0x12 len · 0x0a len format · 0x12 len`), the two value lengths left to fill in.
/// [`WholeHeads::put`] writes a value as four bytes of heads, its instance's key, one copy of
/// these and its digits: the bytes [`put_whole_variable`] writes, with the format's name and
/// every head but the outer two worked out once instead of for every value of every
/// character.
///
/// A value is put together in a scratch array and copied into the reply once. The array is
/// filled with copies of fixed length (the definition's bytes as [`TAIL`] bytes, padding
/// included, and the digits written in place), which the compiler makes a few vector moves,
/// where copies of each piece's own length were a call to `memcpy` apiece.
pub(crate) struct WholeHeads {
    /// Every definition's bytes, end to end, then [`TAIL`] bytes of padding: each
    /// definition's bytes can be read as [`TAIL`] bytes.
    bytes: Vec<u8>,
    /// By definition id: where its bytes are, and how long its name is (a definition whose
    /// bytes would not fit the short form has `len` 0, and is written the long way).
    spans: Vec<HeadSpan>,
}

#[derive(Clone, Copy, Default)]
struct HeadSpan {
    at: u32,
    len: u8,
    name: u8,
    /// The value's length before its digits: its format's field and the digits' head.
    value: u8,
}

/// The most digits of an `i64` (with its sign).
const MAX_DIGITS: usize = 20;

/// The longest definition's bytes written the short way: its name, format and their heads.
const TAIL: usize = 64;

/// The scratch a value is put together in: four heads, an instance's key and its dot (at
/// most 127 bytes), the definition's bytes read as [`TAIL`] and the digits.
pub(crate) type Scratch = [u8; 256];

impl WholeHeads {
    /// The heads of every variable `rules` defines.
    pub(crate) fn of(rules: &solver::Rules) -> WholeHeads {
        let (mut bytes, mut spans) = (Vec::new(), Vec::with_capacity(rules.vars().len()));
        let field = |tag: u8| (tag << 3) | WireType::LengthDelimited as u8;
        for var in rules.vars() {
            let format = var.format.name();
            let value = str_len(1, &format) + 2;
            let len = var.name.len() + 2 + value;
            // Short form: every length fits one byte, with the longest digits and an instance
            // key of up to the rest of the 127 bytes (checked again per value).
            if var.name.is_empty() || len > TAIL || 4 + len + MAX_DIGITS >= 128 {
                spans.push(HeadSpan::default());
                continue;
            }
            let at = bytes.len();
            bytes.extend_from_slice(var.name.as_bytes());
            bytes.extend_from_slice(&[field(2), 0]);
            if !format.is_empty() {
                bytes.extend_from_slice(&[field(1), format.len() as u8]);
                bytes.extend_from_slice(format.as_bytes());
            }
            bytes.extend_from_slice(&[field(2), 0]);
            spans.push(HeadSpan {
                at: at as u32,
                len: len as u8,
                name: var.name.len() as u8,
                value: value as u8,
            });
        }
        bytes.extend_from_slice(&[0; TAIL]);
        WholeHeads { bytes, spans }
    }

    /// Writes variable `def` (of instance `instance`, `None` when global) holding `x` as field
    /// 1 of its message, as [`put_whole_variable`] would with `x`'s digits, putting it together
    /// in `scratch` first; `false` (nothing written) when its lengths do not all fit one byte,
    /// and the caller writes it the long way.
    #[inline]
    pub(crate) fn put(
        &self,
        def: solver::VarDefId,
        instance: Option<&str>,
        x: i64,
        scratch: &mut Scratch,
        buf: &mut Vec<u8>,
    ) -> bool {
        let Some(&span) = self.spans.get(def.0 as usize) else { return false };
        let digits = digit_count(x);
        let key = instance.map_or(0, |i| i.len() + 1);
        let var = key + span.name as usize;
        let value = span.value as usize + digits;
        let body = 2 + var + 2 + value;
        let at = span.at as usize;
        let Some(tail) = self.bytes.get(at..at + TAIL) else { return false };
        if span.len == 0 || body >= 128 {
            return false;
        }
        let field = (1 << 3) | WireType::LengthDelimited as u8;
        scratch[..4].copy_from_slice(&[field, body as u8, field, var as u8]);
        let mut end = 4;
        if let Some(i) = instance {
            scratch[end..end + i.len()].copy_from_slice(i.as_bytes());
            scratch[end + i.len()] = b'.';
            end += key;
        }
        scratch[end..end + TAIL].copy_from_slice(tail);
        // The two lengths left open: the value's, after the name, and the digits', last.
        scratch[end + span.name as usize + 1] = value as u8;
        end += span.len as usize;
        scratch[end - 1] = digits as u8;
        end += digits;
        put_digits(x, &mut scratch[end - digits..end]);
        buf.extend_from_slice(&scratch[..end]);
        true
    }
}

/// How many bytes `x` is written in: its digits, and its sign when negative.
fn digit_count(x: i64) -> usize {
    let (mut n, mut count) = (x.unsigned_abs(), 1 + usize::from(x < 0));
    while n >= 10 {
        n /= 10;
        count += 1;
    }
    count
}

/// Writes `x` in decimal into `out`, which is exactly [`digit_count`] bytes long.
fn put_digits(x: i64, out: &mut [u8]) {
    let mut n = x.unsigned_abs();
    for d in out.iter_mut().rev() {
        *d = b'0' + (n % 10) as u8;
        n /= 10;
    }
    if x < 0
        && let Some(sign) = out.first_mut()
    {
        *sign = b'-';
    }
}
