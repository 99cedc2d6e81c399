//! Writes the fuzz targets' seed corpus (`server/fuzz/corpus/<target>/`) from the real 2 KiB
//! inputs that `snarkd-bench gen DIR` writes: each seed is a valid request in the target's
//! layout, plus a few near-misses that real clients send (a Curio-wrapped C1, swapped SnapDeals
//! commitments, a proof type left 0), so the fuzzer starts deep inside the decoders.
//!
//! Usage: snarkd-fuzz-seed FIXTURE_DIR CORPUS_DIR

#[path = "../../src/layout.rs"]
#[allow(dead_code)] // `parse` is the targets' half
mod layout;

use std::fs;
use std::path::{Path, PathBuf};

use layout::{Porep, Post, Snap};
use prost::Message;
use serde_json::Value;
use snarkd_proto::v1::{ProofKind, ProveRequest, SubmitProofRequest};

type Result<T> = std::result::Result<T, Box<dyn std::error::Error>>;

fn main() -> Result<()> {
    let args: Vec<PathBuf> = std::env::args_os().skip(1).map(PathBuf::from).collect();
    let [fixtures, corpus] = args.as_slice() else {
        return Err("usage: snarkd-fuzz-seed FIXTURE_DIR CORPUS_DIR".into());
    };
    let f = Fixtures::read(fixtures)?;
    let mut out = Corpus(corpus.clone());

    let c1 = f.file("porep-c1.json")?;
    let curio = f.file("porep-c1-curio.json")?;
    for (name, proof) in [("c1", &c1), ("curio", &curio)] {
        for registered_proof in [0, f.u64(&["porep", "registered_proof"])?] {
            let seed = Porep {
                registered_proof,
                sector_number: f.u64(&["sector_number"])?,
                miner_id: f.u64(&["miner_id"])?,
                vanilla_proof: proof.clone(),
            };
            out.put(
                "porep_c1",
                &format!("{name}-rp{registered_proof}"),
                &seed.to_bytes(),
            )?;
        }
    }

    let winning = f.post("winning", false)?;
    let window = f.post("window", true)?;
    out.put("post_vanilla", "winning", &winning.to_bytes())?;
    out.put("post_vanilla", "window", &window.to_bytes())?;
    // The same sector twice in one WindowPoSt partition, and a WinningPoSt sent as WindowPoSt.
    let twice = Post {
        vanilla_proofs: vec![window.vanilla_proofs[0].clone(); 2],
        ..window.clone()
    };
    out.put("post_vanilla", "window-sector-twice", &twice.to_bytes())?;
    let crossed = Post {
        window: true,
        ..winning.clone()
    };
    out.put("post_vanilla", "winning-as-window", &crossed.to_bytes())?;

    let snap = f.snap()?;
    out.put("snap_vanilla", "snap", &snap.to_bytes())?;
    // Curio's bench once swapped these; the circuit asserts on it.
    let swapped = Snap {
        comm_r_old: snap.comm_r_new,
        comm_r_new: snap.comm_r_old,
        ..snap.clone()
    };
    out.put("snap_vanilla", "snap-swapped-comm-r", &swapped.to_bytes())?;

    let porep_req = SubmitProofRequest {
        request_id: "fuzz-porep".into(),
        proof_kind: ProofKind::PorepSealCommit as i32,
        sector_size: f.u64(&["sector_size"])?,
        registered_proof: f.u64(&["porep", "registered_proof"])?,
        vanilla_proof: c1,
        sector_number: f.u64(&["sector_number"])?,
        miner_id: f.u64(&["miner_id"])?,
        ..Default::default()
    };
    let post_req = |kind: ProofKind, post: &Post, partition_index| SubmitProofRequest {
        request_id: format!("fuzz-{}", kind.as_str_name().to_lowercase()),
        proof_kind: kind as i32,
        sector_size: 2048,
        registered_proof: post.registered_proof(),
        vanilla_proofs: post.vanilla_proofs.clone(),
        miner_id: post.miner_id,
        randomness: post.randomness.to_vec(),
        partition_index,
        ..Default::default()
    };
    let winning_req = post_req(ProofKind::WinningPost, &winning, 0);
    let window_req = post_req(
        ProofKind::WindowPostPartition,
        &window,
        window.partition_index,
    );
    let snap_req = SubmitProofRequest {
        request_id: "fuzz-snap".into(),
        proof_kind: ProofKind::SnapDealsUpdate as i32,
        sector_size: 2048,
        registered_proof: Snap::UPDATE_2K,
        vanilla_proofs: snap.vanilla_proofs.clone(),
        comm_r_old: snap.comm_r_old.to_vec(),
        comm_r_new: snap.comm_r_new.to_vec(),
        comm_d_new: snap.comm_d_new.to_vec(),
        ..Default::default()
    };
    out.put("request", "submit-porep", &porep_req.encode_to_vec())?;
    out.put("request", "submit-winning", &winning_req.encode_to_vec())?;
    out.put("request", "submit-window", &window_req.encode_to_vec())?;
    out.put("request", "submit-snap", &snap_req.encode_to_vec())?;
    let prove = ProveRequest {
        submit: Some(winning_req),
    };
    out.put("request", "prove-winning", &prove.encode_to_vec())?;
    Ok(())
}

/// A `snarkd-bench gen` directory: `manifest.json` and the files it names.
struct Fixtures {
    dir: PathBuf,
    manifest: Value,
}

impl Fixtures {
    fn read(dir: &Path) -> Result<Self> {
        let manifest = serde_json::from_slice(&fs::read(dir.join("manifest.json"))?)?;
        Ok(Fixtures {
            dir: dir.to_owned(),
            manifest,
        })
    }

    fn file(&self, name: &str) -> Result<Vec<u8>> {
        Ok(fs::read(self.dir.join(name))?)
    }

    fn field(&self, path: &[&str]) -> Result<&Value> {
        path.iter()
            .try_fold(&self.manifest, |v, key| v.get(key))
            .ok_or_else(|| format!("manifest.json has no {}", path.join(".")).into())
    }

    fn u64(&self, path: &[&str]) -> Result<u64> {
        self.field(path)?
            .as_u64()
            .ok_or_else(|| format!("manifest.json {} is not a number", path.join(".")).into())
    }

    fn bytes32(&self, path: &[&str]) -> Result<[u8; 32]> {
        let hex = self.field(path)?.as_str().unwrap_or_default();
        let bytes: Vec<u8> = (0..hex.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(hex.get(i..i + 2).unwrap_or("zz"), 16))
            .collect::<std::result::Result<_, _>>()?;
        bytes
            .try_into()
            .map_err(|_| format!("manifest.json {} is not 32 bytes of hex", path.join(".")).into())
    }

    /// The vanilla proof files of one kind, in order.
    fn entries(&self, kind: &str) -> Result<Vec<Vec<u8>>> {
        let files = self
            .field(&[kind, "files"])?
            .as_array()
            .cloned()
            .unwrap_or_default();
        files
            .iter()
            .map(|name| self.file(name.as_str().unwrap_or_default()))
            .collect()
    }

    fn post(&self, kind: &str, window: bool) -> Result<Post> {
        let post = Post {
            window,
            miner_id: self.u64(&["miner_id"])?,
            partition_index: self.u64(&[kind, "partition_index"]).unwrap_or(0) as u32,
            randomness: self.bytes32(&[kind, "randomness"])?,
            vanilla_proofs: self.entries(kind)?,
        };
        let registered = self.u64(&[kind, "registered_proof"])?;
        if registered != post.registered_proof() {
            return Err(
                format!("{kind} fixtures are registered proof {registered}, not 2 KiB").into(),
            );
        }
        Ok(post)
    }

    fn snap(&self) -> Result<Snap> {
        Ok(Snap {
            comm_r_old: self.bytes32(&["snap", "comm_r_old"])?,
            comm_r_new: self.bytes32(&["snap", "comm_r_new"])?,
            comm_d_new: self.bytes32(&["snap", "comm_d_new"])?,
            vanilla_proofs: self.entries("snap")?,
        })
    }
}

/// The corpus directory: one folder per target.
struct Corpus(PathBuf);

impl Corpus {
    fn put(&mut self, target: &str, name: &str, bytes: &[u8]) -> Result<()> {
        let dir = self.0.join(target);
        fs::create_dir_all(&dir)?;
        fs::write(dir.join(name), bytes)?;
        println!("{target}/{name}: {} bytes", bytes.len());
        Ok(())
    }
}
