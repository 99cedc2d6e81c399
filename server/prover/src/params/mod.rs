//! Groth16 parameters: production-named `v28-<identifier>.params` / `.vk` files read from a
//! directory, loaded once and shared (`Arc<LoadedParams>`) by every partition of that circuit.
//!
//! Layout:
//! - `mod.rs`: locating and loading parameter files ([`load_params`], [`LoadedParams`]).
//! - `generate.rs`: creating local *test* parameters ([`generate_params`]), with the Groth16
//!   setup of [`crate::setup`].
//! - `precompiled.rs`: the circuits' pre-compiled matrices beside them.
//! - `read.rs`: a `.params` file memory-mapped and decoded in parallel.
//! - `made_up.rs` (feature `bench`): parameters of a partition's counts for timing only, and
//!   `.params` files of given counts for the decode benchmark.
//! - `check.rs`: the files against filecoin-proofs' published digests ([`check::check_circuit`]).

pub mod check;
mod generate;
#[cfg(feature = "bench")]
pub mod made_up;
pub mod precompiled;
pub mod read;

use std::ffi::OsString;
use std::fs::File;
use std::io::BufReader;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bellperson::groth16::VerifyingKey;
use blstrs::Bls12;

use crate::circuit::CircuitId;
use crate::error::{ProverError, Result};
pub use crate::keys::LoadedParams;

pub use generate::{generate_params, GeneratedParams};

/// Environment variable naming the parameter directory (shared with filecoin-proofs).
pub const PARAMS_DIR_ENV: &str = "FIL_PROOFS_PARAMETER_CACHE";
/// filecoin-proofs' default parameter directory.
pub const DEFAULT_PARAMS_DIR: &str = "/var/tmp/filecoin-proof-parameters";

/// `$FIL_PROOFS_PARAMETER_CACHE`, or `/var/tmp/filecoin-proof-parameters` when unset or empty.
pub fn default_params_dir() -> PathBuf {
    params_dir_from(|name| std::env::var_os(name))
}

/// [`default_params_dir`] with the environment given as a lookup (tests, or a caller that has
/// its own view of the environment).
pub fn params_dir_from(env: impl Fn(&str) -> Option<OsString>) -> PathBuf {
    env(PARAMS_DIR_ENV)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(DEFAULT_PARAMS_DIR))
}

/// Where tests, benchmarks and the demo keep their generated 2 KiB parameters:
/// `$SNARKD_TEST_PARAMS_DIR`, or `~/.cache/snarkd/params-2k` (outside any checkout, so they
/// survive clean clones; `scripts/test.sh` uses the same default).
pub fn test_params_dir() -> PathBuf {
    std::env::var_os("SNARKD_TEST_PARAMS_DIR")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var_os("HOME").unwrap_or_else(|| "/tmp".into()))
                .join(".cache/snarkd/params-2k")
        })
}

/// Paths of the files of one circuit in `dir`.
pub fn params_paths(dir: &Path, circuit: CircuitId) -> (PathBuf, PathBuf) {
    let stem = circuit.params_file_stem();
    (
        dir.join(format!("{stem}.params")),
        dir.join(format!("{stem}.vk")),
    )
}

/// Loads `v28-<identifier>.params` and `.vk` of `circuit` from `dir`. Slow for large circuits
/// (tens of GiB at 32 GiB sectors): the engine calls this once per circuit and caches the `Arc`.
pub fn load_params(dir: &Path, circuit: CircuitId) -> Result<Arc<LoadedParams>> {
    load_params_with(dir, circuit, None)
}

/// [`load_params`], with the circuit's pre-compiled matrices from `precompiled` when given
/// (recorded and saved there when missing or unusable; see [`precompiled::load_or_record`]).
/// Matrices that cannot be had are logged and left out: synthesis then takes the plain path.
pub fn load_params_with(
    dir: &Path,
    circuit: CircuitId,
    precompiled: Option<precompiled::MatricesPlace<'_>>,
) -> Result<Arc<LoadedParams>> {
    let (params_path, vk_path) = params_paths(dir, circuit);
    let file = open_param_file(&params_path, circuit)?;
    let started = std::time::Instant::now();
    let (params, reader) =
        read::read_params_file(file).map_err(|e| ProverError::ParamsUnreadable {
            path: params_path.clone(),
            reason: e.to_string(),
        })?;
    let decode_ms = started.elapsed().as_millis() as u64;
    let vk = {
        let file = open_param_file(&vk_path, circuit)?;
        VerifyingKey::<Bls12>::read(BufReader::new(file)).map_err(|e| {
            ProverError::ParamsUnreadable {
                path: vk_path.clone(),
                reason: e.to_string(),
            }
        })?
    };
    if params.vk != vk {
        return Err(ProverError::ParamsUnreadable {
            path: params_path,
            reason: format!("its verifying key differs from {}", vk_path.display()),
        });
    }
    let size_bytes = crate::keys::parameters_size_bytes(&params);
    tracing::info!(circuit = %circuit, size_bytes, dir = %dir.display(), ?reader, decode_ms,
        "loaded groth16 parameters");
    let precompiled = precompiled.and_then(|place| {
        let started = std::time::Instant::now();
        match precompiled::load_or_record(place, circuit, &params) {
            Ok((m, source)) => {
                tracing::info!(circuit = %circuit, bytes = m.size_bytes(), ?source,
                    elapsed_ms = started.elapsed().as_millis() as u64, "pre-compiled circuit ready");
                Some(m)
            }
            Err(e) => {
                tracing::warn!(circuit = %circuit, error = %e,
                    "no pre-compiled circuit; its partitions are synthesized the plain way");
                None
            }
        }
    });
    Ok(Arc::new(LoadedParams::new(
        circuit,
        params,
        vk,
        precompiled,
    )))
}

/// Fails with [`ProverError::ParamsMissing`] when the circuit's parameter or verifying-key file
/// is not in `dir`: a request that needs them is refused at submit instead of failing later.
pub fn ensure_params_present(dir: &Path, circuit: CircuitId) -> Result<()> {
    let (params, vk) = params_paths(dir, circuit);
    for path in [params, vk] {
        if !path.exists() {
            return Err(ProverError::ParamsMissing {
                hint: obtain_hint(circuit),
                path,
            });
        }
    }
    Ok(())
}

fn open_param_file(path: &Path, circuit: CircuitId) -> Result<File> {
    File::open(path).map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            ProverError::ParamsMissing {
                path: path.to_path_buf(),
                hint: obtain_hint(circuit),
            }
        } else {
            ProverError::io(path, e)
        }
    })
}

/// How to obtain the files of a circuit.
pub(crate) fn obtain_hint(circuit: CircuitId) -> String {
    if circuit.sector_size() == 2 << 10 {
        format!(
            "create local test parameters with `snarkd params generate --sector-size 2KiB --kind {}` \
             (they verify only against their own .vk) or fetch the published ones with \
             `paramfetch` / `curio fetch-params 2KiB`",
            circuit.kind().as_str()
        )
    } else {
        "fetch the published parameters with `curio fetch-params <sector size>` or `paramfetch`, \
         or point FIL_PROOFS_PARAMETER_CACHE / the params directory at them"
            .to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn params_dir_is_the_env_variable_when_set_else_filecoins_default() {
        let set = |name: &str| {
            assert_eq!(name, "FIL_PROOFS_PARAMETER_CACHE");
            Some(OsString::from("/srv/params"))
        };
        assert_eq!(params_dir_from(set), PathBuf::from("/srv/params"));
        let default = PathBuf::from("/var/tmp/filecoin-proof-parameters");
        assert_eq!(params_dir_from(|_| None), default);
        assert_eq!(params_dir_from(|_| Some(OsString::new())), default);
    }
}
