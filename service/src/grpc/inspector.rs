//! The web inspector's page, served by `sheetd serve` itself: `GET /` (and `/index.html`),
//! `/inspector.js` and `/inspector.css`, embedded in the binary (`service/assets/inspector/`,
//! the script built from `clients/ts/inspector/` and committed). The page talks grpc-web to the
//! same server, so it needs no CORS and no external resource; its Content-Security-Policy
//! allows nothing else.
//!
//! The page holds no data: every call it makes goes through the API and its tokens, so the
//! assets need none. Requests for anything else go on to gRPC untouched.

use http::header::{CACHE_CONTROL, CONTENT_SECURITY_POLICY, CONTENT_TYPE, X_CONTENT_TYPE_OPTIONS};
use http::{Method, Request, Response, StatusCode};
use prost::bytes::Bytes;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

/// An embedded file: its path, content type and bytes.
struct Asset {
    path: &'static str,
    content_type: &'static str,
    bytes: &'static [u8],
}

const INDEX: &[u8] = include_bytes!("../../assets/inspector/index.html");

const ASSETS: &[Asset] = &[
    Asset { path: "/", content_type: "text/html; charset=utf-8", bytes: INDEX },
    Asset { path: "/index.html", content_type: "text/html; charset=utf-8", bytes: INDEX },
    Asset {
        path: "/inspector.js",
        content_type: "text/javascript; charset=utf-8",
        bytes: include_bytes!("../../assets/inspector/inspector.js"),
    },
    Asset {
        path: "/inspector.css",
        content_type: "text/css; charset=utf-8",
        bytes: include_bytes!("../../assets/inspector/inspector.css"),
    },
];

/// The page may load only its own files and call only its own server.
const POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; \
                      img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/// The response for `GET`/`HEAD` `path`, if it is one of the inspector's files.
fn asset(method: &Method, path: &str) -> Option<Response<tonic::body::Body>> {
    if method != Method::GET && method != Method::HEAD {
        return None;
    }
    let a = ASSETS.iter().find(|a| a.path == path)?;
    let body = if method == Method::HEAD {
        tonic::body::Body::empty()
    } else {
        tonic::body::Body::new(http_body_util::Full::new(Bytes::from_static(a.bytes)))
    };
    let mut r = Response::new(body);
    *r.status_mut() = StatusCode::OK;
    let h = r.headers_mut();
    h.insert(CONTENT_TYPE, http::HeaderValue::from_static(a.content_type));
    h.insert(CONTENT_SECURITY_POLICY, http::HeaderValue::from_static(POLICY));
    h.insert(X_CONTENT_TYPE_OPTIONS, http::HeaderValue::from_static("nosniff"));
    // The files change only with the binary: revalidate rather than keep a stale page.
    h.insert(CACHE_CONTROL, http::HeaderValue::from_static("no-cache"));
    h.insert(http::header::CONTENT_LENGTH, http::HeaderValue::from(a.bytes.len()));
    Some(r)
}

/// The layer that answers the inspector's files in front of the gRPC services (when `enabled`:
/// `sheetd serve --no-inspector` turns it off).
#[derive(Clone, Copy, Debug, Default)]
pub struct InspectorLayer {
    pub enabled: bool,
}

impl<S> tower::Layer<S> for InspectorLayer {
    type Service = Inspector<S>;
    fn layer(&self, inner: S) -> Inspector<S> {
        Inspector { inner, enabled: self.enabled }
    }
}

/// The layer's service.
#[derive(Clone, Debug)]
pub struct Inspector<S> {
    inner: S,
    enabled: bool,
}

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

impl<S, B> tower::Service<Request<B>> for Inspector<S>
where
    S: tower::Service<Request<B>, Response = Response<tonic::body::Body>>,
    S::Future: Send + 'static,
    S::Error: Send + 'static,
{
    type Response = Response<tonic::body::Body>;
    type Error = S::Error;
    type Future = BoxFuture<Result<Response<tonic::body::Body>, S::Error>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request<B>) -> Self::Future {
        match asset(req.method(), req.uri().path()).filter(|_| self.enabled) {
            Some(page) => Box::pin(async move { Ok(page) }),
            None => Box::pin(self.inner.call(req)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_and_its_files_are_served_with_their_types_and_policy() {
        for (path, kind) in
            [("/", "text/html"), ("/inspector.js", "text/javascript"), ("/inspector.css", "text/css")]
        {
            let r = asset(&Method::GET, path).expect(path);
            assert!(r.headers()[CONTENT_TYPE].to_str().expect("ascii").starts_with(kind), "{path}");
            assert!(
                r.headers()[CONTENT_SECURITY_POLICY].to_str().expect("ascii").contains("connect-src 'self'")
            );
        }
        assert!(asset(&Method::POST, "/").is_none(), "gRPC and grpc-web calls are POSTs: not ours");
        assert!(asset(&Method::GET, "/sheetd.v1.SheetdService/Ping").is_none());
        let page = std::str::from_utf8(INDEX).expect("UTF-8");
        assert!(page.contains("src=\"inspector.js\"") && !page.contains("http"), "no external resource");
    }
}
