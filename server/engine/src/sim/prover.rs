//! The simulation's prover: it names the devices and backend the machine schedules on and
//! nothing more. A simulation carries out the machine's effects itself, in simulated time
//! (`run.rs`), so none of the steps below is ever called; each says so if it were.

use crate::domain::ProofRequest;
use crate::error::EngineError;
use crate::prover::{DeviceInfo, LoadedParams, PhaseHooks, Planned, Prover, StepError};
use crate::FailureClass;

pub(crate) struct SimProver {
    pub devices: Vec<DeviceInfo>,
    pub backend: String,
}

/// A simulated job: which kind of the cost table it is.
pub(crate) struct SimPlan {
    pub kind: usize,
}

const NOT_HERE: &str = "a simulated step is carried out by the simulation, not by its prover";

impl Prover for SimProver {
    type Plan = SimPlan;
    type Params = ();
    type Partition = ();
    type Proof = Vec<u8>;

    fn backend_name(&self) -> String {
        self.backend.clone()
    }
    fn devices(&self) -> Vec<DeviceInfo> {
        self.devices.clone()
    }
    fn plan(&self, _: ProofRequest) -> Result<Planned<SimPlan>, EngineError> {
        Err(EngineError::Internal(NOT_HERE.into()))
    }
    fn knows_circuit(&self, _: &str) -> bool {
        true
    }
    fn params_size_estimate(&self, _: &str) -> u64 {
        0
    }
    fn load_params(&self, _: &str) -> Result<LoadedParams<()>, EngineError> {
        Err(EngineError::Internal(NOT_HERE.into()))
    }
    fn synthesize(&self, _: &SimPlan, _: u32, _: Option<&()>) -> Result<(), StepError> {
        Err(StepError::new(FailureClass::Bug, NOT_HERE))
    }
    fn prove(
        &self,
        _: &DeviceInfo,
        _: (),
        _: &(),
        _: &mut dyn PhaseHooks,
    ) -> Result<Vec<u8>, StepError> {
        Err(StepError::new(FailureClass::Bug, NOT_HERE))
    }
    fn proof_bytes(&self, proof: &Vec<u8>) -> Vec<u8> {
        proof.clone()
    }

    fn read_proof(&self, bytes: &[u8]) -> Result<Vec<u8>, StepError> {
        Ok(bytes.to_vec())
    }

    fn finalize(&self, _: &SimPlan, _: Vec<Vec<u8>>, _: &()) -> Result<Vec<u8>, StepError> {
        Err(StepError::new(FailureClass::Bug, NOT_HERE))
    }
}
