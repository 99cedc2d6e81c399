//! Two workers on one device: while a deadline partition's phase runs on one, the other's phase
//! without a deadline waits at its step boundaries (or before its first), and stops there when
//! its job is cancelled (`worker.rs`, `DeviceHold`); without preemption nothing is held.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::{config, porep_stepping_on_the_device, snapshot_where};
use crate::domain::{JobEnd, ProofKind};
use crate::test_prover::{request, TestProver};
use crate::{Engine, EngineConfig};

/// An engine of two workers on one device, preempting (`[scheduler] preempt`) or not.
fn two_workers_on_one_device_preempting(preempt: bool) -> (Arc<TestProver>, Engine) {
    let prover = TestProver::new(1);
    prover.workers_per_device.store(2, Ordering::SeqCst);
    let engine = Engine::start(
        EngineConfig {
            preempt,
            ..config()
        },
        prover.clone(),
    );
    (prover, engine)
}

fn two_workers_on_one_device() -> (Arc<TestProver>, Engine) {
    two_workers_on_one_device_preempting(true)
}

/// Submits a WinningPoSt and waits until its device phase runs; its job id.
async fn winning_post_in_its_phase(engine: &Engine, prover: &TestProver) -> String {
    let winning = engine
        .submit(request(ProofKind::WinningPost, 1, 1000))
        .await
        .unwrap()
        .job_id;
    while prover.deadline_phases.load(Ordering::SeqCst) == 0 {
        tokio::task::yield_now().await;
    }
    winning
}

/// Holds the stepping PoRep's phase in the middle of a step (past the device gate) until the
/// returned guard drops.
#[allow(clippy::await_holding_lock)] // the held lock is what keeps the step from ending
async fn in_mid_step(prover: &TestProver) -> parking_lot::MutexGuard<'_, ()> {
    let step = prover.mid_step_gate.lock();
    while !prover.in_mid_step.load(Ordering::SeqCst) {
        tokio::task::yield_now().await;
    }
    step
}

/// Waits for `job` to end, completed.
async fn completes(engine: &Engine, job: &str) {
    let done = engine.await_job(job).await.unwrap();
    assert!(matches!(done.end, JobEnd::Completed(_)), "{:?}", done.end);
}

#[tokio::test]
#[allow(clippy::await_holding_lock)] // the held lock is the gate that keeps the WinningPoSt on the device
async fn a_deadline_phase_holds_the_other_workers_of_its_device_at_their_step_boundaries() {
    let _deadline = crate::test_prover::Watchdog::for_this_test();
    let (prover, engine) = two_workers_on_one_device();
    assert_eq!(
        engine.snapshot().workers.len(),
        2,
        "two workers on the one device"
    );
    let porep = porep_stepping_on_the_device(&engine, &prover).await;

    // The PoRep is held in the middle of a step ...
    let step = in_mid_step(&prover).await;
    // ... while the WinningPoSt takes the idle worker (nothing is preempted) and is held in
    // its phase.
    let gate = prover.device_gate.lock();
    let winning = winning_post_in_its_phase(&engine, &prover).await;
    // The PoRep's step ends and it reaches its boundary meanwhile ...
    drop(step);
    while prover.boundaries_in_deadline.load(Ordering::SeqCst) == 0 {
        tokio::task::yield_now().await;
    }
    // ... told there that it will wait (a device phase lets its multiexp memory go first) ...
    assert_eq!(prover.told_it_will_wait.load(Ordering::SeqCst), 1);
    assert!(engine.snapshot().workers.iter().all(|w| w.paused.is_none()));
    drop(gate);
    completes(&engine, &winning).await;
    // ... and went past none while the WinningPoSt's phase ran.
    assert_eq!(prover.passed_in_deadline.load(Ordering::SeqCst), 0);

    prover.device_steps_held.store(false, Ordering::SeqCst);
    completes(&engine, &porep).await;
}

#[tokio::test]
#[allow(clippy::await_holding_lock)] // the held lock is the gate that keeps the WinningPoSt on the device
async fn a_phase_held_for_a_deadline_partition_stops_there_when_its_job_is_cancelled() {
    let _deadline = crate::test_prover::Watchdog::for_this_test();
    let (prover, engine) = two_workers_on_one_device();
    let gate = prover.device_gate.lock();
    let winning = winning_post_in_its_phase(&engine, &prover).await;
    // A PoRep sent to the other worker meanwhile waits before its first step ...
    let porep = engine
        .submit(request(ProofKind::PorepSealCommit, 1, 1000))
        .await
        .unwrap()
        .job_id;
    snapshot_where(&engine, |s| {
        s.jobs.iter().any(|j| {
            j.job_id == porep && j.partitions[0].state == crate::lifecycle::PartitionState::Gpu
        })
    })
    .await;
    // ... and, cancelled, frees its worker while the WinningPoSt still holds the device (were it
    // not held before its first step, or deaf to its stop while held, it would wait on the
    // device gate this test holds, and the wait below would never end: the watchdog fails it).
    assert!(engine.cancel(&porep).await.unwrap(), "it was running");
    snapshot_where(&engine, |s| {
        (s.workers.iter())
            .filter(|w| w.state == crate::lifecycle::WorkerState::Idle)
            .count()
            == 1
    })
    .await;
    assert_eq!(prover.deadline_phases.load(Ordering::SeqCst), 1);
    drop(gate);
    completes(&engine, &winning).await;
}

#[tokio::test]
#[allow(clippy::await_holding_lock)] // the held lock is the gate that keeps the WinningPoSt on the device
async fn without_preemption_a_deadline_phase_holds_no_other_workers_phase() {
    let _deadline = crate::test_prover::Watchdog::for_this_test();
    let (prover, engine) = two_workers_on_one_device_preempting(false);
    let porep = porep_stepping_on_the_device(&engine, &prover).await;
    // The PoRep is held in the middle of a step (past the device gate) ...
    let step = in_mid_step(&prover).await;
    let gate = prover.device_gate.lock();
    let winning = winning_post_in_its_phase(&engine, &prover).await;
    // ... and goes past a step boundary while the WinningPoSt's phase runs (held, this wait
    // would never end: the watchdog fails the test).
    drop(step);
    while prover.passed_in_deadline.load(Ordering::SeqCst) == 0 {
        tokio::task::yield_now().await;
    }
    assert_eq!(
        prover.told_it_will_wait.load(Ordering::SeqCst),
        0,
        "nor is it told it will"
    );
    drop(gate);
    completes(&engine, &winning).await;
    prover.device_steps_held.store(false, Ordering::SeqCst);
    completes(&engine, &porep).await;
}
