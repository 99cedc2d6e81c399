//! The other direction, for clients of snarkd that hold a proof input (the bench client, the
//! tests): a [`ProofInput`] as Curio would submit it.

use snarkd_engine::ProofInput;
use snarkd_proto::v1 as pb;

use super::outcome::kind_to_pb;

/// `r` as Curio would submit it, at `priority`, under `request_id` (the daemon's idempotency
/// key; empty for none).
pub fn submit_request(
    r: &ProofInput,
    priority: pb::Priority,
    request_id: String,
) -> pb::SubmitProofRequest {
    pb::SubmitProofRequest {
        request_id,
        proof_kind: kind_to_pb(r.kind) as i32,
        sector_size: r.sector_size,
        registered_proof: r.registered_proof,
        priority: priority as i32,
        vanilla_proof: r.vanilla_proof.clone(),
        vanilla_proofs: r.vanilla_proofs.clone(),
        sector_number: r.sector_number,
        miner_id: r.miner_id,
        randomness: r.randomness.clone(),
        partition_index: r.partition_index,
        comm_r_old: r.comm_r_old.clone(),
        comm_r_new: r.comm_r_new.clone(),
        comm_d_new: r.comm_d_new.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The request a client sends converts back (`request::proof_request`) to what it holds.
    #[test]
    fn a_submitted_request_reads_back_as_the_same_input() {
        let mut r = ProofInput::new(snarkd_engine::ProofKind::WinningPost, 3);
        r.vanilla_proofs = vec![vec![1, 2]];
        r.randomness = vec![7; 32];
        r.miner_id = 1000;
        r.sector_number = 9;
        let w = submit_request(&r, pb::Priority::Low, "id-1".into());
        let back = super::super::request::proof_request(w).unwrap();
        assert_eq!(back.input, r);
        assert_eq!(back.priority, Some(snarkd_engine::Priority::Low));
        assert_eq!(back.request_id, "id-1");
    }
}
