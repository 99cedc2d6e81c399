//! The Groth16 setup of local test parameters (`snarkd params generate`): bellperson's
//! `generate_random_parameters` against ours (`params/setup.rs`) on the same 2 KiB blank circuit,
//! alternating, each on all cores. Prints each run and the ratio of the best times.
//!
//! `cargo bench -p snarkd-prover --features bench --bench setup -- [porep|snap|wpost|winning …]`
//! (default `winning wpost`: bellperson takes about 7–14 min for snap and 10–25 min for porep
//! on two cores); `SNARKD_BENCH_RUNS` pairs (default 2).

use std::time::Duration;

use snarkd_prover::bench::bench_setup;
use snarkd_prover::{CircuitId, ProofKind};

fn main() -> anyhow::Result<()> {
    let runs: usize = std::env::var("SNARKD_BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2);
    // `cargo bench` passes `--bench`; every other argument names a kind.
    let mut kinds: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    if kinds.is_empty() {
        kinds = vec!["winning".into(), "wpost".into()];
    }
    println!(
        "| circuit | bellperson (best of {runs}) | ours (best of {runs}) | ours / bellperson |"
    );
    println!("|---|---|---|---|");
    for name in kinds {
        let kind = ProofKind::from_short(&name)?;
        let circuit = CircuitId::new(kind, 2048)?;
        let (mut theirs, mut ours) = (Duration::MAX, Duration::MAX);
        for run in 1..=runs {
            let b = bench_setup(circuit)?;
            eprintln!(
                "{circuit} run {run}: bellperson {:.2} s, ours {:.2} s",
                b.bellperson.as_secs_f64(),
                b.ours.as_secs_f64()
            );
            theirs = theirs.min(b.bellperson);
            ours = ours.min(b.ours);
        }
        println!(
            "| {circuit} | {:.2} s | {:.2} s | {:.3} |",
            theirs.as_secs_f64(),
            ours.as_secs_f64(),
            ours.as_secs_f64() / theirs.as_secs_f64()
        );
    }
    Ok(())
}
