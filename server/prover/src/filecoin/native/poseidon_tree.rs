//! filecoin's Poseidon Merkle trees (TreeR, TreeC: base, sub- and top-tree arities) and
//! Poseidon hashes in a circuit, with the hashes computed natively
//! (`synthesis::native::poseidon`): one level of a path allocates its index bits, its siblings,
//! the insertion of the current node among them (`insert`, the gadget) and the hash of the
//! row; a path with its index as an input (`PoRCircuit`) then packs the index bits into inputs.

use bellperson::gadgets::boolean::{AllocatedBit, Boolean};
use bellperson::gadgets::multipack;
use bellperson::gadgets::num::AllocatedNum;
use bellperson::SynthesisError;
use blstrs::Scalar as Fr;
use filecoin_hashers::PoseidonArity;
use filecoin_proofs::MerkleTreeTrait;
use neptune::poseidon::PoseidonConstants;
use sha2::digest::typenum::Unsigned;
use storage_proofs_core::gadgets::insertion::insert;

use super::{num, NativeError};
use crate::filecoin::nodes::PathElement;
use crate::synthesis::native::poseidon::poseidon;
use crate::synthesis::precompiled::WitnessCs;

type Result<T> = std::result::Result<T, NativeError>;

/// The Poseidon hash of `preimage` (`circuit::poseidon_hash`), allocated.
pub(super) fn hash<A: PoseidonArity>(
    cs: &mut WitnessCs,
    preimage: &[AllocatedNum<Fr>],
    constants: &PoseidonConstants<Fr, A>,
) -> Result<AllocatedNum<Fr>> {
    if preimage.len() + 1 != constants.width() {
        return Err(NativeError::Shape(format!(
            "a Poseidon preimage of {} elements for arity {}",
            preimage.len(),
            constants.width() - 1
        )));
    }
    let values = preimage
        .iter()
        .map(|n| n.get_value().ok_or(SynthesisError::AssignmentMissing))
        .collect::<std::result::Result<Vec<_>, _>>()?;
    let digest = poseidon(&mut cs.aux, &values, constants);
    num(cs, digest)
}

/// `leaf`'s path in a tree of `Tree`'s shape, with its index packed into inputs and the root
/// only compared (`PoRCircuit` with a private root). `path` is as `as_options` gives it: the
/// base levels, then the sub-tree's and the top tree's level where the shape has them.
pub(super) fn inclusion<Tree: MerkleTreeTrait>(
    cs: &mut WitnessCs,
    path: &[PathElement],
    leaf: &AllocatedNum<Fr>,
) -> Result<()> {
    let base_len = base_levels::<Tree>(path.len())?;
    let (base, rest) = path.split_at(base_len);
    let (sub, top) = rest.split_at(usize::from(Tree::SubTreeArity::to_usize() > 0));
    let mut bits = Vec::new();
    let mut cur = leaf.clone();
    cur = levels::<Tree::Arity>(cs, base, cur, &mut bits)?;
    cur = levels::<Tree::SubTreeArity>(cs, sub, cur, &mut bits)?;
    levels::<Tree::TopTreeArity>(cs, top, cur, &mut bits)?;
    multipack::pack_into_inputs(&mut *cs, &bits)?;
    Ok(())
}

/// Levels of arity `A` from `cur`, each allocating its index bits (added to `bits`) and
/// siblings; returns the node they lead to.
fn levels<A: PoseidonArity>(
    cs: &mut WitnessCs,
    elements: &[PathElement],
    mut cur: AllocatedNum<Fr>,
    bits: &mut Vec<Boolean>,
) -> Result<AllocatedNum<Fr>> {
    let index_bits = A::to_usize().trailing_zeros() as usize;
    for (siblings, index) in elements {
        let mut level_bits = Vec::with_capacity(index_bits);
        for i in 0..index_bits {
            let bit = AllocatedBit::alloc(&mut *cs, index.map(|x| (x >> i) & 1 == 1))?;
            level_bits.push(Boolean::from(bit));
        }
        bits.extend_from_slice(&level_bits);
        let siblings = siblings
            .iter()
            .map(|s| AllocatedNum::alloc(&mut *cs, || s.ok_or(SynthesisError::AssignmentMissing)))
            .collect::<std::result::Result<Vec<_>, _>>()?;
        cur = level::<A>(cs, &cur, &level_bits, &siblings)?;
    }
    Ok(cur)
}

/// One level: `cur` inserted among `siblings` at `index`, the row hashed.
fn level<A: PoseidonArity>(
    cs: &mut WitnessCs,
    cur: &AllocatedNum<Fr>,
    index: &[Boolean],
    siblings: &[AllocatedNum<Fr>],
) -> Result<AllocatedNum<Fr>> {
    if siblings.len() + 1 != A::to_usize() {
        return Err(NativeError::Shape(format!(
            "a tree path element with {} siblings at arity {}",
            siblings.len(),
            A::to_usize()
        )));
    }
    let row = insert(&mut *cs, cur, index, siblings)?;
    hash(cs, &row, A::PARAMETERS())
}

/// `leaf`'s path in a tree of `Tree`'s shape along the challenge's `bits`, its siblings
/// already allocated, its root only compared (`por_no_challenge_input`).
pub(super) fn path_without_input<Tree: MerkleTreeTrait>(
    cs: &mut WitnessCs,
    bits: &[AllocatedBit],
    leaf: AllocatedNum<Fr>,
    siblings: &[Vec<AllocatedNum<Fr>>],
) -> Result<()> {
    let base_len = base_levels::<Tree>(siblings.len())?;
    let mut bits = bits.iter().cloned().map(Boolean::from);
    let mut take = |n: usize| -> Result<Vec<Boolean>> {
        let taken: Vec<Boolean> = bits.by_ref().take(n).collect();
        match taken.len() == n {
            true => Ok(taken),
            false => Err(NativeError::Shape(
                "fewer challenge bits than tree levels".into(),
            )),
        }
    };
    let width = |arity: usize| arity.trailing_zeros() as usize;
    let mut cur = leaf;
    for row in &siblings[..base_len] {
        let index = take(width(Tree::Arity::to_usize()))?;
        cur = level::<Tree::Arity>(cs, &cur, &index, row)?;
    }
    let mut upper_rows = siblings[base_len..].iter();
    if Tree::SubTreeArity::to_usize() > 0 {
        let row = upper_rows.next().expect("counted above");
        let index = take(width(Tree::SubTreeArity::to_usize()))?;
        cur = level::<Tree::SubTreeArity>(cs, &cur, &index, row)?;
    }
    if Tree::TopTreeArity::to_usize() > 0 {
        let row = upper_rows.next().expect("counted above");
        let index = take(width(Tree::TopTreeArity::to_usize()))?;
        level::<Tree::TopTreeArity>(cs, &cur, &index, row)?;
    }
    Ok(())
}

/// How many of a path's `levels` in a tree of `Tree`'s shape are base levels (the rest are the
/// sub-tree's and the top tree's, where the shape has them).
fn base_levels<Tree: MerkleTreeTrait>(levels: usize) -> Result<usize> {
    let upper = usize::from(Tree::SubTreeArity::to_usize() > 0)
        + usize::from(Tree::TopTreeArity::to_usize() > 0);
    levels
        .checked_sub(upper)
        .ok_or_else(|| NativeError::Shape("a tree path shorter than its shape".into()))
}
