//! What the unix socket's `:authority` fix (`serve/unix_authority.rs`) costs on the largest input
//! Curio sends: one 256 MiB request body over HTTP/2 on a unix socket, read to the end by hyper's
//! server, with the fix wrapped around the server's side of the connection and without it (a plain
//! socket), alternating. Each run reports its wall time and the CPU time the process spent (client
//! and server share it, so the difference is the fix's). The client is hyper's, which sends
//! `localhost` as grpc-go does.
//!
//! `cargo bench -p snarkd --bench unix_socket` (`SNARKD_BENCH_RUNS`, default 5 pairs;
//! `SNARKD_BENCH_MIB`, default 256).

use std::time::{Duration, Instant};

use bytes::Bytes;
use http::{Request, Response};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use snarkd::serve::AuthorityFix;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{UnixListener, UnixStream};

#[derive(Clone, Copy, Debug, PartialEq)]
enum Socket {
    Plain,
    WithFix,
}

fn env_number(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// CPU time (user + system) this process has used.
fn cpu_time() -> Duration {
    // SAFETY: getrusage writes one rusage struct, which we own.
    let usage = unsafe {
        let mut usage = std::mem::zeroed::<libc::rusage>();
        libc::getrusage(libc::RUSAGE_SELF, &mut usage);
        usage
    };
    let of = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    of(usage.ru_utime) + of(usage.ru_stime)
}

/// Serves one connection: every request's body is read to its end and its length answered.
async fn serve(io: impl AsyncRead + AsyncWrite + Unpin + Send + 'static) {
    let service = service_fn(|request: Request<Incoming>| async move {
        let mut body = request.into_body();
        let mut received = 0usize;
        while let Some(frame) = body.frame().await {
            if let Ok(data) = frame?.into_data() {
                received += data.len();
            }
        }
        Ok::<_, hyper::Error>(Response::new(Full::new(Bytes::from(received.to_string()))))
    });
    hyper::server::conn::http2::Builder::new(TokioExecutor::new())
        .serve_connection(TokioIo::new(io), service)
        .await
        .expect("the server's connection");
}

/// One request of `body` through a fresh connection; returns the wall and CPU time it took.
async fn one_run(
    listener: &UnixListener,
    path: &std::path::Path,
    socket: Socket,
    body: &Bytes,
) -> (Duration, Duration) {
    let (wall, cpu) = (Instant::now(), cpu_time());
    let client = UnixStream::connect(path);
    let (accepted, client) = tokio::join!(listener.accept(), client);
    let (server_side, _) = accepted.expect("accept");
    let server = match socket {
        Socket::Plain => tokio::spawn(serve(server_side)),
        Socket::WithFix => tokio::spawn(serve(AuthorityFix::new(server_side))),
    };
    let (mut sender, connection) = hyper::client::conn::http2::handshake(
        TokioExecutor::new(),
        TokioIo::new(client.expect("connect")),
    )
    .await
    .expect("handshake");
    let connection = tokio::spawn(connection);
    let request = Request::post("http://localhost/cuzk.v1.ProvingEngine/Prove")
        .header("content-type", "application/grpc")
        .body(Full::new(body.clone()))
        .expect("request");
    let response = sender.send_request(request).await.expect("response");
    let answer = response
        .into_body()
        .collect()
        .await
        .expect("answer")
        .to_bytes();
    assert_eq!(
        answer,
        body.len().to_string(),
        "the server read the whole body"
    );
    drop(sender);
    let _ = connection.await;
    let _ = server.await;
    (wall.elapsed(), cpu_time() - cpu)
}

fn median(mut values: Vec<Duration>) -> Duration {
    values.sort();
    values[values.len() / 2]
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let runs = env_number("SNARKD_BENCH_RUNS", 5).max(1);
    let mib = env_number("SNARKD_BENCH_MIB", 256).max(1);
    let body = Bytes::from(vec![0x5a; mib << 20]);
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("bench.sock");
    let listener = UnixListener::bind(&path).expect("bind");
    // One unmeasured run each warms the allocator and the page cache.
    for socket in [Socket::Plain, Socket::WithFix] {
        one_run(&listener, &path, socket, &body).await;
    }
    let mut times = [
        (Socket::Plain, vec![], vec![]),
        (Socket::WithFix, vec![], vec![]),
    ];
    for _ in 0..runs {
        for (socket, walls, cpus) in &mut times {
            let (wall, cpu) = one_run(&listener, &path, *socket, &body).await;
            println!("{socket:?}: {mib} MiB in {wall:.3?} wall, {cpu:.3?} CPU");
            walls.push(wall);
            cpus.push(cpu);
        }
    }
    let medians: Vec<(Socket, Duration, Duration)> = times
        .into_iter()
        .map(|(socket, walls, cpus)| (socket, median(walls), median(cpus)))
        .collect();
    println!("\nmedians of {runs} runs, {mib} MiB request body:");
    for (socket, wall, cpu) in &medians {
        let rate = mib as f64 / wall.as_secs_f64();
        println!("{socket:?}: {wall:.3?} wall ({rate:.0} MiB/s), {cpu:.3?} CPU");
    }
    let (plain, fix) = (&medians[0], &medians[1]);
    println!(
        "with the fix / plain: wall {:.3}, CPU {:.3}",
        fix.1.as_secs_f64() / plain.1.as_secs_f64(),
        fix.2.as_secs_f64() / plain.2.as_secs_f64()
    );
}
