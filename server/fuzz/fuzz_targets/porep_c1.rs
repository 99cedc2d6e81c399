//! PoRep `vanilla_proof` bytes (the C1 JSON, or Curio's `{SectorNum, Phase1Out, SectorSize}`
//! wrapper) → `snarkd_prover::prepare`. Layout: `snarkd_fuzz::layout::Porep`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use snarkd_fuzz::{check_prepared, requests};

fuzz_target!(|data: &[u8]| check_prepared(&requests::porep(data)));
