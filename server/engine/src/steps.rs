//! Where the engine's steps run: each on a plain thread of its own, a panic in it caught and
//! turned into the step's error.

use std::panic::{catch_unwind, AssertUnwindSafe};

use snarkd_types::panic_message;

/// Starts `f` on a new thread named `name`.
pub(crate) fn spawn(name: &str, f: impl FnOnce() + Send + 'static) {
    std::thread::Builder::new()
        .name(name.to_string())
        .spawn(f)
        .expect("the OS refused to start a thread");
}

/// Runs a step, turning a panic into the error `panicked` makes of the panic's message.
pub(crate) fn guarded<T, E>(
    step: impl FnOnce() -> Result<T, E>,
    panicked: impl FnOnce(String) -> E,
) -> Result<T, E> {
    match catch_unwind(AssertUnwindSafe(step)) {
        Ok(result) => result,
        Err(panic) => Err(panicked(panic_message(&*panic))),
    }
}
