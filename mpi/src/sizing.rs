//! HGuided across ranks: how many units a rank asks for, from what is left
//! and its share of the measured power of all ranks.
//!
//! A rank's power is its own throughput (units per second of its local
//! runs, over every package it ran). Each rank publishes it in the claim
//! window after every package, as a term of a sum the window keeps, with a
//! count of the ranks that published; a rank sizes its next package with
//! its own figure against that sum. A rank that has not published yet is
//! counted at the mean of those that have; before any rank has, all are
//! equal.

/// Package sizing for one rank.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sizing {
    /// HGuided's `k`: a rank takes `1/k` of its share of what is left.
    pub k: f64,
    /// The smallest package, in units (the last one may be smaller).
    pub min_units: u64,
    /// Ranks in the run.
    pub ranks: u32,
}

/// What the window says about every rank's power.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Powers {
    /// Sum of the published powers (units per second).
    pub sum: f64,
    /// Ranks that have published.
    pub published: u32,
}

impl Sizing {
    /// Units to ask for when `remaining` units are left, for a rank of
    /// power `own` (`None`: not measured yet) given the window's `powers`.
    /// At least `min_units` and at most `remaining`; 0 only when nothing
    /// is left.
    pub fn package(&self, remaining: u64, own: Option<f64>, powers: Powers) -> u64 {
        if remaining == 0 {
            return 0;
        }
        let ranks = f64::from(self.ranks.max(1));
        let mean = if powers.published > 0 && powers.sum > 0.0 {
            powers.sum / f64::from(powers.published)
        } else {
            1.0
        };
        let unpublished = ranks - f64::from(powers.published.min(self.ranks));
        let total = if powers.published > 0 && powers.sum > 0.0 {
            powers.sum + unpublished * mean
        } else {
            ranks
        };
        let own = own.filter(|p| p.is_finite() && *p > 0.0).unwrap_or(mean);
        let share = (own / total).clamp(0.0, 1.0);
        let want = (remaining as f64 * share / self.k.max(1.0)).ceil();
        // `want` is at most `remaining`, so the cast cannot saturate wrongly.
        (want as u64).max(self.min_units.max(1)).min(remaining)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(ranks: u32) -> Sizing {
        Sizing {
            k: 2.0,
            min_units: 1,
            ranks,
        }
    }

    #[test]
    fn unmeasured_ranks_split_evenly() {
        // 2 ranks, nothing published: 1/(k*R) of what is left.
        assert_eq!(s(2).package(100, None, Powers::default()), 25);
    }

    #[test]
    fn a_faster_rank_takes_more() {
        let p = Powers {
            sum: 400.0,
            published: 2,
        };
        // 300 of 400: 3/4 of 100 / 2.
        assert_eq!(s(2).package(100, Some(300.0), p), 38);
        assert_eq!(s(2).package(100, Some(100.0), p), 13);
    }

    #[test]
    fn unpublished_ranks_count_at_the_mean() {
        // One of 4 published 100: the total is taken as 400.
        let p = Powers {
            sum: 100.0,
            published: 1,
        };
        assert_eq!(s(4).package(800, Some(100.0), p), 100);
        assert_eq!(s(4).package(800, None, p), 100);
    }

    #[test]
    fn bounds_hold() {
        let sz = Sizing {
            k: 2.0,
            min_units: 8,
            ranks: 3,
        };
        assert_eq!(sz.package(0, None, Powers::default()), 0);
        assert_eq!(sz.package(5, None, Powers::default()), 5);
        assert_eq!(sz.package(30, None, Powers::default()), 8);
        // Nonsense figures still give a package within bounds.
        let p = Powers {
            sum: f64::NAN,
            published: 7,
        };
        let n = sz.package(1000, Some(f64::INFINITY), p);
        assert!((8..=1000).contains(&n));
    }
}
