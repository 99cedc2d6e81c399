//! Memory of one synthesized partition, known before synthesis, from the circuit's shape.
//!
//! Shapes (constraints incl. one per public input, aux variables, public inputs incl. ONE) are
//! measured: at 2 KiB by synthesizing each kind (`tests/filecoin/estimate.rs` fails when the
//! estimate drifts more than 25 % from the measured size), at 32 GiB (and 64 GiB PoRep) by
//! counting the production-shaped circuits (`examples/production_shape.rs`, whose peak-RSS
//! column is set against this estimate: 1.00–1.06× on every path and kind, ARCHITECTURE.md).
//! Other sizes interpolate between 2 KiB and 32 GiB along the Merkle tree's depth.

use crate::filecoin::ProofKind;
pub use crate::synthesis::CircuitShape;

/// Bytes of one field element (a/b/c entry, witness value).
const FR: u64 = 32;

/// What one partition holds in memory: once synthesized, and at its peaks in the device phase.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemoryEstimate {
    /// The synthesized partition: witness, densities and a/b/c.
    pub total_bytes: u64,
    /// The most its synthesis holds at once: `total_bytes`, plus for the PoSt kinds on the
    /// plain (recording) path the one chunk of sectors whose sub-system is being appended to the
    /// partition (`FallbackPoStCircuit` synthesizes its sectors in `window_post_synthesis_num_cpus`
    /// chunks, then appends each to the whole and drops it): half the partition again on two
    /// cores, 1 % on ninety-six.
    pub synthesis_peak_bytes: u64,
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
        self.synthesis_peak_bytes.max(self.device_peak_bytes)
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
        synthesis_peak_bytes: abc + witness + (abc + witness) / post_chunks(kind, sector_size),
        abc_bytes: abc,
        device_peak_bytes: witness + 4 * FR * domain,
        after_h_bytes: witness + msm_scalars,
    }
}

/// For the PoSt kinds, how many parts of the partition one sector chunk is (the chunk being
/// appended at the synthesis' peak, see [`MemoryEstimate::synthesis_peak_bytes`]); `u64::MAX`
/// (nothing extra) for the others.
fn post_chunks(kind: ProofKind, sector_size: u64) -> u64 {
    use filecoin_proofs::constants::{WINDOW_POST_SECTOR_COUNT, WINNING_POST_CHALLENGE_COUNT};
    // The sector entries of one partition circuit: WinningPoSt has one per challenge.
    let sectors = match kind {
        ProofKind::WindowPost => (WINDOW_POST_SECTOR_COUNT.read())
            .ok()
            .and_then(|counts| counts.get(&sector_size).copied())
            .unwrap_or(1),
        ProofKind::WinningPost => WINNING_POST_CHALLENGE_COUNT,
        ProofKind::PorepSealCommit | ProofKind::SnapDealsUpdate => return u64::MAX,
    } as u64;
    let cpus = u64::from(storage_proofs_core::settings::SETTINGS.window_post_synthesis_num_cpus);
    let chunk = (sectors / cpus.max(1)).max(1);
    sectors.div_ceil(chunk)
}

/// One partition's shape: (constraints incl. one per public input, aux, inputs incl. ONE).
type Measured = (usize, usize, usize);

/// Shapes measured at 2 KiB (synthesizing each kind, filecoin-proofs 19.1, V1_1 PoRep, V1_2
/// WindowPoSt) and at 32 GiB (counting the production-shaped circuits in full, or the
/// WindowPoSt one along its per-sector slope).
fn measured(kind: ProofKind) -> (Measured, Measured) {
    match kind {
        ProofKind::PorepSealCommit => ((2_687_961, 2_685_673, 40), (130_278_869, 130_169_893, 328)),
        ProofKind::SnapDealsUpdate => ((1_705_044, 1_703_569, 5), (81_049_504, 80_973_385, 5)),
        ProofKind::WindowPost => ((21_889, 22_128, 23), (125_305_057, 126_902_376, 25_840)),
        ProofKind::WinningPost => ((90_883, 91_674, 133), (370_723, 375_210, 133)),
    }
}

/// Shape of one partition circuit of `kind` at `sector_size`.
pub fn shape(kind: ProofKind, sector_size: u64) -> CircuitShape {
    let ((c2k, a2k, i2k), (c32g, a32g, i32g)) = measured(kind);
    let at = |(constraints, aux, inputs): Measured| CircuitShape {
        constraints,
        aux,
        inputs,
    };
    match sector_size {
        s if s <= 2 << 10 => return at((c2k, a2k, i2k)),
        s if s == 32 << 30 => return at((c32g, a32g, i32g)),
        // Counted in full at production shape, like 32 GiB.
        s if s == 64 << 30 && kind == ProofKind::PorepSealCommit => {
            return at((131_186_177, 131_076_643, 328))
        }
        _ => {}
    }
    // Merkle paths grow with log2(nodes); interpolate between 2 KiB (6 levels) and 32 GiB (30).
    let levels = |size: u64| (size / 32).trailing_zeros() as f64;
    let t =
        ((levels(sector_size) - levels(2 << 10)) / (levels(32 << 30) - levels(2 << 10))).max(0.0);
    let between =
        |small: usize, large: usize| (small as f64 + t * (large as f64 - small as f64)) as usize;
    CircuitShape {
        constraints: between(c2k, c32g),
        aux: between(a2k, a32g),
        // Public inputs grow with the challenge or sector count, not the tree.
        inputs: i2k.max(i32g),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn post_synthesis_peaks_hold_one_more_chunk_and_the_reservation_covers_them() {
        for size in [2u64 << 10, 32 << 30, 64 << 30] {
            for kind in [ProofKind::WindowPost, ProofKind::WinningPost] {
                let e = estimate(kind, size);
                let chunks = post_chunks(kind, size);
                assert!((1..u64::MAX).contains(&chunks), "{kind} {size}: {chunks}");
                assert_eq!(
                    e.synthesis_peak_bytes,
                    e.total_bytes + e.total_bytes / chunks
                );
                assert!(e.reserve_bytes() >= e.synthesis_peak_bytes);
            }
            for kind in [ProofKind::PorepSealCommit, ProofKind::SnapDealsUpdate] {
                let e = estimate(kind, size);
                assert_eq!(e.synthesis_peak_bytes, e.total_bytes, "{kind} {size}");
            }
        }
    }

    #[test]
    fn sizes_between_the_measured_ones_lie_between_their_shapes() {
        for kind in [
            ProofKind::PorepSealCommit,
            ProofKind::SnapDealsUpdate,
            ProofKind::WindowPost,
            ProofKind::WinningPost,
        ] {
            let (small, large) = (shape(kind, 2 << 10), shape(kind, 32 << 30));
            let mid = shape(kind, 512 << 20);
            assert!(small.constraints < mid.constraints && mid.constraints < large.constraints);
            assert!(small.aux < mid.aux && mid.aux < large.aux, "{kind}");
        }
    }
}
