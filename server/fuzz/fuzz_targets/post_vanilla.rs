//! WinningPoSt and WindowPoSt `vanilla_proofs` (bincode `FallbackPoStSectorProof` per sector),
//! randomness, miner id and partition index → `snarkd_prover::prepare`.
//! Layout: `snarkd_fuzz::layout::Post`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use snarkd_fuzz::{check_prepared, layout::Post};
use snarkd_prover::{ProofKind, ProofInput};

fuzz_target!(|data: &[u8]| {
    let input = Post::parse(data);
    let kind = if input.window {
        ProofKind::WindowPost
    } else {
        ProofKind::WinningPost
    };
    let mut req = ProofInput::new(kind, input.registered_proof());
    req.miner_id = input.miner_id;
    req.partition_index = input.partition_index;
    req.randomness = input.randomness.to_vec();
    req.vanilla_proofs = input.vanilla_proofs;
    check_prepared(&req);
});
