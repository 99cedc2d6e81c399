//! `snarkd params check` as an operator runs it: on a directory holding local test sets (made by
//! `snarkd params generate`), one of them truncated and one verifying key swapped for another
//! circuit's, and for a sector size whose files are not there. Published files pass in the
//! prover's unit tests (`params::check`): none can be fetched here.

use std::path::Path;
use std::process::{Command, Output};

const SNARKD: &str = env!("CARGO_BIN_EXE_snarkd");

fn snarkd(state: &Path, args: &[&str]) -> Output {
    Command::new(SNARKD)
        .args(args)
        .env("STATE_DIRECTORY", state)
        .env_remove("SNARKD_CONFIG")
        .output()
        .unwrap()
}

fn lines_for<'a>(stdout: &'a str, circuit: &str, suffix: &str) -> Vec<&'a str> {
    stdout
        .lines()
        .filter(|l| l.starts_with(&format!("{circuit}\t")) && l.ends_with(suffix))
        .collect()
}

#[test]
fn local_sets_pass_as_local_and_truncated_foreign_or_missing_files_are_named() {
    let (params, state) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let dir = params.path().to_str().unwrap();
    let made = snarkd(
        state.path(),
        &[
            "params",
            "generate",
            "--sector-size",
            "2KiB",
            "--kind",
            "winning",
            "--kind",
            "wpost",
            "--dir",
            dir,
        ],
    );
    assert!(
        made.status.success(),
        "{}",
        String::from_utf8_lossy(&made.stderr)
    );

    let out = snarkd(state.path(), &["params", "check", "--dir", dir]);
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for circuit in ["winning-2k", "wpost-2k"] {
        for suffix in [".params", ".vk"] {
            let lines = lines_for(&stdout, circuit, suffix);
            assert_eq!(lines.len(), 1, "{stdout}");
            assert!(lines[0].contains("local test set"), "{stdout}");
        }
    }
    assert!(stdout.contains("LOCAL TEST parameters"), "{stdout}");
    assert!(
        state.path().join("params-digests.json").is_file(),
        "digests cached"
    );

    // Truncate WindowPoSt's parameters; put WinningPoSt's verifying key in place of its own.
    let file = |circuit: &str, suffix: &str| {
        let line = lines_for(&stdout, circuit, suffix)[0];
        line.rsplit('\t').next().unwrap().to_string()
    };
    let wpost_params = file("wpost-2k", ".params");
    let len = std::fs::metadata(&wpost_params).unwrap().len();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&wpost_params)
        .unwrap()
        .set_len(len / 2)
        .unwrap();
    std::fs::copy(file("winning-2k", ".vk"), file("wpost-2k", ".vk")).unwrap();

    let out = snarkd(state.path(), &["params", "check", "--dir", dir]);
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout).to_string(),
        String::from_utf8_lossy(&out.stderr).to_string(),
    );
    assert_eq!(out.status.code(), Some(1), "{stdout}{stderr}");
    for suffix in [".params", ".vk"] {
        let line = lines_for(&stdout, "wpost-2k", suffix)[0];
        assert!(line.contains("MISMATCH"), "{line}");
        assert!(lines_for(&stdout, "winning-2k", suffix)[0].contains("local test set"));
    }
    assert!(
        stderr.contains("to fix 2KiB") && stderr.contains("curio fetch-params 2KiB"),
        "{stderr}"
    );

    // A size with no files: every circuit's two files are named missing, with how to fetch them.
    let out = snarkd(
        state.path(),
        &["params", "check", "--dir", dir, "--sector-size", "32GiB"],
    );
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout).to_string(),
        String::from_utf8_lossy(&out.stderr).to_string(),
    );
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        stdout.lines().filter(|l| l.contains("\tmissing\t")).count(),
        8,
        "{stdout}"
    );
    assert!(stderr.contains("curio fetch-params 32GiB"), "{stderr}");
}
