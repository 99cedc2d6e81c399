//! The journal under the real engine (driver, threads, journal thread) with the test prover:
//! restarts are simulated by dropping a runtime without draining, as a kill would.

use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use super::*;
use crate::domain::{JobEnd, ProofInput, ProofKind, ProofRequest};
use crate::test_prover::{request, with_vanilla, TestProver};
use crate::{Engine, EngineConfig};

pub(super) fn settings(dir: &Path) -> JournalSettings {
    JournalSettings {
        dir: dir.to_path_buf(),
        result_retention: Duration::from_secs(3600),
        max_results: 1000,
    }
}

pub(super) fn config() -> EngineConfig {
    EngineConfig {
        memory_budget_bytes: 1 << 20,
        synthesis_threads: 1,
        ..Default::default()
    }
}

/// A daemon's life: a runtime with an engine opened on the journal in `dir`.
pub(super) struct Life {
    runtime: tokio::runtime::Runtime,
    pub(super) engine: Engine,
}

impl Life {
    pub(super) fn open(dir: &Path, settings: JournalSettings, prover: Arc<TestProver>) -> Life {
        Life::open_with(dir, settings, prover, config())
    }

    /// [`Life::open`] with an engine `config` of its own.
    pub(super) fn open_with(
        dir: &Path,
        settings: JournalSettings,
        prover: Arc<TestProver>,
        config: EngineConfig,
    ) -> Life {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        // The previous life's journal thread lets go of the lock once its records are done.
        let journal = (0..500)
            .find_map(|_| {
                Journal::open(settings.clone()).ok().or_else(|| {
                    std::thread::sleep(Duration::from_millis(10));
                    None
                })
            })
            .unwrap_or_else(|| panic!("the journal in {} stays locked", dir.display()));
        let engine = runtime
            .block_on(Engine::open(config, prover, journal))
            .unwrap();
        Life { runtime, engine }
    }

    pub(super) fn run<T>(&self, f: impl std::future::Future<Output = T>) -> T {
        self.runtime.block_on(f)
    }

    /// Ends the life as `kill -9` would for the engine: nothing is drained or cancelled.
    pub(super) fn kill(self) {
        self.runtime.shutdown_background();
    }

    /// [`Life::kill`], returning only once the dying engine can record nothing more (its
    /// journal thread has let go of the lock): work a test held until then (`gate`) cannot
    /// end a job in the life that was killed.
    pub(super) fn kill_holding<T>(self, dir: &Path, gate: T) {
        self.kill();
        let released = (0..500).find_map(|_| {
            Journal::open(settings(dir)).ok().or_else(|| {
                std::thread::sleep(Duration::from_millis(10));
                None
            })
        });
        drop(released.unwrap_or_else(|| panic!("the journal in {} stays locked", dir.display())));
        drop(gate);
    }
}

fn with_id(id: &str, request: ProofRequest) -> ProofRequest {
    ProofRequest {
        request_id: id.into(),
        ..request
    }
}

/// The most any wait in the journal's tests takes before the test fails saying what it waited
/// for (a regression then fails instead of hanging the suite).
pub(super) const DEADLINE: Duration = Duration::from_secs(60);

pub(super) fn within<T>(life: &Life, what: &str, wait: impl std::future::Future<Output = T>) -> T {
    life.run(async { tokio::time::timeout(DEADLINE, wait).await })
        .unwrap_or_else(|_| panic!("{what}: not within {DEADLINE:?}"))
}

/// How job `job_id` ended, waited for at most [`DEADLINE`].
pub(super) fn ended(life: &Life, job_id: &str) -> JobEnd {
    let what = format!("job {job_id}'s end");
    let waited = within(life, &what, life.engine.await_job(job_id));
    waited.unwrap().end
}

pub(super) fn completed(life: &Life, job_id: &str) -> Vec<u8> {
    match ended(life, job_id) {
        JobEnd::Completed(proof) => proof,
        other => panic!("job {job_id} ended {other:?}"),
    }
}

#[test]
fn an_accepted_job_survives_a_kill_and_only_its_unproved_partitions_are_proved() {
    let dir = tempfile::tempdir().unwrap();
    let prover = TestProver::new(1);
    let life = Life::open(dir.path(), settings(dir.path()), prover.clone());
    let gate = prover.gate.lock(); // synthesis waits: nothing gets proved in this life
    let job = life
        .run(life.engine.submit(with_id(
            "porep-1000-7",
            request(ProofKind::PorepSealCommit, 3, 1000),
        )))
        .unwrap();
    life.kill();
    // Partition 1 was proved and recorded just before the kill.
    let conn = store::open(&dir.path().join("journal.sqlite")).unwrap();
    let tx = rusqlite::Connection::unchecked_transaction(&conn).unwrap();
    store::insert_partition(&tx, &job.job_id, 1, &[1; 4]).unwrap();
    tx.commit().unwrap();
    drop(conn);
    drop(gate);

    let prover = TestProver::new(1);
    let life = Life::open(dir.path(), settings(dir.path()), prover.clone());
    let snapshot = life.engine.snapshot();
    assert_eq!(snapshot.jobs.len(), 1);
    assert_eq!(
        snapshot.jobs[0].job_id, job.job_id,
        "recovered under its own id"
    );
    assert_eq!(snapshot.jobs[0].request_id, "porep-1000-7");
    assert_eq!(
        completed(&life, &job.job_id),
        [[0u8; 4], [1; 4], [2; 4]].concat()
    );
    assert_eq!(
        prover.proved.load(Ordering::SeqCst),
        2,
        "partition 1 is not proved again"
    );
    // The same request after the restart attaches to the same (now completed) job.
    let again = life
        .run(life.engine.submit(with_id(
            "porep-1000-7",
            request(ProofKind::PorepSealCommit, 3, 1000),
        )))
        .unwrap();
    assert_eq!(
        (again.job_id.as_str(), again.existing),
        (job.job_id.as_str(), true)
    );
    life.kill();
}

#[test]
fn results_outlive_memory_retention_until_the_journal_prunes_them() {
    let dir = tempfile::tempdir().unwrap();
    let settings = JournalSettings {
        result_retention: Duration::from_secs(2),
        ..settings(dir.path())
    };
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let config = EngineConfig {
        retention: Duration::from_millis(200),
        ..config()
    };
    let engine = runtime
        .block_on(Engine::open(
            config,
            TestProver::new(1),
            Journal::open(settings).unwrap(),
        ))
        .unwrap();
    let req = with_id("wdpost-[0 1]", request(ProofKind::WindowPost, 1, 1000));
    let job = runtime.block_on(engine.submit(req.clone())).unwrap();
    let end = async { tokio::time::timeout(DEADLINE, engine.await_job(&job.job_id)).await };
    runtime.block_on(end).expect("the job ends").unwrap();
    // Gone from memory once its 200 ms are up: the snapshot that says so, not a sleep.
    let mut snapshots = engine.subscribe();
    runtime.block_on(async {
        tokio::time::timeout(
            Duration::from_secs(30),
            snapshots.wait_for(|s| s.jobs.is_empty()),
        )
        .await
        .expect("the job leaves memory after its retention")
        .unwrap();
    });
    let stored = runtime.block_on(engine.await_job(&job.job_id)).unwrap();
    assert_eq!(
        stored.end,
        JobEnd::Completed(vec![0; 4]),
        "read back from the journal"
    );
    let again = runtime.block_on(engine.submit(req)).unwrap();
    assert_eq!(
        (again.job_id.as_str(), again.existing),
        (job.job_id.as_str(), true)
    );
    // Pruned 2 s after it finished: the journal holds nothing any more.
    let pruned = (0..100).any(|_| {
        std::thread::sleep(Duration::from_millis(100));
        journal_counts(dir.path()).ok() == Some((0, 0, 0))
    });
    assert!(pruned, "{:?}", journal_counts(dir.path()));
    let err = runtime.block_on(engine.await_job(&job.job_id)).unwrap_err();
    assert!(matches!(err, EngineError::UnknownJob(_)), "{err:?}");
    assert_eq!(
        std::fs::read_dir(dir.path().join("inputs"))
            .unwrap()
            .count(),
        0
    );
    runtime.shutdown_background();
}

#[test]
fn same_id_and_input_is_one_job_other_input_or_a_failed_attempt_is_a_new_one() {
    let dir = tempfile::tempdir().unwrap();
    let prover = TestProver::new(1);
    let life = Life::open(dir.path(), settings(dir.path()), prover.clone());
    let submit = |req: ProofRequest| life.run(life.engine.submit(req)).unwrap();
    let a = with_id("snap-1000-9", request(ProofKind::SnapDealsUpdate, 1, 1000));
    let first = submit(a.clone());
    assert_eq!(
        submit(a.clone()).job_id,
        first.job_id,
        "same id, same input"
    );
    let other_input = submit(with_vanilla(a.clone(), vec![7; 32]));
    assert_ne!(other_input.job_id, first.job_id, "same id, other input");
    let mut other_kind = a.clone();
    other_kind.input = ProofInput::empty(ProofKind::PorepSealCommit, a.input.registered());
    let other_kind = submit(other_kind);
    assert_ne!(other_kind.job_id, first.job_id, "same id, other kind");
    completed(&life, &first.job_id);
    assert_eq!(
        submit(a.clone()).job_id,
        first.job_id,
        "completed: the same job"
    );

    // A failed attempt is not handed back: the retry is a new job that can succeed.
    prover.panic_in_synthesis.store(true, Ordering::SeqCst);
    let b = with_id("porep-1000-8", request(ProofKind::PorepSealCommit, 1, 1000));
    let failed = submit(b.clone());
    let end = ended(&life, &failed.job_id);
    assert!(matches!(end, JobEnd::Failed(_)), "{end:?}");
    prover.panic_in_synthesis.store(false, Ordering::SeqCst);
    let retry = submit(b.clone());
    assert_ne!(retry.job_id, failed.job_id);
    completed(&life, &retry.job_id);

    // A cancelled one neither.
    let gate = prover.gate.lock();
    let c = with_id(
        "porep-1000-10",
        request(ProofKind::PorepSealCommit, 1, 1000),
    );
    let cancelled = submit(c.clone());
    life.run(life.engine.cancel(&cancelled.job_id)).unwrap();
    drop(gate);
    let retry = submit(c);
    assert_ne!(retry.job_id, cancelled.job_id);
    completed(&life, &retry.job_id);
    life.kill();
}

#[test]
fn an_unreadable_record_is_quarantined_and_the_others_recover() {
    let dir = tempfile::tempdir().unwrap();
    let prover = TestProver::new(1);
    let life = Life::open(dir.path(), settings(dir.path()), prover.clone());
    let gate = prover.gate.lock();
    let submit = |request: ProofRequest| life.run(life.engine.submit(request)).unwrap().job_id;
    let good = submit(request(ProofKind::WindowPost, 1, 1000));
    // A small input lives in its journal row, a large one in a file.
    let small = with_vanilla(request(ProofKind::WindowPost, 2, 1000), vec![7; 4096]);
    let bad_row = submit(small);
    let large = with_vanilla(
        request(ProofKind::PorepSealCommit, 1, 1000),
        vec![7; INLINE_INPUT_BYTES as usize + 1],
    );
    let bad_file = submit(large);
    let bad_record = submit(request(ProofKind::WindowPost, 3, 1000));
    life.kill_holding(dir.path(), gate);
    assert!(!dir
        .path()
        .join("inputs")
        .join(format!("{bad_row}.req"))
        .exists());
    // `sector_size` changed: the row's input still decodes, but not to what was recorded.
    let conn = rusqlite::Connection::open(dir.path().join("journal.sqlite")).unwrap();
    let input: Vec<u8> = conn
        .query_row(
            "SELECT input FROM jobs WHERE job_id = ?1",
            [&bad_row],
            |r| r.get(0),
        )
        .unwrap();
    let mut changed = input::decode(&input[..], input.len() as u64, "the row").unwrap();
    if let ProofInput::WindowPost { post, .. } = &mut changed.input {
        post.registered.sector_size ^= 0xff;
    }
    let input = input::encode(&changed);
    conn.execute(
        "UPDATE jobs SET input = ?1 WHERE job_id = ?2",
        rusqlite::params![input, bad_row],
    )
    .unwrap();
    // A record whose partition count is impossible: it cannot even be shown as a job.
    conn.execute(
        "UPDATE jobs SET partitions = 0 WHERE job_id = ?1",
        [&bad_record],
    )
    .unwrap();
    // The file cut short.
    let file = dir.path().join("inputs").join(format!("{bad_file}.req"));
    let bytes = std::fs::read(&file).unwrap();
    std::fs::write(&file, &bytes[..bytes.len() / 2]).unwrap();

    let life = Life::open(dir.path(), settings(dir.path()), TestProver::new(1));
    within(&life, "the recovery's end", life.engine.recovered());
    let snapshot = life.engine.snapshot();
    let failed: Vec<_> = (snapshot.jobs.iter())
        .filter(|j| j.state == crate::status::JobState::Failed)
        .map(|j| j.job_id.clone())
        .collect();
    assert_eq!(failed, [bad_row.clone(), bad_file.clone()]);
    assert_eq!(snapshot.jobs.len(), 3, "the good job recovers");
    // The others failed, saying why, and stay visible for the retention as any failed job.
    for bad in [&bad_row, &bad_file] {
        let job = snapshot.jobs.iter().find(|j| &j.job_id == bad).unwrap();
        let error = job.error.as_deref().unwrap_or_default();
        assert!(error.contains("moved to quarantine"), "{error}");
    }
    completed(&life, &good);
    let quarantine = dir.path().join("quarantine");
    assert!(quarantine.join(format!("{bad_file}.req")).exists());
    let reasons: Vec<(String, String, Option<Vec<u8>>)> = conn
        .prepare("SELECT job_id, reason, input FROM quarantine ORDER BY job_id = ?1")
        .unwrap()
        .query_map([&bad_file], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(reasons.len(), 3, "{reasons:?}");
    let record = reasons
        .iter()
        .find(|r| r.0 == bad_record)
        .expect("quarantined");
    assert!(record.1.contains("partition count 0"), "{}", record.1);
    let reasons: Vec<_> = reasons.into_iter().filter(|r| r.0 != bad_record).collect();
    assert_eq!(reasons[0].0, bad_row);
    assert!(reasons[0].1.contains("digest"), "{}", reasons[0].1);
    assert_eq!(
        reasons[0].2.as_deref(),
        Some(&input[..]),
        "the row's input is kept"
    );
    assert_eq!(reasons[1].0, bad_file);
    assert!(reasons[1].1.contains("does not decode"), "{}", reasons[1].1);
    life.kill();
}

#[test]
fn the_history_of_the_last_hour_survives_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let prover = TestProver::new(1);
    let life = Life::open(dir.path(), settings(dir.path()), prover.clone());
    for id in ["wdpost-a", "wdpost-b"] {
        // Device phases held a moment, so the worker's stints last.
        let held = prover.device_gate.lock();
        let job = life
            .run(
                life.engine
                    .submit(with_id(id, request(ProofKind::WindowPost, 1, 1000))),
            )
            .unwrap();
        std::thread::sleep(Duration::from_millis(50));
        drop(held);
        completed(&life, &job.job_id);
    }
    // The second flush also covers the load bucket noted after the first one's input.
    within(&life, "the journal's flush", life.engine.flush_journal());
    within(&life, "the journal's flush", life.engine.flush_journal());
    let before = life.engine.snapshot().history.clone();
    life.kill();

    let life = Life::open(dir.path(), settings(dir.path()), TestProver::new(1));
    let now = crate::clock::unix_ms();
    let hour = crate::history::HISTORY_MS;
    let after = life.engine.snapshot().history.clone();
    let window = after.window(ProofKind::WindowPost, now, hour);
    assert_eq!((window.completed, window.failed), (2, 0));
    assert!(window.p50_ms.is_some());
    // The worker's stints: the same busy share as before the kill, reckoned at the same moment.
    let busy = before.busy_share(1, &[], now, hour);
    assert!(busy > 0.0);
    assert_eq!(after.busy_share(1, &[], now, hour), busy);
    // The load series, bucket for bucket (the restarted engine's own load, below the jobs'
    // peak, may only follow it).
    let (old, new): (Vec<_>, Vec<_>) = (before.load().collect(), after.load().collect());
    assert!(new.len() >= old.len(), "{new:?}");
    assert_eq!(old[..], new[..old.len()]);
    assert!(
        old.iter()
            .any(|b| b.peak.on_worker > 0 || b.peak.synthesizing > 0),
        "the series saw the jobs run: {old:?}"
    );
    life.kill();
}

fn unwritable(life: &Life, want: bool) {
    let mut status = life.engine.subscribe();
    let what = format!("the journal shown unwritable: {want}");
    within(
        life,
        &what,
        status.wait_for(|s| s.daemon.journal_unwritable.is_some() == want),
    )
    .unwrap();
}

#[test]
fn a_failed_acceptance_fails_its_submit_and_the_job_is_not_started() {
    let dir = tempfile::tempdir().unwrap();
    let prover = TestProver::new(1);
    let life = Life::open(dir.path(), settings(dir.path()), prover.clone());
    // Every write fails: the job's acceptance, and anything else.
    inject_write_fault(dir.path(), true);
    let err = life
        .run(life.engine.submit(request(ProofKind::WindowPost, 1, 1000)))
        .unwrap_err();
    assert!(matches!(err, EngineError::Journal(_)), "{err}");
    assert!(err.to_string().contains("injected write fault"), "{err}");
    unwritable(&life, true);
    // While writes fail, new work is refused before anything is written.
    let refused = life
        .run(life.engine.submit(request(ProofKind::WinningPost, 1, 1000)))
        .unwrap_err();
    assert!(
        refused.to_string().contains("no new work is taken"),
        "{refused}"
    );
    inject_write_fault(dir.path(), false);
    // With nothing to write, the journal tries a small write to learn that writes succeed.
    unwritable(&life, false);
    let job = life
        .run(life.engine.submit(request(ProofKind::WinningPost, 1, 1000)))
        .expect("new work is taken again once writes succeed");
    completed(&life, &job.job_id);
    life.kill();
}

#[test]
fn records_whose_write_failed_are_kept_and_written_once_it_heals_so_nothing_is_lost() {
    let dir = tempfile::tempdir().unwrap();
    let prover = TestProver::new(1);
    let life = Life::open(dir.path(), settings(dir.path()), prover.clone());
    // The job's acceptance is written (synthesis held meanwhile); its partition proofs and its
    // end are not.
    let gate = prover.gate.lock();
    let job = life
        .run(life.engine.submit(with_id(
            "porep-1000-9",
            request(ProofKind::PorepSealCommit, 2, 1000),
        )))
        .unwrap();
    inject_write_fault(dir.path(), true);
    drop(gate);
    unwritable(&life, true);
    let proof = completed(&life, &job.job_id);
    assert_eq!(
        proof,
        [[0u8; 4], [1; 4]].concat(),
        "proved while the journal fails"
    );
    inject_write_fault(dir.path(), false);
    unwritable(&life, false);
    life.kill();

    // Every kept record reached the disk: the job is complete after a restart, not proved again.
    let prover = TestProver::new(1);
    let life = Life::open(dir.path(), settings(dir.path()), prover.clone());
    assert_eq!(completed(&life, &job.job_id), proof);
    assert_eq!(
        prover.proved.load(Ordering::SeqCst),
        0,
        "nothing proved twice"
    );
    life.kill();
}

/// With its priority's queue full, a retry of a request that completed in an earlier life (so is
/// no longer in memory) is still answered, from the journal; a new request is refused before it
/// is decoded (the journal is asked only whether a request of that id completed).
#[test]
fn a_retry_of_a_completed_job_is_answered_from_the_journal_when_the_queue_is_full() {
    let dir = tempfile::tempdir().unwrap();
    let done = with_id("wdpost-[1 2]", request(ProofKind::WindowPost, 1, 1000));
    let first = Life::open(dir.path(), settings(dir.path()), TestProver::new(1));
    let job = first.run(first.engine.submit(done.clone())).unwrap();
    assert_eq!(completed(&first, &job.job_id), [0u8; 4]);
    within(&first, "the journal's flush", first.engine.flush_journal());
    first.kill();

    let prover = TestProver::new(1);
    let config = EngineConfig {
        limits: crate::IntakeLimits {
            queued_jobs: 1,
            ..Default::default()
        },
        ..config()
    };
    let life = Life::open_with(dir.path(), settings(dir.path()), prover.clone(), config);
    let gate = prover.gate.lock();
    let queued = with_id("wdpost-[3 4]", request(ProofKind::WindowPost, 1, 1000));
    life.run(life.engine.submit(queued)).unwrap();
    let again = life.run(life.engine.submit(done)).unwrap();
    assert_eq!(
        (again.job_id.as_str(), again.existing),
        (job.job_id.as_str(), true),
        "the completed job, read from the journal"
    );
    let planned = prover.planned.load(Ordering::SeqCst);
    let new = with_id("wdpost-[5 6]", request(ProofKind::WindowPost, 1, 1000));
    let refused = life.run(life.engine.submit(new));
    assert!(
        matches!(
            refused,
            Err(EngineError::LimitReached {
                limit: "queued_jobs",
                ..
            })
        ),
        "{refused:?}"
    );
    assert_eq!(
        prover.planned.load(Ordering::SeqCst),
        planned,
        "the refused new request was decoded"
    );
    drop(gate);
    life.kill();
}

/// No work starts for a job before its acceptance is on disk: while another connection holds the
/// database's write lock, the submit waits and the job stays queued, unproved.
#[test]
fn no_work_starts_for_a_job_until_its_acceptance_is_on_disk() {
    let dir = tempfile::tempdir().unwrap();
    let prover = TestProver::new(1);
    let life = Life::open(dir.path(), settings(dir.path()), prover.clone());
    let lock = rusqlite::Connection::open(dir.path().join("journal.sqlite")).unwrap();
    lock.execute_batch("BEGIN EXCLUSIVE").unwrap();
    let engine = life.engine.clone();
    let submitted = life
        .runtime
        .spawn(async move { engine.submit(request(ProofKind::WindowPost, 1, 1000)).await });
    // Long enough for a job that started to be proved many times over (the stand-in prover
    // takes microseconds); a job that waits, as it must, waits whatever the time.
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(
        prover.proved.load(Ordering::SeqCst),
        0,
        "proved before it was recorded"
    );
    let snapshot = life.engine.snapshot();
    assert!(
        (snapshot.jobs.iter()).all(|j| j.state == crate::status::JobState::Queued),
        "{:?}",
        snapshot.jobs.iter().map(|j| j.state).collect::<Vec<_>>()
    );
    lock.execute_batch("COMMIT").unwrap();
    let job = within(&life, "the submit", submitted).unwrap().unwrap();
    completed(&life, &job.job_id);
    life.kill();
}
