//! Device phases that fail or come back late: a failed phase is synthesized and proved again
//! (once), an error the input causes fails the job at once, a partition that fails frees its
//! memory, and a late result never touches a worker that moved on.

use super::*;
use crate::domain::{FailureClass, FailureStage};

#[test]
fn late_device_result_does_not_touch_a_worker_that_moved_on() {
    let mut h = Harness::new(1_000_000, 1, 2);
    let a = h
        .submit(ProofKind::WindowPost, Priority::High, 1, 1000)
        .unwrap()
        .job_id;
    h.complete(0, false); // params
    h.complete(0, false); // synth of a
    let prove_a = h.find(|e| matches!(e, Effect::Prove { .. }));
    h.cancel(&a).unwrap();
    // The worker is still busy with a's partition: it must stay shown as proving it.
    assert!(matches!(
        h.machine.snapshot().workers[0].state,
        WorkerState::Proving { .. }
    ));
    // A stale result naming a partition this worker is not proving changes nothing.
    let stale = h
        .budget
        .try_reserve(crate::budget::Holder::Params, 1)
        .unwrap();
    h.apply(Input::DeviceDone {
        worker: 0,
        job: 999,
        index: 0,
        result: Ok(vec![]),
        reservation: stale,
    });
    assert!(matches!(
        h.machine.snapshot().workers[0].state,
        WorkerState::Proving { .. }
    ));
    h.complete(prove_a, false);
    assert_eq!(h.machine.snapshot().workers[0].state, WorkerState::Idle);
    h.check_invariants();
}

#[test]
fn a_failed_partition_fails_the_job_and_frees_its_memory() {
    let mut h = Harness::new(1_000_000, 1, 2);
    let job = h
        .submit(ProofKind::SnapDealsUpdate, Priority::Normal, 3, 1000)
        .unwrap()
        .job_id;
    h.complete(0, false); // params
    h.complete(0, true); // first synthesis fails
    h.drain();
    let Some(JobEnd::Failed(failure)) = h.outcome(&job) else {
        panic!("{:?}", h.outcome(&job))
    };
    assert!(failure.message.contains("synthesis failed"), "{failure}");
    assert_eq!(
        (failure.class, failure.stage),
        (FailureClass::Input, FailureStage::Synthesis)
    );
    assert_eq!(h.job(&job).state, JobState::Failed);
    assert_eq!(h.budget.used(), PARAMS_BYTES);
    h.check_invariants();
}

#[test]
fn a_failed_device_phase_is_synthesized_and_proved_again_once() {
    let mut h = Harness::new(1_000_000, 1, 1);
    let job = h
        .submit(ProofKind::WindowPost, Priority::High, 1, 1000)
        .unwrap()
        .job_id;
    h.complete(0, false); // params
    h.complete(0, false); // synthesis
    complete_device(&mut h, true);
    // Back to pending, worker free, memory returned; then admitted and synthesized again.
    h.check_invariants();
    assert_eq!(h.machine.snapshot().workers[0].state, WorkerState::Idle);
    assert_eq!(
        h.job(&job).partitions[0].state,
        PartitionState::Synthesizing
    );
    h.complete(0, false); // synthesis, second time
    complete_device(&mut h, false);
    h.drain();
    assert!(
        matches!(h.outcome(&job), Some(JobEnd::Completed(_))),
        "{:?}",
        h.outcome(&job)
    );
    let edges: Vec<_> = h.machine.edges.iter().map(|e| (e.2, e.3)).collect();
    assert!(
        edges.contains(&(PartitionState::Gpu, PartitionState::Pending)),
        "{edges:?}"
    );
    h.check_invariants();

    // A second failure of the same partition fails the job.
    let job = h
        .submit(ProofKind::WindowPost, Priority::High, 1, 1000)
        .unwrap()
        .job_id;
    for _ in 0..2 {
        h.complete(0, false); // synthesis
        complete_device(&mut h, true);
    }
    h.drain();
    let Some(JobEnd::Failed(failure)) = h.outcome(&job) else {
        panic!("{:?}", h.outcome(&job))
    };
    assert!(failure.message.contains("device phase failed"), "{failure}");
    assert_eq!(
        (failure.class, failure.stage),
        (FailureClass::Device, FailureStage::Device),
        "a device fault that outlived its retries is still the device's"
    );
    assert_eq!(h.budget.used(), PARAMS_BYTES);
    h.check_invariants();
}

#[test]
fn a_device_error_the_input_causes_fails_the_job_without_a_retry() {
    let mut h = Harness::new(1_000_000, 1, 1);
    let job = h
        .submit(ProofKind::WindowPost, Priority::High, 1, 1000)
        .unwrap()
        .job_id;
    h.complete(0, false); // params
    h.complete(0, false); // synthesis
    h.prover.fatal_device.store(true, Ordering::SeqCst);
    complete_device(&mut h, false);
    h.prover.fatal_device.store(false, Ordering::SeqCst);
    let Some(JobEnd::Failed(failure)) = h.outcome(&job) else {
        panic!("{:?}", h.outcome(&job))
    };
    assert!(
        failure.message.contains("the input makes it fail"),
        "{failure}"
    );
    assert_eq!(failure.class, FailureClass::Input);
    let edges: Vec<_> = h.machine.edges.iter().map(|e| (e.2, e.3)).collect();
    assert!(
        !edges.contains(&(PartitionState::Gpu, PartitionState::Pending)),
        "not synthesized again: {edges:?}"
    );
    assert_eq!(h.budget.used(), PARAMS_BYTES);
    h.check_invariants();
}

#[test]
fn device_readings_are_kept_per_device_and_equal_readings_change_nothing() {
    let mut h = Harness::new(1_000_000, 2, 1);
    let reading = |ordinal, used| crate::prover::DeviceTelemetry {
        ordinal,
        pool_used_bytes: Some(used),
        pool_limit_bytes: Some(1000),
        ..Default::default()
    };
    // Out of order, with a device this machine has no worker on: kept sorted, the stranger gone.
    h.apply(Input::Devices(vec![
        reading(1, 5),
        reading(7, 1),
        reading(0, 0),
    ]));
    let first = h.machine.snapshot();
    assert_eq!(first.devices, vec![reading(0, 0), reading(1, 5)]);
    assert_eq!(
        first.devices[0].utilization_percent, None,
        "unread stays absent"
    );
    h.apply(Input::Devices(vec![reading(0, 0), reading(1, 5)]));
    assert_eq!(
        h.machine.snapshot().sequence,
        first.sequence,
        "the same readings again are no change a watcher must wake for"
    );
    h.apply(Input::Devices(vec![reading(0, 0), reading(1, 6)]));
    let next = h.machine.snapshot();
    assert!(next.sequence > first.sequence);
    assert_eq!(next.devices[1].pool_used_bytes, Some(6));
}
