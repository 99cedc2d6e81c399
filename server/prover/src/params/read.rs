//! Reading a `.params` file in seconds: the file is memory-mapped and its fixed-size point
//! records decoded in parallel, each section straight into a vector of its final size. The
//! result and the checks are those of bellperson's `Parameters::read(reader, false)`, which
//! reads point by point on one thread (minutes for a 32 GiB PoRep's 44 GiB): every point must
//! decode (blst checks it lies on the curve) and none may be the point at infinity; the
//! section lengths must fit the file. A file that cannot be mapped (a pipe, a special file
//! system) is read the old way.
//!
//! The layout (filecoin-proofs' published files, bellperson's `Parameters::write`): the
//! verifying key, then the H, L, A and B_G1 queries (a big-endian u32 count, then that many
//! uncompressed G1 points of 96 bytes) and the B_G2 query (uncompressed G2 points of 192 bytes).

use std::fs::File;
use std::io::{self, BufReader};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use bellperson::groth16::{Parameters, VerifyingKey};
use blstrs::{Bls12, G1Affine, G2Affine};
use group::prime::PrimeCurveAffine;
use group::UncompressedEncoding;
use rayon::prelude::*;

const G1_BYTES: usize = 96;
const G2_BYTES: usize = 192;

/// How a file was read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reader {
    /// Memory-mapped, decoded in parallel on the calling thread's rayon pool.
    Mapped,
    /// bellperson's reader, point by point on one thread.
    Streamed,
}

/// The parameters in `file`, mapped and decoded in parallel where it can be mapped, else
/// streamed; and how they were read.
pub fn read_params_file(file: File) -> io::Result<(Parameters<Bls12>, Reader)> {
    // SAFETY: the map is read only while this function runs; parameter files are written
    // once (by paramfetch or `snarkd params generate`, under another name, then renamed) and
    // never changed in place. A file truncated under us would end the process with SIGBUS,
    // as it would any reader of a memory-mapped file.
    match unsafe { memmap2::Mmap::map(&file) } {
        Ok(map) => {
            #[cfg(unix)]
            let _ = map.advise(memmap2::Advice::WillNeed);
            Ok((decode(&map)?, Reader::Mapped))
        }
        Err(e) => {
            tracing::debug!(error = %e, "cannot map the parameter file: reading it point by point");
            Ok((read_streamed(file)?, Reader::Streamed))
        }
    }
}

/// bellperson's own reader, one point at a time (the reference [`decode`] is checked against).
pub fn read_streamed(file: File) -> io::Result<Parameters<Bls12>> {
    Parameters::<Bls12>::read(BufReader::with_capacity(1 << 20, file), false)
}

/// The parameters encoded in `bytes`, decoded in parallel.
pub fn decode(bytes: &[u8]) -> io::Result<Parameters<Bls12>> {
    let mut cursor = bytes;
    let vk = VerifyingKey::<Bls12>::read(&mut cursor)?;
    let mut at = bytes.len() - cursor.len();
    let mut g1 = |what: &str| -> io::Result<Arc<Vec<G1Affine>>> {
        let (records, next) = section(bytes, at, G1_BYTES, what)?;
        at = next;
        Ok(Arc::new(points::<G1Affine>(records, G1_BYTES, what)?))
    };
    let h = g1("h")?;
    let l = g1("l")?;
    let a = g1("a")?;
    let b_g1 = g1("b_g1")?;
    let (records, _) = section(bytes, at, G2_BYTES, "b_g2")?;
    let b_g2 = Arc::new(points::<G2Affine>(records, G2_BYTES, "b_g2")?);
    Ok(Parameters {
        vk,
        h,
        l,
        a,
        b_g1,
        b_g2,
    })
}

/// The records of the section at `at` (its count, then its points) and where the next begins.
fn section<'a>(
    bytes: &'a [u8],
    at: usize,
    size: usize,
    what: &str,
) -> io::Result<(&'a [u8], usize)> {
    let truncated = || {
        io::Error::new(
            io::ErrorKind::UnexpectedEof,
            format!("the file ends inside its {what} query"),
        )
    };
    let count = bytes.get(at..at + 4).ok_or_else(truncated)?;
    let count = u32::from_be_bytes(count.try_into().expect("four bytes")) as usize;
    let start = at + 4;
    let end = count
        .checked_mul(size)
        .and_then(|n| n.checked_add(start))
        .filter(|&end| end <= bytes.len())
        .ok_or_else(truncated)?;
    Ok((&bytes[start..end], end))
}

/// Every record of `records` decoded, in order, into a vector of its final size, in parallel.
fn points<G>(records: &[u8], size: usize, what: &str) -> io::Result<Vec<G>>
where
    G: PrimeCurveAffine + UncompressedEncoding + Send,
{
    let first_bad = AtomicUsize::new(usize::MAX);
    let mut out = crate::huge_pages::vec_with_capacity(records.len() / size);
    records
        .par_chunks_exact(size)
        .enumerate()
        .map(|(i, record)| {
            let mut repr = G::Uncompressed::default();
            repr.as_mut().copy_from_slice(record);
            let point: Option<G> = G::from_uncompressed_unchecked(&repr).into();
            match point {
                Some(p) if !bool::from(p.is_identity()) => p,
                _ => {
                    first_bad.fetch_min(i, Ordering::Relaxed);
                    G::identity()
                }
            }
        })
        .collect_into_vec(&mut out);
    match first_bad.into_inner() {
        usize::MAX => Ok(out),
        i => {
            let mut repr = G::Uncompressed::default();
            repr.as_mut()
                .copy_from_slice(&records[i * size..(i + 1) * size]);
            let reason = match Option::<G>::from(G::from_uncompressed_unchecked(&repr)) {
                Some(_) => "is the point at infinity",
                None => "is not on the curve",
            };
            Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("point {i} of the {what} query {reason}"),
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use blstrs::{G1Projective, G2Projective};
    use group::{Curve, Group};
    use rand::SeedableRng;

    /// Random parameters of a few hundred points, as a file's bytes.
    fn made(seed: u64) -> (Parameters<Bls12>, Vec<u8>) {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let mut g1 = |n: usize| -> Vec<G1Affine> {
            (0..n)
                .map(|_| G1Projective::random(&mut rng).to_affine())
                .collect()
        };
        let (h, l, a, b_g1, ic) = (g1(300), g1(200), g1(150), g1(120), g1(3));
        let g2: Vec<G2Affine> = (0..40)
            .map(|_| G2Projective::random(&mut rng).to_affine())
            .collect();
        let vk = VerifyingKey::<Bls12> {
            alpha_g1: h[0],
            beta_g1: h[1],
            beta_g2: g2[0],
            gamma_g2: g2[1],
            delta_g1: h[2],
            delta_g2: g2[2],
            ic,
        };
        let params = Parameters {
            vk,
            h: Arc::new(h),
            l: Arc::new(l),
            a: Arc::new(a),
            b_g1: Arc::new(b_g1),
            b_g2: Arc::new(g2),
        };
        let mut bytes = Vec::new();
        params.write(&mut bytes).unwrap();
        (params, bytes)
    }

    fn assert_same(a: &Parameters<Bls12>, b: &Parameters<Bls12>) {
        assert!(a.vk == b.vk);
        assert_eq!(a.h, b.h);
        assert_eq!(a.l, b.l);
        assert_eq!(a.a, b.a);
        assert_eq!(a.b_g1, b.b_g1);
        assert_eq!(a.b_g2, b.b_g2);
    }

    #[test]
    fn the_parallel_decoder_reads_what_bellpersons_reader_reads() {
        let (params, bytes) = made(1);
        let decoded = decode(&bytes).unwrap();
        assert_same(&decoded, &params);
        let streamed = Parameters::<Bls12>::read(&bytes[..], false).unwrap();
        assert_same(&decoded, &streamed);
        // Through a file: mapped.
        let file = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(file.path(), &bytes).unwrap();
        let (read, how) = read_params_file(File::open(file.path()).unwrap()).unwrap();
        assert_eq!(how, Reader::Mapped);
        assert_same(&read, &params);
    }

    #[test]
    fn what_bellpersons_reader_refuses_the_parallel_decoder_refuses_and_says_where() {
        let (params, bytes) = made(2);
        let refused = |bytes: &[u8]| {
            assert!(Parameters::<Bls12>::read(bytes, false).is_err());
            decode(bytes).map(|_| ()).unwrap_err()
        };
        // Truncated, in the last section and in a count.
        let e = refused(&bytes[..bytes.len() - 1]);
        assert_eq!(e.kind(), io::ErrorKind::UnexpectedEof);
        assert!(e.to_string().contains("b_g2"), "{e}");
        // The h query starts after the key: 2 G1 + 2 G2 + G1 + G2 + count + ic, then its count.
        let h_start = 3 * G1_BYTES + 3 * G2_BYTES + 4 + params.vk.ic.len() * G1_BYTES + 4;
        let e = refused(&bytes[..h_start + 2]);
        assert!(e.to_string().contains("h query"), "{e}");

        // Point 7 of h moved off the curve (its y changed).
        let mut off = bytes.clone();
        off[h_start + 7 * G1_BYTES + 95] ^= 1;
        let e = refused(&off);
        assert_eq!(e.kind(), io::ErrorKind::InvalidData);
        assert_eq!(e.to_string(), "point 7 of the h query is not on the curve");

        // Point 3 of h the point at infinity.
        let mut infinity = bytes.clone();
        let at = h_start + 3 * G1_BYTES;
        infinity[at..at + G1_BYTES]
            .copy_from_slice(G1Affine::identity().to_uncompressed().as_ref());
        let e = refused(&infinity);
        assert_eq!(
            e.to_string(),
            "point 3 of the h query is the point at infinity"
        );
    }
}
