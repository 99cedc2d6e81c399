//! The simulation's driver: the real [`Machine`] takes every input, and its effects are carried
//! out here in simulated time instead of on threads. Each step is an activity with work left
//! on a resource: the cores (shared by weight, `cpu.rs`), a device (shared equally by the phases
//! on it), or a timer (a params load). Time jumps from one event to the next: an activity
//! ending, an arrival, the engine's one-second tick, a sample of the load.
//!
//! What the driver does with an effect is mirrored as it does it: a synthesis, a finalize and a
//! params load each start at once (the machine bounds how many), a device phase goes to its
//! worker (`workers.rs`). `activities.rs` is the time that passes meanwhile.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use tokio::sync::{oneshot, watch};
use tokio::time::Instant;

mod activities;
mod workers;

use activities::{Activity, Resource, Then, DONE};
use workers::SimWorker;

use super::costs::KindCosts;
use super::prover::{SimPlan, SimProver};
use super::report::{self, Ended, Report, Sample};
use super::{Setup, Workload};
use crate::budget::Budget;
use crate::domain::{JobEnd, JobOutcome, Priority};
use crate::journal::InputDigest;
use crate::machine::{Effect, Input, Intake, JobOrigin, Machine, Request};
use crate::prover::{DeviceInfo, LoadedParams, PartitionMemory, Planned};

/// Runs `workload` on the box and engine of `setup` and reports what happened.
pub fn simulate(setup: &Setup, workload: &Workload) -> Report {
    Sim::new(setup, workload).run()
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
                workers: setup.workers_per_device,
            }],
            n => (0..n)
                .map(|ordinal| DeviceInfo {
                    ordinal,
                    name: format!("gpu-{ordinal}"),
                    memory_bytes: setup.gpu_memory_bytes,
                    workers: setup.workers_per_device,
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
        // Requests are planned on blocking threads at the daemon's own priority.
        let (resource, left) = self.cpu(&self.setup.costs[kind].plan, Priority::Critical);
        let arrived = self.now;
        self.start(resource, left, Then::Planned { kind, arrived });
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
        let job_id = format!("sim-{n}");
        let origin = JobOrigin {
            request_id: format!("{}-{n}", costs.kind),
            kind: costs.kind,
            priority: costs.priority,
            digest: InputDigest(digest),
            input_bytes: 0,
        };
        // As the engine's handle does: a place under the limits, then the planned job.
        let (reply, mut granted) = oneshot::channel();
        self.apply(Input::api(Request::Intake {
            origin: origin.clone(),
            reply,
        }));
        let (reply, mut answer) = oneshot::channel();
        if let Ok(Ok(Intake::Granted(slot))) = granted.try_recv() {
            self.apply(Input::Submit {
                job_id: job_id.clone(),
                origin,
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
                slot,
                reply,
            });
        }
        let accepted = matches!(answer.try_recv().ok(), Some(Ok(_)));
        let (watch, mut outcome) = oneshot::channel();
        if accepted {
            self.apply(Input::api(Request::Watch {
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
            Effect::Answer(answer) => answer.send(),
        }
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
