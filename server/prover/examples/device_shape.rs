//! The device phase of one production-shaped partition: a synthetic partition circuit (seeded
//! random values, `filecoin::synthetic`) synthesized the pre-compiled way at COUNT challenges or
//! sectors, once (every run proves a copy of it), and made-up parameters of its exact counts
//! (`params::made_up`: no parameter files needed, generated in seconds), proved on the first GPU
//! (else the first OpenCL device): the circuit's first partition on the device (its bases go
//! up), then a later one (they are kept), `--repeat N` times. Each step (the H polynomial, every
//! multiexp range) is timed at its boundary; the `total` rows carry the bytes each way,
//! launches, host waits and the time the partition's interval ended (`at`, for joining with
//! the device's own readings), every row the limb width. The proofs cannot verify (made-up parameters)
//! and are not checked. A measurement, not a test.
//!
//!   cargo run --release -p snarkd-prover --features bench --example device_shape -- \
//!       KIND SIZE COUNT [--json] [--cpu] [--limbs 32|64] [--groups N,N,...] [--repeat N]
//!       [--workers N|auto] [--streamed] [--b-g2-cpu] [--before] [--seed N]
//!
//! The rows come in the order they matter, so that a run cut short keeps the first ones:
//! - `--groups` proves the partition (first, then later) for each count of multiexp work groups
//!   per compute unit in turn (0, the default, is the device's choice), one backend at a time
//!   so only one holds the bases; every row says the groups it ran with. The next two run at
//!   the first count only, right after its rows.
//! - `--b-g2-cpu` times B's G2 multiexp alone on the CPU's threads (the `cpu` `b_g2` row: its
//!   scalars gathered, then blst's multiexp), against the `opencl` rows' `b_g2` step, then
//!   proves the partition twice with it there, beside the G1 multiexps (`[gpus] b_g2 = "cpu"`:
//!   the `opencl-b2cpu-first` and `opencl-b2cpu` rows, whose bases go up without B's G2 ones
//!   and whose last G1 step ends when the CPU's multiexp has too).
//! - `--before` proves it the way the device phase ran before the device-resident plan
//!   (`opencl-before`, as `device_bench`'s: ec-gpu-gen's own multiexp kernel, the one
//!   bellperson's GPU prover runs, over scalars gathered on the host and bases copied up every
//!   step, h read back): its FFT and multiexp totals, no step times.
//! - After all the group counts: `--workers N` (default 1; `auto`: what the daemon's "auto" gives
//!   the device) builds a backend of N workers, as the daemon runs them on a device (`[gpus]
//!   workers_per_device`), proves one partition on it (`opencl-xN-first`: its bases go up) and
//!   then N copies at once, one a thread: the `opencl-xN` row is their wall time and summed
//!   counts (N times the single `opencl` partition's total over it is what a second worker
//!   gains). `--streamed` proves one partition on a backend that keeps no bases (`[gpus]
//!   keep_params = false`, as a card without the room for them runs): the `opencl-streamed`
//!   rows, every chunk's bases copied up through pinned memory while the chunk before
//!   computes. `--cpu` proves it on the CPU backend last.
//!
//! e.g. `porep 32GiB 18` is a whole production PoRep partition (about 130 M constraints: some
//! 12 GB of host memory a copy of the partition and 47 GB for the bases; a 16-core, 128 GiB GPU
//! box runs it); `porep 2KiB 2` rehearses it anywhere. `scripts/gpu-check.sh` runs it.

use std::time::Instant;

use snarkd_prover::backend::opencl::{
    default_workers, groups_per_unit, kernel_cache_from_env, preferred_device, LimbBits,
};
use snarkd_prover::filecoin::synthetic::synthesize_partition;
use snarkd_prover::filecoin::{parse_sector_size, sector_size_name, ProofKind};
use snarkd_prover::groth16::{
    msm_g2, DeviceCounters, G2On, PhaseHooks, Query, Randomness, ScalarBytes,
};
use snarkd_prover::params::made_up::made_up_params;
use snarkd_prover::{CircuitId, CpuBackend, DeviceBackend, OpenClBackend, OpenClOptions};

/// Hooks that note the time of every step boundary.
struct Clock {
    marks: Vec<Instant>,
}

impl PhaseHooks for Clock {
    fn abc_released(&mut self, _bytes: u64) {}
    fn step_done(&mut self) {
        self.marks.push(Instant::now());
    }
}

fn main() -> anyhow::Result<()> {
    let usage = "usage: device_shape KIND SIZE COUNT [--json] [--cpu] [--limbs 32|64] \
                 [--groups N,N,...] [--repeat N] [--workers N|auto] [--streamed] [--b-g2-cpu] \
                 [--before] [--seed N]";
    let mut it = std::env::args().skip(1);
    let kind = ProofKind::from_short(&it.next().ok_or_else(|| anyhow::anyhow!(usage))?)?;
    let size = parse_sector_size(&it.next().ok_or_else(|| anyhow::anyhow!(usage))?)?;
    let count: usize = it.next().ok_or_else(|| anyhow::anyhow!(usage))?.parse()?;
    let (mut json, mut cpu, mut limbs, mut seed) = (false, false, LimbBits::L64, 1u64);
    let (mut streamed, mut b_g2_cpu, mut before) = (false, false, false);
    let mut groups = vec![0usize];
    let mut workers = "1".to_string();
    let mut repeat = 1usize;
    while let Some(a) = it.next() {
        match a.as_str() {
            "--repeat" => repeat = it.next().unwrap_or_default().parse::<usize>()?.max(1),
            "--json" => json = true,
            "--cpu" => cpu = true,
            "--streamed" => streamed = true,
            "--b-g2-cpu" => b_g2_cpu = true,
            "--before" => before = true,
            "--seed" => seed = it.next().unwrap_or_default().parse()?,
            "--workers" => workers = it.next().unwrap_or_default(),
            "--groups" => {
                groups = it
                    .next()
                    .unwrap_or_default()
                    .split(',')
                    .map(str::parse)
                    .collect::<Result<_, _>>()?
            }
            "--limbs" => {
                limbs = match it.next().as_deref() {
                    Some("32") => LimbBits::L32,
                    _ => LimbBits::L64,
                }
            }
            other => anyhow::bail!("unknown argument {other:?}; {usage}"),
        }
    }
    anyhow::ensure!(
        !groups.is_empty(),
        "--groups takes at least one count; {usage}"
    );
    let limb_bits = match limbs {
        LimbBits::L32 => 32,
        LimbBits::L64 => 64,
    };
    let circuit = CircuitId::new(kind, size)?;
    let shape = format!("{}/{count}", sector_size_name(size));

    let t = Instant::now();
    // Synthesized once: every run proves its own copy (a copy takes a fraction of a synthesis).
    let template = synthesize_partition(kind, size, count, seed, true)?;
    let synth_s = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let params = made_up_params(circuit, &template);
    let params_s = t.elapsed().as_secs_f64();
    let shape_of = (
        template.num_constraints(),
        template.num_inputs(),
        template.num_aux(),
    );

    let device = preferred_device()
        .ok_or_else(|| anyhow::anyhow!("no OpenCL device (install pocl-opencl-icd)"))?;
    let name = format!("{} ({})", device.info.name, device.info.platform);
    let p = params.parameters();
    if !json {
        println!(
            "{circuit} at {shape}: {} constraints, {} inputs, {} aux; synthesized in {synth_s:.1} s, \
             made-up parameters in {params_s:.1} s ({} bytes); {name}, {limbs:?} limbs",
            shape_of.0,
            shape_of.1,
            shape_of.2,
            params.size_bytes()
        );
        println!(
            "{:<18} {:>6} {:<10} {:>9} {:>15} {:>13} {:>9} {:>7} {:>5} {:>13}",
            "path",
            "groups",
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
    // The steps in the order the phase runs them, as its boundaries mark them.
    let step = 1usize << 24;
    let mut labels = vec!["fft".to_string()];
    for q in Query::ALL {
        let n = q.terms(p).div_ceil(step).max(1);
        for i in 0..n {
            labels.push(match n {
                1 => q.as_str().to_string(),
                _ => format!("{}[{i}]", q.as_str()),
            });
        }
    }
    let row = |path: &str, groups: usize, step: &str, seconds: f64, c: DeviceCounters| {
        if json {
            let mut line = serde_json::json!({
                    "bench": "device_shape", "circuit": circuit.to_string(), "shape": shape,
                    "path": path, "device": if path == "cpu" { "cpu" } else { &name },
                    "groups_per_unit": groups, "step": step, "seconds": seconds,
                    "bytes_up": c.bytes_to_device, "bytes_down": c.bytes_from_device,
                    "launches": c.launches, "host_waits": c.host_waits, "idle_waits": c.idle_waits,
                    "point_additions": c.point_additions, "limbs": limb_bits,
            });
            if step == "total" {
                // When the partition's interval ended (seconds since the Unix epoch; printed as
                // it ends): joins it with the device's own readings (`scripts/gpu-check.sh`'s
                // busy share).
                let at = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
                line["at"] = at.map_or(0.0, |d| d.as_secs_f64()).into();
            }
            println!("{line}");
        } else {
            println!(
                "{path:<18} {groups:>6} {step:<10} {seconds:>9.3} {:>15} {:>13} {:>9} {:>7} {:>5} {:>13}",
                c.bytes_to_device, c.bytes_from_device, c.launches, c.host_waits, c.idle_waits,
                c.point_additions
            );
        }
    };
    let run = |path: &str, backend: &dyn DeviceBackend, groups: usize| -> anyhow::Result<()> {
        let partition = template.duplicate();
        let mut clock = Clock { marks: Vec::new() };
        let start = Instant::now();
        let (_, timings) = backend.prove(partition, &params, Randomness::random(), &mut clock)?;
        let total = start.elapsed().as_secs_f64();
        let row = |step: &str, seconds: f64, c: DeviceCounters| row(path, groups, step, seconds, c);
        if path == "cpu" {
            // The CPU's steps have preemption points inside them: its totals alone.
            row("fft", timings.fft.as_secs_f64(), DeviceCounters::default());
            row("msm", timings.msm.as_secs_f64(), DeviceCounters::default());
        } else {
            let mut last = start;
            let mut marks = clock.marks.clone();
            marks.push(start + std::time::Duration::from_secs_f64(total));
            for (i, m) in marks.iter().enumerate() {
                let label = labels.get(i).map(String::as_str).unwrap_or("?");
                row(
                    label,
                    m.duration_since(last).as_secs_f64(),
                    DeviceCounters::default(),
                );
                last = *m;
            }
        }
        row("total", total, timings.counters);
        Ok(())
    };
    // `n` partitions (their own seeds, synthesized first) proved at once, one a thread: their
    // wall time and summed counts.
    let together = |backend: &OpenClBackend,
                    n: usize,
                    row: &dyn Fn(&str, f64, DeviceCounters)|
     -> anyhow::Result<()> {
        // Copies of the one partition: the device work is the same for any values.
        let partitions: Vec<_> = (0..n).map(|_| template.duplicate()).collect();
        let start = Instant::now();
        let counters = std::thread::scope(|scope| {
            let phases: Vec<_> = (partitions.into_iter())
                .map(|partition| {
                    scope.spawn(|| {
                        let mut clock = Clock { marks: Vec::new() };
                        let randomness = Randomness::random();
                        (backend.prove(partition, &params, randomness, &mut clock))
                            .map(|(_, timings)| timings.counters)
                    })
                })
                .collect();
            let mut sum = DeviceCounters::default();
            for phase in phases {
                sum += phase.join().expect("a device phase panicked")?;
            }
            anyhow::Ok(sum)
        })?;
        row("total", start.elapsed().as_secs_f64(), counters);
        Ok(())
    };
    let workers = match workers.as_str() {
        // The workers' rows keep B's G2 multiexp on the device.
        "auto" => default_workers(device.info.kind, device.info.memory_bytes, G2On::Device),
        n => n.parse::<usize>()?.max(1),
    };
    // One backend at a time: each keeps its own copy of the bases on the device.
    let backend = |asked: usize, workers: usize, keep_params: bool, b_g2: G2On| {
        OpenClBackend::new(
            device.clone(),
            OpenClOptions {
                limbs,
                groups_per_unit: asked,
                workers_per_device: workers,
                keep_params,
                kernel_cache: kernel_cache_from_env(),
                b_g2,
                ..OpenClOptions::default()
            },
        )
    };
    // The rows in the order they matter, so that a run cut short keeps the first: the
    // partition's device phase at each group count (the first group's before the others'),
    // then, at the first group count, B's G2 multiexp on the CPU, the old path, more workers
    // and streamed bases.
    for (nth, &asked) in groups.iter().enumerate() {
        let t = Instant::now();
        let opencl = backend(asked, 1, true, G2On::Device)?;
        let groups = groups_per_unit(&device.info, asked);
        if !json {
            println!(
                "{groups} work groups per compute unit: kernels {:.1} s",
                t.elapsed().as_secs_f64()
            );
        }
        run("opencl-first", &opencl, groups)?;
        for _ in 0..repeat {
            run("opencl", &opencl, groups)?;
        }
        drop(opencl);
        if nth > 0 {
            continue;
        }
        if b_g2_cpu {
            // B's G2 multiexp alone on the CPU's threads, against the `opencl` rows' b_g2 step;
            // then the partition proved with it there, beside the G1 steps on the device (the
            // last G1 step's row ends when both are done).
            let (inputs, aux) = template.witness();
            let (_, b_in, b_aux) = template.densities();
            let start = Instant::now();
            let scalars = ScalarBytes::gathered(&[(inputs, Some(b_in)), (aux, Some(b_aux))]);
            std::hint::black_box(msm_g2(&p.b_g2, scalars.view()));
            let seconds = start.elapsed().as_secs_f64();
            row("cpu", 0, "b_g2", seconds, DeviceCounters::default());
            let beside = backend(asked, 1, true, G2On::Cpu)?;
            run("opencl-b2cpu-first", &beside, groups)?;
            run("opencl-b2cpu", &beside, groups)?;
        }
        if before {
            let old = backend(asked, 1, false, G2On::Device)?;
            let start = Instant::now();
            let randomness = Randomness::random();
            let (_, timings) = old.prove_legacy(template.duplicate(), &params, randomness)?;
            let total = start.elapsed().as_secs_f64();
            let row = |step: &str, seconds: f64, c| row("opencl-before", groups, step, seconds, c);
            row("fft", timings.fft.as_secs_f64(), DeviceCounters::default());
            row("msm", timings.msm.as_secs_f64(), DeviceCounters::default());
            row("total", total, timings.counters);
        }
    }
    let first = groups[0];
    let first_groups = groups_per_unit(&device.info, first);
    if workers > 1 {
        // A backend of `workers` workers, each with its share of the pool: one partition puts
        // its bases up, then `workers` run at once.
        let opencl = backend(first, workers, true, G2On::Device)?;
        let path = format!("opencl-x{workers}");
        run(&format!("{path}-first"), &opencl, first_groups)?;
        together(&opencl, workers, &|step, seconds, c| {
            row(&path, first_groups, step, seconds, c)
        })?;
    }
    if streamed {
        // No bases kept: every partition streams them, as on a card without the room.
        let opencl = backend(first, 1, false, G2On::Device)?;
        run("opencl-streamed", &opencl, first_groups)?;
    }
    if cpu {
        run("cpu", &CpuBackend::new(), 0)?;
    }
    Ok(())
}
