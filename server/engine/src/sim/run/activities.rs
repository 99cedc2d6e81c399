//! Work in progress in simulated time: what each activity (a step on the cores, on a device
//! or on a timer) does when its work is done, how fast each goes now (the cores shared by OS
//! weight, a device by the phases on it), when the next one ends, and time moving on to it.

use std::collections::BTreeMap;

use super::Sim;
use crate::budget::Reservation;
use crate::domain::Priority;
use crate::sim::costs::cpu_weight;
use crate::sim::cpu::{share, Demand};
use crate::sim::CpuWork;

/// Work left below this counts as done (float rounding of the shares).
pub(super) const DONE: f64 = 1e-9;

/// What happens when an activity's work is done.
pub(super) enum Then {
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

pub(super) enum Resource {
    Cpu(Demand),
    Device(u32),
    Timer,
}

pub(super) struct Activity {
    pub resource: Resource,
    /// Core-seconds on the cores, device-seconds on a device, seconds on a timer.
    pub left: f64,
    pub then: Then,
}

impl Sim<'_> {
    /// How fast each activity goes now (its work per second), by activity id.
    pub(super) fn rates(&self) -> BTreeMap<u64, f64> {
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
    pub(super) fn next_event(&self, rates: &BTreeMap<u64, f64>) -> f64 {
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

    pub(super) fn advance(&mut self, dt: f64, rates: &BTreeMap<u64, f64>) {
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

    pub(super) fn start(&mut self, resource: Resource, left: f64, then: Then) {
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
    pub(super) fn cpu(&self, work: &CpuWork, priority: Priority) -> (Resource, f64) {
        let weight = cpu_weight(priority, self.setup.config.background_nice);
        let cap = work.speedup(self.setup.cores);
        (Resource::Cpu(Demand { weight, cap }), work.core_seconds())
    }
}
