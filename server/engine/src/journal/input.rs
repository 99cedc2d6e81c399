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

use crate::domain::{Priority, ProofInput, ProofKind, ProofRequest};

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

    pub fn hex(&self) -> String {
        hex::encode(self.0)
    }
}

/// The one encoding of inputs on disk (fixed-width integers, nothing after the request).
fn codec() -> impl Options {
    bincode::DefaultOptions::new()
        .with_fixint_encoding()
        .reject_trailing_bytes()
}

/// Marks an input file; its last byte is the format version ([`VERSION`]).
const MAGIC: &[u8; 16] = b"snarkd-input\0\0\0\x02";
/// The input format this version writes: 2, a [`ProofRequest`] (its id, its priority, then its
/// [`ProofInput`]). Version 1, the flat request of snarkd before `snarkd-types`, is still read.
const VERSION: u8 = 2;

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
    codec()
        .serialize_into(out, request)
        .map_err(std::io::Error::other)
}

/// Decodes an input of `len` bytes read from `what`; any damage is an error that says so.
pub(crate) fn decode(mut input: impl Read, len: u64, what: &str) -> Result<ProofRequest, String> {
    let mut magic = [0u8; 16];
    input
        .read_exact(&mut magic)
        .map_err(|e| format!("{what}: {e}"))?;
    if magic[..15] != MAGIC[..15] {
        return Err(format!("{what} is not a snarkd input"));
    }
    let undecodable = |e: bincode::Error| format!("{what} does not decode: {e}");
    match magic[15] {
        VERSION => codec()
            .with_limit(len)
            .deserialize_from(input)
            .map_err(undecodable),
        1 => codec()
            .with_limit(len)
            .deserialize_from::<_, RequestV1>(input)
            .map_err(undecodable)?
            .into_request()
            .ok_or_else(|| format!("{what} has no proof kind")),
        newer => Err(format!(
            "{what} is in input format {newer}, newer than this snarkd's ({VERSION}): run the snarkd that wrote it until its jobs end"
        )),
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
    /// The request in today's terms; `None` without a kind (format 1 was only ever written
    /// for requests the API had given one).
    fn into_request(self) -> Option<ProofRequest> {
        let v1 = self;
        let kind = v1.kind?;
        Some(ProofRequest {
            request_id: v1.request_id,
            priority: v1.priority,
            input: ProofInput {
                kind,
                sector_size: v1.sector_size,
                registered_proof: v1.registered_proof,
                vanilla_proof: v1.vanilla_proof,
                vanilla_proofs: v1.vanilla_proofs.into_iter().map(|b| b.into_vec()).collect(),
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
        // Temporary files are inputs whose job was never acknowledged.
        for entry in fs::read_dir(&dir)? {
            let path = entry?.path();
            if path.extension().is_some_and(|e| e == "tmp") {
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
    pub(crate) fn read(&self, job_id: &str) -> Result<ProofRequest, String> {
        let path = self.path(job_id);
        let what = path.display().to_string();
        let file = File::open(&path).map_err(|e| format!("cannot open {what}: {e}"))?;
        let len = file.metadata().map_err(|e| e.to_string())?.len();
        decode(BufReader::with_capacity(1 << 20, file), len, &what)
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
