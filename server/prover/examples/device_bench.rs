//! The device phase side by side on the same 2 KiB partitions of each proof kind whose test
//! parameters exist (`scripts/test.sh` makes them; see `snarkd_prover::test_params_dir`): the
//! OpenCL path as it was before the device-resident plan (`opencl-before`: bases and gathered
//! scalars copied up every step, ec-gpu-gen's multiexp, a wait after every launch), the current
//! OpenCL path on the circuit's first partition (`opencl-first`: its bases go up) and on a later
//! one (`opencl`: bases kept on the device), and the CPU backend. Then one multiexp of a real
//! witness's A scalars (the 2 KiB PoRep's, repeated to `--msm-terms`): before, the current
//! split with the bases streamed and kept, and blst on the CPU. Every row has the bytes each way,
//! launches and host waits, which check a design on any machine; the times only on this one.
//! A measurement, not a test: run it in release mode on an idle machine.
//!
//!   cargo run --release -p snarkd-prover --features bench --example device_bench -- \
//!       [--json] [--msm-terms N] [--msm-chunk N] [--limbs 32|64] [--skip-before] [KIND...]
//!
//! `--msm-chunk N` caps the multiexp's chunks at N terms (`msm_a_<terms>_chunk_<N>` rows), so
//! that a step of several chunks, as a card short of memory runs it, is measured anywhere.
//! KIND is winning, wpost, snap or porep (default: winning porep). `--json` prints one JSON
//! object a row (bench, circuit, shape, path, device, step, seconds, bytes_up, bytes_down,
//! launches, host_waits, idle_waits, point_additions). Figures: `bench-client/BENCHMARKS.md`,
//! "The device phase".

use std::time::Instant;

use blstrs::{G1Affine, Scalar as Fr};
use group::Curve;
use snarkd_prover::backend::opencl::{kernel_cache_from_env, preferred_device, LimbBits};
use snarkd_prover::bench::{bench_device_phase, DevicePath};
use snarkd_prover::fixtures::generate_fixtures;
use snarkd_prover::groth16::{msm_g1, DeviceCounters, Randomness, ScalarBytes};
use snarkd_prover::{
    load_params, prepare, test_params_dir, CircuitId, CpuBackend, DeviceBackend, LoadedParams,
    OpenClBackend, OpenClOptions, ProofKind, SynthesizedPartition,
};

const SECTOR_2K: u64 = 2 << 10;

struct Args {
    json: bool,
    msm_terms: usize,
    msm_chunk: Option<usize>,
    limbs: LimbBits,
    before: bool,
    kinds: Vec<ProofKind>,
}

fn args() -> anyhow::Result<Args> {
    let mut a = Args {
        json: false,
        msm_terms: 1 << 20,
        msm_chunk: None,
        limbs: LimbBits::L64,
        before: true,
        kinds: Vec::new(),
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--json" => a.json = true,
            "--skip-before" => a.before = false,
            "--msm-terms" => a.msm_terms = it.next().unwrap_or_default().parse()?,
            "--msm-chunk" => a.msm_chunk = Some(it.next().unwrap_or_default().parse()?),
            "--limbs" => {
                a.limbs = match it.next().as_deref() {
                    Some("32") => LimbBits::L32,
                    Some("64") => LimbBits::L64,
                    other => anyhow::bail!("--limbs takes 32 or 64, not {other:?}"),
                }
            }
            kind => a.kinds.push(ProofKind::from_short(kind)?),
        }
    }
    if a.kinds.is_empty() {
        a.kinds = vec![ProofKind::WinningPost, ProofKind::PorepSealCommit];
    }
    Ok(a)
}

/// One output row.
struct Row<'a> {
    bench: &'a str,
    circuit: String,
    path: &'a str,
    device: &'a str,
    step: &'a str,
    seconds: f64,
    counters: DeviceCounters,
}

impl Row<'_> {
    fn print(&self, json: bool) {
        let c = &self.counters;
        if json {
            println!(
                "{}",
                serde_json::json!({
                    "bench": self.bench, "circuit": self.circuit, "shape": "2KiB",
                    "path": self.path, "device": self.device, "step": self.step,
                    "seconds": self.seconds, "bytes_up": c.bytes_to_device,
                    "bytes_down": c.bytes_from_device, "launches": c.launches,
                    "host_waits": c.host_waits, "idle_waits": c.idle_waits, "point_additions": c.point_additions,
                })
            );
        } else {
            println!(
                "{:<12} {:<11} {:<14} {:<6} {:>9.3} {:>14} {:>12} {:>9} {:>7} {:>5} {:>12}",
                self.bench,
                self.circuit,
                self.path,
                self.step,
                self.seconds,
                c.bytes_to_device,
                c.bytes_from_device,
                c.launches,
                c.host_waits,
                c.idle_waits,
                c.point_additions
            );
        }
    }
}

fn main() -> anyhow::Result<()> {
    let args = args()?;
    let device = preferred_device()
        .ok_or_else(|| anyhow::anyhow!("no OpenCL device (install pocl-opencl-icd)"))?;
    let name = format!("{} ({})", device.info.name, device.info.platform);
    let options = OpenClOptions {
        limbs: args.limbs,
        kernel_cache: kernel_cache_from_env(),
        ..OpenClOptions::default()
    };
    let t = Instant::now();
    // The warm-up backend runs the first kind once first (PoCL compiles each kernel at its
    // first launch); the measured one starts with nothing on the device.
    let warm = OpenClBackend::new(device.clone(), options.clone())?;
    let build_s = t.elapsed().as_secs_f64();
    let opencl = OpenClBackend::new(device.clone(), options.clone())?;
    // The multiexp's own backend where its chunks are capped.
    let chunked = match args.msm_chunk {
        Some(terms) => Some(OpenClBackend::new(
            device,
            OpenClOptions {
                max_chunk_terms: terms,
                ..options
            },
        )?),
        None => None,
    };
    let msm_on = chunked.as_ref().unwrap_or(&opencl);
    let cpu = CpuBackend::new();
    if !args.json {
        println!(
            "device: {name}; kernel build {build_s:.2} s ({:?} limbs)",
            args.limbs
        );
        println!(
            "{:<12} {:<11} {:<14} {:<6} {:>9} {:>14} {:>12} {:>9} {:>7} {:>5} {:>12}",
            "bench",
            "circuit",
            "path",
            "step",
            "seconds",
            "bytes up",
            "bytes down",
            "launches",
            "waits",
            "idle",
            "additions"
        );
    }

    let work = tempfile::tempdir()?;
    let fixtures = generate_fixtures(SECTOR_2K, work.path())?;
    let params_dir = test_params_dir();
    let mut warmed = false;
    for &kind in &args.kinds {
        let circuit = CircuitId::new(kind, SECTOR_2K)?;
        let params = load_params(&params_dir, circuit)?;
        let job = prepare(&fixtures.request(kind))?;
        let warm_up = |p: SynthesizedPartition, params: &LoadedParams| {
            warm.prove(p, params, Randomness::random(), &mut |_| {})
        };
        let current = |p: SynthesizedPartition, params: &LoadedParams| {
            opencl.prove(p, params, Randomness::random(), &mut |_| {})
        };
        let on_cpu = |p: SynthesizedPartition, params: &LoadedParams| {
            cpu.prove(p, params, Randomness::random(), &mut |_| {})
        };
        let before = |p: SynthesizedPartition, params: &LoadedParams| {
            opencl.prove_legacy(p, params, Randomness::random())
        };
        // Once: the kernels are the same for every circuit.
        if !warmed {
            bench_device_phase(&job, &params, &[("warm-up", &warm_up)])?;
            warmed = true;
        }
        let mut paths: Vec<(&str, DevicePath<'_>)> = Vec::new();
        if args.before {
            paths.push(("opencl-before", &before));
        }
        paths.extend([
            ("opencl-first", &current as DevicePath<'_>),
            ("opencl", &current),
            ("cpu", &on_cpu),
        ]);
        for r in bench_device_phase(&job, &params, &paths)? {
            for (step, seconds) in [
                ("total", r.device.as_secs_f64()),
                ("fft", r.fft.as_secs_f64()),
                ("msm", r.msm.as_secs_f64()),
            ] {
                let counters = match step {
                    "total" => r.counters,
                    _ => DeviceCounters::default(),
                };
                Row {
                    bench: "device_phase",
                    circuit: circuit.to_string(),
                    path: &r.path,
                    device: if r.path == "cpu" { "cpu" } else { &name },
                    step,
                    seconds,
                    counters,
                }
                .print(args.json);
            }
        }
    }

    // One multiexp of a real witness's A scalars.
    let kind = ProofKind::PorepSealCommit;
    let circuit = CircuitId::new(kind, SECTOR_2K)?;
    let params = load_params(&params_dir, circuit)?;
    let partition = prepare(&fixtures.request(kind))?.synthesize(0)?;
    let (inputs, aux) = partition.witness();
    let (a_aux, _, _) = partition.densities();
    let a: Vec<Fr> = inputs
        .iter()
        .copied()
        .chain(a_aux.ones().map(|i| aux[i]))
        .collect();
    let n = args.msm_terms;
    let scalars: Vec<Fr> = a.iter().copied().cycle().take(n).collect();
    let bases: Vec<G1Affine> = params
        .parameters()
        .a
        .iter()
        .copied()
        .cycle()
        .take(n)
        .collect();
    let ones = scalars.iter().filter(|s| **s == Fr::from(1u64)).count();
    let zeros = scalars
        .iter()
        .filter(|s| bool::from(ff::Field::is_zero(*s)))
        .count();
    if !args.json {
        println!(
            "multiexp: {n} terms of the PoRep 2 KiB A query (its {} repeated): {zeros} zeros, {ones} ones",
            a.len()
        );
    }
    let want = {
        let t = Instant::now();
        let sum = msm_g1(&bases, ScalarBytes::dense(&scalars).view()).to_affine();
        (sum, t.elapsed().as_secs_f64())
    };
    let mut runs: Vec<(&str, f64, DeviceCounters)> = Vec::new();
    if args.before {
        warm.msm_g1_legacy(&bases, &scalars)?;
        let t = Instant::now();
        let (sum, c) = opencl.msm_g1_legacy(&bases, &scalars)?;
        anyhow::ensure!(
            sum.to_affine() == want.0,
            "the old multiexp differs from blst's"
        );
        runs.push(("opencl-before", t.elapsed().as_secs_f64(), c));
    }
    for (path, resident) in [("opencl-streamed", false), ("opencl-kept", true)] {
        warm.msm_g1(&bases, &scalars, resident)?;
        if chunked.is_some() {
            msm_on.msm_g1(&bases, &scalars, resident)?;
        }
        let t = Instant::now();
        let (sum, c) = msm_on.msm_g1(&bases, &scalars, resident)?;
        anyhow::ensure!(sum.to_affine() == want.0, "{path} differs from blst's");
        runs.push((path, t.elapsed().as_secs_f64(), c));
    }
    runs.push(("cpu", want.1, DeviceCounters::default()));
    let bench = match args.msm_chunk {
        Some(c) => format!("msm_a_{n}_chunk_{c}"),
        None => format!("msm_a_{n}"),
    };
    for (path, seconds, counters) in runs {
        Row {
            bench: &bench,
            circuit: circuit.to_string(),
            path,
            device: if path == "cpu" { "cpu" } else { &name },
            step: "msm",
            seconds,
            counters,
        }
        .print(args.json);
    }
    Ok(())
}
