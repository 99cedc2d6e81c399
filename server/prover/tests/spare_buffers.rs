//! A partition's buffers kept for the next partition (`snarkd_prover::spare`): the next
//! partition of the same shape is written into the same memory, and comes out the same as one
//! written into fresh memory. Its own binary: keeping buffers is the process's setting.
#![cfg(feature = "bench")]

use std::collections::BTreeSet;

use snarkd_prover::filecoin::synthetic::synthesize_partition;
use snarkd_prover::spare::spare;
use snarkd_prover::{ProofKind, SynthesizedPartition};

fn porep_2k() -> SynthesizedPartition {
    synthesize_partition(ProofKind::PorepSealCommit, 2 << 10, 2, 7, true).expect("synthesis")
}

/// Where the partition's aux, a and b lie.
fn addresses(p: &SynthesizedPartition) -> BTreeSet<usize> {
    let (_, aux) = p.witness();
    [aux.as_ptr(), p.abc().a.as_ptr(), p.abc().b.as_ptr()]
        .into_iter()
        .map(|ptr| ptr as usize)
        .collect()
}

#[test]
fn a_partition_written_into_kept_buffers_equals_one_written_into_fresh_memory() {
    let spare = spare();
    spare.keep_from(1);
    let fresh = porep_2k();
    let (inputs, aux) = fresh.witness();
    let want = (
        inputs.to_vec(),
        aux.to_vec(),
        fresh.abc().a.clone(),
        fresh.abc().b.clone(),
    );
    // Kept from now on: the first partition's buffers go back, the next one takes them.
    spare.keep();
    let first_home = addresses(&fresh);
    fresh.give_back();
    assert!(spare.held() > 0, "the buffers are kept");
    let reused = spare.reused();

    let again = porep_2k();
    assert_eq!(
        addresses(&again),
        first_home,
        "written into the same memory"
    );
    assert!(spare.reused() >= reused + 3, "aux, a and b reused");
    let (inputs, aux) = again.witness();
    assert_eq!(
        (
            inputs.to_vec(),
            aux.to_vec(),
            again.abc().a.clone(),
            again.abc().b.clone()
        ),
        want,
        "the same values"
    );
    assert!(again.abc().c.is_none());
    again.give_back();
    spare.trim(u64::MAX);
    assert_eq!(spare.held(), 0);
}
