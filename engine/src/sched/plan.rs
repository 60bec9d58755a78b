//! Per-run plan: package sizes for each claimant.

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::ops::Range;

use super::estimator::{usable_power, PowerEstimator};
use super::model::{Cost, DISTINCT, IRREGULAR};
use super::queue::{Source, WorkQueue};
use super::scheduler::{check_powers, DeviceKind, DeviceSlot, SchedError, Scheduler};

/// HGuided without power hints: the first fresh package of a claimant whose
/// device has no measurement yet is a *probe* of `min_package` units, so the
/// first measurement arrives quickly and an unmeasured slow device cannot take
/// a large package on the guess that it is as fast as the others (on a GPU
/// with 16 CPU cores, devices differ by 10-200x). The engine's estimator then
/// sizes every later package.
pub const PROBE_PACKAGES: u64 = 1;

/// A device's probe is one granule only where the run holds at least this
/// many granules; in smaller runs it is `min_package` units.
pub const PROBE_SHARE: u64 = 8;

/// Safety margin of HGuided's finish-time guard (see `Plan::declines`): a
/// slower claimant declines fresh work whose package would take more than
/// this fraction of the time the other devices need for all that is left.
pub const GUARD_MARGIN: f64 = 0.5;

/// The largest fraction of a fresh HGuided package's time its fixed
/// overhead may take, where the device's overhead is measured (see
/// `Plan::efficiency_floor`): packages are at least four times the work
/// the overhead is worth.
pub const MAX_OVERHEAD: f64 = 0.2;

/// The part of its even-finish share a device's overhead floor may take:
/// a device whose packages must be large (a GPU on an irregular kernel)
/// takes its share a little short, so that the devices that split finely
/// finish the rest, rather than the large package finishing last when the
/// costs were a little off.
pub const FAIR_SHARE: f64 = 0.9;

/// Relative tolerance for snapping a computed size onto an integer before
/// `ceil`/`floor`, so that float noise (e.g. `29.000000000000004`) does not
/// add a unit. Far above f64 rounding error (~1e-16), far below one unit for
/// any realistic `total`.
const SNAP: f64 = 1e-14;

/// Claims in a row that a claimant may find nothing to take while fresh
/// work is left and nothing is in flight, before it takes a package
/// whatever its guards say (see [`Plan::claim`]). An idle claimant asks
/// again after a spin, a yield, then a 50 us sleep: 1000 asks are some
/// 40-80 ms of a run in which no device works.
pub(super) const STALL_CLAIMS: u32 = 1000;

/// The least upload time a staged GPU's package is cut to by the
/// geometric tail (see `Plan::pipelined`): about four of a GPU's
/// submission round trips (41-53 us on the H200), so that the packages
/// the tail adds pay for their fixed cost in what they overlap.
const PIPELINE_FLOOR: std::time::Duration = std::time::Duration::from_micros(200);

fn snap(x: f64) -> f64 {
    let r = x.round();
    if (x - r).abs() <= SNAP * r.abs().max(1.0) {
        r
    } else {
        x
    }
}

/// `ceil(x)` as u64 after snapping; negative/NaN give 0, huge saturate.
fn ceil_u64(x: f64) -> u64 {
    snap(x).ceil() as u64
}

/// `floor(x)` as u64 after snapping; negative/NaN give 0, huge saturate.
fn floor_u64(x: f64) -> u64 {
    snap(x).floor() as u64
}

/// A measurement the policies accept (see [`usable_power`]).
fn measured(est: &dyn PowerEstimator, device: usize) -> Option<f64> {
    usable_power(est.power(device))
}

#[derive(Debug, Clone)]
enum Policy {
    Static {
        /// `shares[device][claimant]`, summing to `total`.
        shares: Vec<Vec<u64>>,
    },
    Dynamic {
        chunk: u64,
    },
    HGuided {
        /// Hint powers and their sum; `None`: measured live.
        hints: Option<(Vec<f64>, f64)>,
        k: f64,
        min_package: u64,
    },
}

/// Per-run plan: turns a Scheduler + devices + current power estimates into
/// package sizes for each claimant.
///
/// Immutable once built (share it by reference between claimants). Sizes for
/// fresh work come from [`package_size`](Self::package_size), sizes for
/// requeued work from [`requeued_size`](Self::requeued_size); the usual entry
/// point, [`claim`](Self::claim), uses both and records the claim.
///
/// # Power resolution
/// * `powers: Some(hints)`: the hints.
/// * `Static` without hints: the estimator's measurements at `new` if every
///   device has one (a later run of the same kernel), else equal power.
/// * `HGuided` without hints: measured *live* at every
///   [`package_size`](Self::package_size) call. Devices without a
///   measurement count as having the mean power of the measured ones (all
///   equal when none is measured), and the first fresh package of each
///   claimant of an unmeasured device is a probe of `min_package` units
///   (see [`PROBE_PACKAGES`]).
#[derive(Debug, Clone)]
pub struct Plan {
    policy: Policy,
    total: u64,
    /// Claimants per device.
    claimants: Vec<usize>,
    /// Power fraction of one claimant of each device (plan-time powers).
    claimant_share: Vec<f64>,
    /// Package granule of each device (HGuided rounds up to it), `>= 1`.
    granule: Vec<u64>,
    /// Whether each device's claimants run one unit at a time (the CPU's
    /// workers; see `Plan::holds_back`).
    narrow: Vec<bool>,
    /// The units the run's GPUs of a known width hold in one wave between
    /// them (0 where none has one).
    wide_wave: u64,
    /// Whether an unmeasured device may hold its probe back (see
    /// `Plan::holds_back`): not in a run that measures it (see
    /// [`Plan::measuring`]).
    hold_back: bool,
    /// The devices whose claimant declined its last claim for a one-time
    /// start (see [`LateStarts`]).
    late: LateStarts,
    /// The units each GPU holds in flight (see [`Held`]).
    held: Held,
}

/// Per device, the units a GPU's dispatch loop holds claimed and not yet
/// done, as it last said (see `Plan::set_held`; a claim adds its units at
/// once): the finish-time guards of the other devices, and every
/// claimant's share of an even finish, count them as work those devices
/// do before they are free for what is left.
///
/// # Why
/// The guards took the other devices as free to start on what is left at
/// once. A GPU that had just taken the unstarted rest of a CPU worker's
/// package (a fractal's interior: 317 units, 3.4 ms on lavapipe) then
/// looked free, and the worker, done with what it kept, declined the last
/// two units 276 times over those 3.4 ms, idle, while the GPU ran them
/// after its stolen package (BENCHMARKS.md, section 0, dev run 29).
///
/// `Relaxed` throughout, as [`LateStarts`]: a count only steers how
/// packages are sized, never which units a claim takes; a stale one
/// shifts one decision, and the next claim reads the new one.
#[derive(Debug, Default)]
struct Held(Vec<AtomicU64>);

impl Held {
    fn new(devices: usize) -> Self {
        Held((0..devices).map(|_| AtomicU64::new(0)).collect())
    }

    fn get(&self, device: usize) -> u64 {
        // Relaxed: see the type's documentation.
        self.0.get(device).map_or(0, |h| h.load(Ordering::Relaxed))
    }

    /// Stores only a change, as [`LateStarts::set`] (every CPU worker's
    /// claim reads the line).
    fn set(&self, device: usize, units: u64) {
        if let Some(h) = self.0.get(device) {
            // Relaxed: see the type's documentation.
            if h.load(Ordering::Relaxed) != units {
                h.store(units, Ordering::Relaxed);
            }
        }
    }
}

impl Clone for Held {
    /// A cloned plan is another run's: nothing held yet.
    fn clone(&self) -> Self {
        Held::new(self.0.len())
    }
}

/// Per device, whether its claimant declined its last claim because a
/// one-time start makes it begin too late (see `Plan::starts_too_late`):
/// the guards of the other devices then count it as absent, so that the
/// fastest device left always takes work.
///
/// Shared by every claimant of a run, so atomic. `Relaxed` throughout: a
/// flag only steers how packages are sized, never which units a claim
/// takes (the queue's own atomics keep each unit claimed once); what
/// liveness needs of it is that a flag set by one claimant is seen by the
/// others' next claims, which coherence gives any atomic store. A claimant
/// that sees a flag late declines once more and asks again from its idle
/// loop.
#[derive(Debug, Default)]
struct LateStarts(Vec<AtomicBool>);

impl LateStarts {
    fn new(devices: usize) -> Self {
        LateStarts((0..devices).map(|_| AtomicBool::new(false)).collect())
    }

    fn is_late(&self, device: usize) -> bool {
        // Relaxed: see the type's documentation.
        self.0.get(device).is_some_and(|f| f.load(Ordering::Relaxed))
    }

    /// Stores only a change: every guarded claim asks, and a store on
    /// each (a CPU worker's flag stays false) would have every worker
    /// write one shared line.
    fn set(&self, device: usize, late: bool) {
        if let Some(f) = self.0.get(device) {
            // Relaxed: see the type's documentation.
            if f.load(Ordering::Relaxed) != late {
                f.store(late, Ordering::Relaxed);
            }
        }
    }
}

impl Clone for LateStarts {
    /// A copy of the flags as they are now (a cloned plan is another
    /// run's: its claimants share their own flags).
    fn clone(&self) -> Self {
        LateStarts(
            (0..self.0.len())
                .map(|d| AtomicBool::new(self.is_late(d)))
                .collect(),
        )
    }
}

/// The powers one HGuided claim is sized by (see `Plan::powers`).
#[derive(Debug, Clone, Copy)]
struct GuidedPowers {
    /// The claimant's device's power.
    device: f64,
    /// The sum over the run's devices.
    sum: f64,
    /// The claimant's device is unmeasured (it probes).
    explore: bool,
    /// Every device's power is known (hinted or measured), which the
    /// finish-time guard needs.
    all_known: bool,
    /// The powers are hints.
    hinted: bool,
    /// Every other device holds its probe back (`Plan::holds_back`): the
    /// claimant's device sizes its packages as if alone.
    others_hold_back: bool,
}

/// Per-claimant state (each claimant owns one; not shared, so no atomics):
/// knows its device, its share of power, how many packages it has claimed.
#[derive(Debug, Clone, PartialEq)]
pub struct ClaimantState {
    device: usize,
    index: usize,
    power_share: f64,
    share: u64,
    packages: u64,
    requeued_packages: u64,
    units: u64,
    /// Units of the last fresh package.
    last_fresh: u64,
    /// Seconds of the last fresh package the finish-time guard declined
    /// (sizing functions take `&self`: a claimant's own cell, never shared).
    declined_s: Cell<Option<f64>>,
    /// Seconds before a package claimed now can start (see
    /// [`set_backlog_s`](Self::set_backlog_s)).
    backlog_s: f64,
    /// Seconds of a one-time start a package claimed now pays (see
    /// [`set_cold_start_s`](Self::set_cold_start_s)).
    cold_s: f64,
    /// Claims in a row that found nothing while fresh work was left and
    /// nothing was in flight (see [`STALL_CLAIMS`]).
    stalled: u32,
    /// Units the other devices' claimants hold claimed and not started,
    /// beyond what [`Held`] counts (see
    /// [`set_others_held`](Self::set_others_held)).
    others_held: u64,
}

impl ClaimantState {
    /// Device this claimant belongs to.
    pub fn device(&self) -> usize {
        self.device
    }

    /// Index of this claimant within its device.
    pub fn index(&self) -> usize {
        self.index
    }

    /// This claimant's fraction of the total power, as resolved when the
    /// plan was built (`device power / claimants / sum of device powers`).
    pub fn power_share(&self) -> f64 {
        self.power_share
    }

    /// `Static`: the units this claimant takes in its one package. 0 for the
    /// other policies.
    pub fn share(&self) -> u64 {
        self.share
    }

    /// Fresh packages claimed so far.
    pub fn packages(&self) -> u64 {
        self.packages
    }

    /// Requeued packages claimed so far.
    pub fn requeued_packages(&self) -> u64 {
        self.requeued_packages
    }

    /// Units claimed so far (fresh and requeued).
    pub fn units(&self) -> u64 {
        self.units
    }

    /// Seconds the last fresh package this claimant declined would have
    /// taken (HGuided's finish-time guard; infinite for a device of power
    /// 0), or `None` if it never declined. A device that declined stopped
    /// early by design: it would have ended that much later.
    pub fn declined_s(&self) -> Option<f64> {
        self.declined_s.get()
    }

    /// Tells the plan that a package claimed now will start only in
    /// `seconds` (a GPU claiming ahead while packages are in flight): its
    /// finish-time guards and its share of an even finish count from then.
    /// Not finite or negative counts as 0.
    pub fn set_backlog_s(&mut self, seconds: f64) {
        self.backlog_s = if seconds.is_finite() {
            seconds.max(0.0)
        } else {
            0.0
        };
    }

    /// Says that the other devices hold `units` claimed and not started
    /// that [`Held`] does not count: the unstarted ends of the CPU
    /// workers' packages, as a GPU's dispatch loop reads them on their
    /// board before a claim. A share of an even finish counts them as
    /// work those devices do before they are free for what is left (see
    /// `Plan::efficiency_floor`), unless `COEXEC_CPU_HELD=0`.
    ///
    /// # Why
    /// A lone CPU worker (one per core left by lavapipe on the dev
    /// machine) takes its whole share at once: a Black-Scholes run's
    /// worker claimed 191 of 391 units, then the GPU, counting the worker
    /// as free for the 200 left, took 80 of them, and the rest in
    /// halvings of 39, 19, 12, 9 and 6 units, a dispatch's 25 us each,
    /// while the worker ran its 191 (BENCHMARKS.md, section 0, dev run
    /// 40).
    pub fn set_others_held(&mut self, units: u64) {
        self.others_held = units;
    }

    /// Tells the plan that a package claimed now first pays a one-time
    /// start of `seconds` (a GPU's cold start: a shader compiled at its
    /// first dispatch), counted in the backlog too (see
    /// [`set_backlog_s`](Self::set_backlog_s)): where the other devices
    /// could do all that is left before the package could start, the
    /// claimant declines, however fast it is once started. Not finite or
    /// negative counts as 0.
    pub fn set_cold_start_s(&mut self, seconds: f64) {
        self.cold_s = if seconds.is_finite() {
            seconds.max(0.0)
        } else {
            0.0
        };
    }

    /// Records a successful claim. [`Plan::claim`] does this; call it
    /// yourself only when claiming through [`WorkQueue`] directly (the sizing
    /// functions do not count, because the queue may call them several times
    /// per claim).
    pub fn record(&mut self, range: &Range<u64>, source: Source) {
        match source {
            Source::Fresh => {
                self.packages += 1;
                self.last_fresh = range.end - range.start;
            }
            Source::Requeued => self.requeued_packages += 1,
        }
        self.units += range.end - range.start;
    }
}

impl Plan {
    /// Validates `sched` against `devices` and precomputes what can be.
    pub fn new(
        sched: &Scheduler,
        devices: &[DeviceSlot],
        total: u64,
        estimates: &dyn PowerEstimator,
    ) -> Result<Plan, SchedError> {
        let n = devices.len();
        sched.validate(n)?;
        if let Some(device) = devices.iter().position(|d| d.claimants == 0) {
            return Err(SchedError::NoClaimants { device });
        }
        let claimants: Vec<usize> = devices.iter().map(|d| d.claimants).collect();
        let equal = vec![1.0; n];
        let (policy, powers) = match sched {
            Scheduler::Static { powers } => {
                let powers = match powers {
                    Some(p) => p.clone(),
                    None => (0..n)
                        .map(|d| measured(estimates, d))
                        .collect::<Option<Vec<f64>>>()
                        .filter(|p| check_powers(p).is_ok())
                        .unwrap_or_else(|| equal.clone()),
                };
                let shares = static_shares(total, &powers, &claimants);
                (Policy::Static { shares }, powers)
            }
            Scheduler::Dynamic { packages } => (
                Policy::Dynamic {
                    chunk: total.div_ceil(*packages).max(1),
                },
                equal,
            ),
            Scheduler::HGuided {
                powers,
                k,
                min_package,
            } => {
                let hints = powers.as_ref().map(|p| (p.clone(), p.iter().sum()));
                let powers = powers.clone().unwrap_or(equal);
                (
                    Policy::HGuided {
                        hints,
                        k: *k,
                        min_package: *min_package,
                    },
                    powers,
                )
            }
        };
        let sum: f64 = powers.iter().sum();
        let claimant_share = powers
            .iter()
            .zip(&claimants)
            .map(|(p, c)| p / sum / *c as f64)
            .collect();
        Ok(Plan {
            policy,
            total,
            claimants,
            claimant_share,
            granule: granules(devices, total),
            narrow: devices.iter().map(|d| d.kind == DeviceKind::Cpu).collect(),
            wide_wave: devices
                .iter()
                .filter(|d| d.kind != DeviceKind::Cpu && d.granule > 1)
                .fold(0u64, |a, d| a.saturating_add(d.granule)),
            hold_back: true,
            late: LateStarts::new(n),
            held: Held::new(n),
        })
    }

    /// The plan of a run that measures a device by letting it start
    /// alone, the devices of `joining` joining it later (their dispatch
    /// loops wait a time box first: see `crate::learn::Measure`): no
    /// device holds its probe back (see `Plan::holds_back`), and until
    /// each of `joining` claims, the others' finish-time guards count it
    /// as absent (see [`LateStarts`]), so that the device measured does
    /// not decline work for devices that have not started.
    pub fn measuring(mut self, joining: &[usize]) -> Self {
        self.hold_back = false;
        for &d in joining {
            self.late.set(d, true);
        }
        self
    }

    /// Says that `device` (a GPU: its dispatch loop is its one claimant)
    /// holds `units` claimed and not yet done (see [`Held`]); the CPU's
    /// workers are not counted (their packages are small, and the GPUs
    /// take their unstarted ends back).
    pub fn set_held(&self, device: usize, units: u64) {
        if self.counts_held(device) {
            self.held.set(device, units);
        }
    }

    /// Whether `device`'s held units are counted (see
    /// [`set_held`](Self::set_held)): a GPU's, not the CPU workers'.
    fn counts_held(&self, device: usize) -> bool {
        self.narrow.get(device) == Some(&false)
    }

    /// Units of the run.
    pub fn total(&self) -> u64 {
        self.total
    }

    /// Number of devices.
    pub fn devices(&self) -> usize {
        self.claimants.len()
    }

    /// Claimants of `device`.
    ///
    /// # Panics
    /// If `device` is out of range.
    pub fn claimants(&self, device: usize) -> usize {
        self.claimants[device]
    }

    /// Per-claimant state (each claimant owns one; not shared, so no
    /// atomics): knows its device, its share of power, how many packages it
    /// has claimed.
    ///
    /// # Panics
    /// If `device` or `index_in_device` is out of range.
    pub fn claimant(&self, device: usize, index_in_device: usize) -> ClaimantState {
        assert!(
            index_in_device < self.claimants[device],
            "claimant {index_in_device} out of range: device {device} has {}",
            self.claimants[device]
        );
        let share = match &self.policy {
            Policy::Static { shares } => shares[device][index_in_device],
            _ => 0,
        };
        ClaimantState {
            device,
            index: index_in_device,
            power_share: self.claimant_share[device],
            share,
            packages: 0,
            requeued_packages: 0,
            units: 0,
            last_fresh: 0,
            declined_s: Cell::new(None),
            backlog_s: 0.0,
            cold_s: 0.0,
            stalled: 0,
            others_held: 0,
        }
    }

    /// Size this claimant asks for when `remaining` units are left (0 = stop).
    ///
    /// For *fresh* work. Does not count the claim (the queue may call it
    /// several times per claim): record successful claims with
    /// [`ClaimantState::record`], as [`claim`](Self::claim) does.
    /// * `Static`: its share on its first package (if non-zero), then 0.
    /// * `Dynamic`: `ceil(total / packages)`.
    /// * `HGuided`: `max(min_package, ceil(G_r * P_i / (k * sum P)))`, with the
    ///   exploration rule (see [`Plan`]), rounded up to the device's granule;
    ///   0 where the finish-time guard declines; all of `G_r` for a device's
    ///   only claimant once every other device would decline anything left
    ///   (and for a lone claimant after its probe).
    ///
    /// The result is capped at `remaining`.
    pub fn package_size(
        &self,
        c: &mut ClaimantState,
        remaining: u64,
        estimates: &dyn PowerEstimator,
    ) -> u64 {
        let size = match &self.policy {
            Policy::Static { .. } if c.packages == 0 => c.share,
            Policy::Static { .. } => 0,
            Policy::Dynamic { chunk } => *chunk,
            Policy::HGuided { .. } => self.guided(c, remaining, estimates, true),
        };
        size.min(remaining)
    }

    /// Size this claimant takes from a requeued range of `len` units. Never
    /// 0 for `len > 0` (requeued work cannot be declined) and independent of
    /// how much fresh work the claimant already took.
    /// * `Static`: its plan-time power fraction of `len` (`ceil`, at least 1),
    ///   so survivors split a failed device's package by power; a claimant
    ///   of power 0, `len` over its device's claimants.
    /// * `Dynamic`: `ceil(total / packages)`.
    /// * `HGuided`: the guided formula with `G_r = len` (no exploration);
    ///   for a claimant hinted 0, by the measured powers instead (equal
    ///   where none is measured).
    ///
    /// The result is capped at `len`.
    pub fn requeued_size(
        &self,
        c: &ClaimantState,
        len: u64,
        estimates: &dyn PowerEstimator,
    ) -> u64 {
        let size = match &self.policy {
            Policy::Static { .. } if c.power_share > 0.0 => ceil_u64(len as f64 * c.power_share),
            // A claimant of power 0 takes a failed device's work only when
            // no one else is left: its device's share of it, not one unit at
            // a time (a whole run's worth of single-unit claims).
            Policy::Static { .. } => len.div_ceil(self.claimants[c.device].max(1) as u64),
            Policy::Dynamic { chunk } => *chunk,
            Policy::HGuided { .. } => self.guided(c, len, estimates, false),
        };
        size.clamp(1, len.max(1))
    }

    /// Claims the next package for `c` from `queue` (requeued work first,
    /// then fresh; see [`WorkQueue::claim_from`]) and records it in `c`.
    ///
    /// `None` means "nothing for you right now": the claimant should keep
    /// calling (with a backoff) until [`WorkQueue::is_done`] or
    /// [`WorkQueue::is_aborted`], because a failing device may still give
    /// work back.
    pub fn claim(
        &self,
        queue: &WorkQueue,
        c: &mut ClaimantState,
        estimates: &dyn PowerEstimator,
    ) -> Option<(Range<u64>, Source)> {
        let got = match self.policy {
            // Fixed-size packages: one `fetch_add`, no retries under
            // contention (see `WorkQueue::claim_fixed`).
            Policy::Dynamic { chunk } => queue
                .claim_requeued(|n| self.requeued_size(c, n, estimates))
                .map(|r| (r, Source::Requeued))
                .or_else(|| queue.claim_fixed(chunk).map(|r| (r, Source::Fresh))),
            _ => queue.claim_from(|n, source| match source {
                Source::Fresh => self.package_size(c, n, estimates),
                Source::Requeued => self.requeued_size(c, n, estimates),
            }),
        };
        let got = got.or_else(|| self.unstall(queue, c, estimates));
        if let Some((r, source)) = &got {
            c.record(r, *source);
            // A GPU holds what it claims from now on, not from when its
            // loop has recorded and submitted it (tens of microseconds,
            // in which another GPU's claim would size its share of an even
            // finish as if this one were free; see `Held`). The loop's
            // next count of its packages in flight replaces this one.
            // Only a GPU's claim touches the count: the CPU workers', the
            // frequent ones, never read or write its line.
            if held_share_on() && self.counts_held(c.device) {
                let held = self.held.get(c.device) + (r.end - r.start);
                self.held.set(c.device, held);
            }
        }
        got
    }

    /// The watchdog of the plan's progress rule (the fastest claimant
    /// always takes work): `None` while some device works, else, after
    /// [`STALL_CLAIMS`] claims in a row of `c` that found nothing while
    /// fresh work was left and no unit was in flight, a fresh package of
    /// the guided size without the finish-time guard (HGuided; the other
    /// policies never decline fresh work they are owed). A guard that
    /// broke the rule (each device declining because another could do
    /// it all) would otherwise leave every claimant waiting for a run that
    /// cannot end; so would a device whose claimant never comes (its
    /// dispatch loop stuck before its first claim), which the guards of
    /// the others count on.
    fn unstall(
        &self,
        queue: &WorkQueue,
        c: &mut ClaimantState,
        estimates: &dyn PowerEstimator,
    ) -> Option<(Range<u64>, Source)> {
        if !matches!(self.policy, Policy::HGuided { .. }) {
            return None;
        }
        let left = queue.remaining();
        // Handed out, not given back, not done: in flight. (Snapshots of
        // three counters read one after the other: a transient miscount
        // only delays or advances the count by one claim.)
        let in_flight = (queue.total() - left)
            .saturating_sub(queue.requeued_units())
            .saturating_sub(queue.completed());
        if left == 0 || in_flight > 0 || queue.is_aborted() {
            c.stalled = 0;
            return None;
        }
        c.stalled += 1;
        if c.stalled < STALL_CLAIMS {
            return None;
        }
        c.stalled = 0;
        tracing::warn!(
            device = c.device,
            claimant = c.index,
            left,
            "no device took work for {STALL_CLAIMS} claims: a package is taken past the guards"
        );
        queue
            .claim_fresh(|n| self.guided(c, n, estimates, false))
            .map(|r| (r, Source::Fresh))
    }

    /// Called by a claimant that leaves the run early (its device failed),
    /// after requeueing its in-flight package: gives back the fresh work
    /// that only it would have claimed. Under `Static` that is its share if
    /// not yet taken (claimed and requeued at once); then, under every
    /// policy, the remaining fresh work is moved to the requeue store.
    pub fn forfeit(
        &self,
        queue: &WorkQueue,
        c: &mut ClaimantState,
        estimates: &dyn PowerEstimator,
    ) {
        if let Policy::Static { .. } = self.policy {
            while let Some(r) = queue.claim_fresh(|n| self.package_size(c, n, estimates)) {
                c.record(&r, Source::Fresh);
                queue.requeue(r);
            }
        }
        // Every policy: move the remaining fresh work into the requeue store.
        // Survivors never decline requeued work, whereas HGuided's
        // finish-time guard may decline fresh work on account of the device
        // that just failed.
        while let Some(r) = queue.claim_fresh(|n| n) {
            queue.requeue(r);
        }
    }

    /// The HGuided formula for `c` with `left` units of work.
    fn guided(&self, c: &ClaimantState, left: u64, est: &dyn PowerEstimator, fresh: bool) -> u64 {
        let Policy::HGuided {
            hints,
            k,
            min_package,
        } = &self.policy
        else {
            unreachable!("guided() on a non-HGuided plan")
        };
        if left == 0 {
            return 0;
        }
        let d = c.device;
        let mut powers = self.powers(d, hints.as_ref(), est);
        if !fresh && powers.hinted && powers.device <= 0.0 {
            // A device hinted 0 takes requeued work only when the devices
            // with power have failed: sized by the powers measured (equal
            // where none are), not `min_package` at a time (a failed
            // GPU's 67M units in packages of 3 would take a run's worth of
            // claims per unit of work).
            powers = self.powers(d, None, est);
        }
        powers.others_hold_back = hints.is_none() && self.others_hold_back(d, left, est);
        // Whole granules (a GPU's waves) for fresh work: a partial wave costs
        // as long as a full one.
        let granule = if fresh { self.granule[d] } else { 1 };
        let whole = |n: u64| whole_granules(n, granule, left);
        if fresh && powers.explore && c.packages < PROBE_PACKAGES {
            return self.probe(c, (granule, left, *min_package), &powers, est);
        }
        if fresh && self.claimants.iter().sum::<usize>() == 1 {
            // A lone claimant (one GPU alone) has no one to balance against:
            // cutting the range only adds per-package costs, unless its
            // downloads overlap its compute (see `lone_size`). (Its probe,
            // above, still comes first where it is unmeasured: the measure
            // bounds how long the rest may take before it counts as hung.)
            return whole(self.lone_size(c, left, est));
        }
        // Read in place, not collected: this runs on every claim. Hints
        // are rates without overhead (relative numbers, not units/s).
        let cost = |j: usize| match hints {
            Some((p, _)) => Some(Cost::rate_only(p[j])).filter(Cost::is_usable),
            None => est.cost(j),
        };
        let p_i = powers.device / self.claimants[d] as f64;
        let x = left as f64 * p_i / (k * powers.sum);
        let mut size = ceil_u64(x).max(*min_package);
        if fresh {
            size = self.fresh_size(c, (size, left), &powers, *min_package, (est, &cost));
            if hints.is_none() {
                size = self.separating(c, size, left, est);
            }
        }
        let size = whole(size);
        // A staged GPU's fresh package keeps room for its transfers to
        // overlap its neighbours' (see `pipelined`); hinted sizes are the
        // user's.
        let pipelined = |n: u64| {
            if fresh && hints.is_none() {
                self.pipelined(c, n, left, (granule, *min_package), &powers, est)
            } else {
                n
            }
        };
        if fresh && hints.is_none() && !powers.all_known {
            return pipelined(self.early_capped(c, size, left, (granule, *min_package), est));
        }
        if !(fresh && powers.all_known) {
            return size;
        }
        let guarded = self.guarded(c, size, left, granule, *min_package, &cost);
        let capped = pipelined(guarded);
        tracing::trace!(
            device = d,
            claimant = c.index,
            left,
            formula = x,
            sized = size,
            guarded,
            capped,
            cost = ?cost(d),
            "an HGuided claim"
        );
        capped
    }

    /// `size` (0: declined, kept), for a lone claimant of its device whose
    /// packages upload what they read into the device's own memory (a
    /// staged GPU, see [`PowerEstimator::upload_s_per_unit`]), cut to
    /// half of the units it is expected to run of the `left` ones (its
    /// power's share of them), but not below what uploads
    /// [`PIPELINE_FLOOR`] worth of bytes (nor below its smallest
    /// package): a geometric tail. Unchanged for other devices, or with
    /// `COEXEC_PIPELINE_CAP=0`.
    ///
    /// # Why
    /// A staged GPU's package computes only once its whole upload is in,
    /// and downloads what it wrote after; its transfers overlap only with
    /// its neighbours' packages. Taking its whole share in one package (as
    /// a GPU does that pays a fixed cost per package and nothing else)
    /// puts that share's upload before any of its compute and its
    /// download after: on an H200 a cold co-executed Collatz's GPU took
    /// the last 16687 of 32768 work-groups at once, whose 34 MB upload
    /// ended before its compute started and whose 17 MB download ended
    /// the run 0.4 ms after its compute, where the GPU alone, eight
    /// packages deep, ran the whole range 0.8 ms sooner. Halving what is
    /// left leaves the run's last package small: Collatz's first run 3.91
    /// -> 3.38 ms, gather's 4.92 -> 4.78 (BENCHMARKS.md, run 35).
    ///
    /// # Why uploads only
    /// A package that uploads nothing (a fractal's, which only writes)
    /// has no upload to wait for: its download streams behind the next
    /// package's compute whatever its size. Cut the same way, the
    /// fractal's first run was 10% slower (2.15 -> 2.36 ms): its GPU's
    /// downloads, five in flight instead of two, came home at 28-35 GB/s
    /// instead of 37, and its workers took more of the image. Nor on a
    /// GPU whose transfers share its compute queue (the engine then tells
    /// no uploads): they run in queue order with its dispatches, so no
    /// upload overlaps another package's compute, and a co-executed
    /// jacobi's warm runs, there, were 3.5% slower cut (2.267 -> 2.350
    /// ms). Where the engine tells a device's downloads instead
    /// ([`PowerEstimator::download_s_per_unit`]: two or more GPUs without
    /// the CPU workers, each on its own queue, and only where
    /// `COEXEC_DOWNLOAD_CAP=1` asks for it, not yet measured), their time
    /// sets the floor and packages that upload nothing are cut too: a
    /// GPU's last package then downloads little after the others end.
    fn pipelined(
        &self,
        c: &ClaimantState,
        size: u64,
        left: u64,
        (granule, min_package): (u64, u64),
        powers: &GuidedPowers,
        est: &dyn PowerEstimator,
    ) -> u64 {
        let d = c.device;
        if size == 0 || self.claimants[d] != 1 || !pipeline_cap_on() {
            return size;
        }
        let Some(per_unit) = est
            .upload_s_per_unit(d)
            .or_else(|| est.download_s_per_unit(d))
        else {
            return size;
        };
        let share = if powers.sum > 0.0 && powers.device > 0.0 {
            (powers.device / powers.sum).min(1.0)
        } else {
            1.0
        };
        let half = ceil_u64(left as f64 * share / 2.0);
        let floor = ceil_u64(PIPELINE_FLOOR.as_secs_f64() / per_unit)
            .max(whole_granules(min_package, granule, left));
        let cap = whole_granules(half.max(floor), granule, left);
        size.min(cap)
    }

    /// `size`, for a claimant of a device not yet measured that ran
    /// packages of the kernel (its cold first one in the process, kept out
    /// of its fit, or warm ones the fit does not trust yet), cut to what
    /// the bound of its early sample
    /// ([`EarlySample::bound`](crate::sched::EarlySample::bound)) lets
    /// end, after the packages the claimant has in flight, by the time the
    /// measured devices could do all `left` units; 0 (declined) where not
    /// even its smallest package would. Unchanged for a measured device,
    /// one that ran nothing, or where no other device is measured.
    ///
    /// # Why
    /// An unmeasured device's power is the mean of the measured ones (it
    /// counts as fast as the CPU): on lavapipe beside one CPU worker, a
    /// histogram's cold first run gave the GPU 12 units after its one-unit
    /// probe, then (the probe kept apart as cold) 5-9 units after a warm
    /// unit of 95 us; the worker had done the run in 0.41 ms and the run
    /// waited up to 0.3 ms more. A package is no slower warm than cold,
    /// and no slower per unit when larger, so the bound may only
    /// understate the device.
    fn early_capped(
        &self,
        c: &ClaimantState,
        size: u64,
        left: u64,
        (granule, min_package): (u64, u64),
        est: &dyn PowerEstimator,
    ) -> u64 {
        let d = c.device;
        if size == 0 || est.cost(d).is_some() {
            return size;
        }
        let Some(early) = est.early_sample(d) else {
            return size;
        };
        let cost = |j: usize| est.cost(j);
        let others = self.pool(Some(d), &cost);
        if others.rates <= 0.0 {
            return size;
        }
        let others_s = others.time(left);
        let room = (others_s - c.backlog_s) / self.claimants[d] as f64;
        let smallest = whole_granules(min_package, granule, left);
        let smallest_s = early.bound(smallest as f64);
        if smallest_s > room {
            c.declined_s.set(Some(c.backlog_s + smallest_s));
            return 0;
        }
        let fits = floor_u64(early.within(room));
        size.min(fits / granule * granule).max(smallest)
    }

    /// A lone claimant's package: the rest, or where the run is to be cut
    /// in `n` packages (see [`PowerEstimator::lone_packages`]), `1 / n` of
    /// the run's units (the last takes what is left).
    fn lone_size(&self, c: &ClaimantState, left: u64, est: &dyn PowerEstimator) -> u64 {
        match est.lone_packages(c.device) {
            Some(n) if n > 1 => ceil_u64(self.total as f64 / n as f64).clamp(1, left),
            _ => left,
        }
    }

    /// The powers HGuided sizes `d`'s packages by: the hints, or the
    /// measured powers, the mean of the measured ones standing in for the
    /// unmeasured (all equal when none is measured).
    fn powers(
        &self,
        d: usize,
        hints: Option<&(Vec<f64>, f64)>,
        est: &dyn PowerEstimator,
    ) -> GuidedPowers {
        if let Some((p, sum)) = hints {
            return GuidedPowers {
                device: p[d],
                sum: *sum,
                explore: false,
                all_known: true,
                hinted: true,
                others_hold_back: false,
            };
        }
        let n = self.claimants.len();
        let (mut count, mut msum) = (0usize, 0.0);
        for j in 0..n {
            if let Some(p) = measured(est, j) {
                count += 1;
                msum += p;
            }
        }
        let mine = measured(est, d);
        let all_known = count == n && msum.is_finite();
        if count == 0 || !msum.is_finite() {
            return GuidedPowers {
                device: 1.0,
                sum: n as f64,
                explore: mine.is_none(),
                all_known,
                hinted: false,
                others_hold_back: false,
            };
        }
        let mean = msum / count as f64;
        GuidedPowers {
            device: mine.unwrap_or(mean),
            sum: msum + mean * (n - count) as f64,
            explore: mine.is_none(),
            all_known,
            hinted: false,
            others_hold_back: false,
        }
    }

    /// The first fresh package of claimant `c` of an unmeasured device
    /// (there are no hints: a hinted device counts as measured): its
    /// probe, or 0 for a claimant that waits for it. `powers`: the
    /// claim's, whose `others_hold_back` it reads rather than computes
    /// again.
    fn probe(
        &self,
        c: &ClaimantState,
        (granule, left, min): (u64, u64, u64),
        powers: &GuidedPowers,
        est: &dyn PowerEstimator,
    ) -> u64 {
        if self.holds_back(c.device, left, est) {
            return 0;
        }
        if c.index > 0 && self.claimants.len() > 1 {
            // One probe per device: its other claimants wait for the
            // measurement rather than each holding a unit of unknown
            // cost (on a 2-D kernel a unit is a row of work-groups:
            // fifteen CPU workers probing a Mandelbrot image hold 6% of
            // it, which a GPU would have done in a fraction of the
            // time).
            return 0;
        }
        // A probe is one granule (a GPU's wave), unless that is a large
        // part of a small run: then `min_package`, so that the other
        // devices get to measure too.
        if self.claimants.len() > 1
            && granule.saturating_mul(PROBE_SHARE) > left
            && !powers.others_hold_back
        {
            return min.clamp(1, left);
        }
        whole_granules(min, granule, left)
    }

    /// Whether device `d`, unmeasured, holds its probe back with `left`
    /// units to go: its claimants run one unit at a time (the CPU's
    /// workers), and the run's GPUs of a known width hold all of `left` in
    /// one wave between them.
    ///
    /// A GPU runs a wave's work-groups at once, so such a run takes it
    /// about one work-group's time at full occupancy; a core running one
    /// work-group of an unknown kernel takes a time of that order (an SM
    /// shares its cycles among a wave's resident groups; on an n-body step
    /// over one wave the CPU's probe, one work-group on one core, took as
    /// long as the GPU's whole run). A probe then risks the run's time for
    /// a share the GPU would have done in the same wave, and is held back:
    /// the CPU stays unmeasured and idle, and the GPUs take the run. Once
    /// the CPU is measured (a larger run, a profile), the finish-time guard
    /// decides with its costs instead. Requeued work (a failed GPU's) is
    /// never held back.
    fn holds_back(&self, d: usize, left: u64, est: &dyn PowerEstimator) -> bool {
        self.hold_back && self.narrow[d] && left <= self.wide_wave && measured(est, d).is_none()
    }

    /// Whether every device but `d` holds its probe back (see
    /// [`Plan::holds_back`]): `d` then sizes its packages as if alone.
    fn others_hold_back(&self, d: usize, left: u64, est: &dyn PowerEstimator) -> bool {
        (0..self.claimants.len()).all(|j| j == d || self.holds_back(j, left, est))
    }

    /// A fresh package's size from the guided `size`: at least the
    /// device's efficiency floor where its cost is learned; at most twice
    /// the claimant's last package while, without hints, another device
    /// is unmeasured.
    fn fresh_size(
        &self,
        c: &ClaimantState,
        (mut size, left): (u64, u64),
        powers: &GuidedPowers,
        min_package: u64,
        (est, cost): (&dyn PowerEstimator, &dyn Fn(usize) -> Option<Cost>),
    ) -> u64 {
        let d = c.device;
        if let Some(mine) = cost(d) {
            // A lone claimant whose costs, and everybody's, are learned
            // takes its share of an even finish at once: one dispatch
            // pays one overhead, and the devices that split finely
            // absorb the estimate's error (see `overshoots`); unless,
            // on an irregular kernel, the error could leave them idle
            // longer than cutting the share costs it (see
            // `whole_share_risks_idling`).
            let whole_share = !powers.hinted
                && powers.all_known
                && self.claimants[d] == 1
                && !self.whole_share_risks_idling(mine, left, self.irregularity(est), cost);
            size = size.max(self.efficiency_floor(c, mine, left, whole_share, cost));
        }
        if !powers.hinted
            && !powers.all_known
            && (!powers.explore || self.slow_start(d))
            && !powers.others_hold_back
        {
            // Measured, while another device is not yet: at most twice
            // the last package, so that the work this device takes
            // grows with the time the other takes to be measured (a
            // GPU's first package may take thousands of times a warm
            // one) instead of sizing itself against a guess.
            size = size.min((2 * c.last_fresh).max(min_package));
        }
        size
    }

    /// The largest spread of a run device's packages around its fitted
    /// cost (see [`PowerEstimator::irregularity`]); 0 where none is known.
    /// Read only where a claimant would take its whole share at once, not
    /// on every claim.
    fn irregularity(&self, est: &dyn PowerEstimator) -> f64 {
        (0..self.claimants.len())
            .filter_map(|j| est.irregularity(j))
            .fold(0.0, f64::max)
    }

    /// Whether a lone claimant of cost `mine`, taking its whole share of
    /// an even finish of `left` units at once, risks leaving the other
    /// devices idle for longer than cutting that share costs it, on a
    /// kernel whose packages fall `irregularity` from their devices' fits
    /// (see [`PowerEstimator::irregularity`]; below [`IRREGULAR`], never).
    /// The risk: the share's time off by that spread (its log ratio, as a
    /// fraction) while the others, their part of the devices' rates, wait
    /// for the end. The cost: a fixed cost for each halving from its share
    /// down to its efficient size (at most [`MAX_OVERHEAD`] overhead), the
    /// packages the formula's sizes add. Off with `COEXEC_IRREGULAR=0`.
    ///
    /// # Why
    /// A dispatched package cannot be split: what a GPU takes beyond its
    /// even share, the others cannot take back, and they idle while it
    /// runs. On an irregular kernel a share in units is not a share in
    /// time: on the dev machine (lavapipe beside one worker) a 512^2
    /// fractal's GPU took 692 of 1024 work-groups at once, the image's
    /// interior, for 8.8 ms, while the worker ended the edges it took in
    /// 0.5 ms (balance 0.05; the GPU alone took 9.2). Where the GPU is far
    /// faster than the others (an H200 beside 15 workers), their idle time
    /// is worth little, and cutting costs round trips of 50-110 us.
    fn whole_share_risks_idling(
        &self,
        mine: Cost,
        left: u64,
        irregularity: f64,
        cost: &dyn Fn(usize) -> Option<Cost>,
    ) -> bool {
        if !(irregularity > IRREGULAR && irregular_on()) {
            return false;
        }
        let all = self.pool(None, cost);
        if all.rates.is_nan() || all.rates <= 0.0 {
            return false;
        }
        let finish = all.even_finish(left);
        let others = (1.0 - mine.rate / all.rates).max(0.0);
        let risk = irregularity * finish * others;
        let share = ((finish - mine.overhead_s) * mine.rate).max(1.0);
        let halvings = (share / mine.efficient_size(MAX_OVERHEAD).max(1.0)).log2().max(1.0);
        risk > halvings * mine.overhead_s
    }

    /// Whether device `d`, still unmeasured after its probe, grows its
    /// packages from the probe's size (at most twice its claimant's last
    /// package, as a measured device does while another is not) rather
    /// than take the share of a device as fast as the others: a device of
    /// several claimants (the CPU's workers), unless
    /// `COEXEC_SLOW_START=0`. Its probe's time is not a trusted
    /// measurement yet, and the share of equal powers is the run over
    /// twice the number of claimants: on an H200 a worker's second claim
    /// of a Collatz run was 529 work-groups, 3.3 ms split among fifteen
    /// workers, where the GPU alone took 3.7 ms for all of it
    /// (BENCHMARKS.md, run 29). A lone claimant (a GPU) is bounded by its
    /// early sample instead (see `early_capped`).
    fn slow_start(&self, d: usize) -> bool {
        self.claimants[d] > 1 && slow_start_on()
    }

    /// `size`, or for a lone claimant of its device (a GPU) whose packages
    /// so far all had one size, at least [`DISTINCT`] times that size (at
    /// most `left`): its next measurement then separates the fixed cost of
    /// a package from its rate (see [`PowerEstimator::one_size`]). Without
    /// it, a GPU whose packages wait for their heaviest work-group (1 ms
    /// for one wave or five, on a power-law sparse matrix) reads as a rate
    /// of one wave per millisecond, as slow as the CPU, and is given
    /// packages of that size for the rest of the run. The finish-time
    /// guard may still cut the package.
    ///
    /// Only where that size is of this run: the claimant ran a fresh
    /// package in it, of at least half that size. A size measured in
    /// earlier runs may be a whole run (the GPU alone runs one package),
    /// which doubled would leave the others nothing.
    fn separating(&self, c: &ClaimantState, size: u64, left: u64, est: &dyn PowerEstimator) -> u64 {
        let d = c.device;
        if self.claimants[d] != 1 || c.last_fresh == 0 {
            return size;
        }
        match est.one_size(d) {
            Some(n) if n as f64 <= DISTINCT * c.last_fresh as f64 => {
                size.max(ceil_u64(DISTINCT * n as f64)).min(left)
            }
            _ => size,
        }
    }

    /// Where every device's cost is known: `size` (whole granules), cut to
    /// what the finish-time guard accepts, or 0 where the claimant of
    /// `c`'s device declines; the whole rest where nobody else would take
    /// any of it.
    fn guarded(
        &self,
        c: &ClaimantState,
        mut size: u64,
        left: u64,
        granule: u64,
        min_package: u64,
        cost: &dyn Fn(usize) -> Option<Cost>,
    ) -> u64 {
        let d = c.device;
        if let Some(t) = self.starts_too_late(c, left, cost) {
            tracing::trace!(device = d, left, start_s = t, "a claim declined: a late start");
            c.declined_s.set(Some(t));
            return 0;
        }
        let smallest = whole_granules(min_package, granule, left);
        if let Some(t) = self.declines(d, size, left, cost) {
            if self.declines(d, smallest, left, cost).is_some() {
                tracing::trace!(device = d, size, left, package_s = t, "a claim declined: slower");
                c.declined_s.set(Some(t));
                return 0;
            }
            // Its smallest package passes the guard (which `others` counts
            // on): the largest whole-granule size that passes.
            size = self.largest_accepted(d, size, smallest, left, granule, cost);
        }
        let others = self.others(d, min_package, left, cost);
        if self.claimants[d] == 1 && others.all_decline {
            // Nobody else would take any of it: cutting the range would only
            // add per-package costs (and a partial last wave per package).
            return left;
        }
        if others.slower_takes {
            if let Some(t) = self.overshoots(d, size, left, c.backlog_s, cost) {
                tracing::trace!(
                    device = d,
                    size,
                    left,
                    backlog_s = c.backlog_s,
                    package_s = t,
                    others_s = self.pool(Some(d), cost).time(left),
                    "a claim declined: it would end after the others' finish"
                );
                c.declined_s.set(Some(t));
                return 0;
            }
        }
        size
    }

    /// Where claimant `c` pays a one-time start (see
    /// [`ClaimantState::set_cold_start_s`]) and could start a package no
    /// sooner than [`GUARD_MARGIN`] of the time the other devices need for
    /// all `left` units (as the slower claimants' guard: what it could
    /// still add is small against a start that is an estimate): the
    /// seconds until it could start (it declines); `None` otherwise, and
    /// where no other device takes work. Records the answer for the other
    /// devices' guards, which count a device that declines so as absent
    /// (see [`LateStarts`]): the fastest device left then takes work.
    fn starts_too_late(
        &self,
        c: &ClaimantState,
        left: u64,
        cost: &dyn Fn(usize) -> Option<Cost>,
    ) -> Option<f64> {
        let late = self.start_declines(c, left, cost);
        self.late.set(c.device, late.is_some());
        late
    }

    /// [`starts_too_late`](Self::starts_too_late)'s rule, the other
    /// devices' pool leaving out those that decline for their own starts
    /// (two cold GPUs, each counting the other, would both decline).
    fn start_declines(
        &self,
        c: &ClaimantState,
        left: u64,
        cost: &dyn Fn(usize) -> Option<Cost>,
    ) -> Option<f64> {
        if c.cold_s <= 0.0 {
            return None;
        }
        let others = self.pool(Some(c.device), cost);
        if others.rates <= 0.0 {
            return None;
        }
        let others_s = others.time(left);
        let start_s = c.backlog_s.max(c.cold_s);
        (start_s >= GUARD_MARGIN * others_s).then_some(start_s)
    }

    /// The largest size in `smallest..=size`, in whole granules (or
    /// `smallest`), that the finish-time guard lets a claimant of `d` take;
    /// `smallest` must pass it. The guard only tightens as a package grows,
    /// so a bisection finds it.
    fn largest_accepted(
        &self,
        d: usize,
        size: u64,
        smallest: u64,
        left: u64,
        granule: u64,
        cost: &dyn Fn(usize) -> Option<Cost>,
    ) -> u64 {
        let (mut ok, mut bad) = (smallest / granule, size.div_ceil(granule));
        while bad > ok + 1 {
            let mid = ok + (bad - ok) / 2;
            if self.declines(d, mid * granule, left, cost).is_none() {
                ok = mid;
            } else {
                bad = mid;
            }
        }
        (ok * granule).clamp(smallest, size)
    }

    /// The end-of-run guard of the faster claimants: a claimant of `d`
    /// declines a package that, overhead included, would end after the
    /// other devices could have done all `left` units (margin 1: declining
    /// can then only make the run end sooner), provided a slower device
    /// would take work (see `others`; else it must take it). A GPU package cannot be
    /// split once dispatched, and on an irregular kernel each pays for its
    /// slowest work-group: the last one must not outlast the devices that
    /// split finely. A package claimed ahead counts from when it can start
    /// (`backlog_s`). Returns the seconds of the declined package.
    ///
    /// The others are taken as free to start on `left` at once, which a
    /// peer (another device of one claimant whose rate is at least
    /// [`GUARD_MARGIN`] of this claimant's: another GPU) may not be: it may
    /// hold a large package of its own (a CPU worker's are small). So a
    /// claimant with a peer never declines a package within its share of an
    /// even finish (two GPUs a percent
    /// apart and a CPU: the first GPU to claim takes half; the other would
    /// decline the second half, counting the first GPU as free, and that
    /// GPU would then run it after its own, in twice the time).
    fn overshoots(
        &self,
        d: usize,
        size: u64,
        left: u64,
        backlog_s: f64,
        cost: &dyn Fn(usize) -> Option<Cost>,
    ) -> Option<f64> {
        let mine = cost(d)?;
        let others = self.pool(Some(d), cost);
        if others.rates <= 0.0 {
            return None;
        }
        let mine_s = backlog_s + self.claimants[d] as f64 * mine.time(size as f64);
        let others_s = others.time(left);
        if mine_s <= others_s {
            return None;
        }
        let mine_rate = mine.rate / self.claimants[d] as f64;
        let peer = (0..self.claimants.len()).any(|j| {
            j != d
                && self.claimants[j] == 1
                && cost(j).is_some_and(|c| c.rate >= GUARD_MARGIN * mine_rate)
        });
        (!(peer && self.within_even_share(d, mine, size, left, cost))).then_some(mine_s)
    }

    /// The devices with claimants and a known cost, but `except` and those
    /// that decline for a late start (see [`LateStarts`]): their summed
    /// rates and overheads (in units), the fastest per-claimant rate among
    /// them and the units they hold in flight (see [`Held`]).
    fn pool(&self, except: Option<usize>, cost: &dyn Fn(usize) -> Option<Cost>) -> Pool {
        let mut p = Pool::default();
        for (j, &claimants) in self.claimants.iter().enumerate() {
            if Some(j) == except || claimants == 0 || self.late.is_late(j) {
                continue;
            }
            if let Some(c) = cost(j) {
                p.rates += c.rate;
                p.overhead_units += c.overhead_units();
                p.held_units += self.held.get(j) as f64;
                p.fastest_claimant = p.fastest_claimant.max(c.rate / claimants as f64);
            }
        }
        p
    }

    /// The smallest fresh package claimant `c` of device `d` (cost
    /// `mine`, its backlog `backlog_d`) takes with `left` units left:
    /// large enough that its fixed overhead is at most [`MAX_OVERHEAD`] of
    /// its time (a GPU dispatch over an irregular kernel waits for its
    /// slowest work-group, so tiny packages run at a fraction of its
    /// throughput), but never more than the claimant's
    /// share of an even finish: with every device's cost known, all finish
    /// together at `T = (left + sum_j held_j + sum_j overhead_j rate_j) /
    /// sum_j rate_j` (`held_j`: the units a GPU holds in flight, see
    /// [`Held`], and the unstarted ends of the CPU workers' packages
    /// where `c` is a GPU's loop that read them, see
    /// [`ClaimantState::set_others_held`]), device `d` having done `(T -
    /// backlog_d - overhead_d) * rate_d` of `left`. With `whole_share`,
    /// that share ([`FAIR_SHARE`] of it) whatever the overhead.
    ///
    /// # Why the held units
    /// Without them the second of two identical GPUs sized its share of
    /// what the first had left, as if the first were free: on two H200s a
    /// Mandelbrot run's first claims were 34848 and 11616 of 65536 units
    /// (the first GPU's 53%, the second's 18%), and the runs took 1.5-1.8
    /// ms where an even split took 1.2 (BENCHMARKS.md, section 0e, run 13).
    fn efficiency_floor(
        &self,
        c: &ClaimantState,
        mine: Cost,
        left: u64,
        whole_share: bool,
        cost: &dyn Fn(usize) -> Option<Cost>,
    ) -> u64 {
        let efficient = if whole_share {
            f64::INFINITY
        } else {
            mine.efficient_size(MAX_OVERHEAD)
        };
        if efficient <= 0.0 {
            return 0;
        }
        let mut all = self.pool(None, cost);
        if cpu_held_on() {
            all.held_units += c.others_held as f64;
        }
        let finish = all.even_finish(left);
        let fair = ((finish - c.backlog_s - mine.overhead_s) * mine.rate).max(0.0)
            / self.claimants[c.device] as f64;
        ceil_u64(efficient.min(FAIR_SHARE * fair))
    }

    /// What the claimants of the devices other than `d` would do with their
    /// smallest fresh package (`min_package`, in whole granules) with `left`
    /// units left, each device asked once (one that declines for a late
    /// start, see [`LateStarts`], declines it):
    /// * `all_decline`: every one of them would decline it (`false` when `d`
    ///   has no other device; see the lone-claimant rule). The guard's
    ///   condition only tightens as `left` shrinks and a package never gets
    ///   smaller than that, so with the costs unchanged they would decline
    ///   all the rest: a lone claimant of `d` may as well take it in one
    ///   package.
    /// * `slower_takes`: a device slower than `d` (per claimant) would take
    ///   it: it then takes work whatever `d` does (its guard accepts some
    ///   size, and only the faster claimants
    ///   [`overshoot`](Self::overshoots)), so `d` may decline without
    ///   stalling the run.
    fn others(
        &self,
        d: usize,
        min_package: u64,
        left: u64,
        cost: &dyn Fn(usize) -> Option<Cost>,
    ) -> Others {
        let per_claimant = |j: usize| cost(j).map_or(0.0, |c| c.rate / self.claimants[j] as f64);
        let mine = per_claimant(d);
        let (mut any, mut all_decline, mut slower_takes) = (false, true, false);
        for (j, &claimants) in self.claimants.iter().enumerate() {
            if j == d || claimants == 0 {
                continue;
            }
            any = true;
            if self.late.is_late(j) {
                // It declines for its start (see `LateStarts`).
                continue;
            }
            let smallest = whole_granules(min_package, self.granule[j], left);
            if self.declines(j, smallest, left, cost).is_none() {
                all_decline = false;
                slower_takes |= cost(j).is_some() && per_claimant(j) < mine;
            }
        }
        Others {
            all_decline: any && all_decline,
            slower_takes,
        }
    }

    /// The finish-time guard of HGuided: a claimant of `d` declines fresh
    /// work when its package of `size` units (overhead included) would take
    /// longer than [`GUARD_MARGIN`] times what the other devices need for
    /// all `left` units without it, `(left + sum_j overhead_j rate_j) /
    /// sum_j rate_j` over the others. At a margin of 1, declining can only
    /// make the run end sooner; below 1 it also leaves room for estimation
    /// error (early estimates include start-up overheads, and the last
    /// package of a device far slower than the others would land at the
    /// very end), so a slow device never holds up the end of a run. Without
    /// overheads this is `size / p_i > GUARD_MARGIN * left / P_others`.
    ///
    /// The margin is for a device far slower than the others: one whose
    /// per-claimant rate is at least [`GUARD_MARGIN`] times the fastest
    /// other claimant's never declines a package within its claimant's
    /// share of an even finish ([`even_share`](Self::even_share)): every
    /// device then ends about together, and declining would leave its
    /// work to the others (two GPUs 1% apart, each given half the run as
    /// its granule: the slower one would decline its half, and the faster
    /// run everything alone in twice the time).
    ///
    /// Progress: only a claimant whose per-claimant rate is below that of
    /// some claimant of another device may decline, so the fastest claimant
    /// always takes work. A device that fails moves the fresh work into the
    /// requeue store, which is never declined.
    ///
    /// Returns the seconds the declined package would have taken (infinite
    /// for a device of power 0), or `None` to take it.
    fn declines(
        &self,
        d: usize,
        size: u64,
        left: u64,
        cost: &dyn Fn(usize) -> Option<Cost>,
    ) -> Option<f64> {
        let others = self.pool(Some(d), cost);
        if others.rates <= 0.0 {
            return None;
        }
        let claimants = self.claimants[d] as f64;
        let Some(mine) = cost(d).filter(|c| c.rate / claimants < others.fastest_claimant) else {
            // The fastest never declines; a device of power 0 always does.
            return cost(d).is_none().then_some(f64::INFINITY);
        };
        let mine_s = claimants * mine.time(size as f64);
        let others_s = others.time(left);
        let comparable = mine.rate / claimants >= GUARD_MARGIN * others.fastest_claimant;
        if comparable && self.within_even_share(d, mine, size, left, cost) {
            return None;
        }
        (mine_s > GUARD_MARGIN * others_s).then_some(mine_s)
    }

    /// Whether `size` units are within a claimant of `d`'s share of an even
    /// finish of `left` (see [`even_share`](Self::even_share)), where the
    /// guards keep that share (`COEXEC_EVEN_SHARE`, on unless `0`).
    fn within_even_share(
        &self,
        d: usize,
        mine: Cost,
        size: u64,
        left: u64,
        cost: &dyn Fn(usize) -> Option<Cost>,
    ) -> bool {
        even_share_on() && size <= self.even_share(d, mine, left, cost)
    }

    /// A claimant of `d`'s share of an even finish of `left` units (see
    /// [`efficiency_floor`](Self::efficiency_floor)), rounded up to whole
    /// granules where `d` has granules larger than one unit (a GPU's
    /// partial wave costs as long as a full one), else down.
    fn even_share(
        &self,
        d: usize,
        mine: Cost,
        left: u64,
        cost: &dyn Fn(usize) -> Option<Cost>,
    ) -> u64 {
        let all = self.pool(None, cost);
        if all.rates <= 0.0 {
            return 0;
        }
        let finish = all.even_finish(left);
        let mine_held = match held_share_on() {
            true => self.held.get(d) as f64,
            false => 0.0,
        };
        let fair =
            ((finish - mine.overhead_s) * mine.rate - mine_held).max(0.0) / self.claimants[d] as f64;
        match self.granule[d] {
            g if g > 1 => whole_granules(ceil_u64(fair), g, left),
            _ => floor_u64(fair),
        }
    }
}

/// Whether a device of an irregular kernel is kept from taking its whole
/// share of an even finish at once (see `Plan::fresh_size`): yes unless
/// `COEXEC_IRREGULAR=0` (to measure what the rule changes). Read once per
/// process.
fn irregular_on() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    crate::switches::on_unless_zero(&ON, "COEXEC_IRREGULAR")
}

/// Whether a staged GPU's packages are cut to a geometric tail (see
/// `Plan::pipelined`): yes unless `COEXEC_PIPELINE_CAP=0` (to measure what
/// the rule changes). Read once per process.
fn pipeline_cap_on() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    crate::switches::on_unless_zero(&ON, "COEXEC_PIPELINE_CAP")
}

/// Whether an unmeasured device of several claimants starts slowly (see
/// `Plan::slow_start`): yes, unless the environment sets
/// `COEXEC_SLOW_START=0` (to measure what the rule changes). Read once per
/// process.
fn slow_start_on() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    crate::switches::on_unless_zero(&ON, "COEXEC_SLOW_START")
}

/// Whether the guard keeps a comparable device's even-finish share (see
/// `Plan::declines`): yes, unless the environment sets
/// `COEXEC_EVEN_SHARE=0` (to measure what the rule changes). Read once per
/// process.
fn even_share_on() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    crate::switches::on_unless_zero(&ON, "COEXEC_EVEN_SHARE")
}

/// Whether a share of an even finish counts the units the GPUs hold in
/// flight, and a GPU holds what it claims from the claim on (see
/// `Plan::efficiency_floor`): yes, unless the environment sets
/// `COEXEC_HELD_SHARE=0` (to measure what the rule changes). Read once per
/// process.
fn held_share_on() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    crate::switches::on_unless_zero(&ON, "COEXEC_HELD_SHARE")
}

/// Whether a GPU's share of an even finish counts the unstarted ends of
/// the CPU workers' packages (see [`ClaimantState::set_others_held`]):
/// yes, unless the environment sets `COEXEC_CPU_HELD=0` (to measure what
/// the rule changes). Read once per process.
fn cpu_held_on() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    crate::switches::on_unless_zero(&ON, "COEXEC_CPU_HELD")
}

/// What the other devices would do at the end of a run (see
/// `Plan::others`).
#[derive(Debug)]
struct Others {
    all_decline: bool,
    slower_takes: bool,
}

/// Devices taken together (see `Plan::pool`).
#[derive(Debug, Default)]
struct Pool {
    rates: f64,
    overhead_units: f64,
    fastest_claimant: f64,
    /// The units the devices hold in flight (see [`Held`]).
    held_units: f64,
}

impl Pool {
    /// The seconds these devices need for `left` units, after what they
    /// hold in flight.
    fn time(&self, left: u64) -> f64 {
        (left as f64 + self.overhead_units + self.held_units) / self.rates
    }

    /// When these devices, all of them taking work, finish `left` units
    /// together: [`time`](Self::time), or where `COEXEC_HELD_SHARE=0`
    /// without what they hold in flight.
    fn even_finish(&self, left: u64) -> f64 {
        match held_share_on() {
            true => self.time(left),
            false => (left as f64 + self.overhead_units) / self.rates,
        }
    }
}

/// The package granule of each of `devices` in a run of `total` units:
/// each device's own (a GPU's wave), except where the run is too small to
/// give every device with a granule (each GPU) a whole one: their granules
/// then shrink to an even split of the run, so that each GPU can take part.
/// A compute-bound kernel's partial wave takes about its part of a full
/// wave's time, so half a wave on each of two GPUs beats a full one on one;
/// whether a GPU takes such a package at all is the cost model's decision
/// (the overhead floor and the finish-time guard, as for any package).
fn granules(devices: &[DeviceSlot], total: u64) -> Vec<u64> {
    let own: Vec<u64> = devices.iter().map(|d| d.granule.max(1)).collect();
    let wide = own.iter().filter(|&&g| g > 1).count() as u64;
    let needed = own
        .iter()
        .filter(|&&g| g > 1)
        .fold(0u64, |a, &g| a.saturating_add(g));
    if wide < 2 || needed <= total {
        return own;
    }
    let even = total.div_ceil(wide).max(1);
    own.into_iter()
        .map(|g| if g > 1 { g.min(even) } else { g })
        .collect()
}

/// `n` rounded up to whole granules, capped at `left`.
fn whole_granules(n: u64, granule: u64, left: u64) -> u64 {
    n.div_ceil(granule).saturating_mul(granule).min(left)
}

/// Static shares: device `i` gets `floor(total * P_i / sum P)`, split evenly
/// among its claimants (the first ones get the remainder of that split); the
/// units left over by the floors go to the first claimant of the most
/// powerful device (lowest index on ties). Sums exactly to `total`.
fn static_shares(total: u64, powers: &[f64], claimants: &[usize]) -> Vec<Vec<u64>> {
    let sum: f64 = powers.iter().sum();
    let mut alpha: Vec<u64> = powers
        .iter()
        .map(|p| floor_u64(total as f64 * p / sum).min(total))
        .collect();
    // Defensive: float error must never make the floors exceed `total`.
    let mut over = alpha
        .iter()
        .map(|&a| u128::from(a))
        .sum::<u128>()
        .saturating_sub(u128::from(total));
    for a in alpha.iter_mut() {
        let cut = (*a as u128).min(over) as u64;
        *a -= cut;
        over -= u128::from(cut);
    }
    let strongest = powers
        .iter()
        .enumerate()
        .fold(0, |best, (i, p)| if *p > powers[best] { i } else { best });
    let mut shares: Vec<Vec<u64>> = alpha
        .iter()
        .zip(claimants)
        .map(|(&a, &c)| {
            let c64 = c as u64;
            (0..c64).map(|j| a / c64 + u64::from(j < a % c64)).collect()
        })
        .collect();
    shares[strongest][0] += total - alpha.iter().sum::<u64>();
    shares
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::sched::ThroughputEstimator;

    fn gpus(n: usize) -> Vec<DeviceSlot> {
        vec![DeviceSlot::gpu(); n]
    }

    fn hg(powers: Option<Vec<f64>>, k: f64, min_package: u64) -> Scheduler {
        Scheduler::HGuided {
            powers,
            k,
            min_package,
        }
    }

    fn shares(p: &Plan) -> Vec<Vec<u64>> {
        (0..p.devices())
            .map(|d| {
                (0..p.claimants(d))
                    .map(|j| p.claimant(d, j).share())
                    .collect()
            })
            .collect()
    }

    #[test]
    fn hguided_hint_sizes_by_hand() {
        let est = ThroughputEstimator::new(2);
        let p = Plan::new(&hg(Some(vec![3.0, 1.0]), 2.0, 4), &gpus(2), 100, &est).unwrap();
        let (mut a, mut b) = (p.claimant(0, 0), p.claimant(1, 0));
        assert_eq!(a.power_share(), 0.75);
        // ceil(100*3/8) = 38; ceil(62*1/8) = 8.
        assert_eq!(p.package_size(&mut a, 100, &est), 38);
        assert_eq!(p.package_size(&mut b, 62, &est), 8);
        // ceil(5/8) = 1 -> min_package 4, but 4 units at power 1 end after
        // device 0 (power 3) could do all 5: the finish-time guard declines.
        assert_eq!(p.package_size(&mut b, 5, &est), 0);
        assert_eq!(p.package_size(&mut b, 3, &est), 0);
        // Device 1 would decline anything from here on, so the faster device
        // takes all that is left in one package.
        assert_eq!(p.package_size(&mut a, 5, &est), 5);
        assert_eq!(p.package_size(&mut a, 3, &est), 3);
        assert_eq!(p.package_size(&mut b, 0, &est), 0);
        // Requeued: the same formula on the range, never below 1.
        assert_eq!(p.requeued_size(&a, 40, &est), 15); // ceil(40*3/8)
    }

    #[test]
    fn hguided_claimant_power_is_divided() {
        let est = ThroughputEstimator::new(2);
        let devs = [DeviceSlot::cpu(4), DeviceSlot::gpu()];
        let p = Plan::new(&hg(Some(vec![4.0, 4.0]), 2.0, 1), &devs, 100, &est).unwrap();
        // Worker power 1, sum 8: ceil(100/16) = 7; GPU: ceil(100*4/16) = 25.
        assert_eq!(p.package_size(&mut p.claimant(0, 3), 100, &est), 7);
        assert_eq!(p.package_size(&mut p.claimant(1, 0), 100, &est), 25);
        // A zero-power device would get min_package, which the finish-time
        // guard declines (it would never finish before the others).
        let p = Plan::new(&hg(Some(vec![0.0, 1.0]), 2.0, 3), &devs, 100, &est).unwrap();
        assert_eq!(p.package_size(&mut p.claimant(0, 0), 100, &est), 0);
        // It takes requeued work (the GPU failed) by equal powers, nothing
        // being measured, not min_package at a time: a worker's power 1 of
        // 4, sum 2: ceil(10^6 / 4 / (2 * 2)).
        assert_eq!(p.requeued_size(&p.claimant(0, 0), 1_000_000, &est), 62_500);
        assert_eq!(p.requeued_size(&p.claimant(0, 0), 100, &est), 7);
    }

    /// An estimator that tells what the engine adds to the fits: the
    /// packages a lone claimant's run is cut in, and the seconds device 1
    /// uploads and downloads per unit where its packages are cut for them.
    struct Told<'a> {
        est: &'a ThroughputEstimator,
        lone_packages: Option<u64>,
        upload_s: Option<f64>,
        download_s: Option<f64>,
    }

    /// An estimator that cuts a lone claimant's run in `n` packages.
    fn cut(est: &ThroughputEstimator, n: Option<u64>) -> Told<'_> {
        Told {
            est,
            lone_packages: n,
            upload_s: None,
            download_s: None,
        }
    }

    /// An estimator whose device 1 uploads `s` seconds of bytes per unit.
    fn staged(est: &ThroughputEstimator, s: Option<f64>) -> Told<'_> {
        Told {
            est,
            lone_packages: None,
            upload_s: s,
            download_s: None,
        }
    }

    impl PowerEstimator for Told<'_> {
        fn record(&self, device: usize, units: u64, seconds: f64) {
            self.est.record(device, units, seconds);
        }
        fn power(&self, device: usize) -> Option<f64> {
            self.est.power(device)
        }
        fn cost(&self, device: usize) -> Option<Cost> {
            self.est.cost(device)
        }
        fn lone_packages(&self, _device: usize) -> Option<u64> {
            self.lone_packages
        }
        fn upload_s_per_unit(&self, device: usize) -> Option<f64> {
            (device == 1).then_some(self.upload_s).flatten()
        }
        fn download_s_per_unit(&self, device: usize) -> Option<f64> {
            (device == 1).then_some(self.download_s).flatten()
        }
    }

    #[test]
    fn a_lone_gpu_cuts_its_run_in_the_packages_asked_for() {
        let slots = [DeviceSlot::gpu()];
        let est = ThroughputEstimator::new(1);
        est.record(0, 10_000, 1e-3);
        let p = Plan::new(&hg(None, 2.0, 1), &slots, 10_000, &est).unwrap();
        let mut gpu = p.claimant(0, 0);
        // Not asked: the whole rest.
        assert_eq!(p.package_size(&mut gpu, 10_000, &cut(&est, None)), 10_000);
        assert_eq!(p.package_size(&mut gpu, 10_000, &cut(&est, Some(1))), 10_000);
        // Four packages of a quarter of the run each, the last what is left.
        let four = cut(&est, Some(4));
        assert_eq!(p.package_size(&mut gpu, 10_000, &four), 2_500);
        assert_eq!(p.package_size(&mut gpu, 7_500, &four), 2_500);
        assert_eq!(p.package_size(&mut gpu, 1_000, &four), 1_000);
        // More packages than units: one unit each.
        let p = Plan::new(&hg(None, 2.0, 1), &slots, 3, &est).unwrap();
        let mut gpu = p.claimant(0, 0);
        assert_eq!(p.package_size(&mut gpu, 3, &cut(&est, Some(8))), 1);
    }

    #[test]
    fn a_staged_gpu_s_packages_end_in_a_geometric_tail() {
        // A worker of 1000 units/s beside a GPU of 99_000: the GPU's
        // share of what is left is 99%.
        let est = ThroughputEstimator::new(2);
        est.record(0, 1_000, 1.0);
        est.record(1, 99_000, 1.0);
        let slots = [DeviceSlot::cpu(1), DeviceSlot::gpu()];
        let p = Plan::new(&hg(None, 2.0, 1), &slots, 10_000, &est).unwrap();
        let size = |left, per_unit| {
            let mut gpu = p.claimant(1, 0);
            gpu.record(&(0..1), Source::Fresh);
            p.package_size(&mut gpu, left, &staged(&est, per_unit))
        };
        // Zero-copy: its whole share at once.
        let whole = size(10_000, None);
        assert!(whole > 8_000, "{whole}");
        // Staged (1 us a unit: the floor is 200 units): half of its
        // share, then half of what its share leaves, down to the floor.
        assert_eq!(size(10_000, Some(1e-6)), 4_950);
        assert_eq!(size(5_000, Some(1e-6)), 2_475);
        assert_eq!(size(300, Some(1e-6)), 200);
        assert_eq!(size(150, Some(1e-6)), size(150, None));
        // Bytes so cheap that the floor is the whole run: unchanged.
        assert_eq!(size(10_000, Some(1e-9)), whole);
    }

    /// Where the engine asks for it (two or more GPUs without the CPU,
    /// `COEXEC_DOWNLOAD_CAP=1`), a package that uploads nothing is cut
    /// for its downloads as one is for its uploads: of two equal GPUs,
    /// the second's first package is half of its share of what is left.
    #[test]
    fn packages_are_cut_for_downloads_where_the_engine_tells_them() {
        let est = ThroughputEstimator::new(2);
        est.record(0, 50_000, 1.0);
        est.record(1, 50_000, 1.0);
        let p = Plan::new(&hg(None, 2.0, 1), &gpus(2), 10_000, &est).unwrap();
        let size = |told: &Told<'_>| {
            let mut gpu = p.claimant(1, 0);
            gpu.record(&(0..1), Source::Fresh);
            p.package_size(&mut gpu, 10_000, told)
        };
        let whole = size(&staged(&est, None));
        let down = Told {
            download_s: Some(1e-6),
            ..staged(&est, None)
        };
        assert_eq!(size(&down), 2_500, "whole: {whole}");
        assert!(whole > 2_500, "{whole}");
        // Uploads, where told, set the floor as before.
        let both = Told {
            upload_s: Some(1e-6),
            ..down
        };
        assert_eq!(size(&both), 2_500);
    }

    #[test]
    fn a_gpu_measured_at_one_size_takes_twice_it_next() {
        // The GPU's one package of this run, 100 units, took 1 ms: a rate
        // of 100 units/ms, or a fixed cost of 1 ms and a far higher rate;
        // nothing tells them apart. The CPU is not measured yet: it counts
        // as the GPU's equal, and the formula gives the GPU a quarter of
        // what is left (75 of 300).
        let est = ThroughputEstimator::new(2);
        est.record(1, 100, 1e-3);
        let slots = [DeviceSlot::cpu(4), DeviceSlot::gpu()];
        let p = Plan::new(&hg(None, 2.0, 1), &slots, 1000, &est).unwrap();
        let mut gpu = p.claimant(1, 0);
        // A claimant that ran nothing of this run yet: the one size may be
        // a whole earlier run; not doubled.
        assert!(p.package_size(&mut gpu, 300, &est) < 100);
        gpu.record(&(0..100), Source::Fresh);
        assert_eq!(p.package_size(&mut gpu, 300, &est), 200);
        // Never more than is left.
        assert_eq!(p.package_size(&mut gpu, 150, &est), 150);
        // Once two sizes were measured (here: no fixed cost, 100 units/ms),
        // the formula again.
        est.record(1, 200, 2e-3);
        assert_eq!(est.one_size(1), None);
        assert_eq!(p.package_size(&mut gpu, 300, &est), 75);
    }

    #[test]
    fn hguided_exploration_then_measured() {
        let est = ThroughputEstimator::new(2);
        let p = Plan::new(&Scheduler::hguided(), &gpus(2), 100, &est).unwrap();
        let (mut a, mut b) = (p.claimant(0, 0), p.claimant(1, 0));
        // Unmeasured, first package: a probe of min_package = 1.
        assert_eq!(p.package_size(&mut a, 100, &est), 1);
        a.record(&(0..7), Source::Fresh);
        // Second package of an unmeasured device: no exploration, 25.
        assert_eq!(p.package_size(&mut a, 100, &est), 25);
        // Device 0 measured: device 1 (unmeasured) counts as the mean (equal)
        // and still probes on its first package.
        est.record(0, 3000, 1.0);
        assert_eq!(p.package_size(&mut b, 100, &est), 1);
        // ...and, while it is unmeasured, device 0's packages at most
        // double: its last was 7 units.
        assert_eq!(p.package_size(&mut a, 100, &est), 14);
        // Both measured, 3000 and 1000 u/s: the formula would say
        // ceil(100*3000/8000) = 38 and 13, but each GPU, its device's lone
        // claimant, takes FAIR_SHARE of its share of an even finish at once
        // (75 and 25 units).
        est.record(1, 1000, 1.0);
        assert_eq!(p.package_size(&mut a, 100, &est), 68);
        // The slower one's 23 units (23 ms) are past its guard (half of
        // the 33 ms the other needs for all): the most that passes it.
        assert_eq!(p.package_size(&mut b, 100, &est), 16);
        // Requeued work never explores.
        let fresh_b = p.claimant(1, 0);
        est.reset();
        assert_eq!(p.requeued_size(&fresh_b, 100, &est), 25);
    }

    /// Where a device's packages fell far from its fit (an irregular
    /// kernel), no device takes its whole share of an even finish at once:
    /// the formula's size, as before every cost was known.
    #[test]
    fn an_irregular_kernel_s_gpu_does_not_take_its_whole_share_at_once() {
        let size_of_first = |est: &ThroughputEstimator| {
            let p = Plan::new(&Scheduler::hguided(), &gpus(2), 100, est).unwrap();
            let mut a = p.claimant(0, 0);
            a.record(&(0..7), Source::Fresh);
            p.package_size(&mut a, 100, est)
        };
        // The same mean rates, 3000 and 1000 units/s: device 0 measured on
        // packages of one steady rate, or on packages 3.3 times slower and
        // faster by turns.
        let regular = ThroughputEstimator::new(2);
        regular.record(0, 3000, 1.0);
        regular.record(1, 1000, 1.0);
        let irregular = ThroughputEstimator::new(2);
        for _ in 0..4 {
            irregular.record(0, 3000, 1.0 / 3.3);
            irregular.record(0, 3000, 3.3);
        }
        irregular.record(1, 1000, 1.0);
        assert!(irregular.irregularity(0).unwrap() > IRREGULAR);
        assert!(regular.irregularity(0).is_none_or(|r| r < IRREGULAR));
        let p0 = irregular.power(0).unwrap();
        let formula = (100.0 * p0 / (2.0 * (p0 + 1000.0))).ceil() as u64;
        assert_eq!(size_of_first(&regular), 68, "its whole share at once");
        assert_eq!(size_of_first(&irregular), formula);
        assert!(formula < 50, "{formula}");
        // The risk against the cost of cutting: a GPU of 20 M units/s and
        // 100 us per package beside devices of 1 M (a twentieth) risks
        // about 150 us of their time on a spread of 1 over 65536 units,
        // less than its three halvings cost: whole. Beside 10 M (a third
        // of the rates), about 0.7 ms: cut. Regular: whole.
        let p = Plan::new(&Scheduler::hguided(), &gpus(2), 65_536, &regular).unwrap();
        let gpu = Cost {
            overhead_s: 100e-6,
            rate: 2e7,
        };
        let beside = |r: f64| move |j: usize| Some(if j == 0 { gpu } else { Cost::rate_only(r) });
        assert!(!p.whole_share_risks_idling(gpu, 65_536, 1.0, &beside(1e6)));
        assert!(p.whole_share_risks_idling(gpu, 65_536, 1.0, &beside(1e7)));
        assert!(!p.whole_share_risks_idling(gpu, 65_536, 0.1, &beside(1e7)));
    }

    #[test]
    fn dynamic_sizes() {
        let est = ThroughputEstimator::new(1);
        let p = Plan::new(&Scheduler::Dynamic { packages: 3 }, &gpus(1), 10, &est).unwrap();
        let mut c = p.claimant(0, 0);
        assert_eq!(p.package_size(&mut c, 10, &est), 4);
        assert_eq!(p.package_size(&mut c, 2, &est), 2);
        assert_eq!(p.requeued_size(&c, 9, &est), 4);
        let p = Plan::new(&Scheduler::Dynamic { packages: 50 }, &gpus(1), 10, &est).unwrap();
        assert_eq!(p.package_size(&mut p.claimant(0, 0), 10, &est), 1);
    }

    #[test]
    fn static_shares_by_hand() {
        let est = ThroughputEstimator::new(3);
        let devs = [DeviceSlot::gpu(), DeviceSlot::cpu(2), DeviceSlot::gpu()];
        // Equal powers: floors 3,3,3; leftover 1 to device 0 (tie -> first).
        let p = Plan::new(&Scheduler::Static { powers: None }, &devs, 10, &est).unwrap();
        assert_eq!(shares(&p), vec![vec![4], vec![2, 1], vec![3]]);
        // powers 1/2/3, G=100: floors 16,33,50; leftover 1 to device 2.
        let st = Scheduler::Static {
            powers: Some(vec![1.0, 2.0, 3.0]),
        };
        let p = Plan::new(&st, &devs, 100, &est).unwrap();
        assert_eq!(shares(&p), vec![vec![16], vec![17, 16], vec![51]]);
        // A zero-power device gets nothing.
        let st = Scheduler::Static {
            powers: Some(vec![0.0, 1.0, 1.0]),
        };
        let p = Plan::new(&st, &devs, 7, &est).unwrap();
        // Floors 0,3,3; leftover 1 to device 1 (first of the strongest).
        assert_eq!(shares(&p), vec![vec![0], vec![3, 1], vec![3]]);
        let mut z = p.claimant(0, 0);
        assert_eq!(p.package_size(&mut z, 7, &est), 0);
        // Power 0 takes requeued work only when no one else is left: its
        // device's share of it (device 0 has one claimant: all 5).
        assert_eq!(p.requeued_size(&z, 5, &est), 5);
    }

    #[test]
    fn static_claims_once_then_only_requeued() {
        let est = ThroughputEstimator::new(2);
        let p = Plan::new(
            &Scheduler::Static {
                powers: Some(vec![3.0, 1.0]),
            },
            &gpus(2),
            8,
            &est,
        )
        .unwrap();
        let q = WorkQueue::new(8);
        let (mut a, mut b) = (p.claimant(0, 0), p.claimant(1, 0));
        assert_eq!(p.claim(&q, &mut a, &est), Some((0..6, Source::Fresh)));
        assert_eq!(p.claim(&q, &mut a, &est), None);
        // b fails before claiming: forfeit claims and requeues its share.
        p.forfeit(&q, &mut b, &est);
        assert_eq!(q.requeued_units(), 2);
        assert_eq!(q.remaining(), 0);
        // a is done with fresh work but drains the requeued range:
        // ceil(2 * 0.75) = 2.
        assert_eq!(p.claim(&q, &mut a, &est), Some((6..8, Source::Requeued)));
        assert_eq!((a.packages(), a.requeued_packages(), a.units()), (1, 1, 8));
        assert_eq!(p.claim(&q, &mut a, &est), None);
    }

    #[test]
    fn static_uses_full_measurements() {
        let est = ThroughputEstimator::new(2);
        est.record(0, 300, 1.0);
        let st = Scheduler::Static { powers: None };
        let p = Plan::new(&st, &gpus(2), 8, &est).unwrap();
        assert_eq!(shares(&p), vec![vec![4], vec![4]]); // one unmeasured: equal
        est.record(1, 100, 1.0);
        let p = Plan::new(&st, &gpus(2), 8, &est).unwrap();
        assert_eq!(shares(&p), vec![vec![6], vec![2]]);
    }

    #[test]
    fn plan_errors() {
        let est = ThroughputEstimator::new(2);
        let devs = [DeviceSlot::gpu(), DeviceSlot::cpu(0)];
        assert_eq!(
            Plan::new(&Scheduler::hguided(), &devs, 10, &est).unwrap_err(),
            SchedError::NoClaimants { device: 1 }
        );
        assert_eq!(
            Plan::new(&Scheduler::hguided(), &[], 10, &est).unwrap_err(),
            SchedError::NoDevices
        );
        assert_eq!(
            Plan::new(&Scheduler::Dynamic { packages: 0 }, &gpus(1), 10, &est).unwrap_err(),
            SchedError::ZeroPackages
        );
    }

    #[test]
    #[should_panic(expected = "out of range")]
    fn claimant_out_of_range_panics() {
        let est = ThroughputEstimator::new(1);
        let p = Plan::new(&Scheduler::hguided(), &gpus(1), 10, &est).unwrap();
        let _ = p.claimant(0, 1);
    }

    #[test]
    fn snapping() {
        assert_eq!(ceil_u64(29.000000000000004), 29);
        assert_eq!(ceil_u64(28.99999999999999), 29);
        assert_eq!(ceil_u64(6.25), 7);
        assert_eq!(floor_u64(32.99999999999999), 33);
        assert_eq!(floor_u64(f64::NAN), 0);
        assert_eq!(ceil_u64(-3.0), 0);
    }

    #[test]
    fn hguided_lone_claimant_takes_everything_at_once() {
        let est = crate::sched::ThroughputEstimator::new(1);
        // With hints: no probe, all at once.
        let p = Plan::new(&hg(Some(vec![1.0]), 4.0, 3), &gpus(1), 1000, &est).unwrap();
        let mut gpu = p.claimant(0, 0);
        assert_eq!(p.package_size(&mut gpu, 1000, &est), 1000);
        // Requeued work keeps the formula: ceil(100 / k).
        assert_eq!(p.requeued_size(&gpu, 100, &est), 25);
        // Without hints: an unmeasured device probes first, then takes the
        // rest at once.
        let p = Plan::new(&hg(None, 2.0, 1), &gpus(1), 1000, &est).unwrap();
        let mut gpu = p.claimant(0, 0);
        assert_eq!(p.package_size(&mut gpu, 1000, &est), 1);
        est.record(0, 1, 1e-3);
        assert_eq!(p.package_size(&mut gpu, 999, &est), 999);
        assert_eq!(p.requeued_size(&gpu, 100, &est), 50);
        // Two claimants of one device still share by the formula:
        // 1000 * (P / 2) / (2 * P).
        let p = Plan::new(&hg(None, 2.0, 1), &[DeviceSlot::cpu(2)], 1000, &est).unwrap();
        let mut w = p.claimant(0, 0);
        assert_eq!(p.package_size(&mut w, 1000, &est), 250);
    }

    /// A run smaller than one wave per GPU: the GPUs' granules shrink to
    /// an even split; larger runs, one GPU, and the CPU keep their own.
    #[test]
    fn small_runs_split_granules_between_gpus() {
        let wave = |n: usize| vec![DeviceSlot::gpu().with_granule(1056); n];
        assert_eq!(granules(&wave(2), 1024), [512, 512]);
        assert_eq!(granules(&wave(3), 1024), [342, 342, 342]);
        assert_eq!(granules(&wave(4), 3000), [750; 4]);
        // Enough for a whole wave each: unchanged.
        assert_eq!(granules(&wave(2), 2112), [1056, 1056]);
        assert_eq!(granules(&wave(1), 10), [1056]);
        let mut mixed = vec![DeviceSlot::cpu(4)];
        mixed.extend(wave(2));
        assert_eq!(granules(&mixed, 1024), [1, 512, 512]);
        // A GPU of unknown width (granule 1) does not count.
        let odd = [DeviceSlot::gpu(), DeviceSlot::gpu().with_granule(1056)];
        assert_eq!(granules(&odd, 100), [1, 1056]);
        assert_eq!(granules(&wave(2), 1), [1, 1]);
    }

    /// 2 to 4 simulated GPUs of equal measured speed on a run of fewer
    /// work-groups than one of them holds in a wave (nbody at 262144 on
    /// H200s): HGuided gives every GPU a part, none more than an even
    /// split's granule, and covers the run exactly once.
    #[test]
    fn a_run_under_one_wave_spreads_over_every_gpu() {
        for m in 2..=4usize {
            let est = crate::sched::ThroughputEstimator::new(m);
            for d in 0..m {
                for _ in 0..4 {
                    est.record(d, 1024, 4e-2);
                }
            }
            let slots = vec![DeviceSlot::gpu().with_granule(1056); m];
            let total = 1024;
            let p = Plan::new(&hg(None, 2.0, 1), &slots, total, &est).unwrap();
            let queue = WorkQueue::new(total);
            let mut claimants: Vec<_> = (0..m).map(|d| p.claimant(d, 0)).collect();
            let mut got = vec![0u64; m];
            let mut covered = 0;
            'run: loop {
                for (d, c) in claimants.iter_mut().enumerate() {
                    let Some((r, _)) = p.claim(&queue, c, &est) else {
                        break 'run;
                    };
                    got[d] += r.end - r.start;
                    covered += r.end - r.start;
                    queue.complete(r.end - r.start);
                }
            }
            assert_eq!(covered, total, "{m} GPUs: {got:?}");
            let even = total.div_ceil(m as u64);
            assert!(got.iter().all(|&u| u > 0 && u <= even), "{m} GPUs: {got:?}");
        }
    }

    /// Two identical measured GPUs (no hints): the second to claim sizes
    /// its share of an even finish counting what the first claimed and
    /// holds, so the first packages are alike (without it, the second
    /// took 0.9 of half of what the first left: about 25% of the run
    /// against the first's 45%).
    #[test]
    fn the_second_of_two_identical_gpus_counts_what_the_first_holds() {
        let est = crate::sched::ThroughputEstimator::new(2);
        for d in 0..2 {
            for n in [1000, 4000, 1000, 4000] {
                est.record(d, n, 1e-5 + n as f64 * 1e-6);
            }
        }
        let slots = [DeviceSlot::gpu(), DeviceSlot::gpu()];
        let total = 100_000;
        let p = Plan::new(&hg(None, 2.0, 1), &slots, total, &est).unwrap();
        let queue = WorkQueue::new(total);
        let (mut a, mut b) = (p.claimant(0, 0), p.claimant(1, 0));
        let (first, _) = p.claim(&queue, &mut a, &est).unwrap();
        let (second, _) = p.claim(&queue, &mut b, &est).unwrap();
        let (n1, n2) = (first.end - first.start, second.end - second.start);
        // The first GPU holds its claim from the claim on.
        assert_eq!(p.held.get(0), n1);
        assert!(n1 > total / 3 && n1 <= total / 2, "{n1} {n2}");
        assert!(n2 * 10 >= n1 * 9, "the second's {n2} against the first's {n1}");
        assert!(n1 + n2 < total, "the tail is left to balance: {n1} {n2}");
    }

    #[test]
    fn hguided_rounds_fresh_packages_up_to_the_granule() {
        let est = crate::sched::ThroughputEstimator::new(2);
        let slots = [DeviceSlot::cpu(1), DeviceSlot::gpu().with_granule(8)];
        let p = Plan::new(&hg(Some(vec![1.0, 1.0]), 2.0, 1), &slots, 1000, &est).unwrap();
        let mut cpu = p.claimant(0, 0);
        let mut gpu = p.claimant(1, 0);
        // 1000 * 1 / (2 * 2) = 250: the GPU takes 32 whole granules, the CPU
        // (granule 1) exactly 250.
        assert_eq!(p.package_size(&mut gpu, 1000, &est), 256);
        assert_eq!(p.package_size(&mut cpu, 1000, &est), 250);
        // Small G_r: still one whole granule, capped at what is left.
        assert_eq!(p.package_size(&mut gpu, 20, &est), 8);
        assert_eq!(p.package_size(&mut gpu, 5, &est), 5);
        // Requeued work is split by the formula alone: ceil(10 / 4) = 3.
        assert_eq!(p.requeued_size(&gpu, 10, &est), 3);
        // Without hints the GPU's probe is one granule, not `min_package`.
        let p = Plan::new(&hg(None, 2.0, 1), &slots, 1000, &est).unwrap();
        let mut gpu = p.claimant(1, 0);
        assert_eq!(p.package_size(&mut gpu, 1000, &est), 8);
    }

    #[test]
    fn hguided_slow_device_declines_only_when_it_would_finish_last() {
        let est = crate::sched::ThroughputEstimator::new(2);
        let slots = [DeviceSlot::cpu(1), DeviceSlot::gpu()];
        let p = Plan::new(&hg(Some(vec![1.0, 100.0]), 2.0, 1), &slots, 1000, &est).unwrap();
        let mut cpu = p.claimant(0, 0);
        let mut gpu = p.claimant(1, 0);
        // Plenty left: the CPU takes its proportional share.
        assert_eq!(p.package_size(&mut cpu, 1000, &est), 5);
        // 10 units left: one unit on the CPU takes longer than the GPU needs
        // for all ten, so the CPU declines; the GPU never does.
        assert_eq!(p.package_size(&mut cpu, 10, &est), 0);
        // So the GPU takes all ten at once instead of ceil(10*100/202) = 5.
        assert_eq!(p.package_size(&mut gpu, 10, &est), 10);
        assert_eq!(p.package_size(&mut gpu, 1, &est), 1);
        // While the CPU would still take work, the GPU keeps the formula:
        // ceil(1000 * 100 / 202) = 496.
        assert_eq!(p.package_size(&mut gpu, 1000, &est), 496);
        // Requeued work is never declined.
        assert!(p.requeued_size(&cpu, 10, &est) >= 1);
        // Equal per-claimant powers: nobody declines.
        let p = Plan::new(&hg(Some(vec![1.0, 1.0]), 2.0, 1), &slots, 1000, &est).unwrap();
        let mut cpu = p.claimant(0, 0);
        assert_eq!(p.package_size(&mut cpu, 1, &est), 1);
    }

    /// A device that holds work in flight is not free for what is left:
    /// a slower claimant's guard counts what the others hold (see `Held`).
    #[test]
    fn the_guard_counts_what_the_other_devices_hold() {
        let est = crate::sched::ThroughputEstimator::new(2);
        let slots = [DeviceSlot::cpu(1), DeviceSlot::gpu()];
        let p = Plan::new(&hg(Some(vec![1.0, 100.0]), 2.0, 1), &slots, 1000, &est).unwrap();
        let mut cpu = p.claimant(0, 0);
        // The GPU free: one unit on the CPU outlasts the GPU's ten.
        assert_eq!(p.package_size(&mut cpu, 10, &est), 0);
        // The GPU holding 1000 units: 10.1 s before it is done with the
        // ten; the CPU takes work.
        p.set_held(1, 1000);
        assert!(p.package_size(&mut cpu, 10, &est) >= 1);
        p.set_held(1, 0);
        assert_eq!(p.package_size(&mut cpu, 10, &est), 0);
        // The CPU's workers are not counted (the GPUs take their
        // remainders back).
        p.set_held(0, 1000);
        assert_eq!(p.held.get(0), 0);
        // A cloned plan is another run's: nothing held.
        p.set_held(1, 1000);
        assert_eq!(p.clone().held.get(1), 0);
    }

    #[test]
    fn hguided_fastest_takes_the_rest_only_when_no_one_else_would() {
        let est = crate::sched::ThroughputEstimator::new(2);
        // A slow GPU (granule 8, power 1) next to one CPU worker of power
        // 100: the GPU's smallest package, one granule, takes longer than half
        // the time the worker needs for all that is left once fewer than 1600
        // units are left (8 * 100 > 0.5 * left * 1). From there on the worker
        // takes everything at once.
        let slots = [DeviceSlot::cpu(1), DeviceSlot::gpu().with_granule(8)];
        let p = Plan::new(&hg(Some(vec![100.0, 1.0]), 2.0, 1), &slots, 20000, &est).unwrap();
        let (mut cpu, mut gpu) = (p.claimant(0, 0), p.claimant(1, 0));
        assert_eq!(p.package_size(&mut gpu, 16000, &est), 80); // ceil(16000/202)
        assert_eq!(p.package_size(&mut cpu, 16000, &est), 7921); // ceil(16000*100/202)
        assert_eq!(p.package_size(&mut gpu, 1500, &est), 0);
        assert_eq!(p.package_size(&mut cpu, 1500, &est), 1500);
        // The same powers on a CPU of four workers: one worker never takes the
        // whole rest from the other three.
        let slots = [DeviceSlot::cpu(4), DeviceSlot::gpu()];
        let p = Plan::new(&hg(Some(vec![400.0, 1.0]), 2.0, 1), &slots, 5000, &est).unwrap();
        assert_eq!(p.package_size(&mut p.claimant(1, 0), 100, &est), 0);
        // ceil(100 * 100 / 802)
        assert_eq!(p.package_size(&mut p.claimant(0, 0), 100, &est), 13);
        // Without hints the rule needs every device measured.
        let p = Plan::new(&hg(None, 2.0, 1), &slots[..], 5000, &est).unwrap();
        let mut gpu = p.claimant(1, 0);
        gpu.record(&(0..1), Source::Fresh);
        est.record(1, 1_000_000, 1.0);
        // The CPU counts as the mean of the measured: 100 * 1 / (2 * 2) = 25,
        // but while it is unmeasured the GPU at most doubles its last (1).
        assert_eq!(p.package_size(&mut gpu, 100, &est), 2);
        est.record(0, 1, 1.0);
        assert_eq!(p.package_size(&mut gpu, 100, &est), 100);
    }

    #[test]
    fn hguided_packages_pay_for_their_overhead_until_the_even_finish() {
        use crate::sched::Cost;
        let est = crate::sched::ThroughputEstimator::new(2);
        // A CPU of two workers and a GPU of equal rate whose packages pay
        // 1 ms each (worth 1000 units): a fresh GPU package is at least
        // 4000 units (overhead at most 20% of it)...
        est.seed(0, Cost::rate_only(1e6), 4.0);
        est.seed(
            1,
            Cost {
                overhead_s: 1e-3,
                rate: 1e6,
            },
            4.0,
        );
        let slots = [DeviceSlot::cpu(2), DeviceSlot::gpu()];
        let p = Plan::new(&hg(None, 2.0, 1), &slots, 100_000, &est).unwrap();
        let (mut cpu, mut gpu) = (p.claimant(0, 0), p.claimant(1, 0));
        cpu.record(&(0..1), Source::Fresh);
        gpu.record(&(1..2), Source::Fresh);
        // The GPU is its device's lone claimant and every cost is known:
        // FAIR_SHARE of its share of an even finish at once, whatever the
        // formula (ceil(100000 / 4) = 25000) says: T = (100000 + 1000) /
        // 2e6 = 50.5 ms, its share (50.5 - 1) ms * 1e6 = 49500 units.
        assert_eq!(p.package_size(&mut gpu, 100_000, &est), 44_550);
        // 10000 left: 4050 of 4500.
        assert_eq!(p.package_size(&mut gpu, 10_000, &est), 4_050);
        // With 3000 left: T = (3000 + 1000) / 2e6 = 2 ms, the GPU's share
        // 1000 units, 900 of them taken.
        assert_eq!(p.package_size(&mut gpu, 3_000, &est), 900);
        // With 1000 left, the GPU's overhead alone outlasts the CPU doing
        // everything (1 ms): the fastest device declines too.
        assert_eq!(p.package_size(&mut gpu, 1_000, &est), 0);
        assert!(gpu.declined_s().unwrap() > 1e-3);
        // 2000 left: 500 units (1.5 ms) end before the CPU's 2 ms alone...
        assert_eq!(p.package_size(&mut gpu, 2_000, &est), 500);
        // ...unless claimed ahead, behind 1 ms of packages in flight.
        gpu.set_backlog_s(1e-3);
        assert_eq!(p.package_size(&mut gpu, 2_000, &est), 0);
        assert!((gpu.declined_s().unwrap() - 2.5e-3).abs() < 1e-9);
        gpu.set_backlog_s(f64::NAN);
        assert_eq!(p.package_size(&mut gpu, 2_000, &est), 500);
        // A CPU worker (no overhead) keeps the formula: 10000 * 0.5 / 4.
        assert_eq!(p.package_size(&mut cpu, 10_000, &est), 1_250);
        assert_eq!(cpu.declined_s(), None);
    }

    /// A claimant whose package first pays a one-time start declines
    /// where it could start no sooner than half the time the others need
    /// for all that is left, however fast it is once started; with a
    /// shorter start it takes work.
    #[test]
    fn a_cold_start_past_half_the_others_time_declines() {
        use crate::sched::Cost;
        let est = crate::sched::ThroughputEstimator::new(2);
        // A CPU worker at 1e6 units/s, a GPU ten times faster.
        est.seed(0, Cost::rate_only(1e6), 4.0);
        est.seed(1, Cost::rate_only(1e7), 4.0);
        let slots = [DeviceSlot::cpu(1), DeviceSlot::gpu()];
        let p = Plan::new(&hg(None, 2.0, 1), &slots, 1000, &est).unwrap();
        let mut gpu = p.claimant(1, 0);
        // The CPU alone does the 1000 units in 1 ms.
        for (cold, takes) in [(0.6e-3, false), (0.3e-3, true), (0.0, true)] {
            gpu.set_backlog_s(cold);
            gpu.set_cold_start_s(cold);
            let size = p.package_size(&mut gpu, 1000, &est);
            assert_eq!(size > 0, takes, "cold {cold}: {size}");
            if !takes {
                assert_eq!(gpu.declined_s(), Some(cold));
            }
        }
        // Not a number, or negative: no start.
        gpu.set_cold_start_s(f64::NAN);
        gpu.set_backlog_s(0.0);
        assert!(p.package_size(&mut gpu, 1000, &est) > 0);
    }

    /// The claimants of `slots` claim in turn, each taking what the plan
    /// gives it at once, until the queue is empty or a whole round passes
    /// in which nobody claims anything (`cold`: per device, the one-time
    /// start its claimants report). Returns the units each device took and
    /// the units nobody would take.
    fn claim_in_turn(
        p: &Plan,
        est: &dyn PowerEstimator,
        cold: &[f64],
        total: u64,
    ) -> (Vec<u64>, u64) {
        let queue = WorkQueue::new(total);
        let mut claimants: Vec<ClaimantState> = (0..p.devices())
            .flat_map(|d| (0..p.claimants(d)).map(move |j| (d, j)))
            .map(|(d, j)| p.claimant(d, j))
            .collect();
        let mut units = vec![0; p.devices()];
        loop {
            let mut any = false;
            for c in &mut claimants {
                let start = cold.get(c.device()).copied().unwrap_or(0.0);
                c.set_backlog_s(start);
                c.set_cold_start_s(start);
                if let Some((r, _)) = p.claim(&queue, c, est) {
                    units[c.device()] += r.end - r.start;
                    any = true;
                }
            }
            if queue.remaining() == 0 || !any {
                return (units, queue.remaining());
            }
        }
    }

    /// A claimant that declines for its one-time start counts as absent
    /// to the others' guards: the fastest device left always takes work.
    /// A fast GPU whose cold start comes past half the CPU's time declined,
    /// while the CPU, a hundred times slower, declined by its finish-time
    /// guard because the GPU could do everything: nobody took the rest,
    /// and every claimant waited for a run that never ended (a C example
    /// under valgrind, where the GPU's start was long). Two cold GPUs
    /// without a CPU, each declining for the other, likewise.
    #[test]
    fn a_cold_start_never_leaves_work_that_nobody_takes() {
        use crate::sched::Cost;
        let est = crate::sched::ThroughputEstimator::new(3);
        // One CPU worker at 1e3 units/s: 1000 units take it 1 s, one unit
        // 1 ms; the GPUs 1e5 units/s (1000 units in 10 ms).
        est.seed(0, Cost::rate_only(1e3), 4.0);
        est.seed(1, Cost::rate_only(1e5), 4.0);
        est.seed(2, Cost::rate_only(1e5), 4.0);
        let cpu_gpu = [DeviceSlot::cpu(1), DeviceSlot::gpu()];
        let p = Plan::new(&hg(None, 2.0, 1), &cpu_gpu, 1000, &est).unwrap();
        // The GPU starts after 0.6 s: past half the CPU's 1 s.
        let (units, left) = claim_in_turn(&p, &est, &[0.0, 0.6], 1000);
        assert_eq!(left, 0, "nobody took {left} units: {units:?}");
        assert!(units[0] > 0, "the CPU took the work: {units:?}");
        // Warm, in a run of its own, the GPU takes its share as before.
        let p = Plan::new(&hg(None, 2.0, 1), &cpu_gpu, 1000, &est).unwrap();
        let (units, left) = claim_in_turn(&p, &est, &[0.0, 0.0], 1000);
        assert_eq!(left, 0);
        assert!(units[1] > units[0], "{units:?}");

        let two = [DeviceSlot::gpu(), DeviceSlot::gpu()];
        let est2 = crate::sched::ThroughputEstimator::new(2);
        est2.seed(0, Cost::rate_only(1e5), 4.0);
        est2.seed(1, Cost::rate_only(1e5), 4.0);
        let p = Plan::new(&hg(None, 2.0, 1), &two, 1000, &est2).unwrap();
        let (units, left) = claim_in_turn(&p, &est2, &[1.0, 1.0], 1000);
        assert_eq!(left, 0, "nobody took {left} units: {units:?}");
    }

    /// Where no device works while fresh work is left (a guard that broke
    /// the progress rule; here a GPU whose claimant never comes), a
    /// claimant that keeps finding nothing takes a package past its guard
    /// after `STALL_CLAIMS` claims, and again after as many once it is
    /// done; while a package is in flight, or under the other policies,
    /// nothing changes.
    #[test]
    fn a_run_in_which_no_device_works_is_unstalled() {
        use crate::sched::Cost;
        let est = crate::sched::ThroughputEstimator::new(2);
        // One unit takes the CPU 100 ms; the GPU all 1000 in 10 ms.
        est.seed(0, Cost::rate_only(10.0), 4.0);
        est.seed(1, Cost::rate_only(1e5), 4.0);
        let devs = [DeviceSlot::cpu(1), DeviceSlot::gpu()];
        let p = Plan::new(&hg(None, 2.0, 1), &devs, 1000, &est).unwrap();
        let queue = WorkQueue::new(1000);
        let mut cpu = p.claimant(0, 0);
        // The GPU could do it all: the CPU's guard declines.
        let mut asked = 0;
        let first = loop {
            asked += 1;
            if let Some((r, _)) = p.claim(&queue, &mut cpu, &est) {
                break r;
            }
            assert!(asked <= STALL_CLAIMS, "still nothing after {asked} claims");
        };
        assert_eq!(asked, STALL_CLAIMS);
        // In flight: nothing more until it is done.
        for _ in 0..2 * STALL_CLAIMS {
            assert_eq!(p.claim(&queue, &mut cpu, &est), None);
        }
        queue.complete(first.end - first.start);
        let mut asked = 0;
        while p.claim(&queue, &mut cpu, &est).is_none() {
            asked += 1;
            assert!(asked < STALL_CLAIMS, "still nothing after {asked} claims");
        }
        assert_eq!(asked, STALL_CLAIMS - 1);
        // A GPU package in flight: the CPU waits for it as before.
        let queue = WorkQueue::new(1000);
        let mut cpu = p.claimant(0, 0);
        assert_eq!(queue.claim_fresh(|_| 100), Some(0..100));
        for _ in 0..2 * STALL_CLAIMS {
            assert_eq!(p.claim(&queue, &mut cpu, &est), None);
        }
        // Static owes nothing more to a claimant that took its share.
        let st = Scheduler::Static {
            powers: Some(vec![0.0, 1.0]),
        };
        let p = Plan::new(&st, &devs, 1000, &est).unwrap();
        let queue = WorkQueue::new(1000);
        let mut cpu = p.claimant(0, 0);
        for _ in 0..2 * STALL_CLAIMS {
            assert_eq!(p.claim(&queue, &mut cpu, &est), None);
        }
    }

    #[test]
    fn hguided_guard_counts_overheads_and_reports_what_it_declined() {
        use crate::sched::Cost;
        let est = crate::sched::ThroughputEstimator::new(2);
        // A slow device (rate 1e5, 2 ms per package) and a fast one (1e6).
        est.seed(
            0,
            Cost {
                overhead_s: 2e-3,
                rate: 1e5,
            },
            4.0,
        );
        est.seed(1, Cost::rate_only(1e6), 4.0);
        let slots = [DeviceSlot::gpu(), DeviceSlot::gpu()];
        let p = Plan::new(&hg(None, 2.0, 1), &slots, 1_000_000, &est).unwrap();
        let mut slow = p.claimant(0, 0);
        slow.record(&(0..1), Source::Fresh);
        // 10000 left: the fast one alone needs 10 ms. The slow one's
        // package is FAIR_SHARE of its share of an even finish, 655 of 728
        // units (under the 800 that would pay its overhead): 8.55 ms, past
        // the guard's 5 ms; it takes the most that ends within them, 300.
        assert_eq!(p.package_size(&mut slow, 10_000, &est), 300);
        assert_eq!(slow.declined_s(), None);
        // 3000 left: even one unit (2.01 ms) is past 1.5 ms: declined, and
        // the package it declined (137 units by the formula) took 3.37 ms.
        assert_eq!(p.package_size(&mut slow, 3_000, &est), 0);
        let t = slow.declined_s().unwrap();
        assert!((t - 3.37e-3).abs() < 1e-9, "{t}");
        // Without the overhead: 819 units (FAIR_SHARE of its even-finish
        // share) take 8.19 ms, past the 5 ms of the guard: the most that
        // passes it.
        let est2 = crate::sched::ThroughputEstimator::new(2);
        est2.seed(0, Cost::rate_only(1e5), 4.0);
        est2.seed(1, Cost::rate_only(1e6), 4.0);
        let mut slow2 = p.claimant(0, 0);
        slow2.record(&(0..1), Source::Fresh);
        assert_eq!(p.package_size(&mut slow2, 10_000, &est2), 499);
        assert_eq!(slow2.declined_s(), None);
        // A device of hinted power 0 declines, with an infinite package.
        let p = Plan::new(&hg(Some(vec![0.0, 1.0]), 2.0, 1), &slots, 100, &est).unwrap();
        let mut zero = p.claimant(0, 0);
        assert_eq!(p.package_size(&mut zero, 100, &est), 0);
        assert_eq!(zero.declined_s(), Some(f64::INFINITY));
    }

    #[test]
    fn one_probe_per_device_while_it_is_unmeasured() {
        let est = crate::sched::ThroughputEstimator::new(2);
        let slots = [DeviceSlot::cpu(4), DeviceSlot::gpu()];
        let p = Plan::new(&hg(None, 2.0, 1), &slots, 1000, &est).unwrap();
        // Worker 0 probes; workers 1-3 wait for its measurement.
        assert_eq!(p.package_size(&mut p.claimant(0, 0), 1000, &est), 1);
        for j in 1..4 {
            assert_eq!(p.package_size(&mut p.claimant(0, j), 1000, &est), 0);
        }
        assert_eq!(p.package_size(&mut p.claimant(1, 0), 1000, &est), 1);
        // Measured: every worker takes work.
        est.record(0, 100, 1e-3);
        est.record(0, 300, 3e-3);
        assert!(p.package_size(&mut p.claimant(0, 3), 1000, &est) > 0);
        // A device alone, or with hints: every claimant starts at once.
        let alone = Plan::new(&hg(None, 2.0, 1), &slots[..1], 1000, &est).unwrap();
        est.reset();
        assert_eq!(alone.package_size(&mut alone.claimant(0, 3), 1000, &est), 1);
        let hinted = Plan::new(&hg(Some(vec![1.0, 1.0]), 2.0, 1), &slots, 1000, &est).unwrap();
        assert!(hinted.package_size(&mut hinted.claimant(0, 3), 1000, &est) > 0);
        // A GPU's probe is a wave (8 units), unless the run holds fewer than
        // PROBE_SHARE waves: then one unit, leaving the rest to measure the
        // others by.
        let slots = [DeviceSlot::cpu(1), DeviceSlot::gpu().with_granule(8)];
        let p = Plan::new(&hg(None, 2.0, 1), &slots, 1000, &est).unwrap();
        assert_eq!(p.package_size(&mut p.claimant(1, 0), 1000, &est), 8);
        assert_eq!(p.package_size(&mut p.claimant(1, 0), 60, &est), 1);
    }

    #[test]
    fn an_unmeasured_cpu_grows_from_its_probe() {
        let est = crate::sched::ThroughputEstimator::new(2);
        let slots = [DeviceSlot::cpu(15), DeviceSlot::gpu().with_granule(1056)];
        let p = Plan::new(&hg(None, 2.0, 1), &slots, 32768, &est).unwrap();
        let q = WorkQueue::new(32768);
        let mut w0 = p.claimant(0, 0);
        // The probe, then, its time not yet trusted, packages that double.
        let sizes: Vec<u64> = (0..4)
            .map(|_| p.claim(&q, &mut w0, &est).map_or(0, |(r, _)| r.end - r.start))
            .collect();
        assert_eq!(sizes, vec![1, 2, 4, 8]);
        // Each package published as a worker does while its device is
        // unmeasured (at once, as throughput): three make a measurement.
        for (i, n) in [1u64, 2, 4].into_iter().enumerate() {
            assert!(est.power(0).is_none(), "measured after {i} packages");
            est.record_throughput(0, n, n as f64 * 1e-6, 15.0);
        }
        assert!(est.power(0).is_some());
        est.reset();
        // A lone claimant (a GPU) is not held to doubling: after its probe
        // it takes its share as before.
        let mut gpu = p.claimant(1, 0);
        let probe = p.claim(&q, &mut gpu, &est).map(|(r, _)| r.end - r.start);
        assert_eq!(probe, Some(1056));
        let next = p.claim(&q, &mut gpu, &est).map_or(0, |(r, _)| r.end - r.start);
        assert!(next > 2 * 1056, "{next}");
        // Both measured, comparable: every worker takes work, sized from
        // the measurements, not from its own last package.
        est.record(0, 100, 1e-3);
        est.record(0, 300, 3e-3);
        est.record(1, 100, 1e-3);
        est.record(1, 300, 3e-3);
        let mut w1 = p.claimant(0, 1);
        let first = p.claim(&q, &mut w1, &est).map_or(0, |(r, _)| r.end - r.start);
        assert!(first > 2, "{first}");
    }

    #[test]
    fn an_unmeasured_cpu_holds_its_probe_back_from_a_run_within_a_gpu_wave() {
        // An n-body step of 1536 work-groups on a GPU whose wave holds 2112.
        let est = crate::sched::ThroughputEstimator::new(2);
        let slots = [DeviceSlot::cpu(4), DeviceSlot::gpu().with_granule(2112)];
        let p = Plan::new(&hg(None, 2.0, 1), &slots, 1536, &est).unwrap();
        for j in 0..4 {
            assert_eq!(p.package_size(&mut p.claimant(0, j), 1536, &est), 0);
        }
        // The GPU sizes its packages as if alone: its probe is the run,
        // and once measured it is not held to twice its last package.
        let mut gpu = p.claimant(1, 0);
        assert_eq!(p.package_size(&mut gpu, 1536, &est), 1536);
        gpu.record(&(0..64), Source::Fresh);
        est.record(1, 64, 1e-3);
        assert_eq!(p.package_size(&mut gpu, 1000, &est), 1000);
        // A run over more than one wave: the CPU probes as before.
        est.reset();
        let p = Plan::new(&hg(None, 2.0, 1), &slots, 5000, &est).unwrap();
        assert_eq!(p.package_size(&mut p.claimant(0, 0), 5000, &est), 1);
        // ... and its probe is held back once what is left fits a wave.
        assert_eq!(p.package_size(&mut p.claimant(0, 0), 2000, &est), 0);
        // A measured CPU is left to the finish-time guard.
        est.record(0, 10, 1e-3);
        est.record(0, 30, 3e-3);
        assert!(p.package_size(&mut p.claimant(0, 1), 2000, &est) > 0);
        // No GPU of a known width: nothing is held back.
        est.reset();
        let slots = [DeviceSlot::cpu(4), DeviceSlot::gpu()];
        let p = Plan::new(&hg(None, 2.0, 1), &slots, 10, &est).unwrap();
        assert_eq!(p.package_size(&mut p.claimant(0, 0), 10, &est), 1);
    }

    /// A GPU's share of an even finish counts what the CPU workers hold
    /// unstarted: beside a lone worker that took its whole share, the GPU
    /// takes about the rest in one package instead of a share of it.
    #[test]
    fn a_gpus_share_counts_what_the_workers_hold_unstarted() {
        // Black-Scholes on the dev machine: the worker at 345 k units/s,
        // the GPU at 470 k with 40 us a package; 391 units, the worker
        // holding 191 of them.
        let est = crate::sched::ThroughputEstimator::new(2);
        est.seed(0, Cost::rate_only(345e3), 8.0);
        est.seed(
            1,
            Cost {
                overhead_s: 40e-6,
                rate: 470e3,
            },
            8.0,
        );
        let slots = [DeviceSlot::cpu(1), DeviceSlot::gpu()];
        let p = Plan::new(&hg(None, 2.0, 1), &slots, 391, &est).unwrap();
        let take = |held: u64| {
            let mut gpu = p.claimant(1, 0);
            gpu.set_others_held(held);
            p.package_size(&mut gpu, 200, &est)
        };
        let free = take(0);
        assert!(free < 120, "{free}");
        // All but what FAIR_SHARE leaves to the finer-grained worker.
        let counted = take(191);
        assert!(counted >= 180, "{counted} against {free}");
    }

    #[test]
    fn a_measuring_run_lets_the_cpu_probe_and_counts_the_joining_gpu_absent() {
        // A run within the GPU's wave, the GPU measured, the CPU not.
        let est = crate::sched::ThroughputEstimator::new(2);
        est.record(1, 100, 1e-3);
        est.record(1, 300, 3e-3);
        let slots = [DeviceSlot::cpu(4), DeviceSlot::gpu().with_granule(2112)];
        let held = Plan::new(&hg(None, 2.0, 1), &slots, 1536, &est).unwrap();
        assert_eq!(held.package_size(&mut held.claimant(0, 0), 1536, &est), 0);
        // Measuring the CPU: its first claimant probes, the others wait
        // for the measurement.
        let p = Plan::new(&hg(None, 2.0, 1), &slots, 1536, &est)
            .unwrap()
            .measuring(&[1]);
        assert_eq!(p.package_size(&mut p.claimant(0, 0), 1536, &est), 1);
        assert_eq!(p.package_size(&mut p.claimant(0, 1), 1536, &est), 0);
        // Measured now, a unit taking 100 ms where the GPU ends the rest
        // in 15: the finish-time guard of an ordinary run declines its
        // workers' packages, of the measuring run takes them (the GPU has
        // not joined).
        est.record(0, 1, 0.1);
        est.record(0, 3, 0.3);
        assert_eq!(held.package_size(&mut held.claimant(0, 1), 1500, &est), 0);
        assert!(p.package_size(&mut p.claimant(0, 1), 1500, &est) > 0);
        // Once the GPU claims, it counts again.
        let mut gpu = p.claimant(1, 0);
        assert!(p.package_size(&mut gpu, 1500, &est) > 0);
        assert_eq!(p.package_size(&mut p.claimant(0, 2), 1400, &est), 0);
    }

    /// A GPU not yet measured that ran packages is sized by what they
    /// took (a bound: warm is no slower than cold, larger no slower per
    /// unit) against the time the measured CPU needs for the rest; it
    /// declines where not even one unit would end by then, and its size is
    /// unchanged where the CPU is slow or it ran nothing.
    #[test]
    fn an_unmeasured_gpu_is_held_to_its_early_sample() {
        let slots = [DeviceSlot::cpu(1), DeviceSlot::gpu()];
        let plan = |est: &ThroughputEstimator| {
            Plan::new(&hg(None, 2.0, 1), &slots, 2000, est).unwrap()
        };
        // The CPU measured at 400 k units/s: the 400 units left take it
        // 1 ms.
        let cpu = |est: &ThroughputEstimator, rate: f64| {
            est.seed(0, Cost::rate_only(rate), 8.0);
        };
        let after_probe = |p: &Plan| {
            let mut gpu = p.claimant(1, 0);
            gpu.record(&(0..1), Source::Fresh);
            gpu
        };
        // Nothing ran on the GPU beyond its probe: it counts as fast as
        // the CPU (the guided formula).
        let est = ThroughputEstimator::new(2);
        cpu(&est, 4e5);
        let p = plan(&est);
        let free = p.package_size(&mut after_probe(&p), 400, &est);
        assert!(free >= 40, "{free}");
        // Its cold probe took 100 us of device time for one unit: it may
        // take what ends within the CPU's 1 ms at that rate, 10 units.
        est.record_cold(1, 1, 3e-3, 1.0);
        est.record_cold_device(1, 1, 100e-6);
        assert_eq!(p.package_size(&mut after_probe(&p), 400, &est), 10);
        // With 950 us in flight ahead of it, no unit would end in time.
        let mut gpu = after_probe(&p);
        gpu.set_backlog_s(950e-6);
        assert_eq!(p.package_size(&mut gpu, 400, &est), 0);
        assert!(gpu.declined_s().is_some());
        // A warm but untrusted package of 4 units in 40 us: 100 units
        // would take at most 1 ms.
        est.record(1, 4, 40e-6);
        assert_eq!(est.cost(1), None);
        assert_eq!(p.package_size(&mut after_probe(&p), 400, &est), free.min(100));
        // Beside a CPU 1000x slower the bound (3 ms a unit, as the host
        // saw the cold probe) is far: the formula stands.
        let est = ThroughputEstimator::new(2);
        cpu(&est, 4e2);
        est.record_cold(1, 1, 3e-3, 1.0);
        let p = plan(&est);
        assert_eq!(p.package_size(&mut after_probe(&p), 400, &est), free);
    }
}
