//! Scheduling seen from outside the machine: the order in which a freed worker takes
//! synthesized partitions, the queue position submit reports, the synthesis allowance the
//! snapshot reports, and the synthesis lookahead.

use super::*;

/// The (job, partition) of the device phase that is pending.
fn on_device(h: &Harness) -> (u64, u32) {
    match &h.pending[h.find(|e| matches!(e, Effect::Prove { .. }))] {
        Effect::Prove { task, .. } => (task.job, task.index),
        _ => unreachable!(),
    }
}

/// Completes every pending synthesis, the newest first.
fn complete_syntheses(h: &mut Harness) {
    while let Some(i) = h
        .pending
        .iter()
        .rposition(|e| matches!(e, Effect::Synthesize { .. }))
    {
        h.complete(i, false);
    }
}

#[test]
fn a_freed_worker_takes_the_highest_priority_then_the_oldest_job_then_the_lowest_partition() {
    let mut h = Harness::new(1_000_000, 1, 8);
    let kind = ProofKind::PorepSealCommit;
    // HIGH, so that the HIGH job below waits for it rather than preempting it.
    h.submit(kind, Priority::High, 1, 100).unwrap();
    h.complete(0, false); // params
    h.complete(0, false); // the first job's synthesis: it takes the only worker
    let mut names = HashMap::new();
    for (name, priority, partitions) in [
        ("low", Priority::Low, 1),
        ("old", Priority::Normal, 2),
        ("young", Priority::Normal, 2),
        ("high", Priority::High, 1),
    ] {
        let id = h.submit(kind, priority, partitions, 100).unwrap().job_id;
        names.insert(h.machine.job_ids[&id], name);
    }
    // Syntheses finish newest first, so the ready queue is not in arrival order.
    complete_syntheses(&mut h);
    let ready = h.machine.partitions_in(PartitionState::SynthDone).len();
    assert_eq!(ready, 6, "every partition waits for the worker");
    let mut order = Vec::new();
    for _ in 0..6 {
        complete_device(&mut h, false);
        let (job, index) = on_device(&h);
        order.push((names[&job], index));
        h.check_invariants();
    }
    assert_eq!(
        order,
        [
            ("high", 0),
            ("old", 0),
            ("old", 1),
            ("young", 0),
            ("young", 1),
            ("low", 0)
        ]
    );
    h.drain();
    assert_eq!(h.machine.snapshot().counters.total_completed, 5);
}

#[test]
fn submit_reports_how_many_jobs_run_before_it() {
    let mut h = Harness::new(1_000_000, 1, 1);
    let submit = |h: &mut Harness, priority| {
        h.submit(ProofKind::SnapDealsUpdate, priority, 1, 100)
            .unwrap()
            .queue_position
    };
    assert_eq!(submit(&mut h, Priority::Normal), 0);
    assert_eq!(submit(&mut h, Priority::Normal), 1);
    assert_eq!(submit(&mut h, Priority::Normal), 2);
    assert_eq!(
        submit(&mut h, Priority::High),
        0,
        "ahead of every normal job"
    );
    assert_eq!(submit(&mut h, Priority::Low), 4);
    assert_eq!(submit(&mut h, Priority::High), 1);
    h.drain();
    assert_eq!(
        submit(&mut h, Priority::Low),
        0,
        "finished jobs are not ahead"
    );
}

/// A retry of an older job is answered with its place now: the jobs of higher priorities, and
/// those of its own submitted before it that have not ended.
#[test]
fn a_retry_is_told_its_place_among_the_jobs_still_ahead_of_it() {
    let mut h = Harness::new(1_000_000, 1, 1);
    let submit = |h: &mut Harness, id: &str, priority| {
        let origin = JobOrigin {
            request_id: id.into(),
            kind: ProofKind::SnapDealsUpdate,
            priority,
            digest: crate::journal::InputDigest([id.len() as u8; 32]),
            input_bytes: 0,
        };
        let s = h.submit_as(origin, 1, 100).unwrap();
        (s.queue_position, s.existing)
    };
    assert_eq!(submit(&mut h, "n", Priority::Normal), (0, false));
    assert_eq!(submit(&mut h, "lo", Priority::Low), (1, false));
    assert_eq!(submit(&mut h, "nnn", Priority::Normal), (1, false));
    assert_eq!(submit(&mut h, "cccc", Priority::Critical), (0, false));
    assert_eq!(
        submit(&mut h, "n", Priority::Normal),
        (1, true),
        "behind the CRITICAL one"
    );
    assert_eq!(
        submit(&mut h, "lo", Priority::Low),
        (3, true),
        "behind every other"
    );
    assert_eq!(
        submit(&mut h, "nnn", Priority::Normal),
        (2, true),
        "behind its elder too"
    );
    h.drain();
    assert_eq!(
        submit(&mut h, "lo", Priority::Low),
        (0, true),
        "a completed job waits for none"
    );
}

#[test]
fn max_allowed_now_follows_the_free_budget() {
    // Room for the params and two partitions of 1000 (a/b/c share 500).
    let mut h = Harness::new(PARAMS_BYTES + 2000, 1, 4);
    let allowed = |h: &Harness| {
        let s = h.machine.snapshot().synthesis;
        (s.active, s.max_allowed_now)
    };
    assert_eq!(allowed(&h), (0, 4), "nothing queued: every thread");
    h.submit(ProofKind::PorepSealCommit, Priority::Normal, 5, 1000)
        .unwrap();
    assert_eq!(allowed(&h), (2, 2), "memory for two of four threads");
    complete_syntheses(&mut h);
    assert_eq!(
        allowed(&h),
        (0, 0),
        "synthesized partitions hold the budget"
    );
    let i = h.find(|e| matches!(e, Effect::LoadParams { .. }));
    h.complete(i, false); // one partition goes to the worker
    let i = h.find(|e| matches!(e, Effect::Prove { .. }));
    let mut reported = h.run(i, false).into_iter();
    h.apply(reported.next().expect("a/b/c released"));
    assert_eq!(allowed(&h), (0, 0), "half a partition is free");
    h.apply(reported.next().expect("device done"));
    assert_eq!(allowed(&h), (1, 1), "a whole partition is free and taken");
    h.drain();
    h.check_invariants();
}

/// Runs a job of 10 partitions FIFO on 4 threads and one worker; returns the most below-HIGH
/// partitions seen synthesizing or synthesized and waiting at once.
fn most_ahead_of_the_device(lookahead: crate::Lookahead) -> usize {
    let mut h = Harness::new(1_000_000, 1, 4);
    h.machine.config.synthesis_lookahead = lookahead;
    h.submit(ProofKind::PorepSealCommit, Priority::Normal, 10, 100)
        .unwrap();
    let mut most = 0;
    while !h.pending.is_empty() {
        let ahead = h.machine.partitions_in(PartitionState::Synthesizing).len()
            + h.machine.partitions_in(PartitionState::SynthDone).len();
        most = most.max(ahead);
        h.complete(0, false);
        h.check_invariants();
    }
    assert_eq!(h.machine.snapshot().counters.total_completed, 1);
    most
}

#[test]
fn synthesis_lookahead_bounds_partitions_ahead_of_the_device() {
    use crate::Lookahead::{Auto, Limit};
    assert!(most_ahead_of_the_device(Limit(0)) > 6, "0: no limit");
    assert_eq!(
        most_ahead_of_the_device(Auto),
        2 + 2,
        "two of the four threads, two for the worker"
    );
    assert_eq!(most_ahead_of_the_device(Limit(2)), 2);
    assert_eq!(most_ahead_of_the_device(Limit(1)), 1);
}

#[test]
fn the_automatic_lookahead_counts_devices_not_their_workers() {
    let lookahead = |devices: u32, workers: usize| {
        let prover = TestProver::new(devices);
        prover
            .workers_per_device
            .store(workers, std::sync::atomic::Ordering::SeqCst);
        let config = EngineConfig {
            synthesis_threads: 4,
            synthesis_lookahead: crate::Lookahead::Auto,
            ..Default::default()
        };
        Machine::new(config, prover, Budget::new(1_000_000, || {})).lookahead()
    };
    assert_eq!(lookahead(1, 1), 2 + 2);
    assert_eq!(lookahead(1, 2), 2 + 2, "two workers on one device");
    assert_eq!(lookahead(2, 1), 2 + 4);
    assert_eq!(lookahead(2, 2), 2 + 4, "two workers on each of two devices");
}

#[test]
fn synthesis_lookahead_never_holds_back_a_critical_partition() {
    let mut h = Harness::new(1_000_000, 1, 4);
    h.machine.config.synthesis_lookahead = crate::Lookahead::Limit(2);
    h.submit(ProofKind::PorepSealCommit, Priority::Normal, 6, 100)
        .unwrap();
    let synthesizing = |h: &Harness| h.machine.partitions_in(PartitionState::Synthesizing).len();
    assert_eq!(synthesizing(&h), 2, "two of four threads");
    assert_eq!(h.machine.snapshot().synthesis.max_allowed_now, 2);
    complete_syntheses(&mut h);
    assert_eq!(
        synthesizing(&h),
        0,
        "two synthesized partitions wait for params"
    );
    let winning = h
        .submit(ProofKind::WinningPost, Priority::Critical, 1, 100)
        .unwrap()
        .job_id;
    assert_eq!(
        h.job(&winning).partitions[0].state,
        PartitionState::Synthesizing
    );
    h.drain();
    h.check_invariants();
    assert_eq!(h.machine.snapshot().counters.total_completed, 2);
}

/// One worker proving a PoRep partition when a WindowPoSt job of `partitions` is submitted;
/// returns the harness and the two job ids.
fn wpost_submitted_while_porep_proves(preempt: bool, partitions: u32) -> (Harness, String, String) {
    let mut h = Harness::new(1_000_000, 1, 4);
    h.machine.config.preempt = preempt;
    let porep = h
        .submit(ProofKind::PorepSealCommit, Priority::Normal, 1, 100)
        .unwrap()
        .job_id;
    h.complete(0, false); // params
    h.complete(0, false); // synthesis: on the worker
    let wpost = h
        .submit(ProofKind::WindowPost, Priority::High, partitions, 100)
        .unwrap()
        .job_id;
    (h, porep, wpost)
}

/// One worker proving a PoRep partition when a WindowPoSt partition is synthesized; returns the
/// harness and the two job ids.
fn wpost_ready_while_porep_proves(preempt: bool) -> (Harness, String, String) {
    let (mut h, porep, wpost) = wpost_submitted_while_porep_proves(preempt, 1);
    h.complete(h.find(|e| matches!(e, Effect::LoadParams { .. })), false);
    h.complete(h.find(|e| matches!(e, Effect::Synthesize { .. })), false);
    (h, porep, wpost)
}

/// Two deadline partitions ready in one pass (their params finished loading after both were
/// synthesized) and one busy worker: one of them preempts it, the other waits for a worker; a
/// worker is never given a second preempting phase.
#[test]
fn one_busy_worker_is_preempted_once_per_pass() {
    let (mut h, porep, wpost) = wpost_submitted_while_porep_proves(true, 2);
    complete_syntheses(&mut h);
    assert!(h
        .job(&wpost)
        .partitions
        .iter()
        .all(|p| p.state == PartitionState::SynthDone));
    h.complete(h.find(|e| matches!(e, Effect::LoadParams { .. })), false);
    h.check_invariants();
    let states: Vec<_> = h.job(&wpost).partitions.iter().map(|p| p.state).collect();
    assert_eq!(states, [PartitionState::Gpu, PartitionState::SynthDone]);
    let phases = (h.pending.iter())
        .filter(|e| matches!(e, Effect::Prove { .. }))
        .count();
    assert_eq!(phases, 2, "the paused PoRep phase and one WindowPoSt phase");
    let snap = h.machine.snapshot();
    assert_eq!(
        snap.workers[0].paused.as_ref().map(|p| p.job_id.clone()),
        Some(porep)
    );
    h.drain();
    h.check_invariants();
    assert_eq!(h.machine.snapshot().counters.total_completed, 2);
}

#[test]
fn without_preemption_a_deadline_partition_waits_for_the_worker() {
    let (mut h, _, wpost) = wpost_ready_while_porep_proves(false);
    let waiting = h.job(&wpost).partitions[0].clone();
    assert_eq!(
        (waiting.state, waiting.reserved_bytes),
        (PartitionState::SynthDone, 100),
        "its reservation is held, and shown, while it waits"
    );
    assert_eq!(h.machine.snapshot().workers[0].paused, None);
    h.drain();
    h.check_invariants();
    assert_eq!(h.machine.snapshot().counters.total_completed, 2);
}

/// A stale device result naming neither the running phase nor the paused one changes neither:
/// the worker still shows the phase it runs, since when, and the one it paused.
#[test]
fn a_stale_result_leaves_a_preempted_worker_as_it_is() {
    let (mut h, porep, wpost) = wpost_ready_while_porep_proves(true);
    let before = h.machine.snapshot().workers[0].clone();
    assert!(before.busy_since_unix_ms.is_some());
    let stale = h.budget.try_reserve(crate::budget::Holder::Params, 1);
    h.apply(Input::DeviceDone {
        worker: 0,
        job: 999,
        index: 0,
        result: Ok(vec![]),
        reservation: stale.unwrap(),
    });
    let after = h.machine.snapshot().workers[0].clone();
    assert_eq!(after.state, before.state);
    assert_eq!(after.paused, before.paused);
    assert_eq!(after.busy_since_unix_ms, before.busy_since_unix_ms);
    assert_eq!(after.paused.map(|p| p.job_id), Some(porep.clone()));
    h.drain();
    h.check_invariants();
    for id in [&porep, &wpost] {
        assert!(matches!(h.outcome(id), Some(JobEnd::Completed(_))));
    }
}

#[test]
fn a_deadline_partition_preempts_and_either_phase_may_end_first() {
    for paused_ends_first in [true, false] {
        let (mut h, porep, wpost) = wpost_ready_while_porep_proves(true);
        let snap = h.machine.snapshot();
        assert_eq!(
            snap.workers[0].state,
            WorkerState::Proving {
                job_id: wpost.clone(),
                partition: 0
            },
            "the HIGH partition went to the busy worker"
        );
        assert_eq!(
            snap.workers[0].paused.as_ref().map(|p| p.job_id.clone()),
            Some(porep.clone())
        );
        h.check_invariants();
        let device = |h: &Harness, id: &str| {
            let seq = h.machine.job_ids[id];
            h.find(|e| matches!(e, Effect::Prove { task, .. } if task.job == seq))
        };
        let (first, second) = if paused_ends_first {
            (&porep, &wpost)
        } else {
            (&wpost, &porep)
        };
        h.complete(device(&h, first), false);
        h.check_invariants();
        let snap = h.machine.snapshot();
        assert_eq!(snap.workers[0].paused, None);
        assert_eq!(
            snap.workers[0].state,
            WorkerState::Proving {
                job_id: second.clone(),
                partition: 0
            },
            "the worker is shown on the phase still running"
        );
        h.complete(device(&h, second), false);
        h.drain();
        h.check_invariants();
        assert_eq!(h.machine.snapshot().workers[0].state, WorkerState::Idle);
        for id in [&porep, &wpost] {
            assert!(matches!(h.outcome(id), Some(JobEnd::Completed(_))));
        }
        assert_eq!(h.machine.snapshot().workers[0].proofs_done, 2);
    }
}
