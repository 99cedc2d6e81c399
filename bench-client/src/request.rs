//! Wire requests from the fixtures `snarkd-bench gen` writes: `Fixtures::read` parses the
//! directory; the mapping onto the cuzk.v1 `SubmitProofRequest` is snarkd's own
//! (`snarkd::api::client_request`).

use std::path::Path;

use anyhow::{Context, Result};
use snarkd_proto::v1 as pb;
use snarkd_prover::fixtures::Fixtures;
use snarkd_prover::{ProofInput, ProofKind};

/// Parses a kind as the CLI spells it: porep, snap, wpost or winning.
pub fn parse_kind(s: &str) -> Result<ProofKind, String> {
    ProofKind::from_short(s).map_err(|e| e.to_string())
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
pub fn load(dir: &Path, kind: ProofKind) -> Result<ProofInput> {
    let fixtures = Fixtures::read(dir).with_context(|| {
        format!(
            "reading fixtures in {} (write them with `snarkd-bench gen`)",
            dir.display()
        )
    })?;
    Ok(fixtures.request(kind))
}

pub use snarkd::api::client_request::submit_request as to_wire;

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
}
