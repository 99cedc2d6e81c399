//! The backend's one-off device calls, for tests and the benchmarks: H from a and b, a
//! multiexp over G1 or G2 (its bases kept on the device for the call or streamed), one cut
//! into steps on one pipeline, and the path as it was before the device-resident plan. None
//! falls back to the CPU.

use std::ops::Range;

use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar as Fr};
use ff::Field;

use super::msm::{self, Bases, DeviceScalars, Pipeline, StepOn};
use super::{fft, no_room, DeviceQueue, OpenClBackend};
use crate::error::{ProverError, Result};
use crate::groth16::{DeviceCounters, Query, Step};

impl OpenClBackend {
    /// The H polynomial's coefficients on the device from a and b, read back (no fallback; for
    /// tests and the benchmark). c is formed as a∘b, as for a satisfied circuit.
    pub fn compute_h(&self, a: &[Fr], b: &[Fr]) -> Result<Vec<Fr>> {
        self.with_queue(|q| {
            let on = fft::compute_h(q, a, b)?.ok_or_else(|| no_room(&self.name))?;
            let mut h = vec![Fr::ZERO; on.len];
            q.read(&on.h, &mut h)?;
            Ok(h)
        })
    }

    /// `Σ bases[i]·scalars[i]` over G1 on the device, the scalars uploaded as they are and the
    /// bases kept on the device for the call (`resident`) or streamed per chunk (no fallback;
    /// for tests and the benchmark). Returns the sum and what the device did.
    pub fn msm_g1(
        &self,
        bases: &[G1Affine],
        scalars: &[Fr],
        resident: bool,
    ) -> Result<(G1Projective, DeviceCounters)> {
        let n = bases.len();
        self.msm_on_device(bases, scalars, resident, |q, bases, scalars| {
            msm::msm_g1(q, dense_step(0..n, bases, scalars))
        })
    }

    /// [`OpenClBackend::msm_g1`] cut into steps run one after another on one pipeline, each
    /// handed the range given beside it as the next step (which may differ from the one that
    /// follows, as when a step falls back to the CPU); returns each step's sum.
    pub fn msm_g1_steps(
        &self,
        bases: &[G1Affine],
        scalars: &[Fr],
        resident: bool,
        steps: &[(Range<usize>, Option<Range<usize>>)],
    ) -> Result<(Vec<G1Projective>, DeviceCounters)> {
        self.msm_on_device(bases, scalars, resident, |q, on, values| {
            let most = steps.iter().map(|(r, _)| r.len()).max().unwrap_or(1);
            let chained = steps.len() > 1;
            let Some(mut pipeline) = Pipeline::<G1Affine>::open(q, most, !resident, chained)?
            else {
                return Ok(None);
            };
            let sums = steps
                .iter()
                .map(|(range, next)| {
                    let next = next.clone().map(|n| dense_step(n, on, values));
                    pipeline.run(q, dense_step(range.clone(), on, values), next)
                })
                .collect::<Result<Vec<_>>>();
            // The last step may have been handed a next that never ran.
            let drained = pipeline.drain(q);
            let sums = sums?;
            drained?;
            Ok(Some(sums))
        })
    }

    /// Runs `first` on a pipeline handed `next`, then drops the pipeline with `next`'s first
    /// chunk in flight, as a panic in a step does (the bases kept on the device for the call);
    /// returns the pool's bytes in use before the pipeline opened, once it has dropped, and
    /// after the queue's wait.
    pub fn msm_g1_dropped_ahead(
        &self,
        bases: &[G1Affine],
        scalars: &[Fr],
        first: Range<usize>,
        next: Range<usize>,
    ) -> Result<[u64; 3]> {
        self.msm_on_device(bases, scalars, true, |q, on, values| {
            let before = q.memory().used();
            let most = first.len().max(next.len());
            let Some(mut pipeline) = Pipeline::<G1Affine>::open(q, most, false, true)? else {
                return Ok(None);
            };
            let next = dense_step(next, on, values);
            pipeline.run(q, dense_step(first, on, values), Some(next))?;
            drop(pipeline);
            let dropped = q.memory().used();
            q.finish()?;
            Ok(Some([before, dropped, q.memory().used()]))
        })
        .map(|(used, _)| used)
    }

    /// [`OpenClBackend::msm_g1`] over G2.
    pub fn msm_g2(
        &self,
        bases: &[G2Affine],
        scalars: &[Fr],
        resident: bool,
    ) -> Result<(G2Projective, DeviceCounters)> {
        let n = bases.len();
        self.msm_on_device(bases, scalars, resident, |q, bases, scalars| {
            msm::msm_g2(q, dense_step(0..n, bases, scalars))
        })
    }

    /// Runs `msm` over `bases` (kept on the device for the call, or streamed) and `scalars`
    /// (uploaded as they are), then waits for the queue.
    fn msm_on_device<G, P>(
        &self,
        bases: &[G],
        scalars: &[Fr],
        resident: bool,
        msm: impl FnOnce(&DeviceQueue, Bases<'_, G>, DeviceScalars<'_>) -> Result<Option<P>>,
    ) -> Result<(P, DeviceCounters)> {
        if bases.len() != scalars.len() {
            return Err(ProverError::ParamsShape(format!(
                "a multiexp has {} bases for {} scalars",
                bases.len(),
                scalars.len()
            )));
        }
        self.with_queue(|q| {
            let start = q.counters();
            let run = || -> Result<P> {
                let mut s_buf = q.program.buffer::<Fr>(scalars.len())?;
                // SAFETY: `scalars` and `bases` are borrowed for this whole call, which waits
                // for the queue below whether or not the multiexp succeeded.
                unsafe { q.write_async(&mut s_buf, 0, scalars)? };
                let kept = match resident {
                    true => {
                        let mut b = q.program.buffer::<G>(bases.len())?;
                        // SAFETY: as above.
                        unsafe { q.write_async(&mut b, 0, bases)? };
                        Some(b)
                    }
                    false => None,
                };
                let on_device = match &kept {
                    Some(b) => Bases::Device(b),
                    None => Bases::Host(bases),
                };
                let scalars_on = DeviceScalars {
                    buf: &s_buf,
                    map: None,
                    offset: 0,
                };
                msm(q, on_device, scalars_on)?.ok_or_else(|| no_room(&self.name))
            };
            // The multiexp's own error first; either way the queue is waited for, so no copy
            // reads the caller's vectors after this returns (a queue whose wait fails is dead:
            // the backend's attempt marks the step failed and retries elsewhere).
            let sum = run();
            let waited = q.finish();
            let sum = sum?;
            waited?;
            Ok((sum, q.counters() - start))
        })
    }

    /// The device phase the way it was before the device-resident plan (see `legacy.rs`), for
    /// the benchmark's side-by-side ratio; counted like the current one.
    #[cfg(feature = "bench")]
    pub fn prove_legacy(
        &self,
        partition: crate::synthesis::SynthesizedPartition,
        params: &crate::keys::LoadedParams,
        randomness: crate::groth16::Randomness,
    ) -> Result<(
        bellperson::groth16::Proof<blstrs::Bls12>,
        crate::groth16::DeviceTimings,
    )> {
        self.with_queue(|q| {
            let start = q.counters();
            let ops = super::legacy::LegacyOps { queue: q };
            let (proof, mut timings) = crate::groth16::prove_partition_with(
                &ops,
                partition,
                params,
                randomness,
                &mut |_| {},
            )?;
            timings.counters = q.counters() - start;
            Ok((proof, timings))
        })
    }

    /// A G1 multiexp the way it was before (see `legacy.rs`), for the benchmark.
    #[cfg(feature = "bench")]
    pub fn msm_g1_legacy(
        &self,
        bases: &[G1Affine],
        scalars: &[Fr],
    ) -> Result<(G1Projective, DeviceCounters)> {
        use crate::groth16::DeviceOps;
        let bytes = crate::groth16::ScalarBytes::gathered(&[(scalars, None)]);
        self.with_queue(|q| {
            let start = q.counters();
            let sum = super::legacy::LegacyOps { queue: q }.msm_g1(bases, bytes.view())?;
            Ok((sum, q.counters() - start))
        })
    }
}

/// A step of `range` over `bases` with dense `scalars` (named as L's, whose are).
fn dense_step<'a, G>(
    range: Range<usize>,
    bases: Bases<'a, G>,
    scalars: DeviceScalars<'a>,
) -> StepOn<'a, G> {
    StepOn {
        step: Step {
            query: Query::L,
            range,
        },
        bases,
        scalars,
    }
}
