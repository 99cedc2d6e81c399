//! Compiles `cuzk/v1/proving.proto` with a pure-Rust protobuf compiler (no `protoc` needed)
//! and generates prost messages plus tonic client (and, with `server`, server) code.

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
        .build_server(server)
        .build_client(true)
        .build_transport(transport)
        .compile_fds(fds)?;
    Ok(())
}
