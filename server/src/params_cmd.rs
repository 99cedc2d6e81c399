//! `snarkd params generate` (local test parameters, then the pre-compiled circuits) and
//! `snarkd params precompile` (the pre-compiled circuits of parameters already there). Each
//! long phase shows a progress bar with its name and expected time on a terminal, and a plain
//! line when it starts, every minute and when it ends otherwise.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::Context;
use indicatif::{ProgressBar, ProgressStyle};
use snarkd_prover::filecoin::{estimate, parse_sector_size};
use snarkd_prover::params::precompiled::{matrices_file, MatricesPlace};
use snarkd_prover::{CircuitId, ProofKind};

use crate::cli::CircuitsArgs;

/// `snarkd params generate`: local test parameters, skipping files that already exist, then
/// each circuit's pre-compiled matrices.
pub fn generate(args: CircuitsArgs) -> anyhow::Result<()> {
    warnings_to_stderr();
    let (dir, circuits) = circuits(args)?;
    eprintln!(
        "generating LOCAL TEST parameters in {}: they verify only against their own .vk files, never on chain",
        dir.display()
    );
    for circuit in circuits {
        let (params_path, _) = snarkd_prover::params::params_paths(&dir, circuit);
        if params_path.exists() {
            println!(
                "{circuit} parameters already present: {}",
                params_path.display()
            );
        } else {
            let started = Instant::now();
            let shown = format!("{circuit}: Groth16 setup");
            let made = in_phase(&shown, setup_estimate(circuit), || {
                snarkd_prover::generate_params(&dir, circuit.sector_size(), &[circuit.kind()])
            })?;
            for p in made {
                let what = if p.generated {
                    "generated"
                } else {
                    "already present"
                };
                println!(
                    "{} parameters {what} in {:.1}s: {}",
                    p.circuit,
                    started.elapsed().as_secs_f64(),
                    p.params_path.display()
                );
            }
        }
        precompile_one(&dir, circuit)?;
    }
    Ok(())
}

/// `snarkd params precompile`: the pre-compiled matrices of circuits whose parameters are in the
/// directory (valid files are kept, others recorded again).
pub fn precompile(args: CircuitsArgs) -> anyhow::Result<()> {
    warnings_to_stderr();
    let (dir, circuits) = circuits(args)?;
    for circuit in circuits {
        precompile_one(&dir, circuit)?;
    }
    Ok(())
}

/// Warnings and errors (a file that could not be written, matrices recorded again) on stderr.
fn warnings_to_stderr() {
    crate::telemetry::init_logging(&crate::config::LoggingSection {
        level: "warn".into(),
        ..Default::default()
    });
}

fn circuits(args: CircuitsArgs) -> anyhow::Result<(PathBuf, Vec<CircuitId>)> {
    let sector_size = parse_sector_size(&args.sector_size)?;
    let kinds = if args.kinds.is_empty() {
        ProofKind::ALL.to_vec()
    } else {
        args.kinds
            .iter()
            .map(|k| ProofKind::from_short(k))
            .collect::<Result<_, _>>()?
    };
    let circuits = kinds
        .into_iter()
        .map(|k| CircuitId::new(k, sector_size))
        .collect::<Result<_, _>>()?;
    Ok((
        args.dir.unwrap_or_else(snarkd_prover::default_params_dir),
        circuits,
    ))
}

fn precompile_one(dir: &Path, circuit: CircuitId) -> anyhow::Result<()> {
    let file = matrices_file(dir, circuit);
    let started = Instant::now();
    let shown = format!("{circuit}: loading parameters and pre-compiling the circuit");
    let loaded = in_phase(&shown, record_estimate(dir, circuit), || {
        snarkd_prover::load_params_with(dir, circuit, Some(MatricesPlace::dir(dir)))
    })
    .with_context(|| format!("loading the parameters of {circuit}"))?;
    let m = loaded.precompiled().with_context(|| {
        format!("{circuit}: no pre-compiled circuit could be made (see the log above)")
    })?;
    println!(
        "{circuit} pre-compiled circuit ready in {:.1}s: {} constraints, {} terms, {} in memory, {}",
        started.elapsed().as_secs_f64(),
        m.num_constraints(),
        m.num_terms(),
        bytesize::ByteSize::b(m.size_bytes()),
        file.path.display()
    );
    Ok(())
}

/// Rough time of a local Groth16 setup, from the circuit's size (measured at 2 KiB on two cores:
/// about 62 µs per constraint, spread over the cores; PoRep 84 s, SnapDeals 50 s).
fn setup_estimate(circuit: CircuitId) -> Duration {
    let constraints = estimate::shape(circuit.kind(), circuit.sector_size()).constraints as f64;
    Duration::from_secs_f64(2.0 + constraints * 62e-6 / cores())
}

/// Rough time of loading the parameters (about 120 MB/s of their file, measured at 2 KiB) and
/// recording the matrices (about one synthesis: 0.6 µs a constraint).
fn record_estimate(dir: &Path, circuit: CircuitId) -> Duration {
    let constraints = estimate::shape(circuit.kind(), circuit.sector_size()).constraints as f64;
    let (params, _) = snarkd_prover::params::params_paths(dir, circuit);
    let bytes = std::fs::metadata(params).map_or(0, |m| m.len()) as f64;
    Duration::from_secs_f64(1.0 + bytes / 120e6 + constraints * 0.6e-6)
}

fn cores() -> f64 {
    std::thread::available_parallelism().map_or(1, |n| n.get()) as f64
}

/// Runs `work` on a thread of its own while this one reports progress against `expected`.
fn in_phase<T: Send>(name: &str, expected: Duration, work: impl FnOnce() -> T + Send) -> T {
    let started = Instant::now();
    let terminal = std::io::stderr().is_terminal();
    let bar = terminal.then(|| {
        let bar = ProgressBar::new(expected.as_secs().max(1));
        bar.set_style(
            ProgressStyle::with_template(
                "{msg} [{bar:30}] {elapsed_precise} of about {len}s expected",
            )
            .expect("a valid template")
            .progress_chars("=> "),
        );
        bar.set_message(name.to_string());
        bar
    });
    if !terminal {
        eprintln!("{name}: started (about {} expected)", minutes(expected));
    }
    let done = std::thread::scope(|s| {
        let worker = s.spawn(work);
        let mut last_line = Instant::now();
        while !worker.is_finished() {
            std::thread::sleep(Duration::from_millis(200));
            let elapsed = started.elapsed();
            match &bar {
                // Held just short of the end until the work is done.
                Some(bar) => bar.set_position(elapsed.as_secs().min(bar.length().unwrap_or(1) - 1)),
                None if last_line.elapsed() >= Duration::from_secs(60) => {
                    eprintln!(
                        "{name}: {} of about {}",
                        minutes(elapsed),
                        minutes(expected)
                    );
                    last_line = Instant::now();
                }
                None => {}
            }
        }
        match worker.join() {
            Ok(done) => done,
            Err(panic) => std::panic::resume_unwind(panic),
        }
    });
    match bar {
        Some(bar) => bar.finish_and_clear(),
        None => eprintln!("{name}: done in {}", minutes(started.elapsed())),
    }
    done
}

/// A duration to the second, as humantime writes it ("1m 25s").
fn minutes(d: Duration) -> String {
    humantime::format_duration(Duration::from_secs(d.as_secs())).to_string()
}
