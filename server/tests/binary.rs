//! The `snarkd` binary itself: version, default config, `params generate`, startup errors (a
//! memory budget below the daemon's own memory among them), a clean exit on SIGTERM
//! and SIGINT with JSON logs, `snarkd health` for container healthchecks, `RUST_LOG` over `[logging] level`, and a default level that keeps
//! dependencies' info lines out.

mod common;
#[path = "common/real.rs"]
mod real;

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
    // The commit recorded at build time (the binary and this test share build.rs's output) is
    // the checkout's: `SNARKD_BUILD_ID` when set, else `git rev-parse --short=12 HEAD`.
    let recorded = snarkd::build_info::BUILD_ID;
    if let Some(id) = std::env::var("SNARKD_BUILD_ID")
        .ok()
        .filter(|id| !id.trim().is_empty())
    {
        assert_eq!(recorded, id);
        return;
    }
    let Some(head) = git(&["rev-parse", "--short=12", "HEAD"]) else {
        assert_eq!(recorded, "unknown", "no git checkout here");
        return;
    };
    assert_ne!(recorded, "unknown", "built in a git checkout at {head}");
    assert!(
        recorded.len() == 12 && recorded.bytes().all(|b| b.is_ascii_hexdigit()),
        "{recorded:?} is not a 12-digit short commit"
    );
    // HEAD itself, or one of its ancestors: cargo reruns build.rs when HEAD moves, but a commit
    // made after this test was built, or another checkout sharing the target directory (whose
    // build.rs run then watches its own refs), leaves an older commit recorded.
    assert!(
        recorded == head || git(&["merge-base", "--is-ancestor", recorded, "HEAD"]).is_some(),
        "built with commit {recorded}, which is not HEAD ({head}) nor in its history"
    );
}

/// A git command's trimmed output in this package's directory; None when it fails.
fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
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
fn params_generate_says_the_files_are_local_test_params() {
    // The cached test parameters (generated when missing, as every real-proof test does): the
    // command finds them present, names each file and says what such files are good for.
    let dir = snarkd_prover::test_params_dir();
    let generate = |kind: &str| {
        let dir = dir.to_str().unwrap();
        snarkd(&[
            "params",
            "generate",
            "--sector-size",
            "2KiB",
            "--kind",
            kind,
            "--dir",
            dir,
        ])
    };
    let out = generate("winning");
    let (stdout, stderr) = (
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    );
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("LOCAL TEST parameters") && stderr.contains("never on chain"),
        "{stderr}"
    );
    let lines: Vec<&str> = stdout.lines().collect();
    assert!(
        lines.len() == 2
            && lines[0].starts_with("winning-2k ")
            && lines[0].contains("v28-proof-of-spacetime-fallback-")
            && lines[0].ends_with(".params"),
        "{stdout}"
    );
    // Then the circuit's pre-compiled matrices, saved beside the parameters.
    let r1cs = lines[1].rsplit(' ').next().unwrap();
    assert!(
        lines[1].starts_with("winning-2k pre-compiled circuit ready")
            && r1cs.ends_with(".snarkd-r1cs")
            && std::path::Path::new(r1cs).exists(),
        "{stdout}"
    );

    let out = generate("wimming");
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("wimming"), "{err}");
}

/// sysexits.h EX_CONFIG: what snarkd exits with when its configuration is wrong.
const EX_CONFIG: i32 = 78;

#[test]
fn startup_errors_exit_nonzero_and_say_what_to_do() {
    // A config error exits with sysexits' EX_CONFIG, which the unit's
    // RestartPreventExitStatus= names: restarting cannot fix it.
    let out = snarkd(&["run", "--config", "/nonexistent/snarkd.toml"]);
    assert_eq!(out.status.code(), Some(EX_CONFIG));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.contains("/nonexistent/snarkd.toml") && err.contains("snarkd config default"),
        "{err}"
    );

    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    // A port in use may be free later: a plain failure, which systemd retries.
    let out = snarkd(&["run", "--listen", &addr, "--http-listen", "127.0.0.1:0"]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.contains(&addr) && err.contains("already in use"),
        "{err}"
    );

    // Settings that read as valid but cannot work here: 78 too, naming the key.
    for (settings, key) in [
        (&[("SNARKD_GPUS_BACKEND", "cuda")][..], "gpus.backend"),
        (
            &[("SNARKD_AUTH_TOKEN_FILE", "/nonexistent/token")],
            "auth.token_file",
        ),
        (
            &[
                ("SNARKD_TLS_CERT_FILE", "/nonexistent/cert.pem"),
                ("SNARKD_TLS_KEY_FILE", "/nonexistent/key.pem"),
            ],
            "tls.cert_file",
        ),
    ] {
        let state = tempfile::tempdir().unwrap();
        let out = Command::new(SNARKD)
            .args([
                "run",
                "--listen",
                "127.0.0.1:0",
                "--http-listen",
                "127.0.0.1:0",
            ])
            .envs(settings.iter().copied())
            .env("STATE_DIRECTORY", state.path())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(EX_CONFIG), "{settings:?}: {err}");
        assert!(err.contains(key), "{settings:?}: {err}");
    }

    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("bad.toml");
    std::fs::write(&file, "[gpus]\nbackend = \"metal\"\n").unwrap();
    let out = snarkd(&["run", "--config", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(EX_CONFIG));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.contains("gpus.backend") && err.contains("metal"),
        "{err}"
    );
}

#[test]
fn under_journald_the_line_saying_why_snarkd_stopped_is_at_error_priority() {
    use std::os::unix::fs::MetadataExt;
    // stderr is "the journal stream" when JOURNAL_STREAM names its device and inode.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("stderr");
    let stderr = std::fs::File::create(&path).unwrap();
    let meta = stderr.metadata().unwrap();
    let status = Command::new(SNARKD)
        .args(["run", "--config", "/nonexistent/snarkd.toml"])
        .env("JOURNAL_STREAM", format!("{}:{}", meta.dev(), meta.ino()))
        .stderr(stderr)
        .status()
        .unwrap();
    assert_eq!(status.code(), Some(EX_CONFIG));
    let said = std::fs::read_to_string(&path).unwrap();
    assert!(said.starts_with("<3>snarkd: "), "{said}");
}

#[test]
fn a_memory_budget_below_the_daemons_own_memory_is_a_startup_error() {
    let mut p = process::spawn(
        std::path::Path::new(SNARKD),
        [("SNARKD_MEMORY_BUDGET", "1MiB")],
    );
    let err = p.try_ready().expect_err("snarkd must not start");
    assert_eq!(p.wait().code(), Some(EX_CONFIG));
    assert!(
        err.contains("memory.budget")
            && err.contains("less than snarkd itself holds after startup")
            && err.contains("set it above"),
        "{err}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runs_serves_status_and_exits_zero_on_sigterm() {
    let mut daemon = process::spawn(
        std::path::Path::new(SNARKD),
        [("SNARKD_DAEMON_DRAIN_TIMEOUT", "10s")],
    );
    let http = daemon.ready().http;

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
    // The containers' healthcheck: `snarkd health` against the serving daemon.
    let health = snarkd(&["health", "--http", &http.to_string()]);
    assert!(health.status.success(), "{health:?}");

    daemon.sigterm();
    daemon.expect_clean_exit().await;
    // Nothing answers any more: unhealthy, saying so.
    let health = snarkd(&["health", "--http", &http.to_string()]);
    assert_eq!(health.status.code(), Some(1));
    let said = String::from_utf8_lossy(&health.stderr);
    assert!(said.contains("nothing answers on"), "{said}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exits_zero_on_sigint() {
    let mut daemon = process::spawn(
        std::path::Path::new(SNARKD),
        [("SNARKD_DAEMON_DRAIN_TIMEOUT", "10s")],
    );
    daemon.ready();
    daemon.sigint();
    let stopping = daemon.wait_for_log("shutting down");
    assert_eq!(stopping["signal"], "SIGINT", "{stopping}");
    daemon.expect_clean_exit().await;
}

/// `RUST_LOG` replaces `[logging] level` (it is not merged with it): it shows what the level
/// hides and hides what the level shows.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rust_log_wins_over_the_logging_level() {
    // The level alone would hide the info line "snarkd is serving".
    let mut daemon = process::spawn(
        std::path::Path::new(SNARKD),
        [("SNARKD_LOGGING_LEVEL", "warn"), ("RUST_LOG", "info")],
    );
    daemon.ready();
    daemon.sigterm();
    let log = daemon.expect_clean_exit().await;
    assert!(
        log.iter().any(|l| l.contains("snarkd is serving")),
        "{log:?}"
    );

    // The level would show main's info line "shutting down" (target `snarkd`); RUST_LOG keeps
    // only the serve module's info lines.
    let mut daemon = process::spawn(
        std::path::Path::new(SNARKD),
        [
            ("SNARKD_LOGGING_LEVEL", "info"),
            ("RUST_LOG", "snarkd::serve=info,warn"),
        ],
    );
    daemon.ready();
    daemon.sigterm();
    let rest = daemon.expect_clean_exit().await;
    assert!(
        !rest.iter().any(|l| l.contains("shutting down")),
        "{rest:?}"
    );
}

/// At the default level, a real proof logs snarkd's own lines and none of its dependencies' info
/// lines (filecoin-proofs logs several per proof at info).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_proof_at_the_default_log_level_logs_only_snarkds_lines() {
    use snarkd_proto::v1 as pb;
    use snarkd_prover::ProofKind;
    real::ensure_params(&[ProofKind::WindowPost]);
    let request = real::env().fixtures.request(ProofKind::WindowPost);
    let mut env = real::binary_env();
    // Empty counts as unset: the config's level decides.
    env.push(("RUST_LOG", String::new()));
    let mut daemon = process::spawn(std::path::Path::new(SNARKD), env);
    let grpc = daemon.ready().grpc;
    real::prove_completed(&grpc, real::wire(&request, pb::Priority::Unspecified)).await;
    daemon.sigterm();
    let log = daemon.expect_clean_exit().await;
    let events: Vec<serde_json::Value> = log
        .iter()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|_| panic!("not JSON: {l}")))
        .collect();
    assert!(
        events.iter().any(|e| e["message"] == "job finalized"),
        "the proof's own lines are there: {log:?}"
    );
    let foreign: Vec<&serde_json::Value> = events
        .iter()
        .filter(|e| {
            !e["target"]
                .as_str()
                .is_some_and(|t| t.starts_with("snarkd"))
        })
        .collect();
    assert!(foreign.is_empty(), "lines of other crates: {foreign:?}");
}
