//! The four proofs snarkd makes, and the one name of each in each role.

use std::fmt;

/// The Filecoin proofs snarkd makes.
///
/// Names: [`ProofKind::name`] (`porep-c2`, `snap-update`, `window-post`, `winning-post`, the
/// original cuzk daemon's) on every surface an operator reads: metric label values, GetStatus and
/// the status stream, `/status`, the monitor. [`ProofKind::as_str`] (`porep`, `snap`, `wpost`,
/// `winning`) in snarkd's identifiers: circuit ids (`porep-32g`), config keys, logs, the journal.
/// The CLI and config take either. Serde uses the Rust variant in snake case, as the job journal
/// has always stored it.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum ProofKind {
    /// PoRep commit phase 2 from a commit phase 1 (`SealCommitPhase1Output`) output.
    PorepSealCommit,
    /// SnapDeals sector update, from its partition proofs.
    SnapDealsUpdate,
    /// One WindowPoSt partition.
    WindowPost,
    /// WinningPoSt, deadline-critical.
    WinningPost,
}

/// A kind name that is not one of the four.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownKind(pub String);

impl fmt::Display for UnknownKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unknown proof kind {:?}; use porep, snap, wpost or winning",
            self.0
        )
    }
}

impl std::error::Error for UnknownKind {}

impl ProofKind {
    /// Every kind, in wire order.
    pub const ALL: [ProofKind; 4] = [
        ProofKind::PorepSealCommit,
        ProofKind::SnapDealsUpdate,
        ProofKind::WindowPost,
        ProofKind::WinningPost,
    ];

    /// The priority Curio gives this kind; used when a request leaves it unspecified.
    pub fn default_priority(self) -> crate::Priority {
        use crate::Priority;
        match self {
            ProofKind::PorepSealCommit | ProofKind::SnapDealsUpdate => Priority::Normal,
            ProofKind::WindowPost => Priority::High,
            ProofKind::WinningPost => Priority::Critical,
        }
    }

    /// snarkd's short name: circuit ids (`porep-32g`), CLI, config keys, logs.
    pub fn as_str(self) -> &'static str {
        match self {
            ProofKind::PorepSealCommit => "porep",
            ProofKind::SnapDealsUpdate => "snap",
            ProofKind::WindowPost => "wpost",
            ProofKind::WinningPost => "winning",
        }
    }

    /// The name every surface shows (metric labels, GetStatus, the status stream, `/status`, the
    /// monitor): the original cuzk daemon's, so its operators' queries and habits carry over.
    pub fn name(self) -> &'static str {
        match self {
            ProofKind::PorepSealCommit => "porep-c2",
            ProofKind::SnapDealsUpdate => "snap-update",
            ProofKind::WindowPost => "window-post",
            ProofKind::WinningPost => "winning-post",
        }
    }

    /// The kind of short name `name` ([`ProofKind::as_str`]) or of its shown name
    /// ([`ProofKind::name`]), so an operator can type either.
    pub fn from_short(name: &str) -> Result<ProofKind, UnknownKind> {
        ProofKind::ALL
            .into_iter()
            .find(|k| k.as_str() == name || k.name() == name)
            .ok_or_else(|| UnknownKind(name.to_string()))
    }
}

impl fmt::Display for ProofKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for ProofKind {
    type Err = UnknownKind;

    fn from_str(s: &str) -> Result<ProofKind, UnknownKind> {
        ProofKind::from_short(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_has_one_name_per_role_and_parses_back() {
        let short: Vec<_> = ProofKind::ALL.iter().map(|k| k.as_str()).collect();
        assert_eq!(short, ["porep", "snap", "wpost", "winning"]);
        let cuzk: Vec<_> = ProofKind::ALL.iter().map(|k| k.name()).collect();
        assert_eq!(
            cuzk,
            ["porep-c2", "snap-update", "window-post", "winning-post"]
        );
        for kind in ProofKind::ALL {
            assert_eq!(kind.as_str().parse::<ProofKind>(), Ok(kind));
            assert_eq!(kind.name().parse::<ProofKind>(), Ok(kind));
            assert_eq!(kind.to_string(), kind.as_str());
        }
        let err = "porep-seal-commit".parse::<ProofKind>().unwrap_err();
        assert!(
            err.to_string()
                .contains("use porep, snap, wpost or winning"),
            "{err}"
        );
    }
}
