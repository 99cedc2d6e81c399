//! Requests and results in the engine's own terms (the API layer converts protobuf to these).

use std::fmt;
use std::time::Duration;

/// The Filecoin proofs the engine makes.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum ProofKind {
    /// PoRep commit phase 2 from a commit phase 1 output.
    PorepSealCommit,
    /// SnapDeals sector update.
    SnapDealsUpdate,
    /// One WindowPoSt partition.
    WindowPost,
    /// WinningPoSt, deadline-critical.
    WinningPost,
}

impl ProofKind {
    /// Every kind, in wire order.
    pub const ALL: [ProofKind; 4] = [
        ProofKind::PorepSealCommit,
        ProofKind::SnapDealsUpdate,
        ProofKind::WindowPost,
        ProofKind::WinningPost,
    ];

    /// The priority Curio gives this kind; used when a request leaves it unspecified.
    pub fn default_priority(self) -> Priority {
        match self {
            ProofKind::PorepSealCommit | ProofKind::SnapDealsUpdate => Priority::Normal,
            ProofKind::WindowPost => Priority::High,
            ProofKind::WinningPost => Priority::Critical,
        }
    }

    /// Short stable name, used in metrics labels, queues and the status JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            ProofKind::PorepSealCommit => "porep",
            ProofKind::SnapDealsUpdate => "snap",
            ProofKind::WindowPost => "wpost",
            ProofKind::WinningPost => "winning",
        }
    }
}

impl fmt::Display for ProofKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Scheduling priority; a higher one is admitted and proved first, and a deadline one (HIGH and
/// above) pauses a running device phase below HIGH at its next step boundary.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum Priority {
    Low,
    Normal,
    High,
    Critical,
}

impl Priority {
    pub const ALL: [Priority; 4] = [
        Priority::Low,
        Priority::Normal,
        Priority::High,
        Priority::Critical,
    ];

    /// Stable lower-case name, as stored in the job journal.
    pub fn as_str(self) -> &'static str {
        match self {
            Priority::Low => "low",
            Priority::Normal => "normal",
            Priority::High => "high",
            Priority::Critical => "critical",
        }
    }
}

/// A proof request as the engine receives it. Bytes are kept as sent; the prover decodes them once.
/// Serde is for the job journal's input files.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ProofRequest {
    /// Idempotency key; empty means "no key" (every submit is a new job).
    pub request_id: String,
    pub kind: Option<ProofKind>,
    /// Advisory: the registered proof wins when the two disagree.
    pub sector_size: u64,
    /// The chain's numbering within the kind's enum; 0 is a real value.
    pub registered_proof: u64,
    /// `None` means the kind's default priority.
    pub priority: Option<Priority>,
    #[serde(with = "serde_bytes")]
    pub vanilla_proof: Vec<u8>,
    #[serde(with = "byte_vecs")]
    pub vanilla_proofs: Vec<Vec<u8>>,
    pub sector_number: u64,
    pub miner_id: u64,
    #[serde(with = "serde_bytes")]
    pub randomness: Vec<u8>,
    pub partition_index: u32,
    #[serde(with = "serde_bytes")]
    pub comm_r_old: Vec<u8>,
    #[serde(with = "serde_bytes")]
    pub comm_r_new: Vec<u8>,
    #[serde(with = "serde_bytes")]
    pub comm_d_new: Vec<u8>,
}

/// Serde for a list of byte strings, each as bytes (one copy, not one call per byte).
pub(crate) mod byte_vecs {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(v: &[Vec<u8>], s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(v.iter().map(|b| serde_bytes::Bytes::new(b)))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Vec<u8>>, D::Error> {
        let v = Vec::<serde_bytes::ByteBuf>::deserialize(d)?;
        Ok(v.into_iter().map(serde_bytes::ByteBuf::into_vec).collect())
    }
}

impl ProofRequest {
    /// Bytes of client input the request carries (the vanilla proofs and the fixed fields),
    /// what the intake limits count while its job is unfinished.
    pub fn input_bytes(&self) -> u64 {
        let entries: usize = self.vanilla_proofs.iter().map(Vec::len).sum();
        (self.request_id.len()
            + self.vanilla_proof.len()
            + entries
            + self.randomness.len()
            + self.comm_r_old.len()
            + self.comm_r_new.len()
            + self.comm_d_new.len()) as u64
    }
}

/// The answer to a submit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Submitted {
    /// The full job id.
    pub job_id: String,
    /// Jobs ahead of this one when it was queued.
    pub queue_position: u32,
    /// True when the request id matched an existing job, which is returned instead.
    pub existing: bool,
}

/// How a job ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JobEnd {
    /// The verified proof: 192 bytes per partition, in partition order.
    Completed(Vec<u8>),
    Failed(String),
    Cancelled,
}

/// Where a job's time went. Partition steps are summed over partitions.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Timings {
    pub queue_wait: Duration,
    pub params_load: Duration,
    pub synthesis: Duration,
    pub device: Duration,
    pub total: Duration,
}

/// The result of waiting for a job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobOutcome {
    pub job_id: String,
    pub end: JobEnd,
    pub timings: Timings,
}

/// The result of a params preload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Preloaded {
    pub already_loaded: bool,
    pub load_time: Duration,
}

/// The result of a params eviction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Evicted {
    pub was_loaded: bool,
    pub freed_bytes: u64,
}
