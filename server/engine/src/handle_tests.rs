//! The `Engine` handle with its driver and real threads, under paused tokio time where time matters.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crate::domain::{JobEnd, ProofKind};
use crate::error::EngineError;
use crate::failures::FailureStage;
use crate::test_prover::{request, TestProver, PARAMS_BYTES};
use crate::{Engine, EngineConfig, StatusSnapshot};

mod answers;
mod device_hold;
mod intake;

fn config() -> EngineConfig {
    EngineConfig {
        memory_budget_bytes: 1 << 20,
        synthesis_threads: 2,
        ..Default::default()
    }
}

fn engine(prover: std::sync::Arc<TestProver>) -> Engine {
    Engine::start(config(), prover)
}

#[tokio::test(start_paused = true)]
#[allow(clippy::await_holding_lock)] // the held lock is the gate that keeps synthesis waiting
async fn await_times_out_while_the_job_goes_on_then_completes() {
    let _deadline = crate::test_prover::Watchdog::for_this_test();
    let prover = TestProver::new(1);
    let engine = engine(prover.clone());
    let gate = prover.gate.lock();
    let job = engine
        .submit(request(ProofKind::WinningPost, 1, 1000))
        .await
        .unwrap();
    let waited = engine
        .await_job_within(&job.job_id, Some(Duration::from_secs(10)))
        .await
        .unwrap();
    assert_eq!(waited, None, "the wait runs out while the job goes on");
    drop(gate);
    let done = engine.await_job(&job.job_id).await.unwrap();
    assert_eq!(done.end, JobEnd::Completed(vec![0; 4]));
    assert!(
        done.timings.total >= Duration::from_secs(10),
        "{:?}",
        done.timings
    );
}

#[tokio::test(start_paused = true)]
async fn finished_jobs_stay_visible_for_the_retention_then_go() {
    let _deadline = crate::test_prover::Watchdog::for_this_test();
    let engine = engine(TestProver::new(1));
    let job = engine
        .submit(request(ProofKind::WindowPost, 2, 1000))
        .await
        .unwrap()
        .job_id;
    assert!(matches!(
        engine.await_job(&job).await.unwrap().end,
        JobEnd::Completed(_)
    ));
    tokio::time::sleep(Duration::from_secs(25)).await;
    assert!(engine.snapshot().jobs.iter().any(|j| j.job_id == job));
    assert!(matches!(
        engine
            .await_job_within(&job, Some(Duration::ZERO))
            .await
            .unwrap()
            .expect("ended")
            .end,
        JobEnd::Completed(_)
    ));
    tokio::time::sleep(Duration::from_secs(7)).await;
    assert!(engine.snapshot().jobs.iter().all(|j| j.job_id != job));
    assert_eq!(
        engine.await_job(&job).await.unwrap_err(),
        EngineError::UnknownJob(job)
    );
}

/// Submits a job while `flag` makes one of its steps panic, checks that the job fails with a
/// message containing `message` and is in the failure log at `stage`, then clears the flag and
/// checks that the next job completes (and is not in the log).
async fn a_panic_fails_only_its_job(
    flag: fn(&TestProver) -> &AtomicBool,
    kind: ProofKind,
    message: &str,
    stage: FailureStage,
) -> Engine {
    let prover = TestProver::new(1);
    let engine = engine(prover.clone());
    flag(&prover).store(true, Ordering::SeqCst);
    let bad = engine.submit(request(kind, 2, 1000)).await.unwrap().job_id;
    let JobEnd::Failed(error) = engine.await_job(&bad).await.unwrap().end else {
        panic!("must fail")
    };
    assert!(error.message.contains(message), "{error}");
    flag(&prover).store(false, Ordering::SeqCst);
    let good = engine.submit(request(kind, 2, 1000)).await.unwrap().job_id;
    assert!(matches!(
        engine.await_job(&good).await.unwrap().end,
        JobEnd::Completed(_)
    ));
    let snap = engine.snapshot();
    assert_eq!(snap.counters.total_failed, 1);
    let [logged] = &snap.failures[..] else {
        panic!("one failure logged: {:?}", snap.failures)
    };
    assert_eq!(
        (&logged.what, logged.kind),
        (
            &crate::failures::Failed::Job {
                job_id: bad.clone(),
                stage
            },
            Some(kind)
        )
    );
    assert_eq!(
        (logged.class, &logged.message),
        (error.class, &error.to_string())
    );
    assert!(logged.at_unix_ms > 0);
    engine
}

#[tokio::test]
async fn a_panic_in_synthesis_fails_only_that_job() {
    let _deadline = crate::test_prover::Watchdog::for_this_test();
    let flag: fn(&TestProver) -> &AtomicBool = |p| &p.panic_in_synthesis;
    a_panic_fails_only_its_job(
        flag,
        ProofKind::PorepSealCommit,
        "synthetic circuit exploded",
        FailureStage::Synthesis,
    )
    .await;
}

#[tokio::test]
async fn a_subscriber_sees_partitions_move_through_their_states_in_order() {
    let _deadline = crate::test_prover::Watchdog::for_this_test();
    use crate::lifecycle::PartitionState as S;
    let prover = TestProver::new(1);
    let engine = engine(prover.clone());
    let mut status = engine.subscribe();
    let job = engine
        .submit(request(ProofKind::WindowPost, 1, 1000))
        .await
        .unwrap()
        .job_id;
    let mut seen = vec![];
    loop {
        let snap = status.borrow_and_update().clone();
        if let Some(j) = snap.jobs.iter().find(|j| j.job_id == job) {
            let state = j.partitions[0].state;
            if seen.last() != Some(&state) {
                seen.push(state);
            }
            if j.state.is_finished() {
                break;
            }
        }
        status.changed().await.unwrap();
    }
    let order = [S::Pending, S::Synthesizing, S::SynthDone, S::Gpu, S::Done];
    let positions: Vec<usize> = seen
        .iter()
        .map(|s| order.iter().position(|o| o == s).expect("no other state"))
        .collect();
    assert!(positions.windows(2).all(|w| w[0] < w[1]), "{seen:?}");
    assert_eq!(seen.last(), Some(&S::Done));
}

#[tokio::test]
async fn a_panic_in_the_device_phase_fails_only_that_job_and_the_worker_goes_on() {
    let _deadline = crate::test_prover::Watchdog::for_this_test();
    let flag: fn(&TestProver) -> &AtomicBool = |p| &p.panic_in_device;
    let engine = a_panic_fails_only_its_job(
        flag,
        ProofKind::WindowPost,
        "synthetic device exploded",
        FailureStage::Device,
    )
    .await;
    let snap = engine.snapshot();
    assert_eq!(
        snap.workers[0].proofs_done, 2,
        "the same worker proved the next job"
    );
    // Every reservation of the failed job comes back (a cancelled synthesis may return late).
    snapshot_where(&engine, |s| s.memory.used_bytes == PARAMS_BYTES).await;
}

/// Submits a PoRep whose device phase goes on step after step, each step a preemption point,
/// until the test clears `device_steps_held`, and waits until it is on the device; its job id.
async fn porep_stepping_on_the_device(engine: &Engine, prover: &TestProver) -> String {
    prover.device_steps_held.store(true, Ordering::SeqCst);
    let porep = engine
        .submit(request(ProofKind::PorepSealCommit, 1, 1000))
        .await
        .unwrap()
        .job_id;
    snapshot_where(engine, |s| {
        s.jobs.iter().any(|j| {
            j.job_id == porep && j.partitions[0].state == crate::lifecycle::PartitionState::Gpu
        })
    })
    .await;
    porep
}

/// Waits until a snapshot satisfies `ready`.
async fn snapshot_where(engine: &Engine, ready: impl Fn(&StatusSnapshot) -> bool) {
    let mut status = engine.subscribe();
    status
        .wait_for(|s| ready(s))
        .await
        .expect("the engine is running");
}

#[tokio::test]
#[allow(clippy::await_holding_lock)] // the held lock keeps the device phase waiting
async fn the_driver_returns_the_abc_share_while_the_device_phase_runs() {
    let _deadline = crate::test_prover::Watchdog::for_this_test();
    let prover = TestProver::new(1);
    let engine = engine(prover.clone());
    let gate = prover.device_gate.lock();
    let job = engine
        .submit(request(ProofKind::WindowPost, 1, 1000))
        .await
        .unwrap()
        .job_id;
    // The device phase is held after the a/b/c release: half the partition is back already.
    snapshot_where(&engine, |s| {
        let part = s.jobs.first().map(|j| &j.partitions[0]);
        part.is_some_and(|p| {
            p.state == crate::lifecycle::PartitionState::Gpu && p.reserved_bytes == 500
        }) && s.memory.used_bytes == PARAMS_BYTES + 500
    })
    .await;
    drop(gate);
    assert!(matches!(
        engine.await_job(&job).await.unwrap().end,
        JobEnd::Completed(_)
    ));
    snapshot_where(&engine, |s| s.memory.used_bytes == PARAMS_BYTES).await;
}

#[tokio::test]
#[allow(clippy::await_holding_lock)] // the held lock keeps the device phase waiting
async fn memory_a_phase_holds_more_stays_held_past_the_abc_release_until_its_end() {
    let _deadline = crate::test_prover::Watchdog::for_this_test();
    let prover = TestProver::new(1);
    prover.hold_more.store(100, Ordering::SeqCst);
    let engine = engine(prover.clone());
    let gate = prover.device_gate.lock();
    let job = engine
        .submit(request(ProofKind::WindowPost, 1, 1000))
        .await
        .unwrap()
        .job_id;
    // Held after the a/b/c release: their share is back, the 100 bytes asked for are not.
    snapshot_where(&engine, |s| s.memory.used_bytes == PARAMS_BYTES + 500 + 100).await;
    assert_eq!(*prover.held_more.lock(), vec![true]);
    drop(gate);
    assert!(matches!(
        engine.await_job(&job).await.unwrap().end,
        JobEnd::Completed(_)
    ));
    snapshot_where(&engine, |s| s.memory.used_bytes == PARAMS_BYTES).await;

    // A budget without the room: refused, nothing held, and the phase goes on.
    prover.held_more.lock().clear();
    prover.hold_more.store(1 << 30, Ordering::SeqCst);
    let job = engine
        .submit(request(ProofKind::WindowPost, 1, 1000))
        .await
        .unwrap()
        .job_id;
    assert!(matches!(
        engine.await_job(&job).await.unwrap().end,
        JobEnd::Completed(_)
    ));
    assert_eq!(*prover.held_more.lock(), vec![false]);
    snapshot_where(&engine, |s| s.memory.used_bytes == PARAMS_BYTES).await;
}

#[tokio::test]
#[allow(clippy::await_holding_lock)] // the held lock is the gate that keeps synthesis waiting
async fn evict_params_is_refused_while_a_job_uses_them() {
    let _deadline = crate::test_prover::Watchdog::for_this_test();
    let prover = TestProver::new(1);
    let engine = engine(prover.clone());
    let gate = prover.gate.lock();
    let job = engine
        .submit(request(ProofKind::SnapDealsUpdate, 1, 1000))
        .await
        .unwrap()
        .job_id;
    assert_eq!(
        engine.evict_params("snap-test").await,
        Err(EngineError::ParamsInUse("snap-test".into()))
    );
    drop(gate);
    engine.await_job(&job).await.unwrap();
    let evicted = engine.evict_params("snap-test").await.unwrap();
    assert!(evicted.was_loaded);
    assert_eq!(evicted.freed_bytes, PARAMS_BYTES);
}

#[tokio::test(start_paused = true)]
#[allow(clippy::await_holding_lock)] // the held lock is the gate that keeps synthesis waiting
async fn timings_add_up_and_show_the_wait_for_a_thread() {
    let _deadline = crate::test_prover::Watchdog::for_this_test();
    let prover = TestProver::new(1);
    let config = EngineConfig {
        memory_budget_bytes: 1 << 20,
        synthesis_threads: 1,
        // The paused clock jumps ahead whenever the runtime waits for a prover thread: a short
        // retention could forget the second job before it is awaited.
        retention: Duration::from_secs(24 * 3600),
        ..Default::default()
    };
    let engine = Engine::start(config, prover.clone());
    let gate = prover.gate.lock();
    let first = engine
        .submit(request(ProofKind::PorepSealCommit, 1, 1000))
        .await
        .unwrap()
        .job_id;
    let second = engine
        .submit(request(ProofKind::PorepSealCommit, 1, 1000))
        .await
        .unwrap()
        .job_id;
    tokio::time::sleep(Duration::from_secs(10)).await;
    drop(gate);
    let first = engine.await_job(&first).await.unwrap().timings;
    let second = engine.await_job(&second).await.unwrap().timings;
    assert_eq!(first.queue_wait, Duration::ZERO, "{first:?}");
    assert!(first.synthesis >= Duration::from_secs(10), "{first:?}");
    assert!(second.queue_wait >= Duration::from_secs(10), "{second:?}");
    for t in [first, second] {
        assert!(t.queue_wait + t.synthesis + t.device <= t.total, "{t:?}");
        assert!(t.params_load <= t.total, "{t:?}");
    }
}

#[tokio::test]
async fn work_without_a_deadline_runs_at_a_lower_os_priority() {
    let _deadline = crate::test_prover::Watchdog::for_this_test();
    let prover = TestProver::new(1);
    let engine = engine(prover.clone());
    let base = crate::os_priority::current_nice();
    let lowered = (base + 19).min(19);
    for (kind, expected) in [
        (ProofKind::PorepSealCommit, lowered),
        (ProofKind::WinningPost, base),
        (ProofKind::WindowPost, base),
        (ProofKind::SnapDealsUpdate, lowered),
    ] {
        prover.nice_seen.lock().clear();
        let job = engine.submit(request(kind, 2, 1000)).await.unwrap();
        let done = engine.await_job(&job.job_id).await.unwrap();
        assert!(matches!(done.end, JobEnd::Completed(_)), "{:?}", done.end);
        let seen = prover.nice_seen.lock().clone();
        assert_eq!(
            seen.len(),
            4,
            "two syntheses and two device phases: {seen:?}"
        );
        for (step, what, nice) in seen {
            assert_eq!(nice, expected, "{kind} {step} of {what}");
        }
    }
}

#[tokio::test]
#[allow(clippy::await_holding_lock)] // the held lock is the gate that keeps the WinningPoSt on the device
async fn a_deadline_partition_preempts_a_running_device_phase_without_waiting_for_its_step() {
    let _deadline = crate::test_prover::Watchdog::for_this_test();
    use crate::lifecycle::PartitionState as P;
    use crate::status::PausedPartition;
    let prover = TestProver::new(1);
    let engine = engine(prover.clone());
    let porep = porep_stepping_on_the_device(&engine, &prover).await;
    let on_device = |s: &StatusSnapshot, id: &str| {
        s.jobs
            .iter()
            .any(|j| j.job_id == id && j.partitions[0].state == P::Gpu)
    };

    // A WinningPoSt runs on the busy worker, between two steps of the PoRep's device phase
    // (held at its own device gate, so the pause can be seen).
    let gate = prover.device_gate.lock();
    let winning = engine
        .submit(request(ProofKind::WinningPost, 1, 1000))
        .await
        .unwrap()
        .job_id;
    snapshot_where(&engine, |s| {
        s.workers[0].paused
            == Some(PausedPartition {
                job_id: porep.clone(),
                partition: 0,
            })
            && s.workers[0].state
                == crate::lifecycle::WorkerState::Proving {
                    job_id: winning.clone(),
                    partition: 0,
                }
    })
    .await;
    drop(gate);
    let done = engine.await_job(&winning).await.unwrap();
    assert!(matches!(done.end, JobEnd::Completed(_)), "{:?}", done.end);
    // The WinningPoSt's phase ran at the process's priority, not at the paused PoRep's.
    let device_nice: Vec<i32> = (prover.nice_seen.lock().iter())
        .filter(|(step, ..)| *step == "device")
        .map(|(.., nice)| *nice)
        .collect();
    assert_eq!(device_nice, [crate::os_priority::current_nice()]);
    let s = engine.snapshot();
    assert!(on_device(&s, &porep), "the PoRep is still on the device");
    assert_eq!(s.workers[0].paused, None);

    // Nor does a deadline partition wait for the step a running phase is in: it runs beside
    // it, and the other phase stops at its next step boundary.
    let step = prover.mid_step_gate.lock();
    while !prover.in_mid_step.load(Ordering::SeqCst) {
        tokio::task::yield_now().await;
    }
    let wpost = engine
        .submit(request(ProofKind::WindowPost, 1, 1000))
        .await
        .unwrap()
        .job_id;
    let done = engine.await_job(&wpost).await.unwrap();
    assert!(matches!(done.end, JobEnd::Completed(_)), "{:?}", done.end);
    assert!(
        prover.in_mid_step.load(Ordering::SeqCst),
        "the PoRep's step is still held"
    );
    drop(step);

    // Work without a deadline does not preempt.
    let snap = engine
        .submit(request(ProofKind::SnapDealsUpdate, 1, 1000))
        .await
        .unwrap()
        .job_id;
    snapshot_where(&engine, |s| {
        s.jobs
            .iter()
            .any(|j| j.job_id == snap && j.partitions[0].state == P::SynthDone)
    })
    .await;
    assert!(on_device(&engine.snapshot(), &porep));

    prover.device_steps_held.store(false, Ordering::SeqCst);
    for id in [&porep, &snap] {
        let done = engine.await_job(id).await.unwrap();
        assert!(matches!(done.end, JobEnd::Completed(_)), "{:?}", done.end);
    }
    assert_eq!(prover.proved.load(Ordering::SeqCst), 4);
}

#[tokio::test(start_paused = true)]
async fn an_idle_engine_publishes_no_snapshot_until_its_state_changes() {
    let _deadline = crate::test_prover::Watchdog::for_this_test();
    let engine = engine(TestProver::new(1));
    let mut status = engine.subscribe();
    tokio::time::sleep(Duration::from_secs(1)).await;
    let idle = status.borrow_and_update().clone();
    // Ten ticks of the driver's clock, with nothing to do.
    tokio::time::sleep(Duration::from_secs(10)).await;
    assert!(
        !status.has_changed().unwrap(),
        "an idle engine published a snapshot"
    );
    engine
        .submit(request(ProofKind::WindowPost, 2, 1000))
        .await
        .unwrap();
    assert!(status.has_changed().unwrap(), "a submit was not published");
    assert!(status.borrow_and_update().sequence > idle.sequence);
}

#[tokio::test]
async fn device_readings_reach_the_snapshots_as_they_change() {
    let _deadline = crate::test_prover::Watchdog::for_this_test();
    let prover = TestProver::new(1);
    let reading = |used| crate::prover::DeviceTelemetry {
        ordinal: 0,
        utilization_percent: Some(40),
        pool_used_bytes: Some(used),
        ..Default::default()
    };
    *prover.readings.lock() = vec![reading(1)];
    let config = EngineConfig {
        device_telemetry_interval: Duration::from_millis(10),
        ..Default::default()
    };
    let engine = Engine::start(config, prover.clone());
    snapshot_where(&engine, |s| s.devices == [reading(1)]).await;
    *prover.readings.lock() = vec![reading(2)];
    snapshot_where(&engine, |s| s.devices == [reading(2)]).await;
}

#[tokio::test]
async fn a_panic_while_planning_is_an_internal_error_and_the_engine_goes_on() {
    let _deadline = crate::test_prover::Watchdog::for_this_test();
    let prover = TestProver::new(1);
    let engine = engine(prover.clone());
    prover.panic_in_plan.store(true, Ordering::SeqCst);
    let err = engine
        .submit(request(ProofKind::WinningPost, 1, 1000))
        .await
        .unwrap_err();
    assert!(matches!(err, EngineError::Internal(_)), "{err:?}");
    assert_eq!(err.class(), crate::error::FailureClass::Bug);
    prover.panic_in_plan.store(false, Ordering::SeqCst);
    let job = engine
        .submit(request(ProofKind::WinningPost, 1, 1000))
        .await
        .unwrap();
    let done = engine.await_job(&job.job_id).await.unwrap();
    assert!(matches!(done.end, JobEnd::Completed(_)), "{:?}", done.end);
}

#[tokio::test]
async fn a_cancelled_jobs_device_phase_stops_at_its_next_step_and_frees_the_worker() {
    let _deadline = crate::test_prover::Watchdog::for_this_test();
    let prover = TestProver::new(1);
    let engine = engine(prover.clone());
    // Only a stop at a step boundary can end the PoRep's device phase while the test holds it.
    let porep = porep_stepping_on_the_device(&engine, &prover).await;
    assert!(engine.cancel(&porep).await.unwrap(), "it was running");
    snapshot_where(&engine, |s| {
        s.workers[0].state == crate::lifecycle::WorkerState::Idle
    })
    .await;
    assert_eq!(
        prover.proved.load(Ordering::SeqCst),
        0,
        "the phase stopped unproved"
    );
    // The worker takes the next work at once, although the held steps would never have ended.
    let next = engine
        .submit(request(ProofKind::WinningPost, 1, 1000))
        .await
        .unwrap()
        .job_id;
    let done = engine.await_job(&next).await.unwrap();
    assert!(matches!(done.end, JobEnd::Completed(_)), "{:?}", done.end);
    prover.device_steps_held.store(false, Ordering::SeqCst);
}
