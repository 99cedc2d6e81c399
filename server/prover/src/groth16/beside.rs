//! B's G2 multiexp on the host's threads while a device runs the phase's G1 steps
//! ([`super::DevicePlan::b2_beside`]): the driver starts it once the H multiexp is done (the
//! a/b/c evaluations are gone by then), having grown the partition's reservation by what it
//! holds first ([`PhaseHooks::hold_more`], [`b2_host_bytes`]), and joins it after the last G1
//! step. It runs on a pool of its own at the phase's priority: a background partition's yields
//! the cores to a deadline partition's, and the host work feeding the device never waits in
//! its pool's queue (the two pools' threads still share the cores). It runs in steps of
//! [`CPU_STEP_POINTS`] and ends at the next of them once the phase fails, stops or panics
//! ([`OnHost`]'s drop).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::{Scope, ScopedJoinHandle};

use blstrs::{G2Affine, G2Projective, Scalar as Fr};
use group::Group;
use snarkd_types::PhaseHooks;

use super::msm::{msm_g2_on, msm_g2_scratch_bytes, ScalarBytes};
use super::prover::CPU_STEP_POINTS;
use crate::error::{ProverError, Result};
use crate::synthesis::{panic_message, Witness};
use crate::threads;

/// Where a device phase runs B's G2 multiexp (`[gpus] b_g2`; a plan says which:
/// [`super::DevicePlan::b2_beside`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum G2On {
    /// As the phase's last steps, on the device, its bases kept there with the others.
    #[default]
    Device,
    /// On the host's threads while the device runs the G1 steps, where the memory budget has
    /// room for its scalars; on the device otherwise. Its bases are not kept on the device
    /// (streamed up when it runs there).
    Cpu,
}

/// Host bytes B's G2 multiexp of `terms` terms holds beside the device's steps, on top of all
/// else the phase holds: its gathered scalars, and the buckets of a multiexp step on each
/// thread of the pool it runs on (an upper bound: a step cut into shorter rows than
/// [`msm_g2_scratch_bytes`] assumes takes a smaller window, up to half the buckets).
pub fn b2_host_bytes(terms: usize) -> u64 {
    let scalars = (terms * std::mem::size_of::<Fr>()) as u64;
    let threads = threads::beside().current_num_threads();
    scalars + msm_g2_scratch_bytes(threads, terms.min(CPU_STEP_POINTS))
}

/// B's G2 multiexp running on a thread of its own. Dropped before [`OnHost::join`] (the
/// phase's steps failed, stopped or panicked), it stops at its next step and is joined: it
/// never outlives the phase.
pub(super) struct OnHost<'scope> {
    thread: Option<ScopedJoinHandle<'scope, Result<Option<G2Projective>>>>,
    stop: Arc<AtomicBool>,
}

impl<'scope> OnHost<'scope> {
    /// Starts `Σ b_g2[i]·s[i]` over B's scalars of `witness` on a thread of `scope`, in
    /// multiexps of at most `step` terms.
    pub(super) fn start<'env>(
        scope: &'scope Scope<'scope, 'env>,
        witness: &'env Witness,
        b_g2: &'env [G2Affine],
        step: usize,
    ) -> std::io::Result<OnHost<'scope>> {
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = Arc::clone(&stop);
        let thread = (std::thread::Builder::new().name("snarkd-b-g2".into()))
            .spawn_scoped(scope, move || b2_on_host(witness, b_g2, step, &stopped))?;
        Ok(OnHost {
            thread: Some(thread),
            stop,
        })
    }

    /// Its sum, once it has ended.
    pub(super) fn join(mut self) -> Result<G2Projective> {
        let thread = self.thread.take().expect("joined once");
        joined(thread.join())
    }

    /// Asks it to stop at its next step and waits for it: its sum where it ended first.
    #[cfg(test)]
    fn stop(mut self) -> Result<Option<G2Projective>> {
        self.stop_and_wait()
    }

    fn stop_and_wait(&mut self) -> Result<Option<G2Projective>> {
        self.stop.store(true, Ordering::Release);
        match self.thread.take() {
            Some(thread) => match thread.join() {
                Ok(out) => out,
                Err(panic) => Err(panicked(&panic)),
            },
            None => Ok(None),
        }
    }
}

impl Drop for OnHost<'_> {
    fn drop(&mut self) {
        let _ = self.stop_and_wait();
    }
}

/// `Σ b_g2[i]·s[i]` over B's scalars of `witness`, in multiexps of at most `step` terms on the
/// [`threads::beside`] pool of the calling thread's priority; `None` when `stop` was set before
/// its last.
fn b2_on_host(
    witness: &Witness,
    b_g2: &[G2Affine],
    step: usize,
    stop: &AtomicBool,
) -> Result<Option<G2Projective>> {
    let scalars = ScalarBytes::gathered(&[
        (&witness.inputs, Some(&witness.b_input_density)),
        (&witness.aux, Some(&witness.b_aux_density)),
    ]);
    if scalars.len() != b_g2.len() {
        return Err(ProverError::ParamsShape(format!(
            "B's G2 multiexp has {} bases for {} scalars",
            b_g2.len(),
            scalars.len()
        )));
    }
    let pool = threads::beside();
    let mut sum = G2Projective::identity();
    for start in (0..b_g2.len()).step_by(step.max(1)) {
        if stop.load(Ordering::Acquire) {
            return Ok(None);
        }
        let range = start..(start + step.max(1)).min(b_g2.len());
        sum += msm_g2_on(&pool, &b_g2[range.clone()], scalars.view().slice(range));
    }
    Ok(Some(sum))
}

/// The phase's hooks while B's G2 multiexp runs on the host: what a step falling back to the
/// host asks to hold in all ([`PhaseHooks::hold_at_least`]) comes on top of its scalars.
pub(super) struct Beside<'h> {
    pub hooks: &'h mut dyn PhaseHooks,
    pub extra: u64,
}

impl PhaseHooks for Beside<'_> {
    fn abc_released(&mut self, bytes: u64) {
        self.hooks.abc_released(bytes)
    }
    fn step_done(&mut self) {
        self.hooks.step_done()
    }
    fn will_wait(&self) -> bool {
        self.hooks.will_wait()
    }
    fn stop_requested(&self) -> bool {
        self.hooks.stop_requested()
    }
    fn hold_at_least(&mut self, bytes: u64) -> bool {
        self.hooks.hold_at_least(bytes + self.extra)
    }
    fn hold_more(&mut self, bytes: u64) -> bool {
        self.hooks.hold_more(bytes)
    }
}

/// What the thread of [`b2_on_host`] came back with, once joined.
fn joined(out: std::thread::Result<Result<Option<G2Projective>>>) -> Result<G2Projective> {
    match out {
        Ok(Ok(Some(sum))) => Ok(sum),
        Ok(Ok(None)) => Err(ProverError::Device {
            backend: "cpu".into(),
            reason: "B's G2 multiexp on the host was stopped before its end".into(),
        }),
        Ok(Err(e)) => Err(e),
        Err(panic) => Err(panicked(&panic)),
    }
}

fn panicked(panic: &Box<dyn std::any::Any + Send>) -> ProverError {
    ProverError::Device {
        backend: "cpu".into(),
        reason: format!(
            "B's G2 multiexp on the host panicked: {}",
            panic_message(panic)
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::groth16::msm_g2;
    use crate::synthesis::{Abc, Density, SynthesizedPartition};
    use ff::Field;
    use group::prime::PrimeCurveAffine;
    use group::Curve;

    /// A witness of 2 inputs and `aux` values (a third each 0, 1 or random), B's density marking
    /// the first input and every other aux value; and as many G2 bases as B has terms.
    fn witness_and_bases(aux: usize) -> (Witness, Vec<G2Affine>) {
        let inputs = vec![Fr::ONE, Fr::from(7u64)];
        let values: Vec<Fr> = (0..aux as u64)
            .map(|i| match i % 3 {
                0 => Fr::ZERO,
                1 => Fr::ONE,
                _ => Fr::from(i.wrapping_mul(0x9e37_79b9_7f4a_7c15)),
            })
            .collect();
        let mut b_in = Density::with_len(inputs.len());
        b_in.set(0);
        let mut b_aux = Density::with_len(aux);
        (0..aux).step_by(2).for_each(|i| b_aux.set(i));
        let terms = b_in.count() + b_aux.count();
        let abc = Abc {
            a: Vec::new(),
            b: Vec::new(),
            c: None,
        };
        let densities = [Density::with_len(aux), b_in, b_aux];
        let (witness, _) =
            SynthesizedPartition::new(0, (inputs, values), abc, densities).into_parts();
        // g, 2g, 3g, …: distinct bases made by additions alone.
        let g = G2Projective::generator();
        let mut p = G2Projective::identity();
        let projective: Vec<G2Projective> = (0..terms)
            .map(|_| {
                p += g;
                p
            })
            .collect();
        let mut bases = vec![G2Affine::identity(); terms];
        G2Projective::batch_normalize(&projective, &mut bases);
        (witness, bases)
    }

    #[test]
    fn b_g2_on_the_host_in_steps_equals_one_multiexp_and_a_stop_ends_it() {
        // 4,097 terms: a step of 4,096 (tiled on the beside pool) and one of a single term.
        let (witness, bases) = witness_and_bases(8_192);
        assert_eq!(bases.len(), 4_097);
        let scalars = ScalarBytes::gathered(&[
            (&witness.inputs, Some(&witness.b_input_density)),
            (&witness.aux, Some(&witness.b_aux_density)),
        ]);
        let want = msm_g2(&bases, scalars.view()).to_affine();
        let go = AtomicBool::new(false);
        for step in [4_096, 1 << 22] {
            let got = b2_on_host(&witness, &bases, step, &go).expect("sum");
            assert_eq!(got.map(|s| s.to_affine()), Some(want), "step {step}");
        }
        let stop = AtomicBool::new(true);
        assert_eq!(
            b2_on_host(&witness, &bases, 4_096, &stop).expect("stopped"),
            None
        );
        let err = b2_on_host(&witness, &bases[1..], 4_096, &go).expect_err("one base short");
        // Its scalars and, on every thread of its pool, a step's buckets.
        let scratch = msm_g2_scratch_bytes(threads::beside().current_num_threads(), 4_097);
        assert_eq!(b2_host_bytes(4_097), 4_097 * 32 + scratch);
        assert!(scratch > 0);
        assert!(
            err.to_string().contains("4096 bases for 4097 scalars"),
            "{err}"
        );
    }

    #[test]
    fn a_stopped_or_panicked_host_multiexp_is_an_error_and_one_dropped_in_a_panic_is_joined() {
        let stopped = joined(Ok(Ok(None))).expect_err("stopped");
        assert!(
            stopped.to_string().contains("stopped before its end"),
            "{stopped}"
        );
        let panicked = std::thread::spawn(|| -> Result<Option<G2Projective>> { panic!("boom") });
        let err = joined(panicked.join()).expect_err("panicked");
        assert!(err.to_string().contains("panicked: boom"), "{err}");

        // 16,385 steps of one term each: stopped right after its start, it ends at its next.
        let (witness, bases) = witness_and_bases(32_768);
        let want = {
            let go = AtomicBool::new(false);
            b2_on_host(&witness, &bases, 1 << 22, &go).expect("sum")
        };
        std::thread::scope(|scope| {
            let on_host = OnHost::start(scope, &witness, &bases, 1).expect("a thread");
            assert_eq!(on_host.stop().expect("no error"), None);
            let on_host = OnHost::start(scope, &witness, &bases, 1 << 22).expect("a thread");
            assert_eq!(
                on_host.join().expect("its sum").to_affine(),
                want.unwrap().to_affine()
            );
        });
        // Dropped while the phase's steps unwind: stopped and joined, the panic goes on.
        let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            std::thread::scope(|scope| {
                let _on_host = OnHost::start(scope, &witness, &bases, 1).expect("a thread");
                panic!("a step");
            })
        }));
        assert!(caught.is_err());
    }

    /// Records what reaches it.
    #[derive(Default)]
    struct Asked(Vec<(&'static str, u64)>);

    impl PhaseHooks for Asked {
        fn abc_released(&mut self, bytes: u64) {
            self.0.push(("released", bytes));
        }
        fn hold_at_least(&mut self, bytes: u64) -> bool {
            self.0.push(("at least", bytes));
            true
        }
        fn hold_more(&mut self, bytes: u64) -> bool {
            self.0.push(("more", bytes));
            false
        }
    }

    #[test]
    fn while_b_g2_runs_beside_a_step_falling_back_to_the_host_asks_for_its_scalars_on_top() {
        let mut inner = Asked::default();
        let mut hooks = Beside {
            hooks: &mut inner,
            extra: 320,
        };
        assert!(hooks.hold_at_least(1_000));
        assert!(!hooks.hold_more(5));
        hooks.abc_released(64);
        assert_eq!(
            inner.0,
            vec![("at least", 1_320), ("more", 5), ("released", 64)]
        );
    }
}
