//! The device phase on a small synthetic circuit: our proof must verify with bellperson's stock
//! verifier, a wrong public input must be rejected, and a panicking circuit must become an error.

use bellperson::groth16::{generate_random_parameters, prepare_verifying_key, verify_proof};
use bellperson::{Circuit, ConstraintSystem, SynthesisError};
use blstrs::{Bls12, Scalar as Fr};
use ff::Field;
use rand::rngs::OsRng;
use snarkd_prover::groth16::Randomness;
use snarkd_prover::synthesis::{synthesize_circuit, CircuitShape};
use snarkd_prover::{CircuitId, CpuBackend, DeviceBackend, LoadedParams, ProofKind, ProverError};

/// Proves knowledge of x with x^(2^k) * y = z for public z and y, with a sparse side chain of
/// booleans so that A/B densities are non-trivial.
#[derive(Clone)]
struct PowerChain {
    x: Option<Fr>,
    y: Option<Fr>,
    k: usize,
    panic: bool,
}

impl PowerChain {
    fn output(x: Fr, y: Fr, k: usize) -> Fr {
        let mut v = x;
        for _ in 0..k {
            v = v.square();
        }
        v * y
    }
}

impl Circuit<Fr> for PowerChain {
    fn synthesize<CS: ConstraintSystem<Fr>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let y_val = self.y;
        let y = cs.alloc_input(|| "y", || y_val.ok_or(SynthesisError::AssignmentMissing))?;
        let mut v_val = self.x;
        let mut v = cs.alloc(|| "x", || v_val.ok_or(SynthesisError::AssignmentMissing))?;
        for i in 0..self.k {
            let next_val = v_val.map(|v| v.square());
            let next = cs.alloc(
                || format!("sq {i}"),
                || next_val.ok_or(SynthesisError::AssignmentMissing),
            )?;
            cs.enforce(
                || format!("sq c {i}"),
                |lc| lc + v,
                |lc| lc + v,
                |lc| lc + next,
            );
            // A boolean that appears only in A and C (not in B) every third step.
            if i % 3 == 0 {
                let bit = cs.alloc(|| format!("bit {i}"), || Ok(Fr::from((i % 2) as u64)))?;
                cs.enforce(
                    || format!("bool {i}"),
                    |lc| lc + bit,
                    |lc| lc + CS::one() - bit,
                    |lc| lc,
                );
            }
            v = next;
            v_val = next_val;
        }
        if self.panic {
            panic!("synthetic circuit asked to panic");
        }
        let z_val = v_val.zip(y_val).map(|(v, y)| v * y);
        let z = cs.alloc_input(|| "z", || z_val.ok_or(SynthesisError::AssignmentMissing))?;
        cs.enforce(|| "z", |lc| lc + v, |lc| lc + y, |lc| lc + z);
        Ok(())
    }
}

fn params(k: usize) -> LoadedParams {
    let blank = PowerChain {
        x: None,
        y: None,
        k,
        panic: false,
    };
    let p = generate_random_parameters::<Bls12, _, _>(blank, &mut OsRng).unwrap();
    // The circuit id only labels the parameters here.
    LoadedParams::from_parameters(CircuitId::parse("winning-2k").unwrap(), p)
}

#[test]
fn our_proof_verifies_with_bellpersons_verifier() {
    let k = 1000;
    let params = params(k);
    let pvk = prepare_verifying_key(params.verifying_key());
    let (x, y) = (Fr::random(OsRng), Fr::random(OsRng));
    let z = PowerChain::output(x, y, k);
    let circuit = PowerChain {
        x: Some(x),
        y: Some(y),
        k,
        panic: false,
    };

    let partition = synthesize_circuit(0, circuit, CircuitShape::default()).unwrap();
    assert_eq!(partition.public_inputs(), &[y, z]);
    let total = partition.size_bytes();
    let abc = partition.abc_bytes();
    assert!(abc > 0 && abc < total);

    let mut released = None;
    let (proof, timings) = CpuBackend::new()
        .prove(partition, &params, Randomness::random(), &mut |b| {
            released = Some(b)
        })
        .unwrap();
    assert_eq!(
        released,
        Some(abc),
        "a/b/c release must be reported once with their size"
    );
    assert!(timings.msm > std::time::Duration::ZERO);

    assert!(
        verify_proof(&pvk, &proof, &[y, z]).unwrap(),
        "stock verifier rejected our proof"
    );
    assert!(
        !verify_proof(&pvk, &proof, &[y, z + Fr::ONE]).unwrap(),
        "wrong input accepted"
    );
}

#[test]
fn two_proofs_of_the_same_witness_differ_but_both_verify() {
    let k = 50;
    let params = params(k);
    let pvk = prepare_verifying_key(params.verifying_key());
    let (x, y) = (Fr::random(OsRng), Fr::random(OsRng));
    let z = PowerChain::output(x, y, k);
    let prove = || {
        let c = PowerChain {
            x: Some(x),
            y: Some(y),
            k,
            panic: false,
        };
        let p = synthesize_circuit(0, c, CircuitShape::default()).unwrap();
        CpuBackend::new()
            .prove(p, &params, Randomness::random(), &mut |_| {})
            .unwrap()
            .0
    };
    let (p1, p2) = (prove(), prove());
    assert_ne!(p1, p2, "r and s must be fresh per proof");
    assert!(verify_proof(&pvk, &p1, &[y, z]).unwrap());
    assert!(verify_proof(&pvk, &p2, &[y, z]).unwrap());
}

#[test]
fn a_panic_in_synthesis_is_an_error() {
    let c = PowerChain {
        x: Some(Fr::ONE),
        y: Some(Fr::ONE),
        k: 3,
        panic: true,
    };
    match synthesize_circuit(7, c, CircuitShape::default()) {
        Err(ProverError::Synthesis {
            partition: 7,
            reason,
        }) => assert!(reason.contains("asked to panic"), "{reason}"),
        other => panic!("expected a synthesis error, got {other:?}"),
    }
}

#[test]
fn parameters_of_another_circuit_are_refused() {
    let params = params(20);
    let c = PowerChain {
        x: Some(Fr::ONE),
        y: Some(Fr::ONE),
        k: 40,
        panic: false,
    };
    let p = synthesize_circuit(0, c, CircuitShape::default()).unwrap();
    let err = CpuBackend::new()
        .prove(p, &params, Randomness::random(), &mut |_| {})
        .unwrap_err();
    assert!(matches!(err, ProverError::ParamsShape(_)), "{err}");
    let _ = ProofKind::ALL;
}
