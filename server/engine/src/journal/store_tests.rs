//! What the store reads back: unfinished rows as recorded, the next submit sequence number after
//! every recorded one, a finished job's end; and what pruning deletes and gives back.

use std::time::Duration;

use super::tests::{completed, settings, Life};
use super::*;
use crate::domain::{Priority, ProofKind};
use crate::test_prover::{request, TestProver};

#[test]
fn an_unfinished_row_reads_back_its_kind_and_priority_and_describes_itself() {
    let dir = tempfile::tempdir().unwrap();
    let prover = TestProver::new(1);
    let life = Life::open(dir.path(), settings(dir.path()), prover.clone());
    let gate = prover.gate.lock();
    let mut held = request(ProofKind::SnapDealsUpdate, 1, 1000);
    held.request_id = "snap-1000-7".into();
    held.priority = Some(Priority::High);
    life.run(life.engine.submit(held)).unwrap();
    life.kill_holding(dir.path(), gate);

    let conn = rusqlite::Connection::open(dir.path().join("journal.sqlite")).unwrap();
    let rows = store::unfinished(&conn).unwrap();
    assert_eq!(rows.len(), 1);
    let row = &rows[0];
    assert_eq!(row.kind(), Some(ProofKind::SnapDealsUpdate));
    assert_eq!(row.priority(), Some(Priority::High));
    let text = row.describe();
    assert!(
        text.contains("request_id=\"snap-1000-7\"") && text.contains("priority=\"high\""),
        "{text}"
    );
}

#[test]
fn submits_after_a_restart_are_numbered_after_every_recorded_job() {
    let dir = tempfile::tempdir().unwrap();
    let life = Life::open(dir.path(), settings(dir.path()), TestProver::new(1));
    for n in 1..=3 {
        let id = (life.run(life.engine.submit(request(ProofKind::WindowPost, 1, n))))
            .unwrap()
            .job_id;
        completed(&life, &id);
    }
    life.kill();
    let life = Life::open(dir.path(), settings(dir.path()), TestProver::new(1));
    let next = life
        .run(life.engine.submit(request(ProofKind::WindowPost, 1, 9)))
        .unwrap()
        .job_id;
    completed(&life, &next);
    life.kill();

    let conn = rusqlite::Connection::open(dir.path().join("journal.sqlite")).unwrap();
    let seq = |job_id: &str| -> i64 {
        conn.query_row("SELECT seq FROM jobs WHERE job_id = ?1", [job_id], |r| {
            r.get(0)
        })
        .unwrap()
    };
    let before: i64 = conn
        .query_row(
            "SELECT MAX(seq) FROM jobs WHERE job_id != ?1",
            [&next],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(seq(&next), before + 1);
}

/// A journal's database with `ended` finished jobs (`(job_id, outcome, error, finished_unix_ms)`)
/// and a connection to it.
fn with_ended(dir: &std::path::Path, ended: &[(&str, &str, &str, i64)]) -> rusqlite::Connection {
    drop(Journal::open(settings(dir)).unwrap());
    let conn = rusqlite::Connection::open(dir.join("journal.sqlite")).unwrap();
    for (seq, (job_id, outcome, error, at)) in ended.iter().enumerate() {
        conn.execute(
            "INSERT INTO jobs (job_id, seq, request_id, kind, priority, digest, input_bytes,
                 partitions, submitted_unix_ms, outcome, error, finished_unix_ms)
             VALUES (?1, ?2, '', 'wpost', 'high', x'00', 0, 1, 0, ?3, ?4, ?5)",
            rusqlite::params![job_id, seq as i64, outcome, error, at],
        )
        .unwrap();
    }
    conn
}

#[test]
fn a_failed_jobs_end_reads_back_with_its_class_stage_and_message() {
    use crate::domain::{FailureClass, FailureStage, JobEnd, JobFailure};
    let dir = tempfile::tempdir().unwrap();
    let mut conn = with_ended(dir.path(), &[]);
    conn.execute(
        "INSERT INTO jobs (job_id, seq, request_id, kind, priority, digest, input_bytes,
             partitions, submitted_unix_ms)
         VALUES ('j', 0, '', 'wpost', 'high', x'00', 0, 1, 0)",
        [],
    )
    .unwrap();
    let failure = JobFailure::new(
        FailureClass::Device,
        FailureStage::Device,
        "the device fell over",
    );
    let tx = conn.transaction().unwrap();
    store::finish(
        &tx,
        "j",
        &JobEnd::Failed(failure.clone()),
        &Default::default(),
        5,
    )
    .unwrap();
    tx.commit().unwrap();
    let outcome = store::find_result(&conn, "j").unwrap().expect("recorded");
    assert_eq!(outcome.end, JobEnd::Failed(failure));
}

#[test]
fn pruning_counts_what_it_deleted_and_gives_the_wal_back() {
    let dir = tempfile::tempdir().unwrap();
    let ended = [
        ("a", "completed", "", 1_000),
        ("b", "failed", "x", 2_000),
        ("c", "completed", "", 3_000),
    ];
    let conn = with_ended(dir.path(), &ended);
    let wal = dir.path().join("journal.sqlite-wal");
    let day = Duration::from_secs(86_400);
    assert!(
        std::fs::metadata(&wal).unwrap().len() > 0,
        "the inserts are in the WAL"
    );
    // Over the count only: the oldest one goes.
    assert_eq!(store::prune(&conn, 4_000, day, 2).unwrap(), 1);
    assert_eq!(std::fs::metadata(&wal).unwrap().len(), 0, "checkpointed");
    // Past the retention: the other two.
    assert_eq!(
        store::prune(&conn, 10_000, Duration::from_secs(1), 10).unwrap(),
        2
    );
    assert_eq!(store::prune(&conn, 10_000, Duration::ZERO, 0).unwrap(), 0);
}
