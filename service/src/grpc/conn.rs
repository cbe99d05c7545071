//! Connections: how many may be open, and how long one may stay open doing nothing.
//!
//! - [`Admission`] hands each accepted TCP connection one of [`Limits::max_connections`] slots;
//!   a connection over the limit is closed at once (and logged), so idle sockets can never take
//!   every file descriptor.
//! - [`GuardedIo`] wraps the socket. It closes the connection when it has had no request for
//!   the handshake timeout since it was accepted (a raw TCP connection, a stalled TLS or HTTP/2
//!   handshake, headers never finished), or no call in flight for the idle timeout since its last
//!   call ended. It learns what is in flight from [`TrackLayer`], which counts each request until
//!   its response body ends (so a Watch stream counts for as long as it streams).
//! - HTTP/2 keepalive pings (set on the server builder) find peers that have gone away.
//!
//! [`Limits::max_connections`]: crate::engine::Limits::max_connections

use futures_util::task::AtomicWaker;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::{Instant, Sleep};

/// What one connection is doing, shared by its socket wrapper and its requests.
#[derive(Debug)]
pub struct ConnState {
    /// The client's address, for logs.
    pub peer: Option<std::net::SocketAddr>,
    start: Instant,
    in_flight: AtomicUsize,
    /// Milliseconds from `start` to the end of the last call; `u64::MAX` before any request.
    last_call_end: AtomicU64,
    /// Woken when the last call in flight ends, so the idle timer starts.
    reader: AtomicWaker,
}

impl ConnState {
    /// When the connection is to be closed if nothing happens; `None` while a call is in flight.
    fn deadline(&self, handshake: Duration, idle: Duration) -> Option<Instant> {
        if self.in_flight.load(Ordering::Acquire) > 0 {
            return None;
        }
        match self.last_call_end.load(Ordering::Acquire) {
            u64::MAX => Some(self.start + handshake),
            ms => Some(self.start + Duration::from_millis(ms) + idle),
        }
    }
}

/// The connection's state as request extension (tonic inserts the socket's connect info into
/// every request, also under TLS).
#[derive(Clone, Debug)]
pub struct ConnActivity(pub Arc<ConnState>);

/// Admits connections up to a limit.
#[derive(Clone)]
pub struct Admission {
    slots: Arc<Semaphore>,
    handshake: Duration,
    idle: Duration,
    vectored: bool,
}

impl Admission {
    /// `vectored`: whether sockets offer vectored writes (see [`GuardedIo::is_write_vectored`]).
    pub fn new(max_connections: usize, handshake: Duration, idle: Duration, vectored: bool) -> Admission {
        Admission { slots: Arc::new(Semaphore::new(max_connections)), handshake, idle, vectored }
    }

    /// The socket wrapped, or `None` (the socket is closed) when every slot is taken.
    pub fn admit(&self, tcp: TcpStream) -> Option<GuardedIo> {
        let Ok(slot) = self.slots.clone().try_acquire_owned() else {
            tracing::warn!(peer = ?tcp.peer_addr().ok(), "connection refused: the server is at its connection limit (--max-connections)");
            return None;
        };
        let state = Arc::new(ConnState {
            peer: tcp.peer_addr().ok(),
            start: Instant::now(),
            in_flight: AtomicUsize::new(0),
            last_call_end: AtomicU64::new(u64::MAX),
            reader: AtomicWaker::new(),
        });
        let timer = Box::pin(tokio::time::sleep_until(state.start + self.handshake));
        Some(GuardedIo {
            io: tcp,
            state,
            timer,
            handshake: self.handshake,
            idle: self.idle,
            vectored: self.vectored,
            _slot: slot,
        })
    }
}

/// A socket that times out when its connection does nothing (see the module docs).
pub struct GuardedIo {
    io: TcpStream,
    state: Arc<ConnState>,
    timer: Pin<Box<Sleep>>,
    handshake: Duration,
    idle: Duration,
    vectored: bool,
    _slot: OwnedSemaphorePermit,
}

impl tonic::transport::server::Connected for GuardedIo {
    type ConnectInfo = ConnActivity;
    fn connect_info(&self) -> ConnActivity {
        ConnActivity(self.state.clone())
    }
}

impl AsyncRead for GuardedIo {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if let Poll::Ready(r) = Pin::new(&mut this.io).poll_read(cx, buf) {
            return Poll::Ready(r);
        }
        this.state.reader.register(cx.waker());
        let Some(deadline) = this.state.deadline(this.handshake, this.idle) else { return Poll::Pending };
        if this.timer.deadline() != deadline {
            this.timer.as_mut().reset(deadline);
        }
        match this.timer.as_mut().poll(cx) {
            Poll::Ready(()) => {
                let what = if this.state.last_call_end.load(Ordering::Acquire) == u64::MAX {
                    "no request within the handshake timeout"
                } else {
                    "idle past the idle timeout"
                };
                tracing::debug!("closing a connection: {what}");
                Poll::Ready(Err(io::Error::new(io::ErrorKind::TimedOut, what)))
            }
            Poll::Pending => Poll::Pending,
        }
    }
}

impl AsyncWrite for GuardedIo {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_write(cx, buf)
    }
    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_flush(cx)
    }
    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_shutdown(cx)
    }
    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_write_vectored(cx, bufs)
    }
    /// `false` without TLS, so that HTTP/2 copies a reply of under 1 KiB into its write buffer
    /// with its trailers and sends the whole reply in one write. Over a vectored socket h2
    /// sends a data frame of 256 bytes or more from its own buffer and must flush it before it
    /// encodes the next frame: a unary reply's trailers then went out in a second write, which
    /// the client waits for (an Apply reply is a few hundred bytes). Under TLS the socket's
    /// writer is rustls, which writes its records together when the socket is vectored.
    fn is_write_vectored(&self) -> bool {
        self.vectored && self.io.is_write_vectored()
    }
}

/// One call in flight on a connection; ending it (dropping) may start the idle timer.
struct InFlight(Arc<ConnState>);

impl InFlight {
    fn start(state: Arc<ConnState>) -> InFlight {
        state.in_flight.fetch_add(1, Ordering::AcqRel);
        InFlight(state)
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        let ms = u64::try_from(self.0.start.elapsed().as_millis()).unwrap_or(u64::MAX - 1);
        self.0.last_call_end.store(ms, Ordering::Release);
        if self.0.in_flight.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.0.reader.wake();
        }
    }
}

/// Counts each request as in flight on its connection until its response body ends.
#[derive(Clone, Copy, Debug, Default)]
pub struct TrackLayer;

impl<S> tower::Layer<S> for TrackLayer {
    type Service = Track<S>;
    fn layer(&self, inner: S) -> Track<S> {
        Track { inner }
    }
}

#[derive(Clone, Debug)]
pub struct Track<S> {
    inner: S,
}

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

impl<S, B, R> tower::Service<http::Request<B>> for Track<S>
where
    S: tower::Service<http::Request<B>, Response = http::Response<R>>,
    S::Future: Send + 'static,
    S::Error: Send + 'static,
    R: http_body::Body + Unpin + Send + 'static,
{
    type Response = http::Response<TrackedBody<R>>;
    type Error = S::Error;
    type Future = BoxFuture<Result<Self::Response, S::Error>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: http::Request<B>) -> Self::Future {
        let guard = req.extensions().get::<ConnActivity>().map(|c| InFlight::start(c.0.clone()));
        let fut = self.inner.call(req);
        Box::pin(async move {
            let response = fut.await?;
            Ok(response.map(|inner| TrackedBody { inner, _guard: guard }))
        })
    }
}

/// A response body that keeps its call in flight until it is dropped.
pub struct TrackedBody<B> {
    inner: B,
    _guard: Option<InFlight>,
}

impl<B: http_body::Body + Unpin> http_body::Body for TrackedBody<B> {
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Self::Data>, Self::Error>>> {
        Pin::new(&mut self.get_mut().inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}
