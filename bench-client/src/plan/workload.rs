//! What arrives in a simulation, and in the real run `--check` sets beside it: kinds kept in
//! flight (Curio's `MaxPending`), and arrivals at seeded random gaps.

use std::time::Duration;

use anyhow::{Context, Result};
use rand::{Rng, SeedableRng};
use snarkd_prover::ProofKind;

/// `kind=value` pairs of the command line (`porep=10`, `winning=30s`).
pub fn pairs<T>(
    items: &[String],
    value: impl Fn(&str) -> Result<T>,
) -> Result<Vec<(ProofKind, T)>> {
    items
        .iter()
        .map(|item| {
            let (kind, v) = item
                .split_once('=')
                .with_context(|| format!("{item:?}: expected KIND=VALUE, e.g. porep=10"))?;
            let kind: ProofKind = kind
                .parse()
                .map_err(|_| anyhow::anyhow!("{kind:?} is not porep, snap, wpost or winning"))?;
            Ok((kind, value(v).with_context(|| format!("{item:?}"))?))
        })
        .collect()
}

/// Arrivals of each kind in `every` over `duration`: gaps uniform between half and one and a
/// half of the kind's mean, each kind its own stream from `seed` (adding a kind moves no other
/// kind's arrivals), in time order.
pub fn arrivals(
    every: &[(ProofKind, Duration)],
    duration: Duration,
    seed: u64,
) -> Vec<(Duration, ProofKind)> {
    let mut all = Vec::new();
    for &(kind, mean) in every {
        let stream = ProofKind::ALL.iter().position(|k| *k == kind).unwrap_or(0) as u64;
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed.wrapping_mul(31).wrapping_add(stream));
        let mut t = Duration::ZERO;
        loop {
            t += mean.mul_f64(rng.gen_range(0.5..1.5));
            if t >= duration || mean.is_zero() {
                break;
            }
            all.push((t, kind));
        }
    }
    all.sort_by_key(|(t, _)| *t);
    all
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arrivals_are_the_same_for_a_seed_and_each_kind_keeps_its_own() {
        let hour = Duration::from_secs(3600);
        let winning = [(ProofKind::WinningPost, Duration::from_secs(60))];
        let both = [
            winning[0],
            (ProofKind::WindowPost, Duration::from_secs(600)),
        ];
        let a = arrivals(&winning, hour, 7);
        assert_eq!(a, arrivals(&winning, hour, 7));
        assert_ne!(a, arrivals(&winning, hour, 8));
        assert!((40..80).contains(&a.len()), "{}", a.len());
        let only_winning: Vec<_> = (arrivals(&both, hour, 7).into_iter())
            .filter(|(_, k)| *k == ProofKind::WinningPost)
            .collect();
        assert_eq!(only_winning, a);
    }

    #[test]
    fn pairs_name_a_kind_and_a_value() {
        let parsed = pairs(&["porep=10".to_string()], |v| Ok(v.parse::<u32>()?)).unwrap();
        assert_eq!(parsed, vec![(ProofKind::PorepSealCommit, 10)]);
        assert!(pairs(&["pore=1".to_string()], |v| Ok(v.parse::<u32>()?)).is_err());
        assert!(pairs(&["porep".to_string()], |v| Ok(v.parse::<u32>()?)).is_err());
    }
}
