//! The returned proof checked here with filecoin-proofs-api's verifiers, on the public inputs
//! the request's own files state (a C1 output's commitments, ticket and seed; SnapDeals'
//! commitments; the PoSt sectors' comm_r given on the command line or in the fixtures). Only
//! the verifying keys are read, from `FIL_PROOFS_PARAMETER_CACHE`.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Context, Result};
use filecoin_proofs_api::post::{verify_window_post, verify_winning_post};
use filecoin_proofs_api::seal::verify_seal;
use filecoin_proofs_api::update::verify_empty_sector_update_proof;
use filecoin_proofs_api::{
    PublicReplicaInfo, RegisteredPoStProof, RegisteredSealProof, RegisteredUpdateProof, SectorId,
};
use snarkd_prover::filecoin::registered::{post_proof, update_proof};
use snarkd_prover::fixtures::Fixtures;
use snarkd_prover::{prover_id_from_miner_id, ProofKind};

/// The public values of a seal that its C1 output states, read under filecoin-proofs-api's own
/// field names; the vanilla proofs (nearly all of a C1) are skipped, not built.
#[derive(serde::Deserialize)]
pub struct SealPublic {
    pub registered_proof: RegisteredSealProof,
    pub comm_r: [u8; 32],
    pub comm_d: [u8; 32],
    pub ticket: [u8; 32],
    pub seed: [u8; 32],
}

/// What a proof is checked against.
pub enum Check {
    Porep {
        seal: SealPublic,
        miner_id: u64,
        sector_number: u64,
    },
    Post {
        kind: ProofKind,
        registered: RegisteredPoStProof,
        randomness: [u8; 32],
        miner_id: u64,
        /// (sector number, comm_r) of every challenged sector.
        sectors: Vec<(u64, [u8; 32])>,
    },
    Snap {
        registered: RegisteredUpdateProof,
        comm_r_old: [u8; 32],
        comm_r_new: [u8; 32],
        comm_d_new: [u8; 32],
    },
}

impl Check {
    /// The check of a fixture request of `kind` in `dir` (written by `gen`).
    pub fn from_fixtures(dir: &Path, kind: ProofKind) -> Result<Check> {
        let fixtures = Fixtures::read(dir).context("reading the fixtures")?;
        let b32 = |v: &[u8]| -> Result<[u8; 32]> { v.try_into().context("32 bytes") };
        let post = |r: &snarkd_prover::PostInput| -> Result<Check> {
            Ok(Check::Post {
                kind,
                registered: post_proof(kind, r.registered.registered_proof)?,
                randomness: b32(&r.randomness)?,
                miner_id: r.miner_id,
                sectors: vec![(
                    fixtures.manifest.sector_number,
                    fixtures.seal_values()?.comm_r,
                )],
            })
        };
        Ok(match kind {
            ProofKind::PorepSealCommit => Check::Porep {
                seal: serde_json::from_slice(&fixtures.porep.vanilla_proof)
                    .context("the C1 output")?,
                miner_id: fixtures.porep.miner_id,
                sector_number: fixtures.porep.sector_number,
            },
            ProofKind::WinningPost => post(&fixtures.winning)?,
            ProofKind::WindowPost => post(&fixtures.window)?,
            ProofKind::SnapDealsUpdate => Check::Snap {
                registered: update_proof(fixtures.snap.registered.registered_proof)?,
                comm_r_old: b32(&fixtures.snap.comm_r_old)?,
                comm_r_new: b32(&fixtures.snap.comm_r_new)?,
                comm_d_new: b32(&fixtures.snap.comm_d_new)?,
            },
        })
    }

    /// Whether filecoin-proofs-api accepts `proof`.
    pub fn verify(&self, proof: &[u8]) -> Result<bool> {
        let verified = match self {
            Check::Porep {
                seal,
                miner_id,
                sector_number,
            } => verify_seal(
                seal.registered_proof,
                seal.comm_r,
                seal.comm_d,
                prover_id_from_miner_id(*miner_id),
                SectorId::from(*sector_number),
                seal.ticket,
                seal.seed,
                proof,
            ),
            Check::Post {
                kind,
                registered,
                randomness,
                miner_id,
                sectors,
            } => {
                let replicas: BTreeMap<SectorId, PublicReplicaInfo> = sectors
                    .iter()
                    .map(|(s, c)| (SectorId::from(*s), PublicReplicaInfo::new(*registered, *c)))
                    .collect();
                let prover_id = prover_id_from_miner_id(*miner_id);
                match kind {
                    ProofKind::WinningPost => {
                        verify_winning_post(randomness, proof, &replicas, prover_id)
                    }
                    _ => verify_window_post(
                        randomness,
                        &[(*registered, proof)],
                        &replicas,
                        prover_id,
                    ),
                }
            }
            Check::Snap {
                registered,
                comm_r_old,
                comm_r_new,
                comm_d_new,
            } => verify_empty_sector_update_proof(
                *registered,
                proof,
                *comm_r_old,
                *comm_r_new,
                *comm_d_new,
            ),
        };
        verified.context("checking the proof with filecoin-proofs-api (are the verifying keys in FIL_PROOFS_PARAMETER_CACHE or --params-dir?)")
    }
}
