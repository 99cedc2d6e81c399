//! OpenCL vs CPU device phase, side by side, on the same 2 KiB partitions of each proof kind
//! whose test parameters exist (`scripts/test.sh` makes them; see `snarkd_prover::test_params_dir`).
//! Also reports how long the OpenCL kernels took to build in this process. A measurement, not a
//! test: run it in release mode on an idle machine.
//!
//!   cargo run --release -p snarkd-prover --example device_bench [-- KIND...]
//!
//! KIND is winning, wpost, snap or porep (default: winning wpost). `POCL_CACHE_DIR` pointed at
//! an empty directory measures PoCL's cold kernel build.

use std::time::Instant;

use snarkd_prover::backend::opencl::list_devices;
use snarkd_prover::bench::bench_device_phase;
use snarkd_prover::fixtures::generate_fixtures;
use snarkd_prover::{
    load_params, prepare, test_params_dir, CircuitId, CpuBackend, DeviceBackend, OpenClBackend,
    OpenClOptions, ProofKind,
};

const SECTOR_2K: u64 = 2 << 10;

fn main() -> anyhow::Result<()> {
    let kinds: Vec<ProofKind> = match std::env::args().skip(1).collect::<Vec<_>>() {
        a if a.is_empty() => vec![ProofKind::WinningPost, ProofKind::WindowPost],
        a => a
            .iter()
            .map(|k| ProofKind::from_circuit_prefix(k))
            .collect::<Result<_, _>>()?,
    };
    let device = list_devices()
        .into_iter()
        .next()
        .ok_or_else(|| anyhow::anyhow!("no OpenCL device (install pocl-opencl-icd)"))?;
    println!(
        "device: {} ({}, {} compute units, {} MiB)",
        device.info.name,
        device.info.platform,
        device.info.compute_units,
        device.info.memory_bytes >> 20
    );
    let t = Instant::now();
    let opencl = OpenClBackend::new(device, OpenClOptions::default())?;
    println!("kernel build: {:.2} s", t.elapsed().as_secs_f64());
    let cpu = CpuBackend::new();

    let work = tempfile::tempdir()?;
    let fixtures = generate_fixtures(SECTOR_2K, work.path())?;
    let params_dir = test_params_dir();
    println!(
        "{:<8} {:>11} {:>10} {:>10} {:>10} {:>7}",
        "kind", "backend", "device s", "fft s", "msm s", "faults"
    );
    for kind in kinds {
        let circuit = CircuitId::new(kind, SECTOR_2K)?;
        let params = load_params(&params_dir, circuit)?;
        let job = prepare(fixtures.request(kind))?;
        // Warm-up: PoCL compiles each kernel for the device at its first launch (cached on disk).
        let t = Instant::now();
        bench_device_phase(&job, &params, &[&opencl as &dyn DeviceBackend])?;
        println!(
            "{kind}: first OpenCL run (with PoCL's per-kernel compile) {:.2} s",
            t.elapsed().as_secs_f64()
        );
        for r in bench_device_phase(&job, &params, &[&opencl, &cpu])? {
            println!(
                "{:<8} {:>11} {:>10.3} {:>10.3} {:>10.3} {:>7}",
                kind.to_string(),
                r.backend,
                r.device.as_secs_f64(),
                r.fft.as_secs_f64(),
                r.msm.as_secs_f64(),
                r.faults
            );
        }
    }
    Ok(())
}
