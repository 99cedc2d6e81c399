//! The OpenCL device phase on real 2 KiB partitions (PoCL's CPU device in CI): proofs of all four
//! kinds verify with filecoin-proofs' verifiers (WindowPoSt's through the daemon, in
//! `server/tests/opencl_proofs.rs`); a circuit's bases go up once per device (counted), so a
//! partition after the first sends little more than its a, b and witness, and its multiexp steps
//! follow each other without the device idling between them (a phase about to wait at a boundary
//! lets their workspaces go first); with a pool too small for the bases they are streamed and the
//! proofs still verify; and the split multiexp over a real witness's A scalars, selected on the
//! device through the circuit's map, equals blst's on the CPU; a partition proved on the device
//! keeps no c on the host, and one that runs on the CPU asks for the host memory of its FFTs first;
//! B's G2 multiexp on the CPU beside the device keeps its bases off the device and still gives a
//! verified proof. A binary of its own (PoRep on PoCL takes minutes): the filecoin binary's
//! environment and parameters are shared through `filecoin/common.rs`.
#![cfg(feature = "opencl")]

#[path = "filecoin/common.rs"]
#[allow(dead_code)]
mod common;

use std::sync::OnceLock;

use blstrs::Scalar as Fr;
use group::Curve;
use snarkd_prover::backend::opencl::{kernel_cache_from_env, list_devices};
use snarkd_prover::backend::{OpenClBackend, OpenClOptions};
use snarkd_prover::groth16::{msm_g1, DeviceCounters, Randomness, ScalarBytes};
use snarkd_prover::{prepare, DeviceBackend, LoadedParams, PreparedJob, ProofKind};

use common::{env, params};

/// A backend on the first device with `options`, its kernels kept where the daemon's setting
/// says when it is set (scripts/test.sh sets it, so only the first test binary compiles them).
fn backend_with(options: OpenClOptions) -> OpenClBackend {
    let device = list_devices().into_iter().next().expect(
        "no OpenCL device: install an OpenCL runtime (PoCL: apt-get install pocl-opencl-icd)",
    );
    let options = OpenClOptions {
        kernel_cache: kernel_cache_from_env(),
        ..options
    };
    OpenClBackend::new(device, options).expect("kernels build")
}

/// The job of `kind` from the fixtures.
fn job(kind: ProofKind) -> PreparedJob {
    prepare(&env().fixtures.request(kind)).expect("fixture request")
}

/// Proves every partition of `job` on `backend`, returning the proofs and each partition's
/// device counts.
fn prove_on(
    backend: &OpenClBackend,
    job: &PreparedJob,
    params: &LoadedParams,
) -> (
    Vec<bellperson::groth16::Proof<blstrs::Bls12>>,
    Vec<DeviceCounters>,
) {
    (0..job.num_partitions())
        .map(|i| {
            let partition = job.synthesize(i).expect("synthesis");
            let (proof, timings) = backend
                .prove(partition, params, Randomness::random(), &mut |_| {})
                .expect("device phase");
            assert_eq!(timings.faults, 0);
            (proof, timings.counters)
        })
        .unzip()
}

/// Host bytes of a partition's a, b and witness: what must go up for it.
fn partition_bytes(job: &PreparedJob, index: usize) -> u64 {
    let p = job.synthesize(index).expect("synthesis");
    let (inputs, aux) = p.witness();
    ((p.abc().a.len() + p.abc().b.len() + inputs.len() + aux.len()) * 32) as u64
}

fn params_bytes(params: &LoadedParams) -> u64 {
    let p = params.parameters();
    ((p.h.len() + p.l.len() + p.a.len() + p.b_g1.len()) * 96 + p.b_g2.len() * 192) as u64
}

/// One backend with resident bases for the whole binary (its kernels are built once).
fn resident_backend() -> &'static OpenClBackend {
    static B: OnceLock<OpenClBackend> = OnceLock::new();
    B.get_or_init(|| backend_with(OpenClOptions::default()))
}

fn proves_and_verifies(kind: ProofKind) {
    let params = params(kind);
    let job = job(kind);
    let (proofs, counts) = prove_on(resident_backend(), &job, &params);
    job.finalize(&proofs, &params)
        .expect("filecoin-proofs' verifier accepts the OpenCL proofs");
    assert!(
        counts.iter().all(|c| c.launches > 0 && c.host_waits > 0),
        "{counts:?}"
    );
}

// WinningPoSt's proofs on the device are verified by the bases test below, WindowPoSt's by the
// daemon's (`server/tests/opencl_proofs.rs`): PoCL's minutes go to the kinds proved nowhere else.

#[test]
fn snap_deals_proved_on_opencl_verifies() {
    proves_and_verifies(ProofKind::SnapDealsUpdate);
}

#[test]
fn porep_proved_on_opencl_verifies() {
    proves_and_verifies(ProofKind::PorepSealCommit);
}

#[test]
fn bases_go_up_once_per_device_and_a_later_partition_sends_its_vectors_alone() {
    let kind = ProofKind::WinningPost;
    let params = params(kind);
    let job = job(kind);
    let backend = backend_with(OpenClOptions::default());
    let (first_proofs, first) = prove_on(&backend, &job, &params);
    let (second_proofs, second) = prove_on(&backend, &job, &params);
    job.finalize(&first_proofs, &params)
        .expect("first verifies");
    job.finalize(&second_proofs, &params)
        .expect("second verifies");
    let bases = params_bytes(&params);
    let own = partition_bytes(&job, 0);
    assert!(
        first[0].bytes_to_device >= bases + own,
        "the first partition takes the bases up: {:?}, bases {bases}, own {own}",
        first[0]
    );
    assert!(
        second[0].bytes_to_device as f64 <= 1.1 * own as f64,
        "a later partition sends at most 1.1 × (a + b + witness): {:?}, own {own}",
        second[0]
    );
    assert!(backend.resident_bytes() >= bases);
    assert!(
        backend.pinned_bytes() > 0,
        "the bases and vectors go up through pinned memory"
    );
    // The host waits once for h and once for each multiexp chunk's read-back (its counts, sums
    // and results together); WinningPoSt's five multiexps take one chunk each.
    assert!(
        second[0].host_waits <= 1 + 5,
        "one wait for h and one a multiexp: {:?}",
        second[0]
    );
    // Each multiexp step's last chunk is waited for with the next step's first behind it: the
    // device idles when h is done, and at the end of the G1 multiexps and of the G2 one.
    assert_eq!(second[0].idle_waits, 3, "{:?}", second[0]);
    // h and the sums come back, not the vectors: far less than went up.
    assert!(second[0].bytes_from_device < own / 4, "{:?}", second[0]);

    // A phase that will wait at its step boundaries (preempted, or held for a deadline
    // partition) lets its multiexp pipelines go first: at every boundary between multiexp
    // steps the pool holds less than when the phase goes straight on, and the proof verifies.
    let watched = |parking: bool| {
        let mut hooks = Watching {
            backend: &backend,
            parking,
            used: Vec::new(),
        };
        let partition = job.synthesize(0).expect("synthesis");
        let (proof, timings) = backend
            .prove(partition, &params, Randomness::random(), &mut hooks)
            .expect("device phase");
        (proof, timings.counters, hooks.used)
    };
    assert_eq!(job.num_partitions(), 1);
    let (_, _, going_on) = watched(false);
    let (proof, parked, parked_used) = watched(true);
    job.finalize(&[proof], &params)
        .expect("a parked phase's proof verifies");
    assert_eq!(going_on.len(), parked_used.len());
    // After h no pipeline is open yet, and after B's G1 step its pipeline has gone and G2's
    // is still to come; between the G1 multiexps' steps (H, L, A, B) it runs on.
    for (i, (held, parked)) in going_on.iter().zip(&parked_used).enumerate() {
        let between_g1_steps = (1..=3).contains(&i);
        assert!(
            parked < held || (!between_g1_steps && parked == held),
            "boundary {i}: {parked} parked, {held} going on"
        );
    }
    assert!(parked.idle_waits > second[0].idle_waits, "{parked:?}");
}

/// Hooks that note the device pool's use at each step boundary, and say the phase will wait
/// there when `parking`.
struct Watching<'b> {
    backend: &'b OpenClBackend,
    parking: bool,
    used: Vec<u64>,
}

impl snarkd_prover::groth16::PhaseHooks for Watching<'_> {
    fn abc_released(&mut self, _bytes: u64) {}

    fn step_done(&mut self) {
        self.used.push(self.backend.memory().used());
    }

    fn will_wait(&self) -> bool {
        self.parking
    }
}

#[test]
fn bases_are_streamed_when_the_pool_cannot_keep_them_and_the_proofs_still_verify() {
    let kind = ProofKind::WinningPost;
    let params = params(kind);
    let job = job(kind);
    let bases = params_bytes(&params);
    // Room for a partition's vectors and a few chunks, not for the bases beside them.
    let backend = backend_with(OpenClOptions {
        pool_bytes: Some(bases / 2 + (256 << 20)),
        max_chunk_terms: 1 << 14,
        ..OpenClOptions::default()
    });
    let mut all = Vec::new();
    for _ in 0..2 {
        let (proofs, counts) = prove_on(&backend, &job, &params);
        job.finalize(&proofs, &params)
            .expect("streamed proofs verify");
        all.extend(counts);
    }
    assert_eq!(backend.resident_bytes(), 0, "nothing kept");
    assert!(
        backend.pinned_bytes() > 0,
        "streamed bases go up through pinned memory"
    );
    for c in &all {
        assert!(
            c.bytes_to_device >= bases,
            "each partition streams the bases: {c:?}"
        );
        // Streamed over several chunks a step, the steps still follow each other unbroken.
        assert_eq!(c.idle_waits, 3, "{c:?}");
    }
    assert_eq!(backend.memory().used(), 0, "every reservation is returned");
}

#[test]
fn the_split_multiexp_of_a_real_witness_equals_the_cpus() {
    let kind = ProofKind::WinningPost;
    let params = params(kind);
    let partition = job(kind).synthesize(0).expect("synthesis");
    let (inputs, aux) = partition.witness();
    let (a_aux, _, _) = partition.densities();
    let a_scalars: Vec<Fr> = inputs
        .iter()
        .copied()
        .chain(a_aux.ones().map(|i| aux[i]))
        .collect();
    let bases = &params.parameters().a;
    assert_eq!(bases.len(), a_scalars.len());
    let ones = a_scalars.iter().filter(|s| **s == Fr::from(1u64)).count();
    assert!(ones > 0, "the witness has bits");
    let want = msm_g1(bases, ScalarBytes::dense(&a_scalars).view()).to_affine();
    for resident in [true, false] {
        let (got, _) = resident_backend()
            .msm_g1(bases, &a_scalars, resident)
            .expect("device msm");
        assert_eq!(got.to_affine(), want, "resident {resident}");
    }
}

/// Hooks that answer each ask for more host memory with `grant`, recording the asks.
struct Budgeted {
    grant: bool,
    asked: Vec<u64>,
}

impl snarkd_prover::groth16::PhaseHooks for Budgeted {
    fn abc_released(&mut self, _bytes: u64) {}

    fn hold_at_least(&mut self, bytes: u64) -> bool {
        self.asked.push(bytes);
        self.grant
    }
}

#[test]
fn a_partition_on_a_device_keeps_no_c_and_a_step_on_the_cpu_asks_for_its_memory_first() {
    use snarkd_prover::filecoin::estimate::{host_phase, PhaseOn};
    let kind = ProofKind::WinningPost;
    let params = params(kind);
    let job = job(kind);
    let device = resident_backend();
    assert_eq!(device.phase_on(), PhaseOn::Device);
    // The device computes H from a and b: nothing asked, and no c was ever on the host.
    let partition = job.synthesize(0).expect("synthesis");
    assert!(partition.abc().c.is_none());
    let mut hooks = Budgeted {
        grant: false,
        asked: Vec::new(),
    };
    let (proof, _) = device
        .prove(partition, &params, Randomness::random(), &mut hooks)
        .expect("the device phase needs no more host memory");
    job.finalize(&[proof], &params).expect("verifies");
    assert_eq!(hooks.asked, Vec::<u64>::new());

    // A pool too small for the witness: the partition runs on the CPU, which asks first for
    // the host FFT's peak (what the CPU backend's estimate reserves).
    let no_room = backend_with(OpenClOptions {
        pool_bytes: Some(4 << 10),
        ..OpenClOptions::default()
    });
    let partition = job.synthesize(0).expect("synthesis");
    let fft_peak = host_phase(partition.shape()).fft_peak_bytes;
    let err = no_room
        .prove(partition, &params, Randomness::random(), &mut hooks)
        .expect_err("refused memory");
    assert!(err.to_string().contains("host memory"), "{err}");
    assert_eq!(hooks.asked, vec![fft_peak]);
    hooks.grant = true;
    let partition = job.synthesize(0).expect("synthesis");
    let (proof, _) = no_room
        .prove(partition, &params, Randomness::random(), &mut hooks)
        .expect("granted memory");
    job.finalize(&[proof], &params).expect("verifies");
    assert_eq!(hooks.asked[1], fft_peak);
}

/// Hooks for a phase with B's G2 multiexp on the host: each ask for more host memory answered
/// with `grant` and recorded (`more`: [`PhaseHooks::hold_more`]'s, `asked`: the others); a stop
/// asked from the `stop_at`th step boundary on.
///
/// [`PhaseHooks::hold_more`]: snarkd_prover::groth16::PhaseHooks::hold_more
struct Beside {
    grant: bool,
    stop_at: Option<usize>,
    boundaries: usize,
    more: Vec<u64>,
    asked: Vec<u64>,
}

impl snarkd_prover::groth16::PhaseHooks for Beside {
    fn abc_released(&mut self, _bytes: u64) {}

    fn hold_at_least(&mut self, bytes: u64) -> bool {
        self.asked.push(bytes);
        self.grant
    }

    fn hold_more(&mut self, bytes: u64) -> bool {
        self.more.push(bytes);
        self.grant
    }

    fn step_done(&mut self) {
        self.boundaries += 1;
    }

    fn stop_requested(&self) -> bool {
        self.stop_at.is_some_and(|at| self.boundaries >= at)
    }
}

#[test]
fn b_g2_on_the_cpu_runs_beside_the_device_with_its_bases_kept_off_it() {
    use snarkd_prover::groth16::{b2_host_bytes, G2On};
    let kind = ProofKind::WinningPost;
    let params = params(kind);
    let job = job(kind);
    let terms = params.parameters().b_g2.len() as u64;
    assert!(terms > 0);
    // B's G2 bases on the device, and what its multiexp holds on the host.
    let (g2_bytes, b2_host) = (terms * 192, b2_host_bytes(terms as usize));
    let on_device = backend_with(OpenClOptions::default());
    let beside = backend_with(OpenClOptions {
        b_g2: G2On::Cpu,
        ..OpenClOptions::default()
    });
    let hooks = |grant, stop_at| Beside {
        grant,
        stop_at,
        boundaries: 0,
        more: Vec::new(),
        asked: Vec::new(),
    };
    let prove = |backend: &OpenClBackend, hooks: &mut Beside| {
        let partition = job.synthesize(0).expect("synthesis");
        backend.prove(partition, &params, Randomness::random(), hooks)
    };

    // The same partition, each backend's first: B's G2 bases do not go up beside, and the rest
    // of what goes up is the same, byte for byte.
    let mut h = hooks(true, None);
    let (device_proof, device) = prove(&on_device, &mut h).expect("device phase");
    assert_eq!(
        (h.more, h.asked),
        (vec![], vec![]),
        "B's G2 on the device asks for no host memory"
    );
    let mut h = hooks(true, None);
    let (beside_proof, first) = prove(&beside, &mut h).expect("device phase, B's G2 on the cpu");
    assert_eq!(
        (h.more, h.asked),
        (vec![b2_host], vec![]),
        "the room for B's scalars, asked first, on top of the reservation"
    );
    job.finalize(&[device_proof], &params).expect("verifies");
    job.finalize(&[beside_proof], &params)
        .expect("B's G2 from the cpu verifies");
    assert_eq!(
        device.counters.bytes_to_device - first.counters.bytes_to_device,
        g2_bytes,
        "{device:?} {first:?}"
    );
    assert_eq!(
        on_device.resident_bytes() - beside.resident_bytes(),
        g2_bytes
    );
    assert!(first.counters.launches < device.counters.launches);
    assert!(first.counters.host_waits < device.counters.host_waits);

    // No room in the budget for B's scalars: B's G2 multiexp runs on the device, its bases
    // streamed (the set kept for this backend has none), and the proof still verifies.
    let mut h = hooks(false, None);
    let (proof, later) = prove(&beside, &mut h).expect("device phase, B's G2 back on the device");
    job.finalize(&[proof], &params).expect("verifies");
    assert_eq!((h.more, h.asked), (vec![b2_host], vec![]));
    assert!(later.counters.bytes_to_device >= g2_bytes, "{later:?}");
    assert_eq!(
        beside.resident_bytes(),
        on_device.resident_bytes() - g2_bytes
    );

    // A stop at the boundary after the H multiexp, where the host's multiexp has just started:
    // the phase ends with its error once the host's multiexp is stopped and joined (at 2 KiB
    // it may have ended first: `beside.rs`'s tests stop one of many steps), and every device
    // reservation but the kept bases is returned.
    let mut h = hooks(true, Some(2));
    prove(&beside, &mut h).expect_err("stopped");
    assert_eq!(h.more, vec![b2_host], "B's G2 had started on the host");
    assert_eq!(h.boundaries, 2);
    assert_eq!(beside.memory().used(), beside.resident_bytes());
}
