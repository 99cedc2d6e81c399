//! Records the git commit the binary is built from as `SNARKD_BUILD_ID` ("unknown" outside a
//! checkout or without git), for `snarkd --version` and the status feed. A `SNARKD_BUILD_ID` in
//! the build's environment wins: image builds pass the commit in, having no `.git`.

use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    if !out.status.success() {
        return None;
    }
    let text = String::from_utf8(out.stdout).ok()?.trim().to_string();
    (!text.is_empty()).then_some(text)
}

fn main() {
    println!("cargo:rerun-if-env-changed=SNARKD_BUILD_ID");
    let commit = std::env::var("SNARKD_BUILD_ID")
        .ok()
        .filter(|id| !id.trim().is_empty())
        .or_else(|| git(&["rev-parse", "--short=12", "HEAD"]))
        .unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=SNARKD_BUILD_ID={commit}");
    // Rebuild when HEAD moves: the ref file of the current branch changes on every commit.
    // Only files that exist are watched: cargo counts a missing one as changed on every build,
    // which would rebuild snarkd each time (a fresh clone often has no packed-refs, or keeps the
    // branch only in packed-refs).
    if let Some(git_dir) = git(&["rev-parse", "--git-dir"]) {
        let mut watched = vec![format!("{git_dir}/HEAD"), format!("{git_dir}/packed-refs")];
        if let Some(head_ref) = git(&["symbolic-ref", "-q", "HEAD"]) {
            watched.push(format!("{git_dir}/{head_ref}"));
        }
        for path in watched.iter().filter(|p| std::path::Path::new(p).exists()) {
            println!("cargo:rerun-if-changed={path}");
        }
    }
    println!("cargo:rerun-if-changed=build.rs");
}
