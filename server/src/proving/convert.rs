//! Engine request → prover request. The engine's kind enum and the prover's name the same four
//! proofs; both crates stay independent of each other.

use snarkd_engine::{EngineError, ProofKind, ProofRequest};

/// The prover's kind for an engine kind.
pub(crate) fn kind(kind: ProofKind) -> snarkd_prover::ProofKind {
    match kind {
        ProofKind::PorepSealCommit => snarkd_prover::ProofKind::PorepSealCommit,
        ProofKind::SnapDealsUpdate => snarkd_prover::ProofKind::SnapDealsUpdate,
        ProofKind::WindowPost => snarkd_prover::ProofKind::WindowPost,
        ProofKind::WinningPost => snarkd_prover::ProofKind::WinningPost,
    }
}

/// The prover's request for an engine request; the bytes move, nothing is copied.
pub(crate) fn request(r: ProofRequest) -> Result<snarkd_prover::ProofRequest, EngineError> {
    let k = r
        .kind
        .ok_or_else(|| EngineError::InvalidRequest("proof_kind is required".into()))?;
    let mut out = snarkd_prover::ProofRequest::new(kind(k), r.registered_proof);
    out.sector_size = r.sector_size;
    out.vanilla_proof = r.vanilla_proof;
    out.vanilla_proofs = r.vanilla_proofs;
    out.sector_number = r.sector_number;
    out.miner_id = r.miner_id;
    out.randomness = r.randomness;
    out.partition_index = r.partition_index;
    out.comm_r_old = r.comm_r_old;
    out.comm_r_new = r.comm_r_new;
    out.comm_d_new = r.comm_d_new;
    Ok(out)
}
