//! Jobs read back from the journal as the machine takes them: a job whose every partition was
//! proved before the crash loads its params and is finalized, with nothing proved again; a job
//! submitted while they are planned again is numbered after them.

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
    h.drain();
    h.check_invariants();
    for id in [new.as_str(), "recovered-job"] {
        assert!(matches!(h.outcome(id), Some(JobEnd::Completed(_))), "{id}");
    }
}

/// The cheap checks before a submit is decoded: a retry of a job still being planned again
/// passes even with its priority's queue full (the recovering job counts in it); a new request,
/// or the same id of another kind, is refused.
#[test]
fn a_retry_of_a_recovering_job_passes_the_checks_that_refuse_new_work() {
    let mut h = Harness::new(1_000_000, 1, 1);
    h.machine.config.limits.queued_jobs = 1;
    h.machine
        .await_recovery(vec![recovered(ProofKind::SnapDealsUpdate, vec![])]);
    let mut precheck = |request_id: &str, kind| {
        let ticket = crate::machine::Ticket {
            request_id: request_id.into(),
            kind,
            priority: Priority::Normal,
            input_bytes: 0,
        };
        let (reply, mut answer) = oneshot::channel();
        h.apply(Input::Api(Request::Precheck { ticket, reply }));
        answer.try_recv().expect("answered at once")
    };
    precheck("snap-1000-3", ProofKind::SnapDealsUpdate).expect("the retry passes");
    for (id, kind) in [
        ("snap-1000-4", ProofKind::SnapDealsUpdate),
        ("snap-1000-3", ProofKind::PorepSealCommit),
    ] {
        let refused = precheck(id, kind).unwrap_err();
        assert!(
            matches!(
                refused,
                EngineError::LimitReached {
                    limit: "queued_jobs",
                    ..
                }
            ),
            "{id} {kind}: {refused:?}"
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
