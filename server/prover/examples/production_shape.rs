//! Synthesis of production-shaped partition circuits (`filecoin::synthetic`: seeded random
//! values, no parameters) at a few challenge or sector counts, and the per-challenge (or
//! per-sector) slope extrapolated to a full production partition. A measurement, not a test.
//!
//!   cargo run --release -p snarkd-prover --features bench --example production_shape -- \
//!       KIND SIZE COUNT... [--paths witness,bellperson,recording,native,precompiled,
//!       precompiled-native] [--runs N] [--seed N]
//!       [--count-full]
//!
//! KIND is porep, snap, wpost or winning; SIZE e.g. 2KiB or 32GiB; each COUNT is a number of
//! challenges (porep, snap) or sectors (PoSt). Per count, the circuit is first counted
//! (constraints, inputs, aux), then synthesized on each path: `witness`, snarkd's witness-only
//! pass (the pre-compiled path's first step, room reserved from the count); `bellperson`,
//! bellperson's own `WitnessCS`; `recording`, snarkd's plain path (witness and a/b/c); `native`,
//! snarkd's native witness (challenges or sectors in parallel, a batch per thread);
//! `precompiled` and `precompiled-native`, the whole pre-compiled synthesis (witness, then
//! a and b as sparse products and c = a∘b) from matrices recorded before the timing, with the
//! gadgets' or the native witness. Stock
//! bellperson's proving synthesis runs only inside `create_random_proof`, which needs Groth16
//! parameters, so it is not here.
//!
//! Wall time is the synthesis alone; CPU time is the process's over the run (building the
//! circuit, a small part, included; synthesis is serial except WindowPoSt's sectors). Peak RSS
//! growth is the rise of `VmHWM` over the resident set when the synthesis began (free heap
//! memory returned to the system and the counter reset then): what the synthesis holds at its
//! peak, without the circuit's inputs built before it or the pre-compiled matrices, which the
//! daemon holds once per circuit, not per partition. It is set beside the memory estimate the
//! daemon's budget charges for a synthesized partition (`estimate::estimate`). With `--runs N` each row is
//! the run of median wall time among N (the machine may be shared).
//!
//! Extrapolation: with two or more counts, value(n) = value(lo) + (n − lo)·slope, the slope
//! taken between the lowest and the highest count; with one count, value(n) = n·value(c)/c,
//! which counts the partition's fixed part n/c times. SnapDeals is not quite linear: one
//! Poseidon digest gives the bits of up to nine challenges (at 32 and 64 GiB), so counts within
//! one group of nine miss the other groups' digests (about 570 constraints each).
//! `--count-full` also counts the full partition, for its exact constraints and aux.

use snarkd_prover::bench::{peak_rss, reset_peak_rss};
use snarkd_prover::filecoin::estimate;
use snarkd_prover::filecoin::synthetic::{production_count, synthesize, Synthesis, Synthesized};
use snarkd_prover::filecoin::{parse_sector_size, sector_size_name, CircuitShape, ProofKind};

const GIB: f64 = (1u64 << 30) as f64;

/// One measured synthesis.
struct Row {
    path: &'static str,
    count: usize,
    run: Synthesized,
    /// Process CPU time over the run (building the circuit included: a small part).
    cpu: f64,
    rss_growth: Option<u64>,
}

fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let usage =
        "usage: production_shape KIND SIZE COUNT... [--paths witness,bellperson,recording] \
                 [--runs N] [--seed N] [--count-full]";
    let kind = ProofKind::from_short(&args.next().ok_or_else(|| anyhow::anyhow!(usage))?)
        .map_err(|e| anyhow::anyhow!("{e}; {usage}"))?;
    let size = parse_sector_size(&args.next().ok_or_else(|| anyhow::anyhow!(usage))?)?;
    let mut counts = Vec::new();
    let mut paths = vec!["witness", "bellperson", "recording"];
    let (mut runs, mut seed, mut count_full) = (1, 1, false);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--paths" => {
                let list = args.next().ok_or_else(|| anyhow::anyhow!(usage))?;
                paths = list
                    .split(',')
                    .map(|p| match p {
                        "witness" => Ok("witness"),
                        "bellperson" => Ok("bellperson"),
                        "recording" => Ok("recording"),
                        "native" => Ok("native"),
                        "precompiled" => Ok("precompiled"),
                        "precompiled-native" => Ok("precompiled-native"),
                        other => Err(anyhow::anyhow!("unknown path {other:?}; {usage}")),
                    })
                    .collect::<anyhow::Result<_>>()?;
            }
            "--count-full" => count_full = true,
            "--runs" => runs = args.next().ok_or_else(|| anyhow::anyhow!(usage))?.parse()?,
            "--seed" => seed = args.next().ok_or_else(|| anyhow::anyhow!(usage))?.parse()?,
            n => counts.push(n.parse::<usize>()?),
        }
    }
    if counts.is_empty() {
        anyhow::bail!(usage);
    }
    counts.sort_unstable();
    counts.dedup();

    let full = production_count(kind, size)?;
    let unit = match kind {
        ProofKind::WindowPost | ProofKind::WinningPost => "sectors",
        _ => "challenges",
    };
    println!(
        "{kind} {}: a production partition has {full} {unit}; snarkd's memory estimate assumes \
         {} constraints",
        sector_size_name(size),
        thousands(estimate::shape(kind, size).constraints as u64),
    );
    println!(
        "{:<11} {:>6} {:>9} {:>8} {:>13} {:>7} {:>13} {:>11}",
        "path", "count", "wall s", "cpu s", "constraints", "inputs", "aux", "peak RSS +"
    );
    let mut rows = Vec::new();
    for &count in &counts {
        let counted = measure("count", count, runs, || {
            synthesize(kind, size, count, seed, Synthesis::Count)
        })?;
        let shape = CircuitShape {
            constraints: counted.run.constraints.unwrap_or(0),
            aux: counted.run.aux,
            inputs: counted.run.inputs,
        };
        print_row(&counted);
        rows.push(counted);
        for &path in &paths {
            let how = match path {
                "witness" => Synthesis::Witness(shape),
                "bellperson" => Synthesis::BellpersonWitness,
                "native" => Synthesis::Native(shape),
                "precompiled" => Synthesis::Precompiled { native: false },
                "precompiled-native" => Synthesis::Precompiled { native: true },
                _ => Synthesis::Recording(shape),
            };
            let row = measure(path, count, runs, || {
                synthesize(kind, size, count, seed, how)
            })?;
            print_row(&row);
            rows.push(row);
        }
    }

    let budget = estimate::estimate(kind, size);
    println!(
        "\nsnarkd's memory estimate for one partition: synthesized {:.2} GiB (witness {:.2} GiB), \
         reserved {:.2} GiB (the device phase's peak included)",
        budget.total_bytes as f64 / GIB,
        budget.witness_bytes() as f64 / GIB,
        budget.reserve_bytes() as f64 / GIB,
    );
    println!("extrapolated to a full partition ({full} {unit}):");
    for path in std::iter::once("count").chain(paths.iter().copied()) {
        let mine: Vec<&Row> = rows.iter().filter(|r| r.path == path).collect();
        let at = |value: &dyn Fn(&Row) -> f64| extrapolate(&mine, full, value);
        let per = |value: &dyn Fn(&Row) -> f64| slope(&mine, value);
        let wall = |r: &Row| r.run.wall.as_secs_f64();
        let cpu = |r: &Row| r.cpu;
        let aux = |r: &Row| r.run.aux as f64;
        let rss = |r: &Row| r.rss_growth.unwrap_or(0) as f64;
        let mut line = format!(
            "  {path:<11} wall {:>8.1} s ({:.3} s per), cpu {:>8.1} s ({:.3} s per), aux {:>13} ({} per)",
            at(&wall),
            per(&wall),
            at(&cpu),
            per(&cpu),
            thousands(at(&aux) as u64),
            thousands(per(&aux) as u64),
        );
        if path == "count" {
            let constraints = |r: &Row| r.run.constraints.unwrap_or(0) as f64;
            line += &format!(
                ", constraints {} ({} per)",
                thousands(at(&constraints) as u64),
                thousands(per(&constraints) as u64)
            );
        } else {
            // The witness-only paths against the estimate's witness, the others against the
            // whole synthesized partition.
            let estimated = match path {
                "witness" | "bellperson" | "native" => budget.witness_bytes(),
                _ => budget.total_bytes,
            };
            line += &format!(
                ", peak RSS growth {:.2} GiB ({:.1} MiB per; {:.2}× the estimate's {:.2} GiB)",
                at(&rss) / GIB,
                per(&rss) / (1u64 << 20) as f64,
                at(&rss) / estimated as f64,
                estimated as f64 / GIB,
            );
        }
        println!("{line}");
    }
    if count_full {
        let exact = synthesize(kind, size, full, seed, Synthesis::Count)?;
        let constraints = exact.constraints.unwrap_or(0);
        let counts: Vec<&Row> = rows.iter().filter(|r| r.path == "count").collect();
        let line = extrapolate(&counts, full, &|r| r.run.constraints.unwrap_or(0) as f64);
        println!(
            "full partition counted ({:.1} s): {} constraints ({:+} against the line), {} inputs, \
             {} aux",
            exact.wall.as_secs_f64(),
            thousands(constraints as u64),
            constraints as i64 - line.round() as i64,
            exact.inputs,
            thousands(exact.aux as u64),
        );
    }
    Ok(())
}

/// Runs `f` `runs` times, each with the peak-RSS counter reset, recording the growth of the
/// peak over the resident set at the start; the run of median wall time.
fn measure(
    path: &'static str,
    count: usize,
    runs: usize,
    f: impl Fn() -> snarkd_prover::Result<Synthesized>,
) -> anyhow::Result<Row> {
    let mut rows = Vec::with_capacity(runs.max(1));
    for _ in 0..runs.max(1) {
        // Free heap memory goes back to the system first: a run reusing what an earlier one
        // freed would not raise the resident set.
        #[cfg(target_env = "gnu")]
        // SAFETY: malloc_trim only releases free memory of the allocator's arenas.
        unsafe {
            libc::malloc_trim(0)
        };
        reset_peak_rss();
        let start = peak_rss();
        let cpu_start = cpu_seconds();
        let run = f()?;
        let cpu = cpu_seconds() - cpu_start;
        // From the synthesis' own start where it tells it (after the circuit and any matrices
        // were built), else from the run's.
        let rss_growth = peak_rss()
            .zip(run.rss_start.or(start))
            .map(|(peak, start)| peak.saturating_sub(start));
        rows.push(Row {
            path,
            count,
            run,
            cpu,
            rss_growth,
        });
    }
    rows.sort_by_key(|r| r.run.wall);
    Ok(rows.swap_remove(rows.len() / 2))
}

/// User and system CPU time of this process so far.
fn cpu_seconds() -> f64 {
    // SAFETY: getrusage fills the struct it is given; all-zero is a valid `rusage`.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `usage` is a valid, writable `rusage`.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
    secs(usage.ru_utime) + secs(usage.ru_stime)
}

fn print_row(r: &Row) {
    let or_dash = |v: Option<u64>, f: &dyn Fn(u64) -> String| v.map_or("-".to_string(), f);
    println!(
        "{:<11} {:>6} {:>9.2} {:>8.2} {:>13} {:>7} {:>13} {:>11}",
        r.path,
        r.count,
        r.run.wall.as_secs_f64(),
        r.cpu,
        or_dash(r.run.constraints.map(|c| c as u64), &thousands),
        r.run.inputs,
        thousands(r.run.aux as u64),
        or_dash(r.rss_growth, &|b| format!(
            "{:.0} MiB",
            b as f64 / (1u64 << 20) as f64
        )),
    );
}

/// Per challenge or sector: between the lowest and highest count, or the mean with one count.
fn slope(rows: &[&Row], value: &dyn Fn(&Row) -> f64) -> f64 {
    let (lo, hi) = (rows[0], rows[rows.len() - 1]);
    if lo.count == hi.count {
        value(lo) / lo.count as f64
    } else {
        (value(hi) - value(lo)) / (hi.count - lo.count) as f64
    }
}

/// The value at `n` on the line through the measurements (see the module comment).
fn extrapolate(rows: &[&Row], n: usize, value: &dyn Fn(&Row) -> f64) -> f64 {
    let lo = rows[0];
    value(lo) + (n as f64 - lo.count as f64) * slope(rows, value)
}

/// `1234567` as `1,234,567`.
fn thousands(v: u64) -> String {
    let digits = v.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}
