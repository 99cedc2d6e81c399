//! Each native driver against the gadget path (`precompiled::witness_pass` on the real circuit,
//! bellperson's gadgets on a witness-only constraint system): the same inputs and aux values,
//! in the same order. Synthetic partitions (seeded random values) of every kind at 2 KiB with
//! the production challenge or sector count, and at a few challenges or sectors of 32 GiB
//! (TreeC / TreeR with sub-trees) and 64 GiB (with a top tree too).

use bellperson::Circuit;
use blstrs::Scalar as Fr;

use crate::error::Result;
use crate::filecoin::synthetic::{with_circuit, Native, UseCircuit};
use crate::filecoin::ProofKind;
use crate::synthesis::precompiled::witness_pass;

type Witness = (Vec<Fr>, Vec<Fr>);

/// Asserts the two witnesses are equal, naming the first differing value.
pub(crate) fn assert_same_witness(what: &str, native: &Witness, gadgets: &Witness) {
    for (part, got, want) in [
        ("input", &native.0, &gadgets.0),
        ("aux", &native.1, &gadgets.1),
    ] {
        let first = got.iter().zip(want.iter()).position(|(x, y)| x != y);
        assert_eq!(
            first,
            None,
            "{what}: first differing {part} value (of {} native, {} gadget)",
            got.len(),
            want.len()
        );
        assert_eq!(got.len(), want.len(), "{what}: {part} count");
    }
}

/// A synthetic partition's native witness and its circuit's on the gadget path.
struct Both(Option<(Witness, Witness)>);

impl UseCircuit for Both {
    fn take<C: Circuit<Fr>>(&mut self, _: C) -> Result<()> {
        unreachable!("a kind with a native witness is taken whole")
    }

    fn take_native<N: Native>(&mut self, partition: &N) -> Result<()> {
        let gadgets = witness_pass(0, partition.circuit()?, 0, 0)?;
        // The circuit's exact counts, as the matrices give them in the daemon.
        let native = partition
            .witness(gadgets.0.len(), gadgets.1.len())
            .expect("the native witness");
        self.0 = Some((native, gadgets));
        Ok(())
    }
}

fn matches(kind: ProofKind, sector_size: u64, count: usize, seed: u64) {
    let mut both = Both(None);
    with_circuit(kind, sector_size, count, seed, &mut both).unwrap();
    let (native, gadgets) = both.0.unwrap();
    let what = format!("{kind} of {sector_size} bytes, {count} challenge(s), seed {seed}");
    assert_same_witness(&what, &native, &gadgets);
}

#[test]
fn porep_2kib_matches_the_gadgets() {
    matches(ProofKind::PorepSealCommit, 2 << 10, 2, 1);
    matches(ProofKind::PorepSealCommit, 2 << 10, 2, 2);
}

#[test]
fn porep_32gib_and_64gib_challenges_match_the_gadgets() {
    // Two challenges: each written in place into its share, in parallel.
    matches(ProofKind::PorepSealCommit, 32 << 30, 2, 3);
    matches(ProofKind::PorepSealCommit, 64 << 30, 1, 4);
}

/// [`matches`] at 2 KiB with the production challenge or sector count.
fn matches_at_2kib(kind: ProofKind, seed: u64) {
    let n = crate::filecoin::synthetic::production_count(kind, 2 << 10).unwrap();
    matches(kind, 2 << 10, n, seed);
}

#[test]
fn snap_2kib_matches_the_gadgets() {
    matches_at_2kib(ProofKind::SnapDealsUpdate, 5);
    matches_at_2kib(ProofKind::SnapDealsUpdate, 6);
}

#[test]
fn snap_32gib_and_64gib_challenges_match_the_gadgets() {
    matches(ProofKind::SnapDealsUpdate, 32 << 30, 2, 7);
    matches(ProofKind::SnapDealsUpdate, 64 << 30, 1, 8);
}

#[test]
fn post_2kib_matches_the_gadgets() {
    matches_at_2kib(ProofKind::WinningPost, 9);
    matches_at_2kib(ProofKind::WindowPost, 9);
}

#[test]
fn post_32gib_and_64gib_sectors_match_the_gadgets() {
    matches(ProofKind::WindowPost, 32 << 30, 3, 10);
    matches(ProofKind::WinningPost, 32 << 30, 1, 11);
    matches(ProofKind::WindowPost, 64 << 30, 2, 12);
}
