//! The native witness's safety net through the daemon (real prover, CPU backend, 2 KiB
//! parameters): with every native witness corrupted by the test hook
//! `SNARKD_TEST_CORRUPT_NATIVE_WITNESS` (one aux value changed, as a layout mistake would), a
//! PoRep partition's proof fails its check, the job turns its native witnesses off, the engine
//! proves the partition again from the gadgets, the fallback is counted, and the proof comes
//! back COMPLETED and verifies with filecoin-proofs' verifier. Alone in its test binary: the
//! hook is a variable of the whole process.

mod common;
#[path = "common/real.rs"]
mod real;

use real::{metrics_text, prove_and_check, start};
use snarkd_proto::v1 as pb;
use snarkd_prover::ProofKind;

#[tokio::test(flavor = "multi_thread")]
async fn a_corrupted_native_witness_is_caught_and_the_porep_completes_from_the_gadgets() {
    // Set before the daemon starts, read on synthesis threads only.
    std::env::set_var("SNARKD_TEST_CORRUPT_NATIVE_WITNESS", "1");
    let mut d = start(&[ProofKind::PorepSealCommit], 1).await;
    // Parameters and matrices loaded first: a partition synthesized before they are takes the
    // plain path, without a witness pass of any kind.
    d.grpc
        .preload_srs(pb::PreloadSrsRequest {
            circuit_id: "porep-2k".into(),
        })
        .await
        .expect("PreloadSRS");
    prove_and_check(&mut d, ProofKind::PorepSealCommit).await;
    let metrics = metrics_text(&mut d).await;
    let fallbacks: Vec<&str> = metrics
        .lines()
        .filter(|l| l.starts_with("snarkd_native_witness_fallbacks_total{"))
        .collect();
    assert_eq!(
        fallbacks,
        [r#"snarkd_native_witness_fallbacks_total{circuit="porep-2k",stage="proof_check"} 1"#],
        "one synthesis thread: the first partition's proof fails its check, the rest use the gadgets:\n{metrics}"
    );
    d.daemon.shutdown(std::time::Duration::from_secs(5)).await;
}
