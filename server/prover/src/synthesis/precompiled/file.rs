//! The on-disk form of [`CircuitMatrices`], little-endian:
//!
//! ```text
//! magic "SNKDR1CS" · format version u32 · identity (u32 length, UTF-8)
//! inputs, aux, rows, coefficients, A terms, B terms: u64 each
//! coefficients: 32 bytes each (canonical little-endian field elements)
//! A, B: row offsets (rows + 1 u32), then terms (variable u32, coefficient u32)
//! SHA-256 of everything above
//! ```
//!
//! The identity names the circuit and the code that shapes it (circuit id, filecoin-proofs and
//! bellperson versions); another identity, version or digest makes the file stale or corrupt,
//! and the caller records it again. Nothing is allocated before the counts have been checked
//! against the parameters (a benchmark's file, which has none, against the layout's limits) and
//! the file's exact length, and every index is checked before a product follows it, so a
//! damaged file can neither exhaust memory nor panic a synthesis.

use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::PathBuf;

use bellperson::groth16::Parameters;
use blstrs::{Bls12, Scalar as Fr};
use sha2::{Digest, Sha256};

use super::matrix::{LayoutError, SparseMatrix, Term, INPUT_BIT};
use super::CircuitMatrices;
use crate::error::{ProverError, Result};

const MAGIC: &[u8; 8] = b"SNKDR1CS";
/// Bumped whenever the layout above changes.
pub const FORMAT_VERSION: u32 = 1;
const COUNTS: usize = 6;
const DIGEST: usize = 32;
/// Longest identity string accepted.
const MAX_IDENTITY: usize = 1024;

/// Where one circuit's matrices live, and what they must have been made from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MatricesFile {
    pub path: PathBuf,
    /// Circuit id and the versions of the crates that define the circuit.
    pub identity: String,
}

impl MatricesFile {
    /// Reads and checks the matrices: `Ok(None)` when there is no file; an error when it is
    /// corrupt, stale or not the circuit `params` were made for.
    pub fn read(&self, params: &Parameters<Bls12>) -> Result<Option<CircuitMatrices>> {
        self.read_checked(Some(params))
    }

    /// [`MatricesFile::read`] for a benchmark's synthetic circuit, which has no parameters to
    /// check the file against: its identity, exact length, digest and every index are checked,
    /// and its variable counts against the layout's limit (2^31 each) in place of a circuit's;
    /// its tables are bounded by its length.
    #[cfg(feature = "bench")]
    pub fn read_without_params(&self) -> Result<Option<CircuitMatrices>> {
        self.read_checked(None)
    }

    fn read_checked(&self, params: Option<&Parameters<Bls12>>) -> Result<Option<CircuitMatrices>> {
        let file = match File::open(&self.path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(ProverError::io(&self.path, e)),
        };
        let len = file
            .metadata()
            .map_err(|e| ProverError::io(&self.path, e))?
            .len();
        let mut r = Hashing::new(BufReader::with_capacity(1 << 20, file));
        let bad = |reason: String| {
            ProverError::Precompiled(format!("{} is unusable: {reason}", self.path.display()))
        };
        let io = |e: std::io::Error| bad(format!("reading it: {e}"));

        let mut magic = [0u8; 8];
        r.read_exact(&mut magic).map_err(io)?;
        if &magic != MAGIC {
            return Err(bad("not a pre-compiled circuit file".into()));
        }
        let version = r.u32().map_err(io)?;
        if version != FORMAT_VERSION {
            return Err(bad(format!(
                "format version {version}, this build reads {FORMAT_VERSION}"
            )));
        }
        let identity_len = r.u32().map_err(io)? as usize;
        if identity_len > MAX_IDENTITY {
            return Err(bad("its identity is too long".into()));
        }
        let mut identity = vec![0u8; identity_len];
        r.read_exact(&mut identity).map_err(io)?;
        if identity != self.identity.as_bytes() {
            return Err(bad(format!(
                "made for \"{}\", this build needs \"{}\"",
                String::from_utf8_lossy(&identity),
                self.identity
            )));
        }
        let mut counts = [0u64; COUNTS];
        for c in &mut counts {
            *c = r.u64().map_err(io)?;
        }
        let [inputs, aux, rows, coeffs, a_terms, b_terms] = counts;
        check_counts(params, inputs, aux, rows).map_err(bad)?;
        let header = 8 + 4 + 4 + identity_len as u64 + 8 * COUNTS as u64;
        let expected = coeffs
            .checked_mul(32)
            .and_then(|b| b.checked_add(rows.checked_add(1)?.checked_mul(8)?))
            .and_then(|b| b.checked_add(a_terms.checked_add(b_terms)?.checked_mul(8)?))
            .and_then(|b| b.checked_add(header + DIGEST as u64));
        if expected != Some(len) {
            return Err(bad(format!(
                "{len} bytes long, its header describes {}",
                expected.map_or("more than fits".into(), |e| e.to_string())
            )));
        }
        let mut table = Vec::with_capacity(coeffs as usize);
        for _ in 0..coeffs {
            let mut bytes = [0u8; 32];
            r.read_exact(&mut bytes).map_err(io)?;
            let value = Option::<Fr>::from(Fr::from_bytes_le(&bytes))
                .ok_or_else(|| bad("a coefficient is not a field element".into()))?;
            table.push(value);
        }
        let mut matrix = |terms: u64| -> Result<SparseMatrix> {
            let starts = r.u32s(rows as usize + 1).map_err(io)?;
            let flat = r.u32s(2 * terms as usize).map_err(io)?;
            let terms = flat
                .chunks_exact(2)
                .map(|t| Term {
                    var: t[0],
                    coeff: t[1],
                })
                .collect();
            Ok(SparseMatrix { starts, terms })
        };
        let (a, b) = (matrix(a_terms)?, matrix(b_terms)?);
        let digest = r.finish();
        let mut stored = [0u8; DIGEST];
        r.inner
            .read_exact(&mut stored)
            .map_err(|e| bad(format!("reading its digest: {e}")))?;
        if stored != digest {
            return Err(bad("its digest does not match its contents".into()));
        }
        let m = CircuitMatrices::from_parts(inputs as usize, aux as usize, table, a, b)
            .map_err(|e| bad(e.to_string()))?;
        if let Some(params) = params {
            m.check_against(params)
                .map_err(|e| bad(format!("not the circuit of these parameters: {e}")))?;
        }
        Ok(Some(m))
    }

    /// Writes `m` (to a temporary name, then renamed); returns the file's size.
    pub fn write(&self, m: &CircuitMatrices) -> Result<u64> {
        if let Some(dir) = self.path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| ProverError::io(dir, e))?;
        }
        crate::files::write_atomically(&self.path, |w| write_matrices(w, &self.identity, m))?;
        std::fs::metadata(&self.path)
            .map(|md| md.len())
            .map_err(|e| ProverError::io(&self.path, e))
    }
}

/// The header's counts against `params`, or without them against the layout's limits: variable
/// counts size the densities and a witness, so they are held to what an index can name.
fn check_counts(
    params: Option<&Parameters<Bls12>>,
    inputs: u64,
    aux: u64,
    rows: u64,
) -> std::result::Result<(), String> {
    match params {
        Some(params) => check_header(params, inputs, aux, rows).map_err(|e| e.to_string()),
        None if inputs > u64::from(INPUT_BIT) || aux > u64::from(INPUT_BIT) => Err(format!(
            "{inputs} inputs and {aux} aux variables: more than the layout indexes"
        )),
        None => Ok(()),
    }
}

/// The counts a header may claim for the circuit of `params`: its exact inputs and aux, and a
/// row count whose domain is the parameters' (so nothing is sized by a number the file alone
/// makes up).
fn check_header(
    params: &Parameters<Bls12>,
    inputs: u64,
    aux: u64,
    rows: u64,
) -> std::result::Result<(), LayoutError> {
    if inputs != params.vk.ic.len() as u64 || aux != params.l.len() as u64 {
        return Err(LayoutError::Variables {
            inputs,
            aux,
            params_inputs: params.vk.ic.len(),
            params_aux: params.l.len(),
        });
    }
    let domain = params.h.len() as u64 + 1;
    if rows == 0 || rows > domain || rows.next_power_of_two() != domain {
        return Err(LayoutError::Domain { rows, domain });
    }
    Ok(())
}

fn write_matrices(
    w: &mut BufWriter<File>,
    identity: &str,
    m: &CircuitMatrices,
) -> std::io::Result<()> {
    let mut h = Hashing::new(w);
    h.write_all(MAGIC)?;
    h.write_all(&FORMAT_VERSION.to_le_bytes())?;
    h.write_all(&(identity.len() as u32).to_le_bytes())?;
    h.write_all(identity.as_bytes())?;
    let counts = [
        m.num_inputs,
        m.num_aux,
        m.num_constraints(),
        m.coeffs.len(),
        m.a.terms.len(),
        m.b.terms.len(),
    ];
    for c in counts {
        h.write_all(&(c as u64).to_le_bytes())?;
    }
    for c in &m.coeffs {
        h.write_all(&c.to_bytes_le())?;
    }
    let mut buf = Vec::with_capacity(1 << 16);
    for matrix in [&m.a, &m.b] {
        let words = matrix
            .starts
            .iter()
            .copied()
            .chain(matrix.terms.iter().flat_map(|t| [t.var, t.coeff]));
        for word in words {
            buf.extend_from_slice(&word.to_le_bytes());
            if buf.len() >= 1 << 16 {
                h.write_all(&buf)?;
                buf.clear();
            }
        }
    }
    h.write_all(&buf)?;
    let digest = h.finish();
    h.inner.write_all(&digest)
}

/// A reader or writer that hashes what passes through it.
struct Hashing<T> {
    inner: T,
    hasher: Sha256,
}

impl<T> Hashing<T> {
    fn new(inner: T) -> Self {
        Hashing {
            inner,
            hasher: Sha256::new(),
        }
    }

    fn finish(&mut self) -> [u8; DIGEST] {
        std::mem::take(&mut self.hasher).finalize().into()
    }
}

impl<R: Read> Read for Hashing<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.hasher.update(&buf[..n]);
        Ok(n)
    }
}

impl<R: Read> Hashing<R> {
    fn u32(&mut self) -> std::io::Result<u32> {
        let mut b = [0u8; 4];
        self.read_exact(&mut b)?;
        Ok(u32::from_le_bytes(b))
    }

    fn u64(&mut self) -> std::io::Result<u64> {
        let mut b = [0u8; 8];
        self.read_exact(&mut b)?;
        Ok(u64::from_le_bytes(b))
    }

    /// `n` words (already bounded by the file's length).
    fn u32s(&mut self, n: usize) -> std::io::Result<Vec<u32>> {
        let mut out = Vec::with_capacity(n);
        let mut buf = vec![0u8; (1 << 16).min(n * 4)];
        while out.len() < n {
            let take = ((n - out.len()) * 4).min(buf.len());
            self.read_exact(&mut buf[..take])?;
            out.extend(
                buf[..take]
                    .chunks_exact(4)
                    .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]])),
            );
        }
        Ok(out)
    }
}

impl<W: Write> Write for Hashing<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.hasher.update(&buf[..n]);
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}
