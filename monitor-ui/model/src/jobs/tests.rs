use snarkd_proto::v1::{JobState, JobStatus, PartitionState, PartitionStatus, Priority, ProofKind};

use super::*;
use crate::labels;

fn job(id: &str, priority: Priority, submitted: u64, state: JobState, finished: u64) -> JobStatus {
    JobStatus {
        job_id: id.to_string(),
        proof_kind: ProofKind::WindowPostPartition as i32,
        priority: priority as i32,
        submitted_at_unix_ms: submitted,
        state: state as i32,
        finished_at_unix_ms: finished,
        ..Default::default()
    }
}

fn ids(rows: &[JobRow]) -> Vec<&str> {
    rows.iter().map(|r| r.job_id.as_str()).collect()
}

#[test]
fn unfinished_jobs_come_in_scheduling_order_then_finished_ones_newest_first() {
    let jobs = [
        job("done-old", Priority::Critical, 1, JobState::Completed, 10),
        job("normal-old", Priority::Normal, 2, JobState::Running, 0),
        job("high-new", Priority::High, 9, JobState::Queued, 0),
        job("done-new", Priority::Low, 3, JobState::Failed, 20),
        job("high-old", Priority::High, 5, JobState::Running, 0),
        job("critical", Priority::Critical, 50, JobState::Queued, 0),
    ];
    let rows = job_rows(&jobs, 100);
    assert_eq!(
        ids(&rows),
        [
            "critical",
            "high-old",
            "high-new",
            "normal-old",
            "done-new",
            "done-old"
        ]
    );
}

#[test]
fn equal_jobs_keep_a_stable_order_by_id() {
    let jobs = [
        job("b", Priority::High, 5, JobState::Queued, 0),
        job("a", Priority::High, 5, JobState::Queued, 0),
    ];
    assert_eq!(ids(&job_rows(&jobs, 10)), ["a", "b"]);
}

#[test]
fn finished_jobs_fade_linearly_to_a_readable_floor() {
    let finished_at = 1_000_000;
    let opacity = |now: u64| {
        let jobs = [job(
            "j",
            Priority::High,
            0,
            JobState::Completed,
            finished_at,
        )];
        job_rows(&jobs, now)[0].opacity_pct
    };
    assert_eq!(opacity(finished_at), 100);
    // Half way: 100 - 65 / 2 (integer) = 68.
    assert_eq!(opacity(finished_at + FADE_MS / 2), 68);
    assert_eq!(opacity(finished_at + FADE_MS), FADED_OPACITY_PCT);
    assert_eq!(opacity(finished_at + 10 * FADE_MS), FADED_OPACITY_PCT);
    // A clock behind the daemon's end time does not brighten past full.
    assert_eq!(opacity(finished_at - 5), 100);
}

#[test]
fn running_jobs_do_not_fade_and_age_from_submission() {
    let jobs = [job("j", Priority::High, 1_000, JobState::Running, 0)];
    let row = &job_rows(&jobs, 66_000)[0];
    assert!(!row.finished);
    assert_eq!(row.opacity_pct, 100);
    assert_eq!(row.age, "1m 05s");
}

#[test]
fn a_finished_job_shows_how_long_it_took() {
    let jobs = [job("j", Priority::High, 1_000, JobState::Completed, 3_500)];
    let row = &job_rows(&jobs, 90_000)[0];
    assert!(row.finished);
    assert_eq!(row.age, "2.5 s");
    assert_eq!(row.state, "completed");
}

#[test]
fn the_full_job_id_and_kind_are_kept() {
    let id = "0f9c2d4e-5b6a-4c3d-9e8f-7a6b5c4d3e2f";
    let jobs = [job(id, Priority::High, 0, JobState::Queued, 0)];
    let row = &job_rows(&jobs, 0)[0];
    assert_eq!(row.job_id, id);
    assert_eq!(row.kind, "window-post");
    assert_eq!(row.priority, "high");
}

#[test]
fn cells_carry_state_and_timings_for_the_hover_text() {
    let mut j = job("j", Priority::Normal, 0, JobState::Running, 0);
    j.partitions = vec![
        PartitionStatus {
            index: 0,
            state: PartitionState::Done as i32,
            synth_ms: Some(1_200),
            gpu_ms: Some(340),
            worker_id: Some(1),
            reserved_bytes: 0,
        },
        PartitionStatus {
            index: 1,
            state: PartitionState::Gpu as i32,
            synth_ms: Some(900),
            gpu_ms: None,
            worker_id: Some(0),
            reserved_bytes: 3 * 1024 * 1024 * 1024,
        },
        PartitionStatus {
            index: 2,
            state: PartitionState::Pending as i32,
            ..Default::default()
        },
    ];
    let row = &job_rows(&[j], 0)[0];
    assert_eq!(row.done, 1);
    let states: Vec<&str> = row.cells.iter().map(|c| c.state).collect();
    assert_eq!(states, ["done", "gpu", "pending"]);
    assert_eq!(
        row.cells[0].title,
        "partition 0 · done\nsynthesis 1.2 s\ndevice phase 340 ms\nworker 1"
    );
    assert_eq!(
        row.cells[1].title,
        "partition 1 · gpu\nsynthesis 900 ms\nworker 0\nreserved 3.00 GiB"
    );
    assert_eq!(row.cells[2].title, "partition 2 · pending");
    // The row's step columns sum what has ended.
    assert_eq!(
        (row.synthesis.as_str(), row.device.as_str()),
        ("2.1 s", "340 ms")
    );
    let fresh = &job_rows(&[job("k", Priority::Normal, 0, JobState::Queued, 0)], 0)[0];
    assert_eq!(
        (fresh.synthesis.as_str(), fresh.device.as_str()),
        ("–", "–")
    );
}

#[test]
fn filters_pick_rows_by_state_and_kind() {
    let rows = job_rows(
        &[
            job("queued", Priority::High, 1, JobState::Queued, 0),
            job("running", Priority::High, 2, JobState::Running, 0),
            job("done", Priority::High, 3, JobState::Completed, 9),
            job("failed", Priority::High, 4, JobState::Failed, 9),
        ],
        10,
    );
    let pick = |state: &str, kind: &str| -> Vec<&str> {
        rows.iter()
            .filter(|r| shown(r, state, kind))
            .map(|r| r.job_id.as_str())
            .collect()
    };
    assert_eq!(pick("all", "all").len(), 4);
    assert_eq!(pick("active", "all"), ["queued", "running"]);
    assert_eq!(pick("failed", "window-post"), ["failed"]);
    assert!(pick("all", "porep-c2").is_empty());
}

#[test]
fn fifty_jobs_of_sixteen_partitions_keep_every_cell_in_index_order() {
    // The size the page must stay smooth at: 50 SnapDeals-sized jobs in flight.
    let states = [
        PartitionState::Pending,
        PartitionState::Synthesizing,
        PartitionState::SynthDone,
        PartitionState::Gpu,
        PartitionState::Done,
    ];
    let jobs: Vec<JobStatus> = (0..50u64)
        .map(|n| {
            let mut j = job(
                &format!("job-{n:02}"),
                Priority::Normal,
                n,
                JobState::Running,
                0,
            );
            j.partitions = (0..16u32)
                .map(|i| PartitionStatus {
                    index: i,
                    state: states[(i as usize + n as usize) % states.len()] as i32,
                    ..Default::default()
                })
                .collect();
            j
        })
        .collect();
    let rows = job_rows(&jobs, 1_000);
    assert_eq!(rows.len(), 50);
    assert_eq!(rows[0].job_id, "job-00", "oldest first at equal priority");
    for (n, row) in rows.iter().enumerate() {
        let indexes: Vec<u32> = row.cells.iter().map(|c| c.index).collect();
        assert_eq!(indexes, (0..16).collect::<Vec<u32>>());
        assert_eq!(
            row.cells[0].state,
            labels::partition_state(states[n % states.len()])
        );
    }
}
