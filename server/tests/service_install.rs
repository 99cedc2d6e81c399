//! The service as an operator installs it: `server/deploy/install.sh` into a scratch root, then
//! the unit's own ExecStart line run with the unit's environment (paths under the scratch root,
//! `STATE_DIRECTORY` as systemd sets it for `StateDirectory=`, a notify socket and a watchdog as
//! `Type=notify` and `WatchdogSec=` give). It must say READY only once both ports are bound,
//! answer the watchdog, serve the installed monitor, write its pre-compiled circuits into the
//! state directory (the parameters' directory left untouched), say STOPPING on SIGTERM and exit
//! 0; a broken config exits 78, which the unit does not restart.

mod common;

use std::net::TcpStream;
use std::os::unix::net::UnixDatagram;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use common::process::SNARKD;
use snarkd_proto::v1 as pb;
use snarkd_proto::v1::proving_engine_client::ProvingEngineClient;
use snarkd_prover::ProofKind;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// The unit's `Key=value` lines for `key`, in order.
fn unit_values(unit: &str, key: &str) -> Vec<String> {
    unit.lines()
        .filter_map(|l| l.trim().strip_prefix(&format!("{key}=")))
        .map(str::to_string)
        .collect()
}

/// An absolute path of the unit, moved under `root`; anything else as it is.
fn rooted(root: &Path, value: &str) -> String {
    match value.strip_prefix('/') {
        Some(rel) => root.join(rel).display().to_string(),
        None => value.to_string(),
    }
}

/// Installs into a fresh scratch root (binaries of this build, a stand-in monitor page).
fn install(root: &Path) -> String {
    let monitor = root.parent().unwrap().join("built-monitor");
    std::fs::create_dir_all(&monitor).unwrap();
    std::fs::write(monitor.join("index.html"), "<html>installed monitor</html>").unwrap();
    let out = Command::new(repo().join("server/deploy/install.sh"))
        .arg("--root")
        .arg(root)
        .arg("--monitor")
        .arg(&monitor)
        .arg(Path::new(SNARKD).parent().unwrap())
        .output()
        .unwrap();
    let said =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "install.sh: {said}");
    // systemd-sysusers and systemd-tmpfiles complain about lines they cannot use, and go on.
    for complaint in ["Failed", "failed", "gnoring", "nknown", "nvalid"] {
        assert!(!said.contains(complaint), "install.sh: {said}");
    }
    said
}

/// The unit's ExecStart as a command under `root`, with the unit's environment and what
/// systemd would add.
fn unit_command(root: &Path) -> Command {
    let unit = std::fs::read_to_string(root.join("etc/systemd/system/snarkd.service")).unwrap();
    let exec = unit_values(&unit, "ExecStart");
    assert_eq!(exec.len(), 1, "one ExecStart");
    // Through a shell that execs it, so that WATCHDOG_PID (systemd's main pid) is its pid.
    let mut command = Command::new("sh");
    command
        .args(["-c", "WATCHDOG_PID=$$ exec \"$@\"", "sh"])
        .args(exec[0].split_whitespace().map(|t| rooted(root, t)));
    command
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap());
    for assignment in unit_values(&unit, "Environment") {
        let (k, v) = assignment.split_once('=').unwrap();
        command.env(k, rooted(root, v));
    }
    let state = unit_values(&unit, "StateDirectory");
    assert_eq!(state, ["snarkd"]);
    command.env("STATE_DIRECTORY", root.join("var/lib/snarkd"));
    command
}

/// Datagrams on the notify socket until `want` arrives (each datagram one string); the test
/// fails with the daemon's `log` when it does not come.
fn notifications_until(socket: &UnixDatagram, want: &str, seen: &mut Vec<String>, log: &Path) {
    let deadline = Instant::now() + Duration::from_secs(120);
    let mut buf = [0u8; 4096];
    while Instant::now() < deadline {
        if let Ok(n) = socket.recv(&mut buf) {
            let message = String::from_utf8_lossy(&buf[..n]).to_string();
            let done = message.lines().any(|l| l == want);
            seen.push(message);
            if done {
                return;
            }
        }
    }
    let log = std::fs::read_to_string(log).unwrap_or_default();
    panic!("no {want} on the notify socket; got {seen:?}; the daemon's log:\n{log}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_installed_unit_starts_notifies_serves_its_monitor_and_writes_only_its_own_dirs() {
    // SAFETY: geteuid has no preconditions.
    assert_eq!(
        unsafe { libc::geteuid() },
        0,
        "installing a service (a user, directories it owns) needs root, as install.sh does"
    );
    let scratch = tempfile::tempdir().unwrap();
    let root = scratch.path().join("root");
    install(&root);
    for dir in [
        "var/lib/snarkd/jobs",
        "var/lib/snarkd/precompiled",
        "run/snarkd",
    ] {
        assert!(root.join(dir).is_dir(), "tmpfiles.d made {dir}");
    }
    let passwd = std::fs::read_to_string(root.join("etc/passwd")).unwrap();
    let user = passwd
        .lines()
        .find_map(|l| l.strip_prefix("snarkd:x:"))
        .unwrap_or_else(|| panic!("sysusers.d made no snarkd user: {passwd}"));
    let ids: Vec<u32> = user
        .split(':')
        .take(2)
        .map(|n| n.parse().unwrap())
        .collect();
    // The service user reaches the scratch root as it would reach /.
    std::fs::set_permissions(
        scratch.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    assert!(root.join("etc/snarkd/snarkd.toml").is_file());

    // The parameters: a directory of its own holding only WinningPoSt's files, as the operator's
    // FIL_PROOFS_PARAMETER_CACHE (from /etc/default/snarkd).
    let params = scratch.path().join("params");
    std::fs::create_dir_all(&params).unwrap();
    let test_params = snarkd_prover::test_params_dir();
    snarkd_prover::generate_params(&test_params, 2 << 10, &[ProofKind::WinningPost]).unwrap();
    let circuit = snarkd_prover::CircuitId::new(ProofKind::WinningPost, 2 << 10).unwrap();
    let (p, vk) = snarkd_prover::params::params_paths(&test_params, circuit);
    for file in [p, vk] {
        std::fs::copy(&file, params.join(file.file_name().unwrap())).unwrap();
    }

    let notify_path = scratch.path().join("notify.sock");
    let notify = UnixDatagram::bind(&notify_path).unwrap();
    // systemd's notify socket takes datagrams from the service's user.
    std::fs::set_permissions(
        &notify_path,
        std::os::unix::fs::PermissionsExt::from_mode(0o777),
    )
    .unwrap();
    notify
        .set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    let ready_file = root.join("run/snarkd/ready.json");
    let log = scratch.path().join("snarkd.log");
    let mut command = unit_command(&root);
    command
        .args([
            "--listen",
            "127.0.0.1:0",
            "--http-listen",
            "127.0.0.1:0",
            "--ready-file",
        ])
        .arg(&ready_file)
        .env("FIL_PROOFS_PARAMETER_CACHE", &params)
        .env("SNARKD_GPUS_BACKEND", "cpu")
        .env("SNARKD_MEMORY_BUDGET", "8GiB")
        .env("NOTIFY_SOCKET", &notify_path)
        .env("WATCHDOG_USEC", "400000")
        .stderr(std::fs::File::create(&log).unwrap());
    // As the unit's User= and Group=: the directories tmpfiles.d made are the service user's,
    // and snarkd refuses a jobs directory another user owns.
    std::os::unix::process::CommandExt::uid(&mut command, ids[0]);
    std::os::unix::process::CommandExt::gid(&mut command, ids[1]);
    let mut child = common::process::Reaper(command.spawn().unwrap());

    let mut seen = Vec::new();
    notifications_until(&notify, "READY=1", &mut seen, &log);
    // READY comes after both listeners are bound: the ports named in the ready file take
    // connections at the moment it arrives.
    let ready: snarkd::ready::Ready =
        serde_json::from_slice(&std::fs::read(&ready_file).expect("ready file before READY"))
            .unwrap();
    TcpStream::connect(&ready.grpc).expect("gRPC bound before READY");
    TcpStream::connect(ready.http).expect("HTTP bound before READY");
    // Before READY only what it is doing: setting up its devices.
    let before = &seen[..seen.len() - 1];
    assert!(
        before.len() == 1 && before[0].starts_with("STATUS=choosing devices"),
        "one status line before READY: {seen:?}"
    );
    notifications_until(&notify, "WATCHDOG=1", &mut seen, &log);

    let page = reqwest::get(format!("http://{}/", ready.http))
        .await
        .unwrap();
    assert_eq!(page.status(), 200);
    assert!(page.text().await.unwrap().contains("installed monitor"));

    let mut client = ProvingEngineClient::connect(ready.grpc_url().unwrap())
        .await
        .unwrap();
    client
        .preload_srs(pb::PreloadSrsRequest {
            circuit_id: circuit.to_string(),
        })
        .await
        .expect("PreloadSRS of winning-2k");
    let matrices = snarkd_prover::params::precompiled::matrices_file(
        &root.join("var/lib/snarkd/precompiled"),
        circuit,
    );
    assert!(matrices.path.is_file(), "matrices in the state directory");
    let in_params: Vec<_> = std::fs::read_dir(&params)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(
        in_params.len(),
        2,
        "the params directory is left as it was: {in_params:?}"
    );
    assert!(root.join("var/lib/snarkd/jobs/journal.sqlite").is_file());

    nix_kill(child.id(), libc::SIGTERM);
    notifications_until(&notify, "STOPPING=1", &mut seen, &log);
    assert_eq!(child.wait().unwrap().code(), Some(0));
}

#[test]
fn a_config_error_exits_78_which_the_unit_does_not_restart() {
    let unit = std::fs::read_to_string(repo().join("server/deploy/snarkd.service")).unwrap();
    assert_eq!(unit_values(&unit, "RestartPreventExitStatus"), ["78"]);
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("snarkd.toml");
    std::fs::write(&bad, "[daemon]\nlisen = \"127.0.0.1:1\"\n").unwrap();
    for (what, env) in [
        (
            "unknown key",
            vec![("SNARKD_CONFIG", bad.display().to_string())],
        ),
        (
            "missing file",
            vec![(
                "SNARKD_CONFIG",
                dir.path().join("none.toml").display().to_string(),
            )],
        ),
        (
            "bad value",
            vec![("SNARKD_MEMORY_BUDGET", "lots".to_string())],
        ),
    ] {
        let out = Command::new(SNARKD)
            .arg("run")
            .env("SNARKD_JOBS_DIR", dir.path().join("jobs"))
            .envs(env)
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(78),
            "{what}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

fn nix_kill(pid: u32, signal: i32) {
    // SAFETY: kill(2) with a child's pid.
    assert_eq!(unsafe { libc::kill(pid as i32, signal) }, 0);
}
