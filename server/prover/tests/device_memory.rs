//! The device phase's memory against the estimate the engine reserves by: every heap byte of this
//! test binary is counted by its allocator, so the figures are what the prover really holds (one
//! test in the binary, so nothing else allocates beside it).

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};

#[path = "filecoin/common.rs"]
#[allow(dead_code)]
mod common;

use common::{env, params};
use snarkd_prover::groth16::Randomness;
use snarkd_prover::{prepare, CpuBackend, DeviceBackend, ProofKind};

struct Counting;

static CURRENT: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call is passed to the system allocator unchanged; only sizes are counted.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = System.alloc(layout);
        if !p.is_null() {
            PEAK.fetch_max(
                CURRENT.fetch_add(layout.size(), SeqCst) + layout.size(),
                SeqCst,
            );
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout);
        CURRENT.fetch_sub(layout.size(), SeqCst);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = System.realloc(ptr, layout, new_size);
        if !p.is_null() {
            // Counted as the old and the new block side by side, the most a moved block costs.
            PEAK.fetch_max(CURRENT.load(SeqCst) + new_size, SeqCst);
            CURRENT.fetch_add(new_size, SeqCst);
            CURRENT.fetch_sub(layout.size(), SeqCst);
        }
        p
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

fn off(measured: usize, estimated: u64) -> f64 {
    (measured as f64 - estimated as f64).abs() / estimated as f64
}

#[test]
fn the_device_phase_stays_within_the_estimate_it_is_reserved_by() {
    for kind in [ProofKind::WinningPost, ProofKind::WindowPost] {
        let params = params(kind);
        let job = prepare(&env().fixtures.request(kind)).expect("prepare");
        let estimate = job.partition_memory_estimate();
        let partition = job.synthesize(0).expect("synthesis");
        // Everything held apart from the partition itself (parameters, fixtures, the job).
        let base = CURRENT.load(SeqCst) - partition.size_bytes() as usize;
        PEAK.store(CURRENT.load(SeqCst), SeqCst);
        let mut held_after_h = 0;
        CpuBackend::new()
            .prove(partition, &params, Randomness::random(), &mut |_| {
                held_after_h = CURRENT.load(SeqCst) - base;
            })
            .expect("device phase");
        let peak = PEAK.load(SeqCst) - base;

        assert!(
            off(peak, estimate.device_peak_bytes) <= 0.25,
            "{kind}: the device phase peaked at {peak} bytes, the estimate is {}",
            estimate.device_peak_bytes
        );
        assert!(
            off(held_after_h, estimate.after_h_bytes) <= 0.25,
            "{kind}: {held_after_h} bytes held once H was computed, the estimate is {}",
            estimate.after_h_bytes
        );
    }
}
