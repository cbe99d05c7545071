//! A ruleset's catalog: what a character builder offers — its kinds, and its objects with what
//! each modifies, its parts and grants and where it is defined — filtered and paged; and the
//! paging every List call shares ([`page_len`], [`paged`]).

use super::{Engine, EngineError};
use data::Ruleset;

/// The most objects one page holds; a request for more gets this many.
pub const MAX_PAGE: usize = 1_000;
/// A page's size when the request names none.
pub const DEFAULT_PAGE: usize = 100;

/// What to list: objects of `kind` (any when empty), whose key starts with `key_prefix`, whose
/// key or name holds `text` (all case-insensitive); the page of `page_size` starting at
/// `page_token`.
#[derive(Clone, Debug, Default)]
pub struct CatalogQuery {
    pub kind: String,
    pub key_prefix: String,
    pub text: String,
    pub page_size: usize,
    pub page_token: String,
}

/// A kind of object, as the catalog lists it.
#[derive(Clone, Debug, PartialEq)]
pub struct CatalogKind {
    pub name: String,
    /// `listed`, `always` or `granted`: how its objects come onto a sheet.
    pub presence: &'static str,
    /// Its objects attach to a parent (they take `parent` when added).
    pub attach: bool,
    /// Its objects have parts.
    pub parts: bool,
    pub objects: usize,
}

/// An object, as the catalog lists it.
#[derive(Clone, Debug, PartialEq)]
pub struct CatalogObject {
    pub kind: String,
    pub key: String,
    pub name: String,
    pub category: Option<String>,
    /// What it modifies: (variable, modifier type), in the order written, its parts' and the
    /// other objects' (MODIFYOTHER) included.
    pub modifies: Vec<(String, String)>,
    pub parts: u32,
    /// The objects it grants, as `KIND key`.
    pub grants: Vec<String>,
    /// Where the ruleset defines it: `file:line:col`.
    pub origin: String,
}

/// One page of a catalog.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Catalog {
    pub ruleset_version: u64,
    pub kinds: Vec<CatalogKind>,
    pub objects: Vec<CatalogObject>,
    /// How many objects pass the filters, on every page.
    pub total: usize,
    /// Where the page starts among them.
    pub start: usize,
    /// The next page's token; empty on the last.
    pub next_page_token: String,
}

impl Engine {
    /// A page of ruleset `id`'s catalog (the default ruleset for an empty id).
    pub fn catalog(&self, id: &str, q: &CatalogQuery) -> Result<Catalog, EngineError> {
        let entry = self.ruleset_entry(id)?;
        let current = entry.current.load_full();
        let start = match q.page_token.as_str() {
            "" => 0,
            t => t
                .parse::<usize>()
                .map_err(|_| EngineError::invalid(format!("page_token `{t}` is not one this server gave")))?,
        };
        let mut c = list(current.ruleset(), q, start, page_len(q.page_size));
        c.ruleset_version = current.version;
        Ok(c)
    }
}

/// How many items a page holds when `page_size` are asked for: [`DEFAULT_PAGE`] for 0, at most
/// [`MAX_PAGE`].
pub fn page_len(page_size: usize) -> usize {
    match page_size {
        0 => DEFAULT_PAGE,
        n => n.min(MAX_PAGE),
    }
}

/// The token of the page after the item `id` (see [`paged`]).
pub fn token_after(id: &str) -> String {
    format!("after:{id}")
}

/// A catalog page's token: the page starting at the `start`th object passing the filters.
pub fn catalog_token(start: usize) -> String {
    start.to_string()
}

/// One page of `all` (sorted by `id`): the items after the one a `page_token` names (`after:ID`,
/// what the previous page ended with; stable while items come and go), [`page_len`] of them,
/// the next page's token (empty on the last) and how many there are.
pub fn paged<T>(
    all: Vec<T>,
    id: impl Fn(&T) -> &str,
    page_size: usize,
    page_token: &str,
) -> Result<(Vec<T>, String, usize), EngineError> {
    let size = page_len(page_size);
    let total = all.len();
    let after =
        match page_token {
            "" => None,
            t => Some(t.strip_prefix("after:").ok_or_else(|| {
                EngineError::invalid(format!("page_token `{t}` is not one this server gave"))
            })?),
        };
    let mut page: Vec<T> = all.into_iter().filter(|x| after.is_none_or(|a| id(x) > a)).collect();
    let more = page.len() > size;
    page.truncate(size);
    let next = match (more, page.last()) {
        (true, Some(last)) => token_after(id(last)),
        _ => String::new(),
    };
    Ok((page, next, total))
}

/// The page of `r`'s objects passing `q`'s filters from `start`, `size` long, with every kind.
fn list(r: &Ruleset, q: &CatalogQuery, start: usize, size: usize) -> Catalog {
    let kind = q.kind.to_ascii_lowercase();
    let prefix = q.key_prefix.to_ascii_lowercase();
    let text = q.text.to_ascii_lowercase();
    let passes = |o: &data::Object| {
        let k = &r.kind_def(o.kind).name;
        (kind.is_empty() || k.eq_ignore_ascii_case(&kind))
            && o.folded_key.starts_with(&prefix)
            && (text.is_empty()
                || o.folded_key.contains(&text)
                || o.name.to_ascii_lowercase().contains(&text))
    };
    let matching: Vec<&data::Object> = r.objects().iter().filter(|o| passes(o)).collect();
    let total = matching.len();
    let objects = matching.iter().skip(start).take(size).map(|o| object(r, o)).collect();
    let end = start.saturating_add(size);
    let kinds = r
        .kinds()
        .iter()
        .enumerate()
        .map(|(i, k)| CatalogKind {
            name: k.name.to_string(),
            presence: match k.presence {
                data::Presence::Listed => "listed",
                data::Presence::Always => "always",
                data::Presence::Granted => "granted",
            },
            attach: k.attach,
            parts: k.parts.is_some(),
            objects: r.objects().iter().filter(|o| o.kind.0 as usize == i).count(),
        })
        .collect();
    Catalog {
        ruleset_version: 0,
        kinds,
        objects,
        total,
        start,
        next_page_token: if end < total { catalog_token(end) } else { String::new() },
    }
}

fn object(r: &Ruleset, o: &data::Object) -> CatalogObject {
    let m = |t: &data::ModTemplate| (t.var.to_string(), t.kind.name().to_owned());
    let mut modifies: Vec<(String, String)> = o.modify.iter().map(m).collect();
    modifies.extend(o.parts.iter().map(|(_, t)| m(t)));
    modifies.extend(o.other.iter().map(|x| m(&x.m)));
    CatalogObject {
        kind: r.kind_def(o.kind).name.to_string(),
        key: o.key.to_string(),
        name: o.name.to_string(),
        category: o.category.as_ref().map(|c| c.to_string()),
        modifies,
        parts: o.part_count,
        grants: o.grants.iter().map(|g| r.object(*g).label.to_string()).collect(),
        origin: o.at.to_string(),
    }
}
