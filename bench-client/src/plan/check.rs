//! `plan --check`: the simulation against reality on this machine at 2 KiB. The cost table is
//! measured here (`measure.rs`), a real daemon runs a PoRep + WindowPoSt + WinningPoSt mix, and
//! the simulation runs the same arrivals on this box with that table; PoRep's throughput and
//! each deadline kind's median latency, predicted against measured, must agree within 15 %.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result};
use bytesize::ByteSize;
use serde_json::{json, Value};
use snarkd_engine::sim::{simulate, Report, Workload};
use snarkd_proto::v1 as pb;
use snarkd_prover::{ProofInput, ProofKind};
use tokio::time::{sleep_until, timeout_at, Instant};

use super::table::{self, BoxFile, Built};
use super::workload;
use crate::remote::{prove, request_id};
use crate::report::daemon::Daemon;
use crate::request::to_wire;
use crate::summary::percentile;

/// How far a prediction may be from the measurement.
const TOLERANCE: f64 = 0.15;
/// The check's daemons' budget: far above what 2 KiB proofs reserve, so memory never limits.
const BUDGET: &str = "8GiB";

/// `plan --check`'s settings.
#[derive(clap::Args)]
pub struct CheckOptions {
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
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u16).range(1..))]
    pub samples: u16,
}

/// A proof of the real run, in seconds from its start; `ended` is none for one still running
/// at the end.
struct Proof {
    kind: ProofKind,
    arrived: f64,
    ended: Option<f64>,
    completed: bool,
}

/// What one side (the real run, or its simulation) saw of the proofs in the window.
#[derive(Default)]
struct Observed {
    /// Latencies of the proofs completed in the window, by kind, shortest first.
    latencies: BTreeMap<ProofKind, Vec<f64>>,
    /// When the proofs still running at the end arrived, by kind.
    running: BTreeMap<ProofKind, Vec<f64>>,
}

impl Observed {
    fn of_run(proofs: &[Proof], warmup: f64) -> Observed {
        let mut seen = Observed::default();
        for p in proofs {
            match p.ended {
                Some(ended) if p.completed && ended >= warmup => seen
                    .latencies
                    .entry(p.kind)
                    .or_default()
                    .push(ended - p.arrived),
                None => seen.running.entry(p.kind).or_default().push(p.arrived),
                _ => {}
            }
        }
        seen.latencies
            .values_mut()
            .for_each(|v| v.sort_by(f64::total_cmp));
        seen
    }

    fn of_simulation(report: &Report) -> Observed {
        let mut seen = Observed::default();
        for k in &report.kinds {
            seen.latencies.insert(k.kind, k.latencies_s.clone());
        }
        for &(kind, arrived) in &report.unfinished {
            seen.running.entry(kind).or_default().push(arrived);
        }
        seen
    }

    /// Proofs of `kind` an hour over the window `[warmup, end]`: those completed in it, and each
    /// still running at the end by its share of a mean proof, at most 0.99, so that the figure
    /// does not move in steps of a whole proof.
    fn rate(&self, kind: ProofKind, warmup: f64, end: f64) -> f64 {
        let latencies = self.latencies.get(&kind).map_or(&[][..], |v| &v[..]);
        let mean = latencies.iter().sum::<f64>() / latencies.len().max(1) as f64;
        let partial: f64 = (self.running.get(&kind).into_iter().flatten())
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

    /// The median latency of the kinds `of` picks, pooled.
    fn p50(&self, of: impl Fn(ProofKind) -> bool) -> f64 {
        let mut pooled: Vec<f64> = (self.latencies.iter())
            .filter(|(k, _)| of(**k))
            .flat_map(|(_, v)| v.iter().copied())
            .collect();
        pooled.sort_by(f64::total_cmp);
        percentile(&pooled, 50.0).unwrap_or(0.0)
    }
}

/// Predicted against measured: PoRep's throughput, each deadline kind's median latency (and,
/// for information, theirs pooled), with whether each is within the tolerance.
fn verdict(
    predicted: &Observed,
    measured: &Observed,
    kinds: &[ProofKind],
    window: (f64, f64),
) -> (Value, bool) {
    let compare = |predicted: f64, measured: f64| {
        let ratio = if measured > 0.0 {
            predicted / measured
        } else {
            f64::INFINITY
        };
        json!({"predicted": predicted, "measured": measured, "ratio": ratio,
               "within": (ratio - 1.0).abs() <= TOLERANCE})
    };
    let porep = ProofKind::PorepSealCommit;
    let (warmup, end) = window;
    let throughput = compare(
        predicted.rate(porep, warmup, end),
        measured.rate(porep, warmup, end),
    );
    let deadline = |k: ProofKind| k != porep;
    let pooled = compare(predicted.p50(deadline), measured.p50(deadline));
    let mut by_kind = serde_json::Map::new();
    for &kind in kinds.iter().filter(|k| deadline(**k)) {
        let p50 = |o: &Observed| o.p50(|k| k == kind);
        by_kind.insert(
            format!("{}_p50_s", kind.as_str()),
            compare(p50(predicted), p50(measured)),
        );
    }
    // Each deadline kind's median on its own: the median of the two kinds pooled falls between
    // two clusters (WindowPoSt's and WinningPoSt's latencies) and jumps with one proof.
    let ok = throughput["within"] == true && by_kind.values().all(|c| c["within"] == true);
    let v = json!({
        "porep_per_hour": throughput,
        "deadline_p50_s_pooled": pooled,
        "by_kind": by_kind,
    });
    (v, ok)
}

/// A fixture request of each kind of the mix, PoRep and the arriving kinds, in kind order.
fn requests(
    o: &CheckOptions,
    every: &[(ProofKind, Duration)],
) -> Result<Vec<(ProofKind, ProofInput)>> {
    let (fixtures, _tmp) = crate::local::read_or_seal(o.fixtures.as_deref())?;
    let mut kinds: Vec<ProofKind> = every.iter().map(|(k, _)| *k).collect();
    kinds.push(ProofKind::PorepSealCommit);
    kinds.sort();
    kinds.dedup();
    Ok((kinds.iter()).map(|k| (*k, fixtures.request(*k))).collect())
}

/// This machine as a box file, with the check daemons' budget and the measured baseline.
fn this_box(cores: usize, baseline: u64) -> Result<BoxFile> {
    Ok(BoxFile {
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
    })
}

pub fn check(o: &CheckOptions, seed: u64, out: Option<&Path>) -> Result<bool> {
    let params_dir =
        (o.params_dir.clone()).context("--check needs --params-dir (2 KiB parameters)")?;
    let snarkd = Daemon::binary(o.snarkd.as_deref())?;
    let every = workload::pairs(&o.mix_every, |v| Ok(humantime::parse_duration(v)?))?;
    let requests = requests(o, &every)?;
    let kinds: Vec<ProofKind> = requests.iter().map(|(k, _)| *k).collect();
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
        in_flight: vec![(ProofKind::PorepSealCommit, o.mix_porep)],
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
            usize::from(o.samples),
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
    let machine = this_box(cores, baseline)?;
    let Built::Setup(setup) = table::setup(&machine, None, &Default::default(), &costs, &kinds)?
    else {
        anyhow::bail!("the measured table lacks a figure");
    };
    let started = std::time::Instant::now();
    let predicted = simulate(&setup, &workload);
    let simulated_in_s = started.elapsed().as_secs_f64();
    let window = (o.mix_warmup.as_secs_f64(), o.mix_duration.as_secs_f64());
    let (mut result, ok) = verdict(
        &Observed::of_simulation(&predicted),
        &Observed::of_run(&measured, window.0),
        &kinds,
        window,
    );
    result["check"] = json!("2KiB mix: PoRep in flight, WindowPoSt and WinningPoSt arriving");
    result["machine_cores"] = json!(cores);
    result["mix_s"] = json!(window.1);
    result["warmup_s"] = json!(window.0);
    result["seed"] = json!(seed);
    result["tolerance"] = json!(TOLERANCE);
    result["simulated_in_s"] = json!(simulated_in_s);
    result["ok"] = json!(ok);
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

#[cfg(test)]
mod tests {
    use super::*;

    fn proof(kind: ProofKind, arrived: f64, ended: Option<f64>) -> Proof {
        Proof {
            kind,
            arrived,
            ended,
            completed: ended.is_some(),
        }
    }

    #[test]
    fn a_proof_cut_off_at_the_end_counts_by_its_share_and_medians_are_per_kind() {
        let (porep, winning) = (ProofKind::PorepSealCommit, ProofKind::WinningPost);
        let run = [
            proof(porep, 0.0, Some(5.0)), // ended before the window: not counted
            proof(porep, 5.0, Some(25.0)),
            proof(porep, 25.0, Some(35.0)),
            proof(porep, 35.0, None), // 5 s of a mean 15 s proof by the end at 40 s
            proof(winning, 12.0, Some(13.0)),
            proof(winning, 20.0, Some(23.0)),
            proof(winning, 30.0, Some(32.0)),
        ];
        let seen = Observed::of_run(&run, 10.0);
        let rate = seen.rate(porep, 10.0, 40.0);
        assert!(
            (rate - (2.0 + 5.0 / 15.0) * 3600.0 / 30.0).abs() < 1e-9,
            "{rate}"
        );
        assert_eq!(seen.p50(|k| k == winning), 2.0);
        let (v, ok) = verdict(&seen, &seen, &[porep, winning], (10.0, 40.0));
        assert!(ok);
        assert_eq!(v["by_kind"]["winning_p50_s"]["ratio"], 1.0);
        let slower = Observed::of_run(&run[..6], 10.0);
        let (_, ok) = verdict(&seen, &slower, &[porep, winning], (10.0, 40.0));
        assert!(!ok, "a median of 2.0 predicted against 1.0 measured is off");
    }
}
