//! `snarkd-bench plan`: sizing a box before buying it. The real engine (`snarkd_engine::sim`:
//! the machine's admission, lookahead, dispatch, preemption and params loads, nothing
//! reimplemented) runs a workload in simulated time on a box, each step taking the time and
//! memory of a cost table measured by the project's own benchmarks. `--check` runs the same
//! tool against a real daemon on this machine at 2 KiB.
//!
//! Layout: `table.rs` reads the box and the cost table into the simulation's setup,
//! `workload.rs` makes the arrivals, `output.rs` writes the rows (Markdown, JSON, the HTML page
//! with charts), `check.rs` and `measure.rs` are the 2 KiB validation.

mod check;
mod measure;
mod output;
mod table;
#[cfg(test)]
mod tests;
mod workload;

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, Result};
use bytesize::ByteSize;
use snarkd_engine::sim::{simulate, Workload};
use snarkd_prover::ProofKind;

use table::{BoxFile, Built, CostFile};

/// `snarkd-bench plan`'s arguments.
#[derive(clap::Args)]
pub struct Options {
    /// The box (TOML): cores, memory, GPUs and their model, the daemon's own memory.
    #[arg(long = "box", required_unless_present = "check")]
    pub machine: Option<PathBuf>,
    /// The cost table (TOML): each kind's measured costs per step, each naming its source.
    #[arg(long, required_unless_present = "check")]
    pub costs: Option<PathBuf>,
    /// Simulate the box with each of these memory sizes instead of its own, a row each.
    #[arg(long, value_delimiter = ',')]
    pub memory: Vec<ByteSize>,
    /// Simulate the box with each of these device rows of the cost table instead of its GPU
    /// model's (e.g. a target or an estimate the table labels as such), a row each.
    #[arg(long, value_delimiter = ',')]
    pub gpu: Vec<String>,
    /// Kinds kept at this many jobs at all times (Curio's MaxPending), e.g. porep=10.
    #[arg(long, value_delimiter = ',', default_value = "porep=10")]
    pub in_flight: Vec<String>,
    /// Mean gap between arrivals of a kind (each gap uniform in 0.5–1.5 of it), e.g.
    /// winning=5m,wpost=30m.
    #[arg(long, value_delimiter = ',')]
    pub every: Vec<String>,
    /// Simulated time.
    #[arg(long, default_value = "2h", value_parser = humantime::parse_duration)]
    pub duration: Duration,
    /// Proofs that end before this are not counted (the box filling up, params loading).
    #[arg(long, default_value = "20m", value_parser = humantime::parse_duration)]
    pub warmup: Duration,
    /// The engine's settings to simulate instead of the daemon's defaults: `[pipeline]
    /// synthesis_lookahead` (a number, or auto), `[gpus] workers_per_device`, `[synthesis]
    /// threads` (0: one per core).
    #[arg(long)]
    pub lookahead: Option<String>,
    #[arg(long)]
    pub workers_per_device: Option<usize>,
    #[arg(long)]
    pub synthesis_threads: Option<usize>,
    /// Seed of the arrivals.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Also write plan.md, plan.json and plan.html (charts of the load over time) here.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Validate on this machine at 2 KiB: measure the costs through a real daemon, run a mix on
    /// it, simulate the same mix, print one JSON object; exit 1 when a prediction is more than
    /// 15 % off.
    #[arg(long)]
    pub check: bool,
    #[command(flatten)]
    pub check_options: check::CheckOptions,
}

/// Runs `plan`; Ok(false) when `--check` finds a prediction off.
pub fn plan(o: Options, json: bool) -> Result<bool> {
    if o.check {
        return check::check(&o.check_options, o.seed, o.out.as_deref());
    }
    let machine: BoxFile = table::read_toml(o.machine.as_deref().context("--box")?)?;
    let settings = table::Settings {
        lookahead: match o.lookahead.as_deref() {
            None => None,
            Some("auto") => Some(snarkd_engine::Lookahead::Auto),
            Some(n) => Some(snarkd_engine::Lookahead::Limit(
                n.parse().context("--lookahead: a number or auto")?,
            )),
        },
        workers_per_device: o.workers_per_device,
        synthesis_threads: o.synthesis_threads,
    };
    let costs: CostFile = table::read_toml(o.costs.as_deref().context("--costs")?)?;
    let in_flight = workload::pairs(&o.in_flight, |v| Ok(v.parse::<u32>()?))?;
    let every = workload::pairs(&o.every, |v| Ok(humantime::parse_duration(v)?))?;
    let workload = Workload {
        duration: o.duration,
        warmup: o.warmup,
        arrivals: workload::arrivals(&every, o.duration, o.seed),
        in_flight: in_flight.clone(),
        sample_every: Duration::from_secs(30),
    };
    let mut kinds: Vec<ProofKind> = in_flight.iter().map(|(k, _)| *k).collect();
    kinds.extend(every.iter().map(|(k, _)| *k));
    kinds.sort();
    kinds.dedup();
    let memories: Vec<Option<ByteSize>> = if o.memory.is_empty() {
        vec![None]
    } else {
        o.memory.iter().copied().map(Some).collect()
    };
    let gpus: Vec<Option<String>> = if o.gpu.is_empty() {
        vec![None]
    } else {
        o.gpu.iter().cloned().map(Some).collect()
    };
    let mut rows = Vec::new();
    for gpu in &gpus {
        let mut machine = machine.clone();
        if let Some(gpu) = gpu {
            machine.gpu = Some(gpu.clone());
        }
        for &memory in &memories {
            rows.push(row(&machine, memory, &settings, &costs, &kinds, &workload)?);
        }
    }
    let text = output::markdown(&machine, &costs, &workload, &rows);
    if json {
        for row in &rows {
            println!("{}", serde_json::to_string(&output::json(row))?);
        }
    } else {
        print!("{text}");
    }
    if let Some(dir) = &o.out {
        output::write(dir, &text, &rows)?;
    }
    Ok(true)
}

/// One row: `machine` with `memory` (its own when none) simulated.
fn row(
    machine: &BoxFile,
    memory: Option<ByteSize>,
    settings: &table::Settings,
    costs: &CostFile,
    kinds: &[ProofKind],
    workload: &Workload,
) -> Result<output::Row> {
    let memory = memory.unwrap_or(machine.memory);
    let result = match table::setup(machine, Some(memory), settings, costs, kinds)? {
        Built::Setup(setup) => {
            let started = std::time::Instant::now();
            let report = simulate(&setup, workload);
            output::Simulated::Ran {
                report,
                budget: setup.config.memory_budget_bytes,
                real_s: started.elapsed().as_secs_f64(),
            }
        }
        Built::Missing(why) => output::Simulated::Missing(why),
    };
    Ok(output::Row {
        machine: machine.name.clone(),
        gpu: machine.gpu.clone().unwrap_or_else(|| "cpu".into()),
        memory,
        published_s: (machine.published.iter())
            .find(|(size, _)| size.parse::<ByteSize>().ok() == Some(memory))
            .map(|(_, s)| *s),
        result,
    })
}
