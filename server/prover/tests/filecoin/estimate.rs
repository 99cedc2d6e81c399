//! The memory estimate made before synthesis is within 25 % of what a synthesized partition
//! actually holds.
//!
//! The measurement does not use the partition's own `size_bytes()`: synthesis reserves its
//! vectors from the same shape the estimate comes from, so their capacities would follow any
//! estimate. Instead the measured size is the real element counts (witness, each of a/b/c, the
//! density bit sets) times their element sizes.

use blstrs::Scalar as Fr;
use snarkd_prover::synthesis::Density;
use snarkd_prover::{prepare, ProofKind, SynthesizedPartition};

use super::common::env;

const FR_BYTES: u64 = std::mem::size_of::<Fr>() as u64;

/// Bytes a partition holds by the lengths of its vectors: (total, a/b/c share).
fn measured_bytes(p: SynthesizedPartition) -> (u64, u64) {
    let density_bytes = |d: &Density| d.len().div_ceil(64) as u64 * 8;
    let (a, b, c) = p.densities();
    let densities = density_bytes(a) + density_bytes(b) + density_bytes(c);
    let witness = (p.num_inputs() + p.num_aux()) as u64 * FR_BYTES + densities;
    let constraints = p.num_constraints();
    let abc = p.abc();
    // No c on the host: the device phase forms c = a∘b where it computes H.
    assert!(abc.c.is_none(), "the daemon's synthesis keeps no c");
    for (name, v) in [("a", &abc.a), ("b", &abc.b)] {
        assert_eq!(v.len(), constraints, "{name} has one entry per constraint");
    }
    let abc_bytes = (abc.a.len() + abc.b.len()) as u64 * FR_BYTES;
    (witness + abc_bytes, abc_bytes)
}

fn off(estimate: u64, measured: u64) -> f64 {
    (estimate as f64 - measured as f64).abs() / measured as f64
}

#[test]
fn memory_estimate_is_within_25_percent_of_the_synthesized_size_for_every_kind() {
    let fx = &env().fixtures;
    for kind in ProofKind::ALL {
        let job = prepare(&fx.request(kind)).unwrap();
        let est = job.partition_memory_estimate();
        let (total, abc) = measured_bytes(job.synthesize(0).unwrap());
        assert!(total > 0 && abc > 0, "{kind}: nothing measured");
        let (off_total, off_abc) = (off(est.total_bytes, total), off(est.abc_bytes, abc));
        assert!(
            off_total <= 0.25 && off_abc <= 0.25,
            "{kind}: estimate {} bytes (a/b/c {}) vs measured {total} (a/b/c {abc}): off by {:.1} % \
             (a/b/c {:.1} %)",
            est.total_bytes,
            est.abc_bytes,
            off_total * 100.0,
            off_abc * 100.0,
        );
    }
}
