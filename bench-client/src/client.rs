//! The gRPC connection: `http://host:port` over TCP, `unix:///path` over a Unix socket.

use std::time::Duration;

use anyhow::{bail, Context, Result};
use hyper_util::rt::TokioIo;
use snarkd_proto::v1::proving_engine_client::ProvingEngineClient;
use snarkd_proto::MAX_MESSAGE_BYTES;
use tonic::transport::{Channel, Endpoint, Uri};

pub type Client = ProvingEngineClient<Channel>;

/// Connects to the daemon at `addr`, with the same message limits as Curio's client.
pub async fn connect(addr: &str) -> Result<Client> {
    let channel = if let Some(path) = addr.strip_prefix("unix://") {
        if path.is_empty() {
            bail!("--addr {addr:?}: a unix address needs a path, e.g. unix:///run/snarkd.sock");
        }
        let path = path.to_string();
        // The URI is a placeholder: the connector ignores it and dials the socket.
        Endpoint::from_static("http://localhost")
            .connect_timeout(Duration::from_secs(5))
            .connect_with_connector(tower::service_fn(move |_: Uri| {
                let path = path.clone();
                async move {
                    let stream = tokio::net::UnixStream::connect(path).await?;
                    Ok::<_, std::io::Error>(TokioIo::new(stream))
                }
            }))
            .await
    } else if addr.starts_with("http://") || addr.starts_with("https://") {
        Endpoint::from_shared(addr.to_string())
            .with_context(|| format!("--addr {addr:?} is not a valid URL"))?
            .connect_timeout(Duration::from_secs(5))
            .connect()
            .await
    } else {
        bail!("--addr {addr:?}: use http://host:port or unix:///path");
    }
    .with_context(|| format!("cannot connect to snarkd at {addr} (is the daemon running?)"))?;
    Ok(ProvingEngineClient::new(channel)
        .max_decoding_message_size(MAX_MESSAGE_BYTES)
        .max_encoding_message_size(2 * MAX_MESSAGE_BYTES))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn bad_addresses_are_named() {
        let e = connect("127.0.0.1:9820").await.unwrap_err().to_string();
        assert!(e.contains("use http://host:port or unix:///path"), "{e}");
        let e = connect("unix://").await.unwrap_err().to_string();
        assert!(e.contains("needs a path"), "{e}");
    }

    #[tokio::test]
    async fn a_missing_socket_fails_to_connect() {
        let e = connect("unix:///nonexistent/snarkd.sock")
            .await
            .unwrap_err();
        assert!(format!("{e:#}").contains("cannot connect"), "{e:#}");
    }
}
