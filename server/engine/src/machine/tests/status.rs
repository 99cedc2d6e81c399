//! What the snapshot shows of the work as a whole: jobs per kind queued and in progress, the
//! partitions waiting, and memory reserved per kind (only the kinds holding some).

use super::*;

#[test]
fn queues_depth_and_memory_are_shown_per_kind() {
    let mut h = Harness::new(1_000_000, 1, 1);
    let porep = (h.submit(ProofKind::PorepSealCommit, Priority::Normal, 2, 100))
        .unwrap()
        .job_id;
    (h.submit(ProofKind::SnapDealsUpdate, Priority::Normal, 1, 100)).unwrap();
    h.complete(h.find(|e| matches!(e, Effect::LoadParams { .. })), false);
    h.complete(h.find(|e| matches!(e, Effect::Synthesize { .. })), false);
    // PoRep's partition 0 on the worker, its partition 1 synthesizing; the SnapDeals job waits.
    assert_eq!(h.job(&porep).state, JobState::Running);
    let snap = h.machine.snapshot();
    let queues: Vec<_> = (snap.queues.iter())
        .filter(|q| q.pending + q.in_progress > 0)
        .map(|q| (q.kind, q.pending, q.in_progress))
        .collect();
    assert_eq!(
        queues,
        [
            (ProofKind::PorepSealCommit, 0, 1),
            (ProofKind::SnapDealsUpdate, 1, 0)
        ]
    );
    assert_eq!(snap.counters.queue_depth, 1, "the SnapDeals partition");
    assert_eq!(
        snap.memory.reserved_by_kind,
        [(ProofKind::PorepSealCommit, 200)],
        "both PoRep partitions, and no line for the kinds holding none"
    );
    h.drain();
}

/// What the history keeps of the work: the load (memory in use, partitions by step) in its
/// series, and each worker's stint from its first device phase to its last with no idle moment.
#[test]
fn the_load_and_the_workers_stints_are_recorded() {
    let mut h = Harness::new(1_000_000, 1, 1);
    h.submit(ProofKind::WindowPost, Priority::High, 1, 100)
        .unwrap();
    let Some(Effect::Record(crate::journal::record::Record::Load(bucket), _)) =
        h.machine.note_load(1_000)
    else {
        panic!("a first load is a changed bucket");
    };
    let expected = crate::history::Load {
        memory_used_bytes: PARAMS_BYTES + 100,
        synthesizing: 1,
        ..Default::default()
    };
    assert_eq!(bucket.peak, expected);
    let before = crate::clock::unix_ms();
    h.drain();
    let stints: Vec<_> = (h.records.iter())
        .filter_map(|r| match r {
            crate::journal::record::Record::Stint(s) => Some(*s),
            _ => None,
        })
        .collect();
    let [stint] = stints[..] else {
        panic!("one stint: {stints:?}");
    };
    let now = crate::clock::unix_ms();
    assert!(
        before <= stint.from_unix_ms
            && stint.from_unix_ms <= stint.to_unix_ms
            && stint.to_unix_ms <= now,
        "{stint:?} within [{before}, {now}]"
    );
}
