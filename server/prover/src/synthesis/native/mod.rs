//! Native witness generation for the gadgets filecoin's circuits spend their time in:
//! bellperson's SHA-256 and neptune's Poseidon. The values a gadget would allocate, computed
//! directly and appended to an aux vector in the gadget's order, without running the gadget
//! (which builds linear combinations a witness-only pass throws away). The constraints still
//! come from the recorded matrices (`precompiled`), so only the values and their order matter
//! here; `filecoin::native` drives these through each kind's circuit.
//!
//! What the SHA-256 gadget allocates depends on the form of each bit (constant, variable,
//! negated variable), not only on its value, so its inputs and results are [`bit::Bit`]s
//! carrying that form.
//!
//! Layout:
//! - `bit.rs`: [`bit::Bit`] and the one-bit operations (XOR, AND, Ch, Maj).
//! - `word.rs`: `Word`, the 32-bit words of the hash (rotations, XOR, Ch, Maj, sums).
//! - `sha256.rs`: [`sha256::sha256`], the padded hash over blocks of the compression function.
//! - `pack.rs`: [`pack::pack_bits`] and the byte-wise bit reversal before it.
//! - `poseidon.rs`: [`poseidon::poseidon`], neptune's legacy Poseidon circuit.
//! - `label.rs`: [`label::label`], `create_label_circuit`'s layout, hash and packing.
//! - `mod.rs`: [`NativeSwitch`], a job's switch between native and gadget witnesses.
//! - `tests.rs`: each against the bellperson gadgets on a witness-only constraint system.

pub(crate) mod bit;
pub(crate) mod label;
pub(crate) mod pack;
pub(crate) mod poseidon;
pub(crate) mod sha256;
#[cfg(test)]
mod tests;
mod word;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// A job's switch of native witnesses: on until [`NativeSwitch::turn_off`], then every later
/// synthesis of the job takes the gadget path. Clones share the switch.
#[derive(Clone, Debug)]
pub struct NativeSwitch(Arc<AtomicBool>);

impl Default for NativeSwitch {
    fn default() -> Self {
        NativeSwitch(Arc::new(AtomicBool::new(true)))
    }
}

impl NativeSwitch {
    pub fn is_on(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }

    /// Turns the job's native witnesses off (a partition proof made from one failed its check).
    pub fn turn_off(&self) {
        self.0.store(false, Ordering::Relaxed);
    }
}
