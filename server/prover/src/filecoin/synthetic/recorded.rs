//! The matrices the pre-compiled runs synthesize from, recorded once per circuit shape in a
//! process (about a minute at 32 GiB PoRep): a benchmark that synthesizes one shape many times
//! (at several thread counts, runs or device paths) records it once. One shape is kept at a
//! time. Recording is never timed, so what a run measures does not change.
//!
//! With `SNARKD_BENCH_MATRICES_DIR` set, recorded matrices are also written there and read back
//! by the next process that asks for the same shape (`scripts/gpu-check.sh`'s benchmarks share
//! one recording); a file that does not read back is recorded again and rewritten. The
//! directory is meant for one build's runs (the check makes a fresh one): the synthetic
//! circuits change within a version of snarkd, which the file's identity names.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use bellperson::Circuit;
use blstrs::Scalar as Fr;

use crate::circuit::{sector_size_name, CIRCUIT_CRATES};
use crate::error::Result;
use crate::filecoin::ProofKind;
use crate::synthesis::precompiled::{CircuitMatrices, MatricesFile};

/// A synthetic circuit's shape: its kind, sector size and challenge or sector count.
pub(super) type Shape = (ProofKind, u64, usize);

static RECORDED: Mutex<Option<(Shape, Arc<CircuitMatrices>)>> = Mutex::new(None);

/// The matrices of the circuit of `shape`: those kept, or those read from the shared directory,
/// or recorded from `circuit` now (and kept in place of any other shape's).
pub(super) fn matrices<C: Circuit<Fr>>(
    shape: Shape,
    circuit: impl FnOnce() -> Result<C>,
) -> Result<Arc<CircuitMatrices>> {
    let mut kept = RECORDED.lock().unwrap_or_else(|p| p.into_inner());
    if let Some((s, m)) = kept.as_ref() {
        if *s == shape {
            return Ok(Arc::clone(m));
        }
    }
    // The other shape's go before these are made: one set in memory at a time.
    *kept = None;
    let file = shared_file(shape);
    let read = file
        .as_ref()
        .and_then(|f| f.read_without_params().ok().flatten());
    let matrices = match read {
        Some(m) => m,
        None => {
            let m = CircuitMatrices::record(circuit()?, 0)?;
            if let Some(f) = &file {
                f.write(&m)?;
            }
            m
        }
    };
    let matrices = Arc::new(matrices);
    *kept = Some((shape, Arc::clone(&matrices)));
    Ok(matrices)
}

/// The file of `shape`'s matrices in `SNARKD_BENCH_MATRICES_DIR`, where it is set.
fn shared_file((kind, size, count): Shape) -> Option<MatricesFile> {
    let dir = PathBuf::from(std::env::var_os("SNARKD_BENCH_MATRICES_DIR")?);
    let name = format!(
        "synthetic-{}-{}-{count}",
        kind.as_str(),
        sector_size_name(size)
    );
    Some(MatricesFile {
        path: dir.join(format!("{name}.snarkd-r1cs")),
        identity: format!(
            "{name} (snarkd {}, {CIRCUIT_CRATES})",
            env!("CARGO_PKG_VERSION")
        ),
    })
}
