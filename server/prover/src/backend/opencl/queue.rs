//! [`DeviceQueue`]: one worker's handle on one device — the shared program, its own command
//! queue, and its share of the device's memory pool.

use std::sync::Arc;

use opencl3::command_queue::CommandQueue;
use opencl3::kernel::{ExecuteKernel, Kernel};

use super::device::{DeviceMemory, MemoryGrant, OpenClDevice};
use super::kernels::{cl_err, DeviceProgram};
use crate::error::Result;

/// Work items per work group for the multiexp kernel (and the unit of its work size).
pub const LOCAL_WORK_SIZE: usize = 128;

/// One worker's access to a device.
pub struct DeviceQueue {
    pub device: OpenClDevice,
    pub program: Arc<DeviceProgram>,
    pub queue: CommandQueue,
    memory: Arc<DeviceMemory>,
    /// Bytes this worker may hold at once: the pool divided among the device's workers, so every
    /// worker can always run and none waits for another's whole MSM.
    share: u64,
    /// Upper bound on the terms of one multiexp launch (tests set it low to force chunking).
    pub max_chunk_terms: usize,
}

impl DeviceQueue {
    pub fn new(
        device: OpenClDevice,
        memory: Arc<DeviceMemory>,
        workers_on_device: usize,
        max_chunk_terms: usize,
    ) -> Result<DeviceQueue> {
        let program = DeviceProgram::get(&device)?;
        #[allow(deprecated)] // the 1.2 entry point: PoCL 3 and older NVIDIA drivers have it
        let queue = CommandQueue::create_default(&program.context, 0)
            .map_err(|e| cl_err("creating a command queue", e))?;
        let share = memory.limit() / workers_on_device.max(1) as u64;
        Ok(DeviceQueue {
            device,
            program,
            queue,
            memory,
            share,
            max_chunk_terms: max_chunk_terms.max(1),
        })
    }

    /// Bytes this worker may reserve at once.
    pub fn share(&self) -> u64 {
        self.share
    }

    /// The largest single buffer the device allows.
    pub fn max_alloc(&self) -> u64 {
        self.device.info.max_alloc_bytes
    }

    /// Parallel work units for the multiexp: a work group per compute unit.
    pub fn work_units(&self) -> usize {
        LOCAL_WORK_SIZE * self.device.info.compute_units.max(1) as usize
    }

    /// Reserves `bytes` of the device's memory (waits while other workers hold it).
    pub fn reserve(&self, bytes: u64) -> Result<MemoryGrant> {
        self.memory.reserve(bytes)
    }

    /// Runs `kernel` over `groups` work groups of `local` items and waits for it.
    pub fn run(
        &self,
        kernel: &Kernel,
        groups: usize,
        local: usize,
        set_args: impl FnOnce(&mut ExecuteKernel),
    ) -> Result<()> {
        let mut exec = ExecuteKernel::new(kernel);
        set_args(&mut exec);
        // SAFETY: every caller sets exactly the kernel's arguments, with buffers large enough for
        // the work size it launches.
        unsafe {
            exec.set_global_work_size(groups * local)
                .set_local_work_size(local)
                .enqueue_nd_range(&self.queue)
        }
        .map_err(|e| cl_err("launching a kernel", e))?;
        self.queue
            .finish()
            .map_err(|e| cl_err("running a kernel", e))
    }
}
