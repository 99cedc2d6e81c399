//! What this binary is: its version and the git commit it was built from.

/// The crate version, e.g. `0.1.0`.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// The short git commit of the build, or `unknown` when built outside a git checkout.
pub const BUILD_ID: &str = env!("SNARKD_BUILD_ID");

/// `snarkd --version` prints this after the binary name.
pub const LONG_VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (commit ",
    env!("SNARKD_BUILD_ID"),
    ")"
);
