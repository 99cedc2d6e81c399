//! The memory estimate made before synthesis is within 25 % of the synthesized partition's size.

use snarkd_prover::{prepare, ProofKind};

use super::common::env;

#[test]
fn memory_estimate_is_within_25_percent_of_the_synthesized_size_for_every_kind() {
    let fx = &env().fixtures;
    let mut report = Vec::new();
    let mut ok = true;
    for kind in ProofKind::ALL {
        let job = prepare(fx.request(kind)).unwrap();
        let est = job.partition_memory_estimate();
        let p = job.synthesize(0).unwrap();
        let (total, abc) = (p.size_bytes(), p.abc_bytes());
        report.push(format!(
            "{kind}: constraints {} aux {} inputs {} measured {total} (abc {abc}) estimated {} (abc {})",
            p.num_constraints(), p.num_aux(), p.num_inputs(), est.total_bytes, est.abc_bytes
        ));
        let within = |e: u64, m: u64| (e as f64 - m as f64).abs() <= 0.25 * m as f64;
        ok &= within(est.total_bytes, total) && within(est.abc_bytes, abc);
    }
    println!("{}", report.join("\n"));
    assert!(ok, "estimate off by more than 25 %:\n{}", report.join("\n"));
}
