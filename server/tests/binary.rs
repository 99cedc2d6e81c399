//! The `snarkd` binary itself: version, default config, startup errors, and a clean exit on
//! SIGTERM with JSON logs.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

const SNARKD: &str = env!("CARGO_BIN_EXE_snarkd");

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
    let mut child = Command::new(SNARKD)
        .args([
            "run",
            "--listen",
            "127.0.0.1:0",
            "--http-listen",
            "127.0.0.1:0",
        ])
        .env("RUST_LOG", "info")
        .env("SNARKD_LOGGING_FORMAT", "json")
        .env("SNARKD_DAEMON_DRAIN_TIMEOUT", "10s")
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let http = loop {
        let mut line = String::new();
        assert!(
            stderr.read_line(&mut line).unwrap() > 0,
            "snarkd exited before serving"
        );
        let Ok(event) = serde_json::from_str::<serde_json::Value>(&line) else {
            panic!("a log line that is not JSON: {line}");
        };
        if event["message"] == "snarkd is serving" {
            break event["http"].as_str().unwrap().to_string();
        }
    };

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

    let kill = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let exit = tokio::task::spawn_blocking(move || child.wait().unwrap())
        .await
        .unwrap();
    assert_eq!(exit.code(), Some(0));
    let rest: Vec<String> = stderr.lines().map(Result::unwrap).collect();
    assert!(
        rest.iter().any(|l| l.contains("snarkd stopped")),
        "{rest:?}"
    );
}
