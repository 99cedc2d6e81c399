//! Binding the daemon's listeners, with errors that name the address and say what to do.

use std::io::ErrorKind;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use anyhow::{anyhow, Context};
use tokio::net::{TcpListener, UnixListener};

/// Binds a TCP listener. `what` says what it is for, `setting` how to change the address.
pub async fn bind_tcp(addr: SocketAddr, what: &str, setting: &str) -> anyhow::Result<TcpListener> {
    TcpListener::bind(addr).await.map_err(|err| {
        let why = match err.kind() {
            ErrorKind::AddrInUse => {
                "the address is already in use (is another snarkd running?): stop that process or choose a free address".to_string()
            }
            ErrorKind::PermissionDenied => {
                "permission denied: ports below 1024 need privileges, choose a higher port".to_string()
            }
            ErrorKind::AddrNotAvailable => "no interface of this machine has that address: use 127.0.0.1 or 0.0.0.0".to_string(),
            _ => format!("{err}"),
        };
        anyhow!("cannot listen for {what} on {addr}: {why} ({setting})")
    })
}

/// Binds a unix socket with permissions `mode`, replacing a stale socket file left by a daemon
/// that did not exit cleanly.
pub fn bind_unix(path: &Path, mode: u32, setting: &str) -> anyhow::Result<UnixListener> {
    let shown = path.display();
    match std::fs::symlink_metadata(path) {
        Ok(meta) => {
            use std::os::unix::fs::FileTypeExt;
            if !meta.file_type().is_socket() {
                return Err(anyhow!(
                    "cannot listen for gRPC on unix://{shown}: the path exists and is not a socket; remove it or choose another path ({setting})"
                ));
            }
            if std::os::unix::net::UnixStream::connect(path).is_ok() {
                return Err(anyhow!(
                    "cannot listen for gRPC on unix://{shown}: a running process is listening there (another snarkd?); stop it or choose another path ({setting})"
                ));
            }
            std::fs::remove_file(path)
                .with_context(|| format!("cannot remove the stale socket {shown}"))?;
        }
        Err(err) if err.kind() == ErrorKind::NotFound => {}
        Err(err) => return Err(anyhow!("cannot listen for gRPC on unix://{shown}: {err}")),
    }
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        if !parent.is_dir() {
            return Err(anyhow!(
                "cannot listen for gRPC on unix://{shown}: the directory {} does not exist; create it or choose another path ({setting})",
                parent.display()
            ));
        }
    }
    let listener = UnixListener::bind(path)
        .map_err(|err| anyhow!("cannot listen for gRPC on unix://{shown}: {err} ({setting})"))?;
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).with_context(|| {
        format!("cannot set the permissions of {shown} to {mode:o} ([daemon] socket_mode)")
    })?;
    Ok(listener)
}

/// Removes the socket file when the daemon stops.
pub struct SocketFile(pub PathBuf);

impl Drop for SocketFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}
