//! `flood`: memory under a flood of maximum-size hostile requests. For each shape of request
//! (`shapes.rs`: proof requests, bodies of two messages, stalled uploads, millions of job ids,
//! small calls of the whole size; on the gRPC port, the HTTP port and gRPC-web) a fresh `snarkd`
//! is started, CONCURRENCY copies are sent at once, every one must be refused (and the daemon
//! must live), and the daemon's peak RSS above its idle RSS is reported as a multiple of the
//! bytes that were on the wire at once. A shape over [`LIMIT`] fails the run.

mod shapes;

// The hand-written gRPC client the daemon's own hostile-client tests use: one definition.
#[path = "../../../server/tests/common/raw_grpc.rs"]
#[allow(dead_code)]
mod raw_grpc;

use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::{bail, Result};
use bytesize::ByteSize;
use tonic::Code;

use crate::report::daemon::Daemon;
use shapes::{Port, Sent, Shape};

/// The most peak RSS above idle a shape may cost, per byte on the wire.
pub const LIMIT: f64 = 2.0;

#[derive(clap::Args)]
pub struct Options {
    /// Bytes of each request on the wire (at most 256 MiB, the message limit).
    #[arg(long, default_value = "255MiB")]
    pub size: ByteSize,
    /// Requests sent at once (the default `[limits] decoding_requests` is 16).
    #[arg(long, default_value_t = 4)]
    pub concurrency: usize,
    /// Only the shapes whose name contains this (e.g. `StreamStatus`, `gRPC-web`).
    #[arg(long)]
    pub only: Option<String>,
    /// The snarkd binary [default: beside snarkd-bench].
    #[arg(long)]
    pub snarkd: Option<PathBuf>,
}

pub fn flood(o: Options) -> Result<()> {
    let snarkd = Daemon::binary(o.snarkd.as_deref())?;
    let size = usize::try_from(o.size.as_u64())?;
    if size > snarkd_proto::MAX_MESSAGE_BYTES {
        bail!("--size {} is over the 256 MiB message limit", o.size);
    }
    if size < 64 << 10 {
        bail!(
            "--size {} is under 64 KiB, what the small calls take",
            o.size
        );
    }
    let runtime = tokio::runtime::Runtime::new()?;
    println!(
        "| request shape (codes) | wire bytes × concurrency | idle RSS | peak RSS | peak − idle | ÷ wire bytes |"
    );
    println!("|---|---|---|---|---|---|");
    let mut over = Vec::new();
    let shapes = shapes::all().into_iter();
    for shape in shapes.filter(|s| o.only.as_ref().is_none_or(|only| s.name.contains(only))) {
        let env: Vec<(&str, String)> = [("SNARKD_GPUS_BACKEND", "cpu")]
            .iter()
            .chain(shape.env)
            .map(|(k, v)| (*k, v.to_string()))
            .collect();
        let mut daemon = Daemon::start(&snarkd, &env)?;
        let idle = daemon.rss()?;
        let (wire, codes) = runtime.block_on(send(&daemon, &shape, size, o.concurrency))?;
        let peak = daemon.peak_rss()?;
        if !daemon.alive() {
            bail!("{}: the daemon died", shape.name);
        }
        if let Some(accepted) = codes.iter().position(|c| *c == Code::Ok) {
            bail!("{}: request {accepted} was accepted", shape.name);
        }
        daemon.stop()?;
        let grown = peak.saturating_sub(idle);
        let ratio = grown as f64 / (wire * o.concurrency as u64) as f64;
        let mut tally = std::collections::BTreeMap::<String, usize>::new();
        codes
            .iter()
            .for_each(|c| *tally.entry(format!("{c:?}")).or_default() += 1);
        let tally: Vec<String> = tally.iter().map(|(c, n)| format!("{c} ×{n}")).collect();
        println!(
            "| {} ({}) | {} × {} | {} | {} | {} | {ratio:.2}× |",
            shape.name,
            tally.join(", "),
            ByteSize::b(wire),
            o.concurrency,
            ByteSize::b(idle),
            ByteSize::b(peak),
            ByteSize::b(grown),
        );
        if ratio > LIMIT {
            over.push(format!("{} ({ratio:.2}×)", shape.name));
        }
    }
    if !over.is_empty() {
        bail!(
            "peak RSS above idle over {LIMIT}× the bytes on the wire: {}",
            over.join(", ")
        );
    }
    Ok(())
}

/// Sends `concurrency` copies of `shape` at once; the bytes of one copy on the wire and the code
/// each call ended with.
async fn send(
    daemon: &Daemon,
    shape: &Shape,
    size: usize,
    concurrency: usize,
) -> Result<(u64, Vec<Code>)> {
    let path = |method: &str| format!("/cuzk.v1.ProvingEngine/{method}");
    let mut calls = tokio::task::JoinSet::new();
    let wire = match &shape.sent {
        Sent::Submit(build) => {
            let request = build(size);
            let client = daemon.client().await?;
            for _ in 0..concurrency {
                let (mut client, request) = (client.clone(), request.clone());
                calls.spawn(async move {
                    let answer = client.submit_proof(request).await;
                    answer.err().map_or(Code::Ok, |s| s.code())
                });
            }
            prost::Message::encoded_len(&request)
        }
        Sent::Raw {
            port,
            method,
            body,
            then,
        } => {
            let addr: SocketAddr = match port {
                Port::Grpc => daemon.ready.grpc.parse()?,
                Port::Http => daemon.ready.http,
            };
            let (body, path, then) = (body(size), path(method), *then);
            for _ in 0..concurrency {
                let (body, path) = (body.clone(), path.clone());
                calls.spawn(
                    async move { raw_grpc::call(addr, &path, vec![body], then).await.code() },
                );
            }
            body.len()
        }
        Sent::Web { method, body } => {
            let (body, path, addr) = (body(size), path(method), daemon.ready.http);
            for _ in 0..concurrency {
                let (body, path) = (body.clone(), path.clone());
                calls.spawn(async move { raw_grpc::call_web(addr, &path, body).await.code() });
            }
            body.len()
        }
    };
    Ok((wire as u64, calls.join_all().await))
}
