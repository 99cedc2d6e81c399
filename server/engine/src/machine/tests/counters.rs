//! Totals since start, per proof kind, as the snapshot shows them.

use super::*;

#[test]
fn completed_and_failed_jobs_are_counted_per_kind() {
    let mut h = Harness::new(1_000_000, 1, 1);
    let mut run = |kind, fail| {
        h.submit(kind, Priority::Normal, 1, 100).unwrap();
        while !h.pending.is_empty() {
            let load = matches!(h.pending[0], Effect::LoadParams { .. });
            h.complete(0, fail && !load);
        }
    };
    run(ProofKind::PorepSealCommit, false);
    run(ProofKind::WindowPost, false);
    run(ProofKind::PorepSealCommit, false);
    run(ProofKind::SnapDealsUpdate, true);
    let c = h.machine.snapshot().counters;
    assert_eq!(
        c.completed_by_kind,
        [(ProofKind::PorepSealCommit, 2), (ProofKind::WindowPost, 1)]
    );
    assert_eq!(c.failed_by_kind, [(ProofKind::SnapDealsUpdate, 1)]);
    assert_eq!((c.total_completed, c.total_failed), (3, 1));
}
