//! WinningPoSt and WindowPoSt `vanilla_proofs` (bincode `FallbackPoStSectorProof` per sector),
//! randomness, miner id and partition index → `snarkd_prover::prepare`.
//! Layout: `snarkd_fuzz::layout::Post`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use snarkd_fuzz::{check_prepared, requests};

fuzz_target!(|data: &[u8]| check_prepared(&requests::post(data)));
