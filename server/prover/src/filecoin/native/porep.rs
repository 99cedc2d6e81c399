//! The PoRep partition witness (`StackedCircuit`), computed from the vanilla proofs a C2 request
//! brings: the labels' and the comm_d path's SHA-256 natively (about 98 % of the circuit), the
//! rest (Poseidon column hashes and TreeC / TreeR paths, bit decompositions, picks) with the
//! same gadgets the circuit calls, on the same witness-only constraint system. Every value lands
//! where `StackedCircuit::synthesize` allocates it, so the recorded matrices apply unchanged.
//!
//! What the circuit allocates, in order (read from storage-proofs-porep 19):
//! 1. replica id (aux, then input, then its 255 bits), comm_d and comm_r (each aux then input),
//!    comm_r_last, comm_c, and the Poseidon hash of comm_c and comm_r_last;
//! 2. per challenge: the data leaf; its comm_d path (per level: index bit, sibling, the two
//!    picks of the insertion, each side's 255 bits, the SHA-256, the packed digest; then the
//!    index bits packed into an input); per DRG parent, then per expander parent: its column,
//!    the column's hash and its TreeC path; the challenge's 64 bits and its input; per layer the
//!    bits of each parent's row (DRG parents, then from layer 2 expander parents), the label's
//!    SHA-256 and the label; the encoded node and its TreeR path; the column hash of the labels
//!    and its TreeC path.
//!
//! Challenges are independent once step 1 is done: they run through [`super::in_order`].

use bellperson::gadgets::boolean::{AllocatedBit, Boolean};
use bellperson::gadgets::multipack;
use bellperson::gadgets::num::AllocatedNum;
use bellperson::{ConstraintSystem, SynthesisError};
use blstrs::Scalar as Fr;
use ff::Field;
use filecoin_hashers::{POSEIDON_CONSTANTS_11, POSEIDON_CONSTANTS_2};
use filecoin_proofs::constants::DefaultPieceHasher;
use filecoin_proofs::MerkleTreeTrait;
use storage_proofs_core::drgraph::BASE_DEGREE;
use storage_proofs_core::gadgets::encode::encode;
use storage_proofs_core::gadgets::uint64::UInt64;
use storage_proofs_core::merkle::{MerkleProof, MerkleProofTrait};
use storage_proofs_core::util::reverse_bit_numbering;
use storage_proofs_porep::stacked::{ColumnProof, Proof, EXP_DEGREE, TOTAL_PARENTS};

use super::{bits, each_in_place, input_num, num, poseidon_tree, sha_tree, NativeError, Witness};
use crate::filecoin::nodes::{path_elements, PathElement};
use crate::synthesis::native::bit::Bit;
use crate::synthesis::native::label::label;
use crate::synthesis::native::pack::reverse_bits_in_bytes;
use crate::synthesis::precompiled::WitnessCs;

/// A TreeR / TreeC proof (both have the sector's tree shape).
type TreeProof<Tree> = MerkleProof<
    <Tree as MerkleTreeTrait>::Hasher,
    <Tree as MerkleTreeTrait>::Arity,
    <Tree as MerkleTreeTrait>::SubTreeArity,
    <Tree as MerkleTreeTrait>::TopTreeArity,
>;

/// What one PoRep partition's circuit is built from (`StackedCompound::circuit`'s inputs).
pub(crate) struct PorepPartition<'a, Tree: 'static + MerkleTreeTrait> {
    pub(crate) replica_id: Fr,
    pub(crate) comm_d: Fr,
    pub(crate) comm_r: Fr,
    /// The partition's vanilla proofs, one per challenge.
    pub(crate) proofs: &'a [Proof<Tree, DefaultPieceHasher>],
    /// Layers of the sector's stacked graph (rows in every column).
    pub(crate) layers: usize,
}

type Result<T> = std::result::Result<T, NativeError>;

/// Values every challenge reads.
/// (The roots, comm_d, comm_c and comm_r_last, are only compared with what the paths compute:
/// they allocate nothing there.)
struct Shared {
    replica_id: Vec<Bit>,
    layers: usize,
}

impl<Tree: 'static + MerkleTreeTrait> PorepPartition<'_, Tree> {
    /// The witness (inputs with ONE first, aux) of a circuit of `inputs` and `aux` values (its
    /// exact counts: the challenges write their shares of them in place).
    pub(crate) fn witness(&self, inputs: usize, aux: usize) -> Result<Witness> {
        let first = self
            .proofs
            .first()
            .ok_or_else(|| NativeError::Shape("a partition without challenges".into()))?;
        if !matches!(self.layers, 2 | 11) {
            return Err(NativeError::Shape(format!(
                "{} layers (columns of 2 or 11 rows are hashed)",
                self.layers
            )));
        }
        let mut cs = WitnessCs::with_capacity(inputs, aux);
        cs.alloc_input(|| "ONE", || Ok(Fr::ONE))?;
        let replica_id = input_num(&mut cs, self.replica_id)?;
        let replica_id = bits(&reverse_bit_numbering(replica_id.to_bits_le(&mut cs)?))?;
        input_num(&mut cs, self.comm_d)?;
        let _comm_r = input_num(&mut cs, self.comm_r)?;
        let comm_r_last = num(&mut cs, first.comm_r_last().into())?;
        let comm_c = num(&mut cs, first.comm_c().into())?;
        poseidon_tree::hash(&mut cs, &[comm_c, comm_r_last], &POSEIDON_CONSTANTS_2)?;
        let shared = Shared {
            replica_id,
            layers: self.layers,
        };
        each_in_place(&mut cs, (inputs, aux), self.proofs, |cs, proof| {
            challenge::<Tree>(cs, proof, &shared)
        })?;
        Ok(cs.into_vecs())
    }
}

/// One challenge's values (`Proof::synthesize` in storage-proofs-porep's circuit).
fn challenge<Tree: 'static + MerkleTreeTrait>(
    cs: &mut WitnessCs,
    proof: &Proof<Tree, DefaultPieceHasher>,
    shared: &Shared,
) -> Result<()> {
    let data_leaf = num(cs, proof.comm_d_proofs.leaf().into())?;
    sha256_inclusion(cs, proof.comm_d_proofs.as_options(), &data_leaf)?;
    let columns = &proof.replica_column_proofs;
    if (columns.drg_parents.len(), columns.exp_parents.len()) != (BASE_DEGREE, EXP_DEGREE) {
        return Err(NativeError::Shape(format!(
            "{} DRG and {} expander parents (the graph has {BASE_DEGREE} and {EXP_DEGREE})",
            columns.drg_parents.len(),
            columns.exp_parents.len()
        )));
    }
    let drg = parent_columns::<Tree>(cs, &columns.drg_parents, shared)?;
    let exp = parent_columns::<Tree>(cs, &columns.exp_parents, shared)?;

    let challenge = UInt64::alloc(&mut *cs, Some(proof.comm_d_proofs.path_index() as u64))?;
    challenge.pack_into_input(&mut *cs)?;
    let node: [Bit; 64] = bits(&challenge.to_bits_le())?
        .try_into()
        .map_err(|_| NativeError::Shape("a challenge of other than 64 bits".into()))?;

    let mut labels = Vec::with_capacity(shared.layers);
    for layer in 1..=shared.layers {
        let mut parents = Vec::with_capacity(drg.len() + exp.len());
        for column in &drg {
            parents.push(number_bits(cs, &column[layer - 1])?);
        }
        if layer > 1 {
            for column in &exp {
                parents.push(number_bits(cs, &column[layer - 2])?);
            }
        }
        let hashed: Vec<&[Bit]> = repeated(parents.len(), layer)
            .map(|i| &parents[i][..])
            .collect();
        let value = label(
            &mut cs.aux,
            &shared.replica_id,
            &hashed,
            &Bit::constants_le(layer as u64),
            &node,
        );
        labels.push(num(cs, value)?);
    }

    let key = labels.last().expect("at least two layers");
    let encoded = encode(&mut *cs, key, &data_leaf)?;
    poseidon_tree::inclusion::<Tree>(cs, &proof.comm_r_last_proof.as_options(), &encoded)?;
    let column_hash = hash_column(cs, &labels)?;
    let c_x = column_path::<Tree>(&columns.c_x)?;
    poseidon_tree::inclusion::<Tree>(cs, &c_x, &column_hash)
}

/// The order in which a label hashes its parents, as indices into the distinct parents: layer
/// 1 (DRG parents only) repeats them six times and then the first once; later layers (DRG and
/// expander parents) twice and then the first nine. [`TOTAL_PARENTS`] in all.
fn repeated(distinct: usize, layer: usize) -> impl Iterator<Item = usize> {
    let first = if layer == 1 { 1 } else { 9 };
    (0..TOTAL_PARENTS - first)
        .map(move |i| i % distinct)
        .chain(0..first)
}

/// Each parent's column (its rows allocated), hashed and proven in TreeC; returns the rows.
/// The circuit takes as many rows as the first column has; this reads `layers` of them (the
/// intake's vanilla verification holds a column to its layers; a column of another length makes
/// a witness the final verification refuses, or panics here, and the gadget path takes over).
fn parent_columns<Tree: 'static + MerkleTreeTrait>(
    cs: &mut WitnessCs,
    parents: &[ColumnProof<TreeProof<Tree>>],
    shared: &Shared,
) -> Result<Vec<Vec<AllocatedNum<Fr>>>> {
    let mut columns = Vec::with_capacity(parents.len());
    for parent in parents {
        let mut rows = Vec::with_capacity(shared.layers);
        for layer in 1..=shared.layers {
            let row = parent
                .get_node_at_layer(layer)
                .map_err(|e| NativeError::Shape(e.to_string()))?;
            rows.push(num(cs, (*row).into())?);
        }
        let hash = hash_column(cs, &rows)?;
        poseidon_tree::inclusion::<Tree>(cs, &column_path::<Tree>(parent)?, &hash)?;
        columns.push(rows);
    }
    Ok(columns)
}

/// A column proof's TreeC path (storage-proofs keeps the inclusion proof private; its
/// serialized form names it).
fn column_path<Tree: 'static + MerkleTreeTrait>(
    column: &ColumnProof<TreeProof<Tree>>,
) -> Result<Vec<PathElement>> {
    path_elements("a column proof", column).map_err(|e| NativeError::Shape(e.to_string()))
}

/// `hash_single_column`: Poseidon over the column's 2 or 11 rows.
fn hash_column(cs: &mut WitnessCs, rows: &[AllocatedNum<Fr>]) -> Result<AllocatedNum<Fr>> {
    match rows.len() {
        2 => poseidon_tree::hash(cs, rows, &POSEIDON_CONSTANTS_2),
        11 => poseidon_tree::hash(cs, rows, &POSEIDON_CONSTANTS_11),
        n => Err(NativeError::Shape(format!("a column of {n} rows"))),
    }
}

/// `leaf`'s path to `root` in the binary SHA-256 tree D, as `PoRCircuit` over it allocates it
/// (per level the index bit, the sibling, then [`sha_tree::level`]; then the index bits packed
/// into an input). The root is only compared, so it allocates nothing.
fn sha256_inclusion(
    cs: &mut WitnessCs,
    path: Vec<PathElement>,
    leaf: &AllocatedNum<Fr>,
) -> Result<()> {
    let mut cur = leaf.clone();
    let mut index_bits = Vec::with_capacity(path.len());
    for (siblings, index) in path {
        let [sibling] = siblings[..] else {
            return Err(NativeError::Shape(format!(
                "a comm_d path element with {} siblings",
                siblings.len()
            )));
        };
        let bit = Boolean::from(AllocatedBit::alloc(&mut *cs, index.map(|i| i & 1 == 1))?);
        let sibling = AllocatedNum::alloc(&mut *cs, || {
            sibling.ok_or(SynthesisError::AssignmentMissing)
        })?;
        cur = sha_tree::level(cs, &cur, &bit, sibling)?;
        index_bits.push(bit);
    }
    multipack::pack_into_inputs(&mut *cs, &index_bits)?;
    Ok(())
}

/// `n`'s bits in the order a label hashes them (`reverse_bit_numbering(to_bits_le)`).
fn number_bits(cs: &mut WitnessCs, n: &AllocatedNum<Fr>) -> Result<Vec<Bit>> {
    Ok(reverse_bits_in_bytes(&sha_tree::number_bits_le(cs, n)?))
}
