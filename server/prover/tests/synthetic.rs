//! The device phase on a small synthetic circuit: our proof must verify with bellperson's stock
//! verifier, a wrong public input must be rejected, a panicking circuit must become an error, and
//! the a/b/c evaluations are released before the first MSM (or dropped by hand, leaving the
//! witness).

use bellperson::groth16::{generate_random_parameters, prepare_verifying_key, verify_proof};
use bellperson::{Circuit, ConstraintSystem, SynthesisError};
use blstrs::{Bls12, Scalar as Fr};
use ff::Field;
use rand::rngs::OsRng;
use std::sync::Mutex;

use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective};
use snarkd_prover::groth16::{
    prove_partition_with, CpuOps, DeviceOps, PhaseHooks, Randomness, Scalars, CPU_STEP_POINTS,
};
use snarkd_prover::synthesis::Abc;
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

/// A step of the device phase, in the order [`LoggingOps`] and the release callback saw it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Event {
    ComputeH,
    AbcReleased(u64),
    MsmG1(usize),
    MsmG2(usize),
    StepDone,
}

/// [`CpuOps`] that logs each step as it starts, with multiexp steps of `.1` points at most.
struct LoggingOps<'a>(&'a Mutex<Vec<Event>>, usize);

impl DeviceOps for LoggingOps<'_> {
    fn compute_h(&self, abc: Abc) -> snarkd_prover::Result<Vec<Fr>> {
        self.0.lock().unwrap().push(Event::ComputeH);
        CpuOps.compute_h(abc)
    }
    fn msm_g1(&self, bases: &[G1Affine], s: Scalars<'_>) -> snarkd_prover::Result<G1Projective> {
        self.0.lock().unwrap().push(Event::MsmG1(bases.len()));
        CpuOps.msm_g1(bases, s)
    }
    fn msm_g2(&self, bases: &[G2Affine], s: Scalars<'_>) -> snarkd_prover::Result<G2Projective> {
        self.0.lock().unwrap().push(Event::MsmG2(bases.len()));
        CpuOps.msm_g2(bases, s)
    }
    fn step_points(&self) -> usize {
        self.1
    }
}

/// Logs the a/b/c release and the step boundaries.
struct LoggingHooks<'a>(&'a Mutex<Vec<Event>>);

impl PhaseHooks for LoggingHooks<'_> {
    fn abc_released(&mut self, bytes: u64) {
        self.0.lock().unwrap().push(Event::AbcReleased(bytes));
    }
    fn step_done(&mut self) {
        self.0.lock().unwrap().push(Event::StepDone);
    }
}

fn chain(k: usize) -> (PowerChain, [Fr; 2]) {
    let (x, y) = (Fr::random(OsRng), Fr::random(OsRng));
    let c = PowerChain {
        x: Some(x),
        y: Some(y),
        k,
        panic: false,
    };
    (c, [y, PowerChain::output(x, y, k)])
}

#[test]
fn abc_are_released_after_h_and_before_the_first_msm() {
    let k = 200;
    let params = params(k);
    let (circuit, inputs) = chain(k);
    let partition = synthesize_circuit(0, circuit, CircuitShape::default()).unwrap();
    let abc = partition.abc_bytes();

    let events = Mutex::new(Vec::new());
    let (proof, _) = prove_partition_with(
        &LoggingOps(&events, CPU_STEP_POINTS),
        partition,
        &params,
        Randomness::random(),
        &mut |b| events.lock().unwrap().push(Event::AbcReleased(b)),
    )
    .unwrap();
    let events = events.into_inner().unwrap();

    let p = params.parameters();
    assert_eq!(
        events,
        [
            Event::ComputeH,
            Event::AbcReleased(abc),
            Event::MsmG1(p.h.len()),
            Event::MsmG1(p.l.len()),
            Event::MsmG1(p.a.len()),
            Event::MsmG1(p.b_g1.len()),
            Event::MsmG2(p.b_g2.len()),
        ],
        "H, then the a/b/c release, then the H, L, A, B MSMs"
    );
    let pvk = prepare_verifying_key(params.verifying_key());
    assert!(verify_proof(&pvk, &proof, &inputs).unwrap());
}

/// A multiexp longer than a step is cut into steps with a preemption point between each two,
/// and the proof made of the pieces verifies.
#[test]
fn multiexps_run_in_bounded_steps_with_a_preemption_point_after_each() {
    let k = 60;
    let params = params(k);
    let (circuit, inputs) = chain(k);
    let partition = synthesize_circuit(0, circuit, CircuitShape::default()).unwrap();
    let step = 16;
    let events = Mutex::new(Vec::new());
    let (proof, _) = prove_partition_with(
        &LoggingOps(&events, step),
        partition,
        &params,
        Randomness::random(),
        &mut LoggingHooks(&events),
    )
    .unwrap();
    let events = events.into_inner().unwrap();

    let p = params.parameters();
    let lens = [p.h.len(), p.l.len(), p.a.len(), p.b_g1.len()];
    assert!(
        lens.iter().any(|&n| n > 2 * step),
        "the test needs a multiexp of several steps"
    );
    let msms: Vec<Event> = events
        .iter()
        .copied()
        .filter(|e| matches!(e, Event::MsmG1(_) | Event::MsmG2(_)))
        .collect();
    let mut expected = Vec::new();
    for n in lens {
        expected.extend(
            (0..n)
                .step_by(step)
                .map(|s| Event::MsmG1((n - s).min(step))),
        );
    }
    expected.extend(
        (0..p.b_g2.len())
            .step_by(step)
            .map(|s| Event::MsmG2((p.b_g2.len() - s).min(step))),
    );
    assert_eq!(
        msms, expected,
        "each multiexp in steps of at most {step} points"
    );
    // A preemption point after H and after every multiexp step but the phase's last.
    let steps = events.iter().filter(|e| **e == Event::StepDone).count();
    assert_eq!(steps, 1 + expected.len() - 1);
    assert_ne!(events.last(), Some(&Event::StepDone));
    let pvk = prepare_verifying_key(params.verifying_key());
    assert!(verify_proof(&pvk, &proof, &inputs).unwrap());
}

#[test]
fn releasing_abc_frees_exactly_the_abc_bytes_and_keeps_the_witness() {
    let k = 60;
    let (circuit, inputs) = chain(k);
    let partition = synthesize_circuit(0, circuit, CircuitShape::default()).unwrap();
    let (total, abc, witness) = (
        partition.size_bytes(),
        partition.abc_bytes(),
        partition.witness_bytes(),
    );
    assert!(abc > 0);
    assert_eq!(total, witness + abc);

    // A partition always holds its a/b/c; the device phase takes them apart and drops them.
    let (kept, released) = partition.into_parts();
    assert_eq!(released.size_bytes(), abc);
    drop(released);
    assert_eq!(kept.witness_bytes(), total - abc, "exactly a/b/c are freed");
    assert_eq!(kept.witness_bytes(), witness);
    assert_eq!(kept.public_inputs(), &inputs);
}

/// Asks the phase to stop once it has passed `after` step boundaries.
struct StopAfter {
    steps: usize,
    after: usize,
}

impl PhaseHooks for StopAfter {
    fn abc_released(&mut self, _: u64) {}
    fn step_done(&mut self) {
        self.steps += 1;
    }
    fn stop_requested(&self) -> bool {
        self.steps >= self.after
    }
}

/// A phase asked to stop ends at the next step boundary with `Stopped` and no proof; one never
/// asked runs to its proof.
#[test]
fn a_phase_asked_to_stop_ends_at_the_next_step_boundary() {
    let k = 60;
    let params = params(k);
    for after in [1, 3] {
        let (circuit, _) = chain(k);
        let partition = synthesize_circuit(0, circuit, CircuitShape::default()).unwrap();
        let events = Mutex::new(Vec::new());
        let mut hooks = StopAfter { steps: 0, after };
        let result = prove_partition_with(
            &LoggingOps(&events, 16),
            partition,
            &params,
            Randomness::random(),
            &mut hooks,
        );
        assert!(matches!(result, Err(ProverError::Stopped)), "{result:?}");
        assert_eq!(
            hooks.steps, after,
            "stopped at the first boundary after the ask"
        );
        let msms = events
            .into_inner()
            .unwrap()
            .iter()
            .filter(|e| matches!(e, Event::MsmG1(_) | Event::MsmG2(_)))
            .count();
        assert!(msms < 5, "the multiexps did not all run: {msms}");
    }
}
