//! [`ProofInput`] (`snarkd-types`' one definition of what a proof is made from) and the decoding
//! helpers every kind shares.

use std::borrow::Cow;

use base64::Engine;
use serde::Deserialize;

use crate::error::{ProverError, Result};

pub use snarkd_types::{PoRepInput, PostInput, ProofInput, Registered, SnapInput};

/// The 32-byte prover id filecoin-proofs expects for actor `miner_id`: the payload of its ID
/// address (unsigned LEB128 of the id), zero-padded — what lotus / Curio / filecoin-ffi pass.
pub fn prover_id_from_miner_id(miner_id: u64) -> [u8; 32] {
    let mut out = [0u8; 32];
    let mut v = miner_id;
    let mut i = 0;
    loop {
        let byte = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out[i] = byte;
            break;
        }
        out[i] = byte | 0x80;
        i += 1;
    }
    out
}

/// A 32-byte field of the request.
pub(crate) fn bytes32(field: &'static str, v: &[u8]) -> Result<[u8; 32]> {
    v.try_into().map_err(|_| ProverError::BadLength {
        field,
        expected: 32,
        actual: v.len(),
    })
}

/// Decodes one bincode value the way filecoin-proofs encodes it (fixed-width integers, little
/// endian), refusing trailing bytes and never reading or allocating past the input: a length
/// prefix that claims more than the input holds is an error, not an allocation.
pub(crate) fn decode_bincode<T: serde::de::DeserializeOwned>(
    what: impl FnOnce() -> String,
    bytes: &[u8],
) -> Result<T> {
    use bincode::Options;
    bincode::DefaultOptions::new()
        .with_fixint_encoding()
        .with_little_endian()
        .with_limit(bytes.len() as u64)
        .reject_trailing_bytes()
        .deserialize(bytes)
        .map_err(|e| ProverError::Decode {
            what: what(),
            reason: e.to_string(),
        })
}

/// A 32-byte field that the circuit reads as a BLS12-381 scalar: it must be the canonical
/// little-endian encoding of a field element (below the modulus).
pub(crate) fn field_element(field: &'static str, v: &[u8]) -> Result<[u8; 32]> {
    use ff::PrimeField;
    let bytes = bytes32(field, v)?;
    let canonical: Option<blstrs::Scalar> = blstrs::Scalar::from_repr(bytes).into();
    match canonical {
        Some(_) => Ok(bytes),
        None => Err(ProverError::InvalidRequest(format!(
            "{field} is not a BLS12-381 field element (its 32 little-endian bytes are at or above \
             the modulus); send the commitment exactly as filecoin-proofs produced it"
        ))),
    }
}

/// Curio's wrapper around a C1 output.
#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct CurioC1Wrapper {
    #[serde(default)]
    sector_num: Option<u64>,
    phase1_out: String,
    #[serde(default)]
    sector_size: Option<u64>,
}

/// Whether a C1 JSON object is Curio's wrapper (it has `Phase1Out`). Every other field is
/// skipped by `IgnoredAny`, without building anything.
#[derive(Deserialize)]
struct WrapperProbe {
    #[serde(rename = "Phase1Out", default)]
    phase1_out: Option<serde::de::IgnoredAny>,
}

impl WrapperProbe {
    fn is_wrapper(&self) -> bool {
        self.phase1_out.is_some()
    }
}

/// A C1 output's JSON, with the sector number and size Curio's wrapper gave (if any).
pub(crate) type Unwrapped<'a> = (Cow<'a, [u8]>, Option<u64>, Option<u64>);

/// The bare C1 JSON inside `vanilla_proof`, unwrapping Curio's
/// `{"SectorNum":n,"Phase1Out":base64(json),"SectorSize":n}` when present. Returns the JSON and
/// the wrapper's sector number / size (if any) for consistency checks. A bare C1 JSON is
/// borrowed, not copied.
pub(crate) fn unwrap_c1(raw: &[u8]) -> Result<Unwrapped<'_>> {
    let decode_err = |reason: String| ProverError::Decode {
        what: "porep c1 output (vanilla_proof)".into(),
        reason,
    };
    if raw.is_empty() {
        return Err(decode_err("vanilla_proof is empty".into()));
    }
    // Only the wrapper's own fields are kept: anything else is skipped while parsing, never
    // built into a JSON tree (which could cost many times the input's size).
    let probe: WrapperProbe =
        serde_json::from_slice(raw).map_err(|e| decode_err(format!("not json ({e})")))?;
    if probe.is_wrapper() {
        let w: CurioC1Wrapper = serde_json::from_slice(raw)
            .map_err(|e| decode_err(format!("bad curio wrapper: {e}")))?;
        let inner = base64::engine::general_purpose::STANDARD
            .decode(w.phase1_out.trim())
            .map_err(|e| decode_err(format!("Phase1Out is not base64: {e}")))?;
        return Ok((Cow::Owned(inner), w.sector_num, w.sector_size));
    }
    Ok((Cow::Borrowed(raw), None, None))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prover_id_is_leb128_of_the_actor_id() {
        assert_eq!(prover_id_from_miner_id(0)[..2], [0, 0]);
        assert_eq!(prover_id_from_miner_id(1000)[..3], [0xe8, 0x07, 0]);
        assert_eq!(prover_id_from_miner_id(127)[..2], [127, 0]);
    }

    #[test]
    fn c1_wrapper_is_unwrapped_and_garbage_rejected() {
        let inner = br#"{"registered_proof":"StackedDrg2KiBV1_1"}"#;
        let b64 = base64::engine::general_purpose::STANDARD.encode(inner);
        let wrapped = format!(r#"{{"SectorNum":7,"Phase1Out":"{b64}","SectorSize":2048}}"#);
        let (json, num, size) = unwrap_c1(wrapped.as_bytes()).unwrap();
        assert_eq!(&*json, inner);
        assert_eq!((num, size), (Some(7), Some(2048)));
        assert!(matches!(unwrap_c1(inner).unwrap().0, Cow::Borrowed(b) if b == inner));
        assert!(matches!(
            unwrap_c1(b"{\"registered"),
            Err(ProverError::Decode { .. })
        ));
        assert!(matches!(unwrap_c1(b""), Err(ProverError::Decode { .. })));
        assert!(matches!(
            unwrap_c1(br#"{"Phase1Out":"%%%"}"#),
            Err(ProverError::Decode { .. })
        ));
    }
}
