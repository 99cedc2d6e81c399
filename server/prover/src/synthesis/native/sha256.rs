//! [`sha256`]: bellperson's SHA-256 gadget (`gadgets::sha256::sha256`) computed natively: the
//! same digest bits and the same aux values in the same order, without building any linear
//! combination.
//!
//! What the gadget allocates, per 512-bit block (constants allocate nothing throughout):
//! - message schedule, for t = 16..64: σ0 (two XORs), σ1 (two XORs), then W[t] as a sum of four
//!   words;
//! - 64 rounds. The working variables `a` and `e` are kept as lists of words to add and only
//!   added when a round reads them, so each round allocates, in order: `e` (the sum of six
//!   words; round 0 reads the chaining value), Σ1 (two XORs), Ch, `a` (the sum of seven words;
//!   round 0 reads the chaining value), Σ0 (two XORs), Maj;
//! - the new chaining value, word 0 first: `a`'s pending sum with the old word 0, the other
//!   words as sums of two, `e`'s pending sum with the old word 4.

use super::bit::Bit;
use super::word::Word;
use crate::synthesis::precompiled::Column;

/// SHA-256's initial hash value (FIPS 180-4, 5.3.3).
const IV: [u32; 8] = [
    0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
];

/// SHA-256's round constants (FIPS 180-4, 4.2.2).
const K: [u32; 64] = [
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
];

/// The SHA-256 digest of `message` (bits, most significant bit of each byte first; a whole number
/// of bytes), as the gadget returns it: 256 bits, most significant bit of each byte first. Appends
/// to `aux` what the gadget allocates, in its order.
///
/// Panics if `message` is not a whole number of bytes (as the gadget does).
pub(crate) fn sha256(aux: &mut Column<'_>, message: &[Bit]) -> Vec<Bit> {
    assert!(
        message.len().is_multiple_of(8),
        "SHA-256 input must be whole bytes"
    );
    // Padding: a one bit, zeros up to 448 mod 512, the length in bits as 64 big-endian bits.
    let mut padded = Vec::with_capacity((message.len() + 64 + 1).next_multiple_of(512));
    padded.extend_from_slice(message);
    padded.push(Bit::Const(true));
    padded.resize(
        (padded.len() + 64).next_multiple_of(512) - 64,
        Bit::Const(false),
    );
    padded.extend(
        Bit::constants_le::<64>(message.len() as u64)
            .into_iter()
            .rev(),
    );

    let mut state = IV.map(Word::constant);
    for block in padded.chunks_exact(512) {
        state = compress(aux, block, &state);
    }
    state.into_iter().flat_map(Word::be_bits).collect()
}

/// One block of the compression function on chaining value `state`.
fn compress(aux: &mut Column<'_>, block: &[Bit], state: &[Word; 8]) -> [Word; 8] {
    let mut w: Vec<Word> = Vec::with_capacity(64);
    w.extend(block.chunks_exact(32).map(Word::from_be));
    for t in 16..64 {
        let x = w[t - 15];
        let sigma0 = x.rotr(7).xor(aux, x.rotr(18)).xor(aux, x.shr(3));
        let y = w[t - 2];
        let sigma1 = y.rotr(17).xor(aux, y.rotr(19)).xor(aux, y.shr(10));
        let next = Word::add_many(aux, &[w[t - 16], sigma0, w[t - 7], sigma1]);
        w.push(next);
    }

    let [_, mut b, mut c, mut d, _, mut f, mut g, mut h] = *state;
    // The terms of `a` and `e` not yet added (empty before round 0, which reads the state).
    let mut a_terms: Vec<Word> = Vec::new();
    let mut e_terms: Vec<Word> = Vec::new();
    for (t, (&k, &w_t)) in K.iter().zip(&w).enumerate() {
        let e = match t {
            0 => state[4],
            _ => Word::add_many(aux, &e_terms),
        };
        let big_sigma1 = e.rotr(6).xor(aux, e.rotr(11)).xor(aux, e.rotr(25));
        let choice = Word::ch(aux, e, f, g);
        let temp1 = [h, big_sigma1, choice, Word::constant(k), w_t];

        let a = match t {
            0 => state[0],
            _ => Word::add_many(aux, &a_terms),
        };
        let big_sigma0 = a.rotr(2).xor(aux, a.rotr(13)).xor(aux, a.rotr(22));
        let majority = Word::maj(aux, a, b, c);

        (h, g, f) = (g, f, e);
        e_terms = temp1.to_vec();
        e_terms.push(d);
        (d, c, b) = (c, b, a);
        a_terms = temp1.to_vec();
        a_terms.extend([big_sigma0, majority]);
    }

    a_terms.push(state[0]);
    e_terms.push(state[4]);
    let h0 = Word::add_many(aux, &a_terms);
    let h1 = Word::add_many(aux, &[state[1], b]);
    let h2 = Word::add_many(aux, &[state[2], c]);
    let h3 = Word::add_many(aux, &[state[3], d]);
    let h4 = Word::add_many(aux, &e_terms);
    let h5 = Word::add_many(aux, &[state[5], f]);
    let h6 = Word::add_many(aux, &[state[6], g]);
    let h7 = Word::add_many(aux, &[state[7], h]);
    [h0, h1, h2, h3, h4, h5, h6, h7]
}
