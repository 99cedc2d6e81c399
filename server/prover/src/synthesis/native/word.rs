//! [`Word`]: 32 bits, least significant first, as bellperson's `UInt32` holds them, with the
//! word operations of the SHA-256 gadget. Rotations and shifts only rearrange bits; XOR, Ch and
//! Maj work bit by bit from bit 0 up; [`Word::add_many`] allocates the whole sum's bits.

use super::bit::Bit;
use crate::synthesis::precompiled::Column;

/// A 32-bit word, least significant bit first.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Word([Bit; 32]);

impl Word {
    /// A constant word (nothing allocated).
    pub(crate) fn constant(value: u32) -> Word {
        Word(Bit::constants_le(u64::from(value)))
    }

    /// The word whose bits, most significant first, are `bits` (32 of them): a big-endian word
    /// of the message.
    pub(crate) fn from_be(bits: &[Bit]) -> Word {
        assert_eq!(bits.len(), 32, "a word is 32 bits");
        Word(std::array::from_fn(|i| bits[31 - i]))
    }

    /// The bits, most significant first.
    pub(crate) fn be_bits(self) -> impl Iterator<Item = Bit> {
        self.0.into_iter().rev()
    }

    /// The word's value.
    fn value(&self) -> u32 {
        self.0
            .iter()
            .rev()
            .fold(0, |acc, bit| (acc << 1) | u32::from(bit.value()))
    }

    /// Whether every bit is a constant.
    fn is_const(&self) -> bool {
        self.0.iter().all(|bit| bit.is_const())
    }

    /// Rotated right by `by` bits (nothing allocated).
    pub(crate) fn rotr(self, by: usize) -> Word {
        Word(std::array::from_fn(|i| self.0[(i + by) % 32]))
    }

    /// Shifted right by `by` bits, constant zeros coming in (nothing allocated).
    pub(crate) fn shr(self, by: usize) -> Word {
        Word(std::array::from_fn(|i| {
            self.0.get(i + by).copied().unwrap_or(Bit::Const(false))
        }))
    }

    /// Applies `op` to bit 0, then bit 1 and so on: the allocation order of the gadget's
    /// bitwise operations.
    fn bitwise(mut op: impl FnMut(usize) -> Bit) -> Word {
        let mut bits = [Bit::Const(false); 32];
        for (i, bit) in bits.iter_mut().enumerate() {
            *bit = op(i);
        }
        Word(bits)
    }

    /// `self XOR other`, bit by bit ([`Bit::xor`]).
    pub(crate) fn xor(self, aux: &mut Column<'_>, other: Word) -> Word {
        Word::bitwise(|i| self.0[i].xor(aux, other.0[i]))
    }

    /// SHA-256's choice, bit by bit ([`Bit::ch`]).
    pub(crate) fn ch(aux: &mut Column<'_>, e: Word, f: Word, g: Word) -> Word {
        Word::bitwise(|i| Bit::ch(aux, e.0[i], f.0[i], g.0[i]))
    }

    /// SHA-256's majority, bit by bit ([`Bit::maj`]).
    pub(crate) fn maj(aux: &mut Column<'_>, a: Word, b: Word, c: Word) -> Word {
        Word::bitwise(|i| Bit::maj(aux, a.0[i], b.0[i], c.0[i]))
    }

    /// The sum of `terms` modulo 2³², as `UInt32::addmany`. All constants: a constant, nothing
    /// allocated. Otherwise the sum's bits, least significant first, as many as the largest
    /// possible sum of that many words needs (33 for 2 terms, 34 for 3–4, 35 for 5–8, whatever
    /// the terms are); the low 32 are the result.
    pub(crate) fn add_many(aux: &mut Column<'_>, terms: &[Word]) -> Word {
        let sum: u64 = terms.iter().map(|t| u64::from(t.value())).sum();
        if terms.iter().all(Word::is_const) {
            return Word::constant(sum as u32);
        }
        let largest = terms.len() as u64 * u64::from(u32::MAX);
        let width = u64::BITS - largest.leading_zeros();
        let mut bits = [Bit::Const(false); 32];
        for i in 0..width {
            let bit = Bit::alloc(aux, (sum >> i) & 1 == 1);
            if let Some(low) = bits.get_mut(i as usize) {
                *low = bit;
            }
        }
        Word(bits)
    }
}
