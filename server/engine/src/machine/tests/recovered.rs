//! Jobs read back from the journal as the machine takes them: a job whose every partition was
//! proved before the crash loads its params and is finalized, with nothing proved again.

use super::*;
use crate::journal::record::Accepted;
use crate::journal::RecoveredJob;
use crate::machine::Replanned;

#[test]
fn a_job_recovered_with_every_partition_proved_is_finalized_without_proving() {
    let mut h = Harness::new(1_000_000, 1, 1);
    let kind = ProofKind::SnapDealsUpdate;
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
    let proofs = vec![(0, vec![0; 4]), (1, vec![1; 4])];
    h.machine.await_recovery(vec![RecoveredJob { job, proofs }]);
    let plan = h.prover.plan(request(kind, 2, 100)).unwrap();
    h.apply(Input::Replanned {
        seq: 7,
        result: Replanned::Planned(plan, PARAMS_BYTES),
    });
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
