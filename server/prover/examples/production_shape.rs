//! Synthesis of production-shaped partition circuits (`filecoin::synthetic`: seeded random
//! values, no parameters) at a few challenge or sector counts, and the per-challenge (or
//! per-sector) slope extrapolated to a full production partition. A measurement, not a test.
//!
//!   cargo run --release -p snarkd-prover --features bench --example production_shape -- \
//!       KIND SIZE COUNT... [--paths witness,bellperson,recording,native,precompiled,
//!       precompiled-native] [--runs N] [--seed N] [--threads N,...] [--json]
//!       [--count-full] [--keep-buffers]
//!
//! KIND is porep, snap, wpost or winning; SIZE e.g. 2KiB or 32GiB; each COUNT is a number of
//! challenges (porep, snap) or sectors (PoSt). Per count, the circuit is first counted
//! (constraints, inputs, aux) where a path reserves room by the count (witness, native,
//! recording), then synthesized on each path: `witness`, snarkd's witness-only
//! pass (the pre-compiled path's first step, room reserved from the count); `bellperson`,
//! bellperson's own `WitnessCS`; `recording`, snarkd's plain path (witness and a/b/c); `native`,
//! snarkd's native witness (challenges or sectors in parallel, a batch per thread);
//! `precompiled` and `precompiled-native`, the whole pre-compiled synthesis (witness, then
//! a and b as sparse products and c = a∘b) from matrices recorded before the timing, with the
//! gadgets' or the native witness. Stock
//! bellperson's proving synthesis runs only inside `create_random_proof`, which needs Groth16
//! parameters, so it is not here.
//!
//! Wall time, CPU seconds (user and system apart) and minor page faults are the synthesis'
//! alone (`getrusage` around it: not building the circuit, not recording the matrices). With
//! `--threads 1,2,…` every row runs once per thread count, in the order given (each count's
//! circuit counted at the first thread count only, its matrices recorded once), in a rayon
//! pool of that size (the parallel parts of the synthesis run there, as they run on the
//! daemon's pool of the partition's priority); without it, on the pool of this process's
//! priority, one thread per core. `--json` prints one JSON object per row on its own line instead of the table (the
//! measured rows, then the extrapolated ones with `"extrapolated": true`). Peak RSS
//! growth is the rise of `VmHWM` over the resident set when the synthesis began (free heap
//! memory returned to the system and the counter reset then): what the synthesis holds at its
//! peak, without the circuit's inputs built before it or the pre-compiled matrices, which the
//! daemon holds once per circuit, not per partition. It is set beside the memory estimate the
//! daemon's budget charges for a synthesized partition (`estimate::estimate`). With `--runs N` each row is
//! the run of median wall time among N (the machine may be shared). With `--keep-buffers` a
//! pre-compiled run's partition buffers are kept for the next run (`snarkd_prover::spare`, as
//! the daemon keeps them under its budget): every run after the first writes into memory
//! already faulted in.
//!
//! Extrapolation: with two or more counts, value(n) = value(lo) + (n − lo)·slope, the slope
//! taken between the lowest and the highest count; with one count, value(n) = n·value(c)/c,
//! which counts the partition's fixed part n/c times. SnapDeals is not quite linear: one
//! Poseidon digest gives the bits of up to nine challenges (at 32 and 64 GiB), so counts within
//! one group of nine miss the other groups' digests (about 570 constraints each).
//! `--count-full` also counts the full partition, for its exact constraints and aux.

use serde_json::json;
use snarkd_prover::bench::{peak_rss, reset_peak_rss};
use snarkd_prover::filecoin::estimate;
use snarkd_prover::filecoin::synthetic::{production_count, synthesize, Synthesis, Synthesized};
use snarkd_prover::filecoin::{parse_sector_size, sector_size_name, CircuitShape, ProofKind};

const GIB: f64 = (1u64 << 30) as f64;

/// A figure of a row, read from the row itself (measured) or along the line through the rows
/// (extrapolated).
type Reading<'a> = dyn Fn(&dyn Fn(&Row) -> f64) -> f64 + 'a;

/// One measured synthesis.
struct Row {
    path: &'static str,
    count: usize,
    /// The size of the pool it ran in.
    threads: usize,
    run: Synthesized,
    rss_growth: Option<u64>,
}

fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let usage =
        "usage: production_shape KIND SIZE COUNT... [--paths witness,bellperson,recording] \
                 [--runs N] [--seed N] [--threads N,...] [--json] [--count-full] [--keep-buffers]";
    let kind = ProofKind::from_short(&args.next().ok_or_else(|| anyhow::anyhow!(usage))?)
        .map_err(|e| anyhow::anyhow!("{e}; {usage}"))?;
    let size = parse_sector_size(&args.next().ok_or_else(|| anyhow::anyhow!(usage))?)?;
    let mut counts = Vec::new();
    let mut paths = vec!["witness", "bellperson", "recording"];
    let (mut runs, mut seed, mut count_full, mut json) = (1, 1, false, false);
    let mut thread_counts: Vec<Option<usize>> = vec![None];
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
            "--keep-buffers" => snarkd_prover::spare::spare().keep(),
            "--json" => json = true,
            "--threads" => {
                let list = args.next().ok_or_else(|| anyhow::anyhow!(usage))?;
                thread_counts = list
                    .split(',')
                    .map(|n| Ok(Some(n.parse::<usize>()?.max(1))))
                    .collect::<anyhow::Result<_>>()?;
            }
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
    let size_name = sector_size_name(size);
    let budget = estimate::estimate(kind, size);
    // The witness-only paths against the estimate's witness, the others against the whole
    // synthesized partition.
    let estimated = |path: &str| match path {
        "witness" | "bellperson" | "native" => budget.witness_bytes(),
        _ => budget.total_bytes,
    };
    // A row as JSON: `value` reads a figure from the row (measured) or along the line through
    // the rows (extrapolated to `count`).
    let json_row = |r: &Row, count: f64, extrapolated: bool, value: &Reading| {
        json!({
            "bench": "production_shape",
            "kind": kind.as_str(),
            "sector_size": size_name,
            "count": count,
            "unit": unit,
            "path": r.path,
            "threads": r.threads,
            "wall_s": value(&|r| r.run.wall.as_secs_f64()),
            "cpu_user_s": value(&|r| r.run.usage.user_s),
            "cpu_sys_s": value(&|r| r.run.usage.sys_s),
            "minor_faults": value(&|r| r.run.usage.minor_faults as f64).round() as u64,
            "peak_rss_bytes": r.rss_growth.map(|_| value(&|r| r.rss_growth.unwrap_or(0) as f64).round() as u64),
            "estimate_bytes": estimated(r.path),
            "extrapolated": extrapolated,
        })
    };
    if !json {
        println!(
            "{kind} {size_name}: a production partition has {full} {unit}; snarkd's memory \
             estimate assumes {} constraints",
            thousands(estimate::shape(kind, size).constraints as u64),
        );
        println!(
            "{:<11} {:>6} {:>4} {:>9} {:>8} {:>7} {:>11} {:>13} {:>7} {:>13} {:>11}",
            "path",
            "count",
            "thr",
            "wall s",
            "user s",
            "sys s",
            "min faults",
            "constraints",
            "inputs",
            "aux",
            "peak RSS +"
        );
    }
    let mut rows = Vec::new();
    // Each count's circuit is counted once, at the first thread count (its shape does not turn
    // on the threads), where a path reserves room by it (the pre-compiled runs count their own
    // circuit), then synthesized at every thread count in turn (the pre-compiled runs' matrices
    // recorded once a count: `synthetic`'s `recorded.rs` keeps one shape's).
    let needs_shape =
        count_full || (paths.iter()).any(|p| matches!(*p, "witness" | "native" | "recording"));
    for &count in &counts {
        let mut made = Vec::new();
        let mut shape = CircuitShape::default();
        if needs_shape {
            let counted = measure("count", count, runs, thread_counts[0], || {
                synthesize(kind, size, count, seed, Synthesis::Count)
            })?;
            shape = CircuitShape {
                constraints: counted.run.constraints.unwrap_or(0),
                aux: counted.run.aux,
                inputs: counted.run.inputs,
            };
            made.push(counted);
        }
        for &threads in &thread_counts {
            for &path in &paths {
                let how = match path {
                    "witness" => Synthesis::Witness(shape),
                    "bellperson" => Synthesis::BellpersonWitness,
                    "native" => Synthesis::Native(shape),
                    "precompiled" => Synthesis::Precompiled { native: false },
                    "precompiled-native" => Synthesis::Precompiled { native: true },
                    _ => Synthesis::Recording(shape),
                };
                made.push(measure(path, count, runs, threads, || {
                    synthesize(kind, size, count, seed, how)
                })?);
            }
            for row in made.drain(..) {
                match json {
                    true => println!("{}", json_row(&row, count as f64, false, &|v| v(&row))),
                    false => print_row(&row),
                }
                rows.push(row);
            }
        }
    }

    if !json {
        println!(
            "\nsnarkd's memory estimate for one partition: synthesized {:.2} GiB (witness {:.2} \
             GiB), reserved {:.2} GiB (the device phase's peak on the host included)",
            budget.total_bytes as f64 / GIB,
            budget.witness_bytes() as f64 / GIB,
            budget.reserve_bytes() as f64 / GIB,
        );
        println!("extrapolated to a full partition ({full} {unit}):");
    }
    let mut pools: Vec<usize> = Vec::new();
    for r in &rows {
        if !pools.contains(&r.threads) {
            pools.push(r.threads);
        }
    }
    for &threads in &pools {
        for path in std::iter::once("count").chain(paths.iter().copied()) {
            let mine: Vec<&Row> = rows
                .iter()
                .filter(|r| r.path == path && r.threads == threads)
                .collect();
            if mine.is_empty() {
                // The counts, at the first thread count only.
                continue;
            }
            let at = |value: &dyn Fn(&Row) -> f64| extrapolate(&mine, full, value);
            if json {
                println!("{}", json_row(mine[0], full as f64, true, &|v| at(v)));
                continue;
            }
            let per = |value: &dyn Fn(&Row) -> f64| slope(&mine, value);
            let wall = |r: &Row| r.run.wall.as_secs_f64();
            let cpu = |r: &Row| r.run.usage.cpu_s();
            let aux = |r: &Row| r.run.aux as f64;
            let rss = |r: &Row| r.rss_growth.unwrap_or(0) as f64;
            let mut line = format!(
                "  {path:<11} {threads:>2} thr: wall {:>8.1} s ({:.3} s per), cpu {:>8.1} s ({:.3} s per), aux {:>13} ({} per)",
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
                line += &format!(
                    ", peak RSS growth {:.2} GiB ({:.1} MiB per; {:.2}× the estimate's {:.2} GiB)",
                    at(&rss) / GIB,
                    per(&rss) / (1u64 << 20) as f64,
                    at(&rss) / estimated(path) as f64,
                    estimated(path) as f64 / GIB,
                );
            }
            println!("{line}");
        }
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
/// peak over the resident set at the start; the run of median wall time. With `threads`, in a
/// rayon pool of that many threads.
fn measure(
    path: &'static str,
    count: usize,
    runs: usize,
    threads: Option<usize>,
    f: impl Fn() -> snarkd_prover::Result<Synthesized> + Send + Sync,
) -> anyhow::Result<Row> {
    let pool = match threads {
        Some(n) => Some(rayon::ThreadPoolBuilder::new().num_threads(n).build()?),
        None => None,
    };
    let size =
        threads.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
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
        let run = match &pool {
            Some(pool) => pool.install(&f)?,
            None => f()?,
        };
        // From the synthesis' own start where it tells it (after the circuit and any matrices
        // were built), else from the run's.
        let rss_growth = peak_rss()
            .zip(run.rss_start.or(start))
            .map(|(peak, start)| peak.saturating_sub(start));
        rows.push(Row {
            path,
            count,
            threads: size,
            run,
            rss_growth,
        });
    }
    rows.sort_by_key(|r| r.run.wall);
    Ok(rows.swap_remove(rows.len() / 2))
}

fn print_row(r: &Row) {
    let or_dash = |v: Option<u64>, f: &dyn Fn(u64) -> String| v.map_or("-".to_string(), f);
    println!(
        "{:<11} {:>6} {:>4} {:>9.2} {:>8.2} {:>7.2} {:>11} {:>13} {:>7} {:>13} {:>11}",
        r.path,
        r.count,
        r.threads,
        r.run.wall.as_secs_f64(),
        r.run.usage.user_s,
        r.run.usage.sys_s,
        thousands(r.run.usage.minor_faults),
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
