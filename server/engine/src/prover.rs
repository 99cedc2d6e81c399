//! What the engine needs from a prover, as traits, so the pipeline can be tested without a GPU and
//! without knowing Filecoin. `snarkd` implements them with `snarkd-prover`'s real circuits.
//!
//! Heavy methods (`plan`, `load_params`, `synthesize`, `prove`, `finalize`) are always called on
//! the engine's own threads, never on the async runtime.
//!
//! What a prover makes on the way (a decoded job, loaded parameters, a synthesized partition) is
//! one of its associated types: the engine carries them from step to step without looking
//! inside, and the compiler checks that each step gets what the previous one made.

use std::sync::Arc;
use std::time::Duration;

use crate::domain::ProofRequest;
use crate::error::EngineError;
pub use snarkd_types::{FailureClass, PhaseHooks};

/// Why a step (synthesis, device phase, finalize) failed, with whose fault it is. Only a device
/// phase is ever run again (from synthesis, see `[pipeline] partition_retries`), and only for a
/// device fault or a panic: synthesis and finalize run on the CPU from the request alone, so what
/// fails there fails again.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StepError {
    /// The step failed; `class` says whose fault it is ([`FailureClass::Device`]: the device or
    /// the machine failed, and running the step again may succeed; any other: it fails the same
    /// way every time).
    #[error("{message}")]
    Failed {
        class: FailureClass,
        message: String,
    },
    /// The step panicked: a bug in the prover. The message is the panic's. A device phase that
    /// panics is retried like a device fault (a driver can panic on a transient error); other
    /// steps are not.
    #[error("internal error (panic): {0}")]
    Panicked(String),
    /// A device phase stopped at a step boundary because its job ended: nothing failed.
    #[error("the device phase stopped: its job ended")]
    Stopped,
}

impl StepError {
    /// A step failed for `class`'s reason, saying `message`.
    pub fn new(class: FailureClass, message: impl Into<String>) -> StepError {
        StepError::Failed {
            class,
            message: message.into(),
        }
    }

    /// Whether running the device phase again may succeed.
    pub fn is_retryable(&self) -> bool {
        matches!(
            self,
            StepError::Failed {
                class: FailureClass::Device,
                ..
            } | StepError::Panicked(_)
        )
    }

    /// Whose fault it is (a panic is a bug; a stop is not a failure, and only a bug makes it one).
    pub fn class(&self) -> FailureClass {
        match self {
            StepError::Failed { class, .. } => *class,
            StepError::Panicked(_) | StepError::Stopped => FailureClass::Bug,
        }
    }
}

/// A circuit's parameters as a prover loaded them.
pub struct LoadedParams<T> {
    pub params: Arc<T>,
    /// Bytes they hold in memory, every part included.
    pub bytes: u64,
    /// The part of `bytes` that is the circuit's pre-compiled matrices (0: none loaded).
    pub precompiled_bytes: u64,
}

/// One device the engine runs workers on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceInfo {
    pub ordinal: u32,
    pub name: String,
    pub memory_bytes: u64,
    /// Device workers the engine runs on it (at least one): partitions in their device phase
    /// on it at once.
    pub workers: usize,
}

/// One device's readings. Each is `None` where the device cannot give it (no NVIDIA driver, a
/// device NVML does not know, the CPU backend), never a zero standing for "unknown".
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct DeviceTelemetry {
    /// The device's ordinal, as in [`DeviceInfo`].
    pub ordinal: u32,
    /// Share of the last sample period the device ran a kernel, 0–100.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub utilization_percent: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory_used_bytes: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory_total_bytes: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub temperature_celsius: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub power_milliwatts: Option<u32>,
    /// The backend's device-memory pool: reserved by device phases now, and its limit.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pool_used_bytes: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pool_limit_bytes: Option<u64>,
    /// Set while the device is being set up (its kernels built or loaded): what it is doing.
    /// Its WinningPoSt partitions are proved on the CPU meanwhile, the others wait for it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub warming: Option<String>,
}

impl DeviceTelemetry {
    /// Whether the device reported nothing at all.
    pub fn is_empty(&self) -> bool {
        *self
            == DeviceTelemetry {
                ordinal: self.ordinal,
                ..Default::default()
            }
    }
}

/// Memory one partition needs, estimated before synthesis.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PartitionMemory {
    /// The most the partition holds at once, from synthesis to finalize (reserved at admission).
    pub total_bytes: u64,
    /// What the device phase gives back as soon as it has consumed the a/b/c evaluations.
    pub abc_bytes: u64,
}

/// What waiting for a circuit's parameters saves a partition, when the prover synthesizes
/// faster with them (a pre-compiled circuit) than without: estimates the prover makes from the
/// circuit's shape and files.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FastPath {
    /// How long loading the parameters (and what comes with them) takes from its start.
    pub load: Duration,
    /// How much longer one partition takes synthesized without them.
    pub plain_extra: Duration,
}

impl FastPath {
    /// Whether `waiting` partitions should wait for a load begun `loading_for` ago rather than
    /// be synthesized now without it: while what is left of the load costs less than the extra
    /// work they would do without it (on the same cores the load needs).
    pub fn worth_waiting(&self, loading_for: Duration, waiting: u32) -> bool {
        self.load.saturating_sub(loading_for) < self.plain_extra.saturating_mul(waiting)
    }
}

/// Host memory a prover keeps after the partitions that used it are done, for the next ones:
/// buffers already faulted in, so a partition written into them spares the kernel handing out
/// and zeroing fresh pages. The engine's budget counts it (`budget.rs`): bytes a finishing
/// partition gives back while more is kept than the budget counts as kept stay held, and the
/// engine has it freed before it would refuse or evict anything for want of room.
pub trait SpareMemory: Send + Sync {
    /// Bytes kept now.
    fn held(&self) -> u64;
    /// Frees what is kept until at least `bytes` are freed or nothing is kept; the bytes freed.
    fn trim(&self, bytes: u64) -> u64;
}

/// One decoded request: what the engine needs to schedule it, and the prover's own plan.
pub struct Planned<T> {
    /// The parameters it needs, e.g. `porep-32g`.
    pub circuit_id: String,
    pub partitions: u32,
    pub memory: PartitionMemory,
    /// Set where the prover synthesizes faster once the parameters are loaded: partitions
    /// below HIGH priority then wait for a load that is worth waiting for.
    pub fast_path: Option<FastPath>,
    /// What the prover decoded, handed back to its `synthesize` and `finalize`.
    pub plan: T,
}

/// Makes proofs: parses requests, loads parameters, synthesizes partitions, runs the device
/// phase and assembles the proof.
pub trait Prover: Send + Sync + 'static {
    /// One decoded request, shared by the job's synthesis threads and its finalize.
    type Plan: Send + Sync + 'static;
    /// A circuit's loaded parameters, shared by every job of the circuit.
    type Params: Send + Sync + 'static;
    /// One synthesized partition, on its way from synthesis to the device phase.
    type Partition: Send + 'static;
    /// One partition's proof, kept as the device phase made it until the job is assembled; its
    /// bytes ([`Prover::proof_bytes`]) are only for the journal.
    type Proof: Clone + Send + Sync + 'static;

    /// The device-phase backend, e.g. `cpu`.
    fn backend_name(&self) -> String;
    /// A GPU was asked for but none was found, so the CPU proves (the status says so).
    fn gpu_fallback(&self) -> bool {
        false
    }
    /// The devices to run workers on.
    fn devices(&self) -> Vec<DeviceInfo>;
    /// Decodes and checks a request once: a malformed one is `InvalidRequest`, one this machine
    /// cannot serve (its parameters are missing) `Setup`. The request is moved in so its bytes
    /// are dropped as soon as they are decoded.
    fn plan(&self, request: ProofRequest) -> Result<Planned<Self::Plan>, EngineError>;
    /// Whether the circuit id names parameters this prover knows.
    fn knows_circuit(&self, circuit_id: &str) -> bool;
    /// Bytes the circuit's parameters take in memory, estimated before loading.
    fn params_size_estimate(&self, circuit_id: &str) -> u64;
    /// Loads a circuit's parameters (with whatever the prover keeps beside them). A file that
    /// is missing or unreadable is `Setup`.
    fn load_params(&self, circuit_id: &str) -> Result<LoadedParams<Self::Params>, EngineError>;
    /// CPU synthesis of one partition. `params` are the job's parameters when they are already
    /// loaded (a prover may synthesize faster with what they hold: a pre-compiled circuit),
    /// `None` while they are still loading; the partition must come out the same either way.
    fn synthesize(
        &self,
        plan: &Self::Plan,
        index: u32,
        params: Option<&Self::Params>,
    ) -> Result<Self::Partition, StepError>;
    /// The device phase of one partition on one device, telling `hooks` when the a/b/c
    /// evaluations are dropped (the engine returns that memory early) and when each step ends
    /// (where a deadline partition may run first).
    fn prove(
        &self,
        device: &DeviceInfo,
        partition: Self::Partition,
        params: &Self::Params,
        hooks: &mut dyn PhaseHooks,
    ) -> Result<Self::Proof, StepError>;
    /// Assembles the partition proofs (in partition order) and verifies the whole proof.
    fn finalize(
        &self,
        plan: &Self::Plan,
        partition_proofs: Vec<Self::Proof>,
        params: &Self::Params,
    ) -> Result<Vec<u8>, StepError>;
    /// A partition proof as the journal keeps it.
    fn proof_bytes(&self, proof: &Self::Proof) -> Vec<u8>;
    /// A partition proof the journal kept, read back after a restart; one that does not read
    /// is an error (its partition is proved again).
    fn read_proof(&self, bytes: &[u8]) -> Result<Self::Proof, StepError>;
    /// What the devices report of themselves now (utilisation, memory, temperature, power, the
    /// backend's memory pool), one entry per device that reports anything. Called every
    /// `EngineConfig::device_telemetry_interval` on a thread of its own (it may block on a
    /// driver); a first answer that is empty means this prover has nothing to report, and the
    /// engine stops asking.
    fn read_devices(&self) -> Vec<DeviceTelemetry> {
        Vec::new()
    }
    /// What this prover keeps of finished partitions for the next ones, for the budget to count;
    /// `None`: it keeps nothing. Asked once, when the engine starts: a prover keeps nothing
    /// before it is asked, since nothing would count it.
    fn spare_memory(&self) -> Option<Arc<dyn SpareMemory>> {
        None
    }
}
