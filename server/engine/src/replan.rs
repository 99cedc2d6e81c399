//! Recovery in the background: the jobs read back from the journal are planned again on a
//! thread of their own, one at a time in submit order, while the daemon already serves (a
//! deadline proof sent meanwhile is taken and proved at once). Each job's input is read back
//! only when its turn comes, so recovery never holds more than one input it has not planned.
//! Each result goes to the machine as `Input::Replanned`: a plan makes the job run; a job whose
//! params are missing waits (planning is tried again every [`PARAMS_RETRY`], as long as it is
//! unfinished), as an operator fetching them expects; a job that can never be planned fails
//! (its end recorded here) or, when its input cannot be read back, goes to quarantine.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc::UnboundedSender;

use crate::domain::{FailureClass, FailureStage, JobFailure};
use crate::error::EngineError;
use crate::journal::{Recovery, Unplanned};
use crate::machine::{Input, Replanned};
use crate::prover::Prover;

/// How often a recovered job whose params are missing is planned again (1 s in the crate's
/// own tests).
pub const PARAMS_RETRY: Duration = Duration::from_secs(if cfg!(test) { 1 } else { 10 });

/// Starts the recovery thread for `jobs` (in submit order).
pub(crate) fn spawn<P: Prover>(
    recovery: Recovery,
    jobs: Vec<Unplanned>,
    prover: Arc<P>,
    engine: UnboundedSender<Input<P>>,
) {
    if jobs.is_empty() {
        return;
    }
    tracing::info!(
        jobs = jobs.len(),
        "recovering the journal's unfinished jobs in the background"
    );
    std::thread::Builder::new()
        .name("snarkd-recovery".into())
        .spawn(move || run(recovery, jobs, &*prover, &engine))
        .expect("the OS refused to start a thread");
}

fn run<P: Prover>(
    mut recovery: Recovery,
    jobs: Vec<Unplanned>,
    prover: &P,
    engine: &UnboundedSender<Input<P>>,
) {
    let started = std::time::Instant::now();
    let total = jobs.len();
    let mut waiting = Vec::new();
    if !pass(&mut recovery, jobs, prover, engine, &mut waiting) {
        return; // the engine stopped
    }
    tracing::info!(
        jobs = total,
        waiting_for_params = waiting.len(),
        ms = started.elapsed().as_millis() as u64,
        "recovery planned the journal's jobs again"
    );
    while !waiting.is_empty() {
        std::thread::sleep(PARAMS_RETRY);
        let again = std::mem::take(&mut waiting);
        if !pass(&mut recovery, again, prover, engine, &mut waiting) {
            return;
        }
    }
}

/// Plans `jobs` in order, skipping those no longer unfinished (cancelled while they waited);
/// those whose params are missing go to `waiting`. False once the engine has stopped.
fn pass<P: Prover>(
    recovery: &mut Recovery,
    jobs: Vec<Unplanned>,
    prover: &P,
    engine: &UnboundedSender<Input<P>>,
    waiting: &mut Vec<Unplanned>,
) -> bool {
    for job in jobs {
        hold_for_test(recovery);
        if recovery.unfinished(&job.job.job.job_id)
            && !replan(recovery, job, prover, engine, waiting)
        {
            return false;
        }
    }
    true
}

/// Plans one job and tells the machine; a job whose params are missing goes to `waiting`.
/// False once the engine has stopped.
fn replan<P: Prover>(
    recovery: &mut Recovery,
    job: Unplanned,
    prover: &P,
    engine: &UnboundedSender<Input<P>>,
    waiting: &mut Vec<Unplanned>,
) -> bool {
    let (seq, job_id) = (job.job.job.seq, job.job.job.job_id.clone());
    let result = match recovery.request(&job) {
        // Its input did not survive on disk: the journal's storage failed it.
        Err(quarantined) => Replanned::Ended(JobFailure::new(
            FailureClass::Resource,
            FailureStage::Journal,
            quarantined.to_string(),
        )),
        Ok(request) => {
            let planned =
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| prover.plan(request)))
                    .unwrap_or_else(|_| {
                        Err(EngineError::Internal(
                            "the prover panicked while planning".into(),
                        ))
                    });
            match planned {
                Ok(plan) => {
                    let params_bytes = prover.params_size_estimate(&plan.circuit_id);
                    Replanned::Planned(plan, params_bytes)
                }
                Err(EngineError::Setup(missing)) => {
                    tracing::warn!(%job_id, error = %missing, retry_secs = PARAMS_RETRY.as_secs(),
                        "a recovered job waits for its params; it is planned again once they are there");
                    waiting.push(job);
                    Replanned::Waiting(format!("waiting for its params: {missing}"))
                }
                Err(err) => {
                    let failure = JobFailure::new(
                        err.class(),
                        FailureStage::Journal,
                        format!("after a restart: {err}"),
                    );
                    tracing::warn!(%job_id, error = %err, "a recovered job can no longer be planned; it fails");
                    recovery.fail(&job_id, &failure);
                    Replanned::Ended(failure)
                }
            }
        }
    };
    engine.send(Input::Replanned { seq, result }).is_ok()
}

/// With the `test-hooks` feature (and in the crate's tests), recovery waits before each job
/// while a file named `hold-recovery` exists in the journal's directory: tests see the daemon
/// serve with jobs still to recover. Every build that ships looks for no such file.
fn hold_for_test(recovery: &Recovery) {
    #[cfg(any(test, feature = "test-hooks"))]
    while recovery.dir().join("hold-recovery").exists() {
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = recovery;
}
