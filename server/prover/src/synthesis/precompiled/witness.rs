//! `WitnessCs`: a `ConstraintSystem` that only computes the witness. `enforce` never runs its
//! linear-combination closures, so no linear combination is built; gadgets that have a faster
//! witness path (`is_witness_generator`) take it.
//!
//! bellperson's own `WitnessCS` does the same but can neither reserve its vectors up front nor
//! hand them over without a copy (its fields are private and its getters clone), which at a
//! 32 GiB partition's hundred million aux values is gigabytes moved for nothing. Ours writes
//! into [`Column`]s: its own vectors, or one challenge's share of the partition's buffer
//! ([`WitnessCs::share`]), so that challenges written in parallel are never copied together.

use std::mem::MaybeUninit;

use bellperson::{ConstraintSystem, Index, LinearCombination, SynthesisError, Variable};
use blstrs::Scalar as Fr;
use rayon::prelude::*;

use super::column::{self, Column};

pub(crate) struct WitnessCs<'a> {
    pub(crate) inputs: Column<'a>,
    pub(crate) aux: Column<'a>,
}

/// A part of a witness that wrote other than its share.
#[derive(Debug, thiserror::Error)]
#[error(
    "part {part} wrote {written:?} (inputs, aux) values, its share is {share:?} (all parts are \
     one size)"
)]
pub(crate) struct Misfilled {
    pub(crate) part: usize,
    pub(crate) written: (usize, usize),
    pub(crate) share: (usize, usize),
}

impl WitnessCs<'static> {
    pub(crate) fn with_capacity(inputs: usize, aux: usize) -> Self {
        WitnessCs {
            inputs: Column::with_capacity(inputs),
            aux: Column::with_capacity(aux),
        }
    }
}

impl<'a> WitnessCs<'a> {
    /// The public inputs and aux values.
    pub(crate) fn into_vecs(self) -> (Vec<Fr>, Vec<Fr>) {
        (self.inputs.into_vec(), self.aux.into_vec())
    }

    /// Appends `n` parts of `each` (inputs, aux) values, part `i` written by `fill(i, system)`:
    /// all in parallel on the calling thread's rayon pool, each straight into its share of this
    /// system's vectors (no part is copied, no memory is first touched by one thread). A part
    /// that writes other than `each` fails as [`Misfilled`] and nothing is appended. Within a
    /// share (a part of a part) the parts are written one after another.
    pub(crate) fn fill_parts<E>(
        &mut self,
        n: usize,
        each: (usize, usize),
        fill: impl Fn(usize, &mut WitnessCs<'_>) -> Result<(), E> + Sync,
    ) -> Result<(), E>
    where
        E: From<Misfilled> + Send,
    {
        let (Some(inputs), Some(aux)) = (self.inputs.own_mut(), self.aux.own_mut()) else {
            return (0..n).try_for_each(|part| {
                let before = (self.inputs.len(), self.aux.len());
                fill(part, self)?;
                let written = (self.inputs.len() - before.0, self.aux.len() - before.1);
                match written == each {
                    true => Ok(()),
                    false => Err(Misfilled {
                        part,
                        written,
                        share: each,
                    }
                    .into()),
                }
            });
        };
        let (input_start, aux_start) = (inputs.len(), aux.len());
        inputs.reserve(n * each.0);
        aux.reserve(n * each.1);
        let input_shares = column::shares(inputs.spare_capacity_mut(), n, each.0);
        let aux_shares = column::shares(aux.spare_capacity_mut(), n, each.1);
        input_shares
            .into_par_iter()
            .zip(aux_shares)
            .enumerate()
            .try_for_each(|(part, (inputs, aux))| -> Result<(), E> {
                let mut sub = WitnessCs::share(inputs, aux);
                fill(part, &mut sub)?;
                match (sub.inputs.finish_share(), sub.aux.finish_share()) {
                    (Ok(()), Ok(())) => Ok(()),
                    (i, a) => Err(Misfilled {
                        part,
                        written: (
                            i.err().map_or(each.0, |e| e.0),
                            a.err().map_or(each.1, |e| e.0),
                        ),
                        share: each,
                    }
                    .into()),
                }
            })?;
        // SAFETY: every share was filled exactly (checked above), and the shares are the next
        // n · each values of the reserved capacity, one after another.
        unsafe {
            inputs.set_len(input_start + n * each.0);
            aux.set_len(aux_start + n * each.1);
        }
        Ok(())
    }

    /// A system writing one challenge's values into its shares of the partition's buffers.
    pub(crate) fn share(inputs: &'a mut [MaybeUninit<Fr>], aux: &'a mut [MaybeUninit<Fr>]) -> Self {
        WitnessCs {
            inputs: Column::share(inputs),
            aux: Column::share(aux),
        }
    }
}

impl ConstraintSystem<Fr> for WitnessCs<'_> {
    type Root = Self;

    /// Empty: a circuit making sub-systems for `extend` allocates their ONE itself.
    fn new() -> Self {
        WitnessCs::with_capacity(0, 0)
    }

    fn alloc<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Fr, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.aux.push(f()?);
        Ok(Variable::new_unchecked(Index::Aux(
            self.aux.len().saturating_sub(1),
        )))
    }

    fn alloc_input<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Fr, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.inputs.push(f()?);
        Ok(Variable::new_unchecked(Index::Input(
            self.inputs.len().saturating_sub(1),
        )))
    }

    fn enforce<A, AR, LA, LB, LC>(&mut self, _: A, _: LA, _: LB, _: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
        LB: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
        LC: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
    {
    }

    fn push_namespace<NR, N>(&mut self, _: N)
    where
        NR: Into<String>,
        N: FnOnce() -> NR,
    {
    }

    fn pop_namespace(&mut self) {}

    fn get_root(&mut self) -> &mut Self::Root {
        self
    }

    fn is_extensible() -> bool {
        true
    }

    /// Appends a sub-system synthesized in parallel, without its own ONE (its first input).
    fn extend(&mut self, other: &Self) {
        self.inputs.extend_from_slice(&other.inputs[1..]);
        self.aux.extend_from_slice(&other.aux);
    }

    fn is_witness_generator(&self) -> bool {
        true
    }

    fn extend_inputs(&mut self, new_inputs: &[Fr]) {
        self.inputs.extend_from_slice(new_inputs);
    }

    fn extend_aux(&mut self, new_aux: &[Fr]) {
        self.aux.extend_from_slice(new_aux);
    }

    fn allocate_empty(&mut self, aux_n: usize, inputs_n: usize) -> (&mut [Fr], &mut [Fr]) {
        (self.aux.grow(aux_n), self.inputs.grow(inputs_n))
    }

    fn allocate_empty_inputs(&mut self, n: usize) -> &mut [Fr] {
        self.inputs.grow(n)
    }

    fn allocate_empty_aux(&mut self, n: usize) -> &mut [Fr] {
        self.aux.grow(n)
    }

    fn inputs_slice(&self) -> &[Fr] {
        &self.inputs
    }

    fn aux_slice(&self) -> &[Fr] {
        &self.aux
    }
}

#[cfg(test)]
mod tests {
    use ff::Field;

    use super::*;

    /// Part `i` allocates `i·10 + k` for k in 0..3 as aux and `i` as an input.
    fn part(i: usize, cs: &mut WitnessCs<'_>) -> Result<(), Misfilled> {
        cs.alloc_input(|| "i", || Ok(Fr::from(i as u64))).unwrap();
        for k in 0..3 {
            cs.alloc(|| "v", || Ok(Fr::from((i * 10 + k) as u64)))
                .unwrap();
        }
        Ok(())
    }

    #[test]
    fn parts_are_written_in_place_in_their_order_after_what_was_there() {
        let mut cs = WitnessCs::with_capacity(0, 0);
        cs.alloc_input(|| "ONE", || Ok(Fr::ONE)).unwrap();
        cs.fill_parts(5, (1, 3), part).unwrap();
        let (inputs, aux) = cs.into_vecs();
        let want_inputs: Vec<Fr> = [1, 0, 1, 2, 3, 4].into_iter().map(Fr::from).collect();
        assert_eq!(inputs, want_inputs);
        let want_aux: Vec<Fr> = (0..5)
            .flat_map(|i| (0..3).map(move |k| Fr::from(i * 10 + k)))
            .collect();
        assert_eq!(aux, want_aux);
    }

    #[test]
    fn a_part_that_writes_other_than_its_share_appends_nothing() {
        let mut cs = WitnessCs::with_capacity(0, 0);
        let err = cs.fill_parts(4, (1, 2), part).unwrap_err();
        assert_eq!((err.written, err.share), ((1, 3), (1, 2)), "{err}");
        assert_eq!((cs.inputs.len(), cs.aux.len()), (0, 0));
        // Within a share, parts are written one after another, checked the same way.
        let mut inputs = vec![std::mem::MaybeUninit::uninit(); 2];
        let mut aux = vec![std::mem::MaybeUninit::uninit(); 6];
        let mut shared = WitnessCs::share(&mut inputs, &mut aux);
        shared.fill_parts(2, (1, 3), part).unwrap();
        assert_eq!(shared.aux.len(), 6);
        assert!(shared.aux.finish_share().is_ok() && shared.inputs.finish_share().is_ok());
    }
}
