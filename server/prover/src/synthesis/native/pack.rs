//! Packing bits into one field element, as `multipack::pack_bits` allocates it, and the byte-wise
//! bit reversal that puts a digest in the order it is packed in.

use blstrs::Scalar as Fr;
use ff::{Field, PrimeField};

use super::bit::Bit;
#[cfg(test)]
use crate::synthesis::precompiled::Column;

/// `multipack::pack_bits`: allocates one variable, the number whose bits, least significant first,
/// are the first `Fr::CAPACITY` (254) of `bits`, and returns its value.
#[cfg(test)]
pub(crate) fn pack_bits(aux: &mut Column<'_>, bits: &[Bit]) -> Fr {
    let value = packed(bits);
    aux.push(value);
    value
}

/// The number whose bits, least significant first, are the first `Fr::CAPACITY` (254) of
/// `bits`: the value [`pack_bits`] allocates.
pub(crate) fn packed(bits: &[Bit]) -> Fr {
    let low = &bits[..bits.len().min(Fr::CAPACITY as usize)];
    low.iter().rev().fold(Fr::ZERO, |acc, bit| {
        let doubled = acc.double();
        if bit.value() {
            doubled + Fr::ONE
        } else {
            doubled
        }
    })
}

/// `bits` with the bits of each byte in reverse order (a last partial byte padded with constant
/// zeros first), as storage-proofs' `reverse_bit_numbering`: turns a digest's bits, most
/// significant of each byte first, into the little-endian bits of the digest read as a
/// little-endian number. Allocates nothing.
pub(crate) fn reverse_bits_in_bytes(bits: &[Bit]) -> Vec<Bit> {
    let mut padded = bits.to_vec();
    padded.resize(bits.len().next_multiple_of(8), Bit::Const(false));
    padded
        .chunks_exact(8)
        .flat_map(|byte| byte.iter().rev().copied())
        .collect()
}
