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

use std::time::{Duration, Instant};

use bellperson::groth16::{verify_proof, Parameters, PreparedVerifyingKey, Proof};
use blstrs::{Bls12, G1Affine, G1Projective, G2Affine, G2Projective, Scalar as Fr};
use ff::Field;
use group::prime::PrimeCurveAffine;
use group::Curve;
use rand::rngs::OsRng;

use super::fft::compute_h_in_steps;
use super::msm::{msm_g1_in_steps, msm_g2_in_steps, ScalarBytes, Scalars};
use crate::error::{ProverError, Result};
use crate::keys::LoadedParams;
use crate::synthesis::{Abc, SynthesizedPartition, Witness};

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

/// Proves `partition` with `params` on the CPU, telling `hooks` of the a/b/c release and of each
/// step's end (see [`PhaseHooks`]).
pub fn prove_partition(
    partition: SynthesizedPartition,
    params: &LoadedParams,
    randomness: Randomness,
    hooks: &mut dyn PhaseHooks,
) -> Result<(Proof<Bls12>, DeviceTimings)> {
    prove_partition_with(&CpuOps, partition, params, randomness, hooks)
}

/// [`prove_partition`] with the FFT and MSM steps of `ops`. The preemption points
/// ([`PhaseHooks::step_done`]) are here, once for every backend: after the H polynomial and
/// after each multiexp step (of at most [`DeviceOps::step_points`] points) but the last, which
/// ends the phase.
pub fn prove_partition_with(
    ops: &dyn DeviceOps,
    partition: SynthesizedPartition,
    loaded: &LoadedParams,
    randomness: Randomness,
    hooks: &mut dyn PhaseHooks,
) -> Result<(Proof<Bls12>, DeviceTimings)> {
    let params = loaded.parameters();
    check_shape(&partition, params)?;
    let (partition, abc) = partition.into_parts();
    let abc_bytes = abc.size_bytes();

    let fft_start = Instant::now();
    let h = ops.compute_h_in_steps(abc, &mut || hooks.step_done())?;
    let fft = fft_start.elapsed();
    hooks.abc_released(abc_bytes);
    hooks.step_done();
    stop_if_asked(hooks)?;
    #[cfg(feature = "test-hooks")]
    super::test_hold::at_boundary(hooks)?;

    let msm_start = Instant::now();
    let h_scalars = ScalarBytes::dense_in_place(h);
    if params.h.len() != h_scalars.len() {
        return Err(ProverError::ParamsShape(format!(
            "the circuit's domain needs {} H bases, the parameters have {}",
            h_scalars.len(),
            params.h.len()
        )));
    }
    let mut steps = Steps { ops, hooks };
    let h_sum = steps.g1(&params.h, &h_scalars)?;
    drop(h_scalars);

    let p = &partition;
    let aux_scalars = ScalarBytes::dense(&p.aux);
    let l_sum = steps.g1(&params.l, &aux_scalars)?;
    drop(aux_scalars);

    let a_scalars = ScalarBytes::gathered(&[(&p.inputs, None), (&p.aux, Some(&p.a_aux_density))]);
    let a_sum = steps.g1(&params.a, &a_scalars)?;
    drop(a_scalars);

    let b_scalars = ScalarBytes::gathered(&[
        (&p.inputs, Some(&p.b_input_density)),
        (&p.aux, Some(&p.b_aux_density)),
    ]);
    let b1_sum = steps.g1(&params.b_g1, &b_scalars)?;
    let b2_sum = steps.last_g2(&params.b_g2, &b_scalars)?;
    drop(b_scalars);
    let msm = msm_start.elapsed();

    let proof = assemble(params, randomness, h_sum, l_sum, a_sum, b1_sum, b2_sum)?;
    self_check(loaded.prepared_verifying_key(), &proof, &partition.inputs)?;
    let faults = ops.faults();
    Ok((proof, DeviceTimings { fft, msm, faults }))
}

/// The multiexps of a device phase, each cut into steps of at most `ops.step_points()` points
/// with a preemption point after every step (but after the phase's last).
struct Steps<'a> {
    ops: &'a dyn DeviceOps,
    hooks: &'a mut dyn PhaseHooks,
}

impl Steps<'_> {
    fn g1(&mut self, bases: &[G1Affine], scalars: &ScalarBytes) -> Result<G1Projective> {
        let ops = self.ops;
        let sum = self.stepped(bases, scalars, |b, s, h| ops.msm_g1_in_steps(b, s, h))?;
        self.hooks.step_done();
        stop_if_asked(self.hooks)?;
        Ok(sum)
    }

    /// The phase's last multiexp: no preemption point after its last step.
    fn last_g2(&mut self, bases: &[G2Affine], scalars: &ScalarBytes) -> Result<G2Projective> {
        let ops = self.ops;
        self.stepped(bases, scalars, |b, s, h| ops.msm_g2_in_steps(b, s, h))
    }

    fn stepped<B, P: group::Group>(
        &mut self,
        bases: &[B],
        scalars: &ScalarBytes,
        msm: impl Fn(&[B], Scalars<'_>, &mut dyn FnMut()) -> Result<P>,
    ) -> Result<P> {
        if bases.len() != scalars.len() {
            return Err(ProverError::ParamsShape(format!(
                "a multiexp has {} bases for {} scalars",
                bases.len(),
                scalars.len()
            )));
        }
        let step = self.ops.step_points().max(1);
        let scalars = scalars.view();
        let mut sum = P::identity();
        let mut start = 0;
        loop {
            let end = (start + step).min(bases.len());
            let hooks = &mut *self.hooks;
            sum += msm(&bases[start..end], scalars.slice(start..end), &mut || {
                hooks.step_done()
            })?;
            start = end;
            if start >= bases.len() {
                return Ok(sum);
            }
            self.hooks.step_done();
            stop_if_asked(self.hooks)?;
        }
    }
}

/// At a step boundary: the phase ends here when its caller asks it to.
fn stop_if_asked(hooks: &dyn PhaseHooks) -> Result<()> {
    match hooks.stop_requested() {
        true => Err(ProverError::Stopped),
        false => Ok(()),
    }
}

/// Verifies the partition's proof against the public inputs its own synthesis recorded (a few
/// milliseconds). A failure here is the device phase's, not the request's: a device returning
/// wrong numbers or a fault in this code. The engine then proves the partition again.
fn self_check(
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

fn check_shape(p: &Witness, params: &Parameters<Bls12>) -> Result<()> {
    crate::synthesis::check_counts(
        params,
        p.num_inputs(),
        p.num_aux(),
        p.a_aux_density.count(),
        p.b_input_density.count() + p.b_aux_density.count(),
    )
}

fn assemble(
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
