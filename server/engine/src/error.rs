//! The engine's errors. Each variant has one [`FailureClass`] (whose fault it is) and the API
//! layer maps each to exactly one gRPC code (`server/src/api/error.rs`, table-tested).

pub use snarkd_types::FailureClass;

/// What can go wrong when asking the engine for something.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EngineError {
    /// The request is malformed; the message says which field and what is expected.
    #[error("invalid request: {0}")]
    InvalidRequest(String),
    /// No job with this id is known (it never existed or its retention ran out).
    #[error("unknown job id {0:?}: submit it first, or read it within the retention period after it ends")]
    UnknownJob(String),
    /// The circuit id names no parameters this daemon knows.
    #[error("unknown circuit id {0:?}: use a kind and sector size such as porep-32g, snap-32g, wpost-2k, winning-2k")]
    UnknownCircuit(String),
    /// A single partition of the job can never fit the memory budget.
    #[error("job cannot fit the memory budget: one partition needs {needed} but the budget is {budget}; raise [memory] budget or prove it elsewhere")]
    TooLarge { needed: String, budget: String },
    /// EvictSRS for params that an admitted job still uses, or that are still loading. (A job
    /// that has not been admitted yet does not hold its params; it loads them again if need be.)
    #[error(
        "params {0} are in use by a running job or still loading; evict them when those jobs end"
    )]
    ParamsInUse(String),
    /// Not enough free budget to load params now (they would not fit next to running work).
    #[error("not enough free memory to load params {circuit_id}: they need {needed} but only {free} of the budget is free; retry when jobs end or raise [memory] budget")]
    NoRoom {
        circuit_id: String,
        needed: String,
        free: String,
    },
    /// An intake limit would be exceeded; `limit` is its key in `[limits]`.
    #[error("the {limit} limit ({value}) is reached: {detail}; retry when jobs end, or raise [limits] {limit}")]
    LimitReached {
        limit: &'static str,
        value: String,
        detail: String,
    },
    /// The daemon is draining for shutdown and takes no new work.
    #[error("snarkd is shutting down and accepts no new proofs; retry against another daemon or after the restart")]
    ShuttingDown,
    /// The job journal could not be written or read, so the job cannot be made durable.
    #[error("the job journal failed: {0}; check the disk under [jobs] dir, then retry")]
    Journal(String),
    /// This machine cannot serve the request as it is set up: a parameter file is missing or
    /// unreadable. The message names the file and how to get it.
    #[error("{0}")]
    Setup(String),
    /// A bug: a panic while planning or loading, or a broken invariant. The message says where.
    #[error("internal error: {0}")]
    Internal(String),
}

impl EngineError {
    /// Whose fault it is.
    pub fn class(&self) -> FailureClass {
        match self {
            EngineError::InvalidRequest(_)
            | EngineError::UnknownJob(_)
            | EngineError::UnknownCircuit(_) => FailureClass::Input,
            // A partition larger than the whole budget never fits, whenever it is retried: the
            // operator raises the budget (or the job goes to a larger box).
            EngineError::Setup(_) | EngineError::TooLarge { .. } => FailureClass::Setup,
            EngineError::ParamsInUse(_)
            | EngineError::NoRoom { .. }
            | EngineError::LimitReached { .. }
            | EngineError::ShuttingDown
            | EngineError::Journal(_) => FailureClass::Resource,
            EngineError::Internal(_) => FailureClass::Bug,
        }
    }
}
