//! Memory and time as the machine accounts them: the a/b/c share of a partition's reservation
//! returned by the driver's own device phase before the phase ends, partitions waiting for room
//! in priority order, a job's timings taken from the machine's clock between the events of its
//! steps, and what the budget charges (the daemon's own memory, a job's input, a partition too
//! large for any budget, a cancelled job's reservations returned).

use std::time::Duration;

use super::*;
use crate::domain::Timings;
use crate::prover::SpareMemory;

#[test]
fn the_abc_share_returns_to_the_budget_when_the_device_phase_reports_it() {
    // Room for the params, one partition of 1000 and the 500-byte a/b/c share of another.
    let mut h = Harness::new(PARAMS_BYTES + 1500, 1, 2);
    let a = h
        .submit(ProofKind::WindowPost, Priority::High, 1, 1000)
        .unwrap()
        .job_id;
    let b = h
        .submit(ProofKind::WindowPost, Priority::High, 1, 1000)
        .unwrap()
        .job_id;
    h.complete(0, false); // params
    h.complete(0, false); // a's synthesis; a goes to the worker
    assert_eq!(h.job(&b).partitions[0].state, PartitionState::Pending);
    let i = h.find(|e| matches!(e, Effect::Prove { .. }));
    let reported = h.run(i, false);
    assert!(
        matches!(
            reported[..],
            [Input::AbcReleased { .. }, Input::DeviceDone { .. }]
        ),
        "the device phase reports the a/b/c release before it ends"
    );
    assert_eq!(
        h.budget.used(),
        PARAMS_BYTES + 500,
        "the share went back on the device thread"
    );
    let mut reported = reported.into_iter();
    h.apply(reported.next().unwrap());
    let part = h.job(&a).partitions[0].clone();
    assert_eq!(
        (part.state, part.reserved_bytes),
        (PartitionState::Gpu, 500)
    );
    assert_eq!(
        h.job(&b).partitions[0].state,
        PartitionState::Synthesizing,
        "the returned share admits the next partition before a's device phase ends"
    );
    assert_eq!(h.budget.used(), PARAMS_BYTES + 1500);
    h.check_invariants();
    h.apply(reported.next().unwrap());
    assert_eq!(h.job(&a).partitions[0].reserved_bytes, 0);
    assert_eq!(h.budget.used(), PARAMS_BYTES + 1000);
    h.drain();
    h.check_invariants();
    assert!(matches!(h.outcome(&b), Some(JobEnd::Completed(_))));
}

/// The a/b/c release is news to readers of the snapshot even when it admits nothing.
#[test]
fn the_abc_release_alone_changes_the_snapshot() {
    let mut h = Harness::new(1_000_000, 1, 1);
    let job = (h.submit(ProofKind::WindowPost, Priority::High, 1, 1000))
        .unwrap()
        .job_id;
    h.complete(0, false); // params
    h.complete(0, false); // synthesis
    let reported = h.run(h.find(|e| matches!(e, Effect::Prove { .. })), false);
    let mut reported = reported.into_iter();
    let sequence = h.machine.snapshot().sequence;
    h.apply(reported.next().unwrap());
    assert_eq!(h.job(&job).partitions[0].reserved_bytes, 500);
    assert!(h.machine.snapshot().sequence > sequence);
    h.apply(reported.next().unwrap());
    h.drain();
    assert!(matches!(h.outcome(&job), Some(JobEnd::Completed(_))));
}

/// A partition that does not fit waits for room, and the partitions behind it wait too (a smaller
/// one would otherwise overtake it for as long as smaller ones keep coming), for as long as
/// anything runs or is about to that will return memory: a synthesis, a synthesized partition, a
/// device phase, a finalize. Once nothing runs, memory comes back only when a queued job ends
/// (its input is charged until then), so admission goes past the partition to those that fit.
#[test]
fn a_partition_without_room_holds_those_behind_it_while_anything_runs() {
    // The HIGH PoRep partition needs its params and 100 bytes; the WindowPoSt params are evicted
    // for it once idle, but it fits only once the job behind it has ended and its 60-byte input
    // is no longer charged.
    let mut h = Harness::new(2 * PARAMS_BYTES + 50, 1, 1);
    let first = (h.submit(ProofKind::WindowPost, Priority::Normal, 1, 50))
        .unwrap()
        .job_id;
    let behind = (h.submit_with_input(ProofKind::WindowPost, Priority::Normal, 1, 20, 60))
        .unwrap()
        .job_id;
    let big = (h.submit(ProofKind::PorepSealCommit, Priority::High, 1, 100))
        .unwrap()
        .job_id;
    let state = |h: &Harness, id: &str| h.job(id).partitions[0].state;
    let waiting = |h: &Harness, during: &str| {
        assert_eq!(
            (state(h, &big), state(h, &behind)),
            (PartitionState::Pending, PartitionState::Pending),
            "during {during}: the partition without room and the one behind it both wait"
        );
        h.check_invariants();
    };
    h.complete(h.find(|e| matches!(e, Effect::LoadParams { .. })), false);
    waiting(&h, "the first job's synthesis");
    h.complete(h.find(|e| matches!(e, Effect::Synthesize { .. })), false);
    waiting(&h, "the first job's device phase");
    let prove = h.find(|e| matches!(e, Effect::Prove { .. }));
    let mut reported = h.run(prove, false).into_iter();
    h.apply(reported.next().unwrap());
    waiting(&h, "the first job's device phase, its a/b/c returned");
    h.apply(reported.next().unwrap());
    waiting(&h, "the first job's finalize");
    h.complete(h.find(|e| matches!(e, Effect::Finalize { .. })), false);
    assert!(matches!(h.outcome(&first), Some(JobEnd::Completed(_))));
    assert_eq!(
        (state(&h, &big), state(&h, &behind)),
        (PartitionState::Pending, PartitionState::Synthesizing),
        "with nothing running, the partition that fits goes past the one that cannot"
    );
    h.drain();
    h.check_invariants();
    for id in [&behind, &big] {
        assert!(
            matches!(h.outcome(id), Some(JobEnd::Completed(_))),
            "{:?}",
            h.outcome(id)
        );
    }
}

fn timings(h: &Harness, id: &str) -> Timings {
    let seq = h.machine.job_ids[id];
    let outcome = h.machine.jobs[&seq].outcome.borrow().clone();
    outcome.expect("job ended").timings
}

/// Moves the paused clock on by `secs`, then completes the first pending effect `matches` takes.
async fn after(h: &mut Harness, secs: u64, matches: impl Fn(&Effect<TestProver>) -> bool) {
    tokio::time::advance(Duration::from_secs(secs)).await;
    let i = h.find(matches);
    h.complete(i, false);
}

#[tokio::test(start_paused = true)]
async fn timings_are_measured_between_the_events_on_the_machine_clock() {
    let _deadline = crate::test_prover::Watchdog::for_this_test();
    let mut h = Harness::new(1_000_000, 1, 1);
    let a = h
        .submit(ProofKind::PorepSealCommit, Priority::Normal, 1, 1000)
        .unwrap()
        .job_id;
    // b waits for the only synthesis thread.
    let b = h
        .submit(ProofKind::PorepSealCommit, Priority::Normal, 1, 1000)
        .unwrap()
        .job_id;
    let synth = |e: &Effect<TestProver>| matches!(e, Effect::Synthesize { .. });
    let prove = |e: &Effect<TestProver>| matches!(e, Effect::Prove { .. });
    let finalize = |e: &Effect<TestProver>| matches!(e, Effect::Finalize { .. });
    after(&mut h, 2, |e| matches!(e, Effect::LoadParams { .. })).await; // t = 2
    after(&mut h, 1, synth).await; // t = 3: a to the worker, b admitted
    after(&mut h, 4, prove).await; // t = 7
    after(&mut h, 1, finalize).await; // t = 8: a ends
    after(&mut h, 5, synth).await; // t = 13: b to the worker
    after(&mut h, 1, prove).await; // t = 14
    after(&mut h, 0, finalize).await; // t = 14: b ends
    let s = Duration::from_secs;
    let expected_a = Timings {
        queue_wait: s(0),
        params_load: s(2),
        synthesis: s(3),
        device: s(4),
        total: s(8),
    };
    let expected_b = Timings {
        queue_wait: s(3),
        params_load: s(0),
        synthesis: s(10),
        device: s(1),
        total: s(14),
    };
    assert_eq!(timings(&h, &a), expected_a);
    assert_eq!(timings(&h, &b), expected_b);
    for id in [&a, &b] {
        let t = timings(&h, id);
        assert!(t.queue_wait + t.synthesis + t.device <= t.total, "{t:?}");
    }
}

#[test]
fn tiny_budget_runs_partitions_one_at_a_time() {
    // Room for the params and exactly one partition.
    let mut h = Harness::new(PARAMS_BYTES + 1000, 2, 4);
    let job = h
        .submit(ProofKind::SnapDealsUpdate, Priority::Normal, 4, 1000)
        .unwrap()
        .job_id;
    let mut most = 0;
    while !h.pending.is_empty() {
        let snap = h.machine.snapshot();
        let in_flight = snap.jobs[0]
            .partitions
            .iter()
            .filter(|p| {
                matches!(
                    p.state,
                    PartitionState::Synthesizing | PartitionState::SynthDone | PartitionState::Gpu
                )
            })
            .count();
        most = most.max(in_flight);
        assert!(snap.memory.used_bytes <= snap.memory.total_bytes);
        h.complete(0, false);
        h.check_invariants();
    }
    assert_eq!(most, 1);
    assert!(matches!(h.outcome(&job), Some(JobEnd::Completed(_))));
}

#[test]
fn oversized_job_is_rejected_at_submit_with_sizes() {
    let mut h = Harness::new(5000, 1, 1);
    let err = h
        .submit(ProofKind::PorepSealCommit, Priority::Normal, 1, 10_000)
        .unwrap_err();
    let EngineError::TooLarge { needed, budget } = &err else {
        panic!("{err:?}")
    };
    assert!(needed.contains("for the partition"), "{needed}");
    assert!(!budget.is_empty());
    assert!(h.machine.snapshot().jobs.is_empty());
}

#[test]
fn the_daemons_own_memory_is_not_there_for_partitions() {
    let mut h = Harness::new(1_000_000, 1, 1);
    h.machine._baseline = h.budget.charge_held(Holder::Baseline, 600_000);
    let err = h
        .submit(ProofKind::PorepSealCommit, Priority::Normal, 1, 500_000)
        .unwrap_err();
    let EngineError::TooLarge { budget, .. } = &err else {
        panic!("{err:?}")
    };
    assert!(budget.contains("of it snarkd's own memory"), "{budget}");
    let fits = 400_000 - PARAMS_BYTES;
    let job = h.submit(ProofKind::PorepSealCommit, Priority::Normal, 1, fits);
    let job = job.unwrap().job_id;
    h.drain();
    assert!(matches!(h.outcome(&job), Some(JobEnd::Completed(_))));
    assert_eq!(h.machine.snapshot().memory.baseline_bytes, 600_000);
}

#[test]
fn a_jobs_input_is_charged_until_it_ends() {
    let mut h = Harness::new(1_000_000, 1, 1);
    let job = h
        .submit_with_input(ProofKind::WinningPost, Priority::Critical, 1, 1000, 70_000)
        .unwrap()
        .job_id;
    assert_eq!(h.machine.snapshot().memory.input_bytes, 70_000);
    assert_eq!(h.budget.held_by(Holder::Inputs), 70_000);
    h.drain();
    assert!(matches!(h.outcome(&job), Some(JobEnd::Completed(_))));
    assert_eq!(h.machine.snapshot().memory.input_bytes, 0);
}

#[test]
fn cancellation_returns_the_memory() {
    let mut h = Harness::new(1_000_000, 1, 2);
    let job = h
        .submit(ProofKind::PorepSealCommit, Priority::Normal, 4, 1000)
        .unwrap()
        .job_id;
    h.complete(0, false); // params loaded: two syntheses start
    assert!(h.budget.used() >= 2000 + PARAMS_BYTES);
    assert!(h.cancel(&job).unwrap(), "partitions had started");
    h.drain(); // the running syntheses return late; their results are dropped
    assert_eq!(h.outcome(&job), Some(JobEnd::Cancelled));
    assert_eq!(h.budget.used(), PARAMS_BYTES);
    let (reply, mut answer) = oneshot::channel();
    h.apply(Input::api(Request::Evict {
        circuit_id: "porep-test".into(),
        reply,
    }));
    assert_eq!(
        answer.try_recv().unwrap().unwrap().freed_bytes,
        PARAMS_BYTES
    );
    assert_eq!(h.budget.used(), 0);
    h.check_invariants();
}

#[test]
fn buffers_a_partition_leaves_kept_are_counted_then_freed_for_the_next_partition() {
    // Room for the params and one partition at a time.
    let mut h = Harness::new(PARAMS_BYTES + 1000, 1, 2);
    let kept = Arc::new(crate::test_prover::KeptBytes::default());
    h.budget.keep_spare(kept.clone());
    let job = h
        .submit(ProofKind::SnapDealsUpdate, Priority::Normal, 2, 1000)
        .unwrap()
        .job_id;
    let mut proved = 0;
    while !h.pending.is_empty() {
        let proving = matches!(h.pending[0], Effect::Prove { .. });
        if proving {
            // The prover keeps the partition's buffers as its device phase ends.
            kept.set(800);
        }
        h.complete(0, false);
        h.check_invariants();
        let memory = h.machine.snapshot().memory;
        assert!(memory.used_bytes <= memory.total_bytes);
        if proving {
            proved += 1;
            // After the first: freed so the second partition fits (in the same pass). After
            // the second: nothing wants the room, so they stay kept, and counted.
            let (spare, held) = if proved == 1 { (0, 0) } else { (800, 800) };
            assert_eq!(
                (memory.spare_bytes, kept.held()),
                (spare, held),
                "{memory:?}"
            );
        }
    }
    assert_eq!(proved, 2);
    assert!(matches!(h.outcome(&job), Some(JobEnd::Completed(_))));
}
