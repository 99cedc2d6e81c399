//! The pre-compiled path against the recording constraint system on a small circuit that uses
//! what real circuits do (coefficients other than ±1, zero and repeated terms, inputs in B,
//! sub-systems joined by `extend`, a witness-generator fast path), and the file's checks.

use bellperson::groth16::{generate_random_parameters, Parameters};
use bellperson::{Circuit, ConstraintSystem, Index, SynthesisError, Variable};
use blstrs::{Bls12, Scalar as Fr};
use ff::Field;
use rand::rngs::OsRng;

use super::*;
use crate::synthesis::{synthesize_circuit, CircuitShape};

#[derive(Clone)]
struct Mixed {
    seed: Option<u64>,
    /// Sub-systems joined with `extend` (when the constraint system is extensible).
    parts: usize,
    /// A witness value off by one: the witness does not satisfy the circuit.
    unsatisfied: bool,
}

fn value(v: Option<Fr>) -> Result<Fr, SynthesisError> {
    v.ok_or(SynthesisError::AssignmentMissing)
}

/// One part: a chain of products with assorted coefficients; returns nothing, binds an input.
fn part<CS: ConstraintSystem<Fr>>(
    cs: &mut CS,
    seed: Option<u64>,
    unsatisfied: bool,
) -> Result<(), SynthesisError> {
    let x_val = seed.map(|s| Fr::from(s + 3));
    let x = cs.alloc(|| "x", || value(x_val))?;
    let pub_val = x_val.map(|x| x.square() * Fr::from(5));
    let out = cs.alloc_input(|| "out", || value(pub_val))?;
    let mut v_val = x_val;
    let mut v = x;
    for i in 0..20u64 {
        let wrong = if unsatisfied && i == 7 {
            Fr::ONE
        } else {
            Fr::ZERO
        };
        let next_val = v_val.map(|v| v * v + Fr::from(i) + wrong);
        let next = cs.alloc(|| "next", || value(next_val))?;
        // v * v = next - i·ONE, with a zero term and a repeated variable thrown in.
        cs.enforce(
            || "step",
            |lc| lc + v + (Fr::ZERO, x),
            |lc| lc + (Fr::from(2), v) - v,
            |lc| lc + next - (Fr::from(i), CS::one()),
        );
        v = next;
        v_val = next_val;
    }
    // x·x·5 = out, the input in B.
    cs.enforce(
        || "out",
        |lc| lc + (Fr::from(5), x),
        |lc| lc + x,
        |lc| lc + out,
    );
    // out * 1 = out: an input in A and B with −1 in C.
    cs.enforce(
        || "in b",
        |lc| lc + out,
        |lc| lc + CS::one(),
        |lc| lc - (-Fr::ONE, out),
    );
    // Values handed over in bulk, as neptune's witness path does, then constrained.
    let bulk: Vec<Fr> = (0..4)
        .map(|k| x_val.unwrap_or(Fr::ZERO) + Fr::from(k))
        .collect();
    let vars: Vec<Variable> = if cs.is_witness_generator() {
        cs.extend_aux(&bulk);
        let end = cs.aux_slice().len();
        (end - bulk.len()..end)
            .map(|i| Variable::new_unchecked(Index::Aux(i)))
            .collect()
    } else {
        let mut vars = Vec::new();
        for b in &bulk {
            vars.push(cs.alloc(|| "bulk", || Ok(*b))?);
        }
        vars
    };
    for v in vars {
        cs.enforce(
            || "bulk",
            |lc| lc + (Fr::from(3), v),
            |lc| lc + CS::one(),
            |lc| lc + v + v + v,
        );
    }
    Ok(())
}

impl Circuit<Fr> for Mixed {
    fn synthesize<CS: ConstraintSystem<Fr>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        part(cs, self.seed, self.unsatisfied)?;
        if CS::is_extensible() {
            let mut subs = Vec::new();
            for p in 0..self.parts {
                let mut sub = CS::new();
                sub.alloc_input(|| "temp ONE", || Ok(Fr::ONE))?;
                part(&mut sub, self.seed.map(|s| s + 100 * (p as u64 + 1)), false)?;
                subs.push(sub);
            }
            for sub in &subs {
                cs.extend(sub);
            }
        } else {
            for p in 0..self.parts {
                part(cs, self.seed.map(|s| s + 100 * (p as u64 + 1)), false)?;
            }
        }
        Ok(())
    }
}

fn circuit(seed: u64) -> Mixed {
    Mixed {
        seed: Some(seed),
        parts: 3,
        unsatisfied: false,
    }
}

fn blank() -> Mixed {
    Mixed {
        seed: None,
        parts: 3,
        unsatisfied: false,
    }
}

fn params() -> Parameters<Bls12> {
    generate_random_parameters::<Bls12, _, _>(blank(), &mut OsRng).unwrap()
}

/// Parameters of a smaller circuit of the same kind.
fn other_params() -> Parameters<Bls12> {
    let smaller = Mixed {
        seed: None,
        parts: 1,
        unsatisfied: false,
    };
    generate_random_parameters::<Bls12, _, _>(smaller, &mut OsRng).unwrap()
}

fn abc(p: &SynthesizedPartition) -> &Abc {
    p.abc()
}

#[test]
fn the_precompiled_partition_is_the_recorded_one_bit_for_bit() {
    let matrices = CircuitMatrices::record(blank(), 0).unwrap();
    assert!(
        matrices.num_coefficients() > 2,
        "the circuit has coefficients other than ±1"
    );
    for seed in [1, 7] {
        let want = synthesize_circuit(4, circuit(seed), CircuitShape::default()).unwrap();
        let got = synthesize_precompiled(4, circuit(seed), &matrices).unwrap();
        assert_eq!(got.index(), 4);
        assert_eq!(got.num_constraints(), want.num_constraints());
        assert_eq!(got.inputs, want.inputs);
        assert_eq!(got.aux, want.aux);
        assert_eq!(abc(&got).a, abc(&want).a);
        assert_eq!(abc(&got).b, abc(&want).b);
        assert_eq!(abc(&got).c, abc(&want).c);
        assert_eq!(got.densities(), want.densities());
    }
}

#[test]
fn matrices_match_the_parameters_made_from_the_same_blank_circuit() {
    let matrices = CircuitMatrices::record(blank(), 0).unwrap();
    matrices.check_against(&params()).unwrap();
    let other = other_params();
    let err = matrices.check_against(&other).unwrap_err().to_string();
    assert!(err.contains("bases"), "{err}");
}

#[test]
fn a_witness_of_another_circuit_is_refused() {
    let matrices = CircuitMatrices::record(blank(), 0).unwrap();
    let smaller = Mixed {
        seed: Some(1),
        parts: 1,
        unsatisfied: false,
    };
    let err = synthesize_precompiled(0, smaller, &matrices)
        .unwrap_err()
        .to_string();
    assert!(err.contains("pre-compiled circuit"), "{err}");
}

#[test]
fn a_panicking_circuit_is_a_synthesis_error() {
    struct Panics;
    impl Circuit<Fr> for Panics {
        fn synthesize<CS: ConstraintSystem<Fr>>(self, _: &mut CS) -> Result<(), SynthesisError> {
            panic!("boom")
        }
    }
    let matrices = CircuitMatrices::record(blank(), 0).unwrap();
    let err = synthesize_precompiled(2, Panics, &matrices).unwrap_err();
    assert!(
        matches!(&err, ProverError::Synthesis { partition: 2, reason } if reason.contains("boom")),
        "{err}"
    );
    assert!(CircuitMatrices::record(Panics, 0).is_err());
}

fn file(dir: &tempfile::TempDir, identity: &str) -> MatricesFile {
    MatricesFile {
        path: dir.path().join("mixed.r1cs"),
        identity: identity.into(),
    }
}

#[test]
fn a_file_reads_back_as_the_same_matrices() {
    let dir = tempfile::tempdir().unwrap();
    let params = params();
    let f = file(&dir, "mixed v1");
    assert!(f.read(&params).unwrap().is_none(), "no file yet");
    let matrices = CircuitMatrices::record(blank(), 0).unwrap();
    let bytes = f.write(&matrices).unwrap();
    assert_eq!(bytes, std::fs::metadata(&f.path).unwrap().len());
    assert_eq!(f.read(&params).unwrap().unwrap(), matrices);
}

#[test]
fn a_damaged_truncated_or_stale_file_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let params = params();
    let f = file(&dir, "mixed v1");
    let matrices = CircuitMatrices::record(blank(), 0).unwrap();
    f.write(&matrices).unwrap();
    let good = std::fs::read(&f.path).unwrap();
    let refused = |bytes: &[u8], f: &MatricesFile| {
        std::fs::write(&f.path, bytes).unwrap();
        f.read(&params).unwrap_err().to_string()
    };

    // One bit flipped in the last matrix's terms (B's): only the digest can tell.
    let mut flipped = good.clone();
    let at = good.len() - 40;
    flipped[at] ^= 1;
    assert!(refused(&flipped, &f).contains("digest"));

    assert!(refused(&good[..good.len() - 7], &f).contains("bytes long"));

    let mut version = good.clone();
    version[8] = 99;
    assert!(refused(&version, &f).contains("format version"));

    std::fs::write(&f.path, &good).unwrap();
    let newer = file(&dir, "mixed v2");
    assert!(refused(&good, &newer).contains("made for \"mixed v1\""));

    // A header that claims a huge row count is refused before anything is sized by it.
    let mut rows = good.clone();
    let rows_at = 8 + 4 + 4 + "mixed v1".len() + 16;
    rows[rows_at..rows_at + 8].copy_from_slice(&u64::MAX.to_le_bytes());
    assert!(refused(&rows, &f).contains("domain"));

    // Parameters of another circuit.
    std::fs::write(&f.path, &good).unwrap();
    let other = other_params();
    assert!(f.read(&other).is_err());
    assert_eq!(f.read(&params).unwrap().unwrap(), matrices);
}

#[test]
fn out_of_range_indices_are_refused() {
    let mut m = CircuitMatrices::record(blank(), 0).unwrap();
    m.b.terms[0].var = (m.num_aux + 5) as u32;
    assert!(m
        .check_indices()
        .unwrap_err()
        .to_string()
        .contains("beyond the circuit"));
    let mut m = CircuitMatrices::record(blank(), 0).unwrap();
    m.b.starts[1] = u32::MAX;
    assert!(m.check_indices().is_err());
}

#[test]
fn a_witness_that_does_not_satisfy_the_circuit_gives_no_proof() {
    // c = a∘b stands in for C·w; for an unsatisfying witness the proof must still fail.
    let params = crate::LoadedParams::from_parameters(
        crate::CircuitId::parse("wpost-2k").unwrap(),
        params(),
    );
    let matrices = CircuitMatrices::record(blank(), 0).unwrap();
    let prove = |circuit: Mixed| {
        let p = synthesize_precompiled(0, circuit, &matrices).unwrap();
        crate::groth16::prove_partition(
            p,
            &params,
            crate::groth16::Randomness::random(),
            &mut |_| {},
        )
    };
    assert!(prove(circuit(3)).is_ok(), "a satisfying witness proves");
    let bad = Mixed {
        unsatisfied: true,
        ..circuit(3)
    };
    let err = prove(bad).unwrap_err().to_string();
    assert!(err.contains("does not verify"), "{err}");
}
