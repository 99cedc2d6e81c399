//! Wire requests from the fixtures `snarkd-bench gen` writes: `Fixtures::read` parses the
//! directory, this module only maps a `ProofRequest` onto the cuzk.v1 `SubmitProofRequest`.

use std::path::Path;

use anyhow::{Context, Result};
use snarkd_proto::v1 as pb;
use snarkd_prover::fixtures::Fixtures;
use snarkd_prover::{ProofKind, ProofRequest};

/// Parses a kind as the CLI spells it: porep, snap, wpost or winning.
pub fn parse_kind(s: &str) -> Result<ProofKind, String> {
    ProofKind::from_circuit_prefix(s).map_err(|e| e.to_string())
}

/// Parses a priority: low, normal, high or critical.
pub fn parse_priority(s: &str) -> Result<pb::Priority, String> {
    match s.to_ascii_lowercase().as_str() {
        "low" => Ok(pb::Priority::Low),
        "normal" => Ok(pb::Priority::Normal),
        "high" => Ok(pb::Priority::High),
        "critical" => Ok(pb::Priority::Critical),
        _ => Err(format!(
            "unknown priority {s:?}; use low, normal, high or critical"
        )),
    }
}

/// The fixture request of `kind` in `dir`.
pub fn load(dir: &Path, kind: ProofKind) -> Result<ProofRequest> {
    let fixtures = Fixtures::read(dir).with_context(|| {
        format!(
            "reading fixtures in {} (write them with `snarkd-bench gen`)",
            dir.display()
        )
    })?;
    Ok(fixtures.request(kind).clone())
}

/// The wire kind of a prover kind.
pub fn wire_kind(kind: ProofKind) -> pb::ProofKind {
    match kind {
        ProofKind::PorepSealCommit => pb::ProofKind::PorepSealCommit,
        ProofKind::SnapDealsUpdate => pb::ProofKind::SnapDealsUpdate,
        ProofKind::WindowPost => pb::ProofKind::WindowPostPartition,
        ProofKind::WinningPost => pb::ProofKind::WinningPost,
    }
}

/// `r` as Curio would submit it, under `request_id` (the daemon's idempotency key).
pub fn to_wire(
    r: &ProofRequest,
    priority: pb::Priority,
    request_id: String,
) -> pb::SubmitProofRequest {
    pb::SubmitProofRequest {
        request_id,
        proof_kind: wire_kind(r.kind) as i32,
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

    #[test]
    fn kinds_and_priorities_parse() {
        assert_eq!(parse_kind("wpost").unwrap(), ProofKind::WindowPost);
        assert!(parse_kind("bogus").is_err());
        assert_eq!(parse_priority("HIGH").unwrap(), pb::Priority::High);
        assert!(parse_priority("urgent").is_err());
    }

    #[test]
    fn wire_request_carries_every_field() {
        let mut r = ProofRequest::new(ProofKind::WinningPost, 3);
        r.vanilla_proofs = vec![vec![1, 2]];
        r.randomness = vec![7; 32];
        r.miner_id = 1000;
        let w = to_wire(&r, pb::Priority::Low, "id-1".into());
        assert_eq!(w.proof_kind, pb::ProofKind::WinningPost as i32);
        assert_eq!((w.registered_proof, w.miner_id), (3, 1000));
        assert_eq!(w.priority, pb::Priority::Low as i32);
        assert_eq!(w.request_id, "id-1");
        assert_eq!(w.vanilla_proofs, vec![vec![1, 2]]);
        assert_eq!(w.randomness, vec![7; 32]);
    }
}
