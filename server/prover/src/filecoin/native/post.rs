//! The Window/Winning PoSt partition witness (`FallbackPoStCircuit`), from the partition's
//! sectors and their vanilla proofs: every hash is Poseidon (`poseidon_tree`), computed
//! natively.
//!
//! What the circuit allocates, sector by sector (its extensible synthesis makes chunks of
//! sectors on their own systems and appends them in order: the same order): comm_r_last,
//! comm_c, comm_r (aux, then input), the Poseidon hash of comm_c and comm_r_last; then per
//! challenge the challenged leaf and its TreeR path with its index as an input (`PoRCircuit`,
//! the root only compared).

use bellperson::ConstraintSystem;
use blstrs::Scalar as Fr;
use ff::Field;
use filecoin_hashers::{Hasher, POSEIDON_CONSTANTS_2};
use filecoin_proofs::MerkleTreeTrait;
use storage_proofs_post::fallback::{PublicSector, SectorProof};

use super::{each_in_place, input_num, num, poseidon_tree, NativeError, Witness};
use crate::filecoin::nodes::PathElement;
use crate::synthesis::precompiled::WitnessCs;

type Result<T> = std::result::Result<T, NativeError>;

/// What one sector of a PoSt partition's circuit is built from (`Sector::circuit`).
pub(crate) struct SectorValues {
    pub(crate) comm_r: Fr,
    pub(crate) comm_c: Fr,
    pub(crate) comm_r_last: Fr,
    /// Per challenge: the challenged leaf and its TreeR path (as `as_options` gives it).
    pub(crate) challenges: Vec<(Fr, Vec<PathElement>)>,
}

impl SectorValues {
    /// A sector's values from its public part and its vanilla proof.
    pub(crate) fn new<Tree: MerkleTreeTrait>(
        public: &PublicSector<<Tree::Hasher as Hasher>::Domain>,
        proof: &SectorProof<Tree::Proof>,
    ) -> SectorValues {
        SectorValues {
            comm_r: public.comm_r.into(),
            comm_c: proof.comm_c.into(),
            comm_r_last: proof.comm_r_last.into(),
            challenges: proof
                .leafs()
                .into_iter()
                .map(Into::into)
                .zip(proof.as_options())
                .collect(),
        }
    }
}

/// The witness of the partition over `sectors` (inputs with ONE first, aux), of `inputs` and
/// `aux` values (its exact counts: the sectors write their shares of them in place).
pub(crate) fn witness<Tree: 'static + MerkleTreeTrait>(
    sectors: &[SectorValues],
    inputs: usize,
    aux: usize,
) -> Result<Witness> {
    let mut cs = WitnessCs::with_capacity(inputs, aux);
    cs.alloc_input(|| "ONE", || Ok(Fr::ONE))?;
    each_in_place(&mut cs, (inputs, aux), sectors, sector::<Tree>)?;
    Ok(cs.into_vecs())
}

/// One sector (`Sector::synthesize`).
fn sector<Tree: 'static + MerkleTreeTrait>(cs: &mut WitnessCs, s: &SectorValues) -> Result<()> {
    let comm_r_last = num(cs, s.comm_r_last)?;
    let comm_c = num(cs, s.comm_c)?;
    input_num(cs, s.comm_r)?;
    poseidon_tree::hash(cs, &[comm_c, comm_r_last], &POSEIDON_CONSTANTS_2)?;
    for (leaf, path) in &s.challenges {
        let leaf = num(cs, *leaf)?;
        poseidon_tree::inclusion::<Tree>(cs, path, &leaf)?;
    }
    Ok(())
}
