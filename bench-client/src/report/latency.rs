//! Deadline latency: WinningPoSt or WindowPoSt proofs timed on an idle daemon, then while PoRep
//! jobs keep the CPU and the device worker busy.

use std::time::{Duration, Instant};

use anyhow::{bail, Result};
use snarkd_proto::v1 as pb;
use snarkd_prover::{ProofInput, ProofKind};

use super::daemon::Daemon;
use super::preload;
use crate::client::Client;
use crate::remote::{prove, request_id};
use crate::request::to_wire;
use crate::summary::Outcome;

/// Outcomes of `samples` deadline proofs at their kind's usual priority, idle and then while two
/// PoRep jobs run.
pub(super) async fn idle_and_loaded(
    d: &Daemon,
    (deadline, circuit): (&ProofInput, &str),
    porep: &ProofInput,
    samples: usize,
) -> Result<(Vec<Outcome>, Vec<Outcome>)> {
    let mut client = d.client().await?;
    preload(client.clone(), circuit).await?;
    preload(client.clone(), "porep-2k").await?;
    let mut idle = Vec::new();
    for i in 0..samples {
        idle.push(timed(client.clone(), deadline, circuit, i).await?);
    }
    let mut porep_jobs = Vec::new();
    keep_porep(&mut client, porep, 2, &mut porep_jobs).await?;
    // Measure only once PoRep partitions hold the CPU and the device worker.
    let started = Instant::now();
    loop {
        let s = client
            .get_status(pb::GetStatusRequest {})
            .await?
            .into_inner();
        if s.gpus.iter().any(|g| !g.current_job_id.is_empty())
            || started.elapsed() > Duration::from_secs(120)
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let mut loaded = Vec::new();
    for i in 0..samples {
        keep_porep(&mut client, porep, 2, &mut porep_jobs).await?;
        loaded.push(timed(client.clone(), deadline, circuit, 100 + i).await?);
    }
    for job_id in porep_jobs {
        client
            .cancel_proof(pb::CancelProofRequest { job_id })
            .await?;
    }
    Ok((idle, loaded))
}

/// One proof of `request` (at its kind's usual priority) through `Prove`: its client-side
/// latency and the daemon's account of where the time went.
pub(super) async fn timed(
    mut client: Client,
    request: &ProofInput,
    circuit: &str,
    i: usize,
) -> Result<Outcome> {
    let submit = to_wire(request, pb::Priority::Unspecified, request_id(i));
    let o = prove(&mut client, submit).await;
    if !o.completed() {
        bail!("{circuit} proof {}: {}", o.status, o.error);
    }
    Ok(o)
}

/// Submits PoRep jobs until `count` are unfinished, so every timed proof meets PoRep load.
async fn keep_porep(
    client: &mut Client,
    porep: &ProofInput,
    count: u32,
    jobs: &mut Vec<String>,
) -> Result<()> {
    let s = client
        .get_status(pb::GetStatusRequest {})
        .await?
        .into_inner();
    let unfinished: u32 = s
        .queues
        .iter()
        .filter(|q| q.proof_kind == ProofKind::PorepSealCommit.name())
        .map(|q| q.pending + q.in_progress)
        .sum();
    for _ in unfinished..count {
        let submit = to_wire(
            porep,
            pb::Priority::Unspecified,
            request_id(1000 + jobs.len()),
        );
        jobs.push(client.submit_proof(submit).await?.into_inner().job_id);
    }
    Ok(())
}
