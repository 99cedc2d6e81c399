//! The parameter files the tests generated, read by the parallel decoder and by bellperson's
//! reader: the same points, key and sizes.

use snarkd_prover::params::params_paths;
use snarkd_prover::params::read::{read_params_file, read_streamed, Reader};
use snarkd_prover::{CircuitId, ProofKind};

use crate::common::{env, params, SECTOR_2K};

#[test]
fn a_2kib_parameter_file_decodes_in_parallel_to_what_bellpersons_reader_gives() {
    for kind in [ProofKind::WinningPost, ProofKind::PorepSealCommit] {
        let loaded = params(kind);
        let circuit = CircuitId::new(kind, SECTOR_2K).unwrap();
        let (path, _) = params_paths(&env().params_dir, circuit);
        let (mapped, reader) = read_params_file(std::fs::File::open(&path).unwrap()).unwrap();
        assert_eq!(reader, Reader::Mapped);
        let streamed = read_streamed(std::fs::File::open(&path).unwrap()).unwrap();
        assert!(mapped.vk == streamed.vk, "{kind}: the verifying key");
        assert_eq!(mapped.h, streamed.h, "{kind}: h");
        assert_eq!(mapped.l, streamed.l, "{kind}: l");
        assert_eq!(mapped.a, streamed.a, "{kind}: a");
        assert_eq!(mapped.b_g1, streamed.b_g1, "{kind}: b_g1");
        assert_eq!(mapped.b_g2, streamed.b_g2, "{kind}: b_g2");
        // What the loader (the parallel decoder) gave the test binary is the same too.
        assert_eq!(loaded.parameters().h, streamed.h, "{kind}: loaded h");
    }
}
