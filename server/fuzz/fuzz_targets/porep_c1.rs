//! PoRep `vanilla_proof` bytes (the C1 JSON, or Curio's `{SectorNum, Phase1Out, SectorSize}`
//! wrapper) → `snarkd_prover::prepare`. Layout: `snarkd_fuzz::layout::Porep`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use snarkd_fuzz::{check_prepared, layout::Porep};
use snarkd_prover::{ProofKind, ProofInput};

fuzz_target!(|data: &[u8]| {
    let input = Porep::parse(data);
    let mut req = ProofInput::new(ProofKind::PorepSealCommit, input.registered_proof);
    req.sector_number = input.sector_number;
    req.miner_id = input.miner_id;
    req.vanilla_proof = input.vanilla_proof;
    check_prepared(&req);
});
