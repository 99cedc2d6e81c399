//! Shared setup for the integration tests: a real daemon (real engine, real servers, real
//! clients) on 127.0.0.1:0, proving with the engine's stand-in prover.
#![allow(dead_code)]

pub mod grpcurl;
pub mod process;
pub mod raw_grpc;
/// The engine's stand-in prover for the daemon's tests (its `test-hooks` feature).
pub use snarkd_engine::test_prover::stand_in as prover;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use bytesize::ByteSize;
use snarkd::config::{Config, ListenAddr, MemoryBudget, TcpAddr};
use snarkd::Daemon;
use snarkd_engine::Engine;
use snarkd_proto::v1 as pb;
use snarkd_proto::v1::proving_engine_client::ProvingEngineClient;
use snarkd_proto::MAX_MESSAGE_BYTES;
use tonic::transport::Channel;

pub use prover::StandInProver;

pub type Client = ProvingEngineClient<Channel>;

/// A daemon under test and clients for both ports.
pub struct TestDaemon {
    pub daemon: Daemon,
    pub prover: Arc<StandInProver>,
    pub grpc: Client,
    pub http: SocketAddr,
    pub grpc_addr: SocketAddr,
}

/// The config every test starts from: both ports on 127.0.0.1:0, a small fixed budget.
pub fn test_config() -> Config {
    let mut config = Config::default();
    config.daemon.listen = ListenAddr::Tcp(([127, 0, 0, 1], 0).into());
    config.daemon.http_listen = TcpAddr(([127, 0, 0, 1], 0).into());
    config.daemon.monitor_dir = Some(PathBuf::from("/nonexistent/monitor"));
    config.memory.budget = MemoryBudget::Fixed(ByteSize::gib(1));
    config.synthesis.threads = 2;
    // In memory unless a test sets a journal dir of its own (one daemon per journal).
    config.jobs.journal = false;
    // Kernels where scripts/test.sh keeps them for every test binary (when it is set).
    #[cfg(feature = "opencl")]
    {
        config.gpus.kernel_cache = snarkd_prover::backend::opencl::kernel_cache_from_env();
    }
    config
}

pub async fn start() -> TestDaemon {
    start_with(test_config(), StandInProver::new()).await
}

/// A daemon over a stand-in prover, without clients (for listeners a plaintext TCP client
/// cannot use).
pub async fn start_daemon(config: &Config, prover: Arc<StandInProver>) -> Daemon {
    snarkd::telemetry::prometheus();
    let engine_config = config.engine_config().expect("engine config");
    let engine = match config.jobs.journal_settings() {
        Some(settings) => {
            let journal = snarkd_engine::Journal::open(settings).expect("journal opens");
            Engine::open(engine_config, prover, journal)
                .await
                .expect("journal recovers")
        }
        None => Engine::start(engine_config, prover),
    };
    Daemon::start(config, engine).await.expect("daemon starts")
}

/// Starts a daemon that must refuse to start; returns the error with its causes.
pub async fn start_err(config: Config) -> String {
    let engine = Engine::start(config.engine_config().unwrap(), StandInProver::new());
    match Daemon::start(&config, engine).await {
        Ok(_) => panic!("expected the daemon to refuse to start"),
        Err(err) => format!("{err:#}"),
    }
}

pub async fn start_with(config: Config, prover: Arc<StandInProver>) -> TestDaemon {
    let daemon = start_daemon(&config, prover.clone()).await;
    let ListenAddr::Tcp(grpc_addr) = daemon.grpc_addr().clone() else {
        panic!("tests listen on TCP")
    };
    let grpc = connect(grpc_addr).await;
    let http = daemon.http_addr();
    TestDaemon {
        daemon,
        prover,
        grpc,
        http,
        grpc_addr,
    }
}

/// The generated client, with the same message limits as Curio's.
pub async fn connect(addr: SocketAddr) -> Client {
    let channel = tonic::transport::Endpoint::from_shared(format!("http://{addr}"))
        .expect("endpoint")
        .connect()
        .await
        .expect("connect");
    ProvingEngineClient::new(channel)
        .max_decoding_message_size(MAX_MESSAGE_BYTES)
        .max_encoding_message_size(2 * MAX_MESSAGE_BYTES)
}

/// The generated client over a unix socket, sending `:authority: localhost` as grpc-go does.
pub async fn connect_unix(path: &std::path::Path) -> Client {
    let path = path.to_path_buf();
    let channel = tonic::transport::Endpoint::from_static("http://localhost")
        .connect_with_connector(tower::service_fn(move |_| {
            let path = path.clone();
            async move {
                Ok::<_, std::io::Error>(hyper_util::rt::TokioIo::new(
                    tokio::net::UnixStream::connect(path).await?,
                ))
            }
        }))
        .await
        .expect("connect to the unix socket");
    ProvingEngineClient::new(channel)
}

/// A WinningPoSt request the stand-in prover accepts.
pub fn winning(request_id: &str) -> pb::SubmitProofRequest {
    pb::SubmitProofRequest {
        request_id: request_id.into(),
        proof_kind: pb::ProofKind::WinningPost as i32,
        registered_proof: 0,
        vanilla_proofs: vec![prover::vanilla(0)],
        randomness: vec![5; 32],
        miner_id: 1000,
        ..Default::default()
    }
}

/// A SnapDeals request of `partitions` partitions the stand-in prover accepts.
pub fn snap(partitions: u32) -> pb::SubmitProofRequest {
    pb::SubmitProofRequest {
        proof_kind: pb::ProofKind::SnapDealsUpdate as i32,
        registered_proof: 0,
        vanilla_proofs: (0..partitions).map(prover::vanilla).collect(),
        comm_r_old: vec![1; 32],
        comm_r_new: vec![2; 32],
        comm_d_new: vec![3; 32],
        ..Default::default()
    }
}

/// gRPC-web framing: 1 flag byte, 4 length bytes (big endian), the message.
pub fn grpc_web_frame(message: &[u8]) -> Vec<u8> {
    let mut frame = vec![0u8];
    frame.extend_from_slice(&(message.len() as u32).to_be_bytes());
    frame.extend_from_slice(message);
    frame
}

/// GET `path` on the HTTP port: (status, content type, body).
pub async fn http_get(addr: SocketAddr, path: &str) -> (u16, String, String) {
    let response = reqwest::get(format!("http://{addr}{path}"))
        .await
        .expect("http get");
    let status = response.status().as_u16();
    let content_type = response
        .headers()
        .get("content-type")
        .map(|v| v.to_str().unwrap().to_string())
        .unwrap_or_default();
    (status, content_type, response.text().await.unwrap())
}

/// GET `path` on the HTTP port naming `host` in the Host header: (status, body).
pub async fn get_with_host(addr: SocketAddr, path: &str, host: &str) -> (u16, String) {
    let response = reqwest::Client::new()
        .get(format!("http://{addr}{path}"))
        .header("host", host)
        .send()
        .await
        .unwrap();
    (response.status().as_u16(), response.text().await.unwrap())
}

/// The longest any helper here waits for something the daemon should do: a failing test then
/// says what it waited for instead of hanging (the slowest real wait, a 2 KiB PoRep proved on
/// a busy CI machine, takes a few minutes).
pub const WAIT_LIMIT: Duration = Duration::from_secs(600);

/// Awaits `wait`, failing the test with "no {what} within [`WAIT_LIMIT`]" when it has not
/// resolved by then.
pub async fn within<T>(what: &str, wait: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(WAIT_LIMIT, wait)
        .await
        .unwrap_or_else(|_| panic!("no {what} within {WAIT_LIMIT:?}"))
}

/// The status stream of every job, each change as it happens (coalesced to 1 ms).
pub async fn status_stream(client: &mut Client) -> tonic::Streaming<pb::StatusSnapshot> {
    client
        .stream_status(pb::StreamStatusRequest {
            min_interval_ms: 1,
            job_ids: vec![],
        })
        .await
        .expect("stream status")
        .into_inner()
}

/// Waits on the status stream until `pred` holds for a snapshot, and returns it. Event-driven:
/// no sleeps, the stream delivers every change (coalesced). Fails the test, showing the last
/// snapshot's jobs, after [`WAIT_LIMIT`].
pub async fn wait_for_status(
    client: &mut Client,
    mut pred: impl FnMut(&pb::StatusSnapshot) -> bool,
) -> pb::StatusSnapshot {
    let mut stream = status_stream(client).await;
    let mut last = None;
    let waited = tokio::time::timeout(WAIT_LIMIT, async {
        while let Some(snapshot) = stream.message().await.expect("status stream") {
            if pred(&snapshot) {
                return Some(snapshot);
            }
            last = Some(snapshot);
        }
        None
    })
    .await;
    let jobs = |s: Option<pb::StatusSnapshot>| -> Vec<(String, i32)> {
        s.map(|s| s.jobs.into_iter().map(|j| (j.job_id, j.state)).collect())
            .unwrap_or_default()
    };
    match waited {
        Ok(Some(snapshot)) => snapshot,
        Ok(None) => panic!(
            "the status stream ended before the awaited state; last jobs (id, state): {:?}",
            jobs(last)
        ),
        Err(_) => panic!(
            "no snapshot showed the awaited state within {WAIT_LIMIT:?}; last jobs (id, state): {:?}",
            jobs(last)
        ),
    }
}

/// Submits a WinningPoSt with the device phase held closed and returns its job id once its
/// partition is on a worker. Call `d.prover.open()` to let it finish.
pub async fn hold_running_job(d: &mut TestDaemon) -> String {
    d.prover.close();
    let job = d
        .grpc
        .submit_proof(winning(""))
        .await
        .expect("submit")
        .into_inner()
        .job_id;
    wait_for_status(&mut d.grpc, |s| {
        s.workers
            .iter()
            .any(|w| w.current_job_id == job && w.state == pb::WorkerState::Proving as i32)
    })
    .await;
    job
}

/// AwaitProof for `job_id`, waiting at most `timeout_ms` (0: until it ends).
pub async fn await_job(
    client: &mut Client,
    job_id: &str,
    timeout_ms: u64,
) -> Result<pb::AwaitProofResponse, tonic::Status> {
    let request = pb::AwaitProofRequest {
        job_id: job_id.to_string(),
        timeout_ms,
    };
    let limit = WAIT_LIMIT + Duration::from_millis(timeout_ms);
    tokio::time::timeout(limit, client.await_proof(request))
        .await
        .unwrap_or_else(|_| panic!("job {job_id} did not end within {limit:?}"))
        .map(|r| r.into_inner())
}
