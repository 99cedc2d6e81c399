//! Upgrades from older journals: `fixtures/journal-schema-1.sqlite` was written by snarkd's
//! schema 1 (before input format 3): a finished WindowPoSt job (`wdpost-[0 1]`) with its proof,
//! and a PoRep job of three partitions (`porep-1000-7`) accepted, with partition 1 proved, when
//! the daemon was killed. Opened by this build, it is upgraded in place and both jobs go on. The
//! PoRep's input is as schema 1 wrote it but for the test prover's encoding of its partitions
//! (its registered proof, 3, once its partition index, which the test prover cannot read from a
//! PoRep any more) and the digest of that. An input keeping a field its kind does not use still
//! recovers (`input.rs`' tests).

use std::sync::atomic::Ordering;
use std::time::Duration;

use super::tests::{completed, Life};
use super::*;
use crate::test_prover::TestProver;

const FIXTURE: &[u8] = include_bytes!("fixtures/journal-schema-1.sqlite");
const FINISHED: &str = "d24436cc-6b10-44b3-be4e-bc6a83fdf2c3";
const UNFINISHED: &str = "dd5bf0f8-f0ab-4b07-83c0-7252669e517d";

fn schema_and_input_format(db: &std::path::Path) -> (String, Option<u8>) {
    let conn = rusqlite::Connection::open(db).unwrap();
    let schema = conn
        .query_row("SELECT value FROM meta WHERE key = 'schema'", [], |r| {
            r.get(0)
        })
        .unwrap();
    let input: Vec<u8> = conn
        .query_row(
            "SELECT input FROM jobs WHERE job_id = ?1",
            [UNFINISHED],
            |r| r.get(0),
        )
        .unwrap();
    (schema, input::format_of(&input))
}

#[test]
fn a_schema_1_journal_is_upgraded_in_place_and_its_jobs_go_on() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("journal.sqlite");
    std::fs::write(&db, FIXTURE).unwrap();
    assert_eq!(schema_and_input_format(&db), ("1".into(), Some(2)));
    // The fixture's proof finished when it was written: keep it readable whenever this runs.
    let settings = JournalSettings {
        result_retention: Duration::from_secs(100 * 365 * 24 * 3600),
        ..super::tests::settings(dir.path())
    };
    let prover = TestProver::new(1);
    let life = Life::open(dir.path(), settings, prover.clone());
    assert_eq!(schema_and_input_format(&db), ("3".into(), Some(3)));

    let jobs = life.engine.snapshot().jobs.clone();
    assert_eq!(jobs.len(), 1, "{jobs:?}");
    assert_eq!(
        (jobs[0].job_id.as_str(), jobs[0].request_id.as_str()),
        (UNFINISHED, "porep-1000-7")
    );
    assert_eq!(
        completed(&life, UNFINISHED),
        [[0u8; 4], [1; 4], [2; 4]].concat()
    );
    assert_eq!(
        prover.proved.load(Ordering::SeqCst),
        2,
        "partition 1 is not proved again"
    );
    assert_eq!(
        completed(&life, FINISHED),
        vec![0; 4],
        "the finished job's proof is kept"
    );
    life.kill();
}

#[test]
fn an_input_file_of_format_2_is_rewritten_as_format_3_with_the_same_request() {
    let dir = tempfile::tempdir().unwrap();
    let conn = store::open(&dir.path().join("journal.sqlite")).unwrap();
    let inputs = dir.path().join("inputs");
    std::fs::create_dir(&inputs).unwrap();
    let request = crate::test_prover::request(crate::domain::ProofKind::WindowPost, 2, 5000);
    let old = input::encode_format_2(&request);
    let path = inputs.join("job.req");
    std::fs::write(&path, &old).unwrap();
    std::fs::write(
        inputs.join("damaged.req"),
        b"snarkd-input\0\0\0\x02 not bincode",
    )
    .unwrap();
    migrate::run(&conn, 1, &inputs).unwrap();
    let now = std::fs::read(&path).unwrap();
    assert_eq!(input::format_of(&now), Some(input::VERSION));
    assert_eq!(
        input::decode(&now[..], now.len() as u64, "the input").unwrap(),
        request
    );
    assert_eq!(
        std::fs::read(inputs.join("damaged.req")).unwrap(),
        b"snarkd-input\0\0\0\x02 not bincode",
        "what cannot be read is left for recovery to quarantine"
    );
    // Running it again (an upgrade cut short after rewriting files) changes nothing.
    migrate::run(&conn, 1, &inputs).unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), now);
}

#[test]
fn a_schema_2_journals_failures_get_their_class_and_stage_from_their_words() {
    use crate::domain::{FailureClass, FailureStage, JobEnd, JobFailure};
    let dir = tempfile::tempdir().unwrap();
    drop(Journal::open(super::tests::settings(dir.path())).unwrap());
    let db = dir.path().join("journal.sqlite");
    let failed = [
        (
            "a",
            "params porep-2k failed to load: parameter file x is missing",
        ),
        (
            "b",
            "partition 0 synthesis failed: the circuit rejects the witness",
        ),
        ("c", "partition 1 device phase failed: CL_OUT_OF_RESOURCES"),
        ("d", "final proof rejected: the proof does not verify"),
        ("e", "after a restart: invalid request: bad randomness"),
        ("f", "the job journal could not record it: disk full"),
    ];
    {
        // As schema 2 wrote it: no failure columns, the stage in the message's words.
        let conn = rusqlite::Connection::open(&db).unwrap();
        conn.execute_batch(
            "ALTER TABLE jobs DROP COLUMN failure_class;
             ALTER TABLE jobs DROP COLUMN failure_stage;
             UPDATE meta SET value = '2' WHERE key = 'schema';",
        )
        .unwrap();
        for (seq, (job_id, error)) in failed.iter().enumerate() {
            conn.execute(
                "INSERT INTO jobs (job_id, seq, request_id, kind, priority, digest, input_bytes,
                     partitions, submitted_unix_ms, outcome, error, finished_unix_ms)
                 VALUES (?1, ?2, '', 'wpost', 'high', x'00', 0, 1, 0, 'failed', ?3, 1)",
                rusqlite::params![job_id, seq as i64, error],
            )
            .unwrap();
        }
    }
    let conn = store::open(&db).unwrap();
    let schema: String = conn
        .query_row("SELECT value FROM meta WHERE key = 'schema'", [], |r| {
            r.get(0)
        })
        .unwrap();
    assert_eq!(schema, "3");
    let want = [
        (FailureClass::Setup, FailureStage::Params),
        (FailureClass::Input, FailureStage::Synthesis),
        (FailureClass::Device, FailureStage::Device),
        (FailureClass::Input, FailureStage::Finalize),
        (FailureClass::Input, FailureStage::Journal),
        (FailureClass::Resource, FailureStage::Journal),
    ];
    for ((job_id, error), (class, stage)) in failed.iter().zip(want) {
        let outcome = store::find_result(&conn, job_id).unwrap().expect("kept");
        assert_eq!(
            outcome.end,
            JobEnd::Failed(JobFailure::new(class, stage, *error)),
            "{job_id}"
        );
    }
}
