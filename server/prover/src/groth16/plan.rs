//! The device phase as a plan over data that lives where its backend keeps it: the driver
//! ([`prove_with_plan`]) owns the order of the steps, the preemption points, the stop requests,
//! the a/b/c release and the proof assembly, once for every backend; a [`DevicePlan`] says where
//! h and the scalars live and runs each step there.
//!
//! Steps: the H polynomial, then the H, L, A and B multiexps over G1 and the B multiexp over G2,
//! each cut into ranges of at most [`DevicePlan::step_points`] terms ([`Step`]) with a
//! preemption point between them. A step is handed the one after it, so a plan may start on it
//! before it waits for this one's end (the device is not idle while the host reads back and
//! combines). [`HostPlan`] keeps everything in host memory and runs the steps through a
//! [`DeviceOps`]; the OpenCL backend's plan keeps the witness, h and the parameters' bases on the
//! device.

use std::marker::PhantomData;
use std::ops::Range;
use std::time::Instant;

use bellperson::groth16::{Parameters, Proof};
use blstrs::{Bls12, G1Affine, G1Projective, G2Projective, Scalar as Fr};
use group::Group;

use super::beside;
use super::msm::ScalarBytes;
use super::prover::{
    assemble, check_shape, self_check, stop_if_asked, CpuOps, DeviceCounters, DeviceOps,
    DeviceTimings, Randomness, CPU_STEP_POINTS,
};
use crate::error::{ProverError, Result};
use crate::keys::LoadedParams;
use crate::synthesis::{Abc, SynthesizedPartition, Witness};
use snarkd_types::PhaseHooks;

/// A multiexp of the device phase: which bases and which scalars.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Query {
    /// The H bases with h's coefficients.
    H,
    /// The L bases with the aux values.
    L,
    /// The A bases with the inputs and the aux values that occur in A.
    A,
    /// The B bases in G1 with the inputs and aux values that occur in B.
    B1,
    /// The B bases in G2 with the same scalars as [`Query::B1`].
    B2,
}

impl Query {
    /// In the order the phase runs them.
    pub const ALL: [Query; 5] = [Query::H, Query::L, Query::A, Query::B1, Query::B2];

    /// Lower-case name for logs and benchmark rows.
    pub fn as_str(self) -> &'static str {
        match self {
            Query::H => "h",
            Query::L => "l",
            Query::A => "a",
            Query::B1 => "b_g1",
            Query::B2 => "b_g2",
        }
    }

    /// The query's G1 bases in `params` (B's in G1 for both B queries).
    pub fn g1_bases(self, params: &Parameters<Bls12>) -> &[G1Affine] {
        match self {
            Query::H => &params.h,
            Query::L => &params.l,
            Query::A => &params.a,
            Query::B1 | Query::B2 => &params.b_g1,
        }
    }

    /// The query's bases in `params` (their count).
    pub fn terms(self, params: &Parameters<Bls12>) -> usize {
        match self {
            Query::H => params.h.len(),
            Query::L => params.l.len(),
            Query::A => params.a.len(),
            Query::B1 => params.b_g1.len(),
            Query::B2 => params.b_g2.len(),
        }
    }
}

/// One multiexp step: a range of a query's terms.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Step {
    pub query: Query,
    pub range: Range<usize>,
}

impl Step {
    /// The steps of a device phase in their order: each query of [`Query::ALL`] with terms,
    /// in consecutive ranges of at most `step` (at least one) terms.
    pub fn all(params: &Parameters<Bls12>, step: usize) -> Vec<Step> {
        Query::ALL
            .iter()
            .flat_map(|&query| {
                ranges(query.terms(params), step.max(1)).map(move |range| Step { query, range })
            })
            .collect()
    }
}

/// Where one partition's device phase keeps its data and runs its steps. Made for one
/// partition; the driver calls [`DevicePlan::h`] once, then the steps of [`Step::all`] in their
/// order, each handed the one after it, and [`DevicePlan::finish`] for each query after its
/// last step (at the start for a query of no terms; B2's after the G1 steps where it ran
/// beside them: [`DevicePlan::b2_beside`]).
pub trait DevicePlan {
    /// Computes h(x) from the a/b/c evaluations and keeps it where the H multiexp reads it.
    /// `hooks`: [`PhaseHooks::step_done`] at any preemption point inside the step, and
    /// [`PhaseHooks::hold_at_least`] before host memory beyond the reservation is taken.
    fn h(&mut self, abc: Abc, hooks: &mut dyn PhaseHooks) -> Result<()>;
    /// Whether the a/b/c evaluations have been freed (the driver tells its hooks once).
    fn abc_released(&self) -> bool;
    /// `Σ bases[i]·scalars[i]` over the step's range of a G1 query (`hooks` as for
    /// [`DevicePlan::h`]). `next`: the step the driver runs after this one, unless it stops or
    /// is preempted first, which the plan may start on before this one has ended.
    fn g1(
        &mut self,
        step: &Step,
        next: Option<&Step>,
        hooks: &mut dyn PhaseHooks,
    ) -> Result<G1Projective>;
    /// `Σ bases[i]·scalars[i]` over the step's range of the B query in G2 (`next` as for
    /// [`DevicePlan::g1`]).
    fn g2(
        &mut self,
        step: &Step,
        next: Option<&Step>,
        hooks: &mut dyn PhaseHooks,
    ) -> Result<G2Projective>;
    /// Done with `query`: its scalars may go.
    fn finish(&mut self, query: Query);
    /// Whether B's G2 multiexp is to run on the host's threads beside the G1 steps rather than
    /// as steps of this plan (no by default). The driver then runs it there from the H
    /// multiexp's end, where [`PhaseHooks::hold_more`] grants its room
    /// ([`super::b2_host_bytes`]), hands the plan no [`Query::B2`] step and finishes B2 after
    /// the G1 steps.
    fn b2_beside(&self) -> bool {
        false
    }
    /// The phase is about to wait at a step boundary ([`PhaseHooks::will_wait`]): free what the
    /// next step can make again, waiting for what runs ahead of it (none by default).
    fn park(&mut self) {}
    /// The most terms of one multiexp step.
    fn step_points(&self) -> usize;
    /// Device errors met so far.
    fn faults(&self) -> u32 {
        0
    }
    /// Bytes moved, launches and waits so far.
    fn counters(&self) -> DeviceCounters {
        DeviceCounters::default()
    }
}

/// Proves `partition` with `loaded` through the plan `open` makes for its witness, telling
/// `hooks` of the a/b/c release and of each step's end. The preemption points
/// ([`PhaseHooks::step_done`]) are here, once for every backend: after the H polynomial and
/// after each multiexp step but the last, which ends the phase.
pub fn prove_with_plan<'env>(
    partition: SynthesizedPartition,
    loaded: &LoadedParams,
    randomness: Randomness,
    hooks: &mut dyn PhaseHooks,
    open: impl for<'w> FnOnce(&'w Witness, Scope<'w, 'env>) -> Result<Box<dyn DevicePlan + 'w>>,
) -> Result<(Proof<Bls12>, DeviceTimings)> {
    let params = loaded.parameters();
    check_shape(&partition, params)?;
    let (witness, abc) = partition.into_parts();
    let abc_bytes = abc.size_bytes();
    let domain = abc.a.len().max(1).next_power_of_two();
    if params.h.len() != domain - 1 {
        return Err(ProverError::ParamsShape(format!(
            "the circuit's domain needs {} H bases, the parameters have {}",
            domain - 1,
            params.h.len()
        )));
    }
    let mut plan = open(&witness, Scope(PhantomData))?;
    let mut released = false;
    let mut release = |plan: &dyn DevicePlan, hooks: &mut dyn PhaseHooks| {
        if !released && plan.abc_released() {
            released = true;
            hooks.abc_released(abc_bytes);
        }
    };

    let fft_start = Instant::now();
    plan.h(abc, hooks)?;
    let fft = fft_start.elapsed();
    release(&*plan, hooks);
    boundary(&mut *plan, hooks)?;
    #[cfg(feature = "test-hooks")]
    super::test_hold::at_boundary(hooks)?;

    let msm_start = Instant::now();
    let ([h, l, a, b1], b2) = multiexps(&mut *plan, params, &witness, hooks, &mut release)?;
    let msm = msm_start.elapsed();
    let faults = plan.faults();
    let counters = plan.counters();
    drop(plan);

    let proof = assemble(params, randomness, h, l, a, b1, b2)?;
    if loaded.checks_proofs() {
        self_check(loaded.prepared_verifying_key(), &proof, &witness.inputs)?;
    }
    crate::spare::spare().give_back(witness.aux);
    Ok((
        proof,
        DeviceTimings {
            fft,
            msm,
            faults,
            counters,
        },
    ))
}

/// Whether B's G2 multiexp runs on the host beside the G1 steps: the plan asks for it, it has
/// terms, and the memory budget has room for it now (on the device otherwise). `Some` of the
/// host bytes held for it where it does.
fn b2_goes_beside(
    plan: &dyn DevicePlan,
    params: &Parameters<Bls12>,
    hooks: &mut dyn PhaseHooks,
) -> Option<u64> {
    if !plan.b2_beside() || params.b_g2.is_empty() {
        return None;
    }
    let bytes = beside::b2_host_bytes(params.b_g2.len());
    let room = hooks.hold_more(bytes);
    if !room {
        tracing::info!(
            bytes,
            "no room in the memory budget for B's G2 multiexp on the host: it runs on the device, \
             its bases streamed up"
        );
    }
    room.then_some(bytes)
}

/// The phase's multiexps through `plan`: H, L, A and B's sums in G1, then B's in G2. Where the
/// plan asks for it, B's G2 multiexp runs on the host from the end of the H multiexp (a/b/c
/// released by then) beside the other G1 steps, when the budget has room for it and a thread
/// starts; on the device otherwise.
fn multiexps(
    plan: &mut dyn DevicePlan,
    params: &Parameters<Bls12>,
    witness: &Witness,
    hooks: &mut dyn PhaseHooks,
    release: &mut dyn FnMut(&dyn DevicePlan, &mut dyn PhaseHooks),
) -> Result<([G1Projective; 4], G2Projective)> {
    for query in Query::ALL {
        if query.terms(params) == 0 {
            plan.finish(query);
        }
    }
    release(plan, hooks);
    let mut sums = Sums::default();
    // H's steps, each handed the next: after H's last, the first of the queries after it that
    // has terms (B2's, should it be the only one, though it may then run beside: a step handed
    // as next need not run).
    let all = Step::all(params, plan.step_points());
    let h = all.iter().take_while(|s| s.query == Query::H).count();
    run_steps(plan, &all, 0..h, hooks, release, &mut sums)?;
    let held = b2_goes_beside(plan, params, hooks);
    std::thread::scope(|scope| {
        let on_host = held.and_then(|extra| {
            match beside::OnHost::start(scope, witness, &params.b_g2, CPU_STEP_POINTS) {
                Ok(on_host) => Some((on_host, extra)),
                Err(e) => {
                    // Its room stays held to the phase's end (the hooks cannot give it back).
                    tracing::warn!(error = %e, "starting a thread for B's G2 multiexp on the host failed: it runs on the device");
                    None
                }
            }
        });
        let steps: Vec<Step> = (all.into_iter())
            .filter(|s| on_host.is_none() || s.query != Query::B2)
            .collect();
        let Some((on_host, extra)) = on_host else {
            return run_steps(plan, &steps, h..steps.len(), hooks, release, &mut sums);
        };
        // A step falling back to the host meanwhile asks for its room on top of B's. Should a
        // step fail or panic, `on_host` is dropped: stopped at its next step and joined.
        let hooks = &mut beside::Beside { hooks, extra };
        run_steps(plan, &steps, h..steps.len(), hooks, release, &mut sums)?;
        plan.finish(Query::B2);
        sums.b2 += on_host.join()?;
        Ok(())
    })?;
    Ok((sums.g1, sums.b2))
}

/// The sums of the steps run so far: H, L, A and B's in G1, and B's in G2.
struct Sums {
    g1: [G1Projective; 4],
    b2: G2Projective,
}

impl Default for Sums {
    fn default() -> Self {
        Sums {
            g1: [G1Projective::identity(); 4],
            b2: G2Projective::identity(),
        }
    }
}

/// Runs the steps of `steps` at `run` through `plan`, in their order, each handed the one after
/// it, with a boundary before each but the phase's first, adding their sums to `sums`.
fn run_steps(
    plan: &mut dyn DevicePlan,
    steps: &[Step],
    run: Range<usize>,
    hooks: &mut dyn PhaseHooks,
    release: &mut dyn FnMut(&dyn DevicePlan, &mut dyn PhaseHooks),
    sums: &mut Sums,
) -> Result<()> {
    for i in run {
        let step = &steps[i];
        if i > 0 {
            boundary(plan, hooks)?;
        }
        let next = steps.get(i + 1);
        match step.query {
            Query::B2 => sums.b2 += plan.g2(step, next, hooks)?,
            query => sums.g1[query as usize] += plan.g1(step, next, hooks)?,
        }
        if next.is_none_or(|n| n.query != step.query) {
            plan.finish(step.query);
            release(plan, hooks);
        }
    }
    Ok(())
}

/// A step boundary: the plan parks first where the phase will wait there; then the hooks'
/// preemption point, and the stop it may bring.
fn boundary(plan: &mut dyn DevicePlan, hooks: &mut dyn PhaseHooks) -> Result<()> {
    if hooks.will_wait() {
        plan.park();
    }
    hooks.step_done();
    stop_if_asked(hooks)
}

/// Says that the witness a plan borrows lives shorter than what the caller lends it (`'env`:
/// the parameters, the backend), so the plan may borrow both.
pub struct Scope<'w, 'env>(PhantomData<&'w &'env ()>);

/// Proves `partition` with `params` on the CPU, telling `hooks` of the a/b/c release and of each
/// step's end (see [`PhaseHooks`]).
pub fn prove_partition(
    partition: SynthesizedPartition,
    params: &LoadedParams,
    randomness: Randomness,
    hooks: &mut dyn PhaseHooks,
) -> Result<(Proof<Bls12>, DeviceTimings)> {
    prove_partition_with(&CpuOps, partition, params, randomness, hooks)
}

/// [`prove_partition`] with the FFT and MSM steps of `ops`, all data in host memory
/// ([`HostPlan`]); the steps and their preemption points are [`prove_with_plan`]'s.
pub fn prove_partition_with(
    ops: &dyn DeviceOps,
    partition: SynthesizedPartition,
    loaded: &LoadedParams,
    randomness: Randomness,
    hooks: &mut dyn PhaseHooks,
) -> Result<(Proof<Bls12>, DeviceTimings)> {
    let params = loaded.parameters();
    prove_with_plan(partition, loaded, randomness, hooks, |witness, _| {
        Ok(Box::new(HostPlan::new(ops, witness, params)))
    })
}

/// `0..terms` in consecutive ranges of at most `step` (none for no terms).
fn ranges(terms: usize, step: usize) -> impl Iterator<Item = Range<usize>> {
    (0..terms.div_ceil(step)).map(move |i| i * step..((i + 1) * step).min(terms))
}

/// The plan that keeps everything in host memory: h and each query's scalars as 32-byte
/// little-endian values, the multiexps and the H polynomial through a [`DeviceOps`] (the CPU's,
/// or a test's). A scalar vector exists only while its query runs (B's for both B queries).
pub struct HostPlan<'a> {
    ops: &'a dyn DeviceOps,
    witness: &'a Witness,
    params: &'a Parameters<Bls12>,
    h: Option<Vec<Fr>>,
    abc_released: bool,
    /// The scalars of the query running, by the first query that uses them.
    scalars: Option<(Query, ScalarBytes)>,
}

impl<'a> HostPlan<'a> {
    pub fn new(
        ops: &'a dyn DeviceOps,
        witness: &'a Witness,
        params: &'a Parameters<Bls12>,
    ) -> HostPlan<'a> {
        HostPlan {
            ops,
            witness,
            params,
            h: None,
            abc_released: false,
            scalars: None,
        }
    }

    /// A plan whose h was computed elsewhere (a device backend falling back to the CPU).
    pub fn with_h(mut self, h: Vec<Fr>) -> Self {
        self.set_h(h);
        self
    }

    /// Takes h computed elsewhere.
    pub fn set_h(&mut self, h: Vec<Fr>) {
        self.h = Some(h);
        self.abc_released = true;
    }

    /// Whether h is here yet.
    pub fn has_h(&self) -> bool {
        self.h.is_some() || matches!(self.scalars, Some((Query::H, _)))
    }

    /// The scalars of `query`, made on its first step.
    fn scalars(&mut self, query: Query) -> Result<&ScalarBytes> {
        let owner = match query {
            Query::B2 => Query::B1,
            q => q,
        };
        if self.scalars.as_ref().map(|(q, _)| *q) != Some(owner) {
            let w = self.witness;
            let made = match owner {
                Query::H => ScalarBytes::dense_in_place(self.h.take().ok_or_else(|| {
                    ProverError::Device {
                        backend: "cpu".into(),
                        reason: "the H multiexp ran before h was computed".into(),
                    }
                })?),
                Query::L => ScalarBytes::dense(&w.aux),
                Query::A => {
                    ScalarBytes::gathered(&[(&w.inputs, None), (&w.aux, Some(&w.a_aux_density))])
                }
                _ => ScalarBytes::gathered(&[
                    (&w.inputs, Some(&w.b_input_density)),
                    (&w.aux, Some(&w.b_aux_density)),
                ]),
            };
            self.scalars = Some((owner, made));
        }
        Ok(&self.scalars.as_ref().expect("made above").1)
    }

    fn check_len(bases: usize, scalars: usize) -> Result<()> {
        if bases != scalars {
            return Err(ProverError::ParamsShape(format!(
                "a multiexp has {bases} bases for {scalars} scalars"
            )));
        }
        Ok(())
    }
}

impl DevicePlan for HostPlan<'_> {
    fn h(&mut self, abc: Abc, hooks: &mut dyn PhaseHooks) -> Result<()> {
        self.h = Some(
            self.ops
                .compute_h_in_steps(abc, &mut || hooks.step_done())?,
        );
        self.abc_released = true;
        Ok(())
    }

    fn abc_released(&self) -> bool {
        self.abc_released
    }

    /// One step after another: `next` is not looked at.
    fn g1(
        &mut self,
        step: &Step,
        _next: Option<&Step>,
        hooks: &mut dyn PhaseHooks,
    ) -> Result<G1Projective> {
        let params = self.params;
        let bases = step.query.g1_bases(params);
        let ops = self.ops;
        let scalars = self.scalars(step.query)?;
        Self::check_len(bases.len(), scalars.len())?;
        let range = step.range.clone();
        ops.msm_g1_in_steps(
            &bases[range.clone()],
            scalars.view().slice(range),
            &mut || hooks.step_done(),
        )
    }

    fn g2(
        &mut self,
        step: &Step,
        _next: Option<&Step>,
        hooks: &mut dyn PhaseHooks,
    ) -> Result<G2Projective> {
        let bases = &self.params.b_g2;
        let ops = self.ops;
        let scalars = self.scalars(Query::B2)?;
        Self::check_len(bases.len(), scalars.len())?;
        let range = step.range.clone();
        ops.msm_g2_in_steps(
            &bases[range.clone()],
            scalars.view().slice(range),
            &mut || hooks.step_done(),
        )
    }

    fn finish(&mut self, query: Query) {
        // B's scalars serve both B queries: they go with the second.
        if query != Query::B1 {
            self.scalars = None;
        }
    }

    fn step_points(&self) -> usize {
        self.ops.step_points()
    }

    fn faults(&self) -> u32 {
        self.ops.faults()
    }
}
