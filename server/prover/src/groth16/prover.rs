//! One partition's Groth16 proof from its synthesized witness.
//!
//! With the QAP polynomials u_i, v_i, w_i, witness z = (1, inputs, aux) and the parameters' bases
//! (H: τ^i·t(τ)/δ, L: (β·u_i + α·v_i + w_i)(τ)/δ for aux, A: u_i(τ), B: v_i(τ) in G1 and G2):
//!
//! ```text
//! h(x)  = (A(x)·B(x) − C(x)) / t(x)            from the a/b/c evaluations by FFTs
//! πA    = α + Σ z_i·u_i(τ) + r·δ
//! πB    = β + Σ z_i·v_i(τ) + s·δ               (in G2; the same sum in G1 is B1)
//! πC    = Σ aux_i·L_i + Σ h_j·H_j + s·πA' + r·B1' + r·s·δ + s·α + r·β
//! ```
//! where πA' and B1' are the plain sums without α/β/δ terms. This matches bellperson's prover, so
//! the proofs verify with its verifier and filecoin-proofs'.

use std::time::Duration;

use bellperson::groth16::{verify_proof, Parameters, PreparedVerifyingKey, Proof};
use blstrs::{Bls12, G1Affine, G1Projective, G2Affine, G2Projective, Scalar as Fr};
use ff::Field;
use group::prime::PrimeCurveAffine;
use group::Curve;
use rand::rngs::OsRng;

use super::fft::compute_h_in_steps;
use super::msm::{msm_g1_in_steps, msm_g2_in_steps, Scalars};
use crate::error::{ProverError, Result};
use crate::synthesis::{Abc, Witness};

/// The zero-knowledge blinding factors of one proof.
#[derive(Clone, Copy, Debug)]
pub struct Randomness {
    pub r: Fr,
    pub s: Fr,
}

impl Randomness {
    /// Fresh r, s from the operating system's CSPRNG.
    pub fn random() -> Self {
        Randomness {
            r: Fr::random(OsRng),
            s: Fr::random(OsRng),
        }
    }
}

/// Where the device phase spent its time.
#[derive(Clone, Copy, Debug, Default)]
pub struct DeviceTimings {
    /// H polynomial: three inverse FFTs, three coset FFTs, pointwise ops, one inverse coset FFT.
    pub fft: Duration,
    /// All multi-scalar multiplications (H, L, A, B in G1 and G2).
    pub msm: Duration,
    /// Device errors met on the way (each step that failed was run again; see the backend).
    pub faults: u32,
    /// Bytes over the bus, kernel launches and host waits (zero on the CPU).
    pub counters: DeviceCounters,
}

/// Where the FFT and MSM steps of the device phase run. The CPU's are [`CpuOps`]; a GPU backend
/// supplies its own and reuses the rest of [`prove_partition_with`] (order of the steps, early
/// release of the a/b/c and scalar buffers, proof assembly).
pub trait DeviceOps {
    /// h(x) from the a/b/c evaluations (see [`compute_h`]).
    fn compute_h(&self, abc: Abc) -> Result<Vec<Fr>>;
    /// `sum(bases[i] * scalars[i])` over G1.
    fn msm_g1(&self, bases: &[G1Affine], scalars: Scalars<'_>) -> Result<G1Projective>;
    /// `sum(bases[i] * scalars[i])` over G2.
    fn msm_g2(&self, bases: &[G2Affine], scalars: Scalars<'_>) -> Result<G2Projective>;
    /// [`DeviceOps::compute_h`] with preemption points inside it: `between` runs at each
    /// boundary. By default there are none.
    fn compute_h_in_steps(&self, abc: Abc, between: &mut dyn FnMut()) -> Result<Vec<Fr>> {
        let _ = between;
        self.compute_h(abc)
    }
    /// [`DeviceOps::msm_g1`] with preemption points inside it (none by default).
    fn msm_g1_in_steps(
        &self,
        bases: &[G1Affine],
        scalars: Scalars<'_>,
        between: &mut dyn FnMut(),
    ) -> Result<G1Projective> {
        let _ = between;
        self.msm_g1(bases, scalars)
    }
    /// [`DeviceOps::msm_g2`] with preemption points inside it (none by default).
    fn msm_g2_in_steps(
        &self,
        bases: &[G2Affine],
        scalars: Scalars<'_>,
        between: &mut dyn FnMut(),
    ) -> Result<G2Projective> {
        let _ = between;
        self.msm_g2(bases, scalars)
    }
    /// The most points one multiexp step takes: a longer multiexp is cut into steps of this
    /// many, with a preemption point between them, so a deadline partition waits for at most
    /// one step (a few seconds of the device's time at the most).
    fn step_points(&self) -> usize {
        CPU_STEP_POINTS
    }
    /// Device errors met so far by this value (reported in [`DeviceTimings::faults`]).
    fn faults(&self) -> u32 {
        0
    }
}

/// What crossed the bus and how often the host waited, counted by a backend for one partition.
/// A count checks a design on any machine; a time only on the one it ran on.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DeviceCounters {
    /// Bytes copied from host memory to the device.
    pub bytes_to_device: u64,
    /// Bytes copied from the device to host memory.
    pub bytes_from_device: u64,
    /// Kernel launches.
    pub launches: u64,
    /// Times the host blocked on the device (a blocking copy, a wait for the queue).
    pub host_waits: u64,
    /// The host waits with nothing enqueued behind what they waited for: the device idles
    /// until the host gives it more (a multiexp's last read-back, a finish, a blocking copy).
    pub idle_waits: u64,
    /// Curve-point additions of the multiexps' kernels: one a term whose scalar is one, one a
    /// nonzero digit of the others, two a bucket to weigh the buckets by their digits (the
    /// work groups' and the host's sums of partial results, a few thousand a chunk, left out).
    pub point_additions: u64,
}

impl std::ops::Sub for DeviceCounters {
    type Output = DeviceCounters;
    fn sub(self, earlier: DeviceCounters) -> DeviceCounters {
        DeviceCounters {
            bytes_to_device: self.bytes_to_device - earlier.bytes_to_device,
            bytes_from_device: self.bytes_from_device - earlier.bytes_from_device,
            launches: self.launches - earlier.launches,
            host_waits: self.host_waits - earlier.host_waits,
            idle_waits: self.idle_waits - earlier.idle_waits,
            point_additions: self.point_additions - earlier.point_additions,
        }
    }
}

impl std::ops::AddAssign for DeviceCounters {
    fn add_assign(&mut self, other: DeviceCounters) {
        self.bytes_to_device += other.bytes_to_device;
        self.bytes_from_device += other.bytes_from_device;
        self.launches += other.launches;
        self.host_waits += other.host_waits;
        self.idle_waits += other.idle_waits;
        self.point_additions += other.point_additions;
    }
}

pub use snarkd_types::PhaseHooks;

/// A CPU multiexp step: about a second of 16 cores (blst's Pippenger).
pub const CPU_STEP_POINTS: usize = 1 << 22;

/// The CPU steps: our FFTs (`fft.rs`) and blst's Pippenger, on the caller's priority's pool.
#[derive(Debug, Default, Clone, Copy)]
pub struct CpuOps;

impl DeviceOps for CpuOps {
    fn compute_h(&self, abc: Abc) -> Result<Vec<Fr>> {
        compute_h_in_steps(abc, &mut || {})
    }
    fn msm_g1(&self, bases: &[G1Affine], scalars: Scalars<'_>) -> Result<G1Projective> {
        self.msm_g1_in_steps(bases, scalars, &mut || {})
    }
    fn msm_g2(&self, bases: &[G2Affine], scalars: Scalars<'_>) -> Result<G2Projective> {
        self.msm_g2_in_steps(bases, scalars, &mut || {})
    }
    fn compute_h_in_steps(&self, abc: Abc, between: &mut dyn FnMut()) -> Result<Vec<Fr>> {
        compute_h_in_steps(abc, between)
    }
    fn msm_g1_in_steps(
        &self,
        bases: &[G1Affine],
        scalars: Scalars<'_>,
        between: &mut dyn FnMut(),
    ) -> Result<G1Projective> {
        Ok(msm_g1_in_steps(bases, scalars, between))
    }
    fn msm_g2_in_steps(
        &self,
        bases: &[G2Affine],
        scalars: Scalars<'_>,
        between: &mut dyn FnMut(),
    ) -> Result<G2Projective> {
        Ok(msm_g2_in_steps(bases, scalars, between))
    }
}

/// At a step boundary: the phase ends here when its caller asks it to.
pub(crate) fn stop_if_asked(hooks: &dyn PhaseHooks) -> Result<()> {
    match hooks.stop_requested() {
        true => Err(ProverError::Stopped),
        false => Ok(()),
    }
}

/// Verifies the partition's proof against the public inputs its own synthesis recorded (a few
/// milliseconds). A failure here is the device phase's, not the request's: a device returning
/// wrong numbers or a fault in this code. The engine then proves the partition again.
pub(crate) fn self_check(
    pvk: &PreparedVerifyingKey<Bls12>,
    proof: &Proof<Bls12>,
    inputs: &[Fr],
) -> Result<()> {
    match verify_proof(pvk, proof, &inputs[1..]) {
        Ok(true) => Ok(()),
        Ok(false) => Err(ProverError::PartitionProofInvalid(
            "wrong device results, a prover fault or a witness that does not satisfy the \
             circuit; prove the partition again"
                .into(),
        )),
        Err(e) => Err(ProverError::Device {
            backend: "any".into(),
            reason: format!("checking the partition proof: {e}"),
        }),
    }
}

pub(crate) fn check_shape(p: &Witness, params: &Parameters<Bls12>) -> Result<()> {
    crate::synthesis::check_counts(
        params,
        p.num_inputs(),
        p.num_aux(),
        p.a_aux_density.count(),
        p.b_input_density.count() + p.b_aux_density.count(),
    )
}

pub(crate) fn assemble(
    params: &Parameters<Bls12>,
    Randomness { r, s }: Randomness,
    h: G1Projective,
    l: G1Projective,
    a: G1Projective,
    b1: G1Projective,
    b2: G2Projective,
) -> Result<Proof<Bls12>> {
    let vk = &params.vk;
    if bool::from(vk.delta_g1.is_identity() | vk.delta_g2.is_identity()) {
        return Err(ProverError::ParamsShape("delta is the identity".into()));
    }
    let g_a = vk.alpha_g1 + a + vk.delta_g1 * r;
    let g_b = vk.beta_g2 + b2 + vk.delta_g2 * s;
    let g_c = h + l + a * s + b1 * r + vk.delta_g1 * (r * s) + vk.alpha_g1 * s + vk.beta_g1 * r;
    Ok(Proof {
        a: g_a.to_affine(),
        b: g_b.to_affine(),
        c: g_c.to_affine(),
    })
}
