//! A stand-in prover for the daemon's API tests. Real Groth16 proofs need parameter files that take
//! minutes to generate; these tests are about the daemon's wire behaviour, so the circuit is
//! replaced by something with the same shape: requests are decoded (and garbage is rejected the
//! way the real prover rejects it), jobs have partitions, params are loaded and counted, each
//! partition proof is 192 bytes, and the device phase can be held closed to observe running jobs.

use std::sync::{Arc, Condvar, Mutex};

use crate::prover::{
    DeviceInfo, LoadedParams, PartitionMemory, PhaseHooks, Planned, Prover, StepError,
};
use crate::{EngineError, FailureClass, ProofRequest};

/// Bytes of one partition proof, as in Groth16 over BLS12-381.
pub const PROOF_BYTES: usize = 192;
/// Bytes the stand-in's params take in the budget.
pub const PARAMS_BYTES: u64 = 4 << 20;
const MAGIC: &[u8] = b"vanilla:";
/// A partition input whose synthesis fails, as a witness the circuit rejects would: the job
/// ends FAILED.
pub const FAILING_INPUT: u32 = u32::MAX;

/// A vanilla proof the stand-in decodes: partition `index`'s input.
pub fn vanilla(index: u32) -> Vec<u8> {
    [MAGIC, &index.to_le_bytes()].concat()
}

pub struct StandInProver {
    /// While false, device phases wait (the partition shows as `gpu`, its worker as proving).
    gate: Arc<(Mutex<bool>, Condvar)>,
    /// Only phases without a deadline (PoRep, SnapDeals) wait at the closed gate.
    only_background: std::sync::atomic::AtomicBool,
    /// The inputs of the partitions proved, in the order their device phases ended.
    proved: Mutex<Vec<u32>>,
}

impl StandInProver {
    pub fn new() -> Arc<StandInProver> {
        Arc::new(StandInProver {
            gate: Arc::new((Mutex::new(true), Condvar::new())),
            only_background: Default::default(),
            proved: Mutex::default(),
        })
    }

    /// The inputs of the partitions proved so far ([`vanilla`]'s index), in the order their
    /// device phases ended: the order the device took them in.
    pub fn proved(&self) -> Vec<u32> {
        self.proved.lock().unwrap().clone()
    }

    /// Holds every device phase until [`StandInProver::open`].
    pub fn close(&self) {
        self.only_background
            .store(false, std::sync::atomic::Ordering::SeqCst);
        *self.gate.0.lock().unwrap() = false;
    }

    /// Holds PoRep and SnapDeals phases (what a deadline partition preempts) until
    /// [`StandInProver::open`]; WinningPoSt and WindowPoSt go through.
    pub fn close_background(&self) {
        self.only_background
            .store(true, std::sync::atomic::Ordering::SeqCst);
        *self.gate.0.lock().unwrap() = false;
    }

    pub fn open(&self) {
        *self.gate.0.lock().unwrap() = true;
        self.gate.1.notify_all();
    }
}

pub struct Plan {
    inputs: Vec<u32>,
}

impl Prover for StandInProver {
    type Plan = Plan;
    /// The circuit id.
    type Params = String;
    /// The partition's input.
    type Partition = u32;
    type Proof = Vec<u8>;

    fn backend_name(&self) -> String {
        "cpu".into()
    }

    fn devices(&self) -> Vec<DeviceInfo> {
        vec![DeviceInfo {
            ordinal: 0,
            name: "stand-in cpu".into(),
            memory_bytes: 1 << 30,
            workers: 1,
        }]
    }

    fn plan(&self, request: ProofRequest) -> Result<Planned<Plan>, EngineError> {
        let (kind, request) = (request.kind(), request.input);
        let encoded = request.vanilla_proofs();
        let inputs = encoded
            .iter()
            .enumerate()
            .map(|(i, bytes)| {
                bytes
                    .strip_prefix(MAGIC)
                    .and_then(|rest| rest.try_into().ok())
                    .map(u32::from_le_bytes)
                    .ok_or_else(|| {
                        EngineError::InvalidRequest(format!(
                            "vanilla_proofs[{i}] does not decode: expected a bincode partition proof"
                        ))
                    })
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Planned {
            circuit_id: format!("{}-2k", kind.as_str()),
            partitions: inputs.len() as u32,
            memory: PartitionMemory {
                total_bytes: 1 << 20,
                abc_bytes: 1 << 19,
            },
            fast_path: None,
            plan: Plan { inputs },
        })
    }

    fn knows_circuit(&self, circuit_id: &str) -> bool {
        ["porep-2k", "snap-2k", "wpost-2k", "winning-2k"].contains(&circuit_id)
    }

    fn params_size_estimate(&self, _circuit_id: &str) -> u64 {
        PARAMS_BYTES
    }

    fn load_params(&self, circuit_id: &str) -> Result<LoadedParams<String>, EngineError> {
        Ok(LoadedParams {
            params: Arc::new(circuit_id.to_string()),
            bytes: PARAMS_BYTES,
            precompiled_bytes: 0,
        })
    }

    fn prove(
        &self,
        _device: &DeviceInfo,
        input: u32,
        circuit: &String,
        hooks: &mut dyn PhaseHooks,
    ) -> Result<Vec<u8>, StepError> {
        // While the gate is closed a held phase goes on step after step, each a preemption
        // point.
        let (open, opened) = &*self.gate;
        let held = circuit.starts_with("porep")
            || circuit.starts_with("snap")
            || !self
                .only_background
                .load(std::sync::atomic::Ordering::SeqCst);
        while held && !*open.lock().unwrap() {
            hooks.step_done();
            if hooks.stop_requested() {
                return Err(StepError::Stopped);
            }
            let closed = open.lock().unwrap();
            let _ = opened
                .wait_timeout(closed, std::time::Duration::from_millis(2))
                .unwrap();
        }
        hooks.abc_released(0);
        self.proved.lock().unwrap().push(input);
        Ok(vec![input as u8; PROOF_BYTES])
    }

    fn synthesize(&self, plan: &Plan, index: u32, _: Option<&String>) -> Result<u32, StepError> {
        match plan.inputs[index as usize] {
            FAILING_INPUT => Err(StepError::new(
                FailureClass::Input,
                "the stand-in circuit rejects this witness",
            )),
            input => Ok(input),
        }
    }

    fn proof_bytes(&self, proof: &Vec<u8>) -> Vec<u8> {
        proof.clone()
    }

    fn read_proof(&self, bytes: &[u8]) -> Result<Vec<u8>, StepError> {
        Ok(bytes.to_vec())
    }

    fn finalize(
        &self,
        _plan: &Plan,
        partition_proofs: Vec<Vec<u8>>,
        _params: &String,
    ) -> Result<Vec<u8>, StepError> {
        Ok(partition_proofs.concat())
    }
}
