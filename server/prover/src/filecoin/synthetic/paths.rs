//! Random Merkle paths of a tree's real shape: per level, arity − 1 random siblings and the
//! position of the path's node among them, base levels first (the order filecoin's Merkle
//! proofs and circuits list them in).

use blstrs::Scalar as Fr;
use ff::Field;
use filecoin_proofs::MerkleTreeTrait;
use rand::RngCore;
// typenum's `Unsigned` (the arities are type-level numbers), through sha2's re-export: the prover
// has no typenum dependency of its own, and there is one typenum in the build.
use sha2::digest::typenum::Unsigned;
use storage_proofs_core::merkle::base_path_length;

/// One path: (siblings, position) per level.
pub(super) type Path = Vec<(Vec<Fr>, usize)>;

/// The arity of each level of a path in a `Tree` of `leaves` leaves: the base levels, then the
/// sub-tree level and the top-tree level where the tree has them.
pub(super) fn tree_levels<Tree: MerkleTreeTrait>(leaves: usize) -> Vec<usize> {
    let base = base_path_length::<Tree::Arity, Tree::SubTreeArity, Tree::TopTreeArity>(leaves);
    let upper = [
        Tree::SubTreeArity::to_usize(),
        Tree::TopTreeArity::to_usize(),
    ];
    std::iter::repeat_n(Tree::Arity::to_usize(), base)
        .chain(upper.into_iter().filter(|&arity| arity > 0))
        .collect()
}

/// The levels of a path in a binary tree of `leaves` leaves (TreeD).
pub(super) fn binary_levels(leaves: usize) -> Vec<usize> {
    vec![2; leaves.trailing_zeros() as usize]
}

/// A path from leaf `node` through `levels` (arities): random siblings, and as positions the
/// digits of `node` in those arities, lowest first, as a real path to `node` has them.
pub(super) fn random_path(node: usize, levels: &[usize], rng: &mut impl RngCore) -> Path {
    let mut rest = node;
    levels
        .iter()
        .map(|&arity| {
            let position = rest % arity;
            rest /= arity;
            let siblings = (1..arity).map(|_| Fr::random(&mut *rng)).collect();
            (siblings, position)
        })
        .collect()
}

/// `path` as a circuit's `AuthPath` takes it (every value known).
pub(super) fn as_options(path: Path) -> Vec<(Vec<Option<Fr>>, Option<usize>)> {
    path.into_iter()
        .map(|(siblings, position)| (siblings.into_iter().map(Some).collect(), Some(position)))
        .collect()
}
