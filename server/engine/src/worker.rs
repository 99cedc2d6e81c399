//! A device worker's thread. It proves the partitions the machine sends it, each device phase on
//! a thread of its own (whose OS priority follows the partition's, see `os_priority`). The
//! machine sends a busy worker a partition only to preempt the phase it runs (a deadline
//! partition over PoRep work): the new phase starts at once, the running one finishes the step
//! it is in at its own (background) priority and then waits at that step boundary
//! (`PhaseHooks::step_done`) until the phase that preempted it has ended; it goes on afterwards
//! with its buffers and its memory reservation intact. So a deadline partition waits for no
//! device step, only shares the device with one step that the OS ranks below it.
//!
//! A device with several workers ([`DeviceInfo::workers`]) keeps that promise across them: while
//! a deadline phase runs on any of its workers, the phases without a deadline on the others
//! wait at their next step boundary too, and one sent meanwhile waits before it starts
//! ([`DeviceHold`]), so a deadline partition shares the device with at most one step of each.
//! A phase stopped meanwhile (its job cancelled or failed) stops waiting. Without preemption
//! (`[scheduler] preempt = false`) each worker has a hold of its own, which holds nothing.

use std::sync::Arc;

use crossbeam_channel::{select, Receiver, Sender};
use parking_lot::{Condvar, Mutex};
use tokio::sync::mpsc::UnboundedSender;

use crate::domain::Priority;
use crate::machine::{DeviceTask, Input, StopSignal};
use crate::os_priority;
use crate::prover::{DeviceInfo, PhaseHooks, Prover, StepError};
use crate::steps::{guarded, spawn};

/// How the machine hands a worker partitions.
pub(crate) struct WorkerHandle<P: Prover>(Sender<DeviceTask<P>>);

impl<P: Prover> WorkerHandle<P> {
    /// Sends `task`; false when the worker's thread is gone.
    pub(crate) fn send(&self, task: DeviceTask<P>) -> bool {
        self.0.send(task).is_ok()
    }
}

/// Starts worker `id`'s thread; `hold` is shared by every worker on its device.
pub(crate) fn start<P: Prover>(
    id: u32,
    device: DeviceInfo,
    hold: Arc<DeviceHold>,
    prover: Arc<P>,
    report: UnboundedSender<Input<P>>,
    background_nice: i32,
) -> WorkerHandle<P> {
    let (tasks, incoming) = crossbeam_channel::unbounded();
    let worker = Worker {
        id,
        device,
        hold,
        prover,
        report,
        background_nice,
    };
    spawn(&format!("snarkd-worker-{id}"), move || worker.run(incoming));
    WorkerHandle(tasks)
}

struct Worker<P: Prover> {
    id: u32,
    device: DeviceInfo,
    hold: Arc<DeviceHold>,
    prover: Arc<P>,
    report: UnboundedSender<Input<P>>,
    background_nice: i32,
}

/// One running device phase, as its worker sees it.
struct Phase {
    serial: u64,
    gate: Arc<Gate>,
}

impl<P: Prover> Worker<P> {
    /// Until the machine drops its handle and no phase runs: starts each partition sent, pausing
    /// the newest running phase first, and reports each phase's result as it ends.
    fn run(self, incoming: Receiver<DeviceTask<P>>) {
        let (done_tx, done_rx) = crossbeam_channel::unbounded::<(u64, Input<P>)>();
        // Running phases, oldest first; all but the newest wait at (or walk to) a step boundary.
        let mut running: Vec<Phase> = Vec::new();
        let mut serial = 0u64;
        let mut open = true;
        let closed = crossbeam_channel::never();
        while open || !running.is_empty() {
            select! {
                recv(if open { &incoming } else { &closed }) -> task => match task {
                    Ok(task) => {
                        if let Some(newest) = running.last() {
                            newest.gate.pause();
                        }
                        serial += 1;
                        let gate = Arc::new(Gate::default());
                        self.start_phase(task, serial, gate.clone(), done_tx.clone());
                        running.push(Phase { serial, gate });
                    }
                    Err(_) => open = false,
                },
                recv(done_rx) -> done => {
                    let (ended, input) = done.expect("the worker holds a sender");
                    let was_newest = running.last().is_some_and(|p| p.serial == ended);
                    running.retain(|p| p.serial != ended);
                    if was_newest {
                        if let Some(newest) = running.last() {
                            newest.gate.resume();
                        }
                    }
                    let _ = self.report.send(input);
                }
            }
        }
    }

    /// Runs `task`'s device phase on a new thread, started from the worker's own thread: a
    /// thread inherits its creator's OS priority and cannot raise it, so a deadline partition's
    /// phase thread must not descend from a background one.
    fn start_phase(
        &self,
        task: DeviceTask<P>,
        serial: u64,
        gate: Arc<Gate>,
        done: Sender<(u64, Input<P>)>,
    ) {
        let (worker, device, prover, report) = (
            self.id,
            self.device.clone(),
            self.prover.clone(),
            self.report.clone(),
        );
        let nice = self.background_nice;
        // Taken here, before the phase's thread exists, so that a sibling's next step boundary
        // already sees it; given back when the phase ends.
        let deadline = task.priority >= Priority::High;
        let held = deadline.then(|| self.hold.hold());
        let hold = self.hold.clone();
        let stop = task.stop.clone();
        spawn(&format!("snarkd-device-{worker}"), move || {
            let _held = held;
            os_priority::apply(task.priority, nice);
            let partition = task.index;
            if !deadline {
                hold.wait_while_held(worker, partition, &stop);
            }
            let result = device_phase(
                &*prover,
                worker,
                &device,
                task,
                &mut |input| {
                    let _ = report.send(input);
                },
                &mut || {
                    if gate.is_paused() {
                        tracing::info!(
                            worker,
                            partition,
                            "device phase waiting at its step boundary"
                        );
                    }
                    gate.wait_while_paused();
                    if !deadline {
                        hold.wait_while_held(worker, partition, &stop);
                    }
                },
                &|| gate.is_paused() || (!deadline && hold.is_held()),
            );
            let _ = done.send((serial, result));
        });
    }
}

/// Where a preempted phase waits: closed while a newer phase runs on its worker.
#[derive(Default)]
struct Gate {
    paused: Mutex<bool>,
    opened: Condvar,
}

impl Gate {
    fn pause(&self) {
        *self.paused.lock() = true;
    }

    fn is_paused(&self) -> bool {
        *self.paused.lock()
    }

    fn resume(&self) {
        *self.paused.lock() = false;
        self.opened.notify_all();
    }

    /// At a step boundary, on the phase's thread.
    fn wait_while_paused(&self) {
        let mut paused = self.paused.lock();
        while *paused {
            self.opened.wait(&mut paused);
        }
    }
}

/// What a device's workers share: how many deadline phases (HIGH and CRITICAL) run on the
/// device now. While any does, the phases without a deadline wait at their step boundaries.
#[derive(Default)]
pub(crate) struct DeviceHold {
    deadlines: Mutex<u32>,
    released: Condvar,
}

impl DeviceHold {
    /// Whether a deadline phase runs on the device.
    fn is_held(&self) -> bool {
        *self.deadlines.lock() > 0
    }

    /// Counts a deadline phase until the returned guard drops.
    fn hold(self: &Arc<Self>) -> Held {
        *self.deadlines.lock() += 1;
        Held(self.clone())
    }

    /// At a step boundary of a phase without a deadline (or before its first step), on its
    /// thread: waits while a deadline phase runs on the device, unless `stop` is set (then the
    /// phase stops at this boundary; the machine sets it without waking this wait, so the wait
    /// looks again every [`STOP_POLL`]).
    fn wait_while_held(&self, worker: u32, partition: u32, stop: &StopSignal) {
        let mut deadlines = self.deadlines.lock();
        if *deadlines > 0 {
            tracing::info!(
                worker,
                partition,
                "device phase waiting at its step boundary for a deadline partition on its device"
            );
        }
        while *deadlines > 0 && !stop.is_set() {
            self.released.wait_for(&mut deadlines, STOP_POLL);
        }
    }
}

/// How often a phase held for a deadline looks whether it was stopped meanwhile.
const STOP_POLL: std::time::Duration = std::time::Duration::from_millis(50);

/// A deadline phase counted by its device's [`DeviceHold`].
struct Held(Arc<DeviceHold>);

impl Drop for Held {
    fn drop(&mut self) {
        let mut deadlines = self.0.deadlines.lock();
        *deadlines -= 1;
        if *deadlines == 0 {
            self.0.released.notify_all();
        }
    }
}

/// Runs one partition's device phase on the calling thread: the a/b/c share of the reservation
/// goes back to the budget (and `AbcReleased` to `report`) as soon as the prover has consumed
/// it, `between_steps` runs at every step boundary (`will_wait`: whether it would wait now), and
/// the rest of the reservation travels back in the returned `DeviceDone`. A panic in the prover becomes the partition's error.
pub(crate) fn device_phase<P: Prover>(
    prover: &P,
    worker: u32,
    device: &DeviceInfo,
    task: DeviceTask<P>,
    report: &mut dyn FnMut(Input<P>),
    between_steps: &mut dyn FnMut(),
    will_wait: &dyn Fn() -> bool,
) -> Input<P> {
    let DeviceTask {
        job,
        index,
        abc_bytes,
        partition,
        params,
        mut reservation,
        stop,
        ..
    } = task;
    if stop.is_set() {
        // Stopped before it started (held for a deadline partition meanwhile): nothing to undo.
        return Input::DeviceDone {
            worker,
            job,
            index,
            result: Err(StepError::Stopped),
            reservation,
        };
    }
    let mut hooks = Hooks {
        job,
        index,
        abc_bytes,
        stop,
        released: false,
        reservation: &mut reservation,
        report,
        between_steps,
        will_wait,
    };
    let result = guarded(
        || prover.prove(device, partition, &params, &mut hooks),
        StepError::Panicked,
    );
    Input::DeviceDone {
        worker,
        job,
        index,
        result,
        reservation,
    }
}

struct Hooks<'a, P: Prover> {
    job: u64,
    index: u32,
    abc_bytes: u64,
    stop: StopSignal,
    released: bool,
    reservation: &'a mut crate::budget::Reservation,
    report: &'a mut dyn FnMut(Input<P>),
    between_steps: &'a mut dyn FnMut(),
    will_wait: &'a dyn Fn() -> bool,
}

impl<P: Prover> PhaseHooks for Hooks<'_, P> {
    /// The bytes are the prover's count; the reservation shrinks by the a/b/c share the plan
    /// estimated, which is what it holds for them.
    fn abc_released(&mut self, _bytes: u64) {
        if !std::mem::replace(&mut self.released, true) {
            self.reservation.shrink(self.abc_bytes);
            (self.report)(Input::AbcReleased {
                job: self.job,
                index: self.index,
            });
        }
    }

    fn step_done(&mut self) {
        (self.between_steps)()
    }

    fn will_wait(&self) -> bool {
        (self.will_wait)()
    }

    fn stop_requested(&self) -> bool {
        self.stop.is_set()
    }

    /// Grows the partition's reservation from the budget, without waiting for it.
    fn hold_at_least(&mut self, bytes: u64) -> bool {
        let held = self.reservation.bytes();
        held >= bytes || self.reservation.try_grow(bytes - held)
    }

    /// Grows the partition's reservation by `bytes`, without waiting for them.
    fn hold_more(&mut self, bytes: u64) -> bool {
        self.reservation.try_grow(bytes)
    }
}
