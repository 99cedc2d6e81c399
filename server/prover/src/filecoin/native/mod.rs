//! Native witnesses: per kind, a driver that walks its circuit's allocation order over the
//! request's own values (every kind), computes the SHA-256 and Poseidon hashes natively
//! (`crate::synthesis::native`) and the small rest (bit decompositions, insertions, picks) with
//! the circuit's own gadgets on the same witness-only constraint system, so that the circuit's
//! recorded matrices apply to what it makes ([`PreparedJob::synthesize_native`]).
//!
//! The allocation-order invariant (every value at the index the circuit gives it) is checked by
//! tests, the driver's inputs and aux against the gadget path's value for value (`tests.rs`,
//! and the real 2 KiB inputs in the prover's filecoin tests). At run time nothing relies on it
//! alone: a native witness whose public inputs differ from the verifier's, or that fails, is
//! replaced by the gadgets' at once; a partition proof made from a native witness that fails
//! its check (`groth16::prover`'s self check) turns the job's native witnesses off
//! ([`NativeSwitch`]) and the engine proves the partition again, from the gadgets. Each
//! fallback is logged and counted (`snarkd_native_witness_fallbacks_total`).
//!
//! Layout:
//! - `mod.rs`: [`PreparedJob::synthesize_native`] and its fallback (the job's [`NativeSwitch`] lives in `synthesis::native`).
//! - `porep.rs`: [`porep::PorepPartition`], a PoRep partition's witness.
//! - `snap.rs`: [`snap::witness`], a SnapDeals partition's witness.
//! - `post.rs`: [`post::witness`], a Window or Winning PoSt partition's witness.
//! - `sha_tree.rs`: binary SHA-256 Merkle tree hashes and path levels (TreeD).
//! - `poseidon_tree.rs`: Poseidon hashes and TreeR / TreeC paths.
//! - `tests.rs` (feature `bench`): each driver against the gadgets on synthetic partitions.

pub(crate) mod porep;
mod poseidon_tree;
pub(crate) mod post;
mod sha_tree;
pub(crate) mod snap;
#[cfg(all(test, feature = "bench"))]
mod tests;

use std::time::Instant;

use bellperson::gadgets::boolean::Boolean;
use bellperson::gadgets::num::AllocatedNum;
use bellperson::SynthesisError;
use blstrs::Scalar as Fr;

use super::PreparedJob;
use crate::error::Result;
use crate::synthesis::native::bit::Bit;
pub use crate::synthesis::native::NativeSwitch;
use crate::synthesis::precompiled::{self, CircuitMatrices, Misfilled, WitnessCs};
use crate::synthesis::{caught, SynthesizedPartition};

/// A witness: the public inputs (ONE first) and the aux values.
pub(crate) type Witness = (Vec<Fr>, Vec<Fr>);

/// Why a native witness could not be made: the request's values do not fit the circuit (the
/// gadget path fails the same way, or the proof does), or a gadget failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum NativeError {
    #[error("{0}")]
    Synthesis(#[from] SynthesisError),
    #[error("{0}")]
    Shape(String),
    #[error("{0}")]
    Misfilled(#[from] Misfilled),
}

/// Runs `challenge` for each of `items`, all in parallel, each writing its own share of `cs`'s
/// vectors in place ([`WitnessCs::fill_parts`]): what the witness's `total` (inputs, aux) leaves
/// after what `cs` holds, in equal shares in the items' order. A total that does not divide so,
/// or a challenge that writes other than its share, is a shape error.
fn each_in_place<T: Sync>(
    cs: &mut WitnessCs,
    total: (usize, usize),
    items: &[T],
    challenge: impl Fn(&mut WitnessCs, &T) -> std::result::Result<(), NativeError> + Sync,
) -> std::result::Result<(), NativeError> {
    let n = items.len();
    if n == 0 {
        return Ok(());
    }
    let left = (
        total.0.checked_sub(cs.inputs.len()),
        total.1.checked_sub(cs.aux.len()),
    );
    let each = match left {
        (Some(i), Some(a)) if i % n == 0 && a % n == 0 => (i / n, a / n),
        _ => {
            return Err(NativeError::Shape(format!(
                "the circuit's {total:?} (inputs, aux) values less the {:?} before its {n} \
                 challenges or sectors do not divide among them",
                (cs.inputs.len(), cs.aux.len())
            )))
        }
    };
    cs.fill_parts(n, each, |i, sub| challenge(sub, &items[i]))
}

/// `made`, unless its public inputs (after ONE) differ from the verifier's `expected` ones.
pub(crate) fn checked_inputs(
    made: std::result::Result<Witness, NativeError>,
    expected: std::result::Result<Vec<Fr>, anyhow::Error>,
) -> std::result::Result<Witness, NativeError> {
    let witness = made?;
    match expected {
        Ok(expected) if witness.0.get(1..) == Some(&expected[..]) => Ok(witness),
        Ok(_) => Err(NativeError::Shape(
            "its public inputs differ from the verifier's".into(),
        )),
        Err(e) => Err(NativeError::Shape(format!(
            "the verifier's public inputs: {e:#}"
        ))),
    }
}

/// Allocates `value` (`AllocatedNum::alloc`).
fn num(cs: &mut WitnessCs, value: Fr) -> std::result::Result<AllocatedNum<Fr>, NativeError> {
    Ok(AllocatedNum::alloc(cs, || Ok(value))?)
}

/// Allocates `value` and makes it a public input (`alloc` then `inputize`).
fn input_num(cs: &mut WitnessCs, value: Fr) -> std::result::Result<AllocatedNum<Fr>, NativeError> {
    let n = num(cs, value)?;
    n.inputize(&mut *cs)?;
    Ok(n)
}

/// Gadget booleans as [`Bit`]s (each must have its value).
fn bits(booleans: &[Boolean]) -> std::result::Result<Vec<Bit>, NativeError> {
    booleans
        .iter()
        .map(|b| Bit::of(b).ok_or(NativeError::Synthesis(SynthesisError::AssignmentMissing)))
        .collect()
}

/// Counts a native witness given up for the gadgets' (`stage`: `synthesis` when it could not
/// be made or its public inputs were wrong, `proof_check` when the proof made from it failed).
pub fn count_fallback(circuit: &str, stage: &'static str, reason: &str) {
    tracing::warn!(
        circuit,
        stage,
        reason,
        "the native witness is not used; the partition is synthesized from the gadgets"
    );
    metrics::counter!("snarkd_native_witness_fallbacks_total", "circuit" => circuit.to_string(), "stage" => stage)
        .increment(1);
}

impl PreparedJob {
    /// Synthesizes partition `index` from a native witness and the circuit's pre-compiled
    /// `matrices`, where the kind has one and the job's [`NativeSwitch`] is on; otherwise, or
    /// when the native witness cannot be made, as [`PreparedJob::synthesize_with`] does (the
    /// gadgets' witness). A partition made natively says so ([`SynthesizedPartition::native`]).
    pub fn synthesize_native(
        &self,
        index: usize,
        matrices: &CircuitMatrices,
    ) -> Result<SynthesizedPartition> {
        if index < self.num_partitions() && self.native.is_on() {
            let started = Instant::now();
            let failed = |reason: String| crate::ProverError::Synthesis {
                partition: index,
                reason,
            };
            let made = caught(
                || {
                    Ok(crate::threads::install(|| {
                        self.inner.native_witness(index, matrices)
                    }))
                },
                failed,
            );
            // An error, a panic, or a witness the matrices do not fit (a layout mistake): the
            // gadgets' witness instead.
            let synthesized = match made {
                Ok(None) => None,
                Ok(Some(made)) => Some(made.map_err(|e| e.to_string()).and_then(|witness| {
                    precompiled::from_witness(index, corrupted_for_test(witness), matrices, started)
                        .map_err(|e| e.to_string())
                })),
                Err(e) => Some(Err(e.to_string())),
            };
            match synthesized {
                Some(Ok(p)) => return Ok(p.made_natively(self.native.clone())),
                Some(Err(reason)) => {
                    count_fallback(&self.circuit.to_string(), "synthesis", &reason)
                }
                None => {}
            }
        }
        self.synthesize_with(index, Some(matrices))
    }
}

/// With the `test-hooks` feature, `SNARKD_TEST_CORRUPT_NATIVE_WITNESS` set changes one aux value
/// of every native witness (what a layout mistake would do); builds that ship read no such
/// variable.
fn corrupted_for_test(witness: Witness) -> Witness {
    #[cfg(feature = "test-hooks")]
    if std::env::var_os("SNARKD_TEST_CORRUPT_NATIVE_WITNESS").is_some() {
        let (inputs, mut aux) = witness;
        if let Some(last) = aux.last_mut() {
            *last += Fr::from(1u64);
        }
        return (inputs, aux);
    }
    witness
}
