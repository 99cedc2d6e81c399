//! A multiexp pipeline's read-backs ([`Flight`]): two chunks' results in host memory the device
//! writes while the host goes on, each waited for by its marker, and the host's sum of what a
//! chunk read back (its ones' sums, its windows' parts).

use std::mem::ManuallyDrop;

use group::Group;
use opencl3::event::Event;
use opencl3::memory::Buffer;
use rayon::prelude::*;

use super::msm_plan::{reduce_items, ChunkPlan};
use super::queue::{DeviceQueue, LOCAL_WORK_SIZE};
use super::settling::Settling;
use super::windows::Sorted;
use crate::error::{ProverError, Result};
use crate::threads;

/// The device buffers a chunk's results are read back from: the split's and sort's counts,
/// the work groups' sums of ones and the reduction's parts.
pub struct ReadFrom<'a, C> {
    pub counts: &'a Buffer<u32>,
    pub sums: &'a Buffer<C>,
    pub parts: &'a Buffer<C>,
}

/// What a chunk reads back: the split's counts, the work groups' sums of ones and the
/// reduction's parts.
struct ReadBack<C> {
    counts: [u32; 3],
    sums: Vec<C>,
    parts: Vec<C>,
}

/// A chunk whose read-back is enqueued: into which of the two [`ReadBack`]s, its length, and
/// the event of its end.
struct Pending {
    slot: usize,
    terms: usize,
    done: Event,
}

/// The read-backs of a pipeline's chunks, in host memory the device writes while the host goes
/// on: two, for the chunk running and the one before it. Dropped with a copy possibly still
/// running (a failure not drained, a panic), the host memory is kept until the queue's next
/// successful wait (`settling.rs`), never freed if there is none.
pub struct Flight<C: Send + 'static> {
    backs: ManuallyDrop<[Box<ReadBack<C>>; 2]>,
    pending: Vec<Pending>,
    /// Work was enqueued (a chunk's copies, kernels or read-back) that the host has not waited
    /// for.
    unsettled: bool,
    settling: Settling,
}

impl<C: Group + Send + Sync> Flight<C> {
    /// Read-backs for `units` work items on `q`.
    pub fn new(q: &DeviceQueue, units: usize) -> Self {
        let back = || {
            Box::new(ReadBack {
                counts: [0; 3],
                sums: vec![C::identity(); units / LOCAL_WORK_SIZE],
                parts: vec![C::identity(); 2 * reduce_items(units)],
            })
        };
        Flight {
            backs: ManuallyDrop::new([back(), back()]),
            pending: Vec::with_capacity(2),
            unsettled: false,
            settling: q.settling(),
        }
    }

    /// Whether a chunk's work may still be running: the pipeline's device memory, too, is in
    /// use.
    pub fn unsettled(&self) -> bool {
        self.unsettled
    }

    /// A chunk's work is about to be enqueued: from here until a wait, the pipeline's memory
    /// may be in use (an error or panic before its read-back is enqueued included).
    pub fn enqueuing(&mut self) {
        self.unsettled = true;
    }

    /// Keeps `thing` until the queue has run what is enqueued now.
    pub fn keep_until_settled(&self, thing: impl Send + 'static) {
        self.settling.keep(thing);
    }

    /// Enqueues the read-back of the chunk just enqueued into the slot no pending chunk holds
    /// (at most one is pending), and a marker for its end; does not wait.
    pub fn read_back(
        &mut self,
        q: &DeviceQueue,
        from: ReadFrom<'_, C>,
        terms: usize,
    ) -> Result<()> {
        debug_assert!(
            self.pending.len() < 2,
            "a chunk is collected before a third"
        );
        let slot = match self.pending.first() {
            Some(p) => 1 - p.slot,
            None => 0,
        };
        let back = &mut *self.backs[slot];
        self.unsettled = true;
        // SAFETY: `back` is neither touched nor freed until the wait for `done` (after these
        // copies on the same queue) has returned, or the queue has been drained (`drain`);
        // otherwise it is kept until the queue's next successful wait (`Drop`).
        unsafe {
            q.read_async(from.counts, &mut back.counts)?;
            q.read_async(from.sums, &mut back.sums)?;
            q.read_async(from.parts, &mut back.parts)?;
        }
        let done = q.marker()?;
        self.pending.push(Pending { slot, terms, done });
        Ok(())
    }

    /// Waits for both queues if a read-back may still be running; an error leaves it so.
    pub fn drain(&mut self, q: &DeviceQueue) -> Result<()> {
        if self.unsettled {
            q.finish()?;
            self.pending.clear();
            self.unsettled = false;
        }
        Ok(())
    }

    /// The sum of the earlier of two pending chunks, once it has run (the later one keeps the
    /// device busy meanwhile); `None` with one pending.
    pub fn collect_earlier(&mut self, q: &DeviceQueue, plan: ChunkPlan) -> Result<Option<C>> {
        if self.pending.len() < 2 {
            return Ok(None);
        }
        let earlier = self.pending.remove(0);
        self.collect(q, earlier, true, plan).map(Some)
    }

    /// The sum of the last pending chunk (the identity with none), once it has run: the
    /// multiexp's one wait with the device idle behind it.
    pub fn collect_last(&mut self, q: &DeviceQueue, plan: ChunkPlan) -> Result<C> {
        debug_assert!(self.pending.len() < 2, "the earlier is collected first");
        match self.pending.pop() {
            Some(last) => self.collect(q, last, false, plan),
            None => Ok(C::identity()),
        }
    }

    /// The sum of `chunk`, once it has run (its read-back is the queue's latest work when not
    /// `work_behind`).
    fn collect(
        &mut self,
        q: &DeviceQueue,
        chunk: Pending,
        work_behind: bool,
        plan: ChunkPlan,
    ) -> Result<C> {
        q.wait(&chunk.done, work_behind)?;
        if self.pending.is_empty() {
            self.unsettled = false;
        }
        let back = &self.backs[chunk.slot];
        let n = chunk.terms;
        let [n_ones, n_rest, pairs] = back.counts.map(|c| c as usize);
        if n_ones > n || n_rest > n || n_ones + n_rest > n {
            return Err(ProverError::Device {
                backend: "opencl".into(),
                reason: format!(
                    "the split of {n} scalars counted {n_ones} ones and {n_rest} others"
                ),
            });
        }
        let mut acc = C::identity();
        if n_ones > 0 {
            acc += sum_on_host(&back.sums);
        }
        if n_rest > 0 {
            let shape = Sorted::new(
                n_rest,
                plan.window_bits,
                plan.capacity() as u64,
                reduce_items(plan.work_units),
            );
            acc += shape.combine(&back.parts);
            q.count_additions((pairs + 2 * shape.windows * shape.buckets) as u64);
        }
        q.count_additions(n_ones as u64);
        Ok(acc)
    }
}

impl<C: Send + 'static> Drop for Flight<C> {
    fn drop(&mut self) {
        // SAFETY: taken once, here; the boxes move, not the memory a copy may still write.
        let backs = unsafe { ManuallyDrop::take(&mut self.backs) };
        match self.unsettled {
            true => self.settling.keep(backs),
            false => drop(backs),
        }
    }
}

/// Σ of the work items' points, on the host's threads.
fn sum_on_host<C: Group + Send + Sync>(points: &[C]) -> C {
    threads::pool().install(|| {
        points
            .par_chunks(1024)
            .map(|c| c.iter().fold(C::identity(), |a, p| a + p))
            .reduce(C::identity, |a, b| a + b)
    })
}
