//! Window and Winning PoSt: a `FallbackPoStCircuit` built directly (its sectors' fields are
//! public), each sector with the production number of challenged leaves.

use blstrs::Scalar as Fr;
use ff::Field;
use filecoin_proofs::parameters::{window_post_public_params, winning_post_public_params};
use filecoin_proofs::MerkleTreeTrait;
use rand::{Rng, RngCore};
use storage_proofs_core::util::NODE_SIZE;
use storage_proofs_post::fallback::{FallbackPoStCircuit, PublicParams, Sector};

use super::paths::{as_options, random_path, tree_levels};
use crate::circuit::representative_post;
use crate::error::{ProverError, Result};
use crate::filecoin::ProofKind;

/// The PoSt public parameters of `kind` (Window or Winning) at `sector_size`.
pub(super) fn params<Tree: 'static + MerkleTreeTrait>(
    kind: ProofKind,
    sector_size: u64,
) -> Result<PublicParams> {
    let config = representative_post(kind, sector_size)?.as_v1_config();
    let pp = match kind {
        ProofKind::WinningPost => winning_post_public_params::<Tree>(&config),
        _ => window_post_public_params::<Tree>(&config),
    };
    pp.map_err(ProverError::filecoin)
}

/// Sectors in one production partition of `kind` at `sector_size`.
pub(super) fn sectors_per_partition<Tree: 'static + MerkleTreeTrait>(
    kind: ProofKind,
    sector_size: u64,
) -> Result<usize> {
    Ok(params::<Tree>(kind, sector_size)?.sector_count)
}

/// The PoSt partition circuit of `kind` at `sector_size` over `sectors` sectors with random
/// commitments, challenged leaves and paths.
pub(crate) fn circuit<Tree: 'static + MerkleTreeTrait>(
    kind: ProofKind,
    sector_size: u64,
    sectors: usize,
    rng: &mut impl RngCore,
) -> Result<FallbackPoStCircuit<Tree>> {
    let challenges = params::<Tree>(kind, sector_size)?.challenge_count;
    let leaves = sector_size as usize / NODE_SIZE;
    let levels = tree_levels::<Tree>(leaves);
    let prover_id = Some(Fr::random(&mut *rng));
    let mut sector = || {
        let mut random = || Some(Fr::random(&mut *rng));
        let (comm_r, comm_c, comm_r_last, id) = (random(), random(), random(), random());
        let leafs = (0..challenges).map(|_| random()).collect();
        let paths = (0..challenges)
            .map(|_| {
                let node = rng.gen_range(0..leaves);
                as_options(random_path(node, &levels, rng)).into()
            })
            .collect();
        Sector {
            comm_r,
            comm_c,
            comm_r_last,
            leafs,
            paths,
            id,
        }
    };
    Ok(FallbackPoStCircuit {
        prover_id,
        sectors: (0..sectors).map(|_| sector()).collect(),
    })
}
