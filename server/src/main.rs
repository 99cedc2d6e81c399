//! The `snarkd` binary: parses the command line, builds the config, starts the engine and the
//! servers, and shuts down cleanly on SIGINT/SIGTERM.

use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;
use clap::Parser;
use snarkd::cli::{Cli, Command, ConfigCommand, RunArgs};
use snarkd::config::{Config, DEFAULT_TOML};
use snarkd::{serve, telemetry, Daemon};
use snarkd_engine::prover::Prover;
use snarkd_engine::Engine;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Run(args) => run(args),
        Command::Config(ConfigCommand::Default) => {
            print!("{DEFAULT_TOML}");
            Ok(())
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("snarkd: {err:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(args: RunArgs) -> anyhow::Result<()> {
    let config = Config::load(args.config.as_deref(), &args.overrides())?;
    telemetry::init_logging(&config.logging);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("snarkd-rt")
        .build()
        .context("cannot start the async runtime")?;
    runtime.block_on(serve_until_signal(config))
}

async fn serve_until_signal(config: Config) -> anyhow::Result<()> {
    let mut signals = serve::Signals::new()?;
    // Before the engine starts, so its first metrics are recorded.
    telemetry::prometheus();
    let engine = Engine::start(config.engine_config()?, prover(&config)?);
    let daemon = Daemon::start(&config, engine).await?;

    let signal = signals.recv().await;
    tracing::info!(signal, "shutting down");
    tokio::select! {
        _ = daemon.shutdown(config.daemon.drain_timeout) => {}
        second = signals.recv() => {
            tracing::warn!(signal = second, "second signal: exiting without waiting for running jobs");
        }
    }
    Ok(())
}

/// The prover the engine runs. Filled in with `snarkd-prover` (in `snarkd::proving`) once that
/// lands; until then the daemon serves its status and refuses proofs with a message saying why.
fn prover(_config: &Config) -> anyhow::Result<Arc<dyn Prover>> {
    Ok(Arc::new(placeholder::NoProver))
}

mod placeholder {
    use std::sync::Arc;

    use snarkd_engine::prover::{DeviceInfo, JobPlan, Params, Prover, Synthesized};
    use snarkd_engine::{EngineError, ProofRequest};

    const WHY: &str = "this snarkd build has no prover wired in yet: rebuild from a checkout that includes snarkd-prover";

    /// Knows no circuit and refuses every request.
    pub struct NoProver;

    impl Prover for NoProver {
        fn backend_name(&self) -> String {
            "cpu".into()
        }
        fn devices(&self) -> Vec<DeviceInfo> {
            vec![DeviceInfo {
                ordinal: 0,
                name: "cpu".into(),
                memory_bytes: snarkd::config::total_memory_bytes(),
            }]
        }
        fn plan(&self, _request: &ProofRequest) -> Result<Arc<dyn JobPlan>, EngineError> {
            Err(EngineError::Prover(WHY.into()))
        }
        fn knows_circuit(&self, _circuit_id: &str) -> bool {
            false
        }
        fn params_size_estimate(&self, _circuit_id: &str) -> u64 {
            0
        }
        fn load_params(&self, _circuit_id: &str) -> Result<(Params, u64), String> {
            Err(WHY.into())
        }
        fn prove(
            &self,
            _: &DeviceInfo,
            _: Synthesized,
            _: &Params,
            _: &mut dyn FnMut(),
        ) -> Result<Vec<u8>, String> {
            Err(WHY.into())
        }
    }
}
