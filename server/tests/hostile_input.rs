//! Malformed and hostile requests against the real `snarkd` binary (real prover, CPU backend,
//! 2 KiB parameters): each gets its documented gRPC code and a message naming what is wrong, the
//! daemon stays alive, and its resident memory after the whole corpus stays within a bound of
//! what it was before.

mod common;
#[path = "common/real.rs"]
mod real;

use std::path::Path;

use common::process;
use real::{env, wire};
use snarkd_proto::v1 as pb;
use snarkd_prover::{test_params_dir, ProofKind};
use tonic::Code;

/// How much the daemon's RSS may grow over the corpus: allocator caches and tonic's buffers,
/// but nothing in proportion to the ~20 MiB the corpus sends (it was +30 MiB when written).
const RSS_GROWTH_BOUND_MIB: u64 = 64;

/// One malformed request and what it must get.
struct Case {
    name: &'static str,
    request: pb::SubmitProofRequest,
    code: Code,
    /// Every one of these must be in the message.
    mentions: &'static [&'static str],
}

fn base(kind: ProofKind) -> pb::SubmitProofRequest {
    wire(&env().fixtures.request(kind), pb::Priority::Unspecified)
}

fn with(
    kind: ProofKind,
    change: impl FnOnce(&mut pb::SubmitProofRequest),
) -> pb::SubmitProofRequest {
    let mut r = base(kind);
    change(&mut r);
    r
}

/// A bincode `FallbackPoStSectorProof` reduced to its sector id and comm_r followed by an empty
/// list of sector proofs.
fn without_sector_proofs(entry: &[u8]) -> Vec<u8> {
    [&entry[..40], &0u64.to_le_bytes()[..]].concat()
}

/// The C1 output with one byte of its seed changed.
fn c1_with_other_seed(c1: &[u8]) -> Vec<u8> {
    let mut json: serde_json::Value = serde_json::from_slice(c1).unwrap();
    let byte = json["seed"][0].as_u64().unwrap();
    json["seed"][0] = serde_json::Value::from((byte + 1) % 256);
    serde_json::to_vec(&json).unwrap()
}

/// The C1 output naming `name` as its proof type.
fn c1_with_proof_type(c1: &[u8], name: String) -> Vec<u8> {
    let mut json: serde_json::Value = serde_json::from_slice(c1).unwrap();
    json["registered_proof"] = serde_json::Value::from(name);
    serde_json::to_vec(&json).unwrap()
}

fn corpus() -> Vec<Case> {
    use ProofKind::{
        PorepSealCommit as Porep, SnapDealsUpdate as Snap, WindowPost as Window,
        WinningPost as Winning,
    };
    let invalid = Code::InvalidArgument;
    vec![
        Case {
            // serde quotes an unknown variant whole: the message (under 2 KiB, checked for
            // every case) and the log (checked at the end) must not.
            name: "porep c1 naming a 256 KiB proof type",
            request: with(Porep, |r| {
                r.vanilla_proof = c1_with_proof_type(&r.vanilla_proof, "Z".repeat(256 << 10))
            }),
            code: invalid,
            mentions: &["unknown variant", "ZZZZ", "more characters"],
        },
        Case {
            name: "window partition_index u32::MAX",
            request: with(Window, |r| r.partition_index = u32::MAX),
            code: invalid,
            mentions: &["partition_index 4294967295", "3000"],
        },
        Case {
            name: "window partition_index 10,000,000",
            request: with(Window, |r| r.partition_index = 10_000_000),
            code: invalid,
            mentions: &["partition_index 10000000"],
        },
        Case {
            name: "winning partition_index 1",
            request: with(Winning, |r| r.partition_index = 1),
            code: invalid,
            mentions: &["partition_index 1", "one partition"],
        },
        Case {
            name: "window vanilla proof with zero sector proofs",
            request: with(Window, |r| {
                r.vanilla_proofs[0] = without_sector_proofs(&r.vanilla_proofs[0])
            }),
            code: invalid,
            mentions: &["vanilla_proofs[0]", "0 sector proofs"],
        },
        Case {
            name: "window vanilla proof with a trailing byte",
            request: with(Window, |r| r.vanilla_proofs[0].push(0)),
            code: invalid,
            mentions: &["vanilla_proofs[0]", "bytes remaining"],
        },
        Case {
            name: "winning vanilla proof cut short",
            request: with(Winning, |r| {
                let n = r.vanilla_proofs[0].len() / 2;
                r.vanilla_proofs[0].truncate(n)
            }),
            code: invalid,
            mentions: &["vanilla_proofs[0]", "cannot decode"],
        },
        Case {
            name: "window vanilla proof of garbage claiming a huge length",
            request: with(Window, |r| {
                r.vanilla_proofs[0] = [&[0u8; 40][..], &u64::MAX.to_le_bytes()].concat()
            }),
            code: invalid,
            mentions: &["vanilla_proofs[0]", "cannot decode"],
        },
        Case {
            // Found by the post_vanilla fuzz target: filecoin's verifier would panic on it.
            name: "window vanilla proof whose comm_r is not a field element",
            request: with(Window, |r| r.vanilla_proofs[0][8..40].fill(0xff)),
            code: invalid,
            mentions: &["vanilla_proofs[0]", "not a BLS12-381 field element"],
        },
        Case {
            name: "window with the same sector twice",
            request: with(Window, |r| {
                r.vanilla_proofs = vec![r.vanilla_proofs[0].clone(); 2]
            }),
            code: invalid,
            mentions: &["two proofs for sector"],
        },
        Case {
            name: "window with other randomness",
            request: with(Window, |r| r.randomness = vec![9; 32]),
            code: invalid,
            mentions: &["randomness", "miner_id", "registered_proof"],
        },
        Case {
            // The sector id picks the challenged leaves: the inclusion proofs no longer match.
            name: "window vanilla proof with another sector id",
            request: with(Window, |r| r.vanilla_proofs[0][0] ^= 1),
            code: invalid,
            mentions: &["do not verify", "miner_id"],
        },
        Case {
            name: "winning with other randomness",
            request: with(Winning, |r| r.randomness = vec![9; 32]),
            code: invalid,
            mentions: &["randomness", "miner_id"],
        },
        Case {
            name: "window with 100,000 one-byte vanilla proofs",
            request: with(Window, |r| r.vanilla_proofs = vec![vec![1]; 100_000]),
            code: invalid,
            mentions: &["vanilla_proofs has 100000 entries", "2349"],
        },
        Case {
            // 8 MiB on the wire: refused before prost makes a Vec of each entry.
            name: "snap with 2.8 M one-byte vanilla proofs",
            request: with(Snap, |r| r.vanilla_proofs = vec![vec![1]; (8 << 20) / 3]),
            code: invalid,
            mentions: &["vanilla_proofs has 2796202 entries"],
        },
        Case {
            name: "window with 3 vanilla proofs (a 2 KiB partition holds 2 sectors)",
            request: with(Window, |r| {
                r.vanilla_proofs = vec![r.vanilla_proofs[0].clone(); 3]
            }),
            code: invalid,
            mentions: &["expected 1 to 2 vanilla proofs", "got 3"],
        },
        Case {
            name: "snap comm_d_new not a field element",
            request: with(Snap, |r| r.comm_d_new = vec![0xff; 32]),
            code: invalid,
            mentions: &["comm_d_new", "field element"],
        },
        Case {
            name: "snap comm_r_old and comm_r_new swapped",
            request: with(Snap, |r| {
                std::mem::swap(&mut r.comm_r_old, &mut r.comm_r_new)
            }),
            code: invalid,
            mentions: &["comm_r_old", "comm_r_new", "does not verify"],
        },
        Case {
            name: "snap with one partition proof too many",
            request: with(Snap, |r| r.vanilla_proofs.push(r.vanilla_proofs[0].clone())),
            code: invalid,
            mentions: &["partition proofs", "got 2"],
        },
        Case {
            name: "snap partition proof with a trailing byte",
            request: with(Snap, |r| r.vanilla_proofs[0].push(7)),
            code: invalid,
            mentions: &["vanilla_proofs[0]", "bytes remaining"],
        },
        Case {
            name: "porep c1 output with another seed",
            request: with(Porep, |r| {
                r.vanilla_proof = c1_with_other_seed(&r.vanilla_proof)
            }),
            code: invalid,
            mentions: &["c1 output", "do not verify"],
        },
        Case {
            name: "porep registered_proof of another sector size",
            request: with(Porep, |r| r.registered_proof = 8),
            code: invalid,
            mentions: &["registered_proof 8", "StackedDrg2KiBV1_1"],
        },
        Case {
            name: "porep c1 output that is not json",
            request: with(Porep, |r| r.vanilla_proof = b"\x00\x01 not json".to_vec()),
            code: invalid,
            mentions: &["cannot decode", "c1 output"],
        },
        Case {
            name: "request_id of 1 MiB",
            request: with(Winning, |r| r.request_id = "x".repeat(1 << 20)),
            code: Code::ResourceExhausted,
            mentions: &["request_id is 1048576 bytes", "request_id_bytes"],
        },
        Case {
            name: "randomness of 33 bytes",
            request: with(Winning, |r| r.randomness = vec![1; 33]),
            code: invalid,
            mentions: &["randomness", "32 bytes"],
        },
    ]
}

fn rss_mib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let kib: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .expect("VmRSS in /proc/<pid>/status");
    kib / 1024
}

fn spawn_daemon(params_dir: &Path) -> (process::Proc, std::net::SocketAddr) {
    let mut daemon = process::spawn(
        Path::new(process::SNARKD),
        [
            ("SNARKD_PARAMS_DIR", params_dir.as_os_str().to_owned()),
            ("SNARKD_GPUS_BACKEND", "cpu".into()),
            ("SNARKD_MEMORY_BUDGET", "8GiB".into()),
        ],
    );
    let grpc = daemon.ready().grpc.parse().unwrap();
    (daemon, grpc)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_malformed_request_gets_its_code_and_the_daemon_stays_alive_and_small() {
    real::ensure_params(&ProofKind::ALL);
    let cases = corpus();
    let (mut daemon, grpc) = spawn_daemon(&test_params_dir());
    let mut client = common::connect(grpc).await;
    client
        .get_status(pb::GetStatusRequest {})
        .await
        .expect("GetStatus");
    let pid = daemon.child.id();
    let before = rss_mib(pid);

    let mut wrong = Vec::new();
    for case in &cases {
        // Twice: through SubmitProof and through Prove, Curio's call.
        let submitted = client.submit_proof(case.request.clone()).await;
        let proved = client
            .prove(pb::ProveRequest {
                submit: Some(case.request.clone()),
            })
            .await;
        for (call, result) in [
            ("SubmitProof", submitted.map(|_| ())),
            ("Prove", proved.map(|_| ())),
        ] {
            match result {
                Ok(()) => wrong.push(format!("{} via {call}: accepted", case.name)),
                Err(status) => {
                    let msg = status.message();
                    let missing: Vec<_> =
                        case.mentions.iter().filter(|m| !msg.contains(*m)).collect();
                    if status.code() != case.code || !missing.is_empty() {
                        wrong.push(format!(
                            "{} via {call}: {:?} {msg:?} (want {:?} mentioning {missing:?})",
                            case.name,
                            status.code(),
                            case.code
                        ));
                    }
                    if msg.matches("invalid request:").count() > 1 || msg.len() > 2048 {
                        wrong.push(format!("{} via {call}: message {msg:?}", case.name));
                    }
                }
            }
        }
        assert!(
            daemon.child.try_wait().unwrap().is_none(),
            "the daemon died on {}",
            case.name
        );
    }
    assert!(
        wrong.is_empty(),
        "{} of {} cases wrong:\n{}",
        wrong.len(),
        2 * cases.len(),
        wrong.join("\n")
    );

    let after = rss_mib(pid);
    eprintln!("daemon RSS: {before} MiB before the corpus, {after} MiB after");
    assert!(
        after <= before + RSS_GROWTH_BOUND_MIB,
        "RSS grew from {before} MiB to {after} MiB over the corpus"
    );
    // Nothing was accepted, so nothing is queued.
    let snapshot = common::wait_for_status(&mut client, |_| true).await;
    assert!(snapshot.jobs.is_empty(), "{:?}", snapshot.jobs);
    daemon.sigterm();
    let log = daemon.expect_clean_exit().await;
    let longest = log.iter().map(String::len).max().unwrap_or(0);
    assert!(
        longest <= 8192,
        "a log line of {longest} bytes: client text reached the log uncut"
    );
}

/// Curio's `cuzk-bench` sends `registered_proof = 0` for PoRep: the daemon accepts it. That the
/// C1 output's own type is the one used (`StackedDrg2KiBV1_1`, not type 0) is checked where the
/// type is chosen, on the prepared job (`server/prover/tests/filecoin/bad_input.rs`), and a
/// proof made with another type would not verify in `real_proofs.rs`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn porep_with_registered_proof_unset_takes_the_c1_outputs_type() {
    real::ensure_params(&[ProofKind::PorepSealCommit]);
    let (daemon, grpc) = spawn_daemon(&test_params_dir());
    let mut client = common::connect(grpc).await;
    let request = with(ProofKind::PorepSealCommit, |r| r.registered_proof = 0);
    let job = client
        .submit_proof(request)
        .await
        .expect("accepted")
        .into_inner()
        .job_id;
    client
        .cancel_proof(pb::CancelProofRequest { job_id: job })
        .await
        .expect("cancel");
    daemon.sigterm();
    daemon.expect_clean_exit().await;
}

/// Missing parameter files are the machine's state: FAILED_PRECONDITION at submit, through Prove
/// too (as the README's Errors table says), naming the file.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn missing_params_are_failed_precondition_for_submit_and_prove() {
    let empty = tempfile::tempdir().unwrap();
    let (daemon, grpc) = spawn_daemon(empty.path());
    let mut client = common::connect(grpc).await;
    let request = env().fixtures.request(ProofKind::WinningPost);
    let request = wire(&request, pb::Priority::Unspecified);
    let submitted = client.submit_proof(request.clone()).await.unwrap_err();
    let proved = client
        .prove(pb::ProveRequest {
            submit: Some(request),
        })
        .await
        .unwrap_err();
    for status in [submitted, proved] {
        assert_eq!(status.code(), Code::FailedPrecondition, "{status:?}");
        assert!(status.message().contains("is missing"), "{status:?}");
        assert!(status.message().contains(".params"), "{status:?}");
    }
    daemon.sigterm();
    daemon.expect_clean_exit().await;
}
