//! The whole page for one daemon, built from one `StatusSnapshot`. Everything is text or numbers
//! ready to render; the app adds no logic of its own.

use snarkd_proto::v1::{ProofKind, StatusSnapshot, WorkerState};

use crate::devices::{readings, Reading};
use crate::failures::{failure_rows, FailureRow};
use crate::jobs::{job_rows, JobRow};
use crate::summary::{summary, Summary};
use crate::{format, labels};

/// What the page shows for one daemon.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct Dashboard {
    pub header: Header,
    /// The strip at the top: per kind, where work is and what ended lately.
    pub summary: Summary,
    pub memory: MemoryBar,
    pub synthesis: Synthesis,
    pub workers: Vec<WorkerChip>,
    pub jobs: Vec<JobRow>,
    pub counters: Vec<Counter>,
    pub queues: Vec<QueueRow>,
    pub params: Vec<ParamsRow>,
    /// The daemon's failure log, newest first.
    pub failures: Vec<FailureRow>,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct Header {
    pub version: String,
    pub build_id: String,
    pub uptime: String,
    pub backend: String,
    /// A GPU was asked for and the CPU proves instead.
    pub gpu_fallback: bool,
    /// Distinct devices, `#ordinal name`, in ordinal order.
    pub devices: Vec<String>,
    pub draining: bool,
    pub sequence: u64,
}

/// The memory budget as one bar: a segment per proof kind's reservations, one for parameters,
/// and the free rest.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct MemoryBar {
    pub total: String,
    pub used: String,
    pub available: String,
    pub segments: Vec<Segment>,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Segment {
    pub label: String,
    /// CSS class: `mem-<kind>`, `mem-params` or `mem-free`.
    pub class: String,
    pub bytes: String,
    /// CSS width, e.g. `12.50%`.
    pub width: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct Synthesis {
    pub active: u32,
    /// What the free memory budget allows right now (not a config knob).
    pub max_allowed_now: u32,
    pub max_configured: u32,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct WorkerChip {
    pub worker_id: u32,
    /// `idle` or `proving`.
    pub state: &'static str,
    pub device: String,
    /// The full id of the job being proved, empty when idle.
    pub job_id: String,
    pub job_kind: &'static str,
    pub partition: Option<u32>,
    pub busy: String,
    pub proofs_done: u64,
    /// "<kind> <job id> partition N" while the partition proved preempted that one; empty
    /// otherwise.
    pub paused: String,
    /// What its device reports (shared by the device's workers); empty when it reports nothing.
    pub readings: Vec<Reading>,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Counter {
    pub label: String,
    pub value: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct QueueRow {
    pub kind: String,
    pub pending: u32,
    pub in_progress: u32,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ParamsRow {
    pub circuit_id: String,
    pub tier: &'static str,
    pub bytes: String,
    /// The part of `bytes` that is the circuit's pre-compiled matrices ("—" when none).
    pub precompiled: String,
    pub ref_count: u32,
    pub last_used: String,
}

impl Dashboard {
    /// The page for `s` as of `now_ms` on the daemon's clock: the snapshot's own time plus the
    /// time since it arrived, so ages tick between snapshots without trusting the browser's clock.
    pub fn from_snapshot(s: &StatusSnapshot, now_ms: u64) -> Dashboard {
        let since_snapshot_ms = now_ms.saturating_sub(s.taken_at_unix_ms);
        Dashboard {
            header: header(s, now_ms),
            summary: summary(s),
            memory: memory(s),
            synthesis: s
                .synthesis
                .as_ref()
                .map(|x| Synthesis {
                    active: x.active,
                    max_allowed_now: x.max_allowed_now,
                    max_configured: x.max_configured,
                })
                .unwrap_or_default(),
            workers: workers(s, since_snapshot_ms),
            jobs: job_rows(&s.jobs, now_ms),
            counters: counters(s),
            queues: s
                .queues
                .iter()
                .map(|q| QueueRow {
                    kind: q.proof_kind.clone(),
                    pending: q.pending,
                    in_progress: q.in_progress,
                })
                .collect(),
            params: s
                .params
                .iter()
                .map(|p| ParamsRow {
                    circuit_id: p.circuit_id.clone(),
                    tier: match p.tier() {
                        snarkd_proto::v1::srs_status::Tier::Hot => "hot",
                        snarkd_proto::v1::srs_status::Tier::Warm => "warm",
                        snarkd_proto::v1::srs_status::Tier::Cold => "cold",
                    },
                    bytes: format::bytes(p.bytes),
                    precompiled: match p.precompiled_bytes {
                        0 => "—".to_string(),
                        b => format::bytes(b),
                    },
                    ref_count: p.ref_count,
                    last_used: format::duration_secs(
                        p.last_used_secs_ago + since_snapshot_ms / 1000,
                    ),
                })
                .collect(),
            failures: failure_rows(&s.failures, now_ms),
        }
    }
}

fn header(s: &StatusSnapshot, now_ms: u64) -> Header {
    let daemon = s.daemon.clone().unwrap_or_default();
    let uptime_secs = match daemon.started_at_unix_ms {
        0 => daemon.uptime_seconds,
        started => now_ms.saturating_sub(started) / 1000,
    };
    let mut devices: Vec<(u32, String)> = s
        .workers
        .iter()
        .map(|w| {
            (
                w.device_ordinal,
                format!("#{} {}", w.device_ordinal, w.device_name),
            )
        })
        .collect();
    devices.sort();
    devices.dedup();
    Header {
        version: daemon.version,
        build_id: daemon.build_id,
        uptime: format::duration_secs(uptime_secs),
        backend: daemon.backend,
        gpu_fallback: daemon.gpu_fallback,
        devices: devices.into_iter().map(|(_, d)| d).collect(),
        draining: daemon.draining,
        sequence: s.sequence,
    }
}

fn memory(s: &StatusSnapshot) -> MemoryBar {
    let m = s.memory.clone().unwrap_or_default();
    let segment = |label: String, class: String, bytes: u64| Segment {
        label,
        class,
        bytes: format::bytes(bytes),
        width: format!("{:.2}%", format::percent(bytes, m.total_bytes)),
    };
    let mut segments: Vec<Segment> = m
        .reserved_by_kind
        .iter()
        .filter(|k| k.bytes > 0)
        .map(|k| {
            let kind = k.proof_kind();
            segment(
                format!("reserved: {}", labels::kind(kind)),
                format!("mem-{}", kind_slug(kind)),
                k.bytes,
            )
        })
        .collect();
    for (label, class, bytes) in [
        ("params", "mem-params", m.params_bytes),
        ("queued inputs", "mem-inputs", m.input_bytes),
        ("kept for reuse", "mem-spare", m.spare_bytes),
        ("snarkd itself", "mem-baseline", m.baseline_bytes),
    ] {
        if bytes > 0 {
            segments.push(segment(label.to_string(), class.to_string(), bytes));
        }
    }
    segments.push(segment(
        "free".to_string(),
        "mem-free".to_string(),
        m.available_bytes,
    ));
    MemoryBar {
        total: format::bytes(m.total_bytes),
        used: format::bytes(m.used_bytes),
        available: format::bytes(m.available_bytes),
        segments,
    }
}

/// A kind as a CSS-safe word (the daemon's short names, [`snarkd_types::ProofKind::as_str`]).
pub fn kind_slug(kind: ProofKind) -> &'static str {
    labels::domain_kind(kind).map_or("unknown", snarkd_types::ProofKind::as_str)
}

fn workers(s: &StatusSnapshot, since_snapshot_ms: u64) -> Vec<WorkerChip> {
    let mut chips: Vec<WorkerChip> = s
        .workers
        .iter()
        .map(|w| {
            let proving = w.state() == WorkerState::Proving;
            let busy = if proving {
                w.busy_seconds + since_snapshot_ms as f64 / 1000.0
            } else {
                w.busy_seconds
            };
            let job_kind = s
                .jobs
                .iter()
                .find(|j| proving && j.job_id == w.current_job_id)
                .map_or("", |j| labels::kind(j.proof_kind()));
            WorkerChip {
                worker_id: w.worker_id,
                state: labels::worker_state(w.state()),
                device: format!("#{} {}", w.device_ordinal, w.device_name),
                job_id: if proving {
                    w.current_job_id.clone()
                } else {
                    String::new()
                },
                job_kind,
                partition: if proving { w.current_partition } else { None },
                busy: format::duration_secs_f64(busy),
                proofs_done: w.proofs_done,
                paused: (w.paused.as_ref())
                    .filter(|_| proving)
                    .map(|p| {
                        let kind = (s.jobs.iter())
                            .find(|j| j.job_id == p.job_id)
                            .map_or("", |j| labels::kind(j.proof_kind()));
                        format!("{kind} {} partition {}", p.job_id, p.partition)
                    })
                    .unwrap_or_default(),
                readings: (s.devices.iter())
                    .find(|d| d.device_ordinal == w.device_ordinal)
                    .map(readings)
                    .unwrap_or_default(),
            }
        })
        .collect();
    chips.sort_by_key(|c| c.worker_id);
    chips
}

fn counters(s: &StatusSnapshot) -> Vec<Counter> {
    let c = s.counters.clone().unwrap_or_default();
    let mut out = vec![
        Counter {
            label: "completed".to_string(),
            value: c.total_completed,
        },
        Counter {
            label: "failed".to_string(),
            value: c.total_failed,
        },
        Counter {
            label: "cancelled".to_string(),
            value: c.total_cancelled,
        },
        Counter {
            label: "queue depth".to_string(),
            value: u64::from(c.queue_depth),
        },
    ];
    let by_kind = |list: &[snarkd_proto::v1::KindCount], what: &str, out: &mut Vec<Counter>| {
        for k in list.iter().filter(|k| k.count > 0) {
            out.push(Counter {
                label: format!("{} {what}", labels::kind(k.proof_kind())),
                value: k.count,
            });
        }
    };
    by_kind(&c.completed_by_kind, "completed", &mut out);
    by_kind(&c.failed_by_kind, "failed", &mut out);
    out
}

#[cfg(test)]
mod tests;
