//! The CPU backend: bellperson's `EvaluationDomain` FFTs and blst's multi-threaded Pippenger,
//! using every core of the machine.

use std::panic::{catch_unwind, AssertUnwindSafe};

use bellperson::groth16::Proof;
use blstrs::Bls12;

use super::DeviceBackend;
use crate::error::{ProverError, Result};
use crate::groth16::{prove_partition, DeviceTimings, PhaseHooks, Randomness};
use crate::keys::LoadedParams;
use crate::synthesis::{panic_message, SynthesizedPartition};

/// Runs the device phase on the CPU.
#[derive(Debug, Default, Clone)]
pub struct CpuBackend;

impl CpuBackend {
    pub fn new() -> Self {
        CpuBackend
    }
}

impl DeviceBackend for CpuBackend {
    fn name(&self) -> &str {
        "cpu"
    }

    fn prove(
        &self,
        partition: SynthesizedPartition,
        params: &LoadedParams,
        randomness: Randomness,
        hooks: &mut dyn PhaseHooks,
    ) -> Result<(Proof<Bls12>, DeviceTimings)> {
        catch_unwind(AssertUnwindSafe(|| {
            prove_partition(partition, params, randomness, hooks)
        }))
        .unwrap_or_else(|panic| {
            Err(ProverError::Device {
                backend: self.name().to_string(),
                reason: panic_message(&panic),
            })
        })
    }
}
