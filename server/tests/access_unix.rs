//! The unix socket: it never appears with a wider mode than `[daemon] socket_mode`, clients
//! other than grpc-go (grpcurl) can use it, and its file mode rather than the token guards it.

mod common;

use std::collections::BTreeSet;
use std::os::unix::fs::PermissionsExt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::{connect_unix, grpcurl, start_daemon, test_config, winning, StandInProver};
use snarkd::config::{FileMode, ListenAddr};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_socket_is_never_seen_with_a_wider_mode() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("snarkd.sock");
    let mut config = test_config();
    config.daemon.listen = ListenAddr::Unix(path.clone());
    // With the usual umask (022) a socket is created 0755: wider than this.
    config.daemon.socket_mode = FileMode(0o600);

    // A watcher polls the path as fast as it can while daemons start and stop on it.
    let stop = Arc::new(AtomicBool::new(false));
    let watcher = {
        let (stop, path) = (stop.clone(), path.clone());
        std::thread::spawn(move || {
            let mut seen = BTreeSet::new();
            let mut polls = 0u64;
            while !stop.load(Ordering::Relaxed) {
                if let Ok(meta) = std::fs::symlink_metadata(&path) {
                    seen.insert(meta.permissions().mode() & 0o777);
                }
                polls += 1;
            }
            (seen, polls)
        })
    };
    for _ in 0..20 {
        let daemon = start_daemon(&config, StandInProver::new()).await;
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        daemon.shutdown(Duration::from_secs(5)).await;
    }
    stop.store(true, Ordering::Relaxed);
    let (seen, polls) = watcher.join().unwrap();
    assert_eq!(
        seen,
        BTreeSet::from([0o600]),
        "modes seen at the socket's path in {polls} polls"
    );
    // Nothing is left behind next to it.
    let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert!(left.is_empty(), "{left:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpcurl_reaches_the_unix_socket() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("snarkd.sock");
    let mut config = test_config();
    config.daemon.listen = ListenAddr::Unix(path.clone());
    let _daemon = start_daemon(&config, StandInProver::new()).await;
    let socket = path.to_str().unwrap();

    // grpcurl sends the socket's path as :authority, which h2 alone resets with PROTOCOL_ERROR.
    let services = grpcurl::run(&["-plaintext", "-unix", socket, "list"]).await;
    assert!(
        services.lines().any(|l| l == "cuzk.v1.ProvingEngine"),
        "{services}"
    );
    let status = grpcurl::run(&[
        "-plaintext",
        "-unix",
        "-d",
        "{}",
        socket,
        "cuzk.v1.ProvingEngine/GetStatus",
    ])
    .await;
    assert!(status.contains("stand-in cpu"), "{status}");
    let health =
        grpcurl::run(&["-plaintext", "-unix", socket, "grpc.health.v1.Health/Check"]).await;
    assert!(health.contains("SERVING"), "{health}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_token_is_not_asked_on_the_unix_socket() {
    let dir = tempfile::tempdir().unwrap();
    let token = dir.path().join("token");
    std::fs::write(&token, "secret\n").unwrap();
    let path = dir.path().join("snarkd.sock");
    let mut config = test_config();
    config.daemon.listen = ListenAddr::Unix(path.clone());
    config.auth.token_file = Some(token);
    let _daemon = start_daemon(&config, StandInProver::new()).await;
    let mut client = connect_unix(&path).await;
    client.submit_proof(winning("over-unix")).await.unwrap();
}

/// grpcio (Python's gRPC, the C core's HTTP/2) over the unix socket: it sends its own
/// `:authority` for a `unix:` target. The call is raw bytes, so no generated stubs are needed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpcio_reaches_the_unix_socket() {
    use prost::Message;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("snarkd.sock");
    let mut config = test_config();
    config.daemon.listen = ListenAddr::Unix(path.clone());
    let _daemon = start_daemon(&config, StandInProver::new()).await;

    // Installed next to grpcurl into the checkout's .tools/venv by scripts/setup.sh, which
    // exports SNARKD_GRPCIO_PYTHON.
    let venv = concat!(env!("CARGO_MANIFEST_DIR"), "/../.tools/venv/bin/python");
    let python = std::env::var("SNARKD_GRPCIO_PYTHON").unwrap_or_else(|_| venv.into());
    const SCRIPT: &str = r#"
import sys, grpc
channel = grpc.insecure_channel("unix:" + sys.argv[1])
get_status = channel.unary_unary("/cuzk.v1.ProvingEngine/GetStatus")
sys.stdout.write(get_status(b"", timeout=20).hex())
"#;
    let out = tokio::process::Command::new(&python)
        .args(["-c", SCRIPT, path.to_str().unwrap()])
        .output()
        .await
        .unwrap_or_else(|e| panic!("running {python}: {e}"));
    assert!(
        out.status.success(),
        "grpcio GetStatus failed (is grpcio installed for {python}? ./scripts/test.sh installs \
         it): {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let hex = String::from_utf8(out.stdout).unwrap();
    let bytes: Vec<u8> = (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
        .collect();
    let status = snarkd_proto::v1::GetStatusResponse::decode(bytes.as_slice()).unwrap();
    assert!(
        status.gpus.iter().any(|g| g.name == "stand-in cpu"),
        "{status:?}"
    );
}
