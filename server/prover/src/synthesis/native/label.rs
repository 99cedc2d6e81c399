//! [`label`]: a stacked-DRG label as `create_label_circuit` (storage-proofs-porep) computes it in
//! the PoRep circuit: SHA-256 over 1,248 bytes, the digest read as a little-endian number and its
//! low 254 bits packed into one field element.

use blstrs::Scalar as Fr;
use storage_proofs_porep::stacked::TOTAL_PARENTS;

use super::bit::Bit;
use super::pack::{packed, reverse_bits_in_bytes};
use super::sha256::sha256;
use crate::synthesis::precompiled::Column;

/// Bits in each 32-byte slot of the label's input.
const SLOT_BITS: usize = 256;

/// The label of node `node` in layer `layer`: appends to `aux` the hash's variables, as
/// `create_label_circuit` on the same bits allocates them, and returns the label, which the
/// gadget allocates next and the caller must (it is the handle later gadgets take).
///
/// `replica_id` (32 to 256 bits) and each parent (1 to 256 bits) are in the hash's bit order,
/// most significant bit of each byte first, each padded with constant zeros to 32 bytes. `layer`
/// and `node` are least significant bit first (`UInt32`'s and `UInt64`'s order); they are hashed
/// big-endian, together padded to 32 bytes. There are [`TOTAL_PARENTS`] parents, repeats
/// included.
///
/// Panics if the sizes are not these (as the gadget does).
pub(crate) fn label<P: AsRef<[Bit]>>(
    aux: &mut Column<'_>,
    replica_id: &[Bit],
    parents: &[P],
    layer: &[Bit; 32],
    node: &[Bit; 64],
) -> Fr {
    assert!(
        (32..=SLOT_BITS).contains(&replica_id.len()),
        "the replica id must be 32 to 256 bits"
    );
    assert_eq!(parents.len(), TOTAL_PARENTS, "a label has 37 parents");
    let mut message = Vec::with_capacity((2 + TOTAL_PARENTS) * SLOT_BITS);
    let pad = |message: &mut Vec<Bit>| {
        message.resize(message.len().next_multiple_of(SLOT_BITS), Bit::Const(false));
    };
    message.extend_from_slice(replica_id);
    pad(&mut message);
    message.extend(layer.iter().rev());
    message.extend(node.iter().rev());
    pad(&mut message);
    for parent in parents {
        message.extend_from_slice(parent.as_ref());
        pad(&mut message);
    }
    assert_eq!(
        message.len(),
        (2 + TOTAL_PARENTS) * SLOT_BITS,
        "each parent must be 1 to 256 bits"
    );
    packed_digest(aux, &message)
}

/// SHA-256 of `message` (as [`sha256`]), read as a little-endian number and cut to its low 254
/// bits: the value `multipack::pack_bits` allocates after the hash in filecoin's SHA-256
/// circuits (labels, `Sha256Function::hash_circuit`). Appends the hash's variables to `aux`;
/// the packed value is returned, not appended.
pub(crate) fn packed_digest(aux: &mut Column<'_>, message: &[Bit]) -> Fr {
    let digest = sha256(aux, message);
    packed(&reverse_bits_in_bytes(&digest))
}
