//! Connection limits and timeouts against the real `sheetd serve`: idle sockets (raw TCP,
//! HTTP/2 after its handshake, half-sent headers) are closed, a connection limit holds, and a
//! connection with a call in flight (a Watch stream) is never cut for being idle.

#[path = "common/server.rs"]
mod server;

use server::Server;
use sheetd::grpc::proto as pb;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

/// Waits until the server closes `s` (EOF or reset) and returns how long that took.
fn closed_within(mut s: TcpStream, limit: Duration) -> Duration {
    s.set_read_timeout(Some(limit)).expect("timeout");
    let start = Instant::now();
    let mut buf = [0u8; 4096];
    loop {
        match s.read(&mut buf) {
            Ok(0) => return start.elapsed(),
            Ok(_) => continue, // the server's SETTINGS or GOAWAY
            Err(e)
                if e.kind() == std::io::ErrorKind::WouldBlock || e.kind() == std::io::ErrorKind::TimedOut =>
            {
                panic!("still open after {limit:?}")
            }
            Err(_) => return start.elapsed(),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_and_half_open_connections_are_closed() {
    let dir = tempfile::tempdir().expect("temp dir");
    let server = Server::start(
        &dir.path().join("data"),
        &["--handshake-timeout", "1", "--idle-timeout", "2", "--max-connections", "64"],
    );
    // Raw TCP that never says anything.
    let raw = TcpStream::connect(&server.addr).expect("connect");
    // HTTP/2 preface and half of a HEADERS frame.
    let mut half = TcpStream::connect(&server.addr).expect("connect");
    half.write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00\x00\x00\x40\x01\x04\x00\x00\x00\x01")
        .expect("write");
    let (a, b) = tokio::task::spawn_blocking(move || {
        (closed_within(raw, Duration::from_secs(10)), closed_within(half, Duration::from_secs(10)))
    })
    .await
    .expect("join");
    // Closed by the handshake timeout (1 s), not before; the upper bound only allows for a
    // busy machine.
    assert!(a >= Duration::from_millis(700) && a < Duration::from_secs(8), "raw TCP closed after {a:?}");
    assert!(b < Duration::from_secs(8), "half-sent headers closed after {b:?}");
    // The server still serves.
    server.client().await.ping(pb::PingRequest {}).await.expect("ping");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_connection_limit_holds_and_idle_http2_connections_free_their_slots() {
    let dir = tempfile::tempdir().expect("temp dir");
    let server = Server::start(
        &dir.path().join("data"),
        &["--max-connections", "3", "--handshake-timeout", "2", "--idle-timeout", "2"],
    );
    // Three HTTP/2 clients make a call each, then sit idle with their connections open.
    let mut idle = Vec::new();
    for _ in 0..3 {
        let mut c = server.client().await;
        c.ping(pb::PingRequest {}).await.expect("ping");
        idle.push(c);
    }
    // A fourth is refused while they hold every slot.
    let refused = match sheetd::cli::client::connect(&server.url, None, None).await {
        Err(_) => true,
        Ok(mut c) => c.ping(pb::PingRequest {}).await.is_err(),
    };
    assert!(refused, "a connection over the limit must be refused");
    // Past the idle timeout (2 s) their connections are closed and a new client gets in: asked
    // again until it does, for up to 15 s (a loaded machine runs the timer late, not never).
    tokio::time::sleep(Duration::from_millis(2000)).await;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
    loop {
        let got_in = match sheetd::cli::client::connect(&server.url, None, None).await {
            Ok(mut c) => c.ping(pb::PingRequest {}).await.is_ok(),
            Err(_) => false,
        };
        if got_in {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "no slot freed 17 s after the clients went idle");
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    assert!(server.log().contains("connection limit"), "{}", server.log());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watch_stream_is_a_call_in_flight_not_an_idle_connection() {
    let dir = tempfile::tempdir().expect("temp dir");
    let server = Server::start(
        &dir.path().join("data"),
        &["--handshake-timeout", "1", "--idle-timeout", "1", "--keepalive-interval", "1"],
    );
    let mut c = server.client().await;
    let (id, mut w) = server::new_watched_sheet(&mut c).await;
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let mut other = server.client().await;
    let add = r#"{"add_modifier": {"id": "m", "var": "AC", "type": "ADD", "value": "1"}}"#;
    other.apply(server::apply(&id, Some(0), server::ops(&[add]))).await.expect("apply");
    let ev = tokio::time::timeout(Duration::from_secs(5), w.message()).await.expect("in time").expect("ok");
    assert_eq!(ev.expect("an event").revision, 1);
}

/// Many idle sockets no longer lock every client out: with 256 file descriptors, 600 idle
/// sockets used to take them all for good. Now the server refuses what it cannot hold, closes
/// idle ones, and keeps descriptors for its clients and its store.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_idle_sockets_does_not_lock_clients_out() {
    let dir = tempfile::tempdir().expect("temp dir");
    let server = Server::start_with_open_files(
        &dir.path().join("data"),
        &["--max-connections", "100", "--handshake-timeout", "1"],
        256,
    );
    let mut flood = Vec::new();
    for _ in 0..600 {
        match TcpStream::connect(&server.addr) {
            Ok(s) => flood.push(s),
            Err(_) => break,
        }
    }
    // Within the handshake timeout every idle socket is closed; clients get in again.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let served = tokio::time::timeout(Duration::from_secs(5), async {
        let mut c = server.client().await;
        c.ping(pb::PingRequest {}).await.expect("served after the flood");
        c.create_sheet(pb::CreateSheetRequest::default()).await.expect("the store still works");
    })
    .await;
    assert!(served.is_ok(), "clients locked out by idle sockets");
    drop(flood);
}

/// `--max-streams` bounds the calls in flight on one connection: with two Watch streams open,
/// a third call on the same connection waits, and goes through when a stream ends.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_over_the_stream_limit_wait_for_one_to_end() {
    let dir = tempfile::tempdir().expect("temp dir");
    let server = Server::start(&dir.path().join("data"), &["--max-streams", "2"]);
    let mut c = server.client().await;
    let created = c.create_sheet(pb::CreateSheetRequest::default()).await.expect("create").into_inner();
    let id = created.sheet.expect("info").id;
    let watch = || pb::WatchRequest { sheet_id: id.clone(), variables: vec![], from_revision: None };
    let first = c.watch(watch()).await.expect("watch").into_inner();
    let second = c.watch(watch()).await.expect("watch").into_inner();
    // The same client (one connection) asks a third time: the call waits for a stream.
    let mut third = c.clone();
    let waiting = tokio::spawn(async move { third.ping(pb::PingRequest {}).await });
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert!(!waiting.is_finished(), "a third call in flight must wait while two streams are open");
    // Another connection is not held up.
    server.client().await.ping(pb::PingRequest {}).await.expect("another connection's call");
    drop(first);
    let done = tokio::time::timeout(Duration::from_secs(10), waiting)
        .await
        .expect("goes through once a stream ends");
    done.expect("joined").expect("ping");
    drop(second);
}
