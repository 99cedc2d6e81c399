//! `MatrixRecorder`: a `ConstraintSystem` that keeps a circuit's shape (its A and B matrices,
//! and C only for a Groth16 setup: proving never needs it, see [`super`]) and no values. It never runs the value closures, so it records a blank
//! circuit, as the parameter generator does.

use std::collections::HashMap;

use bellperson::{ConstraintSystem, Index, LinearCombination, SynthesisError, Variable};
use blstrs::Scalar as Fr;
use ff::Field;

use super::matrix::{SparseMatrix, Term, COEFF_ONE, INPUT_BIT};

pub(crate) struct MatrixRecorder {
    pub(crate) inputs: usize,
    pub(crate) aux: usize,
    pub(crate) coeffs: Vec<Fr>,
    interned: HashMap<[u8; 32], u32>,
    pub(crate) a: SparseMatrix,
    pub(crate) b: SparseMatrix,
    /// Recorded only when asked for ([`MatrixRecorder::with_c`]).
    pub(crate) c: Option<SparseMatrix>,
    /// Set when a count outgrew the 31/32-bit indices of the layout.
    pub(crate) overflow: bool,
}

impl MatrixRecorder {
    pub(crate) fn with_rows(rows: usize) -> Self {
        // Indices COEFF_ONE and COEFF_MINUS_ONE.
        let coeffs = vec![Fr::ONE, -Fr::ONE];
        let interned = coeffs
            .iter()
            .enumerate()
            .map(|(i, c)| (c.to_bytes_le(), i as u32))
            .collect();
        MatrixRecorder {
            inputs: 0,
            aux: 0,
            coeffs,
            interned,
            a: empty_matrix(rows),
            b: empty_matrix(rows),
            c: None,
            overflow: false,
        }
    }

    /// Records C as well (its closures run; without this they never do).
    pub(crate) fn with_c(mut self) -> Self {
        self.c = Some(empty_matrix(self.a.starts.capacity().saturating_sub(1)));
        self
    }

    fn intern(&mut self, coeff: &Fr) -> u32 {
        if *coeff == Fr::ONE {
            return COEFF_ONE;
        }
        let key = coeff.to_bytes_le();
        if let Some(&i) = self.interned.get(&key) {
            return i;
        }
        let i = self.coeffs.len() as u32;
        self.coeffs.push(*coeff);
        self.interned.insert(key, i);
        i
    }
}

/// A matrix of no rows, with room for `rows`.
fn empty_matrix(rows: usize) -> SparseMatrix {
    let mut starts = Vec::with_capacity(rows + 1);
    starts.push(0);
    SparseMatrix {
        starts,
        terms: Vec::with_capacity(rows * 2),
    }
}

/// Which matrix a row is recorded into.
#[derive(Clone, Copy)]
enum Which {
    A,
    B,
    C,
}

fn record(cs: &mut MatrixRecorder, which: Which, lc: &LinearCombination<Fr>) {
    let mut terms = Vec::with_capacity(lc.len());
    for (&i, coeff) in lc.iter_inputs() {
        if bool::from(coeff.is_zero()) {
            continue;
        }
        let coeff = cs.intern(coeff);
        terms.push(Term {
            var: i as u32 | INPUT_BIT,
            coeff,
        });
    }
    for (&i, coeff) in lc.iter_aux() {
        if bool::from(coeff.is_zero()) {
            continue;
        }
        let coeff = cs.intern(coeff);
        terms.push(Term {
            var: i as u32,
            coeff,
        });
    }
    let matrix = match which {
        Which::A => &mut cs.a,
        Which::B => &mut cs.b,
        Which::C => match &mut cs.c {
            Some(c) => c,
            None => return,
        },
    };
    matrix.terms.extend_from_slice(&terms);
    if !matrix.end_row() {
        cs.overflow = true;
    }
}

impl ConstraintSystem<Fr> for MatrixRecorder {
    type Root = Self;

    fn new() -> Self {
        Self::with_rows(0)
    }

    fn alloc<F, A, AR>(&mut self, _: A, _: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Fr, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.aux += 1;
        self.overflow |= self.aux > INPUT_BIT as usize;
        Ok(Variable::new_unchecked(Index::Aux(self.aux - 1)))
    }

    fn alloc_input<F, A, AR>(&mut self, _: A, _: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Fr, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.inputs += 1;
        self.overflow |= self.inputs > INPUT_BIT as usize;
        Ok(Variable::new_unchecked(Index::Input(self.inputs - 1)))
    }

    fn enforce<A, AR, LA, LB, LC>(&mut self, _: A, a: LA, b: LB, c: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
        LB: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
        LC: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
    {
        record(self, Which::A, &a(LinearCombination::zero()));
        record(self, Which::B, &b(LinearCombination::zero()));
        if self.c.is_some() {
            record(self, Which::C, &c(LinearCombination::zero()));
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
}
