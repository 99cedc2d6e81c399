//! Parameters kept on a device: a circuit's H, L, A and B bases and the maps from A and B terms
//! to witness positions, uploaded when the circuit is first proved on the device and kept while
//! the host copy of its keys is loaded ([`LoadedParams::residency`]). Each set is charged to the
//! device's memory pool; a set no partition is using is evicted, least recently used first, when
//! another circuit's set needs the room. Where a set does not fit beside the partitions'
//! working memory (16–24 GB cards at 32 GiB), its bases are streamed per multiexp step instead.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};

use blstrs::{G1Affine, G2Affine, Scalar as Fr};
use opencl3::memory::Buffer;

use super::device::MemoryGrant;
use super::queue::DeviceQueue;
use crate::error::{ProverError, Result};
use crate::groth16::Query;
use crate::keys::LoadedParams;
use crate::synthesis::{Density, Witness};

/// One circuit's bases on one device.
pub struct Resident {
    pub h: Buffer<G1Affine>,
    pub l: Buffer<G1Affine>,
    pub a: Buffer<G1Affine>,
    pub b_g1: Buffer<G1Affine>,
    /// `None` where B's G2 multiexp runs on the host ([`super::G2On::Cpu`]).
    pub b_g2: Option<Buffer<G2Affine>>,
    /// The maps of the densities the circuit had when its bases went up.
    pub maps: Maps,
    _grant: MemoryGrant,
}

impl Resident {
    /// Device bytes of `loaded`'s bases and maps (B's G2 bases with `with_g2`).
    pub fn bytes_for(loaded: &LoadedParams, with_g2: bool) -> u64 {
        let p = loaded.parameters();
        Self::bytes_of(BaseCounts {
            h: p.h.len(),
            l: p.l.len(),
            a: p.a.len(),
            b: p.b_g1.len(),
            b_g2: if with_g2 { p.b_g2.len() } else { 0 },
        })
    }

    /// Device bytes of a circuit's bases and maps, from how many bases it has.
    pub fn bytes_of(c: BaseCounts) -> u64 {
        let g1 = std::mem::size_of::<G1Affine>() as u64;
        let g2 = std::mem::size_of::<G2Affine>() as u64;
        let [h, l, a, b, b_g2] = [c.h, c.l, c.a, c.b, c.b_g2].map(|n| n as u64);
        (h + l + a + b) * g1 + b_g2 * g2 + Maps::bytes_of(a, b)
    }

    /// The G1 bases of `query` (not [`Query::B2`]).
    pub fn g1(&self, query: Query) -> &Buffer<G1Affine> {
        match query {
            Query::H => &self.h,
            Query::L => &self.l,
            Query::A => &self.a,
            Query::B1 | Query::B2 => &self.b_g1,
        }
    }
}

/// How many bases of each query a device keeps: H, L, A and B in G1, and B in G2 (as many as
/// B's in G1, or none where B's G2 multiexp runs on the host).
#[derive(Debug, Clone, Copy)]
pub struct BaseCounts {
    pub h: usize,
    pub l: usize,
    pub a: usize,
    pub b: usize,
    pub b_g2: usize,
}

/// Where each A and B term's scalar sits in the witness buffer (inputs, then aux): A takes every
/// input and the aux values its density marks, B the inputs and aux values its densities mark.
pub struct Maps {
    pub a: Buffer<u32>,
    pub b: Buffer<u32>,
    densities: [Density; 3],
}

impl Maps {
    /// A position a term of A and of B.
    fn bytes_of(a_terms: u64, b_terms: u64) -> u64 {
        (a_terms + b_terms) * 4
    }

    /// Whether these maps are `witness`'s (its circuit has the same densities).
    pub fn fit(&self, witness: &Witness) -> bool {
        let (a, b_in, b_aux) = witness.densities();
        let [ra, rb_in, rb_aux] = &self.densities;
        (ra, rb_in, rb_aux) == (a, b_in, b_aux)
    }

    /// The maps of `witness`'s densities, uploaded through `q` (kernels enqueued after this
    /// run after the copies).
    pub fn upload(q: &DeviceQueue, witness: &Witness) -> Result<Maps> {
        let (inputs, aux) = witness.witness();
        let (a_aux, b_in, b_aux) = witness.densities();
        if inputs.len() + aux.len() > u32::MAX as usize {
            return Err(ProverError::ParamsShape(format!(
                "a witness of {} values is beyond the device's 32-bit positions",
                inputs.len() + aux.len()
            )));
        }
        let n_in = inputs.len() as u32;
        let a: Vec<u32> = (0..n_in)
            .chain(a_aux.ones().map(|i| n_in + i as u32))
            .collect();
        let b: Vec<u32> = (b_in.ones().map(|i| i as u32))
            .chain(b_aux.ones().map(|i| n_in + i as u32))
            .collect();
        let mut a_buf = q.program.buffer::<u32>(a.len())?;
        let mut b_buf = q.program.buffer::<u32>(b.len())?;
        // Through pinned memory on the copy queue, in order: the kernels' queue waits for the
        // second copy, the host for neither.
        q.stage(&mut a_buf, 0, &a)?;
        let copied = q.stage(&mut b_buf, 0, &b)?;
        q.after(&copied)?;
        Ok(Maps {
            a: a_buf,
            b: b_buf,
            densities: [a_aux.clone(), b_in.clone(), b_aux.clone()],
        })
    }
}

/// The resident sets of one device.
#[derive(Default)]
pub struct ResidentCache {
    entries: Mutex<Vec<Entry>>,
    clock: AtomicU64,
    /// Circuits whose bases were found not to fit (said once in the log).
    streamed: Mutex<Vec<Weak<()>>>,
}

struct Entry {
    params: Weak<()>,
    set: Arc<Resident>,
    last_used: u64,
}

impl ResidentCache {
    /// The bases of `loaded` on this device (B's G2 bases with `with_g2`): kept from an earlier
    /// partition, or uploaded now when they fit in the pool with `keep_free` bytes left over for
    /// the partitions' working memory (idle sets of other circuits evicted, least recently used
    /// first). `None`: they do not fit, and the caller streams them. A backend asks with the
    /// same `with_g2` every time.
    pub fn get(
        &self,
        q: &DeviceQueue,
        loaded: &LoadedParams,
        witness: &Witness,
        keep_free: u64,
        with_g2: bool,
    ) -> Result<Option<Arc<Resident>>> {
        let key = loaded.residency();
        let now = self.clock.fetch_add(1, Ordering::Relaxed);
        let mut entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        // A set whose keys were dropped goes (its memory once the last partition using it ends).
        entries.retain(|e| e.params.strong_count() > 0);
        if let Some(e) = entries.iter_mut().find(|e| e.params.ptr_eq(&key)) {
            e.last_used = now;
            return Ok(Some(Arc::clone(&e.set)));
        }
        let p = loaded.parameters();
        let bytes = Resident::bytes_for(loaded, with_g2);
        let largest = [p.h.len(), p.l.len(), p.a.len(), p.b_g1.len()]
            .into_iter()
            .max()
            .unwrap_or(0) as u64
            * std::mem::size_of::<G1Affine>() as u64;
        let g2 = if with_g2 { p.b_g2.len() } else { 0 };
        let largest = largest.max(g2 as u64 * std::mem::size_of::<G2Affine>() as u64);
        // Evict only for a set that fits once every idle set is gone: a circuit that is streamed
        // anyway must not push out the sets of circuits that fit.
        let idle_bytes: u64 = (entries.iter())
            .filter(|e| Arc::strong_count(&e.set) == 1)
            .map(|e| e.set._grant.bytes())
            .sum();
        let pool = q.memory();
        let could_fit = largest <= q.max_alloc()
            && pool.used().saturating_sub(idle_bytes) + bytes + keep_free <= pool.limit();
        if !could_fit {
            self.say_streamed(q, loaded, bytes, keep_free);
            return Ok(None);
        }
        let grant = loop {
            if largest <= q.max_alloc() {
                if let Some(grant) = q.memory().try_reserve(bytes, keep_free) {
                    break grant;
                }
            }
            let idle = (entries.iter().enumerate())
                .filter(|(_, e)| Arc::strong_count(&e.set) == 1)
                .min_by_key(|(_, e)| e.last_used)
                .map(|(i, _)| i);
            match idle.filter(|_| largest <= q.max_alloc()) {
                Some(i) => {
                    let gone = entries.remove(i);
                    tracing::info!(
                        device = %q.device.info.name,
                        bytes = gone.set._grant.bytes(),
                        "parameters evicted from the device for another circuit's"
                    );
                }
                None => {
                    self.say_streamed(q, loaded, bytes, keep_free);
                    return Ok(None);
                }
            }
        };
        let set = upload(q, loaded, witness, grant, with_g2)?;
        tracing::info!(
            device = %q.device.info.name,
            circuit = %loaded.circuit_id(),
            bytes,
            "parameters kept on the device"
        );
        let set = Arc::new(set);
        entries.push(Entry {
            params: key,
            set: Arc::clone(&set),
            last_used: now,
        });
        Ok(Some(set))
    }

    /// Drops the sets whose keys were dropped (their device memory goes once no partition uses
    /// them): done at every partition, and whenever the pool is read.
    pub fn sweep(&self) {
        let mut entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        entries.retain(|e| e.params.strong_count() > 0);
    }

    /// Evicts every set no partition is using; returns the bytes freed.
    pub fn evict_idle(&self) -> u64 {
        let mut entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        let mut freed = 0;
        entries.retain(|e| {
            let idle = Arc::strong_count(&e.set) == 1;
            if idle {
                freed += e.set._grant.bytes();
            }
            !idle
        });
        freed
    }

    /// Device bytes held by resident sets now.
    pub fn bytes(&self) -> u64 {
        let entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        entries.iter().map(|e| e.set._grant.bytes()).sum()
    }

    fn say_streamed(&self, q: &DeviceQueue, loaded: &LoadedParams, bytes: u64, keep_free: u64) {
        let key = loaded.residency();
        let mut said = self.streamed.lock().unwrap_or_else(|p| p.into_inner());
        said.retain(|w| w.strong_count() > 0);
        if said.iter().any(|w| w.ptr_eq(&key)) {
            return;
        }
        said.push(key);
        tracing::info!(
            device = %q.device.info.name,
            circuit = %loaded.circuit_id(),
            bytes,
            working_bytes = keep_free,
            pool_bytes = q.memory().limit(),
            "parameters streamed to the device per multiexp step: they do not fit beside the \
             partitions' working memory"
        );
    }
}

fn upload(
    q: &DeviceQueue,
    loaded: &LoadedParams,
    witness: &Witness,
    grant: MemoryGrant,
    with_g2: bool,
) -> Result<Resident> {
    let p = loaded.parameters();
    let up_g1 = |bases: &[G1Affine]| -> Result<Buffer<G1Affine>> {
        let mut buf = q.program.buffer::<G1Affine>(bases.len())?;
        // Through pinned memory on the copy queue; `finish` below waits for the copies.
        q.stage(&mut buf, 0, bases)?;
        Ok(buf)
    };
    let h = up_g1(&p.h)?;
    let l = up_g1(&p.l)?;
    let a = up_g1(&p.a)?;
    let b_g1 = up_g1(&p.b_g1)?;
    let b_g2 = match with_g2 {
        true => {
            let mut buf = q.program.buffer::<G2Affine>(p.b_g2.len())?;
            q.stage(&mut buf, 0, &p.b_g2)?;
            Some(buf)
        }
        false => None,
    };
    let maps = Maps::upload(q, witness)?;
    q.finish()?;
    Ok(Resident {
        h,
        l,
        a,
        b_g1,
        b_g2,
        maps,
        _grant: grant,
    })
}

// Scalars go up as the host holds them: 32-byte Montgomery values.
const _: () = assert!(std::mem::size_of::<Fr>() == 32);
