//! The byte layouts of the fuzz inputs, both ways: `parse` for the targets and `to_bytes` for the
//! seed writer (`seed/`, which includes this file by path, so it has no dependencies).
//!
//! Every byte string parses: a field the input is too short for reads as zeros, and a length
//! prefix is clamped to what is left. libFuzzer's mutations then always reach the decoders
//! instead of dying in our framing. Integers are little endian.

/// Reads fields off the front of an input.
struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    /// The next `n` bytes, or what is left of them (the caller zero-pads).
    fn take(&mut self, n: usize) -> &'a [u8] {
        let (head, tail) = self.0.split_at(n.min(self.0.len()));
        self.0 = tail;
        head
    }

    fn array<const N: usize>(&mut self) -> [u8; N] {
        let mut out = [0u8; N];
        let head = self.take(N);
        out[..head.len()].copy_from_slice(head);
        out
    }

    fn u8(&mut self) -> u8 {
        self.array::<1>()[0]
    }

    fn u32(&mut self) -> u32 {
        u32::from_le_bytes(self.array())
    }

    fn u64(&mut self) -> u64 {
        u64::from_le_bytes(self.array())
    }

    fn rest(self) -> &'a [u8] {
        self.0
    }
}

/// Most `vanilla_proofs` entries an input carries: one more than the 2 KiB circuits take
/// (1 WinningPoSt sector, 2 WindowPoSt sectors, 1 SnapDeals partition), so "too many" is reached.
pub const MAX_ENTRIES: usize = 3;

/// `[count u8][len u32, bytes] × (count − 1)[last entry: the rest]`, count = 1 + byte % 3.
fn parse_entries(mut r: Reader<'_>) -> Vec<Vec<u8>> {
    let count = 1 + r.u8() as usize % MAX_ENTRIES;
    let mut entries = Vec::with_capacity(count);
    for _ in 1..count {
        let len = r.u32() as usize;
        entries.push(r.take(len).to_vec());
    }
    entries.push(r.rest().to_vec());
    entries
}

fn entries_to_bytes(entries: &[Vec<u8>], out: &mut Vec<u8>) {
    assert!(
        (1..=MAX_ENTRIES).contains(&entries.len()),
        "1 to {MAX_ENTRIES} entries"
    );
    out.push(entries.len() as u8 - 1);
    let (last, head) = entries.split_last().expect("at least one entry");
    for entry in head {
        out.extend_from_slice(&(entry.len() as u32).to_le_bytes());
        out.extend_from_slice(entry);
    }
    out.extend_from_slice(last);
}

/// `porep_c1`: `[selector u8][sector_number u64][miner_id u64][vanilla_proof: the rest]`.
/// An even selector sends `registered_proof` 0 (take the C1 output's own type, as Curio's
/// daemon does), an odd one 5 (2 KiB V1_1), so both paths of the C1 check are fuzzed.
#[derive(Clone, Debug, PartialEq)]
pub struct Porep {
    pub registered_proof: u64,
    pub sector_number: u64,
    pub miner_id: u64,
    pub vanilla_proof: Vec<u8>,
}

impl Porep {
    pub fn parse(data: &[u8]) -> Self {
        let mut r = Reader(data);
        let registered_proof = if r.u8() % 2 == 0 { 0 } else { 5 };
        Porep {
            registered_proof,
            sector_number: r.u64(),
            miner_id: r.u64(),
            vanilla_proof: r.rest().to_vec(),
        }
    }

    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = vec![u8::from(self.registered_proof != 0)];
        out.extend_from_slice(&self.sector_number.to_le_bytes());
        out.extend_from_slice(&self.miner_id.to_le_bytes());
        out.extend_from_slice(&self.vanilla_proof);
        out
    }
}

/// `post_vanilla`: `[selector u8][miner_id u64][partition_index u32][randomness 32][entries]`.
/// An even selector is WinningPoSt (`registered_proof` 0, 2 KiB), an odd one WindowPoSt (10,
/// 2 KiB V1_2). `partition_index` is taken whole, so huge indices are fuzzed too.
#[derive(Clone, Debug, PartialEq)]
pub struct Post {
    pub window: bool,
    pub miner_id: u64,
    pub partition_index: u32,
    pub randomness: [u8; 32],
    pub vanilla_proofs: Vec<Vec<u8>>,
}

impl Post {
    /// `registered_proof` of the 2 KiB WinningPoSt and WindowPoSt (V1_2) circuits.
    pub const WINNING_2K: u64 = 0;
    pub const WINDOW_2K: u64 = 10;

    pub fn registered_proof(&self) -> u64 {
        if self.window {
            Self::WINDOW_2K
        } else {
            Self::WINNING_2K
        }
    }

    pub fn parse(data: &[u8]) -> Self {
        let mut r = Reader(data);
        Post {
            window: r.u8() % 2 == 1,
            miner_id: r.u64(),
            partition_index: r.u32(),
            randomness: r.array(),
            vanilla_proofs: parse_entries(r),
        }
    }

    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = vec![u8::from(self.window)];
        out.extend_from_slice(&self.miner_id.to_le_bytes());
        out.extend_from_slice(&self.partition_index.to_le_bytes());
        out.extend_from_slice(&self.randomness);
        entries_to_bytes(&self.vanilla_proofs, &mut out);
        out
    }
}

/// `snap_vanilla`: `[comm_r_old 32][comm_r_new 32][comm_d_new 32][entries]`, sent as SnapDeals
/// `registered_proof` 0 (2 KiB).
#[derive(Clone, Debug, PartialEq)]
pub struct Snap {
    pub comm_r_old: [u8; 32],
    pub comm_r_new: [u8; 32],
    pub comm_d_new: [u8; 32],
    pub vanilla_proofs: Vec<Vec<u8>>,
}

impl Snap {
    pub const UPDATE_2K: u64 = 0;

    pub fn parse(data: &[u8]) -> Self {
        let mut r = Reader(data);
        Snap {
            comm_r_old: r.array(),
            comm_r_new: r.array(),
            comm_d_new: r.array(),
            vanilla_proofs: parse_entries(r),
        }
    }

    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        out.extend_from_slice(&self.comm_r_old);
        out.extend_from_slice(&self.comm_r_new);
        out.extend_from_slice(&self.comm_d_new);
        entries_to_bytes(&self.vanilla_proofs, &mut out);
        out
    }
}
