//! `sheetd.v1.ApplyResponse`, written by hand: an Apply's changes encoded once, straight from
//! the engine's change records.
//!
//! Generated code would need every change as a `Change` message of owned strings holding two
//! `Value` messages, and measures each value again at every level that encloses it (the reply,
//! the change, the value) before writing it once. On the example character's armor put on
//! and taken off, that conversion and encoding were about a fifth of the server's work per
//! Apply, outside the fsync. [`ApplyResponse::encoded`] writes the changes' bytes from their
//! records with `crate::wire` (the store writes a revision's log record the same way), each
//! measured once; the reply then carries them as they are.
//!
//! On the wire nothing changes: the bytes are those prost writes for the same reply with the
//! changes as messages, which a test holds byte for byte. A client decodes into
//! [`ApplyResponse::changes`] as before, and the JSON mapping is pbjson's. `build.rs` maps the
//! message to this type (`extern_path`) for both prost and pbjson.

use crate::grpc::proto::{Change, RulesetMove};
use crate::wire::put_change;
use data::record;
use prost::bytes::{Buf, BufMut};
use prost::encoding::{DecodeContext, WireType, message, skip_field, uint64};
use prost::{DecodeError, Message};

/// An Apply's (or an Upgrade's) answer: the sheet's new revision, its changed variables (old →
/// new, in topological order), how many variables were recomputed, and the ruleset move that
/// came first, if any.
#[derive(Clone, Default)]
pub struct ApplyResponse {
    pub revision: u64,
    /// The changes as messages. A decoded reply has every change here.
    pub changes: Vec<Change>,
    pub recomputed: u64,
    pub moved: Option<RulesetMove>,
    /// Field-2 entries already encoded (see [`ApplyResponse::encoded`]), written after
    /// [`changes`](Self::changes).
    encoded: Vec<u8>,
}

impl ApplyResponse {
    /// A reply with `changes` encoded now, each measured once.
    pub fn encoded(
        revision: u64,
        changes: &[record::Change],
        recomputed: u64,
        moved: Option<RulesetMove>,
    ) -> ApplyResponse {
        // About a name and two short values a change: one allocation, mostly.
        let mut encoded = Vec::with_capacity(changes.iter().map(|c| c.var.len() + 40).sum());
        for c in changes {
            put_change(2, c, &mut encoded);
        }
        ApplyResponse { revision, changes: Vec::new(), recomputed, moved, encoded }
    }

    /// Every change as a message: [`changes`](Self::changes), then the encoded ones decoded.
    pub fn all_changes(&self) -> Result<Vec<Change>, DecodeError> {
        let mut all = ApplyResponse { changes: self.changes.clone(), ..ApplyResponse::default() };
        all.merge(self.encoded.as_slice())?;
        Ok(all.changes)
    }
}

impl Message for ApplyResponse {
    fn encode_raw(&self, buf: &mut impl BufMut) {
        if self.revision != 0 {
            uint64::encode(1, &self.revision, buf);
        }
        message::encode_repeated(2, &self.changes, buf);
        buf.put_slice(&self.encoded);
        if self.recomputed != 0 {
            uint64::encode(3, &self.recomputed, buf);
        }
        if let Some(m) = &self.moved {
            message::encode(4, m, buf);
        }
    }

    fn merge_field(
        &mut self,
        tag: u32,
        wire_type: WireType,
        buf: &mut impl Buf,
        ctx: DecodeContext,
    ) -> Result<(), DecodeError> {
        let located = |field: &'static str| {
            move |mut e: DecodeError| {
                e.push("ApplyResponse", field);
                e
            }
        };
        match tag {
            1 => uint64::merge(wire_type, &mut self.revision, buf, ctx).map_err(located("revision")),
            2 => message::merge_repeated(wire_type, &mut self.changes, buf, ctx).map_err(located("changes")),
            3 => uint64::merge(wire_type, &mut self.recomputed, buf, ctx).map_err(located("recomputed")),
            4 => message::merge(wire_type, self.moved.get_or_insert_with(RulesetMove::default), buf, ctx)
                .map_err(located("moved")),
            _ => skip_field(wire_type, tag, buf, ctx),
        }
    }

    fn encoded_len(&self) -> usize {
        (if self.revision != 0 { uint64::encoded_len(1, &self.revision) } else { 0 })
            + message::encoded_len_repeated(2, &self.changes)
            + self.encoded.len()
            + (if self.recomputed != 0 { uint64::encoded_len(3, &self.recomputed) } else { 0 })
            + self.moved.as_ref().map_or(0, |m| message::encoded_len(4, m))
    }

    fn clear(&mut self) {
        *self = ApplyResponse::default();
    }
}

/// Equal when they hold the same reply, however they hold its changes.
impl PartialEq for ApplyResponse {
    fn eq(&self, other: &Self) -> bool {
        let same_changes = if self.encoded.is_empty() && other.encoded.is_empty() {
            self.changes == other.changes
        } else {
            // Encoded bytes are always valid (this module wrote them), so decoding cannot fail.
            self.all_changes().ok() == other.all_changes().ok()
        };
        same_changes
            && self.revision == other.revision
            && self.recomputed == other.recomputed
            && self.moved == other.moved
    }
}

impl std::fmt::Debug for ApplyResponse {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApplyResponse")
            .field("revision", &self.revision)
            .field("changes", &self.all_changes())
            .field("recomputed", &self.recomputed)
            .field("moved", &self.moved)
            .finish()
    }
}

/// The canonical JSON mapping, as pbjson writes it for the generated message: fields at their
/// defaults left out, 64-bit numbers as strings, encoded changes included.
impl serde::Serialize for ApplyResponse {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::{Error, SerializeStruct};
        let changes = self.all_changes().map_err(S::Error::custom)?;
        let len = usize::from(self.revision != 0)
            + usize::from(!changes.is_empty())
            + usize::from(self.recomputed != 0)
            + usize::from(self.moved.is_some());
        let mut st = s.serialize_struct("sheetd.v1.ApplyResponse", len)?;
        if self.revision != 0 {
            st.serialize_field("revision", self.revision.to_string().as_str())?;
        }
        if !changes.is_empty() {
            st.serialize_field("changes", &changes)?;
        }
        if self.recomputed != 0 {
            st.serialize_field("recomputed", self.recomputed.to_string().as_str())?;
        }
        if let Some(m) = &self.moved {
            st.serialize_field("moved", m)?;
        }
        st.end()
    }
}

/// Reads what pbjson reads for the generated message: numbers as strings or numbers, unknown
/// fields rejected.
impl<'de> serde::Deserialize<'de> for ApplyResponse {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use pbjson::private::NumberDeserialize;
        #[derive(serde::Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Json {
            #[serde(default)]
            revision: Option<NumberDeserialize<u64>>,
            #[serde(default)]
            changes: Option<Vec<Change>>,
            #[serde(default)]
            recomputed: Option<NumberDeserialize<u64>>,
            #[serde(default)]
            moved: Option<RulesetMove>,
        }
        let json = Json::deserialize(d)?;
        Ok(ApplyResponse {
            revision: json.revision.map_or(0, |n| n.0),
            changes: json.changes.unwrap_or_default(),
            recomputed: json.recomputed.map_or(0, |n| n.0),
            moved: json.moved,
            encoded: Vec::new(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::grpc::batch_values::tests::value;
    use proptest::prelude::*;

    fn change_records() -> impl Strategy<Value = Vec<record::Change>> {
        // Long names too: lengths past one varint byte.
        let name = prop_oneof!["[A-Za-z.#0-9]{0,10}", "[a-z]{120,300}"];
        let change = (name, prop::option::of(value()), prop::option::of(value()))
            .prop_map(|(var, old, new)| record::Change { var, old, new });
        prop::collection::vec(change, 0..16)
    }

    /// The same changes as prost's messages (what `convert` made before this type).
    fn messages(changes: &[record::Change]) -> Vec<Change> {
        changes
            .iter()
            .map(|c| Change {
                r#ref: c.var.clone(),
                old: c.old.as_ref().map(crate::grpc::convert::value),
                new: c.new.as_ref().map(crate::grpc::convert::value),
            })
            .collect()
    }

    fn a_move() -> impl Strategy<Value = Option<RulesetMove>> {
        prop::option::of((0..5u64, 0..300u64, change_records()).prop_map(|(from_version, to_version, c)| {
            RulesetMove { from_version, to_version, changes: messages(&c) }
        }))
    }

    proptest! {
        /// A reply with its changes encoded from records is byte for byte what prost writes
        /// for the same reply with the changes as messages, and decodes to it.
        #[test]
        fn replies_encode_as_prost_encodes_their_messages(
            changes in change_records(),
            revision in prop_oneof![Just(0u64), any::<u64>()],
            recomputed in prop_oneof![Just(0u64), 0..100_000u64],
            moved in a_move(),
        ) {
            let direct = ApplyResponse::encoded(revision, &changes, recomputed, moved.clone());
            let as_messages = ApplyResponse {
                revision,
                changes: messages(&changes),
                recomputed,
                moved,
                encoded: Vec::new(),
            };
            prop_assert_eq!(direct.encoded_len(), as_messages.encoded_len());
            let bytes = direct.encode_to_vec();
            prop_assert_eq!(&bytes, &as_messages.encode_to_vec());
            let decoded = ApplyResponse::decode(bytes.as_slice()).expect("decodes");
            prop_assert!(decoded.encoded.is_empty());
            prop_assert_eq!(&decoded.changes, &as_messages.changes);
            prop_assert_eq!(&decoded, &direct);
            prop_assert_eq!(direct.all_changes().expect("decodes"), as_messages.changes);
        }
    }

    /// The JSON mapping is pbjson's, encoded changes included, and reads back.
    #[test]
    fn json_holds_encoded_changes() {
        let n = |s: &str| record::Value { format: "NUMBER".into(), kind: record::Kind::Number(s.into()) };
        let changes = vec![
            record::Change { var: "AC".into(), old: Some(n("12")), new: Some(n("17")) },
            record::Change { var: "armor#1.Weight".into(), old: None, new: Some(n("25")) },
        ];
        let direct = ApplyResponse::encoded(3, &changes, 40, None);
        let json = serde_json::to_string(&direct).expect("json");
        assert_eq!(
            json,
            r#"{"revision":"3","changes":[{"ref":"AC","old":{"format":"NUMBER","number":"12"},"new":{"format":"NUMBER","number":"17"}},{"ref":"armor#1.Weight","new":{"format":"NUMBER","number":"25"}}],"recomputed":"40"}"#
        );
        let back: ApplyResponse = serde_json::from_str(&json).expect("reads");
        assert_eq!(back, direct);
        assert_eq!(back.changes.len(), 2);
        // Numbers as JSON numbers read too, as pbjson reads them; unknown fields do not.
        let numbers: ApplyResponse =
            serde_json::from_str(r#"{"revision":3,"recomputed":40}"#).expect("reads");
        assert_eq!((numbers.revision, numbers.recomputed), (3, 40));
        assert!(serde_json::from_str::<ApplyResponse>(r#"{"revison":"3"}"#).is_err());
        let empty: ApplyResponse = serde_json::from_str("{}").expect("reads");
        assert_eq!(serde_json::to_string(&empty).expect("json"), "{}");
        let moved = ApplyResponse::encoded(
            4,
            &[],
            0,
            Some(RulesetMove { from_version: 1, to_version: 2, changes: Vec::new() }),
        );
        let json = serde_json::to_string(&moved).expect("json");
        assert_eq!(json, r#"{"revision":"4","moved":{"fromVersion":"1","toVersion":"2"}}"#);
        assert_eq!(serde_json::from_str::<ApplyResponse>(&json).expect("reads"), moved);
    }
}
