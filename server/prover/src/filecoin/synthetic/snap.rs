//! SnapDeals: an `EmptySectorUpdateCircuit` built directly (its fields are public), for
//! partition 0 with the production `h`.

use std::marker::PhantomData;

use blstrs::Scalar as Fr;
use ff::Field;
use filecoin_hashers::Domain;
use filecoin_proofs::{MerkleTreeTrait, TreeRHasher};
use rand::RngCore;
use storage_proofs_update::circuit::{ChallengeProof, PrivateInputs, PublicInputs};
use storage_proofs_update::constants::{h_default, TreeDDomain, TreeRDomain};
use storage_proofs_update::{phi, rho, Challenges, EmptySectorUpdateCircuit, PublicParams};

use super::paths::{random_path, tree_levels, Path};
use crate::error::{ProverError, Result};
use crate::filecoin::native::{NativeError, Witness};

/// Challenges in one production SnapDeals partition at `sector_size` (a registered size).
pub(super) fn challenges_per_partition(sector_size: u64) -> usize {
    PublicParams::from_sector_size(sector_size).challenge_count
}

/// The SnapDeals partition circuit at `sector_size` over the first `challenges` challenges of
/// partition 0 (at most the production count), with random commitments and leaves.
///
/// The circuit asserts, while synthesizing, what holds here: the packed k / h-select input
/// decodes (k = 0, the production `h`); every challenge's TreeD path ends in the same siblings
/// (those above the partition's apex tree); and each new replica leaf is the old one plus the
/// data leaf times rho, rho being derived from the challenge the circuit generates from
/// comm_r_new (the same challenges `Challenges` yields for partition 0).
pub(crate) fn circuit<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    sector_size: u64,
    challenges: usize,
    rng: &mut impl RngCore,
) -> Result<EmptySectorUpdateCircuit<Tree>> {
    let production = PublicParams::from_sector_size(sector_size);
    if challenges > production.challenge_count {
        return Err(ProverError::WrongCount {
            what: "SnapDeals challenges",
            expected: format!("at most {}", production.challenge_count),
            actual: challenges,
        });
    }
    let pub_params = PublicParams {
        challenge_count: challenges,
        ..production
    };
    let nodes = pub_params.sector_nodes;
    let h = h_default(nodes);
    let comm_r_old = TreeRDomain::random(rng);
    let comm_d_new = TreeDDomain::random(rng);
    let comm_r_new = TreeRDomain::random(rng);
    let pub_inputs = PublicInputs::new(nodes, 0, h, comm_r_old, comm_d_new, comm_r_new);
    let phi = phi(&comm_d_new, &comm_r_old);
    let high_shift = pub_params.challenge_bit_len - h;
    // TreeD has one sibling per level; those from the apex tree's root up are the partition's.
    let below_partition = pub_params.challenge_bit_len - pub_params.partition_bit_len;
    let partition_path: Vec<_> = (0..pub_params.partition_bit_len)
        .map(|_| vec![Some(Fr::random(&mut *rng))])
        .collect();
    let levels = tree_levels::<Tree>(nodes);
    let challenge_proofs = Challenges::new(nodes, comm_r_new, 0)
        .take(challenges)
        .map(|c| {
            let rho = rho(&phi, c >> high_shift);
            let leaf_r_old = Fr::random(&mut *rng);
            let leaf_d_new = Fr::random(&mut *rng);
            let path_r_old = siblings(random_path(c as usize, &levels, rng));
            let path_r_new = siblings(random_path(c as usize, &levels, rng));
            let path_d_new = (0..below_partition)
                .map(|_| vec![Some(Fr::random(&mut *rng))])
                .chain(partition_path.iter().cloned())
                .collect();
            ChallengeProof {
                leaf_r_old: Some(leaf_r_old),
                path_r_old,
                leaf_d_new: Some(leaf_d_new),
                path_d_new,
                leaf_r_new: Some(leaf_r_old + leaf_d_new * rho),
                path_r_new,
                _tree_r: PhantomData,
            }
        })
        .collect();
    let mut random = || Some(Fr::random(&mut *rng));
    let priv_inputs = PrivateInputs {
        comm_c: random(),
        root_r_old: random(),
        root_r_new: random(),
        apex_leafs: (0..pub_params.apex_leaf_count).map(|_| random()).collect(),
        challenge_proofs,
    };
    Ok(EmptySectorUpdateCircuit {
        pub_params,
        pub_inputs,
        priv_inputs,
    })
}

/// The siblings of `path` (SnapDeals paths carry no positions: the circuit takes them from the
/// challenge's bits).
fn siblings(path: Path) -> Vec<Vec<Option<Fr>>> {
    path.into_iter()
        .map(|(siblings, _)| siblings.into_iter().map(Some).collect())
        .collect()
}

/// A synthetic SnapDeals partition: its circuit, whose fields are public, is all its native
/// witness needs.
pub(crate) struct Partition<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    pub(crate) EmptySectorUpdateCircuit<Tree>,
);

impl<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>> super::Native for Partition<Tree> {
    type Circuit = EmptySectorUpdateCircuit<Tree>;

    fn circuit(&self) -> Result<Self::Circuit> {
        let c = &self.0;
        Ok(EmptySectorUpdateCircuit {
            pub_params: c.pub_params.clone(),
            pub_inputs: c.pub_inputs.clone(),
            // `PrivateInputs` derives Clone, which asks the tree type to be Clone too.
            priv_inputs: PrivateInputs {
                comm_c: c.priv_inputs.comm_c,
                root_r_old: c.priv_inputs.root_r_old,
                root_r_new: c.priv_inputs.root_r_new,
                apex_leafs: c.priv_inputs.apex_leafs.clone(),
                challenge_proofs: c.priv_inputs.challenge_proofs.clone(),
            },
        })
    }

    fn witness(&self, inputs: usize, aux: usize) -> std::result::Result<Witness, NativeError> {
        crate::filecoin::native::snap::witness(
            self.circuit()
                .map_err(|e| NativeError::Shape(e.to_string()))?,
            inputs,
            aux,
        )
    }
}
