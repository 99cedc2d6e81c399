//! SnapDeals `vanilla_proofs` (bincode `PartitionProof` per partition) and the three
//! commitments → `snarkd_prover::prepare`. Layout: `snarkd_fuzz::layout::Snap`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use snarkd_fuzz::{check_prepared, requests};

fuzz_target!(|data: &[u8]| check_prepared(&requests::snap(data)));
