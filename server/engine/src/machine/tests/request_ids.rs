//! Request ids as the machine keeps them: a retry of a failed job is a new attempt under the same
//! id, and the failed attempt leaving memory (its retention over) leaves the new one findable.

use std::time::Duration;

use super::*;

/// The live job a submit of `key` is answered with.
fn find(h: &mut Harness, key: RequestKey) -> Option<String> {
    h.machine.find_request(&key).map(|s| s.job_id)
}

#[test]
fn a_failed_attempt_expiring_leaves_its_retry_findable() {
    let mut h = Harness::new(1_000_000, 1, 1);
    h.machine.config.retention = Duration::ZERO;
    let origin = JobOrigin {
        request_id: "wdpost-[1 2]".into(),
        kind: ProofKind::WindowPost,
        priority: Priority::High,
        digest: crate::journal::InputDigest([7; 32]),
        input_bytes: 0,
    };
    let failed = h.submit_as(origin.clone(), 1, 100).unwrap().job_id;
    h.complete(h.find(|e| matches!(e, Effect::LoadParams { .. })), true);
    assert!(matches!(h.outcome(&failed), Some(JobEnd::Failed { .. })));
    let error = h.job(&failed).error.unwrap_or_default();
    assert!(error.contains("params file damaged"), "{error}");
    let retry = h.submit_as(origin.clone(), 1, 100).unwrap();
    assert!(!retry.existing && retry.job_id != failed, "a new attempt");
    assert_eq!(find(&mut h, origin.key()), Some(retry.job_id.clone()));
    h.check_invariants();

    h.apply(Input::Tick);
    assert!(
        !h.machine.job_ids.contains_key(&failed),
        "the failed attempt expired"
    );
    assert_eq!(
        find(&mut h, origin.key()),
        Some(retry.job_id.clone()),
        "the retry is still what its request id finds"
    );
    h.drain();
    assert!(matches!(
        h.outcome(&retry.job_id),
        Some(JobEnd::Completed(_))
    ));
    h.apply(Input::Tick);
    assert_eq!(
        find(&mut h, origin.key()),
        None,
        "and once it expired, nothing"
    );
}
