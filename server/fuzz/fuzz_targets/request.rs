//! Wire bytes → `SubmitProofRequest` / `ProveRequest` (prost) → the API's request conversion,
//! which checks kind, priority, required fields and lengths. Must return, never panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use prost::Message;
use snarkd::api::request::{proof_request, prove_request};
use snarkd_proto::v1::{ProveRequest, SubmitProofRequest};

fuzz_target!(|data: &[u8]| {
    // The same bytes as both messages: a Prove call carries a Submit in field 1, so a seed of
    // either kind exercises the other's decoder too.
    if let Ok(req) = SubmitProofRequest::decode(data) {
        let _ = proof_request(req);
    }
    if let Ok(req) = ProveRequest::decode(data) {
        let _ = prove_request(req);
    }
});
