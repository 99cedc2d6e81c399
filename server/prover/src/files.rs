//! Files written so that a reader sees the old one or the whole new one, never part of one.

use std::fs;
use std::io::{BufWriter, Write};
use std::path::Path;

use crate::error::{ProverError, Result};

/// Writes `path` through `f` to a temporary name, syncs it and renames it into place.
pub(crate) fn write_atomically(
    path: &Path,
    f: impl FnOnce(&mut BufWriter<fs::File>) -> std::io::Result<()>,
) -> Result<()> {
    // Unique per call, so that two threads writing the same file never share a temporary one.
    static CALLS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let call = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let tmp = path.with_extension(format!("tmp-{}-{call}", std::process::id()));
    let file = fs::File::create(&tmp).map_err(|e| ProverError::io(&tmp, e))?;
    let mut w = BufWriter::with_capacity(1 << 20, file);
    f(&mut w)
        .and_then(|_| w.flush())
        .and_then(|_| w.get_ref().sync_all())
        .map_err(|e| ProverError::io(&tmp, e))?;
    fs::rename(&tmp, path).map_err(|e| ProverError::io(path, e))
}
