//! The split of a co-executed run corrected by how the run ended.
//!
//! The plan splits work between devices by their learned costs, so that
//! all finish together. Those costs come from packages, and a package's
//! rate is not quite the rate at which a device progresses through a
//! co-executed run: devices that share DRAM or PCIe slow each other down
//! while both run and not once one has stopped (a GPU's last package,
//! running past the CPU's end, runs faster and lifts its fitted rate); a
//! GPU claims ahead on estimated backlogs; a CPU's workers hold claimed
//! packages the split does not see. Whatever the cause, it shows at the
//! end of the run: one device finishes before the others. So after every
//! co-executed run the learner measures each device's rate over the run
//! (its items over the time from its first start to its finish) and the
//! share of the work each would have had to finish together, and scales
//! each device's rate in the plan by the ratio of that share to what it
//! took, damped ([`GAIN`]), within [`MIN_SCALE`] to [`MAX_SCALE`], and not
//! for imbalances within [`DEADBAND`] of the run (noise).
//!
//! Plain data: no clock, no threads.

/// The power of the correction applied per run (0.5: half the measured
/// imbalance, in log terms, so noise does not make it oscillate).
pub(crate) const GAIN: f64 = 0.5;

/// The smallest scale of a device's rate.
pub(crate) const MIN_SCALE: f64 = 0.5;

/// The largest scale of a device's rate.
pub(crate) const MAX_SCALE: f64 = 2.0;

/// Finish times within this fraction of the run's length leave the scales
/// as they are.
pub(crate) const DEADBAND: f64 = 0.02;

/// What one device did in a co-executed run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Share {
    /// The device's estimator slot (0: the CPU workers, `1 + g`: GPU `g`).
    pub(crate) slot: usize,
    /// Items it ran.
    pub(crate) items: u64,
    /// Seconds from the run's start to its first package's start.
    pub(crate) start_s: f64,
    /// Seconds from the run's start to its results being home: its last
    /// package's end, or on a staged GPU its last download's where later
    /// (a GPU that ends its packages first may still be shipping their
    /// outputs when the others are done).
    pub(crate) finish_s: f64,
}

/// Per-slot scales of the rates the plan splits by.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct SplitScale {
    scale: Vec<f64>,
}

impl SplitScale {
    /// The scale of `slot`'s rate (1 until a run corrected it).
    pub(crate) fn factor(&self, slot: usize) -> f64 {
        self.scale.get(slot).copied().unwrap_or(1.0)
    }

    /// Every scale that differs from 1, by slot (for profiles).
    pub(crate) fn scales(&self) -> Vec<(usize, f64)> {
        self.scale
            .iter()
            .enumerate()
            .filter(|(_, &f)| f != 1.0)
            .map(|(slot, &f)| (slot, f))
            .collect()
    }

    /// Starts `slot` from a scale read from a profile (clamped to
    /// [`MIN_SCALE`]..=[`MAX_SCALE`]; not finite: ignored).
    pub(crate) fn seed(&mut self, slot: usize, scale: f64) {
        if !scale.is_finite() {
            return;
        }
        if self.scale.len() <= slot {
            self.scale.resize(slot + 1, 1.0);
        }
        self.scale[slot] = scale.clamp(MIN_SCALE, MAX_SCALE);
    }

    /// Corrects the scales from a co-executed run's `shares`. Devices that
    /// ran nothing, or whose times are unusable, are left out; with fewer
    /// than two left, nothing changes.
    pub(crate) fn update(&mut self, shares: &[Share]) {
        let ran: Vec<(usize, f64, f64)> = shares
            .iter()
            .filter(|s| s.items > 0 && s.start_s.is_finite() && s.finish_s.is_finite())
            .filter(|s| s.finish_s > s.start_s && s.start_s >= 0.0)
            .map(|s| {
                let items = s.items as f64;
                (s.slot, items, items / (s.finish_s - s.start_s))
            })
            .collect();
        if ran.len() < 2 {
            return;
        }
        let fin = |f: fn(f64, f64) -> f64, init| {
            shares
                .iter()
                .filter(|s| ran.iter().any(|r| r.0 == s.slot))
                .map(|s| s.finish_s)
                .fold(init, f)
        };
        let (first, last) = (fin(f64::min, f64::INFINITY), fin(f64::max, 0.0));
        if last <= 0.0 || (last - first) <= DEADBAND * last {
            return;
        }
        let items: f64 = ran.iter().map(|r| r.1).sum();
        let rates: f64 = ran.iter().map(|r| r.2).sum();
        let even = items / rates;
        for &(slot, took, rate) in &ran {
            let ratio = rate * even / took;
            if self.scale.len() <= slot {
                self.scale.resize(slot + 1, 1.0);
            }
            let s = self.scale[slot] * ratio.powf(GAIN);
            self.scale[slot] = s.clamp(MIN_SCALE, MAX_SCALE);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A simulated two-device run: the plan splits `n` items by the scaled
    /// estimated rates; each device then runs at its true co-running rate.
    fn run(est: [f64; 2], truth: [f64; 2], s: &SplitScale, n: f64) -> [Share; 2] {
        let r = [est[0] * s.factor(0), est[1] * s.factor(1)];
        let a = (n * r[0] / (r[0] + r[1])).round();
        let taken = [a, n - a];
        let share = |slot: usize| Share {
            slot,
            items: taken[slot] as u64,
            start_s: 1e-5,
            finish_s: 1e-5 + taken[slot] / truth[slot],
        };
        [share(0), share(1)]
    }

    /// A GPU whose fitted rate is 30% above the rate it keeps beside the
    /// CPU: it finishes last, its scale comes down until both finish within
    /// the dead band, in a few runs, and stays there.
    #[test]
    fn converges_to_an_even_finish() {
        let est = [7.7e9, 5.1e9];
        let truth = [7.7e9, 3.8e9];
        let mut s = SplitScale::default();
        let n = 33.5e6;
        let spread = |sh: [Share; 2]| {
            let f = [sh[0].finish_s, sh[1].finish_s];
            (f[0] - f[1]).abs() / f[0].max(f[1])
        };
        assert!(spread(run(est, truth, &s, n)) > 0.1);
        for _ in 0..6 {
            let sh = run(est, truth, &s, n);
            s.update(&sh);
        }
        let sh = run(est, truth, &s, n);
        assert!(spread(sh) <= DEADBAND, "{sh:?} {s:?}");
        assert!(s.factor(1) < s.factor(0));
        let before = s.clone();
        s.update(&sh);
        assert_eq!(s, before, "inside the dead band nothing moves");
    }

    #[test]
    fn ignores_runs_it_cannot_judge() {
        let mut s = SplitScale::default();
        let share = |slot, items, finish_s| Share {
            slot,
            items,
            start_s: 0.0,
            finish_s,
        };
        // One device ran: nothing to balance.
        s.update(&[share(0, 100, 1.0), share(1, 0, 0.0)]);
        // Unusable times.
        s.update(&[share(0, 100, f64::NAN), share(1, 100, 2.0)]);
        s.update(&[share(0, 100, 0.0), share(1, 100, 2.0)]);
        assert_eq!(s, SplitScale::default());
        assert_eq!(s.factor(7), 1.0);
        // A huge imbalance moves by at most the clamp.
        for _ in 0..20 {
            s.update(&[share(0, 1, 1e-6), share(1, 1_000_000, 1.0)]);
        }
        assert_eq!(s.factor(1), MIN_SCALE);
        assert_eq!(s.factor(0), MAX_SCALE);
        assert_eq!(s.scales(), vec![(0, MAX_SCALE), (1, MIN_SCALE)]);
    }

    #[test]
    fn seeds_round_trip_and_clamp() {
        let mut s = SplitScale::default();
        s.seed(2, 0.8);
        s.seed(0, 9.0);
        s.seed(1, f64::NAN);
        assert_eq!(s.scales(), vec![(0, MAX_SCALE), (2, 0.8)]);
        assert_eq!(s.factor(1), 1.0);
    }
}
