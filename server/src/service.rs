//! Life under a service manager. With systemd's `Type=notify` (the shipped unit), snarkd says
//! READY only once its job journal is read back and both listeners are bound, answers the
//! watchdog from the async runtime (a runtime that stops turning is restarted), and says
//! STOPPING when it starts to drain. Without `NOTIFY_SOCKET` all of this does nothing.
//! [`under_journald`] tells whether stderr is a journald stream, so logs go to the journal as
//! structured entries with their priorities instead of lines all at one priority.

use std::os::fd::AsFd;
use std::os::unix::fs::MetadataExt;
use std::time::Duration;

use sd_notify::NotifyState;

/// The exit status of a configuration error (BSD's `EX_CONFIG`): the unit's
/// `RestartPreventExitStatus=78` stops systemd restarting a daemon that cannot start as
/// configured.
pub const EXIT_CONFIG: u8 = 78;

/// Tells the service manager that snarkd serves, with a status line it shows.
pub fn ready(status: &str) {
    notify(&[NotifyState::Ready, NotifyState::Status(status)]);
}

/// Tells the service manager what snarkd is doing (`systemctl status` shows it): before it
/// serves, or while it serves and its devices are still being set up.
pub fn status(status: &str) {
    notify(&[NotifyState::Status(status)]);
}

/// Tells the service manager that snarkd is draining.
pub fn stopping() {
    notify(&[
        NotifyState::Stopping,
        NotifyState::Status("draining: running proofs finish, no new ones are taken"),
    ]);
}

fn notify(states: &[NotifyState<'_>]) {
    if let Err(err) = sd_notify::notify(false, states) {
        tracing::warn!(error = %err, "could not notify the service manager");
    }
}

/// Pings the watchdog at half its interval from the async runtime, when the unit asks for one
/// (`WatchdogSec=`); a runtime blocked that long misses it and systemd restarts snarkd.
pub fn spawn_watchdog() {
    let mut usec = 0;
    if !sd_notify::watchdog_enabled(false, &mut usec) || usec == 0 {
        return;
    }
    let every = Duration::from_micros(usec) / 2;
    tracing::info!(interval = ?Duration::from_micros(usec), "systemd watchdog on");
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(every);
        loop {
            tick.tick().await;
            notify(&[NotifyState::Watchdog]);
        }
    });
}

/// Whether stderr is the journald stream systemd named in `JOURNAL_STREAM` (`device:inode`),
/// as systemd documents for telling a journal connection from a redirected one.
pub fn under_journald() -> bool {
    let Some(stream) = std::env::var_os("JOURNAL_STREAM") else {
        return false;
    };
    // stderr's own device and inode, through a duplicate of its descriptor.
    let Ok(meta) = (std::io::stderr().as_fd().try_clone_to_owned())
        .map(std::fs::File::from)
        .and_then(|f| f.metadata())
    else {
        return false;
    };
    stream.to_str().and_then(parse_stream) == Some((meta.dev(), meta.ino()))
}

fn parse_stream(text: &str) -> Option<(u64, u64)> {
    let (dev, ino) = text.split_once(':')?;
    Some((dev.parse().ok()?, ino.parse().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_journal_stream_is_a_device_and_an_inode() {
        assert_eq!(parse_stream("8:12345"), Some((8, 12345)));
        assert_eq!(parse_stream("8"), None);
        assert_eq!(parse_stream("a:1"), None);
    }
}
