//! [`FilecoinProver`] as the engine calls it, on a real 2 KiB WinningPoSt (sealed here) with the
//! test parameters, on the CPU backend: each step's result and what it tells the engine, and how
//! each kind of failure is typed. The daemon's tests prove through the whole daemon; these name
//! the step that broke.

use std::path::PathBuf;
use std::sync::OnceLock;

use snarkd_engine::ProofKind;
use snarkd_prover::fixtures::{generate_fixtures, Fixtures};
use snarkd_prover::groth16::DeviceTimings;
use snarkd_prover::CpuBackend;

use super::*;

const SECTOR_2K: u64 = 2 << 10;
const WINNING: &str = "winning-2k";

struct Env {
    params_dir: PathBuf,
    fixtures: Fixtures,
    _work: tempfile::TempDir,
}

fn env() -> &'static Env {
    static ENV: OnceLock<Env> = OnceLock::new();
    ENV.get_or_init(|| {
        let params_dir = snarkd_prover::test_params_dir();
        snarkd_prover::generate_params(&params_dir, SECTOR_2K, &[ProofKind::WinningPost])
            .expect("2 KiB WinningPoSt test parameters");
        let work = tempfile::tempdir().unwrap();
        let fixtures = generate_fixtures(SECTOR_2K, work.path()).expect("sealing a 2 KiB sector");
        Env {
            params_dir,
            fixtures,
            _work: work,
        }
    })
}

/// A device as the engine sees it, with the backend that proves on it.
type Device = (DeviceInfo, Arc<dyn DeviceBackend>);

fn cpu(ordinal: u32) -> Device {
    let info = DeviceInfo {
        ordinal,
        name: format!("cpu {ordinal}"),
        memory_bytes: 1 << 30,
        workers: 1,
    };
    (info, Arc::new(CpuBackend::new()))
}

/// A prover on one CPU device; matrices read beside the parameters (where `params generate`
/// records them) when `precompiled`.
fn prover(precompiled: bool, native_witness: bool) -> FilecoinProver {
    let dir = env().params_dir.clone();
    let mut prover =
        FilecoinProver::new(dir.clone(), vec![cpu(0)]).with_precompiled(precompiled.then_some(dir));
    prover.native_witness = native_witness;
    prover
}

fn winning() -> ProofRequest {
    ProofRequest::new(env().fixtures.request(ProofKind::WinningPost))
}

/// Records what a device phase tells its caller; stops at the first step boundary when `stop`.
#[derive(Default)]
struct Heard {
    released: Vec<u64>,
    steps: usize,
    stop: bool,
}

impl PhaseHooks for Heard {
    fn abc_released(&mut self, bytes: u64) {
        self.released.push(bytes);
    }
    fn step_done(&mut self) {
        self.steps += 1;
    }
    fn stop_requested(&self) -> bool {
        self.stop
    }
}

#[test]
fn a_winning_post_goes_through_every_step_and_its_proof_verifies() {
    let prover = prover(true, true);
    let planned = prover
        .plan(winning())
        .expect("the fixture's request is planned");
    assert_eq!(planned.circuit_id, WINNING);
    assert_eq!(planned.partitions, 1);
    let estimate = planned.plan.partition_memory_estimate();
    assert_eq!(planned.memory.total_bytes, estimate.reserve_bytes());
    assert_eq!(planned.memory.abc_bytes, estimate.released_after_h_bytes());
    assert!(planned.memory.total_bytes > planned.memory.abc_bytes && planned.memory.abc_bytes > 0);

    let loaded = prover
        .load_params(WINNING)
        .expect("the test parameters load");
    assert_eq!(loaded.bytes, loaded.params.size_bytes());
    assert!(loaded.precompiled_bytes > 0, "the matrices load with them");
    let params = &*loaded.params;

    let device = prover.devices().remove(0);
    let partition = prover.synthesize(&planned.plan, 0, Some(params)).unwrap();
    assert!(
        partition.native().is_some(),
        "a native witness, with the matrices"
    );
    let mut heard = Heard::default();
    let proof = prover
        .prove(&device, partition, params, &mut heard)
        .expect("the device phase");
    let bytes = prover.proof_bytes(&proof);
    assert_eq!(
        bytes.len(),
        192,
        "one compressed Groth16 proof for the journal"
    );
    assert!(
        prover.read_proof(&bytes).unwrap() == proof,
        "and read back the same"
    );
    assert!(
        prover.read_proof(&bytes[1..]).is_err(),
        "a short one does not read"
    );
    assert_eq!(heard.released.len(), 1, "the a/b/c release is told once");
    assert!(heard.released[0] > 0);
    assert!(heard.steps > 0, "the step boundaries are told");

    let whole = prover
        .finalize(&planned.plan, vec![proof.clone()], params)
        .expect("the proof verifies");
    assert_eq!(whole, bytes);
    assert!(planned.plan.verify(&whole, params).unwrap());
    // Valid points, the wrong proof.
    let mut tampered = proof.clone();
    tampered.c = proof.a;
    assert!(
        is_fatal(prover.finalize(&planned.plan, vec![tampered], params)),
        "a partition proof that does not verify fails the job, never retried"
    );
}

/// Whether a step failed in a way running it again cannot mend.
fn is_fatal<T>(result: Result<T, StepError>) -> bool {
    matches!(result, Err(e) if !e.is_retryable() && e != StepError::Stopped)
}

#[test]
fn synthesis_takes_the_native_witness_only_with_matrices_and_the_switch_on() {
    let with = prover(true, true);
    let planned = with.plan(winning()).unwrap();
    let loaded = with.load_params(WINNING).unwrap();
    let params = Some(&*loaded.params);
    assert!(with
        .synthesize(&planned.plan, 0, params)
        .unwrap()
        .native()
        .is_some());
    assert!(
        with.synthesize(&planned.plan, 0, None)
            .unwrap()
            .native()
            .is_none(),
        "params still loading: the plain way"
    );
    let gadgets = prover(true, false);
    assert!(gadgets
        .synthesize(&planned.plan, 0, params)
        .unwrap()
        .native()
        .is_none());
    let plain = prover(false, true);
    let loaded = plain.load_params(WINNING).unwrap();
    assert_eq!(loaded.precompiled_bytes, 0, "no matrices asked for");
    assert!(plain
        .synthesize(&planned.plan, 0, Some(&*loaded.params))
        .unwrap()
        .native()
        .is_none());
    assert!(
        is_fatal(with.synthesize(&planned.plan, 1, params)),
        "a partition the job does not have"
    );
}

#[test]
fn a_phase_asked_to_stop_ends_stopped_and_an_unknown_device_is_fatal() {
    let prover = prover(true, true);
    let planned = prover.plan(winning()).unwrap();
    let loaded = prover.load_params(WINNING).unwrap();
    let params = &*loaded.params;
    let partition = || prover.synthesize(&planned.plan, 0, Some(params)).unwrap();
    let device = prover.devices().remove(0);
    let mut stop = Heard {
        stop: true,
        ..Heard::default()
    };
    assert_eq!(
        prover.prove(&device, partition(), params, &mut stop),
        Err(StepError::Stopped)
    );
    let elsewhere = DeviceInfo {
        ordinal: 7,
        ..device
    };
    match prover.prove(&elsewhere, partition(), params, &mut Heard::default()) {
        Err(StepError::Failed {
            class: FailureClass::Bug,
            message,
        }) => assert!(message.contains("device 7"), "{message}"),
        other => panic!("expected a fatal error, got {other:?}"),
    }
}

#[test]
fn bad_requests_are_invalid_and_missing_parameters_are_the_machines_setup() {
    let prover = prover(false, true);
    let mut garbled = winning();
    if let snarkd_engine::ProofInput::WinningPost(post) = &mut garbled.input {
        post.vanilla_proofs = vec![vec![1, 2, 3]];
    }
    assert!(matches!(
        prover.plan(garbled),
        Err(EngineError::InvalidRequest(_))
    ));

    let empty = tempfile::tempdir().unwrap();
    let bare = FilecoinProver::new(empty.path().to_path_buf(), vec![cpu(0)]);
    assert!(matches!(bare.plan(winning()), Err(EngineError::Setup(_))));
    assert!(matches!(
        bare.load_params(WINNING),
        Err(EngineError::Setup(_))
    ));
    assert!(matches!(
        bare.load_params("winning-3k"),
        Err(EngineError::UnknownCircuit(_))
    ));
    assert!(bare.knows_circuit(WINNING));
    assert!(!bare.knows_circuit("winning-3k"));
}

#[test]
fn the_params_estimate_is_the_files_a_circuit_loads() {
    let dir = &env().params_dir;
    let circuit = CircuitId::parse(WINNING).unwrap();
    let len = |path: PathBuf| std::fs::metadata(path).unwrap().len();
    let params = len(snarkd_prover::params::params_paths(dir, circuit).0);
    let matrices = len(matrices_file(dir, circuit).path);
    assert_eq!(prover(false, true).params_size_estimate(WINNING), params);
    assert_eq!(
        prover(true, true).params_size_estimate(WINNING),
        params + matrices,
        "the matrices beside the parameters"
    );
    // Matrices not recorded yet are estimated from the circuit's shape.
    let elsewhere = tempfile::tempdir().unwrap();
    let unrecorded = FilecoinProver::new(elsewhere.path().to_path_buf(), vec![cpu(0)])
        .with_precompiled(Some(elsewhere.path().to_path_buf()));
    assert_eq!(
        unrecorded.params_size_estimate(WINNING),
        snarkd_prover::filecoin::estimate::precompiled_bytes(circuit)
    );
    assert_eq!(unrecorded.params_size_estimate("winning-3k"), 0);
}

#[test]
fn devices_of_one_backend_are_named_once_and_the_cpu_reports_nothing() {
    let prover = FilecoinProver::new(env().params_dir.clone(), vec![cpu(0), cpu(1)]);
    assert_eq!(prover.backend_names(), ["cpu", "cpu"]);
    assert_eq!(prover.backend_name(), "cpu");
    let ordinals: Vec<u32> = prover.devices().iter().map(|d| d.ordinal).collect();
    assert_eq!(ordinals, [0, 1]);
    assert_eq!(prover.device_summaries().len(), 2);
    assert!(
        prover.read_devices().is_empty(),
        "no NVML, no pool: no readings"
    );
    assert!(!prover.gpu_fallback());
}

/// The devices `config` chooses, and the metrics that choosing set (`snarkd_gpu_expected`
/// tells a box that asked for the CPU from one that fell back to it).
fn choose_recorded(config: &Config) -> (anyhow::Result<Vec<Device>>, String) {
    let recorder = metrics_exporter_prometheus::PrometheusBuilder::new().build_recorder();
    let handle = recorder.handle();
    let chosen = metrics::with_local_recorder(&recorder, || devices::backends(config));
    (chosen, handle.render())
}

#[test]
fn the_cpu_backend_is_one_device_and_cuda_is_refused_pointing_at_opencl() {
    let mut config = Config::default();
    config.gpus.backend = crate::config::Backend::Cpu;
    let (chosen, metrics) = choose_recorded(&config);
    assert!(metrics.contains("snarkd_gpu_expected 0"), "{metrics}");
    let chosen = chosen.unwrap();
    let names: Vec<&str> = chosen.iter().map(|(_, b)| b.name()).collect();
    assert_eq!(names, ["cpu"]);
    assert_eq!(chosen[0].0.ordinal, 0);
    assert!(
        chosen[0].0.name.starts_with("cpu ("),
        "{}",
        chosen[0].0.name
    );
    let asked_for_cpu = from_config(&config).unwrap();
    assert!(!asked_for_cpu.gpu_fallback(), "the CPU was asked for");

    config.gpus.backend = crate::config::Backend::Cuda;
    let refused = devices::backends(&config).err().expect("no CUDA backend");
    assert!(
        refused.to_string().contains("gpus.backend")
            && refused.to_string().contains("set backend = \"opencl\""),
        "{refused}"
    );
    // A config error: exit 78, which the unit does not restart.
    assert!(refused
        .chain()
        .any(|c| c.is::<crate::config::ConfigError>()));

    let listing = devices::listing();
    assert!(
        listing.last().unwrap().starts_with("cpu\tthis machine\t"),
        "{listing:?}"
    );
}

/// The OpenCL devices this machine lists (PoCL's CPU device where it is installed, as
/// `scripts/setup.sh` does for the tests).
#[cfg(feature = "opencl")]
fn opencl_devices() -> Vec<snarkd_prover::backend::opencl::OpenClDevice> {
    snarkd_prover::backend::opencl::list_devices()
}

#[cfg(feature = "opencl")]
#[test]
fn opencl_takes_every_device_and_auto_only_gpus_else_the_cpu_said_as_a_fallback() {
    let listed = opencl_devices();
    let mut config = Config::default();
    config.gpus.backend = crate::config::Backend::Opencl;
    match devices::backends(&config) {
        Ok(chosen) => {
            let names: Vec<String> = chosen.iter().map(|(_, b)| b.name().to_string()).collect();
            let expected: Vec<String> = (listed.iter())
                .map(|d| format!("opencl:{}", d.info.ordinal))
                .collect();
            assert_eq!(names, expected, "every device, PoCL's included");
            let (info, _) = &chosen[0];
            assert_eq!(
                info.name,
                format!("{} ({})", listed[0].info.name, listed[0].info.platform)
            );
            assert_eq!(info.memory_bytes, listed[0].info.memory_bytes);
        }
        Err(refused) => {
            assert!(listed.is_empty(), "refused with devices listed: {refused}");
            assert!(
                refused.to_string().contains("found no OpenCL device"),
                "{refused}"
            );
        }
    }

    config.gpus.backend = crate::config::Backend::Auto;
    let (_, metrics) = choose_recorded(&config);
    assert!(metrics.contains("snarkd_gpu_expected 1"), "{metrics}");
    let prover = from_config(&config).unwrap();
    let gpus: Vec<String> = (listed.iter().filter(|d| d.info.kind == "gpu"))
        .map(|d| format!("opencl:{}", d.info.ordinal))
        .collect();
    if gpus.is_empty() {
        assert_eq!(prover.backend_names(), ["cpu"], "no GPU: the CPU");
        assert!(
            prover.gpu_fallback(),
            "a GPU was asked for and the CPU proves"
        );
        assert_eq!(prover.backend_name(), "cpu");
    } else {
        assert_eq!(prover.backend_names(), gpus);
        assert!(!prover.gpu_fallback());
        assert_eq!(prover.backend_name(), "opencl");
    }
}

#[cfg(feature = "opencl")]
#[test]
fn the_listing_names_every_opencl_device_then_the_cpu() {
    let listed = opencl_devices();
    let lines = devices::listing();
    assert_eq!(lines.len(), listed.len() + 1);
    for (line, device) in lines.iter().zip(&listed) {
        let fields: Vec<&str> = line.split('\t').collect();
        assert_eq!(fields[0], device.info.ordinal.to_string());
        assert_eq!(fields[2], device.info.name);
        assert_eq!(fields[3], device.info.kind);
        assert_eq!(fields[5], device.info.compute_units.to_string());
    }
}

#[cfg(feature = "opencl")]
#[test]
fn an_opencl_device_reports_its_pool_under_the_engines_ordinal_and_the_cpu_nothing() {
    let device = opencl_devices()
        .into_iter()
        .next()
        .expect("an OpenCL device (PoCL's CPU device in CI)");
    let backend: Arc<dyn DeviceBackend> =
        Arc::new(snarkd_prover::OpenClBackend::new(device, Default::default()).unwrap());
    let info = DeviceInfo {
        ordinal: 5,
        name: "the engine's fifth".into(),
        memory_bytes: 1 << 30,
        workers: 1,
    };
    let devices = vec![(info, backend), cpu(6)];
    let reader = readings::DeviceReader::new(&devices);
    let read = reader.read();
    assert_eq!(read.len(), 1, "the CPU reports nothing: {read:?}");
    assert_eq!(read[0].ordinal, 5);
    assert!(read[0].pool_limit_bytes.unwrap() > 0);
    assert_eq!(read[0].pool_used_bytes, Some(0), "nothing proving");
    // The engine reads them through the prover.
    let prover = FilecoinProver::new(env().params_dir.clone(), devices);
    assert_eq!(prover.read_devices(), read);
}

/// A backend that says it runs the device phase on its device (as a healthy GPU's does).
struct SaysDevice(CpuBackend);

impl DeviceBackend for SaysDevice {
    fn name(&self) -> &str {
        "gpu-like"
    }
    fn phase_on(&self) -> PhaseOn {
        PhaseOn::Device
    }
    fn prove(
        &self,
        partition: SynthesizedPartition,
        params: &LoadedParams,
        randomness: Randomness,
        hooks: &mut dyn PhaseHooks,
    ) -> snarkd_prover::Result<(bellperson::groth16::Proof<blstrs::Bls12>, DeviceTimings)> {
        self.0.prove(partition, params, randomness, hooks)
    }
}

#[test]
fn partitions_are_reserved_for_the_device_phase_where_every_device_runs_it() {
    let gpu = |ordinal| -> Device {
        let (info, _) = cpu(ordinal);
        (info, Arc::new(SaysDevice(CpuBackend::new())))
    };
    let reserved = |devices: Vec<Device>| {
        let prover = FilecoinProver::new(env().params_dir.clone(), devices);
        let planned = prover.plan(winning()).unwrap();
        (planned.memory, planned.plan)
    };
    let (memory, job) = reserved(vec![gpu(0), gpu(1)]);
    let on_device = job.partition_memory_estimate_on(PhaseOn::Device);
    assert_eq!(memory.total_bytes, on_device.reserve_bytes());
    assert_eq!(memory.abc_bytes, on_device.released_after_h_bytes());
    assert!(memory.total_bytes < job.partition_memory_estimate().reserve_bytes());
    // One device on the host: every partition is reserved for the host's peak.
    let (memory, job) = reserved(vec![gpu(0), cpu(1)]);
    assert_eq!(
        memory.total_bytes,
        job.partition_memory_estimate().reserve_bytes()
    );
}

/// A backend whose device phase fails with the error it is given.
struct FailsWith(fn() -> ProverError);

impl DeviceBackend for FailsWith {
    fn name(&self) -> &str {
        "failing"
    }
    fn prove(
        &self,
        _partition: SynthesizedPartition,
        _params: &LoadedParams,
        _randomness: Randomness,
        _hooks: &mut dyn PhaseHooks,
    ) -> snarkd_prover::Result<(bellperson::groth16::Proof<blstrs::Bls12>, DeviceTimings)> {
        Err((self.0)())
    }
}

#[test]
fn a_device_error_is_retried_but_parameters_that_do_not_fit_the_partition_are_not() {
    let cases: [(fn() -> ProverError, bool); 3] = [
        (
            || ProverError::Device {
                backend: "opencl:0".into(),
                reason: "CL_OUT_OF_RESOURCES".into(),
            },
            true,
        ),
        (
            || ProverError::ParamsShape("h has 7 bases for a domain of 8".into()),
            false,
        ),
        (
            || ProverError::ParamsMismatch {
                loaded: "wpost-2k".into(),
                wanted: "winning-2k".into(),
            },
            false,
        ),
    ];
    for (error, retried) in cases {
        let (info, _) = cpu(0);
        let prover = FilecoinProver::new(
            env().params_dir.clone(),
            vec![(info, Arc::new(FailsWith(error)))],
        );
        let planned = prover.plan(winning()).unwrap();
        let loaded = prover.load_params(WINNING).unwrap();
        let params = &*loaded.params;
        let partition = prover.synthesize(&planned.plan, 0, Some(params)).unwrap();
        let device = prover.devices().remove(0);
        let failed = prover
            .prove(&device, partition, params, &mut Heard::default())
            .unwrap_err();
        assert_eq!(failed.is_retryable(), retried, "{failed:?}");
        assert!(
            failed.to_string().contains(&error().to_string()),
            "{failed}"
        );
    }
}
