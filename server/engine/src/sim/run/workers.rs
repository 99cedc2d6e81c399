//! The device workers in simulated time, as `worker.rs` runs them: a worker sent a partition
//! while it proves one pauses the running phase at its next step boundary and resumes it when
//! the newer one ends; a phase without a deadline waits at its step boundaries (and before its
//! first) while a deadline phase runs on another worker of its device (`worker.rs`'s
//! `DeviceHold`, with preemption on; a held phase whose job ended stops only when it steps
//! again, where the daemon's stops at once: the simulation ends no job early); the a/b/c share of
//! a reservation returns after a phase's first step; a phase whose job ended stops at its next
//! boundary.

use super::activities::{Resource, Then};
use super::Sim;
use crate::domain::Priority;
use crate::machine::{DeviceTask, Input};
use crate::prover::StepError;
use crate::sim::costs::DeviceCost;
use crate::sim::prover::{SimPlan, SimProver};

/// One device phase on a worker, as the worker's thread would hold it.
pub(super) struct Phase {
    pub serial: u64,
    pub task: DeviceTask<SimProver>,
    pub kind: usize,
    pub steps_left: u32,
    /// A step of it is running (an activity), rather than waiting at a boundary.
    pub stepping: bool,
    pub released: bool,
}

pub(super) struct SimWorker {
    pub device: u32,
    /// Running phases, oldest first: all but the newest stop at their next step boundary.
    pub phases: Vec<Phase>,
}

impl Sim<'_> {
    /// A worker is sent a partition: the phase it runs (if any) stops at its next boundary.
    pub(super) fn give_worker(&mut self, worker: u32, task: DeviceTask<SimProver>) {
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
    pub(super) fn kind_of_job(&self, job: u64) -> usize {
        self.machine.job_plan(job).map_or(0, |p: &SimPlan| p.kind)
    }

    /// Starts the next step of `worker`'s newest phase, unless one runs already or the phase
    /// has no deadline and another worker of its device runs one.
    pub(super) fn start_step(&mut self, worker: u32) {
        let device = self.workers[worker as usize].device;
        let held = self.deadline_on(device, worker);
        let w = &mut self.workers[worker as usize];
        let Some(phase) = w.phases.last_mut() else {
            return;
        };
        if phase.stepping || (held && phase.task.priority < Priority::High) {
            return;
        }
        phase.stepping = true;
        let (serial, kind, priority) = (phase.serial, phase.kind, phase.task.priority);
        let then = Then::Step { worker, serial };
        let cost = &self.setup.costs[kind].device;
        let steps = f64::from(cost.steps());
        match cost {
            DeviceCost::Gpu { seconds, .. } => {
                self.start(Resource::Device(device), seconds / steps, then);
            }
            DeviceCost::Cpu { work, .. } => {
                let (resource, left) = self.cpu(work, priority);
                self.start(resource, left / steps, then);
            }
        }
    }

    /// Whether a worker of `device` other than `worker` runs a deadline phase (HIGH or
    /// CRITICAL) that holds the device's other phases (never without preemption).
    fn deadline_on(&self, device: u32, worker: u32) -> bool {
        self.setup.config.preempt
            && (self.workers.iter().enumerate()).any(|(id, w)| {
                id as u32 != worker
                    && w.device == device
                    && w.phases.iter().any(|p| p.task.priority >= Priority::High)
            })
    }

    /// A step boundary of phase `serial` on `worker`.
    pub(super) fn step_ended(&mut self, worker: u32, serial: u64) {
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

    pub(super) fn phase_ended(
        &mut self,
        worker: u32,
        serial: u64,
        result: Result<Vec<u8>, StepError>,
    ) {
        let w = &mut self.workers[worker as usize];
        let at = (w.phases.iter())
            .position(|p| p.serial == serial)
            .expect("the phase runs");
        let phase = w.phases.remove(at);
        let device = w.device;
        if result.is_ok() {
            self.proved.push((phase.kind, self.now));
        }
        if at == w.phases.len() {
            self.start_step(worker);
        }
        if phase.task.priority >= Priority::High {
            // The phases its device's other workers held at a boundary go on.
            for other in 0..self.workers.len() as u32 {
                if other != worker && self.workers[other as usize].device == device {
                    self.start_step(other);
                }
            }
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
}
