//! The memory budget. Every partition and every loaded params set holds a [`Reservation`] taken
//! from it before the work starts; dropping the reservation (or shrinking it) gives the bytes
//! back and wakes the engine so it can admit more work. Two more parts are charged whether or
//! not they fit, because they are already in memory: the daemon's own baseline (for its whole
//! life) and the inputs of unfinished jobs (bounded by the intake limits); while they take the
//! budget past its total, no partition or params set is admitted.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

use crate::domain::ProofKind;

/// What a reservation is for, so the status can show memory by proof kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Holder {
    Partition(ProofKind),
    Params,
    /// The daemon itself: its resident memory after startup, before any job.
    Baseline,
    /// The inputs of unfinished jobs.
    Inputs,
}

type Wake = Box<dyn Fn() + Send + Sync>;

struct Inner {
    total: u64,
    used: u64,
    by_holder: Vec<(Holder, u64)>,
}

/// A fixed amount of memory shared by all reservations.
#[derive(Clone)]
pub struct Budget {
    inner: Arc<Mutex<Inner>>,
    wake: Arc<Wake>,
}

impl Budget {
    /// A budget of `total` bytes; `wake` runs (on any thread) whenever bytes are returned.
    pub fn new(total: u64, wake: impl Fn() + Send + Sync + 'static) -> Budget {
        Budget {
            inner: Arc::new(Mutex::new(Inner {
                total,
                used: 0,
                by_holder: Vec::new(),
            })),
            wake: Arc::new(Box::new(wake)),
        }
    }

    pub fn total(&self) -> u64 {
        self.inner.lock().total
    }

    pub fn used(&self) -> u64 {
        self.inner.lock().used
    }

    pub fn available(&self) -> u64 {
        let inner = self.inner.lock();
        inner.total.saturating_sub(inner.used)
    }

    /// Bytes currently held by one kind of holder.
    pub fn held_by(&self, holder: Holder) -> u64 {
        let inner = self.inner.lock();
        inner
            .by_holder
            .iter()
            .find(|(h, _)| *h == holder)
            .map_or(0, |(_, b)| *b)
    }

    /// Reserves `bytes` if that many are free; `None` otherwise (never blocks, never overcommits).
    pub fn try_reserve(&self, holder: Holder, bytes: u64) -> Option<Reservation> {
        let mut inner = self.inner.lock();
        inner
            .hold_if_free(holder, bytes)
            .then(|| self.reservation(holder, bytes))
    }

    /// Charges `bytes` that are in memory already (the baseline, a job's input), even past the
    /// total: what they take is then missing for new partitions until it is given back.
    pub fn charge_held(&self, holder: Holder, bytes: u64) -> Reservation {
        self.inner.lock().hold(holder, bytes);
        self.reservation(holder, bytes)
    }

    /// A reservation of `bytes` already counted as held by `holder`.
    fn reservation(&self, holder: Holder, bytes: u64) -> Reservation {
        Reservation {
            budget: self.clone(),
            holder,
            bytes: Arc::new(AtomicU64::new(bytes)),
        }
    }

    fn give_back(&self, holder: Holder, bytes: u64) {
        if bytes == 0 {
            return;
        }
        {
            let mut inner = self.inner.lock();
            inner.used -= bytes;
            add_holder(&mut inner.by_holder, holder, -(bytes as i128));
        }
        (self.wake)();
    }
}

impl Inner {
    /// Counts `bytes` as held by `holder`, whether or not they fit.
    fn hold(&mut self, holder: Holder, bytes: u64) {
        self.used += bytes;
        add_holder(&mut self.by_holder, holder, bytes as i128);
    }

    /// [`Inner::hold`] if `bytes` are free; false otherwise.
    fn hold_if_free(&mut self, holder: Holder, bytes: u64) -> bool {
        let free = self.total.saturating_sub(self.used) >= bytes;
        if free {
            self.hold(holder, bytes);
        }
        free
    }
}

fn add_holder(list: &mut Vec<(Holder, u64)>, holder: Holder, delta: i128) {
    match list.iter_mut().find(|(h, _)| *h == holder) {
        Some((_, bytes)) => *bytes = (*bytes as i128 + delta) as u64,
        None => list.push((holder, delta as u64)),
    }
    list.retain(|(_, bytes)| *bytes > 0);
}

/// Bytes held from a [`Budget`] until dropped.
pub struct Reservation {
    budget: Budget,
    holder: Holder,
    bytes: Arc<AtomicU64>,
}

impl Reservation {
    pub fn bytes(&self) -> u64 {
        self.bytes.load(Ordering::Acquire)
    }

    /// Grows the reservation by `bytes` if that many are free in its budget; false otherwise
    /// (never blocks, never overcommits).
    pub fn try_grow(&mut self, bytes: u64) -> bool {
        let grown = self.budget.inner.lock().hold_if_free(self.holder, bytes);
        if grown {
            self.bytes.fetch_add(bytes, Ordering::AcqRel);
        }
        grown
    }

    /// Returns part of the reservation early (e.g. the a/b/c buffers after the H polynomial).
    pub fn shrink(&mut self, bytes: u64) {
        let bytes = bytes.min(self.bytes());
        self.bytes.fetch_sub(bytes, Ordering::AcqRel);
        self.budget.give_back(self.holder, bytes);
    }

    /// A read-only view of what this reservation holds, wherever it travels.
    pub fn meter(&self) -> Meter {
        Meter(Some(self.bytes.clone()))
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        let bytes = self.bytes.swap(0, Ordering::AcqRel);
        self.budget.give_back(self.holder, bytes);
    }
}

/// What a [`Reservation`] holds right now, read by whoever tracks work it does not own (the
/// engine, while a thread holds the reservation). Zero once the reservation is dropped.
#[derive(Clone, Default)]
pub struct Meter(Option<Arc<AtomicU64>>);

impl Meter {
    pub fn bytes(&self) -> u64 {
        self.0.as_ref().map_or(0, |b| b.load(Ordering::Acquire))
    }
}

impl std::fmt::Debug for Reservation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Reservation({:?}, {} bytes)", self.holder, self.bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    #[test]
    fn a_reservation_grows_only_into_free_bytes_and_gives_all_back() {
        let budget = Budget::new(100, || {});
        let kind = Holder::Partition(ProofKind::PorepSealCommit);
        let mut a = budget.try_reserve(kind, 60).unwrap();
        let other = budget.try_reserve(Holder::Params, 30).unwrap();
        assert!(!a.try_grow(11), "must never overcommit");
        assert_eq!((a.bytes(), budget.used()), (60, 90));
        assert!(a.try_grow(10));
        assert_eq!(
            (a.bytes(), budget.held_by(kind), budget.available()),
            (70, 70, 0)
        );
        drop(a);
        assert_eq!((budget.used(), budget.held_by(kind)), (30, 0));
        drop(other);
    }

    #[test]
    fn reserve_shrink_and_drop_return_every_byte() {
        let wakes = Arc::new(AtomicUsize::new(0));
        let w = wakes.clone();
        let budget = Budget::new(100, move || {
            w.fetch_add(1, Ordering::SeqCst);
        });
        let kind = Holder::Partition(ProofKind::WindowPost);
        let mut a = budget.try_reserve(kind, 60).unwrap();
        assert!(
            budget.try_reserve(kind, 41).is_none(),
            "must never overcommit"
        );
        let b = budget.try_reserve(Holder::Params, 40).unwrap();
        assert_eq!(budget.available(), 0);
        let meter = a.meter();
        a.shrink(50);
        assert_eq!((budget.used(), budget.held_by(kind)), (50, 10));
        assert_eq!(meter.bytes(), 10, "the meter follows the reservation");
        drop(a);
        assert_eq!(meter.bytes(), 0, "and reads 0 once it is dropped");
        drop(b);
        assert_eq!(
            (
                budget.used(),
                budget.held_by(kind),
                budget.held_by(Holder::Params)
            ),
            (0, 0, 0)
        );
        assert_eq!(wakes.load(Ordering::SeqCst), 3);
    }

    #[test]
    fn memory_already_held_is_charged_past_the_total_and_blocks_new_reservations() {
        let budget = Budget::new(100, || {});
        let baseline = budget.charge_held(Holder::Baseline, 30);
        let input = budget.charge_held(Holder::Inputs, 90);
        assert_eq!((budget.used(), budget.available()), (120, 0));
        let kind = Holder::Partition(ProofKind::PorepSealCommit);
        assert!(budget.try_reserve(kind, 1).is_none());
        drop(input);
        assert_eq!(budget.available(), 70);
        assert!(budget.try_reserve(kind, 70).is_some());
        assert_eq!(budget.held_by(Holder::Baseline), 30);
        drop(baseline);
        assert_eq!(budget.used(), 0);
    }
}
