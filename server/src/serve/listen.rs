//! Binding the daemon's listeners, with errors that name the address and say what to do.

use std::io::ErrorKind;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

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
    bind_with_mode(path, mode).map_err(|err| {
        anyhow!("cannot listen for gRPC on unix://{shown} with mode {mode:o}: {err:#} ({setting}, [daemon] socket_mode)")
    })
}

/// Binds the socket inside a fresh private directory (mode 0700) next to `path`, sets its mode
/// there and renames it into place, so no one ever sees it at `path` with other permissions
/// than `mode` (whatever the umask).
fn bind_with_mode(path: &Path, mode: u32) -> anyhow::Result<UnixListener> {
    use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
    let parent = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    static STAGED: AtomicU32 = AtomicU32::new(0);
    // Short names: a socket path has at most 107 bytes, and this one must fit as well.
    let private = parent.join(format!(
        ".snarkd-{}-{}",
        std::process::id(),
        STAGED.fetch_add(1, Ordering::Relaxed)
    ));
    // create() fails when the name exists (even as a symlink): the directory is ours alone.
    std::fs::DirBuilder::new()
        .mode(0o700)
        .create(&private)
        .with_context(|| format!("cannot create the directory {}", private.display()))?;
    let staged = private.join("s");
    let bound = (|| {
        let listener = UnixListener::bind(&staged)?;
        std::fs::set_permissions(&staged, std::fs::Permissions::from_mode(mode))?;
        std::fs::rename(&staged, path)?;
        Ok::<_, std::io::Error>(listener)
    })();
    let _ = std::fs::remove_file(&staged);
    let _ = std::fs::remove_dir(&private);
    Ok(bound?)
}

/// Removes the socket file when the daemon stops.
pub struct SocketFile(pub PathBuf);

impl Drop for SocketFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}
