//! Filecoin proof kinds at 2 KiB on real fixtures (a freshly sealed random sector): each proof
//! made by our split prover is accepted by filecoin-proofs(-api)'s verifier and rejected against
//! altered public inputs; the memory estimate is checked against measurement; bad inputs give
//! typed errors; the fuzzers' findings and corpus are replayed.
//!
//! Parameters: generated once into `$SNARKD_TEST_PARAMS_DIR` (default
//! `$HOME/.cache/snarkd/params-2k`) when missing — PoSt in seconds, Snap in about 50 s, PoRep in
//! about 85 s on 2 cores. They verify only against their own `.vk`.

mod bad_input;
mod common;
mod estimate;
mod fuzz_findings;
mod params_read;
mod porep;
mod post;
mod precompiled;
mod preempt;
mod snap;
