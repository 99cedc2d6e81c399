//! One proof request, as the API layer decodes it and the engine, the journal and the prover
//! take it: the job's facts ([`ProofRequest`]) around the proof's input ([`ProofInput`]).

use crate::{Priority, ProofKind};

/// A request to prove: who asks (`request_id`), how urgently, and what to prove.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ProofRequest {
    /// Idempotency key; empty means "no key" (every submit is a new job).
    pub request_id: String,
    /// `None` means the kind's default priority.
    pub priority: Option<Priority>,
    pub input: ProofInput,
}

impl ProofRequest {
    /// A request without an id, at the kind's default priority.
    pub fn new(input: ProofInput) -> ProofRequest {
        ProofRequest {
            request_id: String::new(),
            priority: None,
            input,
        }
    }

    pub fn kind(&self) -> ProofKind {
        self.input.kind
    }

    /// Bytes of client input the request carries (its id, the vanilla proofs and the fixed
    /// fields), what the intake limits count while its job is unfinished.
    pub fn input_bytes(&self) -> u64 {
        self.request_id.len() as u64 + self.input.bytes()
    }
}

/// What a proof is made from, as sent; the prover decodes the bytes once. Which fields matter
/// depends on `kind`:
///
/// | kind | fields used |
/// |---|---|
/// | PoRep | `vanilla_proof` (C1 JSON, bare or Curio's wrapper), `sector_number`, `miner_id` |
/// | WinningPoSt | `vanilla_proofs` (bincode `FallbackPoStSectorProof` per sector), `randomness`, `miner_id` |
/// | WindowPoSt | as WinningPoSt plus `partition_index` |
/// | SnapDeals | `vanilla_proofs` (bincode `PartitionProof` per partition), `comm_r_old`, `comm_r_new`, `comm_d_new` |
///
/// `registered_proof` uses the chain's numbering for the kind's enum (0 is a real value).
/// `sector_size` is advisory: the registered proof wins when the two disagree.
///
/// Its serde form (bincode, fixed-width) is what the job journal hashes into a job's input
/// digest: the field order and the kind's encoding are part of the journal's format.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ProofInput {
    #[serde(with = "always_some")]
    pub kind: ProofKind,
    pub sector_size: u64,
    pub registered_proof: u64,
    #[serde(with = "serde_bytes")]
    pub vanilla_proof: Vec<u8>,
    #[serde(with = "byte_vecs")]
    pub vanilla_proofs: Vec<Vec<u8>>,
    pub sector_number: u64,
    pub miner_id: u64,
    #[serde(with = "serde_bytes")]
    pub randomness: Vec<u8>,
    pub partition_index: u32,
    #[serde(with = "serde_bytes")]
    pub comm_r_old: Vec<u8>,
    #[serde(with = "serde_bytes")]
    pub comm_r_new: Vec<u8>,
    #[serde(with = "serde_bytes")]
    pub comm_d_new: Vec<u8>,
}

impl ProofInput {
    /// An input of `kind` with every other field empty; fill in what the kind needs.
    pub fn new(kind: ProofKind, registered_proof: u64) -> ProofInput {
        ProofInput {
            kind,
            sector_size: 0,
            registered_proof,
            vanilla_proof: Vec::new(),
            vanilla_proofs: Vec::new(),
            sector_number: 0,
            miner_id: 0,
            randomness: Vec::new(),
            partition_index: 0,
            comm_r_old: Vec::new(),
            comm_r_new: Vec::new(),
            comm_d_new: Vec::new(),
        }
    }

    /// Bytes of client input: the vanilla proofs and the variable-length fields.
    pub fn bytes(&self) -> u64 {
        let entries: usize = self.vanilla_proofs.iter().map(Vec::len).sum();
        (self.vanilla_proof.len()
            + entries
            + self.randomness.len()
            + self.comm_r_old.len()
            + self.comm_r_new.len()
            + self.comm_d_new.len()) as u64
    }
}

/// The kind as an `Option` that is always `Some`: how the journal has always encoded it (the
/// kind was once optional), so digests and stored inputs keep their bytes.
mod always_some {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    use crate::ProofKind;

    pub fn serialize<S: Serializer>(kind: &ProofKind, s: S) -> Result<S::Ok, S::Error> {
        Some(kind).serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<ProofKind, D::Error> {
        Option::<ProofKind>::deserialize(d)?
            .ok_or_else(|| serde::de::Error::custom("the input has no proof kind"))
    }
}

/// Serde for a list of byte strings, each as bytes (one copy, not one call per byte).
mod byte_vecs {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(v: &[Vec<u8>], s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(v.iter().map(|b| serde_bytes::Bytes::new(b)))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Vec<u8>>, D::Error> {
        let v = Vec::<serde_bytes::ByteBuf>::deserialize(d)?;
        Ok(v.into_iter().map(serde_bytes::ByteBuf::into_vec).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bincode::Options;

    #[test]
    fn the_kind_is_encoded_as_it_always_was() {
        // An optional kind, then the fields: the layout the journal's digests were made of.
        let codec = || bincode::DefaultOptions::new().with_fixint_encoding();
        let mut input = ProofInput::new(ProofKind::WindowPost, 7);
        input.randomness = vec![1; 32];
        let bytes = codec().serialize(&input).unwrap();
        assert_eq!(&bytes[..5], &[1, 2, 0, 0, 0], "Some(variant 2)");
        assert_eq!(codec().deserialize::<ProofInput>(&bytes).unwrap(), input);
        let mut none = bytes.clone();
        none.drain(1..5);
        none[0] = 0;
        let err = codec().deserialize::<ProofInput>(&none).unwrap_err();
        assert!(err.to_string().contains("no proof kind"), "{err}");
    }

    #[test]
    fn input_bytes_count_the_id_and_every_variable_field() {
        let mut input = ProofInput::new(ProofKind::SnapDealsUpdate, 0);
        input.vanilla_proofs = vec![vec![0; 10], vec![0; 5]];
        input.comm_r_old = vec![0; 32];
        let mut request = ProofRequest::new(input);
        request.request_id = "abc".into();
        assert_eq!(request.input_bytes(), 3 + 15 + 32);
    }
}
