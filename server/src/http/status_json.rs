//! `GET /status` in the original daemon's JSON schema, so the scripts that read it keep working:
//! `uptime_secs`, `memory`, `synthesis`, `pipelines`, `gpu_workers`, `allocations`, `counters`.
//! Optional fields are left out when unknown rather than written as null.

use std::collections::BTreeMap;

use serde::Serialize;
use snarkd_engine::lifecycle::{PartitionState, WorkerState};
use snarkd_engine::status::{DeviceTelemetry, ParamsTier};
use snarkd_engine::{ProofKind, StatusSnapshot};

#[derive(Debug, Serialize, PartialEq)]
pub struct StatusJson {
    pub uptime_secs: u64,
    pub memory: Memory,
    pub synthesis: Synthesis,
    pub pipelines: Vec<Pipeline>,
    pub gpu_workers: Vec<GpuWorker>,
    pub allocations: Allocations,
    pub counters: Counters,
    /// The devices' readings (snarkd's addition; left out when no device reports anything).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub devices: Vec<DeviceTelemetry>,
}

#[derive(Debug, Serialize, PartialEq)]
pub struct Memory {
    pub total_bytes: u64,
    pub used_bytes: u64,
    pub available_bytes: u64,
    /// Buffers of finished partitions kept for the next ones: part of `used_bytes`, given back
    /// before any work waits for room (snarkd's addition; left out when none are kept).
    #[serde(skip_serializing_if = "is_zero")]
    pub spare_bytes: u64,
}

fn is_zero(bytes: &u64) -> bool {
    *bytes == 0
}

#[derive(Debug, Serialize, PartialEq)]
pub struct Synthesis {
    /// What the free memory budget allows now (the original derived it from a config knob).
    pub max_concurrent: u32,
    pub active: u32,
}

#[derive(Debug, Serialize, PartialEq)]
pub struct Pipeline {
    /// The full job id, never shortened.
    pub job_id: String,
    pub proof_kind: &'static str,
    pub started_secs_ago: u64,
    pub total_partitions: usize,
    pub partitions_done: usize,
    pub partitions: Vec<Partition>,
}

#[derive(Debug, Serialize, PartialEq)]
pub struct Partition {
    pub index: u32,
    pub state: PartitionState,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub synth_ms: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpu_ms: Option<u64>,
}

#[derive(Debug, Serialize, PartialEq)]
pub struct GpuWorker {
    pub worker_id: u32,
    pub gpu_ordinal: u32,
    pub state: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub current_job: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub current_partition: Option<u32>,
    /// Total seconds this worker has spent proving.
    pub busy_secs: f64,
}

#[derive(Debug, Serialize, PartialEq)]
pub struct Allocations {
    pub srs: Vec<Allocation>,
    /// Pre-compiled circuits: snarkd synthesizes every partition afresh, so this stays empty.
    pub pce: Vec<Allocation>,
}

#[derive(Debug, Serialize, PartialEq)]
pub struct Allocation {
    pub circuit_id: String,
    pub bytes: u64,
    pub last_used_secs_ago: u64,
    pub evictable: bool,
}

#[derive(Debug, Serialize, PartialEq)]
pub struct Counters {
    pub total_completed: u64,
    pub total_failed: u64,
    pub completed_by_kind: BTreeMap<&'static str, u64>,
    pub failed_by_kind: BTreeMap<&'static str, u64>,
    pub queue_depth: u32,
}

/// The original schema for a snapshot, as of `now_ms`.
pub fn status_json(s: &StatusSnapshot, now_ms: u64) -> StatusJson {
    StatusJson {
        uptime_secs: s.daemon.uptime_secs(now_ms),
        memory: Memory {
            total_bytes: s.memory.total_bytes,
            used_bytes: s.memory.used_bytes,
            available_bytes: s.memory.available_bytes(),
            spare_bytes: s.memory.spare_bytes,
        },
        synthesis: Synthesis {
            max_concurrent: s.synthesis.max_allowed_now,
            active: s.synthesis.active,
        },
        pipelines: s
            .jobs
            .iter()
            .map(|j| Pipeline {
                job_id: j.job_id.clone(),
                proof_kind: j.kind.name(),
                started_secs_ago: now_ms.saturating_sub(j.submitted_at_unix_ms) / 1000,
                total_partitions: j.partitions.len(),
                partitions_done: j.partitions_done(),
                partitions: j
                    .partitions
                    .iter()
                    .map(|p| Partition {
                        index: p.index,
                        state: p.state,
                        synth_ms: p.synth_ms,
                        gpu_ms: p.gpu_ms,
                    })
                    .collect(),
            })
            .collect(),
        gpu_workers: s
            .workers
            .iter()
            .map(|w| {
                let (state, current_job, current_partition) = match &w.state {
                    WorkerState::Idle => ("idle", None, None),
                    WorkerState::Proving { job_id, partition } => {
                        ("proving", Some(job_id.clone()), Some(*partition))
                    }
                };
                GpuWorker {
                    worker_id: w.worker_id,
                    gpu_ordinal: w.device_ordinal,
                    state,
                    current_job,
                    current_partition,
                    busy_secs: w.busy_secs(now_ms),
                }
            })
            .collect(),
        allocations: Allocations {
            srs: s
                .params
                .iter()
                .filter(|p| p.tier != ParamsTier::Cold)
                .map(|p| Allocation {
                    circuit_id: p.circuit_id.clone(),
                    bytes: p.bytes.saturating_sub(p.precompiled_bytes),
                    last_used_secs_ago: p.last_used_secs_ago(now_ms),
                    evictable: p.ref_count == 0,
                })
                .collect(),
            // The pre-compiled circuits, loaded and evicted with their parameters.
            pce: s
                .params
                .iter()
                .filter(|p| p.precompiled_bytes > 0)
                .map(|p| Allocation {
                    circuit_id: p.circuit_id.clone(),
                    bytes: p.precompiled_bytes,
                    last_used_secs_ago: p.last_used_secs_ago(now_ms),
                    evictable: p.ref_count == 0,
                })
                .collect(),
        },
        counters: Counters {
            total_completed: s.counters.total_completed,
            total_failed: s.counters.total_failed,
            completed_by_kind: by_kind(&s.counters.completed_by_kind),
            failed_by_kind: by_kind(&s.counters.failed_by_kind),
            queue_depth: s.counters.queue_depth,
        },
        devices: s.devices.clone(),
    }
}

fn by_kind(counts: &[(ProofKind, u64)]) -> BTreeMap<&'static str, u64> {
    counts.iter().map(|(k, n)| (k.name(), *n)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixture::{self, RUNNING_JOB, STARTED_MS};

    #[test]
    fn status_json_has_the_original_schema() {
        let json =
            serde_json::to_value(status_json(&fixture::busy(), STARTED_MS + 20_000)).unwrap();
        let keys: Vec<_> = json.as_object().unwrap().keys().cloned().collect();
        assert_eq!(
            keys,
            [
                "allocations",
                "counters",
                "gpu_workers",
                "memory",
                "pipelines",
                "synthesis",
                "uptime_secs"
            ]
        );
        assert_eq!(json["uptime_secs"], 20);
        assert_eq!(json["memory"]["available_bytes"], 40u64 << 30);
        assert_eq!(
            json["synthesis"],
            serde_json::json!({"max_concurrent": 3, "active": 1})
        );

        let pipeline = &json["pipelines"][0];
        assert_eq!(pipeline["job_id"], RUNNING_JOB);
        assert_eq!(
            pipeline["proof_kind"], "porep-c2",
            "the original daemon's name"
        );
        assert_eq!(pipeline["started_secs_ago"], 10);
        assert_eq!(
            (
                pipeline["total_partitions"].as_u64(),
                pipeline["partitions_done"].as_u64()
            ),
            (Some(3), Some(1))
        );
        assert_eq!(
            pipeline["partitions"][0],
            serde_json::json!({"index": 0, "state": "done", "synth_ms": 1700, "gpu_ms": 1800})
        );
        assert_eq!(pipeline["partitions"][1]["state"], "gpu");
        assert_eq!(
            pipeline["partitions"][2],
            serde_json::json!({"index": 2, "state": "synthesizing"})
        );

        assert_eq!(
            json["gpu_workers"][0],
            serde_json::json!({"worker_id": 0, "gpu_ordinal": 0, "state": "proving", "current_job": RUNNING_JOB, "current_partition": 1, "busy_secs": 12.5})
        );
        assert_eq!(
            json["gpu_workers"][1],
            serde_json::json!({"worker_id": 1, "gpu_ordinal": 0, "state": "idle", "busy_secs": 2.5})
        );

        assert_eq!(json["allocations"]["srs"][0]["evictable"], false);
        assert_eq!(json["allocations"]["srs"][1]["evictable"], true);
        // The pre-compiled circuit is listed apart from the SRS it is charged with.
        assert_eq!(json["allocations"]["srs"][0]["bytes"], 36u64 << 30);
        assert_eq!(json["allocations"]["pce"][0]["circuit_id"], "porep-32g");
        assert_eq!(json["allocations"]["pce"][0]["bytes"], 9u64 << 30);
        assert_eq!(json["allocations"]["pce"][0]["evictable"], false);
        assert_eq!(json["allocations"]["pce"].as_array().unwrap().len(), 1);
        assert_eq!(
            json["counters"]["completed_by_kind"],
            serde_json::json!({"winning-post": 5}),
            "the original daemon's kind names"
        );
        assert_eq!(
            json["counters"]["failed_by_kind"],
            serde_json::json!({"porep-c2": 1})
        );
        assert_eq!(json["counters"]["queue_depth"], 4);
    }

    #[test]
    fn device_readings_are_listed_with_the_absent_ones_left_out() {
        let mut s = fixture::busy();
        assert!(serde_json::to_value(status_json(&s, STARTED_MS)).unwrap()["devices"].is_null());
        s.devices = vec![snarkd_engine::status::DeviceTelemetry {
            ordinal: 0,
            pool_used_bytes: Some(5),
            pool_limit_bytes: Some(10),
            ..Default::default()
        }];
        let json = serde_json::to_value(status_json(&s, STARTED_MS)).unwrap();
        assert_eq!(
            json["devices"],
            serde_json::json!([{"ordinal": 0, "pool_used_bytes": 5, "pool_limit_bytes": 10}])
        );
    }
}
