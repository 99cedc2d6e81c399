//! What a device worker does when a deadline partition preempts the phase it runs: the deadline
//! partition's whole device phase starts on a thread of its own at once, beside the running
//! phase, which goes on with the step it is in and then waits at its next step boundary until
//! the other has ended. Both proofs still verify, on the CPU and on OpenCL (PoCL's CPU device in
//! CI), with the two phases sharing the backend meanwhile.

use std::thread::{Scope, ScopedJoinHandle};

use bellperson::groth16::Proof;
use blstrs::Bls12;
use snarkd_prover::groth16::{PhaseHooks, Randomness};
use snarkd_prover::{prepare, DeviceBackend, LoadedParams, ProofKind, SynthesizedPartition};

use crate::common::{env, params};

type Preemptor<'scope> = ScopedJoinHandle<'scope, Proof<Bls12>>;

/// Hooks that start `other`'s device phase on a thread at step `at` of the phase they are given
/// to, and wait for it at the next step boundary.
struct Preempting<'scope, 'env> {
    scope: &'scope Scope<'scope, 'env>,
    backend: &'env dyn DeviceBackend,
    other: Option<(SynthesizedPartition, &'env LoadedParams)>,
    running: Option<Preemptor<'scope>>,
    other_proof: Option<Proof<Bls12>>,
    at: u32,
    steps: u32,
}

impl PhaseHooks for Preempting<'_, '_> {
    fn abc_released(&mut self, _bytes: u64) {}

    fn step_done(&mut self) {
        self.steps += 1;
        if let Some(running) = self.running.take() {
            self.other_proof = Some(running.join().expect("the preempting phase"));
        }
        if self.steps == self.at {
            let (partition, params) = self.other.take().expect("preempts once");
            let backend = self.backend;
            self.running = Some(self.scope.spawn(move || {
                let (proof, _) = backend
                    .prove(partition, params, Randomness::random(), &mut |_| {})
                    .expect("the preempting phase");
                proof
            }));
        }
    }
}

/// `inner_steps`: the backend has step boundaries inside its FFT and multiexps too (the CPU's).
fn preempted_and_preempting_proofs_verify(backend: &dyn DeviceBackend, inner_steps: bool) {
    let fixtures = &env().fixtures;
    let wpost = prepare(&fixtures.request(ProofKind::WindowPost)).unwrap();
    let winning = prepare(&fixtures.request(ProofKind::WinningPost)).unwrap();
    let (wpost_params, winning_params) = (
        params(ProofKind::WindowPost),
        params(ProofKind::WinningPost),
    );
    // Step 3: part of the way (on OpenCL, the H polynomial and two multiexps done).
    let (winning_partition, wpost_partition) =
        (winning.synthesize(0).unwrap(), wpost.synthesize(0).unwrap());
    let (proof, hooks) = std::thread::scope(|scope| {
        let mut hooks = Preempting {
            scope,
            backend,
            other: Some((winning_partition, &winning_params)),
            running: None,
            other_proof: None,
            at: 3,
            steps: 0,
        };
        let (proof, _) = backend
            .prove(
                wpost_partition,
                &wpost_params,
                Randomness::random(),
                &mut hooks,
            )
            .expect("the preempted phase");
        assert!(
            hooks.running.is_none(),
            "the preempting phase ended at a step boundary"
        );
        (proof, (hooks.steps, hooks.other_proof))
    });
    let (steps, other_proof) = hooks;
    // After H and after each multiexp but the last; on the CPU also after each FFT pass and
    // after each group of multiexp windows.
    if inner_steps {
        assert!(steps > 5, "{steps} step boundaries");
    } else {
        assert_eq!(steps, 5, "after H and after each multiexp but the last");
    }
    wpost
        .finalize(&[proof], &wpost_params)
        .expect("the preempted WindowPoSt proof verifies");
    winning
        .finalize(&[other_proof.unwrap()], &winning_params)
        .expect("the preempting WinningPoSt proof verifies");
}

#[test]
fn a_preempted_partitions_proof_verifies_on_the_cpu() {
    preempted_and_preempting_proofs_verify(&snarkd_prover::CpuBackend::new(), true);
}

#[cfg(feature = "opencl")]
#[test]
fn a_preempted_partitions_proof_verifies_on_opencl() {
    use snarkd_prover::backend::opencl::{kernel_cache_from_env, list_devices};
    use snarkd_prover::backend::{OpenClBackend, OpenClOptions};
    let device = list_devices().into_iter().next().expect(
        "no OpenCL device: install an OpenCL runtime (PoCL: apt-get install pocl-opencl-icd)",
    );
    let options = OpenClOptions {
        kernel_cache: kernel_cache_from_env(),
        ..OpenClOptions::default()
    };
    let backend = OpenClBackend::new(device, options).expect("kernels build");
    preempted_and_preempting_proofs_verify(&backend, false);
}
