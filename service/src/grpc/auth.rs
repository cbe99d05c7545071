//! Who may call what: bearer tokens with roles, checked by one tower layer in front of every
//! service, against one table ([`required_role`]).
//!
//! - A token has a role: `read` (values, explanations, watching, listing), `write` (also creating
//!   sheets, applying changes, batches) or `admin` (also loading and reloading rulesets, deleting
//!   sheets). Each role includes the ones before it.
//! - With no tokens configured, authentication is off and every caller is `admin` (the default
//!   listening address is loopback only).
//! - Health checks never need a token.
//! - Tokens are compared as SHA-256 digests, every configured token each time, in constant time:
//!   neither where a guess differs nor how long the real token is shows in the timing.

use crate::engine::policy;
use sha2::{Digest, Sha256};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use subtle::ConstantTimeEq;
use tonic::Status;

/// What a caller may do; each role includes the ones before it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Role {
    Read,
    Write,
    Admin,
}

impl Role {
    pub fn name(self) -> &'static str {
        match self {
            Role::Read => "read",
            Role::Write => "write",
            Role::Admin => "admin",
        }
    }

    fn parse(s: &str) -> Option<Role> {
        match s {
            "read" => Some(Role::Read),
            "write" => Some(Role::Write),
            "admin" => Some(Role::Admin),
            _ => None,
        }
    }
}

/// The role each call needs, by its gRPC path; `None` for calls anyone may make (health).
/// Unknown paths need `read`, so that an unauthenticated caller learns nothing about them.
pub fn required_role(path: &str) -> Option<Role> {
    if path.starts_with("/grpc.health.v1.Health/") {
        return None;
    }
    let method = path.strip_prefix("/sheetd.v1.SheetdService/").unwrap_or("");
    Some(match method {
        "LoadRuleset" | "ReloadRuleset" | "DeleteSheet" => Role::Admin,
        "CreateSheet" | "Apply" | "Upgrade" | "SolveBatch" => Role::Write,
        // Ping, ListRulesets, ListCatalog, GetSheet, ListSheets, Values, Explain, Preview (it commits
        // nothing), Select, WhyChanged, Watch, reflection, anything else.
        _ => Role::Read,
    })
}

/// A configured token: `TOKEN` (an admin token) or `ROLE=TOKEN` with ROLE one of `read`,
/// `write`, `admin`. Surrounding whitespace is trimmed; an empty token is an error.
#[derive(Clone, PartialEq, Eq)]
pub struct TokenSpec {
    pub role: Role,
    token: String,
}

impl std::fmt::Debug for TokenSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "TokenSpec({}, <{} bytes>)", self.role.name(), self.token.len())
    }
}

impl TokenSpec {
    pub fn parse(s: &str) -> Result<TokenSpec, String> {
        let (role, token) = match s.split_once('=') {
            Some((r, t)) if Role::parse(r.trim()).is_some() => (Role::parse(r.trim()), t),
            _ => (None, s),
        };
        let token = token.trim();
        if token.is_empty() {
            return Err("a token is empty or blank (tokens are `TOKEN` or `ROLE=TOKEN`, ROLE one of read, write, admin)".to_owned());
        }
        if !token.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(
                "a token has characters other than visible ASCII (they cannot travel in an HTTP header)"
                    .to_owned(),
            );
        }
        Ok(TokenSpec { role: role.unwrap_or(Role::Admin), token: token.to_owned() })
    }
}

/// The token table: digests and roles.
#[derive(Clone, Debug, Default)]
pub struct Auth {
    tokens: Arc<Vec<([u8; 32], Role)>>,
}

fn digest(b: &[u8]) -> [u8; 32] {
    Sha256::digest(b).into()
}

impl Auth {
    /// No tokens: authentication is off.
    pub fn new(tokens: &[TokenSpec]) -> Auth {
        Auth { tokens: Arc::new(tokens.iter().map(|t| (digest(t.token.as_bytes()), t.role)).collect()) }
    }

    pub fn enabled(&self) -> bool {
        !self.tokens.is_empty()
    }

    /// The caller's role from its `authorization` header value, or why it has none.
    pub fn role(&self, authorization: Option<&[u8]>) -> Result<Role, Status> {
        if self.tokens.is_empty() {
            return Ok(Role::Admin);
        }
        let Some(value) = authorization else {
            return Err(Status::unauthenticated("this server needs `authorization: Bearer <token>`"));
        };
        let value = value.trim_ascii();
        let given = match value.get(..7) {
            Some(scheme) if scheme.eq_ignore_ascii_case(b"bearer ") => value[7..].trim_ascii(),
            _ => return Err(Status::unauthenticated("the authorization header must be `Bearer <token>`")),
        };
        let given = digest(given);
        // Every token is compared, so the time does not depend on which one matches.
        let mut found: Option<Role> = None;
        for (d, role) in self.tokens.iter() {
            if bool::from(d.ct_eq(&given)) {
                found = found.max(Some(*role));
            }
        }
        found.ok_or_else(|| Status::unauthenticated("the bearer token is not valid"))
    }

    /// Checks a call: its path's required role against the caller's.
    pub fn check(&self, path: &str, authorization: Option<&[u8]>) -> Result<Option<Role>, Status> {
        let Some(needed) = required_role(path) else { return Ok(None) };
        let role = self.role(authorization)?;
        if role < needed {
            return Err(Status::permission_denied(format!(
                "this call needs the `{}` role; the token has `{}`",
                needed.name(),
                role.name()
            )));
        }
        Ok(Some(role))
    }
}

impl<S> tower::Layer<S> for Auth {
    type Service = AuthService<S>;
    fn layer(&self, inner: S) -> AuthService<S> {
        AuthService { inner, auth: self.clone() }
    }
}

/// The layer's service: rejects calls the caller's role does not allow, before any decoding.
#[derive(Clone, Debug)]
pub struct AuthService<S> {
    inner: S,
    auth: Auth,
}

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

/// How much of a refused request's body is read before the refusal is sent, and for how long.
/// Over HTTP/1.1 (grpc-web) a response sent while the client is still writing its request makes
/// the server close the connection, and the client sees a broken pipe instead of the status;
/// reading a small body first lets the refusal arrive. A larger or slower one is cut off.
const DRAIN_BYTES: usize = 1 << 20;
const DRAIN_TIME: std::time::Duration = std::time::Duration::from_secs(2);

impl<S, B, R> tower::Service<http::Request<B>> for AuthService<S>
where
    S: tower::Service<http::Request<B>, Response = http::Response<R>>,
    S::Future: Send + 'static,
    R: Default + Send + 'static,
    S::Error: Send + 'static,
    B: http_body::Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    type Response = http::Response<R>;
    type Error = S::Error;
    type Future = BoxFuture<Result<http::Response<R>, S::Error>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut req: http::Request<B>) -> Self::Future {
        // Every request's logs carry the peer and a request id: the client's `x-request-id`
        // (printable, at most 64 bytes) or one made here; the reply echoes it.
        let peer = req.extensions().get::<super::conn::ConnActivity>().and_then(|c| c.0.peer);
        let peer = peer.map_or_else(|| "-".to_owned(), |p| p.to_string());
        let request_id = request_id(req.headers().get("x-request-id"));
        let echo = http::HeaderValue::from_str(&request_id).ok();
        let span = tracing::info_span!("request", peer = %peer, request_id = %request_id);
        crate::telemetry::join_caller_trace(&span, req.headers());
        let header = req.headers().get(http::header::AUTHORIZATION).map(|v| v.as_bytes());
        let path = req.uri().path().to_owned();
        let with_id = move |mut r: http::Response<R>| {
            if let Some(v) = echo {
                r.headers_mut().insert("x-request-id", v);
            }
            r
        };
        match self.auth.check(&path, header) {
            Ok(role) => {
                if let Some(role) = role {
                    req.extensions_mut().insert(role);
                }
                let call = tracing::Instrument::instrument(self.inner.call(req), span);
                Box::pin(async move { call.await.map(with_id) })
            }
            Err(status) => {
                // Refused calls are logged too (who tried what), without the token.
                let method = policy::LogSafe(&policy::clip(&path, 128)).to_string();
                tracing::warn!(parent: &span, method, code = ?status.code(), message = status.message(), "call refused");
                let response = with_id(status.into_http::<R>());
                let body = http_body_util::Limited::new(req.into_body(), DRAIN_BYTES);
                Box::pin(async move {
                    let _ = tokio::time::timeout(DRAIN_TIME, http_body_util::BodyExt::collect(body)).await;
                    Ok(response)
                })
            }
        }
    }
}

/// A request's id: the client's `x-request-id` when it is 1 to 64 printable ASCII characters,
/// else a new one (`sheetd-` and a process-wide counter in hex).
fn request_id(given: Option<&http::HeaderValue>) -> String {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    let given = given.and_then(|v| v.to_str().ok()).map(str::trim);
    match given {
        Some(id) if (1..=64).contains(&id.len()) && id.bytes().all(|b| b.is_ascii_graphic()) => id.to_owned(),
        _ => format!("sheetd-{:x}", NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tonic::Code;

    fn specs(list: &[&str]) -> Vec<TokenSpec> {
        list.iter().map(|s| TokenSpec::parse(s).expect("valid")).collect()
    }

    #[test]
    fn tokens_are_checked_only_when_configured() {
        let open = Auth::new(&[]);
        assert_eq!(open.role(None).expect("open"), Role::Admin);
        let auth = Auth::new(&specs(&["s3cret", "other"]));
        assert_eq!(auth.role(Some(b"Bearer s3cret")).expect("ok"), Role::Admin);
        assert_eq!(auth.role(Some(b"Bearer other")).expect("ok"), Role::Admin);
        for bad in [
            None,
            Some(&b"Bearer wrong"[..]),
            Some(b"s3cret"),
            Some(b"Bearer s3cre"),
            Some(b"Bearer "),
            Some(b"Bearer"),
            Some(b"x"),
            Some(b""),
            Some(b"Basic s3cret"),
        ] {
            let e = auth.role(bad).expect_err("rejected");
            assert_eq!(e.code(), Code::Unauthenticated, "{bad:?}");
        }
    }

    #[test]
    fn the_scheme_is_case_insensitive_and_tokens_are_trimmed() {
        let auth = Auth::new(&specs(&["  s3cret \t"]));
        for ok in [&b"bearer s3cret"[..], b"BEARER s3cret", b"Bearer   s3cret  ", b" bEaReR s3cret"] {
            assert_eq!(auth.role(Some(ok)).expect("accepted"), Role::Admin, "{ok:?}");
        }
    }

    #[test]
    fn empty_or_blank_tokens_are_configuration_errors() {
        for bad in ["", "   ", "\t", "read=", "write=  ", "admin= "] {
            assert!(TokenSpec::parse(bad).is_err(), "{bad:?}");
        }
        assert!(TokenSpec::parse("a b").is_err(), "inner space");
        assert_eq!(TokenSpec::parse("read=abc").expect("ok").role, Role::Read);
        assert_eq!(TokenSpec::parse(" write = abc").expect("ok").role, Role::Write);
        // Not a role prefix: the whole text is an admin token.
        let t = TokenSpec::parse("abc==").expect("ok");
        assert_eq!((t.role, t.token.as_str()), (Role::Admin, "abc=="));
    }

    #[test]
    fn roles_gate_calls_by_the_policy_table() {
        let auth = Auth::new(&specs(&["read=r", "write=w", "admin=a"]));
        let call = |path: &str, token: &str| auth.check(path, Some(format!("Bearer {token}").as_bytes()));
        let path = |m: &str| format!("/sheetd.v1.SheetdService/{m}");
        for m in [
            "Ping",
            "Values",
            "Explain",
            "Preview",
            "Select",
            "WhyChanged",
            "Watch",
            "GetSheet",
            "ListSheets",
            "ListRulesets",
            "ListCatalog",
        ] {
            assert_eq!(call(&path(m), "r").expect("read may"), Some(Role::Read), "{m}");
        }
        for m in ["CreateSheet", "Apply", "Upgrade", "SolveBatch"] {
            assert_eq!(call(&path(m), "r").expect_err("read may not").code(), Code::PermissionDenied, "{m}");
            assert_eq!(call(&path(m), "w").expect("write may"), Some(Role::Write), "{m}");
        }
        for m in ["LoadRuleset", "ReloadRuleset", "DeleteSheet"] {
            assert_eq!(call(&path(m), "w").expect_err("write may not").code(), Code::PermissionDenied, "{m}");
            assert_eq!(call(&path(m), "a").expect("admin may"), Some(Role::Admin), "{m}");
        }
        assert_eq!(auth.check("/grpc.health.v1.Health/Check", None).expect("public"), None);
        let reflection = "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo";
        assert_eq!(auth.check(reflection, None).expect_err("needs a token").code(), Code::Unauthenticated);
        assert!(call(reflection, "r").is_ok());
    }

    #[test]
    fn a_token_listed_under_two_roles_gets_the_higher() {
        let auth = Auth::new(&specs(&["read=same", "write=same"]));
        assert_eq!(auth.role(Some(b"Bearer same")).expect("ok"), Role::Write);
    }
}
