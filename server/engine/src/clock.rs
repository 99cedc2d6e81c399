//! The engine's clocks: the monotonic one the machine measures durations on (tokio's, so tests
//! can pause it) and wall-clock milliseconds for what people read. A simulation (`sim`) sets
//! both for the thread that applies the machine's inputs, so the real machine runs in simulated
//! time without a runtime's timers.

use std::cell::Cell;

use tokio::time::Instant;

thread_local! {
    /// The simulated (instant, Unix milliseconds) of this thread, while a simulation runs here.
    static SIMULATED: Cell<Option<(Instant, u64)>> = const { Cell::new(None) };
}

/// The machine's now: the simulated instant where one is set, else tokio's clock.
pub(crate) fn now() -> Instant {
    SIMULATED
        .with(Cell::get)
        .map_or_else(Instant::now, |(at, _)| at)
}

/// Milliseconds since the Unix epoch (simulated where a simulation is set).
pub(crate) fn unix_ms() -> u64 {
    SIMULATED.with(Cell::get).map_or_else(
        || {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_millis() as u64)
        },
        |(_, ms)| ms,
    )
}

/// Sets this thread's simulated time until the guard is dropped.
pub(crate) fn simulate(at: Instant, unix_ms: u64) -> Simulated {
    let previous = SIMULATED.with(|s| s.replace(Some((at, unix_ms))));
    Simulated(previous)
}

/// Puts back the clock that was in force before [`simulate`].
#[must_use = "the simulated time ends when this is dropped"]
pub(crate) struct Simulated(Option<(Instant, u64)>);

impl Drop for Simulated {
    fn drop(&mut self) {
        SIMULATED.with(|s| s.set(self.0));
    }
}
