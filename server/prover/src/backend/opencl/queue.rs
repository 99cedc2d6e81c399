//! [`DeviceQueue`]: one worker's handle on one device — the shared program, its own in-order
//! command queue, its share of the device's memory pool, and the counts of what it did: bytes
//! each way, kernel launches and the times the host waited.
//!
//! Launches and copies to the device are enqueued without waiting; the queue runs them in order,
//! so a kernel sees every copy enqueued before it. The host waits only to read results back
//! ([`DeviceQueue::read`], after any number of reads enqueued without waiting) or at the end of
//! a step ([`DeviceQueue::finish`]); a copy enqueued without waiting reads or writes host
//! memory that the caller keeps alive and untouched until the next wait (the plan's buffers
//! outlive its steps, and dropping the plan waits for the queue).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use opencl3::command_queue::CommandQueue;
use opencl3::kernel::{ExecuteKernel, Kernel};
use opencl3::memory::Buffer;
use opencl3::types::{CL_BLOCKING, CL_NON_BLOCKING};

use super::device::{DeviceMemory, MemoryGrant, OpenClDevice, OpenClDeviceInfo};
pub use super::kernels::LOCAL_WORK_SIZE;
use super::kernels::{cl_err, DeviceProgram};
use super::OpenClOptions;
use crate::error::Result;
use crate::groth16::DeviceCounters;

/// Multiexp work groups per compute unit on a GPU when the options leave it to the device: a
/// GPU's compute unit keeps several groups' warps in flight to hide memory latency (one group
/// of 128 items is 4 of the 64 warps an NVIDIA SM can hold). An estimate to be measured
/// (`device_shape --groups`, run by `scripts/gpu-check.sh`).
pub const GPU_GROUPS_PER_UNIT: usize = 4;

/// The multiexp's work groups per compute unit: `asked` where it is set (not 0), else
/// [`GPU_GROUPS_PER_UNIT`] on a GPU and one on a CPU device (PoCL runs a group on one core).
pub fn groups_per_unit(device: &OpenClDeviceInfo, asked: usize) -> usize {
    match (asked, device.kind) {
        (0, "gpu") => GPU_GROUPS_PER_UNIT,
        (0, _) => 1,
        (n, _) => n,
    }
}

/// One worker's access to a device.
pub struct DeviceQueue {
    pub device: OpenClDevice,
    pub program: Arc<DeviceProgram>,
    queue: CommandQueue,
    memory: Arc<DeviceMemory>,
    /// Bytes this worker may hold at once: the pool divided among the device's workers, so every
    /// worker can always run and none waits for another's whole MSM.
    share: u64,
    /// Upper bound on the terms of one multiexp launch (tests set it low to force chunking).
    pub max_chunk_terms: usize,
    groups_per_unit: usize,
    counts: Counts,
}

#[derive(Default)]
struct Counts {
    to_device: AtomicU64,
    from_device: AtomicU64,
    launches: AtomicU64,
    waits: AtomicU64,
    additions: AtomicU64,
}

impl DeviceQueue {
    /// A queue on `device` with `options`' workers per device, chunk cap and work groups per
    /// compute unit.
    pub fn new(
        device: OpenClDevice,
        program: Arc<DeviceProgram>,
        memory: Arc<DeviceMemory>,
        options: &OpenClOptions,
    ) -> Result<DeviceQueue> {
        #[allow(deprecated)] // the 1.2 entry point: PoCL 3 and older NVIDIA drivers have it
        let queue = CommandQueue::create_default(&program.context, 0)
            .map_err(|e| cl_err("creating a command queue", e))?;
        let share = memory.limit() / options.workers_per_device.max(1) as u64;
        let groups_per_unit = groups_per_unit(&device.info, options.groups_per_unit);
        Ok(DeviceQueue {
            device,
            program,
            queue,
            memory,
            share,
            max_chunk_terms: options.max_chunk_terms.max(1),
            groups_per_unit,
            counts: Counts::default(),
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

    /// Parallel work units for the multiexp: [`Self::groups_per_unit`] work groups per compute
    /// unit (the plan halves them where their points would crowd the memory).
    pub fn work_units(&self) -> usize {
        self.work_units_at_one_group() * self.groups_per_unit
    }

    /// The work units of one work group a compute unit: what a step falls back to where more
    /// groups' points do not fit, and what the device's memory is planned with.
    pub fn work_units_at_one_group(&self) -> usize {
        LOCAL_WORK_SIZE * self.device.info.compute_units.max(1) as usize
    }

    /// The device's memory pool.
    pub fn memory(&self) -> &Arc<DeviceMemory> {
        &self.memory
    }

    /// Reserves `bytes` of the device's memory (waits while other workers hold it).
    pub fn reserve(&self, bytes: u64) -> Result<MemoryGrant> {
        self.memory.reserve(bytes)
    }

    /// What this queue has done since it was opened.
    pub fn counters(&self) -> DeviceCounters {
        let c = &self.counts;
        DeviceCounters {
            bytes_to_device: c.to_device.load(Ordering::Relaxed),
            bytes_from_device: c.from_device.load(Ordering::Relaxed),
            launches: c.launches.load(Ordering::Relaxed),
            host_waits: c.waits.load(Ordering::Relaxed),
            point_additions: c.additions.load(Ordering::Relaxed),
        }
    }

    /// Counts `n` curve-point additions a multiexp's kernels did (known from what they report).
    pub fn count_additions(&self, n: u64) {
        self.counts.additions.fetch_add(n, Ordering::Relaxed);
    }

    /// Enqueues `kernel` over `groups` work groups of `local` items; does not wait.
    pub fn launch(
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
        self.counts.launches.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    /// Waits until everything enqueued has run.
    pub fn finish(&self) -> Result<()> {
        self.counts.waits.fetch_add(1, Ordering::Relaxed);
        self.queue
            .finish()
            .map_err(|e| cl_err("running the device's queue", e))
    }

    /// Enqueues a copy of `data` into `buf` from element `offset` on, without waiting.
    ///
    /// # Safety
    /// `data` must stay alive and unchanged until this queue's next wait ([`Self::finish`],
    /// [`Self::read`], or the drop of the plan that owns the queue's work).
    pub unsafe fn write_async<T>(
        &self,
        buf: &mut Buffer<T>,
        offset: usize,
        data: &[T],
    ) -> Result<()> {
        // SAFETY: the caller keeps `data` alive until the copy has run (this function's
        // contract).
        unsafe { self.copy_up(buf, offset, data, CL_NON_BLOCKING) }
    }

    /// Copies `data` into `buf` from element `offset` on and waits for the copy.
    pub fn write<T>(&self, buf: &mut Buffer<T>, offset: usize, data: &[T]) -> Result<()> {
        // SAFETY: a blocking copy reads `data` before it returns.
        unsafe { self.copy_up(buf, offset, data, CL_BLOCKING) }?;
        if !data.is_empty() {
            self.counts.waits.fetch_add(1, Ordering::Relaxed);
        }
        Ok(())
    }

    /// # Safety
    /// Without `blocking`, `data` must stay alive and unchanged until the copy has run.
    unsafe fn copy_up<T>(
        &self,
        buf: &mut Buffer<T>,
        offset: usize,
        data: &[T],
        blocking: opencl3::types::cl_bool,
    ) -> Result<()> {
        if data.is_empty() {
            return Ok(());
        }
        // SAFETY: `buf` holds at least offset + data.len() elements (callers allocate it so);
        // `data`'s lifetime is the caller's to keep (this function's contract).
        unsafe {
            self.queue.enqueue_write_buffer(
                buf,
                blocking,
                offset * std::mem::size_of::<T>(),
                data,
                &[],
            )
        }
        .map_err(|e| cl_err("writing a buffer", e))?;
        self.counts
            .to_device
            .fetch_add(std::mem::size_of_val(data) as u64, Ordering::Relaxed);
        Ok(())
    }

    /// Sets elements `offset..offset + len` of `buf` to `value` on the device (nothing but the
    /// pattern crosses the bus); does not wait. `T`'s size must be a power of two up to 128.
    pub fn fill<T>(&self, buf: &mut Buffer<T>, value: T, offset: usize, len: usize) -> Result<()> {
        if len == 0 {
            return Ok(());
        }
        let size = std::mem::size_of::<T>();
        // SAFETY: the pattern is one element (OpenCL copies it before returning), the range lies
        // within `buf` (callers allocate it so).
        unsafe {
            self.queue.enqueue_fill_buffer(
                buf,
                std::slice::from_ref(&value),
                offset * size,
                len * size,
                &[],
            )
        }
        .map_err(|e| cl_err("zeroing a buffer", e))?;
        Ok(())
    }

    /// Copies the first `out.len()` elements of `buf` into `out`, after everything enqueued
    /// before, and waits.
    pub fn read<T>(&self, buf: &Buffer<T>, out: &mut [T]) -> Result<()> {
        // SAFETY: a blocking read has written `out` when it returns.
        unsafe { self.copy_down(buf, out, CL_BLOCKING) }?;
        if !out.is_empty() {
            self.counts.waits.fetch_add(1, Ordering::Relaxed);
        }
        Ok(())
    }

    /// Enqueues a copy of the first `out.len()` elements of `buf` into `out`, after everything
    /// enqueued before, without waiting.
    ///
    /// # Safety
    /// `out` must stay alive, and be neither read nor written, until this queue's next wait
    /// has returned successfully; if that wait fails, `out` must never be freed.
    pub unsafe fn read_async<T>(&self, buf: &Buffer<T>, out: &mut [T]) -> Result<()> {
        // SAFETY: the caller keeps `out` for the copy (this function's contract).
        unsafe { self.copy_down(buf, out, CL_NON_BLOCKING) }
    }

    /// # Safety
    /// Without `blocking`, `out` must stay untouched until the copy has run.
    unsafe fn copy_down<T>(
        &self,
        buf: &Buffer<T>,
        out: &mut [T],
        blocking: opencl3::types::cl_bool,
    ) -> Result<()> {
        if out.is_empty() {
            return Ok(());
        }
        // SAFETY: `buf` holds at least `out.len()` initialised elements (callers size it so);
        // `out`'s lifetime is the caller's to keep (this function's contract).
        unsafe { self.queue.enqueue_read_buffer(buf, blocking, 0, out, &[]) }
            .map_err(|e| cl_err("reading a buffer", e))?;
        self.counts
            .from_device
            .fetch_add(std::mem::size_of_val(out) as u64, Ordering::Relaxed);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_gpu_runs_several_work_groups_per_compute_unit_a_cpu_device_one_and_a_setting_wins() {
        let device = |kind| OpenClDeviceInfo {
            ordinal: 0,
            platform: "p".into(),
            name: "d".into(),
            kind,
            memory_bytes: 1 << 30,
            max_alloc_bytes: 1 << 28,
            compute_units: 132,
            pci: None,
            driver_version: String::new(),
        };
        assert_eq!(groups_per_unit(&device("gpu"), 0), GPU_GROUPS_PER_UNIT);
        assert_eq!(groups_per_unit(&device("cpu"), 0), 1);
        assert_eq!(groups_per_unit(&device("gpu"), 2), 2);
        assert_eq!(groups_per_unit(&device("cpu"), 3), 3);
    }
}
