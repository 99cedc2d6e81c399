//! Jobs read back from the journal as the machine takes them: a job whose every partition was
//! proved before the crash loads its params and is finalized, with nothing proved again; a job
//! submitted while they are planned again is numbered after them; while it waits it is shown,
//! counted in its queue and limits, and may be cancelled.

use std::time::Duration;

use super::*;
use crate::journal::record::Accepted;
use crate::journal::RecoveredJob;
use crate::machine::Replanned;

/// Job 7 of `kind` with two partitions, read back with these partition proofs.
fn recovered(kind: ProofKind, proofs: Vec<(u32, Vec<u8>)>) -> RecoveredJob {
    let job = Accepted {
        seq: 7,
        job_id: "recovered-job".into(),
        request_id: "snap-1000-3".into(),
        kind,
        priority: Priority::Normal,
        digest: crate::journal::InputDigest([3; 32]),
        input_bytes: 0,
        partitions: 2,
        submitted_unix_ms: 0,
        inline_input: None,
    };
    RecoveredJob { job, proofs }
}

/// Recovery's plan for job 7.
fn replanned(h: &mut Harness, kind: ProofKind) {
    let plan = h.prover.plan(request(kind, 2, 100)).unwrap();
    h.apply(Input::Replanned {
        seq: 7,
        result: Replanned::Planned(plan, PARAMS_BYTES),
    });
}

#[test]
fn a_job_recovered_with_every_partition_proved_is_finalized_without_proving() {
    let mut h = Harness::new(1_000_000, 1, 1);
    let kind = ProofKind::SnapDealsUpdate;
    let proofs = vec![(0, vec![0; 4]), (1, vec![1; 4])];
    h.machine.await_recovery(vec![recovered(kind, proofs)]);
    replanned(&mut h, kind);
    let load = h.find(|e| matches!(e, Effect::LoadParams { .. }));
    h.complete(load, false);
    h.drain();
    h.check_invariants();
    assert_eq!(
        h.outcome("recovered-job"),
        Some(JobEnd::Completed([[0u8; 4], [1; 4]].concat()))
    );
    assert_eq!(
        h.prover.proved.load(Ordering::SeqCst),
        0,
        "nothing proved again"
    );
}

#[test]
fn a_job_submitted_during_recovery_is_numbered_after_the_recovered_ones() {
    let mut h = Harness::new(1_000_000, 1, 1);
    let kind = ProofKind::SnapDealsUpdate;
    h.machine.await_recovery(vec![recovered(kind, vec![])]);
    let new = (h.submit(ProofKind::WinningPost, Priority::Critical, 1, 100))
        .unwrap()
        .job_id;
    assert!(h.machine.job_ids[&new] > 7, "{}", h.machine.job_ids[&new]);
    replanned(&mut h, kind);
    assert_eq!(
        h.job("recovered-job").state,
        JobState::Queued,
        "nothing of it proved or started yet (the one thread synthesizes the new job)"
    );
    h.drain();
    h.check_invariants();
    for id in [new.as_str(), "recovered-job"] {
        assert!(matches!(h.outcome(id), Some(JobEnd::Completed(_))), "{id}");
    }
}

/// A retry of a job still being planned again is answered with it even with its priority's
/// queue full (the recovering job counts in it); a new request, the same id of another kind, or
/// the same id with another input, is refused by the limits.
#[test]
fn a_retry_of_a_recovering_job_is_answered_with_it_when_new_work_is_refused() {
    let mut h = Harness::new(1_000_000, 1, 1);
    h.machine.config.limits.queued_jobs = 1;
    h.machine
        .await_recovery(vec![recovered(ProofKind::SnapDealsUpdate, vec![])]);
    let mut submit = |request_id: &str, kind, digest| {
        let origin = JobOrigin {
            request_id: request_id.into(),
            kind,
            priority: Priority::Normal,
            digest: crate::journal::InputDigest([digest; 32]),
            input_bytes: 0,
        };
        h.submit_as(origin, 2, 100)
    };
    let retry = submit("snap-1000-3", ProofKind::SnapDealsUpdate, 3).expect("the retry");
    assert_eq!(
        (retry.job_id.as_str(), retry.existing),
        ("recovered-job", true)
    );
    for (id, kind, digest) in [
        ("snap-1000-4", ProofKind::SnapDealsUpdate, 3),
        ("snap-1000-3", ProofKind::PorepSealCommit, 3),
        ("snap-1000-3", ProofKind::SnapDealsUpdate, 4),
    ] {
        let refused = submit(id, kind, digest).unwrap_err();
        assert!(
            matches!(
                refused,
                EngineError::LimitReached {
                    limit: "queued_jobs",
                    ..
                }
            ),
            "{id} {kind} {digest}: {refused:?}"
        );
    }
}

/// A job cancelled before recovery planned it again never runs; its end is recorded and counted.
#[test]
fn a_job_cancelled_while_recovering_ends_recorded_and_counted() {
    let mut h = Harness::new(1_000_000, 1, 1);
    let kind = ProofKind::SnapDealsUpdate;
    h.machine.await_recovery(vec![recovered(kind, vec![])]);
    assert_eq!(h.cancel("recovered-job"), Ok(false));
    assert!(h.records.iter().any(|r| matches!(r,
        crate::journal::record::Record::Finished { job_id, end: JobEnd::Cancelled, .. }
            if job_id == "recovered-job")));
    assert_eq!(h.machine.snapshot().counters.total_cancelled, 1);
    replanned(&mut h, kind);
    assert!(h.pending.is_empty(), "planned too late to run");
    assert_eq!(h.cancel("recovered-job"), Ok(false), "cancelled once");
    assert_eq!(h.machine.snapshot().counters.total_cancelled, 1);
}

/// While a job waits to be planned again it is shown queued with its recorded partitions done,
/// counted in its kind's queue and in its priority's limits, and keeps the engine from idle;
/// planned, it runs only the partitions left, as a job already started.
#[test]
fn a_recovering_job_is_shown_counted_and_then_proves_only_what_is_left() {
    let mut h = Harness::new(1_000_000, 1, 1);
    h.machine.config.limits.queued_input_bytes = 1000;
    let kind = ProofKind::SnapDealsUpdate;
    let mut job = recovered(kind, vec![(0, vec![0; 4])]);
    job.job.input_bytes = 600;
    h.machine.await_recovery(vec![job]);
    let shown = h.job("recovered-job");
    let states: Vec<_> = shown.partitions.iter().map(|p| p.state).collect();
    assert_eq!(
        (shown.state, states),
        (
            JobState::Queued,
            vec![PartitionState::Done, PartitionState::Pending]
        )
    );
    let queue = |h: &Harness, kind| {
        let snap = h.machine.snapshot();
        let q = snap.queues.iter().find(|q| q.kind == kind).unwrap();
        (q.pending, q.in_progress)
    };
    assert_eq!(queue(&h, kind), (1, 0));
    assert_eq!(queue(&h, ProofKind::PorepSealCommit), (0, 0));
    let refused = (h.submit_with_input(ProofKind::PorepSealCommit, Priority::Normal, 1, 10, 500))
        .unwrap_err();
    assert!(
        matches!(
            refused,
            EngineError::LimitReached {
                limit: "queued_input_bytes",
                ..
            }
        ),
        "{refused:?}"
    );
    (h.submit_with_input(ProofKind::WindowPost, Priority::High, 1, 10, 1000))
        .expect("HIGH does not count NORMAL's recovering input");
    h.drain();
    let idle = |h: &mut Harness| {
        let (reply, mut answer) = oneshot::channel();
        h.apply(Input::api(Request::Idle { reply }));
        answer.try_recv().unwrap()
    };
    assert!(
        !idle(&mut h),
        "not idle while a job waits to be planned again"
    );

    replanned(&mut h, kind);
    assert_eq!(h.job("recovered-job").state, JobState::Running);
    assert_eq!(queue(&h, kind), (0, 1));
    let proved = h.prover.proved.load(Ordering::SeqCst);
    h.drain();
    h.check_invariants();
    assert!(matches!(
        h.outcome("recovered-job"),
        Some(JobEnd::Completed(_))
    ));
    assert_eq!(
        h.prover.proved.load(Ordering::SeqCst),
        proved + 1,
        "only partition 1"
    );
    assert!(idle(&mut h));
}

/// A recovering job that ended (cancelled) is forgotten once its retention is over, not before.
#[test]
fn an_ended_recovering_job_is_kept_for_its_retention() {
    for (retention, kept) in [(Duration::from_secs(3600), true), (Duration::ZERO, false)] {
        let mut h = Harness::new(1_000_000, 1, 1);
        h.machine.config.retention = retention;
        h.machine
            .await_recovery(vec![recovered(ProofKind::SnapDealsUpdate, vec![])]);
        h.cancel("recovered-job").unwrap();
        h.apply(Input::Tick);
        let shown = h
            .machine
            .snapshot()
            .jobs
            .iter()
            .any(|j| j.job_id == "recovered-job");
        assert_eq!(shown, kept, "retention {retention:?}");
    }
}
