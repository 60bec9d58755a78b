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
//! it ran (per unit of work, so that a profile serves nearby sizes),
//! explores a single device once where the model rates it close to the
//! co-executed time, then runs whichever is measured fastest, and every
//! [`RECHECK`] runs measures the runner-up again, so that a choice made on
//! one noisy run, or before the machine's load changed, does not stick.
//!
//! Plain data and pure decisions: no clock, no threads, no Vulkan.

/// One configuration of a run: every device that can take part, or one
/// device (an engine slot: 0 the CPU workers, 1 the GPU) alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Mode {
    /// Every present device co-executes.
    Together,
    /// Only this slot runs.
    Alone(usize),
}

/// A single device is tried once when the model puts it within this factor
/// of the measured co-executed time: exploring costs one run at most this
/// much slower, and finds out whether the model's optimism about
/// co-executing was misplaced.
pub(crate) const EXPLORE: f64 = 1.5;

/// A single device is also tried once when the model's prediction for it is
/// at most this many seconds over the measured best: on short runs a
/// device's figures come from a probe or two, whose fixed costs a linear
/// model stretches over the whole run (a GPU measured on one wave looks
/// far slower per unit than it is), and trying it costs little.
pub(crate) const EXPLORE_BUDGET_S: f64 = 1e-3;

/// Every this many recorded runs, the runner-up is measured again if it is
/// within [`RECHECK_WITHIN`] of the best.
pub(crate) const RECHECK: u64 = 16;

/// See [`RECHECK`].
pub(crate) const RECHECK_WITHIN: f64 = 1.25;

/// Samples kept per configuration; their median is its time.
const KEEP: usize = 3;

/// The measured time of one configuration.
#[derive(Debug, Clone, PartialEq, Default)]
struct Times {
    /// Seconds per unit of the last [`KEEP`] runs, oldest first.
    recent: Vec<f64>,
}

impl Times {
    fn push(&mut self, per_unit_s: f64) {
        if self.recent.len() == KEEP {
            self.recent.remove(0);
        }
        self.recent.push(per_unit_s);
    }

    /// The median of the kept samples (the mean of the middle two of an
    /// even count).
    fn median(&self) -> Option<f64> {
        let mut v = self.recent.clone();
        v.sort_by(f64::total_cmp);
        match v.len() {
            0 => None,
            n if n % 2 == 1 => Some(v[n / 2]),
            n => Some((v[n / 2 - 1] + v[n / 2]) / 2.0),
        }
    }
}

/// The measured times of a kernel's configurations over one index space.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct Outcomes {
    modes: Vec<(Mode, Times)>,
    /// Runs recorded since the last reset.
    runs: u64,
}

impl Outcomes {
    /// Records a run in `mode` that took `seconds` for `units` units.
    /// Ignores empty runs and times that are not finite and positive.
    pub(crate) fn record(&mut self, mode: Mode, seconds: f64, units: u64) {
        if units == 0 || !(seconds.is_finite() && seconds > 0.0) {
            return;
        }
        self.runs += 1;
        let per_unit = seconds / units as f64;
        match self.modes.iter_mut().find(|(m, _)| *m == mode) {
            Some((_, t)) => t.push(per_unit),
            None => {
                let mut t = Times::default();
                t.push(per_unit);
                self.modes.push((mode, t));
            }
        }
    }

    /// The measured seconds per unit of `mode`, if it ran.
    pub(crate) fn per_unit_s(&self, mode: Mode) -> Option<f64> {
        self.modes
            .iter()
            .find(|(m, _)| *m == mode)
            .and_then(|(_, t)| t.median())
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
    /// soon replace it). Not counted as a run.
    pub(crate) fn seed(&mut self, mode: Mode, per_unit_s: f64) {
        if per_unit_s.is_finite() && per_unit_s > 0.0 && self.per_unit_s(mode).is_none() {
            let mut t = Times::default();
            t.push(per_unit_s);
            self.modes.push((mode, t));
        }
    }

    /// The configuration of the next run of `units` units among
    /// `candidates` (`Together` and the slots that could run alone), given
    /// what the cost model chose (`model`) and what it predicts per unit for
    /// a configuration (`predict`, `None` when it cannot tell):
    ///
    /// 1. the model's choice, while it is unmeasured (so that each
    ///    configuration the model believes in is measured once);
    /// 2. a device alone that is unmeasured but predicted within [`EXPLORE`]
    ///    times, or [`EXPLORE_BUDGET_S`] seconds, of the best measured
    ///    configuration: that device alone, once (the best predicted
    ///    first). Co-executing is not explored against a model that runs
    ///    one device: its estimate of the gain was under 5%, and a first
    ///    co-executed run of a kernel whose devices differ a hundredfold
    ///    can cost many times the run;
    /// 3. every [`RECHECK`] runs, the measured runner-up when within
    ///    [`RECHECK_WITHIN`] of the best;
    /// 4. the fastest measured configuration, the model's choice on a tie.
    pub(crate) fn choose(
        &self,
        candidates: &[Mode],
        model: Mode,
        predict: &dyn Fn(Mode) -> Option<f64>,
        units: u64,
    ) -> Mode {
        if self.per_unit_s(model).is_none() {
            return model;
        }
        let mut ranked: Vec<(Mode, f64)> = candidates
            .iter()
            .filter_map(|&m| self.per_unit_s(m).map(|s| (m, s)))
            .collect();
        // Stable: on a tie the model's choice (moved to the front) wins,
        // then the candidate listed first.
        ranked.sort_by_key(|&(m, _)| m != model);
        ranked.sort_by(|a, b| a.1.total_cmp(&b.1));
        let (best, best_s) = ranked[0];
        let g = units.max(1) as f64;
        let unexplored = candidates
            .iter()
            .filter(|&&m| m != Mode::Together && self.per_unit_s(m).is_none())
            .filter_map(|&m| predict(m).map(|p| (m, p)))
            .filter(|&(_, p)| p <= EXPLORE * best_s || (p - best_s) * g <= EXPLORE_BUDGET_S)
            .min_by(|a, b| a.1.total_cmp(&b.1));
        if let Some((m, _)) = unexplored {
            return m;
        }
        if self.runs > 0 && self.runs % RECHECK == 0 {
            if let Some(&(second, s)) = ranked.get(1) {
                if s <= RECHECK_WITHIN * best_s {
                    return second;
                }
            }
        }
        best
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GPU: Mode = Mode::Alone(1);
    const CPU: Mode = Mode::Alone(0);
    const ALL: [Mode; 3] = [Mode::Together, CPU, GPU];

    #[test]
    fn follows_the_model_until_something_is_measured() {
        let o = Outcomes::default();
        assert_eq!(
            o.choose(&ALL, Mode::Together, &|_| Some(1.0), 1000),
            Mode::Together
        );
        assert_eq!(o.choose(&ALL, GPU, &|_| None, 1000), GPU);
    }

    #[test]
    fn explores_a_close_single_device_once_then_keeps_the_fastest() {
        let mut o = Outcomes::default();
        o.record(Mode::Together, 10e-3, 1000);
        // The model rates the CPU alone at 1.2x the co-executed time, the
        // GPU alone at 3x: the CPU is tried.
        let predict = |m: Mode| match m {
            CPU => Some(12e-6),
            Mode::Together => Some(7e-6),
            _ => Some(30e-6),
        };
        assert_eq!(o.choose(&ALL, Mode::Together, &predict, 1000), CPU);
        // Alone, it was faster than co-executing: it stays.
        o.record(CPU, 9e-3, 1000);
        assert_eq!(o.choose(&ALL, Mode::Together, &predict, 1000), CPU);
        // Slower alone: back to co-executing.
        let mut p = Outcomes::default();
        p.record(Mode::Together, 10e-3, 1000);
        p.record(CPU, 11e-3, 1000);
        assert_eq!(
            p.choose(&ALL, Mode::Together, &predict, 1000),
            Mode::Together
        );
    }

    #[test]
    fn does_not_explore_far_predictions_or_co_execution_against_the_model() {
        let mut o = Outcomes::default();
        o.record(Mode::Together, 10e-3, 1000);
        let far = |m: Mode| match m {
            Mode::Together => Some(10e-6),
            _ => Some(16e-6),
        };
        assert_eq!(
            o.choose(&ALL, Mode::Together, &far, 1_000_000),
            Mode::Together
        );
        let mut g = Outcomes::default();
        g.record(GPU, 1e-3, 1000);
        let together_fast = |m: Mode| (m == Mode::Together).then_some(1e-9);
        assert_eq!(g.choose(&ALL, GPU, &together_fast, 1000), GPU);
    }

    /// A short run's device measured on a probe looks slow per unit: it is
    /// tried alone when that costs little, even against the model.
    #[test]
    fn explores_a_single_device_within_the_budget() {
        let mut o = Outcomes::default();
        o.record(CPU, 200e-6, 16);
        // The GPU alone predicted at 0.6 ms: 3x, but 0.4 ms over the best.
        let predict = |m: Mode| (m == GPU).then_some(600e-6 / 16.0);
        assert_eq!(o.choose(&ALL, CPU, &predict, 16), GPU);
        o.record(GPU, 66e-6, 16);
        assert_eq!(o.choose(&ALL, CPU, &predict, 16), GPU);
        // Past the budget and the factor: not tried.
        let mut p = Outcomes::default();
        p.record(CPU, 200e-6, 16);
        let slow = |m: Mode| (m == GPU).then_some(2e-3 / 16.0);
        assert_eq!(p.choose(&ALL, CPU, &slow, 16), CPU);
    }

    #[test]
    fn measurements_overrule_the_model() {
        let mut o = Outcomes::default();
        o.record(GPU, 2e-3, 1000);
        o.record(Mode::Together, 1e-3, 1000);
        // The model would run the GPU alone; co-executing measured faster.
        assert_eq!(o.choose(&ALL, GPU, &|_| None, 1000), Mode::Together);
        // Only candidates count: with the CPU absent and the GPU the only
        // measured candidate, the GPU.
        assert_eq!(o.choose(&[GPU], GPU, &|_| None, 1000), GPU);
    }

    #[test]
    fn the_median_of_recent_runs_resists_one_outlier() {
        let mut o = Outcomes::default();
        for s in [1e-3, 1e-3, 9e-3] {
            o.record(Mode::Together, s, 1);
        }
        assert_eq!(o.per_unit_s(Mode::Together), Some(1e-3));
        // Only the last three count.
        for s in [5e-3, 5e-3] {
            o.record(Mode::Together, s, 1);
        }
        assert_eq!(o.per_unit_s(Mode::Together), Some(5e-3));
        // Bad input is ignored.
        o.record(Mode::Together, f64::NAN, 1);
        o.record(Mode::Together, 1.0, 0);
        o.record(Mode::Together, -1.0, 1);
        assert_eq!(o.runs, 5);
    }

    #[test]
    fn rechecks_a_close_runner_up() {
        let mut o = Outcomes::default();
        o.record(CPU, 1.1e-3, 1);
        for _ in 1..RECHECK {
            o.record(Mode::Together, 1e-3, 1);
        }
        assert_eq!(o.runs, RECHECK);
        assert_eq!(o.choose(&ALL, Mode::Together, &|_| None, 1000), CPU);
        o.record(CPU, 1.1e-3, 1);
        assert_eq!(
            o.choose(&ALL, Mode::Together, &|_| None, 1000),
            Mode::Together
        );
        // A far runner-up is not rechecked.
        let mut far = Outcomes::default();
        far.record(CPU, 3e-3, 1);
        for _ in 1..RECHECK {
            far.record(Mode::Together, 1e-3, 1);
        }
        assert_eq!(
            far.choose(&ALL, Mode::Together, &|_| None, 1000),
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
    }
}
