//! Device backends: where a partition's FFTs and MSMs run. The engine holds backends as
//! `Arc<dyn DeviceBackend>`, one per device, and calls [`DeviceBackend::prove`] from a blocking
//! thread.
//!
//! Layout:
//! - `mod.rs`: the [`DeviceBackend`] trait.
//! - `cpu.rs`: [`CpuBackend`], the CPU implementation (blst MSM, bellperson FFT).
//! - `opencl/` (feature `opencl`): [`OpenClBackend`], ec-gpu-gen's kernels on any OpenCL device.

mod cpu;
#[cfg(feature = "opencl")]
pub mod opencl;

use bellperson::groth16::Proof;
use blstrs::Bls12;

pub use cpu::CpuBackend;
#[cfg(feature = "opencl")]
pub use opencl::{OpenClBackend, OpenClOptions};

use crate::error::Result;
use crate::groth16::{DeviceTimings, PhaseHooks, Randomness};
use crate::params::LoadedParams;
use crate::synthesis::SynthesizedPartition;

/// A device that turns a synthesized partition into a Groth16 proof.
pub trait DeviceBackend: Send + Sync {
    /// Stable name for logs and status (`cpu`, `opencl:0`, …).
    fn name(&self) -> &str;

    /// False once the device failed too often and the backend runs its steps on the CPU.
    fn is_healthy(&self) -> bool {
        true
    }

    /// Proves one partition with `params` (which must belong to the partition's circuit; the
    /// shapes are checked). `hooks` hears once of the a/b/c release (so the caller can return
    /// that memory to its budget while the MSMs still run) and of every step's end, where the
    /// caller may run a deadline partition's device phase before this one goes on.
    fn prove(
        &self,
        partition: SynthesizedPartition,
        params: &LoadedParams,
        randomness: Randomness,
        hooks: &mut dyn PhaseHooks,
    ) -> Result<(Proof<Bls12>, DeviceTimings)>;
}
