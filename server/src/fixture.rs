//! A busy engine snapshot for unit tests of the status conversions (test builds only).

use snarkd_engine::lifecycle::{PartitionState, WorkerState};
use snarkd_engine::status::*;
use snarkd_engine::{Priority, ProofKind, StatusSnapshot};

pub const STARTED_MS: u64 = 1_700_000_000_000;
/// The moment the tests read the snapshot at: 20 s after the start.
pub const TAKEN_MS: u64 = STARTED_MS + 20_000;
pub const RUNNING_JOB: &str = "0b9f6c1e-5f7a-4b7e-9a51-3f1f2a9c7d10";
pub const DONE_JOB: &str = "7d3c2b1a-0000-4000-8000-000000000002";

fn partition(
    index: u32,
    state: PartitionState,
    synth_ms: Option<u64>,
    gpu_ms: Option<u64>,
    worker_id: Option<u32>,
) -> PartitionStatus {
    PartitionStatus {
        index,
        state,
        synth_ms,
        gpu_ms,
        worker_id,
        reserved_bytes: 1 << 20,
    }
}

/// One running PoRep job (partition 1 on worker 0), one finished WinningPoSt, two workers on
/// one device, one hot and one warm parameter set.
pub fn busy() -> StatusSnapshot {
    StatusSnapshot {
        daemon: DaemonInfo {
            version: "0.1.0".into(),
            build_id: "abc".into(),
            backend: "cpu".into(),
            gpu_fallback: false,
            started_at_unix_ms: STARTED_MS,
            draining: false,
            journal_unwritable: None,
            recovering_jobs: 0,
        },
        memory: MemoryStatus {
            total_bytes: 100 << 30,
            used_bytes: 60 << 30,
            params_bytes: 47 << 30,
            baseline_bytes: 0,
            input_bytes: 0,
            spare_bytes: 0,
            reserved_by_kind: vec![(ProofKind::PorepSealCommit, 13 << 30)],
        },
        synthesis: SynthesisStatus {
            active: 1,
            max_allowed_now: 3,
            max_configured: 16,
        },
        jobs: [
            JobStatus {
                job_id: RUNNING_JOB.into(),
                request_id: "sector-42".into(),
                kind: ProofKind::PorepSealCommit,
                priority: Priority::Normal,
                circuit_id: "porep-32g".into(),
                submitted_at_unix_ms: STARTED_MS + 10_000,
                finished_at_unix_ms: None,
                state: JobState::Running,
                error: None,
                partitions: vec![
                    partition(0, PartitionState::Done, Some(1700), Some(1800), Some(1)),
                    partition(1, PartitionState::Gpu, Some(1650), None, Some(0)),
                    partition(2, PartitionState::Synthesizing, None, None, None),
                ],
            },
            JobStatus {
                job_id: DONE_JOB.into(),
                request_id: String::new(),
                kind: ProofKind::WinningPost,
                priority: Priority::Critical,
                circuit_id: "winning-32g".into(),
                submitted_at_unix_ms: STARTED_MS + 5_000,
                finished_at_unix_ms: Some(STARTED_MS + 6_000),
                state: JobState::Completed,
                error: None,
                partitions: vec![partition(
                    0,
                    PartitionState::Done,
                    Some(100),
                    Some(700),
                    Some(1),
                )],
            },
        ]
        .into_iter()
        .collect(),
        workers: vec![
            WorkerStatus {
                paused: None,
                worker_id: 0,
                device_ordinal: 0,
                device_name: "cpu".into(),
                device_memory_bytes: 24 << 30,
                state: WorkerState::Proving {
                    job_id: RUNNING_JOB.into(),
                    partition: 1,
                },
                busy_secs_done: 10.5,
                busy_since_unix_ms: Some(TAKEN_MS - 2_000),
                proofs_done: 3,
            },
            WorkerStatus {
                paused: None,
                worker_id: 1,
                device_ordinal: 0,
                device_name: "cpu".into(),
                device_memory_bytes: 24 << 30,
                state: WorkerState::Idle,
                busy_secs_done: 2.5,
                busy_since_unix_ms: None,
                proofs_done: 2,
            },
        ],
        params: vec![
            ParamsStatus {
                circuit_id: "porep-32g".into(),
                tier: ParamsTier::Hot,
                bytes: 45 << 30,
                precompiled_bytes: 9 << 30,
                ref_count: 1,
                last_used_unix_ms: TAKEN_MS,
            },
            ParamsStatus {
                circuit_id: "winning-32g".into(),
                tier: ParamsTier::Warm,
                bytes: 184 << 20,
                precompiled_bytes: 0,
                ref_count: 0,
                last_used_unix_ms: TAKEN_MS - 9_000,
            },
        ],
        counters: Counters {
            total_completed: 5,
            total_failed: 1,
            total_cancelled: 2,
            completed_by_kind: vec![(ProofKind::WinningPost, 5)],
            failed_by_kind: vec![(ProofKind::PorepSealCommit, 1)],
            queue_depth: 4,
        },
        queues: ProofKind::ALL
            .iter()
            .map(|&kind| QueueStatus {
                kind,
                pending: u32::from(kind == ProofKind::PorepSealCommit) * 2,
                in_progress: u32::from(kind == ProofKind::PorepSealCommit),
            })
            .collect(),
        failures: vec![snarkd_engine::failures::Failure {
            at_unix_ms: STARTED_MS + 5_000,
            kind: Some(ProofKind::PorepSealCommit),
            request_id: "sector-41".into(),
            what: snarkd_engine::failures::Failed::Job {
                job_id: "a-failed-job".into(),
                stage: snarkd_engine::failures::FailureStage::Device,
            },
            class: snarkd_engine::FailureClass::Device,
            message: "partition 0 device phase failed: out of memory".into(),
        }]
        .into(),
        history: std::sync::Arc::new(history()),
        devices: Vec::new(),
        sequence: 77,
    }
}

/// The WinningPoSt proofs of the counters: five completed (1 to 5 s, 2 s apart, the last one
/// the finished job), and worker 1's stints (worker 0 is still busy, see `busy_since`).
fn history() -> snarkd_engine::history::History {
    let mut h = snarkd_engine::history::History::default();
    for i in 0..5u64 {
        h.job_ended(snarkd_engine::history::Ended {
            at_unix_ms: STARTED_MS + 8_000 + 2_000 * i,
            kind: ProofKind::WinningPost,
            total_ms: 1_000 * (i + 1),
            failed: false,
        });
    }
    h.stint_ended(snarkd_engine::history::Stint {
        from_unix_ms: STARTED_MS + 1_000,
        to_unix_ms: STARTED_MS + 3_500,
    });
    h
}
