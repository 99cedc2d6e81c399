//! Job inputs and their digest. A request up to [`INLINE_INPUT_BYTES`] is kept in its journal
//! row; a larger one (up to the 256 MiB message limit) as one file per job,
//! `inputs/<job id>.req`, written to a temporary name, flushed to disk and renamed into place
//! (with the directory flushed too) before the job is acknowledged. The row holds the digest,
//! which recovery checks.

use std::fs::{self, File};
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

use bincode::Options;
use sha2::{Digest as _, Sha256};

use super::JournalError;
use crate::domain::{Priority, ProofInput, ProofKind, ProofRequest, StoredInput};

/// What identifies a job's input: SHA-256 over the request's [`ProofInput`] (its kind and every
/// input field; not the `request_id` and not the priority) in the journal's encoding.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct InputDigest(pub [u8; 32]);

impl InputDigest {
    /// The digest of `request`'s input: its proof kind and every input field.
    pub fn of(request: &ProofRequest) -> InputDigest {
        let mut hasher = Sha256::new();
        codec()
            .serialize_into(&mut hasher, &request.input)
            .expect("hashing never fails");
        InputDigest(hasher.finalize().into())
    }
}

/// The one encoding of inputs on disk (fixed-width integers, nothing after the request).
fn codec() -> impl Options {
    bincode::DefaultOptions::new()
        .with_fixint_encoding()
        .reject_trailing_bytes()
}

/// Marks an input file; its last byte is the format version ([`VERSION`]).
const MAGIC: &[u8; 16] = b"snarkd-input\0\0\0\x03";
/// The input format this version writes: 3, a [`ProofRequest`] in CBOR with its fields named, so
/// that an input outlives a reordering or addition of the request's fields (a new field with a
/// default reads from an older input). Still read: 2, the same request in bincode (fields by
/// position), and 1, the flat request of snarkd before `snarkd-types`; a journal upgrade
/// rewrites both as 3 (`migrate.rs`).
pub(crate) const VERSION: u8 = 3;

/// Inputs up to this size are kept in the job's journal row, so a submit costs one flush to
/// disk shared by a batch of submits; larger ones (C1 outputs, big PoSt partitions) are files.
pub const INLINE_INPUT_BYTES: u64 = 1 << 20;

/// `request` in the journal's input format.
pub fn encode(request: &ProofRequest) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(MAGIC.len() + request.input_bytes() as usize + 256);
    encode_into(&mut bytes, request).expect("writing to memory never fails");
    bytes
}

fn encode_into(out: &mut impl Write, request: &ProofRequest) -> std::io::Result<()> {
    out.write_all(MAGIC)?;
    ciborium::into_writer(request, out).map_err(std::io::Error::other)
}

/// `request` in input format 2 (bincode), as snarkd before format 3 wrote it: for tests of the
/// upgrade.
#[cfg(test)]
pub(crate) fn encode_format_2(request: &ProofRequest) -> Vec<u8> {
    let mut bytes = b"snarkd-input\0\0\0\x02".to_vec();
    codec().serialize_into(&mut bytes, request).unwrap();
    bytes
}

/// The format an encoded input is in (its magic's last byte), None when it is not one.
pub(crate) fn format_of(bytes: &[u8]) -> Option<u8> {
    (bytes.len() >= MAGIC.len() && bytes[..15] == MAGIC[..15]).then(|| bytes[15])
}

/// A request as the journal holds it: the input in its flat layout with every field it was
/// written with. Inputs stored before the kinds were split may carry fields their kind does not
/// use; the digest recorded with them covers those, so it is checked on this form, and an
/// upgrade rewrites this form, not the narrowed request.
#[derive(serde::Serialize, serde::Deserialize)]
pub(crate) struct Stored {
    request_id: String,
    priority: Option<Priority>,
    input: StoredInput,
}

impl Stored {
    /// The digest of the input as stored: [`InputDigest::of`] of what it was made from.
    pub fn digest(&self) -> InputDigest {
        let mut hasher = Sha256::new();
        codec()
            .serialize_into(&mut hasher, &self.input)
            .expect("hashing never fails");
        InputDigest(hasher.finalize().into())
    }

    pub fn kind(&self) -> ProofKind {
        self.input.kind
    }

    /// The request it holds, each kind with the fields it uses.
    pub fn into_request(self, what: &str) -> Result<ProofRequest, JournalError> {
        Ok(ProofRequest {
            request_id: self.request_id,
            priority: self.priority,
            input: ProofInput::try_from(self.input)
                .map_err(|e| JournalError::BadRecord(format!("{what}: {e}")))?,
        })
    }

    /// This form in today's input format, its bytes otherwise as they were.
    pub fn encode(&self) -> Vec<u8> {
        let mut bytes = MAGIC.to_vec();
        ciborium::into_writer(self, &mut bytes).expect("writing to memory never fails");
        bytes
    }
}

/// Decodes an input of `len` bytes read from `what` into its request; any damage is an error
/// that says so (for tests: the journal checks and rewrites the stored form).
#[cfg(test)]
pub(crate) fn decode(input: impl Read, len: u64, what: &str) -> Result<ProofRequest, JournalError> {
    decode_stored(input, len, what)?.into_request(what)
}

/// Decodes an input of `len` bytes read from `what` as it was stored.
pub(crate) fn decode_stored(
    mut input: impl Read,
    len: u64,
    what: &str,
) -> Result<Stored, JournalError> {
    let bad = JournalError::BadRecord;
    let mut magic = [0u8; 16];
    input
        .read_exact(&mut magic)
        .map_err(|e| bad(format!("{what}: {e}")))?;
    if magic[..15] != MAGIC[..15] {
        return Err(bad(format!("{what} is not a snarkd input")));
    }
    let undecodable = |e: bincode::Error| bad(format!("{what} does not decode: {e}"));
    match magic[15] {
        VERSION => {
            let mut rest = input.take(len);
            let stored: Stored = ciborium::from_reader(&mut rest)
                .map_err(|e| bad(format!("{what} does not decode: {e}")))?;
            // Nothing may follow the request (the other formats reject trailing bytes too).
            match rest.read(&mut [0u8; 1]) {
                Ok(0) => Ok(stored),
                _ => Err(bad(format!("{what} has bytes after its request"))),
            }
        }
        2 => codec()
            .with_limit(len)
            .deserialize_from(input)
            .map_err(undecodable),
        1 => codec()
            .with_limit(len)
            .deserialize_from::<_, RequestV1>(input)
            .map_err(undecodable)?
            .into_stored()
            .ok_or_else(|| bad(format!("{what} has no proof kind"))),
        newer => Err(bad(format!(
            "{what} is in input format {newer}, newer than this snarkd's ({VERSION}): run the snarkd that wrote it until its jobs end"
        ))),
    }
}

/// An input in format 1: the request's fields side by side, the kind optional.
#[derive(serde::Deserialize)]
struct RequestV1 {
    request_id: String,
    kind: Option<ProofKind>,
    sector_size: u64,
    registered_proof: u64,
    priority: Option<Priority>,
    #[serde(with = "serde_bytes")]
    vanilla_proof: Vec<u8>,
    vanilla_proofs: Vec<serde_bytes::ByteBuf>,
    sector_number: u64,
    miner_id: u64,
    #[serde(with = "serde_bytes")]
    randomness: Vec<u8>,
    partition_index: u32,
    #[serde(with = "serde_bytes")]
    comm_r_old: Vec<u8>,
    #[serde(with = "serde_bytes")]
    comm_r_new: Vec<u8>,
    #[serde(with = "serde_bytes")]
    comm_d_new: Vec<u8>,
}

impl RequestV1 {
    /// The request as today's form stores it; `None` without a kind (format 1 was only ever
    /// written for requests the API had given one).
    fn into_stored(self) -> Option<Stored> {
        let v1 = self;
        let kind = v1.kind?;
        Some(Stored {
            request_id: v1.request_id,
            priority: v1.priority,
            input: StoredInput {
                kind,
                sector_size: v1.sector_size,
                registered_proof: v1.registered_proof,
                vanilla_proof: v1.vanilla_proof,
                vanilla_proofs: v1
                    .vanilla_proofs
                    .into_iter()
                    .map(|b| b.into_vec())
                    .collect(),
                sector_number: v1.sector_number,
                miner_id: v1.miner_id,
                randomness: v1.randomness,
                partition_index: v1.partition_index,
                comm_r_old: v1.comm_r_old,
                comm_r_new: v1.comm_r_new,
                comm_d_new: v1.comm_d_new,
            },
        })
    }
}

/// The directory of input files.
#[derive(Debug, Clone)]
pub struct InputStore {
    dir: PathBuf,
}

impl InputStore {
    pub(crate) fn open(dir: PathBuf) -> std::io::Result<InputStore> {
        fs::create_dir_all(&dir)?;
        // Temporary files are inputs whose job was never acknowledged, or rewrites of an
        // upgrade cut short (the upgrade runs again on the originals).
        for entry in fs::read_dir(&dir)? {
            let path = entry?.path();
            if path
                .extension()
                .is_some_and(|e| e == "tmp" || e == "upgrade")
            {
                let _ = fs::remove_file(&path);
            }
        }
        Ok(InputStore { dir })
    }

    pub(crate) fn path(&self, job_id: &str) -> PathBuf {
        self.dir.join(format!("{job_id}.req"))
    }

    /// Writes `request` to a temporary file and flushes it to disk; [`PendingInput::commit`]
    /// puts it in place.
    pub fn write_pending(
        &self,
        job_id: &str,
        request: &ProofRequest,
    ) -> std::io::Result<PendingInput> {
        let tmp = self.dir.join(format!("{job_id}.tmp"));
        let pending = PendingInput {
            tmp,
            path: self.path(job_id),
            dir: self.dir.clone(),
            done: false,
        };
        let mut out = BufWriter::with_capacity(1 << 20, File::create(&pending.tmp)?);
        encode_into(&mut out, request)?;
        let file = out.into_inner().map_err(|e| e.into_error())?;
        file.sync_all()?;
        Ok(pending)
    }

    /// Reads a job's input file back; any damage is an error that says what is wrong.
    pub(crate) fn read(&self, job_id: &str) -> Result<Stored, JournalError> {
        let path = self.path(job_id);
        let what = path.display().to_string();
        let file = File::open(&path).map_err(JournalError::io(&path))?;
        let len = file.metadata().map_err(JournalError::io(&path))?.len();
        decode_stored(BufReader::with_capacity(1 << 20, file), len, &what)
    }

    /// Deletes a job's input (its job has ended).
    pub(crate) fn remove(&self, job_id: &str) {
        let _ = fs::remove_file(self.path(job_id));
    }

    /// Moves a job's input into `quarantine`, keeping it for a person to look at.
    pub(crate) fn quarantine(&self, job_id: &str, quarantine: &Path) -> Option<PathBuf> {
        let from = self.path(job_id);
        if !from.exists() {
            return None;
        }
        let to = quarantine.join(format!("{job_id}.req"));
        fs::create_dir_all(quarantine).ok()?;
        fs::rename(&from, &to).ok()?;
        Some(to)
    }
}

/// An input written and flushed under a temporary name; removed on drop unless committed.
#[derive(Debug)]
pub struct PendingInput {
    tmp: PathBuf,
    path: PathBuf,
    dir: PathBuf,
    done: bool,
}

impl PendingInput {
    /// Renames the file into place and flushes the directory, so it survives a crash.
    pub fn commit(mut self) -> std::io::Result<CommittedInput> {
        fs::rename(&self.tmp, &self.path)?;
        File::open(&self.dir)?.sync_all()?;
        self.done = true;
        Ok(CommittedInput {
            path: self.path.clone(),
            keep: false,
        })
    }
}

impl Drop for PendingInput {
    fn drop(&mut self) {
        if !self.done {
            let _ = fs::remove_file(&self.tmp);
        }
    }
}

/// An input in place; removed on drop unless its job was accepted ([`CommittedInput::keep`]).
#[derive(Debug)]
pub struct CommittedInput {
    path: PathBuf,
    keep: bool,
}

impl CommittedInput {
    pub fn keep(mut self) {
        self.keep = true;
    }
}

impl Drop for CommittedInput {
    fn drop(&mut self) {
        if !self.keep {
            let _ = fs::remove_file(&self.path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::journal::input_files_tests::file_names;
    use serde_bytes::Bytes;

    fn sample() -> ProofRequest {
        let post = snarkd_types::PostInput {
            registered: snarkd_types::Registered {
                registered_proof: 12,
                sector_size: 2048,
            },
            vanilla_proofs: vec![vec![1, 2, 3], vec![4]],
            miner_id: 1000,
            randomness: vec![9; 32],
        };
        ProofRequest {
            request_id: "wdpost-1000 [2]".into(),
            priority: Some(Priority::High),
            input: ProofInput::WindowPost {
                post,
                partition_index: 2,
            },
        }
    }

    #[test]
    fn an_input_reads_back_as_written() {
        let request = sample();
        let bytes = encode(&request);
        let back = decode(&bytes[..], bytes.len() as u64, "the test input").unwrap();
        assert_eq!(back, request);
    }

    #[test]
    fn format_3_names_its_fields_and_format_2_still_reads() {
        let request = sample();
        let bytes = encode(&request);
        assert_eq!(format_of(&bytes), Some(3));
        // Self-describing: the field names are in the bytes.
        let text = String::from_utf8_lossy(&bytes);
        assert!(
            text.contains("request_id") && text.contains("vanilla_proofs"),
            "{text}"
        );
        let old = encode_format_2(&request);
        assert_eq!(format_of(&old), Some(2));
        assert_eq!(
            decode(&old[..], old.len() as u64, "a format 2 input").unwrap(),
            request
        );
        let mut trailing = bytes.clone();
        trailing.push(0);
        let err = decode(&trailing[..], trailing.len() as u64, "the input").unwrap_err();
        assert!(err.to_string().contains("bytes after its request"), "{err}");
    }

    #[test]
    fn inputs_of_format_1_still_read_and_keep_their_digest() {
        let r = sample();
        let (kind, sector_size, registered_proof) = (ProofKind::WindowPost, 2048u64, 12u64);
        let vanilla = vec![Bytes::new(&[1, 2, 3]), Bytes::new(&[4])];
        let empty = Bytes::new(&[]);
        // The fields after the registered proof, in both layouts: sample()'s, those of other
        // kinds empty.
        let rest = (
            (empty, &vanilla, 0u64, 1000u64),
            (Bytes::new(&[9; 32]), 2u32),
            (empty, empty, empty),
        );
        // Format 1: the request's fields side by side, kind and priority optional.
        let v1 = (
            (
                &r.request_id,
                Some(kind),
                sector_size,
                registered_proof,
                r.priority,
            ),
            rest,
        );
        let mut bytes = b"snarkd-input\0\0\0\x01".to_vec();
        codec().serialize_into(&mut bytes, &v1).unwrap();
        let back = decode(&bytes[..], bytes.len() as u64, "a format 1 input").unwrap();
        assert_eq!(back, r);
        // The digest format 1 hashed: the kind and the input fields, in this order.
        let view = ((Some(kind), sector_size, registered_proof), rest);
        let old: [u8; 32] = Sha256::digest(codec().serialize(&view).unwrap()).into();
        assert_eq!(InputDigest::of(&back), InputDigest(old));
    }

    /// `sample()`'s input as a snarkd before the kinds were split stored it when the client also
    /// sent a sector number, which a WindowPoSt does not use.
    fn with_a_field_its_kind_does_not_use() -> Stored {
        Stored {
            request_id: "wdpost-1000 [2]".into(),
            priority: Some(Priority::High),
            input: StoredInput {
                kind: ProofKind::WindowPost,
                sector_size: 2048,
                registered_proof: 12,
                vanilla_proof: Vec::new(),
                vanilla_proofs: vec![vec![1, 2, 3], vec![4]],
                sector_number: 7,
                miner_id: 1000,
                randomness: vec![9; 32],
                partition_index: 2,
                comm_r_old: Vec::new(),
                comm_r_new: Vec::new(),
                comm_d_new: Vec::new(),
            },
        }
    }

    #[test]
    fn an_input_stored_with_a_field_its_kind_does_not_use_keeps_its_digest_and_the_field() {
        let old = with_a_field_its_kind_does_not_use();
        // What was recorded with it: every field hashed.
        let recorded = InputDigest(Sha256::digest(codec().serialize(&old.input).unwrap()).into());
        let mut format_2 = b"snarkd-input\0\0\0\x02".to_vec();
        codec().serialize_into(&mut format_2, &old).unwrap();
        for bytes in [old.encode(), format_2] {
            let stored = decode_stored(&bytes[..], bytes.len() as u64, "the input").unwrap();
            assert_eq!(stored.digest(), recorded, "format {:?}", format_of(&bytes));
            // The upgrade's rewrite keeps the field, so the digest still matches after it.
            let again = stored.encode();
            let rewritten = decode_stored(&again[..], again.len() as u64, "again").unwrap();
            assert_eq!(rewritten.digest(), recorded);
            // The request the prover gets has only its kind's fields.
            let request = rewritten.into_request("the input").unwrap();
            assert_eq!(request, sample());
            assert_ne!(InputDigest::of(&request), recorded);
        }
    }

    #[test]
    fn bytes_without_the_magic_have_no_format() {
        assert_eq!(format_of(b"snarkd-input"), None, "shorter than the magic");
        assert_eq!(format_of(&[0x5a; 64]), None, "long enough, another file");
    }

    #[test]
    fn opening_the_store_clears_what_was_never_acknowledged_and_keeps_inputs() {
        let dir = tempfile::tempdir().unwrap();
        for name in ["a.req", "b.tmp", "c.upgrade"] {
            fs::write(dir.path().join(name), b"bytes").unwrap();
        }
        let store = InputStore::open(dir.path().to_path_buf()).unwrap();
        assert_eq!(file_names(dir.path()), ["a.req"]);
        store.remove("a");
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 0, "removed");
    }

    #[test]
    fn an_input_is_in_place_only_once_committed_and_kept() {
        let dir = tempfile::tempdir().unwrap();
        let store = InputStore::open(dir.path().to_path_buf()).unwrap();
        let names = || file_names(dir.path());
        // Dropped before its commit (the submit failed): nothing stays.
        drop(store.write_pending("a", &sample()).unwrap());
        assert!(names().is_empty(), "{:?}", names());
        // Committed but its job not accepted: removed too.
        drop(
            store
                .write_pending("b", &sample())
                .unwrap()
                .commit()
                .unwrap(),
        );
        assert!(names().is_empty(), "{:?}", names());
        // Committed and kept: in place under its job id, and it reads back.
        store
            .write_pending("c", &sample())
            .unwrap()
            .commit()
            .unwrap()
            .keep();
        assert_eq!(names(), ["c.req"]);
        assert_eq!(
            store.read("c").unwrap().into_request("c").unwrap(),
            sample()
        );
    }

    #[test]
    fn an_input_of_a_newer_format_is_refused_naming_both() {
        let mut bytes = encode(&sample());
        bytes[15] = 9;
        let err = decode(&bytes[..], bytes.len() as u64, "the input")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("input format 9, newer than this snarkd's (3)"),
            "{err}"
        );
    }
}
