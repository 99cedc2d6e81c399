//! The partition's stages are built by construction from the edge table: for every state and
//! event, the stage `enter` builds is the table's next state's or none at all, and a stage
//! carries what the steps before it measured (its synthesis time, its worker, its device time).

use std::time::Duration;

use crate::budget::{Budget, Holder, Meter};
use crate::domain::ProofKind;
use crate::lifecycle::{next_partition_state, PartitionEvent as E, PartitionState as S};
use crate::machine::records::{Ran, Reached, Stage};
use crate::machine::transition::{enter, Change};
use crate::test_prover::TestProver;

/// A stage in `state`, as the steps before it would have left it: synthesized in 5 ms, on
/// worker 1.
fn stage(state: S, budget: &Budget) -> Stage<TestProver> {
    let now = crate::clock::now();
    match state {
        S::Pending => Stage::Pending,
        S::Synthesizing => Stage::Synthesizing {
            since: now,
            reserved: Meter::default(),
        },
        S::SynthDone => Stage::SynthDone {
            synthesized: 7,
            reservation: budget
                .try_reserve(Holder::Partition(ProofKind::WinningPost), 10)
                .unwrap(),
            synth_ms: 5,
        },
        S::Gpu => Stage::Gpu {
            since: now,
            reserved: Meter::default(),
            worker: 1,
            synth_ms: 5,
        },
        S::Done => Stage::Done {
            proof: vec![1],
            ran: None,
        },
        S::Failed => Stage::Failed {
            reached: Reached::Nothing,
        },
        S::Cancelled => Stage::Cancelled {
            reached: Reached::Nothing,
        },
    }
}

/// The change of `event`, with data (a device phase of 9 ms on worker 1).
fn change(event: E, budget: &Budget) -> Vec<Change<TestProver>> {
    let took = Duration::from_millis(9);
    match event {
        E::Admit => vec![Change::Admit {
            reserved: Meter::default(),
        }],
        E::Synthesized => vec![Change::Synthesized {
            synthesized: 7,
            reservation: budget
                .try_reserve(Holder::Partition(ProofKind::WinningPost), 10)
                .unwrap(),
            took,
        }],
        E::Dispatch => vec![Change::Dispatch {
            worker: 1,
            preempt: false,
        }],
        E::Proved => vec![Change::DeviceProved {
            worker: 1,
            proof: vec![2],
            took,
        }],
        E::Retry => vec![Change::DeviceRetry { worker: 1 }],
        E::Fail => vec![Change::DeviceFailed { worker: 1, took }, Change::Fail],
        E::Cancel => vec![Change::Cancel],
    }
}

#[test]
fn a_stage_is_only_ever_the_tables_next_state() {
    let budget = Budget::new(1 << 20, || {});
    let now = crate::clock::now();
    for event in E::ALL {
        // The states the table lets this event lead to, from any state.
        let reachable: Vec<S> = (S::ALL.into_iter())
            .filter_map(|from| next_partition_state(from, event))
            .collect();
        for from in S::ALL {
            let next = next_partition_state(from, event);
            for target in S::ALL {
                for c in change(event, &budget) {
                    match enter(target, &stage(from, &budget), c, now) {
                        // The change's data builds only a state its event can lead to.
                        Ok(stage) => assert!(
                            reachable.contains(&target) && stage.state() == target,
                            "{from:?} --{event:?}--> built {target:?}, which {event:?} never leads to"
                        ),
                        // The data of every legal edge is there.
                        Err(_) => assert_ne!(
                            next,
                            Some(target),
                            "{from:?} --{event:?}--> {target:?} is legal but was not built"
                        ),
                    }
                }
            }
        }
    }
}

#[test]
fn a_stage_carries_what_the_steps_before_it_measured() {
    let budget = Budget::new(1 << 20, || {});
    let now = crate::clock::now();
    let done = enter(
        S::Done,
        &stage(S::Gpu, &budget),
        change(E::Proved, &budget).remove(0),
        now,
    )
    .ok()
    .unwrap();
    let ran = Ran {
        synth_ms: 5,
        worker: 1,
        gpu_ms: 9,
    };
    assert_eq!(done.reached(), Reached::Returned(ran));
    let [failed_on_device, failed] = <[_; 2]>::try_from(change(E::Fail, &budget)).ok().unwrap();
    let failed_on_device = enter(S::Failed, &stage(S::Gpu, &budget), failed_on_device, now);
    assert_eq!(
        failed_on_device.ok().unwrap().reached(),
        Reached::Returned(ran)
    );
    let failed = enter(S::Failed, &stage(S::SynthDone, &budget), failed, now);
    assert_eq!(
        failed.ok().unwrap().reached(),
        Reached::Synthesized { synth_ms: 5 }
    );
    let cancelled = enter(S::Cancelled, &stage(S::Gpu, &budget), Change::Cancel, now);
    let reached = cancelled.ok().unwrap().reached();
    assert_eq!(
        (reached.synth_ms(), reached.worker(), reached.gpu_ms()),
        (Some(5), Some(1), None),
        "cancelled on the device: its worker shown, its phase never returned"
    );
    // Retried from synthesis: nothing of the failed attempt is shown as the partition's.
    let retried = enter(
        S::Pending,
        &stage(S::Gpu, &budget),
        Change::DeviceRetry { worker: 1 },
        now,
    );
    assert_eq!(retried.ok().unwrap().reached(), Reached::Nothing);
}
