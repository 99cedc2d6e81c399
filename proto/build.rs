//! Compiles `cuzk/v1/proving.proto` with a pure-Rust protobuf compiler (no `protoc` needed)
//! and generates prost messages plus tonic client code, and with `server` the server, whose
//! StreamStatus sends pre-encoded messages.

use std::{env, path::PathBuf};

const PROTO: &str = "cuzk/v1/proving.proto";

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("cargo:rerun-if-changed={PROTO}");
    let out = PathBuf::from(env::var("OUT_DIR")?);
    let server = env::var_os("CARGO_FEATURE_SERVER").is_some();
    let transport = env::var_os("CARGO_FEATURE_TRANSPORT").is_some();

    let fds = protox::compile([PROTO], ["."])?;
    std::fs::write(
        out.join("cuzk_descriptor.bin"),
        prost::Message::encode_to_vec(&fds),
    )?;

    tonic_prost_build::configure()
        .build_server(false)
        .build_client(true)
        .build_transport(transport)
        .compile_fds(fds.clone())?;
    if server {
        // The server on its own: every message is the one above but StreamStatus's, which it
        // sends as bytes encoded once for every stream (`EncodedStatusSnapshot`).
        let dir = out.join("server");
        std::fs::create_dir_all(&dir)?;
        tonic_prost_build::configure()
            .build_server(true)
            .build_client(false)
            .build_transport(false)
            .out_dir(&dir)
            .extern_path(".cuzk.v1", "crate::v1")
            .extern_path(".cuzk.v1.StatusSnapshot", "crate::EncodedStatusSnapshot")
            .compile_fds(fds)?;
    }
    Ok(())
}
