//! No reply larger than the server says: every message the API sends is at most
//! `max_reply_bytes` (advertised by Ping, docs/api.md#limits).
//!
//! - Lists page by size as well as by count ([`fit_page`]): a page that would pass the limit
//!   ends early, and its `next_page_token` goes on from the last item it holds.
//! - A Watch message over the limit is split into several of the same revision, each but the
//!   last marked `continued` ([`split_watch`]).
//! - The replies of calls that commit (CreateSheet, Apply, Upgrade) leave their values or
//!   changes out and say so ([`fit_created`], [`fit_applied`]): the change was made, and a
//!   refusal would hide that.
//! - Any other reply over it is refused ([`check`]): RESOURCE_EXHAUSTED with
//!   `request.reply_too_large`, naming what the caller can narrow ([`Reply::NARROW`]).

use super::proto as pb;
use super::status;
use prost::Message;
use tonic::Status;

/// A reply message, and what a caller narrows when it is too large.
pub trait Reply: Message + Sized {
    /// How to ask for less, for the error that refuses a reply over the limit.
    const NARROW: &'static str;
}

macro_rules! replies {
    ($($t:ident => $narrow:literal,)*) => {
        $(impl Reply for pb::$t {
            const NARROW: &'static str = $narrow;
        })*
    };
}

replies! {
    PingResponse => "nothing to narrow",
    LoadRulesetResponse => "the ruleset's diagnostics are too many to send; run `sheetd check` on its files",
    ReloadRulesetResponse => "the ruleset's diagnostics are too many to send; run `sheetd check` on its files",
    ListRulesetsResponse => "ask for a smaller `page_size`",
    ListCatalogResponse => "ask for a smaller `page_size`, or filter by `kind`, `key_prefix` or `text`",
    CreateSheetResponse => "its values are left out past the limit; this is the sheet itself",
    GetSheetResponse => "the sheet holds too much to list at once; read its values with Values by `variables`",
    ListSheetsResponse => "ask for a smaller `page_size`",
    DeleteSheetResponse => "nothing to narrow",
    ApplyResponse => "the rules fired too much to list; the revision was made: read it with GetSheet",
    PreviewResponse => "explain fewer variables, or preview fewer operations",
    UpgradeResponse => "the move was made; read the sheet with GetSheet",
    ValuesResponse => "ask for fewer `variables`",
    ExplainResponse => "ask for less `depth`, or explain fewer variables",
    SelectResponse => "select from a narrower scope",
    WhyChangedResponse => "ask about fewer revisions at once (`from_revision`, `to_revision`)",
    SolveBatchResponse => "name the `variables` the item's result should carry",
}

/// A CreateSheet reply within `limit`: its values left out (`values_omitted`) when they would
/// pass it.
pub fn fit_created(mut r: pb::CreateSheetResponse, limit: usize) -> pb::CreateSheetResponse {
    if r.encoded_len() > limit {
        r.values.clear();
        r.values_omitted = true;
    }
    r
}

/// An Apply's (or Upgrade's) reply within `limit`: its changes left out (`changes_omitted`)
/// when they would pass it.
pub fn fit_applied(mut r: pb::ApplyResponse, limit: usize) -> pb::ApplyResponse {
    if r.encoded_len() > limit {
        r.omit_changes();
    }
    r
}

/// `reply` if it fits in `limit` bytes; otherwise the status that says so and what to narrow.
pub fn check<T: Reply>(reply: T, limit: usize) -> Result<T, Status> {
    let size = reply.encoded_len();
    if size <= limit { Ok(reply) } else { Err(status::reply_too_large(size, limit, T::NARROW)) }
}

/// How many of `items` (in order) fit as repeated field `tag` of a reply whose other fields
/// take `rest` bytes, within `limit`. At least one when there is one, so a page always moves on;
/// [`check`] refuses the page if even that one is too large.
pub fn fit_page<M: Message>(items: &[M], tag: u32, rest: usize, limit: usize) -> usize {
    let mut used = rest;
    for (i, item) in items.iter().enumerate() {
        used += prost::encoding::message::encoded_len(tag, item);
        if used > limit {
            return i.max(1);
        }
    }
    items.len()
}

/// Cuts `items` (repeated field `tag` of a reply whose other fields take `rest` bytes) to what
/// fits in `limit` (see [`fit_page`]); the number kept when it cut any, for the next page's
/// token.
pub fn trim_page<M: Message>(items: &mut Vec<M>, tag: u32, rest: usize, limit: usize) -> Option<usize> {
    let n = fit_page(items, tag, rest + PAGE_FIELDS, limit);
    (n < items.len()).then(|| {
        items.truncate(n);
        n
    })
}

/// [`trim_page`] for a list paged by id (ListSheets, ListRulesets): the next page's token, after
/// the last item kept, when it cut any.
pub fn trim_by_id<M: Message>(
    items: &mut Vec<M>,
    tag: u32,
    limit: usize,
    id: impl Fn(&M) -> &str,
) -> Option<String> {
    let n = trim_page(items, tag, 0, limit)?;
    Some(crate::engine::catalog::token_after(id(&items[n - 1])))
}

/// Room kept for a page's token and count, which are written after its items are chosen.
pub const PAGE_FIELDS: usize = 512;

/// A Watch message as one or more messages within `limit`: a revision's changes, or a
/// resync's values, split in order; every part but the last `continued`.
pub fn split_watch(m: pb::WatchResponse, limit: usize) -> Vec<pb::WatchResponse> {
    use pb::watch_response::Event;
    if m.encoded_len() <= limit {
        return vec![m];
    }
    let revision = m.revision;
    let part = |event: Event| pb::WatchResponse { revision, event: Some(event), continued: true };
    let mut out = match m.event {
        Some(Event::Changes(c)) => chunks(c.changes, 1, limit - PAGE_FIELDS)
            .into_iter()
            .map(|changes| part(Event::Changes(pb::Changes { changes })))
            .collect(),
        Some(Event::Resync(r)) => {
            let room = limit - PAGE_FIELDS - r.reason.len();
            chunks(r.values, 2, room)
                .into_iter()
                .map(|values| part(Event::Resync(pb::Resync { reason: r.reason.clone(), values })))
                .collect()
        }
        // A deletion carries nothing to split.
        other => vec![part_of(revision, other)],
    };
    if let Some(last) = out.last_mut() {
        last.continued = false;
    }
    out
}

fn part_of(revision: u64, event: Option<pb::watch_response::Event>) -> pb::WatchResponse {
    pb::WatchResponse { revision, event, continued: false }
}

/// `items` in runs that each encode (as repeated field `tag`) within `room` bytes; an item
/// larger than `room` alone makes a run of its own.
fn chunks<M: Message>(items: Vec<M>, tag: u32, room: usize) -> Vec<Vec<M>> {
    let mut out = Vec::new();
    let mut run = Vec::new();
    let mut used = 0;
    for item in items {
        let len = prost::encoding::message::encoded_len(tag, &item);
        if !run.is_empty() && used + len > room {
            out.push(std::mem::take(&mut run));
            used = 0;
        }
        used += len;
        run.push(item);
    }
    if !run.is_empty() {
        out.push(run);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn change(i: usize) -> pb::Change {
        let v = pb::Value { format: "NUMBER".into(), kind: Some(pb::value::Kind::Number(i.to_string())) };
        pb::Change { r#ref: format!("var{i:05}"), old: None, new: Some(v) }
    }

    #[test]
    fn a_watch_message_over_the_limit_is_split_in_order_and_each_part_fits() {
        let changes: Vec<pb::Change> = (0..5000).map(change).collect();
        let m = pb::WatchResponse {
            revision: 7,
            event: Some(pb::watch_response::Event::Changes(pb::Changes { changes: changes.clone() })),
            continued: false,
        };
        let limit = 64 << 10;
        assert!(m.encoded_len() > limit);
        let parts = split_watch(m, limit);
        assert!(parts.len() > 1);
        let mut again = Vec::new();
        for (i, p) in parts.iter().enumerate() {
            assert!(p.encoded_len() <= limit, "part {i} is {} bytes", p.encoded_len());
            assert_eq!(p.revision, 7);
            assert_eq!(p.continued, i + 1 < parts.len());
            match &p.event {
                Some(pb::watch_response::Event::Changes(c)) => again.extend(c.changes.iter().cloned()),
                other => panic!("not changes: {other:?}"),
            }
        }
        assert_eq!(again, changes);
    }

    #[test]
    fn a_committing_reply_over_the_limit_leaves_its_changes_out_and_says_so() {
        let changes: Vec<data::record::Change> = (0..5000)
            .map(|i| data::record::Change {
                var: format!("var{i:05}"),
                old: None,
                new: Some(data::record::Value {
                    format: "NUMBER".into(),
                    kind: data::record::Kind::Number(i.to_string()),
                }),
            })
            .collect();
        let r = pb::ApplyResponse::encoded(3, &changes, 5000, None);
        let limit = 64 << 10;
        assert!(r.encoded_len() > limit);
        let fitted = fit_applied(r.clone(), limit);
        assert!(fitted.changes_omitted && fitted.all_changes().expect("decodes").is_empty());
        assert_eq!((fitted.revision, fitted.recomputed), (3, 5000), "the rest stays");
        assert!(fitted.encoded_len() <= limit);
        let whole = fit_applied(r.clone(), 1 << 30);
        assert!(!whole.changes_omitted);
        assert_eq!(whole, r);
    }

    #[test]
    fn a_small_message_goes_whole() {
        let m = pb::WatchResponse { revision: 1, event: None, continued: false };
        assert_eq!(split_watch(m.clone(), 1 << 16), vec![m]);
    }

    #[test]
    fn a_page_ends_where_the_next_item_would_pass_the_limit_but_never_empty() {
        let items: Vec<pb::Change> = (0..100).map(change).collect();
        let each = prost::encoding::message::encoded_len(1, &items[0]);
        assert_eq!(fit_page(&items, 1, 0, each * 10), 10);
        assert_eq!(fit_page(&items, 1, 0, each * 10 + each - 1), 10);
        assert_eq!(fit_page(&items, 1, 0, 1 << 30), 100);
        assert_eq!(fit_page(&items, 1, 0, 1), 1, "one item always, so paging moves on");
    }

    #[test]
    fn a_reply_over_the_limit_is_refused_naming_what_to_narrow() {
        let values = pb::ValuesResponse {
            revision: 1,
            values: (0..1000).map(|i| pb::VariableValue { r#ref: format!("v{i}"), value: None }).collect(),
        };
        let e = check(values.clone(), 100).expect_err("too large");
        assert_eq!(e.code(), tonic::Code::ResourceExhausted);
        assert!(e.message().contains("ask for fewer `variables`"), "{}", e.message());
        assert_eq!(check(values.clone(), 1 << 20).expect("fits"), values);
    }
}
