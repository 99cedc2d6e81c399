//! Proof kinds and circuit identities: which Groth16 circuit (and so which parameter files) a job
//! needs, named the way operators see it (`porep-32g`) and the way the parameter cache names it
//! (`v28-stacked-proof-of-replication-…`).

use std::fmt;

use filecoin_proofs::{with_shape, MerkleTreeTrait, TreeRHasher};
use filecoin_proofs_api::{RegisteredPoStProof, RegisteredSealProof, RegisteredUpdateProof};
use storage_proofs_core::parameter_cache::CacheableParameters;
use storage_proofs_update::{EmptySectorUpdateCircuit, EmptySectorUpdateCompound};

use crate::error::{ProverError, Result};

pub use snarkd_types::ProofKind;

/// Sector sizes with registered proofs on chain, with their short names.
pub const SECTOR_SIZES: [(u64, &str); 5] = [
    (2 << 10, "2k"),
    (8 << 20, "8m"),
    (512 << 20, "512m"),
    (32 << 30, "32g"),
    (64 << 30, "64g"),
];

/// One Groth16 circuit: a proof kind at a sector size. All registered-proof versions of a kind
/// share the circuit (and the parameter files) of their sector size.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CircuitId {
    kind: ProofKind,
    sector_size: u64,
}

impl CircuitId {
    /// The circuit of `kind` at `sector_size` bytes; errors for sizes without registered proofs.
    pub fn new(kind: ProofKind, sector_size: u64) -> Result<Self> {
        size_index(sector_size)?;
        Ok(CircuitId { kind, sector_size })
    }

    /// Parses `porep-2k`, `snap-32g`, `wpost-64g`, `winning-512m`.
    pub fn parse(s: &str) -> Result<Self> {
        let unknown = || ProverError::UnknownCircuit(s.to_string());
        let (prefix, size) = s.split_once('-').ok_or_else(unknown)?;
        let kind = ProofKind::from_short(prefix).map_err(|_| unknown())?;
        let (bytes, _) = SECTOR_SIZES
            .iter()
            .find(|(_, name)| *name == size)
            .ok_or_else(unknown)?;
        Ok(CircuitId {
            kind,
            sector_size: *bytes,
        })
    }

    pub fn kind(&self) -> ProofKind {
        self.kind
    }

    pub fn sector_size(&self) -> u64 {
        self.sector_size
    }

    /// Production parameter file stem, e.g.
    /// `v28-stacked-proof-of-replication-merkletree-poseidon_hasher-8-0-0-sha256_hasher-<hash>`;
    /// add `.params` / `.vk` / `.meta`.
    pub fn params_file_stem(&self) -> String {
        format!(
            "v{}-{}",
            storage_proofs_core::parameter_cache::VERSION,
            self.cache_identifier()
        )
    }

    /// `storage-proofs` cache identifier of this circuit (the stem without the version prefix).
    pub fn cache_identifier(&self) -> String {
        let i = size_index(self.sector_size).expect("validated in constructor");
        let id = match self.kind {
            ProofKind::PorepSealCommit => SEAL_V1_1[i].circuit_identifier(),
            // filecoin-proofs-api's `RegisteredUpdateProof::circuit_identifier` returns the PoRep
            // identifier; the update circuit's own cache identifier is the compound's.
            ProofKind::SnapDealsUpdate => Ok(with_shape!(
                self.sector_size,
                update_cache_identifier,
                self.sector_size
            )),
            ProofKind::WindowPost => WINDOW_V1_2[i].circuit_identifier(),
            ProofKind::WinningPost => WINNING[i].circuit_identifier(),
        };
        id.expect("identifiers exist for every registered sector size")
    }
}

impl fmt::Display for CircuitId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let i = size_index(self.sector_size).map_err(|_| fmt::Error)?;
        write!(f, "{}-{}", self.kind.as_str(), SECTOR_SIZES[i].1)
    }
}

fn update_cache_identifier<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    sector_size: u64,
) -> String {
    let pp = storage_proofs_update::PublicParams::from_sector_size(sector_size);
    <EmptySectorUpdateCompound<Tree> as CacheableParameters<EmptySectorUpdateCircuit<Tree>, _>>::cache_identifier(&pp)
}

pub(crate) fn size_index(sector_size: u64) -> Result<usize> {
    SECTOR_SIZES
        .iter()
        .position(|(s, _)| *s == sector_size)
        .ok_or(ProverError::UnsupportedSectorSize(sector_size))
}

/// Parses `2KiB`, `8MiB`, `32GiB`, `2k`, `32g` or a byte count into a supported sector size.
pub fn parse_sector_size(s: &str) -> Result<u64> {
    let t = s.trim();
    let bad = || {
        ProverError::InvalidRequest(format!(
            "cannot parse sector size {s:?}; use e.g. 2KiB or 32GiB"
        ))
    };
    let lower = t.to_ascii_lowercase();
    let (num, mult) = [
        ("kib", 1u64 << 10),
        ("mib", 1 << 20),
        ("gib", 1 << 30),
        ("k", 1 << 10),
        ("m", 1 << 20),
        ("g", 1 << 30),
    ]
    .iter()
    .find_map(|(suffix, m)| lower.strip_suffix(suffix).map(|n| (n.to_string(), *m)))
    .unwrap_or((lower.clone(), 1));
    let size = num
        .trim()
        .parse::<u64>()
        .map_err(|_| bad())?
        .checked_mul(mult)
        .ok_or_else(bad)?;
    size_index(size)?;
    Ok(size)
}

/// The crates whose code defines the circuits, as pinned in the workspace. Part of every
/// pre-compiled matrices file's identity, so that matrices recorded by another version are stale
/// (a test checks this against `Cargo.lock`).
pub const CIRCUIT_CRATES: &str = "filecoin-proofs 19.1.0, bellperson 0.27.0";

/// Short name of a sector size (`2KiB` style) for messages.
pub fn sector_size_name(sector_size: u64) -> String {
    const UNITS: [(u64, &str); 3] = [(1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")];
    for (unit, name) in UNITS {
        if sector_size >= unit && sector_size.is_multiple_of(unit) {
            return format!("{}{}", sector_size / unit, name);
        }
    }
    format!("{sector_size}B")
}

// Representative registered proofs per sector size (index as in SECTOR_SIZES).
use RegisteredPoStProof as P;
use RegisteredSealProof as S;
use RegisteredUpdateProof as U;
const SEAL_V1_1: [S; 5] = [
    S::StackedDrg2KiBV1_1,
    S::StackedDrg8MiBV1_1,
    S::StackedDrg512MiBV1_1,
    S::StackedDrg32GiBV1_1,
    S::StackedDrg64GiBV1_1,
];
const UPDATE: [U; 5] = [
    U::StackedDrg2KiBV1,
    U::StackedDrg8MiBV1,
    U::StackedDrg512MiBV1,
    U::StackedDrg32GiBV1,
    U::StackedDrg64GiBV1,
];
const WINNING: [P; 5] = [
    P::StackedDrgWinning2KiBV1,
    P::StackedDrgWinning8MiBV1,
    P::StackedDrgWinning512MiBV1,
    P::StackedDrgWinning32GiBV1,
    P::StackedDrgWinning64GiBV1,
];
const WINDOW_V1_2: [P; 5] = [
    P::StackedDrgWindow2KiBV1_2,
    P::StackedDrgWindow8MiBV1_2,
    P::StackedDrgWindow512MiBV1_2,
    P::StackedDrgWindow32GiBV1_2,
    P::StackedDrgWindow64GiBV1_2,
];

/// The registered proof used for parameter generation and file naming of a circuit.
pub(crate) fn representative_seal(sector_size: u64) -> Result<S> {
    Ok(SEAL_V1_1[size_index(sector_size)?])
}
pub(crate) fn representative_update(sector_size: u64) -> Result<U> {
    Ok(UPDATE[size_index(sector_size)?])
}
pub(crate) fn representative_post(kind: ProofKind, sector_size: u64) -> Result<P> {
    let i = size_index(sector_size)?;
    Ok(match kind {
        ProofKind::WinningPost => WINNING[i],
        _ => WINDOW_V1_2[i],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn circuit_ids_round_trip_and_name_the_production_files() {
        for kind in ProofKind::ALL {
            for (size, short) in SECTOR_SIZES {
                let id = CircuitId::new(kind, size).unwrap();
                assert_eq!(id.to_string(), format!("{}-{short}", kind.as_str()));
                assert_eq!(CircuitId::parse(&id.to_string()).unwrap(), id);
            }
        }
        let stem = |s: &str| CircuitId::parse(s).unwrap().params_file_stem();
        assert!(stem("porep-32g").starts_with(
            "v28-stacked-proof-of-replication-merkletree-poseidon_hasher-8-8-0-sha256_hasher-"
        ));
        assert!(stem("snap-32g")
            .starts_with("v28-empty-sector-update-merkletree-poseidon_hasher-8-8-0-"));
        assert!(stem("wpost-32g")
            .starts_with("v28-proof-of-spacetime-fallback-merkletree-poseidon_hasher-8-8-0-"));
        assert_ne!(stem("wpost-32g"), stem("winning-32g"));
        assert!(matches!(
            CircuitId::parse("porep-4k"),
            Err(ProverError::UnknownCircuit(_))
        ));
        assert!(matches!(
            CircuitId::new(ProofKind::WinningPost, 4096),
            Err(ProverError::UnsupportedSectorSize(4096))
        ));
    }

    #[test]
    fn sector_sizes_parse_in_the_usual_spellings() {
        assert_eq!(parse_sector_size("2KiB").unwrap(), 2048);
        assert_eq!(parse_sector_size("32GiB").unwrap(), 32 << 30);
        assert_eq!(parse_sector_size("512m").unwrap(), 512 << 20);
        assert_eq!(parse_sector_size("2048").unwrap(), 2048);
        assert!(parse_sector_size("3KiB").is_err());
        assert!(parse_sector_size("lots").is_err());
        assert_eq!(sector_size_name(32 << 30), "32GiB");
    }
}
