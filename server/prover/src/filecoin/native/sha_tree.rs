//! filecoin's binary SHA-256 Merkle trees (TreeD: PoRep's comm_d, SnapDeals' comm_d_new) in a
//! circuit, with the hashes computed natively: `Sha256Function::hash2_circuit` (and
//! `hash_multi_leaf_circuit` of two leaves, the same layout) and one level of a path as
//! `PoRCircuit` and `por_no_challenge_input` allocate it.
//!
//! A hash allocates each side's 255 bits (`to_bits_le`, the gadget), then the SHA-256 of the
//! two sides, each padded to 256 bits and read a byte at a time with the bits of each byte
//! reversed, then the digest packed into one number. A path level inserts the current node
//! beside its sibling at the index bit (`insert`: two picks) and hashes the pair.

use bellperson::gadgets::boolean::Boolean;
use bellperson::gadgets::num::AllocatedNum;
use blstrs::Scalar as Fr;
use storage_proofs_core::gadgets::insertion::insert;

use super::{bits, num, NativeError};
use crate::synthesis::native::bit::Bit;
use crate::synthesis::native::label::packed_digest;
use crate::synthesis::native::pack::reverse_bits_in_bytes;
use crate::synthesis::precompiled::WitnessCs;

type Result<T> = std::result::Result<T, NativeError>;

/// The hash of `a` and `b` (`hash2_circuit`): the packed digest, allocated.
pub(super) fn hash2(
    cs: &mut WitnessCs,
    a: &AllocatedNum<Fr>,
    b: &AllocatedNum<Fr>,
) -> Result<AllocatedNum<Fr>> {
    let mut message = Vec::with_capacity(512);
    for side in [a, b] {
        message.extend(reverse_bits_in_bytes(&number_bits_le(cs, side)?));
    }
    let digest = packed_digest(&mut cs.aux, &message);
    num(cs, digest)
}

/// One level of a path: `cur` inserted beside `sibling` at `index` (false: `cur` on the left),
/// the pair hashed; returns the parent.
pub(super) fn level(
    cs: &mut WitnessCs,
    cur: &AllocatedNum<Fr>,
    index: &Boolean,
    sibling: AllocatedNum<Fr>,
) -> Result<AllocatedNum<Fr>> {
    let pair = insert(&mut *cs, cur, std::slice::from_ref(index), &[sibling])?;
    hash2(cs, &pair[0], &pair[1])
}

/// `n`'s 255 bits, least significant first (`to_bits_le`, the gadget).
pub(super) fn number_bits_le(cs: &mut WitnessCs, n: &AllocatedNum<Fr>) -> Result<Vec<Bit>> {
    bits(&n.to_bits_le(&mut *cs)?)
}
