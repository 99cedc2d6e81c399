//! Memory of one synthesized partition, known before synthesis, from the circuit's shape.
//!
//! Shapes (constraints incl. one per public input, aux variables, public inputs incl. ONE) are
//! measured: at 2 KiB by synthesizing each kind (`tests/filecoin/estimate.rs` fails when the
//! estimate drifts more than 25 % from the measured size), at 32 GiB (and 64 GiB PoRep) by
//! counting the production-shaped circuits (`examples/production_shape.rs`, whose peak-RSS
//! column is set against this estimate: 1.00–1.06× on every path and kind, in
//! `bench-client/BENCHMARKS.md`, "The memory estimate against whole partitions").
//! Other sizes interpolate between 2 KiB and 32 GiB along the Merkle tree's depth.

use crate::filecoin::ProofKind;
pub use crate::synthesis::CircuitShape;

/// Bytes of one field element (a/b entry, witness value).
const FR: u64 = 32;

/// Where a partition's device phase computes H and runs its multiexps, which decides what the
/// host holds meanwhile.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PhaseOn {
    /// On the host (the CPU backend): the H FFTs' domain-sized buffers, c = a∘b among them,
    /// and each multiexp's scalars are host memory.
    Host,
    /// On a device (a GPU): the host holds the synthesized partition until its H multiexp is
    /// done, then the witness; a step that falls back to the CPU asks for what it needs then
    /// ([`host_phase`], `PhaseHooks::hold_at_least`).
    Device,
}

/// What one partition holds in memory: once synthesized, and at its peaks in the device phase.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemoryEstimate {
    /// The synthesized partition: witness, densities and a/b (no c: the device phase forms
    /// c = a∘b where it computes H).
    pub total_bytes: u64,
    /// The most its synthesis holds at once: `total_bytes`, plus for the PoSt kinds on the
    /// plain (recording) path the one chunk of sectors whose sub-system is being appended to the
    /// partition (`FallbackPoStCircuit` synthesizes its sectors in `window_post_synthesis_num_cpus`
    /// chunks, then appends each to the whole and drops it): half the partition again on two
    /// cores, 1 % on ninety-six.
    pub synthesis_peak_bytes: u64,
    /// The a/b share of `total_bytes`.
    pub abc_bytes: u64,
    /// The most the partition holds on the host in its device phase: on the host, during the
    /// H FFTs ([`HostPhase::fft_peak_bytes`]); on a device, the synthesized partition until its
    /// H multiexp is done.
    pub device_peak_bytes: u64,
    /// What it holds on the host from the end of the H computation until the proof is done: on
    /// the host, [`HostPhase::msm_peak_bytes`]; on a device, the witness.
    pub after_h_bytes: u64,
}

impl MemoryEstimate {
    /// Bytes still held after the a/b release (witness and densities), until the proof is done.
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

/// What a partition's device phase holds on the host when it runs there: the one definition for
/// the CPU backend's estimate and for a device step that falls back to the CPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HostPhase {
    /// During the H FFTs: the witness, and a, b and c = a∘b padded to the evaluation domain
    /// (the next power of two of the constraint count) with one scratch buffer of its size.
    pub fft_peak_bytes: u64,
    /// During a multiexp: the witness and the larger of h's coefficients and one gathered
    /// scalar vector.
    pub msm_peak_bytes: u64,
}

/// [`HostPhase`] of a partition of `shape`.
pub fn host_phase(shape: CircuitShape) -> HostPhase {
    let witness = witness_bytes(shape);
    let domain = shape.constraints.max(1).next_power_of_two() as u64;
    HostPhase {
        fft_peak_bytes: witness + 4 * FR * domain,
        msm_peak_bytes: witness + FR * domain.max((shape.aux + shape.inputs) as u64),
    }
}

/// The witness of a partition of `shape`, with its three density bit sets.
fn witness_bytes(s: CircuitShape) -> u64 {
    FR * (s.aux + s.inputs) as u64 + (2 * s.aux + s.inputs) as u64 / 8
}

/// Estimated memory of one partition of `kind` at `sector_size` with its device phase on the
/// host (the CPU backend; the most any backend needs).
pub fn estimate(kind: ProofKind, sector_size: u64) -> MemoryEstimate {
    estimate_on(kind, sector_size, PhaseOn::Host)
}

/// Estimated memory of one partition of `kind` at `sector_size` with its device phase `on`.
pub fn estimate_on(kind: ProofKind, sector_size: u64, on: PhaseOn) -> MemoryEstimate {
    let s = shape(kind, sector_size);
    let abc = 2 * FR * s.constraints as u64;
    let witness = witness_bytes(s);
    let total = abc + witness;
    let host = host_phase(s);
    let (device_peak_bytes, after_h_bytes) = match on {
        PhaseOn::Host => (host.fft_peak_bytes, host.msm_peak_bytes),
        PhaseOn::Device => (total, witness),
    };
    MemoryEstimate {
        total_bytes: total,
        synthesis_peak_bytes: total + total / post_chunks(kind, sector_size),
        abc_bytes: abc,
        device_peak_bytes,
        after_h_bytes,
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
    fn a_device_phase_on_a_gpu_reserves_no_fft_buffers_and_keeps_only_the_witness_after_h() {
        for kind in ProofKind::ALL {
            let (host, device) = (
                estimate_on(kind, 32 << 30, PhaseOn::Host),
                estimate_on(kind, 32 << 30, PhaseOn::Device),
            );
            assert_eq!(host.total_bytes, device.total_bytes, "{kind}");
            assert_eq!(device.after_h_bytes, device.witness_bytes(), "{kind}");
            assert_eq!(
                device.reserve_bytes(),
                device.synthesis_peak_bytes,
                "{kind}"
            );
            assert!(device.reserve_bytes() < host.reserve_bytes(), "{kind}");
            // What a step falling back to the CPU asks for is the host estimate's own peak.
            let phase = host_phase(shape(kind, 32 << 30));
            assert_eq!(phase.fft_peak_bytes, host.device_peak_bytes);
            assert_eq!(phase.msm_peak_bytes, host.after_h_bytes);
        }
        // A 32 GiB PoRep partition: the witness and a and b, about 12.5 GB, against the FFT's
        // 21.4 GB on the host.
        let porep = estimate_on(ProofKind::PorepSealCommit, 32 << 30, PhaseOn::Device);
        assert!((12_000_000_000..13_000_000_000).contains(&porep.reserve_bytes()));
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
