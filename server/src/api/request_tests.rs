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

fn message(result: Result<ProofRequest, EngineError>) -> String {
    match result {
        Err(EngineError::InvalidRequest(msg)) => msg,
        other => panic!("expected InvalidRequest, got {other:?}"),
    }
}

#[test]
fn valid_requests_convert_field_by_field() {
    let req = proof_request(winning()).unwrap();
    assert_eq!(req.kind, Some(ProofKind::WinningPost));
    assert_eq!(req.request_id, "r1");
    assert_eq!(req.priority, None);
    assert_eq!(req.randomness, vec![7; 32]);
    assert_eq!(req.miner_id, 1000);
    assert_eq!(req.vanilla_proofs, vec![vec![1, 2, 3]]);

    let req = proof_request(snap()).unwrap();
    assert_eq!(req.kind, Some(ProofKind::SnapDealsUpdate));
    assert_eq!(
        (req.comm_r_old[0], req.comm_r_new[0], req.comm_d_new[0]),
        (1, 2, 3)
    );

    let req = proof_request(porep()).unwrap();
    assert_eq!(req.kind, Some(ProofKind::PorepSealCommit));
    assert_eq!(req.vanilla_proof, b"{}");

    let req = proof_request(wpost()).unwrap();
    assert_eq!(req.kind, Some(ProofKind::WindowPost));
    assert_eq!(req.partition_index, 3);
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
    assert!(message(job_id("").map(|_| ProofRequest::default())).contains("job_id is empty"));
    assert!(
        message(circuit_id("").map(|_| ProofRequest::default())).contains("circuit_id is empty")
    );
    assert_eq!(job_id("abc").unwrap(), "abc");
}
