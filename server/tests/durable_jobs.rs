//! Durable jobs through the real gRPC API. The idempotency rules run on an in-process daemon over
//! a journal with the stand-in prover; Curio's retry after a crash and a damaged record run the
//! real binary proving real 2 KiB proofs, killed with SIGKILL.

mod common;
#[path = "common/real.rs"]
mod real;

use std::path::Path;

use common::process::{spawn, Serving, SNARKD};
use real::{assert_verifies, ensure_params, env, wire};
use snarkd_proto::v1 as pb;
use snarkd_prover::ProofKind;
use tonic::Code;

use pb::await_proof_response::Status as Ended;

/// The settings of a real-prover daemon on the journal in `jobs`.
fn real_env(jobs: &Path) -> Vec<(&'static str, String)> {
    vec![
        ("SNARKD_PARAMS_DIR", env().params_dir.display().to_string()),
        ("SNARKD_JOBS_DIR", jobs.display().to_string()),
        ("SNARKD_GPUS_BACKEND", "cpu".into()),
        ("SNARKD_MEMORY_BUDGET", "8GiB".into()),
        ("SNARKD_DAEMON_RETENTION", "10m".into()),
        ("RUST_LOG", "info,snarkd_engine::journal=debug".into()),
    ]
}

fn start_real(jobs: &Path) -> Serving {
    spawn(Path::new(SNARKD), real_env(jobs)).serving()
}

fn porep(request_id: &str) -> pb::SubmitProofRequest {
    pb::SubmitProofRequest {
        request_id: request_id.into(),
        ..wire(
            &env().fixtures.request(ProofKind::PorepSealCommit),
            pb::Priority::Unspecified,
        )
    }
}

async fn prove(
    client: &mut common::Client,
    submit: pb::SubmitProofRequest,
) -> pb::AwaitProofResponse {
    let call = client.prove(pb::ProveRequest {
        submit: Some(submit),
    });
    common::within("Prove reply", call)
        .await
        .expect("Prove")
        .into_inner()
        .result
        .expect("result")
}

/// Curio calls only Prove; when the daemon dies under the call, its scheduler runs the task
/// again later with the same request_id. The retry gets the job that was accepted before the
/// crash, recovered from the journal, and its verified proof.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prove_retried_after_a_kill_gets_the_same_jobs_proof() {
    ensure_params(&[ProofKind::PorepSealCommit]);
    let jobs = tempfile::tempdir().unwrap();
    let submit = porep("porep-1000-7");
    let daemon = start_real(jobs.path());
    let mut client = common::connect(daemon.grpc).await;
    let call = tokio::spawn({
        let mut client = client.clone();
        let submit = Some(submit.clone());
        async move { client.prove(pb::ProveRequest { submit }).await }
    });
    let running = common::wait_for_status(&mut client, |s| {
        s.jobs.iter().any(|j| {
            j.request_id == "porep-1000-7"
                && j.partitions.iter().any(|p| {
                    p.state == pb::PartitionState::Synthesizing as i32
                        || p.state == pb::PartitionState::Gpu as i32
                })
        })
    })
    .await;
    let job_id = running.jobs[0].job_id.clone();
    daemon.kill();
    let died = common::within("end of the Prove call after the kill", call)
        .await
        .unwrap()
        .expect_err("the call died with the daemon");
    assert!(
        matches!(died.code(), Code::Unavailable | Code::Unknown),
        "{died:?}"
    );

    let daemon = start_real(jobs.path());
    let mut client = common::connect(daemon.grpc).await;
    let result = prove(&mut client, submit.clone()).await;
    let recovered = daemon.events("job recovered from the journal");
    assert_eq!(recovered.len(), 1, "{recovered:?}");
    assert_eq!(recovered[0]["job_id"], job_id.as_str());
    assert_eq!(
        result.status,
        Ended::Completed as i32,
        "{}",
        result.error_message
    );
    assert_eq!(
        result.job_id, job_id,
        "the retry attaches to the recovered job"
    );
    let request = env().fixtures.request(ProofKind::PorepSealCommit);
    assert_verifies(&request, &result.proof);

    // Once more, after it completed: the same proof, nothing proved again.
    let again = prove(&mut client, submit).await;
    assert_eq!(
        (again.job_id.as_str(), &again.proof),
        (job_id.as_str(), &result.proof)
    );
    assert_eq!(daemon.events("partition proof recorded").len(), 1);
    daemon.stop();
}

/// A record that cannot be read back is moved aside, with a log line naming it, and the daemon
/// starts; a database SQLite cannot open is set aside whole.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_damaged_record_is_quarantined_and_the_daemon_starts() {
    ensure_params(&[ProofKind::PorepSealCommit]);
    let jobs = tempfile::tempdir().unwrap();
    let daemon = start_real(jobs.path());
    let mut client = common::connect(daemon.grpc).await;
    let job_id = client
        .submit_proof(porep("porep-1000-8"))
        .await
        .unwrap()
        .into_inner()
        .job_id;
    daemon.kill(); // acknowledged, so on disk; far from proved
                   // A 2 KiB C1 output is kept in its journal row: cut it short there.
    let db = rusqlite::Connection::open(jobs.path().join("journal.sqlite")).unwrap();
    let input: Vec<u8> = db
        .query_row("SELECT input FROM jobs WHERE job_id = ?1", [&job_id], |r| {
            r.get(0)
        })
        .unwrap();
    db.execute(
        "UPDATE jobs SET input = ?1 WHERE job_id = ?2",
        rusqlite::params![&input[..input.len() / 2], job_id],
    )
    .unwrap();
    drop(db);

    let daemon = start_real(jobs.path());
    let mut client = common::connect(daemon.grpc).await;
    // The acknowledged job is never NOT_FOUND: it fails, saying why.
    let failed = common::await_job(&mut client, &job_id, 0).await.unwrap();
    assert_eq!(failed.status, Ended::Failed as i32);
    assert!(
        failed.error_message.contains("moved to quarantine")
            && failed.error_message.contains("does not decode"),
        "{}",
        failed.error_message
    );
    let quarantined =
        daemon.wait_for_event("a journal record cannot be recovered; moved to quarantine");
    assert_eq!(quarantined["job_id"], job_id.as_str());
    let reason = quarantined["reason"].as_str().unwrap();
    assert!(reason.contains("does not decode"), "{reason}");
    let db = rusqlite::Connection::open(jobs.path().join("journal.sqlite")).unwrap();
    let kept: i64 = db
        .query_row(
            "SELECT COUNT(*) FROM quarantine WHERE job_id = ?1",
            [&job_id],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(kept, 1, "the record is kept aside in the quarantine table");
    drop(db);
    // The retry is a new job, and it is proved.
    let retried = prove(&mut client, porep("porep-1000-8")).await;
    assert_eq!(
        retried.status,
        Ended::Completed as i32,
        "{}",
        retried.error_message
    );
    assert_ne!(retried.job_id, job_id);
    daemon.stop();

    let db = jobs.path().join("journal.sqlite");
    std::fs::write(&db, vec![0x5a; 16 << 10]).unwrap();
    let daemon = start_real(jobs.path());
    assert_eq!(
        daemon
            .events(
                "the job journal cannot be read; it was moved aside with its WAL and a new one \
                 started: the jobs listed are in the moved copy"
            )
            .len(),
        1
    );
    let mut client = common::connect(daemon.grpc).await;
    let gone = common::await_job(&mut client, &retried.job_id, 0)
        .await
        .unwrap_err();
    assert_eq!(
        gone.code(),
        Code::NotFound,
        "the journal it was in is set aside"
    );
    daemon.stop();
}

async fn submit(d: &mut common::TestDaemon, request: pb::SubmitProofRequest) -> String {
    d.grpc
        .submit_proof(request)
        .await
        .expect("submit")
        .into_inner()
        .job_id
}

/// The same request_id, kind and input is one job (running or completed); another input or
/// kind under the same id is another job; a failed or cancelled job is not handed to a retry.
#[tokio::test]
async fn idempotency_is_by_request_id_kind_and_input() {
    let jobs = tempfile::tempdir().unwrap();
    let mut config = common::test_config();
    config.jobs.journal = true;
    config.jobs.dir = jobs.path().to_path_buf();
    let mut d = common::start_with(config, common::StandInProver::new()).await;
    let id = "wdpost-[1000 0] 3"; // Curio's ids carry spaces and brackets
    let a = pb::SubmitProofRequest {
        request_id: id.into(),
        ..common::snap(2)
    };
    let first = submit(&mut d, a.clone()).await;
    assert_eq!(submit(&mut d, a.clone()).await, first, "same id and input");
    let other_input = pb::SubmitProofRequest {
        comm_d_new: vec![9; 32],
        ..a.clone()
    };
    let second = submit(&mut d, other_input).await;
    assert_ne!(second, first, "same id, other input");
    let other_kind = common::winning(id);
    assert_ne!(
        submit(&mut d, other_kind).await,
        first,
        "same id, other kind"
    );
    let done = common::await_job(&mut d.grpc, &first, 0).await.unwrap();
    assert_eq!(done.status, Ended::Completed as i32);
    assert_eq!(
        submit(&mut d, a.clone()).await,
        first,
        "completed: the same job"
    );

    // A failed job is not handed to its retry: the retry is a new attempt.
    let doomed = pb::SubmitProofRequest {
        request_id: "porep-1000-11".into(),
        vanilla_proofs: vec![common::prover::vanilla(common::prover::FAILING_INPUT)],
        ..common::snap(1)
    };
    let failed = submit(&mut d, doomed.clone()).await;
    let ended = common::await_job(&mut d.grpc, &failed, 0).await.unwrap();
    assert_eq!(ended.status, Ended::Failed as i32, "{ended:?}");
    let attempt = submit(&mut d, doomed).await;
    assert_ne!(attempt, failed, "a failed job is not handed to its retry");

    d.prover.close();
    let b = pb::SubmitProofRequest {
        request_id: "snap-1000-9".into(),
        ..common::snap(1)
    };
    let cancelled = submit(&mut d, b.clone()).await;
    d.grpc
        .cancel_proof(pb::CancelProofRequest {
            job_id: cancelled.clone(),
        })
        .await
        .unwrap();
    d.prover.open();
    let retry = submit(&mut d, b).await;
    assert_ne!(
        retry, cancelled,
        "a cancelled job is not handed to its retry"
    );
    let done = common::await_job(&mut d.grpc, &retry, 0).await.unwrap();
    assert_eq!(done.status, Ended::Completed as i32);
}

/// A drain that runs past `drain_timeout` exits with jobs unfinished; they are in the journal and
/// the next start proves them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jobs_a_drain_leaves_unfinished_resume_on_the_next_start() {
    ensure_params(&[ProofKind::PorepSealCommit]);
    let jobs = tempfile::tempdir().unwrap();
    // The PoRep's device phase is held at its first step boundary (the prover's test hook)
    // until the daemon has gone: the job is unfinished when the drain runs out, however fast
    // this machine proves.
    let holds = tempfile::tempdir().unwrap();
    std::fs::write(holds.path().join("1"), b"").unwrap();
    let mut settings = real_env(jobs.path());
    settings.push(("SNARKD_DAEMON_DRAIN_TIMEOUT", "1s".into()));
    let hold_env = snarkd_prover::groth16::test_hold::HOLD_PHASE_ENV;
    settings.push((hold_env, holds.path().display().to_string()));
    let daemon = spawn(Path::new(SNARKD), settings).serving();
    let mut client = common::connect(daemon.grpc).await;
    let job_id = client
        .submit_proof(porep("porep-1000-20"))
        .await
        .unwrap()
        .into_inner()
        .job_id;
    let held = holds.path().join("1.holding");
    common::process::poll_until("the PoRep's device phase held", || held.exists());
    let log = daemon.stop(); // SIGTERM: the drain runs out after 1 s, exit 0
    assert!(
        log.iter()
            .any(|l| l.contains("drain timeout passed with jobs unfinished")),
        "{log:?}"
    );

    let daemon = start_real(jobs.path());
    let mut client = common::connect(daemon.grpc).await;
    let result = common::await_job(&mut client, &job_id, 0).await.unwrap();
    let recovered = daemon.events("job recovered from the journal");
    assert_eq!(recovered.len(), 1, "{recovered:?}");
    assert_eq!(recovered[0]["job_id"], job_id.as_str());
    assert_eq!(
        result.status,
        Ended::Completed as i32,
        "{}",
        result.error_message
    );
    assert_verifies(
        &env().fixtures.request(ProofKind::PorepSealCommit),
        &result.proof,
    );
    daemon.stop();
}

/// The journal of a crashed daemon holds 200 unfinished PoRep jobs (copies of one accepted
/// job's record under 200 request ids). The restarted daemon serves before it has planned any
/// of them (recovery runs in the background; the test holds it before its first job with the
/// `test-hooks` file `hold-recovery`): a WinningPoSt `Prove` completes and verifies meanwhile,
/// the 200 jobs show as queued, and Curio's retry of one attaches to it. Released, recovery
/// plans them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_winning_post_is_proved_while_200_recovered_porep_jobs_wait_to_be_planned() {
    ensure_params(&[ProofKind::PorepSealCommit, ProofKind::WinningPost]);
    let jobs = tempfile::tempdir().unwrap();
    let daemon = start_real(jobs.path());
    let mut client = common::connect(daemon.grpc).await;
    let job_id = client
        .submit_proof(porep("porep-1000-1"))
        .await
        .unwrap()
        .into_inner()
        .job_id;
    daemon.kill();
    let db = rusqlite::Connection::open(jobs.path().join("journal.sqlite")).unwrap();
    let copied = db
        .execute(
            "WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 199)
             INSERT INTO jobs (job_id, seq, request_id, kind, priority, digest, input_bytes,
                               partitions, submitted_unix_ms, input)
             SELECT 'recovered-' || i, seq + 1 + i, 'porep-2000-' || i, kind, priority, digest,
                    input_bytes, partitions, submitted_unix_ms, input
             FROM jobs, n WHERE job_id = ?1",
            [&job_id],
        )
        .unwrap();
    assert_eq!(copied, 200);
    drop(db);
    let hold = jobs.path().join("hold-recovery");
    std::fs::write(&hold, b"").unwrap();

    let daemon = start_real(jobs.path());
    let mut client = common::connect(daemon.grpc).await;
    let winning = prove(
        &mut client,
        pb::SubmitProofRequest {
            request_id: "winpost-1000-1".into(),
            ..wire(
                &env().fixtures.request(ProofKind::WinningPost),
                pb::Priority::Unspecified,
            )
        },
    )
    .await;
    assert_eq!(
        winning.status,
        Ended::Completed as i32,
        "{}",
        winning.error_message
    );
    assert_verifies(
        &env().fixtures.request(ProofKind::WinningPost),
        &winning.proof,
    );
    assert!(
        daemon.events("job recovered from the journal").is_empty(),
        "no recovered job was planned before the WinningPoSt completed"
    );
    let queued = |s: &pb::StatusSnapshot| {
        (s.jobs.iter())
            .filter(|j| {
                j.request_id.starts_with("porep-2000-") && j.state == pb::JobState::Queued as i32
            })
            .count()
    };
    let status = common::wait_for_status(&mut client, |s| queued(s) == 200).await;
    assert_eq!(
        queued(&status),
        200,
        "every recovering job is shown, queued"
    );
    // Curio's retry of a recovering job attaches to it (it is not proved twice).
    let retry = client
        .submit_proof(pb::SubmitProofRequest {
            request_id: "porep-2000-150".into(),
            ..porep("")
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(retry.job_id, "recovered-150");

    std::fs::remove_file(&hold).unwrap();
    let first = daemon.wait_for_event("job recovered from the journal");
    assert!(
        first["job_id"].as_str().unwrap() <= "recovered-0" || first["job_id"] == job_id.as_str(),
        "recovery goes in submit order: {first}"
    );
    daemon.kill();
}
