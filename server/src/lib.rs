//! snarkd, the daemon: serves the `cuzk.v1.ProvingEngine` gRPC contract (what Curio's cuzk
//! client speaks) plus a status stream, health, reflection and an HTTP port for operators, over
//! the proving engine in `snarkd-engine`.
//!
//! Layout:
//! - `cli`: the command line (`run`, `config default`, `params`, `devices`, `health`,
//!   `--version`); `health_cmd`: `snarkd health`, the containers' healthcheck.
//! - `allocator`: glibc's malloc arenas capped.
//! - `params_check`: the parameter files against their published digests, and the inventory the
//!   startup summary shows.
//! - `startup`: the startup summary.
//! - `service`: life under systemd (READY, STATUS, the watchdog, journald).
//! - `params_cmd`: `params generate` and `params precompile`, with progress on the terminal.
//! - `config`: the one immutable config from defaults, file, `SNARKD_*` environment and flags.
//! - `api`: the gRPC service; the only module that knows protobuf.
//! - `http`: `/status`, `/metrics`, `/healthz` and the monitor's static files.
//! - `proving`: the engine's `Prover` made of `snarkd-prover`'s real Filecoin circuits.
//! - `serve`: binding ports, running both servers, two-phase shutdown.
//! - `telemetry`: tracing subscriber and the Prometheus recorder.
//! - `ready`: the ready file `run --ready-file` writes, and waiting for it (tools and tests).
//! - `build_info`: version and git commit.
//! - `once_per_second`: log lines a client can cause, at most one a second.

pub mod allocator;
pub mod api;
pub mod build_info;
pub mod cli;
pub mod config;
pub mod health_cmd;
pub mod http;
pub mod once_per_second;
pub mod params_check;
pub mod params_cmd;
pub mod proving;
pub mod ready;
pub mod serve;
pub mod service;
pub mod startup;
pub mod telemetry;

#[cfg(test)]
mod fixture;

pub use config::Config;
pub use serve::{Daemon, Drained};
