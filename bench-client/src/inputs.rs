//! Where `single` and `batch` get their proof input: fixtures written by `gen`, or the files
//! Curio sends (a C1 output, vanilla proofs) with the fields it sends beside them. Fields a file
//! states (a Curio wrapper's sector number and size, a C1 output's proof type) are taken from
//! it; the rest are flags, and a missing one is named.

use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use base64::Engine;
use bytesize::ByteSize;
use snarkd_prover::{PoRepInput, PostInput, ProofInput, ProofKind, Registered, SnapInput};

use crate::check::{Check, SealPublic};
use crate::request::{load, parse_kind};

/// The proof input, from fixtures or from Curio's files.
#[derive(clap::Args, Debug)]
pub struct InputArgs {
    /// porep, snap, wpost or winning [default: porep with --c1].
    #[arg(short = 't', long = "type", value_parser = parse_kind)]
    pub kind: Option<ProofKind>,
    /// Fixtures written by `gen`.
    #[arg(long, conflicts_with_all = ["c1", "vanilla"])]
    pub input: Option<PathBuf>,
    /// A PoRep C1 output: the bare JSON filecoin-proofs writes, or Curio's
    /// {SectorNum, Phase1Out, SectorSize} wrapper.
    #[arg(long, conflicts_with = "vanilla")]
    pub c1: Option<PathBuf>,
    /// Vanilla proof files as Curio sends them: one per sector for WinningPoSt and WindowPoSt
    /// (bincode FallbackPoStSectorProof), one per partition for SnapDeals.
    #[arg(long, num_args = 1..)]
    pub vanilla: Vec<PathBuf>,
    /// The PoSt randomness, 32 bytes in hex.
    #[arg(long, value_parser = hex32)]
    pub randomness: Option<[u8; 32]>,
    /// The WindowPoSt partition the vanilla proofs are for.
    #[arg(long, default_value_t = 0)]
    pub partition: u32,
    /// The miner's actor id (the prover id is derived from it).
    #[arg(long)]
    pub miner_id: Option<u64>,
    /// The sector number (PoRep; a Curio wrapper states it).
    #[arg(long)]
    pub sector_number: Option<u64>,
    /// SnapDeals commitments, 32 bytes in hex each.
    #[arg(long, value_parser = hex32)]
    pub comm_r_old: Option<[u8; 32]>,
    #[arg(long, value_parser = hex32)]
    pub comm_r_new: Option<[u8; 32]>,
    #[arg(long, value_parser = hex32)]
    pub comm_d_new: Option<[u8; 32]>,
    /// To check a PoSt proof here: each challenged sector's comm_r, SECTOR=HEX (repeat).
    #[arg(long = "comm-r", value_parser = sector_comm_r)]
    pub comm_r: Vec<(u64, [u8; 32])>,
    /// The registered proof number sent [default: what the input states, else from
    /// --sector-size].
    #[arg(long)]
    pub registered_proof: Option<u64>,
    /// The sector size, e.g. 2KiB or 32GiB [default: what the input states].
    #[arg(long)]
    pub sector_size: Option<ByteSize>,
}

/// A request to send, and how to check its proof here (when the input allows).
pub struct Loaded {
    pub input: ProofInput,
    pub check: Option<Check>,
    /// Why the proof is not checked here, when it is not.
    pub unchecked: Option<String>,
}

impl InputArgs {
    pub fn load(&self) -> Result<Loaded> {
        if let Some(dir) = &self.input {
            let kind = self
                .kind
                .context("--input needs -t/--type: porep, snap, wpost or winning")?;
            let input = load(dir, kind)?;
            let check = Check::from_fixtures(dir, kind)?;
            return Ok(Loaded {
                input,
                check: Some(check),
                unchecked: None,
            });
        }
        if let Some(path) = &self.c1 {
            if self.kind.is_some_and(|k| k != ProofKind::PorepSealCommit) {
                bail!("--c1 is a PoRep input; leave out -t or give -t porep");
            }
            return self.porep(path);
        }
        if self.vanilla.is_empty() {
            bail!("say what to prove: --input DIR (from `gen`), --c1 FILE (PoRep) or --vanilla FILE… (PoSt, SnapDeals)");
        }
        match self.kind {
            Some(kind @ (ProofKind::WinningPost | ProofKind::WindowPost)) => self.post(kind),
            Some(ProofKind::SnapDealsUpdate) => self.snap(),
            Some(ProofKind::PorepSealCommit) => bail!("a PoRep input is a C1 output: --c1 FILE"),
            None => bail!("--vanilla needs -t/--type: winning, wpost or snap"),
        }
    }

    fn porep(&self, path: &PathBuf) -> Result<Loaded> {
        let raw = read(path)?;
        // One pass over the file: Curio's wrapper fields if it has them, the rest (a bare C1's
        // proofs) skipped unbuilt.
        let outer: CurioWrapper = serde_json::from_slice(&raw)
            .with_context(|| format!("{} is not JSON", path.display()))?;
        let inner;
        let json = match &outer.phase1_out {
            Some(b64) => {
                inner = base64::engine::general_purpose::STANDARD
                    .decode(b64.trim())
                    .context("the wrapper's Phase1Out is not base64")?;
                &inner[..]
            }
            None => &raw[..],
        };
        let seal: SealPublic = serde_json::from_slice(json)
            .with_context(|| format!("{} is not a C1 output", path.display()))?;
        let sector_number = self
            .sector_number
            .or(outer.sector_num)
            .context("a bare C1 output does not say its sector: give --sector-number")?;
        let miner_id = self.miner_id()?;
        let input = ProofInput::PoRep(PoRepInput {
            registered: Registered {
                registered_proof: self.registered_proof.unwrap_or(0),
                sector_size: self
                    .sector_size
                    .map(|s| s.as_u64())
                    .unwrap_or_else(|| u64::from(seal.registered_proof.sector_size())),
            },
            vanilla_proof: raw,
            sector_number,
            miner_id,
        });
        Ok(Loaded {
            input,
            check: Some(Check::Porep {
                seal,
                miner_id,
                sector_number,
            }),
            unchecked: None,
        })
    }

    fn post(&self, kind: ProofKind) -> Result<Loaded> {
        let size = self.size_index()?;
        let registered = match (self.registered_proof, size, kind) {
            (Some(n), _, _) => n,
            (None, Some(i), ProofKind::WinningPost) => i,
            (None, Some(i), _) => 10 + i, // WindowPoSt V1_2
            (None, None, _) => bail!("give --registered-proof or --sector-size for a PoSt input"),
        };
        let post = PostInput {
            registered: Registered {
                registered_proof: registered,
                sector_size: self.sector_size.map_or(0, |s| s.as_u64()),
            },
            vanilla_proofs: self.vanilla_files()?,
            randomness: self
                .randomness
                .context("a PoSt input needs its --randomness (32 bytes hex)")?
                .to_vec(),
            miner_id: self.miner_id()?,
        };
        let miner_id = post.miner_id;
        let input = match kind {
            ProofKind::WinningPost if self.partition != 0 => {
                bail!("a WinningPoSt has one partition: leave --partition out")
            }
            ProofKind::WinningPost => ProofInput::WinningPost(post),
            _ => ProofInput::WindowPost {
                post,
                partition_index: self.partition,
            },
        };
        let registered = snarkd_prover::filecoin::registered::post_proof(kind, registered)?;
        let (check, unchecked) = match self.comm_r.is_empty() {
            true => (
                None,
                Some("give --comm-r SECTOR=HEX for each sector to check it here".into()),
            ),
            false => (
                Some(Check::Post {
                    kind,
                    registered,
                    randomness: self.randomness.expect("checked above"),
                    miner_id,
                    sectors: self.comm_r.clone(),
                }),
                None,
            ),
        };
        Ok(Loaded {
            input,
            check,
            unchecked,
        })
    }

    fn snap(&self) -> Result<Loaded> {
        let registered = match (self.registered_proof, self.size_index()?) {
            (Some(n), _) => n,
            (None, Some(i)) => i,
            (None, None) => bail!("give --registered-proof or --sector-size for a SnapDeals input"),
        };
        let need = |v: Option<[u8; 32]>, flag: &str| {
            v.with_context(|| format!("a SnapDeals input needs --{flag} (32 bytes hex)"))
        };
        let (old, new, d) = (
            need(self.comm_r_old, "comm-r-old")?,
            need(self.comm_r_new, "comm-r-new")?,
            need(self.comm_d_new, "comm-d-new")?,
        );
        let input = ProofInput::SnapDeals(SnapInput {
            registered: Registered {
                registered_proof: registered,
                sector_size: self.sector_size.map_or(0, |s| s.as_u64()),
            },
            vanilla_proofs: self.vanilla_files()?,
            comm_r_old: old.to_vec(),
            comm_r_new: new.to_vec(),
            comm_d_new: d.to_vec(),
        });
        let registered = snarkd_prover::filecoin::registered::update_proof(registered)?;
        Ok(Loaded {
            input,
            check: Some(Check::Snap {
                registered,
                comm_r_old: old,
                comm_r_new: new,
                comm_d_new: d,
            }),
            unchecked: None,
        })
    }

    fn miner_id(&self) -> Result<u64> {
        self.miner_id
            .context("give --miner-id: the miner's actor id, from which the prover id is derived")
    }

    fn vanilla_files(&self) -> Result<Vec<Vec<u8>>> {
        self.vanilla.iter().map(read).collect()
    }

    /// 0 to 4 for 2 KiB, 8 MiB, 512 MiB, 32 GiB, 64 GiB; None without --sector-size.
    fn size_index(&self) -> Result<Option<u64>> {
        let Some(size) = self.sector_size else {
            return Ok(None);
        };
        let sizes = [2 << 10, 8 << 20, 512 << 20, 32 << 30, 64 << 30];
        match sizes.iter().position(|s| *s == size.as_u64()) {
            Some(i) => Ok(Some(i as u64)),
            None => bail!("--sector-size {size} is none of 2KiB, 8MiB, 512MiB, 32GiB, 64GiB"),
        }
    }
}

/// Curio's wrapper around a C1 output; both fields absent in a bare C1.
#[derive(serde::Deserialize)]
#[serde(rename_all = "PascalCase")]
struct CurioWrapper {
    #[serde(default)]
    sector_num: Option<u64>,
    #[serde(default)]
    phase1_out: Option<String>,
}

fn read(path: &PathBuf) -> Result<Vec<u8>> {
    std::fs::read(path).with_context(|| format!("reading {}", path.display()))
}

/// 32 bytes in hex.
pub fn hex32(s: &str) -> Result<[u8; 32], String> {
    let bytes = hex::decode(s.trim()).map_err(|e| format!("not hex: {e}"))?;
    bytes
        .try_into()
        .map_err(|b: Vec<u8>| format!("{} bytes; 32 are needed", b.len()))
}

/// SECTOR=HEX.
fn sector_comm_r(s: &str) -> Result<(u64, [u8; 32]), String> {
    let (sector, comm_r) = s
        .split_once('=')
        .ok_or_else(|| "SECTOR=HEX, e.g. 42=0f3c…".to_string())?;
    let sector = sector
        .trim()
        .parse()
        .map_err(|e| format!("sector number {sector:?}: {e}"))?;
    Ok((sector, hex32(comm_r)?))
}
