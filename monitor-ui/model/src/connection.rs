//! The status stream's connection state, how long to wait before reconnecting, and what the page
//! says about it: a badge that tells "never reached" from "lost", a live countdown to the next
//! try, and a stale mark with the age of the last snapshot whenever the stream is not live.

use crate::format::duration_ms;

/// First wait after a failed or ended stream.
pub const BACKOFF_FIRST_MS: u64 = 500;
/// Longest wait: a daemon that comes back is seen within this.
pub const BACKOFF_MAX_MS: u64 = 10_000;

/// Where the stream to one daemon stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Connection {
    /// Opening the stream (`attempt` 0 is the first try).
    Connecting { attempt: u32 },
    /// Snapshots are arriving.
    Live,
    /// The stream failed or ended; the next try starts at `retry_at_ms` (browser clock) unless
    /// the user asks for it sooner.
    Waiting {
        attempt: u32,
        retry_at_ms: u64,
        error: String,
    },
}

impl Connection {
    /// The state after the stream failed or ended on try number `attempt` at `now_ms`.
    pub fn failed(attempt: u32, error: &str, now_ms: u64) -> Connection {
        Connection::Waiting {
            attempt,
            retry_at_ms: now_ms + backoff_ms(attempt),
            error: plain_error(error),
        }
    }
}

/// The wait before try `attempt + 1`: doubling from [`BACKOFF_FIRST_MS`], capped at
/// [`BACKOFF_MAX_MS`]. A stream that delivered snapshots resets `attempt` to 0.
pub fn backoff_ms(attempt: u32) -> u64 {
    BACKOFF_FIRST_MS
        .saturating_mul(1u64 << attempt.min(20))
        .min(BACKOFF_MAX_MS)
}

/// What the page shows about one daemon's link.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Link {
    /// The badge's CSS class, also what the browser tests read: `conn-connecting`, `conn-live`,
    /// `conn-never` (no snapshot has ever arrived) or `conn-lost` (the stream broke after some).
    pub class: &'static str,
    pub badge: String,
    /// "last update 12 s ago" whenever the stream is not live but a snapshot was shown: what
    /// the page draws is as of then.
    pub stale: Option<String>,
    /// Whether a "retry now" button makes sense (a wait is running).
    pub can_retry: bool,
}

impl Link {
    /// The link as of `now_ms`, given when the last snapshot arrived (browser clock), if ever.
    pub fn of(c: &Connection, last_snapshot_ms: Option<u64>, now_ms: u64) -> Link {
        let stale = last_snapshot_ms
            .filter(|_| *c != Connection::Live)
            .map(|at| format!("last update {} ago", duration_ms(now_ms.saturating_sub(at))));
        let (class, badge) = match c {
            Connection::Live => ("conn-live", "live".to_string()),
            Connection::Connecting { attempt: 0 } => ("conn-connecting", "connecting".to_string()),
            Connection::Connecting { attempt } => (
                "conn-connecting",
                format!("reconnecting (try {})", attempt + 1),
            ),
            Connection::Waiting {
                retry_at_ms, error, ..
            } => {
                let wait = retry_at_ms.saturating_sub(now_ms);
                let next = if wait == 0 {
                    "retrying now".to_string()
                } else {
                    // Whole seconds, rounded up, so the countdown never shows 0 while waiting.
                    format!("retrying in {} s", wait.div_ceil(1000))
                };
                match last_snapshot_ms {
                    None => (
                        "conn-never",
                        format!("cannot reach the daemon: {error}; {next}"),
                    ),
                    Some(_) => ("conn-lost", format!("connection lost: {error}; {next}")),
                }
            }
        };
        Link {
            class,
            badge,
            stale,
            can_retry: matches!(c, Connection::Waiting { .. }),
        }
    }
}

/// A stream error as a person reads it: the browser's fetch failures say nothing of where the
/// fault is, so they become what they usually mean.
pub fn plain_error(raw: &str) -> String {
    let raw = raw.trim();
    let lower = raw.to_lowercase();
    if [
        "failed to fetch",
        "networkerror",
        "load failed",
        "network error",
    ]
    .iter()
    .any(|s| lower.contains(s))
    {
        return "no answer (is the daemon running and the tunnel up?)".to_string();
    }
    if lower.contains("shutting down") {
        return "the daemon is shutting down".to_string();
    }
    raw.trim_start_matches("JS API error:")
        .trim_start()
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_then_stays_at_the_cap() {
        let waits: Vec<u64> = (0..8).map(backoff_ms).collect();
        assert_eq!(
            waits,
            [500, 1_000, 2_000, 4_000, 8_000, 10_000, 10_000, 10_000]
        );
        assert_eq!(backoff_ms(u32::MAX), BACKOFF_MAX_MS);
    }

    #[test]
    fn the_badge_tells_never_reached_from_lost_and_counts_down() {
        let connecting = Link::of(&Connection::Connecting { attempt: 0 }, None, 0);
        assert_eq!(
            (connecting.class, connecting.badge.as_str()),
            ("conn-connecting", "connecting")
        );
        assert_eq!(
            Link::of(&Connection::Connecting { attempt: 2 }, Some(0), 0).badge,
            "reconnecting (try 3)"
        );
        let live = Link::of(&Connection::Live, Some(1_000), 9_000);
        assert_eq!(
            (live.class, live.stale, live.can_retry),
            ("conn-live", None, false)
        );

        let failed = Connection::failed(2, "JS API error: TypeError: Failed to fetch", 10_000);
        let never = Link::of(&failed, None, 10_000);
        assert_eq!(never.class, "conn-never");
        assert_eq!(
            never.badge,
            "cannot reach the daemon: no answer (is the daemon running and the tunnel up?); \
             retrying in 2 s"
        );
        assert!(never.can_retry && never.stale.is_none());

        let lost = Link::of(&failed, Some(4_000), 11_500);
        assert_eq!(lost.class, "conn-lost");
        assert!(lost.badge.ends_with("retrying in 1 s"), "{}", lost.badge);
        assert_eq!(lost.stale.as_deref(), Some("last update 7.5 s ago"));
        assert!(Link::of(&failed, Some(4_000), 12_000)
            .badge
            .ends_with("retrying now"));
    }

    #[test]
    fn errors_read_as_what_they_mean() {
        assert_eq!(
            plain_error("the daemon ended the stream"),
            "the daemon ended the stream"
        );
        assert_eq!(
            plain_error("snarkd is shutting down: reconnect to the restarted daemon"),
            "the daemon is shutting down"
        );
        assert_eq!(plain_error("JS API error: something odd"), "something odd");
        assert!(
            plain_error("NetworkError when attempting to fetch resource.").starts_with("no answer")
        );
    }
}
