//! Readiness as a protocol, for tools and tests that start snarkd themselves. `snarkd run
//! --ready-file FILE` writes FILE (JSON: pid, gRPC and HTTP addresses as bound, so a port of 0
//! becomes the one the OS chose) once both servers serve, and removes it when it stops. A
//! starter waits for the file with [`wait`], which then checks `/healthz` on the HTTP address
//! it names; nobody reads the log to learn that the daemon is up.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

/// What the ready file says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ready {
    pub pid: u32,
    /// `host:port`, or `unix:///path.sock`.
    pub grpc: String,
    pub http: SocketAddr,
}

impl Ready {
    /// The gRPC address as a URL a client connects to (`http://host:port`), None for a unix
    /// socket.
    pub fn grpc_url(&self) -> Option<String> {
        (!self.grpc.starts_with("unix://")).then(|| format!("http://{}", self.grpc))
    }

    /// Writes `path` whole or not at all (a temporary file renamed over it), so a reader never
    /// sees half of it.
    pub fn write(&self, path: &Path) -> Result<()> {
        let tmp = path.with_extension("tmp");
        std::fs::write(&tmp, serde_json::to_vec(self)?)
            .and_then(|()| std::fs::rename(&tmp, path))
            .with_context(|| format!("writing the ready file {}", path.display()))
    }
}

/// `binary run` on loopback ports the OS picks, writing its ready file to `ready_file`, with JSON
/// logs (for the starter to read, if it wants them). The caller adds settings and spawns it.
pub fn command(binary: &Path, ready_file: &Path) -> Command {
    let mut command = Command::new(binary);
    command
        .args([
            "run",
            "--listen",
            "127.0.0.1:0",
            "--http-listen",
            "127.0.0.1:0",
        ])
        .arg("--ready-file")
        .arg(ready_file)
        .env("SNARKD_LOGGING_FORMAT", "json");
    command
}

/// Waits until `child` has written `path` and answers `/healthz` with 200; fails when it exits
/// first or `timeout` passes.
pub fn wait(child: &mut Child, path: &Path, timeout: Duration) -> Result<Ready> {
    let deadline = Instant::now() + timeout;
    let ready = loop {
        if let Ok(text) = std::fs::read(path) {
            break serde_json::from_slice::<Ready>(&text)
                .with_context(|| format!("reading the ready file {}", path.display()))?;
        }
        check_running(child, deadline, "writing its ready file")?;
        std::thread::sleep(Duration::from_millis(20));
    };
    while healthz(ready.http) != Some(200) {
        check_running(child, deadline, "answering /healthz")?;
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(ready)
}

fn check_running(child: &mut Child, deadline: Instant, what: &str) -> Result<()> {
    if let Some(status) = child.try_wait()? {
        bail!("snarkd exited with {status} before {what}");
    }
    if Instant::now() > deadline {
        bail!("snarkd did not finish {what} in time");
    }
    Ok(())
}

/// The status code of `GET /healthz`, None when there is no answer.
fn healthz(http: SocketAddr) -> Option<u16> {
    let mut conn = TcpStream::connect_timeout(&http, Duration::from_secs(2)).ok()?;
    conn.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
    write!(
        conn,
        "GET /healthz HTTP/1.1\r\nHost: {http}\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut head = [0u8; 12];
    conn.read_exact(&mut head).ok()?;
    // "HTTP/1.1 200"
    std::str::from_utf8(&head[9..12]).ok()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ready_file_round_trips_and_names_a_url_only_for_tcp() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ready.json");
        let ready = Ready {
            pid: 7,
            grpc: "127.0.0.1:4000".into(),
            http: "127.0.0.1:4001".parse().unwrap(),
        };
        ready.write(&path).unwrap();
        let read: Ready = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        assert_eq!(read, ready);
        assert_eq!(read.grpc_url().as_deref(), Some("http://127.0.0.1:4000"));
        let unix = Ready {
            grpc: "unix:///run/snarkd.sock".into(),
            ..ready
        };
        assert_eq!(unix.grpc_url(), None);
    }

    #[test]
    fn waiting_fails_when_the_process_exits_without_a_ready_file() {
        let dir = tempfile::tempdir().unwrap();
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let err = wait(
            &mut child,
            &dir.path().join("never"),
            Duration::from_secs(30),
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("exited"), "{err}");
    }
}
