//! What the engine answers is in its status by the time the answer arrives: an accepted job,
//! a job's end, a cancel and loaded params are in the snapshot the caller reads next. The
//! driver holds each answer back until the snapshot after the input that made it is published;
//! sent at once, a caller on another thread could read the snapshot before.

use super::{config, engine};
use crate::domain::{ProofKind, ProofRequest};
use crate::status::JobState;
use crate::test_prover::{request, TestProver};
use crate::Engine;

/// The state the snapshot shows for `job_id` (None: not there).
fn shown(engine: &Engine, job_id: &str) -> Option<JobState> {
    (engine.snapshot().jobs.iter())
        .find(|j| j.job_id == job_id)
        .map(|j| j.state)
}

// Many rounds on two threads: the caller's task runs beside the writer's, so an answer sent
// before the publish is read against the older snapshot in some rounds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[allow(clippy::await_holding_lock)] // the held lock is the gate that keeps synthesis waiting
async fn a_caller_finds_what_it_was_answered_in_the_status() {
    let _deadline = crate::test_prover::Watchdog::for_this_test();
    let prover = TestProver::new(1);
    let engine = engine(prover.clone());
    for round in 0..200 {
        let req = ProofRequest {
            request_id: format!("round-{round}"),
            ..request(ProofKind::WinningPost, 1, 10)
        };
        let job = engine.submit(req).await.unwrap().job_id;
        assert!(
            shown(&engine, &job).is_some(),
            "round {round}: accepted, not shown"
        );
        let ended = engine.await_job(&job).await.unwrap();
        assert_eq!(
            shown(&engine, &job),
            Some(JobState::Completed),
            "round {round}: {:?}",
            ended.end
        );
    }
    // Held: the job's synthesis waits, so the cancel finds it running.
    let gate = prover.gate.lock();
    let job = engine
        .submit(request(ProofKind::PorepSealCommit, 4, 10))
        .await
        .unwrap()
        .job_id;
    assert!(engine.cancel(&job).await.unwrap());
    assert_eq!(shown(&engine, &job), Some(JobState::Cancelled));
    drop(gate);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn loaded_params_are_in_the_status_when_the_preload_returns() {
    let _deadline = crate::test_prover::Watchdog::for_this_test();
    for kind in ProofKind::ALL {
        let engine = Engine::start(config(), TestProver::new(1));
        let circuit = format!("{kind}-test");
        let loaded = engine.preload_params(&circuit).await.unwrap();
        assert!(!loaded.already_loaded);
        assert!(
            engine
                .snapshot()
                .params
                .iter()
                .any(|p| p.circuit_id == circuit),
            "{circuit} preloaded, not shown"
        );
    }
}
