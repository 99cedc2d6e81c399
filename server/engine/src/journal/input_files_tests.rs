//! A job's input file over its life: written before its acceptance, deleted once its end is
//! on disk; and the one way the journal's tests list a directory.

use std::path::Path;
use std::time::Duration;

use super::tests::{completed, config, settings, within, Life};
use super::*;
use crate::domain::ProofKind;
use crate::test_prover::{request, with_vanilla, TestProver};
use crate::EngineConfig;

/// The names of the files in `dir`, sorted.
pub(super) fn file_names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    names
}

#[test]
fn a_finished_jobs_input_file_is_deleted_once_its_end_is_recorded() {
    let dir = tempfile::tempdir().unwrap();
    // A budget that holds the input while the job is planned.
    let config = EngineConfig {
        memory_budget_bytes: 4 * INLINE_INPUT_BYTES,
        ..config()
    };
    let life = Life::open_with(dir.path(), settings(dir.path()), TestProver::new(1), config);
    let large = with_vanilla(
        request(ProofKind::PorepSealCommit, 1, 1000),
        vec![7; INLINE_INPUT_BYTES as usize + 1],
    );
    let id = life.run(life.engine.submit(large)).unwrap().job_id;
    let file = dir.path().join("inputs").join(format!("{id}.req"));
    assert!(file.exists(), "a large input is a file");
    completed(&life, &id);
    within(&life, "the input file's removal", async {
        while file.exists() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    });
    life.kill();
}
