//! A device phase paused at a step boundary while another partition's whole device phase runs
//! on the same thread (what a device worker does when a deadline partition preempts it): both
//! proofs still verify, on the CPU and on OpenCL (PoCL's CPU device in CI).

use bellperson::groth16::Proof;
use blstrs::Bls12;
use snarkd_prover::groth16::{PhaseHooks, Randomness};
use snarkd_prover::{prepare, DeviceBackend, LoadedParams, ProofKind, SynthesizedPartition};

use crate::common::{env, params};

/// Hooks that run `other`'s device phase at step `at` of the phase they are given to.
struct Preempting<'a> {
    backend: &'a dyn DeviceBackend,
    other: Option<(SynthesizedPartition, &'a LoadedParams)>,
    other_proof: Option<Proof<Bls12>>,
    at: u32,
    steps: u32,
}

impl PhaseHooks for Preempting<'_> {
    fn abc_released(&mut self, _bytes: u64) {}

    fn step_done(&mut self) {
        self.steps += 1;
        if self.steps == self.at {
            let (partition, params) = self.other.take().expect("preempts once");
            let (proof, _) = self
                .backend
                .prove(partition, params, Randomness::random(), &mut |_| {})
                .expect("the preempting phase");
            self.other_proof = Some(proof);
        }
    }
}

/// `inner_steps`: the backend has step boundaries inside its FFT and multiexps too (the CPU's).
fn preempted_and_preempting_proofs_verify(backend: &dyn DeviceBackend, inner_steps: bool) {
    let fixtures = &env().fixtures;
    let wpost = prepare(fixtures.request(ProofKind::WindowPost)).unwrap();
    let winning = prepare(fixtures.request(ProofKind::WinningPost)).unwrap();
    let (wpost_params, winning_params) = (
        params(ProofKind::WindowPost),
        params(ProofKind::WinningPost),
    );
    // Step 3: part of the way (on OpenCL, the H polynomial and two multiexps done).
    let mut hooks = Preempting {
        backend,
        other: Some((winning.synthesize(0).unwrap(), &winning_params)),
        other_proof: None,
        at: 3,
        steps: 0,
    };
    let (proof, _) = backend
        .prove(
            wpost.synthesize(0).unwrap(),
            &wpost_params,
            Randomness::random(),
            &mut hooks,
        )
        .expect("the preempted phase");
    // After H and after each multiexp but the last; on the CPU also after each FFT pass and
    // after each group of multiexp windows.
    if inner_steps {
        assert!(hooks.steps > 5, "{} step boundaries", hooks.steps);
    } else {
        assert_eq!(
            hooks.steps, 5,
            "after H and after each multiexp but the last"
        );
    }
    wpost
        .finalize(&[proof], &wpost_params)
        .expect("the preempted WindowPoSt proof verifies");
    winning
        .finalize(&[hooks.other_proof.unwrap()], &winning_params)
        .expect("the preempting WinningPoSt proof verifies");
}

#[test]
fn a_preempted_partitions_proof_verifies_on_the_cpu() {
    preempted_and_preempting_proofs_verify(&snarkd_prover::CpuBackend::new(), true);
}

#[cfg(feature = "opencl")]
#[test]
fn a_preempted_partitions_proof_verifies_on_opencl() {
    use snarkd_prover::backend::opencl::list_devices;
    use snarkd_prover::backend::{OpenClBackend, OpenClOptions};
    let device = list_devices().into_iter().next().expect(
        "no OpenCL device: install an OpenCL runtime (PoCL: apt-get install pocl-opencl-icd)",
    );
    let backend = OpenClBackend::new(device, OpenClOptions::default()).expect("kernels build");
    preempted_and_preempting_proofs_verify(&backend, false);
}
