//! PoRep label hashes (SHA-256 over 1,248 bytes and the packing, as `create_label_circuit`)
//! through bellperson's gadgets on its witness-only constraint system vs natively
//! (`synthesis::native`): time per label, median of the runs. A measurement, not a test.
//!
//!   cargo run -p snarkd-prover --features bench --example native_label [-- LABELS RUNS]
//!
//! Defaults: 20 labels, 5 runs.
//!
//! Measured on the development machine (2 cores, other builds running, so noisy), dev profile
//! (this crate and its dependencies at opt-level 3), per label: gadgets 167–256 ms, native
//! 11–16 ms, native 15–20× faster.

use snarkd_prover::bench::bench_native_label;

fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1).map(|a| a.parse::<usize>());
    let labels = args.next().transpose()?.unwrap_or(20);
    let runs = args.next().transpose()?.unwrap_or(5);
    let bench = bench_native_label(labels, runs)?;
    let ms = |d: std::time::Duration| d.as_secs_f64() * 1e3;
    println!(
        "{labels} labels x {runs} runs, per label: gadgets {:.2} ms, native {:.2} ms, \
         native/gadgets {:.3} ({:.1}x faster)",
        ms(bench.gadget),
        ms(bench.native),
        bench.ratio(),
        1.0 / bench.ratio().max(1e-9),
    );
    Ok(())
}
