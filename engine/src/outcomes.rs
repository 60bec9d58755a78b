//! What a kernel's runs took, per configuration: co-executed, or one
//! device alone. The cost model predicts; these are the measured answers
//! that overrule it.
//!
//! A cost model fitted while devices run together can be wrong in ways it
//! cannot see: devices that share DRAM or PCIe each run slower beside the
//! other than alone, a GPU's irregular packages may not follow `overhead +
//! n / rate`, and a short run's figures come from a handful of packages.
//! Whatever the cause, co-executing must not end up slower than the best
//! device alone. So the learner keeps the wall time of every configuration
//! it ran (per unit of work, so that a profile serves nearby sizes) and
//! runs an *incumbent*: the configuration measured fastest, which another
//! replaces only when it is measured faster by more than the noise.
//!
//! Run times are noisy (a run of 34 us moves by 10-20% between runs, a
//! GPU's by up to 15% between processes), so the choice is made robust:
//! * times are medians of the last [`KEEP`] runs of a configuration (the
//!   smaller of one or two: noise is mostly upward); two configurations
//!   are compared on an equal footing, each as of the smaller sample
//!   count (the smallest of two samples against the incumbent's third
//!   quantile, not its median: see [`Outcomes::on_equal_footing`]);
//! * a challenger replaces the incumbent only after [`CONFIRM`] runs, and
//!   only when its time beats the incumbent's by more than a margin:
//!   [`CONFIDENCE`] standard errors of the difference, from the spread
//!   measured on both ([`MIN_MARGIN`] to [`MAX_MARGIN`]); a challenger
//!   that looks faster but not by the margin is measured again (it costs
//!   nothing if it is as fast) until it is, or no longer looks faster;
//! * trying another configuration (an exploration) is rationed by what it
//!   is expected to cost against the chance that it pays: its predicted
//!   (or measured) time over the incumbent's, for this run's size, divided
//!   by the chance that it is faster all the same (the model's error
//!   taken as [`MODEL_DOUBT`]), must fit a budget of [`EXPLORE_SHARE`] of
//!   the time of every run recorded so far, less what earlier
//!   explorations cost (charged at what they measured). An exploration
//!   that the model says is slow waits until enough run time has
//!   accumulated to pay for it (one predicted at 1.15x: 26 runs; at 1.5x:
//!   some 500); one the model or a sample says is faster costs nothing
//!   and runs at once;
//! * a device never run alone that the model puts within
//!   [`EXPLORE_START`] of the first co-executed sample is tried once among
//!   the first runs, before co-executing is confirmed: its rate was
//!   fitted beside the others, which slow it, so that prediction is more
//!   often its worst case than its best.
//!
//! Plain data and pure decisions: no clock, no threads, no Vulkan.

/// One configuration of a run: every device that can take part, one
/// device (an engine slot: 0 the CPU workers, `1 + g` GPU `g`) alone, or
/// every device but one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Mode {
    /// Every present device co-executes.
    Together,
    /// Only this slot runs.
    Alone(usize),
    /// Every present device but this slot co-executes (the GPUs without
    /// the CPU workers, where several GPUs take part).
    Without(usize),
}

/// An unmeasured single device is tried only when the model puts it within
/// this factor of the incumbent's measured time (or within
/// [`EXPLORE_BUDGET_S`] of it), and the budget allows.
pub(crate) const EXPLORE: f64 = 1.5;

/// An unmeasured single device predicted at most this many seconds over the
/// incumbent is plausible whatever the factor (and given at least
/// [`SHORT_RUN_CHANCE`] of being faster): on short runs a device's figures
/// come from a probe or two, whose fixed costs a linear model stretches
/// over the whole run. The budget still rations it.
pub(crate) const EXPLORE_BUDGET_S: f64 = 1e-3;

/// The least chance given to an exploration that costs at most
/// [`EXPLORE_BUDGET_S`] over the incumbent, whatever the model predicts: on
/// short runs the model's figures come from a probe or two and can be off
/// many times.
pub(crate) const SHORT_RUN_CHANCE: f64 = 0.1;

/// The part of the accumulated run time that explorations may cost: at
/// most 2% over the long run, so that exploring alone never takes the
/// learner below 0.98x of the best configuration.
pub(crate) const EXPLORE_SHARE: f64 = 0.02;

/// What explorations may cost at the start, as a share of one run of the
/// incumbent, beside [`EXPLORE_SHARE`] of the accumulated time: a kernel's
/// first runs have accumulated too little for that share to pay for even
/// a near tie (spmv on the H200: the GPU alone predicted 1.07x of the
/// co-executed runs from packages slowed by co-running, and measured 0.55x,
/// was never tried in ten runs). Amortized over the runs that follow, it
/// leaves the long-run share at 2%.
pub(crate) const EXPLORE_START: f64 = 0.25;

/// A configuration measured once is run again when its sample, or failing
/// that the model's prediction, is within this factor of the incumbent:
/// one noisy sample (an interrupted run) does not rule it out.
pub(crate) const RETRY: f64 = 1.5;

/// How many standard errors of the difference of two medians a challenger
/// must be faster by (about 2% of comparisons between equal
/// configurations would switch at each look).
pub(crate) const CONFIDENCE: f64 = 2.0;

/// The standard error of a median of `n` samples of a normal spread, per
/// sample median absolute deviation: `1.2533 * 1.4826 / sqrt(n)`.
const SE_PER_MAD: f64 = 1.858;

/// Runs a challenger needs before it can replace the incumbent.
pub(crate) const CONFIRM: usize = 2;

/// The relative error of the cost model's predictions, as the spread of a
/// log-normal: a configuration predicted at `r` times the incumbent is
/// faster with the chance of a normal deviate below `-ln(r) / MODEL_DOUBT`
/// (predicted 1.05x: 42%; 1.15x: 29%; 1.5x: 5%).
pub(crate) const MODEL_DOUBT: f64 = 0.25;

/// The smallest relative margin by which a challenger must beat the
/// incumbent.
pub(crate) const MIN_MARGIN: f64 = 0.02;

/// The largest margin the measured spread can ask for (a challenger that
/// is faster by more than this wins however noisy the runs).
pub(crate) const MAX_MARGIN: f64 = 0.15;

/// Before the incumbent is confirmed, an unmeasured configuration that
/// the model predicts faster than its one sample by more than this part
/// of it is tried instead of confirming it (see [`Outcomes::leap`]): the
/// model's error ([`MODEL_DOUBT`]) and the sample's noise together (a
/// prediction 25% faster is faster with a chance of 87%).
pub(crate) const LEAP: f64 = 0.25;

/// Every this many recorded runs, the runner-up is measured again if the
/// budget allows (its measured time over the incumbent's, against the
/// chance that it is faster now: a machine's load changes, and early
/// samples may all have been unlucky).
pub(crate) const RECHECK: u64 = 16;

/// The slowdown of a run that was interrupted (a page-fault storm, the
/// host descheduled): a configuration measured once at up to this many
/// times the incumbent may have been unlucky once. Every [`RECHECK`]
/// runs, such a configuration is measured again whatever the budget
/// (once: its second sample then rules): a leap before confirming (see
/// [`Outcomes::leap`]) can replace an incumbent on its one sample, and the
/// budget, which rates it by that sample, would never pay for it again.
pub(crate) const OUTLIER: f64 = 2.0;

/// A device that ran at least this part of the co-executed runs' items
/// is tried alone once, where the model puts it within `1 / DOMINANT` of
/// the fastest run (see [`Outcomes::near_alone`]).
pub(crate) const DOMINANT: f64 = 0.5;

/// Samples kept per configuration; their median is its time.
pub(crate) const KEEP: usize = 9;

/// The measured time of one configuration.
///
/// A configuration can run in variants: a lone GPU's run is cut into a
/// number of packages that the depth ladder varies from run to run (see
/// [`crate::depth`]), and its first lone runs, on the ladder's lower
/// steps, take up to 1.2-1.9 times what it takes once the ladder settled.
/// Mixed into one median, those runs made the lone GPU look no faster than
/// co-executing, which was then measured again and again. The time of a
/// configuration is that of its fastest variant: what it takes where the
/// ladder settles.
#[derive(Debug, Clone, PartialEq, Default)]
struct Times {
    /// Seconds per unit and variant of the last [`KEEP`] runs, oldest
    /// first.
    recent: Vec<(f64, u64)>,
}

impl Times {
    fn push(&mut self, per_unit_s: f64, variant: u64) {
        if self.recent.len() == KEEP {
            self.recent.remove(0);
        }
        self.recent.push((per_unit_s, variant));
    }

    /// The time of the configuration: that of its fastest variant (see
    /// [`variant_time`](Self::variant_time)).
    fn median(&self) -> Option<f64> {
        self.fastest_variant().map(|(_, t)| t)
    }

    /// The variant of the smallest [`variant_time`](Self::variant_time),
    /// and that time.
    fn fastest_variant(&self) -> Option<(u64, f64)> {
        self.recent
            .iter()
            .enumerate()
            // Each variant once: where it first appears.
            .filter(|&(i, &(_, v))| !self.recent[..i].iter().any(|&(_, w)| w == v))
            .filter_map(|(_, &(_, v))| self.variant_time(v).map(|t| (v, t)))
            .min_by(|a, b| a.1.total_cmp(&b.1))
    }

    /// The samples of `variant`, on the stack.
    fn of_variant(&self, variant: u64) -> ([f64; KEEP], usize) {
        let mut v = [0.0; KEEP];
        let mut n = 0;
        for &(t, _) in self.recent.iter().filter(|&&(_, w)| w == variant) {
            v[n] = t;
            n += 1;
        }
        (v, n)
    }

    /// The time of `variant`: the [`typical`] of its kept samples.
    fn variant_time(&self, variant: u64) -> Option<f64> {
        let (v, n) = self.of_variant(variant);
        typical(&v[..n])
    }

    /// The time of the configuration as [`typical`] would make it of `k`
    /// samples: the fastest variant's samples at the quantile that the
    /// smallest of `k` samples falls at on average, `1 / (k + 1)`, for
    /// `k` of one or two (their smallest is what counts), else their
    /// median. The kept samples' own [`median`] where there are `k`.
    fn as_of(&self, k: usize) -> Option<f64> {
        if k >= 3 || self.recent.len() <= k {
            return self.median();
        }
        let q = 1.0 / (k as f64 + 1.0);
        self.fastest_variant().map(|(variant, t)| {
            let (mut v, n) = self.of_variant(variant);
            if n <= k {
                return t;
            }
            let v = &mut v[..n];
            v.sort_by(f64::total_cmp);
            let at = q * (n - 1) as f64;
            let (lo, frac) = (at.floor() as usize, at.fract());
            let hi = (lo + 1).min(n - 1);
            v[lo] + frac * (v[hi] - v[lo])
        })
    }

    /// The relative spread of the fastest variant's samples: their median
    /// absolute deviation over their time (0 with fewer than two).
    fn spread(&self) -> f64 {
        let Some((variant, m)) = self.fastest_variant().filter(|&(_, m)| m > 0.0) else {
            return 0.0;
        };
        let (mut v, n) = self.of_variant(variant);
        for x in &mut v[..n] {
            *x = (*x - m).abs();
        }
        median(&v[..n]).map_or(0.0, |d| d / m)
    }
}

/// The chance that a configuration expected at `ratio` times the
/// incumbent's time is faster than it (see [`MODEL_DOUBT`]).
fn chance_faster(ratio: f64) -> f64 {
    if !(ratio.is_finite() && ratio > 0.0) {
        return 0.0;
    }
    normal_cdf(-ratio.ln() / MODEL_DOUBT)
}

/// The standard normal distribution function (Abramowitz and Stegun
/// 7.1.26 for erf: absolute error under 1.5e-7).
fn normal_cdf(z: f64) -> f64 {
    let x = z.abs() / std::f64::consts::SQRT_2;
    let t = 1.0 / (1.0 + 0.327_591_1 * x);
    let poly = t
        * (0.254_829_592
            + t * (-0.284_496_736
                + t * (1.421_413_741 + t * (-1.453_152_027 + t * 1.061_405_429))));
    let erf = 1.0 - poly * (-x * x).exp();
    if z >= 0.0 {
        0.5 * (1.0 + erf)
    } else {
        0.5 * (1.0 - erf)
    }
}

/// The time that samples `v` of one configuration stand for: the smallest
/// of one or two, the median of more (run-time noise is mostly upward: one
/// interrupted run, or one that paid a one-time cost, must not count as
/// the configuration's time). `None` without samples.
pub(crate) fn typical(v: &[f64]) -> Option<f64> {
    match v.len() {
        1 | 2 => v.iter().copied().min_by(f64::total_cmp),
        _ => median(v),
    }
}

/// The median of `v`; sorted on the stack for up to [`KEEP`] values (every
/// run of the learner takes several, and a run's sizing one per claim for
/// identical devices: no allocation for them).
pub(crate) fn median(v: &[f64]) -> Option<f64> {
    let mut small = [0.0; KEEP];
    let mut large = Vec::new();
    let v: &mut [f64] = match small.get_mut(..v.len()) {
        Some(s) => {
            s.copy_from_slice(v);
            s
        }
        None => {
            large.extend_from_slice(v);
            &mut large
        }
    };
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => None,
        n if n % 2 == 1 => Some(v[n / 2]),
        n => Some((v[n / 2 - 1] + v[n / 2]) / 2.0),
    }
}

/// Sets `mode`'s entry of `firsts` to `per_unit_s`, where that is finite
/// and positive.
fn set_first(firsts: &mut Vec<(Mode, f64)>, mode: Mode, per_unit_s: f64) {
    if per_unit_s.is_finite() && per_unit_s > 0.0 {
        set_entry(firsts, mode, per_unit_s);
    }
}

/// Sets `key`'s entry of `entries` to `value`, adding one where it has
/// none.
fn set_entry<K: PartialEq>(entries: &mut Vec<(K, f64)>, key: K, value: f64) {
    match entries.iter_mut().find(|(k, _)| *k == key) {
        Some(e) => e.1 = value,
        None => entries.push((key, value)),
    }
}

/// The measured times of a kernel's configurations over one index space,
/// and the configuration the learner runs.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct Outcomes {
    modes: Vec<(Mode, Times)>,
    /// Runs recorded since the last reset.
    runs: u64,
    /// Seconds of the runs recorded.
    total_s: f64,
    /// Seconds that runs outside the incumbent took over the incumbent's
    /// time (what exploring cost).
    explore_s: f64,
    /// The configuration measured fastest, as far as the noise lets tell.
    incumbent: Option<Mode>,
    /// The cost model's choice at the last [`choose`](Self::choose).
    model: Option<Mode>,
    /// Per configuration, the seconds per unit of the latest first run of
    /// a process that ran it (see [`record_first`](Self::record_first)):
    /// what a profile keeps.
    firsts: Vec<(Mode, f64)>,
    /// The first runs a profile kept (see
    /// [`seed_first`](Self::seed_first)): what a first run from a profile
    /// decides by, never this process's own.
    seeded_firsts: Vec<(Mode, f64)>,
    /// Per estimator slot, the time box of the last run that measured it
    /// (see [`measuring_box`](Self::measuring_box)), seconds per unit.
    boxes: Vec<(usize, f64)>,
}

impl Outcomes {
    /// [`record_variant`](Self::record_variant) of a configuration that
    /// has one variant (the tests' runs).
    #[cfg(test)]
    pub(crate) fn record(&mut self, mode: Mode, seconds: f64, units: u64) {
        self.record_variant(mode, 0, seconds, units);
    }

    /// Records a run in `mode` (in its variant `variant`: a lone GPU's run,
    /// its packages; see [`Times`]; else 0) that took `seconds` for `units`
    /// units: a run outside the incumbent is charged to the exploration
    /// budget for what it took over the incumbent; then the incumbent is
    /// elected again (see [`elect`](Self::elect)). Ignores empty runs and
    /// times that are not finite and positive.
    pub(crate) fn record_variant(&mut self, mode: Mode, variant: u64, seconds: f64, units: u64) {
        let outside = self.incumbent.is_some_and(|m| m != mode);
        if !self.tally(seconds, units, outside) {
            return;
        }
        self.times_mut(mode).push(seconds / units as f64, variant);
        self.elect();
    }

    /// Counts a run of `seconds` for `units` units among the recorded
    /// ones, charging the exploration budget what it took over the
    /// incumbent where it is `charged`; `false` (nothing counted) for an
    /// empty run or a time that is not finite and positive.
    fn tally(&mut self, seconds: f64, units: u64, charged: bool) -> bool {
        if units == 0 || !(seconds.is_finite() && seconds > 0.0) {
            return false;
        }
        self.runs += 1;
        self.total_s += seconds;
        let inc_s = self.incumbent.and_then(|m| self.per_unit_s(m));
        if let Some(inc_s) = inc_s.filter(|_| charged) {
            self.explore_s += (seconds - inc_s * units as f64).max(0.0);
        }
        true
    }

    /// The time box of a run that measures the device of estimator slot
    /// `slot`, which no run measured well enough to predict it alone (see
    /// [`crate::learn::Measure`]), on a run of `units` units, in seconds;
    /// never more than the incumbent's run. `None` before a live run is
    /// recorded, and where `slot` alone was measured or is the incumbent.
    ///
    /// * The first box: what the exploration budget affords, but at least
    ///   [`EXPLORE_START`] of the incumbent's run whatever the budget (once
    ///   per space, as the dominant device's try: noisy runs charged to
    ///   other explorations must not keep a device unmeasured).
    /// * A later one: what the budget affords, where that is at least
    ///   twice the last box (which measured the device on too little of
    ///   the work to stand for all of it, see
    ///   [`crate::learn::MIN_COVERAGE`]), or a quarter of the incumbent's
    ///   run after a box in which the device ran nothing; none once a box
    ///   was as long as the incumbent's run.
    ///
    /// Not only once the incumbent is confirmed: the box is bounded by its
    /// one sample, and what the box measures is what the learner's first
    /// tries need (waiting for the second run, a CPU faster alone ran
    /// alone only in the last of a sweep's ten timed runs, on lavapipe
    /// given a wave: BENCHMARKS.md, section 0, dev run 39).
    pub(crate) fn measuring_box(&self, slot: usize, units: u64) -> Option<f64> {
        let inc = self.incumbent?;
        if self.runs == 0 || inc == Mode::Alone(slot) || self.samples(Mode::Alone(slot)) > 0 {
            return None;
        }
        let g = units.max(1) as f64;
        let inc_run = self.per_unit_s(inc)? * g;
        let quarter = EXPLORE_START * inc_run;
        let budget = self.budget_s(inc_run);
        let (affords, least) = match self.boxes.iter().find(|b| b.0 == slot) {
            None => (budget.max(quarter), quarter),
            Some(&(_, last)) if last * g >= inc_run => return None,
            Some(&(_, last)) => (budget, (2.0 * last * g).max(quarter)),
        };
        let affords = affords.min(inc_run);
        (affords.is_finite() && affords > 0.0 && affords >= least).then_some(affords)
    }

    /// Records a run of `seconds` for `units` units that is no
    /// configuration's sample (a run that measured a device in a time
    /// box): counted among the runs, and charged to the exploration
    /// budget for what it took over the incumbent. Ignores empty runs and
    /// times that are not finite and positive.
    pub(crate) fn charge(&mut self, seconds: f64, units: u64) {
        self.tally(seconds, units, true);
    }

    /// Remembers that `slot` was measured in a box of `box_s` seconds on
    /// a run of `units` units (see [`measuring_box`](Self::measuring_box));
    /// a box of 0: one was given, in which it ran nothing.
    pub(crate) fn boxed(&mut self, slot: usize, box_s: f64, units: u64) {
        set_entry(&mut self.boxes, slot, box_s / units.max(1) as f64);
    }

    /// Whether `slot` was measured in a time box (see
    /// [`measuring_box`](Self::measuring_box)) in which it ran.
    pub(crate) fn was_boxed(&self, slot: usize) -> bool {
        self.boxes.iter().any(|b| b.0 == slot && b.1 > 0.0)
    }

    fn times_mut(&mut self, mode: Mode) -> &mut Times {
        let i = match self.modes.iter().position(|(m, _)| *m == mode) {
            Some(i) => i,
            None => {
                self.modes.push((mode, Times::default()));
                self.modes.len() - 1
            }
        };
        &mut self.modes[i].1
    }

    fn times(&self, mode: Mode) -> Option<&Times> {
        self.modes.iter().find(|(m, _)| *m == mode).map(|(_, t)| t)
    }

    fn samples(&self, mode: Mode) -> usize {
        self.times(mode).map_or(0, |t| t.recent.len())
    }

    /// The measured seconds per unit of `mode`, if it ran.
    pub(crate) fn per_unit_s(&self, mode: Mode) -> Option<f64> {
        self.times(mode).and_then(Times::median)
    }

    /// Whether no live run is recorded yet (what is measured, if anything,
    /// came from a profile): see [`first_from_profile`](Self::first_from_profile).
    pub(crate) fn no_live_run(&self) -> bool {
        self.runs == 0
    }

    /// The configuration the learner runs when it does not explore, if one
    /// is measured.
    pub(crate) fn incumbent(&self) -> Option<Mode> {
        self.incumbent
    }

    /// Every measured configuration with its seconds per unit (for
    /// profiles).
    pub(crate) fn measured(&self) -> Vec<(Mode, f64)> {
        self.modes
            .iter()
            .filter_map(|(m, t)| t.median().map(|s| (*m, s)))
            .collect()
    }

    /// Starts `mode` from a time read from a profile (one sample: live runs
    /// soon replace it), and elects the fastest seeded configuration, so
    /// that a new process's first run uses the profile's best. Not counted
    /// as a run.
    pub(crate) fn seed(&mut self, mode: Mode, per_unit_s: f64) {
        if per_unit_s.is_finite() && per_unit_s > 0.0 && self.per_unit_s(mode).is_none() {
            self.times_mut(mode).push(per_unit_s, 0);
            if self.runs == 0 {
                self.incumbent = self.fastest(|_| true);
            }
        }
    }

    /// The measured configuration with the smallest median among those
    /// `keep` accepts (the first listed on a tie).
    fn fastest(&self, keep: impl Fn(Mode) -> bool) -> Option<Mode> {
        self.modes
            .iter()
            .filter(|(m, _)| keep(*m))
            .filter_map(|(m, t)| t.median().map(|s| (*m, s)))
            .min_by(|a, b| a.1.total_cmp(&b.1))
            .map(|(m, _)| m)
    }

    /// Before any live run is recorded (a first run from a profile), the
    /// configuration among `candidates` whose profile time, plus what
    /// `upfront` says it must first pay in this run (seconds per unit), is
    /// the smallest; `None` once a live run is recorded, or where nothing
    /// listed is measured. A profile's times were measured with the inputs
    /// resident on the GPUs: a new process's first run must bring them up
    /// first, and a GPU alone brings up all of them (histogram 2^22 on the
    /// H200, from its profile: the GPU alone, 3.6-3.8 ms with a 134 MB
    /// upload, where co-executing took 2.9-3.3).
    ///
    /// A configuration no later run measured stands at the time of its
    /// latest first run that the profile kept (see
    /// [`seed_first`](Self::seed_first)), which
    /// paid its uploads and the process's one-time costs: the learner that
    /// wrote the profile may have run the GPU alone from its second run on,
    /// and its first, co-executed run is then the only word on
    /// co-executing from a cold start.
    pub(crate) fn first_from_profile(
        &self,
        candidates: &[Mode],
        upfront: &dyn Fn(Mode) -> f64,
    ) -> Option<Mode> {
        if !self.no_live_run() {
            return None;
        }
        let warm = self
            .modes
            .iter()
            .filter_map(|(m, t)| t.median().map(|s| (*m, s + upfront(*m).max(0.0))));
        let first = self
            .seeded_firsts
            .iter()
            .filter(|(m, _)| self.per_unit_s(*m).is_none())
            .copied();
        warm.chain(first)
            .filter(|(m, s)| candidates.contains(m) && s.is_finite())
            .min_by(|a, b| a.1.total_cmp(&b.1))
            .map(|(m, _)| m)
    }

    /// Records the first run of a process over this space, in `mode`, at
    /// `per_unit_s` seconds per unit (the latest per configuration is
    /// kept; see [`first_from_profile`](Self::first_from_profile)). It is
    /// not a run of [`record_variant`](Self::record_variant): its one-time
    /// costs say nothing about the configuration's later runs.
    pub(crate) fn record_first(&mut self, mode: Mode, per_unit_s: f64) {
        set_first(&mut self.firsts, mode, per_unit_s);
    }

    /// Starts `mode`'s latest first run from a time a profile kept (see
    /// [`first_from_profile`](Self::first_from_profile)).
    pub(crate) fn seed_first(&mut self, mode: Mode, per_unit_s: f64) {
        set_first(&mut self.firsts, mode, per_unit_s);
        set_first(&mut self.seeded_firsts, mode, per_unit_s);
    }

    /// Every configuration's latest first run, seconds per unit (for
    /// profiles).
    pub(crate) fn firsts(&self) -> &[(Mode, f64)] {
        &self.firsts
    }

    /// The relative margin by which `challenger` must beat `incumbent`:
    /// [`CONFIDENCE`] standard errors of the difference of their times,
    /// from the larger of their measured spreads and their sample counts,
    /// within [`MIN_MARGIN`] and [`MAX_MARGIN`].
    fn margin(&self, incumbent: Mode, challenger: Mode) -> f64 {
        let spread = |m| self.times(m).map_or(0.0, Times::spread);
        let n = |m| self.samples(m).max(1) as f64;
        let mad = spread(incumbent).max(spread(challenger));
        let se = SE_PER_MAD * mad * (1.0 / n(incumbent) + 1.0 / n(challenger)).sqrt();
        (CONFIDENCE * se).clamp(MIN_MARGIN, MAX_MARGIN)
    }

    /// Keeps the incumbent unless a challenger measured at least
    /// [`CONFIRM`] times beats it on an equal footing (see
    /// [`on_equal_footing`](Self::on_equal_footing)) by more than
    /// [`margin`](Self::margin), or is the device alone that the model
    /// chose, within [`MIN_MARGIN`] of co-executing; with no incumbent, the
    /// fastest measured.
    fn elect(&mut self) {
        let Some((inc, inc_s)) = self
            .incumbent
            .and_then(|m| self.per_unit_s(m).map(|s| (m, s)))
        else {
            self.incumbent = self.fastest(|_| true);
            return;
        };
        let challenger = self.fastest(|m| m != inc && self.samples(m) >= CONFIRM);
        if let Some(c) = challenger {
            let (inc_s, c_s) = self
                .on_equal_footing(inc, c)
                .unwrap_or((inc_s, f64::INFINITY));
            // The device alone that the model chose, as fast as
            // co-executing (within MIN_MARGIN), replaces it: the others
            // need not be woken.
            let tie = inc == Mode::Together && Some(c) == self.model && c != Mode::Together;
            if c_s < inc_s * (1.0 - self.margin(inc, c))
                || (tie && c_s <= inc_s * (1.0 + MIN_MARGIN))
            {
                self.incumbent = Some(c);
            }
        }
    }

    /// The times of `a` and `b` on an equal footing: each as [`typical`]
    /// would make it of as many samples as the one measured fewer times
    /// has (see [`Times::as_of`]). The time of one or two samples is their
    /// smallest, of more their median, and the smallest of two samples is
    /// lower than the median of three of the same configuration: a
    /// challenger measured twice, compared at its smallest against the
    /// incumbent's median, wins on one lucky sample. `None` where either
    /// is unmeasured.
    fn on_equal_footing(&self, a: Mode, b: Mode) -> Option<(f64, f64)> {
        let k = self.samples(a).min(self.samples(b));
        Some((self.times(a)?.as_of(k)?, self.times(b)?.as_of(k)?))
    }

    /// Seconds that explorations may still cost, where the incumbent's
    /// run takes `run_s`.
    fn budget_s(&self, run_s: f64) -> f64 {
        EXPLORE_SHARE * self.total_s + EXPLORE_START * run_s - self.explore_s
    }

    /// The configuration of the next run of `units` units among
    /// `candidates` (`Together` and the slots that could run alone), given
    /// what the cost model chose (`model`), what it estimates co-executing
    /// gains (`gain`, its `S_max` less 1, `None` when it cannot tell) and
    /// what it predicts per unit for a configuration (`predict`, `None`
    /// when it cannot tell):
    ///
    /// 1. with nothing measured, the model's choice; before any live run
    ///    is recorded (a first run from a profile), the incumbent;
    /// 2. before the incumbent is confirmed, a leap, or a device never run
    ///    alone predicted near the fastest run (see [`leap`](Self::leap)),
    ///    or the incumbent;
    /// 3. a configuration worth trying (see [`worth_trying`](Self::worth_trying))
    ///    whose expected cost over the incumbent fits the budget: the one
    ///    expected fastest;
    /// 4. every [`RECHECK`] runs, a configuration measured once within
    ///    [`OUTLIER`] of the incumbent, or the measured runner-up when the
    ///    budget allows;
    /// 5. the incumbent.
    ///
    /// Where a device carried most of the co-executed runs (`dominant`:
    /// those alone, see [`DOMINANT`]), it is tried alone once, before 3,
    /// in every phase.
    pub(crate) fn choose(
        &mut self,
        candidates: &[Mode],
        (model, gain): (Mode, Option<f64>),
        predict: &dyn Fn(Mode) -> Option<f64>,
        (units, dominant): (u64, &[Mode]),
    ) -> Mode {
        self.model = Some(model);
        let listed = |m: Mode| candidates.contains(&m);
        let Some(inc) = self
            .incumbent
            .filter(|&m| listed(m) && self.per_unit_s(m).is_some())
            .or_else(|| self.fastest(listed))
        else {
            return model;
        };
        let inc_s = self.per_unit_s(inc).unwrap_or(f64::INFINITY);
        if self.runs == 0 {
            return inc;
        }
        if self.samples(inc) < CONFIRM {
            return self.leap((inc, inc_s), candidates, (model, gain), predict, dominant);
        }
        if let Some(m) = self.near_alone((inc_s, candidates), dominant, predict, false) {
            return m;
        }
        let g = units.max(1) as f64;
        let budget = self.budget_s(inc_s * g);
        let affordable = |per_unit: f64| {
            let cost = (per_unit - inc_s) * g;
            let mut chance = chance_faster(per_unit / inc_s);
            if cost <= EXPLORE_BUDGET_S {
                chance = chance.max(SHORT_RUN_CHANCE);
            }
            cost <= 0.0 || cost <= budget * chance
        };
        let trial = candidates
            .iter()
            .filter(|&&m| m != inc)
            .filter_map(|&m| {
                self.worth_trying(m, model, (inc, inc_s), g, predict)
                    .map(|e| (m, e))
            })
            .filter(|&(_, e)| affordable(e))
            .min_by(|a, b| a.1.total_cmp(&b.1));
        if let Some((m, _)) = trial {
            return m;
        }
        if self.runs % RECHECK == 0 {
            // A configuration measured once, within OUTLIER of the
            // incumbent: again, whatever the budget (once: it then has
            // two samples).
            let once = self
                .modes
                .iter()
                .filter(|(m, t)| *m != inc && listed(*m) && t.recent.len() == 1)
                .filter_map(|(m, t)| t.median().map(|s| (*m, s)))
                .filter(|&(_, s)| s <= OUTLIER * inc_s)
                .min_by(|a, b| a.1.total_cmp(&b.1));
            if let Some((m, _)) = once {
                return m;
            }
            let second = self
                .fastest(|m| m != inc && listed(m))
                .and_then(|m| self.per_unit_s(m).map(|s| (m, s)));
            if let Some((m, s)) = second {
                if affordable(s) {
                    return m;
                }
            }
        }
        inc
    }

    /// Before the incumbent `inc` (`inc_s` per unit) is confirmed: the
    /// candidate (not confirmed either) expected fastest, where it is
    /// expected faster than the incumbent's one sample: unmeasured, at the
    /// model's prediction, by more than [`LEAP`]; measured once, at its
    /// sample, by more than [`MAX_MARGIN`]. Failing that, a device never
    /// run alone that the model predicts within [`EXPLORE_START`] of the
    /// fastest run measured (the near try, explained in the body). Else
    /// the incumbent. Only the
    /// model's choice `model` qualifies for a leap, unless the model's estimate of
    /// what co-executing gains (`gain`: its `S_max` less 1) is under
    /// [`LEAP`]: a run that co-executes where the model expects a large
    /// gain (a stencil whose CPU takes 40% of it) is not given up on one
    /// slow sample. (A challenger measured twice then replaces an
    /// incumbent whose one sample may have been an outlier: see
    /// [`OUTLIER`] for how that is undone.)
    ///
    /// A kernel's first runs co-execute where nothing is measured; on one
    /// whose devices differ tenfold, each costs many times a run of the
    /// faster device (the kernels of a conjugate-gradient program on the
    /// H200: 1.8 ms co-executed, 0.1-0.35 ms on the GPU alone), and
    /// confirming what the figures already say costs one more run. The
    /// model's own choice need not be the device alone: its estimate of
    /// co-executing is a best case (every device at its rate, nothing
    /// paid for co-running), so a GPU predicted 1.5-1.8 times faster alone
    /// than the co-executed run measured still leaves the model
    /// co-executing (histogram, collatz and Mandelbrot kernels on an
    /// H100: their third runs co-executed at 1.3-1.5 times the GPU
    /// alone).
    fn leap(
        &self,
        (inc, inc_s): (Mode, f64),
        candidates: &[Mode],
        (model, gain): (Mode, Option<f64>),
        predict: &dyn Fn(Mode) -> Option<f64>,
        dominant: &[Mode],
    ) -> Mode {
        // Against the model's choice only where the model itself sees
        // little in it.
        let unsure = gain.is_some_and(|g| g < LEAP);
        // Unmeasured: at the model's prediction, faster by LEAP (the model's
        // error); measured once: at its sample, faster by MAX_MARGIN (the
        // noise of two samples).
        let expected = |m: Mode| match self.samples(m) {
            0 => predict(m).filter(|&p| p < inc_s * (1.0 - LEAP)),
            n if n < CONFIRM => self
                .per_unit_s(m)
                .filter(|&s| s < inc_s * (1.0 - MAX_MARGIN)),
            _ => None,
        };
        let leap = candidates
            .iter()
            .filter(|&&m| m != inc && (m == model || unsure))
            .filter_map(|&m| expected(m).filter(|&e| e > 0.0).map(|e| (m, e)))
            .min_by(|a, b| a.1.total_cmp(&b.1));
        let near = || self.near_alone((inc_s, candidates), dominant, predict, true);
        leap.map(|(m, _)| m).or_else(near).unwrap_or(inc)
    }

    /// A device never run alone, to try alone once: one of `dominant`
    /// predicted within `1 / DOMINANT` of the fastest run measured so far
    /// (`inc_s` where that is faster), and where `near` (among the first
    /// runs) any predicted within [`EXPLORE_START`] of it; of those the one
    /// predicted fastest.
    ///
    /// # Why
    /// A device's rate is fitted while the others run beside it (sharing
    /// DRAM, PCIe and the host's cores), so the prediction is more often
    /// its worst case than its best. A near one costs at most that part of
    /// a run by the model's own figures; after the incumbent is confirmed
    /// it would wait for the budget (spmv on an H200 beside 31 CPU
    /// workers: the GPU alone predicted at 1.17x of co-executing, measured
    /// 0.62x, not tried in eleven runs). A device that carried most of the
    /// co-executed runs' items is tried whenever the model puts it within
    /// twice the fastest run: alone it runs at most twice what it ran
    /// there, and what it paid there for the others (the steals of their
    /// remainders, the shared links) is often most of its time: spmv on an
    /// H200 beside 30 workers, the GPU carrying 65% of the co-executed
    /// runs (2.5 ms), predicted alone at 1.5-1.9 times them, ran alone in
    /// 1.55 ms (BENCHMARKS.md, section 0e, h200x2 run 11). Against the
    /// fastest run, not the incumbent's sample: once a device alone
    /// measured far faster than co-executing, another predicted near
    /// co-executing cannot pay (spmv on four H200s: the GPU alone at 1.6
    /// ms, then the CPU alone at 5.7, whose try fell into the timed runs).
    fn near_alone(
        &self,
        (inc_s, candidates): (f64, &[Mode]),
        dominant: &[Mode],
        predict: &dyn Fn(Mode) -> Option<f64>,
        near: bool,
    ) -> Option<Mode> {
        let best_s = self
            .fastest(|m| candidates.contains(&m))
            .and_then(|m| self.per_unit_s(m))
            .map_or(inc_s, |s| s.min(inc_s));
        let reach = |m: Mode| match dominant.contains(&m) {
            true => Some(1.0 / DOMINANT),
            false => near.then_some(1.0 + EXPLORE_START),
        };
        candidates
            .iter()
            .filter(|&&m| matches!(m, Mode::Alone(_)) && self.samples(m) == 0)
            .filter_map(|&m| Some((m, predict(m)?, reach(m)?)))
            .filter(|&(_, p, r)| p > 0.0 && p <= best_s * r)
            .min_by(|a, b| a.1.total_cmp(&b.1))
            .map(|(m, _, _)| m)
    }

    /// What a run of `m` is expected to take per unit, when it is worth
    /// trying against the incumbent `inc` (of this run's candidates),
    /// `inc_s` seconds per unit, on a run of `g` units:
    /// * unmeasured: the model's choice (at its prediction, or the
    ///   incumbent's time: the model believes in it); a device alone that
    ///   the model puts within [`EXPLORE`] times, or [`EXPLORE_BUDGET_S`]
    ///   seconds, of the incumbent. Co-executing is not explored against a
    ///   model that runs one device: its estimate of the gain was under 5%,
    ///   and a first co-executed run of a kernel whose devices differ a
    ///   hundredfold can cost many times the run;
    /// * measured once: again, at its sample (or the model's prediction,
    ///   where that is faster than the incumbent by more than [`LEAP`] and
    ///   the sample is within [`OUTLIER`] of the incumbent or costs at most
    ///   [`EXPLORE_BUDGET_S`] more), when that is within [`RETRY`] of the
    ///   incumbent; free when it is the model's choice and its sample is
    ///   within the noise of the incumbent;
    /// * measured fewer than [`KEEP`] times and faster than the incumbent
    ///   on an equal footing but not by the margin: again, at its time (a
    ///   sequential test: it runs until it is faster by the margin or no
    ///   longer faster);
    /// * otherwise `None` (only rechecks measure it again).
    fn worth_trying(
        &self,
        m: Mode,
        model: Mode,
        (inc, inc_s): (Mode, f64),
        g: f64,
        predict: &dyn Fn(Mode) -> Option<f64>,
    ) -> Option<f64> {
        let n = self.samples(m);
        if n == 0 {
            let p = predict(m);
            if m == model {
                return Some(p.unwrap_or(inc_s));
            }
            if m == Mode::Together {
                return None;
            }
            let p = p?;
            return (p <= EXPLORE * inc_s || (p - inc_s) * g <= EXPLORE_BUDGET_S).then_some(p);
        }
        let s = self.per_unit_s(m)?;
        if n >= CONFIRM {
            let (inc_k, s_k) = self.on_equal_footing(inc, m)?;
            return (n < KEEP && s_k < inc_k).then_some(s);
        }
        if m == model && s <= inc_s * (1.0 + self.margin(m, m)) {
            // The model's choice, measured within the noise of the
            // incumbent: confirm it (at the incumbent's time: free).
            return Some(inc_s);
        }
        // Its sample rules, unless the model expects it to beat the
        // incumbent by more than the model's own error (LEAP) and the
        // sample is within what an interrupted run explains (OUTLIER):
        // then one slow sample may have been unlucky. Slower than that,
        // the model is wrong about it (on an irregular kernel a device's
        // fit follows the part of the range it ran: a worker rated on a
        // fractal's edge predicted the whole image at 3.6 ms where it
        // had taken 25, against 7.6 co-executed, and it ran alone again).
        // On a short run a sample past OUTLIER may be one-time costs as
        // well (a configuration's first run after the others' pays what
        // switching costs): again where that costs at most
        // EXPLORE_BUDGET_S over the incumbent, once (it then has two
        // samples). An H200's CPU workers alone, first run after the GPU's
        // over 2^10 items of a gather: 261 us, then about 20, against the
        // GPU's 85.
        let short = short_retry_on() && (s - inc_s) * g <= EXPLORE_BUDGET_S;
        let unlucky = s <= OUTLIER * inc_s || short;
        let e = predict(m)
            .filter(|&p| p < inc_s * (1.0 - LEAP) && unlucky)
            .map_or(s, |p| p.min(s));
        (e <= RETRY * inc_s).then_some(e)
    }
}

/// Whether a short run's configuration measured once past [`OUTLIER`] is
/// measured again where that costs at most [`EXPLORE_BUDGET_S`] (see
/// `Outcomes::worth_trying`): yes unless `COEXEC_SHORT_RETRY=0` (to
/// measure what the rule changes). Read once per process.
fn short_retry_on() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    crate::switches::on_unless_zero(&ON, "COEXEC_SHORT_RETRY")
}

#[cfg(all(test, not(loom)))]
mod sim_tests;

#[cfg(test)]
mod tests {
    use super::*;

    const GPU: Mode = Mode::Alone(1);
    const CPU: Mode = Mode::Alone(0);
    const ALL: [Mode; 3] = [Mode::Together, CPU, GPU];

    fn none(_: Mode) -> Option<f64> {
        None
    }

    /// The median of unsorted values, on the stack (up to `KEEP`) or not,
    /// against the sorted middle.
    #[test]
    fn median_of_few_and_of_many() {
        assert_eq!(median(&[]), None);
        assert_eq!(median(&[3.0]), Some(3.0));
        assert_eq!(median(&[4.0, 1.0]), Some(2.5));
        assert_eq!(median(&[5.0, 1.0, 3.0]), Some(3.0));
        for n in [KEEP - 1, KEEP, KEEP + 1, 3 * KEEP] {
            let v: Vec<f64> = (0..n).map(|i| ((i * 7) % n) as f64).collect();
            let mid = (n - 1) as f64 / 2.0;
            assert_eq!(median(&v), Some(mid), "{n} values");
            // The input is left as it was.
            assert_eq!(v[1], (7 % n) as f64);
        }
    }

    /// A first run from a profile: the profile's times plus what each
    /// configuration must first pay now; nothing once a live run counts.
    #[test]
    fn a_first_run_from_a_profile_adds_what_it_must_pay_first() {
        let mut o = Outcomes::default();
        assert_eq!(
            o.first_from_profile(&ALL, &|_| 0.0),
            None,
            "nothing measured"
        );
        o.seed(Mode::Together, 2.0);
        o.seed(GPU, 1.0);
        assert_eq!(o.first_from_profile(&ALL, &|_| 0.0), Some(GPU));
        // The GPU alone uploads all of an input, co-executing half of it.
        let up = |m: Mode| match m {
            GPU => 4.0,
            Mode::Together => 2.0,
            _ => 0.0,
        };
        assert_eq!(o.first_from_profile(&ALL, &up), Some(Mode::Together));
        // Only candidates; a negative or unknown wait is none.
        assert_eq!(o.first_from_profile(&[GPU, CPU], &up), Some(GPU));
        assert_eq!(o.first_from_profile(&ALL, &|_| -5.0), Some(GPU));
        assert_eq!(
            o.first_from_profile(&ALL, &|m| if m == GPU { f64::NAN } else { 0.0 }),
            Some(GPU)
        );
        o.record(GPU, 1.0, 1);
        assert_eq!(o.first_from_profile(&ALL, &up), None, "a live run counts");
    }

    /// A configuration no later run measured stands at its first run's
    /// time (uploads and one-time costs paid): co-executing, measured only
    /// on the profile writer's first run, beats the GPU alone plus its
    /// upload, and not the GPU alone when the GPU's upload is small; a
    /// configuration measured later stands at that, plus its upload.
    #[test]
    fn a_configuration_measured_only_on_a_first_run_stands_at_that() {
        let mut o = Outcomes::default();
        // This process's own first run is kept for the profile, and decides
        // nothing.
        o.record_first(Mode::Together, 3.0);
        assert_eq!(o.firsts(), &[(Mode::Together, 3.0)]);
        assert_eq!(o.first_from_profile(&ALL, &|_| 0.0), None);
        o.seed_first(Mode::Together, 3.0);
        o.seed_first(Mode::Together, f64::NAN);
        o.seed_first(CPU, -1.0);
        assert_eq!(o.firsts(), &[(Mode::Together, 3.0)]);
        o.seed(GPU, 0.5);
        let up = |big: bool| move |m: Mode| if m == GPU && big { 3.8 } else { 0.0 };
        assert_eq!(o.first_from_profile(&ALL, &up(true)), Some(Mode::Together));
        assert_eq!(o.first_from_profile(&ALL, &up(false)), Some(GPU));
        assert_eq!(o.first_from_profile(&[GPU, CPU], &up(true)), Some(GPU));
        // The latest first run the profile kept counts.
        o.seed_first(Mode::Together, 5.0);
        assert_eq!(o.first_from_profile(&ALL, &up(true)), Some(GPU));
        // Measured since (seeded from a profile): that time and its upload.
        o.seed(Mode::Together, 0.4);
        assert_eq!(o.first_from_profile(&ALL, &up(true)), Some(Mode::Together));
        assert_eq!(o.first_from_profile(&ALL, &up(false)), Some(Mode::Together));
    }

    /// A device that carried most of the co-executed runs is tried alone
    /// once, where the model puts it within twice the fastest run: before
    /// co-executing is confirmed and after; not beyond, and not again.
    #[test]
    fn a_device_that_carried_most_of_the_runs_is_tried_alone_once() {
        let mut o = Outcomes::default();
        let sure = (Mode::Together, Some(0.6));
        // Predicted 1.6 times co-executing: no leap, not near.
        let gpu = |p: f64| move |m: Mode| (m == GPU).then_some(p);
        o.record(Mode::Together, 2.5e-3, 1000);
        assert_eq!(
            o.choose(&ALL, sure, &gpu(4.0e-6), (1000, &[])),
            Mode::Together
        );
        assert_eq!(o.choose(&ALL, sure, &gpu(4.0e-6), (1000, &[GPU])), GPU);
        // Confirmed, many runs later: the budget does not pay for it.
        for _ in 0..10 {
            o.record(Mode::Together, 2.5e-3, 1000);
        }
        assert_eq!(
            o.choose(&ALL, sure, &gpu(4.0e-6), (1000, &[])),
            Mode::Together
        );
        assert_eq!(o.choose(&ALL, sure, &gpu(4.0e-6), (1000, &[GPU])), GPU);
        // Beyond twice the fastest run, or not the one that carried them.
        assert_eq!(
            o.choose(&ALL, sure, &gpu(5.1e-6), (1000, &[GPU])),
            Mode::Together
        );
        assert_eq!(
            o.choose(&ALL, sure, &gpu(4.0e-6), (1000, &[CPU])),
            Mode::Together
        );
        // Once measured, its sample rules: faster, it is confirmed; slower
        // than RETRY times the incumbent, it is not run again.
        let mut fast = o.clone();
        fast.record(GPU, 1.5e-3, 1000);
        assert_eq!(fast.choose(&ALL, sure, &gpu(4.0e-6), (1000, &[GPU])), GPU);
        o.record(GPU, 4.5e-3, 1000);
        assert_eq!(
            o.choose(&ALL, sure, &gpu(4.0e-6), (1000, &[GPU])),
            Mode::Together
        );
    }

    #[test]
    fn follows_the_model_until_something_is_measured() {
        let mut o = Outcomes::default();
        assert_eq!(
            o.choose(&ALL, (Mode::Together, None), &|_| Some(1.0), (1000, &[])),
            Mode::Together
        );
        assert_eq!(o.choose(&ALL, (GPU, None), &none, (1000, &[])), GPU);
    }

    /// Before co-executing is confirmed, the model's choice expected
    /// faster than the one co-executed sample (by more than `LEAP` at its
    /// prediction, `MAX_MARGIN` at its one sample) is tried at once; so is
    /// a device alone the model did not choose, where the model expects
    /// co-executing to gain less than `LEAP`. Not one that is close, nor
    /// one that is not a candidate.
    #[test]
    fn a_configuration_far_faster_is_tried_before_confirming() {
        let mut o = Outcomes::default();
        o.record(Mode::Together, 1.8e-3, 1000);
        let gpu_fast = |m: Mode| (m == GPU).then_some(0.2e-6);
        assert_eq!(o.choose(&ALL, (GPU, None), &gpu_fast, (1000, &[])), GPU);
        // The model co-executes and expects little of it (5%); its
        // prediction of the GPU alone is far faster than what co-executing
        // measured.
        let unsure = (Mode::Together, Some(0.05));
        assert_eq!(o.choose(&ALL, unsure, &gpu_fast, (1000, &[])), GPU);
        // Where it expects much of co-executing (60%), or cannot tell, the
        // GPU is no leap; but never run alone and predicted within
        // EXPLORE_START of the sample, it is tried once all the same.
        let sure = (Mode::Together, Some(0.6));
        assert_eq!(o.choose(&ALL, sure, &gpu_fast, (1000, &[])), GPU);
        assert_eq!(
            o.choose(&ALL, (Mode::Together, None), &gpu_fast, (1000, &[])),
            GPU
        );
        let gpu_near = |m: Mode| (m == GPU).then_some(2.2e-6);
        assert_eq!(o.choose(&ALL, sure, &gpu_near, (1000, &[])), GPU);
        // Near the incumbent's sample but not the fastest run measured: the
        // incumbent is confirmed.
        let mut q = Outcomes::default();
        q.record(Mode::Together, 5.3e-3, 1000);
        q.record(GPU, 1.6e-3, 1000);
        let cpu_near = |m: Mode| (m == CPU).then_some(5.0e-6);
        assert_eq!(q.choose(&ALL, sure, &cpu_near, (1000, &[])), Mode::Together);
        // Predicted slower by more than EXPLORE_START: the incumbent is
        // confirmed first.
        let gpu_slow = |m: Mode| (m == GPU).then_some(2.3e-6);
        assert_eq!(o.choose(&ALL, sure, &gpu_slow, (1000, &[])), Mode::Together);
        // Faster by 17% (within LEAP): no leap, the near rule tries it.
        let gpu_close = |m: Mode| (m == GPU).then_some(1.5e-6);
        assert_eq!(o.choose(&ALL, (GPU, None), &gpu_close, (1000, &[])), GPU);
        // Faster by 28%: tried.
        let gpu_faster = |m: Mode| (m == GPU).then_some(1.3e-6);
        assert_eq!(o.choose(&ALL, unsure, &gpu_faster, (1000, &[])), GPU);
        // Not a candidate.
        let no_gpu = [Mode::Together, CPU];
        assert_eq!(
            o.choose(&no_gpu, (GPU, None), &gpu_fast, (1000, &[])),
            Mode::Together
        );
        // The fastest expected of several.
        let both = |m: Mode| match m {
            GPU => Some(0.5e-6),
            CPU => Some(0.3e-6),
            _ => None,
        };
        assert_eq!(o.choose(&ALL, unsure, &both, (1000, &[])), CPU);
        // Measured once, far faster: confirmed at once, and it takes over.
        o.record(GPU, 0.3e-3, 1000);
        assert_eq!(o.choose(&ALL, (GPU, None), &gpu_close, (1000, &[])), GPU);
        o.record(GPU, 0.31e-3, 1000);
        assert_eq!(o.incumbent(), Some(GPU));
        // Measured once and faster by 11% (within MAX_MARGIN):
        // co-executing is confirmed, whatever the model predicted before.
        let mut p = Outcomes::default();
        p.record(Mode::Together, 1.8e-3, 1000);
        p.record(GPU, 1.6e-3, 1000);
        assert_eq!(
            p.choose(&ALL, (GPU, None), &gpu_fast, (1000, &[])),
            Mode::Together
        );
    }

    /// A leap can replace an incumbent measured once, whose one sample was
    /// an outlier: the first recheck measures it again whatever the
    /// budget (once), and it takes over again if it is the faster; a
    /// configuration measured once beyond OUTLIER is not measured again.
    #[test]
    fn a_configuration_measured_once_is_measured_again_at_a_recheck() {
        let mut o = Outcomes::default();
        // Co-executing truly takes 1.0 ms; its one sample was interrupted.
        o.record(Mode::Together, 1.9e-3, 1000);
        let cpu = |m: Mode| match m {
            CPU => Some(1.1e-6),
            GPU => Some(5e-6),
            _ => None,
        };
        // The model expects little of co-executing.
        let model = (Mode::Together, Some(0.05));
        assert_eq!(o.choose(&ALL, model, &cpu, (1000, &[])), CPU);
        o.record(CPU, 1.1e-3, 1000);
        assert_eq!(o.choose(&ALL, model, &cpu, (1000, &[])), CPU);
        o.record(CPU, 1.1e-3, 1000);
        assert_eq!(o.incumbent(), Some(CPU));
        // The GPU alone, measured once at 4x: never again by the recheck.
        o.record(GPU, 4.4e-3, 1000);
        let mut seen = Vec::new();
        while o.runs < 2 * RECHECK {
            let m = o.choose(&ALL, model, &cpu, (1000, &[]));
            seen.push(m);
            o.record(m, if m == Mode::Together { 1.0e-3 } else { 1.1e-3 }, 1000);
        }
        assert_eq!(o.incumbent(), Some(Mode::Together), "{seen:?}");
        assert!(!seen.contains(&GPU), "{seen:?}");
    }

    /// A configuration's time is that of its fastest variant: a lone GPU
    /// whose ladder climbed through slower steps is timed at its best
    /// step, and co-executing, slower than that, is not measured again.
    #[test]
    fn a_configuration_is_timed_at_its_fastest_variant() {
        let mut t = Times::default();
        for (s, v) in [
            (0.72, 1),
            (0.62, 2),
            (0.55, 4),
            (0.60, 8),
            (0.56, 4),
            (0.54, 4),
        ] {
            t.push(s, v);
        }
        assert_eq!(t.median(), Some(0.55));
        assert_eq!(t.fastest_variant(), Some((4, 0.55)));
        assert!((t.spread() - 0.01 / 0.55).abs() < 1e-9, "{}", t.spread());
        // Mixed into one median, the steps would be 0.58.
        let mixed = median(&[0.72, 0.62, 0.55, 0.60, 0.56, 0.54]).unwrap();
        assert!((mixed - 0.58).abs() < 1e-9);

        let mut o = Outcomes::default();
        o.record(Mode::Together, 0.70e-3, 1000);
        o.record(Mode::Together, 0.71e-3, 1000);
        // Mixed, the three steps would be 0.72: slower than co-executing.
        for (s, v) in [(0.80e-3, 1), (0.72e-3, 2), (0.55e-3, 4)] {
            o.record_variant(GPU, v, s, 1000);
        }
        assert_eq!(o.incumbent(), Some(GPU));
        assert_eq!(o.per_unit_s(GPU), Some(0.55e-6));
        for _ in 0..20 {
            assert_eq!(
                o.choose(&ALL, (Mode::Together, None), &none, (1000, &[])),
                GPU
            );
            o.record_variant(GPU, 4, 0.55e-3, 1000);
        }
    }

    /// A profile's fastest configuration runs first, whatever the model
    /// says, until live runs are recorded.
    #[test]
    fn the_profile_best_runs_first() {
        let mut o = Outcomes::default();
        o.seed(Mode::Together, 2e-6);
        o.seed(GPU, 1e-6);
        o.seed(CPU, 3e-6);
        assert_eq!(o.incumbent(), Some(GPU));
        let cpu_fast = |m: Mode| (m == CPU).then_some(1e-9);
        assert_eq!(
            o.choose(&ALL, (Mode::Together, None), &cpu_fast, (1000, &[])),
            GPU
        );
        // Only candidates count: without the GPU, the next fastest.
        assert_eq!(
            o.choose(
                &[Mode::Together, CPU],
                (Mode::Together, None),
                &none,
                (1000, &[])
            ),
            Mode::Together
        );
    }

    #[test]
    fn a_device_is_measured_in_a_box_the_budget_affords() {
        let mut o = Outcomes::default();
        // No incumbent: no box; one run of 1 ms: a quarter of it.
        assert_eq!(o.measuring_box(0, 1000), None);
        o.record(GPU, 1e-3, 1000);
        assert_eq!(o.measuring_box(0, 1000), Some(0.25e-3 + 0.02e-3));
        o.record(GPU, 1e-3, 1000);
        // Two runs of 1 ms: a quarter of a run and 2% of the 2 ms
        // recorded, 0.29 ms.
        let first = o.measuring_box(0, 1000).unwrap();
        assert!((first - 0.29e-3).abs() < 1e-9, "{first}");
        // Not for a device that is the incumbent.
        assert_eq!(o.measuring_box(1, 1000), None);
        // A budget spent on other explorations still gives the first box
        // a quarter of a run.
        let mut spent = o.clone();
        spent.record(CPU, 1.2e-3, 1000);
        spent.record(GPU, 1e-3, 1000);
        assert!(spent.explore_s > 0.0);
        assert_eq!(spent.measuring_box(2, 1000), Some(0.25e-3));
        // The box ended with the others joining: the run (1.2 ms) is
        // charged what it took over the incumbent, and no configuration
        // has a sample of it.
        o.charge(1.2e-3, 1000);
        o.boxed(0, first, 1000);
        assert_eq!(o.per_unit_s(CPU), None);
        assert_eq!(o.per_unit_s(Mode::Together), None);
        assert!((o.explore_s - 0.2e-3).abs() < 1e-12, "{}", o.explore_s);
        assert!(o.was_boxed(0) && !o.was_boxed(1));
        // Again only once the budget affords twice that box: 0.58 ms of
        // 0.25 ms + 2% of the runs, less the 0.2 ms charged: 26.6 ms of
        // runs, 24 more runs of 1 ms.
        let mut runs = 0;
        while o.measuring_box(0, 1000).is_none() {
            o.record(GPU, 1e-3, 1000);
            runs += 1;
        }
        assert_eq!(runs, 24);
        let second = o.measuring_box(0, 1000).unwrap();
        assert!(second >= 2.0 * first && second <= 1e-3, "{second}");
        // After a box in which the device ran nothing, a quarter of a
        // run as the budget affords it.
        let mut idle = o.clone();
        idle.boxed(0, 0.0, 1000);
        assert!(!idle.was_boxed(0));
        idle.explore_s = idle.budget_s(1e-3) + idle.explore_s - 0.2e-3;
        assert_eq!(idle.measuring_box(0, 1000), None);
        idle.explore_s -= 0.05e-3;
        assert!(idle.measuring_box(0, 1000).is_some());
        // A box as long as the incumbent's run is the last.
        o.boxed(0, 1e-3, 1000);
        for _ in 0..200 {
            o.record(GPU, 1e-3, 1000);
        }
        assert_eq!(o.measuring_box(0, 1000), None);
        // A device measured alone needs no box.
        let mut p = Outcomes::default();
        p.record(GPU, 1e-3, 1000);
        p.record(GPU, 1e-3, 1000);
        p.record(CPU, 2e-3, 1000);
        assert_eq!(p.measuring_box(0, 1000), None);
    }

    /// An exploration the model rates slower waits until the recorded run
    /// time pays for it; one it rates faster runs at once.
    #[test]
    fn explorations_are_rationed_by_their_expected_cost() {
        let mut o = Outcomes::default();
        // CPU alone predicted 1.3x (past what the first runs try, see
        // `leap`): 3 ms over the incumbent, with a chance of 15% to be
        // faster, so 20.4 ms: a quarter of a run at the start (2.5 ms) and
        // 2% of 90 runs.
        let predict = |m: Mode| (m == CPU).then_some(13e-6);
        let mut runs = 0;
        while o.choose(&ALL, (Mode::Together, None), &predict, (1000, &[])) == Mode::Together {
            o.record(Mode::Together, 10e-3, 1000);
            runs += 1;
        }
        assert_eq!(runs, 90);
        // It measured 1.5x: 5 ms charged, the budget is spent for a while.
        o.record(CPU, 15e-3, 1000);
        assert_eq!(o.incumbent(), Some(Mode::Together));
        // The next recheck (every RECHECK runs: the 96th) measures the
        // CPU, measured once within OUTLIER, again whatever the budget;
        // once.
        for _ in 91..96 {
            assert_eq!(
                o.choose(&ALL, (Mode::Together, None), &none, (1000, &[])),
                Mode::Together
            );
            o.record(Mode::Together, 10e-3, 1000);
        }
        assert_eq!(
            o.choose(&ALL, (Mode::Together, None), &none, (1000, &[])),
            CPU
        );
        o.record(CPU, 15e-3, 1000);
        // The GPU predicted 1.4x: 4 ms at a chance of 9% asks 44 ms, more
        // than the budget left.
        let gpu_slow = |m: Mode| (m == GPU).then_some(14e-6);
        assert_eq!(
            o.choose(&ALL, (Mode::Together, None), &gpu_slow, (1000, &[])),
            Mode::Together
        );
        // Predicted faster: free, tried at once.
        let gpu_fast = |m: Mode| (m == GPU).then_some(5e-6);
        assert_eq!(
            o.choose(&ALL, (Mode::Together, None), &gpu_fast, (1000, &[])),
            GPU
        );
        // Far predictions are never tried.
        let mut p = Outcomes::default();
        for _ in 0..100 {
            p.record(Mode::Together, 10e-3, 1_000_000);
        }
        let far = |m: Mode| (m != Mode::Together).then_some(16e-9);
        assert_eq!(
            p.choose(&ALL, (Mode::Together, None), &far, (1_000_000, &[])),
            Mode::Together
        );
    }

    #[test]
    fn co_execution_is_not_explored_against_the_model() {
        let mut g = Outcomes::default();
        for _ in 0..10 {
            g.record(GPU, 1e-3, 1000);
        }
        let together_fast = |m: Mode| (m == Mode::Together).then_some(1e-9);
        assert_eq!(
            g.choose(&ALL, (GPU, None), &together_fast, (1000, &[])),
            GPU
        );
        // Unless the model chose it.
        assert_eq!(
            g.choose(&ALL, (Mode::Together, None), &none, (1000, &[])),
            Mode::Together
        );
    }

    /// A short run's device measured on a probe looks slow per unit: it is
    /// tried alone when that costs little, even against the model.
    #[test]
    fn explores_a_single_device_within_the_absolute_allowance() {
        let mut o = Outcomes::default();
        for _ in 0..1000 {
            o.record(CPU, 200e-6, 16);
        }
        // The GPU alone predicted at 0.6 ms: 3x, but 0.4 ms over the best:
        // given a chance of 10%, 1000 runs of 0.2 ms pay for it.
        let predict = |m: Mode| (m == GPU).then_some(600e-6 / 16.0);
        assert_eq!(o.choose(&ALL, (CPU, None), &predict, (16, &[])), GPU);
        o.record(GPU, 66e-6, 16);
        // Faster: confirmed, then it takes over.
        assert_eq!(o.incumbent(), Some(CPU));
        assert_eq!(o.choose(&ALL, (CPU, None), &predict, (16, &[])), GPU);
        o.record(GPU, 70e-6, 16);
        assert_eq!(o.incumbent(), Some(GPU));
        // Past the allowance and the factor: not tried.
        let mut p = Outcomes::default();
        for _ in 0..1000 {
            p.record(CPU, 200e-6, 16);
        }
        let slow = |m: Mode| (m == GPU).then_some(2e-3 / 16.0);
        assert_eq!(p.choose(&ALL, (CPU, None), &slow, (16, &[])), CPU);
    }

    /// One faster sample is not enough, and a challenger within the noise
    /// never replaces the incumbent: it is measured while it looks faster,
    /// at most [`KEEP`] times.
    #[test]
    fn a_challenger_must_confirm_and_beat_the_margin() {
        let mut o = Outcomes::default();
        for s in [1.0e-3, 1.02e-3, 0.98e-3] {
            o.record(Mode::Together, s, 1);
        }
        o.record(CPU, 0.99e-3, 1);
        assert_eq!(o.incumbent(), Some(Mode::Together));
        let mut trials = 1;
        while o.choose(&ALL, (Mode::Together, None), &none, (1, &[])) == CPU {
            o.record(CPU, [0.985e-3, 0.995e-3][trials % 2], 1);
            trials += 1;
            assert_eq!(o.incumbent(), Some(Mode::Together));
        }
        assert_eq!(trials, KEEP);
        assert_eq!(
            o.choose(&ALL, (Mode::Together, None), &none, (1, &[])),
            Mode::Together
        );
        // Clearly faster: it takes over after two runs.
        let mut p = Outcomes::default();
        for _ in 0..3 {
            p.record(Mode::Together, 1e-3, 1);
        }
        p.record(GPU, 0.8e-3, 1);
        assert_eq!(p.incumbent(), Some(Mode::Together));
        assert_eq!(p.choose(&ALL, (Mode::Together, None), &none, (1, &[])), GPU);
        p.record(GPU, 0.82e-3, 1);
        assert_eq!(p.incumbent(), Some(GPU));
    }

    /// A configuration the model prefers is tried again after one slow
    /// sample; one it rates slower waits for the budget.
    #[test]
    fn one_noisy_sample_does_not_rule_out_what_the_model_prefers() {
        let mut o = Outcomes::default();
        for _ in 0..40 {
            o.record(Mode::Together, 1e-3, 1);
        }
        o.record(CPU, 1.3e-3, 1);
        let cpu_faster = |m: Mode| (m == CPU).then_some(0.6e-3);
        assert_eq!(
            o.choose(&ALL, (Mode::Together, None), &cpu_faster, (1, &[])),
            CPU
        );
        let cpu_slower = |m: Mode| (m == CPU).then_some(1.2e-3);
        assert_eq!(
            o.choose(&ALL, (Mode::Together, None), &cpu_slower, (1, &[])),
            Mode::Together
        );
        o.record(CPU, 0.6e-3, 1);
        // Two samples, the smaller counts: it takes over.
        assert_eq!(o.incumbent(), Some(CPU));
    }

    /// A slow sample outweighs a prediction it contradicts: measured once
    /// at 1.45 times the incumbent, a configuration the model put at 1.2
    /// is not tried again at the model's figure (only a prediction faster
    /// than the incumbent by more than the model's error is).
    #[test]
    fn a_slow_sample_outweighs_the_prediction_it_contradicts() {
        let mut o = Outcomes::default();
        for _ in 0..200 {
            o.record(Mode::Together, 1e-3, 1);
        }
        o.record(CPU, 1.45e-3, 1);
        let near = |m: Mode| (m == CPU).then_some(1.2e-3);
        assert_eq!(
            o.choose(&ALL, (Mode::Together, None), &near, (1, &[])),
            Mode::Together
        );
    }

    /// A sample past what an interrupted run explains outweighs any
    /// prediction: measured once at 3.3 times the incumbent, a device the
    /// model now puts at half the incumbent is not run alone again (only
    /// a recheck would, and only within OUTLIER).
    #[test]
    fn a_sample_past_an_outlier_outweighs_any_prediction() {
        let mut o = Outcomes::default();
        for _ in 0..40 {
            o.record(Mode::Together, 1e-3, 1);
        }
        o.record(CPU, 3.3e-3, 1);
        let cpu_fast = |m: Mode| (m == CPU).then_some(0.5e-3);
        for _ in 0..2 * RECHECK {
            let m = o.choose(&ALL, (Mode::Together, None), &cpu_fast, (1, &[]));
            assert_eq!(m, Mode::Together);
            o.record(m, 1e-3, 1);
        }
    }

    /// On a short run, a sample past OUTLIER that costs at most
    /// EXPLORE_BUDGET_S over the incumbent may be one-time costs (an H200's
    /// CPU workers alone over 2^10 items of a gather, first run after the
    /// GPU's: 261 us, then about 20, against the GPU's 85): where the model
    /// puts it well under the incumbent it runs again, once; a second slow
    /// sample rules. The same ratios over runs a thousand times longer are
    /// not measured again (see the test above).
    #[test]
    fn a_short_runs_slow_sample_is_measured_again_once() {
        let units = 4;
        // The GPU four times at 85 time units, the CPU once at 261; the
        // model puts the CPU at 11 (`unit`: seconds per time unit).
        let seeded = |unit: f64| {
            let mut o = Outcomes::default();
            for _ in 0..4 {
                o.record(GPU, 85.0 * unit, units);
            }
            o.record(CPU, 261.0 * unit, units);
            o
        };
        let predicted = |unit: f64| move |m: Mode| (m == CPU).then_some(11.0 * unit / units as f64);
        let mut o = seeded(1e-6);
        let cpu_fast = predicted(1e-6);
        let m = o.choose(&ALL, (CPU, None), &cpu_fast, (units, &[]));
        assert_eq!(m, CPU);
        o.record(m, 250e-6, units);
        for _ in 0..4 {
            let m = o.choose(&ALL, (CPU, None), &cpu_fast, (units, &[]));
            assert_eq!(m, GPU, "a second slow sample rules");
            o.record(m, 85e-6, units);
        }
        let mut long = seeded(1e-3);
        let m = long.choose(&ALL, (CPU, None), &predicted(1e-3), (units, &[]));
        assert_eq!(m, GPU);
    }

    /// A challenger measured twice is compared with the incumbent on an
    /// equal footing: its smaller sample against where the smaller of two
    /// of the incumbent's samples falls on average, not its median.
    #[test]
    fn a_challenger_is_compared_at_equal_sample_counts() {
        let mut o = Outcomes::default();
        for s in [0.9e-3, 1.2e-3, 1.25e-3] {
            o.record(Mode::Together, s, 1);
        }
        o.record(CPU, 1.0e-3, 1);
        o.record(CPU, 1.05e-3, 1);
        // Against the median (1.2 ms) the pair wins by 17%; against the
        // incumbent's third quantile (1.1 ms), by 9%: within the margin.
        assert_eq!(o.incumbent(), Some(Mode::Together));
        let (inc, cpu) = o.on_equal_footing(Mode::Together, CPU).unwrap();
        assert!((inc - 1.1e-3).abs() < 1e-12 && cpu == 1.0e-3, "{inc} {cpu}");
        // A third sample puts both at their medians.
        o.record(CPU, 0.8e-3, 1);
        let (inc, cpu) = o.on_equal_footing(Mode::Together, CPU).unwrap();
        assert_eq!((inc, cpu), (1.2e-3, 1.0e-3));
        assert_eq!(o.incumbent(), Some(CPU));
    }

    /// A device alone that the model chose, measured as fast as
    /// co-executing, replaces it (the other device need not be woken); one
    /// the model did not choose needs the margin.
    #[test]
    fn the_model_choice_alone_wins_a_tie_with_co_execution() {
        for (model, expected) in [(GPU, GPU), (Mode::Together, Mode::Together)] {
            let mut o = Outcomes::default();
            for _ in 0..3 {
                o.record(Mode::Together, 1e-3, 1);
            }
            o.choose(&ALL, (model, None), &none, (1, &[]));
            o.record(GPU, 1.01e-3, 1);
            o.record(GPU, 1.015e-3, 1);
            assert_eq!(o.incumbent(), Some(expected), "model {model:?}");
        }
    }

    #[test]
    fn the_incumbent_yields_when_it_slows_down() {
        let mut o = Outcomes::default();
        for _ in 0..3 {
            o.record(Mode::Together, 1e-3, 1);
        }
        o.record(CPU, 1.1e-3, 1);
        o.record(CPU, 1.1e-3, 1);
        assert_eq!(o.incumbent(), Some(Mode::Together));
        // The machine's load changes: co-executing now takes 1.5 ms.
        for _ in 0..6 {
            o.record(Mode::Together, 1.5e-3, 1);
        }
        assert_eq!(o.incumbent(), Some(CPU));
    }

    #[test]
    fn the_median_of_recent_runs_resists_outliers() {
        let mut o = Outcomes::default();
        for s in [1e-3, 1e-3, 9e-3, 1e-3, 8e-3] {
            o.record(Mode::Together, s, 1);
        }
        assert_eq!(o.per_unit_s(Mode::Together), Some(1e-3));
        // Only the last KEEP count.
        for s in [5e-3, 5e-3, 5e-3] {
            o.record(Mode::Together, s, 1);
        }
        assert_eq!(o.per_unit_s(Mode::Together), Some(5e-3));
        // Bad input is ignored.
        o.record(Mode::Together, f64::NAN, 1);
        o.record(Mode::Together, 1.0, 0);
        o.record(Mode::Together, -1.0, 1);
        assert_eq!(o.runs, 8);
    }

    #[test]
    fn rechecks_a_close_runner_up() {
        let mut o = Outcomes::default();
        o.record(Mode::Together, 1e-3, 1);
        o.record(CPU, 1.1e-3, 1);
        o.record(CPU, 1.1e-3, 1);
        // 0.1 ms over, at a chance of 35%: 2% of 64 runs pay for it.
        while o.runs < 4 * RECHECK {
            o.record(Mode::Together, 1e-3, 1);
        }
        assert_eq!(o.choose(&ALL, (Mode::Together, None), &none, (1, &[])), CPU);
        o.record(CPU, 1.1e-3, 1);
        assert_eq!(
            o.choose(&ALL, (Mode::Together, None), &none, (1, &[])),
            Mode::Together
        );
        // A far runner-up is not rechecked.
        let mut far = Outcomes::default();
        far.record(Mode::Together, 1e-3, 1);
        far.record(CPU, 3e-3, 1);
        far.record(CPU, 3e-3, 1);
        while far.runs < 4 * RECHECK {
            far.record(Mode::Together, 1e-3, 1);
        }
        assert_eq!(
            far.choose(&ALL, (Mode::Together, None), &none, (1, &[])),
            Mode::Together
        );
    }

    #[test]
    fn seeds_fill_only_unmeasured_modes() {
        let mut o = Outcomes::default();
        o.record(GPU, 2e-3, 1);
        o.seed(GPU, 5e-3);
        o.seed(Mode::Together, 1e-3);
        o.seed(CPU, f64::INFINITY);
        assert_eq!(o.per_unit_s(GPU), Some(2e-3));
        assert_eq!(o.per_unit_s(Mode::Together), Some(1e-3));
        assert_eq!(o.per_unit_s(CPU), None);
        assert_eq!(o.runs, 1);
        assert_eq!(o.measured().len(), 2);
        // After live runs, a seed does not displace the incumbent.
        assert_eq!(o.incumbent(), Some(GPU));
    }
}
