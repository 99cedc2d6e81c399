//! The startup summary: what this snarkd runs on, in one INFO block in the log and as
//! `startup` in `GET /status`. Version and commit; the backend asked for and the devices chosen
//! (name, PCI bus id, memory, driver), and whether a GPU was expected but the CPU proves; the
//! memory budget and how it was reckoned; the params directory with, per circuit of each sector
//! size there, whether its files are the published ones, a local test set, missing or damaged,
//! and whether its pre-compiled circuit is recorded; the job journal and the jobs recovered from
//! it; the listeners. The params check reads files whose digests are not cached yet (minutes for
//! a 32 GiB set, once), so the summary is gathered after snarkd serves, off the async runtime.

use std::fmt;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use bytesize::ByteSize;
use serde::Serialize;

use crate::params_check::CircuitParams;

/// One device the engine runs workers on.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct DeviceSummary {
    pub ordinal: u32,
    pub name: String,
    pub memory_bytes: u64,
    /// PCI bus id in NVML's form (`00000000:01:00.0`), where the driver says.
    pub pci_bus_id: Option<String>,
    /// Platform and driver version, where there is a driver.
    pub driver: Option<String>,
}

/// What the daemon knows of itself once it serves.
#[derive(Clone, Debug, Serialize)]
pub struct StartupSummary {
    pub version: String,
    pub build_id: String,
    /// `[gpus] backend` as configured: auto, cpu or opencl.
    pub backend: String,
    /// A GPU was expected (backend auto or opencl) but the CPU proves.
    pub gpu_fallback: bool,
    pub devices: Vec<DeviceSummary>,
    pub memory_budget_bytes: u64,
    pub memory_reckoned: String,
    pub params_dir: PathBuf,
    pub precompiled_dir: Option<PathBuf>,
    pub params: Vec<CircuitParams>,
    /// None when `[jobs] journal = false`.
    pub journal_dir: Option<PathBuf>,
    pub recovered_jobs: usize,
    pub grpc: String,
    pub http: String,
}

/// Where the summary is published once gathered (shared with the HTTP port's `/status`).
pub type Published = Arc<OnceLock<StartupSummary>>;

impl fmt::Display for StartupSummary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let size = |b: u64| ByteSize(b).to_string_as(true);
        writeln!(f, "  version:  {} (commit {})", self.version, self.build_id)?;
        let fallback = if self.gpu_fallback {
            " -- NO GPU FOUND: proving on the CPU"
        } else {
            ""
        };
        writeln!(f, "  backend:  {}{fallback}", self.backend)?;
        for d in &self.devices {
            writeln!(
                f,
                "  device {}: {}, {}, PCI {}, driver {}",
                d.ordinal,
                d.name,
                size(d.memory_bytes),
                d.pci_bus_id.as_deref().unwrap_or("-"),
                d.driver.as_deref().unwrap_or("-")
            )?;
        }
        writeln!(
            f,
            "  memory:   budget {} ({})",
            size(self.memory_budget_bytes),
            self.memory_reckoned
        )?;
        writeln!(f, "  params:   {}", self.params_dir.display())?;
        if self.params.is_empty() {
            writeln!(f, "    no parameter files (snarkd params check --sector-size 32GiB says what to fetch)")?;
        }
        for c in &self.params {
            let matrices = if c.precompiled {
                "pre-compiled"
            } else {
                "not pre-compiled yet"
            };
            writeln!(
                f,
                "    {}: {}, {matrices}",
                c.check.circuit,
                c.check.summary().describe()
            )?;
        }
        if let Some(dir) = &self.precompiled_dir {
            writeln!(f, "  matrices: {}", dir.display())?;
        }
        match &self.journal_dir {
            Some(dir) => writeln!(
                f,
                "  journal:  {} ({} unfinished job(s) recovered)",
                dir.display(),
                self.recovered_jobs
            )?,
            None => writeln!(f, "  journal:  off (jobs are kept in memory only)")?,
        }
        write!(f, "  listening: gRPC {}, HTTP {}", self.grpc, self.http)
    }
}

impl StartupSummary {
    /// Logs the summary as one INFO block, and a WARN for each circuit whose files are damaged
    /// or half there.
    pub fn log(&self) {
        tracing::info!(
            version = %self.version,
            backend = %self.backend,
            gpu_fallback = self.gpu_fallback,
            devices = self.devices.len(),
            budget = %ByteSize(self.memory_budget_bytes).to_string_as(true),
            summary = %format_args!("\n{self}"),
            "startup summary"
        );
        for c in &self.params {
            let absent = [&c.check.params.verdict, &c.check.vk.verdict]
                .iter()
                .all(|v| **v == snarkd_prover::params::check::Verdict::Missing);
            if !c.check.summary().is_sound() && !absent {
                tracing::warn!(circuit = %c.check.circuit, verdict = %c.check.summary().describe(),
                    "parameter files not usable: `snarkd params check` says which and how to fetch them");
            }
        }
    }
}
