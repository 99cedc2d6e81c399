//! `WitnessCs`: a `ConstraintSystem` that only computes the witness. `enforce` never runs its
//! linear-combination closures, so no linear combination is built; gadgets that have a faster
//! witness path (`is_witness_generator`) take it.
//!
//! bellperson's own `WitnessCS` does the same but can neither reserve its vectors up front nor
//! hand them over without a copy (its fields are private and its getters clone), which at a
//! 32 GiB partition's hundred million aux values is gigabytes moved for nothing.

use bellperson::{ConstraintSystem, Index, LinearCombination, SynthesisError, Variable};
use blstrs::Scalar as Fr;
use ff::Field;

pub(crate) struct WitnessCs {
    pub(crate) inputs: Vec<Fr>,
    pub(crate) aux: Vec<Fr>,
}

impl WitnessCs {
    pub(crate) fn with_capacity(inputs: usize, aux: usize) -> Self {
        WitnessCs {
            inputs: Vec::with_capacity(inputs),
            aux: Vec::with_capacity(aux),
        }
    }
}

/// Grows `v` by `n` zeros and returns them.
fn grow(v: &mut Vec<Fr>, n: usize) -> &mut [Fr] {
    let start = v.len();
    v.resize(start + n, Fr::ZERO);
    &mut v[start..]
}

impl ConstraintSystem<Fr> for WitnessCs {
    type Root = Self;

    /// Empty: a circuit making sub-systems for `extend` allocates their ONE itself.
    fn new() -> Self {
        WitnessCs::with_capacity(0, 0)
    }

    fn alloc<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Fr, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.aux.push(f()?);
        Ok(Variable::new_unchecked(Index::Aux(self.aux.len() - 1)))
    }

    fn alloc_input<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Fr, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.inputs.push(f()?);
        Ok(Variable::new_unchecked(Index::Input(self.inputs.len() - 1)))
    }

    fn enforce<A, AR, LA, LB, LC>(&mut self, _: A, _: LA, _: LB, _: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
        LB: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
        LC: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
    {
    }

    fn push_namespace<NR, N>(&mut self, _: N)
    where
        NR: Into<String>,
        N: FnOnce() -> NR,
    {
    }

    fn pop_namespace(&mut self) {}

    fn get_root(&mut self) -> &mut Self::Root {
        self
    }

    fn is_extensible() -> bool {
        true
    }

    /// Appends a sub-system synthesized in parallel, without its own ONE (its first input).
    fn extend(&mut self, other: &Self) {
        self.inputs.extend_from_slice(&other.inputs[1..]);
        self.aux.extend_from_slice(&other.aux);
    }

    fn is_witness_generator(&self) -> bool {
        true
    }

    fn extend_inputs(&mut self, new_inputs: &[Fr]) {
        self.inputs.extend_from_slice(new_inputs);
    }

    fn extend_aux(&mut self, new_aux: &[Fr]) {
        self.aux.extend_from_slice(new_aux);
    }

    fn allocate_empty(&mut self, aux_n: usize, inputs_n: usize) -> (&mut [Fr], &mut [Fr]) {
        (grow(&mut self.aux, aux_n), grow(&mut self.inputs, inputs_n))
    }

    fn allocate_empty_inputs(&mut self, n: usize) -> &mut [Fr] {
        grow(&mut self.inputs, n)
    }

    fn allocate_empty_aux(&mut self, n: usize) -> &mut [Fr] {
        grow(&mut self.aux, n)
    }

    fn inputs_slice(&self) -> &[Fr] {
        &self.inputs
    }

    fn aux_slice(&self) -> &[Fr] {
        &self.aux
    }
}
