//! The OpenCL backend against the CPU backend, on whatever OpenCL device is present (PoCL's CPU
//! device in CI: `pocl-opencl-icd`, installed by scripts/setup.sh). The H polynomial and the G1
//! and G2 MSMs must equal the CPU's on random inputs of several sizes, including MSMs cut into
//! several chunks by a low chunk cap, and two workers on one device must stay within its
//! memory pool. Compiled kernels kept on disk are loaded by the next start.
#![cfg(feature = "opencl")]

use std::sync::{Arc, OnceLock};
use std::time::Instant;

use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar as Fr};
use ff::Field;
use group::prime::PrimeCurveAffine;
use group::{Curve, Group};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use sha2::Digest;
use snarkd_prover::backend::opencl::{
    kernel_cache_from_env, list_devices, select_devices, BuiltFrom, DeviceMemory, DeviceProgram,
    DeviceQueue, LimbBits, OpenClDevice,
};
use snarkd_prover::backend::{OpenClBackend, OpenClOptions};
use snarkd_prover::groth16::{compute_h, msm_g1, msm_g2, ScalarBytes};
use snarkd_prover::synthesis::Abc;

/// Low enough that the larger MSMs below take several launches.
const CHUNK_CAP: usize = 600;

fn device() -> OpenClDevice {
    list_devices().into_iter().next().expect(
        "no OpenCL device: install an OpenCL runtime (PoCL: apt-get install pocl-opencl-icd)",
    )
}

/// One backend per test binary: the kernels are built once (minutes on PoCL the first time).
fn backend() -> &'static OpenClBackend {
    static BACKEND: OnceLock<OpenClBackend> = OnceLock::new();
    BACKEND.get_or_init(|| {
        let start = Instant::now();
        let options = OpenClOptions {
            workers_per_device: 2,
            max_chunk_terms: CHUNK_CAP,
            kernel_cache: kernel_cache_from_env(),
            ..OpenClOptions::default()
        };
        let b = OpenClBackend::new(device(), options).expect("kernels build");
        eprintln!(
            "opencl device {:?}: kernels ready in {:.1} s",
            b.device(),
            start.elapsed().as_secs_f64()
        );
        b
    })
}

fn rng(seed: u64) -> ChaCha8Rng {
    ChaCha8Rng::seed_from_u64(seed)
}

/// Scalars as a witness has them: many zeros and ones, the rest random.
fn scalars(n: usize, rng: &mut impl Rng) -> Vec<Fr> {
    (0..n)
        .map(|_| match rng.gen_range(0..4) {
            0 => Fr::ZERO,
            1 => Fr::ONE,
            _ => Fr::random(&mut *rng),
        })
        .collect()
}

fn g1_bases(n: usize, rng: &mut impl Rng) -> Vec<G1Affine> {
    let p: Vec<G1Projective> = (0..n).map(|_| G1Projective::random(&mut *rng)).collect();
    let mut out = vec![G1Affine::identity(); n];
    G1Projective::batch_normalize(&p, &mut out);
    out
}

fn g2_bases(n: usize, rng: &mut impl Rng) -> Vec<G2Affine> {
    let p: Vec<G2Projective> = (0..n).map(|_| G2Projective::random(&mut *rng)).collect();
    let mut out = vec![G2Affine::identity(); n];
    G2Projective::batch_normalize(&p, &mut out);
    out
}

#[test]
fn discovery_lists_every_platforms_devices_with_their_sizes() {
    let all = list_devices();
    assert!(!all.is_empty(), "no OpenCL device found");
    for (i, d) in all.iter().enumerate() {
        assert_eq!(d.info.ordinal as usize, i);
        assert!(
            !d.info.platform.is_empty() && !d.info.name.is_empty(),
            "{:?}",
            d.info
        );
        assert!(
            d.info.memory_bytes > 0 && d.info.compute_units > 0,
            "{:?}",
            d.info
        );
    }
}

#[test]
fn devices_are_selected_by_ordinal_or_name_part() {
    let all = list_devices();
    let first = &all[0].info;
    let by_ordinal = select_devices(&all, &[first.ordinal.to_string()]).unwrap();
    assert_eq!(by_ordinal[0].info, *first);
    let part = first.name[..first.name.len().min(6)].to_uppercase();
    let by_name = select_devices(&all, &[part]).unwrap();
    assert!(by_name.iter().any(|d| d.info == *first));
    assert_eq!(select_devices(&all, &[]).unwrap().len(), all.len());
    let twice = select_devices(&all, &["0".into(), "0".into()]).unwrap();
    assert_eq!(twice.len(), 1, "a device is selected once");
    let err = select_devices(&all, &["no such device".into()]).unwrap_err();
    assert!(err.to_string().contains("snarkd devices"), "{err}");
    assert!(select_devices(&all, &["999".into()]).is_err());
}

#[test]
fn h_polynomial_matches_the_cpu() {
    let mut rng = rng(1);
    // Powers of two and lengths that the domain pads (1, 3, 1000, 2^12 + 1). The device forms
    // c as a∘b, as a satisfied circuit has it.
    for len in [1usize, 3, 1000, 1 << 12, (1 << 12) + 1] {
        let a: Vec<Fr> = (0..len).map(|_| Fr::random(&mut rng)).collect();
        let b: Vec<Fr> = (0..len).map(|_| Fr::random(&mut rng)).collect();
        let c = a.iter().zip(&b).map(|(a, b)| *a * b).collect();
        let device = backend().compute_h(&a, &b).expect("device fft");
        let cpu = compute_h(Abc { a, b, c: Some(c) }).expect("cpu fft");
        assert_eq!(device.len(), cpu.len(), "len {len}");
        assert!(device == cpu, "h differs from the cpu's for len {len}");
    }
}

/// The device's multiexp against blst's on the CPU, bases kept on the device and streamed.
fn check_g1(n: usize, values: &[Fr], bases: &[G1Affine]) {
    check_on(backend(), n, values, bases)
}

fn check_on(backend: &OpenClBackend, n: usize, values: &[Fr], bases: &[G1Affine]) {
    let s = ScalarBytes::dense(values);
    let want = msm_g1(bases, s.view()).to_affine();
    for resident in [true, false] {
        let (got, counts) = backend.msm_g1(bases, values, resident).expect("device msm");
        assert_eq!(
            got.to_affine(),
            want,
            "g1 msm of {n} terms, resident {resident}"
        );
        assert!(counts.launches > 0 || values.iter().all(|v| bool::from(v.is_zero())));
    }
}

#[test]
fn g1_msm_matches_the_cpu_whole_and_chunked() {
    let mut rng = rng(2);
    // Sizes below, at and several times the chunk cap.
    for n in [1usize, 17, CHUNK_CAP, 2500] {
        let bases = g1_bases(n, &mut rng);
        check_g1(n, &scalars(n, &mut rng), &bases);
    }
}

/// Kernel launches a multiexp chunk takes: the split, the sum of ones, the sort's count, three
/// scan passes and scatter, the bucket sums and their reduction.
const LAUNCHES_A_CHUNK: u64 = 9;

#[test]
fn a_step_short_of_device_memory_takes_shorter_chunks_and_still_runs_there() {
    // 2^16 terms at once (13-bit windows) take about 21 MB of device memory; a pool held down
    // to 15 MB free has room for half of them at a time.
    let options = OpenClOptions {
        groups_per_unit: 4,
        pool_bytes: Some(400 << 20),
        kernel_cache: kernel_cache_from_env(),
        ..OpenClOptions::default()
    };
    let backend = OpenClBackend::new(device(), options).expect("backend");
    let memory = backend.memory();
    let _held = memory
        .try_reserve(memory.limit() - (15 << 20), 0)
        .expect("an idle pool");
    let mut rng = rng(6);
    let n = 1 << 16;
    let (bases, values) = (g1_bases(n, &mut rng), scalars(n, &mut rng));
    let want = msm_g1(&bases, ScalarBytes::dense(&values).view());
    let (got, counts) = backend
        .msm_g1(&bases, &values, true)
        .expect("the step runs on the device in shorter chunks");
    assert_eq!(got.to_affine(), want.to_affine());
    assert!(
        counts.launches > LAUNCHES_A_CHUNK && counts.launches % LAUNCHES_A_CHUNK == 0,
        "{counts:?}"
    );
}

#[test]
fn each_chunk_is_enqueued_before_the_host_waits_for_the_one_before_and_streamed_bases_go_through_pinned_memory(
) {
    let mut rng = rng(7);
    let n = 5 * CHUNK_CAP + 17;
    let (bases, values) = (g1_bases(n, &mut rng), scalars(n, &mut rng));
    let want = msm_g1(&bases, ScalarBytes::dense(&values).view()).to_affine();
    // A backend of its own: the shared one's queues are taken by the tests running beside.
    let options = OpenClOptions {
        max_chunk_terms: CHUNK_CAP,
        kernel_cache: kernel_cache_from_env(),
        ..OpenClOptions::default()
    };
    let backend = OpenClBackend::new(device(), options).expect("backend");
    for resident in [true, false] {
        let (got, counts) = backend.msm_g1(&bases, &values, resident).unwrap();
        assert_eq!(got.to_affine(), want, "resident {resident}");
        let chunks = counts.launches / LAUNCHES_A_CHUNK;
        assert!(chunks >= 6, "{counts:?}");
        // The host waits for each chunk's read-back with the next chunk enqueued behind it
        // (and, streaming, for pinned slots with copies and kernels behind them): the device
        // idles only for the last chunk's, and for the call's wait for its queues.
        assert_eq!(counts.idle_waits, 2, "resident {resident}: {counts:?}");
        assert!(
            counts.host_waits > chunks,
            "resident {resident}: {counts:?}"
        );
    }
    assert!(
        backend.pinned_bytes() > 0,
        "a streamed multiexp copies through pinned slots"
    );
}

#[test]
fn a_step_enqueues_the_next_ones_first_chunk_before_it_waits_and_a_next_that_does_not_come_is_dropped(
) {
    let mut rng = rng(8);
    let c = CHUNK_CAP;
    let n = 4 * c + 5;
    let (bases, values) = (g1_bases(n, &mut rng), scalars(n, &mut rng));
    // Two chunks, one, and three.
    let ranges = [0..c + 7, c + 7..2 * c, 2 * c..n];
    let want: Vec<G1Affine> = ranges
        .iter()
        .map(|r| {
            msm_g1(
                &bases[r.clone()],
                ScalarBytes::dense(&values[r.clone()]).view(),
            )
            .to_affine()
        })
        .collect();
    let options = OpenClOptions {
        max_chunk_terms: c,
        kernel_cache: kernel_cache_from_env(),
        ..OpenClOptions::default()
    };
    let backend = OpenClBackend::new(device(), options).expect("backend");
    let chained = [
        (ranges[0].clone(), Some(ranges[1].clone())),
        (ranges[1].clone(), Some(ranges[2].clone())),
        (ranges[2].clone(), None),
    ];
    // The first step is handed the third as its next, but the second runs: the chunk enqueued
    // ahead is waited for and dropped, and the second runs from its start.
    let unmet = [
        (ranges[0].clone(), Some(ranges[2].clone())),
        (ranges[1].clone(), Some(ranges[2].clone())),
        (ranges[2].clone(), None),
    ];
    for resident in [true, false] {
        let (sums, counts) = backend
            .msm_g1_steps(&bases, &values, resident, &chained)
            .unwrap();
        let sums: Vec<G1Affine> = sums.iter().map(|s| s.to_affine()).collect();
        assert_eq!(sums, want, "resident {resident}");
        assert_eq!(counts.launches, 6 * LAUNCHES_A_CHUNK, "{counts:?}");
        // Each step's last chunk is waited for with the next step's first behind it: the
        // device idles for the last step's last chunk alone, and the call's wait for its queues.
        assert_eq!(counts.idle_waits, 2, "resident {resident}: {counts:?}");

        let (sums, counts) = backend
            .msm_g1_steps(&bases, &values, resident, &unmet)
            .unwrap();
        let sums: Vec<G1Affine> = sums.iter().map(|s| s.to_affine()).collect();
        assert_eq!(sums, want, "resident {resident}, an unmet next");
        assert_eq!(
            counts.launches,
            7 * LAUNCHES_A_CHUNK,
            "one chunk dropped: {counts:?}"
        );
        assert_eq!(counts.idle_waits, 3, "and waited for alone: {counts:?}");
    }
    assert_eq!(
        backend.memory().used(),
        0,
        "the pipeline's memory is returned"
    );
}

#[test]
fn a_pipeline_dropped_with_a_chunk_in_flight_keeps_its_room_until_the_queue_is_waited_for() {
    // As when a step panics with the next step's first chunk enqueued: the buffers go when the
    // device is done with them, and the pool must not hand their room to another worker first.
    let mut rng = rng(9);
    let c = CHUNK_CAP;
    let n = 2 * c + 3;
    let (bases, values) = (g1_bases(n, &mut rng), scalars(n, &mut rng));
    let options = OpenClOptions {
        max_chunk_terms: c,
        kernel_cache: kernel_cache_from_env(),
        ..OpenClOptions::default()
    };
    let backend = OpenClBackend::new(device(), options).expect("backend");
    let [before, dropped, waited] = backend
        .msm_g1_dropped_ahead(&bases, &values, 0..c + 3, c + 3..n)
        .unwrap();
    assert!(
        dropped > before,
        "the dropped pipeline's room is held while its chunk may run: {before} → {dropped}"
    );
    assert_eq!(waited, before, "and given back once the queue has run it");
    assert_eq!(backend.memory().used(), 0);
}

#[test]
fn g1_msm_of_only_ones_only_others_and_the_identity_among_the_bases() {
    edge_msms(backend());
}

#[test]
fn the_multiexp_built_with_32_bit_limbs_matches_the_cpu_on_every_window() {
    // The sort reads a window's bits from the limbs that hold them: 32-bit limbs put the
    // boundaries elsewhere (`[gpus] limb_bits = 32`).
    let options = OpenClOptions {
        max_chunk_terms: CHUNK_CAP,
        limbs: LimbBits::L32,
        kernel_cache: kernel_cache_from_env(),
        ..OpenClOptions::default()
    };
    edge_msms(&OpenClBackend::new(device(), options).expect("kernels build"));
}

/// Multiexps of values at every window's edges on `backend`, against the CPU's.
fn edge_msms(backend: &OpenClBackend) {
    let mut rng = rng(6);
    let n = 1500;
    let mut bases = g1_bases(n, &mut rng);
    // Parameters may hold the identity (blst writes it as zeros): it adds nothing.
    bases[7] = G1Affine::identity();
    bases[700] = G1Affine::identity();
    check_on(backend, n, &vec![Fr::ONE; n], &bases);
    let others: Vec<Fr> = (0..n).map(|_| Fr::random(&mut rng)).collect();
    check_on(backend, n, &others, &bases);
    // Small values, the largest, values near it, and runs of ones below every bit (each
    // window's top bit set: a signed digit carries into every window above): every window of
    // the exponent, with and without carries.
    let edges: Vec<Fr> = (0..n as u64)
        .map(|i| match i % 5 {
            0 => Fr::from(i + 2),
            1 => -Fr::ONE,
            2 => Fr::from(2).pow_vartime([i % 255]) - Fr::ONE,
            3 => -Fr::from(i),
            _ => Fr::ZERO,
        })
        .collect();
    check_on(backend, n, &edges, &bases);
    // One bucket holds every term (a single nonzero digit, 2, in the lowest window): it spans
    // every work item's slice of the sorted list, each adding its head to it.
    check_on(backend, n, &vec![Fr::from(2); n], &bases);
}

#[test]
fn sums_that_meet_a_point_or_its_negative_double_it_or_cancel() {
    // Every base is ±P or ±2P: a work item's running sum of ones, a bucket's sum and the
    // reduction's running sums often reach the base they add next (a doubling) or its negative
    // (the identity), the two cases an addition's formula cannot take and handles apart.
    let mut rng = rng(8);
    let p = G1Projective::random(&mut rng);
    let n = 3000;
    let bases: Vec<G1Affine> = (0..n)
        .map(|_| match rng.gen_range(0..4) {
            0 => p,
            1 => -p,
            2 => p.double(),
            _ => -p.double(),
        })
        .map(|b| b.to_affine())
        .collect();
    let values: Vec<Fr> = (0..n)
        .map(|_| match rng.gen_range(0..4) {
            0 => Fr::ONE,
            1 => Fr::from(rng.gen_range(2..6u64)),
            2 => -Fr::from(rng.gen_range(1..4u64)),
            _ => Fr::random(&mut rng),
        })
        .collect();
    check_g1(n, &values, &bases);
    check_g1(n, &vec![Fr::ONE; n], &bases);
}

#[test]
fn a_dense_multiexp_in_one_chunk_takes_a_wide_window_and_matches_the_cpu() {
    // 2^18 random scalars in one chunk are worth 16-bit windows: 16 windows of 2^15 buckets,
    // whose counts the sort scans in 512 blocks (four passes of the block totals' scan). The
    // bases are a chain of additions (random points one by one would take the test's time).
    let options = OpenClOptions {
        kernel_cache: kernel_cache_from_env(),
        ..OpenClOptions::default()
    };
    let backend = OpenClBackend::new(device(), options).expect("backend");
    let mut rng = rng(7);
    let n = 1 << 18;
    let step = G1Projective::random(&mut rng);
    let chain: Vec<G1Projective> = std::iter::successors(Some(step), |p| Some(p + step))
        .take(n)
        .collect();
    let mut bases = vec![G1Affine::identity(); n];
    G1Projective::batch_normalize(&chain, &mut bases);
    let values: Vec<Fr> = (0..n).map(|_| Fr::random(&mut rng)).collect();
    let want = msm_g1(&bases, ScalarBytes::dense(&values).view());
    let (got, counts) = backend.msm_g1(&bases, &values, true).expect("device msm");
    assert_eq!(got.to_affine(), want.to_affine());
    assert_eq!(counts.launches, LAUNCHES_A_CHUNK, "one chunk: {counts:?}");
    // A digit a window for nearly every term (one in 2^16 is zero) and two additions a bucket.
    let weigh = 2 * (16 << 15);
    let digits = counts.point_additions - weigh;
    assert!(
        digits <= 16 * n as u64 && digits > 16 * n as u64 * 99 / 100,
        "{counts:?}"
    );
}

#[test]
fn g2_msm_matches_the_cpu_whole_and_chunked() {
    let mut rng = rng(3);
    for n in [1usize, 40, 1300] {
        let bases = g2_bases(n, &mut rng);
        let values = scalars(n, &mut rng);
        let s = ScalarBytes::dense(&values);
        let want = msm_g2(&bases, s.view()).to_affine();
        for resident in [true, false] {
            let (got, _) = backend()
                .msm_g2(&bases, &values, resident)
                .expect("device msm");
            assert_eq!(
                got.to_affine(),
                want,
                "g2 msm of {n} terms, resident {resident}"
            );
        }
    }
}

#[test]
fn all_zero_scalars_give_the_identity_and_a_chunk_waits_once() {
    let mut rng = rng(4);
    let bases = g1_bases(100, &mut rng);
    let (sum, counts) = backend()
        .msm_g1(&bases, &vec![Fr::ZERO; 100], true)
        .unwrap();
    assert!(bool::from(sum.is_identity()));
    // The split and every kernel after it are enqueued together (they read the split's counts
    // on the device, here none), then one wait reads the counts, sums and parts back; the
    // call's last wait is for the queue to be done with the caller's vectors.
    assert_eq!(counts.launches, LAUNCHES_A_CHUNK, "{counts:?}");
    assert_eq!(counts.host_waits, 2, "{counts:?}");
    assert_eq!(counts.point_additions, 0, "{counts:?}");
    // Ones cost one addition each and nothing else is counted (the work groups' sums of them
    // are left out).
    let (_, counts) = backend().msm_g1(&bases, &vec![Fr::ONE; 100], true).unwrap();
    assert_eq!(counts.point_additions, 100, "{counts:?}");
}

#[test]
fn two_workers_on_one_device_stay_within_its_memory_pool() {
    backend(); // the kernels, built once
               // A backend of its own, so the other tests' reservations are not in its pool.
    let options = OpenClOptions {
        workers_per_device: 2,
        max_chunk_terms: CHUNK_CAP,
        ..OpenClOptions::default()
    };
    let b = &OpenClBackend::new(device(), options).expect("backend");
    let mut rng = rng(5);
    let bases = g1_bases(1500, &mut rng);
    let values = scalars(1500, &mut rng);
    let s = ScalarBytes::dense(&values);
    let want = msm_g1(&bases, s.view()).to_affine();
    std::thread::scope(|scope| {
        let runs: Vec<_> = (0..2)
            .map(|_| scope.spawn(|| b.msm_g1(&bases, &values, false).unwrap().0.to_affine()))
            .collect();
        for r in runs {
            assert_eq!(r.join().unwrap(), want);
        }
    });
    assert_eq!(b.memory().used(), 0, "every reservation is returned");
    assert!(b.memory().limit() < b.device().memory_bytes);
}

/// The product kernel of `program` over a and b, read back.
fn products_on(program: DeviceProgram, a: &[Fr], b: &[Fr]) -> Vec<Fr> {
    let device = device();
    let memory = DeviceMemory::new(1 << 30);
    let q = DeviceQueue::new(device, Arc::new(program), memory, &OpenClOptions::default()).unwrap();
    let n = a.len();
    let (mut a_buf, mut b_buf) = (q.program.buffer(n).unwrap(), q.program.buffer(n).unwrap());
    let c_buf = q.program.buffer::<Fr>(n).unwrap();
    q.write(&mut a_buf, 0, a).unwrap();
    q.write(&mut b_buf, 0, b).unwrap();
    let kernel = q.program.kernel("snarkd_product").unwrap();
    q.launch(&kernel, n.div_ceil(64), 64, |k| {
        // SAFETY: snarkd_product's arguments; each buffer holds n scalars.
        unsafe {
            k.set_arg(&a_buf)
                .set_arg(&b_buf)
                .set_arg(&c_buf)
                .set_arg(&(n as u32));
        }
    })
    .unwrap();
    let mut c = vec![Fr::ZERO; n];
    q.read(&c_buf, &mut c).unwrap();
    c
}

#[test]
fn kernels_kept_on_disk_are_loaded_by_the_next_start_and_a_bad_file_is_rebuilt_from_source() {
    let _ = tracing_subscriber::fmt().with_test_writer().try_init();
    let dir = tempfile::tempdir().unwrap();
    let build = || DeviceProgram::build_as_new_process(&device(), LimbBits::L64, Some(dir.path()));
    let kept_files = || {
        std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "clbin"))
            .collect::<Vec<_>>()
    };
    let first = build().unwrap();
    assert_eq!(first.built.from, BuiltFrom::Source, "nothing was kept yet");
    let files = kept_files();
    assert_eq!(
        files.len(),
        1,
        "the first build keeps its binary: {files:?}"
    );

    let second = build().unwrap();
    assert_eq!(
        second.built.from,
        BuiltFrom::Binary,
        "the next start loads the binary"
    );
    let mut rng = rng(7);
    let a: Vec<Fr> = (0..1000).map(|_| Fr::random(&mut rng)).collect();
    let b: Vec<Fr> = (0..1000).map(|_| Fr::random(&mut rng)).collect();
    let expected: Vec<Fr> = a.iter().zip(&b).map(|(x, y)| x * y).collect();
    assert_eq!(
        products_on(second, &a, &b),
        expected,
        "the loaded program computes"
    );

    // Damaged: its digest no longer matches. Rebuilt from source and kept again.
    let mut bytes = std::fs::read(&files[0]).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0x5a;
    std::fs::write(&files[0], &bytes).unwrap();
    assert_eq!(build().unwrap().built.from, BuiltFrom::Source);
    assert_eq!(build().unwrap().built.from, BuiltFrom::Binary, "kept again");

    // Whole but not a program (another driver's, say): the driver refuses it.
    let junk = b"not a program binary";
    let mut file = b"snarkd-kernels-1".to_vec();
    file.extend_from_slice(&sha2::Sha256::digest(junk));
    file.extend_from_slice(junk);
    std::fs::write(&files[0], &file).unwrap();
    let rebuilt = build().unwrap();
    assert_eq!(rebuilt.built.from, BuiltFrom::Source);
    assert_eq!(products_on(rebuilt, &a, &b), expected);
    assert_eq!(build().unwrap().built.from, BuiltFrom::Binary, "kept again");
}
