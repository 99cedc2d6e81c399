//! B's G2 multiexp on the host's threads while a device runs the phase's G1 steps
//! ([`super::DevicePlan::b2_beside`]): the driver starts it once h is computed and joins it
//! after the last G1 step. It runs on the device-phase pool of the phase's priority (a background
//! partition's yields the cores to a deadline partition's) in steps of [`CPU_STEP_POINTS`],
//! and ends at the next of them once the phase stops.

use std::sync::atomic::{AtomicBool, Ordering};

use blstrs::{G2Affine, G2Projective};
use group::Group;

use super::msm::{msm_g2, ScalarBytes};
use super::prover::CPU_STEP_POINTS;
use crate::error::{ProverError, Result};
use crate::synthesis::{panic_message, Witness};

/// Where a device phase runs B's G2 multiexp (`[gpus] b_g2`; a plan says which:
/// [`super::DevicePlan::b2_beside`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum G2On {
    /// As the phase's last steps, on the device, its bases kept there with the others.
    #[default]
    Device,
    /// On the host's threads while the device runs the G1 steps (where the memory budget has
    /// room for its scalars; on the device otherwise), its bases left on the host.
    Cpu,
}

/// `Σ b_g2[i]·s[i]` over B's scalars of `witness`, `None` when `stop` was set before its end.
pub(super) fn b2_on_host(
    witness: &Witness,
    b_g2: &[G2Affine],
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
    let mut sum = G2Projective::identity();
    for start in (0..b_g2.len()).step_by(CPU_STEP_POINTS) {
        if stop.load(Ordering::Acquire) {
            return Ok(None);
        }
        let range = start..(start + CPU_STEP_POINTS).min(b_g2.len());
        sum += msm_g2(&b_g2[range.clone()], scalars.view().slice(range));
    }
    Ok(Some(sum))
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
