//! What the store reads back at a restart: unfinished rows as recorded, and the next submit
//! sequence number after every recorded one.

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
