//! Property test: random interleavings of submits, completions, cancellations and evictions.
//! A submit is refused only when it could never fit, and with no failure or cancel (half the
//! cases, by construction) every job is proved: a machine that refused or dropped work fails it.

use proptest::prelude::*;
use tokio::sync::oneshot;

use super::*;

#[derive(Debug, Clone)]
enum Op {
    Submit {
        kind: usize,
        priority: usize,
        partitions: u32,
        bytes: u64,
    },
    Complete {
        pick: usize,
        fail: bool,
    },
    Cancel {
        pick: usize,
    },
    Evict {
        kind: usize,
    },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        2 => (0..4usize, 0..4usize, 1..5u32, 1..4u64).prop_map(|(kind, priority, partitions, b)| Op::Submit { kind, priority, partitions, bytes: b * 400 }),
        8 => (any::<usize>(), prop::bool::weighted(0.1)).prop_map(|(pick, fail)| Op::Complete { pick, fail }),
        1 => any::<usize>().prop_map(|pick| Op::Cancel { pick }),
        1 => (0..4usize).prop_map(|kind| Op::Evict { kind }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    /// Random interleavings of submits, step completions (some failing), cancellations and
    /// evictions over several workers never break the invariants, and everything ends, also
    /// under budgets that hold only a few params sets beside a partition (params are 100 bytes).
    /// Half the cases (`clean`) have no failing step and no cancel, so every job of those must
    /// end proved: a machine that dropped work would fail them.
    #[test]
    fn random_interleavings_keep_the_invariants(ops in prop::collection::vec(op(), 1..80), workers in 1..4u32, threads in 1..4usize, budget in prop::sample::select(vec![600u64, 700, 1000, 1300, 3000]), clean in any::<bool>()) {
        let mut h = Harness::new(budget, workers, threads);
        let priorities = [Priority::Low, Priority::Normal, Priority::High, Priority::Critical];
        // Whether some job may have ended other than completed (a failed step, a cancel).
        let mut spoiled = false;
        for op in ops {
            match op {
                Op::Submit { kind, priority, partitions, bytes } => {
                    let submitted = h.submit(ProofKind::ALL[kind], priorities[priority], partitions, bytes);
                    // Refused only when it could never fit: a partition and its params over the budget.
                    let fits = bytes + crate::test_prover::PARAMS_BYTES <= budget;
                    match submitted {
                        Ok(_) => prop_assert!(fits, "a job of {bytes} bytes accepted under a budget of {budget}"),
                        Err(EngineError::TooLarge { .. }) => prop_assert!(!fits, "a job of {bytes} bytes refused under a budget of {budget}"),
                        Err(other) => prop_assert!(false, "a submit refused: {other}"),
                    }
                }
                Op::Complete { pick, fail } if !h.pending.is_empty() => {
                    let i = pick % h.pending.len();
                    let fail = fail && !clean;
                    spoiled |= fail;
                    h.complete(i, fail);
                }
                Op::Complete { .. } => {}
                Op::Cancel { pick } if !h.jobs.is_empty() && !clean => {
                    let id = h.jobs[pick % h.jobs.len()].clone();
                    spoiled = true;
                    let _ = h.cancel(&id);
                }
                Op::Cancel { .. } => {}
                Op::Evict { kind } => {
                    let (reply, _answer) = oneshot::channel();
                    h.apply(Input::api(Request::Evict { circuit_id: format!("{}-test", ProofKind::ALL[kind]), reply }));
                }
            }
            h.check_invariants();
        }
        h.drain();
        h.check_invariants();
        for id in h.jobs.clone() {
            let end = h.outcome(&id);
            prop_assert!(end.is_some(), "job {id} never ended: deadlock");
            // Work is done, not only ended: with no failure or cancel, every job is proved.
            if !spoiled {
                prop_assert!(matches!(end, Some(JobEnd::Completed(_))), "job {id} ended {end:?}");
            }
        }
        let snap = h.machine.snapshot();
        prop_assert!(snap.workers.iter().all(|w| w.state == WorkerState::Idle));
        prop_assert_eq!(snap.memory.used_bytes, snap.memory.params_bytes, "all partition memory returned");
    }
}
