//! The `[limits]` intake checks as the machine applies them: each priority counts only its own
//! unfinished jobs and their input bytes, and a request that brings the bytes to exactly the
//! limit is taken.

use super::*;
use crate::IntakeLimits;

/// The `[limits]` key a refusal names, and the limit's value as it is shown.
fn refused_by(result: Result<Submitted, EngineError>) -> (&'static str, String) {
    match result {
        Err(EngineError::LimitReached { limit, value, .. }) => (limit, value),
        other => panic!("expected a [limits] refusal, got {other:?}"),
    }
}

#[test]
fn each_priority_is_limited_by_its_own_unfinished_jobs_and_their_input() {
    let mut h = Harness::new(1_000_000, 1, 1);
    h.machine.config.limits = IntakeLimits {
        queued_jobs: 3,
        queued_input_bytes: 1000,
    };
    let submit = |h: &mut Harness, priority, input_bytes| {
        h.submit_with_input(ProofKind::PorepSealCommit, priority, 1, 10, input_bytes)
    };
    submit(&mut h, Priority::Normal, 600).unwrap();
    submit(&mut h, Priority::Normal, 400).expect("up to the byte limit exactly");
    assert_eq!(
        refused_by(submit(&mut h, Priority::Normal, 1)),
        ("queued_input_bytes", "1000 B".to_string())
    );
    submit(&mut h, Priority::High, 1000).expect("HIGH counts only its own bytes");
    submit(&mut h, Priority::Normal, 0).unwrap();
    assert_eq!(
        refused_by(submit(&mut h, Priority::Normal, 0)),
        ("queued_jobs", "3".to_string())
    );
    submit(&mut h, Priority::High, 0).expect("HIGH counts only its own jobs");

    h.drain();
    assert_eq!(h.machine.snapshot().counters.total_completed, 5);
    for _ in 0..3 {
        submit(&mut h, Priority::Normal, 0).expect("finished jobs count for nothing");
    }
    submit(&mut h, Priority::High, 1000).expect("nor do their bytes");
    h.check_invariants();
}

/// A place granted to a submit being planned counts under its priority's limits until the
/// submit becomes a job or gives up: two submits planned side by side cannot together pass a
/// limit each alone would not.
#[test]
fn a_place_granted_to_a_submit_being_planned_counts_under_the_limits() {
    let mut h = Harness::new(1_000_000, 1, 1);
    h.machine.config.limits = IntakeLimits {
        queued_jobs: 1,
        queued_input_bytes: 1000,
    };
    let intake = |h: &mut Harness, n: u8| {
        let origin = JobOrigin {
            request_id: format!("porep-1000-{n}"),
            kind: ProofKind::PorepSealCommit,
            priority: Priority::Normal,
            digest: crate::journal::InputDigest([n; 32]),
            input_bytes: 10,
        };
        let (reply, mut answer) = oneshot::channel();
        h.apply(Input::api(Request::Intake { origin, reply }));
        answer.try_recv().expect("answered at once")
    };
    let first = match intake(&mut h, 1) {
        Ok(Intake::Granted(slot)) => slot,
        other => panic!("the first is granted a place: {other:?}"),
    };
    assert!(
        matches!(
            intake(&mut h, 2),
            Err(EngineError::LimitReached {
                limit: "queued_jobs",
                ..
            })
        ),
        "the granted place fills the queue while its submit is planned"
    );
    drop(first);
    assert!(
        matches!(intake(&mut h, 3), Ok(Intake::Granted(_))),
        "a place given up is free again"
    );
}
