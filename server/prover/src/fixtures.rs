//! Real request inputs for all four proof kinds, made by sealing a random sector with
//! filecoin-proofs (PC1, PC2, C1 need no parameters and take under a second at 2 KiB): a C1
//! output for PoRep, Winning/Window PoSt vanilla proofs, SnapDeals partition proofs of a random
//! update, and the remaining request fields. [`Fixtures::write`] lays them out in a directory
//! (what `snarkd-bench gen` writes) and [`Fixtures::read`] loads them back.
//!
//! Directory layout: `manifest.json` (request fields, hex for byte fields, and the seal's public
//! values), `porep-c1.json` (bare C1 JSON), `porep-c1-curio.json` (Curio's wrapper),
//! `winning-vanilla-<i>.bin`, `wpost-vanilla-<i>.bin`, `snap-partition-<i>.bin` (bincode), and
//! the same per kind as a JSON array of base64 strings (`<kind>-vanilla-proofs.json`).

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use base64::Engine;
use filecoin_proofs_api::seal::{
    add_piece, seal_commit_phase1, seal_pre_commit_phase1, seal_pre_commit_phase2,
    SealCommitPhase1Output,
};
use filecoin_proofs_api::update::{empty_sector_update_encode_into, generate_partition_proofs};
use filecoin_proofs_api::{
    post::{
        generate_fallback_sector_challenges, generate_single_vanilla_proof,
        generate_winning_post_sector_challenge,
    },
    PrivateReplicaInfo, RegisteredPoStProof, RegisteredSealProof, SectorId, UnpaddedBytesAmount,
};
use rand::{Rng, RngCore};
use serde::{Deserialize, Serialize};

use crate::circuit::size_index;
use crate::error::{ProverError, Result};
use crate::filecoin::registered::{post_proof_number, seal_proof_number, update_proof_number};
use crate::filecoin::{
    prover_id_from_miner_id, PoRepInput, PostInput, ProofInput, ProofKind, Registered, SnapInput,
};

/// Miner actor id used by the fixtures (t01000, the devnet's first miner).
pub const FIXTURE_MINER_ID: u64 = 1000;

/// Inputs for one request of every kind, from one sealed sector.
#[derive(Clone, Debug)]
pub struct Fixtures {
    pub sector_size: u64,
    pub porep: PoRepInput,
    pub winning: PostInput,
    /// The WindowPoSt partition's input; its index is the manifest's.
    pub window: PostInput,
    pub snap: SnapInput,
    pub manifest: Manifest,
}

/// `manifest.json`: request fields that are not files, plus the seal's public values (for
/// checking proofs with filecoin-proofs-api's verifiers).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Manifest {
    pub sector_size: u64,
    pub miner_id: u64,
    pub sector_number: u64,
    pub porep: KindEntry,
    pub winning: KindEntry,
    pub window: KindEntry,
    pub snap: KindEntry,
    /// Hex of the seal's comm_r, comm_d, ticket and seed.
    pub comm_r: String,
    pub comm_d: String,
    pub ticket: String,
    pub seed: String,
}

/// One kind's request fields in the manifest.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct KindEntry {
    pub registered_proof: u64,
    pub registered_proof_name: String,
    /// Files (relative to the manifest) with `vanilla_proof` (PoRep) or `vanilla_proofs`.
    pub files: Vec<String>,
    #[serde(default)]
    pub randomness: String,
    #[serde(default)]
    pub partition_index: u32,
    #[serde(default)]
    pub comm_r_old: String,
    #[serde(default)]
    pub comm_r_new: String,
    #[serde(default)]
    pub comm_d_new: String,
}

fn fc(e: anyhow::Error) -> ProverError {
    ProverError::filecoin(e)
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> ProverError + '_ {
    move |e| ProverError::io(path, e)
}

fn random_fr_bytes(rng: &mut impl RngCore) -> [u8; 32] {
    let mut b = [0u8; 32];
    rng.fill_bytes(&mut b);
    b[31] &= 0x3f; // below the BLS12-381 scalar modulus
    b
}

/// Seals a random sector of `sector_size` (V1_1 PoRep) in a temporary directory under
/// `work_dir`, and derives inputs for all four kinds from it. The temporary files are removed.
pub fn generate_fixtures(sector_size: u64, work_dir: &Path) -> Result<Fixtures> {
    let i = size_index(sector_size)?;
    let proofs = Proofs {
        seal: [5, 6, 7, 8, 9].map(|n| crate::filecoin::registered::seal_proof(n).expect("known"))
            [i],
        winning: crate::filecoin::registered::post_proof(ProofKind::WinningPost, i as u64)?,
        window: crate::filecoin::registered::post_proof(ProofKind::WindowPost, 10 + i as u64)?,
        update: crate::filecoin::registered::update_proof(i as u64)?,
    };
    fs::create_dir_all(work_dir).map_err(io(work_dir))?;
    let tmp = tempfile::Builder::new()
        .prefix("snarkd-fixtures")
        .tempdir_in(work_dir)
        .map_err(io(work_dir))?;
    let mut rng = rand::thread_rng();
    let sealed = seal(&proofs, sector_size, tmp.path(), &mut rng)?;
    let winning_randomness = random_fr_bytes(&mut rng);
    let window_randomness = random_fr_bytes(&mut rng);
    let winning_vanilla = post_vanilla(&sealed, proofs.winning, &winning_randomness)?;
    let window_vanilla = post_vanilla(&sealed, proofs.window, &window_randomness)?;
    let snap = snap_update(&proofs, &sealed, sector_size, tmp.path(), &mut rng)?;
    let manifest = Manifest {
        sector_size,
        miner_id: FIXTURE_MINER_ID,
        sector_number: sealed.sector_number,
        porep: entry(
            seal_proof_number(proofs.seal),
            format!("{:?}", proofs.seal),
            vec!["porep-c1.json".into()],
        ),
        winning: KindEntry {
            randomness: hex::encode(winning_randomness),
            ..entry(
                post_proof_number(proofs.winning),
                format!("{:?}", proofs.winning),
                vec!["winning-vanilla-0.bin".into()],
            )
        },
        window: KindEntry {
            randomness: hex::encode(window_randomness),
            partition_index: 0,
            ..entry(
                post_proof_number(proofs.window),
                format!("{:?}", proofs.window),
                vec!["wpost-vanilla-0.bin".into()],
            )
        },
        snap: KindEntry {
            comm_r_old: hex::encode(sealed.comm_r),
            comm_r_new: hex::encode(snap.comm_r_new),
            comm_d_new: hex::encode(snap.comm_d_new),
            ..entry(
                update_proof_number(proofs.update),
                format!("{:?}", proofs.update),
                (0..snap.partitions.len())
                    .map(|i| format!("snap-partition-{i}.bin"))
                    .collect(),
            )
        },
        comm_r: hex::encode(sealed.comm_r),
        comm_d: hex::encode(sealed.comm_d),
        ticket: hex::encode(sealed.ticket),
        seed: hex::encode(sealed.seed),
    };
    let files = FileSet {
        c1_json: sealed.c1_json,
        winning: vec![winning_vanilla],
        window: vec![window_vanilla],
        snap: snap.partitions,
    };
    let fixtures = Fixtures::from_parts(manifest, files)?;
    drop(tmp);
    Ok(fixtures)
}

/// The registered proofs of one sector size, one per kind.
struct Proofs {
    seal: RegisteredSealProof,
    winning: RegisteredPoStProof,
    window: RegisteredPoStProof,
    update: filecoin_proofs_api::RegisteredUpdateProof,
}

/// A sealed sector: its files, commitments and C1 output.
struct Sealed {
    sector_number: u64,
    sector_id: SectorId,
    prover_id: [u8; 32],
    cache: PathBuf,
    sealed: PathBuf,
    comm_r: [u8; 32],
    comm_d: [u8; 32],
    ticket: [u8; 32],
    seed: [u8; 32],
    c1_json: Vec<u8>,
}

/// Seals one piece of random data filling the sector, under `dir`, through C1.
fn seal(proofs: &Proofs, sector_size: u64, dir: &Path, rng: &mut impl RngCore) -> Result<Sealed> {
    let prover_id = prover_id_from_miner_id(FIXTURE_MINER_ID);
    let sector_number: u64 = rng.gen_range(1..1_000_000);
    let sector_id = SectorId::from(sector_number);
    let unpadded = UnpaddedBytesAmount::from(filecoin_proofs_api::PaddedBytesAmount(sector_size));
    let (staged, sealed, cache) = (dir.join("staged"), dir.join("sealed"), dir.join("cache"));
    fs::create_dir_all(&cache).map_err(io(&cache))?;
    let pieces = write_piece(proofs.seal, &dir.join("piece"), &staged, unpadded, rng)?;
    fs::File::create(&sealed).map_err(io(&sealed))?;
    let ticket = random_fr_bytes(rng);
    let seed = random_fr_bytes(rng);
    let pc1 = seal_pre_commit_phase1(
        proofs.seal,
        &cache,
        &staged,
        &sealed,
        prover_id,
        sector_id,
        ticket,
        &pieces,
    )
    .map_err(fc)?;
    let pc2 = seal_pre_commit_phase2(pc1, &cache, &sealed).map_err(fc)?;
    let (comm_r, comm_d) = (pc2.comm_r, pc2.comm_d);
    let c1: SealCommitPhase1Output = seal_commit_phase1(
        &cache, &sealed, prover_id, sector_id, ticket, seed, pc2, &pieces,
    )
    .map_err(fc)?;
    let c1_json = serde_json::to_vec(&c1).map_err(|e| ProverError::Filecoin(e.to_string()))?;
    Ok(Sealed {
        sector_number,
        sector_id,
        prover_id,
        cache,
        sealed,
        comm_r,
        comm_d,
        ticket,
        seed,
        c1_json,
    })
}

/// A PoSt vanilla proof of the sealed sector for `randomness`.
fn post_vanilla(
    sealed: &Sealed,
    proof: RegisteredPoStProof,
    randomness: &[u8; 32],
) -> Result<Vec<u8>> {
    let (sector_id, prover_id) = (sealed.sector_id, sealed.prover_id);
    if proof.typ() == filecoin_proofs_api::PoStType::Winning {
        let idx =
            generate_winning_post_sector_challenge(proof, randomness, 1, prover_id).map_err(fc)?;
        debug_assert_eq!(idx, vec![0]);
    }
    let challenges =
        generate_fallback_sector_challenges(proof, randomness, &[sector_id], prover_id)
            .map_err(fc)?;
    let replica = PrivateReplicaInfo::new(
        proof,
        sealed.comm_r,
        sealed.cache.clone(),
        sealed.sealed.clone(),
    );
    generate_single_vanilla_proof(proof, sector_id, &replica, &challenges[&sector_id]).map_err(fc)
}

/// A SnapDeals update of the sealed sector: its new commitments and partition proofs.
struct Snap {
    comm_r_new: [u8; 32],
    comm_d_new: [u8; 32],
    partitions: Vec<Vec<u8>>,
}

/// Encodes fresh random data into the sealed sector, under `dir`, and proves its partitions.
fn snap_update(
    proofs: &Proofs,
    sealed: &Sealed,
    sector_size: u64,
    dir: &Path,
    rng: &mut impl RngCore,
) -> Result<Snap> {
    let unpadded = UnpaddedBytesAmount::from(filecoin_proofs_api::PaddedBytesAmount(sector_size));
    let (new_staged, new_replica, new_cache) = (
        dir.join("new-staged"),
        dir.join("new-replica"),
        dir.join("new-cache"),
    );
    fs::create_dir_all(&new_cache).map_err(io(&new_cache))?;
    let new_pieces = write_piece(
        proofs.seal,
        &dir.join("new-piece"),
        &new_staged,
        unpadded,
        rng,
    )?;
    let f = fs::File::create(&new_replica).map_err(io(&new_replica))?;
    f.set_len(sector_size).map_err(io(&new_replica))?;
    let enc = empty_sector_update_encode_into(
        proofs.update,
        &new_replica,
        &new_cache,
        &sealed.sealed,
        &sealed.cache,
        &new_staged,
        &new_pieces,
    )
    .map_err(fc)?;
    let partitions = generate_partition_proofs(
        proofs.update,
        sealed.comm_r,
        enc.comm_r_new,
        enc.comm_d_new,
        &sealed.sealed,
        &sealed.cache,
        &new_replica,
        &new_cache,
    )
    .map_err(fc)?;
    Ok(Snap {
        comm_r_new: enc.comm_r_new,
        comm_d_new: enc.comm_d_new,
        partitions: partitions.into_iter().map(|p| p.0).collect(),
    })
}

fn entry(registered_proof: u64, registered_proof_name: String, files: Vec<String>) -> KindEntry {
    KindEntry {
        registered_proof,
        registered_proof_name,
        files,
        randomness: String::new(),
        partition_index: 0,
        comm_r_old: String::new(),
        comm_r_new: String::new(),
        comm_d_new: String::new(),
    }
}

/// Writes `size` bytes of random data as one piece into `staged`, returning its piece infos.
fn write_piece(
    proof: RegisteredSealProof,
    piece_path: &Path,
    staged: &Path,
    size: UnpaddedBytesAmount,
    rng: &mut impl RngCore,
) -> Result<Vec<filecoin_proofs_api::PieceInfo>> {
    let mut data = vec![0u8; u64::from(size) as usize];
    rng.fill_bytes(&mut data);
    fs::write(piece_path, &data).map_err(io(piece_path))?;
    let source = fs::File::open(piece_path).map_err(io(piece_path))?;
    let target = fs::File::create(staged).map_err(io(staged))?;
    let (info, _) = add_piece(proof, source, target, size, &[]).map_err(fc)?;
    Ok(vec![info])
}

struct FileSet {
    c1_json: Vec<u8>,
    winning: Vec<Vec<u8>>,
    window: Vec<Vec<u8>>,
    snap: Vec<Vec<u8>>,
}

impl Fixtures {
    fn from_parts(m: Manifest, files: FileSet) -> Result<Self> {
        let unhex = |field: &'static str, s: &str| {
            unhex(s).map_err(|reason| ProverError::Decode {
                what: format!("manifest {field}"),
                reason,
            })
        };
        let registered = |entry: &KindEntry| Registered {
            registered_proof: entry.registered_proof,
            sector_size: m.sector_size,
        };
        let porep = PoRepInput {
            registered: registered(&m.porep),
            vanilla_proof: files.c1_json,
            sector_number: m.sector_number,
            miner_id: m.miner_id,
        };
        let winning = PostInput {
            registered: registered(&m.winning),
            vanilla_proofs: files.winning,
            miner_id: m.miner_id,
            randomness: unhex("winning.randomness", &m.winning.randomness)?,
        };
        let window = PostInput {
            registered: registered(&m.window),
            vanilla_proofs: files.window,
            miner_id: m.miner_id,
            randomness: unhex("window.randomness", &m.window.randomness)?,
        };
        let snap = SnapInput {
            registered: registered(&m.snap),
            vanilla_proofs: files.snap,
            comm_r_old: unhex("snap.comm_r_old", &m.snap.comm_r_old)?,
            comm_r_new: unhex("snap.comm_r_new", &m.snap.comm_r_new)?,
            comm_d_new: unhex("snap.comm_d_new", &m.snap.comm_d_new)?,
        };
        Ok(Fixtures {
            sector_size: m.sector_size,
            porep,
            winning,
            window,
            snap,
            manifest: m,
        })
    }

    /// The request of `kind`.
    pub fn request(&self, kind: ProofKind) -> ProofInput {
        match kind {
            ProofKind::PorepSealCommit => ProofInput::PoRep(self.porep.clone()),
            ProofKind::WinningPost => ProofInput::WinningPost(self.winning.clone()),
            ProofKind::WindowPost => self.window_request(self.window.clone()),
            ProofKind::SnapDealsUpdate => ProofInput::SnapDeals(self.snap.clone()),
        }
    }

    /// A WindowPoSt request of `post` for the fixtures' partition.
    pub fn window_request(&self, post: PostInput) -> ProofInput {
        ProofInput::WindowPost {
            post,
            partition_index: self.manifest.window.partition_index,
        }
    }

    /// Writes the manifest and input files into `dir` (created if missing).
    pub fn write(&self, dir: &Path) -> Result<Vec<PathBuf>> {
        fs::create_dir_all(dir).map_err(io(dir))?;
        let mut written = Vec::new();
        let mut put = |name: &str, bytes: &[u8]| -> Result<()> {
            let path = dir.join(name);
            fs::File::create(&path)
                .and_then(|mut f| f.write_all(bytes))
                .map_err(|e| ProverError::io(&path, e))?;
            written.push(path);
            Ok(())
        };
        let m = &self.manifest;
        put(
            "manifest.json",
            &serde_json::to_vec_pretty(m).expect("serializable"),
        )?;
        put(&m.porep.files[0], &self.porep.vanilla_proof)?;
        let wrapped = serde_json::json!({
            "SectorNum": m.sector_number,
            "Phase1Out": base64::engine::general_purpose::STANDARD.encode(&self.porep.vanilla_proof),
            "SectorSize": m.sector_size,
        });
        put("porep-c1-curio.json", wrapped.to_string().as_bytes())?;
        let kinds = [
            ("winning", &m.winning, &self.winning.vanilla_proofs),
            ("wpost", &m.window, &self.window.vanilla_proofs),
            ("snap", &m.snap, &self.snap.vanilla_proofs),
        ];
        for (prefix, entry, vanilla_proofs) in kinds {
            for (name, bytes) in entry.files.iter().zip(vanilla_proofs) {
                put(name, bytes)?;
            }
            // The original daemon's bench tool reads a JSON array of base64 strings.
            let b64: Vec<String> = vanilla_proofs
                .iter()
                .map(|b| base64::engine::general_purpose::STANDARD.encode(b))
                .collect();
            let json = serde_json::to_vec(&b64).expect("serializable");
            put(&format!("{prefix}-vanilla-proofs.json"), &json)?;
        }
        Ok(written)
    }

    /// Reads fixtures written by [`Fixtures::write`].
    pub fn read(dir: &Path) -> Result<Self> {
        let read = |name: &str| {
            let path = dir.join(name);
            fs::read(&path).map_err(|e| ProverError::io(&path, e))
        };
        let m: Manifest =
            serde_json::from_slice(&read("manifest.json")?).map_err(|e| ProverError::Decode {
                what: "manifest.json".into(),
                reason: e.to_string(),
            })?;
        let many = |e: &KindEntry| e.files.iter().map(|f| read(f)).collect::<Result<Vec<_>>>();
        let files = FileSet {
            c1_json: read(&m.porep.files[0])?,
            winning: many(&m.winning)?,
            window: many(&m.window)?,
            snap: many(&m.snap)?,
        };
        Self::from_parts(m, files)
    }

    /// comm_r, comm_d, ticket and seed of the sealed sector (for filecoin-proofs' verify_seal).
    pub fn seal_values(&self) -> Result<SealValues> {
        let f = |s: &str| -> Result<[u8; 32]> {
            let v = unhex(s).map_err(|reason| ProverError::Decode {
                what: "manifest".into(),
                reason,
            })?;
            crate::filecoin::request_bytes32("manifest value", &v)
        };
        let m = &self.manifest;
        Ok(SealValues {
            comm_r: f(&m.comm_r)?,
            comm_d: f(&m.comm_d)?,
            ticket: f(&m.ticket)?,
            seed: f(&m.seed)?,
        })
    }
}

/// Public values of the sealed fixture sector.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SealValues {
    pub comm_r: [u8; 32],
    pub comm_d: [u8; 32],
    pub ticket: [u8; 32],
    pub seed: [u8; 32],
}

/// Parses lowercase or uppercase hex, the error naming what is wrong with it.
fn unhex(s: &str) -> std::result::Result<Vec<u8>, String> {
    hex::decode(s).map_err(|e| format!("bad hex {s:?}: {e}"))
}
