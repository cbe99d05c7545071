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
//!
//! Decoding is prost's, with one shortcut on the client's side of every Apply: a change in the
//! shape encoders write — its fields once each and in order, its values a format and a number,
//! boolean or text — is read straight from the reply's bytes (`fast`), about a quarter
//! cheaper than prost's generic decoding of the same `Change` (callgrind: 1,411 instructions
//! against 1,878, most of both the strings a change owns). Anything else (a list, an
//! error value, a field out of order or unknown, bytes that are not valid) is left to prost, so
//! what decodes and what is rejected is exactly as before; a property test holds both on valid
//! replies and on arbitrary bytes.

use crate::grpc::proto::{Change, Expired, Fired, Pending, RulesetMove, StepError};
use crate::wire::put_change;
use data::record;
use prost::bytes::{Buf, BufMut};
use prost::encoding::{DecodeContext, WireType, bool, message, skip_field, uint64};
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
    /// The effects the Apply's clock moves expired.
    pub expired: Vec<Expired>,
    /// For an emit, choose or roll: the rules that fired, in order.
    pub fired: Vec<Fired>,
    /// The question the step ended on.
    pub pending: Option<Pending>,
    /// Why the step's cascade stopped before its end.
    pub stopped: Option<StepError>,
    /// The changes were left out: too many for one reply (see [`ApplyResponse::omit_changes`]).
    pub changes_omitted: bool,
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
        ApplyResponse { revision, recomputed, moved, encoded, ..ApplyResponse::default() }
    }

    /// Leaves the changes out (the move's too) and says so: for a reply that would pass the
    /// server's `max_reply_bytes`. The revision was made; the client reads its changes elsewhere.
    pub fn omit_changes(&mut self) {
        self.changes.clear();
        self.encoded.clear();
        if let Some(m) = &mut self.moved {
            m.changes.clear();
        }
        self.changes_omitted = true;
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
        message::encode_repeated(5, &self.expired, buf);
        message::encode_repeated(6, &self.fired, buf);
        if let Some(p) = &self.pending {
            message::encode(7, p, buf);
        }
        if let Some(e) = &self.stopped {
            message::encode(8, e, buf);
        }
        if self.changes_omitted {
            bool::encode(9, &self.changes_omitted, buf);
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
            2 => {
                if wire_type == WireType::LengthDelimited
                    && let Some((change, used)) = fast::change(buf.chunk())
                {
                    buf.advance(used);
                    self.changes.push(change);
                    return Ok(());
                }
                message::merge_repeated(wire_type, &mut self.changes, buf, ctx).map_err(located("changes"))
            }
            3 => uint64::merge(wire_type, &mut self.recomputed, buf, ctx).map_err(located("recomputed")),
            4 => message::merge(wire_type, self.moved.get_or_insert_with(RulesetMove::default), buf, ctx)
                .map_err(located("moved")),
            5 => message::merge_repeated(wire_type, &mut self.expired, buf, ctx).map_err(located("expired")),
            6 => message::merge_repeated(wire_type, &mut self.fired, buf, ctx).map_err(located("fired")),
            7 => message::merge(wire_type, self.pending.get_or_insert_with(Pending::default), buf, ctx)
                .map_err(located("pending")),
            8 => message::merge(wire_type, self.stopped.get_or_insert_with(StepError::default), buf, ctx)
                .map_err(located("stopped")),
            9 => bool::merge(wire_type, &mut self.changes_omitted, buf, ctx)
                .map_err(located("changes_omitted")),
            _ => skip_field(wire_type, tag, buf, ctx),
        }
    }

    fn encoded_len(&self) -> usize {
        (if self.revision != 0 { uint64::encoded_len(1, &self.revision) } else { 0 })
            + message::encoded_len_repeated(2, &self.changes)
            + self.encoded.len()
            + (if self.recomputed != 0 { uint64::encoded_len(3, &self.recomputed) } else { 0 })
            + self.moved.as_ref().map_or(0, |m| message::encoded_len(4, m))
            + message::encoded_len_repeated(5, &self.expired)
            + message::encoded_len_repeated(6, &self.fired)
            + self.pending.as_ref().map_or(0, |p| message::encoded_len(7, p))
            + self.stopped.as_ref().map_or(0, |e| message::encoded_len(8, e))
            + (if self.changes_omitted { bool::encoded_len(9, &self.changes_omitted) } else { 0 })
    }

    fn clear(&mut self) {
        *self = ApplyResponse::default();
    }
}

/// Reading a `Change` in the shape encoders write straight from its bytes, or `None` to leave it
/// to prost (see the module's documentation).
mod fast {
    use crate::grpc::proto::{Change, Value, value::Kind};
    use prost::encoding::decode_varint;

    /// The change at the start of `bytes` (its length, then its fields), and how many bytes
    /// it took.
    pub(super) fn change(bytes: &[u8]) -> Option<(Change, usize)> {
        let mut b = bytes;
        let len = usize::try_from(decode_varint(&mut b).ok()?).ok()?;
        let body = b.get(..len)?;
        let used = bytes.len() - b.len() + len;
        let mut c = Change::default();
        let mut fields = Fields { rest: body, last: 0 };
        while let Some((tag, field)) = fields.next_delimited()? {
            match tag {
                1 => c.r#ref = text(field)?,
                2 => c.old = Some(value(field)?),
                3 => c.new = Some(value(field)?),
                _ => return None,
            }
        }
        Some((c, used))
    }

    /// A format and a number, boolean or text (or no kind).
    fn value(body: &[u8]) -> Option<Value> {
        let mut v = Value::default();
        let mut fields = Fields { rest: body, last: 0 };
        while let Some(key) = fields.next_key()? {
            match key {
                (1, 2) => v.format = text(fields.delimited()?)?,
                (2, 2) => v.kind = Some(Kind::Number(text(fields.delimited()?)?)),
                (3, 0) => v.kind = Some(Kind::Boolean(decode_varint(&mut fields.rest).ok()? != 0)),
                (4, 2) => v.kind = Some(Kind::Text(text(fields.delimited()?)?)),
                _ => return None,
            }
        }
        Some(v)
    }

    fn text(bytes: &[u8]) -> Option<String> {
        std::str::from_utf8(bytes).ok().map(str::to_owned)
    }

    /// A message's fields, each tag greater than the last (as encoders write them).
    struct Fields<'a> {
        rest: &'a [u8],
        last: u64,
    }

    impl<'a> Fields<'a> {
        /// The next field's (tag, wire type); `Some(None)` at the end, `None` for a key that
        /// is invalid or out of order.
        fn next_key(&mut self) -> Option<Option<(u64, u64)>> {
            if self.rest.is_empty() {
                return Some(None);
            }
            let key = decode_varint(&mut self.rest).ok()?;
            let tag = key >> 3;
            if tag <= self.last {
                return None;
            }
            self.last = tag;
            Some(Some((tag, key & 7)))
        }

        /// A length-delimited field's bytes, after its key.
        fn delimited(&mut self) -> Option<&'a [u8]> {
            let len = usize::try_from(decode_varint(&mut self.rest).ok()?).ok()?;
            let (field, rest) = (self.rest.get(..len)?, self.rest.get(len..)?);
            self.rest = rest;
            Some(field)
        }

        /// The next field, which must be length-delimited, with its tag.
        fn next_delimited(&mut self) -> Option<Option<(u64, &'a [u8])>> {
            match self.next_key()? {
                None => Some(None),
                Some((tag, 2)) => Some(Some((tag, self.delimited()?))),
                Some(_) => None,
            }
        }
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
            && self.expired == other.expired
            && self.fired == other.fired
            && self.pending == other.pending
            && self.stopped == other.stopped
            && self.changes_omitted == other.changes_omitted
    }
}

impl std::fmt::Debug for ApplyResponse {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApplyResponse")
            .field("revision", &self.revision)
            .field("changes", &self.all_changes())
            .field("recomputed", &self.recomputed)
            .field("moved", &self.moved)
            .field("expired", &self.expired)
            .field("fired", &self.fired)
            .field("pending", &self.pending)
            .field("stopped", &self.stopped)
            .field("changes_omitted", &self.changes_omitted)
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
            + usize::from(self.moved.is_some())
            + usize::from(!self.expired.is_empty())
            + usize::from(!self.fired.is_empty())
            + usize::from(self.pending.is_some())
            + usize::from(self.stopped.is_some())
            + usize::from(self.changes_omitted);
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
        if !self.expired.is_empty() {
            st.serialize_field("expired", &self.expired)?;
        }
        if !self.fired.is_empty() {
            st.serialize_field("fired", &self.fired)?;
        }
        if let Some(p) = &self.pending {
            st.serialize_field("pending", p)?;
        }
        if let Some(e) = &self.stopped {
            st.serialize_field("stopped", e)?;
        }
        if self.changes_omitted {
            st.serialize_field("changesOmitted", &true)?;
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
            #[serde(default)]
            expired: Option<Vec<Expired>>,
            #[serde(default)]
            fired: Option<Vec<Fired>>,
            #[serde(default)]
            pending: Option<Pending>,
            #[serde(default)]
            stopped: Option<StepError>,
            #[serde(default, rename = "changesOmitted", alias = "changes_omitted")]
            changes_omitted: Option<bool>,
        }
        let json = Json::deserialize(d)?;
        Ok(ApplyResponse {
            revision: json.revision.map_or(0, |n| n.0),
            changes: json.changes.unwrap_or_default(),
            recomputed: json.recomputed.map_or(0, |n| n.0),
            moved: json.moved,
            expired: json.expired.unwrap_or_default(),
            fired: json.fired.unwrap_or_default(),
            pending: json.pending,
            stopped: json.stopped,
            changes_omitted: json.changes_omitted.unwrap_or(false),
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
            expired in prop::collection::vec(("[a-z `]{0,12}", "[A-Za-z.]{0,8}", 0..9u64), 0..3),
            fired in prop::collection::vec(("[a-z]{1,8}", prop::option::of("[a-z0-9]{1,6}")), 0..3),
            pending in prop::option::of((1..5u64, prop::collection::vec("[A-Za-z ]{1,9}", 0..4), 0..3u32)),
            stopped in any::<bool>(),
            omitted in any::<bool>(),
        ) {
            let fired: Vec<Fired> = fired
                .into_iter()
                .map(|(rule, this)| Fired {
                    at: format!("{rule}.toml:3:1"),
                    event: "e".into(),
                    error: this.is_some().then(|| StepError { code: "solver.guard_failed".into(), ..StepError::default() }),
                    rule,
                    this,
                })
                .collect();
            let pending = pending.map(|(choice, options, pick)| Pending {
                choice,
                prompt: "Which?".into(),
                options,
                pick,
                ..Pending::default()
            });
            let stopped = stopped.then(|| StepError {
                code: "events.cascade_loop".into(),
                message: "a loop".into(),
                chain: vec!["a".into(), "b".into()],
            });
            let expired: Vec<Expired> = expired
                .into_iter()
                .map(|(what, clock, n)| Expired { what, clock, after: n.to_string(), now: (n + 1).to_string() })
                .collect();
            let mut direct = ApplyResponse::encoded(revision, &changes, recomputed, moved.clone());
            direct.expired = expired.clone();
            direct.fired = fired.clone();
            direct.pending = pending.clone();
            direct.stopped = stopped.clone();
            direct.changes_omitted = omitted;
            let as_messages = ApplyResponse {
                revision,
                changes: messages(&changes),
                recomputed,
                moved,
                expired,
                fired,
                pending,
                stopped,
                changes_omitted: omitted,
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

    /// What prost's derived decoding makes of an `ApplyResponse`: the reference the decoding
    /// with its shortcut is held to.
    #[derive(Clone, PartialEq, prost::Message)]
    struct Reference {
        #[prost(uint64, tag = "1")]
        revision: u64,
        #[prost(message, repeated, tag = "2")]
        changes: Vec<Change>,
        #[prost(uint64, tag = "3")]
        recomputed: u64,
        #[prost(message, optional, tag = "4")]
        moved: Option<RulesetMove>,
        #[prost(message, repeated, tag = "5")]
        expired: Vec<Expired>,
        #[prost(message, repeated, tag = "6")]
        fired: Vec<Fired>,
        #[prost(message, optional, tag = "7")]
        pending: Option<Pending>,
        #[prost(message, optional, tag = "8")]
        stopped: Option<StepError>,
        #[prost(bool, tag = "9")]
        changes_omitted: bool,
    }

    type Decoded = (
        u64,
        Vec<Change>,
        u64,
        Option<RulesetMove>,
        Vec<Expired>,
        Vec<Fired>,
        Option<Pending>,
        Option<StepError>,
        bool,
    );

    /// A decoded reply's fields, in order.
    macro_rules! fields {
        ($r:expr) => {{
            let r = $r;
            (
                r.revision,
                r.changes,
                r.recomputed,
                r.moved,
                r.expired,
                r.fired,
                r.pending,
                r.stopped,
                r.changes_omitted,
            )
        }};
    }

    fn ours(bytes: &[u8]) -> Option<Decoded> {
        ApplyResponse::decode(bytes).ok().map(|r| fields!(r))
    }

    fn prost_s(bytes: &[u8]) -> Option<Decoded> {
        Reference::decode(bytes).ok().map(|r| fields!(r))
    }

    /// A valid reply's bytes, with one byte replaced and maybe cut short.
    fn damaged() -> impl Strategy<Value = Vec<u8>> {
        (
            change_records(),
            any::<prop::sample::Index>(),
            any::<u8>(),
            any::<prop::sample::Index>(),
            any::<bool>(),
        )
            .prop_map(|(changes, at, byte, cut, shorten)| {
                let mut bytes = ApplyResponse::encoded(7, &changes, 3, None).encode_to_vec();
                if !bytes.is_empty() {
                    let at = at.index(bytes.len());
                    bytes[at] = byte;
                    if shorten {
                        bytes.truncate(cut.index(bytes.len()));
                    }
                }
                bytes
            })
    }

    proptest! {
        /// Decoding takes a change in the common shape straight from its bytes and gives what
        /// prost's derived decoding gives, for every reply; on damaged or arbitrary bytes it
        /// accepts and rejects exactly what prost does.
        #[test]
        fn decoding_agrees_with_prost(
            changes in change_records(),
            moved in a_move(),
            damaged in damaged(),
            noise in prop::collection::vec(any::<u8>(), 0..64),
        ) {
            let bytes = ApplyResponse::encoded(5, &changes, 9, moved).encode_to_vec();
            let decoded = ours(&bytes);
            prop_assert!(decoded.is_some());
            prop_assert_eq!(&decoded, &prost_s(&bytes));
            prop_assert_eq!(decoded.map(|d| d.1), Some(messages(&changes)));
            // The shortcut is taken for every change whose values are a number, a boolean or
            // text (or absent), and only for those.
            for c in &changes {
                let mut one = Vec::new();
                put_change(2, c, &mut one);
                let plain = [&c.old, &c.new].into_iter().flatten().all(|v| {
                    matches!(v.kind, record::Kind::Number(_) | record::Kind::Boolean(_) | record::Kind::Text(_))
                });
                let fast = fast::change(&one[1..]);
                prop_assert_eq!(fast.is_some(), plain);
                if let Some((fast, used)) = fast {
                    prop_assert_eq!(used, one.len() - 1);
                    prop_assert_eq!(&fast, &messages(std::slice::from_ref(c))[0]);
                }
            }
            prop_assert_eq!(ours(&damaged), prost_s(&damaged));
            prop_assert_eq!(ours(&noise), prost_s(&noise));
        }
    }

    /// Replies in shapes encoders do not write — a field twice, fields out of order, an
    /// unknown field, a value's kind twice — decode as prost decodes them.
    #[test]
    fn unusual_shapes_decode_as_prost_decodes_them() {
        use prost::encoding::{encode_key, encode_varint};
        // `expired` (field 5) with the wrong wire type: both refuse it (found by the property
        // test when the field was added).
        assert_eq!(ours(&[8, 7, 40, 3]), prost_s(&[8, 7, 40, 3]));
        assert!(ours(&[8, 7, 40, 3]).is_none());
        fn field(tag: u32, body: &[u8], out: &mut Vec<u8>) {
            encode_key(tag, WireType::LengthDelimited, out);
            encode_varint(body.len() as u64, out);
            out.extend_from_slice(body);
        }
        let value = |parts: &[(u32, &str)]| {
            let mut v = Vec::new();
            for (tag, text) in parts {
                field(*tag, text.as_bytes(), &mut v);
            }
            v
        };
        let change = |fields: &[(u32, Vec<u8>)]| {
            let mut body = Vec::new();
            for (tag, bytes) in fields {
                field(*tag, bytes, &mut body);
            }
            let mut reply = Vec::new();
            field(2, &body, &mut reply);
            reply
        };
        let number = value(&[(1, "NUMBER"), (2, "1")]);
        let shapes = [
            // `old` twice: prost merges the second into the first (the format stays).
            change(&[(1, b"AC".to_vec()), (2, number.clone()), (2, value(&[(2, "2")]))]),
            // `new` before `old`, and `ref` last.
            change(&[(3, number.clone()), (2, value(&[(1, "NUMBER"), (2, "3")])), (1, b"AC".to_vec())]),
            // An unknown field, skipped.
            change(&[(1, b"AC".to_vec()), (9, b"x".to_vec()), (3, number.clone())]),
            // A value's kind twice (number, then text): the last one stands.
            change(&[(1, b"AC".to_vec()), (3, value(&[(1, "DICE"), (2, "1"), (4, "1d8")]))]),
            // A value's format twice.
            change(&[(1, b"AC".to_vec()), (3, value(&[(1, "A"), (1, "B"), (2, "1")]))]),
        ];
        for bytes in shapes {
            assert!(ours(&bytes).is_some(), "{bytes:?}");
            assert_eq!(ours(&bytes), prost_s(&bytes), "{bytes:?}");
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
