//! gRPC calls written byte by byte, as no generated client would send them: bodies that stall,
//! hold two messages or announce 256 MiB. Over HTTP/2 (either port) or gRPC-web (the HTTP
//! port), each on a connection of its own.

use std::convert::Infallible;
use std::net::SocketAddr;

use bytes::Bytes;
use futures::{stream, StreamExt};
use http_body_util::{BodyExt, StreamBody};
use hyper::body::Frame;
use hyper_util::rt::{TokioExecutor, TokioIo};
use tonic::{Code, Status};

/// How a body ends after its chunks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Then {
    End,
    /// Never: the client stops sending but keeps the stream open.
    Stall,
}

/// A gRPC frame (flag, big-endian length, message) announcing `len` bytes, with `message`.
pub fn frame_announcing(len: u32, message: &[u8]) -> Vec<u8> {
    let mut out = vec![0];
    out.extend(len.to_be_bytes());
    out.extend_from_slice(message);
    out
}

/// Calls `path` (e.g. `/cuzk.v1.ProvingEngine/GetStatus`) at `addr` over HTTP/2 with `chunks` as
/// the body; the status the call ended with.
pub async fn call(addr: SocketAddr, path: &str, chunks: Vec<Vec<u8>>, then: Then) -> Status {
    let tcp = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let (mut sender, connection) =
        hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(tcp))
            .await
            .expect("HTTP/2 handshake");
    tokio::spawn(connection);
    let data = stream::iter(chunks)
        .map(|c| Ok::<_, Infallible>(Frame::data(Bytes::from(c))))
        .chain(stalling(then));
    let request = http::Request::post(format!("http://{addr}{path}"))
        .header("content-type", "application/grpc")
        .header("te", "trailers")
        .body(StreamBody::new(data).boxed_unsync())
        .expect("request");
    let response = sender.send_request(request).await.expect("response");
    if let Some(status) = Status::from_header_map(response.headers()) {
        return status;
    }
    let collected = response.into_body().collect().await.expect("response body");
    let trailers = collected.trailers().cloned().unwrap_or_default();
    Status::from_header_map(&trailers).unwrap_or_else(|| Status::unknown("no grpc-status"))
}

fn stalling(then: Then) -> stream::BoxStream<'static, Result<Frame<Bytes>, Infallible>> {
    match then {
        Then::End => stream::empty().boxed(),
        Then::Stall => stream::pending().boxed(),
    }
}

/// Calls `path` on the HTTP port over gRPC-web (HTTP/1.1) with `body`; the status it ended with
/// (from the headers of a trailers-only answer, else from the trailer frame). Written on a bare
/// TCP connection, reading while it writes: a call refused before its body is read is answered
/// and the connection closed while the body is still being sent, so the client's write fails
/// (broken pipe) and an HTTP client would lose the answer it was already given.
pub async fn call_web(addr: SocketAddr, path: &str, body: Vec<u8>) -> Status {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let (mut rd, mut wr) = stream.into_split();
    let head = format!(
        "POST {path} HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/grpc-web+proto\r\n\
         x-grpc-web: 1\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
        body.len()
    );
    let writer = tokio::spawn(async move {
        // The server may close before it has all of it: that is the case under test.
        let _ = wr.write_all(head.as_bytes()).await;
        let _ = wr.write_all(&body).await;
        // Not closed from this side until the answer is read (the task is aborted then): hyper
        // closes a connection whose client half-closes, answer or not.
        let _open = wr;
        std::future::pending::<()>().await
    });
    let mut response = Vec::new();
    let mut chunk = vec![0u8; 64 << 10];
    let ended = loop {
        match rd.read(&mut chunk).await {
            Ok(0) => break None,
            Err(e) => break Some(e),
            Ok(n) => response.extend_from_slice(&chunk[..n]),
        }
    };
    writer.abort();
    let text = String::from_utf8_lossy(&response).to_lowercase();
    assert!(
        text.starts_with("http/1.1 "),
        "no HTTP answer: {text:?} (the read ended with {ended:?})"
    );
    let code = text
        .split("grpc-status:")
        .nth(1)
        .and_then(|rest| rest.trim().split(|c: char| !c.is_ascii_digit()).next())
        .and_then(|n| n.parse::<i32>().ok())
        .map_or(Code::Unknown, Code::from);
    Status::new(code, text)
}
