//! Serving: binds the gRPC port (TCP or unix socket) and the HTTP port, runs both servers over
//! one running [`Engine`], and shuts down in two phases: stop intake and drain up to a deadline,
//! then end streams and stop the servers. If the engine stops by itself (a bug), health turns
//! NOT_SERVING at once.
//!
//! Layout:
//! - `mod.rs`: [`Daemon`]: start, addresses, shutdown.
//! - `listen`: binding listeners with errors that name the address; the unix socket gets its
//!   mode before it appears at its path.
//! - `grpc`: the gRPC services (ProvingEngine, health, reflection v1 and v1alpha) and their
//!   routes, and which of them the HTTP port serves.
//! - `auth`: the bearer token mutating calls need on TCP when `[auth] token_file` is set.
//! - `tls`: `[tls]` for a TCP gRPC listener.
//! - `unix_authority`: lets clients that send the socket's path as `:authority` (grpcurl,
//!   grpcio) use the unix socket.

mod auth;
mod grpc;
mod listen;
mod tls;
mod unix_authority;

/// Public for the unix-socket benchmark (`benches/unix_socket.rs`).
pub use unix_authority::AuthorityFix;

use std::net::SocketAddr;
use std::time::Duration;

use anyhow::Context;
use snarkd_engine::Engine;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio_stream::wrappers::UnixListenerStream;
use tokio_stream::StreamExt;
use tonic::transport::server::TcpIncoming;

use crate::api::ProvingService;
use crate::config::{Config, ListenAddr};
use crate::http::{self, HttpState};
use crate::telemetry;

/// How long the servers get to close their connections once draining is over.
const SERVER_STOP_TIMEOUT: Duration = Duration::from_secs(5);
/// HTTP/2 pings on idle gRPC connections: a Prove call can wait 30 minutes without a byte, and
/// NAT or firewall state often expires sooner than that.
const KEEPALIVE_INTERVAL: Duration = Duration::from_secs(30);
/// How long an unanswered ping may take before the connection is considered dead.
const KEEPALIVE_TIMEOUT: Duration = Duration::from_secs(20);

/// A running daemon: both servers over one engine.
pub struct Daemon {
    engine: Engine,
    grpc_addr: ListenAddr,
    http_addr: SocketAddr,
    health: tonic_health::server::HealthReporter,
    draining: watch::Sender<bool>,
    closing: watch::Sender<bool>,
    servers: Vec<JoinHandle<anyhow::Result<()>>>,
    upkeep: JoinHandle<()>,
    watchdog: JoinHandle<()>,
    _socket: Option<listen::SocketFile>,
    startup: crate::startup::Published,
}

/// Turns health NOT_SERVING while the job journal cannot be written, and SERVING again after
/// (unless the daemon is draining by then). Returns when the engine's snapshots end.
async fn follow_journal(
    engine: &Engine,
    health: &tonic_health::server::HealthReporter,
    draining: watch::Receiver<bool>,
) {
    let mut snapshots = engine.subscribe();
    let mut unwritable = false;
    loop {
        let now = snapshots
            .borrow_and_update()
            .daemon
            .journal_unwritable
            .is_some();
        if now != unwritable {
            unwritable = now;
            if unwritable {
                grpc::set_not_serving(health).await;
            } else if !*draining.borrow() {
                grpc::set_serving(health).await;
            }
        }
        if snapshots.changed().await.is_err() {
            return;
        }
    }
}

/// How a shutdown went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Drained {
    /// Every job ended before the deadline.
    Idle,
    /// The deadline passed with jobs still queued or running.
    TimedOut,
}

impl Daemon {
    /// Binds both ports and starts serving `engine`. Port 0 picks a free port; read the result
    /// from [`Daemon::grpc_addr`] and [`Daemon::http_addr`].
    pub async fn start(config: &Config, engine: Engine) -> anyhow::Result<Daemon> {
        let metrics = telemetry::prometheus();
        let (draining, draining_rx) = watch::channel(false);
        let draining_for_health = draining_rx.clone();
        let (closing, closing_rx) = watch::channel(false);
        let proving = ProvingService::new(
            engine.clone(),
            config.scheduler.clone(),
            config.limits.clone(),
            metrics.clone(),
            closing_rx.clone(),
        );
        let (health, services) = grpc::services(proving).await?;
        let token = config
            .auth
            .token_file
            .as_deref()
            .map(auth::Token::load)
            .transpose()?;
        let tls = tls::server_config(&config.tls)?;

        // Bind both before serving either, so a taken port fails startup as a whole.
        let (grpc_addr, grpc_listener, socket) = bind_grpc(config).await?;
        let http_listener = listen::bind_tcp(
            config.daemon.http_listen.0,
            "HTTP",
            "--http-listen or [daemon] http_listen",
        )
        .await?;
        let http_addr = http_listener.local_addr()?;

        let stop = || {
            let mut closing = closing_rx.clone();
            async move {
                let _ = closing.wait_for(|c| *c).await;
            }
        };

        let grpc_server = serve_grpc(
            tls,
            grpc_listener,
            services.routes.clone(),
            token.clone(),
            stop(),
        )?;

        let startup = crate::startup::Published::default();
        let http_router = http::router(
            HttpState {
                engine: engine.clone(),
                metrics: metrics.clone(),
                draining: draining_rx,
                startup: startup.clone(),
            },
            services.grpc_web_router(&config.http, token),
            config.monitor_dir(),
            &config.http,
        );
        let http_stop = stop();
        let http_server = tokio::spawn(async move {
            axum::serve(http_listener, http_router)
                .with_graceful_shutdown(http_stop)
                .await
                .context("the HTTP server failed")
        });

        // The engine's writer never ends while the daemon runs; if it does, say so at once.
        // While the job journal cannot be written, no new work is taken: NOT_SERVING too.
        let watchdog = {
            let (engine, health) = (engine.clone(), health.clone());
            let draining = draining_for_health.clone();
            tokio::spawn(async move {
                tokio::select! {
                    _ = engine.stopped() => {}
                    // The snapshots end when the writer does, a moment before its supervisor
                    // publishes why: health turns NOT_SERVING once the reason can be read.
                    () = follow_journal(&engine, &health, draining) => {
                        engine.stopped().await;
                    }
                }
                grpc::set_not_serving(&health).await;
            })
        };

        tracing::info!(grpc = %grpc_addr, http = %http_addr, "snarkd is serving");
        Ok(Daemon {
            engine,
            grpc_addr,
            http_addr,
            health,
            draining,
            closing,
            servers: vec![grpc_server, http_server],
            upkeep: telemetry::spawn_upkeep(metrics),
            watchdog,
            _socket: socket,
            startup,
        })
    }

    /// The gRPC address actually bound (with the real port when 0 was asked for).
    pub fn grpc_addr(&self) -> &ListenAddr {
        &self.grpc_addr
    }

    /// The HTTP address actually bound.
    pub fn http_addr(&self) -> SocketAddr {
        self.http_addr
    }

    /// Where the startup summary is published for `/status` (set once, when gathered).
    pub fn startup(&self) -> crate::startup::Published {
        self.startup.clone()
    }

    /// The engine being served.
    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    /// Stops taking proofs, waits up to `drain_timeout` for queued and running jobs, then ends
    /// status streams and stops both servers.
    pub async fn shutdown(self, drain_timeout: Duration) -> Drained {
        tracing::info!(drain_timeout = %humantime::format_duration(drain_timeout), "draining: no new proofs are accepted");
        self.engine.begin_drain();
        let _ = self.draining.send(true);
        grpc::set_not_serving(&self.health).await;

        let drained = match tokio::time::timeout(drain_timeout, self.engine.idle()).await {
            Ok(()) => Drained::Idle,
            Err(_) => {
                let left = self
                    .engine
                    .snapshot()
                    .jobs
                    .iter()
                    .filter(|j| !j.state.is_finished())
                    .count();
                tracing::warn!(
                    jobs_left = left,
                    "drain timeout passed with jobs unfinished; exiting anyway (with the job journal they resume on the next start)"
                );
                Drained::TimedOut
            }
        };

        let _ = self.closing.send(true);
        for server in self.servers {
            match tokio::time::timeout(SERVER_STOP_TIMEOUT, server).await {
                Ok(Ok(Ok(()))) => {}
                Ok(Ok(Err(err))) => {
                    tracing::warn!(error = %format!("{err:#}"), "server ended with an error")
                }
                Ok(Err(join)) => tracing::warn!(%join, "server task failed"),
                Err(_) => tracing::warn!("a server kept connections open past the stop timeout"),
            }
        }
        self.upkeep.abort();
        self.watchdog.abort();
        // Whatever the engine has recorded (partition proofs, job ends) reaches the disk.
        self.engine.flush_journal().await;
        tracing::info!(?drained, "snarkd stopped");
        drained
    }
}

/// Binds the gRPC listener `[daemon] listen` names: its address as bound, the listener, and for
/// a unix socket the file to remove when the daemon ends.
async fn bind_grpc(
    config: &Config,
) -> anyhow::Result<(ListenAddr, GrpcListener, Option<listen::SocketFile>)> {
    Ok(match &config.daemon.listen {
        ListenAddr::Tcp(addr) => {
            let listener = listen::bind_tcp(*addr, "gRPC", "--listen or [daemon] listen").await?;
            (
                ListenAddr::Tcp(listener.local_addr()?),
                GrpcListener::Tcp(listener),
                None,
            )
        }
        ListenAddr::Unix(path) => {
            let listener = listen::bind_unix(
                path,
                config.daemon.socket_mode.0,
                "--listen or [daemon] listen",
            )?;
            (
                ListenAddr::Unix(path.clone()),
                GrpcListener::Unix(listener),
                Some(listen::SocketFile(path.clone())),
            )
        }
    })
}

/// Serves `routes` on the gRPC listener until `stop` resolves: TLS where configured, the token
/// on TCP (a unix socket is guarded by its file mode), unix connections' `:authority` fixed.
fn serve_grpc(
    tls: Option<tonic::transport::ServerTlsConfig>,
    listener: GrpcListener,
    routes: tonic::service::Routes,
    token: Option<auth::Token>,
    stop: impl std::future::Future<Output = ()> + Send + 'static,
) -> anyhow::Result<JoinHandle<anyhow::Result<()>>> {
    let mut server = tonic::transport::Server::builder()
        .http2_keepalive_interval(Some(KEEPALIVE_INTERVAL))
        .http2_keepalive_timeout(Some(KEEPALIVE_TIMEOUT));
    if let Some(tls) = tls {
        server = server
            .tls_config(tls)
            .context("the [tls] cert_file, key_file or client_ca_file is not usable")?;
    }
    Ok(match listener {
        GrpcListener::Tcp(listener) => {
            let router = server.layer(auth::TokenLayer(token)).add_routes(routes);
            tokio::spawn(async move {
                router
                    .serve_with_incoming_shutdown(
                        TcpIncoming::from(listener).with_nodelay(Some(true)),
                        stop,
                    )
                    .await
                    .context("the gRPC server failed")
            })
        }
        GrpcListener::Unix(listener) => {
            let router = server.add_routes(routes);
            let incoming =
                UnixListenerStream::new(listener).map(|conn| conn.map(AuthorityFix::new));
            tokio::spawn(async move {
                router
                    .serve_with_incoming_shutdown(incoming, stop)
                    .await
                    .context("the gRPC server failed")
            })
        }
    })
}

enum GrpcListener {
    Tcp(tokio::net::TcpListener),
    Unix(tokio::net::UnixListener),
}

/// SIGINT and SIGTERM, listened for from creation on (create it before starting anything, so an
/// early signal is not lost to the default action).
pub struct Signals {
    term: tokio::signal::unix::Signal,
    int: tokio::signal::unix::Signal,
}

impl Signals {
    pub fn new() -> anyhow::Result<Signals> {
        use tokio::signal::unix::{signal, SignalKind};
        Ok(Signals {
            term: signal(SignalKind::terminate()).context("cannot listen for SIGTERM")?,
            int: signal(SignalKind::interrupt()).context("cannot listen for SIGINT")?,
        })
    }

    /// Resolves on the next signal, with its name.
    pub async fn recv(&mut self) -> &'static str {
        tokio::select! {
            _ = self.term.recv() => "SIGTERM",
            _ = self.int.recv() => "SIGINT",
        }
    }
}
