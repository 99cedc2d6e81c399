//! A circuit's whole R1CS, C included: what a Groth16 setup evaluates. Proving never needs C
//! (see [`super`]), so only the setup records it.

use bellperson::Circuit;
use blstrs::Scalar as Fr;

use super::matrix::SparseMatrix;
use super::matrix_recorder::MatrixRecorder;
use super::{record, CircuitMatrices};
use crate::error::Result;

pub(crate) struct FullR1cs {
    pub(crate) ab: CircuitMatrices,
    c: SparseMatrix,
}

/// Each variable's A, B and C polynomials at one point (inputs first, then aux).
pub(crate) struct Columns {
    pub(crate) a: Vec<Fr>,
    pub(crate) b: Vec<Fr>,
    pub(crate) c: Vec<Fr>,
}

impl FullR1cs {
    /// Records `circuit` (the blank circuit) with C. `rows` is a hint for the row tables.
    pub(crate) fn record<C: Circuit<Fr>>(circuit: C, rows: usize) -> Result<FullR1cs> {
        let (ab, c) = record(circuit, MatrixRecorder::with_rows(rows).with_c())?;
        let c = c.expect("a recorder made with_c records C");
        Ok(FullR1cs { ab, c })
    }

    /// Every variable's A, B and C polynomial at the point where row `r`'s Lagrange basis
    /// polynomial is `lagrange[r]` (one value per constraint).
    pub(crate) fn columns_at(&self, lagrange: &[Fr]) -> Columns {
        let m = &self.ab;
        let eval = |matrix: &SparseMatrix| {
            matrix.weighted_columns(&m.coeffs, lagrange, m.num_inputs, m.num_aux)
        };
        let (a, (b, c)) = rayon::join(
            || eval(&m.a),
            || rayon::join(|| eval(&m.b), || eval(&self.c)),
        );
        Columns { a, b, c }
    }
}
