//! `snarkd-bench report`: the four benchmarks behind snarkd's claims, each a ratio against a
//! baseline run side by side in the same invocation, written as `report.md`, `report.json` (with
//! the machine and the daemon measured), `proofs.csv` (a row per timed deadline proof) and
//! `report.html` (the table and SVG charts of those proofs: `html.rs`).
//!
//! 1. Throughput: `count` WindowPoSt partitions through the daemon vs the same proofs made by
//!    filecoin-proofs-api in one process, one after another (what a lotus-style worker does).
//! 2. Worker busy share while partitions wait for a worker (from the status stream) vs the share a
//!    monolithic prover gives its device (device time over synthesis + device time).
//! 3. Peak RSS of a daemon with a fixed budget during a burst of `burst` jobs, over the budget;
//!    the same burst with the budget left automatic is shown beside it. Two bursts: WindowPoSt
//!    (many small partitions), and PoRep with SnapDeals (partition reservations dominate).
//! 4. WinningPoSt and WindowPoSt latency (p50, p99) while PoRep jobs run vs idle.
//! 5. A realistic mix (PoRep and SnapDeals continuously, WindowPoSt and WinningPoSt arriving):
//!    deadline latencies against idle, and PoRep throughput with preemption over without.
//! 6. Throughput of a PoRep + SnapDeals batch with pre-compiled synthesis over without.
//! 7. StreamStatus with a thousand subscribers while hundreds of jobs are queued, against one
//!    subscriber: first message and change-to-client p99, unseen jobs, daemon CPU and RSS.
//!
//! Layout: `mod.rs` runs them, `files.rs` writes the report, `daemon.rs` the snarkd child
//! processes, `baseline.rs` the filecoin-proofs-api baseline, `latency.rs` and `mix.rs` the
//! deadline runs, `precompiled.rs` the pre-compiled synthesis run, `subscribers.rs` the status
//! stream run.

mod baseline;
pub(crate) mod daemon;
mod files;
mod html;
mod latency;
mod mix;
mod precompiled;
mod subscribers;

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use bytesize::ByteSize;
use serde_json::{json, Value};
use snarkd_proto::v1 as pb;
use snarkd_prover::fixtures::Fixtures;
use snarkd_prover::{ProofInput, ProofKind};

use crate::remote::run_batch;
use crate::summary::Outcome;
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
    /// The memory budget of the memory run [default: the daemon's idle RSS plus 60 % of what the
    /// same burst adds to it with an automatic budget, so that the budget, not the machine,
    /// limits admission].
    #[arg(long)]
    pub burst_budget: Option<ByteSize>,
    /// Deadline proofs of each kind timed idle and under load in the latency run (p50 and p99
    /// are reported; the mix times as many idle proofs as it will have of each kind).
    #[arg(long, default_value_t = 8)]
    pub latency_samples: usize,
    /// How long each run of the realistic mix lasts.
    #[arg(long, default_value = "150s", value_parser = humantime::parse_duration)]
    pub mix_duration: Duration,
    /// A WindowPoSt arrives this often in the mix.
    #[arg(long, default_value = "20s", value_parser = humantime::parse_duration)]
    pub mix_wpost_every: Duration,
    /// Mean gap between WinningPoSt arrivals in the mix (each gap uniform in 0.5–1.5 of it).
    #[arg(long, default_value = "15s", value_parser = humantime::parse_duration)]
    pub mix_winning_mean: Duration,
    /// PoRep and SnapDeals jobs each in the pre-compiled synthesis run (all at once).
    #[arg(long, default_value_t = 4)]
    pub precompiled_count: usize,
    /// StreamStatus subscribers in the subscribers run.
    #[arg(long, default_value_t = 1000)]
    pub subscribers: usize,
    /// WindowPoSt jobs queued while they subscribe.
    #[arg(long, default_value_t = 500)]
    pub subscribers_queued: usize,
    /// Jobs submitted one by one (500 ms apart) while they stream, whose arrival is timed.
    #[arg(long, default_value_t = 20)]
    pub subscribers_markers: usize,
    /// The subscribers' `min_interval_ms` (the monitor asks for 250).
    #[arg(long, default_value_t = 100)]
    pub subscribers_interval_ms: u32,
    /// Each subscriber's HTTP/2 receive window in KiB (its connection's is 20 times that);
    /// 0 keeps tonic's (hyper's) defaults, 2 MiB a stream and 5 MiB a connection.
    #[arg(long, default_value_t = 0)]
    pub subscribers_window_kib: u32,
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
    /// WinningPoSt and WindowPoSt latency while PoRep runs, against idle.
    Latency,
    /// The realistic mix: deadline latency and PoRep throughput, with and without preemption.
    Mix,
    /// A PoRep + SnapDeals batch with pre-compiled synthesis, against plain synthesis.
    Precompiled,
    /// StreamStatus with many subscribers and many queued jobs, against one subscriber.
    Subscribers,
}

impl Options {
    fn runs(&self, part: Part) -> bool {
        self.only.is_empty() || self.only.contains(&part)
    }
}

/// One line of the report.
struct Row {
    name: String,
    baseline: (String, f64),
    snarkd: (String, f64),
    ratio: f64,
    /// The target as text and whether the ratio meets it; none for a figure only reported.
    target: Option<(&'static str, bool)>,
}

impl Row {
    fn json(&self) -> Value {
        json!({
            "benchmark": self.name,
            "baseline": { "what": self.baseline.0, "value": self.baseline.1 },
            "snarkd": { "what": self.snarkd.0, "value": self.snarkd.1 },
            "ratio": self.ratio,
            "target": self.target.map(|t| t.0),
            "met": self.target.map(|t| t.1),
        })
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// What every run of the report shares: its options, the daemon binary, a runtime and the
/// fixture requests.
struct Bench<'a> {
    o: &'a Options,
    snarkd: PathBuf,
    runtime: tokio::runtime::Runtime,
    fixtures: Fixtures,
    wpost: ProofInput,
    winning: ProofInput,
    porep: ProofInput,
    params: String,
}

impl Bench<'_> {
    /// The settings every daemon of the report starts with, with `budget` as its memory budget.
    fn base_env(&self, budget: String) -> Vec<(&'static str, String)> {
        vec![
            ("SNARKD_PARAMS_DIR", self.params.clone()),
            ("SNARKD_MEMORY_BUDGET", budget),
            ("SNARKD_DAEMON_RETENTION", "10m".to_string()),
        ]
    }
}

/// One of the report's runs.
type PartRun = fn(&Bench, &mut Found) -> Result<()>;

/// What the runs found: the report's rows, and the timed deadline proofs for proofs.csv and the
/// page's charts.
#[derive(Default)]
struct Found {
    rows: Vec<Row>,
    runs: Vec<html::Run>,
}

pub fn report(o: Options) -> Result<()> {
    std::fs::create_dir_all(&o.out)?;
    // filecoin-proofs reads its parameter directory from here (the baseline's proofs).
    std::env::set_var("FIL_PROOFS_PARAMETER_CACHE", &o.params_dir);
    let (fixtures, _tmp) = crate::local::read_or_seal(o.fixtures.as_deref())?;
    let bench = Bench {
        o: &o,
        snarkd: Daemon::binary(o.snarkd.as_deref())?,
        runtime: tokio::runtime::Runtime::new()?,
        wpost: fixtures.request(ProofKind::WindowPost).clone(),
        winning: fixtures.request(ProofKind::WinningPost).clone(),
        porep: fixtures.request(ProofKind::PorepSealCommit).clone(),
        fixtures,
        params: o.params_dir.display().to_string(),
    };
    // The daemon measured, as its status describes it with the settings every run starts from.
    let described = {
        let d = Daemon::start(&bench.snarkd, &bench.base_env("auto".into()))?;
        let described = bench.runtime.block_on(async {
            let mut client = d.client().await?;
            crate::results::daemon(&mut client).await
        })?;
        d.stop()?;
        described
    };
    let mut found = Found::default();
    let parts: [(Part, PartRun); 6] = [
        (Part::Throughput, throughput),
        (Part::Memory, memory),
        (Part::Latency, latency_runs),
        (Part::Mix, mix_runs),
        (Part::Precompiled, precompiled_run),
        (Part::Subscribers, subscribers_run),
    ];
    for (part, run) in parts {
        if o.runs(part) {
            run(&bench, &mut found)?;
        }
    }
    files::write(&o.out, &found.rows, &found.runs, &described)
}

/// 1. Throughput against filecoin-proofs-api, and the device worker's busy share.
fn throughput(b: &Bench, found: &mut Found) -> Result<()> {
    let Bench {
        o,
        snarkd,
        runtime,
        wpost,
        ..
    } = b;
    let base_env = |budget: String| b.base_env(budget);
    let rows = &mut found.rows;
    eprintln!(
        "1/7 throughput: baseline, {} WindowPoSt proofs one after another",
        o.count
    );
    let base_wall = baseline::sequential(wpost, o.count)?;
    let base_rate = o.count as f64 * 60.0 / base_wall.as_secs_f64();
    eprintln!(
        "1/7 throughput: snarkd, the same {} proofs at concurrency {}",
        o.count, o.concurrency
    );
    let d = Daemon::start(snarkd, &base_env("auto".into()))?;
    let summary = runtime.block_on(async {
        let client = d.client().await?;
        preload(client.clone(), "wpost-2k").await?;
        run_batch(
            client,
            wpost,
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
        name: "throughput (2 KiB WindowPoSt, proofs/min)".into(),
        baseline: ("filecoin-proofs-api, sequential".into(), base_rate),
        snarkd: (format!("snarkd, concurrency {}", o.concurrency), rate),
        ratio: rate / base_rate,
        target: Some((">= 1.25x", rate / base_rate >= 1.25)),
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
        name: "device worker busy share while partitions wait".into(),
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
        target: Some((">= 95 % busy", queued_share >= 0.95)),
    });
    Ok(())
}

/// 3. Peak RSS of bursts against the memory budget.
fn memory(b: &Bench, found: &mut Found) -> Result<()> {
    let Bench {
        o,
        snarkd,
        runtime,
        fixtures,
        wpost,
        porep,
        ..
    } = b;
    let base_env = |budget: String| b.base_env(budget);
    let rows = &mut found.rows;
    let snap = fixtures.request(ProofKind::SnapDealsUpdate);
    let bursts: [(&str, Vec<&ProofInput>); 2] = [
        ("WindowPoSt", vec![wpost]),
        (
            "PoRep and SnapDeals (reservations dominate)",
            vec![porep, snap],
        ),
    ];
    for (what, requests) in bursts {
        let each = (o.burst / requests.len()).max(1);
        eprintln!("3/7 memory: a burst of {what}, {each} jobs each, budget automatic then bounded");
        // (idle RSS, peak RSS) of the burst under `budget`.
        let burst = |budget: String| -> Result<(u64, u64)> {
            let d = Daemon::start(snarkd, &base_env(budget))?;
            let idle = d.rss()?;
            let failed = runtime.block_on(async {
                let client = d.client().await?;
                let batches = requests.iter().map(|r| {
                    run_batch(
                        client.clone(),
                        r,
                        each,
                        each,
                        pb::Priority::Unspecified,
                        false,
                    )
                });
                let mut failed = 0;
                for summary in futures::future::join_all(batches).await {
                    failed += summary?.failed();
                }
                anyhow::Ok(failed)
            })?;
            let peak = d.peak_rss()?;
            d.stop()?;
            if failed > 0 {
                bail!("{failed} burst proofs failed");
            }
            Ok((idle, peak))
        };
        let (idle, unbounded) = burst("auto".into())?;
        // The daemon's own memory is part of the budget: bound what the burst adds to it.
        let budget_bytes = (o.burst_budget)
            .map_or(idle + unbounded.saturating_sub(idle) * 3 / 5, |b| {
                b.as_u64()
            });
        let (_, bounded) = burst(format!("{budget_bytes}B"))?;
        let budget = budget_bytes as f64;
        rows.push(Row {
            name: format!("peak RSS during a burst of {what}, over the configured budget"),
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
            target: Some(("<= 1.05 (budget + 5 %)", bounded as f64 <= budget * 1.05)),
        });
    }
    Ok(())
}

/// 4. Deadline latency idle and while PoRep runs.
fn latency_runs(b: &Bench, found: &mut Found) -> Result<()> {
    let Bench {
        o,
        snarkd,
        runtime,
        wpost,
        winning,
        porep,
        ..
    } = b;
    let base_env = |budget: String| b.base_env(budget);
    let (rows, runs) = (&mut found.rows, &mut found.runs);
    let deadlines = [
        ("WinningPoSt", winning, "winning-2k"),
        ("WindowPoSt", wpost, "wpost-2k"),
    ];
    for (name, request, circuit) in deadlines {
        eprintln!("4/7 latency: {name} idle, then while PoRep runs");
        let d = Daemon::start(snarkd, &base_env("auto".into()))?;
        let (idle, loaded) = runtime.block_on(latency::idle_and_loaded(
            &d,
            (request, circuit),
            porep,
            o.latency_samples,
        ))?;
        d.stop()?;
        rows.extend(deadline_rows(
            name,
            (&idle, "idle"),
            (&loaded, "during 2 PoRep C2 jobs"),
        ));
        runs.push(html::Run::of(
            name,
            [(idle, "idle"), (loaded, "during 2 PoRep C2 jobs")],
        ));
    }
    Ok(())
}

/// 5. The realistic mix, with preemption and without.
fn mix_runs(b: &Bench, found: &mut Found) -> Result<()> {
    let Bench {
        o,
        snarkd,
        runtime,
        fixtures,
        wpost,
        winning,
        porep,
        ..
    } = b;
    let base_env = |budget: String| b.base_env(budget);
    let (rows, runs) = (&mut found.rows, &mut found.runs);
    let requests = mix::Requests {
        porep,
        snap: fixtures.request(ProofKind::SnapDealsUpdate),
        wpost,
        winning,
    };
    let shape = mix::Shape {
        duration: o.mix_duration,
        wpost_every: o.mix_wpost_every,
        winning_mean: o.mix_winning_mean,
        seed: 42,
    };
    // As many idle proofs of each kind as the mix will have, so that each p99 is taken over
    // samples of one size (the p99 of 8 is their maximum, that of 49 the maximum of 49:
    // on a machine whose speed wanders, the larger sample's is higher with no load at all).
    let (wpost_at, winning_at) = shape.arrivals();
    let (n_winning, n_wpost) = (winning_at.len(), wpost_at.len());
    eprintln!("5/7 mix: idle deadline latencies ({n_winning} WinningPoSt, {n_wpost} WindowPoSt)");
    let idle = idle_deadlines(b, n_winning, n_wpost)?;
    let mut mix_runs = Vec::new();
    for preempt in ["true", "false"] {
        eprintln!("5/7 mix: {:?} with preempt = {preempt}", o.mix_duration);
        let mut env = base_env("auto".into());
        env.push(("SNARKD_SCHEDULER_PREEMPT", preempt.into()));
        let d = Daemon::start(snarkd, &env)?;
        mix_runs.push(runtime.block_on(mix::run(&d, &requests, shape))?);
        d.stop()?;
    }
    let (on, off) = (&mix_runs[0], &mix_runs[1]);
    rows.extend(deadline_rows(
        "mix: WinningPoSt",
        (&idle.0, "idle"),
        (&on.winning, "in the mix"),
    ));
    rows.extend(deadline_rows(
        "mix: WindowPoSt",
        (&idle.1, "idle"),
        (&on.wpost, "in the mix"),
    ));
    let minutes = o.mix_duration.as_secs_f64() / 60.0;
    let (rate_on, rate_off) = (on.porep_work / minutes, off.porep_work / minutes);
    rows.push(Row {
        name: "mix: PoRep throughput (proofs/min), preemption on over off".into(),
        baseline: (
            format!(
                "preempt = false ({} PoRep + {:.2} cut off; WinningPoSt p50 {:.0} ms)",
                off.porep_done,
                off.porep_work - off.porep_done as f64,
                ms(percentile_of(&off.winning, 50.0).latency)
            ),
            rate_off,
        ),
        snarkd: (
            format!(
                "preempt = true ({} PoRep + {:.2} cut off)",
                on.porep_done,
                on.porep_work - on.porep_done as f64
            ),
            rate_on,
        ),
        ratio: rate_on / rate_off,
        target: Some((">= 0.90 (at most 10 % lost)", rate_on >= 0.9 * rate_off)),
    });
    let on = mix_runs.swap_remove(0);
    runs.push(html::Run::of(
        "mix: WinningPoSt",
        [(idle.0, "idle"), (on.winning, "in the mix")],
    ));
    runs.push(html::Run::of(
        "mix: WindowPoSt",
        [(idle.1, "idle"), (on.wpost, "in the mix")],
    ));
    Ok(())
}

/// `n_winning` WinningPoSt and `n_wpost` WindowPoSt proofs timed one after another on an idle
/// daemon.
fn idle_deadlines(
    b: &Bench,
    n_winning: usize,
    n_wpost: usize,
) -> Result<(Vec<Outcome>, Vec<Outcome>)> {
    let d = Daemon::start(&b.snarkd, &b.base_env("auto".into()))?;
    let idle = b.runtime.block_on(async {
        let client = d.client().await?;
        let mut idle = (Vec::new(), Vec::new());
        preload(client.clone(), "winning-2k").await?;
        preload(client.clone(), "wpost-2k").await?;
        for i in 0..n_winning.max(n_wpost) {
            if i < n_winning {
                idle.0
                    .push(latency::timed(client.clone(), &b.winning, "winning-2k", i).await?);
            }
            if i < n_wpost {
                idle.1
                    .push(latency::timed(client.clone(), &b.wpost, "wpost-2k", i).await?);
            }
        }
        anyhow::Ok(idle)
    })?;
    d.stop()?;
    Ok(idle)
}

/// 6. A PoRep + SnapDeals batch with pre-compiled synthesis over without.
fn precompiled_run(b: &Bench, found: &mut Found) -> Result<()> {
    let Bench {
        o,
        snarkd,
        runtime,
        fixtures,
        porep,
        ..
    } = b;
    let base_env = |budget: String| b.base_env(budget);
    let rows = &mut found.rows;
    let snap = fixtures.request(ProofKind::SnapDealsUpdate);
    let dir = o.out.join("precompiled");
    let _ = std::fs::remove_dir_all(&dir);
    let mut sides = Vec::new();
    for on in [false, true] {
        eprintln!(
            "6/7 pre-compiled synthesis {}: {} PoRep and {} SnapDeals jobs at once",
            if on { "on" } else { "off" },
            o.precompiled_count,
            o.precompiled_count
        );
        sides.push(precompiled::side(
            runtime,
            snarkd,
            &base_env("auto".into()),
            (porep, snap),
            o.precompiled_count,
            on,
            &dir,
        )?);
    }
    let (off, on) = (&sides[0], &sides[1]);
    let what = |name: &str, s: &precompiled::Side| {
        format!(
            "{name}: synthesis {:.0} ms a PoRep partition, {:.0} ms a SnapDeals one",
            s.synthesis_ms.0, s.synthesis_ms.1
        )
    };
    let ratio = on.proofs_per_min / off.proofs_per_min;
    rows.push(Row {
        name: "PoRep + SnapDeals batch throughput (proofs/min)".into(),
        baseline: (what("plain synthesis", off), off.proofs_per_min),
        snarkd: (what("pre-compiled synthesis", on), on.proofs_per_min),
        ratio,
        target: Some(("> 1.0", ratio > 1.0)),
    });
    Ok(())
}

/// 7. StreamStatus with many subscribers against one.
fn subscribers_run(b: &Bench, found: &mut Found) -> Result<()> {
    let Bench {
        o,
        snarkd,
        runtime,
        wpost,
        ..
    } = b;
    let base_env = |budget: String| b.base_env(budget);
    let rows = &mut found.rows;
    let shape = subscribers::Shape::of(o);
    let d = Daemon::start(snarkd, &shape.daemon_env(base_env("auto".into())))?;
    let sides = runtime.block_on(subscribers::run(&d, wpost, shape))?;
    // Hundreds of queued proofs would take minutes to drain.
    d.kill()?;
    rows.extend(subscribers::rows(&sides, shape));
    Ok(())
}

/// p50 and p99 rows of a deadline kind's latencies against its idle ones, each side labelled
/// with what it is and how many proofs it holds; the loaded side also says where the daemon
/// spent the time of the proof at that percentile, so a slow p99 can be told apart.
fn deadline_rows(name: &str, idle: (&[Outcome], &str), loaded: (&[Outcome], &str)) -> Vec<Row> {
    let label = |(v, what): (&[Outcome], &str)| format!("{what}, {} proofs", v.len());
    [("p50", 50.0), ("p99", 99.0)]
        .into_iter()
        .map(|(quantile, p)| {
            let (base, under) = (percentile_of(idle.0, p), percentile_of(loaded.0, p));
            let (base_ms, under_ms) = (ms(base.latency), ms(under.latency));
            Row {
                name: format!("{name} latency {quantile} (ms), under load over idle"),
                baseline: (label(idle), base_ms),
                snarkd: (format!("{} ({})", label(loaded), phases(under)), under_ms),
                ratio: under_ms / base_ms,
                target: Some(("<= 1.5x", under_ms / base_ms <= 1.5)),
            }
        })
        .collect()
}

/// The proof at the nearest-rank `p`th percentile (0 < p <= 100) of `v` by client-side latency.
fn percentile_of(v: &[Outcome], p: f64) -> &Outcome {
    let mut sorted: Vec<&Outcome> = v.iter().collect();
    sorted.sort_by_key(|o| o.latency);
    crate::summary::percentile_of(&sorted, p).expect("a benchmark run has proofs")
}

/// The daemon's phases of one proof, as a report label; the rest of its total is the time its
/// partition waited for a device worker (and the final verification).
fn phases(o: &Outcome) -> String {
    let steps = o.queue_wait_ms + o.srs_load_ms + o.synthesis_ms + o.gpu_compute_ms;
    format!(
        "that proof: queue {}, params {}, synthesis {}, device {}, waiting for a worker and \
         finalizing {} ms",
        o.queue_wait_ms,
        o.srs_load_ms,
        o.synthesis_ms,
        o.gpu_compute_ms,
        o.total_ms.saturating_sub(steps)
    )
}

pub(crate) async fn preload(mut client: crate::client::Client, circuit: &str) -> Result<()> {
    client
        .preload_srs(pb::PreloadSrsRequest {
            circuit_id: circuit.into(),
        })
        .await
        .with_context(|| format!("PreloadSRS {circuit}"))?;
    Ok(())
}
