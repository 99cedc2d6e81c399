//! OpenCL vs CPU device phase, side by side, on the same 2 KiB partitions of each proof kind
//! whose test parameters exist (`scripts/test.sh` makes them; see `snarkd_prover::test_params_dir`).
//! Also reports how long the OpenCL kernels took to build in this process. A measurement, not a
//! test: run it in release mode on an idle machine.
//!
//!   cargo run --release -p snarkd-prover --example device_bench [-- KIND...]
//!
//! KIND is winning, wpost, snap or porep (default: winning wpost). `POCL_CACHE_DIR` pointed at
//! an empty directory measures PoCL's cold kernel build.
//!
//! Measured on the development machine (2 cores, no GPU; PoCL 3.1's CPU device; other builds
//! running, so ±30 %), dev profile (dependencies and this crate at opt-level 3), seconds of
//! device phase for the same partition, second run:
//!
//! | kind (2 KiB)  | backend         | device | FFT  | MSM  |
//! |---------------|-----------------|--------|------|------|
//! | WinningPoSt   | OpenCL on PoCL  | 64.3   | 5.5  | 58.9 |
//! | WinningPoSt   | CPU             | 6.7    | 0.72 | 6.0  |
//! | WindowPoSt    | OpenCL on PoCL  | 30.1   | 2.3  | 27.8 |
//! | WindowPoSt    | CPU             | 2.9    | 0.29 | 2.6  |
//!
//! PoCL runs the GPU kernels on the same two cores about 8–10× slower than blst's assembly: it
//! checks the kernels, it says nothing about GPU speed. Kernel build: `clBuildProgram` 1.6 s
//! cold, 0.1 s from PoCL's cache; with the per-kernel compile at first launch, all kernels cost
//! about 4 s cold. It takes the first GPU listed, else the first device. On an H200 machine
//! (PoCL on 16 cores against the CPU backend there, and the kernels' 160 s build on the H200):
//! `bench-client/BENCHMARKS.md`; no device-phase figure of a GPU yet.

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
            .map(|k| ProofKind::from_short(k))
            .collect::<Result<_, _>>()?,
    };
    // A GPU where there is one: PoCL's CPU device is listed too where it is installed.
    let devices = list_devices();
    let device = (devices.iter().find(|d| d.info.kind == "gpu"))
        .or(devices.first())
        .cloned()
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
