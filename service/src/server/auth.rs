//! Bearer-token authentication: when tokens are configured, every call except the health
//! service must carry `authorization: Bearer <token>` with one of them.

use std::sync::Arc;
use tonic::service::Interceptor;
use tonic::{Request, Status};

#[derive(Clone, Debug, Default)]
pub struct Auth {
    tokens: Arc<Vec<Vec<u8>>>,
}

impl Auth {
    /// No tokens: every call is allowed.
    pub fn new(tokens: Vec<String>) -> Auth {
        Auth { tokens: Arc::new(tokens.into_iter().map(String::into_bytes).collect()) }
    }
}

/// Compares in time independent of where the inputs differ.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

impl Interceptor for Auth {
    fn call(&mut self, req: Request<()>) -> Result<Request<()>, Status> {
        if self.tokens.is_empty() {
            return Ok(req);
        }
        let Some(value) = req.metadata().get("authorization") else {
            return Err(Status::unauthenticated("this server needs `authorization: Bearer <token>`"));
        };
        let given = value.as_bytes().strip_prefix(b"Bearer ").unwrap_or(b"");
        if self.tokens.iter().any(|t| same(t, given)) {
            Ok(req)
        } else {
            Err(Status::unauthenticated("the bearer token is not valid"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(header: Option<&str>) -> Request<()> {
        let mut r = Request::new(());
        if let Some(h) = header {
            r.metadata_mut().insert("authorization", h.parse().expect("ascii"));
        }
        r
    }

    #[test]
    fn tokens_are_checked_only_when_configured() {
        let mut open = Auth::new(vec![]);
        assert!(open.call(with(None)).is_ok());
        let mut auth = Auth::new(vec!["s3cret".into(), "other".into()]);
        assert!(auth.call(with(Some("Bearer s3cret"))).is_ok());
        assert!(auth.call(with(Some("Bearer other"))).is_ok());
        for bad in [None, Some("Bearer wrong"), Some("s3cret"), Some("Bearer s3cre"), Some("Bearer ")] {
            let e = auth.call(with(bad)).expect_err("rejected");
            assert_eq!(e.code(), tonic::Code::Unauthenticated, "{bad:?}");
        }
    }
}
