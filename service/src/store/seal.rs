//! Records as both stores keep them: sealed with a checksum of their key and payload, so that a
//! damaged record is found and named when read (`0xFF 'S'`, a CRC-32, then the protobuf
//! payload).

use super::records::{LogRecord, SheetRecord, SnapshotRecord};
use super::{Logged, Snapshot, StoreError};
use prost::Message;

/// The start of every sealed record: 0xFF is never the first byte of a protobuf message.
pub(super) const SEAL: [u8; 2] = [0xFF, b'S'];

pub(super) fn checksum(key: &str, payload: &[u8]) -> u32 {
    let mut h = crc32fast::Hasher::new();
    h.update(key.as_bytes());
    h.update(&[0]);
    h.update(payload);
    h.finalize()
}

/// A record as stored: the seal, the checksum of its key and payload, the payload.
pub(super) fn seal(key: &str, payload: &[u8]) -> Vec<u8> {
    sealed(key, payload.len(), |out| out.extend_from_slice(payload))
}

/// A record sealed as [`seal`] seals it, its payload written by `write` into the same buffer
/// (room for about `size_hint` bytes of it): no copy of the payload.
pub(super) fn sealed(key: &str, size_hint: usize, write: impl FnOnce(&mut Vec<u8>)) -> Vec<u8> {
    let head = SEAL.len() + 4;
    let mut out = Vec::with_capacity(head + size_hint);
    out.extend_from_slice(&SEAL);
    out.extend_from_slice(&[0; 4]);
    write(&mut out);
    let sum = checksum(key, &out[head..]);
    out[SEAL.len()..head].copy_from_slice(&sum.to_le_bytes());
    out
}

/// `m` encoded and sealed (what `seal(key, &m.encode_to_vec())` gives), written once into
/// one buffer: no pass to measure it first and no copy of the payload.
pub(super) fn seal_message(key: &str, m: &impl Message, size_hint: usize) -> Vec<u8> {
    sealed(key, size_hint, |out| m.encode_raw(out))
}

/// A revision's log record, sealed: what `seal(key, &LogRecord::of(entry).encode_to_vec())`
/// gives, with the changes written straight from the entry (`crate::wire`) instead of copied
/// into records first. The fields go in prost's order: revision, ruleset version, operations,
/// changes, the version moved from, the game step.
pub(super) fn seal_log(key: &str, entry: &Logged) -> Vec<u8> {
    let hint = 64 * (entry.revision.operations.len() + entry.changes.len()) + 32;
    sealed(key, hint, |out| {
        let ops = LogRecord {
            revision: entry.revision.number,
            ruleset_version: entry.revision.ruleset_version,
            operations: LogRecord::operations_of(&entry.revision),
            changes: Vec::new(),
            moved_from_version: None,
            step: None,
        };
        ops.encode_raw(out);
        for c in &entry.changes {
            crate::wire::put_change(4, c, out);
        }
        if let Some(v) = entry.revision.moved_from {
            prost::encoding::uint64::encode(5, &v, out);
        }
        if let Some(step) = &entry.step {
            prost::encoding::message::encode(6, &super::records::step_record(step), out);
        }
    })
}

/// A stored record's payload, checked; `key` names it in errors ("log sheet-1@5").
pub(super) fn unseal<'a>(key: &str, raw: &'a [u8]) -> Result<&'a [u8], StoreError> {
    let damaged = |why: &str| StoreError::Damaged(format!("store: record {key} is damaged: {why}"));
    let rest = raw.strip_prefix(&SEAL).ok_or_else(|| damaged("it has no checksum"))?;
    let (sum, payload) = rest.split_at_checked(4).ok_or_else(|| damaged("it is truncated"))?;
    let sum = u32::from_le_bytes([sum[0], sum[1], sum[2], sum[3]]);
    if sum != checksum(key, payload) {
        return Err(damaged("its checksum does not match"));
    }
    Ok(payload)
}

pub(super) fn decode<M: Message + Default>(key: &str, raw: &[u8]) -> Result<M, StoreError> {
    M::decode(unseal(key, raw)?)
        .map_err(|e| StoreError::Damaged(format!("store: record {key} is damaged: it does not decode: {e}")))
}

/// Decodes a stored log or snapshot record and converts it to its domain type.
pub(super) fn domain<R: Message + Default, T>(
    key: &str,
    raw: &[u8],
    into: impl FnOnce(R) -> Result<T, String>,
) -> Result<T, StoreError> {
    into(decode(key, raw)?).map_err(|e| StoreError::Damaged(format!("store: record {key} is damaged: {e}")))
}

pub(super) fn id_key(table: &str, id: &str) -> String {
    format!("{table} {id}")
}

pub(super) fn rev_key(table: &str, sheet: &str, revision: u64) -> String {
    format!("{table} {sheet}@{revision}")
}

/// A new sheet's records, sealed: the sheet's, its revision 0, its first snapshot.
pub(super) fn new_sheet(sheet: &SheetRecord, first: &Logged, snapshot: &Snapshot) -> [Vec<u8>; 3] {
    let id = sheet.id.as_str();
    [
        seal(&id_key("sheets", id), &sheet.encode_to_vec()),
        seal_log(&rev_key("log", id, 0), first),
        seal(&rev_key("snapshots", id, 0), &SnapshotRecord::of(snapshot).encode_to_vec()),
    ]
}
