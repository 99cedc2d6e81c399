//! A growable bit set recording which variables occur (with a non-zero coefficient) in the A or
//! B linear combinations. The parameters hold A/B bases only for those variables, so the device
//! phase uses these bits to pair scalars with bases.

/// Bit per variable; `true` when the variable appears in the tracked linear combinations.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Density {
    words: Vec<u64>,
    len: usize,
    ones: usize,
}

impl Density {
    /// `len` variables, none present.
    pub fn with_len(len: usize) -> Self {
        Density {
            words: vec![0; len.div_ceil(64)],
            len,
            ones: 0,
        }
    }

    /// Appends a variable that does not (yet) appear.
    pub fn push(&mut self) {
        if self.len.is_multiple_of(64) {
            self.words.push(0);
        }
        self.len += 1;
    }

    /// Marks variable `i` as present.
    pub fn set(&mut self, i: usize) {
        debug_assert!(i < self.len);
        let (w, b) = (i / 64, i % 64);
        let bit = 1u64 << b;
        if self.words[w] & bit == 0 {
            self.words[w] |= bit;
            self.ones += 1;
        }
    }

    pub fn get(&self, i: usize) -> bool {
        self.words[i / 64] >> (i % 64) & 1 == 1
    }

    /// Number of variables tracked.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Number of variables present.
    pub fn count(&self) -> usize {
        self.ones
    }

    /// Appends the bits of `other`. For an input density (`merge_one`), `other`'s first
    /// variable is its own copy of ONE: it is merged into our ONE (bit 0) instead of appended.
    pub fn extend_from(&mut self, other: &Density, merge_one: bool) {
        let skip = if merge_one && !other.is_empty() {
            if other.get(0) {
                if self.is_empty() {
                    self.push();
                }
                self.set(0);
            }
            1
        } else {
            0
        };
        for i in skip..other.len {
            self.push();
            if other.get(i) {
                self.set(self.len - 1);
            }
        }
    }

    /// The positions of the variables present, in order.
    pub fn ones(&self) -> impl Iterator<Item = usize> + '_ {
        self.words.iter().enumerate().flat_map(|(w, &word)| {
            let mut bits = word;
            std::iter::from_fn(move || {
                (bits != 0).then(|| {
                    let b = bits.trailing_zeros() as usize;
                    bits &= bits - 1;
                    w * 64 + b
                })
            })
        })
    }

    /// Heap bytes held.
    pub fn size_bytes(&self) -> u64 {
        (self.words.capacity() * 8) as u64
    }
}
