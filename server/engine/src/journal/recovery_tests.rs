//! Recovery in the background, under the real engine with the test prover: the engine serves
//! (a deadline proof is taken and proved) while the journal's jobs wait to be planned again, a
//! retry attaches to its recovering job, a cancel ends one for good, and a job whose params are
//! missing waits for them.

use std::path::Path;
use std::sync::atomic::Ordering;
use std::time::Duration;

use super::tests::{completed, settings, within, Life};
use crate::domain::{JobEnd, ProofKind, ProofRequest};
use crate::status::JobState;
use crate::test_prover::{request, TestProver};

fn porep(i: usize) -> ProofRequest {
    ProofRequest {
        request_id: format!("porep-1000-{i}"),
        ..request(ProofKind::PorepSealCommit, 1, 1000)
    }
}

/// Leaves `count` PoRep jobs unfinished in the journal in `dir` (none proved: synthesis is
/// held, then the daemon is killed); their job ids, in submit order.
fn unfinished_porep(dir: &Path, count: usize) -> Vec<String> {
    let prover = TestProver::new(1);
    let life = Life::open(dir, settings(dir), prover.clone());
    let gate = prover.gate.lock();
    let ids = (0..count)
        .map(|i| life.run(life.engine.submit(porep(i))).unwrap().job_id)
        .collect();
    life.kill_holding(dir, gate);
    ids
}

#[test]
fn a_deadline_proof_is_proved_while_recovered_jobs_wait_and_a_retry_attaches_to_its_job() {
    let dir = tempfile::tempdir().unwrap();
    let ids = unfinished_porep(dir.path(), 200);
    let hold = dir.path().join("hold-recovery");
    std::fs::write(&hold, b"").unwrap();

    let prover = TestProver::new(1);
    let life = Life::open(dir.path(), settings(dir.path()), prover.clone());
    let snapshot = life.engine.snapshot();
    assert_eq!(snapshot.daemon.recovering_jobs, 200);
    let shown: Vec<&str> = snapshot.jobs.iter().map(|j| j.job_id.as_str()).collect();
    assert_eq!(
        shown, ids,
        "every recovering job is shown, under its own id, in order"
    );
    assert!(snapshot.jobs.iter().all(|j| j.state == JobState::Queued));

    // Served meanwhile: a WinningPoSt is taken and proved.
    let winning = life
        .run(life.engine.submit(request(ProofKind::WinningPost, 1, 1000)))
        .unwrap();
    assert_eq!(completed(&life, &winning.job_id), [0u8; 4]);
    // Curio's retry of a recovering job attaches to it: no second job, nothing planned.
    let retry = life.run(life.engine.submit(porep(5))).unwrap();
    assert_eq!(
        (retry.job_id.as_str(), retry.existing),
        (ids[5].as_str(), true)
    );
    // A wait for a recovering job waits (it is not NOT_FOUND) ...
    let waited = life.run(
        life.engine
            .await_job_within(&ids[5], Some(Duration::from_millis(50))),
    );
    assert!(matches!(waited, Ok(None)), "{waited:?}");
    // ... and a cancelled one ends for good.
    assert!(!life.run(life.engine.cancel(&ids[7])).unwrap());
    let cancelled = within(
        &life,
        "the cancelled job's end",
        life.engine.await_job(&ids[7]),
    );
    assert_eq!(cancelled.unwrap().end, JobEnd::Cancelled);
    assert_eq!(
        prover.planned.load(Ordering::SeqCst),
        1,
        "only the WinningPoSt was planned while recovery was held"
    );
    assert_eq!(life.engine.snapshot().daemon.recovering_jobs, 199);
    life.run(life.engine.flush_journal());

    std::fs::remove_file(&hold).unwrap();
    within(&life, "recovery", life.engine.recovered());
    assert_eq!(
        prover.planned.load(Ordering::SeqCst),
        1 + 199,
        "each recovered job planned once, the cancelled one not at all"
    );
    assert_eq!(completed(&life, &ids[5]), [0u8; 4]);
    let snapshot = life.engine.snapshot();
    let of = |id: &str| snapshot.jobs.iter().filter(|j| j.job_id == id).count();
    assert_eq!(of(&ids[5]), 1, "the retried job is one job");
    let cancelled = snapshot.jobs.iter().find(|j| j.job_id == ids[7]);
    assert_eq!(
        cancelled.map(|j| j.state),
        Some(JobState::Cancelled),
        "the cancelled job stays cancelled, shown once"
    );
    assert_eq!(of(&ids[7]), 1);
    // The WinningPoSt taken during recovery kept its own place after every recovered job's
    // (its sequence number is past theirs), and the last recovered job runs as well.
    let winning_shown = snapshot.jobs.iter().filter(|j| j.job_id == winning.job_id);
    assert_eq!(
        winning_shown.map(|j| j.state).collect::<Vec<_>>(),
        [JobState::Completed]
    );
    assert_eq!(completed(&life, &ids[199]), [0u8; 4]);
    assert_eq!(
        completed(&life, &winning.job_id),
        [0u8; 4],
        "still the WinningPoSt's own result"
    );
    life.kill();
}

#[test]
fn a_recovered_job_whose_params_are_missing_waits_for_them_then_runs() {
    let dir = tempfile::tempdir().unwrap();
    let ids = unfinished_porep(dir.path(), 1);
    let prover = TestProver::new(1);
    prover.params_missing.store(true, Ordering::SeqCst);
    let life = Life::open(dir.path(), settings(dir.path()), prover.clone());
    within(&life, "recovery", life.engine.recovered());
    let snapshot = life.engine.snapshot();
    let job = &snapshot.jobs[0];
    assert_eq!(
        (job.job_id.as_str(), job.state),
        (ids[0].as_str(), JobState::Queued)
    );
    let error = job.error.as_deref().unwrap_or_default();
    assert!(
        error.contains("waiting for its params") && error.contains("test params file is missing"),
        "{error}"
    );
    // The operator fetches the params: the job is planned again and runs.
    prover.params_missing.store(false, Ordering::SeqCst);
    let outcome = within(&life, "the job's end", life.engine.await_job(&ids[0]));
    assert_eq!(outcome.unwrap().end, JobEnd::Completed(vec![0; 4]));
    life.kill();
}

/// A job taken while recovery is held gets a sequence number past every recovered job's, so
/// when they are planned again and join the machine, none of them takes its place: all end,
/// each once.
#[test]
fn a_job_taken_during_recovery_keeps_its_place_when_the_recovered_jobs_join() {
    let dir = tempfile::tempdir().unwrap();
    let ids = unfinished_porep(dir.path(), 3);
    let hold = dir.path().join("hold-recovery");
    std::fs::write(&hold, b"").unwrap();
    let prover = TestProver::new(1);
    let life = Life::open(dir.path(), settings(dir.path()), prover.clone());
    let gate = prover.gate.lock();
    let winning = life
        .run(life.engine.submit(request(ProofKind::WinningPost, 1, 1000)))
        .unwrap();
    std::fs::remove_file(&hold).unwrap();
    within(&life, "recovery", life.engine.recovered());
    drop(gate);
    for id in ids.iter().chain([&winning.job_id]) {
        let outcome = within(&life, id, life.engine.await_job(id));
        assert_eq!(outcome.unwrap().end, JobEnd::Completed(vec![0; 4]), "{id}");
    }
    let snapshot = life.engine.snapshot();
    let mut shown: Vec<&str> = snapshot.jobs.iter().map(|j| j.job_id.as_str()).collect();
    shown.sort_unstable();
    let mut all: Vec<&str> = ids
        .iter()
        .chain([&winning.job_id])
        .map(String::as_str)
        .collect();
    all.sort_unstable();
    assert_eq!(shown, all, "every job shown once");
    life.kill();
}
