//! The `snarkd` binary: parses the command line, builds the config, starts the engine and the
//! servers, and shuts down cleanly on SIGINT/SIGTERM. If the engine stops by itself (a panic in
//! its writer task), snarkd exits with a failure code so its service manager restarts it; a
//! configuration error exits with 78 (`EX_CONFIG`), which the shipped unit does not restart.

use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{anyhow, Context};
use clap::Parser;
use snarkd::cli::{Cli, Command, ConfigCommand, ParamsCommand, RunArgs};
use snarkd::config::{Config, ConfigError, DEFAULT_TOML};
use snarkd::{serve, service, telemetry, Daemon};
use snarkd_engine::Engine;

/// How long the exit waits, after the drain, for blocking tasks still running.
const EXIT_GRACE: std::time::Duration = std::time::Duration::from_secs(2);

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Run(args) => run(args),
        Command::Config(ConfigCommand::Default) => {
            print!("{DEFAULT_TOML}");
            Ok(())
        }
        Command::Config(ConfigCommand::FromCuzk { file }) => Config::from_cuzk(&file)
            .map(|text| print!("{text}"))
            .map_err(Into::into),
        Command::Params(ParamsCommand::Generate(args)) => snarkd::params_cmd::generate(args),
        Command::Params(ParamsCommand::Precompile(args)) => snarkd::params_cmd::precompile(args),
        Command::Params(ParamsCommand::Check(args)) => params_check(args),
        Command::Health { http } => snarkd::health_cmd::check(&http),
        Command::Devices => {
            println!("ordinal\tplatform\tname\ttype\tmemory\tcompute units");
            for line in snarkd::proving::devices::listing() {
                println!("{line}");
            }
            Ok(())
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            // Under systemd, stderr is a journal stream: the `<3>` prefix files the line at
            // error priority, so `journalctl -p err` says why snarkd stopped.
            let priority = if service::under_journald() { "<3>" } else { "" };
            eprintln!("{priority}snarkd: {err:#}");
            if err.chain().any(|cause| cause.is::<ConfigError>()) {
                ExitCode::from(service::EXIT_CONFIG)
            } else {
                ExitCode::FAILURE
            }
        }
    }
}

fn params_check(args: snarkd::cli::CheckArgs) -> anyhow::Result<()> {
    let config = Config::load(args.config.as_deref(), &Default::default())?;
    let size = args
        .sector_size
        .as_deref()
        .map(snarkd_prover::filecoin::parse_sector_size)
        .transpose()?;
    let dir = args.dir.unwrap_or_else(|| config.params.dir.clone());
    snarkd::params_check::run(&dir, config.precompiled_dir().as_deref(), size)
}

fn run(args: RunArgs) -> anyhow::Result<()> {
    let arenas = snarkd::allocator::cap_malloc_arenas();
    let config = Config::load(args.config.as_deref(), &args.overrides())?;
    telemetry::init_logging(&config.logging);
    for note in &config.carried_over {
        tracing::warn!(note = %note, "cuzk config key");
    }
    if let Some(arenas) = arenas {
        tracing::debug!(arenas, "malloc arenas capped (MALLOC_ARENA_MAX overrides)");
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("snarkd-rt")
        .build()
        .context("cannot start the async runtime")?;
    let ready_file = args.ready_file.clone();
    let served = runtime.block_on(serve_until_signal(config, ready_file.as_deref()));
    // Drained and the journal flushed: a blocking task still running (a parameter file read on
    // a dead network mount, a digest of a file that never ends) must not hold the exit.
    runtime.shutdown_timeout(EXIT_GRACE);
    if let Some(path) = ready_file {
        let _ = std::fs::remove_file(path);
    }
    served
}

async fn serve_until_signal(config: Config, ready_file: Option<&Path>) -> anyhow::Result<()> {
    let mut signals = serve::Signals::new()?;
    // Before the engine starts, so its first metrics are recorded.
    telemetry::prometheus();
    let started = start_engine(&config).await?;
    telemetry::zero_counters(&started.prover.backend_names());
    let daemon = Daemon::start(&config, started.engine.clone()).await?;
    if let Some(path) = ready_file {
        snarkd::ready::Ready {
            pid: std::process::id(),
            grpc: daemon.grpc_addr().to_string(),
            http: daemon.http_addr(),
        }
        .write(path)?;
    }
    // Recovered, bound and serving: only now may a service manager call snarkd started. Devices
    // still being set up join when ready; WinningPoSt is proved on the CPU meanwhile.
    let serving = format!(
        "serving gRPC on {}, HTTP on {}",
        daemon.grpc_addr(),
        daemon.http_addr()
    );
    let warming: Vec<String> = (started.prover.warming().into_iter())
        .map(|(device, doing)| format!("{device} {doing}"))
        .collect();
    if warming.is_empty() {
        service::ready(&serving);
    } else {
        tracing::info!(devices = ?warming,
            "serving while devices are set up: WinningPoSt is proved on the cpu until they are ready");
        service::ready(&format!(
            "{serving}; devices warming (WinningPoSt on the CPU meanwhile): {}",
            warming.join(", ")
        ));
        let prover = started.prover.clone();
        tokio::task::spawn_blocking(move || {
            prover.wait_warm();
            service::status(&format!("{serving}; devices ready"));
        });
    }
    service::spawn_watchdog();
    for circuit in &config.params.preload {
        let engine = daemon.engine().clone();
        let circuit = circuit.clone();
        tokio::spawn(async move {
            match engine.preload_params(&circuit).await {
                Ok(p) => tracing::info!(%circuit, load_ms = p.load_time.as_millis() as u64,
                    already_loaded = p.already_loaded, "preloaded parameters ([params] preload)"),
                Err(e) => {
                    tracing::warn!(%circuit, error = %e, "could not preload parameters ([params] preload)")
                }
            }
        });
    }
    spawn_startup_summary(&config, started, &daemon);
    daemon.engine().follow_test_hooks();

    let signal = tokio::select! {
        signal = signals.recv() => signal,
        reason = daemon.engine().stopped() => {
            tracing::error!(%reason, "exiting: the engine stopped, so no proof can be served");
            return Err(anyhow!(
                "the engine stopped ({reason}); exiting with a failure so the service manager restarts snarkd"
            ));
        }
    };
    tracing::info!(signal, "shutting down");
    service::stopping();
    tokio::select! {
        _ = daemon.shutdown(config.daemon.drain_timeout) => {}
        second = signals.recv() => {
            tracing::warn!(signal = second, "second signal: exiting without waiting for running jobs");
        }
    }
    Ok(())
}

/// The started engine and what the startup summary needs of its making.
struct Started {
    engine: Engine,
    prover: Arc<snarkd::proving::FilecoinProver>,
    memory_budget_bytes: u64,
    reckoned: String,
}

/// The engine, on the job journal unless `[jobs] journal = false`. The journal's records are
/// read back before this returns (and so before the ports are bound): every unfinished job is
/// known, by job id and request id, from the first call. Their inputs are read and their jobs
/// planned again in the background, one at a time, while the daemon serves.
async fn start_engine(config: &Config) -> anyhow::Result<Started> {
    // Devices first: the baseline the budget is charged with includes their runtimes.
    let prover = prover(config)?;
    let (engine_config, reckoned) = config.engine_config_reckoned()?;
    let memory_budget_bytes = engine_config.memory_budget_bytes;
    let engine = match config.jobs.journal_settings() {
        None => {
            tracing::warn!("[jobs] journal = false: accepted jobs are kept in memory only and a restart forgets them");
            Engine::start(engine_config, prover.clone())
        }
        Some(settings) => {
            let journal = snarkd_engine::Journal::open(settings).map_err(|e| anyhow!(e))?;
            Engine::open(engine_config, prover.clone(), journal)
                .await
                .map_err(|e| anyhow!(e))?
        }
    };
    Ok(Started {
        engine,
        prover,
        memory_budget_bytes,
        reckoned,
    })
}

/// Gathers the startup summary off the runtime (the params check may read files), then logs
/// it and publishes it in `/status`.
fn spawn_startup_summary(config: &Config, started: Started, daemon: &Daemon) {
    let recovered_jobs = (started.engine.snapshot().jobs.iter())
        .filter(|j| !j.state.is_finished())
        .count();
    let mut summary = snarkd::startup::StartupSummary {
        version: snarkd::build_info::VERSION.to_string(),
        build_id: snarkd::build_info::BUILD_ID.to_string(),
        backend: format!("{:?}", config.gpus.backend).to_lowercase(),
        gpu_fallback: snarkd_engine::prover::Prover::gpu_fallback(&*started.prover),
        devices: started.prover.device_summaries(),
        memory_budget_bytes: started.memory_budget_bytes,
        memory_reckoned: started.reckoned,
        params_dir: config.params.dir.clone(),
        precompiled_dir: config.precompiled_dir(),
        params: Vec::new(),
        journal_dir: config.jobs.journal.then(|| config.jobs.dir.clone()),
        recovered_jobs,
        grpc: daemon.grpc_addr().to_string(),
        http: daemon.http_addr().to_string(),
    };
    let slot = daemon.startup();
    tokio::spawn(async move {
        let gathered = tokio::task::spawn_blocking(move || {
            summary.params = snarkd::params_check::inventory(
                &summary.params_dir,
                summary.precompiled_dir.as_deref(),
                None,
            );
            summary
        })
        .await;
        if let Ok(summary) = gathered {
            // Published before it is logged: whoever reads the log line finds it in /status.
            let _ = slot.set(summary);
            if let Some(summary) = slot.get() {
                summary.log();
            }
        }
    });
}

/// The prover the engine runs: real Filecoin circuits on the configured backend.
fn prover(config: &Config) -> anyhow::Result<Arc<snarkd::proving::FilecoinProver>> {
    snarkd::service::status(
        "choosing devices (their kernels are built or loaded in the background)",
    );
    snarkd::proving::from_config(config)
}
