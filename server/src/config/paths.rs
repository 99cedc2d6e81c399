//! Where snarkd keeps what it writes, and where it finds its monitor, when the config does not
//! say. Under systemd (`StateDirectory=snarkd`) the state directory is the one systemd made and
//! names in `STATE_DIRECTORY`; run by root otherwise, `/var/lib/snarkd`; run by anyone else,
//! their XDG state directory (`$XDG_STATE_HOME/snarkd`, else `~/.local/state/snarkd`). The job
//! journal (`jobs/`) and the pre-compiled circuits (`precompiled/`) live there, so the service
//! writes only into a directory it owns, never into a shared params cache or an aged `/var/tmp`.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// The system-wide state directory, for root and for the packaged service.
pub const SYSTEM_STATE_DIR: &str = "/var/lib/snarkd";

/// The monitor's place in an installed tree, relative to the binary's directory
/// (`/usr/local/bin/snarkd` → `/usr/local/share/snarkd/monitor`).
pub const INSTALLED_MONITOR: &str = "../share/snarkd/monitor";

/// The monitor as `scripts/build.sh` leaves it in a checkout, relative to where snarkd starts.
pub const CHECKOUT_MONITOR: &str = "monitor-ui/dist";

/// This process's state directory (see the module docs).
pub fn state_dir() -> PathBuf {
    // SAFETY: geteuid has no preconditions and cannot fail.
    let root = unsafe { libc::geteuid() } == 0;
    state_dir_from(|name| std::env::var_os(name), root)
}

/// [`state_dir`] with the environment as a lookup and whether the process runs as root.
pub fn state_dir_from(env: impl Fn(&str) -> Option<OsString>, root: bool) -> PathBuf {
    let set = |name: &str| env(name).filter(|v| !v.is_empty());
    // systemd joins several StateDirectory= entries with ':'; snarkd's is the first.
    if let Some(dirs) = set("STATE_DIRECTORY") {
        if let Some(first) = std::env::split_paths(&dirs).next() {
            return first;
        }
    }
    if root {
        return PathBuf::from(SYSTEM_STATE_DIR);
    }
    if let Some(xdg) = set("XDG_STATE_HOME").map(PathBuf::from) {
        if xdg.is_absolute() {
            return xdg.join("snarkd");
        }
    }
    match set("HOME") {
        Some(home) => Path::new(&home).join(".local/state/snarkd"),
        None => PathBuf::from(SYSTEM_STATE_DIR),
    }
}

/// The monitor's directory when `[daemon] monitor_dir` is unset: the installed copy beside the
/// binary when it holds an `index.html`, else a checkout's build.
pub fn default_monitor_dir() -> PathBuf {
    let installed = std::env::current_exe()
        .ok()
        .and_then(|exe| Some(exe.parent()?.join(INSTALLED_MONITOR)));
    monitor_dir_from(installed)
}

/// [`default_monitor_dir`] given where the installed copy would be.
pub fn monitor_dir_from(installed: Option<PathBuf>) -> PathBuf {
    match installed {
        Some(dir) if dir.join("index.html").is_file() => dir,
        _ => PathBuf::from(CHECKOUT_MONITOR),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<OsString> + 'a {
        move |name| {
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| OsString::from(v))
        }
    }

    #[test]
    fn the_state_dir_is_systemds_then_roots_then_the_users() {
        let systemd = [
            ("STATE_DIRECTORY", "/var/lib/snarkd:/var/lib/other"),
            ("HOME", "/home/a"),
        ];
        assert_eq!(
            state_dir_from(env(&systemd), false),
            PathBuf::from("/var/lib/snarkd")
        );
        assert_eq!(
            state_dir_from(env(&[("HOME", "/root")]), true),
            PathBuf::from(SYSTEM_STATE_DIR)
        );
        let xdg = [("XDG_STATE_HOME", "/home/a/state"), ("HOME", "/home/a")];
        assert_eq!(
            state_dir_from(env(&xdg), false),
            PathBuf::from("/home/a/state/snarkd")
        );
        // A relative XDG_STATE_HOME is invalid by the spec and ignored.
        let relative = [("XDG_STATE_HOME", "state"), ("HOME", "/home/a")];
        assert_eq!(
            state_dir_from(env(&relative), false),
            PathBuf::from("/home/a/.local/state/snarkd")
        );
        assert_eq!(
            state_dir_from(env(&[]), false),
            PathBuf::from(SYSTEM_STATE_DIR)
        );
    }

    #[test]
    fn the_monitor_is_the_installed_copy_when_it_is_built_else_the_checkouts() {
        let dir = tempfile::tempdir().unwrap();
        let installed = dir.path().join("share/snarkd/monitor");
        assert_eq!(
            monitor_dir_from(Some(installed.clone())),
            PathBuf::from(CHECKOUT_MONITOR)
        );
        std::fs::create_dir_all(&installed).unwrap();
        std::fs::write(installed.join("index.html"), "<html>").unwrap();
        assert_eq!(monitor_dir_from(Some(installed.clone())), installed);
        assert_eq!(monitor_dir_from(None), PathBuf::from(CHECKOUT_MONITOR));
    }
}
