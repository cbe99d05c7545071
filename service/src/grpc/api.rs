//! The gRPC service: each call runs its engine method (on a blocking thread, or in place when it
//! is the only call running: see `Api::run_blocking`) inside a tracing span
//! (method, sheet, operations, revision, variables recomputed, duration, status); Watch and
//! SolveBatch are streams that end when the server shuts down.

use super::batch_values::BatchValues;
use super::proto::{self as pb, sheetd_service_server::SheetdService};
use super::reply::{self, Reply};
use super::{convert, status};
use crate::engine::catalog;
use crate::engine::policy::{self, LogSafe};
use crate::engine::{Engine, EngineError, Event, EventKind, Filter, LiveSheet, NewRuleset};
use futures_util::{Stream, StreamExt};
use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use std::time::Instant;
use tokio::sync::{Semaphore, broadcast, watch};
use tonic::{Request, Response, Status, Streaming};
use tracing::{Span, field::Empty};

/// The service, cloned per connection; all clones share the engine.
#[derive(Clone)]
pub struct Api {
    engine: Arc<Engine>,
    /// Becomes true when the server starts shutting down: streams end.
    shutdown: watch::Receiver<bool>,
    /// Turns on blocking threads ([`Limits::max_blocking`]): a call waits for one, so stuck
    /// work can never take every thread of the pool.
    blocking: Arc<Semaphore>,
    /// Turns for expensive calls ([`Limits::max_expensive`]), taken before a blocking turn.
    expensive: Arc<Semaphore>,
    timeout: Duration,
    /// How many calls are between entering [`Api::run_blocking`] and leaving it: a call that
    /// finds none runs on the runtime's thread.
    running: Arc<AtomicUsize>,
    /// The store allows calls on the runtime's threads ([`crate::store::Store::runs_in_place`]).
    in_place: bool,
    /// What Ping advertises, and the largest reply sent ([`Limits::max_reply_bytes`]).
    limits: pb::Limits,
    max_reply: usize,
}

/// How much a call may cost: expensive calls also take an expensive turn.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Cost {
    Normal,
    /// A share of a stream's work (SolveBatch items): never run in place, so a stream's jobs
    /// run side by side on blocking threads and none holds a runtime thread for long.
    Share,
    Expensive,
}

type BoxStream<T> = Pin<Box<dyn Stream<Item = Result<T, Status>> + Send>>;

fn span(method: &'static str, sheet: &str, ops: usize) -> Span {
    // The id is the client's text: clipped and escaped, it cannot forge log lines.
    let sheet = (!sheet.is_empty()).then(|| LogSafe(&policy::clip(sheet, policy::MAX_ID_BYTES)).to_string());
    tracing::info_span!(
        "call",
        method,
        sheet,
        ops,
        revision = Empty,
        recomputed = Empty,
        duration_us = Empty,
        status = Empty,
    )
}

impl Api {
    pub fn new(engine: Arc<Engine>, shutdown: watch::Receiver<bool>) -> Api {
        let limits = *engine.limits();
        let in_place = engine.runs_in_place();
        Api {
            engine,
            shutdown,
            blocking: Arc::new(Semaphore::new(limits.max_blocking)),
            expensive: Arc::new(Semaphore::new(limits.max_expensive)),
            timeout: limits.call_timeout,
            running: Arc::new(AtomicUsize::new(0)),
            in_place,
            limits: pb::Limits {
                max_request_bytes: limits.max_request_bytes as u64,
                max_reply_bytes: limits.max_reply_bytes as u64,
                max_page_size: crate::engine::catalog::MAX_PAGE as u32,
            },
            max_reply: limits.max_reply_bytes,
        }
    }

    /// Runs `f` on a blocking thread within `span`, then records the outcome and logs the call.
    async fn call<T: Reply + Send + 'static>(
        &self,
        span: Span,
        f: impl FnOnce(&Engine, &Span) -> Result<T, Status> + Send + 'static,
    ) -> Result<Response<T>, Status> {
        self.call_costing(Cost::Normal, span, f).await
    }

    /// [`Api::call`] for a call of the given cost. The call waits for its turns and runs within
    /// the call timeout; past it the client gets DEADLINE_EXCEEDED, and work already running
    /// keeps its turn until it ends, so the number of busy threads stays bounded. A reply over
    /// `max_reply_bytes` is refused, saying what to narrow (`grpc/reply.rs`).
    async fn call_costing<T: Reply + Send + 'static>(
        &self,
        cost: Cost,
        span: Span,
        f: impl FnOnce(&Engine, &Span) -> Result<T, Status> + Send + 'static,
    ) -> Result<Response<T>, Status> {
        let max = self.max_reply;
        self.run_call(cost, span, move |e, s| f(e, s).and_then(|r| reply::check(r, max))).await
    }

    /// [`Api::call_costing`] for a result that is not a reply (a stream's start).
    async fn run_call<T: Send + 'static>(
        &self,
        cost: Cost,
        span: Span,
        f: impl FnOnce(&Engine, &Span) -> Result<T, Status> + Send + 'static,
    ) -> Result<Response<T>, Status> {
        let start = Instant::now();
        let inner = span.clone();
        let result = self.run_blocking(cost, move |e| inner.in_scope(|| f(e, &inner))).await;
        finish(&span, start, result.as_ref().err());
        result.map(Response::new)
    }

    /// Runs `f` once it has its turns, within the call timeout; the returned status is clipped
    /// to what stock clients accept.
    ///
    /// Where it runs: a normal call that finds no other call running runs right here, on the
    /// runtime's thread that received it, when the store allows it
    /// ([`crate::store::Store::runs_in_place`]); every other call runs on a blocking thread. Handing
    /// a call to a blocking thread and its result back costs two thread wake-ups — on this
    /// project's 2-core VM about 100 µs, a third of a durable Apply (`loadgen`: Apply against
    /// Ping + fsync went from 1.50–1.51 to 1.34–1.35 at p50). A lone call has nothing to wait for but
    /// its own fsync, so it may hold one runtime thread that long; when calls overlap, they go
    /// to blocking threads, so the runtime keeps accepting requests and concurrent Applies
    /// still share fsyncs (group commit). A call run here is not cut off at the deadline: it
    /// answers DEADLINE_EXCEEDED when it finishes past it, as a blocking one would have.
    async fn run_blocking<T: Send + 'static>(
        &self,
        cost: Cost,
        f: impl FnOnce(&Engine) -> Result<T, Status> + Send + 'static,
    ) -> Result<T, Status> {
        let engine = self.engine.clone();
        let (blocking, expensive, limit) = (self.blocking.clone(), self.expensive.clone(), self.timeout);
        let running = Running::enter(&self.running);
        if cost == Cost::Normal && running.alone && self.in_place {
            let start = Instant::now();
            let permit = blocking.acquire_owned().await.map_err(closed)?;
            // A panic (a bug: input never panics) answers INTERNAL, as on a blocking thread,
            // instead of unwinding through the connection's task.
            let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(&engine)))
                .unwrap_or_else(|_| Err(Status::internal("the call did not complete: it panicked")));
            drop((permit, running));
            return if start.elapsed() > limit { Err(deadline(limit)) } else { result }
                .map_err(status::clip_status);
        }
        let run = async move {
            let turn = match cost {
                Cost::Expensive => Some(expensive.acquire_owned().await.map_err(closed)?),
                Cost::Normal | Cost::Share => None,
            };
            let permit = blocking.acquire_owned().await.map_err(closed)?;
            tokio::task::spawn_blocking(move || {
                // Counted as running until the work ends, even when the caller stopped
                // waiting for it (past the deadline): a lone call never runs beside it.
                let _turns = (permit, turn, running);
                f(&engine)
            })
            .await
            .unwrap_or_else(|e| Err(Status::internal(format!("the call did not complete: {e}"))))
        };
        match tokio::time::timeout(limit, run).await {
            Ok(r) => r,
            Err(_) => Err(deadline(limit)),
        }
        .map_err(status::clip_status)
    }

    /// A future that completes when the server shuts down.
    fn shutdown(&self) -> impl Future<Output = ()> + Send + 'static {
        let mut rx = self.shutdown.clone();
        async move {
            let _ = rx.wait_for(|down| *down).await;
        }
    }
}

fn deadline(limit: Duration) -> Status {
    Status::deadline_exceeded(format!(
        "the call did not finish within {} s (--call-timeout)",
        limit.as_secs()
    ))
}

/// One call counted in [`Api::running`] until dropped.
struct Running {
    count: Arc<AtomicUsize>,
    /// No other call was running when this one entered.
    alone: bool,
}

impl Running {
    fn enter(count: &Arc<AtomicUsize>) -> Running {
        let before = count.fetch_add(1, Ordering::AcqRel);
        Running { count: count.clone(), alone: before == 0 }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.count.fetch_sub(1, Ordering::AcqRel);
    }
}

fn closed(_: tokio::sync::AcquireError) -> Status {
    Status::unavailable("the server is shutting down")
}

fn finish(span: &Span, start: Instant, error: Option<&Status>) {
    span.record("duration_us", start.elapsed().as_micros() as u64);
    match error {
        None => {
            span.record("status", "OK");
            tracing::info!(parent: span, "ok");
        }
        Some(s) => {
            span.record("status", format!("{:?}", s.code()));
            let message = LogSafe(s.message()).to_string();
            if matches!(s.code(), tonic::Code::Internal | tonic::Code::Unavailable | tonic::Code::DataLoss) {
                tracing::error!(parent: span, message, "failed");
            } else {
                tracing::info!(parent: span, message, "rejected");
            }
        }
    }
}

#[tonic::async_trait]
impl SheetdService for Api {
    async fn ping(&self, _: Request<pb::PingRequest>) -> Result<Response<pb::PingResponse>, Status> {
        Ok(Response::new(pb::PingResponse { limits: Some(self.limits) }))
    }

    async fn load_ruleset(
        &self,
        req: Request<pb::LoadRulesetRequest>,
    ) -> Result<Response<pb::LoadRulesetResponse>, Status> {
        let req = req.into_inner();
        self.call(span("LoadRuleset", "", 0), move |e, _| {
            let new = match (req.paths.is_empty(), req.inline_text.is_empty()) {
                (false, true) if !req.dialect.is_empty() => NewRuleset::Dialect(req.dialect, req.paths),
                (false, true) => NewRuleset::Paths(req.paths),
                (true, false) => NewRuleset::Inline(req.inline_text),
                _ => {
                    return Err(to_status(EngineError::invalid(
                        "give either `paths` or `inline_text`, not both or neither",
                    )));
                }
            };
            e.load_ruleset(&req.id, new).map(convert::ruleset_reply).map_err(to_status)
        })
        .await
    }

    async fn list_rulesets(
        &self,
        req: Request<pb::ListRulesetsRequest>,
    ) -> Result<Response<pb::ListRulesetsResponse>, Status> {
        let req = req.into_inner();
        let max = self.max_reply;
        self.call(span("ListRulesets", "", 0), move |e, _| {
            let mut all = e.rulesets();
            all.retain(|r| r.id.starts_with(&req.id_prefix));
            all.sort_by(|a, b| a.id.cmp(&b.id));
            let (page, next, total) =
                crate::engine::catalog::paged(all, |r| &r.id, req.page_size as usize, &req.page_token)
                    .map_err(to_status)?;
            let mut r = pb::ListRulesetsResponse {
                rulesets: page.into_iter().map(convert::ruleset_info).collect(),
                next_page_token: next,
                total_size: u32::try_from(total).unwrap_or(u32::MAX),
            };
            if let Some(token) = reply::trim_by_id(&mut r.rulesets, 1, max, |x| &x.id) {
                r.next_page_token = token;
            }
            Ok(r)
        })
        .await
    }

    async fn list_catalog(
        &self,
        req: Request<pb::ListCatalogRequest>,
    ) -> Result<Response<pb::ListCatalogResponse>, Status> {
        let req = req.into_inner();
        let max = self.max_reply;
        self.call(span("ListCatalog", "", 0), move |e, _| {
            let q = crate::engine::catalog::CatalogQuery {
                kind: req.kind,
                key_prefix: req.key_prefix,
                text: req.text,
                page_size: req.page_size as usize,
                page_token: req.page_token,
            };
            let c = e.catalog(&req.ruleset_id, &q).map_err(to_status)?;
            let start = c.start;
            let mut r = convert::catalog(c);
            let objects = std::mem::take(&mut r.objects);
            let rest = prost::Message::encoded_len(&r);
            r.objects = objects;
            if let Some(n) = reply::trim_page(&mut r.objects, 3, rest, max) {
                r.next_page_token = catalog::catalog_token(start + n);
            }
            Ok(r)
        })
        .await
    }

    async fn reload_ruleset(
        &self,
        req: Request<pb::ReloadRulesetRequest>,
    ) -> Result<Response<pb::ReloadRulesetResponse>, Status> {
        let req = req.into_inner();
        self.call(span("ReloadRuleset", "", 0), move |e, _| {
            let inline = (!req.inline_text.is_empty()).then_some(req.inline_text);
            e.reload_ruleset(&req.id, inline, req.expected_version)
                .map(|o| convert::reload_reply(convert::ruleset_reply(o)))
                .map_err(to_status)
        })
        .await
    }

    async fn create_sheet(
        &self,
        req: Request<pb::CreateSheetRequest>,
    ) -> Result<Response<pb::CreateSheetResponse>, Status> {
        let req = req.into_inner();
        let max = self.max_reply;
        self.call(span("CreateSheet", &req.id, req.operations.len()), move |e, span| {
            let step = convert::step(req.operations).map_err(to_status)?;
            let id = (!req.id.is_empty()).then_some(req.id.as_str());
            let (sheet, values) = e.create_sheet(&req.ruleset_id, id, step).map_err(to_status)?;
            span.record("sheet", sheet.id.as_str());
            span.record("revision", sheet.revision);
            let values = selected(values, &req.variables, |v| &v.var);
            let r = pb::CreateSheetResponse {
                sheet: Some(convert::sheet_info(sheet)),
                values: convert::variables(values),
                values_omitted: false,
            };
            Ok(reply::fit_created(r, max))
        })
        .await
    }

    async fn get_sheet(
        &self,
        req: Request<pb::GetSheetRequest>,
    ) -> Result<Response<pb::GetSheetResponse>, Status> {
        let req = req.into_inner();
        self.call(span("GetSheet", &req.sheet_id, 0), move |e, _| {
            let sheet = e.sheet_info(&req.sheet_id).map(convert::sheet_info).map_err(to_status)?;
            Ok(pb::GetSheetResponse { sheet: Some(sheet) })
        })
        .await
    }

    async fn list_sheets(
        &self,
        req: Request<pb::ListSheetsRequest>,
    ) -> Result<Response<pb::ListSheetsResponse>, Status> {
        let req = req.into_inner();
        let max = self.max_reply;
        self.call(span("ListSheets", "", 0), move |e, _| {
            let (page, next, total) = e
                .sheets_page(&req.ruleset_id, &req.id_prefix, req.page_size as usize, &req.page_token)
                .map_err(to_status)?;
            let mut r = pb::ListSheetsResponse {
                sheets: page.into_iter().map(convert::sheet_info).collect(),
                next_page_token: next,
                total_size: u32::try_from(total).unwrap_or(u32::MAX),
            };
            if let Some(token) = reply::trim_by_id(&mut r.sheets, 1, max, |x| &x.id) {
                r.next_page_token = token;
            }
            Ok(r)
        })
        .await
    }

    async fn delete_sheet(
        &self,
        req: Request<pb::DeleteSheetRequest>,
    ) -> Result<Response<pb::DeleteSheetResponse>, Status> {
        let req = req.into_inner();
        self.call(span("DeleteSheet", &req.sheet_id, 0), move |e, _| {
            e.delete_sheet(&req.sheet_id, req.expected_revision)
                .map(|()| pb::DeleteSheetResponse {})
                .map_err(to_status)
        })
        .await
    }

    async fn apply(&self, req: Request<pb::ApplyRequest>) -> Result<Response<pb::ApplyResponse>, Status> {
        let req = req.into_inner();
        let max = self.max_reply;
        self.call(span("Apply", &req.sheet_id, req.operations.len()), move |e, span| {
            let key = convert::request_key(&req.request_id, &req.operations).map_err(to_status)?;
            let step = convert::step(req.operations).map_err(to_status)?;
            let mut r = e.apply_once(&req.sheet_id, req.expected_revision, step, key).map_err(to_status)?;
            span.record("revision", r.revision);
            span.record("recomputed", r.recomputed);
            r.changes = selected(r.changes, &req.variables, |c| &c.var);
            Ok(reply::fit_applied(convert::applied(r), max))
        })
        .await
    }

    async fn preview(
        &self,
        req: Request<pb::PreviewRequest>,
    ) -> Result<Response<pb::PreviewResponse>, Status> {
        let req = req.into_inner();
        self.call(span("Preview", &req.sheet_id, req.operations.len()), move |e, span| {
            let step = convert::step(req.operations).map_err(to_status)?;
            let (revision, r, traces) =
                e.preview(&req.sheet_id, req.expected_revision, step, &req.explain).map_err(to_status)?;
            span.record("revision", revision);
            span.record("recomputed", r.recomputed);
            Ok(pb::PreviewResponse {
                revision,
                result: Some(convert::applied(r)),
                traces: traces.iter().map(|(t, expires)| convert::expiring_trace(t, expires)).collect(),
            })
        })
        .await
    }

    async fn upgrade(
        &self,
        req: Request<pb::UpgradeRequest>,
    ) -> Result<Response<pb::UpgradeResponse>, Status> {
        let req = req.into_inner();
        let max = self.max_reply;
        self.call(span("Upgrade", &req.sheet_id, 0), move |e, span| {
            let r = e.upgrade(&req.sheet_id).map_err(to_status)?;
            span.record("revision", r.revision);
            span.record("recomputed", r.recomputed);
            Ok(pb::UpgradeResponse { result: Some(reply::fit_applied(convert::applied(r), max)) })
        })
        .await
    }

    async fn values(&self, req: Request<pb::ValuesRequest>) -> Result<Response<pb::ValuesResponse>, Status> {
        let req = req.into_inner();
        self.call(span("Values", &req.sheet_id, 0), move |e, span| {
            let (revision, values) =
                e.values(&req.sheet_id, &req.variables, req.revision).map_err(to_status)?;
            span.record("revision", revision);
            Ok(pb::ValuesResponse { revision, values: convert::variables(values) })
        })
        .await
    }

    async fn explain(
        &self,
        req: Request<pb::ExplainRequest>,
    ) -> Result<Response<pb::ExplainResponse>, Status> {
        let req = req.into_inner();
        self.call(span("Explain", &req.sheet_id, 0), move |e, span| {
            let depth = req.depth.map(|d| d as usize);
            let r = e.explain(&req.sheet_id, &req.variable, depth).map_err(to_status)?;
            span.record("revision", r.revision);
            Ok(convert::explanation(r))
        })
        .await
    }

    async fn select(&self, req: Request<pb::SelectRequest>) -> Result<Response<pb::SelectResponse>, Status> {
        let req = req.into_inner();
        self.call(span("Select", &req.sheet_id, 0), move |e, span| {
            let (revision, ids) = e.select(&req.sheet_id, &req.scope, &req.r#where).map_err(to_status)?;
            span.record("revision", revision);
            Ok(pb::SelectResponse { revision, ids })
        })
        .await
    }

    async fn why_changed(
        &self,
        req: Request<pb::WhyChangedRequest>,
    ) -> Result<Response<pb::WhyChangedResponse>, Status> {
        let req = req.into_inner();
        self.call_costing(Cost::Expensive, span("WhyChanged", &req.sheet_id, 0), move |e, span| {
            let r = e
                .why_changed(&req.sheet_id, &req.variable, req.from_revision, req.to_revision)
                .map_err(to_status)?;
            span.record("revision", r.to);
            Ok(convert::why_changed(r))
        })
        .await
    }

    type WatchStream = BoxStream<pb::WatchResponse>;

    async fn watch(&self, req: Request<pb::WatchRequest>) -> Result<Response<Self::WatchStream>, Status> {
        let req = req.into_inner();
        let (id, from) = (req.sheet_id.clone(), req.from_revision);
        let sub = self
            .run_call(Cost::Normal, span("Watch", &req.sheet_id, 0), move |e, span| {
                let sub = e.watch(&id, from).map_err(to_status)?;
                span.record("revision", sub.current);
                Ok(sub)
            })
            .await?
            .into_inner();
        let crate::engine::Subscription { sheet, rx, replay, current } = sub;
        let life = WatchLife::start(&req.sheet_id, from, current);
        let state = WatchState {
            life,
            api: self.clone(),
            sheet,
            rx,
            backlog: VecDeque::new(),
            replay,
            last: current,
            filter: Filter::new(&req.variables),
            done: false,
        };
        // At shutdown the stream ends with UNAVAILABLE, so clients know to reconnect and resume;
        // a stream that ends by itself (its sheet deleted) just ends.
        let shutdown = self.shutdown.clone();
        // A message over the reply limit goes as several (`continued`).
        let max = self.max_reply;
        let stream = futures_util::stream::unfold(state, next_event)
            .flat_map(move |m| {
                let parts: Vec<Result<pb::WatchResponse, Status>> = match m {
                    Ok(m) => reply::split_watch(m, max).into_iter().map(Ok).collect(),
                    Err(e) => vec![Err(e)],
                };
                futures_util::stream::iter(parts)
            })
            .map(Some)
            .take_until(self.shutdown())
            .chain(futures_util::stream::once(async { None }))
            .filter_map(move |item| {
                let out = match item {
                    Some(item) => Some(item),
                    None if *shutdown.borrow() => Some(Err(Status::unavailable(
                        "the server is shutting down; resume with from_revision",
                    ))),
                    None => None,
                };
                async move { out }
            });
        Ok(Response::new(Box::pin(stream)))
    }

    type SolveBatchStream = BoxStream<pb::SolveBatchResponse>;

    async fn solve_batch(
        &self,
        req: Request<Streaming<pb::SolveBatchRequest>>,
    ) -> Result<Response<Self::SolveBatchStream>, Status> {
        let api = self.clone();
        let max = self.max_reply;
        let jobs = std::thread::available_parallelism().map_or(2, |n| n.get());
        let span = span("SolveBatch", "", 0);
        // Items that have arrived are solved together, up to SOLVE_CHUNK per blocking job: one
        // hand-off to a blocking thread per chunk rather than per item (a lone item still goes
        // at once: `ready_chunks` does not wait for a chunk to fill).
        let results = req
            .into_inner()
            .ready_chunks(SOLVE_CHUNK)
            .map(move |items| {
                let (api, span) = (api.clone(), span.clone());
                async move {
                    // Items up to the first transport error; that error ends the results.
                    let mut good = Vec::with_capacity(items.len());
                    let mut broken = None;
                    for item in items {
                        match item {
                            Ok(item) => good.push(item),
                            Err(e) => {
                                broken = Some(e);
                                break;
                            }
                        }
                    }
                    let solved = api
                        .run_blocking(Cost::Share, move |e| {
                            Ok(span.in_scope(|| {
                                good.into_iter().map(|item| solve_one(e, item, max)).collect::<Vec<_>>()
                            }))
                        })
                        .await;
                    let mut out: Vec<Result<pb::SolveBatchResponse, Status>> = match solved {
                        Ok(results) => results.into_iter().map(Ok).collect(),
                        Err(e) => vec![Err(e)],
                    };
                    out.extend(broken.map(Err));
                    futures_util::stream::iter(out)
                }
            })
            .buffer_unordered(jobs)
            .flatten()
            .take_until(self.shutdown());
        Ok(Response::new(Box::pin(results)))
    }
}

/// The most SolveBatch items solved in one blocking job.
const SOLVE_CHUNK: usize = 32;

/// A Watch stream's state between events.
struct WatchState {
    /// The stream's span, from its start to its end (when this state is dropped).
    life: WatchLife,
    api: Api,
    sheet: Arc<LiveSheet>,
    rx: broadcast::Receiver<Arc<Event>>,
    /// Replayed events read from the store and still to send (at most one chunk).
    backlog: VecDeque<Event>,
    /// Logged revisions still to read from the store.
    replay: std::ops::RangeInclusive<u64>,
    /// The last revision the client has seen (events up to it are skipped).
    last: u64,
    filter: Filter,
    done: bool,
}

/// A Watch stream's life in the logs: a `watch` span opened when the stream starts (inside the
/// call's span, so with its peer and request id) and closed when the stream ends, however it
/// ends (the client goes away, the sheet is deleted, the server shuts down), with what it sent.
struct WatchLife {
    span: Span,
    start: std::time::Instant,
    sent: u64,
    resyncs: u64,
}

impl WatchLife {
    fn start(sheet: &str, from: Option<u64>, current: u64) -> WatchLife {
        let sheet = LogSafe(&policy::clip(sheet, policy::MAX_ID_BYTES)).to_string();
        let span = tracing::info_span!("watch", sheet, from_revision = from, current);
        span.in_scope(|| tracing::info!("watch started"));
        WatchLife { span, start: std::time::Instant::now(), sent: 0, resyncs: 0 }
    }
}

impl Drop for WatchLife {
    fn drop(&mut self) {
        let duration_ms = u64::try_from(self.start.elapsed().as_millis()).unwrap_or(u64::MAX);
        let (sent, resyncs) = (self.sent, self.resyncs);
        self.span.in_scope(|| tracing::info!(sent, resyncs, duration_ms, "watch ended"));
    }
}

/// The next event for a watcher: replayed revisions first, read from the store one chunk of
/// `watch_buffer` revisions at a time as the client reads (so a watcher that does not read holds
/// one chunk at most), then live events. A watcher that fell behind the bounded live buffer gets a
/// resync (its filtered values now) instead of what it missed.
async fn next_event(st: WatchState) -> Option<(Result<pb::WatchResponse, Status>, WatchState)> {
    let (item, mut st) = next_event_inner(st).await?;
    if item.is_ok() {
        st.life.sent += 1;
    }
    Some((item, st))
}

async fn next_event_inner(mut st: WatchState) -> Option<(Result<pb::WatchResponse, Status>, WatchState)> {
    if st.done {
        return None;
    }
    loop {
        if let Some(ev) = st.backlog.pop_front() {
            return Some((Ok(convert::event(&ev)), st));
        }
        if st.replay.is_empty() {
            break;
        }
        let (from, to) = (*st.replay.start(), *st.replay.end());
        let max = st.api.engine.limits().watch_buffer;
        let id = st.sheet.id.clone();
        let chunk = st
            .api
            .run_blocking(Cost::Normal, move |e| e.replay_chunk(&id, from, to, max).map_err(to_status))
            .await;
        match chunk {
            Err(e) => {
                st.done = true;
                return Some((Err(e), st));
            }
            Ok(events) => {
                let next = events.last().map_or(to + 1, |e| e.revision + 1);
                st.replay = next..=to;
                st.backlog.extend(events.iter().filter_map(|ev| st.filter.changes_event(ev)));
            }
        }
    }
    loop {
        match st.rx.recv().await {
            Ok(ev) => match &ev.kind {
                EventKind::Deleted => {
                    st.done = true;
                    return Some((Ok(convert::event(&ev)), st));
                }
                EventKind::Changes(_) if ev.revision > st.last => {
                    st.last = ev.revision;
                    if let Some(out) = st.filter.changes_event(&ev) {
                        return Some((Ok(convert::event(&out)), st));
                    }
                }
                _ => {}
            },
            Err(broadcast::error::RecvError::Lagged(n)) => {
                // Start over at the newest event (dropping what is buffered), then read the
                // values: any event published after this is newer than, or included in, them.
                st.rx = st.rx.resubscribe();
                let reason = format!("the client fell {n} events behind");
                crate::metrics::METRICS.resyncs.inc();
                st.life.resyncs += 1;
                st.life.span.in_scope(|| tracing::info!(behind = n, "watch resynced"));
                let ev = st.api.engine.resync(&st.sheet, &st.filter, &reason);
                st.last = ev.revision;
                return Some((Ok(convert::event(&ev)), st));
            }
            Err(broadcast::error::RecvError::Closed) => return None,
        }
    }
}

/// An engine error as a status.
fn to_status(e: EngineError) -> Status {
    status::status(&e)
}

/// One SolveBatch item: its values, or its problems as diagnostics.
/// One SolveBatch item's result; one over `max` bytes is an error naming the limit instead.
fn solve_one(e: &Engine, item: pb::SolveBatchRequest, max: usize) -> pb::SolveBatchResponse {
    use pb::solve_batch_response::Result as R;
    crate::metrics::METRICS.batch_sheets.inc();
    let id = item.id.clone();
    let r = solved(e, item);
    reply::check(r, max).unwrap_or_else(|s| {
        let problem = crate::problem::Problem::of(crate::problem::Code::ReplyTooLarge, s.message());
        pb::SolveBatchResponse {
            id,
            result: Some(R::Error(pb::ErrorInfo { diagnostics: vec![convert::diagnostic(&problem)] })),
        }
    })
}

fn solved(e: &Engine, item: pb::SolveBatchRequest) -> pb::SolveBatchResponse {
    use pb::solve_batch_response::Result as R;
    let ops = convert::operations(item.operations).map_err(|e| e.diagnosed().to_vec());
    // All values are written straight from the sheet; the variables named, from their records.
    let result = ops.and_then(|ops| {
        if item.variables.is_empty() {
            e.solve_character(&item.ruleset_id, &ops).map(|c| BatchValues::from_character(&c))
        } else {
            e.solve(&item.ruleset_id, &ops, &item.variables).map(|v| BatchValues::from_records(&v))
        }
    });
    pb::SolveBatchResponse {
        id: item.id,
        result: Some(match result {
            Ok(values) => R::Values(values),
            Err(problems) => {
                R::Error(pb::ErrorInfo { diagnostics: problems.iter().map(convert::diagnostic).collect() })
            }
        }),
    }
}

/// `all`, or those whose reference is one of `wanted` (case-insensitive) when it names any:
/// a reply's field selection.
fn selected<T>(all: Vec<T>, wanted: &[String], var: impl Fn(&T) -> &String) -> Vec<T> {
    if wanted.is_empty() {
        return all;
    }
    all.into_iter().filter(|x| wanted.iter().any(|w| w.eq_ignore_ascii_case(var(x)))).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::EngineConfig;

    fn add_object(kind: &str, key: &str, id: &str) -> pb::Operation {
        pb::Operation {
            op: Some(pb::operation::Op::AddObject(pb::AddObject {
                kind: kind.into(),
                key: key.into(),
                id: Some(id.into()),
                parent: None,
                until: None,
            })),
            cause: String::new(),
        }
    }

    /// A call that finds no other running runs on the thread that received it; one that
    /// overlaps another goes to a blocking thread; a call run in place that ends past the
    /// deadline answers DEADLINE_EXCEEDED (its work done, as on a blocking thread).
    #[tokio::test]
    async fn a_lone_call_runs_in_place_and_overlapping_ones_on_blocking_threads() {
        let dir = tempfile::tempdir().expect("temp dir");
        let mut config = EngineConfig { data_dir: dir.path().to_owned(), ..Default::default() };
        config.limits.call_timeout = Duration::from_millis(200);
        let engine = Arc::new(Engine::open(config).expect("engine"));
        assert!(engine.runs_in_place(), "the bundled store runs in place");
        let (_tx, shutdown) = watch::channel(false);
        let api = Api::new(engine, shutdown);
        let here = std::thread::current().id();
        let on = |api: &Api| {
            let api = api.clone();
            async move { api.run_blocking(Cost::Normal, |_| Ok(std::thread::current().id())).await.expect("runs") }
        };
        assert_eq!(on(&api).await, here, "alone: in place");
        {
            let _other = Running::enter(&api.running);
            assert_ne!(on(&api).await, here, "beside another call: a blocking thread");
        }
        assert_eq!(on(&api).await, here, "alone again");
        let expensive = api.run_blocking(Cost::Expensive, |_| Ok(std::thread::current().id())).await;
        assert_ne!(expensive.expect("runs"), here, "an expensive call always goes to a blocking thread");
        let share = api.run_blocking(Cost::Share, |_| Ok(std::thread::current().id())).await;
        assert_ne!(share.expect("runs"), here, "a SolveBatch job always goes to a blocking thread");

        let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = done.clone();
        let late = api
            .run_blocking(Cost::Normal, move |_| {
                std::thread::sleep(Duration::from_millis(300));
                flag.store(true, Ordering::SeqCst);
                Ok(())
            })
            .await
            .expect_err("past the deadline");
        assert_eq!(late.code(), tonic::Code::DeadlineExceeded, "{late:?}");
        assert!(late.message().contains("--call-timeout"), "{}", late.message());
        assert!(done.load(Ordering::SeqCst), "the work itself ran to its end");
        assert_eq!(api.running.load(Ordering::SeqCst), 0, "no call is counted as running");
    }

    /// A panic in a call run in place (a bug: input never panics) answers INTERNAL, as on a
    /// blocking thread, and leaves nothing counted as running.
    #[tokio::test]
    async fn a_panic_in_place_answers_internal() {
        let dir = tempfile::tempdir().expect("temp dir");
        let config = EngineConfig { data_dir: dir.path().to_owned(), ..Default::default() };
        let engine = Arc::new(Engine::open(config).expect("engine"));
        let (_tx, shutdown) = watch::channel(false);
        let api = Api::new(engine, shutdown);
        let here = std::thread::current().id();
        let panicked = api
            .run_blocking(Cost::Normal, move |_| -> Result<(), Status> {
                assert_eq!(std::thread::current().id(), here, "run in place");
                panic!("a bug")
            })
            .await
            .expect_err("a panic is an error");
        assert_eq!(panicked.code(), tonic::Code::Internal, "{panicked:?}");
        assert_eq!(api.running.load(Ordering::SeqCst), 0);
        let next = api.run_blocking(Cost::Normal, |_| Ok(std::thread::current().id())).await;
        assert_eq!(next.expect("runs"), here, "the next lone call runs in place again");
    }

    /// A watcher that does not read while more changes happen than the buffer holds gets a
    /// resync with the current values, then live events again.
    #[tokio::test]
    async fn a_slow_watcher_gets_a_resync_not_unbounded_buffering() {
        let dir = tempfile::tempdir().expect("temp dir");
        let mut config = EngineConfig { data_dir: dir.path().to_owned(), ..Default::default() };
        config.limits.watch_buffer = 4;
        let engine = Arc::new(Engine::open(config).expect("engine"));
        let (created, _) = engine.create_sheet("", None, vec![]).expect("create");
        let id = created.id;
        let (_tx, shutdown) = watch::channel(false);
        let api = Api::new(engine.clone(), shutdown);
        let req =
            pb::WatchRequest { sheet_id: id.clone(), variables: vec!["AC".into()], from_revision: None };
        let mut stream = api.watch(Request::new(req)).await.expect("watch").into_inner();
        // Ten changes to AC (armor on and off) while the watcher reads nothing.
        for i in 0..10 {
            let op = if i % 2 == 0 {
                add_object("EQUIPMENT", "Ring Hauberk", "armor")
            } else {
                pb::Operation {
                    op: Some(pb::operation::Op::RemoveObject("armor".into())),
                    cause: String::new(),
                }
            };
            engine.apply(&id, None, convert::operations(vec![op]).expect("ops")).expect("apply");
        }
        // Within 10 s: an event the server never sends fails the test rather than hanging it.
        let ten = Duration::from_secs(10);
        let first =
            tokio::time::timeout(ten, stream.next()).await.expect("no event within 10 s").expect("an event");
        let first = first.expect("ok");
        let Some(pb::watch_response::Event::Resync(r)) = first.event else {
            panic!("expected a resync, got {first:?}")
        };
        assert_eq!(first.revision, 10);
        assert!(r.reason.contains("behind"), "{}", r.reason);
        assert_eq!(r.values.iter().map(|v| v.r#ref.as_str()).collect::<Vec<_>>(), ["AC"]);
        // Live again after the resync.
        let ops = convert::operations(vec![add_object("EQUIPMENT", "Ring Hauberk", "armor")]).expect("ops");
        engine.apply(&id, Some(10), ops).expect("apply");
        let next =
            tokio::time::timeout(ten, stream.next()).await.expect("no event within 10 s").expect("an event");
        let next = next.expect("ok");
        assert_eq!(next.revision, 11);
        assert!(matches!(next.event, Some(pb::watch_response::Event::Changes(_))), "{next:?}");
    }
}
