//! The `cuzk.v1` wire contract: generated protobuf messages and tonic stubs.
//!
//! Only snarkd's API layer (`server/src/api`), the bench client and the monitor use this crate;
//! the engine works on its own domain types.
//!
//! Layout:
//! - `cuzk/v1/proving.proto`: the contract, Curio's messages plus `StreamStatus`.
//! - `build.rs`: compiles it without `protoc` and writes the descriptor set for reflection.
//! - `encoded.rs`: [`EncodedStatusSnapshot`], a StreamStatus message encoded before it is sent.

/// Messages, the `proving_engine_client` module and (with `server`) `proving_engine_server`,
/// whose StreamStatus sends [`EncodedStatusSnapshot`]s.
pub mod v1 {
    tonic::include_proto!("cuzk.v1");
    #[cfg(feature = "server")]
    include!(concat!(env!("OUT_DIR"), "/server/cuzk.v1.rs"));
}

mod encoded;

pub use encoded::EncodedStatusSnapshot;

/// The encoded `FileDescriptorSet` of the contract, for gRPC reflection.
pub const FILE_DESCRIPTOR_SET: &[u8] =
    include_bytes!(concat!(env!("OUT_DIR"), "/cuzk_descriptor.bin"));

/// Largest message either side accepts: Curio sends PoRep inputs of up to 256 MiB.
pub const MAX_MESSAGE_BYTES: usize = 256 * 1024 * 1024;
