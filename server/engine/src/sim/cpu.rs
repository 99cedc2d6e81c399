//! The cores shared out as the OS would: by weight (a thread's nice value), no step given more
//! cores than it can use, what one cannot use going to the others (weighted max-min fairness).

/// One step wanting cores: its weight and the most cores it can use.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Demand {
    pub weight: f64,
    pub cap: f64,
}

/// Cores each demand gets out of `cores`.
pub(crate) fn share(cores: f64, demands: &[Demand]) -> Vec<f64> {
    let mut given = vec![0.0; demands.len()];
    let mut open: Vec<usize> = (0..demands.len())
        .filter(|&i| demands[i].cap > 0.0)
        .collect();
    let mut left = cores;
    while !open.is_empty() && left > 1e-12 {
        let weights: f64 = open.iter().map(|&i| demands[i].weight).sum();
        let fair = |i: usize| left * demands[i].weight / weights;
        // Those whose fair share is more than they can use take what they can use; the rest is
        // shared again among the others.
        let (full, rest): (Vec<usize>, Vec<usize>) =
            open.iter().partition(|&&i| demands[i].cap <= fair(i));
        if full.is_empty() {
            for &i in &open {
                given[i] = fair(i);
            }
            break;
        }
        for &i in &full {
            given[i] = demands[i].cap;
            left -= demands[i].cap;
        }
        open = rest;
    }
    given
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(weight: f64, cap: f64) -> Demand {
        Demand { weight, cap }
    }

    #[test]
    fn equal_weights_share_equally_and_what_one_cannot_use_goes_to_the_others() {
        assert_eq!(share(4.0, &[d(1.0, 4.0), d(1.0, 4.0)]), vec![2.0, 2.0]);
        assert_eq!(share(4.0, &[d(1.0, 1.0), d(1.0, 4.0)]), vec![1.0, 3.0]);
        assert_eq!(share(4.0, &[d(1.0, 1.0), d(1.0, 1.0)]), vec![1.0, 1.0]);
    }

    #[test]
    fn a_heavier_weight_takes_nearly_everything_it_can_use() {
        let given = share(2.0, &[d(1024.0, 2.0), d(15.0, 2.0)]);
        assert!(given[0] > 1.97 && given[1] < 0.03, "{given:?}");
        // It cannot use more than one core: the background step gets the other.
        let given = share(2.0, &[d(1024.0, 1.0), d(15.0, 2.0)]);
        assert_eq!(given, vec![1.0, 1.0]);
    }
}
