//! `snarkd health`: asks a running daemon's HTTP port for `GET /healthz` and exits 0 on 200,
//! 1 otherwise, saying what it got. Container healthchecks run it (the images carry no HTTP
//! client); it speaks just enough HTTP/1.1 for that one request.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::time::Duration;

use anyhow::{anyhow, bail, Context};

/// How long the connection and the answer may take.
const TIMEOUT: Duration = Duration::from_secs(5);

/// `GET /healthz` on `addr` (`host:port`); Ok when it answers 200.
pub fn check(addr: &str) -> anyhow::Result<()> {
    let target: SocketAddr = (addr.to_socket_addrs())
        .with_context(|| format!("{addr:?} is not host:port"))?
        .next()
        .ok_or_else(|| anyhow!("{addr:?} resolves to no address"))?;
    let mut stream = TcpStream::connect_timeout(&target, TIMEOUT)
        .with_context(|| format!("nothing answers on {target}: is snarkd running?"))?;
    stream.set_read_timeout(Some(TIMEOUT))?;
    stream.set_write_timeout(Some(TIMEOUT))?;
    write!(
        stream,
        "GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
    )?;
    let mut answer = Vec::new();
    // The status line is all that matters; a body past 4 KiB is not read.
    stream
        .take(4096)
        .read_to_end(&mut answer)
        .with_context(|| format!("reading the answer from {target}"))?;
    let text = String::from_utf8_lossy(&answer);
    let status = text.lines().next().unwrap_or_default();
    match status.split_whitespace().nth(1) {
        Some("200") => Ok(()),
        _ => bail!("GET /healthz on {target} answered {status:?}"),
    }
}
