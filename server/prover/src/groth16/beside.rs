//! B's G2 multiexp on the host's threads while a device runs the phase's G1 steps
//! ([`super::DevicePlan::b2_beside`]): the driver starts it once h is computed and joins it
//! after the last G1 step. It runs on the device-phase pool of the phase's priority (a background
//! partition's yields the cores to a deadline partition's) in steps of [`CPU_STEP_POINTS`],
//! and ends at the next of them once the phase stops.

use std::sync::atomic::{AtomicBool, Ordering};

use blstrs::{G2Affine, G2Projective, Scalar as Fr};
use group::Group;
use snarkd_types::PhaseHooks;

use super::msm::{msm_g2_on, ScalarBytes};
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

/// Host bytes B's G2 multiexp holds beside the device's steps, on top of all else the phase
/// holds: its `terms` gathered scalars.
pub fn scalar_bytes(terms: usize) -> u64 {
    (terms * std::mem::size_of::<Fr>()) as u64
}

/// `Σ b_g2[i]·s[i]` over B's scalars of `witness`, in multiexps of at most `step` terms on the
/// [`threads::beside`] pool of the calling thread's priority; `None` when `stop` was set before
/// its last.
pub(super) fn b2_on_host(
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

/// Sets its flag when dropped in a panic: a panic of the phase's own steps stops the host's
/// multiexp at its next step rather than waiting for its end.
pub(super) struct StopOnUnwind<'a>(pub &'a AtomicBool);

impl Drop for StopOnUnwind<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.store(true, Ordering::Release);
        }
    }
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
pub(super) fn joined(
    out: std::thread::Result<Result<Option<G2Projective>>>,
) -> Result<G2Projective> {
    match out {
        Ok(Ok(Some(sum))) => Ok(sum),
        Ok(Ok(None)) => Err(ProverError::Device {
            backend: "cpu".into(),
            reason: "B's G2 multiexp on the host was stopped before its end".into(),
        }),
        Ok(Err(e)) => Err(e),
        Err(panic) => Err(ProverError::Device {
            backend: "cpu".into(),
            reason: format!(
                "B's G2 multiexp on the host panicked: {}",
                panic_message(&panic)
            ),
        }),
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
        assert!(
            err.to_string().contains("4096 bases for 4097 scalars"),
            "{err}"
        );
    }

    #[test]
    fn a_stopped_or_panicked_host_multiexp_is_an_error_and_a_panic_of_the_steps_stops_it() {
        let stopped = joined(Ok(Ok(None))).expect_err("stopped");
        assert!(
            stopped.to_string().contains("stopped before its end"),
            "{stopped}"
        );
        let panicked = std::thread::spawn(|| -> Result<Option<G2Projective>> { panic!("boom") });
        let err = joined(panicked.join()).expect_err("panicked");
        assert!(err.to_string().contains("panicked: boom"), "{err}");

        let flag = AtomicBool::new(false);
        drop(StopOnUnwind(&flag));
        assert!(!flag.load(Ordering::Acquire), "set only in a panic");
        let caught = std::panic::catch_unwind(|| {
            let _unwinding = StopOnUnwind(&flag);
            panic!("a step");
        });
        assert!(caught.is_err());
        assert!(flag.load(Ordering::Acquire));
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
            extra: scalar_bytes(10),
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
