//! The params cache: reference counts and tiers in the snapshot, EvictSRS refused while a job
//! uses the params, and least-recently-used eviction of idle params when admission needs room.

use std::time::Duration;

use tokio::sync::oneshot;

use super::*;
use crate::domain::Evicted;
use crate::status::ParamsTier;

/// Loads `circuit` through a preload and completes the load.
fn preload(h: &mut Harness, circuit: &str) {
    preload_estimated(h, circuit, PARAMS_BYTES);
}

/// [`preload`], the params estimated at `estimate` bytes before they load.
fn preload_estimated(h: &mut Harness, circuit: &str, estimate: u64) {
    let (reply, mut answer) = oneshot::channel();
    h.apply(Input::api(Request::Preload {
        circuit_id: circuit.into(),
        params_bytes: estimate,
        reply,
    }));
    let i = h.find(|e| matches!(e, Effect::LoadParams { .. }));
    h.complete(i, false);
    assert!(answer.try_recv().unwrap().is_ok(), "{circuit} loaded");
}

fn evict(h: &mut Harness, circuit: &str) -> Result<Evicted, EngineError> {
    let (reply, mut answer) = oneshot::channel();
    h.apply(Input::api(Request::Evict {
        circuit_id: circuit.into(),
        reply,
    }));
    answer.try_recv().expect("answered at once")
}

/// The tier and reference count the snapshot shows for `circuit`, if it is in the cache.
fn shown(h: &Harness, circuit: &str) -> Option<(ParamsTier, u32)> {
    h.machine
        .snapshot()
        .params
        .into_iter()
        .find(|p| p.circuit_id == circuit)
        .map(|p| (p.tier, p.ref_count))
}

/// Completes the pending effects of job `id` (first in, first out) until it ends.
fn finish(h: &mut Harness, id: &str) {
    let seq = h.machine.job_ids[id];
    let circuit = h.machine.jobs[&seq].circuit_id.clone();
    while h.outcome(id).is_none() {
        let i = h.find(|e| match e {
            Effect::Synthesize { job, .. } | Effect::Finalize { job, .. } => *job == seq,
            Effect::Prove { task, .. } => task.job == seq,
            Effect::LoadParams { circuit_id } => *circuit_id == circuit,
            Effect::Record(..) | Effect::FlushJournal(_) | Effect::Answer(_) => false,
        });
        h.complete(i, false);
        h.check_invariants();
    }
}

#[test]
fn ref_count_follows_the_jobs_using_the_params_and_evict_waits_for_them() {
    use ParamsTier::*;
    let mut h = Harness::new(1_000_000, 1, 2);
    let circuit = "porep-test";
    assert_eq!(shown(&h, circuit), None);
    let a = h
        .submit(ProofKind::PorepSealCommit, Priority::Normal, 1, 1000)
        .unwrap()
        .job_id;
    assert_eq!(shown(&h, circuit), Some((Cold, 1)), "loading for job a");
    let b = h
        .submit(ProofKind::PorepSealCommit, Priority::Normal, 1, 1000)
        .unwrap()
        .job_id;
    assert_eq!(shown(&h, circuit), Some((Cold, 2)));
    assert_eq!(
        evict(&mut h, circuit),
        Err(EngineError::ParamsInUse(circuit.into()))
    );
    let i = h.find(|e| matches!(e, Effect::LoadParams { .. }));
    h.complete(i, false);
    assert_eq!(shown(&h, circuit), Some((Hot, 2)));
    finish(&mut h, &a);
    assert_eq!(shown(&h, circuit), Some((Hot, 1)), "job b still uses them");
    assert_eq!(
        evict(&mut h, circuit),
        Err(EngineError::ParamsInUse(circuit.into()))
    );
    finish(&mut h, &b);
    assert_eq!(shown(&h, circuit), Some((Warm, 0)));
    assert!(matches!(h.outcome(&b), Some(JobEnd::Completed(_))));
    let freed = evict(&mut h, circuit).unwrap();
    assert_eq!(
        freed,
        Evicted {
            was_loaded: true,
            freed_bytes: PARAMS_BYTES
        }
    );
    assert_eq!(shown(&h, circuit), None);
    assert_eq!(h.budget.used(), 0);
    assert!(!evict(&mut h, circuit).unwrap().was_loaded);
}

#[tokio::test(start_paused = true)]
async fn admission_evicts_the_least_recently_used_idle_params_never_ones_in_use() {
    let _deadline = crate::test_prover::Watchdog::for_this_test();
    // Room for three params sets and 1000 bytes of partitions.
    let mut h = Harness::new(3 * PARAMS_BYTES + 1000, 1, 2);
    // Loaded oldest first: porep is the least recently used, then wpost, then winning.
    for circuit in ["porep-test", "wpost-test", "winning-test"] {
        preload(&mut h, circuit);
        tokio::time::advance(Duration::from_secs(1)).await;
    }
    // A porep job takes its params (now in use) and 900 of the 1000 bytes.
    let porep = h
        .submit(ProofKind::PorepSealCommit, Priority::Normal, 1, 900)
        .unwrap()
        .job_id;
    assert_eq!(shown(&h, "porep-test"), Some((ParamsTier::Hot, 1)));
    // A snap job needs its params (100, the last free bytes) and 100 for its partition: one
    // idle set must go, and it must be wpost, the least recently used one not in use.
    let snap = h
        .submit(ProofKind::SnapDealsUpdate, Priority::Normal, 1, 100)
        .unwrap()
        .job_id;
    h.check_invariants();
    assert_eq!(
        h.job(&snap).partitions[0].state,
        PartitionState::Synthesizing
    );
    let loaded = |h: &Harness| {
        let mut ids: Vec<String> = h.machine.params.keys().cloned().collect();
        ids.sort();
        ids
    };
    assert_eq!(loaded(&h), ["porep-test", "snap-test", "winning-test"]);
    // A job that needs more room than the idle params free waits; params in use stay.
    let big = h
        .submit(ProofKind::SnapDealsUpdate, Priority::Normal, 1, 1000)
        .unwrap()
        .job_id;
    assert_eq!(h.job(&big).partitions[0].state, PartitionState::Pending);
    assert!(h.machine.params.contains_key("porep-test"));
    assert!(h.machine.params.contains_key("snap-test"));
    h.check_invariants();
    for id in [&porep, &snap, &big] {
        finish(&mut h, id);
        assert!(matches!(h.outcome(id), Some(JobEnd::Completed(_))));
    }
}

#[test]
fn jobs_waiting_for_admission_pin_no_params_so_a_tight_budget_never_stalls() {
    // Room for two params sets and half a partition: with two sets loaded, one must go before
    // any partition can run. A queued job must not keep its set loaded while it waits.
    let mut h = Harness::new(2 * PARAMS_BYTES + 50, 1, 2);
    let porep = h
        .submit(ProofKind::PorepSealCommit, Priority::Normal, 1, 100)
        .unwrap()
        .job_id;
    let snap = h
        .submit(ProofKind::SnapDealsUpdate, Priority::Normal, 1, 100)
        .unwrap()
        .job_id;
    // The PoRep partition runs through the device; its job then waits for finalization.
    let steps: [fn(&Effect<TestProver>) -> bool; 3] = [
        |e| matches!(e, Effect::LoadParams { .. }),
        |e| matches!(e, Effect::Synthesize { .. }),
        |e| matches!(e, Effect::Prove { .. }),
    ];
    for step in steps {
        let i = h.find(step);
        h.complete(i, false);
        h.check_invariants();
    }
    assert_eq!(h.job(&snap).partitions[0].state, PartitionState::Pending);
    assert_eq!(
        shown(&h, "snap-test"),
        None,
        "no room for the snap partition beside its params yet: they are not loaded for it"
    );
    // A WindowPoSt arrives first in the order; when the PoRep job ends, it needs room for its
    // own params and partition, which only evicting everything idle gives.
    let wpost = h
        .submit(ProofKind::WindowPost, Priority::High, 1, 100)
        .unwrap()
        .job_id;
    h.drain();
    h.check_invariants();
    for id in [&porep, &snap, &wpost] {
        assert!(
            matches!(h.outcome(id), Some(JobEnd::Completed(_))),
            "job {id} never ended"
        );
    }
}

#[test]
fn synthesis_gets_the_params_once_they_are_loaded_and_the_snapshot_shows_their_precompiled_part() {
    let mut h = Harness::new(10_000, 1, 1);
    let id = h
        .submit(ProofKind::PorepSealCommit, Priority::Normal, 2, 1000)
        .unwrap()
        .job_id;
    let seq = h.machine.job_ids[&id];
    let circuit = h.machine.jobs[&seq].circuit_id.clone();
    let synth_params =
        |h: &Harness| match &h.pending[h.find(|e| matches!(e, Effect::Synthesize { .. }))] {
            Effect::Synthesize { params, .. } => params.as_ref().map(|p| p.as_ref().clone()),
            _ => unreachable!(),
        };
    // The first partition is admitted together with the load: it synthesizes without them.
    assert_eq!(synth_params(&h), None);
    let load = h.find(|e| matches!(e, Effect::LoadParams { .. }));
    let shown_loading = h.machine.snapshot().params[0].precompiled_bytes;
    assert_eq!(shown_loading, 0, "nothing is known of a set still loading");
    h.complete(load, false);
    let p = &h.machine.snapshot().params[0];
    assert_eq!(
        (p.bytes, p.precompiled_bytes),
        (PARAMS_BYTES, PRECOMPILED_BYTES)
    );
    // The next partition is admitted after the load: it gets them.
    let first = h.find(|e| matches!(e, Effect::Synthesize { .. }));
    h.complete(first, false);
    assert_eq!(synth_params(&h), Some(circuit.clone()));
    finish(&mut h, &id);
    assert!(matches!(h.outcome(&id), Some(JobEnd::Completed(_))));
    // Charged and evicted as one: the budget gives back all of it, matrices included.
    assert_eq!(h.machine.snapshot().memory.params_bytes, PARAMS_BYTES);
    evict(&mut h, &circuit).unwrap();
    assert_eq!(h.machine.snapshot().memory.params_bytes, 0);
    assert!(h.machine.snapshot().params.is_empty());
}

#[test]
fn a_preload_of_an_unknown_circuit_is_refused_and_remembers_nothing() {
    let mut h = Harness::new(1_000_000, 1, 1);
    for i in 0..100 {
        let (reply, mut answer) = oneshot::channel();
        h.apply(Input::api(Request::Preload {
            circuit_id: format!("made-up-{i}"),
            params_bytes: PARAMS_BYTES,
            reply,
        }));
        let refused = answer.try_recv().expect("answered at once");
        assert!(
            matches!(refused, Err(EngineError::UnknownCircuit(_))),
            "{refused:?}"
        );
    }
    assert!(
        h.machine.params_estimates.is_empty(),
        "no made-up id is kept"
    );
}

/// Params are charged their estimate while they load and what they take once loaded, up to the
/// estimate: a smaller set gives the difference back; a larger one stays charged the estimate,
/// and the log says so.
#[test]
fn loaded_params_are_charged_what_they_take_up_to_their_estimate() {
    let over = "params slightly larger than estimated; the budget counts the estimate";
    for (estimate, charged, logged) in [
        (3 * PARAMS_BYTES, PARAMS_BYTES, false),
        (PARAMS_BYTES, PARAMS_BYTES, false),
        (PARAMS_BYTES - 1, PARAMS_BYTES - 1, true),
    ] {
        let recorder = super::logging::Recorder::default();
        tracing::subscriber::with_default(recorder.clone(), || {
            let mut h = Harness::new(1_000_000, 1, 1);
            let circuit = "porep-seal-commit-test";
            preload_estimated(&mut h, circuit, estimate);
            assert_eq!(h.budget.used(), charged, "estimated {estimate}");
            let shown = h.machine.snapshot().params[0].bytes;
            assert_eq!(shown, charged, "estimated {estimate}");
            let said = recorder.messages().iter().any(|m| m == over);
            assert_eq!(
                said,
                logged,
                "estimated {estimate}: {:?}",
                recorder.messages()
            );
            evict(&mut h, circuit).unwrap();
            assert_eq!(h.budget.used(), 0);
        });
    }
}

/// A params load that fails fails the jobs waiting for those params, and no other.
#[test]
fn a_failed_params_load_fails_only_the_jobs_of_its_circuit() {
    let mut h = Harness::new(1_000_000, 1, 2);
    let running = (h.submit(ProofKind::PorepSealCommit, Priority::Normal, 1, 100))
        .unwrap()
        .job_id;
    h.complete(h.find(|e| matches!(e, Effect::LoadParams { .. })), false);
    let waiting = (h.submit(ProofKind::WindowPost, Priority::High, 1, 100))
        .unwrap()
        .job_id;
    h.complete(h.find(|e| matches!(e, Effect::LoadParams { .. })), true);
    assert!(matches!(h.outcome(&waiting), Some(JobEnd::Failed { .. })));
    assert_eq!(h.outcome(&running), None, "the other circuit's job goes on");
    h.drain();
    h.check_invariants();
    assert!(matches!(h.outcome(&running), Some(JobEnd::Completed(_))));
}

/// The parameters each pending synthesis of the harness got: loaded (true) or not (false).
fn syntheses(h: &Harness) -> Vec<bool> {
    (h.pending.iter())
        .filter_map(|e| match e {
            Effect::Synthesize { params, .. } => Some(params.is_some()),
            _ => None,
        })
        .collect()
}

#[test]
fn partitions_below_high_wait_for_a_load_worth_waiting_for_and_deadline_partitions_never_do() {
    use crate::prover::FastPath;
    let hour = Duration::from_secs(3600);
    let mut h = Harness::new(100_000, 1, 4);
    // Loading takes an hour; each partition would take an hour more without it: two waiting
    // partitions make waiting worth it.
    *h.prover.fast_path.lock() = Some(FastPath {
        load: hour,
        plain_extra: hour,
    });
    let porep = h
        .submit(ProofKind::PorepSealCommit, Priority::Normal, 2, 1000)
        .unwrap()
        .job_id;
    assert!(
        syntheses(&h).is_empty(),
        "both PoRep partitions wait for the load"
    );
    let loads = |h: &Harness| {
        (h.pending.iter())
            .filter(|e| matches!(e, Effect::LoadParams { .. }))
            .count()
    };
    assert_eq!(loads(&h), 1, "the load began without a partition");
    assert_eq!(h.job(&porep).partitions[0].state, PartitionState::Pending);

    // A WindowPoSt (HIGH) never waits: admitted with its own load, synthesized without it.
    h.submit(ProofKind::WindowPost, Priority::High, 1, 1000)
        .unwrap();
    assert_eq!(syntheses(&h), [false]);
    assert_eq!(loads(&h), 2);

    // The PoRep load ends: both partitions synthesize with the parameters.
    let porep_load = h.find(
        |e| matches!(e, Effect::LoadParams { circuit_id } if circuit_id.starts_with("porep")),
    );
    h.complete(porep_load, false);
    assert_eq!(syntheses(&h), [false, true, true]);
    h.drain();
    h.check_invariants();
    assert!(matches!(h.outcome(&porep), Some(JobEnd::Completed(_))));

    // A load not worth waiting for (a partition saves a second of an hour's load): synthesized
    // at once without it, as before.
    let mut h = Harness::new(100_000, 1, 4);
    *h.prover.fast_path.lock() = Some(FastPath {
        load: hour,
        plain_extra: Duration::from_secs(1),
    });
    h.submit(ProofKind::PorepSealCommit, Priority::Normal, 2, 1000)
        .unwrap();
    assert_eq!(syntheses(&h), [false, false]);
}

#[test]
fn a_load_is_worth_waiting_for_while_its_rest_costs_less_than_the_waiting_partitions_extra_work() {
    use crate::prover::FastPath;
    let s = Duration::from_secs;
    let path = FastPath {
        load: s(30),
        plain_extra: s(10),
    };
    assert!(
        !path.worth_waiting(s(0), 3),
        "30 s left against 30 s saved: no"
    );
    assert!(path.worth_waiting(s(0), 4));
    assert!(path.worth_waiting(s(21), 1), "9 s left against 10 s");
    assert!(path.worth_waiting(s(40), 1), "overdue: any moment now");
    assert!(!path.worth_waiting(s(0), 0), "nobody waiting");
}
