//! `sheetd client <call>`: a small command-line client for people without grpcurl.
//!
//! Operations are JSON steps, as in sheet files (`docs/ruleset-format.md`), turned into API
//! operations; results print for people, or as the canonical protobuf JSON with `--json`.

use crate::grpc::convert::{self, show};
use crate::grpc::proto::{self as pb, sheetd_service_client::SheetdServiceClient};
use crate::grpc::status;
use clap::{Args, Subcommand};
use serde_json::Value as Json;
use std::path::PathBuf;
use std::process::ExitCode;
use tonic::service::Interceptor;
use tonic::service::interceptor::InterceptedService;
use tonic::transport::{Certificate, Channel, ClientTlsConfig};
use tonic::{Request, Status};

/// Arguments of `sheetd client`.
#[derive(Debug, Args)]
pub struct ClientArgs {
    /// The server's address.
    #[arg(long, value_name = "URL", env = "SHEETD_SERVER", default_value = "http://127.0.0.1:50051")]
    pub server: String,

    /// Bearer token to send (when the server requires one).
    #[arg(long, value_name = "TOKEN", env = "SHEETD_TOKEN", hide_env_values = true)]
    pub token: Option<String>,

    /// CA certificate (PEM) to trust for an https:// server.
    #[arg(long, value_name = "FILE", env = "SHEETD_CA_CERT")]
    pub ca_cert: Option<PathBuf>,

    /// Print replies as JSON (the canonical protobuf JSON mapping) instead of text.
    #[arg(long, global = true)]
    pub json: bool,

    /// How long a call may take, in seconds, before it is abandoned (DEADLINE_EXCEEDED);
    /// `watch` has none. Connecting has 10 s.
    #[arg(long, value_name = "SECONDS", env = "SHEETD_CLIENT_TIMEOUT", default_value_t = 60)]
    pub timeout: u64,

    #[command(subcommand)]
    pub call: Call,
}

/// Operations as JSON steps: repeated `--step` and/or a sheet file.
#[derive(Debug, Args)]
pub struct Steps {
    /// One operation as a JSON step, e.g. `{"remove_object": "armor"}`. Repeatable; all steps
    /// form one atomic batch. A game step — `{"emit": {"event": "Hit", "args": {"amount": 6}}}`,
    /// `{"choose": {"choice": 1, "picks": ["Ale"]}}` or `{"roll": {"die": "d6", "value": 4}}` —
    /// goes alone.
    #[arg(long = "step", value_name = "JSON")]
    pub steps: Vec<String>,

    /// A sheet file (`{"steps": [...]}`) whose steps go first.
    #[arg(long = "file", value_name = "SHEET_FILE")]
    pub file: Option<PathBuf>,

    /// Send the steps that are a dialect's verbs (`{"use": {...}}`, `{"setup": {...}}`) as
    /// `Verb` operations of this dialect (`creature`, `rulescript`, `effects`, `wwrf`; see docs/dialects.md);
    /// each is a step of its own. A sheet file that names its `dialect` sets it too.
    #[arg(long, value_name = "DIALECT")]
    pub dialect: Option<String>,
}

#[derive(Debug, Subcommand)]
pub enum Call {
    /// Create a sheet, optionally with initial operations; prints its id and values.
    Create {
        /// Ruleset id (default: the server's default, `starter`).
        #[arg(long)]
        ruleset: Option<String>,
        /// Sheet id (default: generated, e.g. sheet-1).
        #[arg(long)]
        id: Option<String>,
        #[command(flatten)]
        steps: Steps,
    },
    /// Apply an atomic batch of operations; prints the new revision and what changed.
    Apply {
        sheet: String,
        /// Apply only if the sheet is at this revision.
        #[arg(long, value_name = "REVISION")]
        expect: Option<u64>,
        /// An id that makes the call safe to repeat: the sheet applies it once, and a repeat
        /// with the same id and steps gets the first reply.
        #[arg(long, value_name = "ID")]
        request_id: Option<String>,
        #[command(flatten)]
        steps: Steps,
    },
    /// What applying steps would do, committing nothing (a what-if): the changes, and the
    /// traces of the variables named with --explain as they would be.
    Preview {
        sheet: String,
        /// Preview only if the sheet is at this revision.
        #[arg(long, value_name = "REVISION")]
        expect: Option<u64>,
        /// A variable whose trace to show as it would be after the steps. Repeatable.
        #[arg(long = "explain", value_name = "REF")]
        explain: Vec<String>,
        #[command(flatten)]
        steps: Steps,
    },
    /// What a ruleset offers (default: the server's default ruleset): its kinds, and its
    /// objects with what each modifies, a page at a time.
    Catalog {
        ruleset: Option<String>,
        /// Only objects of this kind (`EQUIPMENT`).
        #[arg(long)]
        kind: Option<String>,
        /// Only objects whose key starts with this.
        #[arg(long, value_name = "PREFIX")]
        key_prefix: Option<String>,
        /// Only objects whose key or name holds this.
        #[arg(long)]
        text: Option<String>,
        /// Objects per page (100 by default, at most 1,000).
        #[arg(long, value_name = "N")]
        page_size: Option<u32>,
        /// The page after the one a previous call printed the token of.
        #[arg(long, value_name = "TOKEN")]
        page_token: Option<String>,
    },
    /// Print values: all, or the variables named, now or at an earlier revision.
    Values {
        sheet: String,
        variables: Vec<String>,
        #[arg(long)]
        revision: Option<u64>,
    },
    /// Explain a value: every modifier from the default to the result, and what it depends on.
    Explain {
        sheet: String,
        variable: String,
        /// Draw its dependency graph instead — what it reads and what reads it, --depth steps
        /// each way — as `dot` (Graphviz: pipe into `dot -Tsvg`), `mermaid` or `json`
        /// (`{"nodes", "edges"}`; an edge from a variable to one that reads it).
        #[arg(long, value_enum, value_name = "FORMAT")]
        format: Option<super::graph::Format>,
        /// How many steps the graph goes from the variable, each way [default: 3 when drawing;
        /// otherwise everything it reads and nothing that reads it].
        #[arg(long, value_name = "N")]
        depth: Option<u32>,
    },
    /// Why a value changed between two revisions: the operations that affected it.
    WhyChanged {
        sheet: String,
        variable: String,
        #[arg(long)]
        from: u64,
        /// Default: the current revision.
        #[arg(long)]
        to: Option<u64>,
    },
    /// Print change events as they happen (Ctrl-C to stop); --from replays missed ones first.
    Watch {
        sheet: String,
        variables: Vec<String>,
        #[arg(long, value_name = "REVISION")]
        from: Option<u64>,
    },
    /// What a sheet is: its revision, ruleset, objects, and the question it waits on, if any.
    #[command(alias = "get")]
    Sheet { sheet: String },
    /// List sheets, by id, a page at a time.
    #[command(alias = "list")]
    Sheets {
        /// Only sheets on this ruleset.
        #[arg(long)]
        ruleset: Option<String>,
        /// Only sheets whose id starts with this.
        #[arg(long, value_name = "PREFIX")]
        id_prefix: Option<String>,
        /// Sheets per page (100 by default, at most 1,000).
        #[arg(long, value_name = "N")]
        page_size: Option<u32>,
        /// The page after the one a previous call printed the token of.
        #[arg(long, value_name = "TOKEN")]
        page_token: Option<String>,
    },
    /// Delete a sheet.
    Delete {
        sheet: String,
        /// Delete only if the sheet is at this revision.
        #[arg(long, value_name = "REVISION")]
        expect: Option<u64>,
    },
    /// List rulesets.
    Rulesets,
    /// Load a ruleset: files the server can read (under its ruleset roots), or a native
    /// ruleset's text from a file here (--inline).
    Load {
        /// The id to load it as.
        id: String,
        /// A path on the server: a native ruleset (.toml or a directory) or a PCGen .pcc.
        /// Repeatable: loaded in order.
        #[arg(long = "path", value_name = "PATH", required_unless_present = "inline")]
        paths: Vec<String>,
        /// A native ruleset file whose text is sent.
        #[arg(long, value_name = "FILE", conflicts_with = "paths")]
        inline: Option<PathBuf>,
        /// The language the paths are written in (creature, rulescript, effects, wwrf).
        #[arg(long, value_name = "DIALECT", requires = "paths")]
        dialect: Option<String>,
    },
    /// Move a sheet to its ruleset's current version (what it changed is printed).
    Upgrade { sheet: String },
    /// The server's health check: prints SERVING (exit 0) or NOT_SERVING (exit 1). Needs no
    /// token.
    Health,
    /// Solve sheets on the server (SolveBatch): JSON lines in, as `sheetd batch` reads them
    /// (`{"id", "steps", "variables"?}`), a JSON line out per sheet as each is done.
    Batch {
        /// The file of JSON lines; `-` or none: standard input.
        input: Option<PathBuf>,
        /// The ruleset (default: the server's default).
        #[arg(long)]
        ruleset: Option<String>,
    },
    /// Reload a ruleset from its files (or new inline text) and swap it in.
    Reload {
        ruleset: String,
        /// For a ruleset loaded from inline text: a file with the new text.
        #[arg(long, value_name = "FILE")]
        inline: Option<PathBuf>,
        /// Reload only if this version is the one serving.
        #[arg(long, value_name = "VERSION")]
        expect: Option<u64>,
    },
}

/// Adds the bearer token to every call, and the deadline when there is one.
#[derive(Clone, Debug)]
pub struct Token {
    bearer: Option<tonic::metadata::MetadataValue<tonic::metadata::Ascii>>,
    deadline: Option<std::time::Duration>,
}

impl Token {
    pub fn new(token: Option<&str>) -> Result<Token, String> {
        let bearer = token
            .map(|t| {
                format!("Bearer {t}").parse().map_err(|_| "the token must be printable ASCII".to_owned())
            })
            .transpose()?;
        Ok(Token { bearer, deadline: None })
    }

    /// Every call ends by `deadline` (the server answers DEADLINE_EXCEEDED past it).
    pub fn with_deadline(self, deadline: Option<std::time::Duration>) -> Token {
        Token { deadline, ..self }
    }
}

impl Interceptor for Token {
    fn call(&mut self, mut req: Request<()>) -> Result<Request<()>, Status> {
        if let Some(v) = &self.bearer {
            req.metadata_mut().insert("authorization", v.clone());
        }
        if let Some(d) = self.deadline {
            req.set_timeout(d);
        }
        Ok(req)
    }
}

pub type Client = SheetdServiceClient<InterceptedService<Channel, Token>>;

/// Connects to a server (TLS for https:// URLs, trusting `ca_cert` when given).
pub async fn connect(server: &str, token: Option<&str>, ca_cert: Option<&[u8]>) -> Result<Client, String> {
    let channel = channel(server, ca_cert).await?;
    Ok(SheetdServiceClient::with_interceptor(channel, Token::new(token)?)
        .max_decoding_message_size(usize::MAX))
}

/// A connection to the server at `server` (`http://…`, `https://…` with `ca_cert` when given,
/// or `host:port`).
pub async fn channel(server: &str, ca_cert: Option<&[u8]>) -> Result<Channel, String> {
    // `host:port` alone means plain HTTP/2, as the server listens by default.
    let server = if server.contains("://") { server.to_owned() } else { format!("http://{server}") };
    let mut endpoint = Channel::from_shared(server.clone())
        .map_err(|e| format!("invalid server URL `{server}`: {e}"))?
        .connect_timeout(std::time::Duration::from_secs(10));
    if server.starts_with("https://") {
        let mut tls = ClientTlsConfig::new();
        if let Some(ca) = ca_cert {
            tls = tls.ca_certificate(Certificate::from_pem(ca));
        }
        endpoint = endpoint.tls_config(tls).map_err(|e| format!("TLS: {}", crate::problem::causes(&e)))?;
    }
    endpoint
        .connect()
        .await
        .map_err(|e| format!("cannot connect to {server}: {}", crate::problem::causes(&e)))
}

/// Parses JSON steps (sheet-file syntax) into API operations.
pub fn operations(steps: &Steps) -> Result<Vec<pb::Operation>, String> {
    let mut all: Vec<Json> = Vec::new();
    let mut dialect = steps.dialect.clone();
    if let Some(path) = &steps.file {
        let text =
            std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        let file: super::sheet::SheetFile = serde_json::from_str(&text)
            .map_err(|e| format!("{}:{}:{}: {e}", path.display(), e.line(), e.column()))?;
        dialect = dialect.or(file.dialect);
        if let Some(setup) = file.setup {
            all.push(serde_json::json!({ "setup": setup }));
        }
        all.extend(file.steps);
    }
    for (i, s) in steps.steps.iter().enumerate() {
        all.push(serde_json::from_str(s).map_err(|e| format!("--step #{}: {e}", i + 1))?);
    }
    json_operations(&all, dialect.as_deref())
}

/// JSON steps (already parsed) as API operations; with a dialect, its verbs go as written.
pub fn json_operations(all: &[Json], dialect: Option<&str>) -> Result<Vec<pb::Operation>, String> {
    let dialect = dialect.map(crate::dialect::dialect).transpose()?;
    let mut out = Vec::new();
    for s in all {
        // A dialect's verb goes as it is written; the server makes it into its step.
        if let Some(d) = dialect
            && !matches!(crate::dialect::game_step(d, s), Ok(dialects::creature::game::Step::Generic(_)))
        {
            let verb = pb::Verb { dialect: d.to_owned(), json: s.to_string() };
            out.push(pb::Operation { op: Some(pb::operation::Op::Verb(verb)), cause: String::new() });
            continue;
        }
        let step = super::steps::game_step(s)
            .map_err(|e| format!("step {}: {}", super::steps::describe(s), e.message()))?;
        out.extend(convert::step_message(&step));
    }
    Ok(out)
}

/// Runs `sheetd client`.
pub fn run(args: ClientArgs) -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::from(1);
        }
    };
    // Steps are read before connecting: a misspelled one is said at once, server or not.
    let steps = match &args.call {
        Call::Create { steps, .. } | Call::Apply { steps, .. } | Call::Preview { steps, .. } => Some(steps),
        _ => None,
    };
    if let Some(Err(e)) = steps.map(operations) {
        eprintln!("error: {e}");
        return ExitCode::from(1);
    }
    match runtime.block_on(call(args)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{e}");
            ExitCode::from(1)
        }
    }
}

/// A failed call for people: the status, then each diagnostic rendered.
pub fn status_text(s: &Status) -> String {
    let mut out = format!("error: {:?}: {}", s.code(), s.message());
    for d in status::diagnostics(s) {
        if !d.formula.is_empty()
            && let Some(span) = &d.span
        {
            out.push_str(&format!("\n  in formula `{}` at bytes {}..{}", d.formula, span.start, span.end));
        }
        out.push('\n');
        out.push_str(&crate::render::problem(&convert::problem(&d)));
    }
    out
}

pub(super) fn print_json<M: serde::Serialize>(m: &M) -> Result<(), String> {
    println!("{}", serde_json::to_string(m).map_err(|e| format!("cannot encode the reply: {e}"))?);
    Ok(())
}

fn print_values(values: &[pb::VariableValue]) {
    let width = values.iter().map(|v| v.r#ref.len()).max().unwrap_or(0);
    for v in values {
        println!("  {:width$} = {}", v.r#ref, v.value.as_ref().map(show).unwrap_or_default());
    }
}

pub(super) fn change_line(c: &pb::Change) -> String {
    let v = |x: &Option<pb::Value>| x.as_ref().map_or("(none)".to_owned(), show);
    format!("  {}: {} → {}", c.r#ref, v(&c.old), v(&c.new))
}

fn print_trace(t: &pb::Trace) {
    let v = |x: &Option<pb::Value>| x.as_ref().map_or("(none)".to_owned(), show);
    let order = if t.order == "applied" { ", modifiers in applied order" } else { "" };
    println!("{} = {}   ({}{order}, default {})", t.r#ref, v(&t.value), t.format, v(&t.default));
    for s in &t.steps {
        let cond = match s.condition {
            Some(true) => " [condition true]",
            Some(false) => " [condition false: skipped]",
            None => "",
        };
        let prio = if s.priority > 0 { format!(" PRIORITY={}", s.priority) } else { String::new() };
        let until = if s.expires.is_empty() { String::new() } else { format!(" (until {})", s.expires) };
        println!("  {} {}{prio}{cond}  from {}{until}  → {}", s.kind, s.instruction, s.source, v(&s.after));
        for r in &s.reads {
            println!("      reads {} = {}", r.r#ref, v(&r.value));
        }
    }
}

/// Explain's nodes as a graph: the first is the variable asked about; each reads its `reads`.
fn explained_graph(nodes: &[pb::DependencyNode], readers: &[pb::DependencyNode]) -> super::graph::Graph {
    use super::graph::{Graph, Node};
    let mut g = Graph::default();
    for (i, n) in nodes.iter().chain(readers).enumerate() {
        let value = n.value.as_ref().map(show).unwrap_or_default();
        g.nodes.push(Node { r#ref: n.r#ref.clone(), value, focus: i == 0 });
    }
    // An edge for each read between two nodes drawn (the outermost read what is not drawn).
    let drawn: std::collections::HashSet<&str> = g.nodes.iter().map(|n| n.r#ref.as_str()).collect();
    let edges = nodes.iter().chain(readers).flat_map(|n| {
        n.reads.iter().filter(|r| drawn.contains(r.as_str())).map(|r| (r.clone(), n.r#ref.clone()))
    });
    g.edges = edges.collect();
    g
}

fn print_tree(nodes: &[pb::DependencyNode]) {
    fn walk(nodes: &[pb::DependencyNode], r: &str, prefix: &str, seen: &mut Vec<String>) {
        let Some(node) = nodes.iter().find(|n| n.r#ref == r) else { return };
        let children: Vec<&String> = node.reads.iter().collect();
        for (i, c) in children.iter().enumerate() {
            let last = i + 1 == children.len();
            let value = nodes.iter().find(|n| &n.r#ref == *c).and_then(|n| n.value.as_ref()).map(show);
            let repeat = seen.contains(c);
            println!(
                "{prefix}{} {c} = {}{}",
                if last { "└─" } else { "├─" },
                value.unwrap_or_default(),
                if repeat { " (see above)" } else { "" }
            );
            if !repeat {
                seen.push((*c).clone());
                walk(nodes, c, &format!("{prefix}{}", if last { "   " } else { "│  " }), seen);
            }
        }
    }
    let Some(root) = nodes.first() else { return };
    println!("{} = {}", root.r#ref, root.value.as_ref().map(show).unwrap_or_default());
    walk(nodes, &root.r#ref, "", &mut vec![root.r#ref.clone()]);
}

/// One call: connects, sends it, prints the reply (as text, or JSON with `--json`).
// long: one arm per subcommand, each its request and its printing (the longer ones call out).
async fn call(args: ClientArgs) -> Result<(), String> {
    let ca = match &args.ca_cert {
        Some(p) => Some(std::fs::read(p).map_err(|e| format!("error: cannot read {}: {e}", p.display()))?),
        None => None,
    };
    if let Call::Health = args.call {
        let channel = channel(&args.server, ca.as_deref()).await.map_err(|e| format!("error: {e}"))?;
        return super::client_ops::health(channel, args.json).await;
    }
    let channel = channel(&args.server, ca.as_deref()).await.map_err(|e| format!("error: {e}"))?;
    // A stream lasts as long as the user watches; every other call has its deadline.
    let deadline =
        (!matches!(args.call, Call::Watch { .. })).then(|| std::time::Duration::from_secs(args.timeout));
    let token = Token::new(args.token.as_deref()).map_err(|e| format!("error: {e}"))?.with_deadline(deadline);
    let mut client =
        SheetdServiceClient::with_interceptor(channel, token).max_decoding_message_size(usize::MAX);
    let c = &mut client;
    let json = args.json;
    match args.call {
        Call::Create { ruleset, id, steps } => create(c, ruleset, id, &steps, json).await,
        Call::Apply { sheet, expect, request_id, steps } => {
            apply(c, &sheet, (expect, request_id.unwrap_or_default()), &steps, json).await
        }
        Call::Catalog { ruleset, kind, key_prefix, text, page_size, page_token } => {
            let req = pb::ListCatalogRequest {
                ruleset_id: ruleset.unwrap_or_default(),
                kind: kind.unwrap_or_default(),
                key_prefix: key_prefix.unwrap_or_default(),
                text: text.unwrap_or_default(),
                page_size: page_size.unwrap_or(0),
                page_token: page_token.unwrap_or_default(),
            };
            let r = c.list_catalog(req).await.map_err(st)?.into_inner();
            if json {
                return print_json(&r);
            }
            print_catalog(&r);
            Ok(())
        }
        Call::Preview { sheet, expect, explain, steps } => {
            preview(c, &sheet, expect, explain, &steps, json).await
        }
        Call::Values { sheet, variables, revision } => {
            let req = pb::ValuesRequest { sheet_id: sheet.clone(), variables, revision };
            let r = c.values(req).await.map_err(st)?.into_inner();
            if json {
                return print_json(&r);
            }
            println!("{sheet} at revision {}:", r.revision);
            print_values(&r.values);
            Ok(())
        }
        Call::Explain { sheet, variable, format, depth } => {
            let depth = depth.or(format.map(|_| 3));
            explain(c, pb::ExplainRequest { sheet_id: sheet, variable, depth }, format, json).await
        }
        Call::WhyChanged { sheet, variable, from, to } => {
            let req =
                pb::WhyChangedRequest { sheet_id: sheet, variable, from_revision: from, to_revision: to };
            let variable = req.variable.clone();
            let r = c.why_changed(req).await.map_err(st)?.into_inner();
            if json {
                return print_json(&r);
            }
            print_why(&variable, &r);
            Ok(())
        }
        Call::Watch { sheet, variables, from } => watch(c, sheet, variables, from, json).await,
        Call::Sheet { sheet } => show_sheet(c, sheet, json).await,
        Call::Sheets { ruleset, id_prefix, page_size, page_token } => {
            let req = pb::ListSheetsRequest {
                ruleset_id: ruleset.unwrap_or_default(),
                id_prefix: id_prefix.unwrap_or_default(),
                page_size: page_size.unwrap_or(0),
                page_token: page_token.unwrap_or_default(),
            };
            let r = c.list_sheets(req).await.map_err(st)?.into_inner();
            if json {
                return print_json(&r);
            }
            for s in &r.sheets {
                let objects = s.objects.join(", ");
                println!(
                    "{}  revision {}  ruleset {} v{}  objects: {objects}",
                    s.id, s.revision, s.ruleset_id, s.ruleset_version
                );
            }
            if !r.next_page_token.is_empty() {
                println!("{} in all; next page: --page-token {}", r.total_size, r.next_page_token);
            }
            Ok(())
        }
        Call::Delete { sheet, expect } => {
            let req = pb::DeleteSheetRequest { sheet_id: sheet.clone(), expected_revision: expect };
            let r = c.delete_sheet(req).await.map_err(st)?;
            if json {
                return print_json(&r.into_inner());
            }
            println!("deleted {sheet}");
            Ok(())
        }
        Call::Rulesets => rulesets(c, json).await,
        Call::Load { id, paths, inline, dialect } => {
            super::client_ops::load(c, id, paths, inline, dialect, json).await
        }
        Call::Upgrade { sheet } => super::client_ops::upgrade(c, sheet, json).await,
        Call::Health => unreachable!("answered above, before connecting the API's client"),
        Call::Batch { input, ruleset } => super::client_ops::batch(c, ruleset, input).await,
        Call::Reload { ruleset, inline, expect } => reload(c, &ruleset, inline, expect, json).await,
    }
}

/// A failed call as the error `call` returns.
pub(super) fn st(s: Status) -> String {
    status_text(&s)
}

async fn create(
    c: &mut Client,
    ruleset: Option<String>,
    id: Option<String>,
    steps: &Steps,
    json: bool,
) -> Result<(), String> {
    let operations = operations(steps).map_err(|e| format!("error: {e}"))?;
    let req = pb::CreateSheetRequest {
        ruleset_id: ruleset.unwrap_or_default(),
        id: id.unwrap_or_default(),
        operations,
        variables: Vec::new(),
    };
    let r = c.create_sheet(req).await.map_err(st)?.into_inner();
    if json {
        return print_json(&r);
    }
    let s = r.sheet.unwrap_or_default();
    println!(
        "created {} at revision {} (ruleset {} version {})",
        s.id, s.revision, s.ruleset_id, s.ruleset_version
    );
    print_values(&r.values);
    Ok(())
}
/// `client explain`: the trace and what the variable depends on, as a tree or drawn.
async fn explain(
    c: &mut Client,
    req: pb::ExplainRequest,
    format: Option<super::graph::Format>,
    json: bool,
) -> Result<(), String> {
    let r = c.explain(req).await.map_err(st)?.into_inner();
    if let Some(f) = format {
        print!("{}", explained_graph(&r.nodes, &r.readers).render(f));
        return Ok(());
    }
    if json {
        return print_json(&r);
    }
    if let Some(t) = &r.trace {
        print_trace(t);
    }
    println!("\ndepends on:");
    print_tree(&r.nodes);
    Ok(())
}

/// A catalog page for people: each object, what it modifies, where it is defined.
fn print_catalog(r: &pb::ListCatalogResponse) {
    let kinds: Vec<String> = r.kinds.iter().map(|k| format!("{} ({})", k.name, k.objects)).collect();
    println!("ruleset version {}; kinds: {}", r.ruleset_version, kinds.join(", "));
    for o in &r.objects {
        let name = if o.display_name == o.key { String::new() } else { format!(" \"{}\"", o.display_name) };
        let modifies: Vec<String> =
            o.modifies.iter().map(|m| format!("{} {}", m.r#type, m.variable)).collect();
        let modifies = if modifies.is_empty() { String::new() } else { format!(": {}", modifies.join(", ")) };
        println!("  {} `{}`{name}{modifies}  ({})", o.kind, o.key, o.origin);
    }
    match r.next_page_token.as_str() {
        "" => println!("{} in all", r.total_size),
        t => println!("{} in all; next page: --page-token {t}", r.total_size),
    }
}

/// `client preview`: what applying the steps would do, and the traces asked for.
async fn preview(
    c: &mut Client,
    sheet: &str,
    expect: Option<u64>,
    explain: Vec<String>,
    steps: &Steps,
    json: bool,
) -> Result<(), String> {
    let operations = operations(steps).map_err(|e| format!("error: {e}"))?;
    let req =
        pb::PreviewRequest { sheet_id: sheet.to_owned(), expected_revision: expect, operations, explain };
    let r = c.preview(req).await.map_err(st)?.into_inner();
    if json {
        return print_json(&r);
    }
    println!("{sheet} stays at revision {}; applying the steps would change:", r.revision);
    if let Some(a) = &r.result {
        a.changes.iter().for_each(|c| println!("{}", change_line(c)));
        for e in &a.expired {
            println!("expired: {} when {} passed {} (now {})", e.what, e.clock, e.after, e.now);
        }
        if let Some(p) = &a.pending {
            println!("{}", pending_line(p));
        }
    }
    for t in &r.traces {
        println!();
        print_trace(t);
    }
    Ok(())
}

/// `client apply`: with the revision expected, if any, and the request id ("" for none).
async fn apply(
    c: &mut Client,
    sheet: &str,
    (expect, request_id): (Option<u64>, String),
    steps: &Steps,
    json: bool,
) -> Result<(), String> {
    let operations = operations(steps).map_err(|e| format!("error: {e}"))?;
    let req = pb::ApplyRequest {
        sheet_id: sheet.to_owned(),
        expected_revision: expect,
        operations,
        variables: Vec::new(),
        request_id,
    };
    let r = c.apply(req).await.map_err(st)?.into_inner();
    if json {
        return print_json(&r);
    }
    if let Some(m) = &r.moved {
        println!("moved to ruleset version {} (from {}):", m.to_version, m.from_version);
        m.changes.iter().for_each(|c| println!("{}", change_line(c)));
    }
    println!("{sheet} is at revision {} ({} variables recomputed)", r.revision, r.recomputed);
    for f in &r.fired {
        let this = f.this.as_ref().map_or(String::new(), |t| format!(" for {t}"));
        let failed =
            f.error.as_ref().map_or(String::new(), |e| format!(": failed: {} [{}]", e.message, e.code));
        println!("fired rule `{}` ({}) on {}{this}{failed}", f.rule, f.at, f.event);
    }
    r.changes.iter().for_each(|c| println!("{}", change_line(c)));
    for e in &r.expired {
        println!("expired: {} when {} passed {} (now {})", e.what, e.clock, e.after, e.now);
    }
    if let Some(e) = &r.stopped {
        println!("stopped: {} [{}] (chain: {})", e.message, e.code, e.chain.join(" → "));
    }
    if let Some(p) = &r.pending {
        println!("{}", pending_line(p));
    }
    Ok(())
}

/// `client sheet`: what a sheet is, and the question it waits on.
async fn show_sheet(c: &mut Client, sheet: String, json: bool) -> Result<(), String> {
    let r = c.get_sheet(pb::GetSheetRequest { sheet_id: sheet }).await.map_err(st)?.into_inner();
    if json {
        return print_json(&r);
    }
    let s = r.sheet.unwrap_or_default();
    println!(
        "{}  revision {}  ruleset {} v{}  objects: {}",
        s.id,
        s.revision,
        s.ruleset_id,
        s.ruleset_version,
        s.objects.join(", ")
    );
    if let Some(p) = &s.pending {
        println!("{}", pending_line(p));
    }
    // What is on it: each object (kind, key, what it is attached to, where it is defined) …
    for o in &s.contents {
        let on = if o.parent.is_empty() { String::new() } else { format!(" on {}", o.parent) };
        let granted = if o.listed { "" } else { " (granted)" };
        println!("  {}: {} `{}`{on}{granted}  ({})", o.id, o.kind, o.key, o.origin);
    }
    // … and the channels set.
    for ch in &s.channels {
        let kind = match pb::sheet_channel::Kind::try_from(ch.kind) {
            Ok(pb::sheet_channel::Kind::Clock) => "clock",
            Ok(pb::sheet_channel::Kind::Stock) => "stock",
            _ => "input",
        };
        println!("  {kind} {} = {}", ch.r#ref, ch.value.as_ref().map(show).unwrap_or_default());
    }
    Ok(())
}

/// A pending question for people, with the step that answers it.
fn pending_line(p: &pb::Pending) -> String {
    match &p.die {
        Some(die) => format!(
            "pending #{}: roll {die} (rule `{}`, {}); answer with --step '{{\"roll\": {{\"die\": \"{die}\", \"value\": N}}}}'",
            p.choice, p.rule, p.at
        ),
        None => format!(
            "pending #{}: {} pick {} of [{}]{} (rule `{}`, {}); answer with --step '{{\"choose\": {{\"choice\": {}, \"picks\": [...]}}}}'",
            p.choice,
            p.prompt,
            if p.at_least < p.pick { format!("{} to {}", p.at_least, p.pick) } else { p.pick.to_string() },
            p.options.join(", "),
            if p.decline { " or none" } else { "" },
            p.rule,
            p.at,
            p.choice
        ),
    }
}

fn print_why(variable: &str, r: &pb::WhyChangedResponse) {
    let v = |x: &Option<pb::Value>| x.as_ref().map_or("(none)".to_owned(), show);
    println!(
        "{variable}: {} at revision {} → {} at revision {}",
        v(&r.from_value),
        r.from_revision,
        v(&r.to_value),
        r.to_revision
    );
    println!("{}", if r.causes.is_empty() { "no operation in between affected it" } else { "because of:" });
    for c in &r.causes {
        // The ways the change went (else, the variables it changed on the way).
        let via = if !c.paths.is_empty() {
            let ways: Vec<String> = c.paths.iter().map(|p| p.vars.join(" → ")).collect();
            format!("  (through {})", ways.join("; "))
        } else if c.via.is_empty() {
            String::new()
        } else {
            format!("  (via {})", c.via.join(" → "))
        };
        println!(
            "  revision {}, operation {}: {}: {} → {}{via}",
            c.revision,
            c.operation_index,
            c.description,
            v(&c.before),
            v(&c.after)
        );
    }
    let step = |s: &Option<pb::TraceStep>| {
        s.as_ref().map_or(String::new(), |s| {
            format!("{} {} from {} → {}", s.kind, s.instruction, s.source, v(&s.after))
        })
    };
    let mut header = false;
    for d in &r.diff {
        use pb::step_diff::Kind;
        let line = match Kind::try_from(d.kind).unwrap_or(Kind::Unspecified) {
            Kind::Added => format!("  + {}", step(&d.to)),
            Kind::Removed => format!("  - {}", step(&d.from)),
            Kind::Changed => format!("  ~ {}\n    was {}", step(&d.to), step(&d.from)),
            _ => continue,
        };
        if !header {
            println!("modifiers that differ:");
            header = true;
        }
        println!("{line}");
    }
}

async fn watch(
    c: &mut Client,
    sheet: String,
    variables: Vec<String>,
    from: Option<u64>,
    json: bool,
) -> Result<(), String> {
    let req = pb::WatchRequest { sheet_id: sheet, variables, from_revision: from };
    let mut stream = c.watch(req).await.map_err(st)?.into_inner();
    while let Some(ev) = stream.message().await.map_err(st)? {
        if json {
            print_json(&ev)?;
            continue;
        }
        use pb::watch_response::Event;
        match &ev.event {
            Some(Event::Changes(c)) => {
                println!("revision {}:", ev.revision);
                c.changes.iter().for_each(|c| println!("{}", change_line(c)));
            }
            Some(Event::Resync(r)) => {
                println!("revision {} (resync: {}):", ev.revision, r.reason);
                print_values(&r.values);
            }
            Some(Event::Deleted(_)) => println!("the sheet was deleted"),
            None => {}
        }
    }
    Ok(())
}

async fn rulesets(c: &mut Client, json: bool) -> Result<(), String> {
    let r = c.list_rulesets(pb::ListRulesetsRequest::default()).await.map_err(st)?.into_inner();
    if json {
        return print_json(&r);
    }
    for rs in &r.rulesets {
        let s = rs.summary.unwrap_or_default();
        println!(
            "{}  version {}  {} objects, {} modifiers, {} variables  {}",
            rs.id,
            rs.version,
            s.objects,
            s.modifiers,
            s.variables,
            if rs.inline { "(inline)".to_owned() } else { rs.paths.join(", ") }
        );
    }
    Ok(())
}

/// A native ruleset's text from a file here (`--inline FILE`), or none.
pub(super) fn read_inline(inline: Option<PathBuf>) -> Result<String, String> {
    match inline {
        Some(p) => {
            std::fs::read_to_string(&p).map_err(|e| format!("error: cannot read {}: {e}", p.display()))
        }
        None => Ok(String::new()),
    }
}

async fn reload(
    c: &mut Client,
    ruleset: &str,
    inline: Option<PathBuf>,
    expect: Option<u64>,
    json: bool,
) -> Result<(), String> {
    let inline_text = read_inline(inline)?;
    let req = pb::ReloadRulesetRequest { id: ruleset.to_owned(), inline_text, expected_version: expect };
    let r = c.reload_ruleset(req).await.map_err(st)?.into_inner();
    if json {
        return print_json(&r);
    }
    let version = r.ruleset.as_ref().map_or(0, |i| i.version);
    if r.ok {
        println!("{ruleset} reloaded: now version {version}");
        return Ok(());
    }
    let mut msg = format!("error: {ruleset} did not reload; version {version} keeps serving:");
    for d in &r.diagnostics {
        let at =
            d.location.as_ref().map(|l| format!("{}:{}:{}: ", l.file, l.line, l.col)).unwrap_or_default();
        msg.push_str(&format!("\n  {at}{}: {}", d.code, d.message));
    }
    Err(msg)
}
