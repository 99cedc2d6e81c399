//! The `snarkd` binary itself: version, default config, startup errors, and a clean exit on
//! SIGTERM with JSON logs.

mod common;

use std::process::Command;

use common::process::{self, SNARKD};

fn snarkd(args: &[&str]) -> std::process::Output {
    Command::new(SNARKD)
        .args(args)
        .env_remove("RUST_LOG")
        .output()
        .unwrap()
}

#[test]
fn version_prints_the_version_and_commit() {
    let out = snarkd(&["--version"]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(
        text.trim(),
        format!("snarkd {}", snarkd::build_info::LONG_VERSION)
    );
}

#[test]
fn config_default_prints_the_commented_default_config() {
    let out = snarkd(&["config", "default"]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(text, snarkd::config::DEFAULT_TOML);
    assert!(text.contains("[daemon]") && text.contains("# "), "{text}");
}

#[test]
fn startup_errors_exit_nonzero_and_say_what_to_do() {
    let out = snarkd(&["run", "--config", "/nonexistent/snarkd.toml"]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.contains("/nonexistent/snarkd.toml") && err.contains("snarkd config default"),
        "{err}"
    );

    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let out = snarkd(&["run", "--listen", &addr, "--http-listen", "127.0.0.1:0"]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.contains(&addr) && err.contains("already in use"),
        "{err}"
    );

    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("bad.toml");
    std::fs::write(&file, "[gpus]\nbackend = \"metal\"\n").unwrap();
    let out = snarkd(&["run", "--config", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.contains("gpus.backend") && err.contains("metal"),
        "{err}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runs_serves_status_and_exits_zero_on_sigterm() {
    let mut daemon = process::spawn(
        std::path::Path::new(SNARKD),
        [("SNARKD_DAEMON_DRAIN_TIMEOUT", "10s")],
    );
    let serving = daemon.wait_for_log("snarkd is serving");
    let http = serving["http"].as_str().unwrap().to_string();

    let status: serde_json::Value = reqwest::get(format!("http://{http}/status"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(
        status["pipelines"].is_array() && status["gpu_workers"].is_array(),
        "{status}"
    );

    daemon.sigterm();
    daemon.expect_clean_exit().await;
}
