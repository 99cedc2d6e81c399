//! `flood`: memory under a flood of maximum-size hostile requests. For each shape of request a
//! fresh `snarkd` is started, CONCURRENCY copies are sent at once, every one must be refused
//! (and the daemon must live), and the daemon's peak RSS above its idle RSS is reported as a
//! multiple of the bytes that were on the wire at once.

use std::path::PathBuf;

use anyhow::{bail, Result};
use bytesize::ByteSize;
use snarkd_proto::v1 as pb;

use crate::report::daemon::Daemon;

#[derive(clap::Args)]
pub struct Options {
    /// Bytes of each request on the wire (at most 256 MiB, the message limit).
    #[arg(long, default_value = "255MiB")]
    pub size: ByteSize,
    /// Requests sent at once (the default `[limits] decoding_requests` is 16).
    #[arg(long, default_value_t = 4)]
    pub concurrency: usize,
    /// The snarkd binary [default: beside snarkd-bench].
    #[arg(long)]
    pub snarkd: Option<PathBuf>,
}

/// A hostile request of about `size` bytes on the wire.
struct Shape {
    name: &'static str,
    build: fn(usize) -> pb::SubmitProofRequest,
}

const SHAPES: [Shape; 5] = [
    Shape {
        name: "one-byte vanilla_proofs entries",
        build: |size| pb::SubmitProofRequest {
            proof_kind: pb::ProofKind::WindowPostPartition as i32,
            // Each entry is a tag, a length and one byte.
            vanilla_proofs: vec![vec![1]; size / 3],
            ..Default::default()
        },
    },
    Shape {
        name: "2349 vanilla_proofs entries of garbage",
        build: |size| pb::SubmitProofRequest {
            proof_kind: pb::ProofKind::WindowPostPartition as i32,
            vanilla_proofs: vec![vec![0xa5; size / 2349 - 4]; 2349],
            randomness: vec![1; 32],
            ..Default::default()
        },
    },
    Shape {
        name: "one C1 output of JSON that is not one",
        build: |size| {
            let mut c1 = br#"{"registered_proof":"StackedDrg2KiBV1_1","x":""#.to_vec();
            c1.resize(size - 8, b'a');
            pb::SubmitProofRequest {
                proof_kind: pb::ProofKind::PorepSealCommit as i32,
                vanilla_proof: c1,
                ..Default::default()
            }
        },
    },
    Shape {
        name: "one C1 output of nested empty arrays",
        build: |size| {
            // JSON a C1 decoder takes, with a vector per three bytes (the proof type's variant
            // holds a list of lists of proofs).
            let mut c1 = br#"{"vanilla_proofs":{"StackedDrg2KiBV1":["#.to_vec();
            while c1.len() + 4 < size - 8 {
                c1.extend_from_slice(b"[],");
            }
            c1.extend_from_slice(b"[]]}}");
            pb::SubmitProofRequest {
                proof_kind: pb::ProofKind::PorepSealCommit as i32,
                vanilla_proof: c1,
                ..Default::default()
            }
        },
    },
    Shape {
        name: "a request_id of the whole size",
        build: |size| pb::SubmitProofRequest {
            request_id: "r".repeat(size - 8),
            proof_kind: pb::ProofKind::WinningPost as i32,
            ..Default::default()
        },
    },
];

pub fn flood(o: Options) -> Result<()> {
    let snarkd = Daemon::binary(o.snarkd.as_deref())?;
    let size = usize::try_from(o.size.as_u64())?;
    if size > snarkd_proto::MAX_MESSAGE_BYTES {
        bail!("--size {} is over the 256 MiB message limit", o.size);
    }
    let runtime = tokio::runtime::Runtime::new()?;
    println!(
        "| request shape | wire bytes × concurrency | idle RSS | peak RSS | peak − idle | ÷ wire bytes |"
    );
    println!("|---|---|---|---|---|---|");
    for shape in &SHAPES {
        let mut daemon = Daemon::start(&snarkd, &[("SNARKD_GPUS_BACKEND", "cpu".into())])?;
        let request = (shape.build)(size);
        let wire = prost::Message::encoded_len(&request) as u64;
        let idle = daemon.rss()?;
        let codes = runtime.block_on(async {
            let client = daemon.client().await?;
            let mut calls = tokio::task::JoinSet::new();
            for _ in 0..o.concurrency {
                let mut client = client.clone();
                let request = request.clone();
                calls.spawn(async move { client.submit_proof(request).await });
            }
            let results = calls.join_all().await;
            anyhow::Ok(
                results
                    .into_iter()
                    .map(|r| r.err().map(|s| s.code()))
                    .collect::<Vec<_>>(),
            )
        })?;
        drop(request);
        let peak = daemon.peak_rss()?;
        if !daemon.alive() {
            bail!("{}: the daemon died", shape.name);
        }
        if let Some(accepted) = codes.iter().position(Option::is_none) {
            bail!("{}: request {accepted} was accepted", shape.name);
        }
        daemon.stop()?;
        let grown = peak.saturating_sub(idle);
        let sent = wire * o.concurrency as u64;
        println!(
            "| {} ({:?}) | {} × {} | {} | {} | {} | {:.2}× |",
            shape.name,
            codes[0].expect("refused"),
            ByteSize::b(wire),
            o.concurrency,
            ByteSize::b(idle),
            ByteSize::b(peak),
            ByteSize::b(grown),
            grown as f64 / sent as f64
        );
    }
    Ok(())
}
