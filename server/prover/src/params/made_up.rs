//! Parameters made up for timing the device phase at production shape (feature `bench`): bases
//! of the real counts for a given partition, generated in seconds instead of a setup's hours. A
//! few thousand distinct points are made by a chain of additions normalised in one batch, then
//! repeated to each query's length; the numbers a multiexp does are the same for any bases, and
//! the proofs they give cannot verify ([`LoadedParams::unchecked`]).

use std::sync::Arc;

use bellperson::groth16::{Parameters, VerifyingKey};
use blstrs::{Bls12, G1Affine, G1Projective, G2Affine, G2Projective};
use group::prime::PrimeCurveAffine;
use group::{Curve, Group};

use crate::circuit::CircuitId;
use crate::keys::LoadedParams;
use crate::synthesis::Witness;

/// Distinct points made (then repeated).
const DISTINCT: usize = 1 << 14;

/// Made-up parameters for `partition`'s shape: H for its domain, L for its aux, A and B for its
/// densities.
pub fn made_up_params(circuit: CircuitId, partition: &Witness) -> LoadedParams {
    let (a_aux, b_in, b_aux) = partition.densities();
    let domain = partition.num_constraints().max(1).next_power_of_two();
    let g1 = chain::<G1Projective, G1Affine>(DISTINCT);
    let g2 = chain::<G2Projective, G2Affine>(DISTINCT / 4);
    let tile = |points: &[G1Affine], n: usize| -> Arc<Vec<G1Affine>> {
        Arc::new(points.iter().copied().cycle().take(n).collect())
    };
    let b_terms = b_in.count() + b_aux.count();
    let vk = VerifyingKey::<Bls12> {
        alpha_g1: g1[1],
        beta_g1: g1[2],
        beta_g2: g2[1],
        gamma_g2: g2[2],
        delta_g1: g1[3],
        delta_g2: g2[3],
        ic: g1[..partition.num_inputs()].to_vec(),
    };
    let params = Parameters {
        vk,
        h: tile(&g1, domain - 1),
        l: tile(&g1, partition.num_aux()),
        a: tile(&g1, partition.num_inputs() + a_aux.count()),
        b_g1: tile(&g1, b_terms),
        b_g2: Arc::new(g2.iter().copied().cycle().take(b_terms).collect()),
    };
    LoadedParams::unchecked(circuit, params)
}

/// g, 2g, …, n·g in affine form.
fn chain<P: Group + Curve<AffineRepr = A>, A: PrimeCurveAffine<Curve = P>>(n: usize) -> Vec<A> {
    let g = P::generator();
    let mut points = Vec::with_capacity(n);
    let mut p = g;
    for _ in 0..n {
        points.push(p);
        p += g;
    }
    let mut out = vec![A::identity(); n];
    P::batch_normalize(&points, &mut out);
    out
}
