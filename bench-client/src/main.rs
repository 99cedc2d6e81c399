//! `snarkd-bench`: generates real request fixtures for every proof kind and benchmarks the
//! snarkd prover against stock bellperson. A thin CLI over `snarkd_prover::{fixtures, bench}`.
//!
//! ```text
//! snarkd-bench gen   --sector-size 2KiB --out DIR
//! snarkd-bench bench [--fixtures DIR] [--params-dir DIR] [--kind porep|snap|wpost|winning]...
//! ```

use std::path::PathBuf;

use anyhow::Result;
use clap::{Parser, Subcommand};
use snarkd_prover::bench::bench_job;
use snarkd_prover::fixtures::{generate_fixtures, Fixtures};
use snarkd_prover::{load_params, prepare, CircuitId, CpuBackend, ProofKind};

#[derive(Parser)]
#[command(
    name = "snarkd-bench",
    about = "Fixtures and benchmarks for the snarkd prover"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Seal a random sector and write real inputs for all four proof kinds plus a manifest.
    Gen {
        /// Sector size: 2KiB (tests), 8MiB, 512MiB, 32GiB, 64GiB (sealing these takes long).
        #[arg(long, default_value = "2KiB")]
        sector_size: String,
        /// Output directory (created if missing).
        #[arg(long)]
        out: PathBuf,
    },
    /// Prove each kind with our split prover and with stock bellperson; print times and ratios.
    Bench {
        /// Fixtures written by `gen`; generated into a temporary directory when omitted.
        #[arg(long)]
        fixtures: Option<PathBuf>,
        /// Parameter directory [default: $FIL_PROOFS_PARAMETER_CACHE or /var/tmp/filecoin-proof-parameters].
        #[arg(long)]
        params_dir: Option<PathBuf>,
        /// Kinds to run (default: all four).
        #[arg(long = "kind")]
        kinds: Vec<String>,
    },
}

fn main() -> Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .init();
    match Cli::parse().cmd {
        Cmd::Gen { sector_size, out } => {
            let size = snarkd_prover::filecoin::parse_sector_size(&sector_size)?;
            let fixtures = generate_fixtures(size, &out)?;
            for path in fixtures.write(&out)? {
                println!("{}", path.display());
            }
        }
        Cmd::Bench {
            fixtures,
            params_dir,
            kinds,
        } => {
            let params_dir = params_dir.unwrap_or_else(snarkd_prover::default_params_dir);
            let (fixtures, _tmp) = match fixtures {
                Some(dir) => (Fixtures::read(&dir)?, None),
                None => {
                    let tmp = tempfile::tempdir()?;
                    (generate_fixtures(2 << 10, tmp.path())?, Some(tmp))
                }
            };
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
                "{:<10} {:>5} {:>10} {:>9} {:>9} {:>8} {:>8} {:>10} {:>11} {:>9} {:>9} {:>11}",
                "circuit",
                "parts",
                "constr",
                "synth_s",
                "device_s",
                "fft_s",
                "msm_s",
                "partMiB",
                "peakRSSMiB",
                "bellp_s",
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
                let mib = |b: u64| b as f64 / (1 << 20) as f64;
                println!(
                    "{:<10} {:>5} {:>10} {:>9.2} {:>9.2} {:>8.2} {:>8.2} {:>10.1} {:>11.0} {:>9.2} {:>9.2} {:>11.2}",
                    r.circuit.to_string(),
                    r.partitions,
                    r.constraints,
                    r.synthesis.as_secs_f64(),
                    r.device.as_secs_f64(),
                    r.fft.as_secs_f64(),
                    r.msm.as_secs_f64(),
                    mib(r.partition_bytes),
                    r.peak_rss_bytes.map_or(0.0, mib),
                    r.bellperson_total.as_secs_f64(),
                    r.device_ratio(),
                    r.total_ratio(),
                );
            }
            println!("dev_ratio = our device phase / (bellperson create_random_proof - our synthesis time); total_ratio = (our synthesis + device) / bellperson");
        }
    }
    Ok(())
}
