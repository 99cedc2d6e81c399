//! `CountingCs`: a constraint system that only counts inputs, aux variables and constraints. It
//! runs none of the closures (no value, no linear combination), so counting a circuit costs
//! only its gadgets' own bookkeeping: a 32 GiB PoRep challenge's seven million constraints
//! without the gigabytes a recording takes.

use bellperson::{Circuit, ConstraintSystem, Index, LinearCombination, SynthesisError, Variable};
use blstrs::Scalar as Fr;

use super::failed;
use crate::error::Result;
use crate::filecoin::CircuitShape;
use crate::synthesis::{caught, synthesize_bound};

#[derive(Default)]
struct CountingCs {
    inputs: usize,
    aux: usize,
    constraints: usize,
}

/// The shape of `circuit` as the prover synthesizes it: ONE and one constraint per public input
/// included (as [`crate::synthesis::synthesize_circuit`] and the pre-compiled matrices count).
pub(super) fn count<C: Circuit<Fr>>(circuit: C) -> Result<CircuitShape> {
    let run = || {
        let mut cs = CountingCs::default();
        synthesize_bound(&mut cs, circuit, |cs| cs.inputs).map_err(failed)?;
        Ok(CircuitShape {
            constraints: cs.constraints,
            aux: cs.aux,
            inputs: cs.inputs,
        })
    };
    caught(run, failed)
}

impl ConstraintSystem<Fr> for CountingCs {
    type Root = Self;

    fn new() -> Self {
        Self::default()
    }

    fn alloc<F, A, AR>(&mut self, _: A, _: F) -> std::result::Result<Variable, SynthesisError>
    where
        F: FnOnce() -> std::result::Result<Fr, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.aux += 1;
        Ok(Variable::new_unchecked(Index::Aux(self.aux - 1)))
    }

    fn alloc_input<F, A, AR>(&mut self, _: A, _: F) -> std::result::Result<Variable, SynthesisError>
    where
        F: FnOnce() -> std::result::Result<Fr, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.inputs += 1;
        Ok(Variable::new_unchecked(Index::Input(self.inputs - 1)))
    }

    fn enforce<A, AR, LA, LB, LC>(&mut self, _: A, _: LA, _: LB, _: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
        LB: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
        LC: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
    {
        self.constraints += 1;
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
}
