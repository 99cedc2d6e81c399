//! The stand-in provers, in one place (the crate's own tests, and the `test-hooks` feature for
//! the daemon's tests and the writer benchmark). [`TestProver`]: a small synthetic prover for the
//! engine's tests: partitions are numbers, proofs are their bytes, and finalize checks the order.
//! [`stand_in::StandInProver`]: requests shaped as the wire's, for the daemon's API tests. Both
//! stand in for the circuit, not for the engine.

pub mod stand_in;
mod watchdog;

pub use watchdog::Watchdog;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use crate::domain::ProofRequest;
use crate::error::{EngineError, FailureClass};
use crate::prover::{
    DeviceInfo, DeviceTelemetry, LoadedParams, PartitionMemory, PhaseHooks, Planned, Prover,
    StepError,
};

pub const PARAMS_BYTES: u64 = 100;
/// The part of [`PARAMS_BYTES`] the stand-in calls its pre-compiled circuit.
pub const PRECOMPILED_BYTES: u64 = 25;

pub struct TestProver {
    pub devices: u32,
    /// Make every synthesis panic.
    pub panic_in_synthesis: AtomicBool,
    /// Make planning panic, as a bug in a request decoder would.
    pub panic_in_plan: AtomicBool,
    /// Planning fails as it does when a params file is missing, while set.
    pub params_missing: AtomicBool,
    /// Syntheses wait while a test holds this lock.
    pub gate: Arc<parking_lot::Mutex<()>>,
    /// Device phases fail (before releasing a/b/c) while set.
    pub device_fault: AtomicBool,
    /// Device phases fail as an input would make them (not worth a retry) while set.
    pub fatal_device: AtomicBool,
    /// Device phases panic (before releasing a/b/c) while set.
    pub panic_in_device: AtomicBool,
    /// Device phases wait after releasing a/b/c while a test holds this lock.
    pub device_gate: parking_lot::Mutex<()>,
    /// Device phases go on step after step while set (each step a preemption point).
    pub device_steps_held: AtomicBool,
    /// Those steps wait in their middle while a test holds this lock ...
    pub mid_step_gate: parking_lot::Mutex<()>,
    /// ... and say so here.
    pub in_mid_step: AtomicBool,
    /// Workers the engine runs on each device (1 unless a test sets it before starting one).
    pub workers_per_device: std::sync::atomic::AtomicUsize,
    /// Deadline phases (WinningPoSt, WindowPoSt) between their start and their end ...
    pub deadline_phases: std::sync::atomic::AtomicU32,
    /// ... step boundaries a phase without a deadline reached meanwhile, and those it went past.
    pub boundaries_in_deadline: std::sync::atomic::AtomicU32,
    pub passed_in_deadline: std::sync::atomic::AtomicU32,
    /// Of the boundaries reached meanwhile, those where the hooks said the phase would wait
    /// there (`PhaseHooks::will_wait`).
    pub told_it_will_wait: std::sync::atomic::AtomicU32,
    /// Bytes each device phase asks to hold beyond its reservation before the a/b/c release
    /// (`PhaseHooks::hold_more`; none when 0), and whether each ask was granted.
    pub hold_more: std::sync::atomic::AtomicU64,
    pub held_more: parking_lot::Mutex<Vec<bool>>,
    /// Requests planned (decoded), refused or not.
    pub planned: std::sync::atomic::AtomicU32,
    /// Device phases that returned a proof.
    pub proved: std::sync::atomic::AtomicU32,
    /// (step, the job's circuit or device, the thread's nice value) of every step run.
    pub nice_seen: NiceLog,
    /// What `plan` says waiting for the parameters saves (nothing by default).
    pub fast_path: parking_lot::Mutex<Option<crate::prover::FastPath>>,
    /// What `read_devices` answers (nothing by default, as the CPU backend).
    pub readings: parking_lot::Mutex<Vec<DeviceTelemetry>>,
}

impl TestProver {
    pub fn new(devices: u32) -> Arc<TestProver> {
        Arc::new(TestProver {
            devices,
            panic_in_synthesis: AtomicBool::new(false),
            panic_in_plan: AtomicBool::new(false),
            params_missing: AtomicBool::new(false),
            gate: Default::default(),
            device_fault: AtomicBool::new(false),
            fatal_device: AtomicBool::new(false),
            panic_in_device: AtomicBool::new(false),
            device_gate: Default::default(),
            device_steps_held: AtomicBool::new(false),
            mid_step_gate: Default::default(),
            in_mid_step: AtomicBool::new(false),
            workers_per_device: std::sync::atomic::AtomicUsize::new(1),
            deadline_phases: Default::default(),
            boundaries_in_deadline: Default::default(),
            told_it_will_wait: Default::default(),
            hold_more: Default::default(),
            held_more: Default::default(),
            passed_in_deadline: Default::default(),
            planned: Default::default(),
            proved: Default::default(),
            nice_seen: Default::default(),
            fast_path: Default::default(),
            readings: Default::default(),
        })
    }
}

/// A deadline phase counted in [`TestProver::deadline_phases`] until it drops.
struct DeadlinePhase<'a>(&'a std::sync::atomic::AtomicU32);

impl<'a> DeadlinePhase<'a> {
    fn enter(count: &'a std::sync::atomic::AtomicU32) -> DeadlinePhase<'a> {
        count.fetch_add(1, Ordering::SeqCst);
        DeadlinePhase(count)
    }
}

impl Drop for DeadlinePhase<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Kept memory a test sets by hand ([`crate::prover::SpareMemory`]): `trim` frees exactly what
/// it is asked, as far as anything is kept.
#[derive(Default)]
pub struct KeptBytes(std::sync::atomic::AtomicU64);

impl KeptBytes {
    pub fn set(&self, bytes: u64) {
        self.0.store(bytes, std::sync::atomic::Ordering::SeqCst);
    }
}

impl crate::prover::SpareMemory for KeptBytes {
    fn held(&self) -> u64 {
        self.0.load(std::sync::atomic::Ordering::SeqCst)
    }

    fn trim(&self, bytes: u64) -> u64 {
        let freed = bytes.min(self.held());
        self.0.fetch_sub(freed, std::sync::atomic::Ordering::SeqCst);
        freed
    }
}

/// A request for `partitions` partitions of `bytes` each (encoded in its registered proof and
/// sector size).
pub fn request(kind: crate::ProofKind, partitions: u32, bytes: u64) -> ProofRequest {
    let registered = snarkd_types::Registered {
        registered_proof: u64::from(partitions),
        sector_size: bytes,
    };
    ProofRequest::new(crate::ProofInput::empty(kind, registered))
}

/// `request` with `vanilla` as its vanilla proof (PoRep's C1 output, or the one vanilla proof
/// of the other kinds): a larger or another input of the same plan.
pub fn with_vanilla(mut request: ProofRequest, vanilla: Vec<u8>) -> ProofRequest {
    use crate::ProofInput as I;
    match &mut request.input {
        I::PoRep(r) => r.vanilla_proof = vanilla,
        I::SnapDeals(r) => r.vanilla_proofs = vec![vanilla],
        I::WindowPost { post, .. } | I::WinningPost(post) => post.vanilla_proofs = vec![vanilla],
    }
    request
}

/// (step, the job's circuit or device, the thread's nice value) of every step run.
pub type NiceLog = Arc<parking_lot::Mutex<Vec<(&'static str, String, i32)>>>;

pub struct TestPlan {
    pub circuit: String,
    pub panic: bool,
    pub gate: Arc<parking_lot::Mutex<()>>,
    pub nice_seen: NiceLog,
}

impl Prover for TestProver {
    type Plan = TestPlan;
    /// The circuit id.
    type Params = String;
    /// The partition's index.
    type Partition = u32;
    type Proof = Vec<u8>;

    fn backend_name(&self) -> String {
        "test".into()
    }
    fn read_devices(&self) -> Vec<DeviceTelemetry> {
        self.readings.lock().clone()
    }
    fn devices(&self) -> Vec<DeviceInfo> {
        (0..self.devices)
            .map(|ordinal| DeviceInfo {
                ordinal,
                name: format!("test-{ordinal}"),
                memory_bytes: 1 << 30,
                workers: self.workers_per_device.load(Ordering::SeqCst),
            })
            .collect()
    }
    fn plan(&self, request: ProofRequest) -> Result<Planned<TestPlan>, EngineError> {
        self.planned.fetch_add(1, Ordering::SeqCst);
        if self.panic_in_plan.load(Ordering::SeqCst) {
            panic!("synthetic decoder exploded");
        }
        if self.params_missing.load(Ordering::SeqCst) {
            return Err(EngineError::Setup("the test params file is missing".into()));
        }
        let (kind, request) = (request.kind(), request.input.registered());
        let Ok(partitions @ 1..) = u32::try_from(request.registered_proof) else {
            return Err(EngineError::InvalidRequest("no partitions".into()));
        };
        let circuit = format!("{kind}-test");
        Ok(Planned {
            circuit_id: circuit.clone(),
            partitions,
            memory: PartitionMemory {
                total_bytes: request.sector_size,
                abc_bytes: request.sector_size / 2,
            },
            fast_path: *self.fast_path.lock(),
            plan: TestPlan {
                circuit,
                panic: self.panic_in_synthesis.load(Ordering::SeqCst),
                gate: self.gate.clone(),
                nice_seen: self.nice_seen.clone(),
            },
        })
    }
    fn knows_circuit(&self, circuit_id: &str) -> bool {
        circuit_id.ends_with("-test")
    }
    fn params_size_estimate(&self, _: &str) -> u64 {
        PARAMS_BYTES
    }
    fn load_params(&self, circuit_id: &str) -> Result<LoadedParams<String>, EngineError> {
        Ok(LoadedParams {
            params: Arc::new(circuit_id.to_string()),
            bytes: PARAMS_BYTES,
            precompiled_bytes: PRECOMPILED_BYTES,
        })
    }
    fn prove(
        &self,
        _: &DeviceInfo,
        index: u32,
        circuit: &String,
        hooks: &mut dyn PhaseHooks,
    ) -> Result<Vec<u8>, StepError> {
        if self.panic_in_device.load(Ordering::SeqCst) {
            panic!("synthetic device exploded in partition {index}");
        }
        if self.fatal_device.load(Ordering::SeqCst) {
            return Err(StepError::new(
                FailureClass::Input,
                "the input makes it fail",
            ));
        }
        if self.device_fault.load(Ordering::SeqCst) {
            return Err(StepError::new(FailureClass::Device, "device fault"));
        }
        let deadline = circuit.starts_with("winning") || circuit.starts_with("wpost");
        let _inside = deadline.then(|| DeadlinePhase::enter(&self.deadline_phases));
        let more = self.hold_more.load(Ordering::SeqCst);
        if more > 0 {
            self.held_more.lock().push(hooks.hold_more(more));
        }
        hooks.abc_released(0);
        hooks.step_done();
        drop(self.device_gate.lock());
        // While a test holds it, a phase without a deadline (the one a deadline partition
        // preempts) goes on step after step, each step a preemption point.
        while !deadline && self.device_steps_held.load(Ordering::SeqCst) {
            self.in_mid_step.store(true, Ordering::SeqCst);
            drop(self.mid_step_gate.lock());
            self.in_mid_step.store(false, Ordering::SeqCst);
            let during = self.deadline_phases.load(Ordering::SeqCst) > 0;
            if during {
                if hooks.will_wait() {
                    self.told_it_will_wait.fetch_add(1, Ordering::SeqCst);
                }
                self.boundaries_in_deadline.fetch_add(1, Ordering::SeqCst);
            }
            hooks.step_done();
            if during && self.deadline_phases.load(Ordering::SeqCst) > 0 {
                self.passed_in_deadline.fetch_add(1, Ordering::SeqCst);
            }
            if hooks.stop_requested() {
                return Err(StepError::Stopped);
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        self.proved.fetch_add(1, Ordering::SeqCst);
        let nice = crate::os_priority::current_nice();
        self.nice_seen
            .lock()
            .push(("device", format!("partition {index}"), nice));
        Ok(vec![index as u8; 4])
    }
    fn synthesize(
        &self,
        plan: &TestPlan,
        index: u32,
        _: Option<&String>,
    ) -> Result<u32, StepError> {
        drop(plan.gate.lock());
        let nice = crate::os_priority::current_nice();
        plan.nice_seen
            .lock()
            .push(("synthesis", plan.circuit.clone(), nice));
        if plan.panic {
            panic!("synthetic circuit exploded in partition {index}");
        }
        Ok(index)
    }
    fn proof_bytes(&self, proof: &Vec<u8>) -> Vec<u8> {
        proof.clone()
    }

    fn read_proof(&self, bytes: &[u8]) -> Result<Vec<u8>, StepError> {
        Ok(bytes.to_vec())
    }

    fn finalize(
        &self,
        _: &TestPlan,
        proofs: Vec<Vec<u8>>,
        _: &String,
    ) -> Result<Vec<u8>, StepError> {
        for (i, p) in proofs.iter().enumerate() {
            if p != &vec![i as u8; 4] {
                return Err(StepError::new(
                    FailureClass::Input,
                    format!("partition {i} proof out of order"),
                ));
            }
        }
        Ok(proofs.concat())
    }
}
