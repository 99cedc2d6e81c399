//! The OpenCL backend: ec-gpu-gen's generated BLS12-381 field, curve and FFT code and our own
//! multiexp and element-wise kernels, driven by our own host code over `opencl3`, on any OpenCL
//! device (NVIDIA, AMD, Intel, or PoCL's CPU device, which is what the tests run on). One
//! [`OpenClBackend`] per device; its workers share the compiled program, the device's memory
//! pool and the circuits' bases kept on the device, each with its own command queue.
//!
//! Data stays where it is used: a circuit's bases go up once per device and stay while its keys
//! are loaded (`resident.rs`), a partition's witness goes up once, h never comes back, the
//! multiexps read their scalars on the device and work in proportion to the witness (zeros
//! dropped, ones summed, the rest's signed digits sorted by bucket and each bucket summed over
//! its run). Every byte over the bus, launch and host wait is counted ([`crate::groth16::DeviceCounters`]).
//!
//! Faults: a step that fails on the device is run there again up to
//! [`OpenClOptions::device_attempts`] times, then the partition's remaining steps run on the CPU,
//! so it still gets its proof (which `finalize` verifies like any other). After
//! [`OpenClOptions::unhealthy_after`] failed steps in a row the device is marked unhealthy and
//! every partition runs on the CPU from then on. Each fault is counted in
//! [`DeviceTimings::faults`]. A step that finds no room in the device's pool runs on the CPU
//! without counting as a fault.
//!
//! Layout:
//! - `device.rs`: discovery across all platforms, selection, the shared memory pool.
//! - `kernels.rs`: kernel source (`snarkd_scalar.cl`, `snarkd_sort.cl`, `snarkd_point.cl` with
//!   `snarkd_xyzz.cl`, and ec-gpu-gen's), the per-device program, buffers.
//! - `kernel_cache.rs`: compiled programs kept on disk between processes.
//! - `queue.rs`: [`DeviceQueue`], one worker's queue and memory share on a device, with counts.
//! - `workers.rs`: how many workers a device runs when the configuration leaves it to the device.
//! - `resident.rs`: circuits' bases kept on the device, evicted least recently used.
//! - `plan.rs`: one partition's device phase (a [`crate::groth16::DevicePlan`]).
//! - `fft.rs`: the H polynomial on the device.
//! - `msm.rs`: the split multiexp over G1 and G2, a pipeline of chunks across a partition's
//!   steps (its read-backs in flight: `flight.rs`); `msm_plan.rs` cuts a step into chunks
//!   within the memory it may hold; `buckets.rs` sorts a chunk's digits by bucket and sums them.
//! - `windows.rs`: how a chunk's exponents are cut into windows (signed digits, the window
//!   chosen by the additions it costs and capped by memory) and the host's sum of the windows.
//! - `settling.rs`: what a pipeline dropped with work in flight keeps until the queue's wait.
//! - `one_off.rs`: single multiexps and H on the device, for tests and the benchmarks.

mod buckets;
mod counts;
mod device;
mod fft;
mod flight;
mod kernel_cache;
mod kernels;
#[cfg(feature = "bench")]
mod legacy;
mod msm;
mod msm_plan;
mod one_off;
mod plan;
mod queue;
mod resident;
mod settling;
mod stream;
mod windows;
mod workers;

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use bellperson::groth16::Proof;
use blstrs::Bls12;

pub use crate::groth16::G2On;
pub use device::{
    list_devices, preferred_device, select_devices, DeviceMemory, OpenClDevice, OpenClDeviceInfo,
};
pub use kernels::{BuiltFrom, DeviceProgram, KernelBuild, LimbBits};
pub use queue::{groups_per_unit, DeviceQueue, GPU_GROUPS_PER_UNIT};
pub use workers::default_workers;

use super::{DeviceBackend, PciAddress, PoolUse};
use crate::error::{ProverError, Result};
use crate::filecoin::estimate::PhaseOn;
use crate::groth16::{prove_with_plan, DeviceTimings, PhaseHooks, Randomness};
use crate::keys::LoadedParams;
use crate::synthesis::{panic_message, SynthesizedPartition};
use resident::ResidentCache;

/// Share of a device's global memory left to the driver and other processes (display, other
/// contexts). 20 % is what ec-gpu-gen leaves on GPUs; PoCL's "device memory" is host RAM.
pub const DEVICE_MEMORY_HEADROOM_PERCENT: u64 = 20;

/// The memory pool of a device with `memory_bytes` of global memory: all of it less
/// [`DEVICE_MEMORY_HEADROOM_PERCENT`].
pub fn pool_bytes(memory_bytes: u64) -> u64 {
    memory_bytes / 100 * (100 - DEVICE_MEMORY_HEADROOM_PERCENT)
}

/// Knobs of the OpenCL backend.
#[derive(Debug, Clone)]
pub struct OpenClOptions {
    /// Workers that share the device (each gets this fraction of its memory).
    pub workers_per_device: usize,
    /// Cap on the terms of one multiexp launch; memory decides below it. Tests set it low to
    /// force chunking.
    pub max_chunk_terms: usize,
    /// Multiexp work groups per compute unit; 0 leaves it to the device ([`groups_per_unit`]).
    pub groups_per_unit: usize,
    /// Tries of a step on the device before it runs on the CPU.
    pub device_attempts: u32,
    /// Failed steps in a row after which the device is no longer used.
    pub unhealthy_after: u32,
    /// Keep circuits' bases on the device where they fit (off: stream them every step).
    pub keep_params: bool,
    /// The device memory the backend may use; by default its global memory less
    /// [`DEVICE_MEMORY_HEADROOM_PERCENT`]. Tests set it small to force streaming.
    pub pool_bytes: Option<u64>,
    /// Limb width of the field code.
    pub limbs: LimbBits,
    /// Where compiled kernels are kept between processes (`None`: built from source in every
    /// process, the driver's own cache aside).
    pub kernel_cache: Option<PathBuf>,
    /// Where B's G2 multiexp runs: as the phase's last steps on the device, or on the host's
    /// threads beside the G1 steps (its bases then not kept on the device; streamed up for a
    /// partition whose budget had no room for it on the host).
    pub b_g2: G2On,
}

/// The environment variable that sets the daemon's `[gpus] kernel_cache`: the benchmarks and
/// tests that build kernels outside a daemon keep them there too when it is set
/// ([`kernel_cache_from_env`]), so only the first of them compiles from source.
pub const KERNEL_CACHE_ENV: &str = "SNARKD_GPUS_KERNEL_CACHE";

/// The directory [`KERNEL_CACHE_ENV`] names, if it is set and not empty.
pub fn kernel_cache_from_env() -> Option<PathBuf> {
    std::env::var_os(KERNEL_CACHE_ENV)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
}

impl Default for OpenClOptions {
    fn default() -> Self {
        OpenClOptions {
            workers_per_device: 1,
            max_chunk_terms: usize::MAX,
            groups_per_unit: 0,
            device_attempts: 2,
            unhealthy_after: 3,
            keep_params: true,
            pool_bytes: None,
            limbs: LimbBits::default(),
            kernel_cache: None,
            b_g2: G2On::Device,
        }
    }
}

/// The device phase on one OpenCL device.
pub struct OpenClBackend {
    name: String,
    device: OpenClDevice,
    options: OpenClOptions,
    program: Arc<DeviceProgram>,
    memory: Arc<DeviceMemory>,
    /// Idle queues; a worker takes one (or opens one) per partition.
    queues: Mutex<Vec<DeviceQueue>>,
    /// Circuits' bases kept on the device.
    resident: ResidentCache,
    health: Health,
}

#[derive(Default)]
struct Health {
    failures_in_a_row: AtomicU32,
    unhealthy: AtomicBool,
    /// Test-only: the next this-many device steps fail.
    injected: AtomicU32,
}

impl OpenClBackend {
    /// A backend on `device`, building the kernels now: from the binary kept in
    /// [`OpenClOptions::kernel_cache`] when there is a usable one (seconds), else from source
    /// (minutes the first time on a machine).
    pub fn new(device: OpenClDevice, options: OpenClOptions) -> Result<OpenClBackend> {
        let usable = pool_bytes(device.info.memory_bytes);
        let memory = DeviceMemory::new(options.pool_bytes.unwrap_or(usable).min(usable));
        let program = DeviceProgram::get(&device, options.limbs, options.kernel_cache.as_deref())?;
        let first = DeviceQueue::new(
            device.clone(),
            Arc::clone(&program),
            Arc::clone(&memory),
            &options,
        )?;
        Ok(OpenClBackend {
            name: device.info.backend_name(),
            device,
            options,
            program,
            memory,
            queues: Mutex::new(vec![first]),
            resident: ResidentCache::default(),
            health: Health::default(),
        })
    }

    pub fn device(&self) -> &OpenClDeviceInfo {
        &self.device.info
    }

    /// The device's memory pool (reserved bytes can be watched by tests).
    pub fn memory(&self) -> &Arc<DeviceMemory> {
        &self.memory
    }

    /// Test hook (the `test-hooks` feature): the next `steps` device steps fail as a device
    /// error would.
    #[cfg(feature = "test-hooks")]
    pub fn inject_faults(&self, steps: u32) {
        self.health.injected.store(steps, Ordering::SeqCst);
    }

    /// Device bytes held by circuits' bases kept on the device.
    pub fn resident_bytes(&self) -> u64 {
        self.resident.bytes()
    }

    /// Pinned host memory held by the idle workers' queues for their copies to the device
    /// (none before a worker's first).
    pub fn pinned_bytes(&self) -> u64 {
        let queues = self.queues.lock().unwrap_or_else(|p| p.into_inner());
        queues.iter().map(DeviceQueue::pinned_bytes).sum()
    }

    /// Runs `f` on an idle queue of the device, opening one if every queue is busy.
    fn with_queue<T>(&self, f: impl FnOnce(&DeviceQueue) -> Result<T>) -> Result<T> {
        let queue = self.take_queue()?;
        let out = f(&queue);
        self.return_queue(queue);
        out
    }

    /// An idle queue of the device, or a new one when every queue is busy.
    fn take_queue(&self) -> Result<DeviceQueue> {
        let taken = self.queues.lock().unwrap_or_else(|p| p.into_inner()).pop();
        match taken {
            Some(q) => Ok(q),
            None => DeviceQueue::new(
                self.device.clone(),
                Arc::clone(&self.program),
                Arc::clone(&self.memory),
                &self.options,
            ),
        }
    }

    fn return_queue(&self, queue: DeviceQueue) {
        self.queues
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(queue);
    }

    /// Runs a device step with the fault policy: tried up to `device_attempts` times while the
    /// device is healthy, each failure counted in `faults` and towards the device's health.
    /// `None`: the step is to run on the CPU (it failed every time, the device is unhealthy,
    /// or it found no room, which is not a fault).
    fn attempt<T>(
        &self,
        q: &DeviceQueue,
        faults: &mut u32,
        what: &str,
        mut device: impl FnMut(&DeviceQueue) -> Result<Option<T>>,
    ) -> Option<T> {
        for attempt in 1..=self.options.device_attempts {
            if !self.is_healthy() {
                break;
            }
            let result = if self.take_injected() {
                Err(ProverError::Device {
                    backend: self.name.clone(),
                    reason: "injected fault".into(),
                })
            } else {
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| device(q))).unwrap_or_else(
                    |p| {
                        Err(ProverError::Device {
                            backend: self.name.clone(),
                            reason: panic_message(&p),
                        })
                    },
                )
            };
            match result {
                Ok(Some(v)) => {
                    self.health.failures_in_a_row.store(0, Ordering::Relaxed);
                    return Some(v);
                }
                Ok(None) => {
                    tracing::debug!(device = %self.name, step = what, "no room on the device: the step runs on the cpu");
                    return None;
                }
                Err(e) => {
                    *faults += 1;
                    let in_a_row = self
                        .health
                        .failures_in_a_row
                        .fetch_add(1, Ordering::Relaxed)
                        + 1;
                    if in_a_row >= self.options.unhealthy_after {
                        self.health.unhealthy.store(true, Ordering::Relaxed);
                    }
                    tracing::warn!(
                        device = %self.name, step = what, attempt, error = %e,
                        unhealthy = !self.is_healthy(), "device step failed"
                    );
                    // What the failed attempt enqueued must not run into the next one.
                    let _ = q.finish();
                }
            }
        }
        None
    }

    // `fetch_update` is called `try_update` from Rust 1.95 on, later than our rust-version.
    #[allow(deprecated)]
    fn take_injected(&self) -> bool {
        self.health
            .injected
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok()
    }
}

/// A device multiexp step: tens of milliseconds on a datacenter GPU, so a deadline partition
/// hardly waits, while the per-step cost (the sums read back and added on the host, beside the
/// next step's first chunk) stays small against the step.
const GPU_STEP_POINTS: usize = 1 << 24;

fn no_room(device: &str) -> ProverError {
    ProverError::Device {
        backend: device.to_string(),
        reason: "no room in the device's memory pool now".into(),
    }
}

impl DeviceBackend for OpenClBackend {
    fn name(&self) -> &str {
        &self.name
    }

    /// Whether the device still runs steps (false once it failed too often).
    fn is_healthy(&self) -> bool {
        !self.health.unhealthy.load(Ordering::Relaxed)
    }

    fn pci_address(&self) -> Option<PciAddress> {
        self.device.info.pci
    }

    fn driver(&self) -> Option<String> {
        Some(self.device.info.driver())
    }

    /// On the device while it is healthy (its steps that fall back to the CPU ask for the host
    /// memory they need then); on the host once it is not.
    fn phase_on(&self) -> PhaseOn {
        match self.is_healthy() {
            true => PhaseOn::Device,
            false => PhaseOn::Host,
        }
    }

    fn pool(&self) -> Option<PoolUse> {
        // Parameters evicted from host memory leave the device too.
        self.resident.sweep();
        Some(PoolUse {
            used_bytes: self.memory.used(),
            limit_bytes: self.memory.limit(),
        })
    }

    fn prove(
        &self,
        partition: SynthesizedPartition,
        params: &LoadedParams,
        randomness: Randomness,
        hooks: &mut dyn PhaseHooks,
    ) -> Result<(Proof<Bls12>, DeviceTimings)> {
        prove_with_plan(partition, params, randomness, hooks, |witness, _| {
            plan::OpenClPlan::open(self, witness, params)
        })
    }
}
