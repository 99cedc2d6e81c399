//! Pre-compiled circuits kept beside the parameters (`<params stem>.snarkd-r1cs`), loaded with
//! them and charged with them. A missing, stale or corrupt file is recorded again from the blank
//! circuit (about one partition's synthesis) and rewritten; it is never trusted unchecked.

use std::path::Path;

use bellperson::groth16::Parameters;
use blstrs::Bls12;

use crate::circuit::CircuitId;
use crate::error::Result;
use crate::filecoin::blank::record_matrices;
use crate::synthesis::precompiled::{CircuitMatrices, MatricesFile};

use crate::circuit::CIRCUIT_CRATES;

/// The file of `circuit`'s matrices in `dir`.
pub fn matrices_file(dir: &Path, circuit: CircuitId) -> MatricesFile {
    MatricesFile {
        path: dir.join(format!("{}.snarkd-r1cs", circuit.params_file_stem())),
        identity: format!("{circuit} ({CIRCUIT_CRATES})"),
    }
}

/// Where loaded matrices came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MatricesSource {
    /// Read from a valid file.
    Read,
    /// Recorded now; `saved` when the file was written (else kept in memory only).
    Recorded {
        saved: bool,
        replaced: Option<String>,
    },
}

/// Where a circuit's matrices are looked for and kept.
#[derive(Clone, Copy, Debug)]
pub struct MatricesPlace<'a> {
    /// Read from here first, and written here when they are recorded.
    pub dir: &'a Path,
    /// Also read from here (never written): the params directory, where `snarkd params
    /// precompile` leaves them, when the daemon writes its own elsewhere.
    pub read_also: Option<&'a Path>,
}

impl<'a> MatricesPlace<'a> {
    /// Read and written in `dir` only.
    pub fn dir(dir: &'a Path) -> Self {
        MatricesPlace {
            dir,
            read_also: None,
        }
    }
}

/// The matrices of `circuit` for `params`: read from the place's directory or the one it also
/// reads, or recorded (and saved in its directory) when neither holds a usable file. Fails only
/// when recording fails or the recorded circuit does not fit `params` (parameters of another
/// circuit version: no pre-compiled path then).
pub fn load_or_record(
    place: MatricesPlace<'_>,
    circuit: CircuitId,
    params: &Parameters<Bls12>,
) -> Result<(CircuitMatrices, MatricesSource)> {
    let file = matrices_file(place.dir, circuit);
    let replaced = match file.read(params) {
        Ok(Some(m)) => return Ok((m, MatricesSource::Read)),
        Ok(None) => None,
        Err(e) => Some(e.to_string()),
    };
    let beside = place.read_also.filter(|other| *other != place.dir);
    if let Some(Ok(Some(m))) = beside.map(|other| matrices_file(other, circuit).read(params)) {
        return Ok((m, MatricesSource::Read));
    }
    if let Some(reason) = &replaced {
        tracing::warn!(circuit = %circuit, %reason, "recording the pre-compiled circuit again");
    }
    let m = record_matrices(circuit)?;
    m.check_against(params)?;
    let saved = match file.write(&m) {
        Ok(bytes) => {
            tracing::info!(circuit = %circuit, bytes, path = %file.path.display(),
                "saved the pre-compiled circuit");
            true
        }
        Err(e) => {
            tracing::warn!(circuit = %circuit, error = %e,
                "could not save the pre-compiled circuit; it is kept in memory only and recorded again on the next load");
            false
        }
    };
    Ok((m, MatricesSource::Recorded { saved, replaced }))
}

#[cfg(test)]
mod tests {
    use super::CIRCUIT_CRATES;

    #[test]
    fn the_identity_names_the_locked_circuit_crates() {
        let lock = include_str!("../../../../Cargo.lock");
        for pinned in CIRCUIT_CRATES.split(", ") {
            let (name, version) = pinned.split_once(' ').unwrap();
            let entry = format!("name = \"{name}\"\nversion = \"{version}\"");
            assert!(lock.contains(&entry), "Cargo.lock has no {pinned}");
        }
    }
}
