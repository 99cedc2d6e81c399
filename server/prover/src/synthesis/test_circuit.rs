//! A small circuit that uses what real circuits do (coefficients other than ±1, zero and
//! repeated terms, inputs in B, sub-systems joined by `extend`, a witness-generator fast path),
//! for the tests of the pre-compiled synthesis and of the parameter setup.

use bellperson::{Circuit, ConstraintSystem, Index, SynthesisError, Variable};
use blstrs::Scalar as Fr;
use ff::Field;

#[derive(Clone)]
pub(crate) struct Mixed {
    pub(crate) seed: Option<u64>,
    /// Sub-systems joined with `extend` (when the constraint system is extensible).
    pub(crate) parts: usize,
    /// A witness value off by one: the witness does not satisfy the circuit.
    pub(crate) unsatisfied: bool,
}

fn value(v: Option<Fr>) -> Result<Fr, SynthesisError> {
    v.ok_or(SynthesisError::AssignmentMissing)
}

/// One part: a chain of products with assorted coefficients; returns nothing, binds an input.
fn part<CS: ConstraintSystem<Fr>>(
    cs: &mut CS,
    seed: Option<u64>,
    unsatisfied: bool,
) -> Result<(), SynthesisError> {
    let x_val = seed.map(|s| Fr::from(s + 3));
    let x = cs.alloc(|| "x", || value(x_val))?;
    let pub_val = x_val.map(|x| x.square() * Fr::from(5));
    let out = cs.alloc_input(|| "out", || value(pub_val))?;
    let mut v_val = x_val;
    let mut v = x;
    for i in 0..20u64 {
        let wrong = if unsatisfied && i == 7 {
            Fr::ONE
        } else {
            Fr::ZERO
        };
        let next_val = v_val.map(|v| v * v + Fr::from(i) + wrong);
        let next = cs.alloc(|| "next", || value(next_val))?;
        // v * v = next - i·ONE, with a zero term and a repeated variable thrown in.
        cs.enforce(
            || "step",
            |lc| lc + v + (Fr::ZERO, x),
            |lc| lc + (Fr::from(2), v) - v,
            |lc| lc + next - (Fr::from(i), CS::one()),
        );
        v = next;
        v_val = next_val;
    }
    // x·x·5 = out, the input in B.
    cs.enforce(
        || "out",
        |lc| lc + (Fr::from(5), x),
        |lc| lc + x,
        |lc| lc + out,
    );
    // out * 1 = out: an input in A and B with −1 in C.
    cs.enforce(
        || "in b",
        |lc| lc + out,
        |lc| lc + CS::one(),
        |lc| lc - (-Fr::ONE, out),
    );
    // Values handed over in bulk, as neptune's witness path does, then constrained.
    let bulk: Vec<Fr> = (0..4)
        .map(|k| x_val.unwrap_or(Fr::ZERO) + Fr::from(k))
        .collect();
    let vars: Vec<Variable> = if cs.is_witness_generator() {
        cs.extend_aux(&bulk);
        let end = cs.aux_slice().len();
        (end - bulk.len()..end)
            .map(|i| Variable::new_unchecked(Index::Aux(i)))
            .collect()
    } else {
        let mut vars = Vec::new();
        for b in &bulk {
            vars.push(cs.alloc(|| "bulk", || Ok(*b))?);
        }
        vars
    };
    for v in vars {
        cs.enforce(
            || "bulk",
            |lc| lc + (Fr::from(3), v),
            |lc| lc + CS::one(),
            |lc| lc + v + v + v,
        );
    }
    Ok(())
}

impl Circuit<Fr> for Mixed {
    fn synthesize<CS: ConstraintSystem<Fr>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        part(cs, self.seed, self.unsatisfied)?;
        if CS::is_extensible() {
            let mut subs = Vec::new();
            for p in 0..self.parts {
                let mut sub = CS::new();
                sub.alloc_input(|| "temp ONE", || Ok(Fr::ONE))?;
                part(&mut sub, self.seed.map(|s| s + 100 * (p as u64 + 1)), false)?;
                subs.push(sub);
            }
            for sub in &subs {
                cs.extend(sub);
            }
        } else {
            for p in 0..self.parts {
                part(cs, self.seed.map(|s| s + 100 * (p as u64 + 1)), false)?;
            }
        }
        Ok(())
    }
}

pub(crate) fn circuit(seed: u64) -> Mixed {
    Mixed {
        seed: Some(seed),
        parts: 3,
        unsatisfied: false,
    }
}

pub(crate) fn blank() -> Mixed {
    Mixed {
        seed: None,
        parts: 3,
        unsatisfied: false,
    }
}
