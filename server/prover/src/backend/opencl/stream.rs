//! Copies to the device through pinned memory, on a copy queue of their own: a partition's
//! witness, a and b, a circuit's bases going up to stay, and bases streamed chunk by chunk to
//! a device that does not keep them. The host's threads copy each piece into one of a few
//! pinned (page-locked) slots, the copy queue takes the slot up, and the kernels that read the
//! data wait for the copy's event (`DeviceQueue::after`), not the host: a streamed chunk's
//! bases go up while the chunk before runs (`msm.rs` keeps two staging buffers where they
//! fit), and one worker's uploads while another worker's kernels run. A slot
//! is written again only once the copy that read it has run (or failed, which is reported
//! then); its mapping is given back only once no copy reads it. Where the driver refuses pinned
//! memory, the copies go up from the host's own memory, blocking, on the copy queue, and a
//! warning says so.

use std::ptr::null_mut;
use std::sync::Mutex;

use opencl3::command_queue::CommandQueue;
use opencl3::event::{Event, CL_COMPLETE};
use opencl3::memory::{Buffer, ClMem, CL_MAP_WRITE, CL_MEM_ALLOC_HOST_PTR, CL_MEM_READ_WRITE};
use opencl3::types::{cl_bool, cl_mem, CL_BLOCKING, CL_NON_BLOCKING};
use rayon::prelude::*;

use super::counts::Counts;
use super::kernels::{cl_err, DeviceProgram};
use crate::error::Result;
use crate::threads;

/// Bytes of one pinned slot: a copy's piece (about a millisecond over a PCIe 4 bus).
pub const SLOT_BYTES: usize = 32 << 20;
/// Pinned slots a worker's copies go through: while the host fills one, the copy queue takes
/// the others up.
pub const SLOTS: usize = 4;

/// A worker's copy queue, and the pinned slots its copies go through.
pub struct Copies {
    queue: CommandQueue,
    ring: Mutex<Ring>,
    /// The device's name, for the log.
    device: String,
}

/// How a worker's copies go up.
#[derive(Default)]
enum Ring {
    /// No copy yet: nothing is pinned.
    #[default]
    Unmade,
    /// Through [`SLOTS`] pinned slots of [`SLOT_BYTES`].
    Pinned(PinnedRing),
    /// The driver refused pinned memory: from the host's own memory.
    Pageable,
}

impl Copies {
    pub fn new(program: &DeviceProgram, device: &str) -> Result<Copies> {
        #[allow(deprecated)] // the 1.2 entry point, as the kernels' queue
        let queue = CommandQueue::create_default(&program.context, 0)
            .map_err(|e| cl_err("creating a copy queue", e))?;
        Ok(Copies {
            queue,
            ring: Mutex::new(Ring::Unmade),
            device: device.to_string(),
        })
    }

    /// Enqueues the copy of `src` into `dst` from element `offset` on and returns the event of
    /// the whole copy; makes the pinned slots at the first call (in `program`'s context).
    /// `src` is read before this returns (into pinned slots, or,
    /// where none could be pinned, by a blocking copy), so it may go at once.
    pub fn stage<G: Copy + Send + Sync>(
        &self,
        program: &DeviceProgram,
        counts: &Counts,
        dst: &mut Buffer<G>,
        offset: usize,
        src: &[G],
    ) -> Result<Event> {
        let mut ring = self.ring.lock().unwrap_or_else(|p| p.into_inner());
        if matches!(*ring, Ring::Unmade) {
            *ring = match PinnedRing::new(program) {
                Ok(pinned) => Ring::Pinned(pinned),
                Err(e) => {
                    tracing::warn!(device = %self.device, error = %e, "no pinned memory for copies to the device: they go up from pageable memory, one at a time and slower");
                    Ring::Pageable
                }
            };
        }
        match &mut *ring {
            Ring::Pinned(pinned) => pinned.stage(&self.queue, counts, dst, offset, src),
            _ => {
                if !src.is_empty() {
                    counts.wait(false);
                }
                // SAFETY: a blocking copy has read `src` when it returns.
                unsafe { copy_up(&self.queue, counts, dst, offset, src, CL_BLOCKING) }
            }
        }
    }

    /// Pinned host memory held for the copies (none until the first, or where refused).
    pub fn pinned_bytes(&self) -> u64 {
        match *self.ring.lock().unwrap_or_else(|p| p.into_inner()) {
            Ring::Pinned(_) => (SLOTS * SLOT_BYTES) as u64,
            _ => 0,
        }
    }

    /// Waits until every copy enqueued has run.
    pub fn finish(&self) -> Result<()> {
        self.queue
            .finish()
            .map_err(|e| cl_err("running the device's copy queue", e))
    }
}

/// Enqueues on `queue` a copy of `data` into `buf` from element `offset` on, `blocking` or
/// not; returns its event.
///
/// # Safety
/// Without `blocking`, `data` must stay alive and unchanged until the copy has run.
unsafe fn copy_up<G>(
    queue: &CommandQueue,
    counts: &Counts,
    buf: &mut Buffer<G>,
    offset: usize,
    data: &[G],
    blocking: cl_bool,
) -> Result<Event> {
    if data.is_empty() {
        return marker(queue);
    }
    // SAFETY: `buf` holds at least offset + data.len() elements (callers allocate it so);
    // `data`'s lifetime is the caller's to keep (this function's contract).
    let event = unsafe {
        queue.enqueue_write_buffer(buf, blocking, offset * std::mem::size_of::<G>(), data, &[])
    }
    .map_err(|e| cl_err("copying bases up", e))?;
    counts.up(std::mem::size_of_val(data) as u64);
    Ok(event)
}

/// [`SLOTS`] pinned slots, each mapped once for the ring's life.
struct PinnedRing {
    /// Maps and unmaps the slots (a queue of its own: nothing waits behind it).
    maps: CommandQueue,
    slots: Vec<Slot>,
    next: usize,
}

struct Slot {
    buf: Buffer<u8>,
    /// The mapping of `buf`: [`SLOT_BYTES`] of host memory, page-aligned.
    host: *mut u8,
    /// The copy that reads the slot, until the host has seen it run.
    read: Option<Event>,
}

// SAFETY: the mappings are host memory that only the ring's holder writes (the ring is used by
// one thread at a time, behind the queue's lock), and the OpenCL objects may move threads.
unsafe impl Send for PinnedRing {}

impl PinnedRing {
    fn new(program: &DeviceProgram) -> Result<PinnedRing> {
        #[allow(deprecated)] // the 1.2 entry point, as the device's queues
        let maps = CommandQueue::create_default(&program.context, 0)
            .map_err(|e| cl_err("creating a queue for pinned memory", e))?;
        // Made slot by slot, so that a refusal midway gives back the slots already mapped.
        let mut ring = PinnedRing {
            maps,
            slots: Vec::with_capacity(SLOTS),
            next: 0,
        };
        for _ in 0..SLOTS {
            // SAFETY: no host pointer is passed; the driver allocates the slot's host memory.
            let buf = unsafe {
                Buffer::<u8>::create(
                    &program.context,
                    CL_MEM_ALLOC_HOST_PTR | CL_MEM_READ_WRITE,
                    SLOT_BYTES,
                    null_mut(),
                )
            }
            .map_err(|e| cl_err("allocating pinned memory", e))?;
            let mut host: cl_mem = null_mut();
            // SAFETY: a blocking map of the whole buffer; `host` receives its address.
            unsafe {
                ring.maps.enqueue_map_buffer(
                    &buf,
                    CL_BLOCKING,
                    CL_MAP_WRITE,
                    0,
                    SLOT_BYTES,
                    &mut host,
                    &[],
                )
            }
            .map_err(|e| cl_err("mapping pinned memory", e))?;
            ring.slots.push(Slot {
                buf,
                host: host.cast(),
                read: None,
            });
        }
        Ok(ring)
    }

    fn stage<G: Copy + Send + Sync>(
        &mut self,
        copies: &CommandQueue,
        counts: &Counts,
        dst: &mut Buffer<G>,
        offset: usize,
        src: &[G],
    ) -> Result<Event> {
        let per = SLOT_BYTES / std::mem::size_of::<G>();
        for (i, piece) in src.chunks(per).enumerate() {
            let slot = &mut self.slots[self.next];
            self.next = (self.next + 1) % SLOTS;
            if let Some(read) = &slot.read {
                let ended = match status(read)? {
                    Ended::Ran => Ok(()),
                    Ended::Failed(status) => Err(format!("status {status}")),
                    Ended::Not => {
                        // The copy queue takes the other slots up, and the kernels run,
                        // meanwhile.
                        counts.wait(true);
                        read.wait().map_err(|e| e.to_string())
                    }
                };
                // Whatever the copy's fate, it no longer reads the slot once it has ended (a
                // status that cannot be read leaves the slot to be asked again).
                if ended.is_ok() || matches!(status(read), Ok(Ended::Ran | Ended::Failed(_))) {
                    slot.read = None;
                }
                // A failed copy is reported once, here: the data it took up is not whole.
                ended.map_err(|e| cl_err("copying to the device", e))?;
            }
            // SAFETY: the mapping holds SLOT_BYTES (at least `per` elements of `G`), aligned to a
            // page, and no copy reads it now (its last one has run or failed, above).
            let host =
                unsafe { std::slice::from_raw_parts_mut(slot.host.cast::<G>(), piece.len()) };
            copy_on_threads(host, piece);
            // SAFETY: the slot is written again only after this copy has run (above), and
            // unmapped only then (`Drop`).
            let at = offset + i * per;
            slot.read = Some(unsafe { copy_up(copies, counts, dst, at, host, CL_NON_BLOCKING) }?);
            // Submitted now: the copy engine takes this piece up while the host fills the next,
            // and kernels on the other queue may wait for it.
            copies
                .flush()
                .map_err(|e| cl_err("submitting a copy to the device", e))?;
        }
        marker(copies)
    }
}

impl Drop for PinnedRing {
    fn drop(&mut self) {
        // A copy may still read a slot: each is waited for before the slots are unmapped (one
        // that failed has ended all the same).
        let waited = (self.slots.iter())
            .filter_map(|s| s.read.as_ref())
            .all(|e| e.wait().is_ok() || matches!(status(e), Ok(Ended::Failed(_))));
        if !waited {
            // A device that cannot say its copies are done: the slots are never given back.
            std::mem::forget(std::mem::take(&mut self.slots));
            return;
        }
        for slot in &self.slots {
            // SAFETY: no copy reads the slot any more; `host` is its mapping.
            let _ = unsafe {
                self.maps
                    .enqueue_unmap_mem_object(slot.buf.get(), slot.host.cast(), &[])
            };
        }
        let _ = self.maps.finish();
    }
}

/// Where a copy is.
enum Ended {
    Not,
    Ran,
    /// With its (negative) status.
    Failed(i32),
}

/// Where the command of `event` is: running or queued, run, or failed.
fn status(event: &Event) -> Result<Ended> {
    let status = (event.command_execution_status())
        .map_err(|e| cl_err("asking after a copy to the device", e))?;
    Ok(match status.0 {
        CL_COMPLETE => Ended::Ran,
        s if s < 0 => Ended::Failed(s),
        _ => Ended::Not,
    })
}

/// An event that happens once every copy enqueued on `queue` so far has run (it is in order),
/// submitted to the device: the other queue's kernels wait for it, and a queue's commands need
/// not start before they are submitted.
fn marker(queue: &CommandQueue) -> Result<Event> {
    // SAFETY: no event to wait for; the marker only reports.
    let event = unsafe { queue.enqueue_marker_with_wait_list(&[]) }
        .map_err(|e| cl_err("enqueuing a marker", e))?;
    queue
        .flush()
        .map_err(|e| cl_err("submitting a copy to the device", e))?;
    Ok(event)
}

/// `dst.copy_from_slice(src)` on the host's threads (a slot is a few milliseconds' copy for
/// one).
fn copy_on_threads<G: Copy + Send + Sync>(dst: &mut [G], src: &[G]) {
    let piece = ((1 << 20) / std::mem::size_of::<G>()).max(1);
    threads::pool().install(|| {
        dst.par_chunks_mut(piece)
            .zip(src.par_chunks(piece))
            .for_each(|(d, s)| d.copy_from_slice(s));
    });
}
