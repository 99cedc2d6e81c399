//! `durability`: what the job journal costs. The same runs against a daemon with the journal and
//! one without it (`[jobs] journal = false`), alternated (off, on, on, off) so drift on a busy
//! machine falls on both sides: SubmitProof latency (p50, p99) of 2 KiB WindowPoSt requests
//! sent at a fixed concurrency (each job cancelled once accepted, so the run measures intake,
//! not proving), and the throughput of a batch of real proofs. Then the journal's recovery:
//! `queued` jobs accepted, the daemon killed with SIGKILL, and the time until the restarted
//! daemon serves them all again.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use snarkd_proto::v1 as pb;
use snarkd_prover::{ProofInput, ProofKind};
use tokio::sync::Semaphore;

use crate::remote::{request_id, run_batch};
use crate::report::daemon::Daemon;
use crate::request::to_wire;
use crate::summary::percentile;

#[derive(clap::Args)]
pub struct Options {
    #[command(flatten)]
    pub inputs: crate::local::RealInputs,
    /// SubmitProof calls timed per run.
    #[arg(long, default_value_t = 200)]
    pub submits: usize,
    /// Calls in flight in the submit and throughput runs.
    #[arg(long, default_value_t = 4)]
    pub concurrency: usize,
    /// Real proofs in each throughput run.
    #[arg(long, default_value_t = 16)]
    pub proofs: usize,
    /// Jobs in the journal when the daemon is killed, for the recovery time.
    #[arg(long, default_value_t = 1000)]
    pub queued: usize,
    /// The snarkd binary [default: beside snarkd-bench].
    #[arg(long)]
    pub snarkd: Option<PathBuf>,
}

/// One run's figures.
#[derive(Default, Clone, Copy)]
struct Run {
    p50_ms: f64,
    p99_ms: f64,
    proofs_per_min: f64,
}

pub fn durability(o: Options) -> Result<()> {
    let snarkd = Daemon::binary(o.snarkd.as_deref())?;
    let (fixtures, _tmp) = o.inputs.read()?;
    let wpost = fixtures.request(ProofKind::WindowPost);
    let runtime = tokio::runtime::Runtime::new()?;
    let env = |journal: bool| {
        vec![
            (
                "SNARKD_PARAMS_DIR",
                o.inputs.params_dir.display().to_string(),
            ),
            ("SNARKD_GPUS_BACKEND", "cpu".to_string()),
            ("SNARKD_JOBS_JOURNAL", journal.to_string()),
            (
                "SNARKD_LIMITS_QUEUED_JOBS",
                (2 * o.queued.max(o.submits)).to_string(),
            ),
        ]
    };
    let mut runs: [Vec<Run>; 2] = [Vec::new(), Vec::new()];
    for journal in [false, true, true, false] {
        eprintln!(
            "journal {}: {} submits, {} proofs",
            on_off(journal),
            o.submits,
            o.proofs
        );
        let daemon = Daemon::start(&snarkd, &env(journal))?;
        let run = runtime.block_on(measure(&daemon, &wpost, &o))?;
        daemon.stop()?;
        runs[usize::from(journal)].push(run);
    }
    let mean =
        |runs: &[Run], f: fn(&Run) -> f64| runs.iter().map(f).sum::<f64>() / runs.len() as f64;
    println!("| figure | journal off | journal on | on ÷ off |");
    println!("|---|---|---|---|");
    type Figure = (&'static str, fn(&Run) -> f64);
    let figures: [Figure; 3] = [
        ("SubmitProof p50 (ms)", |r| r.p50_ms),
        ("SubmitProof p99 (ms)", |r| r.p99_ms),
        ("throughput (proofs/min)", |r| r.proofs_per_min),
    ];
    for (name, f) in figures {
        let (off, on) = (mean(&runs[0], f), mean(&runs[1], f));
        println!("| {name} | {off:.1} | {on:.1} | {:.3} |", on / off);
    }

    eprintln!("recovery: {} jobs accepted, then SIGKILL", o.queued);
    let jobs = tempfile::tempdir()?;
    let mut recovery_env = env(true);
    recovery_env.push(("SNARKD_JOBS_DIR", jobs.path().display().to_string()));
    let daemon = Daemon::start(&snarkd, &recovery_env)?;
    let accepted = runtime.block_on(submit_all(&daemon, &wpost, o.queued, 8, false))?;
    daemon.kill()?;
    let started = Instant::now();
    let daemon = Daemon::start(&snarkd, &recovery_env)?;
    let serving = started.elapsed();
    let recovered = daemon
        .startup_event("job journal recovered")
        .context("the restarted daemon logged no recovery")?;
    let planned = daemon.wait_for_event(
        "recovery planned the journal's jobs again",
        Duration::from_secs(600),
    )?;
    daemon.kill()?;
    let jobs_back = recovered["jobs"].as_u64().unwrap_or(0);
    println!(
        "| recovery of {} accepted jobs | {jobs_back} read back in {} ms, serving {} ms after the restart | every input read and job planned again {} ms later, in the background while it served |",
        accepted.len(),
        recovered["ms"],
        serving.as_millis(),
        planned["ms"],
    );
    if (jobs_back as usize) + 8 < accepted.len() {
        bail!(
            "only {jobs_back} of {} accepted jobs came back",
            accepted.len()
        );
    }
    Ok(())
}

fn on_off(journal: bool) -> &'static str {
    if journal {
        "on"
    } else {
        "off"
    }
}

/// Submit latency (every job cancelled once accepted), then the throughput of real proofs.
async fn measure(daemon: &Daemon, request: &ProofInput, o: &Options) -> Result<Run> {
    let client = daemon.client().await?;
    let mut latencies: Vec<f64> = submit_all(daemon, request, o.submits, o.concurrency, true)
        .await?
        .into_iter()
        .map(|(_, latency)| latency.as_secs_f64() * 1e3)
        .collect();
    latencies.sort_by(f64::total_cmp);
    let summary = run_batch(
        client,
        request,
        o.proofs,
        o.concurrency,
        pb::Priority::Unspecified,
        false,
    )
    .await?;
    if summary.failed() > 0 {
        bail!("{} proofs failed", summary.failed());
    }
    Ok(Run {
        p50_ms: percentile(&latencies, 50.0).unwrap_or(0.0),
        p99_ms: percentile(&latencies, 99.0).unwrap_or(0.0),
        proofs_per_min: summary.proofs_per_min(),
    })
}

/// Submits `count` copies of `request` (each its own request id), `concurrency` at a time,
/// cancelling each once accepted when `cancel`; returns the job ids and SubmitProof latencies.
async fn submit_all(
    daemon: &Daemon,
    request: &ProofInput,
    count: usize,
    concurrency: usize,
    cancel: bool,
) -> Result<Vec<(String, Duration)>> {
    let client = daemon.client().await?;
    let slots = Arc::new(Semaphore::new(concurrency));
    let mut calls = tokio::task::JoinSet::new();
    for i in 0..count {
        let mut client = client.clone();
        let submit = to_wire(request, pb::Priority::Unspecified, request_id(i));
        let slot = slots.clone().acquire_owned().await?;
        calls.spawn(async move {
            let t = Instant::now();
            let job_id = client.submit_proof(submit).await?.into_inner().job_id;
            let latency = t.elapsed();
            drop(slot);
            if cancel {
                let job_id = job_id.clone();
                client
                    .cancel_proof(pb::CancelProofRequest { job_id })
                    .await?;
            }
            anyhow::Ok((job_id, latency))
        });
    }
    calls.join_all().await.into_iter().collect()
}
