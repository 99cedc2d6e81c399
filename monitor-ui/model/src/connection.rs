//! The status stream's connection state, and how long to wait before reconnecting.

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
    /// The stream failed or ended; the next try starts after `retry_in_ms`.
    Waiting {
        attempt: u32,
        retry_in_ms: u64,
        error: String,
    },
}

impl Connection {
    /// The badge text.
    pub fn label(&self) -> String {
        match self {
            Connection::Connecting { attempt: 0 } => "connecting".to_string(),
            Connection::Connecting { attempt } => format!("reconnecting (try {})", attempt + 1),
            Connection::Live => "live".to_string(),
            Connection::Waiting {
                retry_in_ms, error, ..
            } => format!(
                "disconnected: {error}; retrying in {}",
                crate::format::duration_ms(*retry_in_ms)
            ),
        }
    }

    /// The badge's CSS class (`conn-connecting`, `conn-live`, `conn-waiting`); also what the
    /// browser tests read.
    pub fn class(&self) -> &'static str {
        match self {
            Connection::Connecting { .. } => "conn-connecting",
            Connection::Live => "conn-live",
            Connection::Waiting { .. } => "conn-waiting",
        }
    }

    /// The state after the stream failed or ended on try number `attempt`.
    pub fn failed(attempt: u32, error: impl Into<String>) -> Connection {
        Connection::Waiting {
            attempt,
            retry_in_ms: backoff_ms(attempt),
            error: error.into(),
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
    fn labels_and_classes_say_where_the_stream_stands() {
        assert_eq!(Connection::Connecting { attempt: 0 }.label(), "connecting");
        assert_eq!(
            Connection::Connecting { attempt: 2 }.label(),
            "reconnecting (try 3)"
        );
        assert_eq!(Connection::Live.class(), "conn-live");
        let failed = Connection::failed(1, "connection refused");
        assert_eq!(
            failed.label(),
            "disconnected: connection refused; retrying in 1.0 s"
        );
        assert_eq!(failed.class(), "conn-waiting");
    }
}
