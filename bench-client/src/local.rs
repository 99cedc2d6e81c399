//! The in-process subcommands: `gen` seals a sector and writes fixtures, `bench` times our split
//! prover against stock bellperson for each kind (no daemon involved).

use std::path::{Path, PathBuf};

use anyhow::Result;
use snarkd_prover::bench::{bench_job, bench_synthesis};
use snarkd_prover::filecoin::blank::record_matrices;
use snarkd_prover::fixtures::{generate_fixtures, Fixtures};
use snarkd_prover::params::precompiled::matrices_file;
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

/// Real inputs and their parameters, for the commands that prove them on daemons they start.
#[derive(clap::Args)]
pub struct RealInputs {
    /// Parameter directory with the parameters of the kinds run (2 KiB test parameters work).
    #[arg(long)]
    pub params_dir: PathBuf,
    /// Fixtures written by `gen`; a 2 KiB sector is sealed when omitted.
    #[arg(long)]
    pub fixtures: Option<PathBuf>,
}

impl RealInputs {
    /// The fixtures (see [`read_or_seal`]).
    pub fn read(&self) -> Result<(Fixtures, Option<tempfile::TempDir>)> {
        read_or_seal(self.fixtures.as_deref())
    }
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
/// Then (unless `synthesis_runs` is 0) times synthesis alone: stock bellperson, our recording
/// path and the pre-compiled path, on one thread and on all, with the matrices' figures.
pub fn bench(
    fixtures: Option<PathBuf>,
    params_dir: Option<PathBuf>,
    kinds: Vec<String>,
    synthesis_runs: usize,
    synthesis_only: bool,
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
            .map(|k| ProofKind::from_short(k))
            .collect::<Result<_, _>>()?
    };
    let size = fixtures.sector_size;
    if synthesis_runs > 0 {
        synthesis(&fixtures, &params_dir, &kinds, synthesis_runs)?;
    }
    if synthesis_only {
        return Ok(());
    }
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
        let job = prepare(&fixtures.request(kind))?;
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

/// The synthesis table: per kind and thread count, the median over `runs` of each path's
/// synthesis of all partitions, per partition; and the matrices' record time and sizes.
fn synthesis(
    fixtures: &Fixtures,
    params_dir: &Path,
    kinds: &[ProofKind],
    runs: usize,
) -> Result<()> {
    let all = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut threads = vec![1, all];
    threads.dedup();
    let scratch = tempfile::tempdir()?;
    println!(
        "{:<10} {:>9} {:>9} {:>10} {:>8} {:>10} {:>10} {:>7} {:>8} {:>10} {:>10} {:>10} {:>10}",
        "circuit",
        "constr",
        "terms",
        "record_s",
        "ramMiB",
        "diskMiB",
        "threads",
        "bp_s",
        "ours_s",
        "precomp_s",
        "pre/bp",
        "native_s",
        "nat/bp"
    );
    for &kind in kinds {
        let job = prepare(&fixtures.request(kind))?;
        let circuit = CircuitId::new(kind, fixtures.sector_size)?;
        let params = load_params(params_dir, circuit)?;
        let t = std::time::Instant::now();
        let matrices = record_matrices(circuit)?;
        let record = t.elapsed();
        let file = matrices_file(scratch.path(), circuit);
        let disk = file.write(&matrices)?;
        let mib = |b: u64| b as f64 / (1 << 20) as f64;
        for &n in &threads {
            let r = bench_synthesis(&job, &params, &matrices, n, runs)?;
            let per = |d: std::time::Duration| d.as_secs_f64() / r.partitions as f64;
            println!(
                "{:<10} {:>9} {:>9} {:>10.2} {:>8.1} {:>10.1} {:>10} {:>7.3} {:>8.3} {:>10.3} {:>10.2} {:>10.3} {:>10.2}",
                circuit.to_string(),
                matrices.num_constraints(),
                matrices.num_terms(),
                record.as_secs_f64(),
                mib(matrices.size_bytes()),
                mib(disk),
                n,
                per(r.bellperson),
                per(r.recording),
                per(r.precompiled),
                r.precompiled_ratio(),
                per(r.native),
                r.native_ratio(),
            );
        }
    }
    println!(
        "synthesis per partition, median of {runs} runs: bp = stock bellperson (inside \
         create_random_proof), ours = our recording constraint system, precomp = witness pass + \
         sparse products from the pre-compiled matrices, native = the native witness + the same \
         products; record = recording the matrices from the blank circuit\n"
    );
    Ok(())
}
