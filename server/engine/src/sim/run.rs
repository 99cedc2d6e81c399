//! The simulation's driver: the real [`Machine`] takes every input, and its effects are carried
//! out here in simulated time instead of on threads. Each step is an activity with work left
//! on a resource: the cores (shared by weight, `cpu.rs`), a device (shared equally by the phases
//! on it), or a timer (a params load). Time jumps from one event to the next: an activity
//! ending, an arrival, the engine's one-second tick, a sample of the load.
//!
//! What the driver and the workers do with an effect is mirrored as they do it: a synthesis, a
//! finalize and a params load each start at once (the machine bounds how many); a worker sent
//! a partition while it proves one pauses the running phase at its next step boundary and
//! resumes it when the newer one ends (`worker.rs`); the a/b/c share of a reservation returns
//! after a phase's first step; a phase whose job ended stops at its next boundary.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use tokio::sync::{oneshot, watch};
use tokio::time::Instant;

use super::costs::{cpu_weight, DeviceCost, KindCosts};
use super::cpu::{share, Demand};
use super::prover::{SimPlan, SimProver};
use super::report::{self, Ended, Report, Sample};
use super::{Setup, Workload};
use crate::budget::{Budget, Reservation};
use crate::domain::{JobEnd, JobOutcome, Priority};
use crate::journal::InputDigest;
use crate::machine::{DeviceTask, Effect, Input, JobOrigin, Machine, Request};
use crate::prover::{DeviceInfo, LoadedParams, PartitionMemory, Planned, StepError};

/// Work left below this counts as done (float rounding of the shares).
const DONE: f64 = 1e-9;

/// Runs `workload` on the box and engine of `setup` and reports what happened.
pub fn simulate(setup: &Setup, workload: &Workload) -> Report {
    Sim::new(setup, workload).run()
}

/// What happens when an activity's work is done.
enum Then {
    /// A request was decoded and checked: it is submitted.
    Planned {
        kind: usize,
        arrived: f64,
    },
    Synthesized {
        job: u64,
        index: u32,
        reservation: Reservation,
    },
    /// One step of a device phase ended.
    Step {
        worker: u32,
        serial: u64,
    },
    Finalized {
        job: u64,
        started: f64,
    },
    Loaded {
        circuit_id: String,
        kind: usize,
    },
}

enum Resource {
    Cpu(Demand),
    Device(u32),
    Timer,
}

struct Activity {
    resource: Resource,
    /// Core-seconds on the cores, device-seconds on a device, seconds on a timer.
    left: f64,
    then: Then,
}

/// One device phase on a worker, as the worker's thread would hold it.
struct Phase {
    serial: u64,
    task: DeviceTask<SimProver>,
    kind: usize,
    steps_left: u32,
    /// A step of it is running (an activity), rather than waiting at a boundary.
    stepping: bool,
    released: bool,
}

struct SimWorker {
    device: u32,
    /// Running phases, oldest first: all but the newest stop at their next step boundary.
    phases: Vec<Phase>,
}

/// A job submitted and not yet ended.
struct Open {
    kind: usize,
    arrived: f64,
    outcome: watch::Receiver<Option<JobOutcome>>,
}

struct Sim<'a> {
    setup: &'a Setup,
    workload: &'a Workload,
    machine: Machine<SimProver>,
    freed: Arc<AtomicBool>,
    base: Instant,
    base_unix_ms: u64,
    now: f64,
    next_activity: u64,
    activities: BTreeMap<u64, Activity>,
    workers: Vec<SimWorker>,
    serial: u64,
    submits: u64,
    open: BTreeMap<u64, Open>,
    /// Arrivals not yet come, soonest first (reversed: popped from the end).
    arrivals: Vec<(f64, usize)>,
    next_tick: f64,
    next_sample: f64,
    ended: Vec<Ended>,
    /// When each partition's device phase returned a proof, by kind.
    proved: Vec<(usize, f64)>,
    refused: Vec<u32>,
    peak_memory: u64,
    device_busy: Vec<f64>,
    cpu_busy: f64,
    timeline: Vec<Sample>,
    inputs: u64,
}

impl<'a> Sim<'a> {
    fn new(setup: &'a Setup, workload: &'a Workload) -> Sim<'a> {
        let devices: Vec<DeviceInfo> = match setup.gpus {
            0 => vec![DeviceInfo {
                ordinal: 0,
                name: "cpu".into(),
                memory_bytes: 0,
            }],
            n => (0..n)
                .map(|ordinal| DeviceInfo {
                    ordinal,
                    name: format!("gpu-{ordinal}"),
                    memory_bytes: setup.gpu_memory_bytes,
                })
                .collect(),
        };
        let device_count = devices.len();
        let prover = Arc::new(SimProver {
            devices,
            backend: if setup.gpus == 0 {
                "cpu"
            } else {
                "simulated-gpu"
            }
            .into(),
        });
        let freed = Arc::new(AtomicBool::new(false));
        let wake = freed.clone();
        let budget = Budget::new(setup.config.memory_budget_bytes, move || {
            wake.store(true, Ordering::SeqCst)
        });
        let (base, base_unix_ms) = (Instant::now(), crate::clock::unix_ms());
        let machine = {
            let _clock = crate::clock::simulate(base, base_unix_ms);
            Machine::new(setup.config.clone(), prover, budget)
        };
        let workers = (machine.worker_devices().into_iter())
            .map(|d| SimWorker {
                device: d.ordinal,
                phases: Vec::new(),
            })
            .collect();
        let kind_of = |kind| {
            (setup.costs.iter().position(|c| c.kind == kind))
                .unwrap_or_else(|| panic!("the workload has {kind} but the cost table has not"))
        };
        let mut arrivals: Vec<(f64, usize)> = (workload.arrivals.iter())
            .map(|(at, kind)| (at.as_secs_f64(), kind_of(*kind)))
            .collect();
        arrivals.sort_by(|a, b| b.0.total_cmp(&a.0));
        let mut sim = Sim {
            setup,
            workload,
            machine,
            freed,
            base,
            base_unix_ms,
            now: 0.0,
            next_activity: 0,
            activities: BTreeMap::new(),
            workers,
            serial: 0,
            submits: 0,
            open: BTreeMap::new(),
            arrivals,
            next_tick: 1.0,
            next_sample: 0.0,
            ended: Vec::new(),
            proved: Vec::new(),
            refused: vec![0; setup.costs.len()],
            peak_memory: 0,
            device_busy: vec![0.0; device_count],
            cpu_busy: 0.0,
            timeline: Vec::new(),
            inputs: 0,
        };
        for &(kind, n) in &workload.in_flight {
            for _ in 0..n {
                sim.arrive(kind_of(kind));
            }
        }
        sim
    }

    fn run(mut self) -> Report {
        let end = self.workload.duration.as_secs_f64();
        loop {
            let rates = self.rates();
            let next = self.next_event(&rates).min(end);
            self.advance(next - self.now, &rates);
            self.now = next;
            if self.now >= end {
                break;
            }
            self.fire_due(&rates);
        }
        let warmup = self.workload.warmup.as_secs_f64().min(end);
        let window = (end - warmup).max(1e-9);
        Report {
            kinds: report::kinds(&report::Tallies {
                costs: &self.setup.costs,
                ended: &self.ended,
                proved: &self.proved,
                refused: &self.refused,
                warmup,
                end,
            }),
            budget_bytes: self.setup.config.memory_budget_bytes,
            peak_memory_bytes: self.peak_memory,
            device_busy_share: self.device_busy.iter().map(|b| b / window).collect(),
            cpu_busy_share: (self.cpu_busy / (window * self.setup.cores)).min(1.0),
            timeline: self.timeline,
            unfinished: (self.open.values())
                .map(|o| (self.setup.costs[o.kind].kind, o.arrived))
                .collect(),
            inputs: self.inputs,
            simulated_s: end,
        }
    }

    /// How fast each activity goes now (its work per second), by activity id.
    fn rates(&self) -> BTreeMap<u64, f64> {
        let cpu: Vec<(u64, Demand)> = (self.activities.iter())
            .filter_map(|(&id, a)| match a.resource {
                Resource::Cpu(d) => Some((id, d)),
                _ => None,
            })
            .collect();
        let demands: Vec<Demand> = cpu.iter().map(|(_, d)| *d).collect();
        let given = share(self.setup.cores, &demands);
        let mut rates: BTreeMap<u64, f64> = cpu.iter().map(|(id, _)| *id).zip(given).collect();
        let mut on_device = vec![0u32; self.device_busy.len()];
        for a in self.activities.values() {
            if let Resource::Device(d) = a.resource {
                on_device[d as usize] += 1;
            }
        }
        for (&id, a) in &self.activities {
            match a.resource {
                Resource::Device(d) => {
                    rates.insert(id, 1.0 / f64::from(on_device[d as usize]));
                }
                Resource::Timer => {
                    rates.insert(id, 1.0);
                }
                Resource::Cpu(_) => {}
            }
        }
        rates
    }

    /// When the next thing happens.
    fn next_event(&self, rates: &BTreeMap<u64, f64>) -> f64 {
        let activity = (self.activities.iter())
            .filter_map(|(id, a)| {
                let rate = rates[id];
                (rate > 0.0).then(|| self.now + (a.left / rate).max(0.0))
            })
            .fold(f64::INFINITY, f64::min);
        let arrival = self.arrivals.last().map_or(f64::INFINITY, |a| a.0);
        activity
            .min(arrival)
            .min(self.next_tick)
            .min(self.next_sample)
            .max(self.now)
    }

    fn advance(&mut self, dt: f64, rates: &BTreeMap<u64, f64>) {
        if dt <= 0.0 {
            return;
        }
        // The part of this step inside the measured window, for the busy shares.
        let warmup = self.workload.warmup.as_secs_f64();
        let counted = (self.now + dt - warmup.max(self.now)).clamp(0.0, dt);
        let mut on_device = vec![false; self.device_busy.len()];
        for (id, a) in self.activities.iter_mut() {
            let rate = rates[id];
            a.left -= rate * dt;
            if let Resource::Cpu(_) = a.resource {
                self.cpu_busy += rate * counted;
            }
            // A device is busy while a step of a phase on it runs, on the device or (the CPU
            // backend) on the cores.
            if let Then::Step { worker, .. } = a.then {
                on_device[self.workers[worker as usize].device as usize] = true;
            }
        }
        for (busy, on) in self.device_busy.iter_mut().zip(on_device) {
            if on {
                *busy += counted;
            }
        }
    }

    fn fire_due(&mut self, rates: &BTreeMap<u64, f64>) {
        // Those that ran until now (an activity started by one of them runs from now on).
        let done: Vec<u64> = (self.activities.iter())
            .filter(|(id, a)| {
                let rate = rates.get(id).copied().unwrap_or(0.0);
                a.left <= DONE || (rate > 0.0 && a.left / rate <= DONE)
            })
            .map(|(id, _)| *id)
            .collect();
        for id in done {
            let activity = self.activities.remove(&id).expect("listed");
            self.finished(activity.then);
        }
        while self.arrivals.last().is_some_and(|a| a.0 <= self.now) {
            let (_, kind) = self.arrivals.pop().expect("just seen");
            self.arrive(kind);
        }
        if self.next_tick <= self.now {
            self.next_tick += 1.0;
            self.apply(Input::Tick);
        }
        if self.next_sample <= self.now {
            self.next_sample += self.workload.sample_every.as_secs_f64().max(1e-3);
            self.timeline.push(Sample {
                at_s: self.now,
                load: self.machine.load(),
            });
        }
    }

    /// A request arrives: it is planned (decoded and checked) on the cores, then submitted.
    fn arrive(&mut self, kind: usize) {
        let plan = &self.setup.costs[kind].plan;
        let arrived = self.now;
        self.start(
            Resource::Cpu(Demand {
                weight: cpu_weight(Priority::Critical, 0),
                cap: plan.speedup(self.setup.cores),
            }),
            plan.core_seconds(),
            Then::Planned { kind, arrived },
        );
    }

    fn start(&mut self, resource: Resource, left: f64, then: Then) {
        self.next_activity += 1;
        (self.activities).insert(
            self.next_activity,
            Activity {
                resource,
                left,
                then,
            },
        );
    }

    /// A CPU activity of `costs`' work at `priority`'s OS weight.
    fn cpu(&self, work: &super::CpuWork, priority: Priority) -> (Resource, f64) {
        let weight = cpu_weight(priority, self.setup.config.background_nice);
        let cap = work.speedup(self.setup.cores);
        (Resource::Cpu(Demand { weight, cap }), work.core_seconds())
    }

    fn finished(&mut self, then: Then) {
        match then {
            Then::Planned { kind, arrived } => self.submit(kind, arrived),
            Then::Synthesized {
                job,
                index,
                reservation,
            } => self.apply(Input::SynthDone {
                job,
                index,
                result: Ok(()),
                reservation,
            }),
            Then::Step { worker, serial } => self.step_ended(worker, serial),
            Then::Finalized { job, started } => self.apply(Input::Finalized {
                job,
                result: Ok(Vec::new()),
                elapsed: std::time::Duration::from_secs_f64(self.now - started),
            }),
            Then::Loaded { circuit_id, kind } => {
                let costs = &self.setup.costs[kind];
                let loaded = LoadedParams {
                    params: Arc::new(()),
                    bytes: costs.params_bytes,
                    precompiled_bytes: 0,
                };
                self.apply(Input::ParamsLoaded {
                    circuit_id,
                    result: Ok(loaded),
                });
            }
        }
    }

    fn submit(&mut self, kind: usize, arrived: f64) {
        let costs: &KindCosts = &self.setup.costs[kind];
        self.submits += 1;
        let n = self.submits;
        let mut digest = [0u8; 32];
        digest[..8].copy_from_slice(&n.to_le_bytes());
        let (reply, mut answer) = oneshot::channel();
        let job_id = format!("sim-{n}");
        self.apply(Input::Submit {
            job_id: job_id.clone(),
            origin: JobOrigin {
                request_id: format!("{}-{n}", costs.kind),
                kind: costs.kind,
                priority: costs.priority,
                digest: InputDigest(digest),
                input_bytes: 0,
            },
            plan: Planned {
                circuit_id: costs.circuit.clone(),
                partitions: costs.partitions,
                memory: PartitionMemory {
                    total_bytes: costs.reserve_bytes,
                    abc_bytes: costs.abc_bytes,
                },
                fast_path: None,
                plan: SimPlan { kind },
            },
            params_bytes: costs.params_bytes,
            inline_input: None,
            reply,
        });
        let accepted = matches!(answer.try_recv().ok(), Some(Ok(_)));
        let (watch, mut outcome) = oneshot::channel();
        if accepted {
            self.apply(Input::Api(Request::Watch {
                job_id,
                reply: watch,
            }));
        }
        match outcome.try_recv().ok().flatten() {
            Some(outcome) if accepted => {
                self.open.insert(
                    n,
                    Open {
                        kind,
                        arrived,
                        outcome,
                    },
                );
            }
            _ => self.refused[kind] += 1,
        }
    }

    /// Applies one input to the machine at the simulated now and carries out its effects.
    fn apply(&mut self, input: Input<SimProver>) {
        let at = self.base + std::time::Duration::from_secs_f64(self.now);
        let unix_ms = self.base_unix_ms + (self.now * 1000.0) as u64;
        let _clock = crate::clock::simulate(at, unix_ms);
        let mut pending = vec![input];
        while let Some(input) = pending.pop() {
            self.inputs += 1;
            let mut effects = self.machine.apply(input);
            effects.extend(self.machine.note_load(unix_ms));
            for effect in effects {
                self.execute(effect);
            }
            if self.freed.swap(false, Ordering::SeqCst) {
                pending.push(Input::MemoryFreed);
            }
        }
        self.peak_memory = self.peak_memory.max(self.machine.load().memory_used_bytes);
        self.collect_ended();
    }

    fn execute(&mut self, effect: Effect<SimProver>) {
        match effect {
            Effect::Synthesize {
                job,
                index,
                priority,
                plan,
                reservation,
                ..
            } => {
                let (resource, left) = self.cpu(&self.setup.costs[plan.kind].synthesis, priority);
                let then = Then::Synthesized {
                    job,
                    index,
                    reservation,
                };
                self.start(resource, left, then);
            }
            Effect::Prove { worker, task } => self.give_worker(worker, task),
            Effect::LoadParams { circuit_id } => {
                let kind = (self.setup.costs.iter())
                    .position(|c| c.circuit == circuit_id)
                    .expect("the machine loads only circuits of submitted jobs");
                let left = self.setup.costs[kind].params_load_s;
                self.start(Resource::Timer, left, Then::Loaded { circuit_id, kind });
            }
            Effect::Finalize { job, plan, .. } => {
                let work = &self.setup.costs[plan.kind].finalize;
                // The driver's finalize threads run at the daemon's own priority.
                let (resource, left) = self.cpu(work, Priority::Critical);
                let started = self.now;
                self.start(resource, left, Then::Finalized { job, started });
            }
            Effect::Record(_, ack) => {
                if let Some(ack) = ack {
                    ack.send(Ok(()));
                }
            }
            Effect::FlushJournal(done) => {
                let _ = done.send(());
            }
        }
    }

    /// A worker is sent a partition: the phase it runs (if any) stops at its next boundary.
    fn give_worker(&mut self, worker: u32, task: DeviceTask<SimProver>) {
        let kind = self.kind_of_job(task.job);
        let steps = self.setup.costs[kind].device.steps();
        self.serial += 1;
        let w = &mut self.workers[worker as usize];
        w.phases.push(Phase {
            serial: self.serial,
            task,
            kind,
            steps_left: steps,
            stepping: false,
            released: false,
        });
        self.start_step(worker);
    }

    /// The job's kind, from the phase's own record (`DeviceTask` carries the job's number only).
    fn kind_of_job(&self, job: u64) -> usize {
        self.machine.job_plan(job).map_or(0, |p: &SimPlan| p.kind)
    }

    /// Starts the next step of `worker`'s newest phase, unless one runs already.
    fn start_step(&mut self, worker: u32) {
        let w = &mut self.workers[worker as usize];
        let device = w.device;
        let Some(phase) = w.phases.last_mut() else {
            return;
        };
        if phase.stepping {
            return;
        }
        phase.stepping = true;
        let (serial, kind, priority) = (phase.serial, phase.kind, phase.task.priority);
        let then = Then::Step { worker, serial };
        match &self.setup.costs[kind].device {
            DeviceCost::Gpu { seconds, steps } => {
                let left = seconds / f64::from((*steps).max(1));
                self.start(Resource::Device(device), left, then);
            }
            DeviceCost::Cpu { work, steps } => {
                let (resource, left) = self.cpu(work, priority);
                self.start(resource, left / f64::from((*steps).max(1)), then);
            }
        }
    }

    /// A step boundary of phase `serial` on `worker`.
    fn step_ended(&mut self, worker: u32, serial: u64) {
        let w = &mut self.workers[worker as usize];
        let at = (w.phases.iter())
            .position(|p| p.serial == serial)
            .expect("a step belongs to a running phase");
        let newest = at + 1 == w.phases.len();
        let phase = &mut w.phases[at];
        phase.stepping = false;
        phase.steps_left -= 1;
        let release = !std::mem::replace(&mut phase.released, true);
        if release {
            phase.task.reservation.shrink(phase.task.abc_bytes);
        }
        let (job, index) = (phase.task.job, phase.task.index);
        let result = if phase.task.stop.is_set() {
            Some(Err(StepError::Stopped))
        } else {
            (phase.steps_left == 0).then(|| Ok(vec![0; 192]))
        };
        if release {
            self.apply(Input::AbcReleased { job, index });
        }
        match result {
            Some(result) => self.phase_ended(worker, serial, result),
            // A paused phase waits at this boundary until the newer ones have ended.
            None if newest => self.start_step(worker),
            None => {}
        }
    }

    fn phase_ended(&mut self, worker: u32, serial: u64, result: Result<Vec<u8>, StepError>) {
        let w = &mut self.workers[worker as usize];
        let at = (w.phases.iter())
            .position(|p| p.serial == serial)
            .expect("the phase runs");
        let phase = w.phases.remove(at);
        if result.is_ok() {
            self.proved.push((phase.kind, self.now));
        }
        if at == w.phases.len() {
            self.start_step(worker);
        }
        let DeviceTask {
            job,
            index,
            reservation,
            ..
        } = phase.task;
        self.apply(Input::DeviceDone {
            worker,
            job,
            index,
            result,
            reservation,
        });
    }

    /// Notes the jobs that ended; a kind kept in flight gets its next request.
    fn collect_ended(&mut self) {
        let ended: Vec<u64> = (self.open.iter())
            .filter(|(_, o)| o.outcome.borrow().is_some())
            .map(|(n, _)| *n)
            .collect();
        for n in ended {
            let open = self.open.remove(&n).expect("listed");
            let completed = matches!(
                open.outcome.borrow().as_ref().map(|o| &o.end),
                Some(JobEnd::Completed(_))
            );
            self.ended.push(Ended {
                kind: open.kind,
                arrived: open.arrived,
                ended: self.now,
                completed,
            });
            let kind = self.setup.costs[open.kind].kind;
            if self.workload.in_flight.iter().any(|(k, _)| *k == kind) {
                self.arrive(open.kind);
            }
        }
    }
}
