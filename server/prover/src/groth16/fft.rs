//! The H polynomial on the CPU: radix-2 FFTs over BLS12-381's scalar field and the pointwise
//! passes between them, all on the thread pool of the calling thread's OS priority
//! ([`crate::threads::pool`]). bellperson's `EvaluationDomain` runs its FFTs on one process-wide
//! pool, where a background partition's FFT and a deadline partition's would queue behind each
//! other at one priority; here each runs on its own partition's threads.
//!
//! Each FFT is an iterative Cooley–Tukey transform after a bit-reversal permutation: the first
//! stages run chunk by chunk (a chunk of 2^[`LOG_CHUNK`] elements stays in the core's cache for all of
//! them), the later ones butterfly by butterfly across the whole vector.

use blstrs::Scalar as Fr;
use ff::{Field, PrimeField};
use rayon::prelude::*;

use crate::error::{ProverError, Result};
use crate::synthesis::Abc;
use crate::threads;

/// Elements per chunk of the early stages: 2^12 × 32 bytes = 128 KiB.
const LOG_CHUNK: u32 = 12;
/// Elements per parallel task in the pointwise passes and the late stages.
const TASK: usize = 1 << 14;

/// Coefficients of h(x) = (A(x)·B(x) − C(x)) / t(x), degree below the domain size minus one.
/// Consumes (and frees) the a/b/c evaluations.
pub fn compute_h(abc: Abc) -> Result<Vec<Fr>> {
    compute_h_in_steps(abc, &mut || {})
}

/// [`compute_h`] with `between` run after each of the six FFTs and after the pointwise steps:
/// the preemption points inside it.
pub fn compute_h_in_steps(abc: Abc, between: &mut dyn FnMut()) -> Result<Vec<Fr>> {
    let mut abc = abc;
    let domain = Domain::for_len(abc.a.len())?;
    // Each pass on the pool of this partition's priority; `between` on the calling thread.
    let pool = threads::pool();
    // Where synthesis left c = a∘b to the device phase, it is formed here, with the domain's room.
    let mut c = pool.install(|| abc.take_c(domain.size));
    let Abc { mut a, mut b, .. } = abc;
    for v in [&mut a, &mut b, &mut c] {
        // Exactly the domain: `resize` alone could double the capacity.
        v.reserve_exact(domain.size.saturating_sub(v.len()));
        v.resize(domain.size, Fr::ZERO);
    }
    // From evaluations on the domain to coefficients, then to evaluations on the coset g·H,
    // where t(x) = x^m − 1 is the non-zero constant g^m − 1. One FFT a step.
    for v in [&mut a, &mut b, &mut c] {
        pool.install(|| domain.ifft(v));
        between();
    }
    for v in [&mut a, &mut b, &mut c] {
        pool.install(|| domain.coset_fft(v));
        between();
    }
    let t_inv = domain
        .t_on_coset()
        .invert()
        .expect("g^m ≠ 1 for the field's generator");
    pool.install(|| {
        a.par_chunks_mut(TASK)
            .zip(b.par_chunks(TASK).zip(c.par_chunks(TASK)))
            .for_each(|(a, (b, c))| {
                for (a, (b, c)) in a.iter_mut().zip(b.iter().zip(c)) {
                    *a = (*a * b - c) * t_inv;
                }
            })
    });
    drop((b, c));
    between();
    pool.install(|| domain.icoset_fft(&mut a));
    // deg h ≤ m − 2: the top coefficient is zero and the parameters hold m − 1 H bases.
    a.truncate(a.len() - 1);
    Ok(a)
}

/// The multiplicative subgroup H of order `size` = 2^`log` and what its FFTs need (the Groth16
/// setup evaluates its Lagrange basis over the same H).
pub(crate) struct Domain {
    pub(crate) size: usize,
    log: u32,
    pub(crate) omega: Fr,
    omega_inv: Fr,
    pub(crate) size_inv: Fr,
}

impl Domain {
    /// The smallest domain holding `len` evaluations.
    pub(crate) fn for_len(len: usize) -> Result<Domain> {
        let size = len.max(1).next_power_of_two();
        let log = size.trailing_zeros();
        if log > Fr::S {
            return Err(ProverError::Device {
                backend: "cpu".into(),
                reason: format!(
                    "fft: {len} constraints need a domain of 2^{log}, beyond the field's 2^{}",
                    Fr::S
                ),
            });
        }
        // ROOT_OF_UNITY has order 2^S; squaring S − log times leaves one of order 2^log.
        let omega = (log..Fr::S).fold(Fr::ROOT_OF_UNITY, |w, _| w.square());
        Ok(Domain {
            size,
            log,
            omega,
            omega_inv: omega.invert().expect("a root of unity is non-zero"),
            size_inv: Fr::from(size as u64).invert().expect("2^log is non-zero"),
        })
    }

    /// t(x) = x^m − 1 at any point of the coset g·H: g^m − 1.
    fn t_on_coset(&self) -> Fr {
        Fr::MULTIPLICATIVE_GENERATOR.pow_vartime([self.size as u64]) - Fr::ONE
    }

    /// Evaluations on H to coefficients.
    fn ifft(&self, v: &mut [Fr]) {
        fft(v, self.omega_inv, self.log);
        scale(v, Fr::ONE, self.size_inv);
    }

    /// Coefficients to evaluations on g·H.
    fn coset_fft(&self, v: &mut [Fr]) {
        scale(v, Fr::MULTIPLICATIVE_GENERATOR, Fr::ONE);
        fft(v, self.omega, self.log);
    }

    /// Evaluations on g·H to coefficients.
    fn icoset_fft(&self, v: &mut [Fr]) {
        fft(v, self.omega_inv, self.log);
        let g_inv = Fr::MULTIPLICATIVE_GENERATOR.invert().expect("non-zero");
        scale(v, g_inv, self.size_inv);
    }
}

/// v[i] *= factor · ratio^i, in parallel.
pub(crate) fn scale(v: &mut [Fr], ratio: Fr, factor: Fr) {
    v.par_chunks_mut(TASK).enumerate().for_each(|(n, chunk)| {
        let mut power = factor * ratio.pow_vartime([(n * TASK) as u64]);
        for x in chunk {
            *x *= power;
            power *= ratio;
        }
    });
}

/// In place: v[k] ← Σ_j v[j]·ω^(jk), for v of length 2^log and ω of order 2^log.
fn fft(v: &mut [Fr], omega: Fr, log: u32) {
    assert_eq!(v.len(), 1 << log, "an FFT over a power-of-two domain");
    bit_reverse(v, log);
    // Stages with butterflies of span below CHUNK: each chunk on its own, start to end.
    let early = log.min(LOG_CHUNK);
    let chunk = 1usize << early;
    v.par_chunks_mut(chunk).for_each(|c| {
        for stage in 0..early {
            let half = 1usize << stage;
            let w = omega.pow_vartime([(1u64 << log) >> (stage + 1)]);
            for block in c.chunks_mut(2 * half) {
                let (lo, hi) = block.split_at_mut(half);
                butterflies(lo, hi, Fr::ONE, w);
            }
        }
    });
    // The rest: every butterfly block split into tasks, each starting at its own twiddle.
    for stage in early..log {
        let half = 1usize << stage;
        let w = omega.pow_vartime([(1u64 << log) >> (stage + 1)]);
        let span = half.min(TASK);
        v.par_chunks_mut(2 * half).for_each(|block| {
            let (lo, hi) = block.split_at_mut(half);
            lo.par_chunks_mut(span)
                .zip(hi.par_chunks_mut(span))
                .enumerate()
                .for_each(|(n, (lo, hi))| {
                    butterflies(lo, hi, w.pow_vartime([(n * span) as u64]), w);
                });
        });
    }
}

/// (lo[j], hi[j]) ← (lo[j] + t, lo[j] − t) with t = hi[j]·first·w^j.
fn butterflies(lo: &mut [Fr], hi: &mut [Fr], first: Fr, w: Fr) {
    let mut twiddle = first;
    for (x, y) in lo.iter_mut().zip(hi.iter_mut()) {
        let t = *y * twiddle;
        *y = *x - t;
        *x += t;
        twiddle *= w;
    }
}

/// Puts v[i] at the position of i with its `log` bits reversed.
fn bit_reverse(v: &mut [Fr], log: u32) {
    if log == 0 {
        return;
    }
    let shift = usize::BITS - log;
    for i in 0..v.len() {
        let j = i.reverse_bits() >> shift;
        if i < j {
            v.swap(i, j);
        }
    }
}

#[cfg(test)]
mod tests {
    use bellperson::domain::EvaluationDomain;
    use ec_gpu_gen::threadpool::Worker;
    use rand::SeedableRng;

    use super::*;

    fn random(len: usize, seed: u64) -> Vec<Fr> {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        (0..len).map(|_| Fr::random(&mut rng)).collect()
    }

    /// bellperson's H polynomial, as the CPU device phase computed it before.
    fn reference_h(mut abc: Abc) -> Vec<Fr> {
        let worker = Worker::new();
        let mut kern = None;
        let c = abc.take_c(0);
        let mut d = [abc.a, abc.b, c].map(|v| EvaluationDomain::from_coeffs(v).unwrap());
        for v in d.iter_mut() {
            v.ifft(&worker, &mut kern).unwrap();
            v.coset_fft(&worker, &mut kern).unwrap();
        }
        let [mut a, b, c] = d;
        a.mul_assign(&worker, &b);
        a.sub_assign(&worker, &c);
        a.divide_by_z_on_coset(&worker);
        a.icoset_fft(&worker, &mut kern).unwrap();
        let mut h = a.into_coeffs();
        h.truncate(h.len() - 1);
        h
    }

    #[test]
    fn the_fft_matches_bellpersons_at_every_size() {
        let worker = Worker::new();
        for log in 0..=15 {
            let v = random(1 << log, log as u64);
            let mut ours = v.clone();
            let domain = Domain::for_len(v.len()).unwrap();
            domain.coset_fft(&mut ours);
            let mut theirs = EvaluationDomain::from_coeffs(v.clone()).unwrap();
            theirs.coset_fft(&worker, &mut None).unwrap();
            assert!(ours == theirs.into_coeffs(), "coset fft at 2^{log}");
            domain.icoset_fft(&mut ours);
            assert!(ours == v, "icoset fft undoes coset fft at 2^{log}");
        }
    }

    #[test]
    fn h_matches_bellpersons_for_lengths_that_pad_and_that_do_not() {
        for len in [1, 2, 3, 5, 1000, 4096, 5000, 1 << 15] {
            let abc = || Abc {
                a: random(len, 1),
                b: random(len, 2),
                c: Some(random(len, 3)),
            };
            let ours = compute_h(abc()).unwrap();
            assert!(ours == reference_h(abc()), "h of {len} constraints");
        }
    }

    #[test]
    fn a_c_left_to_the_device_phase_is_formed_as_a_times_b() {
        let (a, b) = (random(5000, 1), random(5000, 2));
        let c: Vec<Fr> = a.iter().zip(&b).map(|(a, b)| a * b).collect();
        let kept = Abc {
            a: a.clone(),
            b: b.clone(),
            c: Some(c),
        };
        let formed = Abc { a, b, c: None };
        assert_eq!(formed.c_values(), kept.c_values());
        assert!(compute_h(formed).unwrap() == compute_h(kept).unwrap());
    }
}
