use bellperson::groth16::generate_parameters;
use bellperson::{Circuit, ConstraintSystem, SynthesisError};
use rand::rngs::OsRng;

use super::*;
use crate::synthesis::test_circuit::Mixed;

/// Big enough for several batches of every query (about 8,000 rows and variables, 300 inputs).
fn blank(parts: usize) -> Mixed {
    Mixed {
        seed: None,
        parts,
        unsatisfied: false,
    }
}

#[test]
fn the_setup_makes_bellpersons_parameters_bit_for_bit() {
    let waste = ToxicWaste::random(OsRng);
    let r1cs = FullR1cs::record(blank(300), 0).unwrap();
    let ours = groth16_setup(&r1cs, &waste).unwrap();
    let theirs = generate_parameters::<Bls12, _>(
        blank(300),
        G1Projective::generator(),
        G2Projective::generator(),
        waste.alpha,
        waste.beta,
        waste.gamma,
        waste.delta,
        waste.tau,
    )
    .unwrap();
    assert!(
        theirs.h.len() > 4096 && theirs.l.len() > 4096,
        "several batches"
    );
    assert!(ours.vk == theirs.vk, "verifying keys differ");
    for (name, a, b) in [
        ("H", &ours.h, &theirs.h),
        ("L", &ours.l, &theirs.l),
        ("A", &ours.a, &theirs.a),
        ("B in G1", &ours.b_g1, &theirs.b_g1),
    ] {
        assert_eq!(a.len(), b.len(), "{name} lengths");
        if let Some(i) = (0..a.len()).find(|&i| a[i] != b[i]) {
            panic!("{name}[{i}] differs");
        }
    }
    assert!(ours.b_g2 == theirs.b_g2, "B in G2 differs");
    assert!(ours == theirs);
}

#[test]
fn the_lagrange_basis_sums_to_one_and_interpolates_x() {
    let domain = Domain::for_len(1000).unwrap();
    assert_eq!(domain.size, 1024);
    let tau = Fr::random(OsRng);
    let z = tau.pow_vartime([1024u64]) - Fr::ONE;
    let all = lagrange_at(&domain, tau, z, 1024);
    assert_eq!(all.iter().sum::<Fr>(), Fr::ONE, "Σ Lᵣ(τ) = 1");
    // Σ ωʳ·Lᵣ(τ) interpolates X itself: τ.
    let omegas = powers(domain.omega, 1024, Fr::ONE);
    let x: Fr = omegas.iter().zip(&all).map(|(w, l)| *w * l).sum();
    assert_eq!(x, tau, "Σ ωʳ·Lᵣ(τ) = τ");
    assert_eq!(domain.omega.pow_vartime([1024u64]), Fr::ONE);
    assert_ne!(
        domain.omega.pow_vartime([512u64]),
        Fr::ONE,
        "a primitive root"
    );
}

/// A circuit with an aux variable no constraint uses.
struct Unconstrained;

impl Circuit<Fr> for Unconstrained {
    fn synthesize<CS: ConstraintSystem<Fr>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let x = cs.alloc(|| "x", || Ok(Fr::ONE))?;
        cs.alloc(|| "loose", || Ok(Fr::ONE))?;
        cs.enforce(|| "x·x = x", |lc| lc + x, |lc| lc + x, |lc| lc + x);
        Ok(())
    }
}

#[test]
fn an_unconstrained_variable_is_refused() {
    let r1cs = FullR1cs::record(Unconstrained, 0).unwrap();
    let Err(err) = groth16_setup(&r1cs, &ToxicWaste::random(OsRng)) else {
        panic!("a setup with an unconstrained variable was made");
    };
    assert!(
        matches!(&err, ProverError::Setup(why) if why.contains("unconstrained")),
        "{err}"
    );
}
