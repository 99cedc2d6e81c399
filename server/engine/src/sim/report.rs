//! What a simulation measured: proofs an hour and latencies per kind, memory at peak against
//! the budget, each device's busy share, and the load over time.

use serde::Serialize;

use super::KindCosts;
use crate::domain::ProofKind;
use crate::history::{nearest_rank, Load};

/// One proof kind's results over the measured window (after the warm-up).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct KindReport {
    /// Written as snarkd names kinds (`porep`, `snap`, `wpost`, `winning`), as the cost table.
    #[serde(serialize_with = "short_kind")]
    pub kind: ProofKind,
    /// Proofs completed in the window.
    pub completed: u32,
    pub failed: u32,
    /// Submits the engine refused (its `[limits]`, or a job larger than the budget).
    pub refused: u32,
    /// Proofs an hour: the partitions proved in the window over the partitions per proof.
    pub per_hour: f64,
    /// The inverse of `per_hour` (nothing proved: absent).
    pub seconds_per_proof: Option<f64>,
    /// From arrival (before the submit's planning) to the proof, of the proofs completed in
    /// the window.
    pub latency_p50_s: Option<f64>,
    pub latency_p99_s: Option<f64>,
    /// Those latencies, shortest first.
    #[serde(skip)]
    pub latencies_s: Vec<f64>,
}

/// The load at one moment.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Sample {
    pub at_s: f64,
    #[serde(flatten)]
    pub load: Load,
}

/// Everything one simulation measured.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    pub kinds: Vec<KindReport>,
    pub budget_bytes: u64,
    pub peak_memory_bytes: u64,
    /// Share of the window (after the warm-up) each device ran a phase, one entry per device
    /// (the CPU backend's one device: any device phase on the cores).
    pub device_busy_share: Vec<f64>,
    /// Share of the window's core-seconds spent on work.
    pub cpu_busy_share: f64,
    pub timeline: Vec<Sample>,
    /// The jobs still running at the end: (kind, arrived at, seconds).
    #[serde(skip)]
    pub unfinished: Vec<(ProofKind, f64)>,
    /// Inputs the machine took (its cost in the simulation).
    pub inputs: u64,
    pub simulated_s: f64,
}

fn short_kind<S: serde::Serializer>(kind: &ProofKind, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(kind.as_str())
}

/// One ended job, as the simulation saw it.
pub(crate) struct Ended {
    pub kind: usize,
    pub arrived: f64,
    pub ended: f64,
    pub completed: bool,
}

/// The nearest-rank `q` quantile (0–1) of ascending `sorted`.
fn percentile(sorted: &[f64], q: f64) -> Option<f64> {
    nearest_rank(sorted.len(), q).map(|i| sorted[i])
}

/// What a run counted, and the window `[warmup, end]` its results are taken over.
pub(crate) struct Tallies<'a> {
    pub costs: &'a [KindCosts],
    pub ended: &'a [Ended],
    /// (kind, when) of each partition proved.
    pub proved: &'a [(usize, f64)],
    pub refused: &'a [u32],
    pub warmup: f64,
    pub end: f64,
}

/// Per-kind results over the window. Proofs an hour count the partitions proved in it over the
/// kind's partitions per proof, so the figure does not move in steps of a whole proof when a
/// proof ends just after the window.
pub(crate) fn kinds(t: &Tallies) -> Vec<KindReport> {
    let window = (t.end - t.warmup).max(f64::MIN_POSITIVE);
    (t.costs.iter().enumerate())
        .map(|(k, costs)| {
            let in_window = || (t.ended.iter()).filter(move |e| e.kind == k && e.ended >= t.warmup);
            let mut latencies: Vec<f64> = (in_window().filter(|e| e.completed))
                .map(|e| e.ended - e.arrived)
                .collect();
            latencies.sort_by(f64::total_cmp);
            let partitions = (t.proved.iter())
                .filter(|&&(kind, at)| kind == k && at >= t.warmup)
                .count();
            let proofs = partitions as f64 / f64::from(costs.partitions.max(1));
            KindReport {
                kind: costs.kind,
                completed: latencies.len() as u32,
                failed: in_window().filter(|e| !e.completed).count() as u32,
                refused: t.refused[k],
                per_hour: proofs * 3600.0 / window,
                seconds_per_proof: (proofs > 0.0).then(|| window / proofs),
                latency_p50_s: percentile(&latencies, 0.5),
                latency_p99_s: percentile(&latencies, 0.99),
                latencies_s: latencies,
            }
        })
        .collect()
}

impl Report {
    pub fn kind(&self, kind: ProofKind) -> Option<&KindReport> {
        self.kinds.iter().find(|k| k.kind == kind)
    }
}
