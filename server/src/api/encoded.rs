//! StreamStatus messages encoded once for every stream. A message is the concatenation of two
//! protobuf encodings (a decoder sees one message: fields may come in any order and repeated
//! entries append): everything but `jobs`, which depends on the message's time (to the second:
//! uptime, ages, the summary), and the `jobs` entries, which depend only on the snapshot. Both
//! are worked out once per snapshot and second however many streams send it; a stream that
//! follows some jobs sends the slices of those jobs' entries. What a stream puts on the wire is
//! then a copy of shared bytes, so a thousand streams cost a thousand copies, not a thousand
//! encodings.

use std::collections::{HashMap, HashSet, VecDeque};
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use bytes::Bytes;
use prost::Message;
use snarkd_engine::status::JobStatus;
use snarkd_engine::StatusSnapshot;

use super::status;

/// `StatusSnapshot.jobs`.
const JOBS_FIELD: u32 = 4;
/// Snapshots (with their seconds) whose encodings are kept: streams send the newest one, so a
/// few cover every stream; a miss only costs an encoding.
const KEPT: usize = 8;

/// One StreamStatus message, as bytes on the wire: what the generated server sends.
pub use snarkd_proto::EncodedStatusSnapshot as EncodedSnapshot;

/// The encodings of the last few messages, shared by every stream of one daemon.
#[derive(Default)]
pub struct Encodings {
    recent: Mutex<VecDeque<Entry>>,
    /// The `jobs` entry of each job view of the last snapshot encoded, by the view's address
    /// (the view is held, so the address is not reused): a view the next snapshot shares is
    /// copied, not encoded again.
    entries: Mutex<HashMap<usize, (Arc<JobStatus>, Bytes)>>,
    /// Job entries encoded so far (not copied): the work a snapshot costs the streams.
    encoded: AtomicU64,
}

impl Encodings {
    /// The message for `s` as of `now_ms`, listing only `job_ids` when there are any (a set: a
    /// stream may follow up to `[limits] stream_job_ids` of them, looked up once per job).
    pub fn message(
        &self,
        s: &Arc<StatusSnapshot>,
        job_ids: &HashSet<String>,
        now_ms: u64,
    ) -> EncodedSnapshot {
        let shared = self.shared(s, now_ms);
        let mut parts = vec![shared.common];
        if job_ids.is_empty() {
            parts.push(shared.jobs.all.clone());
        } else {
            parts.extend(
                (s.jobs.iter().zip(&shared.jobs.spans))
                    .filter(|(j, _)| job_ids.contains(&j.job_id))
                    .map(|(_, span)| shared.jobs.all.slice(span.clone())),
            );
        }
        EncodedSnapshot::from_parts(parts)
    }

    /// Encoded once per snapshot and second: the first stream to ask encodes (as of its own
    /// `now_ms`), those asking meanwhile wait for it, the rest copy; the `jobs` entries are
    /// encoded once per snapshot. A snapshot is known by its address; an entry holds the
    /// snapshot, so the address cannot be reused while the entry is kept.
    fn shared(&self, s: &Arc<StatusSnapshot>, now_ms: u64) -> Shared {
        let second = now_ms / 1000;
        let (cell, jobs) = {
            let mut recent = self
                .recent
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            let same = |kept: &Arc<StatusSnapshot>| Arc::ptr_eq(kept, s);
            let jobs = recent
                .iter()
                .filter(|(kept, _, _)| same(kept))
                .find_map(|(_, _, cell)| cell.get().map(|shared| shared.jobs.clone()));
            let found = recent
                .iter()
                .find(|(kept, at, _)| same(kept) && *at == second)
                .map(|(_, _, cell)| cell.clone());
            let cell = found.unwrap_or_else(|| {
                if recent.len() == KEPT {
                    recent.pop_front();
                }
                let cell = Arc::new(OnceLock::new());
                recent.push_back((s.clone(), second, cell.clone()));
                cell
            });
            (cell, jobs)
        };
        let shared = cell.get_or_init(|| Shared {
            common: status::without_jobs(s, now_ms).encode_to_vec().into(),
            jobs: jobs.unwrap_or_else(|| Arc::new(self.jobs_of(s))),
        });
        Shared {
            common: shared.common.clone(),
            jobs: shared.jobs.clone(),
        }
    }
}

impl Encodings {
    /// The `jobs` entries of `s`: those of views the last snapshot encoded copied, the others
    /// encoded (and counted). The entries kept for the next snapshot are slices of this one's
    /// joined bytes, so each entry is held once.
    fn jobs_of(&self, s: &StatusSnapshot) -> Jobs {
        let mut entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        let mut all = Vec::new();
        let placed: Vec<(usize, Range<usize>)> = (s.jobs.iter_shared())
            .map(|view| {
                let address = Arc::as_ptr(view) as usize;
                let start = all.len();
                match entries.remove(&address) {
                    Some((_, entry)) => all.extend_from_slice(&entry),
                    None => {
                        prost::encoding::message::encode(JOBS_FIELD, &status::job(view), &mut all);
                        self.encoded.fetch_add(1, Ordering::Relaxed);
                    }
                }
                (address, start..all.len())
            })
            .collect();
        let all = Bytes::from(all);
        *entries = (s.jobs.iter_shared().zip(&placed))
            .map(|(view, (address, span))| (*address, (view.clone(), all.slice(span.clone()))))
            .collect();
        Jobs {
            all,
            spans: placed.into_iter().map(|(_, span)| span).collect(),
        }
    }

    /// Job entries encoded so far.
    #[cfg(test)]
    fn encoded(&self) -> u64 {
        self.encoded.load(Ordering::Relaxed)
    }
}

/// The message decoded, as a client sees it.
#[cfg(test)]
pub fn decode(
    message: &EncodedSnapshot,
) -> Result<snarkd_proto::v1::StatusSnapshot, prost::DecodeError> {
    snarkd_proto::v1::StatusSnapshot::decode(message.encode_to_vec().as_slice())
}

/// What every stream sending one snapshot within one second shares.
struct Shared {
    common: Bytes,
    jobs: Arc<Jobs>,
}

/// The `jobs` entries of a snapshot, each as its own field encoding, back to back.
struct Jobs {
    all: Bytes,
    /// Where each job's entry is in `all`, in the snapshot's order.
    spans: Vec<Range<usize>>,
}

/// A kept snapshot, the second its message is of, and its encodings (set by the first asker).
type Entry = (Arc<StatusSnapshot>, u64, Arc<OnceLock<Shared>>);

#[cfg(test)]
#[path = "encoded_tests.rs"]
mod tests;
