//! Native witness generation for bellperson's SHA-256 gadget: the values the gadget would
//! allocate, computed directly and appended to an aux vector in the gadget's order, without
//! running the gadget (which builds linear combinations a witness-only pass throws away).
//! Groundwork for synthesizing partitions natively; the constraints still come from the recorded
//! matrices (`precompiled`), so only the values and their order matter here.
//!
//! What a gadget allocates depends on the form of each bit (constant, variable, negated
//! variable), not only on its value, so inputs and results are [`bit::Bit`]s carrying that form.
//!
//! Compiled for the tests and the `bench` feature until synthesis uses it.
//!
//! Layout:
//! - `bit.rs`: [`bit::Bit`] and the one-bit operations (XOR, AND, Ch, Maj).
//! - `word.rs`: `Word`, the 32-bit words of the hash (rotations, XOR, Ch, Maj, sums).
//! - `sha256.rs`: [`sha256::sha256`], the padded hash over blocks of the compression function.
//! - `pack.rs`: [`pack::pack_bits`] and the byte-wise bit reversal before it.
//! - `label.rs`: [`label::label`], `create_label_circuit`'s layout, hash and packing.
//! - `tests.rs`: each against the bellperson gadgets on a witness-only constraint system.

pub(crate) mod bit;
pub(crate) mod label;
pub(crate) mod pack;
pub(crate) mod sha256;
#[cfg(test)]
mod tests;
mod word;
