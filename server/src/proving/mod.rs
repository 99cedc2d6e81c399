//! The engine's [`Prover`] implemented with `snarkd-prover`'s real Filecoin circuits: requests are
//! decoded into [`PreparedJob`]s, parameters come from the params directory, the device phase runs
//! on a [`DeviceBackend`] and every final proof is verified before the engine reports it.
//!
//! Layout:
//! - `mod.rs`: [`FilecoinProver`], the engine's prover: a job's plan is the prover crate's
//!   [`PreparedJob`], its params [`LoadedParams`], a synthesized partition [`SynthesizedPartition`].
//! - `devices.rs`: `[gpus]` → one backend per selected device; `snarkd devices`.
//! - `readings.rs`: what the devices report of themselves (NVML, the backends' memory pools).

pub mod devices;
mod readings;

use std::path::PathBuf;
use std::sync::Arc;

use snarkd_engine::prover::{
    DeviceInfo, DeviceTelemetry, FastPath, LoadedParams as EngineParams, PartitionMemory,
    PhaseHooks, Planned, Prover, SpareMemory, StepError,
};
use snarkd_engine::{EngineError, FailureClass, ProofRequest};

use snarkd_prover::filecoin::PartitionProof;
use snarkd_prover::groth16::Randomness;
use snarkd_prover::params::precompiled::{matrices_file, MatricesPlace};
use snarkd_prover::{
    CircuitId, DeviceBackend, LoadedParams, PreparedJob, ProverError, SynthesizedPartition,
};

use crate::config::Config;
use snarkd_prover::filecoin::estimate::PhaseOn;
use snarkd_prover::filecoin::load_cost::{load_cost, Matrices};

/// The prover the config asks for: its backend on each selected device.
pub fn from_config(config: &Config) -> anyhow::Result<Arc<FilecoinProver>> {
    let backends = devices::backends(config)?;
    let gpu_expected = config.gpus.backend != crate::config::Backend::Cpu;
    let mut prover = FilecoinProver::new(config.params.dir.clone(), backends)
        .with_precompiled(config.precompiled_dir());
    prover.native_witness = config.synthesis.native_witness;
    prover.keep_buffers_from = config.memory.keep_buffers_from.as_u64();
    prover.gpu_fallback = gpu_expected && prover.backend_names() == ["cpu"];
    Ok(Arc::new(prover))
}

/// Proves with real circuits, each device with its own backend.
pub struct FilecoinProver {
    params_dir: PathBuf,
    /// Where the circuits' pre-compiled matrices are kept; `None`: synthesis the plain way.
    precompiled_dir: Option<PathBuf>,
    backends: Vec<(DeviceInfo, Arc<dyn DeviceBackend>)>,
    readings: readings::DeviceReader,
    /// A GPU was asked for and the CPU proves instead.
    gpu_fallback: bool,
    /// Native witnesses where a kind has them (with pre-compiled matrices only).
    pub native_witness: bool,
    /// The smallest buffer of a finished partition kept for the next (`[memory]
    /// keep_buffers_from`).
    pub keep_buffers_from: u64,
}

impl FilecoinProver {
    /// A prover reading params from `params_dir` and running the device phase of each device on
    /// its backend (the engine runs a worker pool per entry).
    pub fn new(
        params_dir: PathBuf,
        backends: Vec<(DeviceInfo, Arc<dyn DeviceBackend>)>,
    ) -> FilecoinProver {
        FilecoinProver {
            params_dir,
            precompiled_dir: None,
            readings: readings::DeviceReader::new(&backends),
            backends,
            gpu_fallback: false,
            native_witness: true,
            keep_buffers_from: 64 << 20,
        }
    }

    /// Loads each circuit's pre-compiled matrices from `dir` with its parameters (recording
    /// them there when missing), so partitions synthesize from them; `None` turns that off.
    pub fn with_precompiled(mut self, dir: Option<PathBuf>) -> FilecoinProver {
        self.precompiled_dir = dir;
        self
    }

    /// Each device's backend name (`cpu`, `opencl:0`, …).
    pub fn backend_names(&self) -> Vec<&str> {
        self.backends.iter().map(|(_, b)| b.name()).collect()
    }

    /// The devices still being set up, each with what it is doing.
    pub fn warming(&self) -> Vec<(&str, String)> {
        (self.backends.iter())
            .filter_map(|(_, b)| Some((b.name(), b.warming()?)))
            .collect()
    }

    /// Waits until every device's set-up has ended (ready or failed); blocks.
    pub fn wait_warm(&self) {
        for (_, backend) in &self.backends {
            while !backend.wait_warm(std::time::Duration::from_secs(60)) {}
        }
    }

    /// The devices the engine runs workers on, for the startup summary.
    pub fn device_summaries(&self) -> Vec<crate::startup::DeviceSummary> {
        self.backends
            .iter()
            .map(|(info, backend)| crate::startup::DeviceSummary {
                ordinal: info.ordinal,
                name: info.name.clone(),
                memory_bytes: info.memory_bytes,
                pci_bus_id: backend.pci_address().map(|p| p.bus_id()),
                driver: backend.driver(),
            })
            .collect()
    }

    /// Bytes of the circuit's `.params` file, when it is there.
    fn params_file_len(&self, circuit: CircuitId) -> Option<u64> {
        file_len(snarkd_prover::params::params_paths(&self.params_dir, circuit).0)
    }

    /// Bytes of the circuit's kept matrices in `dir` or beside the parameters, when kept.
    fn kept_matrices_len(&self, dir: &std::path::Path, circuit: CircuitId) -> Option<u64> {
        file_len(matrices_file(dir, circuit).path)
            .or_else(|| file_len(matrices_file(&self.params_dir, circuit).path))
    }

    /// What waiting for the circuit's parameters saves a partition: only with pre-compiled
    /// matrices, which make synthesis faster once loaded.
    fn fast_path(&self, circuit: CircuitId) -> Option<FastPath> {
        let dir = self.precompiled_dir.as_deref()?;
        let matrices = match self.kept_matrices_len(dir, circuit) {
            Some(_) => Matrices::Kept,
            None => Matrices::ToRecord,
        };
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
        let (load, plain_extra) =
            load_cost(circuit, self.params_file_len(circuit)?, matrices, threads);
        Some(FastPath { load, plain_extra })
    }

    fn backend(&self, device: &DeviceInfo) -> Result<&Arc<dyn DeviceBackend>, StepError> {
        self.backends
            .iter()
            .find(|(d, _)| d.ordinal == device.ordinal)
            .map(|(_, b)| b)
            .ok_or_else(|| {
                StepError::new(
                    FailureClass::Bug,
                    format!("internal error: no backend for device {}", device.ordinal),
                )
            })
    }
}

/// The prover's kept buffers (`snarkd_prover::spare`), as the engine's budget counts them.
struct KeptBuffers;

impl SpareMemory for KeptBuffers {
    fn held(&self) -> u64 {
        snarkd_prover::spare::spare().held()
    }

    fn trim(&self, bytes: u64) -> u64 {
        snarkd_prover::spare::spare().trim(bytes)
    }
}

impl Prover for FilecoinProver {
    type Plan = PreparedJob;
    type Params = LoadedParams;
    type Partition = SynthesizedPartition;
    type Proof = PartitionProof;

    fn gpu_fallback(&self) -> bool {
        self.gpu_fallback
    }

    fn backend_name(&self) -> String {
        let mut names: Vec<&str> = self
            .backends
            .iter()
            .map(|(_, b)| b.name().split(':').next().unwrap_or("cpu"))
            .collect();
        names.dedup();
        names.join(",")
    }

    fn devices(&self) -> Vec<DeviceInfo> {
        self.backends.iter().map(|(d, _)| d.clone()).collect()
    }

    fn read_devices(&self) -> Vec<DeviceTelemetry> {
        self.readings.read()
    }

    fn spare_memory(&self) -> Option<Arc<dyn SpareMemory>> {
        let spare = snarkd_prover::spare::spare();
        spare.keep_from(self.keep_buffers_from);
        spare.keep();
        Some(Arc::new(KeptBuffers))
    }

    fn plan(&self, request: ProofRequest) -> Result<Planned<PreparedJob>, EngineError> {
        // The input's bytes go as soon as they are decoded.
        let job = snarkd_prover::prepare(&request.input).map_err(engine_error)?;
        drop(request);
        // Missing parameters are this machine's state, not the request's fault: the operator
        // fetches them and the same request then succeeds (FAILED_PRECONDITION, Prove included).
        snarkd_prover::params::ensure_params_present(&self.params_dir, job.circuit_id())
            .map_err(engine_error)?;
        // Reserved for a device phase on the devices when every one runs it there (a step
        // that falls back to the CPU asks for more then), else on the host.
        let on = match self
            .backends
            .iter()
            .all(|(_, b)| b.phase_on() == PhaseOn::Device)
        {
            true => PhaseOn::Device,
            false => PhaseOn::Host,
        };
        let estimate = job.partition_memory_estimate_on(on);
        Ok(Planned {
            circuit_id: job.circuit_id().to_string(),
            partitions: job.num_partitions() as u32,
            // The engine reserves for the device phase's peak and gives back, when H is done,
            // what the rest of the proof does not need.
            memory: PartitionMemory {
                total_bytes: estimate.reserve_bytes(),
                abc_bytes: estimate.released_after_h_bytes(),
            },
            fast_path: self.fast_path(job.circuit_id()),
            plan: job,
        })
    }

    fn knows_circuit(&self, circuit_id: &str) -> bool {
        CircuitId::parse(circuit_id).is_ok()
    }

    fn params_size_estimate(&self, circuit_id: &str) -> u64 {
        // The in-memory parameters and matrices are about as large as the files they are read
        // from; matrices not recorded yet are estimated from the circuit's shape.
        let Ok(circuit) = CircuitId::parse(circuit_id) else {
            return 0;
        };
        let matrices = self.precompiled_dir.as_deref().map_or(0, |dir| {
            self.kept_matrices_len(dir, circuit)
                .unwrap_or_else(|| snarkd_prover::filecoin::estimate::precompiled_bytes(circuit))
        });
        self.params_file_len(circuit).unwrap_or(0) + matrices
    }

    fn load_params(&self, circuit_id: &str) -> Result<EngineParams<LoadedParams>, EngineError> {
        let circuit = CircuitId::parse(circuit_id)
            .map_err(|_| EngineError::UnknownCircuit(circuit_id.to_string()))?;
        let params = snarkd_prover::load_params_with(
            &self.params_dir,
            circuit,
            self.precompiled_dir.as_deref().map(|dir| MatricesPlace {
                dir,
                read_also: Some(&self.params_dir),
            }),
        )
        .map_err(engine_error)?;
        Ok(EngineParams {
            bytes: params.size_bytes(),
            precompiled_bytes: params.precompiled_bytes(),
            params,
        })
    }

    fn synthesize(
        &self,
        job: &PreparedJob,
        index: u32,
        params: Option<&LoadedParams>,
    ) -> Result<SynthesizedPartition, StepError> {
        let matrices = params.and_then(LoadedParams::precompiled);
        let path = if matrices.is_some() {
            "precompiled"
        } else {
            "plain"
        };
        metrics::counter!("snarkd_partitions_synthesized_total",
            "kind" => job.circuit_id().kind().name(), "path" => path)
        .increment(1);
        // The witness comes from the request alone: what fails once fails again.
        match matrices {
            Some(m) if self.native_witness => job.synthesize_native(index as usize, m),
            _ => job.synthesize_with(index as usize, matrices),
        }
        .map_err(step_error)
    }

    fn prove(
        &self,
        device: &DeviceInfo,
        partition: SynthesizedPartition,
        params: &LoadedParams,
        hooks: &mut dyn PhaseHooks,
    ) -> Result<PartitionProof, StepError> {
        let backend = self.backend(device)?;
        let native = partition.native().cloned();
        // A device fault, or a partition proof that fails its own check (a wrong result from
        // the device, or a native witness that does not satisfy the circuit, whose job then
        // synthesizes from the gadgets): the partition is worth synthesizing and proving again.
        let (proof, timings) = backend
            .prove(partition, params, Randomness::random(), hooks)
            .map_err(|e| match (e, native) {
                (e @ ProverError::PartitionProofInvalid(_), Some(switch)) => {
                    switch.turn_off();
                    let circuit = params.circuit_id().to_string();
                    snarkd_prover::filecoin::count_native_fallback(&circuit, "proof_check", &e.to_string());
                    StepError::new(e.class(), format!("{e} (made from a native witness: the job's partitions are synthesized from the gadgets from now on)"))
                }
                // By the error's class: a device's is retried; parameters that do not fit the
                // partition (setup) fit no better on a second try.
                (other, _) => step_error(other),
            })?;
        let name = backend.name().to_string();
        if timings.faults > 0 {
            metrics::counter!("snarkd_device_faults_total", "device" => name.clone())
                .increment(u64::from(timings.faults));
        }
        count_device_work(&name, &timings.counters);
        readings::set_healthy(&name, &**backend);
        Ok(proof)
    }

    fn finalize(
        &self,
        job: &PreparedJob,
        partition_proofs: Vec<PartitionProof>,
        params: &LoadedParams,
    ) -> Result<Vec<u8>, StepError> {
        job.finalize(&partition_proofs, params).map_err(step_error)
    }

    fn proof_bytes(&self, proof: &PartitionProof) -> Vec<u8> {
        snarkd_prover::filecoin::serialize_proofs(std::slice::from_ref(proof))
    }

    /// A proof the journal recorded; one it cannot read is snarkd's fault, never a client's.
    fn read_proof(&self, bytes: &[u8]) -> Result<PartitionProof, StepError> {
        let mut proofs = snarkd_prover::filecoin::parse_proofs(bytes, 1)
            .map_err(|e| StepError::new(snarkd_engine::FailureClass::Bug, e.to_string()))?;
        Ok(proofs.remove(0))
    }
}

fn file_len(path: PathBuf) -> Option<u64> {
    std::fs::metadata(path).ok().map(|m| m.len())
}

/// A prover error met while planning a request or loading parameters, by its class: a bad
/// request is invalid (INVALID_ARGUMENT), this machine's setup (parameters missing, unreadable
/// or wrong) is for the operator to fix (FAILED_PRECONDITION), anything else a bug (INTERNAL).
fn engine_error(err: ProverError) -> EngineError {
    match err.class() {
        FailureClass::Input => EngineError::InvalidRequest(err.to_string()),
        FailureClass::Setup => EngineError::Setup(err.to_string()),
        FailureClass::Resource | FailureClass::Device | FailureClass::Bug => {
            EngineError::Internal(err.to_string())
        }
    }
}

/// A prover error met in a step, by its class (only a device's is retried); a phase that
/// stopped because its job ended is no failure.
fn step_error(err: ProverError) -> StepError {
    match err {
        ProverError::Stopped => StepError::Stopped,
        other => StepError::new(other.class(), other.to_string()),
    }
}

/// What a device phase moved over the bus, launched and waited for, per device: the counts
/// that check the device phase's design on any machine (`snarkd_device_transfer_bytes_total`
/// by direction, `snarkd_device_launches_total`, `snarkd_device_host_waits_total`,
/// `snarkd_device_idle_waits_total`, `snarkd_device_point_additions_total`).
fn count_device_work(device: &str, c: &snarkd_prover::groth16::DeviceCounters) {
    let device = device.to_string();
    for (direction, bytes) in [
        ("to_device", c.bytes_to_device),
        ("from_device", c.bytes_from_device),
    ] {
        metrics::counter!("snarkd_device_transfer_bytes_total", "device" => device.clone(), "direction" => direction)
            .increment(bytes);
    }
    metrics::counter!("snarkd_device_launches_total", "device" => device.clone())
        .increment(c.launches);
    metrics::counter!("snarkd_device_point_additions_total", "device" => device.clone())
        .increment(c.point_additions);
    metrics::counter!("snarkd_device_host_waits_total", "device" => device.clone())
        .increment(c.host_waits);
    metrics::counter!("snarkd_device_idle_waits_total", "device" => device).increment(c.idle_waits);
}

#[cfg(test)]
mod class_tests;
#[cfg(test)]
mod tests;
