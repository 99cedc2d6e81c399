//! Read-only snapshots of the engine's state: what `GetStatus`, `StreamStatus`, `GET /status` and
//! the dashboard show. The engine's single writer publishes a new `Arc<StatusSnapshot>` when the
//! state changes, and only then; readers never see a half-applied transition. A snapshot holds
//! instants, not ages (a start time, not an uptime), so it stays true while nothing changes and
//! readers work out ages as of the moment they show them.

use std::sync::Arc;

use crate::domain::{Priority, ProofKind};
use crate::failures::Failure;
use crate::history::History;
pub use crate::lifecycle::JobState;
use crate::lifecycle::{PartitionState, WorkerState};
pub use crate::prover::DeviceTelemetry;

/// The jobs of a snapshot in submit order, each view shared with the snapshots before it that
/// showed the job the same.
pub type JobViews = crate::chunked_map::ChunkedMap<JobStatus>;
pub use crate::chunked_map::ChunkedMap;

/// Everything a dashboard draws. It holds no time that moves by itself, so two snapshots of one
/// state are equal; readers reckon ages as of when they show them.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct StatusSnapshot {
    pub daemon: DaemonInfo,
    pub memory: MemoryStatus,
    pub synthesis: SynthesisStatus,
    /// Queued, running and recently finished jobs, oldest submit first.
    pub jobs: JobViews,
    pub workers: Vec<WorkerStatus>,
    pub params: Vec<ParamsStatus>,
    pub counters: Counters,
    /// One entry per proof kind.
    pub queues: Vec<QueueStatus>,
    /// The last failed jobs and refused requests, newest first (`failures::FAILURE_LOG_LEN`).
    pub failures: Arc<[Failure]>,
    /// Jobs ended and worker stints of the last hour, for rates, percentiles and utilisation
    /// over a window (reckoned by readers as of when they show them).
    pub history: Arc<History>,
    /// The devices' latest readings, by ordinal; devices that report nothing are absent.
    pub devices: Vec<DeviceTelemetry>,
    /// Increases with every change; equal sequences mean equal state.
    pub sequence: u64,
}

#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct DaemonInfo {
    pub version: String,
    pub build_id: String,
    pub backend: String,
    /// A GPU was asked for and the CPU proves instead.
    pub gpu_fallback: bool,
    pub started_at_unix_ms: u64,
    /// Intake stopped for shutdown; queued and running jobs still finish.
    pub draining: bool,
    /// Why the job journal cannot be written, while it cannot: new work is refused.
    pub journal_unwritable: Option<String>,
    /// Jobs read back from the journal at startup that recovery has not planned again yet
    /// (shown among the jobs as queued), not counting those waiting for their params (those
    /// say so in their `error`).
    pub recovering_jobs: u32,
}

impl DaemonInfo {
    /// Whole seconds the daemon has run as of `now_ms`.
    pub fn uptime_secs(&self, now_ms: u64) -> u64 {
        now_ms.saturating_sub(self.started_at_unix_ms) / 1000
    }
}

#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct MemoryStatus {
    pub total_bytes: u64,
    /// Everything charged: the baseline, queued inputs, partition reservations, loaded params.
    pub used_bytes: u64,
    pub params_bytes: u64,
    /// The daemon's own memory after startup.
    pub baseline_bytes: u64,
    /// The inputs of unfinished jobs.
    pub input_bytes: u64,
    /// Buffers of finished partitions kept for the next ones (given back before any work
    /// waits for room).
    pub spare_bytes: u64,
    /// Partition reservations by kind (kinds with none are left out).
    pub reserved_by_kind: Vec<(ProofKind, u64)>,
}

impl MemoryStatus {
    pub fn available_bytes(&self) -> u64 {
        self.total_bytes.saturating_sub(self.used_bytes)
    }
}

#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct SynthesisStatus {
    pub active: u32,
    /// How many syntheses the free budget (and the synthesis lookahead, if set) allows right
    /// now, active ones included.
    pub max_allowed_now: u32,
    /// The configured thread ceiling.
    pub max_configured: u32,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct JobStatus {
    /// The full job id, never shortened.
    pub job_id: String,
    pub request_id: String,
    pub kind: ProofKind,
    pub priority: Priority,
    pub circuit_id: String,
    pub submitted_at_unix_ms: u64,
    pub finished_at_unix_ms: Option<u64>,
    pub state: JobState,
    pub error: Option<String>,
    pub partitions: Vec<PartitionStatus>,
}

impl JobStatus {
    pub fn partitions_done(&self) -> usize {
        self.partitions
            .iter()
            .filter(|p| p.state == PartitionState::Done)
            .count()
    }
}

#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct PartitionStatus {
    pub index: u32,
    pub state: PartitionState,
    pub synth_ms: Option<u64>,
    pub gpu_ms: Option<u64>,
    /// The worker that ran (or runs) the device phase.
    pub worker_id: Option<u32>,
    pub reserved_bytes: u64,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct WorkerStatus {
    pub worker_id: u32,
    pub device_ordinal: u32,
    pub device_name: String,
    pub device_memory_bytes: u64,
    pub state: WorkerState,
    /// The partition whose device phase is paused under the one shown proving (preempted by a
    /// deadline partition; it goes on when that one is done).
    pub paused: Option<PausedPartition>,
    /// Device-phase seconds of the worker's finished stints.
    pub busy_secs_done: f64,
    /// When the current stint began, while the worker proves.
    pub busy_since_unix_ms: Option<u64>,
    pub proofs_done: u64,
}

impl WorkerStatus {
    /// Device-phase seconds as of `now_ms`, the current stint included.
    pub fn busy_secs(&self, now_ms: u64) -> f64 {
        let running = self
            .busy_since_unix_ms
            .map_or(0, |since| now_ms.saturating_sub(since));
        self.busy_secs_done + running as f64 / 1000.0
    }
}

/// A device phase paused at a step boundary for a deadline partition.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct PausedPartition {
    pub job_id: String,
    pub partition: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ParamsTier {
    /// In memory and in use by a job.
    Hot,
    /// In memory, idle, evictable.
    Warm,
    /// Known but not loaded.
    Cold,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ParamsStatus {
    pub circuit_id: String,
    pub tier: ParamsTier,
    pub bytes: u64,
    /// The part of `bytes` that is the circuit's pre-compiled matrices (0: none).
    pub precompiled_bytes: u64,
    pub ref_count: u32,
    /// When a job last used them (or they were loaded).
    pub last_used_unix_ms: u64,
}

impl ParamsStatus {
    /// Whole seconds since a job last used them, as of `now_ms`.
    pub fn last_used_secs_ago(&self, now_ms: u64) -> u64 {
        now_ms.saturating_sub(self.last_used_unix_ms) / 1000
    }
}

#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct Counters {
    pub total_completed: u64,
    pub total_failed: u64,
    pub total_cancelled: u64,
    pub completed_by_kind: Vec<(ProofKind, u64)>,
    pub failed_by_kind: Vec<(ProofKind, u64)>,
    /// Partitions waiting for admission or a worker.
    pub queue_depth: u32,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct QueueStatus {
    pub kind: ProofKind,
    /// Jobs not yet started.
    pub pending: u32,
    /// Jobs with at least one partition started and not finished.
    pub in_progress: u32,
}
