//! Fixed-base multiplication for the Groth16 setup. Every point of the parameters is a group
//! generator times a scalar, millions of times over, so one table of the generator's multiples
//! serves them all: with 8-bit windows (32 tables of its 255 non-zero multiples of 256^k, 0.8 MB
//! in G1) a product is at most 32 mixed additions and no doubling, where a wNAF exponentiation
//! costs about 255 doublings and 26 additions. Results are made affine a batch at a time with
//! one field inversion per batch (Montgomery's trick), not one per point.

use blstrs::{Fp, Fp2, G1Affine, G1Projective, G2Affine, G2Projective, Scalar as Fr};
use ff::Field;
use group::prime::PrimeCurveAffine;
use group::Group;
use rayon::prelude::*;

/// Bytes of a scalar: one 8-bit window each.
const WINDOWS: usize = 32;
/// Non-zero digits of a window.
const DIGITS: usize = 255;
/// Products made affine together (one inversion).
const BATCH: usize = 1 << 12;

/// A group the setup writes points of: its projective points in blst's Jacobian coordinates
/// (x = X/Z², y = Y/Z³, Z = 0 at infinity) and its affine form.
pub(crate) trait SetupGroup: Group<Scalar = Fr> + Send + Sync {
    type Affine: Copy + Send + Sync;
    type Coord: Field;
    fn add_affine(&mut self, p: &Self::Affine);
    fn jacobian(&self) -> [Self::Coord; 3];
    fn affine(x: Self::Coord, y: Self::Coord) -> Self::Affine;
    fn affine_identity() -> Self::Affine;
}

impl SetupGroup for G1Projective {
    type Affine = G1Affine;
    type Coord = Fp;
    fn add_affine(&mut self, p: &G1Affine) {
        *self += p;
    }
    fn jacobian(&self) -> [Fp; 3] {
        [self.x(), self.y(), self.z()]
    }
    fn affine(x: Fp, y: Fp) -> G1Affine {
        G1Affine::from_raw_unchecked(x, y, false)
    }
    fn affine_identity() -> G1Affine {
        G1Affine::identity()
    }
}

impl SetupGroup for G2Projective {
    type Affine = G2Affine;
    type Coord = Fp2;
    fn add_affine(&mut self, p: &G2Affine) {
        *self += p;
    }
    fn jacobian(&self) -> [Fp2; 3] {
        [self.x(), self.y(), self.z()]
    }
    fn affine(x: Fp2, y: Fp2) -> G2Affine {
        G2Affine::from_raw_unchecked(x, y, false)
    }
    fn affine_identity() -> G2Affine {
        G2Affine::identity()
    }
}

/// The multiples `d · 256^k · base` for every window `k` and non-zero digit `d`, affine.
pub(crate) struct FixedBase<G: SetupGroup> {
    table: Vec<G::Affine>,
}

impl<G: SetupGroup> FixedBase<G> {
    pub(crate) fn new(base: G) -> Self {
        let mut multiples = Vec::with_capacity(WINDOWS * DIGITS);
        let mut window_base = base;
        for _ in 0..WINDOWS {
            let mut multiple = window_base;
            for _ in 0..DIGITS {
                multiples.push(multiple);
                multiple += window_base;
            }
            // 256 times this window's base.
            window_base = multiple;
        }
        let mut table = vec![G::affine_identity(); multiples.len()];
        to_affine(&multiples, &mut table);
        FixedBase { table }
    }

    /// `base · scalar`.
    pub(crate) fn mul(&self, scalar: &Fr) -> G {
        let mut acc = G::identity();
        for (window, &digit) in scalar.to_bytes_le().iter().enumerate() {
            if digit != 0 {
                acc.add_affine(&self.table[window * DIGITS + digit as usize - 1]);
            }
        }
        acc
    }

    /// `base · s` for every scalar, affine, in parallel batches on the current rayon pool.
    pub(crate) fn mul_all(&self, scalars: &[Fr]) -> Vec<G::Affine> {
        let mut out = vec![G::affine_identity(); scalars.len()];
        out.par_chunks_mut(BATCH)
            .zip(scalars.par_chunks(BATCH))
            .for_each(|(out, scalars)| {
                let products: Vec<G> = scalars.iter().map(|s| self.mul(s)).collect();
                to_affine(&products, out);
            });
        out
    }
}

/// `points` made affine into `out` with one inversion: the product of every non-zero Z is
/// inverted once, and each Z's inverse peeled off it walking back.
pub(crate) fn to_affine<G: SetupGroup>(points: &[G], out: &mut [G::Affine]) {
    assert_eq!(points.len(), out.len(), "one affine slot per point");
    let mut prefix = Vec::with_capacity(points.len());
    let mut product = G::Coord::ONE;
    for p in points {
        let [_, _, z] = p.jacobian();
        if !bool::from(z.is_zero()) {
            product *= z;
        }
        prefix.push(product);
    }
    // A product of non-zero elements of a field is never zero.
    let mut inverse = product.invert().unwrap();
    for (i, p) in points.iter().enumerate().rev() {
        let [x, y, z] = p.jacobian();
        if bool::from(z.is_zero()) {
            out[i] = G::affine_identity();
            continue;
        }
        let before = if i == 0 { G::Coord::ONE } else { prefix[i - 1] };
        let z_inv = inverse * before;
        inverse *= z;
        let z_inv2 = z_inv.square();
        out[i] = G::affine(x * z_inv2, y * z_inv2 * z_inv);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use group::Curve;
    use rand::rngs::OsRng;

    fn check<G: SetupGroup + Curve<AffineRepr = <G as SetupGroup>::Affine>>()
    where
        G::Affine: PartialEq + std::fmt::Debug,
    {
        let base = G::random(OsRng);
        let table = FixedBase::new(base);
        let mut scalars: Vec<Fr> = (0..BATCH + 37).map(|_| Fr::random(OsRng)).collect();
        // Zero (the identity among the others), one, −1 (every window's top digits) and a
        // scalar with a single non-zero byte.
        scalars[5] = Fr::ZERO;
        scalars[6] = Fr::ONE;
        scalars[7] = -Fr::ONE;
        scalars[BATCH] = Fr::from(255u64 << 56);
        let made = table.mul_all(&scalars);
        for (s, p) in scalars.iter().zip(&made) {
            assert_eq!(*p, (base * s).to_affine(), "base · {s:?}");
        }
    }

    #[test]
    fn products_match_the_groups_own_multiplication_g1() {
        check::<G1Projective>();
    }

    #[test]
    fn products_match_the_groups_own_multiplication_g2() {
        check::<G2Projective>();
    }
}
