//! One R1CS matrix (A or B) in compressed sparse rows, and its product with a witness.
//!
//! A term is 8 bytes: the variable (inputs and aux in one index space, told apart by the top
//! bit) and the index of its coefficient in the circuit's interned coefficient table, whose
//! first two entries are 1 and −1 (most terms), so the product needs no multiplication for them,
//! nor for the bits of a decomposition (values 0 and 1), which most other terms multiply.

use blstrs::Scalar as Fr;
use ff::Field;
use rayon::prelude::*;

/// Top bit of [`Term::var`]: the variable is a public input, not an aux variable.
pub(crate) const INPUT_BIT: u32 = 1 << 31;
/// Coefficient index of 1.
pub(crate) const COEFF_ONE: u32 = 0;
/// Coefficient index of −1.
pub(crate) const COEFF_MINUS_ONE: u32 = 1;
/// Rows evaluated together by one task of the product.
const ROWS_PER_TASK: usize = 1 << 12;

/// One non-zero entry of a row.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(C)]
pub(crate) struct Term {
    /// Aux index, or input index with [`INPUT_BIT`] set.
    pub(crate) var: u32,
    /// Index into the coefficient table.
    pub(crate) coeff: u32,
}

/// A matrix in compressed sparse rows: row `r` is `terms[starts[r]..starts[r + 1]]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct SparseMatrix {
    pub(crate) starts: Vec<u32>,
    pub(crate) terms: Vec<Term>,
}

impl Default for SparseMatrix {
    fn default() -> Self {
        SparseMatrix {
            starts: vec![0],
            terms: Vec::new(),
        }
    }
}

impl SparseMatrix {
    pub(crate) fn rows(&self) -> usize {
        self.starts.len() - 1
    }

    /// Ends the current row. `false` when the matrix has outgrown 32-bit row offsets.
    pub(crate) fn end_row(&mut self) -> bool {
        match u32::try_from(self.terms.len()) {
            Ok(end) => {
                self.starts.push(end);
                true
            }
            Err(_) => false,
        }
    }

    pub(crate) fn row(&self, r: usize) -> &[Term] {
        &self.terms[self.starts[r] as usize..self.starts[r + 1] as usize]
    }

    pub(crate) fn size_bytes(&self) -> u64 {
        (self.starts.capacity() * 4 + self.terms.capacity() * std::mem::size_of::<Term>()) as u64
    }

    /// Checks what a file's bytes could get wrong and the product would index by: offsets
    /// that start at 0, never decrease and end at the term count, variables within `inputs` /
    /// `aux` and coefficients within the table.
    pub(crate) fn check(
        &self,
        inputs: usize,
        aux: usize,
        coeffs: usize,
    ) -> Result<(), LayoutError> {
        if self.starts.first() != Some(&0) {
            return Err(LayoutError::Offsets(
                "a row offset table does not start at 0",
            ));
        }
        if self.starts.windows(2).any(|w| w[0] > w[1]) {
            return Err(LayoutError::Offsets("row offsets decrease"));
        }
        if *self.starts.last().unwrap_or(&0) as usize != self.terms.len() {
            return Err(LayoutError::Offsets(
                "the last row offset is not the term count",
            ));
        }
        for t in &self.terms {
            let in_range = if t.var & INPUT_BIT != 0 {
                ((t.var & !INPUT_BIT) as usize) < inputs
            } else {
                (t.var as usize) < aux
            };
            if !in_range || t.coeff as usize >= coeffs {
                return Err(LayoutError::Term {
                    var: t.var,
                    coeff: t.coeff,
                });
            }
        }
        Ok(())
    }

    /// `self · w` where `w` is `inputs` followed by `aux`, on the calling thread's rayon pool.
    pub(crate) fn product(&self, coeffs: &[Fr], inputs: &[Fr], aux: &[Fr]) -> Vec<Fr> {
        written_in_parallel(self.rows(), 0, |r| self.eval_row(r, coeffs, inputs, aux))
    }

    fn eval_row(&self, r: usize, coeffs: &[Fr], inputs: &[Fr], aux: &[Fr]) -> Fr {
        let mut acc = Fr::ZERO;
        for t in self.row(r) {
            let value = if t.var & INPUT_BIT != 0 {
                inputs[(t.var & !INPUT_BIT) as usize]
            } else {
                aux[t.var as usize]
            };
            match t.coeff {
                COEFF_ONE => acc += value,
                COEFF_MINUS_ONE => acc -= value,
                // Most other terms are bits of a decomposition: 0 or 1 times a power of two.
                _ if value == Fr::ZERO => {}
                c if value == Fr::ONE => acc += coeffs[c as usize],
                c => acc += value * coeffs[c as usize],
            }
        }
        acc
    }
}

impl SparseMatrix {
    /// `values`ᵀ·M: each variable's column summed with row `r` weighted by `values[r]`
    /// (inputs first, then aux). With each row's Lagrange basis polynomial at a point as
    /// `values`, it is each variable's A, B or C polynomial at that point (a Groth16 setup).
    pub(crate) fn weighted_columns(
        &self,
        coeffs: &[Fr],
        values: &[Fr],
        inputs: usize,
        aux: usize,
    ) -> Vec<Fr> {
        let mut out = vec![Fr::ZERO; inputs + aux];
        for (r, value) in values.iter().enumerate().take(self.rows()) {
            for t in self.row(r) {
                let column = if t.var & INPUT_BIT != 0 {
                    (t.var & !INPUT_BIT) as usize
                } else {
                    inputs + t.var as usize
                };
                match t.coeff {
                    COEFF_ONE => out[column] += value,
                    COEFF_MINUS_ONE => out[column] -= value,
                    c => out[column] += coeffs[c as usize] * value,
                }
            }
        }
        out
    }
}

/// `a∘b`, element by element, in parallel, in a vector with room for `capacity` values (at
/// least its length).
pub(crate) fn hadamard(a: &[Fr], b: &[Fr], capacity: usize) -> Vec<Fr> {
    assert_eq!(a.len(), b.len(), "hadamard of vectors of different lengths");
    written_in_parallel(a.len(), capacity, |i| a[i] * b[i])
}

/// A vector of `len` elements (room for `capacity`, at least `len`), element `i` being `f(i)`,
/// each written exactly once by the task of its chunk: no zero fill first, and the pages are
/// first touched by the threads that write them, in parallel (not by one thread clearing
/// gigabytes).
fn written_in_parallel(len: usize, capacity: usize, f: impl Fn(usize) -> Fr + Sync) -> Vec<Fr> {
    let mut out: Vec<Fr> = crate::spare::spare().vec(len.max(capacity));
    out.spare_capacity_mut()[..len]
        .par_chunks_mut(ROWS_PER_TASK)
        .enumerate()
        .for_each(|(task, chunk)| {
            let first = task * ROWS_PER_TASK;
            for (i, slot) in chunk.iter_mut().enumerate() {
                slot.write(f(first + i));
            }
        });
    // SAFETY: the loop above wrote every one of the first `len` elements (the chunks cover
    // 0..len exactly, and a panic in `f` unwinds out of this function before this line).
    unsafe { out.set_len(len) };
    out
}

/// What makes pre-compiled matrices unusable: an index a product would follow out of bounds, or
/// counts that are not the parameters' circuit's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum LayoutError {
    #[error("{0}")]
    Offsets(&'static str),
    #[error("a term names variable {var:#x} or coefficient {coeff} beyond the circuit")]
    Term { var: u32, coeff: u32 },
    #[error("A and B have different row counts")]
    RowCounts,
    #[error("the coefficient table does not start with 1 and -1")]
    Coefficients,
    #[error("{inputs} inputs and {aux} aux variables, the parameters' circuit has {params_inputs} and {params_aux}")]
    Variables {
        inputs: u64,
        aux: u64,
        params_inputs: usize,
        params_aux: usize,
    },
    #[error("{rows} constraints do not fit the parameters' domain of {domain}")]
    Domain { rows: u64, domain: u64 },
}
