//! A real-time limit for a test: an engine test under a paused tokio clock waits on work done on
//! real threads, so a tokio timeout there can fire early (the clock jumps while the runtime is
//! idle) or never help (the engine's own ticks keep the paused clock moving). A thread of its own
//! watches the wall clock instead.

use std::io::Write;
use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::time::Duration;

/// How long any engine test may run before it fails instead of hanging the suite.
const TEST_LIMIT: Duration = Duration::from_secs(120);

/// Aborts the test binary with a message naming the test when the test still runs after its
/// limit of real time; dropping it (the test ended, passed or panicked) stands the watch down.
#[must_use = "the watch ends when this is dropped"]
pub struct Watchdog(#[allow(dead_code)] Sender<()>);

impl Watchdog {
    /// Watches the calling test (libtest names a test's thread after the test).
    pub fn for_this_test() -> Watchdog {
        let name = std::thread::current()
            .name()
            .unwrap_or("an unnamed test")
            .to_string();
        Watchdog::new(name, TEST_LIMIT)
    }

    pub fn new(what: String, limit: Duration) -> Watchdog {
        let (stand_down, watch) = mpsc::channel::<()>();
        std::thread::spawn(move || {
            if let Err(RecvTimeoutError::Timeout) = watch.recv_timeout(limit) {
                // Straight to the process's stderr: libtest captures `eprintln!` of a test's
                // threads and would lose the message with the abort.
                let _ = writeln!(
                    std::io::stderr(),
                    "{what}: still running after {limit:?} of real time (the engine did not \
                     do what the test waits for); aborting the test binary instead of hanging"
                );
                std::process::abort();
            }
        });
        Watchdog(stand_down)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_test_that_ends_in_time_is_not_aborted() {
        let watch = Watchdog::new("short".into(), Duration::from_millis(200));
        drop(watch);
        // Past the limit: the watch stood down, so the process is still here.
        std::thread::sleep(Duration::from_millis(400));
    }
}
