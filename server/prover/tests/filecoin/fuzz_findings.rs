//! The fuzz targets' inputs replayed in CI: every crashing input the fuzzers found
//! (`server/fuzz/artifacts-found/`) is refused with a typed error that names what is wrong, and
//! no committed corpus input panics a decoder. `prepare` turns a decoder's panic into an
//! `InvalidRequest` saying "decoding them failed" (so the daemon lives); here that message is
//! the failure, as it is a crash in the fuzz targets.

use std::path::{Path, PathBuf};

use snarkd_prover::{prepare, ProofInput, ProverError};

#[allow(dead_code)] // the seed writer's half (`to_bytes`) is not used here
#[path = "../../../fuzz/src/layout.rs"]
mod layout;
#[path = "../../../fuzz/src/requests.rs"]
mod requests;

/// What `prepare` says when it caught a decoder's panic.
const CAUGHT_PANIC: &str = "decoding them failed";

/// How a target's bytes become a request.
type Build = fn(&[u8]) -> ProofInput;

/// Each fuzz target's directory name and how its bytes become a request.
const TARGETS: [(&str, Build); 3] = [
    ("porep_c1", requests::porep),
    ("post_vanilla", requests::post),
    ("snap_vanilla", requests::snap),
];

fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz")
}

/// Every file under `fuzz_dir()/<under>/<target>/`, with its target's request builder.
fn inputs(under: &str) -> Vec<(PathBuf, Build)> {
    let mut out = Vec::new();
    for (target, build) in TARGETS {
        let dir = fuzz_dir().join(under).join(target);
        for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
            out.push((entry.unwrap().path(), build));
        }
    }
    out.sort();
    out
}

#[test]
fn crashing_inputs_the_fuzzers_found_are_refused_naming_the_field() {
    let found = inputs("artifacts-found");
    assert!(found.len() >= 4, "the four committed findings: {found:?}");
    for (path, build) in found {
        let req = build(&std::fs::read(&path).unwrap());
        let err = match prepare(&req) {
            Ok(_) => panic!("{}: a damaged input was accepted", path.display()),
            Err(e) => e,
        };
        let message = err.to_string();
        assert!(
            !message.contains(CAUGHT_PANIC),
            "{}: a decoder panicked: {message}",
            path.display()
        );
        assert!(
            matches!(err, ProverError::InvalidRequest(_)),
            "{}: {err:?}",
            path.display()
        );
        // The node checks name where in the proof the bad value sits.
        let names_it = ["not a BLS12-381 field element", "a Merkle path element"]
            .iter()
            .any(|what| message.contains(what));
        assert!(names_it, "{}: {message}", path.display());
    }
}

#[test]
fn no_corpus_input_panics_a_decoder() {
    let corpus = inputs("corpus");
    assert!(!corpus.is_empty());
    for (path, build) in corpus {
        let req = build(&std::fs::read(&path).unwrap());
        if let Err(e) = prepare(&req) {
            let message = e.to_string();
            assert!(
                !message.contains(CAUGHT_PANIC),
                "{}: {message}",
                path.display()
            );
        }
    }
}
