//! [`poseidon`]: neptune's Poseidon hash circuit as filecoin's circuits call it
//! (`circuit::poseidon_hash`, the "legacy" circuit), computed natively: the same hash and the
//! same aux values in the same order, without the linear combinations the circuit builds for
//! every MDS product.
//!
//! What the circuit allocates, with the state's width w = arity + 1 (element 0 the domain tag,
//! a constant, then the preimage, already allocated):
//! - the first full round: element 0 stays a constant; each other element x (with the round's
//!   pre and post keys) allocates (x + pre)², its square, and (x + pre)⁵ + post;
//! - each later round's S-box on an element that an MDS product made a linear combination:
//!   the element itself, its square, its fourth power and x⁵ (+ the post key, except in the
//!   last round): four values; full rounds do all w elements, partial rounds element 0;
//! - the result, element 1 of the final state.
//!
//! Between rounds the state is multiplied by the constants' matrices (`product_mds`): the
//! pre-sparse matrix after the first half of the full rounds but one, a sparse matrix after each
//! partial round, the MDS matrix otherwise. Those are linear: values only, nothing allocated.

use crate::synthesis::precompiled::Column;
use blstrs::Scalar as Fr;
use ff::Field;
use neptune::poseidon::PoseidonConstants;
use neptune::Arity;

/// The Poseidon hash of `preimage` (as many elements as the constants' arity) as the legacy
/// circuit computes it. Appends to `aux` what the circuit allocates before the result; the
/// result, which the circuit allocates last, is returned, not appended (the caller allocates
/// it: it is the handle later gadgets take).
///
/// Panics if `preimage` is not the arity's length (the circuit does too).
pub(crate) fn poseidon<A: Arity<Fr>>(
    aux: &mut Column<'_>,
    preimage: &[Fr],
    c: &PoseidonConstants<Fr, A>,
) -> Fr {
    let width = c.width();
    assert_eq!(
        preimage.len() + 1,
        width,
        "a preimage of the arity's length"
    );
    let keys = &c.compressed_round_constants;
    let mut state = Vec::with_capacity(width);
    state.push(c.domain_tag);
    state.extend_from_slice(preimage);
    let mut rounds = Rounds { c, done: 0 };

    // The first full round: the pre and post keys of every element.
    let (pre, post) = keys[..2 * width].split_at(width);
    let mut used = 2 * width;
    state[0] = fifth_power(state[0] + pre[0]) + post[0];
    for i in 1..width {
        let x = state[i] + pre[i];
        let x2 = x.square();
        let x4 = x2.square();
        let x5 = x4 * x + post[i];
        aux.extend([x2, x4, x5]);
        state[i] = x5;
    }
    rounds.mix(&mut state);

    for _ in 1..c.half_full_rounds {
        for (x, key) in state.iter_mut().zip(&keys[used..used + width]) {
            *x = s_box(aux, *x, Some(*key));
        }
        used += width;
        rounds.mix(&mut state);
    }
    for _ in 0..c.partial_rounds {
        state[0] = s_box(aux, state[0], Some(keys[used]));
        used += 1;
        rounds.mix(&mut state);
    }
    for _ in 1..c.half_full_rounds {
        for (x, key) in state.iter_mut().zip(&keys[used..used + width]) {
            *x = s_box(aux, *x, Some(*key));
        }
        used += width;
        rounds.mix(&mut state);
    }
    // The terminal full round has no post keys.
    for x in state.iter_mut() {
        *x = s_box(aux, *x, None);
    }
    rounds.mix(&mut state);
    state[1]
}

/// x⁵.
fn fifth_power(x: Fr) -> Fr {
    x.square().square() * x
}

/// The S-box of a round after the first on `x` (a linear combination in the circuit, so first
/// allocated): appends x, x², x⁴ and x⁵ + `post`, and returns the last.
fn s_box(aux: &mut Column<'_>, x: Fr, post: Option<Fr>) -> Fr {
    let x2 = x.square();
    let x4 = x2.square();
    let x5 = x4 * x + post.unwrap_or(Fr::ZERO);
    aux.extend([x, x2, x4, x5]);
    x5
}

/// Which matrix mixes the state after each round.
struct Rounds<'a, A: Arity<Fr>> {
    c: &'a PoseidonConstants<Fr, A>,
    /// Rounds mixed so far.
    done: usize,
}

impl<A: Arity<Fr>> Rounds<'_, A> {
    fn mix(&mut self, state: &mut Vec<Fr>) {
        let c = self.c;
        let sparse_from = c.half_full_rounds - 1;
        let round = self.done;
        self.done += 1;
        if round == sparse_from {
            return product(state, &c.pre_sparse_matrix);
        }
        if round > sparse_from && round < c.half_full_rounds + c.partial_rounds {
            let sparse = &c.sparse_matrixes[round - sparse_from - 1];
            let first = state.iter().zip(&sparse.w_hat).map(|(x, w)| *x * w).sum();
            let x0 = state[0];
            for (x, v) in state[1..].iter_mut().zip(&sparse.v_rest) {
                *x += x0 * v;
            }
            state[0] = first;
            return;
        }
        product(state, &c.mds_matrices.m)
    }
}

/// `state` times `matrix` (row vector on the left): element j is Σᵢ stateᵢ · matrixᵢⱼ.
fn product(state: &mut Vec<Fr>, matrix: &[Vec<Fr>]) {
    let next = (0..state.len())
        .map(|j| state.iter().zip(matrix).map(|(x, row)| *x * row[j]).sum())
        .collect();
    *state = next;
}
