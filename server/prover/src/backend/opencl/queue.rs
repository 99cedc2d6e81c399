//! [`DeviceQueue`]: one worker's handle on one device — the shared program, its own in-order
//! command queue, its share of the device's memory pool, and the counts of what it did: bytes
//! each way, kernel launches and the times the host waited.
//!
//! Launches and copies to the device are enqueued without waiting; the queue runs them in order,
//! so a kernel sees every copy enqueued before it. The host waits only to read results back
//! ([`DeviceQueue::read`], or [`DeviceQueue::wait`] for a [`DeviceQueue::marker`] behind reads
//! enqueued without waiting) or at the end of a step ([`DeviceQueue::finish`]); a copy enqueued
//! without waiting reads or writes host memory that the caller keeps alive and untouched until
//! it has run (the plan's buffers outlive its steps, and dropping the plan waits for the queue).
//!
//! Vectors and bases go up through pinned memory on a second queue, the copy queue
//! ([`DeviceQueue::stage`], `stream.rs`), so that a copy runs while kernels do; the kernels
//! that read it wait for its event ([`DeviceQueue::after`]), not the host.
//! [`DeviceQueue::finish`] waits for both queues.

use std::sync::Arc;

use opencl3::command_queue::CommandQueue;
use opencl3::event::Event;
use opencl3::kernel::{ExecuteKernel, Kernel};
use opencl3::memory::Buffer;
use opencl3::types::{cl_event, CL_BLOCKING, CL_NON_BLOCKING};

use super::counts::Counts;
use super::device::{DeviceMemory, MemoryGrant, OpenClDevice, OpenClDeviceInfo};
pub use super::kernels::LOCAL_WORK_SIZE;
use super::kernels::{cl_err, DeviceProgram};
use super::settling::Settling;
use super::stream::Copies;
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
    /// The copy queue: streamed bases go up on it while the kernels run on `queue`.
    copies: Copies,
    memory: Arc<DeviceMemory>,
    /// Bytes this worker may hold at once: the pool divided among the device's workers, so every
    /// worker can always run and none waits for another's whole MSM.
    share: u64,
    /// Upper bound on the terms of one multiexp launch (tests set it low to force chunking).
    pub max_chunk_terms: usize,
    groups_per_unit: usize,
    counts: Counts,
    /// What waits for this queue's next successful wait (`settling.rs`).
    settling: Settling,
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
        let copies = Copies::new(&program, &device.info.name)?;
        let share = memory.limit() / options.workers_per_device.max(1) as u64;
        let groups_per_unit = groups_per_unit(&device.info, options.groups_per_unit);
        Ok(DeviceQueue {
            device,
            program,
            queue,
            copies,
            memory,
            share,
            max_chunk_terms: options.max_chunk_terms.max(1),
            groups_per_unit,
            counts: Counts::default(),
            settling: Settling::default(),
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
        self.counts.read()
    }

    /// Counts `n` curve-point additions a multiexp's kernels did (known from what they report).
    pub fn count_additions(&self, n: u64) {
        self.counts.additions(n);
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
        self.counts.launch();
        Ok(())
    }

    /// Waits until everything enqueued on both queues has run (the copy queue first: kernels
    /// may wait for its copies).
    pub fn finish(&self) -> Result<()> {
        self.counts.wait(false);
        let copies = self.copies.finish();
        let kernels = self
            .queue
            .finish()
            .map_err(|e| cl_err("running the device's queue", e));
        let waited = copies.and(kernels);
        if waited.is_ok() {
            self.settling.let_go();
        }
        waited
    }

    /// Where what must outlive the work enqueued so far is kept until [`DeviceQueue::finish`]
    /// (a pipeline dropped with a chunk in flight).
    pub fn settling(&self) -> Settling {
        self.settling.clone()
    }

    /// Submits what is enqueued on the kernels' queue to the device without waiting (a host
    /// wait submits it too; this lets the device start while the host enqueues more).
    pub fn flush(&self) -> Result<()> {
        self.queue
            .flush()
            .map_err(|e| cl_err("submitting kernels", e))
    }

    /// An event that happens once everything enqueued so far on the kernels' queue has run.
    pub fn marker(&self) -> Result<Event> {
        // SAFETY: no event to wait for; the marker only reports.
        unsafe { self.queue.enqueue_marker_with_wait_list(&[]) }
            .map_err(|e| cl_err("enqueuing a marker", e))
    }

    /// Waits for `event` (of this queue's work); `work_behind`: whether work enqueued after it
    /// keeps the device busy while the host waits.
    pub fn wait(&self, event: &Event, work_behind: bool) -> Result<()> {
        self.counts.wait(work_behind);
        event
            .wait()
            .map_err(|e| cl_err("waiting for the device", e))
    }

    /// Makes what is enqueued on the kernels' queue from now on start after `event` (a copy on
    /// the copy queue); the host does not wait.
    pub fn after(&self, event: &Event) -> Result<()> {
        let list: [cl_event; 1] = [event.get()];
        // SAFETY: `list` holds one live event for the call.
        unsafe { self.queue.enqueue_barrier_with_wait_list(&list) }
            .map(drop)
            .map_err(|e| cl_err("ordering kernels after a copy", e))
    }

    /// Pinned host memory this queue's copies go through (none before its first).
    pub fn pinned_bytes(&self) -> u64 {
        self.copies.pinned_bytes()
    }

    /// Enqueues on the copy queue the copy of `src` into `dst` from element `offset` on,
    /// through pinned memory (`stream.rs`), and returns the event of the whole copy; the host
    /// waits only for a pinned slot a copy still reads, and `src` may go once this returns.
    /// Kernels that read `dst` must be enqueued after [`Self::after`] that event.
    pub fn stage<G: Copy + Send + Sync>(
        &self,
        dst: &mut Buffer<G>,
        offset: usize,
        src: &[G],
    ) -> Result<Event> {
        (self.copies).stage(&self.program, &self.counts, dst, offset, src)
    }

    /// Enqueues a copy of `data` into `buf` from element `offset` on, without waiting.
    ///
    /// # Safety
    /// `data` must stay alive and unchanged until a wait for work enqueued after it
    /// ([`Self::finish`], [`Self::read`], a [`Self::marker`]'s, or the drop of the plan that
    /// owns the queue's work).
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
            self.counts.wait(false);
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
        self.counts.up(std::mem::size_of_val(data) as u64);
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
            self.counts.wait(false);
        }
        Ok(())
    }

    /// Enqueues a copy of the first `out.len()` elements of `buf` into `out`, after everything
    /// enqueued before, without waiting.
    ///
    /// # Safety
    /// `out` must stay alive, and be neither read nor written, until a wait for work enqueued
    /// after it (a blocking read, a [`Self::marker`]'s, [`Self::finish`]) has returned
    /// successfully; if that wait fails, `out` must never be freed.
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
        self.counts.down(std::mem::size_of_val(out) as u64);
        Ok(())
    }
}

impl Drop for DeviceQueue {
    fn drop(&mut self) {
        // What a dropped pipeline left waits for its work: waited for here, or never let go.
        if !self.settling.is_empty() && self.finish().is_err() {
            self.settling.leak();
        }
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
