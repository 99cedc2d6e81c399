//! Pre-compiled circuits on the real circuits of every kind: the partition synthesized from the
//! matrices, with the gadgets' witness or the native one, is the recording constraint
//! system's, bit for bit, and the proof made from the native one verifies; the
//! matrices are loaded and charged with the parameters, saved where asked (read from beside
//! the parameters too), and recorded again when their file is damaged or stale.

use snarkd_prover::filecoin::estimate;
use snarkd_prover::groth16::Randomness;
use snarkd_prover::params::precompiled::{matrices_file, MatricesPlace};
use snarkd_prover::synthesis::precompiled::MatricesFile;
use snarkd_prover::{load_params, load_params_with, prepare, CpuBackend, DeviceBackend, ProofKind};

use super::common::{env, params};

#[test]
fn every_kind_synthesizes_the_same_partition_from_its_matrices_and_the_proof_verifies() {
    let fx = &env().fixtures;
    let dir = tempfile::tempdir().unwrap();
    let backend = CpuBackend::new();
    let mut off_estimates = Vec::new();
    for kind in ProofKind::ALL {
        params(kind); // generated when missing
        let job = prepare(&fx.request(kind)).unwrap();
        let circuit = job.circuit_id();
        let loaded = load_params_with(
            &env().params_dir,
            circuit,
            Some(MatricesPlace::dir(dir.path())),
        )
        .unwrap();
        let m = loaded
            .precompiled()
            .expect("matrices recorded on first load");
        assert!(
            matrices_file(dir.path(), circuit).path.exists(),
            "{circuit}: saved"
        );
        let on_disk = std::fs::metadata(matrices_file(dir.path(), circuit).path)
            .unwrap()
            .len();
        println!(
            "{circuit}: {} constraints, {} terms, {} coefficients, {} bytes in memory, {on_disk} on disk",
            m.num_constraints(),
            m.num_terms(),
            m.num_coefficients(),
            m.size_bytes()
        );
        let estimated = estimate::precompiled_bytes(circuit);
        if estimated < m.size_bytes() || estimated as f64 > 1.25 * m.size_bytes() as f64 {
            off_estimates.push(format!(
                "{circuit}: estimated {estimated} bytes of matrices, recorded {} ({:.3} terms a constraint)",
                m.size_bytes(),
                m.num_terms() as f64 / m.num_constraints() as f64
            ));
        }
        let plain_params = load_params(&env().params_dir, circuit).unwrap();
        assert_eq!(
            loaded.size_bytes(),
            plain_params.size_bytes() + m.size_bytes(),
            "{circuit}: the matrices are charged with the parameters"
        );
        assert_eq!(loaded.precompiled_bytes(), m.size_bytes());

        let mut proofs = Vec::new();
        for i in 0..job.num_partitions() {
            let want = job.synthesize(i).unwrap();
            let got = job.synthesize_with(i, Some(m)).unwrap();
            assert_eq!(
                got.witness(),
                want.witness(),
                "{circuit} partition {i}: witness"
            );
            assert_eq!(got.densities(), want.densities(), "{circuit} partition {i}");
            let (wa, ga) = (want.abc(), got.abc());
            assert!(
                ga.a == wa.a && ga.b == wa.b && ga.c.is_none() && ga.c_values() == wa.c_values(),
                "{circuit} {i}: a/b/c"
            );
            // The native witness (every kind has one): the same partition, and the proof below
            // is made from it.
            let fresh = job.synthesize_native(i, m).unwrap();
            assert!(
                fresh.native().is_some(),
                "{circuit} partition {i}: native witness"
            );
            assert_eq!(
                fresh.witness(),
                want.witness(),
                "{circuit} partition {i}: native"
            );
            assert!(
                fresh.abc().a == wa.a
                    && fresh.abc().b == wa.b
                    && fresh.abc().c_values() == wa.c_values(),
                "{circuit} {i}: native a/b/c"
            );
            let (proof, _) = backend
                .prove(fresh, &loaded, Randomness::random(), &mut |_| {})
                .unwrap();
            proofs.push(proof);
        }
        job.finalize(&proofs, &loaded)
            .unwrap_or_else(|e| panic!("{circuit}: the proof verifies: {e}"));
    }
    assert!(
        off_estimates.is_empty(),
        "the estimate before recording must cover the matrices, by at most a quarter more: {off_estimates:#?}"
    );
}

#[test]
fn a_damaged_or_stale_file_is_recorded_again_and_a_valid_one_is_read() {
    let fx = &env().fixtures;
    params(ProofKind::WindowPost);
    let circuit = prepare(&fx.request(ProofKind::WindowPost))
        .unwrap()
        .circuit_id();
    let dir = tempfile::tempdir().unwrap();
    let file = matrices_file(dir.path(), circuit);
    let load = || {
        load_params_with(
            &env().params_dir,
            circuit,
            Some(MatricesPlace::dir(dir.path())),
        )
        .unwrap()
    };

    let first = load();
    let good = std::fs::read(&file.path).unwrap();
    let reread = load();
    assert_eq!(
        reread.precompiled(),
        first.precompiled(),
        "read back as recorded"
    );

    let mut damaged = good.clone();
    let middle = damaged.len() / 2;
    damaged[middle] ^= 0x40;
    std::fs::write(&file.path, &damaged).unwrap();
    assert!(load().precompiled().is_some(), "recorded again");
    assert_eq!(std::fs::read(&file.path).unwrap(), good, "and rewritten");

    let stale = MatricesFile {
        path: file.path.clone(),
        identity: format!("{circuit} (an older filecoin-proofs)"),
    };
    stale.write(first.precompiled().unwrap()).unwrap();
    assert_ne!(std::fs::read(&file.path).unwrap(), good);
    assert_eq!(load().precompiled(), first.precompiled());
    assert_eq!(
        std::fs::read(&file.path).unwrap(),
        good,
        "stale file replaced"
    );

    // The daemon's place: its own directory (empty here), reading the good file beside the
    // parameters too, without writing anything into its own.
    let own = tempfile::tempdir().unwrap();
    let place = MatricesPlace {
        dir: own.path(),
        read_also: Some(dir.path()),
    };
    let beside = load_params_with(&env().params_dir, circuit, Some(place)).unwrap();
    assert_eq!(beside.precompiled(), first.precompiled());
    assert!(
        !matrices_file(own.path(), circuit).path.exists(),
        "read from beside the parameters, not recorded again"
    );

    // Pre-compilation off: parameters alone.
    let plain = load_params(&env().params_dir, circuit).unwrap();
    assert!(plain.precompiled().is_none());
    assert_eq!(plain.precompiled_bytes(), 0);
}
