//! Memory of one synthesized partition, known before synthesis, from the circuit's shape.
//!
//! Shapes (constraints incl. one per public input, aux variables, public inputs incl. ONE) at
//! 2 KiB were measured by synthesizing each kind (see `tests/estimate.rs`, which fails when the
//! estimate drifts more than 25 % from the measured size). Other sizes scale the per-partition
//! constraint counts of the original daemon's measurements (BRIEF: PoRep ~130 M, Snap ~81 M,
//! WindowPoSt ~125 M, WinningPoSt ~3.5 M at 32 GiB) and are approximate.

use crate::filecoin::ProofKind;
pub use crate::synthesis::CircuitShape;

/// Bytes of one field element (a/b/c entry, witness value).
const FR: u64 = 32;

/// What one partition holds in memory: once synthesized, and at its peaks in the device phase.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemoryEstimate {
    /// The synthesized partition: witness, densities and a/b/c.
    pub total_bytes: u64,
    /// The a/b/c share of `total_bytes`.
    pub abc_bytes: u64,
    /// The most the partition holds at once: during the H FFTs, where a/b/c are padded to the
    /// evaluation domain (the next power of two of the constraint count) and each FFT takes a
    /// scratch buffer of the domain's size, beside the witness.
    pub device_peak_bytes: u64,
    /// What it holds from the end of the H computation until the proof is done: the witness,
    /// plus the larger of the H coefficients (converted to MSM scalars where they lie) and one
    /// gathered scalar vector for the A/B/L MSMs.
    pub after_h_bytes: u64,
}

impl MemoryEstimate {
    /// Bytes still held after the a/b/c release (witness and densities), until the proof is done.
    pub fn witness_bytes(&self) -> u64 {
        self.total_bytes - self.abc_bytes
    }

    /// What to reserve for the partition before its synthesis starts: enough for every phase.
    pub fn reserve_bytes(&self) -> u64 {
        self.total_bytes.max(self.device_peak_bytes)
    }

    /// What the reservation can give back once H is computed.
    pub fn released_after_h_bytes(&self) -> u64 {
        self.reserve_bytes() - self.after_h_bytes
    }
}

/// Estimated memory of one partition of `kind` at `sector_size`.
pub fn estimate(kind: ProofKind, sector_size: u64) -> MemoryEstimate {
    let s = shape(kind, sector_size);
    let abc = 3 * FR * s.constraints as u64;
    // Witness plus three density bit sets.
    let witness = FR * (s.aux + s.inputs) as u64 + (2 * s.aux + s.inputs) as u64 / 8;
    let domain = s.constraints.next_power_of_two() as u64;
    let msm_scalars = FR * domain.max((s.aux + s.inputs) as u64);
    MemoryEstimate {
        total_bytes: abc + witness,
        abc_bytes: abc,
        device_peak_bytes: witness + 4 * FR * domain,
        after_h_bytes: witness + msm_scalars,
    }
}

/// Shape of one partition circuit of `kind` at `sector_size`.
pub fn shape(kind: ProofKind, sector_size: u64) -> CircuitShape {
    let (c2k, a2k, i2k) = match kind {
        // Measured at 2 KiB with filecoin-proofs 19.1 (V1_1 PoRep, V1_2 WindowPoSt).
        ProofKind::PorepSealCommit => (2_687_961, 2_685_673, 40),
        ProofKind::SnapDealsUpdate => (1_705_044, 1_703_569, 5),
        ProofKind::WindowPost => (21_889, 22_128, 23),
        ProofKind::WinningPost => (90_883, 91_674, 133),
    };
    let shape_2k = CircuitShape {
        constraints: c2k,
        aux: a2k,
        inputs: i2k,
    };
    if sector_size <= 2 << 10 {
        return shape_2k;
    }
    // Per-partition constraints at 32 GiB (BRIEF), the reference for larger sizes.
    let c32g: usize = match kind {
        ProofKind::PorepSealCommit => 130_000_000,
        ProofKind::SnapDealsUpdate => 81_000_000,
        ProofKind::WindowPost => 125_000_000,
        ProofKind::WinningPost => 3_500_000,
    };
    // Merkle paths grow with log2(nodes); interpolate between 2 KiB (6 levels) and 32 GiB (30).
    let levels = |size: u64| (size / 32).trailing_zeros() as f64;
    let t =
        ((levels(sector_size) - levels(2 << 10)) / (levels(32 << 30) - levels(2 << 10))).max(0.0);
    let constraints = (c2k as f64 + t * (c32g as f64 - c2k as f64)) as usize;
    CircuitShape {
        constraints,
        aux: (constraints as f64 * a2k as f64 / c2k as f64) as usize,
        // Public inputs grow with the challenge count, not the tree; keep the order of magnitude.
        inputs: (i2k as f64 * (1.0 + t * 100.0)) as usize,
    }
}

/// Bytes of the pre-compiled matrices of `circuit` in memory (about their file's size), before
/// they are recorded: the row offsets of A and B and the density bits (8.5 bytes a constraint),
/// 8 bytes a term at the terms per constraint measured at 2 KiB, and the coefficient table
/// (`tests/filecoin/precompiled.rs` fails when this falls below the recorded size or exceeds it
/// by more than a quarter).
pub fn precompiled_bytes(circuit: crate::filecoin::CircuitId) -> u64 {
    let s = shape(circuit.kind(), circuit.sector_size());
    // Terms of A and B together per constraint (2 KiB, filecoin-proofs 19.1: 3.39, 3.37, 7.88,
    // 7.86), rounded up.
    let terms_per_constraint = match circuit.kind() {
        ProofKind::PorepSealCommit => 3.45,
        ProofKind::SnapDealsUpdate => 3.42,
        ProofKind::WindowPost => 7.95,
        ProofKind::WinningPost => 7.92,
    };
    let rows = s.constraints as f64;
    (rows * (8.5 + 8.0 * terms_per_constraint)) as u64 + (64 << 10)
}
