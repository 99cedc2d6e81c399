//! `snarkd-bench`: fixture generator and benchmarks for the snarkd prover (CLI in progress).

fn main() {}
