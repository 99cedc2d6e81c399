//! What parameters this box has: `snarkd params check` and the startup summary's params lines.
//! Each circuit of each sector size found in the params directory (or asked for) is checked
//! against filecoin-proofs' published digests (`snarkd_prover::params::check`), with digests
//! cached in the state directory by length and modification time so that a start does not
//! read 100 GiB of parameters again; and whether its pre-compiled circuit is recorded.

use std::path::{Path, PathBuf};

use serde::Serialize;
use snarkd_prover::circuit::SECTOR_SIZES;
use snarkd_prover::params::check::{check_circuit, CircuitCheck, DigestCache, Verdict};
use snarkd_prover::params::params_paths;
use snarkd_prover::params::precompiled::matrices_file;
use snarkd_prover::{CircuitId, ProofKind};

/// The digest cache's file in the state directory.
pub fn digest_cache_path() -> PathBuf {
    crate::config::paths::state_dir().join("params-digests.json")
}

/// One circuit's files and matrices.
#[derive(Clone, Debug, Serialize)]
pub struct CircuitParams {
    #[serde(flatten)]
    pub check: CircuitCheck,
    /// Its pre-compiled circuit is recorded (in the precompiled directory or beside the params).
    pub precompiled: bool,
}

/// The sector sizes of which `dir` holds any parameter or verifying-key file.
pub fn sizes_present(dir: &Path) -> Vec<u64> {
    SECTOR_SIZES
        .iter()
        .map(|(bytes, _)| *bytes)
        .filter(|&size| {
            ProofKind::ALL.iter().any(|&kind| {
                CircuitId::new(kind, size).is_ok_and(|c| {
                    let (p, vk) = params_paths(dir, c);
                    p.exists() || vk.exists()
                })
            })
        })
        .collect()
}

/// Every circuit of `sizes` (those present in `params_dir` when `None`), checked.
pub fn inventory(
    params_dir: &Path,
    precompiled_dir: Option<&Path>,
    sizes: Option<&[u64]>,
) -> Vec<CircuitParams> {
    let cache_path = digest_cache_path();
    let mut cache = DigestCache::load(&cache_path);
    let sizes = sizes.map_or_else(|| sizes_present(params_dir), <[u64]>::to_vec);
    let mut out = Vec::new();
    for size in sizes {
        for &kind in &ProofKind::ALL {
            let Ok(circuit) = CircuitId::new(kind, size) else {
                continue;
            };
            let recorded = |dir: &Path| matrices_file(dir, circuit).path.is_file();
            out.push(CircuitParams {
                check: check_circuit(params_dir, circuit, &mut cache),
                precompiled: precompiled_dir.is_some_and(recorded) || recorded(params_dir),
            });
        }
    }
    if let Err(err) = cache.save(&cache_path) {
        tracing::debug!(error = %err, path = %cache_path.display(), "parameter digests not cached");
    }
    out
}

/// A sector size as `curio fetch-params` takes it: 2KiB, 512MiB, 32GiB.
pub fn size_name(size: u64) -> String {
    match size {
        s if s >= 1 << 30 && s % (1 << 30) == 0 => format!("{}GiB", s >> 30),
        s if s >= 1 << 20 && s % (1 << 20) == 0 => format!("{}MiB", s >> 20),
        s => format!("{}KiB", s >> 10),
    }
}

/// How to get what is missing or damaged at `size`.
pub fn fetch_hint(size: u64) -> String {
    let name = size_name(size);
    if size <= 2 << 10 {
        format!(
            "`curio fetch-params {name}` (or `lotus fetch-params {name}`) fetches the published \
             files; `snarkd params generate --sector-size {name}` makes a local test set"
        )
    } else {
        format!("`curio fetch-params {name}` (or `lotus fetch-params {name}`) fetches the published files")
    }
}

/// `snarkd params check`: a line per file, then what to do; Err when any file checked is
/// damaged or unreadable, when a circuit has one of its two files, or, for an asked
/// `size`, when any is missing.
pub fn run(dir: &Path, precompiled_dir: Option<&Path>, size: Option<u64>) -> anyhow::Result<()> {
    let asked: Option<Vec<u64>> = size.map(|s| vec![s]);
    let found = inventory(dir, precompiled_dir, asked.as_deref());
    if found.is_empty() {
        anyhow::bail!(
            "no parameter files in {}: {} (or pass --dir, or --sector-size to list what is needed)",
            dir.display(),
            fetch_hint(32 << 30)
        );
    }
    let mut bad_sizes = Vec::new();
    for c in &found {
        for f in [&c.check.params, &c.check.vk] {
            println!(
                "{}\t{}\t{}",
                c.check.circuit,
                f.verdict.describe(),
                f.path.display()
            );
        }
        // Without --sector-size, a kind with neither file is one this box does not prove.
        let absent =
            c.check.params.verdict == Verdict::Missing && c.check.vk.verdict == Verdict::Missing;
        let not_needed = absent && size.is_none();
        if !(c.check.summary().is_sound() || not_needed) {
            let size = CircuitId::parse(&c.check.circuit)
                .map(|c| c.sector_size())
                .unwrap_or(0);
            if !bad_sizes.contains(&size) {
                bad_sizes.push(size);
            }
        }
    }
    let local = found
        .iter()
        .filter(|c| *c.check.summary() == Verdict::LocalTest)
        .count();
    if local > 0 {
        println!("{local} circuit(s) have LOCAL TEST parameters: their proofs verify only here, never on chain");
    }
    if bad_sizes.is_empty() {
        return Ok(());
    }
    for size in &bad_sizes {
        eprintln!("to fix {}: {}", size_name(*size), fetch_hint(*size));
    }
    anyhow::bail!("some parameter files are missing, damaged or unreadable (listed above)")
}
