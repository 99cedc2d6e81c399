//! Window and Winning PoSt: a `FallbackPoStCircuit` built directly (its sectors' fields are
//! public), each sector with the production number of challenged leaves.

use std::marker::PhantomData;

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
use crate::filecoin::native::post::SectorValues;
use crate::filecoin::native::{NativeError, Witness};
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

/// The PoSt partition of `kind` at `sector_size` over `sectors` sectors with random
/// commitments, challenged leaves and paths.
pub(crate) fn partition<Tree: 'static + MerkleTreeTrait>(
    kind: ProofKind,
    sector_size: u64,
    sectors: usize,
    rng: &mut impl RngCore,
) -> Result<Partition<Tree>> {
    let challenges = params::<Tree>(kind, sector_size)?.challenge_count;
    let leaves = sector_size as usize / NODE_SIZE;
    let levels = tree_levels::<Tree>(leaves);
    let prover_id = Some(Fr::random(&mut *rng));
    let mut sector = || {
        let mut random = || Fr::random(&mut *rng);
        let (comm_r, comm_c, comm_r_last, _id) = (random(), random(), random(), random());
        let leafs: Vec<Fr> = (0..challenges).map(|_| random()).collect();
        let paths = (0..challenges).map(|_| {
            let node = rng.gen_range(0..leaves);
            as_options(random_path(node, &levels, rng))
        });
        SectorValues {
            comm_r,
            comm_c,
            comm_r_last,
            challenges: leafs.into_iter().zip(paths).collect(),
        }
    };
    Ok(Partition::<Tree> {
        prover_id,
        sectors: (0..sectors).map(|_| sector()).collect(),
        _tree: PhantomData,
    })
}

/// A synthetic PoSt partition: its sectors' values, from which both its circuit and its native
/// witness are made.
pub(crate) struct Partition<Tree: 'static + MerkleTreeTrait> {
    prover_id: Option<Fr>,
    sectors: Vec<SectorValues>,
    _tree: PhantomData<Tree>,
}

impl<Tree: 'static + MerkleTreeTrait> super::Native for Partition<Tree> {
    type Circuit = FallbackPoStCircuit<Tree>;

    fn circuit(&self) -> Result<Self::Circuit> {
        let sector = |s: &SectorValues| Sector {
            comm_r: Some(s.comm_r),
            comm_c: Some(s.comm_c),
            comm_r_last: Some(s.comm_r_last),
            leafs: s.challenges.iter().map(|(leaf, _)| Some(*leaf)).collect(),
            paths: s
                .challenges
                .iter()
                .map(|(_, path)| path.clone().into())
                .collect(),
            id: None,
        };
        Ok(FallbackPoStCircuit {
            prover_id: self.prover_id,
            sectors: self.sectors.iter().map(sector).collect(),
        })
    }

    fn witness(&self, inputs: usize, aux: usize) -> std::result::Result<Witness, NativeError> {
        crate::filecoin::native::post::witness::<Tree>(&self.sectors, inputs, aux)
    }
}
