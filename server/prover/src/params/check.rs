//! Parameter files checked against the digests filecoin-proofs publishes for them (its
//! `parameters.json`, compiled into `storage-proofs-core`): BLAKE2b-512 of the whole file, the
//! first 32 hex digits, as `paramfetch` and `curio fetch-params` check them. Local test
//! parameters (`snarkd params generate`) are not in the manifest; their generator leaves a
//! `<stem>.snarkd-test` record of their digests, so they are reported as a local test set, not
//! as corrupt. Hashing a 32 GiB PoRep's 44 GiB file takes minutes: digests are kept in a
//! [`DigestCache`] by path, length and modification time, and a file is read again only when
//! one of them changes.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

use serde::{Deserialize, Serialize};
use storage_proofs_core::parameter_cache::PARAMETERS;

use super::params_paths;
use crate::circuit::CircuitId;
use crate::error::{ProverError, Result};

/// What one parameter or verifying-key file is.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "verdict")]
pub enum Verdict {
    /// Its digest is the published one.
    Published,
    /// Made by `snarkd params generate`: verifies only against its own `.vk`, never on chain.
    LocalTest,
    /// Not there.
    Missing,
    /// Its digest is neither the published one nor a local test set's: truncated, damaged or
    /// from elsewhere.
    Mismatch { expected: String, found: String },
    /// Could not be read.
    Unreadable { reason: String },
}

impl Verdict {
    /// Whether a proof made with this file is accepted on chain.
    pub fn is_published(&self) -> bool {
        matches!(self, Verdict::Published)
    }

    /// Whether the file is there and is what it claims to be (published or a local test set).
    pub fn is_sound(&self) -> bool {
        matches!(self, Verdict::Published | Verdict::LocalTest)
    }

    /// A few words for a table or the startup summary.
    pub fn describe(&self) -> String {
        match self {
            Verdict::Published => "published (digest matches)".into(),
            Verdict::LocalTest => "local test set (verifies only against its own .vk)".into(),
            Verdict::Missing => "missing".into(),
            Verdict::Mismatch { expected, found } => {
                format!("MISMATCH: digest {found}, published {expected} (truncated or damaged: fetch it again)")
            }
            Verdict::Unreadable { reason } => format!("unreadable: {reason}"),
        }
    }
}

/// One file's check.
#[derive(Clone, Debug, Serialize)]
pub struct FileCheck {
    pub path: PathBuf,
    #[serde(flatten)]
    pub verdict: Verdict,
}

/// A circuit's two files.
#[derive(Clone, Debug, Serialize)]
pub struct CircuitCheck {
    pub circuit: String,
    pub params: FileCheck,
    pub vk: FileCheck,
}

impl CircuitCheck {
    /// The worse of the two verdicts, for one line per circuit.
    pub fn summary(&self) -> &Verdict {
        let rank = |v: &Verdict| match v {
            Verdict::Published => 0,
            Verdict::LocalTest => 1,
            Verdict::Missing => 2,
            Verdict::Unreadable { .. } => 3,
            Verdict::Mismatch { .. } => 4,
        };
        if rank(&self.vk.verdict) > rank(&self.params.verdict) {
            &self.vk.verdict
        } else {
            &self.params.verdict
        }
    }
}

/// The published digest of a file name, if filecoin-proofs publishes one.
pub fn published_digest(file_name: &str) -> Option<&'static str> {
    PARAMETERS.get(file_name).map(|d| d.digest.as_str())
}

/// The manifest's digest of `path`'s contents: BLAKE2b-512, first 32 hex digits.
pub fn file_digest(path: &Path) -> std::io::Result<String> {
    let mut file = File::open(path)?;
    let mut state = blake2b_simd::State::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            break;
        }
        state.update(&buf[..n]);
    }
    Ok(state.finalize().to_hex()[..32].to_string())
}

/// The record `snarkd params generate` leaves beside a local test set.
fn local_record_path(dir: &Path, circuit: CircuitId) -> PathBuf {
    dir.join(format!("{}.snarkd-test", circuit.params_file_stem()))
}

#[derive(Serialize, Deserialize, Default)]
struct LocalRecord {
    params: String,
    vk: String,
}

/// Writes the local-test record of `circuit`'s freshly generated files in `dir`.
pub(crate) fn record_local_test_set(dir: &Path, circuit: CircuitId) -> Result<()> {
    let (params, vk) = params_paths(dir, circuit);
    let digest = |p: &Path| file_digest(p).map_err(|e| ProverError::io(p, e));
    let record = LocalRecord {
        params: digest(&params)?,
        vk: digest(&vk)?,
    };
    let path = local_record_path(dir, circuit);
    crate::files::write_atomically(&path, |w| {
        serde_json::to_writer(w, &record).map_err(std::io::Error::other)
    })
}

/// Digests already computed, by path, length and modification time.
#[derive(Default, Serialize, Deserialize)]
pub struct DigestCache {
    entries: BTreeMap<PathBuf, CachedDigest>,
}

#[derive(Clone, Serialize, Deserialize, PartialEq, Eq)]
struct CachedDigest {
    len: u64,
    modified_ns: u128,
    digest: String,
}

impl DigestCache {
    /// The cache kept in `path`; empty when it is missing or unreadable.
    pub fn load(path: &Path) -> DigestCache {
        std::fs::read(path)
            .ok()
            .and_then(|bytes| serde_json::from_slice(&bytes).ok())
            .unwrap_or_default()
    }

    /// Saves the cache to `path` (best effort: a cache that cannot be written is recomputed).
    pub fn save(&self, path: &Path) -> std::io::Result<()> {
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        crate::files::write_atomically(path, |w| {
            serde_json::to_writer(w, self).map_err(std::io::Error::other)
        })
        .map_err(|e| std::io::Error::other(e.to_string()))
    }

    /// `path`'s digest, from the cache when its length and modification time are unchanged.
    pub fn digest(&mut self, path: &Path) -> std::io::Result<String> {
        let meta = std::fs::metadata(path)?;
        let modified_ns = meta
            .modified()?
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        if let Some(c) = self.entries.get(path) {
            if c.len == meta.len() && c.modified_ns == modified_ns {
                return Ok(c.digest.clone());
            }
        }
        let digest = file_digest(path)?;
        self.entries.insert(
            path.to_path_buf(),
            CachedDigest {
                len: meta.len(),
                modified_ns,
                digest: digest.clone(),
            },
        );
        Ok(digest)
    }
}

/// Checks `circuit`'s parameter and verifying-key files in `dir` against filecoin-proofs'
/// published digests.
pub fn check_circuit(dir: &Path, circuit: CircuitId, cache: &mut DigestCache) -> CircuitCheck {
    check_circuit_against(dir, circuit, cache, &|name| {
        published_digest(name).map(str::to_string)
    })
}

/// [`check_circuit`] against `manifest`, which gives a file name's published digest.
pub fn check_circuit_against(
    dir: &Path,
    circuit: CircuitId,
    cache: &mut DigestCache,
    manifest: &dyn Fn(&str) -> Option<String>,
) -> CircuitCheck {
    let (params, vk) = params_paths(dir, circuit);
    let local: Option<LocalRecord> = std::fs::read(local_record_path(dir, circuit))
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok());
    let check = |path: PathBuf, local: Option<&str>, cache: &mut DigestCache| {
        let verdict = check_file(&path, local, cache, manifest);
        FileCheck { path, verdict }
    };
    CircuitCheck {
        circuit: circuit.to_string(),
        params: check(params, local.as_ref().map(|l| l.params.as_str()), cache),
        vk: check(vk, local.as_ref().map(|l| l.vk.as_str()), cache),
    }
}

fn check_file(
    path: &Path,
    local: Option<&str>,
    cache: &mut DigestCache,
    manifest: &dyn Fn(&str) -> Option<String>,
) -> Verdict {
    if !path.exists() {
        return Verdict::Missing;
    }
    let found = match cache.digest(path) {
        Ok(d) => d,
        Err(e) => {
            return Verdict::Unreadable {
                reason: e.to_string(),
            }
        }
    };
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default();
    let expected = manifest(name);
    if expected.as_deref() == Some(found.as_str()) {
        Verdict::Published
    } else if local == Some(found.as_str()) {
        Verdict::LocalTest
    } else {
        Verdict::Mismatch {
            expected: expected.unwrap_or_else(|| "none (not a published file name)".into()),
            found,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_digest_is_blake2b_512_cut_to_32_hex_digits() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, b"abc").unwrap();
        // RFC 7693 appendix A: BLAKE2b-512("abc") begins ba80a53f981c4d0d6a2797b69f12f6e9.
        assert_eq!(
            file_digest(&path).unwrap(),
            "ba80a53f981c4d0d6a2797b69f12f6e9"
        );
    }

    #[test]
    fn the_manifest_knows_the_32_gib_porep_files() {
        let porep = CircuitId::new(crate::circuit::ProofKind::PorepSealCommit, 32 << 30).unwrap();
        let (params, vk) = params_paths(Path::new("/"), porep);
        for path in [params, vk] {
            let name = path.file_name().unwrap().to_str().unwrap();
            let digest = published_digest(name).unwrap_or_else(|| panic!("{name} published"));
            assert_eq!(digest.len(), 32);
        }
    }

    #[test]
    fn a_published_file_passes_and_a_truncated_or_foreign_one_does_not() {
        let dir = tempfile::tempdir().unwrap();
        let winning = CircuitId::new(crate::circuit::ProofKind::WinningPost, 2 << 10).unwrap();
        let (params, vk) = params_paths(dir.path(), winning);
        // Stand-ins for published files: the manifest here is made from their digests.
        std::fs::write(&params, vec![7u8; 100_000]).unwrap();
        std::fs::write(&vk, vec![9u8; 1_000]).unwrap();
        let published: BTreeMap<String, String> = [&params, &vk]
            .iter()
            .map(|p| {
                let name = p.file_name().unwrap().to_str().unwrap().to_string();
                (name, file_digest(p).unwrap())
            })
            .collect();
        let manifest = |name: &str| published.get(name).cloned();
        let mut cache = DigestCache::default();
        let check = check_circuit_against(dir.path(), winning, &mut cache, &manifest);
        assert_eq!(
            (&check.params.verdict, &check.vk.verdict),
            (&Verdict::Published, &Verdict::Published)
        );
        assert!(check.summary().is_published());

        std::fs::write(&params, vec![7u8; 50_000]).unwrap(); // truncated
        std::fs::write(&vk, vec![1u8; 1_000]).unwrap(); // another file under its name
        let check = check_circuit_against(dir.path(), winning, &mut cache, &manifest);
        for (f, expected) in [
            (&check.params, &published[&name(&params)]),
            (&check.vk, &published[&name(&vk)]),
        ] {
            match &f.verdict {
                Verdict::Mismatch { expected: e, found } => {
                    assert_eq!(e, expected);
                    assert_ne!(found, expected);
                }
                other => panic!("{}: {other:?}", f.path.display()),
            }
        }
        std::fs::remove_file(&vk).unwrap();
        let check = check_circuit_against(dir.path(), winning, &mut cache, &manifest);
        assert_eq!(check.vk.verdict, Verdict::Missing);
        assert!(
            matches!(check.summary(), Verdict::Mismatch { .. }),
            "the worse of the two"
        );
    }

    fn name(p: &Path) -> String {
        p.file_name().unwrap().to_str().unwrap().to_string()
    }

    #[test]
    fn a_cached_digest_is_reused_until_the_file_changes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, b"abc").unwrap();
        let mut cache = DigestCache::default();
        let first = cache.digest(&path).unwrap();
        // A forged entry with the file's length and time is believed: no read.
        cache.entries.get_mut(&path).unwrap().digest = "cached".into();
        assert_eq!(cache.digest(&path).unwrap(), "cached");
        std::fs::write(&path, b"abcd").unwrap();
        assert_ne!(
            cache.digest(&path).unwrap(),
            "cached",
            "length changed: read again"
        );
        let saved = dir.path().join("cache.json");
        cache.save(&saved).unwrap();
        let mut loaded = DigestCache::load(&saved);
        assert_eq!(loaded.digest(&path).unwrap(), cache.digest(&path).unwrap());
        assert_ne!(first, loaded.digest(&path).unwrap());
    }
}
