//! What the machine logs about transitions: an illegal edge at warn (and rejected), routine
//! late results below it.

use std::fmt::Debug;
use std::sync::Arc;

use parking_lot::Mutex;
use tracing::field::{Field, Visit};
use tracing::{span, Event, Level, Metadata, Subscriber};

use super::*;
use crate::machine::transition::Change;

/// A subscriber that keeps every event's level and message.
#[derive(Clone, Default)]
pub(super) struct Recorder(Arc<Mutex<Vec<(Level, String)>>>);

impl Recorder {
    /// Every message logged, at any level.
    pub(super) fn messages(&self) -> Vec<String> {
        self.0.lock().iter().map(|(_, m)| m.clone()).collect()
    }

    fn warnings(&self) -> Vec<String> {
        let events = self.0.lock();
        let warn = events.iter().filter(|(level, _)| *level <= Level::WARN);
        warn.map(|(_, message)| message.clone()).collect()
    }
}

struct Message(String);

impl Visit for Message {
    fn record_debug(&mut self, field: &Field, value: &dyn Debug) {
        if field.name() == "message" {
            self.0 = format!("{value:?}");
        }
    }
}

impl Subscriber for Recorder {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, _: &span::Attributes<'_>) -> span::Id {
        span::Id::from_u64(1)
    }
    fn record(&self, _: &span::Id, _: &span::Record<'_>) {}
    fn record_follows_from(&self, _: &span::Id, _: &span::Id) {}
    fn event(&self, event: &Event<'_>) {
        let mut message = Message(String::new());
        event.record(&mut message);
        self.0.lock().push((*event.metadata().level(), message.0));
    }
    fn enter(&self, _: &span::Id) {}
    fn exit(&self, _: &span::Id) {}
}

#[test]
fn an_illegal_transition_is_rejected_and_logged_at_warn() {
    let recorder = Recorder::default();
    tracing::subscriber::with_default(recorder.clone(), || {
        let mut h = Harness::new(1_000_000, 1, 1);
        // Routine work logs no warning: a job that completes, and one cancelled while its
        // synthesis runs (the late result is dropped quietly).
        let done = h
            .submit(ProofKind::WindowPost, Priority::High, 2, 100)
            .unwrap()
            .job_id;
        h.drain();
        assert!(matches!(h.outcome(&done), Some(JobEnd::Completed(_))));
        let cancelled = h
            .submit(ProofKind::WindowPost, Priority::High, 2, 100)
            .unwrap()
            .job_id;
        h.cancel(&cancelled).unwrap();
        h.drain();
        assert_eq!(recorder.warnings(), Vec::<String>::new());

        // NORMAL, one thread: its second partition waits.
        let job = h
            .submit(ProofKind::PorepSealCommit, Priority::Normal, 2, 100)
            .unwrap()
            .job_id;
        let seq = h.machine.job_ids[&job];
        assert_eq!(h.job(&job).partitions[1].state, PartitionState::Pending);
        let before = h.machine.snapshot();
        assert!(h
            .machine
            .transition(
                seq,
                1,
                Change::Dispatch {
                    worker: 0,
                    preempt: false,
                }
            )
            .is_none());
        assert!(h.machine.transition(seq, 1, Change::Fail).is_none());
        let after = h.machine.snapshot();
        assert_eq!(
            (after.jobs, after.workers, after.sequence),
            (before.jobs, before.workers, before.sequence),
            "a rejected transition changes nothing"
        );
        assert_eq!(
            recorder.warnings(),
            ["illegal transition rejected", "illegal transition rejected"]
        );
        h.drain();
        h.check_invariants();
    });
}
