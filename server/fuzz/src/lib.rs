//! Shared pieces of the fuzz targets in `fuzz_targets/`: the input layouts and the crash rule.
//!
//! Layout:
//! - `layout`: how a fuzz input's bytes become request fields (and back, for the seed writer).
//! - `requests`: each target's bytes → the `ProofInput` it prepares (replayed by a cargo test).
//!
//! The crash rule: a decoder must return `Ok` or `Err`, never panic. `snarkd_prover::prepare`
//! catches a panic inside a kind's decoder and returns it as an `InvalidRequest` ("decoding them
//! failed"), which keeps the daemon alive but would hide the bug from the fuzzer. libfuzzer-sys's
//! panic hook already aborts at the panic itself; [`check_prepared`] also turns that error back
//! into a crash, so the rule holds however the target is run.

pub mod layout;
pub mod requests;

use snarkd_prover::{prepare, ProofInput};

/// What `prepare` says when it caught a decoder's panic (server/prover/src/filecoin/mod.rs).
pub const CAUGHT_PANIC: &str = "decoding them failed";

/// Runs `prepare` on `req` and panics if a decoder panicked inside it.
pub fn check_prepared(req: &ProofInput) {
    if let Err(e) = prepare(req) {
        let message = e.to_string();
        if message.contains(CAUGHT_PANIC) {
            panic!("a decoder panicked inside prepare: {message}");
        }
    }
}
