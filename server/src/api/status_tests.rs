use super::*;
use crate::fixture::{self, DONE_JOB, RUNNING_JOB, STARTED_MS};

#[test]
fn get_status_reports_devices_queues_and_memory() {
    let r = get_status(&fixture::busy(), STARTED_MS + 65_000);
    assert_eq!(r.uptime_seconds, 65);
    // Two workers on device 0 make one GPU entry carrying the proving worker's job.
    assert_eq!(r.gpus.len(), 1);
    assert_eq!(r.gpus[0].current_job_id, RUNNING_JOB);
    assert_eq!(
        r.gpus[0].current_proof_kind, "porep-c2",
        "the original daemon's name"
    );
    // On the CPU backend the device's memory is the budget, and free is what is free of it.
    assert_eq!(
        (r.gpus[0].vram_total_bytes, r.gpus[0].vram_free_bytes),
        (100 << 30, 40 << 30)
    );
    // Curio's backpressure: the sum over queues of pending + in_progress.
    let load: u32 = r.queues.iter().map(|q| q.pending + q.in_progress).sum();
    assert_eq!(load, 3);
    let names: Vec<_> = r.queues.iter().map(|q| q.proof_kind.as_str()).collect();
    assert_eq!(
        names,
        ["porep-c2", "snap-update", "window-post", "winning-post"],
        "GetStatus names the queues as the original daemon does"
    );
    let stream = snapshot(&fixture::busy(), &[], STARTED_MS + 65_000);
    let names: Vec<_> = stream
        .queues
        .iter()
        .map(|q| q.proof_kind.as_str())
        .collect();
    assert_eq!(
        names,
        ["porep-c2", "snap-update", "window-post", "winning-post"],
        "the stream names them as GetStatus does"
    );
    assert_eq!((r.total_proofs_completed, r.total_proofs_failed), (5, 1));
    assert_eq!(
        (r.pinned_memory_bytes, r.pinned_memory_limit_bytes),
        (60 << 30, 100 << 30)
    );
    let tiers: Vec<_> = r
        .loaded_srs
        .iter()
        .map(|s| (s.circuit_id.as_str(), s.tier))
        .collect();
    assert_eq!(
        tiers,
        [
            ("porep-32g", pb::srs_status::Tier::Hot as i32),
            ("winning-32g", pb::srs_status::Tier::Warm as i32)
        ]
    );
}

#[test]
fn snapshot_carries_full_job_ids_partitions_and_workers() {
    let s = snapshot(&fixture::busy(), &[], STARTED_MS + 20_000);
    assert_eq!(s.sequence, 77);
    assert_eq!(s.jobs.len(), 2);
    let job = &s.jobs[0];
    assert_eq!(job.job_id, RUNNING_JOB);
    assert_eq!(job.state, pb::JobState::Running as i32);
    assert_eq!(job.priority, pb::Priority::Normal as i32);
    assert_eq!(job.partitions[0].state, pb::PartitionState::Done as i32);
    assert_eq!(
        (job.partitions[0].synth_ms, job.partitions[0].gpu_ms),
        (Some(1700), Some(1800))
    );
    assert_eq!(job.partitions[1].worker_id, Some(0));
    assert_eq!(job.partitions[2].synth_ms, None);
    assert_eq!(s.jobs[1].finished_at_unix_ms, STARTED_MS + 6_000);
    assert_eq!(s.workers[0].state, pb::WorkerState::Proving as i32);
    assert_eq!(s.workers[0].current_partition, Some(1));
    assert_eq!(s.workers[1].state, pb::WorkerState::Idle as i32);
    assert_eq!(s.workers[1].current_job_id, "");
    let memory = s.memory.unwrap();
    assert_eq!(memory.available_bytes, 40 << 30);
    assert_eq!(
        memory.reserved_by_kind[0].proof_kind,
        pb::ProofKind::PorepSealCommit as i32
    );
    assert_eq!(s.synthesis.unwrap().max_allowed_now, 3);
    assert_eq!(s.counters.unwrap().total_cancelled, 2);
    assert_eq!(s.daemon.unwrap().uptime_seconds, 20);
}

#[test]
fn snapshot_filters_jobs_by_id() {
    let s = snapshot(&fixture::busy(), &[DONE_JOB.to_string()], STARTED_MS);
    let ids: Vec<_> = s.jobs.iter().map(|j| j.job_id.as_str()).collect();
    assert_eq!(ids, [DONE_JOB]);
    // Everything else stays whole.
    assert_eq!(s.workers.len(), 2);
}

#[test]
fn snapshot_carries_params_worker_figures_and_job_times() {
    let mut busy = fixture::busy();
    busy.workers[0].device_name = "NVIDIA GeForce RTX 5070 Ti".into();
    busy.workers[1].device_name = "pthread-AMD EPYC 7763".into();
    busy.workers[0].paused = Some(st::PausedPartition {
        job_id: DONE_JOB.into(),
        partition: 4,
    });
    let s = snapshot(&busy, &[], STARTED_MS + 20_000);

    let params: Vec<_> = s
        .params
        .iter()
        .map(|p| {
            (
                p.circuit_id.as_str(),
                p.tier,
                p.bytes,
                p.ref_count,
                p.last_used_secs_ago,
            )
        })
        .collect();
    assert_eq!(
        params,
        [
            (
                "porep-32g",
                pb::srs_status::Tier::Hot as i32,
                45 << 30,
                1,
                0
            ),
            (
                "winning-32g",
                pb::srs_status::Tier::Warm as i32,
                184 << 20,
                0,
                9
            ),
        ]
    );

    let workers: Vec<_> = s
        .workers
        .iter()
        .map(|w| {
            (
                w.worker_id,
                w.device_name.as_str(),
                w.busy_seconds,
                w.proofs_done,
                w.device_memory_bytes,
            )
        })
        .collect();
    assert_eq!(
        workers,
        [
            (0, "NVIDIA GeForce RTX 5070 Ti", 12.5, 3, 24 << 30),
            (1, "pthread-AMD EPYC 7763", 2.5, 2, 24 << 30),
        ]
    );
    let paused = s.workers[0]
        .paused
        .as_ref()
        .expect("worker 0 pauses a partition");
    assert_eq!((paused.job_id.as_str(), paused.partition), (DONE_JOB, 4));
    assert_eq!(s.workers[1].paused, None);

    assert_eq!(s.memory.unwrap().params_bytes, 47 << 30);
    let submitted: Vec<_> = s.jobs.iter().map(|j| j.submitted_at_unix_ms).collect();
    assert_eq!(submitted, [STARTED_MS + 10_000, STARTED_MS + 5_000]);
    assert_eq!(s.jobs[0].request_id, "sector-42");
    assert_eq!(s.jobs[0].circuit_id, "porep-32g");
    assert_eq!(s.jobs[1].priority, pb::Priority::Critical as i32);
    assert_eq!(s.taken_at_unix_ms, STARTED_MS + 20_000);

    // GetStatus names the device after its first worker and reports the params' sizes.
    let r = get_status(&busy, STARTED_MS);
    assert_eq!(r.gpus[0].name, "NVIDIA GeForce RTX 5070 Ti");
    let sizes: Vec<_> = r
        .loaded_srs
        .iter()
        .map(|p| (p.size_bytes, p.ref_count))
        .collect();
    assert_eq!(sizes, [(45 << 30, 1), (184 << 20, 0)]);
}

#[test]
fn a_snapshot_sent_later_reckons_its_ages_as_of_then() {
    // A heartbeat repeats an unchanged snapshot: its uptime, busy time and params ages are
    // reckoned as of the moment it is sent, which is its taken_at.
    let later = fixture::TAKEN_MS + 30_000;
    let s = snapshot(&fixture::busy(), &[], later);
    assert_eq!(s.taken_at_unix_ms, later);
    assert_eq!(s.daemon.unwrap().uptime_seconds, 50);
    let busy: Vec<f64> = s.workers.iter().map(|w| w.busy_seconds).collect();
    // Worker 0 is still proving: 30 s more; worker 1 is idle: unchanged.
    assert_eq!(busy, [42.5, 2.5]);
    let ages: Vec<u64> = s.params.iter().map(|p| p.last_used_secs_ago).collect();
    assert_eq!(ages, [30, 39]);
}

#[test]
fn a_message_carries_the_summary_failures_and_minutes_as_of_its_time() {
    let s = snapshot(&fixture::busy(), &[], fixture::TAKEN_MS);
    let porep = kind_row(&s, pb::ProofKind::PorepSealCommit);
    // The running PoRep job: one partition on a worker, one synthesizing, one done.
    assert_eq!(
        (
            porep.waiting_for_admission,
            porep.synthesizing,
            porep.waiting_for_worker,
            porep.on_worker
        ),
        (0, 1, 0, 1)
    );
    let winning = kind_row(&s, pb::ProofKind::WinningPost);
    assert_eq!(
        (
            winning.completed_5m,
            winning.completed_1h,
            winning.failed_1h
        ),
        (5, 5, 0)
    );
    assert_eq!((winning.p50_ms_1h, winning.p99_ms_1h), (3_000, 5_000));
    assert_eq!(s.history.len(), 60, "a bucket per minute of the hour");
    let ended: u32 = s
        .history
        .iter()
        .flat_map(|b| &b.ended)
        .map(|e| e.completed)
        .sum();
    assert_eq!(ended, 5);
    // Worker 1 was busy 2.5 s, worker 0 since 2 s before: 4.5 s of 2 × 5 minutes.
    assert!(
        (s.worker_busy_share_5m - 4.5 / 600.0).abs() < 1e-9,
        "{}",
        s.worker_busy_share_5m
    );
    let [f] = &s.failures[..] else {
        panic!("{:?}", s.failures)
    };
    assert_eq!(
        (f.stage.as_str(), f.job_id.as_str()),
        ("device", "a-failed-job")
    );
    assert_eq!(f.proof_kind, pb::ProofKind::PorepSealCommit as i32);

    // Ten minutes on, the 5-minute window is empty but the hour still holds them.
    let later = snapshot(&fixture::busy(), &[], fixture::TAKEN_MS + 600_000);
    let winning = kind_row(&later, pb::ProofKind::WinningPost);
    assert_eq!((winning.completed_5m, winning.completed_1h), (0, 5));
}

fn kind_row(s: &pb::StatusSnapshot, kind: pb::ProofKind) -> &pb::KindSummary {
    s.summary
        .iter()
        .find(|k| k.proof_kind == kind as i32)
        .unwrap_or_else(|| panic!("no summary row for {kind:?}"))
}

#[test]
fn device_readings_are_sent_as_read_and_nvml_gives_a_gpus_free_memory() {
    let mut s = fixture::busy();
    s.daemon.backend = "opencl".into();
    let t = |device_memory: Option<u64>| snarkd_engine::status::DeviceTelemetry {
        ordinal: 0,
        utilization_percent: Some(0),
        memory_used_bytes: device_memory.map(|_| 30 << 30),
        memory_total_bytes: device_memory,
        pool_used_bytes: Some(1 << 30),
        pool_limit_bytes: Some(70 << 30),
        ..Default::default()
    };
    // Without NVML's memory, a GPU's free memory is unknown: 0, as Curio's contract has it.
    s.devices = vec![t(None)];
    assert_eq!(get_status(&s, STARTED_MS).gpus[0].vram_free_bytes, 0);
    let sent = &without_jobs(&s, STARTED_MS).devices;
    assert_eq!(sent.len(), 1);
    assert_eq!(
        (sent[0].utilization_percent, sent[0].pool_used_bytes),
        (Some(0), Some(1 << 30)),
        "a zero reading is sent as zero"
    );
    assert_eq!(
        (sent[0].memory_used_bytes, sent[0].temperature_celsius),
        (None, None),
        "an absent reading is sent as absent"
    );
    s.devices = vec![t(Some(80 << 30))];
    assert_eq!(get_status(&s, STARTED_MS).gpus[0].vram_free_bytes, 50 << 30);
}
