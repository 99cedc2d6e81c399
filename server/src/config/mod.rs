//! The daemon's one immutable [`Config`], built once at startup from built-in defaults, then the
//! TOML file, then `SNARKD_<SECTION>_<KEY>` environment variables, then command-line flags (each
//! overriding the one before). Unknown keys and bad values are errors that name the key.
//!
//! Layout:
//! - `mod.rs`: the sections and their defaults, validation, and the engine's settings derived from them.
//! - `values`: value types that parse from text (listen addresses, memory budget, backend, ...).
//! - `sources`: reading the file and the environment and merging them in order.
//! - `access`: `[http]`, `[auth]` and `[tls]`: who may call what on which port.
//! - `limits`: `[limits]`: bounds on what clients can make the daemon hold.
//! - `paths`: the default state directory (journal, pre-compiled circuits) and monitor.
//! - `machine_memory`: what memory `[memory] budget = "auto"` starts from (hugepages, cgroup).
//! - `cuzk`: a cuzk daemon config read as snarkd's (keys moved, dropped with a note, or refused).
//! - `scheduler`: `[scheduler]`: each kind's usual priority and the most it may claim.
//! - `jobs`: `[jobs]`: the job journal that keeps accepted jobs and results across restarts.
//! - `default.toml`: the fully commented default config `snarkd config default` prints; a test
//!   keeps it equal to the defaults in code.

mod access;
mod cuzk;
mod jobs;
mod limits;
mod machine_memory;
pub mod paths;
mod scheduler;
mod sources;
mod values;

#[cfg(test)]
mod cuzk_tests;
#[cfg(test)]
mod tests;

use std::path::{Path, PathBuf};
use std::time::Duration;

use bytesize::ByteSize;
use serde::Deserialize;
use snarkd_engine::EngineConfig;
use snarkd_prover::groth16::G2On;
use snarkd_prover::ProofKind;

pub use access::{AuthSection, HttpSection, TlsSection};
pub use jobs::JobsSection;
pub use limits::LimitsSection;
pub use machine_memory::MachineMemory;
pub use scheduler::SchedulerSection;
pub use snarkd_engine::Lookahead;
pub use sources::{ConfigError, Overrides};
pub use values::{Backend, FileMode, ListenAddr, LogFormat, MemoryBudget, TcpAddr, Workers};

/// The commented default config, as printed by `snarkd config default`.
pub const DEFAULT_TOML: &str = include_str!("default.toml");

/// Everything the daemon is configured with. Built by [`Config::load`]; never changed afterwards.
#[derive(Debug, Clone, PartialEq, Deserialize, Default)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    pub daemon: DaemonSection,
    pub jobs: JobsSection,
    pub params: ParamsSection,
    pub memory: MemorySection,
    pub gpus: GpusSection,
    pub scheduler: SchedulerSection,
    pub synthesis: SynthesisSection,
    pub pipeline: PipelineSection,
    pub logging: LoggingSection,
    pub http: HttpSection,
    pub auth: AuthSection,
    pub tls: TlsSection,
    pub limits: LimitsSection,
    /// Notes on a cuzk config's keys, moved or dropped (`cuzk.rs`), logged at startup.
    #[serde(skip)]
    pub carried_over: Vec<String>,
}

/// `[daemon]`: where the daemon listens and how it ends.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DaemonSection {
    /// gRPC address: `host:port` or `unix:///path.sock`.
    pub listen: ListenAddr,
    /// HTTP address for /status, /metrics, /healthz, gRPC-web and the monitor.
    pub http_listen: TcpAddr,
    /// How long finished jobs stay in the status (and in memory). With the job journal their
    /// results stay readable for `[jobs] result_retention`.
    #[serde(with = "humantime_serde")]
    pub retention: Duration,
    /// How long a SIGINT/SIGTERM waits for running jobs before the daemon exits anyway.
    #[serde(with = "humantime_serde")]
    pub drain_timeout: Duration,
    /// The built monitor (static files) served on the HTTP port; unset: the installed copy
    /// beside the binary, else a checkout's build ([`paths::default_monitor_dir`]).
    pub monitor_dir: Option<PathBuf>,
    /// Permissions of the unix socket when `listen` is one.
    pub socket_mode: FileMode,
}

impl Default for DaemonSection {
    fn default() -> Self {
        DaemonSection {
            listen: ListenAddr::Tcp(([127, 0, 0, 1], 9820).into()),
            http_listen: TcpAddr(([127, 0, 0, 1], 9821).into()),
            retention: Duration::from_secs(30),
            drain_timeout: Duration::from_secs(5 * 60),
            monitor_dir: None,
            socket_mode: FileMode(0o660),
        }
    }
}

/// `[params]`: the Groth16 parameter files.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ParamsSection {
    pub dir: PathBuf,
    /// Circuits (`porep-32g`, `wpost-32g`, …) loaded at start, in the background.
    pub preload: Vec<String>,
}

impl Default for ParamsSection {
    fn default() -> Self {
        ParamsSection {
            dir: snarkd_prover::default_params_dir(),
            preload: Vec::new(),
        }
    }
}

/// `[memory]`: the budget every partition reservation and loaded parameter set is taken from.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct MemorySection {
    pub budget: MemoryBudget,
    pub safety_margin: ByteSize,
    /// Memory "auto" leaves to processes beside snarkd (Curio on the same box).
    pub reserve: ByteSize,
    /// The smallest buffer of a finished partition kept for the next one.
    pub keep_buffers_from: ByteSize,
}

impl Default for MemorySection {
    fn default() -> Self {
        MemorySection {
            budget: MemoryBudget::Auto,
            safety_margin: ByteSize::gib(4),
            reserve: ByteSize::b(0),
            keep_buffers_from: ByteSize::mib(64),
        }
    }
}

/// `[gpus]`: which devices run the device phase and how.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct GpusSection {
    pub backend: Backend,
    /// Devices to use, each an ordinal (`"0"`) or part of a device name; empty means all.
    #[serde(deserialize_with = "values::device_list")]
    pub devices: Vec<String>,
    /// Partitions in their device phase on one device at once: "auto" (two on a GPU whose
    /// memory holds two of the largest partitions' working memory beside their bases, one
    /// elsewhere) or a number.
    #[serde(deserialize_with = "values::workers")]
    pub workers_per_device: Workers,
    /// Most terms of one multiexp launch on a device; 0 lets device memory decide.
    pub max_chunk_terms: usize,
    /// Multiexp work groups per compute unit; 0 lets the device's kind decide.
    pub work_groups_per_unit: usize,
    /// Tries of a failed device step on the device before it runs on the CPU.
    pub device_attempts: u32,
    /// Failed device steps in a row after which a device is marked unhealthy and skipped.
    pub unhealthy_after: u32,
    /// Keep each circuit's bases on the device while its parameters are loaded.
    pub keep_params: bool,
    /// Limb width of the OpenCL field code: 32 or 64.
    pub limb_bits: u32,
    /// Where B's G2 multiexp runs: "device" (with the other multiexps) or "cpu" (on the host's
    /// threads beside the device's G1 multiexps, where the budget has room for its scalars;
    /// its bases are not kept on the device).
    pub b_g2: G2On,
    /// How often devices are read (NVML, the memory pool); zero never.
    #[serde(with = "humantime_serde")]
    pub telemetry_interval: Duration,
    /// Kinds proved on the CPU while no device is ready yet, besides WinningPoSt (always).
    #[serde(deserialize_with = "values::kind_list")]
    pub cpu_while_warming: Vec<ProofKind>,
    /// Where compiled kernels are kept between starts; unset means `kernels/` in the state
    /// directory.
    pub kernel_cache: Option<PathBuf>,
}

impl Default for GpusSection {
    fn default() -> Self {
        GpusSection {
            backend: Backend::Auto,
            devices: Vec::new(),
            workers_per_device: Workers::Auto,
            max_chunk_terms: 0,
            work_groups_per_unit: 0,
            device_attempts: 2,
            unhealthy_after: 3,
            keep_params: true,
            limb_bits: 64,
            b_g2: G2On::Device,
            telemetry_interval: Duration::from_secs(5),
            cpu_while_warming: Vec::new(),
            kernel_cache: None,
        }
    }
}

/// `[synthesis]`: CPU circuit synthesis.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SynthesisSection {
    /// Most partitions synthesized at once; 0 means one per CPU core.
    pub threads: usize,
    /// Synthesize from each circuit's pre-compiled matrices (a witness pass plus sparse
    /// products) once they are loaded with the circuit's parameters.
    pub precompiled: bool,
    /// Where the pre-compiled matrices are written; unset means `precompiled/` in the state
    /// directory. Valid ones beside the parameters (`snarkd params precompile`) are read too.
    pub precompiled_dir: Option<PathBuf>,
    /// With the pre-compiled matrices, compute the witness natively (every kind has a native
    /// witness) instead of running the circuit's gadgets.
    pub native_witness: bool,
}

impl Default for SynthesisSection {
    fn default() -> Self {
        SynthesisSection {
            threads: 0,
            precompiled: true,
            precompiled_dir: None,
            native_witness: true,
        }
    }
}

/// `[pipeline]`: how partitions flow from CPU synthesis to the devices, and how often a failed
/// one is tried again.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PipelineSection {
    /// Times a partition whose device phase failed (or whose proof did not verify) is
    /// synthesized and proved again before its job fails.
    pub partition_retries: u32,
    /// Most partitions below HIGH synthesizing or synthesized and waiting for a device at
    /// once: "auto" (two syntheses, or fewer threads, plus two per device), a number, or 0 for no limit
    /// beyond `[synthesis] threads` and the memory budget.
    #[serde(deserialize_with = "values::lookahead")]
    pub synthesis_lookahead: Lookahead,
}

impl Default for PipelineSection {
    fn default() -> Self {
        PipelineSection {
            partition_retries: 1,
            synthesis_lookahead: Lookahead::Auto,
        }
    }
}

/// `[logging]`: what is logged and how.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LoggingSection {
    /// A level for snarkd's own lines (dependencies log warnings) such as `info`, or a tracing
    /// filter such as `snarkd=debug,info`; `RUST_LOG` wins when set.
    pub level: String,
    pub format: LogFormat,
}

impl Default for LoggingSection {
    fn default() -> Self {
        LoggingSection {
            level: "info".into(),
            format: LogFormat::Text,
        }
    }
}

impl Config {
    /// Builds the config from the defaults, the file at `path` (if any), the process environment
    /// and the command-line `overrides`.
    pub fn load(path: Option<&Path>, overrides: &Overrides) -> Result<Config, ConfigError> {
        sources::load(path, std::env::vars(), overrides)
    }

    /// `snarkd config from-cuzk FILE`: the snarkd config a cuzk config amounts to.
    pub fn from_cuzk(path: &Path) -> Result<String, ConfigError> {
        sources::from_cuzk(path)
    }

    /// Checks what types alone cannot; the error names the key.
    fn validate(&self) -> Result<(), (String, String)> {
        let invalid = |key: &str, msg: &str| Err((key.to_string(), msg.to_string()));
        if self.daemon.retention < Duration::from_secs(1) {
            return invalid(
                "daemon.retention",
                "must be at least 1s: AwaitProof reads a finished job during this time",
            );
        }
        if self.gpus.work_groups_per_unit > 64 {
            return invalid(
                "gpus.work_groups_per_unit",
                "must be at most 64 (0 lets the device decide): each work item holds a point in \
                 device memory",
            );
        }
        if self.gpus.workers_per_device == Workers::Fixed(0) {
            return invalid(
                "gpus.workers_per_device",
                "must be at least 1: a device without workers proves nothing",
            );
        }
        if !matches!(self.gpus.limb_bits, 32 | 64) {
            return invalid(
                "gpus.limb_bits",
                "must be 32 or 64: the limb width the OpenCL field code is built with",
            );
        }
        if self.gpus.unhealthy_after == 0 {
            return invalid(
                "gpus.unhealthy_after",
                "must be at least 1: a device is marked unhealthy after that many failures in a row",
            );
        }
        self.http.validate()?;
        self.auth.validate(&self.daemon.listen)?;
        self.tls
            .validate(matches!(self.daemon.listen, ListenAddr::Unix(_)))?;
        self.limits.validate()?;
        self.jobs.validate()?;
        for id in &self.params.preload {
            if let Err(e) = snarkd_prover::CircuitId::parse(id) {
                return Err((
                    "params.preload".into(),
                    format!("{id:?}: {e}; name circuits such as \"porep-32g\" or \"wpost-32g\""),
                ));
            }
        }
        self.scheduler.validate()?;
        if let Err(err) = tracing_subscriber::EnvFilter::try_new(&self.logging.level) {
            return Err((
                "logging.level".into(),
                format!(
                    "{:?} is not a log filter ({err}): write a level such as \"info\" or \"snarkd=debug,info\"",
                    self.logging.level
                ),
            ));
        }
        Ok(())
    }

    /// Where the pre-compiled circuits are kept, or `None` when `[synthesis] precompiled` is off.
    pub fn precompiled_dir(&self) -> Option<PathBuf> {
        self.synthesis.precompiled.then(|| {
            self.synthesis
                .precompiled_dir
                .clone()
                .unwrap_or_else(|| paths::state_dir().join("precompiled"))
        })
    }

    /// Where compiled kernels are kept: `[gpus] kernel_cache`, else `kernels/` in the state
    /// directory.
    pub fn kernel_cache_dir(&self) -> PathBuf {
        self.gpus
            .kernel_cache
            .clone()
            .unwrap_or_else(|| paths::state_dir().join("kernels"))
    }

    /// The monitor's directory: `[daemon] monitor_dir`, else the installed or checkout build.
    pub fn monitor_dir(&self) -> PathBuf {
        self.daemon
            .monitor_dir
            .clone()
            .unwrap_or_else(paths::default_monitor_dir)
    }

    /// Partition syntheses allowed at once on this machine.
    pub fn synthesis_threads(&self) -> usize {
        self.synthesis_threads_on(std::thread::available_parallelism().map_or(1, |n| n.get()))
    }

    /// Partition syntheses allowed at once on a machine of `cores` cores.
    pub fn synthesis_threads_on(&self, cores: usize) -> usize {
        match self.synthesis.threads {
            0 => cores,
            n => n,
        }
    }

    /// The memory budget in bytes on a machine with `usable` bytes of memory (physical less
    /// hugepages, or its cgroup's limit).
    pub fn memory_budget_on(&self, usable: u64) -> Result<u64, ConfigError> {
        let m = &self.memory;
        m.budget
            .resolve(usable, m.safety_margin, m.reserve)
            .map_err(|msg| ConfigError::Invalid {
                key: "memory.budget".into(),
                msg,
                origin: String::new(),
            })
    }

    /// The memory budget in bytes on this machine, and how it was reckoned (for the log).
    pub fn memory_budget(&self) -> Result<(u64, String), ConfigError> {
        let m = &self.memory;
        let machine = MachineMemory::read();
        let bytes = self.memory_budget_on(machine.usable())?;
        let how = match m.budget {
            MemoryBudget::Fixed(_) => "set by [memory] budget".to_string(),
            MemoryBudget::Auto => format!(
                "auto: {machine}; less safety_margin {} and reserve {}",
                m.safety_margin.to_string_as(true),
                m.reserve.to_string_as(true)
            ),
        };
        Ok((bytes, how))
    }

    /// The engine's settings. Made once startup is done (runtime, devices): the process's
    /// resident memory then is the budget's baseline, charged to it for the daemon's life, and
    /// a budget with nothing left above it is an error that says the minimum. Logs the budget
    /// and how it was reckoned.
    pub fn engine_config(&self) -> Result<EngineConfig, ConfigError> {
        self.engine_config_reckoned().map(|(config, _)| config)
    }

    /// [`Config::engine_config`] and how its memory budget was reckoned (for the startup
    /// summary).
    pub fn engine_config_reckoned(&self) -> Result<(EngineConfig, String), ConfigError> {
        let (memory_budget_bytes, reckoned) = self.memory_budget()?;
        let baseline_bytes = resident_memory_bytes();
        tracing::info!(budget = %ByteSize(memory_budget_bytes).to_string_as(true),
            baseline = %ByteSize(baseline_bytes).to_string_as(true), %reckoned, "memory budget");
        if memory_budget_bytes <= baseline_bytes {
            return Err(ConfigError::Invalid {
                key: "memory.budget".into(),
                msg: format!(
                    "{} is less than snarkd itself holds after startup ({}, charged to the \
                     budget): set it above {}, plus room for the partitions to prove at once",
                    ByteSize(memory_budget_bytes),
                    ByteSize(baseline_bytes),
                    ByteSize(baseline_bytes)
                ),
                origin: String::new(),
            });
        }
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let config = self.engine_config_on(memory_budget_bytes, baseline_bytes, cores);
        Ok((config, reckoned))
    }

    /// The engine's settings on a machine of `cores` cores with this budget and baseline: what
    /// the daemon runs with here, and what a simulation of another box (`snarkd-bench plan`)
    /// runs with there.
    pub fn engine_config_on(
        &self,
        memory_budget_bytes: u64,
        baseline_bytes: u64,
        cores: usize,
    ) -> EngineConfig {
        EngineConfig {
            memory_budget_bytes,
            baseline_bytes,
            synthesis_threads: self.synthesis_threads_on(cores),
            retention: self.daemon.retention,
            partition_retries: self.pipeline.partition_retries,
            synthesis_lookahead: self.pipeline.synthesis_lookahead,
            limits: self.limits.intake(),
            background_nice: self.scheduler.background_nice,
            preempt: self.scheduler.preempt,
            device_telemetry_interval: self.gpus.telemetry_interval,
            version: crate::build_info::VERSION.to_string(),
            build_id: crate::build_info::BUILD_ID.to_string(),
        }
    }
}

/// This process's resident memory (0 where it cannot be read).
pub fn resident_memory_bytes() -> u64 {
    let Ok(pid) = sysinfo::get_current_pid() else {
        return 0;
    };
    let mut system = sysinfo::System::new();
    system.refresh_processes(sysinfo::ProcessesToUpdate::Some(&[pid]), true);
    system.process(pid).map_or(0, |p| p.memory())
}

/// Total physical memory of this machine.
pub fn total_memory_bytes() -> u64 {
    let mut system = sysinfo::System::new();
    system.refresh_memory();
    system.total_memory()
}
