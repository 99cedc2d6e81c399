//! Compiled kernel binaries kept between processes, so that only the first start on a machine
//! (or after a driver or snarkd upgrade) compiles the program from source.
//!
//! A binary is found by its [`CacheKey`]: a SHA-256 over the whole program source, the build
//! options, the platform (name and version) and the device (name, OpenCL version, driver
//! version). Anything that would make a compiled binary wrong for this device changes the key,
//! so a stale file is never found, only left behind. Identical devices share a key: the first
//! to get here builds, the others wait for it and load what it built (from memory, or from the
//! file).
//!
//! A file is `MAGIC`, the SHA-256 of the binary, then the binary. One whose digest does not
//! match (truncated, damaged) or that the driver refuses is logged and rebuilt from source;
//! neither is ever fatal. Files are written under a temporary name and renamed into place, so a
//! reader never sees half of one.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use sha2::{Digest, Sha256};

use super::device::OpenClDevice;

const MAGIC: &[u8; 16] = b"snarkd-kernels-1";

/// What identifies a compiled program: see the module's documentation.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct CacheKey(String);

impl CacheKey {
    pub fn new(device: &OpenClDevice, source: &str, options: &str) -> CacheKey {
        let d = &device.device;
        let text = |r: opencl3::Result<String>| r.unwrap_or_default();
        let platform = d
            .platform()
            .map(opencl3::platform::Platform::new)
            .map(|p| format!("{} {}", text(p.name()), text(p.version())))
            .unwrap_or_default();
        // ec-gpu-gen emits its pieces (fields, FFT, multiexps) in a HashSet's order, which differs
        // from one process to the next: the key is over the source's lines in sorted order, the
        // same for every ordering of the same pieces, and changed by any change to a line.
        let mut lines: Vec<&str> = source.lines().collect();
        lines.sort_unstable();
        let canonical = lines.join("\n");
        let mut h = Sha256::new();
        for part in [
            &canonical[..],
            options,
            &platform,
            &text(d.name()),
            &text(d.version()),
            &text(d.driver_version()),
        ] {
            h.update((part.len() as u64).to_le_bytes());
            h.update(part.as_bytes());
        }
        CacheKey(
            h.finalize()
                .iter()
                .take(16)
                .map(|b| format!("{b:02x}"))
                .collect(),
        )
    }

    /// The file name of the key's binary.
    pub fn file_name(&self) -> String {
        format!("{}.clbin", self.0)
    }
}

/// One key's slot: held while a device of that key builds or loads, and the binary once known.
pub type Slot = Arc<Mutex<Option<Arc<Vec<u8>>>>>;

/// The slot of `key`, shared by every device of this process with that key.
pub fn slot(key: &CacheKey) -> Slot {
    static SLOTS: Mutex<Option<HashMap<CacheKey, Slot>>> = Mutex::new(None);
    let mut slots = SLOTS.lock().unwrap_or_else(|p| p.into_inner());
    Arc::clone(
        slots
            .get_or_insert_with(HashMap::new)
            .entry(key.clone())
            .or_default(),
    )
}

/// Why a cached binary was not used.
#[derive(Debug, thiserror::Error)]
pub enum Unusable {
    #[error("no cached binary")]
    Missing,
    #[error("{0}")]
    Unreadable(std::io::Error),
    #[error("the file's digest does not match its binary (truncated or damaged)")]
    Damaged,
}

/// The binary kept for `key` in `dir`.
pub fn read(dir: &Path, key: &CacheKey) -> Result<Vec<u8>, Unusable> {
    let bytes = match std::fs::read(dir.join(key.file_name())) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(Unusable::Missing),
        Err(e) => return Err(Unusable::Unreadable(e)),
    };
    let header = MAGIC.len() + 32;
    if bytes.len() <= header || &bytes[..MAGIC.len()] != MAGIC {
        return Err(Unusable::Damaged);
    }
    let binary = &bytes[header..];
    if Sha256::digest(binary).as_slice() != &bytes[MAGIC.len()..header] {
        return Err(Unusable::Damaged);
    }
    Ok(binary.to_vec())
}

/// Keeps `binary` for `key` in `dir` (created if needed). Returns the file written.
pub fn write(dir: &Path, key: &CacheKey, binary: &[u8]) -> std::io::Result<PathBuf> {
    std::fs::create_dir_all(dir)?;
    let path = dir.join(key.file_name());
    let tmp = dir.join(format!(".{}.{}", key.file_name(), std::process::id()));
    let mut bytes = Vec::with_capacity(MAGIC.len() + 32 + binary.len());
    bytes.extend_from_slice(MAGIC);
    bytes.extend_from_slice(&Sha256::digest(binary));
    bytes.extend_from_slice(binary);
    std::fs::write(&tmp, &bytes)?;
    std::fs::rename(&tmp, &path)?;
    Ok(path)
}

/// Removes `key`'s file (one the driver refused), if there is one.
pub fn forget(dir: &Path, key: &CacheKey) {
    let _ = std::fs::remove_file(dir.join(key.file_name()));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kept_binary_reads_back_and_a_damaged_one_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let key = CacheKey("00ff".into());
        assert!(matches!(read(dir.path(), &key), Err(Unusable::Missing)));
        let path = write(dir.path(), &key, b"compiled program").unwrap();
        assert_eq!(read(dir.path(), &key).unwrap(), b"compiled program");

        let mut bytes = std::fs::read(&path).unwrap();
        *bytes.last_mut().unwrap() ^= 1;
        std::fs::write(&path, &bytes).unwrap();
        assert!(matches!(read(dir.path(), &key), Err(Unusable::Damaged)));
        std::fs::write(&path, &bytes[..20]).unwrap();
        assert!(matches!(read(dir.path(), &key), Err(Unusable::Damaged)));
        forget(dir.path(), &key);
        assert!(matches!(read(dir.path(), &key), Err(Unusable::Missing)));
    }
}
