//! The Groth16 device phase, written from the construction on bellperson's public building
//! blocks: the H polynomial via FFTs on `EvaluationDomain`, the multi-scalar multiplications with
//! blst's Pippenger, and the proof assembly with the zero-knowledge randomness r, s.
//!
//! Layout:
//! - `prover.rs`: [`prove_partition`], [`Randomness`], [`DeviceTimings`].
//! - `msm.rs`: CPU multi-scalar multiplication over G1 and G2.

mod msm;
mod prover;

pub use prover::{compute_h, prove_partition, DeviceTimings, Randomness};
