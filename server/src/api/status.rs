//! Engine snapshots → `GetStatusResponse` (Curio's backpressure view) and `StatusSnapshot` (the
//! StreamStatus feed). Both are computed from one immutable snapshot, so they never disagree.

use std::collections::BTreeMap;
use std::time::{SystemTime, UNIX_EPOCH};

use snarkd_engine::failures::Failure;
use snarkd_engine::lifecycle::{PartitionState, WorkerState};
use snarkd_engine::status::{self as st, JobState, ParamsTier};
use snarkd_engine::{ProofKind, StatusSnapshot};
use snarkd_proto::v1 as pb;

use super::outcome::{kind_to_pb, priority_to_pb};
use super::summary;

/// Milliseconds since the Unix epoch, now.
pub fn now_unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// The answer to GetStatus.
pub fn get_status(s: &StatusSnapshot, now_ms: u64) -> pb::GetStatusResponse {
    pb::GetStatusResponse {
        gpus: gpus(s),
        loaded_srs: s
            .params
            .iter()
            .map(|p| pb::SrsStatus {
                circuit_id: p.circuit_id.clone(),
                tier: tier_to_pb(p.tier) as i32,
                size_bytes: p.bytes,
                ref_count: p.ref_count,
            })
            .collect(),
        queues: queues(s),
        total_proofs_completed: s.counters.total_completed,
        total_proofs_failed: s.counters.total_failed,
        uptime_seconds: s.daemon.uptime_secs(now_ms),
        pinned_memory_bytes: s.memory.used_bytes,
        pinned_memory_limit_bytes: s.memory.total_bytes,
    }
}

/// One entry per device (workers of a device share it); the current job is the first proving
/// worker's. The CPU backend's device memory is the memory budget: its total, and what is free
/// of it now (what a scheduler asking for free device memory wants to know). A GPU's free memory
/// is NVML's reading where there is one (0 otherwise: unknown).
fn gpus(s: &StatusSnapshot) -> Vec<pb::GpuStatus> {
    let on_cpu = s.daemon.backend == "cpu";
    let kinds: BTreeMap<&str, ProofKind> =
        s.jobs.iter().map(|j| (j.job_id.as_str(), j.kind)).collect();
    let mut devices: BTreeMap<u32, pb::GpuStatus> = BTreeMap::new();
    for w in &s.workers {
        let gpu = devices
            .entry(w.device_ordinal)
            .or_insert_with(|| pb::GpuStatus {
                ordinal: w.device_ordinal,
                name: w.device_name.clone(),
                vram_total_bytes: if on_cpu {
                    s.memory.total_bytes
                } else {
                    w.device_memory_bytes
                },
                vram_free_bytes: if on_cpu {
                    s.memory.available_bytes()
                } else {
                    nvml_free_bytes(s, w.device_ordinal).unwrap_or(0)
                },
                ..Default::default()
            });
        if let WorkerState::Proving { job_id, .. } = &w.state {
            if gpu.current_job_id.is_empty() {
                gpu.current_job_id = job_id.clone();
                gpu.current_proof_kind = kinds
                    .get(job_id.as_str())
                    .map(|k| k.name().to_string())
                    .unwrap_or_default();
            }
        }
    }
    devices.into_values().collect()
}

fn nvml_free_bytes(s: &StatusSnapshot, ordinal: u32) -> Option<u64> {
    let d = s.devices.iter().find(|d| d.ordinal == ordinal)?;
    Some(d.memory_total_bytes?.saturating_sub(d.memory_used_bytes?))
}

/// The queues, each kind by its one shown name ([`ProofKind::name`]: the original daemon's), in
/// GetStatus as in the status stream.
fn queues(s: &StatusSnapshot) -> Vec<pb::QueueStatus> {
    s.queues
        .iter()
        .map(|q| pb::QueueStatus {
            proof_kind: q.kind.name().to_string(),
            pending: q.pending,
            in_progress: q.in_progress,
        })
        .collect()
}

/// The StreamStatus message for a snapshot as of `now_ms` (its `taken_at_unix_ms`, and the
/// moment its uptime, busy times and params ages are reckoned at); with `job_ids`, only those
/// jobs are listed. Streams send the same message encoded once (see `encoded.rs`); this one
/// is the reference the tests hold those encodings to.
#[cfg(test)]
pub fn snapshot(s: &StatusSnapshot, job_ids: &[String], now_ms: u64) -> pb::StatusSnapshot {
    pb::StatusSnapshot {
        jobs: s
            .jobs
            .iter()
            .filter(|j| job_ids.is_empty() || job_ids.contains(&j.job_id))
            .map(job)
            .collect(),
        ..without_jobs(s, now_ms)
    }
}

/// The StreamStatus message for a snapshot as of `now_ms`, `jobs` left empty.
pub fn without_jobs(s: &StatusSnapshot, now_ms: u64) -> pb::StatusSnapshot {
    let reckoned = summary::Reckoned::at(s, now_ms);
    pb::StatusSnapshot {
        daemon: Some(pb::DaemonInfo {
            version: s.daemon.version.clone(),
            build_id: s.daemon.build_id.clone(),
            uptime_seconds: s.daemon.uptime_secs(now_ms),
            backend: s.daemon.backend.clone(),
            gpu_fallback: s.daemon.gpu_fallback,
            started_at_unix_ms: s.daemon.started_at_unix_ms,
            draining: s.daemon.draining,
        }),
        memory: Some(pb::MemoryStatus {
            total_bytes: s.memory.total_bytes,
            used_bytes: s.memory.used_bytes,
            available_bytes: s.memory.available_bytes(),
            params_bytes: s.memory.params_bytes,
            baseline_bytes: s.memory.baseline_bytes,
            input_bytes: s.memory.input_bytes,
            spare_bytes: s.memory.spare_bytes,
            reserved_by_kind: s
                .memory
                .reserved_by_kind
                .iter()
                .map(|(k, b)| pb::KindBytes {
                    proof_kind: kind_to_pb(*k) as i32,
                    bytes: *b,
                })
                .collect(),
        }),
        synthesis: Some(pb::SynthesisStatus {
            active: s.synthesis.active,
            max_allowed_now: s.synthesis.max_allowed_now,
            max_configured: s.synthesis.max_configured,
        }),
        jobs: Vec::new(),
        workers: s.workers.iter().map(|w| worker(w, now_ms)).collect(),
        params: s
            .params
            .iter()
            .map(|p| pb::ParamsStatus {
                circuit_id: p.circuit_id.clone(),
                tier: tier_to_pb(p.tier) as i32,
                bytes: p.bytes,
                ref_count: p.ref_count,
                last_used_secs_ago: p.last_used_secs_ago(now_ms),
                precompiled_bytes: p.precompiled_bytes,
            })
            .collect(),
        counters: Some(pb::Counters {
            total_completed: s.counters.total_completed,
            total_failed: s.counters.total_failed,
            total_cancelled: s.counters.total_cancelled,
            completed_by_kind: kind_counts(&s.counters.completed_by_kind),
            failed_by_kind: kind_counts(&s.counters.failed_by_kind),
            queue_depth: s.counters.queue_depth,
        }),
        queues: queues(s),
        sequence: s.sequence,
        taken_at_unix_ms: now_ms,
        failures: s.failures.iter().map(failure).collect(),
        summary: reckoned.kinds,
        history: reckoned.minutes,
        worker_busy_share_5m: reckoned.busy_shares.0,
        worker_busy_share_1h: reckoned.busy_shares.1,
        load: s
            .history
            .load()
            .map(|b| pb::LoadSample {
                start_unix_ms: b.start_unix_ms,
                memory_used_bytes: b.peak.memory_used_bytes,
                waiting_for_admission: b.peak.waiting_for_admission,
                synthesizing: b.peak.synthesizing,
                waiting_for_worker: b.peak.waiting_for_worker,
                on_worker: b.peak.on_worker,
            })
            .collect(),
        devices: s.devices.iter().map(device).collect(),
    }
}

fn device(d: &st::DeviceTelemetry) -> pb::DeviceTelemetry {
    pb::DeviceTelemetry {
        device_ordinal: d.ordinal,
        utilization_percent: d.utilization_percent,
        memory_used_bytes: d.memory_used_bytes,
        memory_total_bytes: d.memory_total_bytes,
        temperature_celsius: d.temperature_celsius,
        power_milliwatts: d.power_milliwatts,
        pool_used_bytes: d.pool_used_bytes,
        pool_limit_bytes: d.pool_limit_bytes,
        warming: d.warming.clone(),
    }
}

fn failure(f: &Failure) -> pb::Failure {
    pb::Failure {
        at_unix_ms: f.at_unix_ms,
        proof_kind: f.kind.map_or(pb::ProofKind::Unspecified, kind_to_pb) as i32,
        request_id: f.request_id.clone(),
        job_id: f.what.job_id().unwrap_or_default().to_string(),
        stage: f.what.stage_name().to_string(),
        code: f.what.code().unwrap_or_default().to_string(),
        message: f.message.clone(),
        class: f.class.as_str().to_string(),
    }
}

/// One entry of `jobs`.
pub fn job(j: &st::JobStatus) -> pb::JobStatus {
    pb::JobStatus {
        job_id: j.job_id.clone(),
        request_id: j.request_id.clone(),
        proof_kind: kind_to_pb(j.kind) as i32,
        priority: priority_to_pb(j.priority) as i32,
        submitted_at_unix_ms: j.submitted_at_unix_ms,
        state: job_state_to_pb(j.state) as i32,
        partitions: j
            .partitions
            .iter()
            .map(|p| pb::PartitionStatus {
                index: p.index,
                state: partition_state_to_pb(p.state) as i32,
                synth_ms: p.synth_ms,
                gpu_ms: p.gpu_ms,
                worker_id: p.worker_id,
                reserved_bytes: p.reserved_bytes,
            })
            .collect(),
        error_message: j.error.clone().unwrap_or_default(),
        finished_at_unix_ms: j.finished_at_unix_ms.unwrap_or(0),
        circuit_id: j.circuit_id.clone(),
    }
}

fn worker(w: &st::WorkerStatus, now_ms: u64) -> pb::WorkerStatus {
    let (state, current_job_id, current_partition) = match &w.state {
        WorkerState::Idle => (pb::WorkerState::Idle, String::new(), None),
        WorkerState::Proving { job_id, partition } => {
            (pb::WorkerState::Proving, job_id.clone(), Some(*partition))
        }
    };
    pb::WorkerStatus {
        worker_id: w.worker_id,
        device_ordinal: w.device_ordinal,
        device_name: w.device_name.clone(),
        state: state as i32,
        current_job_id,
        current_partition,
        busy_seconds: w.busy_secs(now_ms),
        proofs_done: w.proofs_done,
        device_memory_bytes: w.device_memory_bytes,
        paused: w.paused.as_ref().map(|p| pb::PausedPartition {
            job_id: p.job_id.clone(),
            partition: p.partition,
        }),
    }
}

fn kind_counts(counts: &[(ProofKind, u64)]) -> Vec<pb::KindCount> {
    counts
        .iter()
        .map(|(k, n)| pb::KindCount {
            proof_kind: kind_to_pb(*k) as i32,
            count: *n,
        })
        .collect()
}

fn tier_to_pb(tier: ParamsTier) -> pb::srs_status::Tier {
    match tier {
        ParamsTier::Hot => pb::srs_status::Tier::Hot,
        ParamsTier::Warm => pb::srs_status::Tier::Warm,
        ParamsTier::Cold => pb::srs_status::Tier::Cold,
    }
}

fn job_state_to_pb(state: JobState) -> pb::JobState {
    match state {
        JobState::Queued => pb::JobState::Queued,
        JobState::Running => pb::JobState::Running,
        JobState::Completed => pb::JobState::Completed,
        JobState::Failed => pb::JobState::Failed,
        JobState::Cancelled => pb::JobState::Cancelled,
    }
}

fn partition_state_to_pb(state: PartitionState) -> pb::PartitionState {
    match state {
        PartitionState::Pending => pb::PartitionState::Pending,
        PartitionState::Synthesizing => pb::PartitionState::Synthesizing,
        PartitionState::SynthDone => pb::PartitionState::SynthDone,
        PartitionState::Gpu => pb::PartitionState::Gpu,
        PartitionState::Done => pb::PartitionState::Done,
        PartitionState::Failed => pb::PartitionState::Failed,
        PartitionState::Cancelled => pb::PartitionState::Cancelled,
    }
}

#[cfg(test)]
#[path = "status_tests.rs"]
mod tests;
