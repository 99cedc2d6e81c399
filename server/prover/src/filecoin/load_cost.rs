//! What waiting for a circuit's parameters saves a partition, estimated from the circuit's
//! shape and files with rates measured on the development machine (two cores; each figure's
//! source is beside it). The engine weighs them (`FastPath::worth_waiting`): a partition below
//! HIGH priority waits for a load whose rest costs less than the extra work it and the other
//! waiting partitions of the circuit would do synthesized the plain way.

use std::time::Duration;

use super::estimate::{precompiled_bytes, shape};
use super::CircuitId;

/// A `.params` file decoded per thread and second: `params_decode` measured 1.5–2.2 M points
/// (of 96 or 192 bytes, about 108 on average in a PoRep file) a second a thread.
const DECODE_BYTES_PER_SEC_PER_THREAD: f64 = 200e6;
/// Pre-compiled matrices read (their digest checked) per second: about 0.5 GB/s a core
/// (BENCHMARKS, "Pre-compiled synthesis (2 KiB)").
const MATRICES_BYTES_PER_SEC: f64 = 500e6;
/// Matrices recorded per constraint where none are kept yet: 0.5–0.7 µs on one core (same).
const RECORD_SECS_PER_CONSTRAINT: f64 = 0.6e-6;
/// The plain path's extra time per constraint over the pre-compiled one, for one partition on
/// two cores: 32 GiB PoRep 97 s against 14 s for 130 M constraints (0.64 µs), 2 KiB PoRep
/// about 1.7 s against 0.3 s for 2.69 M (0.52 µs).
const PLAIN_EXTRA_SECS_PER_CONSTRAINT: f64 = 0.55e-6;

/// Where a circuit's pre-compiled matrices come from at its load.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Matrices {
    /// Kept in a file (read with the parameters).
    Kept,
    /// Not kept yet: recorded at the load.
    ToRecord,
}

/// How long loading `circuit` takes from its start (a parameter file of `params_file_bytes`
/// decoded on `threads` threads, its matrices read or recorded), and how much longer one of its
/// partitions takes synthesized without them.
pub fn load_cost(
    circuit: CircuitId,
    params_file_bytes: u64,
    matrices: Matrices,
    threads: usize,
) -> (Duration, Duration) {
    let constraints = shape(circuit.kind(), circuit.sector_size()).constraints as f64;
    let decode =
        params_file_bytes as f64 / (DECODE_BYTES_PER_SEC_PER_THREAD * threads.max(1) as f64);
    let matrices = match matrices {
        Matrices::Kept => precompiled_bytes(circuit) as f64 / MATRICES_BYTES_PER_SEC,
        Matrices::ToRecord => constraints * RECORD_SECS_PER_CONSTRAINT,
    };
    (
        Duration::from_secs_f64(decode + matrices),
        Duration::from_secs_f64(constraints * PLAIN_EXTRA_SECS_PER_CONSTRAINT),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::filecoin::ProofKind;

    #[test]
    fn a_32gib_porep_waits_for_its_load_and_a_recording_counts_against_it() {
        let porep = CircuitId::new(ProofKind::PorepSealCommit, 32 << 30).unwrap();
        // The published file, 44 GiB, on 16 cores with the matrices kept: about 15 s of decode
        // and 9 s of matrices against about 72 s more a partition without them.
        let (load, extra) = load_cost(porep, 47_000_000_000, Matrices::Kept, 16);
        assert!((20..30).contains(&load.as_secs()), "{load:?}");
        assert!((65..80).contains(&extra.as_secs()), "{extra:?}");
        assert!(load < extra, "one partition alone is worth the wait");
        // With the matrices still to record (about 78 s), the first partition alone is not.
        let (load, extra) = load_cost(porep, 47_000_000_000, Matrices::ToRecord, 16);
        assert!(load > extra, "{load:?} against {extra:?}");
        assert!(load < extra * 2, "two waiting partitions are");
    }
}
