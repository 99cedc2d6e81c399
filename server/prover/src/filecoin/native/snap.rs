//! The SnapDeals partition witness (`EmptySectorUpdateCircuit`), from the circuit's own public
//! fields: the TreeD hashes (the apex tree, the partition's path to comm_d_new and each
//! challenge's path to its apex leaf, about 99 % of the circuit) natively, the rest (Poseidon
//! digests and TreeR paths, bit decompositions, picks, products) with the gadgets the circuit
//! calls or the same allocations, on the same witness-only constraint system.
//!
//! What the circuit allocates, in order (read from storage-proofs-update 19; its own gadgets
//! module is private, so the small ones are spelled out here):
//! 1. k_and_h_select (aux, then input) and its low partition + h-select bits; the partition
//!    packed; comm_r_old, comm_d_new, comm_r_new (each aux then input); phi, the Poseidon hash
//!    of comm_d_new and comm_r_old; comm_c, root_r_old, root_r_new; the apex leaves; the
//!    partition path's siblings; the Poseidon hashes of comm_c with each root;
//! 2. the apex tree, row by row, and the partition path from its root (TreeD);
//! 3. per digest of challenge bits: its index, its Poseidon hash of comm_r_new and the index,
//!    the hash's 255 bits;
//! 4. per challenge: for each h, the packed high bits and that value or zero, then the selected
//!    sum; rho (Poseidon of phi and it); the old replica and new data leaves, the data leaf
//!    times rho, the new replica leaf; the old TreeR path's siblings and its levels, the new
//!    one's; the apex leaf selected by the challenge's bits; the path to it (siblings first,
//!    then the levels).

use bellperson::gadgets::boolean::{field_into_allocated_bits_le, AllocatedBit, Boolean};
use bellperson::gadgets::multipack;
use bellperson::gadgets::num::AllocatedNum;
use bellperson::{ConstraintSystem, SynthesisError};
use blstrs::Scalar as Fr;
use ff::{Field, PrimeField, PrimeFieldBits};
use filecoin_hashers::POSEIDON_CONSTANTS_2;
use filecoin_proofs::{MerkleTreeTrait, TreeRHasher};
use storage_proofs_core::gadgets::insertion::select;
use storage_proofs_update::circuit::{ChallengeProof, PrivateInputs, PublicInputs};
use storage_proofs_update::constants::{hs, POSEIDON_CONSTANTS_GEN_RANDOMNESS};
use storage_proofs_update::{EmptySectorUpdateCircuit, PublicParams};

use super::{each_in_place, input_num, num, poseidon_tree, sha_tree, NativeError, Witness};
use crate::synthesis::precompiled::WitnessCs;

type Result<T> = std::result::Result<T, NativeError>;

/// Values every challenge reads.
struct Shared {
    params: PublicParams,
    hs: Vec<usize>,
    partition_bits: Vec<AllocatedBit>,
    h_select_bits: Vec<AllocatedBit>,
    phi: AllocatedNum<Fr>,
    apex_leaves: Vec<AllocatedNum<Fr>>,
}

/// The value of an input the circuit was built with.
fn value(v: Option<Fr>) -> Result<Fr> {
    v.ok_or(NativeError::Synthesis(SynthesisError::AssignmentMissing))
}

fn shape(what: String) -> NativeError {
    NativeError::Shape(what)
}

/// The first challenge's proof, once the partition has the circuit's counts: challenges, apex
/// leaves (a power of two) and TreeD path length.
fn check_shape<'a, TreeR: MerkleTreeTrait<Hasher = TreeRHasher>>(
    params: &PublicParams,
    challenge_proofs: &'a [ChallengeProof<TreeR>],
    apex_leaves: usize,
) -> Result<&'a ChallengeProof<TreeR>> {
    let first = challenge_proofs
        .first()
        .ok_or_else(|| shape("a partition without challenges".into()))?;
    let path = first.path_d_new.len();
    if challenge_proofs.len() != params.challenge_count
        || apex_leaves != params.apex_leaf_count
        || !params.apex_leaf_count.is_power_of_two()
        || path != params.challenge_bit_len
    {
        return Err(shape(format!(
            "{} challenges, {apex_leaves} apex leaves, a TreeD path of {path} (the circuit has {}, {}, {})",
            challenge_proofs.len(),
            params.challenge_count,
            params.apex_leaf_count,
            params.challenge_bit_len
        )));
    }
    Ok(first)
}

/// The witness of `circuit` (inputs with ONE first, aux), of `inputs` and `aux` values (its
/// exact counts: the challenges write their shares of them in place).
pub(crate) fn witness<TreeR: MerkleTreeTrait<Hasher = TreeRHasher>>(
    circuit: EmptySectorUpdateCircuit<TreeR>,
    inputs: usize,
    aux: usize,
) -> Result<Witness> {
    let EmptySectorUpdateCircuit {
        pub_params: params,
        pub_inputs:
            PublicInputs {
                k_and_h_select,
                comm_r_old,
                comm_d_new,
                comm_r_new,
            },
        priv_inputs:
            PrivateInputs {
                comm_c,
                root_r_old,
                root_r_new,
                apex_leafs,
                challenge_proofs,
            },
    } = circuit;
    let hs = hs(params.sector_nodes);
    let to_partition = params.challenge_bit_len - params.partition_bit_len;
    let first = check_shape(&params, &challenge_proofs, apex_leafs.len())?;

    let mut cs = WitnessCs::with_capacity(inputs, aux);
    cs.alloc_input(|| "ONE", || Ok(Fr::ONE))?;
    let k_and_h_select = value(k_and_h_select)?;
    input_num(&mut cs, k_and_h_select)?;
    let mut select_bits = Vec::with_capacity(params.partition_bit_len + hs.len());
    for bit in k_and_h_select
        .to_le_bits()
        .into_iter()
        .take(params.partition_bit_len + hs.len())
    {
        select_bits.push(AllocatedBit::alloc(&mut cs, Some(bit))?);
    }
    let h_select_bits = select_bits.split_off(params.partition_bit_len);
    let partition_bits = select_bits;
    let partition = multipack::pack_bits(&mut cs, &booleans(&partition_bits))?;
    let comm_r_old = input_num(&mut cs, value(comm_r_old)?)?;
    let comm_d_new = input_num(&mut cs, value(comm_d_new)?)?;
    let comm_r_new = input_num(&mut cs, value(comm_r_new)?)?;
    let phi = poseidon_tree::hash(
        &mut cs,
        &[comm_d_new.clone(), comm_r_old.clone()],
        &POSEIDON_CONSTANTS_GEN_RANDOMNESS,
    )?;
    let comm_c = num(&mut cs, value(comm_c)?)?;
    let root_r_old = num(&mut cs, value(root_r_old)?)?;
    let root_r_new = num(&mut cs, value(root_r_new)?)?;
    let apex_leaves = apex_leafs
        .iter()
        .map(|leaf| num(&mut cs, value(*leaf)?))
        .collect::<Result<Vec<_>>>()?;
    let partition_path = siblings_of(&mut cs, &first.path_d_new[to_partition..])?;
    for root in [&root_r_old, &root_r_new] {
        poseidon_tree::hash(
            &mut cs,
            &[comm_c.clone(), root.clone()],
            &POSEIDON_CONSTANTS_2,
        )?;
    }

    // The apex tree, then its root's path to comm_d_new (only compared: nothing allocated).
    let mut row = apex_leaves.clone();
    while row.len() > 1 {
        row = row
            .chunks(2)
            .map(|pair| sha_tree::hash2(&mut cs, &pair[0], &pair[1]))
            .collect::<Result<_>>()?;
    }
    sha_path(&mut cs, row.remove(0), &partition_bits, partition_path)?;

    let generated = challenge_bits(&mut cs, &params, &comm_r_new, &partition)?;
    let shared = Shared {
        params,
        hs: hs.to_vec(),
        partition_bits,
        h_select_bits,
        phi,
        apex_leaves,
    };
    let challenges: Vec<_> = generated.into_iter().zip(challenge_proofs).collect();
    each_in_place(&mut cs, (inputs, aux), &challenges, |cs, (bits, proof)| {
        challenge::<TreeR>(cs, bits, proof, &shared)
    })?;
    Ok(cs.into_vecs())
}

/// Each challenge's bits below the partition's (`gen_challenge_bits`): per digest its index,
/// the Poseidon hash of comm_r_new and the index, and the hash's 255 bits, cut into challenges.
fn challenge_bits(
    cs: &mut WitnessCs,
    params: &PublicParams,
    comm_r_new: &AllocatedNum<Fr>,
    partition: &AllocatedNum<Fr>,
) -> Result<Vec<Vec<AllocatedBit>>> {
    let per_challenge = params.challenge_bit_len - params.partition_bit_len;
    let per_digest = Fr::CAPACITY as usize / per_challenge;
    let digests = params.challenge_count.div_ceil(per_digest);
    let k = value(partition.get_value())?;
    let mut generated = Vec::with_capacity(params.challenge_count);
    for j in 0..digests {
        let index = num(cs, k * Fr::from(digests as u64) + Fr::from(j as u64))?;
        let digest = poseidon_tree::hash(
            cs,
            &[comm_r_new.clone(), index],
            &POSEIDON_CONSTANTS_GEN_RANDOMNESS,
        )?;
        let bits = field_into_allocated_bits_le(&mut *cs, digest.get_value())?;
        let take = (params.challenge_count - generated.len()).min(per_digest);
        generated.extend(bits.chunks(per_challenge).take(take).map(<[_]>::to_vec));
    }
    Ok(generated)
}

/// One challenge (the loop body of the circuit's `synthesize`).
fn challenge<TreeR: MerkleTreeTrait<Hasher = TreeRHasher>>(
    cs: &mut WitnessCs,
    generated: &[AllocatedBit],
    proof: &ChallengeProof<TreeR>,
    shared: &Shared,
) -> Result<()> {
    let params = &shared.params;
    let c_bits: Vec<AllocatedBit> = generated
        .iter()
        .chain(&shared.partition_bits)
        .cloned()
        .collect();
    let c_booleans = booleans(&c_bits);

    // `get_challenge_high_bits`: the challenge's high h bits for the selected h.
    let mut selected = Fr::ZERO;
    for (h, select_bit) in shared.hs.iter().zip(&shared.h_select_bits) {
        let high = c_booleans
            .len()
            .checked_sub(*h)
            .ok_or_else(|| shape(format!("h = {h} beyond the challenge's bits")))?;
        let c_high = multipack::pack_bits(&mut *cs, &c_booleans[high..])?;
        let kept = match select_bit.get_value() {
            Some(true) => value(c_high.get_value())?,
            Some(false) => Fr::ZERO,
            None => return Err(NativeError::Synthesis(SynthesisError::AssignmentMissing)),
        };
        num(cs, kept)?;
        selected += kept;
    }
    let c_high = num(cs, selected)?;
    let rho = poseidon_tree::hash(
        cs,
        &[shared.phi.clone(), c_high],
        &POSEIDON_CONSTANTS_GEN_RANDOMNESS,
    )?;

    // `label_r_new`: the new replica leaf.
    let leaf_r_old = num(cs, value(proof.leaf_r_old)?)?;
    let leaf_d_new = num(cs, value(proof.leaf_d_new)?)?;
    let d_rho = leaf_d_new.mul(&mut *cs, &rho)?;
    let leaf_r_new = value(leaf_r_old.get_value())? + value(d_rho.get_value())?;
    if Some(leaf_r_new) != proof.leaf_r_new {
        return Err(shape(
            "the new replica leaf is not the old one plus the data leaf times rho".into(),
        ));
    }
    let leaf_r_new = num(cs, leaf_r_new)?;

    // The old replica leaf's TreeR path, then the new one's (siblings first, then the levels;
    // the roots are only compared).
    for (leaf, path) in [
        (leaf_r_old, &proof.path_r_old),
        (leaf_r_new, &proof.path_r_new),
    ] {
        let siblings = tree_siblings(cs, path)?;
        poseidon_tree::path_without_input::<TreeR>(cs, &c_bits, leaf, &siblings)?;
    }

    let to_apex = params.challenge_bit_len - params.partition_bit_len - params.apex_leaf_bit_len;
    select(
        &mut *cs,
        &shared.apex_leaves,
        &c_booleans[to_apex..to_apex + params.apex_leaf_bit_len],
    )?;
    let path = siblings_of(cs, &proof.path_d_new[..to_apex])?;
    sha_path(cs, leaf_d_new, &c_bits[..to_apex], path)
}

/// A TreeD path from `leaf` (`por_no_challenge_input` over TreeD): one level per sibling, at
/// the index of the matching bit. Its root is only compared, so it allocates nothing.
fn sha_path(
    cs: &mut WitnessCs,
    leaf: AllocatedNum<Fr>,
    bits: &[AllocatedBit],
    siblings: Vec<AllocatedNum<Fr>>,
) -> Result<()> {
    if bits.len() < siblings.len() {
        return Err(shape("fewer challenge bits than TreeD levels".into()));
    }
    let mut cur = leaf;
    for (bit, sibling) in bits.iter().zip(siblings) {
        cur = sha_tree::level(cs, &cur, &Boolean::from(bit.clone()), sibling)?;
    }
    Ok(())
}

/// A TreeD path's siblings, allocated (one per level).
fn siblings_of(cs: &mut WitnessCs, path: &[Vec<Option<Fr>>]) -> Result<Vec<AllocatedNum<Fr>>> {
    path.iter()
        .map(|siblings| match siblings[..] {
            [sibling] => num(cs, value(sibling)?),
            _ => Err(shape(format!(
                "a TreeD path element with {} siblings",
                siblings.len()
            ))),
        })
        .collect()
}

/// A TreeR path's siblings, allocated level by level.
fn tree_siblings(
    cs: &mut WitnessCs,
    path: &[Vec<Option<Fr>>],
) -> Result<Vec<Vec<AllocatedNum<Fr>>>> {
    path.iter()
        .map(|siblings| siblings.iter().map(|s| num(cs, value(*s)?)).collect())
        .collect()
}

fn booleans(bits: &[AllocatedBit]) -> Vec<Boolean> {
    bits.iter().cloned().map(Boolean::from).collect()
}
