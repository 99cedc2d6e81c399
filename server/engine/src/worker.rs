//! A device worker's thread. It proves the partitions the machine sends it one after another,
//! each device phase on a thread of its own (whose OS priority follows the partition's, see
//! `os_priority`). At every step boundary of a running phase (`DeviceHooks::step_done`) the
//! worker takes any partition the machine sent it meanwhile: the machine sends a busy worker a
//! partition only to preempt the one it runs (a deadline partition over PoRep work), so that one
//! is proved to its end right there, and the paused phase goes on afterwards with its buffers
//! and its memory reservation intact.

use std::sync::{mpsc, Arc};

use parking_lot::Mutex;
use tokio::sync::mpsc::UnboundedSender;

use crate::driver::{guarded, spawn};
use crate::machine::{DeviceTask, Input};
use crate::os_priority;
use crate::prover::{DeviceHooks, DeviceInfo, Prover, StepError};

/// Starts worker `id`'s thread; the sender is how the machine hands it partitions.
pub(crate) fn start(
    id: u32,
    device: DeviceInfo,
    prover: Arc<dyn Prover>,
    report: UnboundedSender<Input>,
    background_nice: i32,
) -> mpsc::Sender<DeviceTask> {
    let (tasks, incoming) = mpsc::channel::<DeviceTask>();
    let worker = Worker {
        id,
        device,
        prover,
        report,
        background_nice,
        incoming: Mutex::new(incoming),
    };
    spawn(&format!("snarkd-worker-{id}"), move || worker.run());
    tasks
}

struct Worker {
    id: u32,
    device: DeviceInfo,
    prover: Arc<dyn Prover>,
    report: UnboundedSender<Input>,
    background_nice: i32,
    /// Read by the worker's thread between partitions and by a running phase at its step
    /// boundaries (on the phase's own thread).
    incoming: Mutex<mpsc::Receiver<DeviceTask>>,
}

impl Worker {
    fn run(&self) {
        loop {
            let next = self.incoming.lock().recv();
            match next {
                Ok(task) => self.prove(task),
                Err(_) => return,
            }
        }
    }

    /// Proves one partition on a thread of its own and reports the result. A partition that
    /// preempts it is proved from here too, not from the phase's thread: a thread inherits its
    /// creator's OS priority and cannot raise it, so a deadline partition's phase thread must
    /// not descend from a background one.
    fn prove(&self, task: DeviceTask) {
        let (to_worker, from_phase) = mpsc::channel::<FromPhase>();
        std::thread::scope(|scope| {
            std::thread::Builder::new()
                .name(format!("snarkd-device-{}", self.id))
                .spawn_scoped(scope, move || {
                    os_priority::apply(task.priority, self.background_nice);
                    let report = &mut |input| {
                        let _ = self.report.send(input);
                    };
                    let done = device_phase(
                        &*self.prover,
                        self.id,
                        &self.device,
                        task,
                        report,
                        &mut || self.preempt_at_step(&to_worker),
                    );
                    let _ = to_worker.send(FromPhase::Done(done));
                })
                .expect("the OS refused to start a thread");
            // Ends when the phase sends its result; a phase thread that died without one (it
            // catches the prover's panics) ends the scope with its panic.
            while let Ok(message) = from_phase.recv() {
                match message {
                    FromPhase::Preempt(task, resume) => {
                        self.prove(task);
                        let _ = resume.send(());
                    }
                    FromPhase::Done(done) => {
                        let _ = self.report.send(done);
                        return;
                    }
                }
            }
        });
    }

    /// At a step boundary, on the phase's thread: hands whatever the machine sent meanwhile (a
    /// preempting partition) to the worker's thread and waits until it is proved.
    fn preempt_at_step(&self, to_worker: &mpsc::Sender<FromPhase>) {
        loop {
            let next = self.incoming.lock().try_recv();
            let Ok(task) = next else { return };
            let (resume, resumed) = mpsc::channel();
            if to_worker.send(FromPhase::Preempt(task, resume)).is_err() {
                return;
            }
            let _ = resumed.recv();
        }
    }
}

/// What a running phase's thread tells its worker's thread.
enum FromPhase {
    /// A partition came at a step boundary: prove it, then answer on the sender so the paused
    /// phase goes on.
    Preempt(DeviceTask, mpsc::Sender<()>),
    /// The phase's result.
    Done(Input),
}

/// Runs one partition's device phase on the calling thread: the a/b/c share of the reservation
/// goes back to the budget (and `AbcReleased` to `report`) as soon as the prover has consumed
/// it, `between_steps` runs at every step boundary, and the rest of the reservation travels back
/// in the returned `DeviceDone`. A panic in the prover becomes the partition's error.
pub(crate) fn device_phase(
    prover: &dyn Prover,
    worker: u32,
    device: &DeviceInfo,
    task: DeviceTask,
    report: &mut dyn FnMut(Input),
    between_steps: &mut dyn FnMut(),
) -> Input {
    let DeviceTask {
        job,
        index,
        abc_bytes,
        partition,
        params,
        mut reservation,
        ..
    } = task;
    let mut hooks = Hooks {
        job,
        index,
        abc_bytes,
        released: false,
        reservation: &mut reservation,
        report,
        between_steps,
    };
    let result = guarded(
        || prover.prove(device, partition, &params, &mut hooks),
        StepError::Retryable,
    );
    Input::DeviceDone {
        worker,
        job,
        index,
        result,
        reservation,
    }
}

struct Hooks<'a> {
    job: u64,
    index: u32,
    abc_bytes: u64,
    released: bool,
    reservation: &'a mut crate::budget::Reservation,
    report: &'a mut dyn FnMut(Input),
    between_steps: &'a mut dyn FnMut(),
}

impl DeviceHooks for Hooks<'_> {
    fn abc_released(&mut self) {
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
}
