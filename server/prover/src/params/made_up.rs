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
    let tile = |points: &[G1Affine], n: usize| Arc::new(tiled(points, n));
    let b_terms = b_in.count() + b_aux.count();
    let vk = made_up_vk(&g1, &g2, partition.num_inputs());
    let params = Parameters {
        vk,
        h: tile(&g1, domain - 1),
        l: tile(&g1, partition.num_aux()),
        a: tile(&g1, partition.num_inputs() + a_aux.count()),
        b_g1: tile(&g1, b_terms),
        b_g2: Arc::new(tiled(&g2, b_terms)),
    };
    LoadedParams::unchecked(circuit, params)
}

/// A verifying key of made-up points with `inputs` public inputs.
fn made_up_vk(g1: &[G1Affine], g2: &[G2Affine], inputs: usize) -> VerifyingKey<Bls12> {
    VerifyingKey {
        alpha_g1: g1[1],
        beta_g1: g1[2],
        beta_g2: g2[1],
        gamma_g2: g2[2],
        delta_g1: g1[3],
        delta_g2: g2[3],
        ic: g1[..inputs].to_vec(),
    }
}

/// `points` repeated to `n`, written in parallel (at production shape tens of GB of fresh
/// memory, which one thread would spend most of the time faulting in).
fn tiled<A: Copy + Send + Sync>(points: &[A], n: usize) -> Vec<A> {
    use rayon::prelude::*;
    (0..n)
        .into_par_iter()
        .map(|i| points[i % points.len()])
        .collect()
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

/// Point counts of a made-up `.params` file.
#[derive(Debug, Clone, Copy)]
pub struct FileCounts {
    pub h: usize,
    pub l: usize,
    pub a: usize,
    pub b_g1: usize,
    pub b_g2: usize,
}

impl FileCounts {
    /// G1 and G2 points in all.
    pub fn points(&self) -> (usize, usize) {
        (self.h + self.l + self.a + self.b_g1, self.b_g2)
    }

    /// A 32 GiB PoRep's file (44 GiB: about 378 M G1 and 57 M G2 points) scaled by
    /// `1/divisor`: h of its domain (2^27 − 1), l of its aux count (130,169,893), B of 57 M,
    /// and A the rest of the 378 M G1 points.
    pub fn porep_32g_over(divisor: usize) -> FileCounts {
        FileCounts {
            h: ((1 << 27) - 1) / divisor,
            l: 130_169_893 / divisor,
            a: 56_612_380 / divisor,
            b_g1: 57_000_000 / divisor,
            b_g2: 57_000_000 / divisor,
        }
    }
}

/// Writes a `.params` file of `counts` points in the published layout (bellperson's
/// `Parameters::write`): a verifying key, then each query's big-endian count and uncompressed
/// points, a few thousand distinct points repeated. Returns the bytes written.
pub fn write_made_up_file(path: &std::path::Path, counts: FileCounts) -> std::io::Result<u64> {
    use std::io::Write;
    let g1 = chain::<G1Projective, G1Affine>(DISTINCT);
    let g2 = chain::<G2Projective, G2Affine>(DISTINCT / 4);
    let vk = made_up_vk(&g1, &g2, 2);
    let g1_bytes: Vec<u8> = (g1.iter()).flat_map(|p| p.to_uncompressed()).collect();
    let g2_bytes: Vec<u8> = (g2.iter()).flat_map(|p| p.to_uncompressed()).collect();
    let mut out = std::io::BufWriter::with_capacity(8 << 20, std::fs::File::create(path)?);
    vk.write(&mut out)?;
    let mut section = |n: usize, encoded: &[u8], size: usize| -> std::io::Result<()> {
        out.write_all(&(n as u32).to_be_bytes())?;
        let mut left = n;
        while left > 0 {
            let take = left.min(encoded.len() / size);
            out.write_all(&encoded[..take * size])?;
            left -= take;
        }
        Ok(())
    };
    for n in [counts.h, counts.l, counts.a, counts.b_g1] {
        section(n, &g1_bytes, 96)?;
    }
    section(counts.b_g2, &g2_bytes, 192)?;
    out.flush()?;
    Ok(out.get_ref().metadata()?.len())
}
