//! `RecordingCs`: a `ConstraintSystem` that evaluates every constraint on the witness as it is
//! enforced and keeps only what the Groth16 prover needs: the input and aux assignments, the
//! a/b evaluations per constraint (c too where asked: the benchmarks' baseline, as bellperson
//! keeps it; the daemon's device phase forms c = a∘b itself), and which variables occur in A
//! and B.

use bellperson::{ConstraintSystem, Index, LinearCombination, SynthesisError, Variable};
use blstrs::Scalar as Fr;
use ff::Field;

use super::density::Density;

/// `KEEP_C`: whether C is evaluated and kept; a type parameter so that the sub-systems a circuit
/// makes for parallel parts (`ConstraintSystem::new`) keep it as their parent does.
pub(crate) struct RecordingCs<const KEEP_C: bool> {
    pub(crate) inputs: Vec<Fr>,
    pub(crate) aux: Vec<Fr>,
    pub(crate) a: Vec<Fr>,
    pub(crate) b: Vec<Fr>,
    /// C·w per constraint, where kept.
    pub(crate) c: Option<Vec<Fr>>,
    pub(crate) a_aux_density: Density,
    pub(crate) b_input_density: Density,
    pub(crate) b_aux_density: Density,
}

impl<const KEEP_C: bool> RecordingCs<KEEP_C> {
    /// Room for `shape`.
    pub(crate) fn with_shape(shape: super::CircuitShape) -> Self {
        RecordingCs {
            inputs: Vec::with_capacity(shape.inputs),
            aux: Vec::with_capacity(shape.aux),
            a: Vec::with_capacity(shape.constraints),
            b: Vec::with_capacity(shape.constraints),
            c: KEEP_C.then(|| Vec::with_capacity(shape.constraints)),
            a_aux_density: Density::default(),
            b_input_density: Density::default(),
            b_aux_density: Density::default(),
        }
    }
}

/// Evaluates `lc`, marking the variables with non-zero coefficients in the given trackers.
fn eval(
    lc: &LinearCombination<Fr>,
    inputs: &[Fr],
    aux: &[Fr],
    mut input_density: Option<&mut Density>,
    mut aux_density: Option<&mut Density>,
) -> Fr {
    let mut acc = Fr::ZERO;
    for (&i, coeff) in lc.iter_inputs() {
        if bool::from(coeff.is_zero()) {
            continue;
        }
        acc += if *coeff == Fr::ONE {
            inputs[i]
        } else {
            inputs[i] * coeff
        };
        if let Some(d) = input_density.as_deref_mut() {
            d.set(i);
        }
    }
    for (&i, coeff) in lc.iter_aux() {
        if bool::from(coeff.is_zero()) {
            continue;
        }
        acc += if *coeff == Fr::ONE {
            aux[i]
        } else {
            aux[i] * coeff
        };
        if let Some(d) = aux_density.as_deref_mut() {
            d.set(i);
        }
    }
    acc
}

impl<const KEEP_C: bool> ConstraintSystem<Fr> for RecordingCs<KEEP_C> {
    type Root = Self;

    fn new() -> Self {
        Self::with_shape(super::CircuitShape::default())
    }

    fn alloc<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Fr, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.aux.push(f()?);
        self.a_aux_density.push();
        self.b_aux_density.push();
        Ok(Variable::new_unchecked(Index::Aux(self.aux.len() - 1)))
    }

    fn alloc_input<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Fr, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.inputs.push(f()?);
        self.b_input_density.push();
        Ok(Variable::new_unchecked(Index::Input(self.inputs.len() - 1)))
    }

    fn enforce<A, AR, LA, LB, LC>(&mut self, _: A, a: LA, b: LB, c: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
        LB: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
        LC: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
    {
        let (la, lb) = (a(LinearCombination::zero()), b(LinearCombination::zero()));
        let a = eval(
            &la,
            &self.inputs,
            &self.aux,
            None,
            Some(&mut self.a_aux_density),
        );
        let b = eval(
            &lb,
            &self.inputs,
            &self.aux,
            Some(&mut self.b_input_density),
            Some(&mut self.b_aux_density),
        );
        self.a.push(a);
        self.b.push(b);
        // C's linear combination is built only where it is kept.
        if let Some(kept) = &mut self.c {
            kept.push(eval(
                &c(LinearCombination::zero()),
                &self.inputs,
                &self.aux,
                None,
                None,
            ));
        }
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

    /// Appends a sub-system synthesized in parallel. Its first input is its own copy of ONE: its
    /// value is dropped and its B occurrence merged into ours, as in bellperson's prover.
    fn extend(&mut self, other: &Self) {
        self.a_aux_density.extend_from(&other.a_aux_density, false);
        self.b_input_density
            .extend_from(&other.b_input_density, true);
        self.b_aux_density.extend_from(&other.b_aux_density, false);
        self.a.extend_from_slice(&other.a);
        self.b.extend_from_slice(&other.b);
        if let (Some(c), Some(theirs)) = (&mut self.c, &other.c) {
            c.extend_from_slice(theirs);
        }
        self.inputs.extend_from_slice(&other.inputs[1..]);
        self.aux.extend_from_slice(&other.aux);
    }
}
