//! The Groth16 device phase, written from the construction on bellperson's public building
//! blocks: the H polynomial via radix-2 FFTs, the multi-scalar multiplications with
//! blst's Pippenger, and the proof assembly with the zero-knowledge randomness r, s.
//!
//! Layout:
//! - `prover.rs`: the steps' seam [`DeviceOps`] and the CPU's [`CpuOps`], [`Randomness`],
//!   [`DeviceTimings`] with its [`DeviceCounters`], the proof's assembly and self-check.
//! - `plan.rs`: [`prove_with_plan`], the device phase's steps over a [`DevicePlan`] (where h
//!   and the scalars live), [`HostPlan`] (all in host memory; [`prove_partition`] and
//!   [`prove_partition_with`] run through it), [`Query`] and [`Step`].
//! - `fft.rs`: [`compute_h`], the H polynomial's FFTs and pointwise passes on the CPU (on the
//!   pool of the caller's priority).
//! - `msm.rs`: CPU multi-scalar multiplication over G1 and G2 (tiled, on the pool of the
//!   caller's priority), [`ScalarBytes`] and [`Scalars`].
//! - `test_hold.rs`: (`test-hooks`) real phases held at a step boundary for the daemon's tests.

mod beside;
pub(crate) mod fft;
mod msm;
mod plan;
mod prover;
#[cfg(feature = "test-hooks")]
pub mod test_hold;

pub use beside::{b2_host_bytes, G2On};
pub use fft::compute_h;
pub use msm::{msm_g1, msm_g2, ScalarBytes, Scalars};
pub use plan::{
    prove_partition, prove_partition_with, prove_with_plan, DevicePlan, HostPlan, Query, Scope,
    Step,
};
pub use prover::{
    CpuOps, DeviceCounters, DeviceOps, DeviceTimings, PhaseHooks, Randomness, CPU_STEP_POINTS,
};
