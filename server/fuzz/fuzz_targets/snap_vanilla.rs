//! SnapDeals `vanilla_proofs` (bincode `PartitionProof` per partition) and the three
//! commitments → `snarkd_prover::prepare`. Layout: `snarkd_fuzz::layout::Snap`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use snarkd_fuzz::{check_prepared, layout::Snap};
use snarkd_prover::{ProofKind, ProofInput};

fuzz_target!(|data: &[u8]| {
    let input = Snap::parse(data);
    let mut req = ProofInput::new(ProofKind::SnapDealsUpdate, Snap::UPDATE_2K);
    req.comm_r_old = input.comm_r_old.to_vec();
    req.comm_r_new = input.comm_r_new.to_vec();
    req.comm_d_new = input.comm_d_new.to_vec();
    req.vanilla_proofs = input.vanilla_proofs;
    check_prepared(&req);
});
