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
//! Layout: `mod.rs` runs them (`runs.rs`, one function each), `files.rs` writes the report, `daemon.rs` the snarkd child
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
mod runs;
mod subscribers;

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, Result};
use bytesize::ByteSize;
use serde_json::{json, Value};
use snarkd_proto::v1 as pb;
use snarkd_prover::ProofKind;

use crate::summary::Outcome;
use daemon::Daemon;
use runs::{
    latency_runs, memory, mix_runs, precompiled_run, subscribers_run, throughput, Bench, Found,
    PartRun,
};

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

pub fn report(o: Options) -> Result<()> {
    std::fs::create_dir_all(&o.out)?;
    // filecoin-proofs reads its parameter directory from here (the baseline's proofs).
    std::env::set_var("FIL_PROOFS_PARAMETER_CACHE", &o.params_dir);
    let (fixtures, _tmp) = crate::local::read_or_seal(o.fixtures.as_deref())?;
    let bench = Bench {
        o: &o,
        snarkd: Daemon::binary(o.snarkd.as_deref())?,
        runtime: tokio::runtime::Runtime::new()?,
        wpost: fixtures.request(ProofKind::WindowPost),
        winning: fixtures.request(ProofKind::WinningPost),
        porep: fixtures.request(ProofKind::PorepSealCommit),
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
