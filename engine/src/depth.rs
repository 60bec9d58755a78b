//! How many packages a lone staged GPU cuts its run into, where its
//! transfers have a queue of their own (see [`crate::exec::stagers`]).
//!
//! One package runs its compute, then its download. In `n` packages, each
//! package's download runs beside the next package's compute, and each
//! package pays a fixed cost (the gap between dispatches, and on an
//! irregular kernel the wait for its heaviest items). On an H200 a lone
//! GPU ran 8-24% faster in 4-8 packages than in one (BENCHMARKS.md,
//! section 0, run 17), while a power-law sparse matrix, whose every
//! package waits a millisecond for its densest rows, ran fastest in one.
//!
//! The cost model's figures cannot tell these apart reliably: a GPU's
//! fixed cost per package, fitted over co-executed packages, carries their
//! waits (0.55 ms a package on a hash kernel whose lone packages cost
//! 25 us). So the depth is measured: a kernel's lone runs climb the ladder
//! [`LADDER`] (1, 2, 4, 8 packages) one step per run while each step beats
//! the one below it by [`GAIN`], and stay at the best step measured. A run
//! in one package transfers on the compute queue (where one package
//! measured fastest, 1.52 against 1.59 ms on the sparse matrix), except a
//! kernel's first run, which pays its one-time costs either way and
//! measured faster on the transfer queue.
//!
//! Plain data: no clock, no threads.

/// The package counts a lone GPU's run tries, in order.
pub(crate) const LADDER: [u64; 4] = [1, 2, 4, 8];

/// The part of the time per unit a step must save over the one below it
/// for the next step to be tried (run-to-run noise is about 2%).
pub(crate) const GAIN: f64 = 0.02;

/// The index in [`LADDER`] of `packages`, where it is a step.
fn step_of(packages: u64) -> Option<usize> {
    LADDER.iter().position(|&n| n == packages)
}

/// What a lone GPU's run is cut into.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Depth {
    /// Packages (the last may be smaller; a probe comes first where the
    /// GPU is unmeasured).
    pub(crate) packages: u64,
    /// The run transfers on the GPU's transfer queue.
    pub(crate) own_queue: bool,
}

/// One kernel's measured lone runs over one space, per ladder step.
///
/// A step's time is the [`typical`](crate::outcomes::typical) of its last
/// [`KEEP`] samples (noise is mostly upward, and one run can pay one-time
/// costs). A step below the best that was
/// measured once is measured again at every [`RECHECK`]-th lone run,
/// until it has two samples: a lone run right after a co-executed one
/// can pay for uploading what the CPU wrote (a conjugate-gradient
/// program's first lone run of a kernel took 1.45 ms in one package, its
/// later ones 0.27), and the ladder, which starts at one package, would
/// otherwise never run that step again. Where the learner knows the run
/// followed a run of other devices and uploaded bytes
/// ([`DepthLadder::record_after_others`]), the step is measured again as
/// soon as the ladder settled above it: CG's
/// lone runs climbed to four packages (4.9-5.0 ns a unit) past one package
/// measured at 20 ns after a co-executed run, and stayed there for 16 runs,
/// one package taking 4.1. (Not timing such a run at all delayed every
/// kernel's climb by a run: the learner, comparing a lone GPU still in one
/// package against co-execution, kept histogram and gather co-executed.)
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct DepthLadder {
    /// The last [`KEEP`] samples (seconds per unit) and the runs, per
    /// step of [`LADDER`].
    steps: [(Vec<f64>, u32); LADDER.len()],
    /// Per step: every sample it has came from a run right after a run of
    /// other devices.
    after_others: [bool; LADDER.len()],
}

/// Samples kept per step.
const KEEP: usize = 5;

/// Every this many lone runs, a step below the best that was measured
/// once is measured again (see [`DepthLadder`]).
pub(crate) const RECHECK: u32 = 16;

impl DepthLadder {
    /// The depth of the next lone run; `first`: the kernel's first run
    /// over this space.
    pub(crate) fn next(&self, first: bool) -> Depth {
        let best = self.step();
        let total: u32 = self.steps.iter().map(|s| s.1).sum();
        // Settled (the best is measured, not a step to climb to): a step
        // below it measured only after other devices' runs, at once.
        let switched = (self.steps[best].1 > 0)
            .then(|| (0..best).find(|&i| self.after_others[i]))
            .flatten();
        let again = switched.or_else(|| {
            (total > 0 && total % RECHECK == 0)
                .then(|| (0..best).find(|&i| self.steps[i].1 == 1))
                .flatten()
        });
        let packages = LADDER[again.unwrap_or(best)];
        Depth {
            packages,
            own_queue: first || packages > 1,
        }
    }

    /// Records a lone run of `packages` packages (a step of [`LADDER`];
    /// others are ignored) that took `per_unit_s` seconds per unit, after
    /// a lone run of the same GPU.
    pub(crate) fn record(&mut self, packages: u64, per_unit_s: f64) {
        self.add(packages, per_unit_s, false);
    }

    /// [`record`](Self::record) for a lone run right after a run of other
    /// devices (it may have uploaded what they wrote): the step is
    /// measured again once the ladder settled above it.
    pub(crate) fn record_after_others(&mut self, packages: u64, per_unit_s: f64) {
        self.add(packages, per_unit_s, true);
    }

    fn add(&mut self, packages: u64, per_unit_s: f64, after_others: bool) {
        if !(per_unit_s.is_finite() && per_unit_s > 0.0) {
            return;
        }
        if let Some(i) = step_of(packages) {
            let (recent, runs) = &mut self.steps[i];
            self.after_others[i] = after_others && (*runs == 0 || self.after_others[i]);
            *runs += 1;
            if recent.len() == KEEP {
                recent.remove(0);
            }
            recent.push(per_unit_s);
        }
    }

    /// The time of step `i` (see [`DepthLadder`]); infinite unmeasured.
    fn time(&self, i: usize) -> f64 {
        crate::outcomes::typical(&self.steps[i].0).unwrap_or(f64::INFINITY)
    }

    /// The measured steps: packages and seconds per unit (each step's
    /// time, see [`DepthLadder`]: what a profile keeps).
    pub(crate) fn measured(&self) -> Vec<(u64, f64)> {
        LADDER
            .iter()
            .zip(&self.steps)
            .enumerate()
            .filter(|(_, (_, (_, runs)))| *runs > 0)
            .map(|(i, (&n, _))| (n, self.time(i)))
            .collect()
    }

    /// Seeds the step of `packages` with `per_unit_s` as one run (from a
    /// profile: the next process's first lone runs start where this one's
    /// ended, and its own runs soon outweigh it).
    pub(crate) fn seed(&mut self, packages: u64, per_unit_s: f64) {
        if let Some(i) = step_of(packages) {
            self.steps[i] = (Vec::new(), 0);
            self.after_others[i] = false;
        }
        self.record(packages, per_unit_s);
    }

    /// The step to run: the first unmeasured one while each measured step
    /// beat the one below it by [`GAIN`]; else the best measured.
    fn step(&self) -> usize {
        let mut best = 0;
        for (i, (_, runs)) in self.steps.iter().enumerate() {
            if *runs == 0 {
                return i;
            }
            if i > 0 && self.time(i) >= self.time(best) * (1.0 - GAIN) {
                return best;
            }
            best = i;
        }
        best
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(l: &mut DepthLadder, time: impl Fn(u64) -> f64) -> u64 {
        let d = l.next(false);
        l.record(d.packages, time(d.packages));
        d.packages
    }

    #[test]
    fn climbs_while_each_step_pays() {
        // A kernel whose download overlaps its compute: 8 packages best.
        let mut l = DepthLadder::default();
        let t = |n: u64| 1.0 + 0.5 / n as f64;
        let seen: Vec<u64> = (0..6).map(|_| run(&mut l, t)).collect();
        assert_eq!(seen, [1, 2, 4, 8, 8, 8]);
    }

    #[test]
    fn stops_at_the_step_before_one_that_does_not_pay() {
        // Overlap saves up to 4 packages; past it the fixed cost wins.
        let mut l = DepthLadder::default();
        let t = |n: u64| match n {
            1 => 1.5,
            2 => 1.3,
            4 => 1.2,
            _ => 1.25,
        };
        let seen: Vec<u64> = (0..7).map(|_| run(&mut l, t)).collect();
        assert_eq!(seen, [1, 2, 4, 8, 4, 4, 4]);
    }

    #[test]
    fn a_kernel_whose_packages_wait_stays_whole() {
        // A millisecond per package: two cost more than one.
        let mut l = DepthLadder::default();
        let t = |n: u64| 0.5 + n as f64;
        let seen: Vec<u64> = (0..5).map(|_| run(&mut l, t)).collect();
        assert_eq!(seen, [1, 2, 1, 1, 1]);
        // Within the noise is not a gain either.
        let mut l = DepthLadder::default();
        let seen: Vec<u64> = (0..4)
            .map(|_| run(&mut l, |n| 1.0 - 0.01 * n as f64))
            .collect();
        assert_eq!(seen, [1, 2, 1, 1]);
    }

    /// A lone run right after a co-executed one that paid for uploading
    /// what the CPU wrote (one package, 5x its time): the ladder climbs
    /// past it as ever, and once it settled measures one package again at
    /// once, which then wins. A step with a sample of a run after a lone
    /// one is not measured again so.
    #[test]
    fn a_step_measured_after_other_devices_is_measured_again_once_settled() {
        let t = |n: u64| match n {
            1 => 1.0,
            2 => 1.6,
            4 => 1.4,
            _ => 1.5,
        };
        let mut l = DepthLadder::default();
        l.record_after_others(1, 5.0);
        let seen: Vec<u64> = (0..6).map(|_| run(&mut l, t)).collect();
        assert_eq!(seen, [2, 4, 8, 1, 1, 1]);
        // The same step also measured after a lone run: nothing to redo.
        let mut m = DepthLadder::default();
        m.record_after_others(1, 5.0);
        m.record(1, 5.0);
        let seen: Vec<u64> = (0..4).map(|_| run(&mut m, t)).collect();
        assert_eq!(seen, [2, 4, 8, 4]);
    }

    /// A kernel whose first lone run paid for uploading what the CPU had
    /// written (one package, 5x its time): the ladder climbs past it,
    /// and at the RECHECK-th lone run measures one package again, which
    /// then wins; a step measured twice is not measured again, nor is one
    /// above the best.
    #[test]
    fn a_step_measured_once_below_the_best_is_measured_again() {
        let mut l = DepthLadder::default();
        l.record(1, 5.0);
        let t = |n: u64| match n {
            1 => 1.0,
            2 => 1.6,
            4 => 1.4,
            _ => 1.5,
        };
        let seen: Vec<u64> = (0..RECHECK as usize + 2).map(|_| run(&mut l, t)).collect();
        let mut want = vec![2, 4, 8];
        want.resize(RECHECK as usize - 1, 4);
        want.extend([1, 1, 1]);
        assert_eq!(seen, want);
        assert_eq!(l.measured()[0], (1, 1.0));
        // Where the step above the best was measured once: not again.
        let mut m = DepthLadder::default();
        let seen: Vec<u64> = (0..2 * RECHECK as usize)
            .map(|_| run(&mut m, |n| 0.5 + n as f64))
            .collect();
        assert_eq!(seen.iter().filter(|&&n| n == 2).count(), 1, "{seen:?}");
    }

    #[test]
    fn one_package_uses_the_compute_queue_but_on_the_first_run() {
        let l = DepthLadder::default();
        assert_eq!(
            l.next(true),
            Depth {
                packages: 1,
                own_queue: true
            }
        );
        assert!(!l.next(false).own_queue);
        let mut l = DepthLadder::default();
        l.record(1, 1.0);
        assert_eq!(
            l.next(false),
            Depth {
                packages: 2,
                own_queue: true
            }
        );
    }

    #[test]
    fn a_seeded_ladder_starts_where_the_measured_one_ended() {
        let mut l = DepthLadder::default();
        let t = |n: u64| 1.0 + 0.5 / n as f64;
        for _ in 0..4 {
            run(&mut l, t);
        }
        let mut seeded = DepthLadder::default();
        for (n, mean) in l.measured() {
            seeded.seed(n, mean);
        }
        assert_eq!(seeded.measured(), l.measured());
        assert_eq!(seeded.next(false).packages, 8);
        // A seed replaces what the step held.
        seeded.seed(8, 10.0);
        assert_eq!(seeded.next(false).packages, 4);
    }

    #[test]
    fn means_absorb_noise_and_bad_samples_are_ignored() {
        let mut l = DepthLadder::default();
        l.record(1, 1.0);
        l.record(2, 0.9);
        l.record(4, 0.95);
        // 4 lost to 2: stay at 2; more runs at 2 that come out slower move
        // its mean, and the best step with it.
        assert_eq!(l.next(false).packages, 2);
        for _ in 0..3 {
            l.record(2, 1.1);
        }
        assert_eq!(l.next(false).packages, 1);
        l.record(3, 0.1);
        l.record(8, f64::NAN);
        l.record(8, -1.0);
        assert_eq!(l.next(false).packages, 1);
    }
}
