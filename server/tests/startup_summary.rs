//! The startup summary of the real binary: one INFO block and `startup` in `/status` with the
//! backend asked for and the devices chosen, the memory budget and how it was reckoned, the
//! params directory with each circuit's files and matrices, the journal and the listeners; on a
//! box without a GPU, `backend = "auto"` proving on the CPU is a WARN and a mark in the summary;
//! `backend = "opencl"` without any OpenCL device refuses to start, saying what to install.
//! Circuits named in `[params] preload` are loaded at start.

mod common;

use std::path::Path;

use common::process::{self, SNARKD};
use snarkd_prover::ProofKind;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_summary_says_what_the_daemon_runs_on_and_auto_without_a_gpu_warns() {
    let params = tempfile::tempdir().unwrap();
    snarkd_prover::generate_params(params.path(), 2 << 10, &[ProofKind::WinningPost]).unwrap();
    // No OpenCL driver at all, as on a GPU box whose driver is not installed.
    let no_icds = tempfile::tempdir().unwrap();
    let mut p = process::spawn(
        Path::new(SNARKD),
        [
            ("SNARKD_GPUS_BACKEND", "auto".to_string()),
            ("OCL_ICD_VENDORS", no_icds.path().display().to_string()),
            ("SNARKD_PARAMS_DIR", params.path().display().to_string()),
            ("SNARKD_MEMORY_RESERVE", "1GiB".to_string()),
        ],
    );
    let ready = p.ready();
    let summary = p.wait_for_log("startup summary");
    assert_eq!(summary["backend"], "auto");
    assert_eq!(summary["gpu_fallback"], true);
    let text = summary["summary"].as_str().unwrap();
    for expected in [
        "backend:  auto -- NO GPU FOUND: proving on the CPU",
        "device 0: cpu (",
        "reserve 1.0 GiB",
        "auto: ",
        "winning-2k: local test set (verifies only against its own .vk), not pre-compiled yet",
        "journal:  ",
        "0 unfinished job(s) recovered",
        &format!("gRPC {}", ready.grpc),
        &format!("HTTP {}", ready.http),
    ] {
        assert!(
            text.contains(expected),
            "{expected:?} not in the summary:\n{text}"
        );
    }
    // WindowPoSt, PoRep and SnapDeals have no files here: named, but not warned about.
    assert!(text.contains("wpost-2k: missing"), "{text}");

    let status: serde_json::Value = reqwest::get(format!("http://{}/status", ready.http))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let startup = &status["startup"];
    assert_eq!(startup["backend"], "auto", "{status}");
    assert_eq!(startup["gpu_fallback"], true);
    assert!(startup["devices"][0]["name"]
        .as_str()
        .unwrap()
        .starts_with("cpu"));
    assert!(startup["memory_budget_bytes"].as_u64().unwrap() > 0);
    assert!(startup["memory_reckoned"]
        .as_str()
        .unwrap()
        .contains("reserve"));
    let winning = startup["params"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["circuit"] == "winning-2k")
        .expect("winning-2k in the params");
    assert_eq!(winning["params"]["verdict"], "local_test");
    assert_eq!(winning["vk"]["verdict"], "local_test");
    assert_eq!(startup["version"], env!("CARGO_PKG_VERSION"));

    p.sigterm();
    assert_eq!(p.wait().code(), Some(0));
}

#[test]
fn auto_without_a_gpu_warns_and_opencl_without_a_device_refuses_to_start() {
    let no_icds = tempfile::tempdir().unwrap();
    let icds = ("OCL_ICD_VENDORS", no_icds.path().display().to_string());
    let mut p = process::spawn(
        Path::new(SNARKD),
        [("SNARKD_GPUS_BACKEND", "auto".to_string()), icds.clone()],
    );
    let warn = p.wait_for_log(
        "no GPU found: proving on the CPU, which takes hours for a 32 GiB PoRep; install the \
         GPU's OpenCL driver (NVIDIA: its OpenCL ICD) and check `snarkd devices`",
    );
    assert_eq!(warn["level"], "WARN");
    p.sigterm();
    assert_eq!(p.wait().code(), Some(0));

    let mut p = process::spawn(
        Path::new(SNARKD),
        [("SNARKD_GPUS_BACKEND", "opencl".to_string()), icds],
    );
    let log = p
        .try_ready()
        .expect_err("opencl without a device must not start");
    assert!(
        log.contains("gpus.backend: \"opencl\" found no OpenCL device")
            && log.contains("install a driver"),
        "{log}"
    );
    // A config error: 78, which the unit does not restart.
    assert_eq!(p.wait().code(), Some(78));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn circuits_named_in_params_preload_are_loaded_at_start_while_the_daemon_serves() {
    let params = tempfile::tempdir().unwrap();
    snarkd_prover::generate_params(params.path(), 2 << 10, &[ProofKind::WinningPost]).unwrap();
    let mut p = process::spawn(
        Path::new(SNARKD),
        [
            ("SNARKD_GPUS_BACKEND", "cpu".to_string()),
            ("SNARKD_PARAMS_DIR", params.path().display().to_string()),
            ("SNARKD_PARAMS_PRELOAD", r#"["winning-2k"]"#.to_string()),
        ],
    );
    let ready = p.ready();
    let loaded = p.wait_for_log("preloaded parameters ([params] preload)");
    assert_eq!(loaded["circuit"], "winning-2k", "{loaded}");
    assert_eq!(loaded["already_loaded"], false, "{loaded}");
    let status: serde_json::Value = reqwest::get(format!("http://{}/status", ready.http))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let srs = status["allocations"]["srs"]
        .as_array()
        .expect("loaded parameters in /status");
    assert!(
        srs.iter().any(|p| p["circuit_id"] == "winning-2k"),
        "{status}"
    );
    p.sigterm();
    assert_eq!(p.wait().code(), Some(0));
}
