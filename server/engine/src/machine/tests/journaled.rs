//! The machine with a journal: a job starts only once its acceptance is recorded, and fails
//! when the journal could not write it.

use super::*;
use crate::journal::record::FromJournal;

#[test]
fn a_job_whose_acceptance_could_not_be_written_fails_and_never_starts() {
    let mut h = Harness::new(1_000_000, 1, 1);
    h.machine.use_journal();
    let submit = |h: &mut Harness| {
        (h.submit(ProofKind::WindowPost, Priority::High, 1, 100))
            .unwrap()
            .job_id
    };
    let (lost, kept) = (submit(&mut h), submit(&mut h));
    assert!(h.pending.is_empty(), "nothing starts before it is on disk");
    h.apply(Input::Journal(FromJournal::Failed {
        job_id: lost.clone(),
        message: "disk I/O error".into(),
    }));
    let error = h.job(&lost).error.unwrap_or_default();
    assert!(
        error.contains("could not record it: disk I/O error"),
        "{error}"
    );
    for job_id in [&lost, &kept] {
        h.apply(Input::Journal(FromJournal::Recorded {
            job_id: job_id.to_string(),
        }));
    }
    h.drain();
    h.check_invariants();
    assert!(
        matches!(h.outcome(&lost), Some(JobEnd::Failed(_))),
        "stays failed"
    );
    assert!(matches!(h.outcome(&kept), Some(JobEnd::Completed(_))));
    // A failure reported for a job that already ended changes nothing.
    h.apply(Input::Journal(FromJournal::Failed {
        job_id: kept.clone(),
        message: "late".into(),
    }));
    assert!(matches!(h.outcome(&kept), Some(JobEnd::Completed(_))));
}
