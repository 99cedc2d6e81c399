//! The concepts the engine, the prover, the API layer and the bench all use, defined once:
//! what a proof request is ([`ProofRequest`], [`ProofInput`]), which proof it asks for
//! ([`ProofKind`]), how urgent it is ([`Priority`]) and what its device phase reports on the way
//! ([`PhaseHooks`]). Each crate converts to and from its own
//! outside world (protobuf, the chain's registered proofs, config files) with these.
//!
//! Layout:
//! - `failure`: [`FailureClass`], whose fault a failure is.
//! - `kind`: [`ProofKind`] and its names.
//! - `priority`: [`Priority`].
//! - `request`: [`ProofRequest`] and the [`ProofInput`] it carries.
//! - `text`: [`clip`], which cuts a client's text short before it reaches a message or a log.
//! - `phase`: [`PhaseHooks`] (what a device phase tells the engine), [`panic_message`] and
//!   [`current_nice`], which the engine and the prover's steps both use.

mod failure;
mod kind;
mod phase;
mod priority;
mod request;
mod text;

#[cfg(target_os = "linux")]
pub use phase::current_nice;
pub use phase::{panic_message, PhaseHooks};

pub use failure::FailureClass;
pub use kind::{ProofKind, UnknownKind};
pub use priority::Priority;
pub use request::{
    PoRepInput, PostInput, ProofInput, ProofRequest, Registered, SnapInput, StoredInput,
};
pub use text::{clip, logged_request_id, LOGGED_REQUEST_ID_CHARS};
