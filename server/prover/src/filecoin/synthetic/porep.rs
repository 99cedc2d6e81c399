//! PoRep: synthetic vanilla proofs (one per challenge) turned into a `StackedCircuit` by
//! `StackedCompound::circuit`, the way a C2 request's proofs are; the circuit's own fields are
//! private, so this is the one way in.

use filecoin_hashers::{Domain, Hasher, PoseidonArity};
use filecoin_proofs::constants::DefaultPieceHasher;
use filecoin_proofs::parameters::public_params;
use filecoin_proofs::MerkleTreeTrait;
use rand::{Rng, RngCore};
use storage_proofs_core::compound_proof::CompoundProof;
use storage_proofs_core::drgraph::Graph;
use storage_proofs_core::merkle::MerkleProof;
use storage_proofs_porep::stacked::{
    ColumnProof, EncodingProof, LabelingProof, Proof, PublicInputs, PublicParams,
    ReplicaColumnProof, StackedCircuit, StackedCompound, Tau,
};

use super::paths::{binary_levels, random_path, tree_levels, Path};
use crate::circuit::representative_seal;
use crate::error::{ProverError, Result};
use crate::filecoin::native::porep::PorepPartition;
use crate::filecoin::native::{NativeError, Witness};

type TreeDomain<Tree> = <<Tree as MerkleTreeTrait>::Hasher as Hasher>::Domain;
type DataDomain = <DefaultPieceHasher as Hasher>::Domain;
/// A Merkle proof in TreeR or TreeC (both have the `Tree` shape).
type TreeProof<Tree> = MerkleProof<
    <Tree as MerkleTreeTrait>::Hasher,
    <Tree as MerkleTreeTrait>::Arity,
    <Tree as MerkleTreeTrait>::SubTreeArity,
    <Tree as MerkleTreeTrait>::TopTreeArity,
>;

/// The PoRep public parameters of `sector_size` (cheap: the graph's parent cache is not built).
pub(super) fn params<Tree: 'static + MerkleTreeTrait>(
    sector_size: u64,
) -> Result<PublicParams<Tree>> {
    let config = representative_seal(sector_size)?.as_v1_config();
    public_params::<Tree>(&config).map_err(ProverError::filecoin)
}

/// Challenges in one production PoRep partition at `sector_size`.
pub(super) fn challenges_per_partition<Tree: 'static + MerkleTreeTrait>(
    sector_size: u64,
) -> Result<usize> {
    Ok(params::<Tree>(sector_size)?
        .challenges
        .num_challenges_per_partition())
}

/// What a synthetic PoRep partition is made from: the public parameters, the public inputs and
/// one vanilla proof per challenge (partition 0 of a sector with random commitments and replica
/// id), as a C2 request's are.
pub(crate) struct Partition<Tree: 'static + MerkleTreeTrait> {
    params: PublicParams<Tree>,
    inputs: PublicInputs<TreeDomain<Tree>, DataDomain>,
    proofs: Vec<Proof<Tree, DefaultPieceHasher>>,
}

/// The PoRep partition at `sector_size` over `challenges` random challenges.
pub(crate) fn partition<Tree: 'static + MerkleTreeTrait>(
    sector_size: u64,
    challenges: usize,
    rng: &mut impl RngCore,
) -> Result<Partition<Tree>> {
    let pp = params::<Tree>(sector_size)?;
    let comm_d = DataDomain::random(rng);
    let comm_c = TreeDomain::<Tree>::random(rng);
    let comm_r_last = TreeDomain::<Tree>::random(rng);
    let proofs: Vec<_> = (0..challenges)
        .map(|_| challenge_proof(&pp, comm_d, comm_c, comm_r_last, rng))
        .collect();
    let inputs = PublicInputs {
        replica_id: TreeDomain::<Tree>::random(rng),
        seed: None,
        tau: Some(Tau {
            comm_d,
            comm_r: TreeDomain::<Tree>::random(rng),
        }),
        k: Some(0),
    };
    Ok(Partition {
        params: pp,
        inputs,
        proofs,
    })
}

impl<Tree: 'static + MerkleTreeTrait> Partition<Tree> {
    /// Its circuit, built by `StackedCompound::circuit` as a request's is.
    pub(crate) fn circuit(&self) -> Result<StackedCircuit<Tree, DefaultPieceHasher>> {
        <StackedCompound<Tree, DefaultPieceHasher> as CompoundProof<_, _>>::circuit(
            &self.inputs,
            (),
            &self.proofs,
            &self.params,
            Some(0),
        )
        .map_err(ProverError::filecoin)
    }

    /// What its native witness is computed from.
    pub(crate) fn native(&self) -> PorepPartition<'_, Tree> {
        let tau = self
            .inputs
            .tau
            .as_ref()
            .expect("a synthetic partition has its tau");
        PorepPartition {
            replica_id: self.inputs.replica_id.into(),
            comm_d: tau.comm_d.into(),
            comm_r: tau.comm_r.into(),
            proofs: &self.proofs,
            layers: self.params.num_layers,
        }
    }
}

impl<Tree: 'static + MerkleTreeTrait> super::Native for Partition<Tree> {
    type Circuit = StackedCircuit<Tree, DefaultPieceHasher>;

    fn circuit(&self) -> Result<Self::Circuit> {
        Partition::circuit(self)
    }

    fn witness(&self, inputs: usize, aux: usize) -> std::result::Result<Witness, NativeError> {
        self.native().witness(inputs, aux)
    }
}

/// The vanilla proof of one random challenge: its TreeD, TreeR and TreeC paths, its own column
/// and the columns of its DRG and expander parents (random nodes, random labels), and the
/// labeling and encoding proofs that name the node (without parents: the circuit takes the
/// parents' labels from their columns).
fn challenge_proof<Tree: 'static + MerkleTreeTrait, R: RngCore>(
    pp: &PublicParams<Tree>,
    comm_d: DataDomain,
    comm_c: TreeDomain<Tree>,
    comm_r_last: TreeDomain<Tree>,
    rng: &mut R,
) -> Proof<Tree, DefaultPieceHasher> {
    let nodes = pp.graph.size();
    let layers = pp.num_layers;
    let levels = tree_levels::<Tree>(nodes);
    let node = rng.gen_range(0..nodes);
    let column = |node: usize, rng: &mut R| -> ColumnProof<TreeProof<Tree>> {
        let rows = (0..layers)
            .map(|_| TreeDomain::<Tree>::random(rng))
            .collect();
        // The leaf of a column proof is the column's hash, which the circuit computes itself.
        let proof: TreeProof<Tree> = merkle_proof(
            TreeDomain::<Tree>::random(rng),
            comm_c,
            random_path(node, &levels, rng),
        );
        ColumnProof::new(node as u32, rows, proof)
    };
    let c_x = column(node, rng);
    let parents = |count: usize, rng: &mut R| -> Vec<_> {
        (0..count)
            .map(|_| column(rng.gen_range(0..nodes), rng))
            .collect()
    };
    let drg_parents = parents(pp.graph.base_graph().degree(), rng);
    let exp_parents = parents(pp.graph.expansion_degree(), rng);
    let node_id = node as u64;
    Proof {
        comm_d_proofs: merkle_proof(
            DataDomain::random(rng),
            comm_d,
            random_path(node, &binary_levels(nodes), rng),
        ),
        comm_r_last_proof: merkle_proof(
            TreeDomain::<Tree>::random(rng),
            comm_r_last,
            random_path(node, &levels, rng),
        ),
        replica_column_proofs: ReplicaColumnProof {
            c_x,
            drg_parents,
            exp_parents,
        },
        labeling_proofs: (1..=layers)
            .map(|layer| LabelingProof::new(layer as u32, node_id, Vec::new()))
            .collect(),
        encoding_proof: EncodingProof::new(layers as u32, node_id, Vec::new()),
    }
}

/// A Merkle proof from `leaf` to `root` along `path`.
fn merkle_proof<H: Hasher, U: PoseidonArity, V: PoseidonArity, W: PoseidonArity>(
    leaf: H::Domain,
    root: H::Domain,
    path: Path,
) -> MerkleProof<H, U, V, W> {
    let path = path
        .into_iter()
        .map(|(siblings, position)| (siblings.into_iter().map(Into::into).collect(), position))
        .collect();
    MerkleProof::from_parts(leaf, root, path)
}
