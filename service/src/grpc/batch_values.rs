//! `sheetd.v1.BatchValues`, written by hand: a SolveBatch reply's values encoded once, straight
//! from the solved character's records.
//!
//! Generated code encodes a nested message by computing its length, then writing it, and every
//! enclosing message computes the lengths of everything inside it again. A SolveBatch value sits
//! five messages deep (`SolveBatchResponse` → `BatchValues` → `VariableValue` → `Value` → its fields),
//! so prost measured each value four times before writing it once: that was about a fifth of the
//! server's CPU per sheet. [`BatchValues::from_records`] measures each value once and writes its
//! bytes (with `crate::wire`), and [`BatchValues::from_character`] writes them straight from a
//! solved sheet; the reply then carries them as they are.
//!
//! On the wire nothing changes: the bytes are field 1 (`repeated VariableValue values`) exactly
//! as prost would write it, which a test holds byte for byte. A client decodes into
//! [`BatchValues::values`] as before. `build.rs` maps the message to this type (`extern_path`)
//! for both prost and pbjson.

use crate::grpc::proto::VariableValue;
use crate::wire::{
    Scratch, WholeHeads, put_value, put_variable, put_variable_with, put_whole_variable, value_len,
};
use data::Character;
use data::record::{Value, Variable};
use prost::bytes::{Buf, BufMut};
use prost::encoding::{DecodeContext, WireType, message, skip_field};
use prost::{DecodeError, Message};

/// A SolveBatch item's values: decoded ones in [`values`](Self::values), and (on a server)
/// values encoded once from records, written after them.
#[derive(Clone, Default)]
pub struct BatchValues {
    /// The values as messages. A decoded reply has every value here.
    pub values: Vec<VariableValue>,
    /// Field-1 records already encoded (see [`BatchValues::from_records`]).
    encoded: Vec<u8>,
}

impl BatchValues {
    /// The values of `records`, encoded now, each measured once.
    pub fn from_records(records: &[Variable]) -> BatchValues {
        let mut encoded = Vec::with_capacity(records.iter().map(|v| v.var.len() + 24).sum());
        for v in records {
            put_variable(1, v, &mut encoded);
        }
        BatchValues { values: Vec::new(), encoded }
    }

    /// Every value of `c`, in the solver's order, encoded straight from the sheet: the bytes
    /// [`BatchValues::from_records`] gives for `record::values(c)`, without making the
    /// records. A whole number — nearly every value — is written from its digits and the
    /// bytes of its name and format, encoded once per ruleset ([`WholeHeads`], kept in the
    /// ruleset's [`derived`](data::Ruleset::derived) slot), with nothing allocated; any other
    /// value goes through its record.
    pub fn from_character(c: &Character) -> BatchValues {
        let sheet = c.sheet();
        let heads = c.ruleset().derived(|r| WholeHeads::of(r.rules()));
        // About 40 bytes a value (name, format, digits and their heads): one allocation.
        let mut encoded = Vec::with_capacity(sheet.variable_count() * 48);
        let mut digits = itoa::Buffer::new();
        let mut scratch: Scratch = [0; 256];
        sheet.for_each_whole_or_value(|instance, def, var, value| {
            let whole = match &value {
                Ok(i) => Some(*i),
                Err(Ok(formula::Value::Number(d))) => match formula::Num::from_decimal(*d) {
                    formula::Num::Int(i) => Some(i),
                    formula::Num::Dec(_) => None,
                },
                Err(_) => None,
            };
            match (whole, value) {
                (Some(i), _) => {
                    if !heads.is_some_and(|h| h.put(def, instance, i, &mut scratch, &mut encoded)) {
                        let digits = digits.format(i);
                        put_whole_variable(1, instance, &var.name, &var.format.name(), digits, &mut encoded)
                    }
                }
                // (A whole number handed over as itself is `Some` above.)
                (None, Ok(_)) => {}
                (None, Err(slot)) => {
                    let record = Value::of(&var.format, slot);
                    put_variable_with(1, instance, &var.name, value_len(&record), &mut encoded, |buf| {
                        put_value(&record, buf)
                    });
                }
            }
        });
        BatchValues { values: Vec::new(), encoded }
    }

    /// Every value as a message: [`values`](Self::values), then the encoded ones decoded.
    pub fn all(&self) -> Result<Vec<VariableValue>, DecodeError> {
        let mut all = BatchValues { values: self.values.clone(), encoded: Vec::new() };
        all.merge(self.encoded.as_slice())?;
        Ok(all.values)
    }
}

impl Message for BatchValues {
    fn encode_raw(&self, buf: &mut impl BufMut) {
        message::encode_repeated(1, &self.values, buf);
        buf.put_slice(&self.encoded);
    }

    fn merge_field(
        &mut self,
        tag: u32,
        wire_type: WireType,
        buf: &mut impl Buf,
        ctx: DecodeContext,
    ) -> Result<(), DecodeError> {
        match tag {
            1 => message::merge_repeated(wire_type, &mut self.values, buf, ctx).map_err(|mut e| {
                e.push("BatchValues", "values");
                e
            }),
            _ => skip_field(wire_type, tag, buf, ctx),
        }
    }

    fn encoded_len(&self) -> usize {
        message::encoded_len_repeated(1, &self.values) + self.encoded.len()
    }

    fn clear(&mut self) {
        self.values.clear();
        self.encoded.clear();
    }
}

/// Equal when they hold the same values, however they hold them.
impl PartialEq for BatchValues {
    fn eq(&self, other: &Self) -> bool {
        if self.encoded.is_empty() && other.encoded.is_empty() {
            return self.values == other.values;
        }
        // Encoded bytes are always valid (this module wrote them), so decoding cannot fail.
        self.all().ok() == other.all().ok()
    }
}

impl std::fmt::Debug for BatchValues {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BatchValues").field("values", &self.all()).finish()
    }
}

/// The canonical JSON mapping: `{"values": [...]}`, encoded values included.
impl serde::Serialize for BatchValues {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::{Error, SerializeStruct};
        let all = self.all().map_err(S::Error::custom)?;
        let mut st = s.serialize_struct("sheetd.v1.BatchValues", usize::from(!all.is_empty()))?;
        if !all.is_empty() {
            st.serialize_field("values", &all)?;
        }
        st.end()
    }
}

impl<'de> serde::Deserialize<'de> for BatchValues {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(serde::Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Json {
            #[serde(default)]
            values: Option<Vec<VariableValue>>,
        }
        let json = Json::deserialize(d)?;
        Ok(BatchValues { values: json.values.unwrap_or_default(), encoded: Vec::new() })
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::grpc::convert;
    use data::record::Kind;
    use proptest::prelude::*;

    fn scalar() -> impl Strategy<Value = Value> {
        let text = "[a-zA-Z0-9 .,-]{0,12}";
        let format = prop_oneof![Just(String::new()), "[A-Z]{1,8}"];
        let kind = prop_oneof![
            text.prop_map(Kind::Number),
            any::<bool>().prop_map(Kind::Boolean),
            text.prop_map(Kind::Text),
            (text, text, text).prop_map(|(code, message, modifier)| Kind::Error { code, message, modifier }),
        ];
        (format, kind).prop_map(|(format, kind)| Value { format, kind })
    }

    /// Any value record, lists nested included (also for `apply_response`'s tests).
    pub(crate) fn value() -> impl Strategy<Value = Value> {
        scalar().prop_recursive(3, 24, 6, |inner| {
            ("[A-Z\\[\\]]{0,12}", prop::collection::vec(inner, 0..6))
                .prop_map(|(format, items)| Value { format, kind: Kind::List(items) })
        })
    }

    fn records() -> impl Strategy<Value = Vec<Variable>> {
        // Long names and messages too: lengths past one varint byte.
        let name = prop_oneof!["[A-Za-z.]{0,10}", "[a-z]{120,300}"];
        prop::collection::vec((name, value()).prop_map(|(var, value)| Variable { var, value }), 0..20)
    }

    proptest! {
        /// Values encoded from records are byte for byte what prost writes for the same values
        /// as messages, inside a whole reply too, and decode to them.
        #[test]
        fn records_encode_as_prost_encodes_their_messages(records in records()) {
            let messages = BatchValues { values: convert::variables(records.clone()), encoded: Vec::new() };
            let direct = BatchValues::from_records(&records);
            prop_assert_eq!(direct.encoded_len(), messages.encoded_len());
            prop_assert_eq!(direct.encode_to_vec(), messages.encode_to_vec());
            let reply = |v: BatchValues| crate::grpc::proto::SolveBatchResponse {
                id: "x".into(),
                result: Some(crate::grpc::proto::solve_batch_response::Result::Values(v)),
            };
            let bytes = reply(direct.clone()).encode_to_vec();
            prop_assert_eq!(&bytes, &reply(messages.clone()).encode_to_vec());
            let decoded = crate::grpc::proto::SolveBatchResponse::decode(bytes.as_slice()).expect("decodes");
            prop_assert_eq!(&decoded, &reply(messages.clone()));
            prop_assert_eq!(direct.all().expect("decodes"), messages.values);
        }
    }

    /// A character's values written straight from its sheet are the bytes its records give:
    /// the example character, the starting one, and characters with more objects and other
    /// inputs (whole numbers past one varint byte, negative ones, custom formats).
    #[test]
    fn characters_encode_as_their_records() {
        use data::SheetOp;
        let ruleset = std::sync::Arc::new(data::load_starter().expect("starter"));
        let input = |channel: &str, on: Option<&str>, v: i64| SheetOp::SetInput {
            channel: channel.into(),
            on: on.map(str::to_owned),
            value: formula::Value::Number(v.into()),
        };
        let object = |kind: &str, key: &str, id: Option<&str>, parent: Option<&str>| SheetOp::AddObject {
            kind: kind.into(),
            key: key.into(),
            id: id.map(str::to_owned),
            parent: parent.map(str::to_owned),
        };
        // Much of the example character's (`data/examples/starter-character.json`).
        let example = vec![
            input("Level", None, 3),
            input("Rolled", Some("STR"), 15),
            input("Rolled", Some("DEX"), 14),
            SheetOp::SetInput {
                channel: "Handedness".into(),
                on: None,
                value: formula::Value::String("Left".into()),
            },
            object("RACE", "Stoneborn", None, None),
            object("SIZE", "M", None, None),
            object("EQUIPMENT", "Ring Hauberk", Some("armor"), None),
            object("EQUIPMENT", "Arming Sword", Some("sword"), None),
            object("ENHANCEMENT", "Keen Edge", Some("keen"), Some("sword")),
            object("SKILL", "Athletics", None, None),
            input("Ranks", Some("Athletics"), 3),
            object("FEAT", "Toughness", None, None),
            object("CONDITION", "Shaken", None, None),
        ];
        let batches: Vec<Vec<SheetOp>> = vec![
            vec![],
            example.clone(),
            [example.clone(), vec![input("Rolled", Some("STR"), 300), input("Level", None, -20_000)]]
                .concat(),
        ];
        for ops in batches {
            let mut c = data::Character::new(ruleset.clone()).expect("sheet");
            c.apply(&ops).expect("applies");
            let direct = BatchValues::from_character(&c);
            let records = BatchValues::from_records(&data::record::values(&c));
            assert_eq!(direct.encode_to_vec(), records.encode_to_vec());
            assert_eq!(direct.all().expect("decodes"), records.all().expect("decodes"));
        }
    }

    /// Names and keys too long for a value's lengths to fit one byte each are written the long
    /// way, and still give their records' bytes: a 100-letter global, a 50-letter variable of
    /// an instance whose key takes it past 127 bytes, and whole numbers of every length.
    #[test]
    fn long_names_encode_as_their_records() {
        let long = "L".repeat(100);
        let mid = "M".repeat(50);
        let text = format!(
            r#"
[ruleset]
name = "long names"
[scopes]
"PC.ITEM" = "PC"
[variables.PC]
Short = "NUMBER"
{long} = "NUMBER"
[variables."PC.ITEM"]
Weight = "NUMBER"
{mid} = "NUMBER"
[kinds.ITEM]
scope = "PC.ITEM"
[global]
modify = [{{ var = "Short", set = "7" }}, {{ var = "{long}", set = "-5" }}]
[[object]]
kind = "ITEM"
key = "Rope"
modify = [{{ var = "Weight", set = "-1234567890123456789" }}, {{ var = "{mid}", set = "42" }}]
"#
        );
        let ruleset = std::sync::Arc::new(data::load_str(&text, "long.toml").expect("the ruleset loads"));
        let add = |id: String| data::SheetOp::AddObject {
            kind: "ITEM".into(),
            key: "Rope".into(),
            id: Some(id),
            parent: None,
        };
        let mut c = data::Character::new(ruleset).expect("sheet");
        c.apply(&[add("rope".into()), add("K".repeat(60)), add("k".repeat(120))]).expect("applies");
        let direct = BatchValues::from_character(&c);
        let records = BatchValues::from_records(&data::record::values(&c));
        assert_eq!(direct.encode_to_vec(), records.encode_to_vec());
        let all = direct.all().expect("decodes");
        assert_eq!(all.len(), 2 + 3 * 2);
        assert!(all.iter().any(|v| v.r#ref == long), "{all:?}");
        assert!(all.iter().any(|v| v.r#ref == format!("{}.{mid}", "k".repeat(120))), "{all:?}");
    }

    /// The JSON mapping holds every value, encoded ones included, and reads back.
    #[test]
    fn json_holds_encoded_values() {
        let records = vec![
            Variable {
                var: "AC".into(),
                value: Value { format: "NUMBER".into(), kind: Kind::Number("17".into()) },
            },
            Variable {
                var: "Armor.Worn".into(),
                value: Value { format: "BOOLEAN".into(), kind: Kind::Boolean(false) },
            },
        ];
        let direct = BatchValues::from_records(&records);
        let json = serde_json::to_string(&direct).expect("json");
        assert_eq!(
            json,
            r#"{"values":[{"ref":"AC","value":{"format":"NUMBER","number":"17"}},{"ref":"Armor.Worn","value":{"format":"BOOLEAN","boolean":false}}]}"#
        );
        let back: BatchValues = serde_json::from_str(&json).expect("reads");
        assert_eq!(back, direct);
        assert_eq!(back.values.len(), 2);
        // Inside a whole reply too (pbjson's `SolveBatchResponse` calls these).
        let result = crate::grpc::proto::SolveBatchResponse {
            id: "a".into(),
            result: Some(crate::grpc::proto::solve_batch_response::Result::Values(direct.clone())),
        };
        let json = serde_json::to_string(&result).expect("json");
        assert!(json.contains(r#""ref":"Armor.Worn""#), "{json}");
        let back: crate::grpc::proto::SolveBatchResponse = serde_json::from_str(&json).expect("reads");
        assert_eq!(back, result);
        let empty: BatchValues = serde_json::from_str("{}").expect("reads");
        assert_eq!(serde_json::to_string(&empty).expect("json"), "{}");
    }
}
