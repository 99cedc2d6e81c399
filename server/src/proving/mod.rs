//! The engine's [`Prover`] implemented with `snarkd-prover`'s real Filecoin circuits: requests are
//! decoded into [`PreparedJob`]s, parameters come from the params directory, the device phase runs
//! on a [`DeviceBackend`] and every final proof is verified before the engine reports it.
//!
//! Layout:
//! - `mod.rs`: [`FilecoinProver`] and the per-job [`FilecoinPlan`].
//! - `convert.rs`: engine request and kind → prover request and kind.

mod convert;

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::bail;
use snarkd_engine::prover::{DeviceInfo, JobPlan, Params, PartitionMemory, Prover, Synthesized};
use snarkd_engine::{EngineError, ProofRequest};
use snarkd_prover::groth16::Randomness;
use snarkd_prover::{
    CircuitId, CpuBackend, DeviceBackend, LoadedParams, PreparedJob, ProverError,
    SynthesizedPartition,
};

use crate::config::{total_memory_bytes, Backend, Config};

/// The prover the config asks for. `auto` means the CPU until GPU backends are built in.
pub fn from_config(config: &Config) -> anyhow::Result<Arc<dyn Prover>> {
    let backend: Arc<dyn DeviceBackend> = match config.gpus.backend {
        Backend::Auto | Backend::Cpu => Arc::new(CpuBackend::new()),
        Backend::Opencl | Backend::Cuda => bail!(
            "[gpus] backend = {:?} is not available in this build; set backend = \"cpu\" (or \"auto\")",
            config.gpus.backend
        ),
    };
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let devices = vec![DeviceInfo {
        ordinal: 0,
        name: format!("cpu ({threads} threads)"),
        memory_bytes: total_memory_bytes(),
    }];
    Ok(Arc::new(FilecoinProver::new(
        config.params.dir.clone(),
        backend,
        devices,
    )))
}

/// Proves with real circuits on one device backend.
pub struct FilecoinProver {
    params_dir: PathBuf,
    backend: Arc<dyn DeviceBackend>,
    devices: Vec<DeviceInfo>,
}

impl FilecoinProver {
    /// A prover reading params from `params_dir` and running the device phase on `backend`,
    /// whose devices are `devices` (one worker pool per entry).
    pub fn new(
        params_dir: PathBuf,
        backend: Arc<dyn DeviceBackend>,
        devices: Vec<DeviceInfo>,
    ) -> FilecoinProver {
        FilecoinProver {
            params_dir,
            backend,
            devices,
        }
    }
}

impl Prover for FilecoinProver {
    fn backend_name(&self) -> String {
        self.backend.name().to_string()
    }

    fn devices(&self) -> Vec<DeviceInfo> {
        self.devices.clone()
    }

    fn plan(&self, request: &ProofRequest) -> Result<Arc<dyn JobPlan>, EngineError> {
        let request = convert::request(request)?;
        let job = snarkd_prover::prepare(&request)
            .map_err(|e| EngineError::InvalidRequest(e.to_string()))?;
        Ok(Arc::new(FilecoinPlan { job }))
    }

    fn knows_circuit(&self, circuit_id: &str) -> bool {
        CircuitId::parse(circuit_id).is_ok()
    }

    fn params_size_estimate(&self, circuit_id: &str) -> u64 {
        // The in-memory parameters are about as large as the file they are read from.
        CircuitId::parse(circuit_id)
            .ok()
            .map(|c| snarkd_prover::params::params_paths(&self.params_dir, c).0)
            .and_then(|path| std::fs::metadata(path).ok())
            .map_or(0, |m| m.len())
    }

    fn load_params(&self, circuit_id: &str) -> Result<(Params, u64), String> {
        let circuit = CircuitId::parse(circuit_id).map_err(|e| e.to_string())?;
        let params =
            snarkd_prover::load_params(&self.params_dir, circuit).map_err(|e| e.to_string())?;
        let bytes = params.size_bytes();
        Ok((params, bytes))
    }

    fn prove(
        &self,
        _device: &DeviceInfo,
        partition: Synthesized,
        params: &Params,
        abc_released: &mut dyn FnMut(),
    ) -> Result<Vec<u8>, String> {
        let partition = partition
            .downcast::<SynthesizedPartition>()
            .map_err(|_| "internal error: not a synthesized Filecoin partition".to_string())?;
        let params = loaded(params)?;
        let (proof, _timings) = self
            .backend
            .prove(*partition, params, Randomness::random(), &mut |_bytes| {
                abc_released()
            })
            .map_err(|e| e.to_string())?;
        let mut bytes = Vec::with_capacity(192);
        proof
            .write(&mut bytes)
            .map_err(|e| format!("serializing the partition proof: {e}"))?;
        Ok(bytes)
    }
}

/// One decoded Filecoin request.
struct FilecoinPlan {
    job: PreparedJob,
}

impl JobPlan for FilecoinPlan {
    fn circuit_id(&self) -> String {
        self.job.circuit_id().to_string()
    }

    fn partitions(&self) -> u32 {
        self.job.num_partitions() as u32
    }

    fn partition_memory(&self) -> PartitionMemory {
        let estimate = self.job.partition_memory_estimate();
        PartitionMemory {
            total_bytes: estimate.total_bytes,
            abc_bytes: estimate.abc_bytes,
        }
    }

    fn synthesize(&self, index: u32) -> Result<Synthesized, String> {
        let partition = self
            .job
            .synthesize(index as usize)
            .map_err(|e| e.to_string())?;
        Ok(Box::new(partition))
    }

    fn finalize(&self, partition_proofs: Vec<Vec<u8>>, params: &Params) -> Result<Vec<u8>, String> {
        let proofs = snarkd_prover::filecoin::parse_proofs(
            &partition_proofs.concat(),
            partition_proofs.len(),
        )
        .map_err(|e| e.to_string())?;
        self.job
            .finalize(&proofs, loaded(params)?)
            .map_err(|e: ProverError| e.to_string())
    }
}

fn loaded(params: &Params) -> Result<&LoadedParams, String> {
    params
        .downcast_ref::<LoadedParams>()
        .ok_or_else(|| "internal error: params are not Filecoin Groth16 parameters".to_string())
}
