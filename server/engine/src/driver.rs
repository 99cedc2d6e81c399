//! Runs the [`Machine`] as the engine's single writer on the async runtime, and carries out its
//! effects on plain threads: one thread per synthesis (the machine bounds how many), one
//! long-lived thread per device worker, and short threads for params loads and finalization.
//! A panic in any step is caught and becomes that job's error; the daemon keeps running. A panic
//! in the writer itself ends it; `Engine` watches for that (see `handle.rs`).

use std::collections::HashMap;
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use tokio::sync::{mpsc::UnboundedReceiver, mpsc::UnboundedSender, watch, Notify};

use crate::error::EngineError;
use crate::journal::record::ToJournal;
use crate::machine::{Effect, Input, Machine};
use crate::os_priority;
use crate::prover::{Prover, StepError};
use crate::status::StatusSnapshot;
use crate::steps::{guarded, spawn};
use crate::worker;

/// How often finished jobs are checked for expiry and the gauges refreshed.
const TICK: Duration = Duration::from_secs(1);

/// Inputs already waiting that are applied together before one snapshot shows them all: a
/// burst of steps' results costs one publish, not one each, and a long burst still publishes
/// every this many inputs. An input that answers a client ends the fold, so that what it was
/// told is in the status by the time it could ask (as without folding).
const FOLD: usize = 64;

/// The writer loop; ends when every sender of `inputs` is gone. `panic_hook` is a test hook: a
/// notification makes the writer panic, as a bug in it would.
pub(crate) async fn run<P: Prover>(
    mut machine: Machine<P>,
    mut inputs: UnboundedReceiver<Input<P>>,
    sender: UnboundedSender<Input<P>>,
    status: watch::Sender<Arc<StatusSnapshot>>,
    prover: Arc<P>,
    journal: Option<mpsc::Sender<ToJournal>>,
    panic_hook: Arc<Notify>,
) {
    let nice = machine.background_nice();
    // One hold a device, shared by its workers; without preemption each worker's own.
    let preempt = machine.preempts();
    let mut holds: HashMap<u32, Arc<worker::DeviceHold>> = HashMap::new();
    let workers: Vec<worker::WorkerHandle<P>> = machine
        .worker_devices()
        .into_iter()
        .enumerate()
        .map(|(id, device)| {
            let hold = match preempt {
                true => holds.entry(device.ordinal).or_default().clone(),
                false => Arc::default(),
            };
            worker::start(
                id as u32,
                device,
                hold,
                prover.clone(),
                sender.clone(),
                nice,
            )
        })
        .collect();
    let mut tick = tokio::time::interval(TICK);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    // The machine's version when the published snapshot was built: a snapshot is built again
    // only once something it shows has changed.
    let mut published = machine.version();
    // Answers, and the journal's records (whose acknowledgements answer submits), wait for the
    // publish after the inputs that made them: what a caller is told is in the status it reads
    // next. They keep their order.
    let mut held = Vec::new();
    loop {
        let input = tokio::select! {
            biased;
            input = inputs.recv() => match input {
                Some(input) => input,
                None => break,
            },
            _ = tick.tick() => Input::Tick,
            _ = panic_hook.notified() => panic!("test hook: the writer task was told to panic"),
        };
        let mut tick = false;
        let mut next = Some(input);
        for folded in 1.. {
            let Some(input) = next.take() else { break };
            tick |= matches!(input, Input::Tick);
            let answers = input.answers_a_client();
            for effect in machine.apply(input) {
                match effect {
                    effect @ (Effect::Answer(_) | Effect::Record(..) | Effect::FlushJournal(_)) => {
                        held.push(effect)
                    }
                    effect => execute(effect, &workers, &prover, &journal, &sender, nice),
                }
            }
            if !answers && folded < FOLD {
                next = inputs.try_recv().ok();
            }
        }
        // The load record joins the journal's records, after them.
        held.extend(machine.note_load(crate::clock::unix_ms()));
        if machine.version() != published {
            published = machine.version();
            status.send_replace(Arc::new(machine.snapshot()));
            record_gauges(&status.borrow());
        } else if tick {
            // Busy seconds grow with the clock alone.
            record_gauges(&status.borrow());
        }
        for effect in held.drain(..) {
            execute(effect, &workers, &prover, &journal, &sender, nice);
        }
    }
}

fn execute<P: Prover>(
    effect: Effect<P>,
    workers: &[worker::WorkerHandle<P>],
    prover: &Arc<P>,
    journal: &Option<mpsc::Sender<ToJournal>>,
    tx: &UnboundedSender<Input<P>>,
    background_nice: i32,
) {
    let tx = tx.clone();
    match effect {
        Effect::Record(record, ack) => match journal {
            Some(journal) => {
                if let Err(mpsc::SendError(ToJournal::Record(_, Some(ack)))) =
                    journal.send(ToJournal::Record(record, ack))
                {
                    ack.send(Err(EngineError::Journal(
                        "the journal thread has stopped".into(),
                    )));
                }
            }
            // Without a journal a job is accepted once it is in memory.
            None => {
                if let Some(ack) = ack {
                    ack.send(Ok(()));
                }
            }
        },
        Effect::FlushJournal(done) => match journal {
            Some(journal) => {
                let _ = journal.send(ToJournal::Flush(done));
            }
            None => {
                let _ = done.send(());
            }
        },
        Effect::Synthesize {
            job,
            index,
            priority,
            plan,
            params,
            reservation,
        } => {
            let prover = prover.clone();
            spawn("snarkd-synth", move || {
                os_priority::apply(priority, background_nice);
                let result = guarded(
                    || prover.synthesize(&plan, index, params.as_deref()),
                    StepError::Panicked,
                );
                let _ = tx.send(Input::SynthDone {
                    job,
                    index,
                    result,
                    reservation,
                });
            })
        }
        Effect::Prove { worker, task } => {
            if !workers[worker as usize].send(task) {
                tracing::error!(worker, "device worker thread is gone");
            }
        }
        Effect::LoadParams { circuit_id } => {
            let prover = prover.clone();
            spawn("snarkd-params", move || {
                let result = guarded(
                    || prover.load_params(&circuit_id),
                    |m| EngineError::Internal(format!("loading params {circuit_id} panicked: {m}")),
                );
                let _ = tx.send(Input::ParamsLoaded { circuit_id, result });
            })
        }
        Effect::Finalize {
            job,
            plan,
            proofs,
            params,
        } => {
            let prover = prover.clone();
            spawn("snarkd-finalize", move || {
                let started = Instant::now();
                let result = guarded(
                    || prover.finalize(&plan, proofs, &params),
                    StepError::Panicked,
                );
                let _ = tx.send(Input::Finalized {
                    job,
                    result,
                    elapsed: started.elapsed(),
                });
            })
        }
        Effect::Answer(answer) => answer.send(),
    }
}

/// Point-in-time metrics, read off the snapshot so they always agree with the status.
fn record_gauges(s: &StatusSnapshot) {
    metrics::gauge!("snarkd_memory_budget_bytes").set(s.memory.total_bytes as f64);
    metrics::gauge!("snarkd_memory_used_bytes").set(s.memory.used_bytes as f64);
    metrics::gauge!("snarkd_memory_params_bytes").set(s.memory.params_bytes as f64);
    metrics::gauge!("snarkd_memory_spare_bytes").set(s.memory.spare_bytes as f64);
    metrics::gauge!("snarkd_queue_depth").set(s.counters.queue_depth as f64);
    metrics::gauge!("snarkd_synthesis_active").set(s.synthesis.active as f64);
    metrics::gauge!("snarkd_journal_writable")
        .set(f64::from(u8::from(s.daemon.journal_unwritable.is_none())));
    for q in &s.queues {
        metrics::gauge!("snarkd_jobs_pending", "kind" => q.kind.name()).set(q.pending as f64);
        metrics::gauge!("snarkd_jobs_in_progress", "kind" => q.kind.name())
            .set(q.in_progress as f64);
    }
    let now_ms = crate::clock::unix_ms();
    for w in &s.workers {
        // A counter of seconds with their fractions: the exporter's counters are integers, so a
        // `_total` gauge, which `/metrics` types as the counter it is.
        metrics::gauge!("snarkd_worker_busy_seconds_total", "worker" => w.worker_id.to_string())
            .set(w.busy_secs(now_ms));
    }
}
