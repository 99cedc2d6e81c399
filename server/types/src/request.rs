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
        self.input.kind()
    }

    /// Bytes of client input the request carries (its id, the vanilla proofs and the fixed
    /// fields), what the intake limits count while its job is unfinished.
    pub fn input_bytes(&self) -> u64 {
        self.request_id.len() as u64 + self.input.bytes()
    }
}

/// What a proof is made from, as sent: one variant per kind, each with the fields its kind uses;
/// the prover decodes the bytes once.
///
/// Its serde form is the journal's: the flat layout of every kind's fields ([`StoredInput`],
/// bincode fixed-width for a job's input digest, CBOR for stored inputs), so digests and stored
/// inputs keep their bytes.
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize)]
#[serde(try_from = "StoredInput")]
pub enum ProofInput {
    PoRep(PoRepInput),
    SnapDeals(SnapInput),
    WindowPost {
        post: PostInput,
        /// The partition's index within its deadline.
        partition_index: u32,
    },
    WinningPost(PostInput),
}

/// Which proof, by the chain's numbering for the kind's enum (0 is a real value), and the
/// sector size the client names (advisory: the registered proof wins when the two disagree).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Registered {
    pub registered_proof: u64,
    pub sector_size: u64,
}

impl Registered {
    /// `registered_proof` with no sector size named.
    pub fn proof(registered_proof: u64) -> Registered {
        Registered {
            registered_proof,
            sector_size: 0,
        }
    }
}

/// A PoRep's commit phase 2 input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PoRepInput {
    pub registered: Registered,
    /// The commit phase 1 output: its JSON, bare or in Curio's wrapper.
    pub vanilla_proof: Vec<u8>,
    pub sector_number: u64,
    pub miner_id: u64,
}

/// A WinningPoSt's or WindowPoSt partition's input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PostInput {
    pub registered: Registered,
    /// One bincode `FallbackPoStSectorProof` per sector.
    pub vanilla_proofs: Vec<Vec<u8>>,
    pub miner_id: u64,
    pub randomness: Vec<u8>,
}

/// A SnapDeals update's input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SnapInput {
    pub registered: Registered,
    /// One bincode `PartitionProof` per partition.
    pub vanilla_proofs: Vec<Vec<u8>>,
    pub comm_r_old: Vec<u8>,
    pub comm_r_new: Vec<u8>,
    pub comm_d_new: Vec<u8>,
}

impl ProofInput {
    /// An input of `kind` with every field but its registered proof empty (for tests and tools
    /// that fill in what they need).
    pub fn empty(kind: ProofKind, registered: Registered) -> ProofInput {
        let post = PostInput {
            registered,
            vanilla_proofs: Vec::new(),
            miner_id: 0,
            randomness: Vec::new(),
        };
        match kind {
            ProofKind::PorepSealCommit => ProofInput::PoRep(PoRepInput {
                registered,
                vanilla_proof: Vec::new(),
                sector_number: 0,
                miner_id: 0,
            }),
            ProofKind::SnapDealsUpdate => ProofInput::SnapDeals(SnapInput {
                registered,
                vanilla_proofs: Vec::new(),
                comm_r_old: Vec::new(),
                comm_r_new: Vec::new(),
                comm_d_new: Vec::new(),
            }),
            ProofKind::WindowPost => ProofInput::WindowPost {
                post,
                partition_index: 0,
            },
            ProofKind::WinningPost => ProofInput::WinningPost(post),
        }
    }

    pub fn kind(&self) -> ProofKind {
        match self {
            ProofInput::PoRep(_) => ProofKind::PorepSealCommit,
            ProofInput::SnapDeals(_) => ProofKind::SnapDealsUpdate,
            ProofInput::WindowPost { .. } => ProofKind::WindowPost,
            ProofInput::WinningPost(_) => ProofKind::WinningPost,
        }
    }

    pub fn registered(&self) -> Registered {
        match self {
            ProofInput::PoRep(r) => r.registered,
            ProofInput::SnapDeals(r) => r.registered,
            ProofInput::WindowPost { post, .. } | ProofInput::WinningPost(post) => post.registered,
        }
    }

    /// The vanilla proofs as sent: PoRep's one C1 output, or one per sector or partition.
    pub fn vanilla_proofs(&self) -> Vec<&[u8]> {
        match self {
            ProofInput::PoRep(r) => vec![&r.vanilla_proof],
            ProofInput::SnapDeals(r) => r.vanilla_proofs.iter().map(Vec::as_slice).collect(),
            ProofInput::WindowPost { post, .. } | ProofInput::WinningPost(post) => {
                post.vanilla_proofs.iter().map(Vec::as_slice).collect()
            }
        }
    }

    /// Bytes of client input: the vanilla proofs and the variable-length fields.
    pub fn bytes(&self) -> u64 {
        let entries = |v: &[Vec<u8>]| v.iter().map(Vec::len).sum::<usize>();
        (match self {
            ProofInput::PoRep(r) => r.vanilla_proof.len(),
            ProofInput::SnapDeals(r) => {
                entries(&r.vanilla_proofs)
                    + r.comm_r_old.len()
                    + r.comm_r_new.len()
                    + r.comm_d_new.len()
            }
            ProofInput::WindowPost { post, .. } | ProofInput::WinningPost(post) => {
                entries(&post.vanilla_proofs) + post.randomness.len()
            }
        }) as u64
    }
}

impl From<PoRepInput> for ProofInput {
    fn from(input: PoRepInput) -> ProofInput {
        ProofInput::PoRep(input)
    }
}

impl From<SnapInput> for ProofInput {
    fn from(input: SnapInput) -> ProofInput {
        ProofInput::SnapDeals(input)
    }
}

pub use stored::StoredInput;

/// The journal's layout of an input: every kind's fields in one struct, in the order they have
/// always been encoded, those a kind does not use empty.
mod stored {
    use super::{PoRepInput, PostInput, ProofInput, Registered, SnapInput};
    use crate::ProofKind;

    /// The layout, owned: what the journal reads back (every field as it was written, those of
    /// inputs stored before the kinds were split too) and the API's request, which has the same
    /// fields. Into a [`ProofInput`] each kind takes the fields it
    /// uses; a WinningPoSt with a partition index is refused (it has one partition).
    #[derive(serde::Serialize, serde::Deserialize)]
    pub struct StoredInput {
        #[serde(with = "super::always_some")]
        pub kind: ProofKind,
        pub sector_size: u64,
        pub registered_proof: u64,
        #[serde(with = "serde_bytes")]
        pub vanilla_proof: Vec<u8>,
        #[serde(with = "super::byte_vecs")]
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

    /// The layout, written: the input's fields borrowed (a submit's input is not copied to be
    /// digested or stored).
    #[derive(serde::Serialize)]
    struct FlatRef<'a> {
        #[serde(with = "super::always_some")]
        kind: ProofKind,
        sector_size: u64,
        registered_proof: u64,
        #[serde(with = "serde_bytes")]
        vanilla_proof: &'a [u8],
        #[serde(with = "super::byte_vecs")]
        vanilla_proofs: &'a [Vec<u8>],
        sector_number: u64,
        miner_id: u64,
        #[serde(with = "serde_bytes")]
        randomness: &'a [u8],
        partition_index: u32,
        #[serde(with = "serde_bytes")]
        comm_r_old: &'a [u8],
        #[serde(with = "serde_bytes")]
        comm_r_new: &'a [u8],
        #[serde(with = "serde_bytes")]
        comm_d_new: &'a [u8],
    }

    impl serde::Serialize for ProofInput {
        fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            let registered = self.registered();
            let flat = FlatRef {
                kind: self.kind(),
                sector_size: registered.sector_size,
                registered_proof: registered.registered_proof,
                vanilla_proof: &[],
                vanilla_proofs: &[],
                sector_number: 0,
                miner_id: 0,
                randomness: &[],
                partition_index: 0,
                comm_r_old: &[],
                comm_r_new: &[],
                comm_d_new: &[],
            };
            fn post<'a>(flat: FlatRef<'a>, p: &'a PostInput, partition_index: u32) -> FlatRef<'a> {
                FlatRef {
                    vanilla_proofs: &p.vanilla_proofs,
                    miner_id: p.miner_id,
                    randomness: &p.randomness,
                    partition_index,
                    ..flat
                }
            }
            match self {
                ProofInput::PoRep(r) => FlatRef {
                    vanilla_proof: &r.vanilla_proof,
                    sector_number: r.sector_number,
                    miner_id: r.miner_id,
                    ..flat
                },
                ProofInput::SnapDeals(r) => FlatRef {
                    vanilla_proofs: &r.vanilla_proofs,
                    comm_r_old: &r.comm_r_old,
                    comm_r_new: &r.comm_r_new,
                    comm_d_new: &r.comm_d_new,
                    ..flat
                },
                ProofInput::WindowPost {
                    post: p,
                    partition_index,
                } => post(flat, p, *partition_index),
                ProofInput::WinningPost(p) => post(flat, p, 0),
            }
            .serialize(s)
        }
    }

    impl TryFrom<StoredInput> for ProofInput {
        type Error = String;

        fn try_from(f: StoredInput) -> Result<ProofInput, String> {
            let registered = Registered {
                registered_proof: f.registered_proof,
                sector_size: f.sector_size,
            };
            Ok(match f.kind {
                ProofKind::PorepSealCommit => ProofInput::PoRep(PoRepInput {
                    registered,
                    vanilla_proof: f.vanilla_proof,
                    sector_number: f.sector_number,
                    miner_id: f.miner_id,
                }),
                ProofKind::SnapDealsUpdate => ProofInput::SnapDeals(SnapInput {
                    registered,
                    vanilla_proofs: f.vanilla_proofs,
                    comm_r_old: f.comm_r_old,
                    comm_r_new: f.comm_r_new,
                    comm_d_new: f.comm_d_new,
                }),
                kind @ (ProofKind::WindowPost | ProofKind::WinningPost) => {
                    let post = PostInput {
                        registered,
                        vanilla_proofs: f.vanilla_proofs,
                        miner_id: f.miner_id,
                        randomness: f.randomness,
                    };
                    match (kind, f.partition_index) {
                        (ProofKind::WinningPost, 0) => ProofInput::WinningPost(post),
                        (ProofKind::WinningPost, index) => {
                            return Err(format!(
                                "partition_index {index} given for winning post, which has one \
                                 partition; send 0"
                            ))
                        }
                        (_, partition_index) => ProofInput::WindowPost {
                            post,
                            partition_index,
                        },
                    }
                }
            })
        }
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

    fn codec() -> impl Options {
        bincode::DefaultOptions::new().with_fixint_encoding()
    }

    fn window() -> ProofInput {
        ProofInput::WindowPost {
            post: PostInput {
                registered: Registered {
                    registered_proof: 7,
                    sector_size: 2048,
                },
                vanilla_proofs: vec![vec![5, 6], vec![7]],
                miner_id: 1000,
                randomness: vec![1; 32],
            },
            partition_index: 3,
        }
    }

    /// The journal's layout, written out field by field: an optional kind, then every kind's
    /// fields in their old order, each byte string with its u64 length.
    #[test]
    fn every_kind_is_encoded_in_the_layout_the_journal_always_had() {
        let u64s = |v: u64| v.to_le_bytes().to_vec();
        let bytes = |b: &[u8]| [u64s(b.len() as u64), b.to_vec()].concat();
        let expected = [
            vec![1, 2, 0, 0, 0], // Some(WindowPost: variant 2)
            u64s(2048),
            u64s(7),
            bytes(&[]), // vanilla_proof: PoRep's
            u64s(2),    // vanilla_proofs
            bytes(&[5, 6]),
            bytes(&[7]),
            u64s(0),         // sector_number: PoRep's
            u64s(1000),      // miner_id
            bytes(&[1; 32]), // randomness
            3u32.to_le_bytes().to_vec(),
            bytes(&[]), // the three commitments: SnapDeals'
            bytes(&[]),
            bytes(&[]),
        ]
        .concat();
        assert_eq!(codec().serialize(&window()).unwrap(), expected);
        assert_eq!(
            codec().deserialize::<ProofInput>(&expected).unwrap(),
            window()
        );
        let porep = ProofInput::PoRep(PoRepInput {
            registered: Registered::proof(3),
            vanilla_proof: b"{}".to_vec(),
            sector_number: 9,
            miner_id: 1000,
        });
        let snap = ProofInput::SnapDeals(SnapInput {
            registered: Registered::proof(1),
            vanilla_proofs: vec![vec![1]],
            comm_r_old: vec![2; 32],
            comm_r_new: vec![3; 32],
            comm_d_new: vec![4; 32],
        });
        let ProofInput::WindowPost { post, .. } = window() else {
            unreachable!()
        };
        for input in [porep, snap, ProofInput::WinningPost(post), window()] {
            let bytes = codec().serialize(&input).unwrap();
            assert_eq!(codec().deserialize::<ProofInput>(&bytes).unwrap(), input);
        }
    }

    #[test]
    fn a_stored_input_without_a_kind_or_with_a_winning_partition_is_refused() {
        let mut none = codec().serialize(&window()).unwrap();
        none.drain(1..5);
        none[0] = 0;
        let err = codec().deserialize::<ProofInput>(&none).unwrap_err();
        assert!(err.to_string().contains("no proof kind"), "{err}");
        let mut winning = codec().serialize(&window()).unwrap();
        winning[1] = 3; // WinningPost, partition_index 3
        let err = codec().deserialize::<ProofInput>(&winning).unwrap_err();
        assert!(err.to_string().contains("partition_index 3"), "{err}");
    }

    #[test]
    fn input_bytes_count_the_id_and_every_variable_field() {
        let snap = ProofInput::SnapDeals(SnapInput {
            registered: Registered::proof(0),
            vanilla_proofs: vec![vec![0; 10], vec![0; 5]],
            comm_r_old: vec![0; 32],
            comm_r_new: Vec::new(),
            comm_d_new: Vec::new(),
        });
        let mut request = ProofRequest::new(snap);
        request.request_id = "abc".into();
        assert_eq!(request.input_bytes(), 3 + 15 + 32);
        assert_eq!(window().bytes(), 3 + 32);
    }
}
