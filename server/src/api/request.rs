//! Protobuf requests → domain requests. The shape of a request (kind, priority, required fields,
//! lengths) is checked here, so a bad request fails at once with INVALID_ARGUMENT and a message
//! naming the field. What needs Filecoin knowledge (`registered_proof` numbering, decoding the
//! vanilla proofs, their agreement) is the prover's, checked when it plans the job.

use snarkd_engine::{EngineError, Priority, ProofInput, ProofKind, ProofRequest, StoredInput};
use snarkd_proto::v1 as pb;

/// Bytes in a PoSt randomness value and in a SnapDeals commitment.
pub const DIGEST_BYTES: usize = 32;

/// Converts and checks a submit request.
pub fn proof_request(req: pb::SubmitProofRequest) -> Result<ProofRequest, EngineError> {
    let kind = proof_kind(req.proof_kind)?;
    let priority = priority(req.priority)?;
    match kind {
        ProofKind::PorepSealCommit => {
            if req.vanilla_proof.is_empty() {
                return invalid(
                    "vanilla_proof is empty: a POREP_SEAL_COMMIT request carries the commit phase 1 output \
                     (its JSON, or Curio's {SectorNum, Phase1Out, SectorSize} wrapper)",
                );
            }
        }
        ProofKind::SnapDealsUpdate => {
            check_vanilla_proofs(
                &req.vanilla_proofs,
                "one bincode partition proof per partition",
            )?;
            check_digest("comm_r_old", &req.comm_r_old)?;
            check_digest("comm_r_new", &req.comm_r_new)?;
            check_digest("comm_d_new", &req.comm_d_new)?;
        }
        ProofKind::WindowPost | ProofKind::WinningPost => {
            check_vanilla_proofs(
                &req.vanilla_proofs,
                "one bincode FallbackPoStSectorProof per sector",
            )?;
            check_digest("randomness", &req.randomness)?;
        }
    }
    // Each kind takes the fields it uses; the others are not kept.
    let input = ProofInput::try_from(StoredInput {
        kind,
        sector_size: req.sector_size,
        registered_proof: req.registered_proof,
        vanilla_proof: req.vanilla_proof,
        vanilla_proofs: req.vanilla_proofs,
        sector_number: req.sector_number,
        miner_id: req.miner_id,
        randomness: req.randomness,
        partition_index: req.partition_index,
        comm_r_old: req.comm_r_old,
        comm_r_new: req.comm_r_new,
        comm_d_new: req.comm_d_new,
    })
    .map_err(EngineError::InvalidRequest)?;
    Ok(ProofRequest {
        request_id: req.request_id,
        priority,
        input,
    })
}

/// Converts and checks the request inside a Prove call.
pub fn prove_request(req: pb::ProveRequest) -> Result<ProofRequest, EngineError> {
    match req.submit {
        Some(submit) => proof_request(submit),
        None => {
            invalid("submit is missing: a ProveRequest carries the SubmitProofRequest to prove")
        }
    }
}

/// The wire proof kind; unspecified and unknown values are errors.
pub fn proof_kind(value: i32) -> Result<ProofKind, EngineError> {
    const USE: &str = "use POREP_SEAL_COMMIT (1), SNAP_DEALS_UPDATE (2), WINDOW_POST_PARTITION (3) or WINNING_POST (4)";
    match pb::ProofKind::try_from(value) {
        Ok(pb::ProofKind::PorepSealCommit) => Ok(ProofKind::PorepSealCommit),
        Ok(pb::ProofKind::SnapDealsUpdate) => Ok(ProofKind::SnapDealsUpdate),
        Ok(pb::ProofKind::WindowPostPartition) => Ok(ProofKind::WindowPost),
        Ok(pb::ProofKind::WinningPost) => Ok(ProofKind::WinningPost),
        Ok(pb::ProofKind::Unspecified) => invalid(&format!("proof_kind is unspecified: {USE}")),
        Err(_) => invalid(&format!(
            "proof_kind {value} is not a known proof kind: {USE}"
        )),
    }
}

/// The wire priority; `PRIORITY_UNSPECIFIED` is `None` (the kind's usual priority).
pub fn priority(value: i32) -> Result<Option<Priority>, EngineError> {
    match pb::Priority::try_from(value) {
        Ok(pb::Priority::Unspecified) => Ok(None),
        Ok(pb::Priority::Low) => Ok(Some(Priority::Low)),
        Ok(pb::Priority::Normal) => Ok(Some(Priority::Normal)),
        Ok(pb::Priority::High) => Ok(Some(Priority::High)),
        Ok(pb::Priority::Critical) => Ok(Some(Priority::Critical)),
        Err(_) => invalid(&format!(
            "priority {value} is not a known priority: use LOW (1), NORMAL (2), HIGH (3), CRITICAL (4), \
             or leave it unspecified (0) for the proof kind's usual priority"
        )),
    }
}

/// Longest job id or circuit id looked up; longer ones cannot exist (job ids are 36-character
/// UUIDs) and are refused without being echoed back.
pub const MAX_ID_BYTES: usize = 64;

/// A job id from AwaitProof or CancelProof.
pub fn job_id(value: &str) -> Result<&str, EngineError> {
    if value.is_empty() {
        return invalid("job_id is empty: pass the job_id SubmitProof returned");
    }
    if value.len() > MAX_ID_BYTES {
        return invalid(&format!(
            "job_id is {} bytes: job ids are the 36-character ids SubmitProof returns",
            value.len()
        ));
    }
    Ok(value)
}

/// A circuit id from PreloadSRS or EvictSRS.
pub fn circuit_id(value: &str) -> Result<&str, EngineError> {
    if value.is_empty() {
        return invalid("circuit_id is empty: name the parameters, such as porep-32g, snap-32g, wpost-32g or winning-32g");
    }
    if value.len() > MAX_ID_BYTES {
        return invalid(&format!(
            "circuit_id is {} bytes: name the parameters, such as porep-32g, snap-32g, wpost-32g or winning-32g",
            value.len()
        ));
    }
    Ok(value)
}

/// A `request_id` within `[limits] request_id_bytes`; the id is not echoed back.
pub fn check_request_id(value: &str, max_bytes: usize) -> Result<(), tonic::Status> {
    if value.len() > max_bytes {
        return Err(tonic::Status::resource_exhausted(format!(
            "request_id is {} bytes, over the request_id_bytes limit of {max_bytes}: use a \
             shorter id, or raise [limits] request_id_bytes",
            value.len()
        )));
    }
    Ok(())
}

fn check_vanilla_proofs(proofs: &[Vec<u8>], what: &str) -> Result<(), EngineError> {
    if proofs.is_empty() {
        return invalid(&format!(
            "vanilla_proofs is empty: this proof kind needs {what}"
        ));
    }
    if let Some(i) = proofs.iter().position(Vec::is_empty) {
        return invalid(&format!(
            "vanilla_proofs[{i}] is empty: each entry is {what}"
        ));
    }
    Ok(())
}

fn check_digest(field: &str, bytes: &[u8]) -> Result<(), EngineError> {
    match bytes.len() {
        DIGEST_BYTES => Ok(()),
        0 => invalid(&format!(
            "{field} is missing: this proof kind needs {DIGEST_BYTES} bytes"
        )),
        n => invalid(&format!(
            "{field} is {n} bytes: it must be exactly {DIGEST_BYTES} bytes"
        )),
    }
}

fn invalid<T>(msg: &str) -> Result<T, EngineError> {
    Err(EngineError::InvalidRequest(msg.to_string()))
}

#[cfg(test)]
#[path = "request_tests.rs"]
mod tests;
