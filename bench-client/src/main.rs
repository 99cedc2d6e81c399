//! `snarkd-bench`: generates real request fixtures for every proof kind, drives a running snarkd
//! daemon over gRPC (one proof, concurrent batches, status, preload, metrics), and benchmarks the
//! snarkd prover in-process against stock bellperson.
//!
//! ```text
//! snarkd-bench gen     --sector-size 2KiB --out DIR
//! snarkd-bench bench   [--fixtures DIR] [--params-dir DIR] [--kind porep|snap|wpost|winning]...
//! snarkd-bench [--addr URL] [--json] single -t KIND --input DIR
//! snarkd-bench [--addr URL] [--json] single --c1 C1.json [--sector-number N] --miner-id ID [--proof-out FILE]
//! snarkd-bench [--addr URL] [--json] single -t winning|wpost --vanilla FILE... --randomness HEX
//!              --miner-id ID (--sector-size SIZE | --registered-proof N) [--partition I] [--comm-r SECTOR=HEX]
//! snarkd-bench [--addr URL] [--json] single -t snap --vanilla FILE... --comm-r-old HEX --comm-r-new HEX
//!              --comm-d-new HEX (--sector-size SIZE | --registered-proof N)
//! snarkd-bench [--addr URL] [--json] batch  -c COUNT -j CONCURRENCY (the same input flags) [--priority P]
//! snarkd-bench [--addr URL] [--json] status
//! snarkd-bench [--addr URL] watch [--interval 500ms] [--count N]
//! snarkd-bench [--addr URL] preload CIRCUIT_ID
//! snarkd-bench [--addr URL] metrics
//! snarkd-bench report --params-dir DIR [--out DIR] [--count N] [--burst N] [--burst-budget SIZE]
//! snarkd-bench flood  [--size 255MiB] [--concurrency 4] [--only TEXT]
//! snarkd-bench durability --params-dir DIR [--submits 200] [--proofs 16] [--queued 1000]
//! snarkd-bench holdout --params-dir DIR [--fixtures DIR] [--kind K]... [--runs 2]
//! snarkd-bench [--json] plan --box BOX.toml --costs COSTS.toml [--memory 128GiB,…] [--in-flight porep=10]
//!              [--every winning=5m] [--duration 2h] [--out DIR]
//! snarkd-bench plan --check --params-dir DIR [--fixtures DIR] [--out DIR]
//! ```
//!
//! `--addr` is `http://host:port` (default `http://127.0.0.1:9820`) or `unix:///path`. The exit
//! code is 1 when a proof does not come back COMPLETED or an RPC fails, with the reason on stderr.
//!
//! Layout:
//! - `main.rs`: the command line and exit codes.
//! - `local.rs`: `gen` and `bench`, in-process (no daemon).
//! - `remote.rs`: the client subcommands against a daemon.
//! - `client.rs`: the gRPC connection over TCP or a Unix socket.
//! - `request.rs`: wire requests from `gen`'s fixtures.
//! - `inputs.rs`: the input flags of `single` and `batch`: fixtures, or Curio's files.
//! - `check.rs`: the returned proof checked with filecoin-proofs-api's verifiers.
//! - `summary.rs`: proof outcomes, batch summary and latency percentiles.
//! - `results.rs`: `--out DIR`: a CSV row per proof, the run with the machine and the daemon.
//! - `usage.rs`: the device workers' busy share during a batch, from the status stream.
//! - `watch.rs`: the live terminal view of the status stream.
//! - `progress.rs`: where a `single` proof stands while its Prove waits, on stderr.
//! - `report/`: the side-by-side benchmarks and their report.
//! - `chart.rs`: the SVG charts of the HTML pages.
//! - `flood/`: the daemon's memory under maximum-size hostile requests (`shapes.rs`: what is sent).
//! - `holdout.rs`: the daemon's synthesis through gRPC against bellperson's, on one request.
//! - `durability.rs`: what the job journal costs (submit latency, throughput, recovery time).
//! - `plan/`: sizing a box: the engine in simulated time on a cost table, checked here at 2 KiB.

mod chart;
mod check;
mod client;
mod durability;
mod flood;
mod holdout;
mod inputs;
mod local;
mod plan;
mod progress;
mod remote;
mod report;
mod request;
mod results;
mod summary;
mod usage;
mod watch;

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::{Parser, Subcommand};
use snarkd_proto::v1 as pb;

#[derive(Parser)]
#[command(
    name = "snarkd-bench",
    version,
    about = "Fixtures, a gRPC client and benchmarks for the snarkd prover"
)]
struct Cli {
    /// The daemon's gRPC address: http://host:port or unix:///path.
    #[arg(long, global = true, default_value = "http://127.0.0.1:9820")]
    addr: String,
    /// Machine-readable JSON on stdout (single, batch, status).
    #[arg(long, global = true)]
    json: bool,
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Seal a random sector and write real inputs for all four proof kinds plus a manifest.
    Gen {
        /// Sector size: 2KiB (tests), 8MiB, 512MiB, 32GiB, 64GiB (sealing these takes long).
        #[arg(long, default_value = "2KiB")]
        sector_size: String,
        /// Output directory (created if missing).
        #[arg(long)]
        out: PathBuf,
    },
    /// Prove each kind with our split prover and with stock bellperson; print times and ratios.
    Bench {
        /// Fixtures written by `gen`; generated into a temporary directory when omitted.
        #[arg(long)]
        fixtures: Option<PathBuf>,
        /// Parameter directory [default: $FIL_PROOFS_PARAMETER_CACHE or /var/tmp/filecoin-proof-parameters].
        #[arg(long)]
        params_dir: Option<PathBuf>,
        /// Kinds to run (default: all four).
        #[arg(long = "kind")]
        kinds: Vec<String>,
        /// Runs of the synthesis table (each path, one thread and all); 0 leaves it out.
        #[arg(long, default_value_t = 3)]
        synthesis_runs: usize,
        /// Only the synthesis table (no proving table).
        #[arg(long)]
        synthesis_only: bool,
    },
    /// Prove one request through the daemon (one Prove call): a fixture, or the files Curio
    /// sends; the returned proof is checked here with filecoin-proofs-api where the input allows.
    Single {
        #[command(flatten)]
        input: inputs::InputArgs,
        /// Write the returned proof to this file.
        #[arg(long)]
        proof_out: Option<PathBuf>,
        /// Verifying keys for the check here [default: $FIL_PROOFS_PARAMETER_CACHE].
        #[arg(long)]
        params_dir: Option<PathBuf>,
        /// Write proofs.csv and result.json (the run, this machine, the daemon) here.
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Prove COUNT copies of a request, CONCURRENCY at a time, and summarise; meanwhile where
    /// the batch's jobs stand (queued, synthesizing, with a device, finalizing) on stderr.
    Batch {
        #[arg(short = 'c', long)]
        count: usize,
        #[arg(short = 'j', long, default_value_t = 1)]
        concurrency: usize,
        #[command(flatten)]
        input: inputs::InputArgs,
        /// low, normal, high or critical [default: the kind's usual priority].
        #[arg(long, value_parser = request::parse_priority)]
        priority: Option<pb::Priority>,
        /// Write proofs.csv and result.json (the run, this machine, the daemon) here.
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// The daemon's devices, loaded parameters, queues and counters.
    Status,
    /// A live view of the daemon's status stream: workers, jobs with their partitions, memory.
    Watch {
        /// Least time between two frames, e.g. 250ms or 2s.
        #[arg(long, default_value = "500ms", value_parser = humantime::parse_duration)]
        interval: std::time::Duration,
        /// Stop after this many frames (default: until interrupted).
        #[arg(long)]
        count: Option<usize>,
    },
    /// Load a circuit's parameters ahead of use, e.g. winning-2k or porep-32g.
    Preload { circuit_id: String },
    /// The daemon's Prometheus metrics.
    Metrics,
    /// Run the four side-by-side benchmarks (throughput, busy share, memory, WinningPoSt
    /// latency) against snarkd daemons this command starts; writes report.md and report.json.
    Report(report::Options),
    /// Memory under a flood of maximum-size hostile requests, against snarkd daemons this
    /// command starts: peak RSS above idle as a multiple of the bytes on the wire.
    Flood(flood::Options),
    /// What the job journal costs: submit latency and throughput with and without it, and the
    /// recovery time of a journal of queued jobs, against snarkd daemons this command starts.
    Durability(durability::Options),
    /// The daemon's synthesis per partition of a real request through gRPC against stock
    /// bellperson's synthesis of the same request, best of RUNS each.
    Holdout(holdout::Options),
    /// Size a box before buying it: the real engine in simulated time on a cost table (proofs an
    /// hour, deadline latency, peak memory, GPU busy share); `--check` validates it here at 2 KiB.
    Plan(plan::Options),
}

/// Runs a client subcommand; Ok(false) when a proof did not complete.
fn remote(cli: Cli) -> Result<bool> {
    let runtime = tokio::runtime::Runtime::new()?;
    let (addr, json) = (cli.addr.as_str(), cli.json);
    runtime.block_on(async {
        match cli.cmd {
            Cmd::Single {
                input,
                proof_out,
                params_dir,
                out,
            } => {
                if let Some(dir) = params_dir {
                    // Read once by filecoin-proofs, at its first verification: set before it.
                    std::env::set_var("FIL_PROOFS_PARAMETER_CACHE", dir);
                }
                let loaded = input.load()?;
                remote::single(addr, loaded, proof_out.as_deref(), out.as_deref(), json).await
            }
            Cmd::Batch {
                count,
                concurrency,
                input,
                priority,
                out,
            } => {
                let priority = priority.unwrap_or(pb::Priority::Unspecified);
                let request = input.load()?.input;
                let run = remote::BatchRun {
                    count,
                    concurrency,
                    priority,
                };
                remote::batch(addr, &request, run, out.as_deref(), json).await
            }
            Cmd::Status => remote::status(addr, json).await.map(|()| true),
            Cmd::Watch { interval, count } => {
                watch::watch(addr, interval, count).await.map(|()| true)
            }
            Cmd::Preload { circuit_id } => remote::preload(addr, &circuit_id).await.map(|()| true),
            Cmd::Metrics => remote::metrics(addr).await.map(|()| true),
            Cmd::Gen { .. }
            | Cmd::Bench { .. }
            | Cmd::Report(_)
            | Cmd::Flood(_)
            | Cmd::Durability(_)
            | Cmd::Holdout(_)
            | Cmd::Plan(_) => {
                unreachable!("local commands")
            }
        }
    })
}

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .init();
    let cli = Cli::parse();
    let result = match cli.cmd {
        Cmd::Gen { sector_size, out } => local::gen(&sector_size, &out).map(|()| true),
        Cmd::Bench {
            fixtures,
            params_dir,
            kinds,
            synthesis_runs,
            synthesis_only,
        } => {
            local::bench(fixtures, params_dir, kinds, synthesis_runs, synthesis_only).map(|()| true)
        }
        Cmd::Report(options) => report::report(options).map(|()| true),
        Cmd::Flood(options) => flood::flood(options).map(|()| true),
        Cmd::Durability(options) => durability::durability(options).map(|()| true),
        Cmd::Holdout(options) => holdout::holdout(options).map(|()| true),
        Cmd::Plan(options) => plan::plan(options, cli.json),
        _ => remote(cli),
    };
    match result {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use super::Cli;

    /// clap's own consistency checks over every subcommand (names, groups, flattened options),
    /// which a release build would otherwise first meet as a panic at `--help`.
    #[test]
    fn the_command_line_is_consistent() {
        Cli::command().debug_assert();
    }
}
