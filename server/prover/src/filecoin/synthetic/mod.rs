//! Production-shaped partition circuits from seeded random values, for benchmarks and tests
//! (feature `bench`; no request reaches them): PoRep (`StackedCircuit`, from synthetic vanilla
//! proofs through `StackedCompound::circuit`), SnapDeals (`EmptySectorUpdateCircuit`) and
//! Window/Winning PoSt (`FallbackPoStCircuit`), at any sector size with registered proofs, with
//! a chosen number of challenges (PoRep, SnapDeals) or sectors (PoSt) and no Groth16 parameters.
//!
//! The values are random, so the circuits are not satisfied, but every value is present and the
//! ones the circuits check while synthesizing hold: a SnapDeals challenge's new replica leaf is
//! its old leaf plus its data leaf times rho (for the challenges the circuit derives), every
//! challenge of a partition shares the TreeD siblings above the partition's apex, and the packed
//! k / h-select input is valid. Merkle path positions are the digits of the challenged node.
//!
//! Layout:
//! - `mod.rs`: [`synthesize`] (builds one circuit and runs it one [`Synthesis`] way) and
//!   [`production_count`].
//! - `paths.rs`: random Merkle paths of a tree's shape.
//! - `porep.rs`, `snap.rs`, `post.rs`: each kind's circuit.
//! - `count.rs`: the constraint system that only counts.
//! - `recorded.rs`: the pre-compiled runs' matrices, recorded once per shape in a process.

mod count;
mod paths;
pub(crate) mod porep;
mod post;
mod recorded;
pub(crate) mod snap;

use std::time::{Duration, Instant};

use bellperson::util_cs::witness_cs::WitnessCS;
use bellperson::{Circuit, ConstraintSystem};
use blstrs::Scalar as Fr;
use filecoin_proofs::{with_shape, MerkleTreeTrait, TreeRHasher};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use super::native::{NativeError, Witness};
use super::{CircuitId, CircuitShape, ProofKind};
use crate::error::{ProverError, Result};
use crate::rss::Usage;
use crate::synthesis::{caught, precompiled, synthesize_circuit_with_c};
use porep::challenges_per_partition as porep_challenges;
use post::sectors_per_partition as post_sectors;

/// How to synthesize a synthetic circuit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Synthesis {
    /// Count its constraints (one per public input included), inputs and aux variables; no
    /// value is computed.
    Count,
    /// snarkd's witness-only pass (the pre-compiled path's first step), with room reserved for
    /// the given shape, as the pre-compiled matrices give it.
    Witness(CircuitShape),
    /// bellperson's own witness-only constraint system (`WitnessCS`: no room reserved).
    BellpersonWitness,
    /// snarkd's native witness (`filecoin::native`), with room reserved for the given shape.
    Native(CircuitShape),
    /// The whole pre-compiled synthesis (witness, a = A·w, b = B·w; c is left to the device
    /// phase) from the circuit's matrices, recorded beforehand (not timed); the witness natively when `native`.
    Precompiled { native: bool },
    /// snarkd's plain path as the baseline: the recording constraint system (witness, a/b/c
    /// with c kept as bellperson keeps it, densities), with room reserved for the given shape.
    Recording(CircuitShape),
}

/// What one synthesis took and made.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Synthesized {
    /// Time in the synthesis alone (building the circuit beforehand is not counted).
    pub wall: Duration,
    /// Public inputs, ONE included.
    pub inputs: usize,
    pub aux: usize,
    /// Constraints, one per public input included; `None` on the witness-only paths, which do
    /// not count them.
    pub constraints: Option<usize>,
    /// The resident set when the synthesis began, the peak counter reset then (Linux): what it
    /// holds at its peak is the peak's rise over this, without the circuit built before it or
    /// the pre-compiled runs' matrices, which a daemon records once for every partition.
    pub rss_start: Option<u64>,
    /// The process's CPU seconds (user, system) and minor page faults during the synthesis
    /// alone (not building the circuit, not recording matrices).
    pub usage: Usage,
}

/// Where a measured synthesis began.
struct Start {
    rss: Option<u64>,
    at: Instant,
    usage: Usage,
}

impl Start {
    /// Frees what the allocator holds unused, resets the peak-RSS counter and reads the
    /// resident set, the clock and the process's usage: the start of a measured synthesis.
    fn now() -> Start {
        #[cfg(target_env = "gnu")]
        // SAFETY: malloc_trim only releases free memory of the allocator's arenas.
        unsafe {
            libc::malloc_trim(0)
        };
        crate::rss::reset_peak_rss();
        let rss = crate::rss::peak_rss();
        Start {
            rss,
            at: Instant::now(),
            usage: Usage::now(),
        }
    }

    /// The synthesis that made `inputs`, `aux` (and counted `constraints`) is done.
    fn done(&self, inputs: usize, aux: usize, constraints: Option<usize>) -> Synthesized {
        Synthesized {
            wall: self.at.elapsed(),
            inputs,
            aux,
            constraints,
            rss_start: self.rss,
            usage: Usage::now().since(self.usage),
        }
    }
}

/// Builds the synthetic partition circuit of `kind` at `sector_size` with `count` challenges
/// (PoRep, SnapDeals) or sectors (PoSt) from values seeded by `seed`, and synthesizes it `how`.
/// SnapDeals takes at most its production challenge count (its challenge generator yields no
/// more per partition); other counts are not bounded.
pub fn synthesize(
    kind: ProofKind,
    sector_size: u64,
    count: usize,
    seed: u64,
    how: Synthesis,
) -> Result<Synthesized> {
    let mut run = Run {
        how,
        shape: (kind, sector_size, count),
        done: None,
        keep: false,
        kept: None,
    };
    with_circuit(kind, sector_size, count, seed, &mut run)?;
    Ok(run
        .done
        .expect("with_circuit hands its circuit over or fails"))
}

/// The synthetic partition [`synthesize`] describes, synthesized the pre-compiled way (its
/// matrices recorded first, the witness native when `native`) and kept: a production-shaped
/// partition for the device phase's benchmark. Only kinds with a native witness (PoRep,
/// SnapDeals, the PoSt kinds) are kept.
pub fn synthesize_partition(
    kind: ProofKind,
    sector_size: u64,
    count: usize,
    seed: u64,
    native: bool,
) -> Result<crate::SynthesizedPartition> {
    let mut run = Run {
        how: Synthesis::Precompiled { native },
        shape: (kind, sector_size, count),
        done: None,
        keep: true,
        kept: None,
    };
    with_circuit(kind, sector_size, count, seed, &mut run)?;
    run.kept
        .ok_or_else(|| failed("this circuit has no pre-compiled run"))
}

/// A synthetic partition of a kind with a native witness: its circuit (as often as asked) and
/// its native witness.
pub(crate) trait Native: Sync {
    type Circuit: Circuit<Fr>;
    fn circuit(&self) -> Result<Self::Circuit>;
    fn witness(&self, inputs: usize, aux: usize) -> std::result::Result<Witness, NativeError>;
}

/// Something done with a synthetic circuit, whatever its type (which depends on the tree shape
/// of the sector size).
pub(crate) trait UseCircuit {
    fn take<C: Circuit<Fr>>(&mut self, circuit: C) -> Result<()>;

    /// A partition that has a native witness as well as its circuit.
    fn take_native<N: Native>(&mut self, partition: &N) -> Result<()> {
        self.take(partition.circuit()?)
    }
}

/// A synthesis `how`, and what it gave (the partition too, when `keep` and pre-compiled).
struct Run {
    how: Synthesis,
    /// The circuit's shape: its pre-compiled matrices are recorded once a process.
    shape: recorded::Shape,
    done: Option<Synthesized>,
    keep: bool,
    kept: Option<crate::SynthesizedPartition>,
}

impl UseCircuit for Run {
    fn take<C: Circuit<Fr>>(&mut self, circuit: C) -> Result<()> {
        if let Synthesis::Native(_) | Synthesis::Precompiled { .. } = self.how {
            return Err(failed(
                "this circuit has no native witness (nor this pre-compiled run)",
            ));
        }
        self.done = Some(apply(circuit, self.how)?);
        Ok(())
    }

    fn take_native<N: Native>(&mut self, partition: &N) -> Result<()> {
        if let Synthesis::Precompiled { native } = self.how {
            let matrices = recorded::matrices(self.shape, || partition.circuit())?;
            // The gadgets' circuit is built before the timing, as the other paths' are.
            let circuit = if native {
                None
            } else {
                Some(partition.circuit()?)
            };
            let start = Start::now();
            let p = match circuit {
                Some(circuit) => precompiled::synthesize_precompiled(0, circuit, &matrices)?,
                None => {
                    // On the pool it runs in (a benchmark's), else its priority's, as the
                    // daemon's synthesis does.
                    let witness = crate::threads::install(|| {
                        partition.witness(matrices.num_inputs(), matrices.num_aux())
                    })
                    .map_err(failed)?;
                    precompiled::from_witness(0, witness, &matrices, start.at)?
                }
            };
            self.done = Some(start.done(p.num_inputs(), p.num_aux(), Some(p.num_constraints())));
            match self.keep {
                true => self.kept = Some(p),
                // Kept for the next run where the benchmark keeps buffers (`spare`).
                false => p.give_back(),
            }
            return Ok(());
        }
        let Synthesis::Native(room) = self.how else {
            return self.take(partition.circuit()?);
        };
        let start = Start::now();
        let (inputs, aux) = caught(
            || crate::threads::install(|| partition.witness(room.inputs, room.aux)).map_err(failed),
            failed,
        )?;
        self.done = Some(start.done(inputs.len(), aux.len(), None));
        Ok(())
    }
}

/// Builds the circuit [`synthesize`] describes and hands it to `user`.
pub(crate) fn with_circuit(
    kind: ProofKind,
    sector_size: u64,
    count: usize,
    seed: u64,
    user: &mut impl UseCircuit,
) -> Result<()> {
    CircuitId::new(kind, sector_size)?;
    if count == 0 {
        return Err(ProverError::WrongCount {
            what: "challenges or sectors",
            expected: "at least 1".into(),
            actual: 0,
        });
    }
    with_shape!(sector_size, build, kind, sector_size, count, seed, user)
}

/// Challenges (PoRep, SnapDeals) or sectors (PoSt) in one production partition of `kind` at
/// `sector_size`: what [`synthesize`]'s `count` is for the real circuit.
pub fn production_count(kind: ProofKind, sector_size: u64) -> Result<usize> {
    CircuitId::new(kind, sector_size)?;
    match kind {
        ProofKind::PorepSealCommit => with_shape!(sector_size, porep_challenges, sector_size),
        ProofKind::SnapDealsUpdate => Ok(snap::challenges_per_partition(sector_size)),
        ProofKind::WindowPost | ProofKind::WinningPost => {
            with_shape!(sector_size, post_sectors, kind, sector_size)
        }
    }
}

fn build<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    kind: ProofKind,
    sector_size: u64,
    count: usize,
    seed: u64,
    user: &mut impl UseCircuit,
) -> Result<()> {
    let rng = &mut ChaCha8Rng::seed_from_u64(seed);
    match kind {
        ProofKind::PorepSealCommit => {
            user.take_native(&porep::partition::<Tree>(sector_size, count, rng)?)
        }
        ProofKind::SnapDealsUpdate => user.take_native(&snap::Partition(snap::circuit::<Tree>(
            sector_size,
            count,
            rng,
        )?)),
        ProofKind::WindowPost | ProofKind::WinningPost => {
            user.take_native(&post::partition::<Tree>(kind, sector_size, count, rng)?)
        }
    }
}

/// Synthesizes `circuit` `how`, timing the synthesis alone (what it made is dropped after).
fn apply<C: Circuit<Fr>>(circuit: C, how: Synthesis) -> Result<Synthesized> {
    let start = Start::now();
    let done = |inputs, aux, constraints| start.done(inputs, aux, constraints);
    Ok(match how {
        Synthesis::Count => {
            let s = count::count(circuit)?;
            done(s.inputs, s.aux, Some(s.constraints))
        }
        Synthesis::Witness(room) => {
            let (inputs, aux) = precompiled::witness_pass(0, circuit, room.inputs, room.aux)?;
            done(inputs.len(), aux.len(), None)
        }
        Synthesis::BellpersonWitness => {
            let run = || {
                // `new` allocates ONE.
                let mut cs = WitnessCS::<Fr>::new();
                circuit.synthesize(&mut cs).map_err(failed)?;
                Ok(done(cs.inputs_slice().len(), cs.aux_slice().len(), None))
            };
            caught(run, failed)?
        }
        Synthesis::Native(_) | Synthesis::Precompiled { .. } => {
            unreachable!("take_native runs these")
        }
        Synthesis::Recording(room) => {
            // The baseline keeps c, as bellperson's prover does.
            let p = synthesize_circuit_with_c(0, circuit, room)?;
            done(p.num_inputs(), p.num_aux(), Some(p.num_constraints()))
        }
    })
}

/// A synthesis error or panic of the synthetic circuit (partition 0).
fn failed(reason: impl ToString) -> ProverError {
    ProverError::Synthesis {
        partition: 0,
        reason: reason.to_string(),
    }
}

#[cfg(test)]
mod tests;
