//! systemd's readiness protocol (`sd_notify`), without libsystemd: when `NOTIFY_SOCKET` is set
//! (a `Type=notify` unit, `contrib/sheetd.service`), `sheetd serve` sends `READY=1` once it
//! listens and its rulesets and store are open, and `STOPPING=1` when shutdown begins. Without
//! the variable nothing is sent. A failure to notify is logged, never fatal.

use std::os::unix::net::UnixDatagram;

/// Sends `state` (`READY=1`, `STOPPING=1`) to the service manager, if one listens.
pub fn notify(state: &str) {
    let Some(path) = std::env::var_os("NOTIFY_SOCKET") else { return };
    if let Err(e) = send(&path, state) {
        tracing::warn!(error = %e, "cannot notify the service manager");
    }
}

fn send(path: &std::ffi::OsStr, state: &str) -> std::io::Result<()> {
    let socket = UnixDatagram::unbound()?;
    let bytes = std::os::unix::ffi::OsStrExt::as_bytes(path);
    // `@name` is a socket in the abstract namespace (Linux).
    if let Some(name) = bytes.strip_prefix(b"@") {
        #[cfg(target_os = "linux")]
        {
            use std::os::linux::net::SocketAddrExt;
            let addr = std::os::unix::net::SocketAddr::from_abstract_name(name)?;
            socket.send_to_addr(state.as_bytes(), &addr)?;
            return Ok(());
        }
        #[cfg(not(target_os = "linux"))]
        {
            let _ = name;
            return Err(std::io::Error::other("abstract sockets are Linux's"));
        }
    }
    socket.send_to(state.as_bytes(), path)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn ready_reaches_a_listening_socket() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("notify");
        let listener = std::os::unix::net::UnixDatagram::bind(&path).expect("bind");
        super::send(path.as_os_str(), "READY=1").expect("sent");
        let mut buf = [0u8; 64];
        let n = listener.recv(&mut buf).expect("received");
        assert_eq!(&buf[..n], b"READY=1");
    }
}
