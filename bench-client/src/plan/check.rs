//! `plan --check`: the simulation against reality on this machine at 2 KiB. The cost table is
//! measured here (`measure.rs`), a real daemon runs a PoRep + WindowPoSt + WinningPoSt mix, and
//! the simulation runs the same arrivals on this box with that table; PoRep's throughput and
//! each deadline kind's median latency, predicted against measured, must agree within 15 %.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result};
use bytesize::ByteSize;
use serde_json::json;
use snarkd_engine::sim::{simulate, Workload};
use snarkd_proto::v1 as pb;
use snarkd_prover::{ProofInput, ProofKind};
use tokio::time::{sleep_until, timeout_at, Instant};

use super::table::{self, BoxFile, Built};
use super::workload;
use crate::remote::{prove, request_id};
use crate::report::daemon::Daemon;
use crate::request::to_wire;

/// How far a prediction may be from the measurement.
const TOLERANCE: f64 = 0.15;
/// The check's daemons' budget: far above what 2 KiB proofs reserve, so memory never limits.
const BUDGET: &str = "8GiB";

/// `plan --check`'s settings.
#[derive(clap::Args)]
pub struct Options {
    /// With --check: the directory of the 2 KiB parameters.
    #[arg(long)]
    pub params_dir: Option<PathBuf>,
    /// With --check: fixtures written by `gen`; a 2 KiB sector is sealed when omitted.
    #[arg(long)]
    pub fixtures: Option<PathBuf>,
    /// With --check: the snarkd binary [default: beside snarkd-bench].
    #[arg(long)]
    pub snarkd: Option<PathBuf>,
    /// With --check: how long the real mix runs.
    #[arg(long, default_value = "420s", value_parser = humantime::parse_duration)]
    pub mix_duration: Duration,
    /// With --check: the mix's start left out of its figures.
    #[arg(long, default_value = "60s", value_parser = humantime::parse_duration)]
    pub mix_warmup: Duration,
    /// With --check: PoRep jobs kept in flight in the mix.
    #[arg(long, default_value_t = 2)]
    pub mix_porep: u32,
    /// With --check: mean gaps of the deadline arrivals.
    #[arg(long, value_delimiter = ',', default_value = "wpost=20s,winning=15s")]
    pub mix_every: Vec<String>,
    /// With --check: proofs of each kind timed alone per core count for the cost table.
    #[arg(long, default_value_t = 3)]
    pub samples: usize,
}

/// A proof of the real run, in seconds from its start; `ended` is none for one still running
/// at the end.
struct Proof {
    kind: ProofKind,
    arrived: f64,
    ended: Option<f64>,
    completed: bool,
}

/// Proofs an hour over the window `[warmup, end]`: those completed in it (their latencies
/// given), and each still running at the end (arrived at the times given) by its share of a
/// mean proof, at most 0.99, so that the figure does not move in steps of a whole proof. The
/// same reckoning for the prediction and the measurement.
fn rate(latencies: &[f64], running: &[f64], warmup: f64, end: f64) -> f64 {
    let mean = latencies.iter().sum::<f64>() / latencies.len().max(1) as f64;
    let partial: f64 = (running.iter())
        .map(|arrived| {
            if mean > 0.0 {
                ((end - arrived.max(warmup)) / mean).min(0.99)
            } else {
                0.0
            }
        })
        .sum();
    (latencies.len() as f64 + partial) * 3600.0 / (end - warmup)
}

pub fn check(o: &Options, seed: u64, out: Option<&Path>) -> Result<bool> {
    let params_dir = o
        .params_dir
        .clone()
        .context("--check needs --params-dir (2 KiB parameters)")?;
    let snarkd = Daemon::binary(o.snarkd.as_deref())?;
    let (fixtures, _tmp) = crate::local::read_or_seal(o.fixtures.as_deref())?;
    let every = workload::pairs(&o.mix_every, |v| Ok(humantime::parse_duration(v)?))?;
    let in_flight = vec![(ProofKind::PorepSealCommit, o.mix_porep)];
    let mut kinds: Vec<ProofKind> = every.iter().map(|(k, _)| *k).collect();
    kinds.push(ProofKind::PorepSealCommit);
    kinds.sort();
    kinds.dedup();
    let requests: Vec<(ProofKind, ProofInput)> = kinds
        .iter()
        .map(|k| (*k, fixtures.request(*k).clone()))
        .collect();
    let env = vec![
        ("SNARKD_PARAMS_DIR", params_dir.display().to_string()),
        ("SNARKD_MEMORY_BUDGET", BUDGET.to_string()),
        ("SNARKD_GPUS_BACKEND", "cpu".to_string()),
        ("SNARKD_DAEMON_RETENTION", "10m".to_string()),
    ];
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let core_counts: Vec<usize> = if cores > 1 { vec![1, cores] } else { vec![1] };
    let workload = Workload {
        duration: o.mix_duration,
        warmup: o.mix_warmup,
        arrivals: workload::arrivals(&every, o.mix_duration, seed),
        in_flight: in_flight.clone(),
        sample_every: Duration::from_secs(5),
    };
    let runtime = tokio::runtime::Runtime::new()?;
    let (costs, measured, baseline) = runtime.block_on(async {
        eprintln!(
            "measuring the cost table ({} proofs a kind on {core_counts:?} CPUs)",
            o.samples
        );
        let costs = super::measure::costs(
            &snarkd,
            &env,
            &requests,
            &params_dir,
            &core_counts,
            o.samples,
        )
        .await?;
        eprintln!(
            "running the mix for {}",
            humantime::format_duration(o.mix_duration)
        );
        let d = Daemon::start(&snarkd, &env)?;
        let baseline = d.rss()?;
        let measured = real_mix(&d, &requests, &workload).await?;
        d.stop()?;
        anyhow::Ok((costs, measured, baseline))
    })?;
    let machine = BoxFile {
        name: format!("this machine ({cores} cores), the CPU backend"),
        cores: cores as u32,
        memory: ByteSize(0),
        budget: Some(BUDGET.parse().map_err(|e| anyhow::anyhow!("{e}"))?),
        gpus: 0,
        gpu: None,
        gpu_memory: None,
        baseline: ByteSize(baseline),
        baseline_source: "the mix daemon's resident memory once it served".into(),
        published: Default::default(),
        published_source: None,
    };
    let Built::Setup(setup) = table::setup(&machine, None, &Default::default(), &costs, &kinds)?
    else {
        anyhow::bail!("the measured table lacks a figure");
    };
    let started = std::time::Instant::now();
    let predicted = simulate(&setup, &workload);
    let simulated_in_s = started.elapsed().as_secs_f64();

    let (warmup, end) = (o.mix_warmup.as_secs_f64(), o.mix_duration.as_secs_f64());
    let in_window = |kind: Option<ProofKind>| -> Vec<f64> {
        let wanted = |k: ProofKind| kind.map_or(k != ProofKind::PorepSealCommit, |kind| k == kind);
        let mut v: Vec<f64> = (measured.iter())
            .filter(|p| p.completed && wanted(p.kind))
            .filter_map(|p| p.ended.filter(|e| *e >= warmup).map(|e| e - p.arrived))
            .collect();
        v.sort_by(f64::total_cmp);
        v
    };
    let porep = ProofKind::PorepSealCommit;
    let running: Vec<f64> = (measured.iter())
        .filter(|p| p.kind == porep && p.ended.is_none())
        .map(|p| p.arrived)
        .collect();
    let measured_porep = rate(&in_window(Some(porep)), &running, warmup, end);
    let predicted_running: Vec<f64> = (predicted.unfinished.iter())
        .filter(|(k, _)| *k == porep)
        .map(|(_, arrived)| *arrived)
        .collect();
    let predicted_latencies = predicted
        .kind(porep)
        .map_or(&[][..], |k| &k.latencies_s[..]);
    let predicted_porep = rate(predicted_latencies, &predicted_running, warmup, end);
    let measured_p50 = snarkd_engine::sim::percentile(&in_window(None), 0.5).unwrap_or(0.0);
    let mut predicted_deadline: Vec<f64> = (predicted.kinds.iter())
        .filter(|k| k.kind != ProofKind::PorepSealCommit)
        .flat_map(|k| k.latencies_s.iter().copied())
        .collect();
    predicted_deadline.sort_by(f64::total_cmp);
    let predicted_p50 = snarkd_engine::sim::percentile(&predicted_deadline, 0.5).unwrap_or(0.0);
    let compare = |predicted: f64, measured: f64| {
        let ratio = if measured > 0.0 {
            predicted / measured
        } else {
            f64::INFINITY
        };
        json!({"predicted": predicted, "measured": measured, "ratio": ratio,
               "within": (ratio - 1.0).abs() <= TOLERANCE})
    };
    let throughput = compare(predicted_porep, measured_porep);
    let deadline = compare(predicted_p50, measured_p50);
    let mut per_kind = serde_json::Map::new();
    for kind in &kinds {
        if *kind == ProofKind::PorepSealCommit {
            continue;
        }
        let p = predicted
            .kind(*kind)
            .and_then(|k| k.latency_p50_s)
            .unwrap_or(0.0);
        let m = snarkd_engine::sim::percentile(&in_window(Some(*kind)), 0.5).unwrap_or(0.0);
        per_kind.insert(format!("{}_p50_s", kind.as_str()), compare(p, m));
    }
    // Each deadline kind's median on its own: the median of the two kinds pooled falls between
    // two clusters (WindowPoSt's and WinningPoSt's latencies) and jumps with one proof.
    let ok = throughput["within"] == true && per_kind.values().all(|c| c["within"] == true);
    let result = json!({
        "check": "2KiB mix: PoRep in flight, WindowPoSt and WinningPoSt arriving",
        "machine_cores": cores,
        "mix_s": end,
        "warmup_s": warmup,
        "seed": seed,
        "porep_per_hour": throughput,
        "deadline_p50_s_pooled": deadline,
        "by_kind": per_kind,
        "tolerance": TOLERANCE,
        "simulated_in_s": simulated_in_s,
        "ok": ok,
    });
    println!("{result}");
    if let Some(dir) = out {
        std::fs::create_dir_all(dir)?;
        std::fs::write(dir.join("check.json"), format!("{result}\n"))?;
        std::fs::write(dir.join("costs-2k.toml"), toml::to_string(&costs)?)?;
        std::fs::write(dir.join("box-here.toml"), toml::to_string(&machine)?)?;
    }
    Ok(ok)
}

/// Runs `workload` on the daemon: its kinds in flight as lanes, one proof after another, and
/// its arrivals at their times; every proof sent, ended by the end or not.
async fn real_mix(
    d: &Daemon,
    requests: &[(ProofKind, ProofInput)],
    workload: &Workload,
) -> Result<Vec<Proof>> {
    let client = d.client().await?;
    for (kind, _) in requests {
        crate::report::preload(client.clone(), &format!("{}-2k", kind.as_str())).await?;
    }
    let request = |kind: ProofKind| {
        (requests.iter())
            .find(|(k, _)| *k == kind)
            .map(|(_, r)| r.clone())
            .expect("a request for every kind")
    };
    let run = Run {
        start: Instant::now(),
        end: Instant::now() + workload.duration,
    };
    let mut tasks = Vec::new();
    let mut lane = 0usize;
    for &(kind, lanes) in &workload.in_flight {
        for _ in 0..lanes {
            let (client, request) = (client.clone(), request(kind));
            lane += 1;
            let first = lane * 100_000;
            tasks.push(tokio::spawn(async move {
                let mut proofs = Vec::new();
                for i in 0.. {
                    let proof = run.prove(client.clone(), &request, kind, first + i).await;
                    let over = proof.ended.is_none();
                    proofs.push(proof);
                    if over {
                        break;
                    }
                }
                proofs
            }));
        }
    }
    for (i, &(at, kind)) in workload.arrivals.iter().enumerate() {
        let (client, request) = (client.clone(), request(kind));
        tasks.push(tokio::spawn(async move {
            sleep_until(run.start + at).await;
            vec![run.prove(client, &request, kind, 900_000 + i).await]
        }));
    }
    let mut all = Vec::new();
    for task in tasks {
        all.extend(task.await.context("a mix task")?);
    }
    Ok(all)
}

/// The real run's window.
#[derive(Clone, Copy)]
struct Run {
    start: Instant,
    end: Instant,
}

impl Run {
    /// Proves `request` now; a proof not back by the end is left running.
    async fn prove(
        self,
        mut client: crate::client::Client,
        request: &ProofInput,
        kind: ProofKind,
        i: usize,
    ) -> Proof {
        let since = |t: Instant| (t - self.start).as_secs_f64();
        let arrived = since(Instant::now());
        let submit = to_wire(request, pb::Priority::Unspecified, request_id(i));
        let outcome = timeout_at(self.end, prove(&mut client, submit)).await;
        Proof {
            kind,
            arrived,
            ended: outcome.as_ref().ok().map(|_| since(Instant::now())),
            completed: outcome.is_ok_and(|o| o.completed()),
        }
    }
}
