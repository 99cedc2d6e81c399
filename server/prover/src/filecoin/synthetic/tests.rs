//! The synthetic circuits against the real ones: at 2 KiB the very R1CS snarkd records from the
//! blank circuit, with a complete witness; at 32 GiB the blank circuit's shape at one challenge
//! or sector, and a cost linear in the count (counted only: a 32 GiB PoRep challenge is about
//! seven million constraints).

use bellperson::Circuit;
use blstrs::Scalar as Fr;
use filecoin_proofs::constants::DefaultPieceHasher;
use filecoin_proofs::{with_shape, MerkleTreeTrait, TreeRHasher};
use storage_proofs_core::compound_proof::CompoundProof;
use storage_proofs_porep::stacked::{Challenges, StackedCompound};
use storage_proofs_post::fallback::FallbackPoStCompound;
use storage_proofs_update::circuit::{ChallengeProof, PrivateInputs, PublicInputs};
use storage_proofs_update::{EmptySectorUpdateCircuit, PublicParams};

use super::{
    count, porep, post, production_count, synthesize, with_circuit, Synthesis, UseCircuit,
};
use crate::error::Result;
use crate::filecoin::{blank, estimate, CircuitId, CircuitShape, ProofKind};
use crate::synthesis::precompiled::CircuitMatrices;

const SEED: u64 = 27;
const KIB_2: u64 = 2 << 10;
const GIB_32: u64 = 32 << 30;

/// Records a circuit's R1CS matrices.
struct Record(Option<CircuitMatrices>);

impl UseCircuit for Record {
    fn take<C: Circuit<Fr>>(&mut self, circuit: C) -> Result<()> {
        self.0 = Some(CircuitMatrices::record(circuit, 0)?);
        Ok(())
    }
}

/// At 2 KiB with the production count, the synthetic circuit records to exactly the matrices
/// snarkd records from the blank circuit (so the same constraints, inputs and aux variables as
/// the measured shape), counts to that shape, and its witness pass makes every value.
fn same_circuit_as_production_at_2kib(kind: ProofKind) {
    let n = production_count(kind, KIB_2).unwrap();
    let real = blank::record_matrices(CircuitId::new(kind, KIB_2).unwrap()).unwrap();
    let shape = CircuitShape {
        constraints: real.num_constraints(),
        aux: real.num_aux(),
        inputs: real.num_inputs(),
    };
    assert_eq!(
        shape,
        estimate::shape(kind, KIB_2),
        "{kind}: the measured 2 KiB shape"
    );
    let mut recorded = Record(None);
    with_circuit(kind, KIB_2, n, SEED, &mut recorded).unwrap();
    let synthetic = recorded.0.unwrap();
    assert!(
        synthetic == real,
        "{kind}: the synthetic circuit's matrices differ from the blank circuit's \
         ({} constraints, {} inputs, {} aux, {} terms vs {shape:?}, {} terms)",
        synthetic.num_constraints(),
        synthetic.num_inputs(),
        synthetic.num_aux(),
        synthetic.num_terms(),
        real.num_terms(),
    );
    let counted = synthesize(kind, KIB_2, n, SEED, Synthesis::Count).unwrap();
    assert_eq!(
        (counted.constraints, counted.inputs, counted.aux),
        (Some(shape.constraints), shape.inputs, shape.aux),
        "{kind}: counted"
    );
    let witness = synthesize(kind, KIB_2, n, SEED, Synthesis::Witness(shape)).unwrap();
    assert_eq!(
        (witness.inputs, witness.aux),
        (shape.inputs, shape.aux),
        "{kind}: witness"
    );
}

#[test]
fn porep_at_2kib_is_the_production_circuit() {
    same_circuit_as_production_at_2kib(ProofKind::PorepSealCommit);
}

#[test]
fn snap_at_2kib_is_the_production_circuit() {
    same_circuit_as_production_at_2kib(ProofKind::SnapDealsUpdate);
}

#[test]
fn window_post_at_2kib_is_the_production_circuit() {
    same_circuit_as_production_at_2kib(ProofKind::WindowPost);
}

#[test]
fn winning_post_at_2kib_is_the_production_circuit() {
    same_circuit_as_production_at_2kib(ProofKind::WinningPost);
}

/// The shape of the blank circuit of `kind` at `sector_size` with `n` challenges or sectors.
fn blank_shape<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    kind: ProofKind,
    sector_size: u64,
    n: usize,
) -> CircuitShape {
    let shape = match kind {
        ProofKind::PorepSealCommit => {
            let mut pp = porep::params::<Tree>(sector_size).unwrap();
            pp.challenges = Challenges::new_interactive(n);
            count::count(
                <StackedCompound<Tree, DefaultPieceHasher> as CompoundProof<_, _>>::blank_circuit(
                    &pp,
                ),
            )
        }
        ProofKind::SnapDealsUpdate => {
            // `EmptySectorUpdateCircuit::blank` insists on the production count.
            let production = PublicParams::from_sector_size(sector_size);
            let (nodes, apex_leafs) = (production.sector_nodes, production.apex_leaf_count);
            count::count(EmptySectorUpdateCircuit::<Tree> {
                pub_params: PublicParams {
                    challenge_count: n,
                    ..production
                },
                pub_inputs: PublicInputs::empty(),
                priv_inputs: PrivateInputs {
                    comm_c: None,
                    root_r_old: None,
                    root_r_new: None,
                    apex_leafs: vec![None; apex_leafs],
                    challenge_proofs: vec![ChallengeProof::empty(nodes); n],
                },
            })
        }
        ProofKind::WindowPost | ProofKind::WinningPost => {
            let mut pp = post::params::<Tree>(kind, sector_size).unwrap();
            pp.sector_count = n;
            count::count(<FallbackPoStCompound<Tree> as CompoundProof<_, _>>::blank_circuit(&pp))
        }
    };
    shape.unwrap()
}

fn counted(kind: ProofKind, sector_size: u64, n: usize) -> CircuitShape {
    let s = synthesize(kind, sector_size, n, SEED, Synthesis::Count).unwrap();
    CircuitShape {
        constraints: s.constraints.unwrap(),
        aux: s.aux,
        inputs: s.inputs,
    }
}

/// At 32 GiB, one challenge (sector) counts as the blank circuit built for one, and the shape
/// is linear in the count: (count, shape) at three counts lie on a line. The line starts at the
/// blank circuit with none where a circuit can have none (SnapDeals needs one). SnapDeals is
/// linear only within a group of nine challenges, whose bits one Poseidon digest gives; 1 to 3
/// share one.
fn one_is_the_blank_circuit_and_the_cost_is_linear_at_32gib(kind: ProofKind) {
    let one = counted(kind, GIB_32, 1);
    let blank = |n| with_shape!(GIB_32, blank_shape, kind, GIB_32, n);
    assert_eq!(one, blank(1), "{kind}: one challenge or sector");
    let points = match kind {
        ProofKind::SnapDealsUpdate => [
            (1, one),
            (2, counted(kind, GIB_32, 2)),
            (3, counted(kind, GIB_32, 3)),
        ],
        _ => [(0, blank(0)), (1, one), (2, counted(kind, GIB_32, 2))],
    };
    let field = |s: &CircuitShape| [s.constraints, s.aux, s.inputs].map(|v| v as i128);
    let [(k0, s0), (k1, s1), (k2, s2)] = points.map(|(k, s)| (k as i128, field(&s)));
    for i in 0..3 {
        assert_eq!(
            (s1[i] - s0[i]) * (k2 - k0),
            (s2[i] - s0[i]) * (k1 - k0),
            "{kind}: not linear in the count (constraints, aux, inputs): {points:?}"
        );
    }
    assert!(s1[0] > s0[0], "{kind}: a challenge adds constraints");
}

#[test]
fn porep_at_32gib_is_the_blank_shape_and_linear() {
    one_is_the_blank_circuit_and_the_cost_is_linear_at_32gib(ProofKind::PorepSealCommit);
}

#[test]
fn snap_at_32gib_is_the_blank_shape_and_linear() {
    one_is_the_blank_circuit_and_the_cost_is_linear_at_32gib(ProofKind::SnapDealsUpdate);
}

#[test]
fn post_at_32gib_is_the_blank_shape_and_linear() {
    one_is_the_blank_circuit_and_the_cost_is_linear_at_32gib(ProofKind::WindowPost);
    one_is_the_blank_circuit_and_the_cost_is_linear_at_32gib(ProofKind::WinningPost);
}

#[test]
fn counts_out_of_range_are_refused() {
    for kind in ProofKind::ALL {
        assert!(
            synthesize(kind, KIB_2, 0, SEED, Synthesis::Count).is_err(),
            "{kind}: 0"
        );
    }
    let snap = ProofKind::SnapDealsUpdate;
    let most = production_count(snap, KIB_2).unwrap();
    assert!(synthesize(snap, KIB_2, most, SEED, Synthesis::Count).is_ok());
    assert!(synthesize(snap, KIB_2, most + 1, SEED, Synthesis::Count).is_err());
    assert!(
        synthesize(snap, 4 << 10, 1, SEED, Synthesis::Count).is_err(),
        "unregistered size"
    );
}

/// At 32 GiB the witness pass makes every value of a SnapDeals partition (one challenge) and a
/// WindowPoSt one (one sector): the new replica leaf agrees with the rho the circuit derives for
/// 2^30 nodes with the production h, which the circuit asserts.
#[test]
fn snap_and_window_post_at_32gib_have_a_complete_witness() {
    for kind in [ProofKind::SnapDealsUpdate, ProofKind::WindowPost] {
        let shape = counted(kind, GIB_32, 1);
        let witness = synthesize(kind, GIB_32, 1, SEED, Synthesis::Witness(shape)).unwrap();
        assert_eq!(
            (witness.inputs, witness.aux),
            (shape.inputs, shape.aux),
            "{kind}"
        );
    }
}
