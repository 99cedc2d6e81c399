//! The command line: `snarkd run`, `snarkd config default`, `snarkd params generate` and
//! `precompile`, `snarkd devices`, `snarkd health`, `snarkd --version`.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::config::{ListenAddr, Overrides, TcpAddr};

/// snarkd: a proving daemon for Filecoin Groth16 proofs, speaking Curio's cuzk.v1 gRPC API.
#[derive(Debug, Parser)]
#[command(name = "snarkd", version = crate::build_info::LONG_VERSION, propagate_version = true)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the daemon until SIGINT or SIGTERM.
    Run(RunArgs),
    /// Work with the config file.
    #[command(subcommand)]
    Config(ConfigCommand),
    /// Work with Groth16 parameter files.
    #[command(subcommand)]
    Params(ParamsCommand),
    /// List the devices the device phase can use: every OpenCL device of every platform
    /// (ordinal, platform, name, type, memory, compute units), then the CPU.
    Devices,
    /// Ask a running daemon's HTTP port for GET /healthz: exits 0 when it answers 200 (serving),
    /// 1 otherwise (not running, draining). For container healthchecks.
    Health {
        /// The daemon's HTTP address, host:port.
        #[arg(long, default_value = "127.0.0.1:9821")]
        http: String,
    },
}

#[derive(Debug, Subcommand)]
pub enum ParamsCommand {
    /// Create LOCAL TEST parameters for small sectors. They verify only against their own .vk,
    /// never on chain; production uses the published parameter files. Also records each
    /// circuit's pre-compiled matrices beside them (see `params precompile`).
    Generate(CircuitsArgs),
    /// Record the pre-compiled R1CS matrices of circuits whose parameters are in the directory
    /// (published or generated) into `<params stem>.snarkd-r1cs` beside them, so the daemon's
    /// first load reads them instead of recording them. Valid files are kept.
    Precompile(CircuitsArgs),
    /// Check the parameter and verifying-key files against the digests filecoin-proofs
    /// publishes (its parameters.json): each is published, a local test set, missing or
    /// damaged, with how to fetch what is not there. Exits 1 when any is missing or damaged.
    Check(CheckArgs),
}

#[derive(Debug, Args)]
pub struct CheckArgs {
    /// Sector size to check, e.g. 32GiB [default: every size with files in the directory].
    #[arg(long, value_name = "SIZE")]
    pub sector_size: Option<String>,
    /// Parameter directory [default: the config's [params] dir, which defaults to
    /// $FIL_PROOFS_PARAMETER_CACHE or /var/tmp/filecoin-proof-parameters].
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Config file (TOML), for [params] dir and [synthesis] precompiled_dir.
    #[arg(long, short = 'c', value_name = "FILE", env = "SNARKD_CONFIG")]
    pub config: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct CircuitsArgs {
    /// Sector size, e.g. 2KiB (test sizes: 2KiB, 8MiB; larger ones take hours and hundreds of GiB).
    #[arg(long, value_name = "SIZE")]
    pub sector_size: String,
    /// Proof kinds: porep, snap, wpost, winning (repeatable; default all four).
    #[arg(long = "kind", value_name = "KIND")]
    pub kinds: Vec<String>,
    /// Parameter directory [default: $FIL_PROOFS_PARAMETER_CACHE or /var/tmp/filecoin-proof-parameters].
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    /// Config file (TOML); see `snarkd config default`. Without one, the defaults apply.
    #[arg(long, short = 'c', value_name = "FILE", env = "SNARKD_CONFIG")]
    pub config: Option<PathBuf>,
    /// gRPC address, `host:port` or `unix:///path.sock` (overrides [daemon] listen).
    #[arg(long, value_name = "ADDR")]
    pub listen: Option<ListenAddr>,
    /// HTTP address for /status, /metrics, gRPC-web and the monitor (overrides [daemon] http_listen).
    #[arg(long, value_name = "ADDR")]
    pub http_listen: Option<TcpAddr>,
    /// Once serving, write this file (JSON: pid, the gRPC and HTTP addresses as bound, so port 0
    /// shows the port chosen); removed on exit. For tools that start snarkd and wait for it.
    #[arg(long, value_name = "FILE", env = "SNARKD_READY_FILE")]
    pub ready_file: Option<PathBuf>,
}

impl RunArgs {
    pub fn overrides(&self) -> Overrides {
        Overrides {
            listen: self.listen.clone(),
            http_listen: self.http_listen,
        }
    }
}

#[derive(Debug, Subcommand)]
pub enum ConfigCommand {
    /// Print the default config with every key documented.
    Default,
    /// Print the snarkd config a cuzk daemon config amounts to: each cuzk key moved to the
    /// snarkd key that means the same, or dropped with a comment saying what to set instead.
    /// (snarkd also runs on a cuzk config as it is, logging the same notes as warnings.)
    FromCuzk {
        /// The cuzk config (TOML), e.g. /data/zk/cuzk.toml.
        file: PathBuf,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_flags_parse_into_overrides() {
        let cli = Cli::try_parse_from([
            "snarkd",
            "run",
            "--config",
            "s.toml",
            "--listen",
            "unix:///run/s.sock",
            "--http-listen",
            "127.0.0.1:0",
        ])
        .unwrap();
        let Command::Run(args) = cli.command else {
            panic!("not run")
        };
        assert_eq!(args.config, Some(PathBuf::from("s.toml")));
        let o = args.overrides();
        assert_eq!(o.listen, Some(ListenAddr::Unix("/run/s.sock".into())));
        assert_eq!(o.http_listen.map(|a| a.0.port()), Some(0));
    }

    #[test]
    fn bad_flags_name_the_flag_and_the_expected_form() {
        let err = Cli::try_parse_from(["snarkd", "run", "--listen", "nowhere"])
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("--listen") && err.contains("host:port"),
            "{err}"
        );
    }

    #[test]
    fn version_carries_the_commit() {
        let err = Cli::try_parse_from(["snarkd", "--version"]).unwrap_err();
        assert_eq!(err.kind(), clap::error::ErrorKind::DisplayVersion);
        assert!(err.to_string().contains("(commit "), "{err}");
    }
}
