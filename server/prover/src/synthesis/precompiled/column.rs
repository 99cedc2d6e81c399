//! `Column`: where a witness pass writes one kind of values (public inputs or aux). Either a
//! vector of its own, which grows, or a share of the partition's buffer that one challenge (or
//! sector) fills in place: written once, by the thread that runs that challenge, never copied.
//!
//! A share never grows. Values a challenge writes past its share are counted but kept apart
//! (a layout mistake, not memory to overrun); [`Column::finish_share`] says so, and the native
//! witness falls back to the gadgets' as for any other mistake.

use std::mem::MaybeUninit;

use blstrs::Scalar as Fr;
use ff::Field;

pub(crate) struct Column<'a> {
    store: Store<'a>,
}

enum Store<'a> {
    Own(Vec<Fr>),
    Share {
        share: &'a mut [MaybeUninit<Fr>],
        /// Values written into `share` (its first `written` are initialised).
        written: usize,
        /// Values past the end of `share`.
        over: Vec<Fr>,
    },
}

impl Column<'static> {
    pub(crate) fn with_capacity(n: usize) -> Self {
        Column {
            store: Store::Own(crate::spare::spare().vec(n)),
        }
    }
}

impl<'a> Column<'a> {
    /// The values (a share's are copied out of its buffer: only a column of its own is handed
    /// over whole).
    pub(crate) fn into_vec(self) -> Vec<Fr> {
        match self.store {
            Store::Own(v) => v,
            Store::Share { .. } => self.to_vec(),
        }
    }

    /// The vector, when this column has its own.
    pub(crate) fn own_mut(&mut self) -> Option<&mut Vec<Fr>> {
        match &mut self.store {
            Store::Own(v) => Some(v),
            Store::Share { .. } => None,
        }
    }

    /// A column writing into `share`, which must be filled exactly.
    pub(crate) fn share(share: &'a mut [MaybeUninit<Fr>]) -> Self {
        Column {
            store: Store::Share {
                share,
                written: 0,
                over: Vec::new(),
            },
        }
    }

    /// Ok when a share was filled exactly (always for an owned column); else how many values
    /// were written against the share's length.
    pub(crate) fn finish_share(&self) -> Result<(), (usize, usize)> {
        match &self.store {
            Store::Own(_) => Ok(()),
            Store::Share {
                share,
                written,
                over,
            } => {
                let total = written + over.len();
                if total == share.len() {
                    Ok(())
                } else {
                    Err((total, share.len()))
                }
            }
        }
    }

    pub(crate) fn push(&mut self, value: Fr) {
        match &mut self.store {
            Store::Own(v) => v.push(value),
            Store::Share {
                share,
                written,
                over,
            } => match share.get_mut(*written) {
                Some(slot) if over.is_empty() => {
                    slot.write(value);
                    *written += 1;
                }
                _ => over.push(value),
            },
        }
    }

    pub(crate) fn extend_from_slice(&mut self, values: &[Fr]) {
        match &mut self.store {
            Store::Own(v) => v.extend_from_slice(values),
            Store::Share { .. } => values.iter().for_each(|&x| self.push(x)),
        }
    }

    /// Grows by `n` zeros and returns them, to be written (`ConstraintSystem::allocate_empty`).
    pub(crate) fn grow(&mut self, n: usize) -> &mut [Fr] {
        match &mut self.store {
            Store::Own(v) => {
                let start = v.len();
                v.resize(start + n, Fr::ZERO);
                &mut v[start..]
            }
            Store::Share {
                share,
                written,
                over,
            } => {
                if over.is_empty() && *written + n <= share.len() {
                    let start = *written;
                    for slot in &mut share[start..start + n] {
                        slot.write(Fr::ZERO);
                    }
                    *written += n;
                    // SAFETY: the n values from `start` were written just above.
                    unsafe { assume_init_mut(&mut share[start..start + n]) }
                } else {
                    let start = over.len();
                    over.resize(start + n, Fr::ZERO);
                    &mut over[start..]
                }
            }
        }
    }
}

impl std::ops::Deref for Column<'_> {
    type Target = [Fr];

    /// The values written so far (a share's without those past its end).
    fn deref(&self) -> &[Fr] {
        match &self.store {
            Store::Own(v) => v,
            // SAFETY: the first `written` values of a share are initialised.
            Store::Share { share, written, .. } => unsafe {
                &*(&share[..*written] as *const [MaybeUninit<Fr>] as *const [Fr])
            },
        }
    }
}

impl std::ops::DerefMut for Column<'_> {
    fn deref_mut(&mut self) -> &mut [Fr] {
        match &mut self.store {
            Store::Own(v) => v,
            // SAFETY: the first `written` values of a share are initialised.
            Store::Share { share, written, .. } => unsafe {
                assume_init_mut(&mut share[..*written])
            },
        }
    }
}

impl Extend<Fr> for Column<'_> {
    fn extend<I: IntoIterator<Item = Fr>>(&mut self, values: I) {
        for value in values {
            self.push(value);
        }
    }
}

impl<'b> Extend<&'b Fr> for Column<'_> {
    fn extend<I: IntoIterator<Item = &'b Fr>>(&mut self, values: I) {
        self.extend(values.into_iter().copied());
    }
}

/// # Safety
/// Every element of `slice` is initialised.
unsafe fn assume_init_mut(slice: &mut [MaybeUninit<Fr>]) -> &mut [Fr] {
    // SAFETY: MaybeUninit<Fr> has Fr's layout; the caller vouches for initialisation.
    unsafe { &mut *(slice as *mut [MaybeUninit<Fr>] as *mut [Fr]) }
}

/// `n` shares of `each` values, one after another from the start of `buffer` (which holds at
/// least `n · each`); `each` may be zero.
pub(crate) fn shares(
    buffer: &mut [MaybeUninit<Fr>],
    n: usize,
    each: usize,
) -> Vec<&mut [MaybeUninit<Fr>]> {
    let mut rest = &mut buffer[..n * each];
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        let (share, tail) = std::mem::take(&mut rest).split_at_mut(each);
        out.push(share);
        rest = tail;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_share_is_filled_in_place_and_says_when_it_is_not_filled_exactly() {
        let mut buffer = vec![MaybeUninit::<Fr>::uninit(); 7];
        let mut parts = shares(&mut buffer, 2, 3);
        assert_eq!(parts.len(), 2);
        let mut first = Column::share(parts.remove(0));
        first.push(Fr::from(1));
        assert_eq!(first.finish_share(), Err((1, 3)));
        first.grow(2)[1] = Fr::from(3);
        assert_eq!(&first[..], &[Fr::from(1), Fr::ZERO, Fr::from(3)]);
        assert_eq!(first.finish_share(), Ok(()));
        // Past its end: kept apart, counted, never written over the next share.
        first.push(Fr::from(4));
        first.grow(2);
        assert_eq!(first.len(), 3);
        assert_eq!(first.finish_share(), Err((6, 3)));
        let mut second = Column::share(parts.remove(0));
        second.extend([Fr::from(5), Fr::from(6), Fr::from(7)]);
        assert_eq!(second.finish_share(), Ok(()));
        drop((first, second));
        // SAFETY: the first six were written through the two shares.
        let written: Vec<Fr> = buffer[..6]
            .iter()
            .map(|v| unsafe { v.assume_init() })
            .collect();
        let want: Vec<Fr> = [1, 0, 3, 5, 6, 7].into_iter().map(Fr::from).collect();
        assert_eq!(written, want);
    }

    #[test]
    fn empty_shares_are_shares_too() {
        let mut buffer: Vec<MaybeUninit<Fr>> = Vec::new();
        let parts = shares(&mut buffer, 3, 0);
        assert_eq!(parts.len(), 3);
        assert!(parts
            .into_iter()
            .all(|p| Column::share(p).finish_share().is_ok()));
    }
}
