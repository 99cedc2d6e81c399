//! One partition's device phase on an OpenCL device ([`OpenClPlan`], a [`DevicePlan`]): the
//! witness (inputs, then aux) goes up once as one buffer; a and b go up for the H polynomial,
//! which stays on the device for its multiexp; the bases are the device's resident copy of the
//! circuit's parameters (or streamed per chunk where they do not fit: `stream.rs`), and the A
//! and B scalars are read through the circuit's term → position maps. Host → device per
//! partition with resident bases: a, b, the witness and the FFTs' twiddle tables. The G1
//! multiexps' steps run through one pipeline, made at their first step for the largest, and
//! B's G2 steps through another (`msm.rs`): each step enqueues the next one's first chunk
//! before it waits for its own last.
//!
//! Faults: a step that fails on the device is run there again up to
//! [`OpenClOptions::device_attempts`] times, then on the CPU (an H multiexp step with h
//! recomputed there from a/b/c, which the plan keeps until the H multiexp is done); the next
//! step tries the device again. A step that finds no room in the device's pool (other phases
//! hold it) runs on the CPU the same way, without counting as a fault. The partition's memory
//! was reserved for a device phase on the device ([`crate::filecoin::estimate::PhaseOn`]): a
//! step that runs on the CPU first asks the caller for the host memory it needs
//! (`PhaseHooks::hold_at_least`), and fails, to be retried, when the budget has none free.
//!
//! [`OpenClOptions::device_attempts`]: super::OpenClOptions::device_attempts

use std::sync::Arc;

use bellperson::groth16::Parameters;
use blstrs::{Bls12, G1Affine, G1Projective, G2Affine, G2Projective, Scalar as Fr};
use ec_gpu::GpuName;
use group::prime::PrimeCurveAffine;
use opencl3::memory::Buffer;

use super::device::MemoryGrant;
use super::fft::{self, HOnDevice};
use super::msm::{Bases, DeviceScalars, Pipeline, StepOn};
use super::msm_plan;
use super::queue::DeviceQueue;
use super::resident::{Maps, Resident};
use super::{G2On, OpenClBackend, GPU_STEP_POINTS};
use crate::backend::DeviceBackend;
use crate::error::{ProverError, Result};
use crate::filecoin::estimate::host_phase;
use crate::groth16::{
    CpuOps, DeviceCounters, DevicePlan, HostPlan, PhaseHooks, Query, Step, CPU_STEP_POINTS,
};
use crate::keys::LoadedParams;
use crate::synthesis::{Abc, Witness};

/// The device-side data of one partition, while its steps run on the device. The pipelines come
/// first: dropped before the queue, what they keep for its next wait finds it there.
struct OnDevice {
    /// The G1 multiexps' pipeline, from their first step on the device to their last (or to a
    /// boundary where the phase waits: [`DevicePlan::park`]).
    g1: Option<Pipeline<G1Affine>>,
    /// B's G2 multiexp's pipeline.
    g2: Option<Pipeline<G2Affine>>,
    queue: DeviceQueue,
    start: DeviceCounters,
    /// Inputs, then aux, as the host holds them (Montgomery form).
    witness: Buffer<Fr>,
    _witness_grant: MemoryGrant,
    resident: Option<Arc<Resident>>,
    /// The maps of this witness when the resident set's are not (streamed bases, or a circuit
    /// whose densities differ from those its set went up with).
    own_maps: Option<Maps>,
    h: Option<HOnDevice>,
}

impl OnDevice {
    /// Where `query`'s scalars lie (`None` for H's before h is on the device, or for A's and
    /// B's without maps); `inputs`: the witness's inputs, ahead of its aux.
    fn scalars(&self, query: Query, inputs: usize) -> Option<DeviceScalars<'_>> {
        let maps = self
            .own_maps
            .as_ref()
            .or(self.resident.as_ref().map(|r| &r.maps));
        Some(match query {
            Query::H => DeviceScalars {
                buf: &self.h.as_ref()?.h,
                map: None,
                offset: 0,
            },
            Query::L => DeviceScalars {
                buf: &self.witness,
                map: None,
                offset: inputs,
            },
            Query::A => DeviceScalars {
                buf: &self.witness,
                map: Some(&maps?.a),
                offset: 0,
            },
            Query::B1 | Query::B2 => DeviceScalars {
                buf: &self.witness,
                map: Some(&maps?.b),
                offset: 0,
            },
        })
    }

    /// `step` as the device runs it, with its bases and scalars (`None` as for
    /// [`OnDevice::scalars`]).
    fn step_on<'d, G: OnGroup>(
        &'d self,
        params: &'d Parameters<Bls12>,
        step: &Step,
        inputs: usize,
    ) -> Option<StepOn<'d, G>> {
        Some(StepOn {
            step: step.clone(),
            bases: G::bases(self, params, step.query),
            scalars: self.scalars(step.query, inputs)?,
        })
    }
}

/// A group the device phase's multiexps run over: its queries, its bases and its pipeline.
trait OnGroup: PrimeCurveAffine + GpuName {
    /// Whether `query`'s steps run over this group.
    fn serves(query: Query) -> bool;
    /// `query`'s bases: the resident copy, or the host's to stream.
    fn bases<'d>(d: &'d OnDevice, params: &'d Parameters<Bls12>, query: Query) -> Bases<'d, Self>;
    fn pipeline(d: &mut OnDevice) -> &mut Option<Pipeline<Self>>;
}

impl OnGroup for G1Affine {
    fn serves(query: Query) -> bool {
        query != Query::B2
    }
    fn bases<'d>(d: &'d OnDevice, params: &'d Parameters<Bls12>, query: Query) -> Bases<'d, Self> {
        match &d.resident {
            Some(r) => Bases::Device(r.g1(query)),
            None => Bases::Host(query.g1_bases(params)),
        }
    }
    fn pipeline(d: &mut OnDevice) -> &mut Option<Pipeline<Self>> {
        &mut d.g1
    }
}

impl OnGroup for G2Affine {
    fn serves(query: Query) -> bool {
        query == Query::B2
    }
    fn bases<'d>(d: &'d OnDevice, params: &'d Parameters<Bls12>, _: Query) -> Bases<'d, Self> {
        match d.resident.as_ref().and_then(|r| r.b_g2.as_ref()) {
            Some(b_g2) => Bases::Device(b_g2),
            // Streamed; or kept without them (their multiexp was to run on the host, and runs
            // here because the budget had no room for it there).
            None => Bases::Host(&params.b_g2[..]),
        }
    }
    fn pipeline(d: &mut OnDevice) -> &mut Option<Pipeline<Self>> {
        &mut d.g2
    }
}

/// See the module's doc.
pub struct OpenClPlan<'a> {
    backend: &'a OpenClBackend,
    witness: &'a Witness,
    loaded: &'a LoadedParams,
    /// `None` when the partition runs on the CPU from the start (unhealthy device, no room).
    device: Option<OnDevice>,
    /// Kept until the H multiexp is done, for a CPU fallback of an H step.
    abc: Option<Abc>,
    h_done: bool,
    /// The CPU, for the steps that fall back to it (made at the first).
    host: Option<HostPlan<'a>>,
    faults: u32,
}

impl<'a> OpenClPlan<'a> {
    /// The plan for `witness` with `loaded`; on the CPU from the start when the device is
    /// unhealthy or has no room for the witness.
    pub fn open(
        backend: &'a OpenClBackend,
        witness: &'a Witness,
        loaded: &'a LoadedParams,
    ) -> Result<Box<dyn DevicePlan + 'a>> {
        let mut plan = OpenClPlan {
            backend,
            witness,
            loaded,
            device: None,
            abc: None,
            h_done: false,
            host: None,
            faults: 0,
        };
        if backend.is_healthy() {
            plan.device = match backend.open_partition(witness, loaded) {
                Ok(d) => d,
                Err(e) => {
                    // A device that cannot take the witness: the partition runs on the CPU.
                    plan.faults += 1;
                    tracing::warn!(device = %backend.name, error = %e, "putting a partition on the device failed: it runs on the cpu");
                    None
                }
            };
        }
        if plan.device.is_none() {
            plan.host = Some(HostPlan::new(&CpuOps, witness, loaded.parameters()));
        }
        Ok(Box::new(plan))
    }

    /// Asks `hooks` for the host memory a step run on the CPU needs (the partition was
    /// reserved for a device phase on the device): its FFTs' peak when it computes h, a
    /// multiexp's otherwise. An error when the budget cannot give it now.
    fn hold_for_cpu(&self, hooks: &mut dyn PhaseHooks, computes_h: bool) -> Result<()> {
        let phase = host_phase(self.witness.shape());
        let bytes = match computes_h {
            true => phase.fft_peak_bytes,
            false => phase.msm_peak_bytes,
        };
        if hooks.hold_at_least(bytes) {
            return Ok(());
        }
        Err(ProverError::Device {
            backend: self.backend.name.clone(),
            reason: format!(
                "a step falling back to the cpu needs {bytes} bytes of host memory, more than \
                 the memory budget has free now"
            ),
        })
    }

    /// The CPU for a step that fell back to it, with the host memory it needs; for an H step
    /// it needs h, computed from a/b/c (kept for that) when the CPU has not got it yet.
    fn host(&mut self, query: Query, hooks: &mut dyn PhaseHooks) -> Result<&mut HostPlan<'a>> {
        let computes_h = query == Query::H && !self.host.as_ref().is_some_and(HostPlan::has_h);
        self.hold_for_cpu(hooks, computes_h)?;
        let host = self
            .host
            .get_or_insert_with(|| HostPlan::new(&CpuOps, self.witness, self.loaded.parameters()));
        if computes_h {
            let abc = self.abc.take().ok_or_else(|| ProverError::Device {
                backend: self.backend.name.clone(),
                reason: "an H step fell back to the cpu with neither h nor a/b/c at hand".into(),
            })?;
            host.set_h(crate::groth16::compute_h(abc)?);
        }
        Ok(host)
    }

    /// Runs `step` on the device through its group's pipeline (made at the group's first step
    /// on the device, for the group's largest step), `next` enqueued behind it where it is of
    /// the same group; `None` when the step is to run on the CPU (no device, a fault past the
    /// attempts, no room). A failed step's pipeline is drained and dropped (a retry starts a
    /// new one), as is the pipeline of a step that runs on the CPU or is its group's last; one
    /// that panicked is dropped undrained (its read-backs' memory and its room in the pool are
    /// kept until the fault policy's wait: `settling.rs`).
    fn on_device<G: OnGroup>(&mut self, step: &Step, next: Option<&Step>) -> Option<G::Curve> {
        let (backend, params) = (self.backend, self.loaded.parameters());
        let inputs = self.witness.num_inputs();
        // The group's largest step, and whether it has several: what a pipeline is opened for.
        let group = || {
            let steps: Vec<usize> = (Step::all(params, GPU_STEP_POINTS).iter())
                .filter(|s| G::serves(s.query))
                .map(|s| s.range.len())
                .collect();
            (steps.iter().copied().max().unwrap_or(1), steps.len() > 1)
        };
        let d = self.device.as_mut()?;
        let mut pipeline = G::pipeline(d).take();
        let on = &*d;
        let staged = matches!(G::bases(on, params, step.query), Bases::Host(_));
        let done = backend.attempt(&on.queue, &mut self.faults, step.query.as_str(), |q| {
            let Some(this) = on.step_on::<G>(params, step, inputs) else {
                return Ok(None);
            };
            let next = next
                .filter(|n| G::serves(n.query))
                .and_then(|n| on.step_on::<G>(params, n, inputs));
            // Out of `pipeline` while it runs: put back only when the run returns.
            let mut p = match pipeline.take() {
                Some(p) => p,
                None => {
                    let (most, chained) = group();
                    match Pipeline::open(q, most, staged, chained)? {
                        Some(p) => p,
                        None => return Ok(None),
                    }
                }
            };
            let sum = p.run(q, this, next);
            match sum {
                Ok(_) => pipeline = Some(p),
                // A read-back may still be running: waited for, or its memory kept until the
                // queue's next successful wait.
                Err(_) => {
                    let _ = p.drain(q);
                }
            }
            sum.map(Some)
        });
        let d = self.device.as_mut().expect("on the device above");
        if done.is_none() || !next.is_some_and(|n| G::serves(n.query)) {
            // The step runs on the CPU (what the pipeline has in flight, a chunk of this step
            // enqueued ahead, is waited for before the buffers it reads may go), or it was the
            // group's last: the pipeline's memory goes back to the pool.
            let_go(&mut pipeline, &d.queue, &backend.name);
        }
        *G::pipeline(d) = pipeline;
        done
    }
}

impl DevicePlan for OpenClPlan<'_> {
    fn h(&mut self, abc: Abc, hooks: &mut dyn PhaseHooks) -> Result<()> {
        let (Some(d), None) = (self.device.as_ref(), self.host.as_ref()) else {
            self.hold_for_cpu(hooks, true)?;
            let host = self
                .host
                .as_mut()
                .expect("a plan off the device has the cpu's");
            return host.h(abc, hooks);
        };
        let backend = self.backend;
        let on_device = backend.attempt(&d.queue, &mut self.faults, "fft", |q| {
            fft::compute_h(q, &abc.a, &abc.b)
        });
        if let Some(h) = on_device {
            self.device.as_mut().expect("checked above").h = Some(h);
            self.abc = Some(abc);
            return Ok(());
        }
        // h on the CPU, then up to the device for the H multiexp where there is room.
        self.hold_for_cpu(hooks, true)?;
        let h = crate::groth16::compute_h(abc)?;
        let d = self.device.as_mut().expect("checked above");
        d.h = fft::upload_h(&d.queue, &h)?;
        self.host = Some(HostPlan::new(&CpuOps, self.witness, self.loaded.parameters()).with_h(h));
        Ok(())
    }

    fn abc_released(&self) -> bool {
        self.abc.is_none() && (self.h_done || self.host.as_ref().is_some_and(|h| h.abc_released()))
    }

    fn g1(
        &mut self,
        step: &Step,
        next: Option<&Step>,
        hooks: &mut dyn PhaseHooks,
    ) -> Result<G1Projective> {
        match self.on_device::<G1Affine>(step, next) {
            Some(sum) => Ok(sum),
            None => self.host(step.query, hooks)?.g1(step, next, hooks),
        }
    }

    fn g2(
        &mut self,
        step: &Step,
        next: Option<&Step>,
        hooks: &mut dyn PhaseHooks,
    ) -> Result<G2Projective> {
        match self.on_device::<G2Affine>(step, next) {
            Some(sum) => Ok(sum),
            None => self.host(Query::B2, hooks)?.g2(step, next, hooks),
        }
    }

    fn finish(&mut self, query: Query) {
        if query == Query::H {
            self.h_done = true;
            if let Some(abc) = self.abc.take() {
                abc.give_back();
            }
            if let Some(d) = self.device.as_mut() {
                d.h = None;
            }
        }
        if let Some(host) = self.host.as_mut() {
            host.finish(query);
        }
    }

    /// The pipelines go, with what they have ahead: the phase that preempts this one finds
    /// their room, and the next step opens a pipeline for the memory free then.
    fn park(&mut self) {
        if let Some(d) = self.device.as_mut() {
            let_go(&mut d.g1, &d.queue, &self.backend.name);
            let_go(&mut d.g2, &d.queue, &self.backend.name);
        }
    }

    /// With [`G2On::Cpu`], while the partition is on the device.
    fn b2_beside(&self) -> bool {
        self.backend.options.b_g2 == G2On::Cpu && self.device.is_some()
    }

    fn step_points(&self) -> usize {
        match &self.device {
            Some(_) => GPU_STEP_POINTS,
            None => CPU_STEP_POINTS,
        }
    }

    fn faults(&self) -> u32 {
        self.faults
    }

    fn counters(&self) -> DeviceCounters {
        match &self.device {
            Some(d) => d.queue.counters() - d.start,
            None => DeviceCounters::default(),
        }
    }
}

impl Drop for OpenClPlan<'_> {
    fn drop(&mut self) {
        if let Some(d) = self.device.take() {
            self.backend.close_partition(d);
        }
    }
}

/// Drops `pipeline` once what it has in flight has been waited for (where the wait fails, its
/// read-backs' host memory and its room in the pool wait for the queue's next successful
/// wait: `settling.rs`).
fn let_go<G: PrimeCurveAffine + GpuName>(
    pipeline: &mut Option<Pipeline<G>>,
    q: &DeviceQueue,
    device: &str,
) {
    if let Some(mut p) = pipeline.take() {
        if let Err(e) = p.drain(q) {
            tracing::warn!(device, error = %e, "waiting for a multiexp's device work");
        }
    }
}

/// Device bytes of a witness of `variables` values.
fn witness_bytes(variables: usize) -> u64 {
    (variables * std::mem::size_of::<Fr>()) as u64
}

/// Device bytes one partition works in beside its circuit's bases: its witness of `variables`
/// values, the H FFTs' buffers for `constraints`, and a multiexp step at `units` work units
/// (one work group a compute unit: whether the bases stay on the device does not turn on the
/// group count, as a step short of memory beside them halves its chunks, then its groups),
/// over G2 where B's G2 multiexp runs on the device, else over G1.
pub(super) fn working_bytes(variables: usize, constraints: usize, units: usize, b_g2: G2On) -> u64 {
    let step = match b_g2 {
        G2On::Device => msm_plan::step_bytes::<G2Affine>(GPU_STEP_POINTS, units),
        G2On::Cpu => msm_plan::step_bytes::<G1Affine>(GPU_STEP_POINTS, units),
    };
    witness_bytes(variables) + fft::h_memory(constraints).0 + step
}

impl OpenClBackend {
    /// A queue, the resident bases and the witness on the device for one partition; `None`
    /// when the pool has no room for the witness even with idle parameter sets evicted.
    fn open_partition(&self, witness: &Witness, loaded: &LoadedParams) -> Result<Option<OnDevice>> {
        let queue = self.take_queue()?;
        let start = queue.counters();
        let (inputs, aux) = witness.witness();
        let witness_bytes = witness_bytes(inputs.len() + aux.len());
        let working = working_bytes(
            inputs.len() + aux.len(),
            witness.num_constraints(),
            queue.work_units_at_one_group(),
            self.options.b_g2,
        );
        let keep_free = working * self.options.workers_per_device.max(1) as u64;
        let resident = match self.options.keep_params {
            true => {
                let with_g2 = self.options.b_g2 == G2On::Device;
                (self.resident).get(&queue, loaded, witness, keep_free, with_g2)?
            }
            false => None,
        };
        let grant = match queue.memory().try_reserve(witness_bytes, 0) {
            Some(g) => g,
            None => {
                self.resident.evict_idle();
                match queue.memory().try_reserve(witness_bytes, 0) {
                    Some(g) => g,
                    None => {
                        tracing::debug!(device = %self.name, "no room for a witness: the partition runs on the cpu");
                        self.return_queue(queue);
                        return Ok(None);
                    }
                }
            }
        };
        let uploaded = (|| -> Result<(Buffer<Fr>, Option<Maps>)> {
            let mut buf = queue.program.buffer::<Fr>(inputs.len() + aux.len())?;
            // Through pinned memory on the copy queue, in order: the aux's copy ends last.
            queue.stage(&mut buf, 0, inputs)?;
            let copied = queue.stage(&mut buf, inputs.len(), aux)?;
            queue.after(&copied)?;
            let own_maps = match &resident {
                Some(r) if r.maps.fit(witness) => None,
                _ => Some(Maps::upload(&queue, witness)?),
            };
            Ok((buf, own_maps))
        })();
        let (buf, own_maps) = match uploaded {
            Ok(done) => done,
            Err(e) => {
                // The maps' copies enqueued may still read host memory: wait for them first.
                let _ = queue.finish();
                self.return_queue(queue);
                return Err(e);
            }
        };
        Ok(Some(OnDevice {
            queue,
            start,
            witness: buf,
            _witness_grant: grant,
            resident,
            own_maps,
            h: None,
            g1: None,
            g2: None,
        }))
    }

    /// Waits for the partition's queue (the copies it enqueued read host memory) and keeps the
    /// queue for the next partition.
    fn close_partition(&self, mut d: OnDevice) {
        let_go(&mut d.g1, &d.queue, &self.name);
        let_go(&mut d.g2, &d.queue, &self.name);
        if let Err(e) = d.queue.finish() {
            tracing::warn!(device = %self.name, error = %e, "waiting for a partition's device work");
        }
        let OnDevice { queue, .. } = d;
        self.return_queue(queue);
    }
}
