//! A submit's place under its priority's `[limits]`, taken when the writer decides on the
//! request (before anything of it is decoded) and held while it is planned on a blocking
//! thread: the writer counts it with the queued jobs, so submits planned side by side cannot
//! together pass a limit that each alone would not. It is returned by `Drop`, when the submit
//! becomes a job (which then counts itself) or is given up.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::domain::Priority;

/// Places held now, and their input bytes, by priority.
#[derive(Debug, Default)]
pub(crate) struct IntakeSlots {
    held: [(AtomicU64, AtomicU64); 4],
}

impl IntakeSlots {
    fn of(&self, priority: Priority) -> &(AtomicU64, AtomicU64) {
        &self.held[priority as usize]
    }

    /// Places held for `priority` and their input bytes.
    pub fn held(&self, priority: Priority) -> (usize, u64) {
        let (n, bytes) = self.of(priority);
        (
            n.load(Ordering::Acquire) as usize,
            bytes.load(Ordering::Acquire),
        )
    }

    /// Takes a place for a submit of `priority` bringing `bytes` of input.
    pub fn take(self: &Arc<Self>, priority: Priority, bytes: u64) -> IntakeSlot {
        let (n, b) = self.of(priority);
        n.fetch_add(1, Ordering::AcqRel);
        b.fetch_add(bytes, Ordering::AcqRel);
        IntakeSlot {
            slots: self.clone(),
            priority,
            bytes,
        }
    }
}

/// One submit's place; given back when dropped.
#[derive(Debug)]
pub(crate) struct IntakeSlot {
    slots: Arc<IntakeSlots>,
    priority: Priority,
    bytes: u64,
}

impl Drop for IntakeSlot {
    fn drop(&mut self) {
        let (n, b) = self.slots.of(self.priority);
        n.fetch_sub(1, Ordering::AcqRel);
        b.fetch_sub(self.bytes, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_place_counts_until_it_is_dropped_under_its_own_priority() {
        let slots = Arc::new(IntakeSlots::default());
        let a = slots.take(Priority::Normal, 10);
        let b = slots.take(Priority::Normal, 5);
        let c = slots.take(Priority::Critical, 1);
        assert_eq!(slots.held(Priority::Normal), (2, 15));
        assert_eq!(slots.held(Priority::Critical), (1, 1));
        assert_eq!(slots.held(Priority::Low), (0, 0));
        drop(a);
        assert_eq!(slots.held(Priority::Normal), (1, 5));
        drop((b, c));
        assert_eq!(slots.held(Priority::Normal), (0, 0));
        assert_eq!(slots.held(Priority::Critical), (0, 0));
    }
}
