//! The Groth16 setup of local test parameters, from a circuit's recorded R1CS. It makes the same
//! parameters as bellperson's generator for the same toxic waste, bit for bit (tested), in the
//! same layout its prover and ours read, but several times faster: each variable's polynomials
//! are evaluated at τ straight from the recorded rows, and every point is a product of a fixed
//! base ([`fixed_base`]) instead of a wNAF exponentiation made affine one inversion at a
//! time.
//!
//! Layout: `mod.rs`, the setup; `fixed_base.rs`, the fixed-base products it is made of.
//!
//! The parameters, for the QAP of m = 2^k ≥ rows Lagrange basis polynomials Lᵣ over the
//! domain of m-th roots of unity, with uⱼ, vⱼ, wⱼ variable j's A, B and C polynomials:
//! - vk: α·G1, β·G1, β·G2, γ·G2, δ·G1, δ·G2 and, for each input j, (β·uⱼ + α·vⱼ + wⱼ)/γ · G1;
//! - L: (β·uⱼ + α·vⱼ + wⱼ)/δ · G1 for each aux variable (never zero: no variable unconstrained);
//! - H: τⁱ·(τ^m − 1)/δ · G1 for i < m − 1;
//! - A: uⱼ·G1, B: vⱼ·G1 and vⱼ·G2 over all variables, inputs first, leaving out zeros.

use std::sync::Arc;

use bellperson::groth16::{Parameters, VerifyingKey};
use blstrs::{Bls12, G1Projective, G2Projective, Scalar as Fr};
use ff::{BatchInvert, Field};
use group::{Curve, Group};
use rand_core::RngCore;
use rayon::prelude::*;

mod fixed_base;

use crate::error::{ProverError, Result};
use crate::groth16::fft::{scale, Domain};
use crate::synthesis::precompiled::{Columns, FullR1cs};
use fixed_base::FixedBase;

/// Differences inverted together (one inversion each batch).
const CHUNK: usize = 1 << 14;

/// The secrets of a setup. Anyone who knows them can forge proofs against its parameters: test
/// parameters only.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ToxicWaste {
    pub(crate) tau: Fr,
    pub(crate) alpha: Fr,
    pub(crate) beta: Fr,
    pub(crate) gamma: Fr,
    pub(crate) delta: Fr,
}

impl ToxicWaste {
    pub(crate) fn random(mut rng: impl RngCore) -> ToxicWaste {
        let mut non_zero = || loop {
            let x = Fr::random(&mut rng);
            if !bool::from(x.is_zero()) {
                return x;
            }
        };
        ToxicWaste {
            tau: non_zero(),
            alpha: non_zero(),
            beta: non_zero(),
            gamma: non_zero(),
            delta: non_zero(),
        }
    }
}

/// Groth16 parameters for the circuit `r1cs` records, made with `waste`, on the current rayon
/// pool.
pub(crate) fn groth16_setup(r1cs: &FullR1cs, waste: &ToxicWaste) -> Result<Parameters<Bls12>> {
    let ToxicWaste {
        tau,
        alpha,
        beta,
        gamma,
        delta,
    } = *waste;
    let failed = |why: &str| ProverError::Setup(why.to_string());
    let rows = r1cs.ab.num_constraints();
    let domain = Domain::for_len(rows).map_err(|e| failed(&e.to_string()))?;
    let z_tau = tau.pow_vartime([domain.size as u64]) - Fr::ONE;
    if bool::from(z_tau.is_zero()) {
        return Err(failed("τ is a root of unity of the domain; run it again"));
    }
    let gamma_inv = Option::<Fr>::from(gamma.invert()).ok_or_else(|| failed("γ is zero"))?;
    let delta_inv = Option::<Fr>::from(delta.invert()).ok_or_else(|| failed("δ is zero"))?;

    let Columns { a: u, b: v, c: w } = r1cs.columns_at(&lagrange_at(&domain, tau, z_tau, rows));
    let inputs = r1cs.ab.num_inputs();
    // (β·uⱼ + α·vⱼ + wⱼ) over γ for inputs and over δ for aux variables.
    let ext: Vec<Fr> = (0..u.len())
        .into_par_iter()
        .map(|j| {
            let over = if j < inputs { gamma_inv } else { delta_inv };
            (beta * u[j] + alpha * v[j] + w[j]) * over
        })
        .collect();
    if ext[inputs..].iter().any(|e| bool::from(e.is_zero())) {
        return Err(failed(
            "an aux variable is unconstrained (its L element would be zero)",
        ));
    }
    let h_scalars = powers(tau, domain.size - 1, z_tau * delta_inv);
    let non_zero = |p: &[Fr]| -> Vec<Fr> {
        p.iter()
            .copied()
            .filter(|x| !bool::from(x.is_zero()))
            .collect()
    };

    let g1 = FixedBase::new(G1Projective::generator());
    let g2 = FixedBase::new(G2Projective::generator());
    let mut ext_points = g1.mul_all(&ext);
    let l = ext_points.split_off(inputs);
    let ic = ext_points;
    let v_non_zero = non_zero(&v);
    let vk = VerifyingKey::<Bls12> {
        alpha_g1: g1.mul(&alpha).to_affine(),
        beta_g1: g1.mul(&beta).to_affine(),
        beta_g2: g2.mul(&beta).to_affine(),
        gamma_g2: g2.mul(&gamma).to_affine(),
        delta_g1: g1.mul(&delta).to_affine(),
        delta_g2: g2.mul(&delta).to_affine(),
        ic,
    };
    Ok(Parameters {
        vk,
        h: Arc::new(g1.mul_all(&h_scalars)),
        l: Arc::new(l),
        a: Arc::new(g1.mul_all(&non_zero(&u))),
        b_g1: Arc::new(g1.mul_all(&v_non_zero)),
        b_g2: Arc::new(g2.mul_all(&v_non_zero)),
    })
}

/// Lᵣ(τ) for r < rows over `domain`'s m-th roots of unity: ωʳ·(τ^m − 1) / (m·(τ − ωʳ)), with
/// `z_tau` = τ^m − 1 (not zero).
fn lagrange_at(domain: &Domain, tau: Fr, z_tau: Fr, rows: usize) -> Vec<Fr> {
    let omegas = powers(domain.omega, rows, Fr::ONE);
    let mut inverses: Vec<Fr> = omegas.par_iter().map(|w| tau - w).collect();
    // τ is no root of unity of the domain (z_tau ≠ 0), so no difference is zero.
    inverses.par_chunks_mut(CHUNK).for_each(|chunk| {
        chunk.iter_mut().batch_invert();
    });
    let scale = z_tau * domain.size_inv;
    omegas
        .par_iter()
        .zip(inverses.par_iter())
        .map(|(w, inv)| *w * inv * scale)
        .collect()
}

/// `factor`·xⁱ for i < n.
fn powers(x: Fr, n: usize, factor: Fr) -> Vec<Fr> {
    let mut out = vec![Fr::ONE; n];
    scale(&mut out, x, factor);
    out
}

#[cfg(test)]
mod tests;
