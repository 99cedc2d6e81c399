//! TLS for a TCP gRPC listener (`[tls]`), through tonic's rustls support.

use std::path::Path;

use tonic::transport::{Certificate, Identity, ServerTlsConfig};

use crate::config::{ConfigError, TlsSection};

/// The server's TLS settings, or `None` for plaintext. Files are read now, so a missing one
/// fails startup naming its key.
pub fn server_config(tls: &TlsSection) -> anyhow::Result<Option<ServerTlsConfig>> {
    let (Some(cert), Some(key)) = (&tls.cert_file, &tls.key_file) else {
        return Ok(None);
    };
    let mut config = ServerTlsConfig::new().identity(Identity::from_pem(
        read(cert, "cert_file")?,
        read(key, "key_file")?,
    ));
    if let Some(ca) = &tls.client_ca_file {
        config = config.client_ca_root(Certificate::from_pem(read(ca, "client_ca_file")?));
    }
    Ok(Some(config))
}

fn read(path: &Path, key: &str) -> anyhow::Result<Vec<u8>> {
    std::fs::read(path).map_err(|e| {
        ConfigError::refused(
            &format!("tls.{key}"),
            format!(
                "cannot read {}: {e}; check the path and that snarkd's user may read it",
                path.display()
            ),
        )
        .into()
    })
}
