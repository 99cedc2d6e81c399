//! The client subcommands: one proof, a concurrent batch, status, preload and metrics, each
//! against a running daemon over gRPC.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use indicatif::{ProgressBar, ProgressStyle};
use serde_json::json;
use snarkd_proto::v1 as pb;
use snarkd_prover::ProofInput;
use tokio::sync::Semaphore;

use crate::client::{connect, Client};
use crate::inputs::Loaded;
use crate::request::to_wire;
use crate::results;
use crate::summary::{Outcome, Summary};
use crate::usage;

/// One `Prove` call; the outcome, whatever the daemon said, or the RPC error.
pub async fn prove(client: &mut Client, submit: pb::SubmitProofRequest) -> Outcome {
    let request_id = submit.request_id.clone();
    let t = Instant::now();
    let response = client
        .prove(pb::ProveRequest {
            submit: Some(submit),
        })
        .await;
    match response.map(|r| r.into_inner().result) {
        Ok(Some(result)) => Outcome::from_result(request_id, &result, t.elapsed()),
        Ok(None) => Outcome::rpc_error(request_id, "Prove returned no result".into(), t.elapsed()),
        Err(status) => Outcome::rpc_error(
            request_id,
            format!("{:?}: {}", status.code(), status.message()),
            t.elapsed(),
        ),
    }
}

/// A request id unique to this process and proof.
pub fn request_id(i: usize) -> String {
    format!("snarkd-bench-{}-{i}", uuid::Uuid::new_v4())
}

/// Proves one request, checks the proof here where the input allows and writes it to
/// `proof_out`; Ok(false) when it did not complete or did not verify.
pub async fn single(
    addr: &str,
    loaded: Loaded,
    proof_out: Option<&Path>,
    out: Option<&Path>,
    as_json: bool,
) -> Result<bool> {
    let Loaded {
        input: request,
        check,
        mut unchecked,
    } = loaded;
    let kind = request.kind();
    let mut client = connect(addr).await?;
    let submit = to_wire(&request, pb::Priority::Unspecified, request_id(0));
    // Where the job stands, on stderr, while the Prove waits (it never ends by itself).
    let id = submit.request_id.clone();
    let following = async {
        crate::progress::follow(addr, &id).await;
        std::future::pending::<()>().await
    };
    let outcome = tokio::select! {
        outcome = prove(&mut client, submit) => outcome,
        () = following => unreachable!("following never ends"),
    };
    if outcome.status == "RPC_ERROR" {
        bail!("Prove failed: {}", outcome.error);
    }
    // A proof that fails the check fails the command; one that cannot be checked here (no
    // verifying key at hand) is said so.
    let verified = match (&check, outcome.completed()) {
        (Some(check), true) => match tokio::task::block_in_place(|| check.verify(&outcome.proof)) {
            Ok(verified) => Some(verified),
            Err(e) => {
                unchecked = Some(format!("{e:#}"));
                None
            }
        },
        _ => None,
    };
    if let (Some(path), true) = (proof_out, outcome.completed()) {
        std::fs::write(path, &outcome.proof)
            .with_context(|| format!("writing the proof to {}", path.display()))?;
    }
    let verified_text = match (verified, &unchecked) {
        (Some(true), _) => "yes (filecoin-proofs-api)".to_string(),
        (Some(false), _) => "NO: filecoin-proofs-api rejects it".to_string(),
        (None, Some(why)) => format!("not checked here: {why}"),
        (None, None) => "not checked".to_string(),
    };
    let mut j = outcome.json();
    j["kind"] = json!(kind.as_str());
    j["verified"] = json!(verified);
    if let Some(why) = &unchecked {
        j["unchecked"] = json!(why);
    }
    if let Some(dir) = out {
        let daemon = results::daemon(&mut client).await?;
        results::write(
            dir,
            (kind.as_str(), "single"),
            std::slice::from_ref(&outcome),
            j.clone(),
            daemon,
        )?;
    }
    if as_json {
        println!("{j}");
    } else {
        println!(
            "kind        {}\n{}\nverified    {verified_text}",
            kind.as_str(),
            outcome.text()
        );
    }
    if !outcome.completed() {
        eprintln!(
            "error: the {} proof ended {}: {}",
            kind.as_str(),
            outcome.status,
            outcome.error
        );
    }
    if verified == Some(false) {
        eprintln!(
            "error: the returned {} proof does not verify",
            kind.as_str()
        );
    }
    Ok(outcome.completed() && verified != Some(false))
}

/// How many copies `batch` proves, how many at once, at which priority.
pub struct BatchRun {
    pub count: usize,
    pub concurrency: usize,
    pub priority: pb::Priority,
}

/// Proves `count` copies of a request, at most `concurrency` in flight; Ok(false) when
/// any did not complete.
pub async fn batch(
    addr: &str,
    request: &ProofInput,
    run: BatchRun,
    out: Option<&Path>,
    as_json: bool,
) -> Result<bool> {
    let BatchRun {
        count,
        concurrency,
        priority,
    } = run;
    let client = connect(addr).await?;
    let mut describe = client.clone();
    let summary = run_batch(client, request, count, concurrency, priority, true).await?;
    if let Some(dir) = out {
        let daemon = results::daemon(&mut describe).await?;
        results::write(
            dir,
            (&summary.kind, "batch"),
            &summary.outcomes,
            summary.json(),
            daemon,
        )?;
    }
    if as_json {
        println!("{}", summary.json());
    } else {
        println!("{}", summary.text());
    }
    if summary.failed() > 0 {
        eprintln!(
            "error: {} of {} proofs did not complete",
            summary.failed(),
            count
        );
    }
    Ok(summary.failed() == 0)
}

/// Proves `count` copies of `request` through `client`, at most `concurrency` in flight, while
/// following the status stream for the workers' busy share (and, with `progress`, saying where
/// the batch's jobs stand).
pub async fn run_batch(
    client: Client,
    request: &ProofInput,
    count: usize,
    concurrency: usize,
    priority: pb::Priority,
    progress: bool,
) -> Result<Summary> {
    if count == 0 || concurrency == 0 {
        bail!("--count and --concurrency must be at least 1");
    }
    let request = Arc::new(request.clone());
    let bar = if progress {
        ProgressBar::new(count as u64)
    } else {
        ProgressBar::hidden()
    };
    bar.set_style(
        ProgressStyle::with_template(
            "{spinner} [{elapsed_precise}] {bar:40} {pos}/{len} proofs ({per_sec}) {msg}",
        )
        .expect("progress template"),
    );
    bar.enable_steady_tick(Duration::from_millis(200));
    let (stop_following, stop) = tokio::sync::oneshot::channel();
    // The batch's request ids share a tag, so its jobs are told apart on the status stream.
    let tag = uuid::Uuid::new_v4();
    let prefix = format!("snarkd-bench-{tag}-");
    let mut said = progress.then(|| crate::progress::batch(&bar, prefix, Instant::now()));
    let following = tokio::spawn(usage::follow(client.clone(), stop, move |s| {
        if let Some(said) = said.as_mut() {
            said(s)
        }
    }));
    let slots = Arc::new(Semaphore::new(concurrency));
    let started = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..count {
        let permit = slots.clone().acquire_owned().await.expect("semaphore open");
        let (mut client, request, bar) = (client.clone(), request.clone(), bar.clone());
        tasks.spawn(async move {
            let id = format!("snarkd-bench-{tag}-{i}");
            let outcome = prove(&mut client, to_wire(&request, priority, id)).await;
            drop(permit);
            if !outcome.completed() {
                bar.println(format!(
                    "{} {}: {}",
                    outcome.request_id, outcome.status, outcome.error
                ));
            }
            bar.inc(1);
            outcome
        });
    }
    let mut outcomes = Vec::with_capacity(count);
    while let Some(joined) = tasks.join_next().await {
        outcomes.push(joined.context("a batch task panicked")?);
    }
    let wall = started.elapsed();
    bar.finish_and_clear();
    let _ = stop_following.send(());
    let usage = match following.await {
        Ok(Ok(usage)) => Some(usage),
        Ok(Err(e)) => {
            eprintln!("warning: no worker usage: {e:#}");
            None
        }
        Err(e) => {
            eprintln!("warning: no worker usage: {e}");
            None
        }
    };
    Ok(Summary {
        kind: request.kind().as_str().to_string(),
        concurrency,
        wall,
        outcomes,
        usage,
    })
}

fn mib(b: u64) -> f64 {
    b as f64 / (1u64 << 20) as f64
}

/// Prints GetStatus.
pub async fn status(addr: &str, as_json: bool) -> Result<()> {
    let s = connect(addr)
        .await?
        .get_status(pb::GetStatusRequest {})
        .await
        .context("GetStatus failed")?
        .into_inner();
    let tier = |t: i32| {
        pb::srs_status::Tier::try_from(t).map_or_else(|_| t.to_string(), |t| t.as_str_name().into())
    };
    if as_json {
        let j = json!({
            "uptime_seconds": s.uptime_seconds,
            "total_proofs_completed": s.total_proofs_completed,
            "total_proofs_failed": s.total_proofs_failed,
            "pinned_memory_bytes": s.pinned_memory_bytes,
            "pinned_memory_limit_bytes": s.pinned_memory_limit_bytes,
            "gpus": s.gpus.iter().map(|g| json!({
                "ordinal": g.ordinal, "name": g.name,
                "vram_total_bytes": g.vram_total_bytes, "vram_free_bytes": g.vram_free_bytes,
                "current_job_id": g.current_job_id, "current_proof_kind": g.current_proof_kind,
            })).collect::<Vec<_>>(),
            "loaded_srs": s.loaded_srs.iter().map(|p| json!({
                "circuit_id": p.circuit_id, "tier": tier(p.tier),
                "size_bytes": p.size_bytes, "ref_count": p.ref_count,
            })).collect::<Vec<_>>(),
            "queues": s.queues.iter().map(|q| json!({
                "proof_kind": q.proof_kind, "pending": q.pending, "in_progress": q.in_progress,
            })).collect::<Vec<_>>(),
        });
        println!("{j}");
        return Ok(());
    }
    println!("uptime      {} s", s.uptime_seconds);
    println!(
        "proofs      {} completed, {} failed",
        s.total_proofs_completed, s.total_proofs_failed
    );
    println!(
        "memory      {:.1} / {:.1} MiB",
        mib(s.pinned_memory_bytes),
        mib(s.pinned_memory_limit_bytes)
    );
    for g in &s.gpus {
        let job = if g.current_job_id.is_empty() {
            "idle".to_string()
        } else {
            format!("{} {}", g.current_proof_kind, g.current_job_id)
        };
        println!(
            "device {:<4} {} ({:.0}/{:.0} MiB free): {job}",
            g.ordinal,
            g.name,
            mib(g.vram_free_bytes),
            mib(g.vram_total_bytes)
        );
    }
    for p in &s.loaded_srs {
        println!(
            "params      {:<12} {:<5} {:>9.1} MiB  refs {}",
            p.circuit_id,
            tier(p.tier),
            mib(p.size_bytes),
            p.ref_count
        );
    }
    for q in &s.queues {
        println!(
            "queue       {:<12} {} pending, {} in progress",
            q.proof_kind, q.pending, q.in_progress
        );
    }
    Ok(())
}

/// Loads a circuit's parameters ahead of use.
pub async fn preload(addr: &str, circuit_id: &str) -> Result<()> {
    let r = connect(addr)
        .await?
        .preload_srs(pb::PreloadSrsRequest {
            circuit_id: circuit_id.to_string(),
        })
        .await
        .with_context(|| format!("PreloadSRS {circuit_id} failed"))?
        .into_inner();
    if r.already_loaded {
        println!("{circuit_id}: already loaded");
    } else {
        println!("{circuit_id}: loaded in {} ms", r.load_time_ms);
    }
    Ok(())
}

/// Prints the Prometheus text of GetMetrics.
pub async fn metrics(addr: &str) -> Result<()> {
    let text = connect(addr)
        .await?
        .get_metrics(pb::GetMetricsRequest {})
        .await
        .context("GetMetrics failed")?
        .into_inner()
        .prometheus_text;
    print!("{text}");
    Ok(())
}
