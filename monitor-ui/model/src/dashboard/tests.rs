use snarkd_proto::v1::{
    Counters, DaemonInfo, KindBytes, KindCount, MemoryStatus, ProofKind, StatusSnapshot,
    WorkerState, WorkerStatus,
};

use super::*;

const GIB: u64 = 1024 * 1024 * 1024;

fn worker(id: u32, state: WorkerState, job: &str, partition: Option<u32>) -> WorkerStatus {
    WorkerStatus {
        worker_id: id,
        device_ordinal: 0,
        device_name: "cpu".to_string(),
        state: state as i32,
        current_job_id: job.to_string(),
        current_partition: partition,
        busy_seconds: 2.0,
        ..Default::default()
    }
}

#[test]
fn memory_bar_has_a_segment_per_kind_then_params_inputs_spare_baseline_then_free() {
    let s = StatusSnapshot {
        memory: Some(MemoryStatus {
            total_bytes: 16 * GIB,
            used_bytes: 9 * GIB,
            available_bytes: 7 * GIB,
            params_bytes: 2 * GIB,
            input_bytes: GIB,
            spare_bytes: GIB,
            baseline_bytes: GIB,
            reserved_by_kind: vec![
                KindBytes {
                    proof_kind: ProofKind::PorepSealCommit as i32,
                    bytes: 4 * GIB,
                },
                KindBytes {
                    proof_kind: ProofKind::WinningPost as i32,
                    bytes: 0,
                },
            ],
        }),
        ..Default::default()
    };
    let bar = Dashboard::from_snapshot(&s, 0).memory;
    let seen: Vec<(&str, &str, &str)> = bar
        .segments
        .iter()
        .map(|g| (g.class.as_str(), g.bytes.as_str(), g.width.as_str()))
        .collect();
    assert_eq!(
        seen,
        [
            ("mem-porep", "4.00 GiB", "25.00%"),
            ("mem-params", "2.00 GiB", "12.50%"),
            ("mem-inputs", "1.00 GiB", "6.25%"),
            ("mem-spare", "1.00 GiB", "6.25%"),
            ("mem-baseline", "1.00 GiB", "6.25%"),
            ("mem-free", "7.00 GiB", "43.75%"),
        ]
    );
    assert_eq!(
        (bar.total.as_str(), bar.used.as_str()),
        ("16.0 GiB", "9.00 GiB")
    );
}

#[test]
fn a_proving_worker_shows_the_full_job_id_and_partition_and_an_idle_one_shows_none() {
    let id = "4a1b2c3d-0000-4000-8000-00000000abcd";
    let s = StatusSnapshot {
        taken_at_unix_ms: 10_000,
        jobs: vec![snarkd_proto::v1::JobStatus {
            job_id: id.to_string(),
            proof_kind: ProofKind::WinningPost as i32,
            ..Default::default()
        }],
        workers: vec![
            worker(1, WorkerState::Idle, "stale", Some(9)),
            worker(0, WorkerState::Proving, id, Some(3)),
        ],
        ..Default::default()
    };
    let chips = Dashboard::from_snapshot(&s, 11_500).workers;
    assert_eq!(chips[0].worker_id, 0, "chips in worker order");
    assert_eq!(chips[0].state, "proving");
    assert_eq!(chips[0].job_id, id);
    assert_eq!(chips[0].job_kind, "winning-post");
    assert_eq!(chips[0].partition, Some(3));
    assert_eq!(
        chips[0].busy, "3.5 s",
        "busy time ticks on between snapshots"
    );
    assert_eq!(chips[1].state, "idle");
    assert_eq!(chips[1].job_id, "");
    assert_eq!(chips[1].partition, None);
    assert_eq!(
        chips[1].busy, "2.0 s",
        "an idle worker's busy time stands still"
    );
    assert_eq!(chips[0].paused, "", "nothing paused under it");
    assert!(chips[0].readings.is_empty(), "the device reports nothing");
}

#[test]
fn every_worker_of_a_device_shows_that_devices_readings() {
    let on = |id: u32, ordinal: u32| WorkerStatus {
        device_ordinal: ordinal,
        ..worker(id, WorkerState::Idle, "", None)
    };
    let s = StatusSnapshot {
        workers: vec![on(0, 0), on(1, 0), on(2, 1)],
        devices: vec![snarkd_proto::v1::DeviceTelemetry {
            device_ordinal: 0,
            temperature_celsius: Some(51),
            ..Default::default()
        }],
        ..Default::default()
    };
    let chips = Dashboard::from_snapshot(&s, 0).workers;
    let temps: Vec<Vec<String>> = chips
        .iter()
        .map(|c| c.readings.iter().map(|r| r.text.clone()).collect())
        .collect();
    assert_eq!(
        temps,
        [vec!["51 °C".to_string()], vec!["51 °C".to_string()], vec![]]
    );
}

#[test]
fn a_worker_proving_a_deadline_partition_names_the_partition_it_paused() {
    let (winning, porep) = ("winning-job", "porep-job");
    let job = |id: &str, kind: ProofKind| snarkd_proto::v1::JobStatus {
        job_id: id.to_string(),
        proof_kind: kind as i32,
        ..Default::default()
    };
    let mut proving = worker(0, WorkerState::Proving, winning, Some(0));
    proving.paused = Some(snarkd_proto::v1::PausedPartition {
        job_id: porep.to_string(),
        partition: 2,
    });
    let s = StatusSnapshot {
        jobs: vec![
            job(winning, ProofKind::WinningPost),
            job(porep, ProofKind::PorepSealCommit),
        ],
        workers: vec![proving],
        ..Default::default()
    };
    let chips = Dashboard::from_snapshot(&s, 0).workers;
    assert_eq!(chips[0].paused, "porep-c2 porep-job partition 2");
}

#[test]
fn header_counts_uptime_from_the_start_and_lists_each_device_once() {
    let mut second = worker(2, WorkerState::Idle, "", None);
    second.device_ordinal = 1;
    second.device_name = "gpu".to_string();
    let s = StatusSnapshot {
        daemon: Some(DaemonInfo {
            version: "0.1.0".to_string(),
            backend: "cpu".to_string(),
            started_at_unix_ms: 1_000,
            uptime_seconds: 1,
            ..Default::default()
        }),
        workers: vec![
            second,
            worker(0, WorkerState::Idle, "", None),
            worker(1, WorkerState::Idle, "", None),
        ],
        sequence: 42,
        ..Default::default()
    };
    let h = Dashboard::from_snapshot(&s, 3_662_000).header;
    assert_eq!(h.uptime, "1h 01m");
    assert_eq!(h.devices, ["#0 cpu", "#1 gpu"]);
    assert_eq!(h.sequence, 42);
    assert_eq!(h.backend, "cpu");
    assert!(!h.gpu_fallback);
}

#[test]
fn a_daemon_that_found_no_gpu_is_marked() {
    let s = StatusSnapshot {
        daemon: Some(DaemonInfo {
            backend: "cpu".to_string(),
            gpu_fallback: true,
            ..Default::default()
        }),
        ..Default::default()
    };
    assert!(Dashboard::from_snapshot(&s, 0).header.gpu_fallback);
}

#[test]
fn counters_list_totals_then_nonzero_kinds() {
    let s = StatusSnapshot {
        counters: Some(Counters {
            total_completed: 5,
            total_failed: 1,
            queue_depth: 2,
            completed_by_kind: vec![
                KindCount {
                    proof_kind: ProofKind::WindowPostPartition as i32,
                    count: 5,
                },
                KindCount {
                    proof_kind: ProofKind::SnapDealsUpdate as i32,
                    count: 0,
                },
            ],
            ..Default::default()
        }),
        ..Default::default()
    };
    let counters: Vec<(String, u64)> = Dashboard::from_snapshot(&s, 0)
        .counters
        .into_iter()
        .map(|c| (c.label, c.value))
        .collect();
    assert_eq!(
        counters,
        [
            ("completed".to_string(), 5),
            ("failed".to_string(), 1),
            ("cancelled".to_string(), 0),
            ("queue depth".to_string(), 2),
            ("window-post completed".to_string(), 5),
        ]
    );
}

#[test]
fn an_empty_snapshot_renders_without_panicking() {
    let d = Dashboard::from_snapshot(&StatusSnapshot::default(), 0);
    assert_eq!(d.memory.segments.len(), 1, "only the free segment");
    assert!(d.jobs.is_empty() && d.workers.is_empty());
}

#[test]
fn a_params_row_names_the_pre_compiled_part_of_its_size() {
    let s = StatusSnapshot {
        params: vec![
            snarkd_proto::v1::ParamsStatus {
                circuit_id: "porep-32g".to_string(),
                bytes: 45 * GIB,
                precompiled_bytes: 9 * GIB,
                ..Default::default()
            },
            snarkd_proto::v1::ParamsStatus {
                circuit_id: "winning-32g".to_string(),
                bytes: GIB,
                ..Default::default()
            },
        ],
        ..Default::default()
    };
    let rows = Dashboard::from_snapshot(&s, 0).params;
    let seen: Vec<(&str, &str)> = rows
        .iter()
        .map(|r| (r.bytes.as_str(), r.precompiled.as_str()))
        .collect();
    assert_eq!(seen, [("45.0 GiB", "9.00 GiB"), ("1.00 GiB", "—")]);
}
