//! Property test: random interleavings of submits, completions, cancellations and evictions.

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
    #[test]
    fn random_interleavings_keep_the_invariants(ops in prop::collection::vec(op(), 1..80), workers in 1..4u32, threads in 1..4usize, budget in prop::sample::select(vec![600u64, 700, 1000, 1300, 3000])) {
        let mut h = Harness::new(budget, workers, threads);
        let priorities = [Priority::Low, Priority::Normal, Priority::High, Priority::Critical];
        for op in ops {
            match op {
                Op::Submit { kind, priority, partitions, bytes } => {
                    let _ = h.submit(ProofKind::ALL[kind], priorities[priority], partitions, bytes);
                }
                Op::Complete { pick, fail } if !h.pending.is_empty() => {
                    let i = pick % h.pending.len();
                    h.complete(i, fail);
                }
                Op::Complete { .. } => {}
                Op::Cancel { pick } if !h.jobs.is_empty() => {
                    let id = h.jobs[pick % h.jobs.len()].clone();
                    let _ = h.cancel(&id);
                }
                Op::Cancel { .. } => {}
                Op::Evict { kind } => {
                    let (reply, _answer) = oneshot::channel();
                    h.apply(Input::Api(Request::Evict { circuit_id: format!("{}-test", ProofKind::ALL[kind]), reply }));
                }
            }
            h.check_invariants();
        }
        h.drain();
        h.check_invariants();
        for id in h.jobs.clone() {
            prop_assert!(h.outcome(&id).is_some(), "job {id} never ended: deadlock");
        }
        let snap = h.machine.snapshot();
        prop_assert!(snap.workers.iter().all(|w| w.state == WorkerState::Idle));
        prop_assert_eq!(snap.memory.used_bytes, snap.memory.params_bytes, "all partition memory returned");
    }
}
