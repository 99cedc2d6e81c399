use super::*;

fn winning() -> pb::SubmitProofRequest {
    pb::SubmitProofRequest {
        request_id: "r1".into(),
        proof_kind: pb::ProofKind::WinningPost as i32,
        registered_proof: 0,
        vanilla_proofs: vec![vec![1, 2, 3]],
        randomness: vec![7; 32],
        miner_id: 1000,
        ..Default::default()
    }
}

fn snap() -> pb::SubmitProofRequest {
    pb::SubmitProofRequest {
        proof_kind: pb::ProofKind::SnapDealsUpdate as i32,
        registered_proof: 0,
        vanilla_proofs: vec![vec![1]],
        comm_r_old: vec![1; 32],
        comm_r_new: vec![2; 32],
        comm_d_new: vec![3; 32],
        ..Default::default()
    }
}

fn porep() -> pb::SubmitProofRequest {
    pb::SubmitProofRequest {
        proof_kind: pb::ProofKind::PorepSealCommit as i32,
        registered_proof: 5,
        vanilla_proof: b"{}".to_vec(),
        // The original bench tool sends randomness even for PoRep: ignored, not an error.
        randomness: vec![1; 5],
        ..Default::default()
    }
}

fn wpost() -> pb::SubmitProofRequest {
    pb::SubmitProofRequest {
        proof_kind: pb::ProofKind::WindowPostPartition as i32,
        registered_proof: 10,
        vanilla_proofs: vec![vec![1], vec![2]],
        randomness: vec![0; 32],
        partition_index: 3,
        ..Default::default()
    }
}

fn message<T: std::fmt::Debug>(result: Result<T, EngineError>) -> String {
    match result {
        Err(EngineError::InvalidRequest(msg)) => msg,
        other => panic!("expected InvalidRequest, got {other:?}"),
    }
}

#[test]
fn valid_requests_convert_field_by_field() {
    let req = proof_request(winning()).unwrap();
    assert_eq!(req.kind(), ProofKind::WinningPost);
    assert_eq!(req.request_id, "r1");
    assert_eq!(req.priority, None);
    let ProofInput::WinningPost(post) = &req.input else {
        panic!("{:?}", req.input)
    };
    assert_eq!(post.randomness, vec![7; 32]);
    assert_eq!(post.miner_id, 1000);
    assert_eq!(post.vanilla_proofs, vec![vec![1, 2, 3]]);

    let req = proof_request(snap()).unwrap();
    let ProofInput::SnapDeals(s) = &req.input else {
        panic!("{:?}", req.input)
    };
    assert_eq!(
        (s.comm_r_old[0], s.comm_r_new[0], s.comm_d_new[0]),
        (1, 2, 3)
    );

    let req = proof_request(porep()).unwrap();
    let ProofInput::PoRep(p) = &req.input else {
        panic!("{:?}", req.input)
    };
    assert_eq!(p.vanilla_proof, b"{}");
    assert_eq!(p.registered.registered_proof, 5);

    let req = proof_request(wpost()).unwrap();
    assert!(
        matches!(
            req.input,
            ProofInput::WindowPost {
                partition_index: 3,
                ..
            }
        ),
        "{:?}",
        req.input
    );
}

#[test]
fn a_winning_post_with_a_partition_index_is_refused() {
    let msg = message(proof_request(pb::SubmitProofRequest {
        partition_index: 1,
        ..winning()
    }));
    assert!(
        msg.contains("partition_index 1") && msg.contains("one partition"),
        "{msg}"
    );
}

#[test]
fn priorities_map_and_unspecified_means_the_kind_default() {
    let table = [
        (0, None),
        (1, Some(Priority::Low)),
        (2, Some(Priority::Normal)),
        (3, Some(Priority::High)),
        (4, Some(Priority::Critical)),
    ];
    for (wire, domain) in table {
        let req = proof_request(pb::SubmitProofRequest {
            priority: wire,
            ..winning()
        })
        .unwrap();
        assert_eq!(req.priority, domain, "wire priority {wire}");
    }
}

#[test]
fn bad_requests_name_the_field() {
    type Case = (
        &'static str,
        pb::SubmitProofRequest,
        &'static [&'static str],
    );
    let cases: Vec<Case> = vec![
        (
            "unspecified kind",
            pb::SubmitProofRequest {
                proof_kind: 0,
                ..winning()
            },
            &["proof_kind is unspecified", "WINNING_POST (4)"],
        ),
        (
            "unknown kind",
            pb::SubmitProofRequest {
                proof_kind: 9,
                ..winning()
            },
            &["proof_kind 9"],
        ),
        (
            "unknown priority",
            pb::SubmitProofRequest {
                priority: 7,
                ..winning()
            },
            &["priority 7"],
        ),
        (
            "short randomness",
            pb::SubmitProofRequest {
                randomness: vec![0; 31],
                ..winning()
            },
            &["randomness is 31 bytes", "exactly 32"],
        ),
        (
            "long randomness",
            pb::SubmitProofRequest {
                randomness: vec![0; 33],
                ..wpost()
            },
            &["randomness is 33 bytes"],
        ),
        (
            "no randomness",
            pb::SubmitProofRequest {
                randomness: vec![],
                ..wpost()
            },
            &["randomness is missing", "32 bytes"],
        ),
        (
            "no vanilla proofs",
            pb::SubmitProofRequest {
                vanilla_proofs: vec![],
                ..winning()
            },
            &["vanilla_proofs is empty"],
        ),
        (
            "empty vanilla proof entry",
            pb::SubmitProofRequest {
                vanilla_proofs: vec![vec![1], vec![]],
                ..wpost()
            },
            &["vanilla_proofs[1] is empty"],
        ),
        (
            "porep without c1",
            pb::SubmitProofRequest {
                vanilla_proof: vec![],
                ..porep()
            },
            &["vanilla_proof is empty", "commit phase 1"],
        ),
        (
            "snap short comm_r_old",
            pb::SubmitProofRequest {
                comm_r_old: vec![0; 16],
                ..snap()
            },
            &["comm_r_old is 16 bytes"],
        ),
        (
            "snap no comm_r_new",
            pb::SubmitProofRequest {
                comm_r_new: vec![],
                ..snap()
            },
            &["comm_r_new is missing"],
        ),
        (
            "snap long comm_d_new",
            pb::SubmitProofRequest {
                comm_d_new: vec![0; 64],
                ..snap()
            },
            &["comm_d_new is 64 bytes"],
        ),
        (
            "snap no partition proofs",
            pb::SubmitProofRequest {
                vanilla_proofs: vec![],
                ..snap()
            },
            &["vanilla_proofs is empty", "partition proof"],
        ),
    ];
    for (name, req, words) in cases {
        let msg = message(proof_request(req));
        for word in words {
            assert!(msg.contains(word), "{name}: {msg:?} lacks {word:?}");
        }
    }
}

#[test]
fn empty_ids_are_rejected() {
    assert!(message(job_id("").map(|_| ())).contains("job_id is empty"));
    assert!(message(circuit_id("").map(|_| ())).contains("circuit_id is empty"));
    assert_eq!(job_id("abc").unwrap(), "abc");
}

/// Garbage in: whatever a client sends, conversion answers Ok or INVALID_ARGUMENT, never panics.
mod garbage {
    use proptest::collection::vec;
    use proptest::prelude::*;

    use super::*;
    use crate::api::error::code_of;

    /// Enum numbers around the known ones (negative and one past the end) and anywhere in i32.
    fn wire_enum() -> impl Strategy<Value = i32> {
        prop_oneof![-2..=6i32, any::<i32>()]
    }

    /// Bytes of the lengths that matter (empty, a digest, one off) and of any length up to 80.
    fn field_bytes() -> impl Strategy<Value = Vec<u8>> {
        prop_oneof![
            Just(Vec::new()),
            vec(any::<u8>(), DIGEST_BYTES),
            vec(any::<u8>(), DIGEST_BYTES - 1..=DIGEST_BYTES + 1),
            vec(any::<u8>(), 0..80),
        ]
    }

    /// `req` with only the fields its kind uses.
    fn kinds_fields(req: &pb::SubmitProofRequest) -> pb::SubmitProofRequest {
        let kind = pb::ProofKind::try_from(req.proof_kind).unwrap();
        let common = pb::SubmitProofRequest {
            request_id: req.request_id.clone(),
            proof_kind: req.proof_kind,
            sector_size: req.sector_size,
            registered_proof: req.registered_proof,
            priority: req.priority,
            ..Default::default()
        };
        let post = pb::SubmitProofRequest {
            vanilla_proofs: req.vanilla_proofs.clone(),
            miner_id: req.miner_id,
            randomness: req.randomness.clone(),
            ..common.clone()
        };
        match kind {
            pb::ProofKind::PorepSealCommit => pb::SubmitProofRequest {
                vanilla_proof: req.vanilla_proof.clone(),
                sector_number: req.sector_number,
                miner_id: req.miner_id,
                ..common
            },
            pb::ProofKind::SnapDealsUpdate => pb::SubmitProofRequest {
                vanilla_proofs: req.vanilla_proofs.clone(),
                comm_r_old: req.comm_r_old.clone(),
                comm_r_new: req.comm_r_new.clone(),
                comm_d_new: req.comm_d_new.clone(),
                ..common
            },
            pb::ProofKind::WindowPostPartition => pb::SubmitProofRequest {
                partition_index: req.partition_index,
                ..post
            },
            _ => post,
        }
    }

    prop_compose! {
        fn any_submit()(
            request_id in ".{0,12}",
            proof_kind in wire_enum(),
            sector_size in any::<u64>(),
            registered_proof in any::<u64>(),
            priority in wire_enum(),
            vanilla_proof in field_bytes(),
            vanilla_proofs in vec(field_bytes(), 0..4),
            sector_number in any::<u64>(),
            miner_id in any::<u64>(),
            randomness in field_bytes(),
            partition_index in any::<u32>(),
            comm_r_old in field_bytes(),
            comm_r_new in field_bytes(),
            comm_d_new in field_bytes(),
        ) -> pb::SubmitProofRequest {
            pb::SubmitProofRequest {
                request_id, proof_kind, sector_size, registered_proof, priority, vanilla_proof,
                vanilla_proofs, sector_number, miner_id, randomness, partition_index, comm_r_old,
                comm_r_new, comm_d_new,
            }
        }
    }

    /// Ok carries the request through unchanged; an error is INVALID_ARGUMENT with a message.
    fn check(req: &pb::SubmitProofRequest, result: Result<ProofRequest, EngineError>) {
        let known_kind = (1..=4).contains(&req.proof_kind);
        let known_priority = (0..=4).contains(&req.priority);
        match result {
            Ok(out) => {
                assert!(known_kind && known_priority, "accepted {req:?}");
                assert_eq!(out.kind(), proof_kind(req.proof_kind).unwrap());
                assert_eq!(out.priority, priority(req.priority).unwrap());
                assert_eq!(out.request_id, req.request_id);
                // Every field the kind uses comes through unchanged; the others are not kept.
                let back = crate::api::client_request::submit_request(
                    &out.input,
                    pb::Priority::try_from(req.priority).unwrap(),
                    req.request_id.clone(),
                );
                assert_eq!(back, kinds_fields(req));
            }
            Err(err) => {
                assert_eq!(code_of(&err), tonic::Code::InvalidArgument, "{err}");
                assert!(!err.to_string().is_empty());
            }
        }
    }

    /// A request every kind's rules accept: a known kind and priority, and what that kind needs
    /// (a C1 output; non-empty vanilla proofs; 32-byte randomness or commitments).
    fn valid_submit() -> impl Strategy<Value = pb::SubmitProofRequest> {
        let nonempty = || vec(any::<u8>(), 1..40);
        (
            any_submit(),
            1..=4i32,
            0..=4i32,
            nonempty(),
            vec(nonempty(), 1..4),
            [
                vec(any::<u8>(), DIGEST_BYTES),
                vec(any::<u8>(), DIGEST_BYTES),
            ],
            vec(any::<u8>(), DIGEST_BYTES),
            vec(any::<u8>(), DIGEST_BYTES),
        )
            .prop_map(
                |(mut r, kind, priority, c1, proofs, [a, b], c, randomness)| {
                    r.proof_kind = kind;
                    r.priority = priority;
                    r.vanilla_proof = c1;
                    r.vanilla_proofs = proofs;
                    (r.comm_r_old, r.comm_r_new, r.comm_d_new) = (a, b, c);
                    r.randomness = randomness;
                    // A WinningPoSt has one partition: any other index is refused.
                    if kind == pb::ProofKind::WinningPost as i32 {
                        r.partition_index = 0;
                    }
                    r
                },
            )
    }

    /// One way to break a valid request, and a word its refusal must name.
    fn broken(
        mut r: pb::SubmitProofRequest,
        how: usize,
        value: i32,
    ) -> (pb::SubmitProofRequest, &'static str) {
        let kind = proof_kind(r.proof_kind).unwrap();
        let needs_proofs = kind != ProofKind::PorepSealCommit;
        match how {
            0 => {
                r.proof_kind = if value > 4 { value } else { 5 };
                (r, "proof_kind")
            }
            1 => {
                r.priority = if value > 4 { value } else { -1 };
                (r, "priority")
            }
            2 if needs_proofs => {
                r.vanilla_proofs.clear();
                (r, "vanilla_proofs is empty")
            }
            3 if needs_proofs => {
                r.vanilla_proofs.push(Vec::new());
                (r, "is empty")
            }
            4 if kind == ProofKind::SnapDealsUpdate => {
                r.comm_d_new.pop();
                (r, "comm_d_new is 31 bytes")
            }
            4 if needs_proofs => {
                r.randomness.clear();
                (r, "randomness is missing")
            }
            _ => {
                r.proof_kind = pb::ProofKind::PorepSealCommit as i32;
                r.vanilla_proof.clear();
                (r, "vanilla_proof is empty")
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        #[test]
        fn every_valid_request_converts(req in valid_submit()) {
            let converted = proof_request(req.clone());
            prop_assert!(converted.is_ok(), "refused {req:?}: {:?}", converted.err());
            check(&req, converted);
        }

        #[test]
        fn every_broken_request_is_invalid_argument_naming_what_is_wrong(
            req in valid_submit(), how in 0..6usize, value in any::<i32>(),
        ) {
            let (req, names) = broken(req, how, value);
            let err = proof_request(req.clone()).expect_err("a broken request is refused");
            prop_assert_eq!(code_of(&err), tonic::Code::InvalidArgument);
            prop_assert!(err.to_string().contains(names), "{err} (want {names:?}) for {req:?}");
        }

        #[test]
        fn any_submit_request_converts_or_is_invalid_argument(req in any_submit()) {
            check(&req, proof_request(req.clone()));
        }

        #[test]
        fn any_prove_request_converts_or_is_invalid_argument(
            submit in proptest::option::of(any_submit()),
        ) {
            let result = prove_request(pb::ProveRequest { submit: submit.clone() });
            match submit {
                Some(req) => check(&req, result),
                None => {
                    let err = result.unwrap_err();
                    assert_eq!(code_of(&err), tonic::Code::InvalidArgument);
                    assert!(err.to_string().contains("submit is missing"), "{err}");
                }
            }
        }
    }
}
