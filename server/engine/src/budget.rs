//! The memory budget. Every partition and every loaded params set holds a [`Reservation`] taken
//! from it before the work starts; dropping the reservation (or shrinking it) gives the bytes
//! back and wakes the engine so it can admit more work. Two more parts are charged whether or
//! not they fit, because they are already in memory: the daemon's own baseline (for its whole
//! life) and the inputs of unfinished jobs (bounded by the intake limits); while they take the
//! budget past its total, no partition or params set is admitted.
//!
//! A prover may keep a finished partition's buffers for the next one ([`SpareMemory`]): the
//! bytes a partition gives back while the prover keeps more than the budget counts as kept stay
//! held, as [`Holder::Spare`], and [`Budget::release_spare`] gives them back (the prover freeing
//! what it keeps) before the engine refuses or evicts anything for want of room. So kept memory
//! is always counted, and never keeps work out.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

use crate::domain::ProofKind;
use crate::prover::SpareMemory;

/// What a reservation is for, so the status can show memory by proof kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Holder {
    Partition(ProofKind),
    Params,
    /// The daemon itself: its resident memory after startup, before any job.
    Baseline,
    /// The inputs of unfinished jobs.
    Inputs,
    /// Buffers of finished partitions the prover keeps for the next ones ([`SpareMemory`]).
    Spare,
}

type Wake = Box<dyn Fn() + Send + Sync>;

struct Inner {
    total: u64,
    used: u64,
    by_holder: Vec<(Holder, u64)>,
    spare: Option<Arc<dyn SpareMemory>>,
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
                spare: None,
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

    /// Bytes a reservation could have now: the free ones and those kept buffers hold, which
    /// [`Budget::release_spare`] gives back on demand.
    pub fn free_or_kept(&self) -> u64 {
        let inner = self.inner.lock();
        inner.total.saturating_sub(inner.used) + inner.held(Holder::Spare)
    }

    /// Bytes currently held by one kind of holder.
    pub fn held_by(&self, holder: Holder) -> u64 {
        self.inner.lock().held(holder)
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

    /// Counts what `spare` keeps from now on: bytes partitions give back while it keeps more
    /// than [`Holder::Spare`] holds stay held as that.
    pub fn keep_spare(&self, spare: Arc<dyn SpareMemory>) {
        self.inner.lock().spare = Some(spare);
    }

    /// Gives back what the spare memory no longer keeps (its buffers taken by partitions whose
    /// reservations count them), then has it free what it keeps until `want` bytes are given
    /// back in all or it keeps nothing. Returns the bytes given back. Never wakes anyone: its
    /// callers are about to reserve.
    pub fn release_spare(&self, want: u64) -> u64 {
        let Some(spare) = self.inner.lock().spare.clone() else {
            return 0;
        };
        let unused = self.settle_spare();
        if unused >= want {
            return unused;
        }
        // Freed before the count follows, and the count only down to what is still kept (a
        // partition may hand buffers over meanwhile, its reservation counting them until it
        // shrinks): the budget never counts less than is in memory.
        spare.trim(want - unused);
        unused + self.settle_spare()
    }

    /// Gives back what [`Holder::Spare`] counts beyond what the spare memory keeps now (buffers
    /// taken again by partitions, whose reservations count them); returns the bytes given back.
    pub fn settle_spare(&self) -> u64 {
        let mut inner = self.inner.lock();
        let Some(kept) = inner.spare.as_ref().map(|s| s.held()) else {
            return 0;
        };
        let unused = inner.held(Holder::Spare).saturating_sub(kept);
        inner.release(Holder::Spare, unused);
        unused
    }

    fn give_back(&self, holder: Holder, bytes: u64) {
        if bytes == 0 {
            return;
        }
        let kept = {
            let mut inner = self.inner.lock();
            // The partition's buffers the spare memory kept: still in memory, now as spare.
            let kept = match (holder, &inner.spare) {
                (Holder::Partition(_), Some(spare)) => spare
                    .held()
                    .saturating_sub(inner.held(Holder::Spare))
                    .min(bytes),
                _ => 0,
            };
            inner.release(holder, bytes);
            inner.hold(Holder::Spare, kept);
            kept
        };
        if kept < bytes {
            (self.wake)();
        }
    }
}

impl Inner {
    /// Counts `bytes` as held by `holder`, whether or not they fit.
    fn hold(&mut self, holder: Holder, bytes: u64) {
        self.used += bytes;
        add_holder(&mut self.by_holder, holder, bytes as i128);
    }

    /// Counts `bytes` held by `holder` as free again.
    fn release(&mut self, holder: Holder, bytes: u64) {
        self.used -= bytes;
        add_holder(&mut self.by_holder, holder, -(bytes as i128));
    }

    fn held(&self, holder: Holder) -> u64 {
        self.by_holder
            .iter()
            .find(|(h, _)| *h == holder)
            .map_or(0, |(_, b)| *b)
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
    if delta == 0 {
        return;
    }
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
        let mut grown = self.budget.inner.lock().hold_if_free(self.holder, bytes);
        if !grown {
            // Kept buffers go before a step fails for want of room.
            let short = bytes.saturating_sub(self.budget.available());
            if self.budget.release_spare(short) > 0 {
                grown = self.budget.inner.lock().hold_if_free(self.holder, bytes);
            }
        }
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

    #[test]
    fn what_a_partition_leaves_kept_stays_counted_until_it_is_released_for_room() {
        let wakes = Arc::new(AtomicUsize::new(0));
        let w = wakes.clone();
        let budget = Budget::new(100, move || {
            w.fetch_add(1, Ordering::SeqCst);
        });
        let kept = Arc::new(crate::test_prover::KeptBytes::default());
        budget.keep_spare(kept.clone());
        let porep = Holder::Partition(ProofKind::PorepSealCommit);

        // A partition's buffers kept as it ends: their bytes stay held, as spare.
        let p = budget.try_reserve(porep, 60).unwrap();
        kept.set(40);
        drop(p);
        let counts = |b: &Budget| (b.used(), b.held_by(Holder::Spare), b.held_by(porep));
        assert_eq!(counts(&budget), (40, 40, 0));
        assert_eq!(wakes.load(Ordering::SeqCst), 1, "the 20 not kept are free");
        // The next partition takes them (its reservation counts them now): the spare count
        // is given back first when room is wanted, nothing freed.
        let mut q = budget.try_reserve(porep, 60).unwrap();
        assert!(budget.try_reserve(porep, 1).is_none());
        kept.set(0);
        assert_eq!(budget.release_spare(10), 40);
        assert_eq!(counts(&budget), (60, 0, 60));

        // Kept again as q shrinks: held as spare; a params set gives nothing to it.
        kept.set(30);
        q.shrink(50);
        assert_eq!(counts(&budget), (40, 30, 10));
        let params = budget.try_reserve(Holder::Params, 50).unwrap();
        kept.set(60);
        drop(params);
        assert_eq!(
            counts(&budget),
            (40, 30, 10),
            "only a partition's bytes stay kept"
        );
        kept.set(30);
        // Room wanted: what is kept is freed, as much as asked, then given back.
        assert_eq!(budget.release_spare(20), 20);
        assert_eq!((counts(&budget), kept.held()), ((20, 10, 10), 10));
        drop(q);
        assert_eq!(
            counts(&budget),
            (10, 10, 0),
            "q's 10 cover nothing new: kept is counted"
        );
        assert_eq!(budget.release_spare(u64::MAX), 10);
        assert_eq!((budget.used(), kept.held()), (0, 0));
    }

    #[test]
    fn kept_bytes_taken_again_are_settled_and_a_growing_step_frees_kept_ones() {
        let budget = Budget::new(100, || {});
        let kept = Arc::new(crate::test_prover::KeptBytes::default());
        budget.keep_spare(kept.clone());
        let porep = Holder::Partition(ProofKind::PorepSealCommit);
        let p = budget.try_reserve(porep, 50).unwrap();
        kept.set(50);
        drop(p);
        // A synthesis takes 30 of them: its reservation counts them, the spare no longer.
        let mut q = budget.try_reserve(porep, 40).unwrap();
        kept.set(20);
        assert_eq!(budget.settle_spare(), 30);
        assert_eq!((budget.used(), budget.held_by(Holder::Spare)), (60, 20));
        assert_eq!(budget.settle_spare(), 0, "settled once");
        // A step falling back to the CPU grows past what is free: kept buffers are freed first.
        assert!(q.try_grow(55));
        assert_eq!((q.bytes(), kept.held(), budget.used()), (95, 5, 100));
        assert!(!q.try_grow(6), "never past the total, kept or not");
    }
}
