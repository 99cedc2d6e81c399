//! [`OncePerSecond`]: a log line a client can cause (a refused request) written at most once a
//! second, with how many were held back since, so that a flood of them cannot flood the log.

use std::sync::atomic::{AtomicU64, Ordering};

/// Lets an event through when at least a second has passed since the last one it let through,
/// counting the ones it held back.
pub struct OncePerSecond {
    /// Unix milliseconds of the last event let through, plus one (0: none yet).
    last_ms: AtomicU64,
    held_back: AtomicU64,
}

impl OncePerSecond {
    pub const fn new() -> Self {
        OncePerSecond {
            last_ms: AtomicU64::new(0),
            held_back: AtomicU64::new(0),
        }
    }

    /// `Some(events held back since the last one let through)`, or `None` to hold this back.
    pub fn allow(&self) -> Option<u64> {
        let now_ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64);
        self.allow_at(now_ms)
    }

    fn allow_at(&self, now_ms: u64) -> Option<u64> {
        let last = self.last_ms.load(Ordering::Relaxed);
        let due = last == 0 || now_ms.saturating_sub(last - 1) >= 1000;
        if due
            && self
                .last_ms
                .compare_exchange(last, now_ms + 1, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
        {
            return Some(self.held_back.swap(0, Ordering::Relaxed));
        }
        self.held_back.fetch_add(1, Ordering::Relaxed);
        None
    }
}

impl Default for OncePerSecond {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_event_a_second_goes_through_with_the_count_held_back() {
        let limit = OncePerSecond::new();
        assert_eq!(limit.allow_at(5_000), Some(0));
        assert_eq!(limit.allow_at(5_001), None);
        assert_eq!(limit.allow_at(5_999), None);
        assert_eq!(limit.allow_at(6_000), Some(2));
        assert_eq!(limit.allow_at(6_500), None);
        assert_eq!(limit.allow_at(60_000), Some(1));
        // The first event at the epoch itself goes through too.
        assert_eq!(OncePerSecond::new().allow_at(0), Some(0));
    }
}
