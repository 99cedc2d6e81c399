//! `snarkd-bench report`: the four benchmarks behind snarkd's claims, each a ratio against a
//! baseline run side by side in the same invocation, written as `report.md` and `report.json`.
//!
//! 1. Throughput: `count` WindowPoSt partitions through the daemon vs the same proofs made by
//!    filecoin-proofs-api in one process, one after another (what a lotus-style worker does).
//! 2. Worker busy share while partitions wait for a worker (from the status stream) vs the share a
//!    monolithic prover gives its device (device time over synthesis + device time).
//! 3. Peak RSS of a daemon with a fixed budget during a burst of `burst` jobs, over the budget;
//!    the same burst with the budget left automatic is shown beside it.
//! 4. WinningPoSt and WindowPoSt latency while a PoRep batch runs vs idle.
//!
//! Layout: `mod.rs` runs them and writes the report, `daemon.rs` the snarkd child processes,
//! `baseline.rs` the filecoin-proofs-api baseline.

mod baseline;
pub(crate) mod daemon;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use bytesize::ByteSize;
use serde_json::{json, Value};
use snarkd_proto::v1 as pb;
use snarkd_prover::{ProofKind, ProofRequest};

use crate::remote::{prove, request_id, run_batch};
use crate::request::to_wire;
use daemon::Daemon;

/// `snarkd-bench report`'s arguments.
#[derive(clap::Args)]
pub struct Options {
    /// Where report.md and report.json go.
    #[arg(long, default_value = "target/bench-report")]
    pub out: PathBuf,
    /// Fixtures written by `gen`; a 2 KiB sector is sealed when omitted.
    #[arg(long)]
    pub fixtures: Option<PathBuf>,
    /// Parameter directory with the 2 KiB wpost, winning and porep parameters.
    #[arg(long)]
    pub params_dir: PathBuf,
    /// WindowPoSt proofs in the throughput run.
    #[arg(long, default_value_t = 16)]
    pub count: usize,
    /// Requests in flight in the throughput run.
    #[arg(long, default_value_t = 4)]
    pub concurrency: usize,
    /// Jobs submitted at once in the memory run.
    #[arg(long, default_value_t = 32)]
    pub burst: usize,
    /// The memory budget of the memory run [default: 60 % of the same burst's peak RSS with an
    /// automatic budget, so that the budget, not the machine, limits admission].
    #[arg(long)]
    pub burst_budget: Option<ByteSize>,
    /// WinningPoSt proofs timed idle and under load (the median is reported).
    #[arg(long, default_value_t = 5)]
    pub latency_samples: usize,
    /// The snarkd binary [default: beside snarkd-bench].
    #[arg(long)]
    pub snarkd: Option<PathBuf>,
    /// Run only these benchmarks (comma-separated) [default: all].
    #[arg(long, value_enum, value_delimiter = ',')]
    pub only: Vec<Part>,
}

/// The report's benchmarks, as `--only` names them.
#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Part {
    /// Throughput against filecoin-proofs-api, and the device worker's busy share.
    Throughput,
    /// Peak RSS of a burst against the memory budget.
    Memory,
    /// WinningPoSt latency while PoRep runs, against idle.
    Latency,
}

impl Options {
    fn runs(&self, part: Part) -> bool {
        self.only.is_empty() || self.only.contains(&part)
    }
}

/// One line of the report.
struct Row {
    name: &'static str,
    baseline: (String, f64),
    snarkd: (String, f64),
    ratio: f64,
    /// The target as text and whether the ratio meets it.
    target: (&'static str, bool),
}

impl Row {
    fn json(&self) -> Value {
        json!({
            "benchmark": self.name,
            "baseline": { "what": self.baseline.0, "value": self.baseline.1 },
            "snarkd": { "what": self.snarkd.0, "value": self.snarkd.1 },
            "ratio": self.ratio,
            "target": self.target.0,
            "met": self.target.1,
        })
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

pub fn report(o: Options) -> Result<()> {
    std::fs::create_dir_all(&o.out)?;
    // filecoin-proofs reads its parameter directory from here (the baseline's proofs).
    std::env::set_var("FIL_PROOFS_PARAMETER_CACHE", &o.params_dir);
    let snarkd = Daemon::binary(o.snarkd.as_deref())?;
    let (fixtures, _tmp) = crate::local::read_or_seal(o.fixtures.as_deref())?;
    let wpost = fixtures.request(ProofKind::WindowPost).clone();
    let winning = fixtures.request(ProofKind::WinningPost).clone();
    let porep = fixtures.request(ProofKind::PorepSealCommit).clone();
    let params = o.params_dir.display().to_string();
    let base_env = |budget: String| {
        vec![
            ("SNARKD_PARAMS_DIR", params.clone()),
            ("SNARKD_MEMORY_BUDGET", budget),
            ("SNARKD_DAEMON_RETENTION", "10m".to_string()),
        ]
    };
    let runtime = tokio::runtime::Runtime::new()?;
    let mut rows = Vec::new();

    if o.runs(Part::Throughput) {
        eprintln!(
            "1/4 throughput: baseline, {} WindowPoSt proofs one after another",
            o.count
        );
        let base_wall = baseline::sequential(&wpost, o.count)?;
        let base_rate = o.count as f64 * 60.0 / base_wall.as_secs_f64();
        eprintln!(
            "1/4 throughput: snarkd, the same {} proofs at concurrency {}",
            o.count, o.concurrency
        );
        let d = Daemon::start(&snarkd, &base_env("auto".into()))?;
        let summary = runtime.block_on(async {
            let client = d.client().await?;
            preload(client.clone(), "wpost-2k").await?;
            run_batch(
                client,
                &wpost,
                o.count,
                o.concurrency,
                pb::Priority::Unspecified,
                true,
            )
            .await
        })?;
        d.stop()?;
        if summary.failed() > 0 {
            bail!(
                "{} daemon proofs failed: {}",
                summary.failed(),
                summary.json()["failures"]
            );
        }
        let rate = summary.proofs_per_min();
        rows.push(Row {
            name: "throughput (2 KiB WindowPoSt, proofs/min)",
            baseline: ("filecoin-proofs-api, sequential".into(), base_rate),
            snarkd: (format!("snarkd, concurrency {}", o.concurrency), rate),
            ratio: rate / base_rate,
            target: (">= 1.25x", rate / base_rate >= 1.25),
        });

        let usage = summary
            .usage
            .clone()
            .context("no status stream during the batch")?;
        let queued_share = usage.busy_share_while_queued().unwrap_or(0.0);
        let (synth, device) = (
            summary.mean_ms(|o| o.synthesis_ms),
            summary.mean_ms(|o| o.gpu_compute_ms),
        );
        let monolithic_share = device / (synth + device);
        rows.push(Row {
            name: "device worker busy share while partitions wait",
            baseline: (
                "monolithic: device / (synthesis + device)".into(),
                monolithic_share,
            ),
            snarkd: (
                format!(
                    "snarkd, {:.1} s with partitions waiting",
                    usage.json()["queued_seconds"].as_f64().unwrap_or(0.0)
                ),
                queued_share,
            ),
            ratio: queued_share / monolithic_share,
            target: (">= 95 % busy", queued_share >= 0.95),
        });
    }

    if o.runs(Part::Memory) {
        eprintln!(
            "3/4 memory: a burst of {} jobs, budget automatic then bounded",
            o.burst
        );
        let burst = |budget: String| -> Result<u64> {
            let d = Daemon::start(&snarkd, &base_env(budget))?;
            let s = runtime.block_on(async {
                let client = d.client().await?;
                run_batch(
                    client,
                    &wpost,
                    o.burst,
                    o.burst,
                    pb::Priority::Unspecified,
                    true,
                )
                .await
            })?;
            let peak = d.peak_rss()?;
            d.stop()?;
            if s.failed() > 0 {
                bail!("{} burst proofs failed", s.failed());
            }
            Ok(peak)
        };
        let unbounded = burst("auto".into())?;
        let budget_bytes = o.burst_budget.map_or(unbounded * 3 / 5, |b| b.as_u64());
        let bounded = burst(format!("{budget_bytes}B"))?;
        let budget = budget_bytes as f64;
        rows.push(Row {
            name: "peak RSS during a burst, over the configured budget",
            baseline: (
                format!("budget auto: peak {}", ByteSize(unbounded)),
                unbounded as f64 / budget,
            ),
            snarkd: (
                format!(
                    "budget {}: peak {}",
                    ByteSize(budget_bytes),
                    ByteSize(bounded)
                ),
                bounded as f64 / budget,
            ),
            ratio: bounded as f64 / budget,
            target: ("<= 1.05 (budget + 5 %)", bounded as f64 <= budget * 1.05),
        });
    }

    if o.runs(Part::Latency) {
        let deadlines = [
            ("WinningPoSt", &winning, "winning-2k"),
            ("WindowPoSt", &wpost, "wpost-2k"),
        ];
        for (name, request, circuit) in deadlines {
            eprintln!("4/4 latency: {name} idle, then while PoRep runs");
            let d = Daemon::start(&snarkd, &base_env("auto".into()))?;
            let (idle, loaded) = runtime.block_on(deadline_latency(
                &d,
                (request, circuit),
                &porep,
                o.latency_samples,
            ))?;
            d.stop()?;
            rows.push(Row {
                name: if name == "WinningPoSt" {
                    "WinningPoSt latency (median ms) while a PoRep batch runs, over idle"
                } else {
                    "WindowPoSt latency (median ms) while a PoRep batch runs, over idle"
                },
                baseline: ("idle".into(), idle),
                snarkd: ("during 2 PoRep C2 jobs".into(), loaded),
                ratio: loaded / idle,
                target: ("<= 1.5x", loaded / idle <= 1.5),
            });
        }
    }

    write(&o.out, &rows)
}

async fn preload(mut client: crate::client::Client, circuit: &str) -> Result<()> {
    client
        .preload_srs(pb::PreloadSrsRequest {
            circuit_id: circuit.into(),
        })
        .await
        .with_context(|| format!("PreloadSRS {circuit}"))?;
    Ok(())
}

/// Median latency of `samples` deadline proofs (WinningPoSt or WindowPoSt, at their kinds'
/// usual priority), idle and then while two PoRep jobs run.
async fn deadline_latency(
    d: &Daemon,
    (winning, circuit): (&ProofRequest, &str),
    porep: &ProofRequest,
    samples: usize,
) -> Result<(f64, f64)> {
    let mut client = d.client().await?;
    let for_winning = client.clone();
    preload(client.clone(), circuit).await?;
    preload(client.clone(), "porep-2k").await?;
    let one = |i: usize| {
        let mut client = for_winning.clone();
        let submit = to_wire(winning, pb::Priority::Unspecified, request_id(i));
        async move {
            let o = prove(&mut client, submit).await;
            if !o.completed() {
                bail!("{circuit} proof {}: {}", o.status, o.error);
            }
            Ok(ms(o.latency))
        }
    };
    let mut idle = Vec::new();
    for i in 0..samples {
        idle.push(one(i).await?);
    }
    let mut porep_jobs = Vec::new();
    keep_two_porep(&mut client, porep, &mut porep_jobs).await?;
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
        keep_two_porep(&mut client, porep, &mut porep_jobs).await?;
        loaded.push(one(100 + i).await?);
    }
    for job_id in porep_jobs {
        client
            .cancel_proof(pb::CancelProofRequest { job_id })
            .await?;
    }
    Ok((median(idle), median(loaded)))
}

/// Submits PoRep jobs until two are unfinished, so every timed WinningPoSt meets PoRep load.
async fn keep_two_porep(
    client: &mut crate::client::Client,
    porep: &ProofRequest,
    jobs: &mut Vec<String>,
) -> Result<()> {
    let s = client
        .get_status(pb::GetStatusRequest {})
        .await?
        .into_inner();
    let unfinished: u32 = s
        .queues
        .iter()
        .filter(|q| q.proof_kind == "porep")
        .map(|q| q.pending + q.in_progress)
        .sum();
    for _ in unfinished..2 {
        let submit = to_wire(
            porep,
            pb::Priority::Unspecified,
            request_id(1000 + jobs.len()),
        );
        jobs.push(client.submit_proof(submit).await?.into_inner().job_id);
    }
    Ok(())
}

fn write(out: &Path, rows: &[Row]) -> Result<()> {
    let command: Vec<String> = std::env::args().collect();
    let machine = json!({
        "cpus": std::thread::available_parallelism().map_or(0, |n| n.get()),
        "memory_bytes": memory_total(),
    });
    let j = json!({
        "command": command.join(" "),
        "snarkd_bench_version": env!("CARGO_PKG_VERSION"),
        "machine": machine,
        "benchmarks": rows.iter().map(Row::json).collect::<Vec<_>>(),
    });
    std::fs::write(
        out.join("report.json"),
        serde_json::to_string_pretty(&j)? + "\n",
    )?;
    let mut md = String::from("# snarkd benchmark report\n\n");
    md.push_str(&format!(
        "Reproduce with `{}` ({} CPUs, {} RAM). Each ratio is snarkd over a baseline run in the same invocation.\n\n",
        command.join(" "),
        machine["cpus"],
        ByteSize(memory_total())
    ));
    md.push_str(
        "| benchmark | baseline | snarkd | ratio | target | met |\n|---|---|---|---|---|---|\n",
    );
    for r in rows {
        md.push_str(&format!(
            "| {} | {}: {:.3} | {}: {:.3} | {:.2} | {} | {} |\n",
            r.name,
            r.baseline.0,
            r.baseline.1,
            r.snarkd.0,
            r.snarkd.1,
            r.ratio,
            r.target.0,
            if r.target.1 { "yes" } else { "**no**" }
        ));
    }
    std::fs::write(out.join("report.md"), &md)?;
    print!("{md}");
    Ok(())
}

fn memory_total() -> u64 {
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| {
            m.lines()
                .find_map(|l| l.strip_prefix("MemTotal:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        })
        .map_or(0, |kib| kib * 1024)
}
