//! Intake through the `Engine` handle: one job per request id, the kind's priority when none is
//! asked, the limits checked before a request is decoded, and a drain that refuses new work.

use std::sync::atomic::Ordering;
use std::time::Duration;

use super::{config, engine};
use crate::domain::{JobEnd, Priority, ProofKind, ProofRequest};
use crate::error::EngineError;
use crate::test_prover::{request, TestProver};
use crate::{Engine, EngineConfig};

#[tokio::test]
async fn the_same_request_id_returns_the_same_job() {
    let _deadline = crate::test_prover::Watchdog::for_this_test();
    let engine = engine(TestProver::new(1));
    let req = ProofRequest {
        request_id: "sector-7".into(),
        ..request(ProofKind::SnapDealsUpdate, 1, 1000)
    };
    let first = engine.submit(req.clone()).await.unwrap();
    let again = engine.submit(req).await.unwrap();
    assert_eq!(first.job_id, again.job_id);
    assert!(again.existing && !first.existing);
    assert_eq!(engine.snapshot().jobs.len(), 1);
}

#[tokio::test]
async fn unspecified_priority_means_the_kinds_priority() {
    let _deadline = crate::test_prover::Watchdog::for_this_test();
    let engine = engine(TestProver::new(1));
    let job = engine
        .submit(request(ProofKind::WinningPost, 1, 10))
        .await
        .unwrap()
        .job_id;
    let snap = engine.snapshot();
    assert_eq!(
        snap.jobs.iter().find(|j| j.job_id == job).unwrap().priority,
        Priority::Critical
    );
}

/// Cheap checks first: a submit past its priority's `[limits]` is refused before its input is
/// hashed or decoded (the prover never plans it), while a retry of a queued job under the same
/// request id still gets that job.
#[tokio::test]
#[allow(clippy::await_holding_lock)] // the held lock is the gate that keeps synthesis waiting
async fn a_submit_past_the_limits_is_refused_before_it_is_decoded_and_a_retry_still_attaches() {
    let _deadline = crate::test_prover::Watchdog::for_this_test();
    let prover = TestProver::new(1);
    let config = EngineConfig {
        limits: crate::config::IntakeLimits {
            queued_jobs: 1,
            ..Default::default()
        },
        ..config()
    };
    let engine = Engine::start(config, prover.clone());
    let gate = prover.gate.lock();
    let with_id = |id: &str| ProofRequest {
        request_id: id.into(),
        ..request(ProofKind::PorepSealCommit, 2, 1000)
    };
    let first = engine.submit(with_id("porep-1000-1")).await.unwrap();
    assert_eq!(prover.planned.load(Ordering::SeqCst), 1);

    let refused = engine.submit(with_id("porep-1000-2")).await.unwrap_err();
    assert!(
        matches!(
            refused,
            EngineError::LimitReached {
                limit: "queued_jobs",
                ..
            }
        ),
        "{refused:?}"
    );
    assert_eq!(
        prover.planned.load(Ordering::SeqCst),
        1,
        "the refused submit was decoded"
    );

    let retry = engine.submit(with_id("porep-1000-1")).await.unwrap();
    assert_eq!(retry.job_id, first.job_id);
    assert!(retry.existing);
    assert_eq!(prover.planned.load(Ordering::SeqCst), 1);
    drop(gate);
    engine.idle().await;
}

#[tokio::test]
#[allow(clippy::await_holding_lock)] // the held lock is the gate that keeps synthesis waiting
async fn draining_refuses_new_work_and_finishes_the_rest() {
    let _deadline = crate::test_prover::Watchdog::for_this_test();
    let prover = TestProver::new(1);
    let engine = engine(prover.clone());
    let gate = prover.gate.lock();
    let job = engine
        .submit(request(ProofKind::PorepSealCommit, 3, 1000))
        .await
        .unwrap()
        .job_id;
    assert!(!engine.snapshot().daemon.draining);
    engine.begin_drain();
    let refused = engine
        .submit(request(ProofKind::WinningPost, 1, 10))
        .await
        .unwrap_err();
    assert_eq!(refused, EngineError::ShuttingDown);
    assert!(
        engine.snapshot().daemon.draining,
        "the status shows the drain"
    );
    drop(gate);
    engine.idle().await;
    assert!(matches!(
        engine
            .await_job_within(&job, Some(Duration::ZERO))
            .await
            .unwrap()
            .expect("ended")
            .end,
        JobEnd::Completed(_)
    ));
}

/// The writer's queue holds at most `API_INPUTS` API requests: with every place taken, a
/// request waits for one (it is not queued), and goes through once one is given back; a
/// refusal note finds no place and is dropped rather than waiting.
#[tokio::test(flavor = "current_thread")]
async fn api_requests_wait_for_a_place_in_the_writers_queue() {
    let _deadline = crate::test_prover::Watchdog::for_this_test();
    let engine = engine(TestProver::new(1));
    let taken = (engine.api_slots.clone())
        .acquire_many_owned(crate::handle::API_INPUTS as u32)
        .await
        .unwrap();
    let asking = tokio::spawn({
        let engine = engine.clone();
        async move { engine.cancel("no-such-job").await }
    });
    for _ in 0..10 {
        tokio::task::yield_now().await;
    }
    assert!(
        !asking.is_finished(),
        "answered without a place in the queue"
    );
    engine.note_refusal(crate::failures::Failure {
        at_unix_ms: 0,
        kind: None,
        request_id: "dropped".into(),
        what: crate::failures::Failed::Refused {
            code: "INVALID_ARGUMENT".into(),
        },
        class: crate::FailureClass::Input,
        message: "not logged".into(),
    });
    drop(taken);
    let answer = asking.await.unwrap();
    assert!(
        matches!(answer, Err(EngineError::UnknownJob(_))),
        "{answer:?}"
    );
    engine.flush_journal().await;
    assert!(
        engine
            .snapshot()
            .failures
            .iter()
            .all(|f| f.request_id != "dropped"),
        "a refusal past the queue's places is not logged"
    );
}
