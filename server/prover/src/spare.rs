//! Buffers of field elements kept from one partition for the next. A 32 GiB PoRep partition
//! writes about 12.5 GB of witness and a/b evaluations into fresh memory, and the kernel's work
//! handing that memory out (faulting it in, zeroing it, compacting huge pages) was most of its
//! synthesis' CPU time on the development machine (`bench-client/BENCHMARKS.md`, "Synthesis
//! written in place"). A partition's large buffers are given back here when the device phase
//! is done with them, and the next partition of the same shape is written into them.
//!
//! Nothing is kept until [`SpareBuffers::keep`] is called: the daemon does so when its memory
//! budget counts what is kept (the engine's `SpareMemory`), and frees it ([`SpareBuffers::trim`])
//! before any work waits for room. A buffer serves only a request of exactly its capacity, so a
//! partition never holds more than its estimate counts, and only buffers of a capacity some
//! synthesis asked for are kept (a vector that grew, or one the plain path made, is freed: no
//! request would take it).

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;

use blstrs::Scalar as Fr;

/// Buffers smaller than this are left to the allocator, which reuses small blocks itself.
const KEEP_FROM_BYTES: u64 = 64 << 20;

const FR_BYTES: u64 = std::mem::size_of::<Fr>() as u64;

/// The process's kept buffers.
pub struct SpareBuffers {
    keeping: AtomicBool,
    /// The smallest buffer kept, in bytes ([`KEEP_FROM_BYTES`]; tests lower it).
    keep_from: AtomicU64,
    /// Bytes of the kept buffers' capacities; changed with `kept` under its lock.
    held: AtomicU64,
    kept: Mutex<Kept>,
    /// Buffers handed out again instead of allocated.
    reused: AtomicU64,
}

static SPARE: SpareBuffers = SpareBuffers {
    keeping: AtomicBool::new(false),
    keep_from: AtomicU64::new(KEEP_FROM_BYTES),
    held: AtomicU64::new(0),
    kept: Mutex::new(Kept {
        buffers: Vec::new(),
        asked: BTreeSet::new(),
    }),
    reused: AtomicU64::new(0),
};

/// The kept buffers, and the capacities synthesis has asked for (those worth keeping).
struct Kept {
    buffers: Vec<Vec<Fr>>,
    asked: BTreeSet<usize>,
}

/// The process's kept buffers.
pub fn spare() -> &'static SpareBuffers {
    &SPARE
}

impl SpareBuffers {
    /// Keeps buffers given back from now on (until [`SpareBuffers::trim`]med).
    pub fn keep(&self) {
        self.keeping.store(true, Ordering::Release);
    }

    /// Keeps buffers from `bytes` up (tests lower it so 2 KiB partitions' are kept too).
    pub fn keep_from(&self, bytes: u64) {
        self.keep_from.store(bytes, Ordering::Release);
    }

    fn keeps(&self, bytes: u64) -> bool {
        bytes >= self.keep_from.load(Ordering::Acquire)
    }

    /// Bytes kept now.
    pub fn held(&self) -> u64 {
        self.held.load(Ordering::Acquire)
    }

    /// Buffers handed out again so far.
    pub fn reused(&self) -> u64 {
        self.reused.load(Ordering::Relaxed)
    }

    /// Frees kept buffers, largest first, until at least `bytes` are freed or none is left;
    /// returns the bytes freed (their memory is back with the system when this returns).
    pub fn trim(&self, bytes: u64) -> u64 {
        let mut freed = 0;
        while freed < bytes {
            let buffer = {
                let kept = &mut self.lock().buffers;
                let Some(largest) = (0..kept.len()).max_by_key(|&i| kept[i].capacity()) else {
                    break;
                };
                let buffer = kept.swap_remove(largest);
                self.held.fetch_sub(bytes_of(&buffer), Ordering::AcqRel);
                buffer
            };
            freed += bytes_of(&buffer);
            drop(buffer);
        }
        freed
    }

    /// An empty vector with room for exactly `n` elements: a kept buffer of that capacity when
    /// there is one (its pages already faulted in), else a fresh one advised to huge pages.
    pub(crate) fn vec(&self, n: usize) -> Vec<Fr> {
        if self.keeps(n as u64 * FR_BYTES) {
            let mut kept = self.lock();
            kept.asked.insert(n);
            if let Some(i) = kept.buffers.iter().position(|v| v.capacity() == n) {
                let buffer = kept.buffers.swap_remove(i);
                self.held.fetch_sub(bytes_of(&buffer), Ordering::AcqRel);
                self.reused.fetch_add(1, Ordering::Relaxed);
                return buffer;
            }
        }
        crate::huge_pages::vec_with_capacity(n)
    }

    /// Keeps `buffer`'s memory for a later partition when keeping, it is large enough and
    /// synthesis has asked for its capacity; frees it otherwise. Call before the memory it held
    /// is given back to the budget.
    pub fn give_back(&self, mut buffer: Vec<Fr>) {
        if !self.keeping.load(Ordering::Acquire) || !self.keeps(bytes_of(&buffer)) {
            return;
        }
        buffer.clear();
        let mut kept = self.lock();
        if kept.asked.contains(&buffer.capacity()) {
            self.held.fetch_add(bytes_of(&buffer), Ordering::AcqRel);
            kept.buffers.push(buffer);
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Kept> {
        self.kept
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

fn bytes_of(buffer: &Vec<Fr>) -> u64 {
    buffer.capacity() as u64 * FR_BYTES
}

#[cfg(test)]
mod tests {
    use super::*;
    use ff::Field;

    /// Elements of a buffer large enough to be kept.
    const N: usize = KEEP_FROM_BYTES as usize / 32;

    #[test]
    fn a_buffer_given_back_serves_the_next_request_of_its_size_and_is_freed_by_trim() {
        // The process's own buffers: this is the one test in this binary that keeps any.
        let spare = spare();
        let mut first = spare.vec(N);
        first.push(Fr::ONE);
        spare.give_back(first);
        assert_eq!(spare.held(), 0, "nothing is kept before keep()");

        spare.keep();
        let second = spare.vec(N);
        let address = second.as_ptr();
        spare.give_back(second);
        assert_eq!(spare.held(), (N * 32) as u64);
        let other_size = spare.vec(N + 1);
        assert_eq!(
            spare.held(),
            (N * 32) as u64,
            "only a request of its size takes it"
        );
        let reused = spare.reused();
        let third = spare.vec(N);
        assert_eq!((third.len(), third.capacity()), (0, N));
        assert_eq!(third.as_ptr(), address, "the same memory");
        assert_eq!((spare.held(), spare.reused()), (0, reused + 1));

        spare.give_back(third);
        spare.give_back(other_size);
        spare.give_back(Vec::with_capacity(16));
        spare.give_back(Vec::with_capacity(N + 2));
        assert_eq!(
            spare.held(),
            (2 * N + 1) as u64 * 32,
            "small buffers and capacities no synthesis asked for are not kept"
        );
        assert_eq!(spare.trim(1), (N + 1) as u64 * 32, "the largest goes first");
        assert_eq!(spare.trim(u64::MAX), N as u64 * 32);
        assert_eq!(spare.held(), 0);
    }
}
