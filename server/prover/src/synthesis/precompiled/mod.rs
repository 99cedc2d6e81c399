//! Pre-compiled circuits: a circuit's R1CS matrices recorded once ([`CircuitMatrices::record`],
//! from the blank circuit), so that each partition's synthesis is only a witness pass
//! ([`synthesize_precompiled`]: `enforce` runs none of its closures, so no constraint's linear
//! combinations are built) followed by the sparse products a = A·w and b = B·w, in parallel
//! over rows; c = a∘b is left to the device phase, which forms it where it computes H (on the
//! host for the CPU, on the device for a GPU: [`Abc::c`]). The same [`SynthesizedPartition`]
//! comes out as from the recording constraint system, bit for bit (c formed).
//!
//! Why C is not kept: a witness satisfies the circuit exactly when (A·w)ᵢ·(B·w)ᵢ = (C·w)ᵢ for
//! every row, so for every witness a valid request yields, c = a∘b *is* C·w; C's rows (the
//! long bit-packing sums) would cost about a third of the memory and of the products for
//! nothing. For a witness that does not satisfy the circuit the proof fails verification either
//! way: the L query of the parameters carries the real C, so a proof made with c = a∘b verifies
//! only if a∘b = C·w (Groth16's soundness), and every proof is verified before it is returned.
//!
//! Layout:
//! - `mod.rs`: [`CircuitMatrices`], recording and the pre-compiled synthesis.
//! - `matrix.rs`: one matrix in compressed sparse rows and its product with a witness.
//! - `matrix_recorder.rs`: the constraint system that records the matrices (no values).
//! - `full_r1cs.rs`: the matrices with C, for a Groth16 setup ([`FullR1cs`]).
//! - `witness.rs`: the constraint system that computes the witness only.
//! - `file.rs`: the on-disk form (versioned, digested, checked before use).

mod column;
mod file;
mod full_r1cs;
mod matrix;
mod matrix_recorder;
mod witness;

use bellperson::groth16::Parameters;
use bellperson::{Circuit, ConstraintSystem};
use blstrs::{Bls12, Scalar as Fr};
use ff::Field;

pub(crate) use column::Column;
pub use file::{MatricesFile, FORMAT_VERSION};
pub(crate) use full_r1cs::{Columns, FullR1cs};
pub(crate) use matrix::hadamard;
use matrix::{LayoutError, SparseMatrix, INPUT_BIT};
use matrix_recorder::MatrixRecorder;
pub(crate) use witness::{Misfilled, WitnessCs};

use super::{caught, synthesize_bound, Abc, Density, SynthesizedPartition};
use crate::error::{ProverError, Result};

/// The A and B matrices of one circuit (with one `input_i * 0 = 0` row per public input, as
/// [`super::synthesize_circuit`] adds them), its interned coefficients and the A/B densities
/// (which depend on the circuit alone, not on the witness).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CircuitMatrices {
    num_inputs: usize,
    num_aux: usize,
    coeffs: Vec<Fr>,
    a: SparseMatrix,
    b: SparseMatrix,
    a_aux_density: Density,
    b_input_density: Density,
    b_aux_density: Density,
}

impl CircuitMatrices {
    /// Records the matrices of `circuit` (usually the blank circuit, whose values are never
    /// asked for). `rows` is a hint for reserving the row tables.
    pub fn record<C: Circuit<Fr>>(circuit: C, rows: usize) -> Result<CircuitMatrices> {
        record(circuit, MatrixRecorder::with_rows(rows)).map(|(m, _)| m)
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

    /// Non-zero terms of A and B together.
    pub fn num_terms(&self) -> usize {
        self.a.terms.len() + self.b.terms.len()
    }

    /// Distinct coefficients (1 and −1 included).
    pub fn num_coefficients(&self) -> usize {
        self.coeffs.len()
    }

    /// Bytes held in memory.
    pub fn size_bytes(&self) -> u64 {
        self.a.size_bytes()
            + self.b.size_bytes()
            + (self.coeffs.capacity() * std::mem::size_of::<Fr>()) as u64
            + self.a_aux_density.size_bytes()
            + self.b_input_density.size_bytes()
            + self.b_aux_density.size_bytes()
    }

    /// Errors unless these matrices are the circuit `params` were made for: the same inputs and
    /// aux variables, the same A and B densities and the same evaluation domain. Stale matrices
    /// (another circuit version) fail here.
    pub fn check_against(&self, params: &Parameters<Bls12>) -> Result<()> {
        crate::synthesis::check_counts(
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
    ) -> std::result::Result<CircuitMatrices, LayoutError> {
        let mut m = CircuitMatrices {
            num_inputs,
            num_aux,
            coeffs,
            a,
            b,
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
    fn check_indices(&self) -> std::result::Result<(), LayoutError> {
        if self.b.rows() != self.a.rows() {
            return Err(LayoutError::RowCounts);
        }
        if self.coeffs.len() < 2 || self.coeffs[0] != Fr::ONE || self.coeffs[1] != -Fr::ONE {
            return Err(LayoutError::Coefficients);
        }
        for m in [&self.a, &self.b] {
            m.check(self.num_inputs, self.num_aux, self.coeffs.len())?;
        }
        Ok(())
    }
}

/// Records `circuit` with `cs`: the matrices, and C when `cs` keeps it (checked like A and B).
fn record<C: Circuit<Fr>>(
    circuit: C,
    mut cs: MatrixRecorder,
) -> Result<(CircuitMatrices, Option<SparseMatrix>)> {
    let failed = |reason: String| ProverError::Precompiled(format!("recording: {reason}"));
    let run = move || -> Result<(CircuitMatrices, Option<SparseMatrix>)> {
        synthesize_bound(&mut cs, circuit, |cs| cs.inputs).map_err(|e| failed(e.to_string()))?;
        if cs.overflow {
            return Err(failed(
                "the circuit has more variables or terms than the pre-compiled \
                        layout indexes (2^31 variables, 2^32 terms per matrix)"
                    .into(),
            ));
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
        for m in [&mut a, &mut b].into_iter().chain(c.as_mut()) {
            m.starts.shrink_to_fit();
            m.terms.shrink_to_fit();
        }
        coeffs.shrink_to_fit();
        let matrices = CircuitMatrices::from_parts(inputs, aux, coeffs, a, b)
            .map_err(|e| failed(e.to_string()))?;
        if let Some(c) = &c {
            if c.rows() != matrices.a.rows() {
                return Err(failed(LayoutError::RowCounts.to_string()));
            }
            c.check(inputs, aux, matrices.coeffs.len())
                .map_err(|e| failed(e.to_string()))?;
        }
        Ok((matrices, c))
    };
    caught(run, failed)
}

/// Synthesizes `circuit` as partition `index` with its pre-compiled `matrices`: the witness
/// pass, then a and b as sparse products (c is left to the device phase), on the rayon pool the
/// caller runs in, or else on the pool of the calling thread's priority
/// ([`crate::threads::install`]). A panic or error inside the circuit is
/// [`ProverError::Synthesis`]; a witness of another size than the matrices' is
/// [`ProverError::Precompiled`] (the matrices belong to another circuit).
pub fn synthesize_precompiled<C: Circuit<Fr>>(
    index: usize,
    circuit: C,
    matrices: &CircuitMatrices,
) -> Result<SynthesizedPartition> {
    let started = std::time::Instant::now();
    let witness = witness_pass(index, circuit, matrices.num_inputs, matrices.num_aux)?;
    from_witness(index, witness, matrices, started)
}

/// The second half of [`synthesize_precompiled`]: partition `index` from its witness (however it
/// was computed, `started` when it began) and the circuit's `matrices`.
pub(crate) fn from_witness(
    index: usize,
    (inputs, aux): (Vec<Fr>, Vec<Fr>),
    matrices: &CircuitMatrices,
    started: std::time::Instant,
) -> Result<SynthesizedPartition> {
    if inputs.len() != matrices.num_inputs || aux.len() != matrices.num_aux {
        return Err(ProverError::Precompiled(format!(
            "the witness has {} inputs and {} aux values, the pre-compiled circuit {} and {}",
            inputs.len(),
            aux.len(),
            matrices.num_inputs,
            matrices.num_aux
        )));
    }
    let witnessed = started.elapsed();
    let m = matrices;
    let products = || {
        rayon::join(
            || m.a.product(&m.coeffs, &inputs, &aux),
            || m.b.product(&m.coeffs, &inputs, &aux),
        )
    };
    let (a, b) = crate::threads::install(products);
    tracing::debug!(
        partition = index,
        witness_ms = witnessed.as_millis() as u64,
        products_ms = (started.elapsed() - witnessed).as_millis() as u64,
        "pre-compiled synthesis"
    );
    Ok(SynthesizedPartition::new(
        index,
        (inputs, aux),
        // c = a∘b is formed by the device phase where it computes H (see the module docs).
        Abc { a, b, c: None },
        [
            m.a_aux_density.clone(),
            m.b_input_density.clone(),
            m.b_aux_density.clone(),
        ],
    ))
}

/// The witness pass of [`synthesize_precompiled`]: ONE, then `circuit` on [`WitnessCs`], with
/// room reserved for `inputs` public inputs and `aux` aux values; returns (inputs, aux). An error
/// or a panic inside the circuit is [`ProverError::Synthesis`] of partition `index`.
pub(crate) fn witness_pass<C: Circuit<Fr>>(
    index: usize,
    circuit: C,
    inputs: usize,
    aux: usize,
) -> Result<(Vec<Fr>, Vec<Fr>)> {
    let failed = move |reason: String| ProverError::Synthesis {
        partition: index,
        reason,
    };
    let run = move || -> Result<WitnessCs<'static>> {
        let mut cs = WitnessCs::with_capacity(inputs, aux);
        let synthesized = cs
            .alloc_input(|| "ONE", || Ok(Fr::ONE))
            .and_then(|_| circuit.synthesize(&mut cs));
        synthesized.map_err(|e| failed(e.to_string()))?;
        Ok(cs)
    };
    Ok(caught(run, failed)?.into_vecs())
}

#[cfg(test)]
mod tests;
