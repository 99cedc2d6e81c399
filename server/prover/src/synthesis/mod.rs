//! Circuit synthesis: runs a partition circuit on our own `ConstraintSystem` and keeps what the
//! Groth16 device phase needs, as a [`SynthesizedPartition`].
//!
//! Layout:
//! - `mod.rs`: [`SynthesizedPartition`] and [`synthesize_circuit`] (panics become errors).
//! - `recording_cs.rs`: the recording constraint system.
//! - `density.rs`: [`Density`], the bit sets of variables occurring in A and B.
//! - `precompiled/`: the same partition from recorded R1CS matrices and a witness-only pass.
//! - `native/`: gadget witnesses computed natively (SHA-256, labels), for `filecoin::native`.

mod density;
pub(crate) mod native;
pub mod precompiled;
mod recording_cs;
#[cfg(test)]
pub(crate) mod test_circuit;

use std::panic::{catch_unwind, AssertUnwindSafe};

use bellperson::{Circuit, ConstraintSystem, Index, Variable};
use blstrs::Scalar as Fr;
use ff::Field;

pub use density::Density;
use recording_cs::RecordingCs;

use crate::error::{ProverError, Result};

const FR_BYTES: u64 = std::mem::size_of::<Fr>() as u64;

/// The a, b, c evaluations of every constraint (the QAP's A·w, B·w, C·w at the constraint
/// points). By far the largest part of a partition; the device phase consumes and frees them
/// first.
#[derive(Debug, Default)]
pub struct Abc {
    pub a: Vec<Fr>,
    pub b: Vec<Fr>,
    /// C·w where synthesis was asked to keep it ([`synthesize_circuit_with_c`]: the benchmarks'
    /// baseline, as bellperson has it). `None` in the daemon: c = a∘b is left to the device
    /// phase, which forms it where it computes H (the CPU's FFT on the host, a GPU on the
    /// device); for every witness a valid request yields a∘b is C·w (`precompiled`'s module
    /// docs say why). So a partition proved on a GPU never has a c on the host.
    pub c: Option<Vec<Fr>>,
}

impl Abc {
    pub fn size_bytes(&self) -> u64 {
        let c = self.c.as_ref().map_or(0, Vec::capacity);
        (self.a.capacity() + self.b.capacity() + c) as u64 * FR_BYTES
    }

    /// c: the kept one, or a∘b formed now into a vector with room for `capacity` values (each
    /// value written once, in parallel on the calling thread's pool).
    pub fn take_c(&mut self, capacity: usize) -> Vec<Fr> {
        match self.c.take() {
            Some(c) => c,
            None => precompiled::hadamard(&self.a, &self.b, capacity),
        }
    }

    /// Hands the vectors to [`crate::spare`] for a later partition (freed where nothing is kept).
    pub fn give_back(self) {
        let spare = crate::spare::spare();
        spare.give_back(self.a);
        spare.give_back(self.b);
        if let Some(c) = self.c {
            spare.give_back(c);
        }
    }

    /// c's values (a∘b formed for the caller where it is not kept): for comparisons.
    pub fn c_values(&self) -> std::borrow::Cow<'_, [Fr]> {
        match &self.c {
            Some(c) => std::borrow::Cow::Borrowed(c),
            None => std::borrow::Cow::Owned(precompiled::hadamard(&self.a, &self.b, 0)),
        }
    }
}

/// A synthesized partition circuit: its [`Witness`] (with the A/B densities) and its a/b/c
/// evaluations, which the device phase consumes first ([`SynthesizedPartition::into_parts`]).
///
/// Constraints include one `input_i * 0 = 0` constraint per public input (as bellperson adds),
/// so the domain and the parameters' H query line up with stock bellperson.
#[derive(Debug)]
pub struct SynthesizedPartition {
    witness: Witness,
    abc: Abc,
    /// Set when the witness was computed natively: the job's switch, to turn off if the
    /// partition's proof fails its check.
    native: Option<native::NativeSwitch>,
}

/// What a partition keeps once its a/b/c evaluations are consumed: the witness and the A/B
/// densities, for the multiexps.
#[derive(Debug)]
pub struct Witness {
    index: usize,
    /// Public inputs; `inputs[0]` is ONE.
    pub(crate) inputs: Vec<Fr>,
    pub(crate) aux: Vec<Fr>,
    num_constraints: usize,
    pub(crate) a_aux_density: Density,
    pub(crate) b_input_density: Density,
    pub(crate) b_aux_density: Density,
}

impl SynthesizedPartition {
    /// Partition `index` of a job, from its witness, a/b/c evaluations and the A aux, B input
    /// and B aux densities.
    pub(crate) fn new(
        index: usize,
        (inputs, aux): (Vec<Fr>, Vec<Fr>),
        abc: Abc,
        [a_aux_density, b_input_density, b_aux_density]: [Density; 3],
    ) -> SynthesizedPartition {
        SynthesizedPartition {
            witness: Witness {
                index,
                num_constraints: abc.a.len(),
                inputs,
                aux,
                a_aux_density,
                b_input_density,
                b_aux_density,
            },
            abc,
            native: None,
        }
    }

    /// The partition, marked as made from a native witness of the job `switch` belongs to.
    pub(crate) fn made_natively(mut self, switch: native::NativeSwitch) -> Self {
        self.native = Some(switch);
        self
    }

    /// When the witness was computed natively, the job's switch of native witnesses: a proof of
    /// this partition that fails its check should turn it off, so that the partition is proved
    /// again from the gadgets.
    pub fn native(&self) -> Option<&native::NativeSwitch> {
        self.native.as_ref()
    }

    /// The witness and, apart, the a/b/c evaluations (the device phase drops them after H).
    pub fn into_parts(self) -> (Witness, Abc) {
        (self.witness, self.abc)
    }

    /// Hands the partition's large vectors to [`crate::spare`] for a later partition (freed
    /// where nothing is kept).
    pub fn give_back(self) {
        self.abc.give_back();
        crate::spare::spare().give_back(self.witness.aux);
    }

    /// The a/b/c evaluations.
    pub fn abc(&self) -> &Abc {
        &self.abc
    }

    /// A copy, its vectors copied in parallel on the calling thread's pool: for benchmarks that
    /// prove one partition many times (at production shape a copy takes a fraction of a
    /// synthesis). Not marked as made natively.
    #[cfg(feature = "bench")]
    pub fn duplicate(&self) -> SynthesizedPartition {
        use rayon::prelude::*;
        let copy = |v: &Vec<Fr>| -> Vec<Fr> { v.par_iter().copied().collect() };
        let w = &self.witness;
        SynthesizedPartition {
            witness: Witness {
                index: w.index,
                inputs: w.inputs.clone(),
                aux: copy(&w.aux),
                num_constraints: w.num_constraints,
                a_aux_density: w.a_aux_density.clone(),
                b_input_density: w.b_input_density.clone(),
                b_aux_density: w.b_aux_density.clone(),
            },
            abc: Abc {
                a: copy(&self.abc.a),
                b: copy(&self.abc.b),
                c: self.abc.c.as_ref().map(copy),
            },
            native: None,
        }
    }

    /// Bytes held: witness, densities and a/b/c.
    pub fn size_bytes(&self) -> u64 {
        self.witness.witness_bytes() + self.abc_bytes()
    }

    /// Bytes held by a/b/c.
    pub fn abc_bytes(&self) -> u64 {
        self.abc.size_bytes()
    }
}

impl std::ops::Deref for SynthesizedPartition {
    type Target = Witness;

    fn deref(&self) -> &Witness {
        &self.witness
    }
}

impl Witness {
    /// Partition index within its job.
    pub fn index(&self) -> usize {
        self.index
    }

    /// Constraints, including the per-input constraints.
    pub fn num_constraints(&self) -> usize {
        self.num_constraints
    }

    /// Public inputs including ONE.
    pub fn num_inputs(&self) -> usize {
        self.inputs.len()
    }

    pub fn num_aux(&self) -> usize {
        self.aux.len()
    }

    /// The circuit's shape: its constraints, aux values and inputs.
    pub fn shape(&self) -> CircuitShape {
        CircuitShape {
            constraints: self.num_constraints,
            aux: self.aux.len(),
            inputs: self.inputs.len(),
        }
    }

    /// The witness: public inputs (ONE first) and aux values.
    pub fn witness(&self) -> (&[Fr], &[Fr]) {
        (&self.inputs, &self.aux)
    }

    /// Public inputs without the leading ONE, as a verifier takes them.
    pub fn public_inputs(&self) -> &[Fr] {
        &self.inputs[1..]
    }

    /// Bytes held: the witness and the densities (what stays after a/b/c are released).
    pub fn witness_bytes(&self) -> u64 {
        (self.inputs.capacity() + self.aux.capacity()) as u64 * FR_BYTES
            + self.a_aux_density.size_bytes()
            + self.b_input_density.size_bytes()
            + self.b_aux_density.size_bytes()
    }

    /// A/B densities: which aux variables occur in A, which inputs / aux occur in B.
    pub fn densities(&self) -> (&Density, &Density, &Density) {
        (
            &self.a_aux_density,
            &self.b_input_density,
            &self.b_aux_density,
        )
    }
}

/// Expected size of a circuit, used to reserve the vectors up front (no growth by doubling).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CircuitShape {
    /// Constraints including one per public input.
    pub constraints: usize,
    pub aux: usize,
    /// Public inputs including ONE.
    pub inputs: usize,
}

/// Synthesizes `circuit` as partition `index`, reserving memory for `shape` (a hint; any size
/// works): the daemon's plain path, which leaves c = a∘b to the device phase ([`Abc::c`]). A
/// panic inside the circuit's synthesis is caught and returned as [`ProverError::Synthesis`].
pub fn synthesize_circuit<C: Circuit<Fr>>(
    index: usize,
    circuit: C,
    shape: CircuitShape,
) -> Result<SynthesizedPartition> {
    synthesize_recorded::<C, false>(index, circuit, shape)
}

/// [`synthesize_circuit`] evaluating and keeping c = C·w as well, as bellperson's prover does:
/// the benchmarks' baseline, and the tests' check that a∘b is C·w.
pub fn synthesize_circuit_with_c<C: Circuit<Fr>>(
    index: usize,
    circuit: C,
    shape: CircuitShape,
) -> Result<SynthesizedPartition> {
    synthesize_recorded::<C, true>(index, circuit, shape)
}

fn synthesize_recorded<C: Circuit<Fr>, const KEEP_C: bool>(
    index: usize,
    circuit: C,
    shape: CircuitShape,
) -> Result<SynthesizedPartition> {
    let failed = move |reason: String| ProverError::Synthesis {
        partition: index,
        reason,
    };
    let run = move || -> Result<SynthesizedPartition> {
        let mut cs = RecordingCs::<KEEP_C>::with_shape(shape);
        synthesize_bound(&mut cs, circuit, |cs| cs.inputs.len())
            .map_err(|e| failed(e.to_string()))?;
        let RecordingCs {
            inputs,
            aux,
            a,
            b,
            c,
            a_aux_density,
            b_input_density,
            b_aux_density,
        } = cs;
        Ok(SynthesizedPartition::new(
            index,
            (inputs, aux),
            Abc { a, b, c },
            [a_aux_density, b_input_density, b_aux_density],
        ))
    };
    caught(run, failed)
}

/// Runs `circuit` on `cs` as the Groth16 prover does: ONE first, then the circuit, then one
/// `input_i * 0 = 0` constraint for each of the `inputs(cs)` inputs, so that every input occurs
/// in A and is bound by the proof (bellperson and the parameter generator do the same).
pub(crate) fn synthesize_bound<CS: ConstraintSystem<Fr>, C: Circuit<Fr>>(
    cs: &mut CS,
    circuit: C,
    inputs: impl Fn(&CS) -> usize,
) -> std::result::Result<(), bellperson::SynthesisError> {
    cs.alloc_input(|| "ONE", || Ok(Fr::ONE))?;
    circuit.synthesize(cs)?;
    for i in 0..inputs(cs) {
        cs.enforce(
            || "",
            |lc| lc + Variable::new_unchecked(Index::Input(i)),
            |lc| lc,
            |lc| lc,
        );
    }
    Ok(())
}

/// Runs `run`, turning a panic into the error `panicked` makes of its message (`circuit
/// panicked: …`).
pub(crate) fn caught<T>(
    run: impl FnOnce() -> Result<T>,
    panicked: impl FnOnce(String) -> ProverError,
) -> Result<T> {
    match catch_unwind(AssertUnwindSafe(run)) {
        Ok(done) => done,
        Err(panic) => Err(panicked(panic_message(&panic))),
    }
}

/// The message of a panic in a circuit or a device step.
pub(crate) fn panic_message(panic: &Box<dyn std::any::Any + Send>) -> String {
    format!(
        "circuit panicked: {}",
        snarkd_types::panic_message(&**panic)
    )
}

/// Errors unless `params` have bases for a circuit of `inputs` public inputs (ONE included),
/// `aux` aux variables, `a_aux` aux variables in A and `b` variables in B.
pub(crate) fn check_counts(
    params: &bellperson::groth16::Parameters<blstrs::Bls12>,
    inputs: usize,
    aux: usize,
    a_aux: usize,
    b: usize,
) -> Result<()> {
    let mismatch = |what: &str, want: usize, have: usize| {
        Err(ProverError::ParamsShape(format!(
            "the circuit needs {want} {what} bases, the parameters have {have}"
        )))
    };
    if params.vk.ic.len() != inputs {
        return mismatch("input (IC)", inputs, params.vk.ic.len());
    }
    if params.l.len() != aux {
        return mismatch("L", aux, params.l.len());
    }
    if params.a.len() != inputs + a_aux {
        return mismatch("A", inputs + a_aux, params.a.len());
    }
    if params.b_g1.len() != b {
        return mismatch("B (G1)", b, params.b_g1.len());
    }
    if params.b_g2.len() != b {
        return mismatch("B (G2)", b, params.b_g2.len());
    }
    Ok(())
}
