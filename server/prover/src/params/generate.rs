//! Local test parameters. A Groth16 setup run here with a fresh random toxic waste produces
//! parameters under the production file names, but they verify **only against their own `.vk`**:
//! proofs made with them are never accepted on chain. Use them for tests, benchmarks and demos
//! at 2 KiB; production uses the published files (`paramfetch`, `curio fetch-params`).

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use bellperson::groth16::Parameters;
use blstrs::Bls12;

use super::params_paths;
use crate::circuit::{CircuitId, ProofKind};
use crate::error::{ProverError, Result};

/// What [`generate_params`] did for one circuit.
#[derive(Debug, Clone)]
pub struct GeneratedParams {
    pub circuit: CircuitId,
    pub params_path: PathBuf,
    pub vk_path: PathBuf,
    /// False when both files already existed and were kept.
    pub generated: bool,
    pub elapsed: Duration,
}

/// Creates local **test** parameters (`.params`, `.vk`, `.meta`) for each of `kinds` at
/// `sector_size` in `dir`, under the production file names, skipping circuits whose files exist.
///
/// These parameters come from a local random setup: they verify only against their own `.vk`,
/// never on chain. At 2 KiB on 2 cores PoRep takes about 85 s, Snap 50 s, the
/// PoSt kinds seconds ([`crate::setup`]); about 62 µs a constraint on one core, so hours
/// beyond test sizes. Files are written to a temporary name and renamed, so
/// an interrupted run leaves no truncated parameter file behind.
pub fn generate_params(
    dir: &Path,
    sector_size: u64,
    kinds: &[ProofKind],
) -> Result<Vec<GeneratedParams>> {
    fs::create_dir_all(dir).map_err(|e| ProverError::io(dir, e))?;
    let mut out = Vec::with_capacity(kinds.len());
    for &kind in kinds {
        let circuit = CircuitId::new(kind, sector_size)?;
        let (params_path, vk_path) = params_paths(dir, circuit);
        let start = Instant::now();
        let generated = if params_path.exists() && vk_path.exists() {
            false
        } else {
            // INFO: asked-for test parameters are not a fault (`snarkd params generate` says
            // so on its own terminal line too).
            tracing::info!(circuit = %circuit, dir = %dir.display(),
                "generating local test parameters: they verify only against their own .vk, never on chain");
            let params = crate::filecoin::blank::setup(circuit)?;
            // Another process may have finished the same circuit meanwhile; keep the first set so
            // that .params and .vk on disk always belong together.
            if params_path.exists() && vk_path.exists() {
                false
            } else {
                write_files(dir, circuit, &params, sector_size)?;
                true
            }
        };
        out.push(GeneratedParams {
            circuit,
            params_path,
            vk_path,
            generated,
            elapsed: start.elapsed(),
        });
    }
    Ok(out)
}

fn write_files(
    dir: &Path,
    circuit: CircuitId,
    params: &Parameters<Bls12>,
    sector_size: u64,
) -> Result<()> {
    let (params_path, vk_path) = params_paths(dir, circuit);
    let meta_path = dir.join(format!("{}.meta", circuit.params_file_stem()));
    crate::files::write_atomically(&params_path, |w| params.write(w))?;
    crate::files::write_atomically(&vk_path, |w| params.vk.write(w))?;
    crate::files::write_atomically(&meta_path, |w| {
        write!(w, "{{\"sector_size\":{sector_size}}}")
    })?;
    super::check::record_local_test_set(dir, circuit)
}
