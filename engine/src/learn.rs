//! What an engine learns about its kernels across runs and processes, and
//! the decisions it takes from it before a run: which devices sit the run
//! out (a power of 0, co-execution that the cost model says cannot pay, or
//! that measured runs showed slower than one device alone: see
//! [`crate::outcomes`]).
//!
//! A kernel's estimator holds one [`Cost`] per engine device slot (0: the
//! CPU workers, `1 + g`: engine GPU `g`); the profile key names every
//! device, so a profile serves only the same device set. It is reset when the kernel runs over another
//! index space, seeded from the profile of that space's shape class when
//! one exists on disk, and written back when it has moved. Beside it, the
//! kernel keeps the measured time of each configuration it ran there, and
//! the correction of the co-executed split from how its runs ended (see
//! [`crate::split`]).

use crate::exec::kernel::{IndexSpace, Kernel, Learned};
use crate::outcomes::{Mode, DOMINANT};
use crate::profile::{Profile, ProfileKey, ProfileStore};
use crate::sched::{
    adds_little, alone_time, co_gain, single_device_after, Cost, PowerEstimator, Scheduler,
    StartCost, ThroughputEstimator,
};
use crate::split::Share;
use std::path::PathBuf;
use std::sync::MutexGuard;

/// The CPU workers' estimator slot (GPU `g`'s is `1 + g`).
const CPU_SLOT: usize = 0;

/// Co-execution is declined when its best case gains less than this over
/// the fastest device alone (an estimated `S_max` under 1.05).
pub(crate) const MIN_GAIN: f64 = 0.05;

/// Runs the fastest device would finish within this many seconds alone are
/// not worth waking another device for.
pub(crate) const WAKE_S: f64 = 50e-6;

/// Weight of a profile's figures, in packages: the first few live
/// packages of a run count as much as the profile.
const PROFILE_WEIGHT: f64 = 4.0;

/// A saved cost is written again once a figure has moved by this much.
const RESAVE: f64 = 0.1;

/// A staged GPU's transfer bandwidths: its estimator slot, bytes per
/// second up and down.
pub(crate) type SlotRates = (usize, f64, f64);

/// A GPU's cold first package of a kernel: its estimator slot, units and
/// seconds without its upload (see [`Learning::profile_cold`]).
pub(crate) type ColdPackage = (usize, u64, f64);

/// A run that measures a device no run has measured well enough to predict
/// it alone: the device starts alone, and the run's other devices join it
/// once `box_s` seconds have passed, taking what is left.
///
/// # Why
/// A run that fits in one wave of the GPUs holds the CPU's probe back
/// (see `Plan::holds_back`): the CPU is never measured, so the learner
/// can neither predict it alone nor try it. Where the GPU's run is mostly
/// fixed costs (a staged H200's uploads, downloads and round trips, 0.13
/// to 0.75 ms), the CPU alone is often faster: spmv over 2^13 rows ran in
/// 0.041 ms on the CPU alone and 0.300 on the GPU alone, which the learner
/// kept (BENCHMARKS.md, section 0, h200 run 39). Letting the probe run
/// risks what it holds back: one work-group on one core of an unknown
/// kernel can take as long as the GPU's whole run (an n-body step: the
/// run took 2.5 times the GPU alone's). A box bounds the risk of the
/// measurement by what the budget affords: the others join once it has
/// passed, and a GPU whose run is its fixed costs ends the rest in about
/// the time it took for all of it, so the run costs about the box more
/// than the incumbent. The device's probe runs, and its packages after
/// it, on the whole range as if alone (see [`record_measured`] for what
/// is learned from it).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Measure {
    /// The estimator slot of the device measured.
    pub(crate) slot: usize,
    /// How long it runs alone before the others join, seconds.
    pub(crate) box_s: f64,
}

/// What the learner decided for a run (see [`Learning::decide`]).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Decision {
    /// Per device of the run's `present`, whether it sits the run out.
    pub(crate) sit: Vec<bool>,
    /// The configuration measured (recorded after the run).
    pub(crate) mode: Option<Mode>,
    /// A run that measures a device first (see [`Measure`]): nobody sits
    /// out, and no configuration is measured.
    pub(crate) measure: Option<Measure>,
}

/// The engine's profile store and the descriptions of its devices.
#[derive(Debug)]
pub(crate) struct Learning {
    store: ProfileStore,
    devices: Vec<String>,
    /// Per slot, the first slot whose device line is the same (see
    /// [`classes`]).
    classes: Vec<usize>,
    fallback: bool,
}

impl Learning {
    /// `dir`: the profile directory (`None`: profiles off); `devices`: one
    /// line per slot describing what a measurement depends on.
    pub(crate) fn new(dir: Option<PathBuf>, devices: Vec<String>) -> Self {
        Learning {
            store: ProfileStore::new(dir.filter(|_| profiles_on_in_env())),
            classes: classes(&devices),
            devices,
            fallback: fallback_on_in_env(),
        }
    }

    /// Before a run of `kernel` over `space` (`units` scheduler units):
    /// resets its estimator if the space changed and seeds it from the
    /// profile. Returns whether its figures came from a profile.
    pub(crate) fn prepare(&self, kernel: &Kernel, space: IndexSpace, units: u64) -> bool {
        let mut learned = lock(kernel);
        if learned.space != Some(space) {
            kernel.estimator.reset();
            *learned = Learned {
                space: Some(space),
                ..Learned::default()
            };
            if self.store.enabled() {
                let key = ProfileKey::new(
                    &kernel.name,
                    kernel.identity,
                    &self.devices,
                    &shape_class(space, units),
                );
                if let Some(profile) = self.store.load(&key, self.devices.len()) {
                    for (slot, c) in profile.costs.iter().enumerate() {
                        if let Some(c) = c {
                            kernel.estimator.seed(slot, *c, PROFILE_WEIGHT);
                        }
                    }
                    for &(mode, t) in &profile.times {
                        learned.outcomes.seed(mode, t);
                    }
                    for &(mode, t) in &profile.first {
                        learned.outcomes.seed_first(mode, t);
                    }
                    for &(slot, f) in &profile.split {
                        learned.split.seed(slot, f);
                    }
                    for &(slot, n, t) in &profile.depth {
                        ladder(&mut learned.depth, slot).seed(n, t);
                    }
                    learned.from_profile =
                        profile.costs.iter().any(Option::is_some) || !profile.times.is_empty();
                    learned.saved = profile;
                }
                learned.key = Some(key);
            }
        }
        learned.from_profile
    }

    /// After a successful run: trusts what it measured, records the run's
    /// time under the configuration the learner chose (`outcome`: the
    /// configuration, the run's seconds and units; `None` when the caller
    /// chose), corrects the split from how a co-executed run the learner
    /// chose ended (`shares`: what each device did; see
    /// [`crate::split`]), and writes the kernel's figures to its profile
    /// when they moved since they were last saved or loaded.
    ///
    /// The first run of a kernel object over a space is not recorded: it
    /// pays one-time costs (a pipeline's first use, first touches of the
    /// buffers) that say nothing about the configuration.
    ///
    /// `lone`: the run was a lone GPU's (its estimator slot) in this many
    /// packages (see [`Learning::lone_depth`]), with its seconds and units;
    /// `timed`: its time measures it (not so for a run that paid a one-time
    /// transfer); `uploaded`: it uploaded bytes. `rates`: the staged GPUs'
    /// transfer bandwidths this process learned, for the profile (see
    /// [`Learning::profile_rates`]); `cold`: the GPUs' cold first packages
    /// of the kernel in this run (estimator slot, units, seconds without
    /// their uploads), whose cost beyond the warm one the profile keeps
    /// (see [`Learning::profile_cold`]).
    ///
    /// A lone run right after a run of other devices that uploaded bytes
    /// (what they wrote, as a rule) is recorded as such for its depth (see
    /// [`crate::depth::DepthLadder::record_after_others`]). One that
    /// uploaded nothing measured the depth as any lone run does: marking
    /// Mandelbrot's (an output only) had its ladder measure one package
    /// again within its first eight runs, at 1.2x the time of four.
    pub(crate) fn after_run(
        &self,
        kernel: &Kernel,
        (outcome, measured): (Option<(Mode, f64, u64)>, Option<Measured>),
        shares: &[Share],
        lone: Option<(usize, u64, f64, u64)>,
        (timed, uploaded): (bool, bool),
        (rates, cold): (&[SlotRates], &[ColdPackage]),
    ) {
        kernel.estimator.settle();
        let mut learned = lock(kernel);
        learned.runs += 1;
        for &(slot, n, s) in cold {
            if !learned.cold.iter().any(|c| c.0 == slot) {
                learned.cold.push((slot, n, s));
            }
        }
        if let (Some((mode, seconds, units)), true) =
            (outcome, tracing::enabled!(tracing::Level::DEBUG))
        {
            let run = learned.runs;
            let costs: Vec<_> = (0..self.devices.len())
                .map(|s| kernel.estimator.cost(s))
                .collect();
            tracing::debug!(
                run,
                ?mode,
                seconds,
                units,
                ?lone,
                ?shares,
                ?costs,
                "a run of the learner ended"
            );
        }
        // A run without the CPU measures the GPUs' parts too (the CPU's
        // stays as a co-executed run left it).
        if let Some((Mode::Together | Mode::Without(_), ..)) = outcome {
            let first = learned.runs == 1;
            record_coverage(&mut learned.coverage, shares, first);
        }
        if let Some(m) = measured {
            let runs = learned.runs;
            record_measured(&mut learned, m, shares, timed && runs > 1);
        }
        let lone_slot = lone.map(|(slot, ..)| slot);
        let after_others = uploaded && learned.lone_before != lone_slot;
        learned.lone_before = lone_slot;
        if let (Some((slot, packages, seconds, units)), true) = (lone, timed && learned.runs > 1) {
            let per_unit = seconds / units.max(1) as f64;
            let l = ladder(&mut learned.depth, slot);
            if after_others {
                l.record_after_others(packages, per_unit);
            } else {
                l.record(packages, per_unit);
            }
        }
        if let (Some((mode, seconds, units)), true) = (outcome, learned.runs == 1) {
            learned
                .outcomes
                .record_first(mode, seconds / units.max(1) as f64);
        }
        if let (Some((mode, seconds, units)), true) = (outcome, learned.runs > 1) {
            // A lone GPU's runs vary by their packages (see `Times`).
            let variant = lone.map_or(0, |(_, packages, ..)| packages);
            learned
                .outcomes
                .record_variant(mode, variant, seconds, units);
            if mode == Mode::Together {
                learned.split.update(shares);
            }
        }
        let Some(key) = learned.key.clone() else {
            return;
        };
        let now = Profile {
            costs: (0..self.devices.len())
                .map(|s| kernel.estimator.lasting_cost(s))
                .collect(),
            times: learned.outcomes.measured(),
            split: learned.split.scales(),
            depth: learned
                .depth
                .iter()
                .enumerate()
                .flat_map(|(slot, l)| l.measured().into_iter().map(move |(n, t)| (slot, n, t)))
                .collect(),
            first: learned.outcomes.firsts().to_vec(),
            rates: rates.to_vec(),
            cold: cold_costs(&learned, |slot| kernel.estimator.lasting_cost(slot)),
        };
        if moved(&learned.saved, &now) {
            self.store.save(&key, &now);
            learned.saved = now;
        }
    }

    /// The staged GPUs' transfer bandwidths `kernel`'s profile kept (device
    /// slot, bytes per second up and down; empty without one).
    pub(crate) fn profile_rates(&self, kernel: &Kernel) -> Vec<(usize, f64, f64)> {
        lock(kernel).saved.rates.clone()
    }

    /// What each GPU's first package of `kernel` in a process costs beyond
    /// its warm cost, as its profile kept it (device slot, seconds; empty
    /// without one): a first run from a profile waits that long for the
    /// GPU (see `Engine::gpu_start_costs`). Lavapipe compiles a shader's
    /// code at its first dispatch: a 256-item package took 2.2 ms in a
    /// fresh process, 0.25 ms of the whole run once warm (BENCHMARKS.md,
    /// run 25).
    pub(crate) fn profile_cold(&self, kernel: &Kernel) -> Vec<(usize, f64)> {
        lock(kernel).saved.cold.clone()
    }

    /// Whether `kernel`'s next run is a first run from a profile: its
    /// figures came from one and no live run is recorded yet (see
    /// [`crate::outcomes::Outcomes::first_from_profile`]).
    pub(crate) fn first_from_profile(&self, kernel: &Kernel) -> bool {
        let learned = lock(kernel);
        learned.from_profile && learned.outcomes.no_live_run()
    }

    /// Whether `kernel`'s next run is its first over this space with
    /// nothing learned: no run recorded and no profile read.
    pub(crate) fn first_unlearned(&self, kernel: &Kernel) -> bool {
        let learned = lock(kernel);
        learned.runs == 0 && !learned.from_profile
    }

    /// What the next run of `kernel` by the GPU of estimator slot `slot`
    /// alone, whose transfers have a queue of their own, is cut into (see
    /// [`crate::depth`]).
    pub(crate) fn lone_depth(&self, kernel: &Kernel, slot: usize) -> crate::depth::Depth {
        let mut learned = lock(kernel);
        let first = learned.runs == 0;
        let ladder = ladder(&mut learned.depth, slot);
        let depth = ladder.next(first);
        tracing::debug!(slot, ?depth, ?ladder, "a lone GPU's next run");
        depth
    }

    /// Per run device (`slots`: each one's estimator slot), the index of
    /// the first run device of its class (see [`classes`]): identical
    /// devices, whose costs the run's sizing pools (see
    /// [`crate::engine::run::Remap`]). `COEXEC_POOL=0` leaves each device
    /// its own (to measure what pooling changes).
    pub(crate) fn run_classes(&self, slots: &[usize]) -> Vec<usize> {
        if !pool_on_in_env() {
            return (0..slots.len()).collect();
        }
        self.first_of_class(slots)
    }

    /// Per device of `slots` (estimator slots), the index in `slots` of
    /// the first device of its class (see [`classes`]).
    fn first_of_class(&self, slots: &[usize]) -> Vec<usize> {
        let of = |slot: usize| class_of(&self.classes, slot);
        (0..slots.len())
            .map(|i| (0..i).find(|&j| of(slots[j]) == of(slots[i])).unwrap_or(i))
            .collect()
    }

    /// The scale of each run device's rate in the split (`slots`: each run
    /// device's estimator slot), from how earlier co-executed runs ended.
    /// All 1 where `COEXEC_SPLIT=0` (to measure what the correction
    /// changes).
    pub(crate) fn split_scales(&self, kernel: &Kernel, slots: &[usize]) -> Vec<f64> {
        if !split_on_in_env() {
            return vec![1.0; slots.len()];
        }
        let learned = lock(kernel);
        slots.iter().map(|&s| learned.split.factor(s)).collect()
    }

    /// Per device of `present`, the index in `present` of the first device
    /// of its class (see [`classes`]).
    fn present_classes(&self, present: &[(usize, usize)]) -> Vec<usize> {
        let slots: Vec<usize> = present.iter().map(|&(slot, _)| slot).collect();
        self.first_of_class(&slots)
    }

    /// The devices of a run, in the order of `present` (each as its engine
    /// slot and its number of claimants; `start`: what each waits for
    /// before its first package, see [`StartCost`], as the cost model
    /// counts it; `first`: the same with the GPUs' uploads, which a first
    /// run from a profile adds to the profile's times, see
    /// [`crate::outcomes::Outcomes::first_from_profile`]; `shipping`: each
    /// staged GPU's downloads per unit, by estimator slot), that sit it out
    /// (see [`sit_out`](Self::sit_out)), and under HGuided without hints,
    /// the configuration this is (recorded after the run): the cost model's
    /// choice unless the kernel's measured runs over this space say
    /// otherwise (see [`crate::outcomes::Outcomes::choose`]). What a
    /// configuration is predicted to take weighs each staged GPU with its
    /// downloads (see [`Shipped`]).
    pub(crate) fn decide(
        &self,
        kernel: &Kernel,
        scheduler: &Scheduler,
        present: &[(usize, usize)],
        (start, first, shipping): (&[StartCost], &[StartCost], &[(usize, f64)]),
        units: u64,
    ) -> Decision {
        let est = &*kernel.estimator;
        // What a configuration's run is predicted to take counts each
        // staged GPU's downloads; the model's own choice does not (see
        // `Shipped`).
        let shipped = &Shipped {
            inner: est,
            transfers: shipping,
        };
        let class = self.present_classes(present);
        // Devices whose rate was measured on too small a part of the work
        // to stand for all of it (see `MIN_COVERAGE`), each counted with
        // the identical devices of the run (see `class_coverage`).
        let partial: Vec<bool> = class_coverage(&lock(kernel).coverage, present, &class)
            .iter()
            .map(|c| c.is_some_and(|c| c < MIN_COVERAGE))
            .collect();
        // Devices known only by a provisional cost (see `CostFit::settle`).
        let provisional: Vec<bool> = present
            .iter()
            .map(|&(slot, _)| est.is_provisional(slot))
            .collect();
        let extrapolated = extrapolated(present, est, units);
        let doubts = Doubts {
            partial: &partial,
            provisional: &provisional,
            extrapolated: &extrapolated,
        };
        let sit = self.sit_out(scheduler, present, start, est, units, doubts);
        let learner = matches!(scheduler, Scheduler::HGuided { powers: None, .. })
            && self.fallback
            && present.len() > 1;
        if !learner {
            return Decision {
                sit,
                mode: None,
                measure: None,
            };
        }
        // A device alone stands for its class (see `candidates`).
        let mode_of = |sit: &[bool]| match sit.iter().filter(|s| !**s).count() {
            1 => Mode::Alone(present[class[sit.iter().position(|s| !*s).expect("one runs")]].0),
            n if n + 1 == sit.len()
                && sit.iter().zip(present).any(|(&s, p)| s && p.0 == CPU_SLOT) =>
            {
                Mode::Without(CPU_SLOT)
            }
            _ => Mode::Together,
        };
        let model = mode_of(&sit);
        // What the model expects co-executing to gain (rates only: a device
        // of partial coverage is counted at the rate it measured, which on
        // an irregular kernel overstates it); unknown while a device is
        // known only provisionally.
        let gain = if provisional.contains(&true) {
            None
        } else {
            co_gain(&costs(present, est), start, units)
        };
        let candidates = candidates(present, &class);
        let predict = |m: Mode| predict(m, (present, start, &partial), &class, shipped, units);
        // What the debug line shows is gathered only where it is printed:
        // every run of the learner decides, and a run that leaves a device
        // out must cost what a run without it costs.
        let debug = tracing::enabled!(tracing::Level::DEBUG);
        let (chosen, shown, measure) = {
            let mut learned = lock(kernel);
            let dominant = dominant(&learned.coverage, &candidates);
            let from_profile = learned.from_profile;
            let o = &mut learned.outcomes;
            let upfront =
                |m: Mode| upfront_s(m, (present, first), est, units) / units.max(1) as f64;
            let profiled = from_profile
                .then(|| o.first_from_profile(&candidates, &upfront))
                .flatten();
            let chosen = match profiled {
                Some(m) => m,
                None => o.choose(&candidates, (model, gain), &predict, (units, &dominant)),
            };
            // A device to measure comes before another exploration: the
            // measurement is bounded by its box, and what it measures is
            // what the first tries need (a CPU never measured is never
            // predicted, so never tried alone).
            let measure = to_measure(o, (present, &class, &partial), est, units);
            (
                chosen,
                debug.then(|| (o.incumbent(), o.measured())),
                measure,
            )
        };
        if let Some((incumbent, measured)) = shown {
            let predicted: Vec<(Mode, Option<f64>)> =
                candidates.iter().map(|&m| (m, predict(m))).collect();
            tracing::debug!(
                units,
                ?model,
                ?gain,
                ?predicted,
                ?chosen,
                ?incumbent,
                ?measured,
                ?partial,
                ?measure,
                "configuration of the next run"
            );
        }
        match measure {
            Some(_) => Decision {
                sit: vec![false; present.len()],
                mode: None,
                measure,
            },
            None => Decision {
                sit: sits(present, chosen),
                mode: Some(chosen),
                measure: None,
            },
        }
    }

    /// Which of the run's devices sit it out, in the order of `present`
    /// (the devices that can take part, each as its engine slot and its
    /// number of claimants):
    /// devices given a power of 0 while another has a positive one, and
    /// under HGuided without hints, every device but the fastest when the
    /// kernel's learned costs say co-executing cannot pay (see
    /// [`single_device`]), or else the CPU workers beside two or more
    /// other devices where they add too little to their run (see
    /// [`adds_little`]; every cost known, none in doubt). Never all of
    /// them.
    ///
    /// `doubts`: per device, whether its rate comes from too small a part
    /// of the work to stand for all of it (see [`MIN_COVERAGE`]): the
    /// fallback never leaves such a device alone; and whether it is known
    /// only by a provisional cost (see [`crate::sched::CostFit::settle`]):
    /// that can make it run alone, never sit out (its cold package's
    /// execution may have paid one-time costs too: a software rasterizer's
    /// first dispatch of a shader ran 250 times slower than the next); and
    /// whether its cost was measured only on packages far smaller than the
    /// run (see [`EXTRAPOLATION`]): it does not sit out on that cost either.
    fn sit_out(
        &self,
        scheduler: &Scheduler,
        present: &[(usize, usize)],
        start: &[StartCost],
        estimator: &dyn PowerEstimator,
        units: u64,
        doubts: Doubts<'_>,
    ) -> Vec<bool> {
        let n = present.len();
        let mut out = vec![false; n];
        if n < 2 {
            return out;
        }
        match scheduler {
            Scheduler::Static {
                powers: Some(p), ..
            }
            | Scheduler::HGuided {
                powers: Some(p), ..
            } if p.len() == n && p.iter().any(|&x| x > 0.0) => {
                for (o, &x) in out.iter_mut().zip(p) {
                    *o = x == 0.0;
                }
            }
            Scheduler::HGuided { powers: None, .. } if self.fallback => {
                let doubt = |d: &[bool], i: usize| d.get(i).copied().unwrap_or(false);
                let costs = costs(present, estimator);
                let sits_on_doubt =
                    |i: usize| doubt(doubts.provisional, i) || doubt(doubts.extrapolated, i);
                let alone = single_device_after(&costs, start, units, MIN_GAIN, WAKE_S)
                    .filter(|&a| !doubt(doubts.partial, a))
                    .filter(|&a| (0..n).all(|i| i == a || !sits_on_doubt(i)));
                if let Some(alone) = alone {
                    for (i, o) in out.iter_mut().enumerate() {
                        *o = i != alone;
                    }
                } else if let Some(cpu) = cpu_adds_little(present, (&costs, start), units) {
                    // Every cost known for sure: a doubtful one could make
                    // the CPU look worth less than it is.
                    out[cpu] = (0..n).all(|i| !sits_on_doubt(i));
                }
            }
            _ => {}
        }
        out
    }
}

/// The index in `present` of the CPU workers where they take part
/// beside two or more other devices and add too little to their run
/// to be woken (see [`adds_little`]); `COEXEC_LEAVE_CPU=0` never
/// leaves them out so (to measure the rule).
fn cpu_adds_little(
    present: &[(usize, usize)],
    (costs, start): (&[(Option<Cost>, usize)], &[StartCost]),
    units: u64,
) -> Option<usize> {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    if !crate::switches::on_unless_zero(&ON, "COEXEC_LEAVE_CPU") {
        return None;
    }
    let cpu = present.iter().position(|&(slot, _)| slot == CPU_SLOT)?;
    adds_little(costs, start, units, cpu, MIN_GAIN)?.then_some(cpu)
}

/// How a run that measured a device in a time box (see [`Measure`]) went.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Measured {
    /// The device and its box.
    pub(crate) measure: Measure,
    /// The run's seconds.
    pub(crate) seconds: f64,
    /// The run's units.
    pub(crate) units: u64,
    /// The device ran some item (on a loaded host its claimants may not
    /// have started within the box).
    pub(crate) ran: bool,
}

/// Records a run that measured a device in a time box (`m`): the part of
/// the items each device ran (as a co-executed run's, see
/// [`MIN_COVERAGE`]), the run as an exploration's cost where its time
/// measures it (`timed`; see [`crate::outcomes::Outcomes::charge`]), and
/// the box (one in which the device ran nothing as given but empty: see
/// [`crate::outcomes::Outcomes::measuring_box`]).
///
/// # Why no configuration's sample
/// Not even where the device ran every item, as it alone: it ran them for
/// the first time in the process, and a first run pays one-time costs (a
/// Black-Scholes step over 2^13 options took the CPU 0.96 ms in its box,
/// on lavapipe given a wave, and 0.09 from then on; recorded as the CPU
/// alone's sample, ten times the incumbent's, it ruled the CPU out: a
/// sample past [`crate::outcomes::OUTLIER`] is never measured again). The
/// device's cost, fitted from its packages, predicts it alone instead, and
/// the learner's next tries measure it (one predicted faster than the
/// incumbent costs nothing and runs at once).
fn record_measured(learned: &mut Learned, m: Measured, shares: &[Share], timed: bool) {
    record_coverage(&mut learned.coverage, shares, false);
    let o = &mut learned.outcomes;
    if timed {
        o.charge(m.seconds, m.units);
    }
    let box_s = if m.ran { m.measure.box_s } else { 0.0 };
    o.boxed(m.measure.slot, box_s, m.units);
}

/// The device of `present` to measure in this run (see [`Measure`]), with
/// its box: the CPU workers (the one device whose probe is held back, and
/// whose claimants do not wait for a box), beside another device, where
/// they either have no cost yet (no run measured them) or, measured in a
/// box before, still cover too little of the work to predict them alone
/// (`partial`), and `outcomes` affords a box (see
/// [`crate::outcomes::Outcomes::measuring_box`]). `class` as in
/// [`candidates`]. None where `COEXEC_MEASURE_BOX=0` (to measure what the
/// rule changes).
fn to_measure(
    outcomes: &crate::outcomes::Outcomes,
    (present, class, partial): (&[(usize, usize)], &[usize], &[bool]),
    est: &ThroughputEstimator,
    units: u64,
) -> Option<Measure> {
    if present.len() < 2 || !measure_box_on() {
        return None;
    }
    let i = present.iter().position(|&(slot, _)| slot == CPU_SLOT)?;
    let unmeasured = est.cost(CPU_SLOT).is_none()
        || (partial.get(i) == Some(&true) && outcomes.was_boxed(CPU_SLOT));
    if class_of(class, i) != i || !unmeasured {
        return None;
    }
    let box_s = outcomes.measuring_box(CPU_SLOT, units)?;
    Some(Measure {
        slot: CPU_SLOT,
        box_s,
    })
}

/// Whether the learner measures a device its runs never measured in a
/// time box (see [`Measure`]): yes unless `COEXEC_MEASURE_BOX=0`. Read
/// once per process.
fn measure_box_on() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    crate::switches::on_unless_zero(&ON, "COEXEC_MEASURE_BOX")
}

/// Each device of `present` (its estimator slot and claimants) as its
/// cost, if known, and its claimants: what the cost model's decisions
/// take.
fn costs(present: &[(usize, usize)], est: &dyn PowerEstimator) -> Vec<(Option<Cost>, usize)> {
    present
        .iter()
        .map(|&(slot, claimants)| (est.cost(slot), claimants))
        .collect()
}

/// A kernel's fitted costs as the learner predicts a configuration's run
/// from them (see [`crate::outcomes::Outcomes::choose`]): each staged
/// GPU's rate no faster than its downloads can carry its results home (one
/// unit per the seconds its outputs' bytes take, see
/// [`crate::sched::transfers`]).
///
/// # Why
/// A GPU's fitted cost is its compute: a package's time less its upload,
/// on the GPU's own clock where that is read. What a staged GPU's run
/// takes is often the download of its results: a Jacobi sweep over 8192
/// x 4096 points computed in 0.17 ms on an H200 and came home in 2.9. At
/// its compute alone the GPU alone was predicted at 0.3 ms, measured at
/// 3.0 against 2.2 co-executed, and tried again on that prediction (one
/// slow sample against a model that expects far better), a second lone
/// run of 3.0 ms in every process's first six runs (BENCHMARKS.md,
/// section 0, h200 run 39).
///
/// # Why the slower of the two, not their sum
/// A lone GPU with a transfer queue of its own downloads one package while
/// it computes the next, so its run takes about the longer of its compute
/// and its downloads. Their sum (as a co-executed run's plan counts a
/// package) put a Mandelbrot image of 4096^2 on the GPU alone at 5.7 ms
/// where it took 1.5, out of reach of the dominant device's try: the
/// learner co-executed at 2.1-2.9 ms for a whole process (run 39).
///
/// # Why not the model's choice
/// Counted in the gain that the fallback and the model's choice read, the
/// downloads made the learner co-execute GPU-heavy kernels for their
/// first runs where the GPU alone was faster (a histogram's GPU alone 0.46
/// ms, co-executed 0.49-0.61; Mandelbrot's second run 2.2-2.4 ms against
/// 1.8-2.1; run 39): a co-executed GPU's downloads overlap its compute
/// less than a lone one's, and the bandwidth learned from its packages'
/// batches was below the link's. The outcomes of measured runs decide
/// between the two; the prediction only keeps a lone GPU from being
/// retried on a figure it cannot reach.
struct Shipped<'a> {
    inner: &'a ThroughputEstimator,
    /// Estimator slot and download seconds per unit of each staged GPU.
    transfers: &'a [(usize, f64)],
}

impl PowerEstimator for Shipped<'_> {
    /// The learner only reads: a record goes to the fitted estimator.
    fn record(&self, device: usize, units: u64, seconds: f64) {
        self.inner.record(device, units, seconds);
    }
    fn power(&self, device: usize) -> Option<f64> {
        self.cost(device).map(|c| c.rate)
    }
    fn cost(&self, device: usize) -> Option<Cost> {
        let cost = self.inner.cost(device)?;
        // An unusable rate (none measured) stays one: transfers alone
        // would make it look measured.
        let carried = self
            .transfers
            .iter()
            .find(|t| t.0 == device && t.1.is_finite() && t.1 > 0.0)
            .map(|t| 1.0 / t.1);
        Some(match carried {
            Some(most) if cost.is_usable() => Cost {
                rate: cost.rate.min(most),
                ..cost
            },
            _ => cost,
        })
    }
    fn one_size(&self, device: usize) -> Option<u64> {
        self.inner.one_size(device)
    }
    fn irregularity(&self, device: usize) -> Option<f64> {
        self.inner.irregularity(device)
    }
}

/// Per device of a run, what makes its cost doubtful (see
/// [`Learning::sit_out`]).
#[derive(Clone, Copy)]
struct Doubts<'a> {
    /// Its rate was measured on too small a part of the work.
    partial: &'a [bool],
    /// It is known only by a provisional cost.
    provisional: &'a [bool],
    /// Its cost was measured only on packages far smaller than the run
    /// (see [`EXTRAPOLATION`]).
    extrapolated: &'a [bool],
}

#[cfg(test)]
impl Doubts<'_> {
    /// No doubt about any device.
    const NONE: Doubts<'static> = Doubts {
        partial: &[],
        provisional: &[],
        extrapolated: &[],
    };
}

/// The configurations the learner chooses among, for the devices of
/// `present` (each as its engine slot and its number of claimants; `class`:
/// per device, the index of the first of its class, see [`classes`]):
/// every device together, each alone, and with several GPUs beside the CPU
/// workers, the GPUs without them. A CPU far slower than the GPUs can only
/// end such a run late (its last package), and then neither every device
/// nor one GPU alone is the best (two H200s and the CPU on a Taylor
/// kernel: the learner kept one GPU, 7.0 ms, where the two took 4.4).
///
/// Of identical devices only the first runs alone: the others alone would
/// take the same time, and on four H200s trying each of them alone (each
/// run four times a run of the four) kept a Mandelbrot kernel's learner
/// on one of them.
fn candidates(present: &[(usize, usize)], class: &[usize]) -> Vec<Mode> {
    let mut c = vec![Mode::Together];
    c.extend(
        present
            .iter()
            .enumerate()
            .filter(|&(i, _)| class_of(class, i) == i)
            .map(|(_, &(slot, _))| Mode::Alone(slot)),
    );
    if present.len() >= 3 && present.iter().any(|&(slot, _)| slot == CPU_SLOT) {
        c.push(Mode::Without(CPU_SLOT));
    }
    c
}

/// What the cost model predicts per unit for configuration `m` of a run of
/// `units` (`None` where it cannot tell): a device alone, its time alone
/// with what it waits for first, at its class's rate (see
/// [`class_cost`]); several devices without one, the others' rates summed
/// (their best case). `present`, `start` and `partial` as in
/// [`Learning::decide`]: a device measured on too small a part of the work
/// predicts nothing; `class` as in [`candidates`].
fn predict(
    m: Mode,
    (present, start, partial): (&[(usize, usize)], &[StartCost], &[bool]),
    class: &[usize],
    est: &dyn PowerEstimator,
    units: u64,
) -> Option<f64> {
    match m {
        Mode::Alone(slot) => {
            let i = present.iter().position(|p| p.0 == slot)?;
            if partial.get(i).copied().unwrap_or(false) {
                return None;
            }
            let c = class_cost(i, present, class, est)?;
            let s = start.get(i).copied().unwrap_or_default();
            let t = alone_time(c, present[i].1, units) + s.all_s();
            Some(t / units.max(1) as f64)
        }
        Mode::Without(out) => {
            let mut rate = 0.0;
            for (i, &(slot, _)) in present.iter().enumerate() {
                if slot != out {
                    if partial.get(i).copied().unwrap_or(false) {
                        return None;
                    }
                    rate += est.cost(slot)?.rate;
                }
            }
            (rate > 0.0).then(|| 1.0 / rate)
        }
        Mode::Together => None,
    }
}

/// What a run of `units` in configuration `m` waits for before its
/// devices' first packages, in seconds (see [`StartCost`]): a device
/// alone, all it waits for; several devices, each one's wait weighted by
/// its share of the run, its part by items by that share again (as
/// [`crate::sched::co_gain`] counts them), shares from the devices' rates
/// (equal where a rate is unknown).
fn upfront_s(
    m: Mode,
    (present, start): (&[(usize, usize)], &[StartCost]),
    est: &dyn PowerEstimator,
    units: u64,
) -> f64 {
    let on: Vec<usize> = sits(present, m)
        .iter()
        .enumerate()
        .filter(|(_, s)| !**s)
        .map(|(i, _)| i)
        .collect();
    let start_of = |i: usize| start.get(i).copied().unwrap_or_default();
    if let [one] = on[..] {
        return start_of(one).all_s();
    }
    let g = units.max(1) as f64;
    let rate = |i: usize| {
        let (slot, claimants) = present[i];
        est.cost(slot)
            .filter(Cost::is_usable)
            .map(|c| c.rate * (g / claimants.max(1) as f64).min(1.0))
    };
    let rates: Option<Vec<f64>> = on.iter().map(|&i| rate(i)).collect();
    let shares: Vec<f64> = match rates {
        Some(r) if r.iter().sum::<f64>() > 0.0 => {
            let sum: f64 = r.iter().sum();
            r.iter().map(|x| x / sum).collect()
        }
        _ => vec![1.0 / on.len().max(1) as f64; on.len()],
    };
    on.iter()
        .zip(&shares)
        .map(|(&i, &share)| {
            let s = start_of(i);
            share * (s.fixed_s + share * s.by_share_s)
        })
        .sum()
}

/// Per slot of `devices` (each slot's description line: what a
/// measurement depends on), the first slot with the same line: identical
/// devices (the same GPU model and driver, as on a server of four H200s)
/// form a class, whose members the learner counts as one where that is
/// what they are.
fn classes(devices: &[String]) -> Vec<usize> {
    devices
        .iter()
        .map(|d| {
            devices
                .iter()
                .position(|o| o == d)
                .expect("a line is its own")
        })
        .collect()
}

/// Per device of `present`, the part of a co-executed run's items that its
/// class ran (the summed `coverage` of its members in `present`; `class` as
/// in [`candidates`]), `None` where no member's is known.
///
/// # Why
/// [`MIN_COVERAGE`] keeps a device's rate from standing for the whole
/// range when the device ran a small part of it. Identical devices that
/// ran a part each have, together, seen what they ran together: four
/// H200s each run about a quarter of a run, often under the bound, and
/// counted one by one, their predictions alone and without the CPU were
/// unknown on most runs, so the learner never tried the four GPUs without
/// the CPU (1.2 ms on a Mandelbrot kernel) and kept one alone (1.5-1.7).
fn class_coverage(
    coverage: &[Option<f64>],
    present: &[(usize, usize)],
    class: &[usize],
) -> Vec<Option<f64>> {
    let of = |i: usize| coverage.get(present[i].0).copied().flatten();
    (0..present.len())
        .map(|i| members(class, i).filter_map(of).reduce(|a, b| a + b))
        .collect()
}

/// Device `i`'s class in `class` (as in [`candidates`]; a device missing
/// from it is its own).
pub(crate) fn class_of(class: &[usize], i: usize) -> usize {
    class.get(i).copied().unwrap_or(i)
}

/// The devices (indices into `present`, `class` as in [`candidates`]) of
/// device `i`'s class, `i` among them.
pub(crate) fn members(class: &[usize], i: usize) -> impl Iterator<Item = usize> + '_ {
    let k = class_of(class, i);
    (0..class.len().max(i + 1)).filter(move |&j| class_of(class, j) == k)
}

/// The cost of device `i` of `present` as its class would run alone: its
/// own overhead, and the fastest rate among its class's members (see
/// [`classes`]). `None` where the device's cost is unknown.
///
/// # Why the fastest
/// Identical devices run at one rate; what sets their measured rates
/// apart is what each happened to pay in a co-executed run: the rows a
/// staged GPU uploaded for the items it took, a part of the range that
/// costs more than the rest. An error one way and the other is not of the
/// same price: a prediction too fast costs one run of the configuration,
/// which then stands at its measured time; one too slow can keep the
/// learner from ever trying it.
fn class_cost(
    i: usize,
    present: &[(usize, usize)],
    class: &[usize],
    est: &dyn PowerEstimator,
) -> Option<Cost> {
    let own = est.cost(present[i].0)?;
    let rate = members(class, i)
        .filter_map(|j| est.cost(present.get(j)?.0).filter(Cost::is_usable))
        .map(|c| c.rate)
        .fold(own.rate, f64::max);
    Some(Cost { rate, ..own })
}

/// Which devices of `present` sit a run in configuration `chosen` out.
fn sits(present: &[(usize, usize)], chosen: Mode) -> Vec<bool> {
    present
        .iter()
        .map(|&(slot, _)| match chosen {
            Mode::Together => false,
            Mode::Alone(one) => slot != one,
            Mode::Without(out) => slot == out,
        })
        .collect()
}

/// A lone claimant (a GPU) whose largest package measured is smaller than
/// `1 / EXTRAPOLATION` of a run is not left out of that run on its cost
/// (see [`Learning::sit_out`]): it co-executes, where the finish-time guard
/// bounds what it can take at that cost and what it runs measures it
/// again, until its cost rests on packages of the run's order.
///
/// # Why
/// A package's time is fitted as a fixed cost plus units over a rate,
/// and over a few packages of similar size the two cannot be told apart.
/// A GPU package on a power-law sparse matrix waits about 1 ms for its
/// densest rows whatever its size: measured on packages of about 50 units
/// in a kernel's first run (its first one waiting for the upload, the CPU
/// workers running the rest), an H200 read as 54 k units/s against 30
/// workers' 1.25 M, so the GPU alone, one package of 8192 units, was
/// predicted at 150 ms, and from the second run on the fallback left it
/// out: the CPU alone at 6.5-11 ms for the rest of the process, where the
/// GPU alone takes 1.55 (BENCHMARKS.md, section 0e, h200x2 run 10). A
/// prediction that far beyond the packages it rests on is an
/// extrapolation, and it errs towards the slow side exactly where a
/// per-package wait hides in the rate. Leaving a device out costs the
/// whole run if it is wrong; co-executing with it costs at most what the
/// guard lets it take at the cost it is believed to have. With the
/// dominant device's try (see [`crate::outcomes::DOMINANT`]), 4 of 6
/// processes found the GPU alone (h200x2 run 11).
pub(crate) const EXTRAPOLATION: u64 = 16;

/// The devices alone among `candidates` that ran at least
/// [`DOMINANT`] of the co-executed runs' items (`coverage`, by slot; see
/// [`record_coverage`]): each on its own, not with its class, since it
/// alone stands for the configuration.
fn dominant(coverage: &[Option<f64>], candidates: &[Mode]) -> Vec<Mode> {
    let carried = |slot: usize| {
        coverage
            .get(slot)
            .copied()
            .flatten()
            .is_some_and(|c| c >= DOMINANT)
    };
    candidates
        .iter()
        .copied()
        .filter(|&m| matches!(m, Mode::Alone(slot) if carried(slot)))
        .collect()
}

/// Per device of `present` (each as its estimator slot and claimants),
/// whether it is a lone claimant (a GPU) whose cost was measured only on
/// packages smaller than `1 / EXTRAPOLATION` of a run of `units`.
fn extrapolated(present: &[(usize, usize)], est: &ThroughputEstimator, units: u64) -> Vec<bool> {
    present
        .iter()
        .map(|&(slot, claimants)| {
            claimants == 1
                && est
                    .measured_up_to(slot)
                    .is_some_and(|n| n.saturating_mul(EXTRAPOLATION) < units)
        })
        .collect()
}

/// The part of a co-executed run's items below which a device's rate is
/// not taken to stand for the whole range: neither the learner's
/// prediction of that device alone nor the fallback to it uses it.
///
/// # Why
/// A device's rate is measured on the units it ran. Where the cost of a
/// unit varies over the index space (a fractal's interior, a sparse
/// matrix's dense rows), a device that ran a small part of a run, and
/// always the same part (the CPU takes its packages from the front of the
/// range; on an image that is its edge), can measure a rate tens of times
/// off what it delivers over all of it: a fractal's CPU, measured on the
/// cheap edge tiles it took, predicted itself 50 times faster alone than
/// it was. Trying it alone then costs a run many times the incumbent's.
/// A device that ran at least this part has seen enough of the work for
/// its rate to be extrapolated; one alone is still measured when the
/// measured runs say so.
pub(crate) const MIN_COVERAGE: f64 = 0.25;

/// Records what part of a co-executed run's items each device ran
/// (`coverage`, by estimator slot).
///
/// A kernel's first run (`first`) leaves the GPUs' coverage as it was: a
/// GPU's share of it is set by its one-time costs (a discrete GPU's first
/// package of a kernel can take milliseconds, while the CPU workers run
/// the rest), not by what part of the work its rate stands for.
///
/// A device that ran nothing keeps its coverage too: its rate is what it
/// was, measured on what its coverage says. Set to 0, it made the device's
/// rate stand for nothing, the model then predicted nothing for it alone,
/// and a device alone without a prediction is never tried (an H200 beside
/// 30 CPU workers, declined by the finish-time guard in one co-executed
/// histogram run: the CPU alone at 3.9 ms for the rest of the process,
/// where the GPU alone takes 0.53; BENCHMARKS.md, section 0e, run 10).
fn record_coverage(coverage: &mut Vec<Option<f64>>, shares: &[Share], first: bool) {
    let total: u64 = shares.iter().map(|s| s.items).sum();
    if total == 0 {
        return;
    }
    let recorded = |s: &&Share| s.items > 0 && (!first || s.slot == CPU_SLOT);
    for s in shares.iter().filter(recorded) {
        if coverage.len() <= s.slot {
            coverage.resize(s.slot + 1, None);
        }
        coverage[s.slot] = Some(s.items as f64 / total as f64);
    }
}

/// Per GPU slot, what its cold first package of the kernel cost beyond its
/// warm cost (never below 0), where this process measured both; a slot it
/// did not measure keeps what the profile said.
/// `lasting`: a slot's cost where it is worth keeping (not provisional).
fn cold_costs(learned: &Learned, lasting: impl Fn(usize) -> Option<Cost>) -> Vec<(usize, f64)> {
    let mut out: Vec<(usize, f64)> = learned
        .cold
        .iter()
        .filter_map(|&(slot, n, s)| {
            let warm = lasting(slot).filter(Cost::is_usable)?.time(n as f64);
            let extra = (s - warm).max(0.0);
            extra.is_finite().then_some((slot, extra))
        })
        .collect();
    for &(slot, t) in &learned.saved.cold {
        if !out.iter().any(|c| c.0 == slot) {
            out.push((slot, t));
        }
    }
    out
}

/// The ladder of estimator slot `slot` among `ladders`, made on first use.
fn ladder(
    ladders: &mut Vec<crate::depth::DepthLadder>,
    slot: usize,
) -> &mut crate::depth::DepthLadder {
    if ladders.len() <= slot {
        ladders.resize_with(slot + 1, Default::default);
    }
    &mut ladders[slot]
}

fn lock(kernel: &Kernel) -> MutexGuard<'_, Learned> {
    kernel.learned.lock().unwrap_or_else(|p| p.into_inner())
}

/// Whether a profile's figures moved enough since `saved` to be written
/// again: a cost by [`RESAVE`], a configuration's time by [`RESAVE`], or
/// something measured that was not.
fn moved(saved: &Profile, now: &Profile) -> bool {
    let costs = now.costs.iter().enumerate().any(|(slot, c)| {
        let before = saved.costs.get(slot).copied().flatten();
        match (before, c) {
            (Some(b), Some(c)) => differs(b.rate, c.rate) || differs_overhead(&b, c),
            (None, Some(_)) => true,
            _ => false,
        }
    });
    let by_mode = |saved: &[(Mode, f64)], now: &[(Mode, f64)]| {
        now.iter().any(|&(mode, t)| {
            saved
                .iter()
                .find(|(m, _)| *m == mode)
                .is_none_or(|&(_, b)| differs(b, t))
        })
    };
    let times = by_mode(&saved.times, &now.times);
    let split = now.split.iter().any(|&(slot, f)| {
        saved
            .split
            .iter()
            .find(|(s, _)| *s == slot)
            .is_none_or(|&(_, b)| differs(b, f))
    });
    let depth = now.depth.iter().any(|&(slot, n, t)| {
        saved
            .depth
            .iter()
            .find(|&&(s, m, _)| s == slot && m == n)
            .is_none_or(|&(_, _, b)| differs(b, t))
    });
    let first = by_mode(&saved.first, &now.first);
    let rates = now.rates.iter().any(|&(slot, up, down)| {
        saved
            .rates
            .iter()
            .find(|r| r.0 == slot)
            .is_none_or(|&(_, u, d)| differs(u, up) || differs(d, down))
    });
    let cold = now.cold.iter().any(|&(slot, t)| {
        saved
            .cold
            .iter()
            .find(|c| c.0 == slot)
            .is_none_or(|&(_, b)| (b - t).abs() > COLD_RESAVE_S.max(RESAVE * b.max(t)))
    });
    costs || times || split || depth || first || rates || cold
}

/// A GPU's cold cost is written again once it moved by this many seconds
/// (and by [`RESAVE`] of itself): one of nearly nothing moves by nearly
/// nothing.
const COLD_RESAVE_S: f64 = 1e-4;

fn differs(a: f64, b: f64) -> bool {
    (a - b).abs() > RESAVE * a.abs().max(b.abs())
}

/// Overheads are compared in the work they are worth (tiny overheads that
/// double matter no more than before).
fn differs_overhead(before: &Cost, now: &Cost) -> bool {
    let scale = before.overhead_units().max(now.overhead_units()).max(1.0);
    (before.overhead_units() - now.overhead_units()).abs() > RESAVE * scale
}

/// The shape class of a space: its dimensions and the power of two of its
/// unit count (throughput depends on size through caches and waves, so a
/// profile serves sizes within a factor of two).
pub(crate) fn shape_class(space: IndexSpace, units: u64) -> String {
    let dims = match space {
        IndexSpace::D1(_) => "d1",
        IndexSpace::D2 { .. } => "d2",
    };
    format!("{dims} units 2^{}", units.max(1).ilog2())
}

/// `COEXEC_PROFILE=off` (or `0`) turns profiles off for the process. Read
/// once per process.
fn profiles_on_in_env() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| {
        std::env::var("COEXEC_PROFILE").map_or(true, |v| !matches!(v.trim(), "off" | "0"))
    })
}

/// `COEXEC_FALLBACK=0` makes HGuided co-execute even where the learned
/// costs say one device alone is as fast (to measure what the fallback
/// changes). Read once per process.
fn fallback_on_in_env() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    crate::switches::on_unless_zero(&ON, "COEXEC_FALLBACK")
}

/// `COEXEC_POOL=0` sizes each device of a run by its own cost, also where
/// identical devices' costs would be pooled (to measure what pooling
/// changes). Read once per process.
fn pool_on_in_env() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    crate::switches::on_unless_zero(&ON, "COEXEC_POOL")
}

/// `COEXEC_SPLIT=0` plans co-executed runs from the learned costs alone,
/// without the correction from how earlier runs ended (to measure what it
/// changes). Read once per process.
fn split_on_in_env() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    crate::switches::on_unless_zero(&ON, "COEXEC_SPLIT")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Three devices of different kinds (each its own class).
    const DISTINCT: [usize; 3] = [0, 1, 2];

    fn learning() -> Learning {
        Learning {
            store: ProfileStore::new(None),
            devices: vec!["cpu".into(), "gpu".into()],
            classes: vec![0, 1],
            fallback: true,
        }
    }

    /// A GPU's cold start is its cold package's time beyond what its warm
    /// cost gives that package (never below 0), once the warm cost is
    /// known; a GPU this process did not measure keeps the profile's.
    #[test]
    fn a_cold_start_is_what_the_cold_package_took_beyond_its_warm_cost() {
        let warm = Cost {
            overhead_s: 1e-4,
            rate: 1e6,
        };
        let learned = Learned {
            // 1000 units: 1.1 ms warm; 3.1 ms cold. 100 units: 0.2 ms warm.
            cold: vec![(1, 1000, 3.1e-3), (2, 100, 0.1e-3)],
            saved: Profile {
                cold: vec![(1, 9.0), (3, 0.5)],
                ..Profile::default()
            },
            ..Learned::default()
        };
        let got = cold_costs(&learned, |slot| (slot != 4).then_some(warm));
        assert_eq!(got.len(), 3, "{got:?}");
        assert!((got[0].1 - 2e-3).abs() < 1e-12 && got[0].0 == 1, "{got:?}");
        assert_eq!(got[1], (2, 0.0));
        assert_eq!(got[2], (3, 0.5));
        // No warm cost yet: nothing measured, the profile's stands.
        let got = cold_costs(&learned, |_| None);
        assert_eq!(got, vec![(1, 9.0), (3, 0.5)]);
        // Moved by a tenth of a millisecond and a tenth of itself: saved.
        let with = |t| Profile {
            cold: vec![(1, t)],
            ..Profile::default()
        };
        assert!(!moved(&with(2e-3), &with(2.05e-3)));
        assert!(moved(&with(2e-3), &with(2.5e-3)));
        assert!(!moved(&with(0.0), &with(5e-5)));
        assert!(moved(&Profile::default(), &with(0.0)));
    }

    /// What a configuration waits for first: a device alone, all of its
    /// start; together, each device's start by its share of the rates, its
    /// part by items by that share again; equal shares where a rate is
    /// unknown.
    #[test]
    fn a_configuration_waits_for_its_devices_starts_by_their_shares() {
        let est = ThroughputEstimator::new(2);
        let present = [(0, 1), (1, 1)];
        let start = [
            StartCost::default(),
            StartCost {
                fixed_s: 1.0,
                by_share_s: 4.0,
            },
        ];
        let up = |m: Mode| upfront_s(m, (&present, &start), &est, 1000);
        assert_eq!(up(Mode::Alone(0)), 0.0);
        assert_eq!(up(Mode::Alone(1)), 5.0);
        // Unknown rates: halves, 0.5 * (1 + 0.5 * 4).
        assert_eq!(up(Mode::Together), 1.5);
        // The GPU three times the CPU: 0.75 * (1 + 0.75 * 4).
        est.seed(0, Cost::rate_only(1e6), 4.0);
        est.seed(1, Cost::rate_only(3e6), 4.0);
        assert!(
            (up(Mode::Together) - 3.0).abs() < 1e-9,
            "{}",
            up(Mode::Together)
        );
        // Missing entries wait for nothing.
        assert_eq!(upfront_s(Mode::Alone(1), (&present, &[]), &est, 1000), 0.0);
    }

    /// The CPU is measured in a box where it has no cost yet, or was
    /// boxed before and still covers too little of the run; never where
    /// it is not in the run. The box's run is no sample of the CPU alone.
    #[test]
    fn a_cpu_without_a_cost_is_measured_in_a_box() {
        let est = ThroughputEstimator::new(2);
        let present = [(0, 4), (1, 1)];
        let classes = [0, 1];
        let mut learned = Learned::default();
        learned.outcomes.record(Mode::Alone(1), 1e-3, 1000);
        let measure = |l: &Learned, partial: &[bool]| {
            to_measure(&l.outcomes, (&present, &classes, partial), &est, 1000)
        };
        let m = measure(&learned, &[false, false]).expect("a box");
        assert_eq!(m.slot, CPU_SLOT);
        assert!(m.box_s >= 0.25e-3 && m.box_s <= 1e-3, "{m:?}");
        // Not without the CPU in the run.
        let gpu_only = to_measure(
            &learned.outcomes,
            (&present[1..], &[0], &[false]),
            &est,
            1000,
        );
        assert_eq!(gpu_only, None);
        // The box ran: charged (1.5 ms against 1), no sample of the CPU
        // alone, the CPU's part of the items recorded.
        let shares = [
            Share {
                slot: 0,
                items: 300,
                start_s: 0.0,
                finish_s: 1.4e-3,
            },
            Share {
                slot: 1,
                items: 700,
                start_s: m.box_s,
                finish_s: 1.5e-3,
            },
        ];
        let ran = Measured {
            measure: m,
            seconds: 1.5e-3,
            units: 1000,
            ran: true,
        };
        record_measured(&mut learned, ran, &shares, true);
        assert_eq!(learned.outcomes.per_unit_s(Mode::Alone(0)), None);
        assert!(learned.outcomes.was_boxed(CPU_SLOT));
        assert_eq!(learned.coverage[0], Some(0.3));
        // Measured now, covering enough of the run: no box.
        est.record(0, 10, 1e-4);
        est.record(0, 30, 3e-4);
        assert_eq!(measure(&learned, &[false, false]), None);
        // Covering too little after a box: another, once the budget
        // affords twice the last.
        let partial = [true, false];
        assert_eq!(measure(&learned, &partial), None);
        for _ in 0..200 {
            learned.outcomes.record(Mode::Alone(1), 1e-3, 1000);
        }
        let again = measure(&learned, &partial).expect("a second box");
        assert!(again.box_s >= 2.0 * m.box_s, "{again:?} after {m:?}");
    }

    #[test]
    fn zero_powers_sit_out_but_never_all() {
        let l = learning();
        let est = ThroughputEstimator::new(2);
        let st = |p: Vec<f64>| Scheduler::Static { powers: Some(p) };
        assert_eq!(
            l.sit_out(
                &st(vec![1.0, 0.0]),
                &[(0, 1), (1, 1)],
                &[],
                &est,
                100,
                Doubts::NONE
            ),
            [false, true]
        );
        assert_eq!(
            l.sit_out(
                &st(vec![0.0, 2.0]),
                &[(0, 1), (1, 1)],
                &[],
                &est,
                100,
                Doubts::NONE
            ),
            [true, false]
        );
        assert_eq!(
            l.sit_out(
                &st(vec![1.0, 2.0]),
                &[(0, 1), (1, 1)],
                &[],
                &est,
                100,
                Doubts::NONE
            ),
            [false, false]
        );
        let hg = Scheduler::HGuided {
            powers: Some(vec![0.0, 1.0]),
            k: 2.0,
            min_package: 1,
        };
        assert_eq!(
            l.sit_out(&hg, &[(0, 1), (1, 1)], &[], &est, 100, Doubts::NONE),
            [true, false]
        );
        // One device: nothing to decide.
        assert_eq!(
            l.sit_out(&st(vec![0.0]), &[(1, 1)], &[], &est, 100, Doubts::NONE),
            [false]
        );
    }

    /// Each device's part of a co-executed run's items, by slot.
    #[test]
    fn coverage_is_each_devices_part_of_the_items() {
        let share = |slot, items| Share {
            slot,
            items,
            start_s: 0.0,
            finish_s: 1.0,
        };
        let mut c = Vec::new();
        record_coverage(&mut c, &[share(0, 10), share(2, 30)], false);
        assert_eq!(c, vec![Some(0.25), None, Some(0.75)]);
        record_coverage(&mut c, &[], false);
        assert_eq!(c, vec![Some(0.25), None, Some(0.75)], "nothing ran: kept");
        // A kernel's first run: the CPU's part only.
        let mut f = Vec::new();
        record_coverage(&mut f, &[share(0, 99), share(1, 1)], true);
        assert_eq!(f, vec![Some(0.99)]);
        record_coverage(&mut c, &[share(0, 99), share(2, 1)], true);
        assert_eq!(c, vec![Some(0.99), None, Some(0.75)]);
        // A device that ran nothing keeps what its rate was measured on;
        // one that never ran stays unknown.
        record_coverage(&mut c, &[share(0, 40), share(2, 0)], false);
        assert_eq!(c, vec![Some(1.0), None, Some(0.75)]);
        record_coverage(&mut f, &[share(0, 40), share(1, 0)], false);
        assert_eq!(f, vec![Some(1.0)]);
    }

    #[test]
    fn hguided_without_hints_falls_back_only_when_it_knows() {
        let l = learning();
        let est = ThroughputEstimator::new(2);
        let hg = Scheduler::hguided();
        // Nothing known: co-execute (and measure).
        assert_eq!(
            l.sit_out(&hg, &[(0, 1), (1, 1)], &[], &est, 1 << 20, Doubts::NONE),
            [false, false]
        );
        // A GPU 100x faster: the GPU alone.
        est.seed(0, Cost::rate_only(1e6), 4.0);
        est.seed(1, Cost::rate_only(1e8), 4.0);
        assert_eq!(
            l.sit_out(&hg, &[(0, 1), (1, 1)], &[], &est, 1 << 20, Doubts::NONE),
            [true, false]
        );
        // Comparable: co-execute.
        est.reset();
        est.seed(0, Cost::rate_only(5e7), 4.0);
        est.seed(1, Cost::rate_only(1e8), 4.0);
        assert_eq!(
            l.sit_out(&hg, &[(0, 1), (1, 1)], &[], &est, 1 << 20, Doubts::NONE),
            [false, false]
        );
        // Comparable, but the CPU must first bring back 20 ms of what the
        // GPU left in its mirrors (lazy coherence): the GPU alone (10 ms).
        let sync = StartCost {
            fixed_s: 20e-3,
            by_share_s: 0.0,
        };
        assert_eq!(
            l.sit_out(&hg, &[(0, 1), (1, 1)], &[sync], &est, 1 << 20, Doubts::NONE),
            [true, false]
        );
        // A CPU measured 100x faster, but on a small part of the work:
        // never left alone on that measurement.
        est.reset();
        est.seed(0, Cost::rate_only(1e10), 4.0);
        est.seed(1, Cost::rate_only(1e8), 4.0);
        assert_eq!(
            l.sit_out(&hg, &[(0, 1), (1, 1)], &[], &est, 1 << 20, Doubts::NONE),
            [false, true]
        );
        assert_eq!(
            l.sit_out(
                &hg,
                &[(0, 1), (1, 1)],
                &[],
                &est,
                1 << 20,
                Doubts {
                    partial: &[true, false],
                    ..Doubts::NONE
                }
            ),
            [false, false]
        );
        // A GPU known only provisionally (its cold package's execution
        // time): it may run alone, never sit out.
        est.reset();
        est.seed(0, Cost::rate_only(1e6), 4.0);
        est.record_cold(1, 100, 50e-3, 1.0);
        est.record_cold_device(1, 100, 1e-6);
        est.settle();
        assert!(est.is_provisional(1));
        let prov = Doubts {
            provisional: &[false, true],
            ..Doubts::NONE
        };
        assert_eq!(
            l.sit_out(&hg, &[(0, 1), (1, 1)], &[], &est, 1 << 20, prov),
            [true, false]
        );
        // Its first dispatch paid one-time costs, and it looks 100x
        // slower than the CPU: co-execute (and measure it), not the CPU
        // alone.
        est.reset();
        est.seed(0, Cost::rate_only(1e8), 4.0);
        est.record_cold(1, 100, 50e-3, 1.0);
        est.record_cold_device(1, 100, 1e-4);
        est.settle();
        assert_eq!(
            l.sit_out(&hg, &[(0, 1), (1, 1)], &[], &est, 1 << 20, Doubts::NONE),
            [false, true],
            "as a warm cost, the CPU alone"
        );
        assert_eq!(
            l.sit_out(&hg, &[(0, 1), (1, 1)], &[], &est, 1 << 20, prov),
            [false, false]
        );
        // Hints or another scheduler: no fallback.
        let dynamic = Scheduler::Dynamic { packages: 8 };
        est.seed(0, Cost::rate_only(1.0), 100.0);
        assert_eq!(
            l.sit_out(
                &dynamic,
                &[(0, 1), (1, 1)],
                &[],
                &est,
                1 << 20,
                Doubts::NONE
            ),
            [false, false]
        );
        // Off for measurement.
        let off = Learning {
            fallback: false,
            ..learning()
        };
        assert_eq!(
            off.sit_out(&hg, &[(0, 1), (1, 1)], &[], &est, 1 << 20, Doubts::NONE),
            [false, false]
        );
    }

    /// A staged GPU alone is predicted no faster than its downloads carry
    /// its results: a GPU that computes 100 times faster than the CPU but
    /// ships each unit in 1.5 us is predicted at 1.5 us a unit, not 0.01;
    /// a GPU whose compute is the slower keeps its rate; the CPU ships
    /// nothing; an unmeasured cost stays unmeasured.
    #[test]
    fn a_staged_gpu_alone_is_predicted_with_its_downloads() {
        let est = ThroughputEstimator::new(2);
        let present = [(0, 1), (1, 1)];
        let units = 1 << 20;
        est.seed(0, Cost::rate_only(1e6), 4.0);
        let transfers = [(1, 1.5e-6)];
        let shipped = Shipped {
            inner: &est,
            transfers: &transfers,
        };
        assert!(shipped.cost(1).is_none_or(|c| !c.is_usable()));
        est.seed(1, Cost::rate_only(1e8), 4.0);
        let gpu = shipped.cost(1).expect("seeded");
        assert!((gpu.rate - 1.0 / 1.5e-6).abs() < 1e-6, "{gpu:?}");
        assert_eq!(shipped.power(1), Some(gpu.rate));
        assert_eq!(shipped.cost(0), est.cost(0), "the CPU ships nothing");
        let alone = |e: &dyn PowerEstimator, m: Mode| {
            predict(m, (&present, &[], &[]), &DISTINCT, e, units).expect("known")
        };
        assert!((alone(&est, Mode::Alone(1)) - 1e-8).abs() < 1e-12);
        assert!((alone(&shipped, Mode::Alone(1)) - 1.5e-6).abs() < 1e-12);
        assert_eq!(alone(&shipped, Mode::Alone(0)), alone(&est, Mode::Alone(0)));
        // Compute slower than the downloads: its own rate.
        est.reset();
        est.seed(0, Cost::rate_only(1e6), 4.0);
        est.seed(1, Cost::rate_only(5e5), 4.0);
        assert_eq!(shipped.cost(1), est.cost(1));
    }

    /// The devices alone that ran at least half of the co-executed runs'
    /// items, each on its own.
    #[test]
    fn a_device_that_ran_most_of_the_items_dominates() {
        let cands = [
            Mode::Together,
            Mode::Alone(0),
            Mode::Alone(1),
            Mode::Alone(2),
        ];
        let cov = [Some(0.3), Some(0.65), None];
        assert_eq!(dominant(&cov, &cands), [Mode::Alone(1)]);
        assert_eq!(
            dominant(&[Some(0.5), Some(0.5)], &cands),
            [Mode::Alone(0), Mode::Alone(1)]
        );
        assert!(dominant(&[], &cands).is_empty());
        assert!(dominant(&cov, &[Mode::Together]).is_empty());
    }

    /// A GPU whose packages all waited about 1 ms whatever their size (a
    /// power-law sparse matrix's densest rows) reads as 50 k units/s
    /// against 30 workers' 1.25 M: the model would leave it out. Measured
    /// on packages far smaller than the run, it is not left out on that
    /// cost; measured on packages of the run's order, or known from a
    /// profile, it is.
    #[test]
    fn a_gpu_measured_on_small_packages_is_not_left_out() {
        let l = learning();
        let hg = Scheduler::hguided();
        let present = [(0, 30), (1, 1)];
        let units = 8192;
        let est = ThroughputEstimator::new(2);
        est.record_throughput(0, 1250, 1e-3, 30.0);
        for n in [40, 60, 50, 45] {
            est.record(1, n, 1e-3);
        }
        est.settle();
        fn doubts(e: &[bool]) -> Doubts<'_> {
            Doubts {
                extrapolated: e,
                ..Doubts::NONE
            }
        }
        let ex = extrapolated(&present, &est, units);
        assert_eq!(ex, [false, true], "the workers' chunks are not packages");
        assert_eq!(
            l.sit_out(&hg, &present, &[], &est, units, Doubts::NONE),
            [false, true],
            "on its cost alone, the CPU alone"
        );
        assert_eq!(
            l.sit_out(&hg, &present, &[], &est, units, doubts(&ex)),
            [false, false]
        );
        // A smaller run is of its packages' order.
        assert_eq!(extrapolated(&present, &est, 16 * 60), [false, false]);
        // Measured on a package of a sixteenth of the run: left out.
        est.record(1, 512, 10e-3);
        let ex = extrapolated(&present, &est, units);
        assert_eq!(ex, [false, false]);
        assert_eq!(
            l.sit_out(&hg, &present, &[], &est, units, doubts(&ex)),
            [false, true]
        );
        // Known from a profile: its cost stands.
        est.reset();
        est.record_throughput(0, 1250, 1e-3, 30.0);
        est.seed(1, Cost::rate_only(50e3), 4.0);
        assert_eq!(extrapolated(&present, &est, units), [false, false]);
    }

    /// With two GPUs beside the CPU the learner also weighs the GPUs
    /// without the CPU, predicted at their rates summed, and tries them
    /// once the co-executed runs measure slower than that.
    #[test]
    fn several_gpus_without_the_cpu_are_a_configuration() {
        let two = [(0, 15), (1, 1)];
        assert_eq!(
            candidates(&two, &[0, 1]),
            [Mode::Together, Mode::Alone(0), Mode::Alone(1)]
        );
        let three = [(0, 15), (1, 1), (2, 1)];
        let c = candidates(&three, &DISTINCT);
        assert_eq!(c.len(), 5);
        assert!(c.contains(&Mode::Without(0)));
        // Two GPUs without a CPU: no such configuration (each alone is).
        assert!(!candidates(&[(1, 1), (2, 1)], &[0, 1]).contains(&Mode::Without(0)));
        assert_eq!(sits(&three, Mode::Without(0)), [true, false, false]);
        assert_eq!(sits(&three, Mode::Alone(2)), [true, true, false]);
        assert_eq!(sits(&three, Mode::Together), [false, false, false]);

        let est = ThroughputEstimator::new(3);
        let none = [false; 3];
        let p = |m, partial: &[bool]| predict(m, (&three, &[], partial), &DISTINCT, &est, 1 << 20);
        assert_eq!(p(Mode::Without(0), &none), None);
        est.seed(0, Cost::rate_only(5e6), 4.0);
        est.seed(1, Cost::rate_only(1e8), 4.0);
        assert_eq!(p(Mode::Without(0), &none), None); // GPU 2 unmeasured
        est.seed(2, Cost::rate_only(3e8), 4.0);
        let w = p(Mode::Without(0), &none).unwrap();
        assert!((w - 1.0 / 4e8).abs() < 1e-15, "{w}");
        assert_eq!(p(Mode::Without(0), &[false, true, false]), None);
        assert_eq!(p(Mode::Together, &none), None);
        let alone = p(Mode::Alone(2), &none).unwrap();
        assert!((alone - 1.0 / 3e8).abs() < 1e-15, "{alone}");

        // The co-executed runs measured at 5 ns per unit; the GPUs without
        // the CPU predicted at 2.5: tried next.
        let mut o = crate::outcomes::Outcomes::default();
        o.record(Mode::Together, 5e-9 * 1e6, 1_000_000);
        o.record(Mode::Together, 5e-9 * 1e6, 1_000_000);
        let guess = |m: Mode| predict(m, (&three, &[], &none), &DISTINCT, &est, 1_000_000);
        assert_eq!(
            o.choose(&c, (Mode::Together, None), &guess, (1_000_000, &[])),
            Mode::Without(0)
        );
    }

    /// Identical devices (the same description line) form a class: its
    /// first member alone stands for it among the candidates, their
    /// coverage is summed, and its rate alone is its fastest member's.
    #[test]
    fn identical_devices_are_one_class() {
        let lines: Vec<String> = ["cpu", "gpu a", "gpu a", "gpu b", "gpu a"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(classes(&lines), [0, 1, 1, 3, 1]);
        let l = Learning {
            classes: classes(&lines),
            devices: lines,
            ..learning()
        };
        // The run's devices in another order, one GPU absent.
        let present = [(4, 1), (0, 8), (2, 1), (3, 1)];
        let class = l.present_classes(&present);
        assert_eq!(class, [0, 1, 0, 3]);
        // A run's devices by their slots: the same classes, for pooling.
        assert_eq!(l.run_classes(&[4, 0, 2, 3]), [0, 1, 0, 3]);
        assert_eq!(l.run_classes(&[0, 1, 2, 3, 4]), [0, 1, 1, 3, 1]);
        assert_eq!(
            candidates(&present, &class),
            [
                Mode::Together,
                Mode::Alone(4),
                Mode::Alone(0),
                Mode::Alone(3),
                Mode::Without(0)
            ]
        );
        // Coverage by slot: 4 and 2 together ran 40%, 3 ran 10% alone.
        let coverage = [Some(0.5), None, Some(0.2), Some(0.1), Some(0.2)];
        let c = class_coverage(&coverage, &present, &class);
        let close = |a: Option<f64>, b: f64| a.is_some_and(|a| (a - b).abs() < 1e-12);
        assert!(close(c[0], 0.4) && close(c[2], 0.4), "{c:?}");
        assert!(close(c[1], 0.5) && close(c[3], 0.1), "{c:?}");
        assert_eq!(class_coverage(&[], &present, &class), [None; 4]);

        let est = ThroughputEstimator::new(5);
        assert!(class_cost(0, &present, &class, &est).is_none());
        est.seed(4, Cost::rate_only(1e8), 4.0);
        // One member measured: its own cost.
        let one = class_cost(0, &present, &class, &est).unwrap();
        assert!((one.rate - 1e8).abs() < 1.0, "{one:?}");
        est.seed(
            2,
            Cost {
                overhead_s: 1e-4,
                rate: 3e8,
            },
            4.0,
        );
        // Two: the faster rate, each with its own overhead.
        let a = class_cost(0, &present, &class, &est).unwrap();
        let b = class_cost(2, &present, &class, &est).unwrap();
        assert!((a.rate - 3e8).abs() < 1.0 && (b.rate - 3e8).abs() < 1.0);
        assert!(a.overhead_s.abs() < 1e-12 && (b.overhead_s - 1e-4).abs() < 1e-12);
        // Another class is not counted.
        est.seed(3, Cost::rate_only(1e6), 4.0);
        let c3 = class_cost(3, &present, &class, &est).unwrap();
        assert!((c3.rate - 1e6).abs() < 1e-3);
    }

    /// Four identical GPUs beside the CPU, each of which ran under
    /// `MIN_COVERAGE` of the co-executed runs: as a class they saw most
    /// of it, so the GPUs without the CPU are predicted, and tried once
    /// the co-executed runs measured slower than that (counted one by one,
    /// each GPU's part was too small and nothing was predicted).
    #[test]
    fn four_identical_gpus_are_tried_without_the_cpu() {
        let present = [(0, 63), (1, 1), (2, 1), (3, 1), (4, 1)];
        let class = [0, 1, 1, 1, 1];
        let coverage = [Some(0.2), Some(0.22), Some(0.18), Some(0.2), Some(0.2)];
        let est = ThroughputEstimator::new(5);
        est.seed(0, Cost::rate_only(1e7), 4.0);
        for g in 1..5 {
            est.seed(g, Cost::rate_only(1e8), 4.0);
        }
        let units = 1_000_000;
        let partial = |cov: &[Option<f64>]| -> Vec<bool> {
            cov.iter()
                .map(|c| c.is_some_and(|c| c < MIN_COVERAGE))
                .collect()
        };
        let each = partial(&coverage);
        let by_class = partial(&class_coverage(&coverage, &present, &class));
        assert_eq!(by_class, [true, false, false, false, false]);
        let without = |partial: &[bool]| {
            predict(
                Mode::Without(0),
                (&present, &[], partial),
                &class,
                &est,
                units,
            )
        };
        assert_eq!(without(&each), None, "one by one: unknown");
        let w = without(&by_class).unwrap();
        assert!((w - 1.0 / 4e8).abs() < 1e-15, "{w}");

        // The co-executed runs took 5 ns a unit; four GPUs are predicted
        // at 2.5: they run next.
        let mut o = crate::outcomes::Outcomes::default();
        o.record(Mode::Together, 5e-9 * 1e6, units);
        o.record(Mode::Together, 5e-9 * 1e6, units);
        let c = candidates(&present, &class);
        assert_eq!(c.len(), 4, "{c:?}");
        let guess = |m: Mode| predict(m, (&present, &[], &by_class), &class, &est, units);
        assert_eq!(
            o.choose(&c, (Mode::Together, None), &guess, (units, &[])),
            Mode::Without(0)
        );
    }

    /// Beside two GPUs, CPU workers the model puts at a few percent of the
    /// run are left out (the model's configuration is then the GPUs
    /// without the CPU); worth a tenth, or with a GPU's cost in doubt,
    /// they take part; beside one GPU only the single-device fallback
    /// decides.
    #[test]
    fn a_cpu_that_adds_little_beside_two_gpus_sits_out() {
        let l = learning();
        let hg = Scheduler::hguided();
        let three = [(0, 15), (1, 1), (2, 1)];
        let est = ThroughputEstimator::new(3);
        est.seed(0, Cost::rate_only(4e6), 4.0);
        est.seed(1, Cost::rate_only(1e8), 4.0);
        est.seed(2, Cost::rate_only(1e8), 4.0);
        let units = 1 << 24;
        assert_eq!(
            l.sit_out(&hg, &three, &[], &est, units, Doubts::NONE),
            [true, false, false]
        );
        let doubt = [false, false, true];
        let doubted = Doubts {
            extrapolated: &doubt,
            ..Doubts::NONE
        };
        assert_eq!(
            l.sit_out(&hg, &three, &[], &est, units, doubted),
            [false; 3],
            "a GPU's cost in doubt"
        );
        // Hinted powers decide for themselves.
        let hinted = Scheduler::HGuided {
            powers: Some(vec![1.0, 1.0, 1.0]),
            k: crate::sched::DEFAULT_K,
            min_package: 1,
        };
        assert_eq!(
            l.sit_out(&hinted, &three, &[], &est, units, Doubts::NONE),
            [false; 3]
        );
        // Beside one GPU: the CPU at 4% of it, co-executing gains under
        // 5%, the GPU alone (the single-device fallback, as ever).
        let two = [(0, 15), (1, 1)];
        assert_eq!(
            l.sit_out(&hg, &two, &[], &est, units, Doubts::NONE),
            [true, false]
        );
        // Worth a tenth of the GPUs: it takes part.
        est.seed(0, Cost::rate_only(2e7), 100.0);
        assert_eq!(
            l.sit_out(&hg, &three, &[], &est, units, Doubts::NONE),
            [false; 3]
        );
    }

    /// With several GPUs (slots `1 + g`), the fallback picks the one device
    /// that runs alone among all of them, and the learner's candidates are
    /// co-execution and each device alone.
    #[test]
    fn many_gpus_fall_back_to_the_fastest_one() {
        let l = learning();
        let est = ThroughputEstimator::new(4);
        let present = [(0, 2), (1, 1), (2, 1), (3, 1)];
        let hg = Scheduler::hguided();
        assert_eq!(
            l.sit_out(&hg, &present, &[], &est, 1 << 20, Doubts::NONE),
            [false; 4]
        );
        est.seed(0, Cost::rate_only(1e6), 4.0);
        est.seed(1, Cost::rate_only(1e6), 4.0);
        est.seed(2, Cost::rate_only(1e9), 4.0);
        est.seed(3, Cost::rate_only(1e6), 4.0);
        assert_eq!(
            l.sit_out(&hg, &present, &[], &est, 1 << 20, Doubts::NONE),
            [true, true, false, true]
        );
        // Comparable GPUs: every device takes part.
        for s in 1..4 {
            est.seed(s, Cost::rate_only(1e8), 100.0);
        }
        est.seed(0, Cost::rate_only(5e7), 100.0);
        assert_eq!(
            l.sit_out(&hg, &present, &[], &est, 1 << 20, Doubts::NONE),
            [false; 4]
        );
        // Hints over four devices: zeros sit out.
        let st = Scheduler::Static {
            powers: Some(vec![0.0, 1.0, 0.0, 1.0]),
        };
        assert_eq!(
            l.sit_out(&st, &present, &[], &est, 100, Doubts::NONE),
            [true, false, true, false]
        );
    }

    #[test]
    fn shape_classes() {
        assert_eq!(shape_class(IndexSpace::D1(1000), 16), "d1 units 2^4");
        assert_eq!(shape_class(IndexSpace::D1(1000), 31), "d1 units 2^4");
        assert_eq!(shape_class(IndexSpace::D1(1000), 0), "d1 units 2^0");
        let d2 = IndexSpace::D2 {
            width: 64,
            height: 64,
        };
        assert_eq!(shape_class(d2, 64), "d2 units 2^6");
    }
}
