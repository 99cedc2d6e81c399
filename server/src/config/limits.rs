//! `[limits]`: everything a client controls has a bound here. Over a limit a request gets
//! RESOURCE_EXHAUSTED naming the key and its value.

use std::time::Duration;

use bytesize::ByteSize;
use serde::Deserialize;
use snarkd_engine::IntakeLimits;

/// `[limits]`: bounds on what clients can make the daemon hold.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LimitsSection {
    /// Unfinished (queued or running) jobs per priority.
    pub queued_jobs: usize,
    /// Input bytes (vanilla proofs, C1 outputs) of the unfinished jobs of one priority.
    pub queued_input_bytes: ByteSize,
    /// SubmitProof and Prove requests being received and decoded at once.
    pub decoding_requests: usize,
    /// More of them, kept for the deadline kinds (`<kind>_max_priority` HIGH or CRITICAL).
    pub deadline_decoding_requests: usize,
    /// How long a request's body may take to arrive, from its headers to its end.
    #[serde(with = "humantime_serde")]
    pub body_read_timeout: Duration,
    /// StreamStatus streams open at once (the monitor holds one per open page).
    pub status_streams: usize,
    /// Job ids one StreamStatus request may follow.
    pub stream_job_ids: usize,
    /// Longest `request_id`, in bytes.
    pub request_id_bytes: usize,
}

impl Default for LimitsSection {
    fn default() -> Self {
        let engine = IntakeLimits::default();
        LimitsSection {
            queued_jobs: engine.queued_jobs,
            queued_input_bytes: ByteSize::b(engine.queued_input_bytes),
            decoding_requests: 16,
            deadline_decoding_requests: 4,
            body_read_timeout: Duration::from_secs(60),
            status_streams: 64,
            stream_job_ids: 1024,
            request_id_bytes: 256,
        }
    }
}

impl LimitsSection {
    /// The engine's share of the limits.
    pub fn intake(&self) -> IntakeLimits {
        IntakeLimits {
            queued_jobs: self.queued_jobs,
            queued_input_bytes: self.queued_input_bytes.as_u64(),
        }
    }

    /// Every limit must let at least one request through.
    pub(super) fn validate(&self) -> Result<(), (String, String)> {
        let zero = [
            ("limits.queued_jobs", self.queued_jobs),
            ("limits.decoding_requests", self.decoding_requests),
            ("limits.status_streams", self.status_streams),
            ("limits.stream_job_ids", self.stream_job_ids),
            ("limits.request_id_bytes", self.request_id_bytes),
        ]
        .into_iter()
        .find(|(_, v)| *v == 0);
        if let Some((key, _)) = zero {
            return Err((
                key.to_string(),
                "must be at least 1: a limit of 0 refuses every request".to_string(),
            ));
        }
        if self.body_read_timeout.is_zero() {
            return Err((
                "limits.body_read_timeout".to_string(),
                "must be above 0: a limit of 0 refuses every request".to_string(),
            ));
        }
        if self.queued_input_bytes.as_u64() == 0 {
            return Err((
                "limits.queued_input_bytes".to_string(),
                "must be above 0: a limit of 0 refuses every request".to_string(),
            ));
        }
        Ok(())
    }
}
