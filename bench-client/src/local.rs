//! The in-process subcommands: `gen` seals a sector and writes fixtures, `bench` times our split
//! prover against stock bellperson for each kind (no daemon involved).

use std::path::{Path, PathBuf};

use anyhow::Result;
use snarkd_prover::bench::bench_job;
use snarkd_prover::fixtures::{generate_fixtures, Fixtures};
use snarkd_prover::{load_params, prepare, CircuitId, CpuBackend, ProofKind};

/// Seals a random sector of `sector_size` and writes fixtures for every kind into `out`.
pub fn gen(sector_size: &str, out: &Path) -> Result<()> {
    let size = snarkd_prover::filecoin::parse_sector_size(sector_size)?;
    let fixtures = generate_fixtures(size, out)?;
    for path in fixtures.write(out)? {
        println!("{}", path.display());
    }
    Ok(())
}

/// The fixtures in `dir`, or those of a 2 KiB sector sealed into a temporary directory (kept
/// while the returned guard lives).
pub fn read_or_seal(dir: Option<&Path>) -> Result<(Fixtures, Option<tempfile::TempDir>)> {
    match dir {
        Some(dir) => Ok((Fixtures::read(dir)?, None)),
        None => {
            let tmp = tempfile::tempdir()?;
            eprintln!("sealing a 2 KiB fixture sector");
            Ok((generate_fixtures(2 << 10, tmp.path())?, Some(tmp)))
        }
    }
}

/// Proves each kind with our split prover and with stock bellperson; prints times and ratios.
pub fn bench(
    fixtures: Option<PathBuf>,
    params_dir: Option<PathBuf>,
    kinds: Vec<String>,
) -> Result<()> {
    let params_dir = params_dir.unwrap_or_else(snarkd_prover::default_params_dir);
    let (fixtures, _tmp) = read_or_seal(fixtures.as_deref())?;
    let kinds: Vec<ProofKind> = if kinds.is_empty() {
        vec![
            ProofKind::WinningPost,
            ProofKind::WindowPost,
            ProofKind::SnapDealsUpdate,
            ProofKind::PorepSealCommit,
        ]
    } else {
        kinds
            .iter()
            .map(|k| ProofKind::from_circuit_prefix(k))
            .collect::<Result<_, _>>()?
    };
    let size = fixtures.sector_size;
    println!(
        "{:<10} {:>5} {:>9} {:>8} {:>9} {:>7} {:>7} {:>8} {:>8} {:>9} {:>9} {:>8} {:>9} {:>11}",
        "circuit",
        "parts",
        "constr",
        "synth_s",
        "device_s",
        "fft_s",
        "msm_s",
        "partMiB",
        "peakMiB",
        "bp_synth",
        "bp_prove",
        "bp_peak",
        "dev_ratio",
        "total_ratio"
    );
    for kind in kinds {
        let job = prepare(fixtures.request(kind))?;
        let circuit = CircuitId::new(kind, size)?;
        let t = std::time::Instant::now();
        let params = load_params(&params_dir, circuit)?;
        eprintln!(
            "{circuit}: loaded {:.0} MiB of parameters in {:.2}s",
            params.size_bytes() as f64 / (1 << 20) as f64,
            t.elapsed().as_secs_f64()
        );
        let r = bench_job(&job, &params, &CpuBackend::new())?;
        let mib = |b: Option<u64>| b.unwrap_or(0) as f64 / (1 << 20) as f64;
        println!(
            "{:<10} {:>5} {:>9} {:>8.2} {:>9.2} {:>7.2} {:>7.2} {:>8.1} {:>8.0} {:>9.2} {:>9.2} {:>8.0} {:>9.2} {:>11.2}",
            r.circuit.to_string(),
            r.partitions,
            r.constraints,
            r.synthesis.as_secs_f64(),
            r.device.as_secs_f64(),
            r.fft.as_secs_f64(),
            r.msm.as_secs_f64(),
            mib(Some(r.partition_bytes)),
            mib(r.peak_rss_bytes),
            r.bellperson_synthesis.as_secs_f64(),
            r.bellperson_prove().as_secs_f64(),
            mib(r.bellperson_peak_rss_bytes),
            r.device_ratio(),
            r.total_ratio(),
        );
    }
    println!(
        "dev_ratio = our device phase / bellperson's proving phase (create_random_proof minus the \
         time inside the circuit's synthesize); total_ratio = (our synthesis + device) / \
         create_random_proof; peak = peak RSS of the process while that prover ran"
    );
    Ok(())
}
