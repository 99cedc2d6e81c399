//! Test hook (the `test-hooks` feature): device phases held at a step boundary, so a test can
//! show what the daemon does while real phases run, without racing the clock.
//!
//! `SNARKD_TEST_HOLD_PHASE=DIR`: the phases of the process are numbered 1, 2, … as they end
//! their H step. Phase `k` stays at that boundary while the file `DIR/k` exists, calling
//! `step_done` every 20 ms (the caller may keep it there or run deadline work, as at any
//! boundary) and stopping when asked. It writes `DIR/k.holding` when it starts to hold and
//! `DIR/k.left` when it goes on, each holding a sequence number shared by all marks, so a test
//! reads the order in which phases went on.

use std::path::Path;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::Duration;

use crate::error::{ProverError, Result};
use crate::groth16::PhaseHooks;

/// The setting that names the hold directory.
pub const HOLD_PHASE_ENV: &str = "SNARKD_TEST_HOLD_PHASE";

static PHASES: AtomicU32 = AtomicU32::new(0);
static MARKS: AtomicU64 = AtomicU64::new(0);

/// At the boundary after the H step: holds here while this phase's file exists.
pub(crate) fn at_boundary(hooks: &mut dyn PhaseHooks) -> Result<()> {
    let Some(dir) = std::env::var_os(HOLD_PHASE_ENV) else {
        return Ok(());
    };
    let dir = Path::new(&dir);
    let k = PHASES.fetch_add(1, Ordering::SeqCst) + 1;
    let hold = dir.join(k.to_string());
    if !hold.exists() {
        return Ok(());
    }
    mark(dir, k, "holding");
    while hold.exists() {
        hooks.step_done();
        if hooks.stop_requested() {
            return Err(ProverError::Stopped);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    mark(dir, k, "left");
    Ok(())
}

fn mark(dir: &Path, k: u32, what: &str) {
    let n = MARKS.fetch_add(1, Ordering::SeqCst) + 1;
    // Written whole under another name, then renamed: a reader never sees half a number.
    let tmp = dir.join(format!(".{k}.{what}"));
    let _ = std::fs::write(&tmp, n.to_string())
        .and_then(|()| std::fs::rename(&tmp, dir.join(format!("{k}.{what}"))));
}
