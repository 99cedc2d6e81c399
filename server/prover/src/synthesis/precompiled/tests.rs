//! The pre-compiled path against the recording constraint system on a small circuit that uses
//! what real circuits do ([`crate::synthesis::test_circuit`]), and the file's checks.

use bellperson::groth16::{generate_random_parameters, Parameters};
use bellperson::{Circuit, ConstraintSystem, SynthesisError};
use blstrs::{Bls12, Scalar as Fr};
use rand::rngs::OsRng;

use super::*;
use crate::synthesis::test_circuit::{blank, circuit, Mixed};
use crate::synthesis::{synthesize_circuit_with_c, CircuitShape};

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
        let want = synthesize_circuit_with_c(4, circuit(seed), CircuitShape::default()).unwrap();
        let got = synthesize_precompiled(4, circuit(seed), &matrices).unwrap();
        assert_eq!(got.index(), 4);
        assert_eq!(got.num_constraints(), want.num_constraints());
        assert_eq!(got.inputs, want.inputs);
        assert_eq!(got.aux, want.aux);
        assert_eq!(abc(&got).a, abc(&want).a);
        assert_eq!(abc(&got).b, abc(&want).b);
        // No c is kept: the device phase forms a∘b, which is the recorded C·w.
        assert_eq!(abc(&got).c, None);
        assert!(abc(&want).c.is_some());
        assert_eq!(abc(&got).c_values(), abc(&want).c_values());
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

#[cfg(feature = "bench")]
#[test]
fn a_benchmarks_file_reads_back_without_parameters_and_a_damaged_one_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let f = file(&dir, "synthetic v1");
    assert!(f.read_without_params().unwrap().is_none(), "no file yet");
    let matrices = CircuitMatrices::record(blank(), 0).unwrap();
    f.write(&matrices).unwrap();
    assert_eq!(f.read_without_params().unwrap().unwrap(), matrices);
    let good = std::fs::read(&f.path).unwrap();
    // Its length and digest are still checked, and its rows are bounded by its length.
    std::fs::write(&f.path, &good[..good.len() - 7]).unwrap();
    assert!(f.read_without_params().is_err());
    let mut rows = good.clone();
    let rows_at = 8 + 4 + 4 + "synthetic v1".len() + 16;
    rows[rows_at..rows_at + 8].copy_from_slice(&u64::MAX.to_le_bytes());
    std::fs::write(&f.path, &rows).unwrap();
    let err = f.read_without_params().unwrap_err().to_string();
    assert!(err.contains("bytes long"), "{err}");
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
