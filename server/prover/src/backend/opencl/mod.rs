//! The OpenCL backend: ec-gpu-gen's generated BLS12-381 kernels driven by our own host code over
//! `opencl3`, on any OpenCL device (NVIDIA, AMD, Intel, or PoCL's CPU device, which is what the
//! tests run on). One [`OpenClBackend`] per device; its workers share the compiled program and
//! the device's memory pool, each with its own command queue.
//!
//! Faults: a step (the H FFTs, one MSM) that fails on the device is run on the device again up
//! to [`OpenClOptions::device_attempts`] times, then on the CPU, so the partition still gets its
//! proof (which `finalize` verifies like any other). After [`OpenClOptions::unhealthy_after`]
//! failed steps in a row the device is marked unhealthy and the backend runs every step on the
//! CPU from then on. Each fault is counted in [`DeviceTimings::faults`]. An H polynomial too
//! large for a worker's share of the device runs on the CPU without counting as a fault.
//!
//! Layout:
//! - `device.rs`: discovery across all platforms, selection, the shared memory pool.
//! - `kernels.rs`: kernel source, per-device program cache, buffer helpers.
//! - `queue.rs`: [`DeviceQueue`], one worker's queue and memory share on a device.
//! - `fft.rs`: the H polynomial on the device.
//! - `msm.rs`: chunked multiexp over G1 and G2 with host-side reduction.

mod device;
mod fft;
mod kernels;
mod msm;
mod queue;

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use bellperson::groth16::Proof;
use blstrs::{Bls12, G1Affine, G1Projective, G2Affine, G2Projective, Scalar as Fr};

pub use device::{list_devices, select_devices, DeviceMemory, OpenClDevice, OpenClDeviceInfo};
pub use queue::DeviceQueue;

use super::{DeviceBackend, PciAddress, PoolUse};
use crate::error::{ProverError, Result};
use crate::groth16::Scalars;
use crate::groth16::{
    prove_partition_with, CpuOps, DeviceOps, DeviceTimings, PhaseHooks, Randomness,
};
use crate::keys::LoadedParams;
use crate::synthesis::{panic_message, Abc, SynthesizedPartition};

/// Share of a device's global memory left to the driver and other processes (display, other
/// contexts). 20 % is what ec-gpu-gen leaves on GPUs; PoCL's "device memory" is host RAM.
pub const DEVICE_MEMORY_HEADROOM_PERCENT: u64 = 20;

/// Knobs of the OpenCL backend.
#[derive(Debug, Clone)]
pub struct OpenClOptions {
    /// Workers that share the device (each gets this fraction of its memory).
    pub workers_per_device: usize,
    /// Cap on the terms of one multiexp launch; memory decides below it. Tests set it low to
    /// force chunking.
    pub max_chunk_terms: usize,
    /// Tries of a step on the device before it runs on the CPU.
    pub device_attempts: u32,
    /// Failed steps in a row after which the device is no longer used.
    pub unhealthy_after: u32,
}

impl Default for OpenClOptions {
    fn default() -> Self {
        OpenClOptions {
            workers_per_device: 1,
            max_chunk_terms: usize::MAX,
            device_attempts: 2,
            unhealthy_after: 3,
        }
    }
}

/// The device phase on one OpenCL device.
pub struct OpenClBackend {
    name: String,
    device: OpenClDevice,
    options: OpenClOptions,
    memory: Arc<DeviceMemory>,
    /// Idle queues; a worker takes one (or opens one) per partition.
    queues: Mutex<Vec<DeviceQueue>>,
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
    /// A backend on `device`, compiling the kernels now (the first build on a machine can take
    /// minutes on PoCL; the driver caches it for later processes).
    pub fn new(device: OpenClDevice, options: OpenClOptions) -> Result<OpenClBackend> {
        let usable = device.info.memory_bytes / 100 * (100 - DEVICE_MEMORY_HEADROOM_PERCENT);
        let memory = DeviceMemory::new(usable);
        let first = DeviceQueue::new(
            device.clone(),
            Arc::clone(&memory),
            options.workers_per_device,
            options.max_chunk_terms,
        )?;
        Ok(OpenClBackend {
            name: format!("opencl:{}", device.info.ordinal),
            device,
            options,
            memory,
            queues: Mutex::new(vec![first]),
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

    /// The H polynomial on the device (no fallback; for tests and the benchmark).
    pub fn compute_h(&self, abc: &Abc) -> Result<Vec<Fr>> {
        self.with_queue(|q| fft::compute_h(q, abc))
    }

    /// A G1 MSM on the device (no fallback; for tests and the benchmark).
    pub fn msm_g1(&self, bases: &[G1Affine], scalars: Scalars<'_>) -> Result<G1Projective> {
        self.with_queue(|q| msm::msm_g1(q, bases, scalars))
    }

    /// A G2 MSM on the device (no fallback; for tests and the benchmark).
    pub fn msm_g2(&self, bases: &[G2Affine], scalars: Scalars<'_>) -> Result<G2Projective> {
        self.with_queue(|q| msm::msm_g2(q, bases, scalars))
    }

    /// Runs `f` on an idle queue of the device, opening one if every queue is busy.
    fn with_queue<T>(&self, f: impl FnOnce(&DeviceQueue) -> Result<T>) -> Result<T> {
        let taken = self.queues.lock().unwrap_or_else(|p| p.into_inner()).pop();
        let queue = match taken {
            Some(q) => q,
            None => DeviceQueue::new(
                self.device.clone(),
                Arc::clone(&self.memory),
                self.options.workers_per_device,
                self.options.max_chunk_terms,
            )?,
        };
        let out = f(&queue);
        self.queues
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(queue);
        out
    }

    /// Runs a device step with the fault policy: retried on the device, then `cpu()`.
    fn step<I, T>(
        &self,
        faults: &AtomicU32,
        what: &str,
        input: I,
        device: impl Fn(&DeviceQueue, &I) -> Result<T>,
        cpu: impl FnOnce(I) -> Result<T>,
    ) -> Result<T> {
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
                self.with_queue(|q| {
                    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| device(q, &input)))
                        .unwrap_or_else(|p| {
                            Err(ProverError::Device {
                                backend: self.name.clone(),
                                reason: panic_message(&p),
                            })
                        })
                })
            };
            match result {
                Ok(v) => {
                    self.health.failures_in_a_row.store(0, Ordering::Relaxed);
                    return Ok(v);
                }
                Err(e) => {
                    faults.fetch_add(1, Ordering::Relaxed);
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
                }
            }
        }
        cpu(input)
    }

    /// Whether the H computation for vectors of `len` elements fits a worker's memory share
    /// and the device's largest buffer.
    fn fft_fits(&self, len: usize) -> bool {
        let (bytes, largest) = fft::h_memory(len);
        let share = self.memory.limit() / self.options.workers_per_device.max(1) as u64;
        bytes <= share && largest <= self.device.info.max_alloc_bytes
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

/// The device steps of one partition, with the fault policy.
struct OpenClOps<'a> {
    backend: &'a OpenClBackend,
    faults: AtomicU32,
}

/// A device multiexp step: tens of milliseconds on a datacenter GPU, so a deadline partition
/// hardly waits, while the per-step cost (a reservation, buffers, the last reductions on the
/// host) stays small against the step.
const GPU_STEP_POINTS: usize = 1 << 24;

impl DeviceOps for OpenClOps<'_> {
    fn compute_h(&self, abc: Abc) -> Result<Vec<Fr>> {
        let b = self.backend;
        if !b.fft_fits(abc.a.len()) {
            // Not a fault: this domain is larger than a worker's share of the device.
            tracing::debug!(device = %b.name, len = abc.a.len(), "h polynomial on the cpu: too large for the device");
            return CpuOps.compute_h(abc);
        }
        b.step(&self.faults, "fft", abc, fft::compute_h, |abc| {
            CpuOps.compute_h(abc)
        })
    }

    fn msm_g1(&self, bases: &[G1Affine], scalars: Scalars<'_>) -> Result<G1Projective> {
        let b = self.backend;
        b.step(
            &self.faults,
            "msm g1",
            (),
            |q, _| msm::msm_g1(q, bases, scalars),
            |_| CpuOps.msm_g1(bases, scalars),
        )
    }

    fn msm_g2(&self, bases: &[G2Affine], scalars: Scalars<'_>) -> Result<G2Projective> {
        let b = self.backend;
        b.step(
            &self.faults,
            "msm g2",
            (),
            |q, _| msm::msm_g2(q, bases, scalars),
            |_| CpuOps.msm_g2(bases, scalars),
        )
    }

    fn step_points(&self) -> usize {
        GPU_STEP_POINTS
    }

    fn faults(&self) -> u32 {
        self.faults.load(Ordering::Relaxed)
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
        let info = &self.device.info;
        Some(
            format!("{} {}", info.platform, info.driver_version)
                .trim()
                .to_string(),
        )
    }

    fn pool(&self) -> Option<PoolUse> {
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
        let ops = OpenClOps {
            backend: self,
            faults: AtomicU32::new(0),
        };
        prove_partition_with(&ops, partition, params, randomness, hooks)
    }
}
