//! Pre-compiled circuits: a circuit's R1CS matrices recorded once ([`CircuitMatrices::record`],
//! from the blank circuit), so that each partition's synthesis is only a witness pass
//! ([`synthesize_precompiled`]: the gadgets compute values and build no linear combinations)
//! followed by the sparse products a = A·w, b = B·w, c = C·w, in parallel over rows. The same
//! [`SynthesizedPartition`] comes out as from the recording constraint system, bit for bit.
//!
//! Layout:
//! - `mod.rs`: [`CircuitMatrices`], recording and the pre-compiled synthesis.
//! - `matrix.rs`: one matrix in compressed sparse rows and its product with a witness.
//! - `recorder.rs`: the constraint system that records the matrices (no values).
//! - `witness.rs`: the constraint system that computes the witness only.
//! - `file.rs`: the on-disk form (versioned, digested, checked before use).

mod file;
mod matrix;
mod recorder;
mod witness;

use bellperson::groth16::Parameters;
use bellperson::{Circuit, ConstraintSystem, Index, Variable};
use blstrs::{Bls12, Scalar as Fr};
use ff::Field;

pub use file::{MatricesFile, FORMAT_VERSION};
use matrix::{SparseMatrix, INPUT_BIT};
use recorder::MatrixRecorder;
use witness::WitnessCs;

use super::{caught, Abc, Density, SynthesizedPartition};
use crate::error::{ProverError, Result};

/// The A, B, C matrices of one circuit (with one `input_i * 0 = 0` row per public input, as
/// [`super::synthesize_circuit`] adds them), its interned coefficients and the A/B densities
/// (which depend on the circuit alone, not on the witness).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CircuitMatrices {
    num_inputs: usize,
    num_aux: usize,
    coeffs: Vec<Fr>,
    a: SparseMatrix,
    b: SparseMatrix,
    c: SparseMatrix,
    a_aux_density: Density,
    b_input_density: Density,
    b_aux_density: Density,
}

impl CircuitMatrices {
    /// Records the matrices of `circuit` (usually the blank circuit, whose values are never
    /// asked for). `rows` is a hint for reserving the row tables.
    pub fn record<C: Circuit<Fr>>(circuit: C, rows: usize) -> Result<CircuitMatrices> {
        let run = move || -> std::result::Result<CircuitMatrices, String> {
            let mut cs = MatrixRecorder::with_rows(rows);
            cs.alloc_input(|| "ONE", || Ok(Fr::ONE))
                .map_err(|e| e.to_string())?;
            circuit.synthesize(&mut cs).map_err(|e| e.to_string())?;
            for i in 0..cs.inputs {
                cs.enforce(
                    || "",
                    |lc| lc + Variable::new_unchecked(Index::Input(i)),
                    |lc| lc,
                    |lc| lc,
                );
            }
            if cs.overflow {
                return Err("the circuit has more variables or terms than the pre-compiled \
                            layout indexes (2^31 variables, 2^32 terms per matrix)"
                    .into());
            }
            let MatrixRecorder {
                inputs,
                aux,
                mut coeffs,
                mut a,
                mut b,
                mut c,
                ..
            } = cs;
            for m in [&mut a, &mut b, &mut c] {
                m.starts.shrink_to_fit();
                m.terms.shrink_to_fit();
            }
            coeffs.shrink_to_fit();
            CircuitMatrices::from_parts(inputs, aux, coeffs, a, b, c)
        };
        caught(run).map_err(|reason| ProverError::Precompiled(format!("recording: {reason}")))
    }

    /// Constraints, including the per-input ones.
    pub fn num_constraints(&self) -> usize {
        self.a.rows()
    }

    /// Public inputs including ONE.
    pub fn num_inputs(&self) -> usize {
        self.num_inputs
    }

    pub fn num_aux(&self) -> usize {
        self.num_aux
    }

    /// Non-zero terms of A, B and C together.
    pub fn num_terms(&self) -> usize {
        self.a.terms.len() + self.b.terms.len() + self.c.terms.len()
    }

    /// Distinct coefficients (1 and −1 included).
    pub fn num_coefficients(&self) -> usize {
        self.coeffs.len()
    }

    /// Bytes held in memory.
    pub fn size_bytes(&self) -> u64 {
        self.a.size_bytes()
            + self.b.size_bytes()
            + self.c.size_bytes()
            + (self.coeffs.capacity() * std::mem::size_of::<Fr>()) as u64
            + self.a_aux_density.size_bytes()
            + self.b_input_density.size_bytes()
            + self.b_aux_density.size_bytes()
    }

    /// Errors unless these matrices are the circuit `params` were made for: the same inputs and
    /// aux variables, the same A and B densities and the same evaluation domain. Stale matrices
    /// (another circuit version) fail here.
    pub fn check_against(&self, params: &Parameters<Bls12>) -> Result<()> {
        crate::groth16::check_counts(
            params,
            self.num_inputs,
            self.num_aux,
            self.a_aux_density.count(),
            self.b_input_density.count() + self.b_aux_density.count(),
        )?;
        let domain = self.num_constraints().next_power_of_two();
        if params.h.len() != domain - 1 {
            return Err(ProverError::ParamsShape(format!(
                "the pre-compiled circuit's domain needs {} H bases, the parameters have {}",
                domain - 1,
                params.h.len()
            )));
        }
        Ok(())
    }

    /// The matrices with their densities derived from the terms (every stored term has a
    /// non-zero coefficient), once every index has been checked.
    fn from_parts(
        num_inputs: usize,
        num_aux: usize,
        coeffs: Vec<Fr>,
        a: SparseMatrix,
        b: SparseMatrix,
        c: SparseMatrix,
    ) -> std::result::Result<CircuitMatrices, String> {
        let mut m = CircuitMatrices {
            num_inputs,
            num_aux,
            coeffs,
            a,
            b,
            c,
            a_aux_density: Density::with_len(num_aux),
            b_input_density: Density::with_len(num_inputs),
            b_aux_density: Density::with_len(num_aux),
        };
        m.check_indices()?;
        for t in &m.a.terms {
            if t.var & INPUT_BIT == 0 {
                m.a_aux_density.set(t.var as usize);
            }
        }
        for t in &m.b.terms {
            if t.var & INPUT_BIT == 0 {
                m.b_aux_density.set(t.var as usize);
            } else {
                m.b_input_density.set((t.var & !INPUT_BIT) as usize);
            }
        }
        Ok(m)
    }

    /// Checks every index a product will follow.
    fn check_indices(&self) -> std::result::Result<(), String> {
        let rows = self.a.rows();
        if self.b.rows() != rows || self.c.rows() != rows {
            return Err("A, B and C have different row counts".into());
        }
        if self.coeffs.len() < 2 || self.coeffs[0] != Fr::ONE || self.coeffs[1] != -Fr::ONE {
            return Err("the coefficient table does not start with 1 and -1".into());
        }
        for m in [&self.a, &self.b, &self.c] {
            m.check(self.num_inputs, self.num_aux, self.coeffs.len())?;
        }
        Ok(())
    }
}

/// Synthesizes `circuit` as partition `index` with its pre-compiled `matrices`: the witness
/// pass, then a/b/c as sparse products on the calling thread's pool
/// ([`crate::threads::pool`], so at that thread's priority). A panic or error inside the circuit
/// is [`ProverError::Synthesis`]; a witness of another size than the matrices' is
/// [`ProverError::Precompiled`] (the matrices belong to another circuit).
pub fn synthesize_precompiled<C: Circuit<Fr>>(
    index: usize,
    circuit: C,
    matrices: &CircuitMatrices,
) -> Result<SynthesizedPartition> {
    let run = move || -> std::result::Result<WitnessCs, String> {
        let mut cs = WitnessCs::with_capacity(matrices.num_inputs, matrices.num_aux);
        cs.alloc_input(|| "ONE", || Ok(Fr::ONE))
            .map_err(|e| e.to_string())?;
        circuit.synthesize(&mut cs).map_err(|e| e.to_string())?;
        Ok(cs)
    };
    let WitnessCs { inputs, aux } = caught(run).map_err(|reason| ProverError::Synthesis {
        partition: index,
        reason,
    })?;
    if inputs.len() != matrices.num_inputs || aux.len() != matrices.num_aux {
        return Err(ProverError::Precompiled(format!(
            "the witness has {} inputs and {} aux values, the pre-compiled circuit {} and {}",
            inputs.len(),
            aux.len(),
            matrices.num_inputs,
            matrices.num_aux
        )));
    }
    let m = matrices;
    let (a, (b, c)) = crate::threads::pool().install(|| {
        rayon::join(
            || m.a.product(&m.coeffs, &inputs, &aux),
            || {
                rayon::join(
                    || m.b.product(&m.coeffs, &inputs, &aux),
                    || m.c.product(&m.coeffs, &inputs, &aux),
                )
            },
        )
    });
    Ok(SynthesizedPartition {
        index,
        num_constraints: a.len(),
        inputs,
        aux,
        abc: Some(Abc { a, b, c }),
        a_aux_density: m.a_aux_density.clone(),
        b_input_density: m.b_input_density.clone(),
        b_aux_density: m.b_aux_density.clone(),
    })
}

#[cfg(test)]
mod tests;
