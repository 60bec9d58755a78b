//! The per-device cost model: what a package of `n` units costs on a device,
//! learned online from the packages it ran.
//!
//! A package's time is modelled as `t(n) = overhead + n / rate`:
//! * `overhead` is what every package pays whatever its size: the host round
//!   trip and launch of a GPU dispatch, the wait for a package's slowest
//!   items on an irregular kernel (a GPU package is as long as its heaviest
//!   work-group), a CPU worker's claim;
//! * `rate` is the throughput once running, the inverse of the slope. It is
//!   measured while the devices run together, so it already includes the
//!   slowdown of devices sharing DRAM bandwidth.
//!
//! The two are fitted by least squares over the packages recorded, with
//! exponential forgetting ([`FORGET`]) so that the model follows a device
//! whose behaviour changes (another kernel size, another co-runner). The
//! fit needs packages of at least two sizes ([`DISTINCT`] apart); until
//! then the overhead is taken as 0 and the rate as units over time, and the
//! model is trusted only once that time amounts to [`TRUST_S`] or comes from
//! several packages (a probe of one GPU wave is mostly round trip: its rate
//! says nothing about the GPU).
//!
//! **Cold packages.** The first package a GPU runs of a kernel in a
//! process pays one-time costs (the pipeline's first use, the driver's lazy
//! initialisation, first touches of the buffers' pages; on a discrete GPU up
//! to thousands of times a warm package). Its time says nothing about the
//! warm device, and a fixed cost fitted from it would stay in the fit for
//! many runs (a large overhead makes every later package large). The GPU's dispatch loop
//! records it *cold* ([`CostFit::record_cold`]); cold samples are kept apart
//! from the fit (a CPU's first publication is recorded warm: its page
//! faults are a modest cost, and a CPU measured at once lets the model rule
//! out a device that cannot help from the second run):
//! * while a device has no warm sample, its fit is its cold samples'
//!   (rate only), trusted only once they are several ([`TRUST_PACKAGES`]):
//!   one cold package alone leaves the device unmeasured, so that it is
//!   probed and measured warm rather than sized from its cold start;
//! * the first warm sample replaces them: from then on the fit holds warm
//!   samples only, and a cold sample that arrives later is ignored;
//! * a run that ends with a device measured only cold forgets them
//!   ([`CostFit::settle`]): nothing cold is trusted across runs or written
//!   to a profile. Where the device's own clock timed their execution
//!   ([`CostFit::record_cold_device`]: a GPU's timestamps, which leave out
//!   what made them cold), that time becomes a *provisional* cost, until
//!   the device's first warm package replaces it (never in a profile).
//!
//! **Packages under a group a core.** A GPU package of fewer work-groups
//! than the GPU has shader cores runs at most one group a core: its time on
//! the GPU's own clock is its work whatever its size, and stands for a
//! package of a group on every core ([`CostFit::record_timed`]); the rest of
//! its host time, mostly the round trip, is latency, added to the fixed
//! cost. Larger packages are fitted by their host time.
//!
//! **Outliers.** Once the fit is a trusted line, a warm package that took
//! more than [`OUTLIER`] times what the fit predicts for its size (a late
//! one-time cost, the host descheduled) is left out: one such package would
//! otherwise own the overhead. Only isolated ones are: the
//! [`OUTLIER_RUN`]-th in a row is the device's new behaviour (another
//! co-runner, a throttled clock), and it and those after it are recorded.
//!
//! **Throughput only.** Samples whose sizes were chosen from the device's
//! own speed (a CPU worker's chunks, each sized to last about the same
//! time: [`CostFit::record_throughput`]) are fitted as the throughput they
//! delivered, units over time, with no fixed cost: on an irregular kernel
//! such chunks last the same whatever their size, and a line through them
//! would read as a device that is all overhead and infinitely fast.

/// Weight kept by the earlier samples at each new one: about the last
/// `1 / (1 - FORGET)` = 16 packages shape the fit.
pub(crate) const FORGET: f64 = 0.9375;

/// Two sample sizes this far apart (ratio) make the overhead separable from
/// the rate.
pub(crate) const DISTINCT: f64 = 2.0;

/// The part of a size-independent package time taken as work on the
/// largest package seen (see [`CostFit::flat`]).
pub(crate) const FLAT_WORK: f64 = 0.5;

/// Seconds of recorded work after which a single-size measurement is trusted
/// (its overhead is then small against it on every device measured: GPU
/// round trips of 10-60 us, CPU claims of about 1 us).
pub(crate) const TRUST_S: f64 = 200e-6;

/// Packages of one size after which a measurement is trusted whatever
/// their time (forgetting-weighted: three packages weigh 2.82): a CPU's
/// workers each publish their probe, a GPU has one probe, a wave of mostly
/// round trip.
pub(crate) const TRUST_PACKAGES: f64 = 2.5;

/// A warm package that took more than this many times what the trusted fit
/// predicts for its size is an outlier (see the module docs): far above the
/// scatter of an irregular kernel's packages around the fit (about 3x
/// either way, more for a small package that holds its heaviest items),
/// below a package that pays one-time costs (hundreds to thousands of times
/// a warm one).
pub(crate) const OUTLIER: f64 = 32.0;

/// Outliers in a row after which they are recorded (see the module docs).
pub(crate) const OUTLIER_RUN: u32 = 3;

/// The spread of a device's package times around its fit (the root mean
/// square of their log ratios to the fit's predictions, see
/// [`CostFit::irregularity`]) beyond which its kernel counts as
/// irregular: packages 40% off the fit either way, typically. A regular
/// kernel's packages stay within a few percent of the line (their noise:
/// the host's scheduling, a clock); an irregular one's differ by what
/// their items cost: a 512^2 fractal's GPU packages on the dev machine ran
/// at 50-400 k units/s, 1.2-2.2 off the fit in log terms.
pub(crate) const IRREGULAR: f64 = 0.35;

/// Residuals (see [`IRREGULAR`]) of a package whose predicted time is
/// mostly its fixed cost say little about its items: only packages whose
/// overhead is at most this part of the predicted time are weighed.
const WORK_BOUND: f64 = 0.5;

/// What a device not yet measured ran: its first warm packages before its
/// fit is trusted, on average, or else its cold ones (see
/// [`CostFit::record_cold`]): `units` in `seconds`; a cold package by the
/// device's own clock where it was timed (which leaves out what made it
/// cold: the host's first recording, the uploads before it), else as the
/// host saw it.
///
/// A bound, not an estimate: a warm package runs no slower than a cold
/// one of its size, and under a fixed cost plus a rate a package of `n >=
/// units` takes at most `n / units` times as long. So a package of `n`
/// takes at most [`bound`](Self::bound)`(n) = seconds * max(1, n / units)`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EarlySample {
    /// Units of a package (the warm packages' mean, or the cold ones').
    pub units: f64,
    /// Seconds it took.
    pub seconds: f64,
}

impl EarlySample {
    /// The longest a warm package of `n` units may take (see the type).
    pub fn bound(&self, n: f64) -> f64 {
        self.seconds * (n / self.units).max(1.0)
    }

    /// The most units a package may hold and still end within `seconds`
    /// by [`bound`](Self::bound): at least `units` where `seconds` covers
    /// the sample's own time, else 0.
    pub fn within(&self, seconds: f64) -> f64 {
        // NaN (no time) fits nothing either.
        if seconds.is_nan() || seconds < self.seconds {
            return 0.0;
        }
        self.units * seconds / self.seconds
    }

    /// The sample as a rate without overhead: slower than the device per
    /// unit for packages of `units` and more (see the type).
    pub fn as_cost(&self) -> Cost {
        Cost::rate_only(self.units / self.seconds)
    }
}

/// What a package of `n` units costs on one device: `overhead + n / rate`
/// seconds, as seen by the whole device (for a CPU of `w` workers, one
/// worker's package takes `w` times as long).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Cost {
    /// Seconds every package pays whatever its size.
    pub overhead_s: f64,
    /// Units per second once running (finite and positive).
    pub rate: f64,
}

impl Cost {
    /// A cost with no overhead.
    pub fn rate_only(rate: f64) -> Cost {
        Cost {
            overhead_s: 0.0,
            rate,
        }
    }

    /// Seconds for a package of `units`.
    pub fn time(&self, units: f64) -> f64 {
        self.overhead_s + units / self.rate
    }

    /// Units of work the overhead is worth (`overhead * rate`): a package of
    /// this size spends half its time on the overhead.
    pub fn overhead_units(&self) -> f64 {
        self.overhead_s * self.rate
    }

    /// The smallest package whose overhead is at most `fraction` of its time
    /// (`overhead_units * (1 - fraction) / fraction`); 0 without overhead.
    pub fn efficient_size(&self, fraction: f64) -> f64 {
        let f = fraction.clamp(1e-3, 1.0);
        self.overhead_units() * (1.0 - f) / f
    }

    /// Whether both figures are usable (finite, overhead >= 0, rate > 0).
    pub fn is_usable(&self) -> bool {
        self.overhead_s.is_finite()
            && self.overhead_s >= 0.0
            && self.rate.is_finite()
            && self.rate > 0.0
    }
}

/// A package's time on its device's own clock (a GPU's timestamps around
/// its dispatch), as [`CostFit::record_timed`] takes it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DeviceTime {
    /// Seconds the device ran the package.
    pub seconds: f64,
    /// Units up to which a package runs at most one work-group on each of
    /// the device's cores (its shader cores over the work-groups of a
    /// unit), where the device tells its cores: a package of fewer runs
    /// in about the time of one group whatever their number, so its time
    /// stands for a package of this many units (why: see
    /// [`CostFit::record_timed`]). Extrapolated linearly past it, the rate
    /// errs only towards the slow side: by what running several groups a
    /// core at once gains.
    pub flat_units: Option<u64>,
}

impl DeviceTime {
    /// For a package of `n` units that took `seconds` on the host: where
    /// it is under [`flat_units`](Self::flat_units), the units it stands
    /// for and its work (its time on the device, at most `seconds`).
    /// `None` for a larger package, or where the device's time or cores
    /// are unknown.
    fn flat_work(&self, n: f64, seconds: f64) -> Option<(f64, f64)> {
        let flat = self.flat_units? as f64;
        let timed = self.seconds.is_finite() && self.seconds > 0.0;
        (timed && n < flat).then_some((flat, self.seconds.min(seconds)))
    }
}

/// Running least-squares fit of package time against package size, with
/// exponential forgetting. Plain data: the estimator guards it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CostFit {
    /// Sum of weights.
    w: f64,
    /// Weighted sums of n, t, n^2 and n*t, `t` a package's work: its
    /// time less its latency (see [`record_timed`](Self::record_timed)).
    n: f64,
    t: f64,
    nn: f64,
    nt: f64,
    /// Weighted sum of the packages' latencies: what of a package's time
    /// its device's own clock did not see running it (see
    /// [`record_timed`](Self::record_timed)); part of the fixed cost.
    lat: f64,
    /// Smallest and largest size recorded since the last reset.
    min_n: f64,
    max_n: f64,
    /// Shortest package time recorded since the last reset.
    min_t: f64,
    /// A run that recorded these samples has ended: trust them whatever
    /// their number (see [`settle`](Self::settle)).
    settled: bool,
    /// Cold samples, kept while no warm one was recorded (see the module
    /// docs): weighted sums of packages, units and seconds.
    cold: Cold,
    /// The fit holds one sample only, made when a run ended from its cold
    /// packages' own execution times (see [`settle`](Self::settle)): the
    /// first warm sample replaces it, and it is not written to profiles.
    provisional: bool,
    /// Outliers left out in a row (see the module docs).
    outliers: u32,
    /// Samples sized from the device's own speed were recorded: the fit
    /// is their throughput only (see [`record_throughput`](Self::record_throughput)).
    throughput_only: bool,
    /// The fit was seeded from a profile (see [`seed`](Self::seed)): its
    /// sizes are made up, not packages the device ran.
    seeded: bool,
    /// How far warm packages fell from the fit (see
    /// [`irregularity`](Self::irregularity)).
    spread: Spread,
}

/// Forgetting-weighted squared log ratios of package times to the fit's
/// predictions (see [`CostFit::irregularity`]).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct Spread {
    w: f64,
    ss: f64,
}

/// The cold samples of a fit (see [`CostFit::record_cold`]).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct Cold {
    w: f64,
    n: f64,
    t: f64,
    /// Units and seconds of the cold packages whose execution on the
    /// device itself was timed (see [`CostFit::record_cold_device`]).
    dev_n: f64,
    dev_t: f64,
}

impl CostFit {
    /// Records one package of `units` that took `seconds`. Ignores empty
    /// packages and times that are not finite and positive.
    pub fn record(&mut self, units: u64, seconds: f64) {
        self.record_parallel(units, seconds, 1.0);
    }

    /// Records a package that ran on one of `parallel` claimants at once:
    /// it weighs as much as any package in the fit, but older records fade
    /// by only `FORGET^(1 / parallel)`, so the fit keeps about
    /// `parallel / (1 - FORGET)` of them (the same stretch of a run as
    /// `FORGET` keeps for a lone claimant). `parallel` below 1, or not a
    /// number, counts as 1.
    pub fn record_parallel(&mut self, units: u64, seconds: f64, parallel: f64) {
        self.record_timed(units, seconds, None, parallel);
    }

    /// Records a package as [`record_parallel`](Self::record_parallel),
    /// where the device's own clock timed its execution (`device`: a GPU's
    /// timestamps around its dispatch). A package of fewer units than the
    /// device's [`flat_units`](DeviceTime::flat_units) ran at most one
    /// work-group on each of its cores: its work is its time on the
    /// device, whatever its size, and stands for a package of that many
    /// units; the rest of its `seconds` is latency (the host's submission,
    /// the completion seen late), a fixed cost. Any other package (or
    /// `None`) is recorded as [`record_parallel`](Self::record_parallel)
    /// does: its host time is its cost (a larger package's host time holds
    /// what grows with it beside its compute, such as its waits for
    /// transfers, which its device time leaves out).
    ///
    /// # Why
    /// A GPU's packages of a kernel's first run are small (its probe, the
    /// unstarted ends of CPU workers' packages it steals), and on a
    /// discrete GPU their host times are mostly round trips that vary run
    /// to run: an H200 histogram's packages of 2-24 work-groups took 21-290
    /// us on the host and 4-6 on the GPU. Fitted as host time against
    /// size, the jitter read as work: 246 k units/s, 73 times under what
    /// the GPU delivers on a run of its own (18 M); the claim guard
    /// declined every package of every later run on that rate, and the GPU
    /// alone, predicted at 2-8 ms where it takes 0.13, was never tried
    /// (BENCHMARKS.md, h200 run 40). Split this way at every size, the
    /// host time's waits past the compute of a staged stencil's large
    /// packages became a fixed cost of 0.2 ms a package, and the cost
    /// model then gave one run in three of a co-executing kernel to the
    /// GPU alone, at 1.4 times the co-executed time.
    pub fn record_timed(
        &mut self,
        units: u64,
        seconds: f64,
        device: Option<DeviceTime>,
        parallel: f64,
    ) {
        if !valid(units as f64, seconds) {
            return;
        }
        // A package of fewer work-groups than the device has cores: any
        // package up to a group on every core takes about as long, and its
        // work is its device time.
        let (n, work) = device
            .and_then(|d| d.flat_work(units as f64, seconds))
            .unwrap_or((units as f64, seconds));
        // The first warm sample replaces a provisional fit.
        self.drop_provisional();
        // The fit this sample is judged against (warm samples only), once
        // for both judgements.
        let prior = if self.w > 0.0 { self.fit() } else { None };
        if self.is_outlier(prior, n, seconds) {
            self.outliers += 1;
            if self.outliers < OUTLIER_RUN {
                return;
            }
        } else {
            self.outliers = 0;
        }
        // The first warm sample replaces the cold ones.
        self.cold = Cold::default();
        self.weigh_residual(prior, n, seconds, forget(parallel));
        self.add(n, (work, seconds - work), 1.0, forget(parallel));
    }

    /// Adds the log ratio of `seconds` to what the `prior` fit, where
    /// trusted, predicts for `n` units to the spread, where that
    /// prediction is mostly work (see [`WORK_BOUND`]).
    fn weigh_residual(&mut self, prior: Option<(Cost, bool)>, n: f64, seconds: f64, forget: f64) {
        let Some((c, true)) = prior else {
            return;
        };
        let predicted = c.time(n);
        if !(predicted > 0.0 && c.overhead_s <= WORK_BOUND * predicted) {
            return;
        }
        let r = (seconds / predicted).ln();
        if r.is_finite() {
            self.spread.w = self.spread.w * forget + 1.0;
            self.spread.ss = self.spread.ss * forget + r * r;
        }
    }

    /// How far the device's recent warm packages fell from its fit: the
    /// root mean square of the log ratios of their times to the fit's
    /// predictions just before each was recorded (forgetting-weighted as
    /// the fit is), over packages whose predicted time is mostly work.
    /// `None` until a few were weighed ([`TRUST_PACKAGES`]). Above
    /// [`IRREGULAR`], the device's cost depends on which items a package
    /// holds, not only on how many: its rate is an average over the
    /// items it happened to run.
    pub fn irregularity(&self) -> Option<f64> {
        let s = self.spread;
        (s.w >= TRUST_PACKAGES).then(|| (s.ss / s.w).sqrt())
    }

    /// Records work whose size was chosen from the device's own speed (a
    /// CPU worker's chunk, sized to last a fixed time), as
    /// [`record_parallel`](Self::record_parallel) otherwise: from then on
    /// the fit is the throughput delivered, units over time, with no fixed
    /// cost. Sizes chosen that way are not independent of the times (on an
    /// irregular kernel every chunk lasts about the same whatever its
    /// size), so a line through them would measure the chunker, not the
    /// device.
    pub fn record_throughput(&mut self, units: u64, seconds: f64, parallel: f64) {
        self.throughput_only = true;
        self.record_parallel(units, seconds, parallel);
    }

    /// Whether `n` units in `seconds` took more than [`OUTLIER`] times what
    /// the `prior` fit predicts, where the fit is a trusted line over enough
    /// packages.
    fn is_outlier(&self, prior: Option<(Cost, bool)>, n: f64, seconds: f64) -> bool {
        if !(self.is_line() && self.w >= TRUST_PACKAGES) {
            return false;
        }
        matches!(prior, Some((c, true)) if seconds > OUTLIER * c.time(n))
    }

    /// Records a *cold* package (the first a device ran of a kernel in the
    /// process: see the module docs), as [`record_parallel`](Self::record_parallel)
    /// otherwise: kept apart, used only while no warm package was recorded,
    /// ignored once one was.
    pub fn record_cold(&mut self, units: u64, seconds: f64, parallel: f64) {
        let n = units as f64;
        if self.w > 0.0 || !valid(n, seconds) {
            return;
        }
        let f = forget(parallel);
        let c = &mut self.cold;
        c.w = c.w * f + 1.0;
        c.n = c.n * f + n;
        c.t = c.t * f + seconds;
    }

    /// Records the time a cold package (see [`record_cold`](Self::record_cold))
    /// of `units` took on the device itself, from its own clock
    /// (`device_seconds`: a GPU's timestamps around its dispatches). That
    /// time leaves out what made the package cold (a pipeline's first use,
    /// the uploads before it, the host's first waits), and is kept apart
    /// with the cold samples: where a run ends with the device measured
    /// only cold, it becomes the device's provisional cost (see
    /// [`settle`](Self::settle)).
    pub fn record_cold_device(&mut self, units: u64, device_seconds: f64) {
        let n = units as f64;
        if self.w > 0.0 || !valid(n, device_seconds) {
            return;
        }
        self.cold.dev_n += n;
        self.cold.dev_t += device_seconds;
    }

    /// What the device ran before its fit is trusted (see
    /// [`EarlySample`]): its warm packages' mean where it ran some, else
    /// its cold packages'; `None` once the fit is trusted, or where
    /// nothing ran.
    pub fn early_sample(&self) -> Option<EarlySample> {
        if self.w > 0.0 {
            if matches!(self.fit(), Some((_, true))) {
                return None;
            }
            let (units, seconds) = (self.n / self.w, (self.t + self.lat) / self.w);
            return valid(units, seconds).then_some(EarlySample { units, seconds });
        }
        let c = &self.cold;
        let (units, seconds) = if c.dev_n > 0.0 && c.dev_t > 0.0 {
            (c.dev_n, c.dev_t)
        } else {
            (c.n, c.t)
        };
        (c.w > 0.0 && valid(units, seconds)).then_some(EarlySample { units, seconds })
    }

    /// Whether the fit is provisional: one sample from cold packages'
    /// execution times (see [`settle`](Self::settle)).
    pub fn is_provisional(&self) -> bool {
        self.provisional
    }

    /// Forgets a provisional fit (see [`settle`](Self::settle)).
    fn drop_provisional(&mut self) {
        if self.provisional {
            *self = CostFit {
                throughput_only: self.throughput_only,
                ..CostFit::default()
            };
        }
    }

    /// The size of every warm package recorded, where they all had about
    /// one size (less than [`DISTINCT`] apart) and the fit is trusted: the
    /// fixed cost is not yet separable from the rate (see
    /// [`PowerEstimator::one_size`](super::PowerEstimator::one_size)).
    /// `None` once two sizes were recorded, for a fit of throughput only
    /// (a CPU's chunks), for a seed (two sizes), and before a trusted warm
    /// record.
    pub fn one_size(&self) -> Option<f64> {
        self.one_size_if(matches!(self.fit(), Some((_, true))))
    }

    /// [`one_size`](Self::one_size) where the fit's trust is known
    /// (`trusted`): a publication computes the fit once for both.
    pub(crate) fn one_size_if(&self, trusted: bool) -> Option<f64> {
        // A seed is a line (two sizes eight apart): never one size.
        self.measured_up_to()
            .filter(|_| trusted && !self.is_line() && !self.provisional)
    }

    /// The largest package the fit was measured on, in units, where it is
    /// a fit of whole packages this process ran (warm, or a provisional
    /// one's summed cold packages): how far a prediction for a larger
    /// package extrapolates. `None` before any record, for a fit of
    /// throughput only (a CPU's chunks, whose sizes follow its speed) and
    /// for a fit seeded from a profile (which stands for earlier
    /// processes' runs, whatever the sizes it was seeded at).
    pub fn measured_up_to(&self) -> Option<f64> {
        let packages = self.w > 0.0 && !self.throughput_only && !self.seeded;
        packages.then_some(self.max_n)
    }

    /// Whether the samples span two sizes [`DISTINCT`] apart.
    fn is_line(&self) -> bool {
        self.max_n >= DISTINCT * self.min_n
    }

    /// Marks what was recorded so far as trusted: the run that recorded it
    /// ended, and a small run may never give more (without this, a device
    /// measured on a few tiny packages would stay unmeasured, and another
    /// device would take every small run whole). No-op before any record.
    ///
    /// Cold samples alone are forgotten instead: the device is measured
    /// warm in the next run (see the module docs). Where the device's own
    /// clock timed them (see [`record_cold_device`](Self::record_cold_device)),
    /// their units over that time become the fit: one sample, trusted,
    /// *provisional* (the first warm sample replaces it, and it is kept out
    /// of profiles). A GPU whose cold first package was all it ran of a
    /// kernel's first run (the CPU took the rest while it paid its one-time
    /// costs) is then known at the second run, which the cost model can give
    /// to the device alone that pays; otherwise it co-executes by default,
    /// at many times the GPU's time where the devices differ tenfold (a
    /// conjugate-gradient program's kernels on an H200: 2 ms against 0.2).
    /// The execution time leaves out the package's fixed costs, so the
    /// provisional cost errs towards the device.
    pub fn settle(&mut self) {
        let c = self.cold;
        if self.w <= 0.0 && valid(c.dev_n, c.dev_t) {
            self.add(c.dev_n, (c.dev_t, 0.0), 1.0, 1.0);
            self.provisional = true;
        }
        self.settled = self.w > 0.0;
        self.cold = Cold::default();
    }

    /// Seeds the fit with `cost` as if `weight` packages spread over sizes
    /// around its efficient size had measured it exactly (a prior from a
    /// profile: later packages outweigh it after a few records).
    pub fn seed(&mut self, cost: Cost, weight: f64) {
        if !(cost.is_usable() && weight.is_finite() && weight > 0.0) {
            return;
        }
        self.drop_provisional();
        self.seeded = true;
        // Two points on the line, a factor 8 apart in size.
        let n1 = cost.efficient_size(0.2).max(1.0);
        for n in [n1, 8.0 * n1] {
            self.add(n, (cost.time(n), 0.0), weight / 2.0, 1.0);
        }
    }

    /// Adds a package of `n` units whose time was `t` of work and
    /// `latency` (see [`record_timed`](Self::record_timed)).
    fn add(&mut self, n: f64, (t, latency): (f64, f64), weight: f64, forget: f64) {
        if !valid(n, t) {
            return;
        }
        let latency = if latency.is_finite() { latency.max(0.0) } else { 0.0 };
        self.w = self.w * forget + weight;
        self.n = self.n * forget + weight * n;
        self.t = self.t * forget + weight * t;
        self.lat = self.lat * forget + weight * latency;
        self.nn = self.nn * forget + weight * n * n;
        self.nt = self.nt * forget + weight * n * t;
        if self.min_n == 0.0 || n < self.min_n {
            self.min_n = n;
        }
        if self.min_t == 0.0 || t < self.min_t {
            self.min_t = t;
        }
        self.max_n = self.max_n.max(n);
    }

    /// The cost where package times over distinct sizes do not grow with
    /// the size (a dispatch over an irregular kernel waits for its slowest
    /// work-group, whatever else it holds): mostly overhead. The largest
    /// package is taken to have spent [`FLAT_WORK`] of the mean time on its
    /// work, so that the rate bounds how much larger a package may grow
    /// before its time does, and a larger package, once run, corrects it.
    /// A rate from the mean time alone would rank such a device by its
    /// smallest packages: it would get ever smaller ones.
    fn flat(&self) -> Option<Cost> {
        let mean_t = self.t / self.w;
        let cost = Cost {
            overhead_s: mean_t * (1.0 - FLAT_WORK),
            rate: self.max_n / (mean_t * FLAT_WORK),
        };
        cost.is_usable().then_some(cost)
    }

    /// The fitted cost, and whether it is trusted (see the module docs).
    /// `None` before any record.
    pub fn fit(&self) -> Option<(Cost, bool)> {
        if self.w <= 0.0 || self.n <= 0.0 || self.t <= 0.0 {
            return self.cold_fit();
        }
        // The packages' mean latency is a fixed cost beside the work's.
        let latency = self.lat / self.w;
        self.work_fit().map(|(c, trusted)| {
            let cost = Cost {
                overhead_s: c.overhead_s + latency,
                ..c
            };
            (cost, trusted)
        })
    }

    /// [`fit`](Self::fit) of the packages' work alone (their latency left
    /// out), where warm samples were recorded.
    fn work_fit(&self) -> Option<(Cost, bool)> {
        let mean_rate = self.n / self.t;
        if self.is_line() && !self.throughput_only {
            let det = self.w * self.nn - self.n * self.n;
            if det > 1e-9 * self.w * self.nn {
                let slope = (self.w * self.nt - self.n * self.t) / det;
                let intercept = (self.t - slope * self.n) / self.w;
                // The overhead from the line, but never more than the
                // quickest package took; then the rate from the time left
                // over, summed (a ratio, not the line's slope): on packages
                // of irregular cost the slope follows which ones happened
                // to hold the heavy items and can be off several times
                // either way, whereas the summed work over the summed time
                // is the throughput the device delivered. On exact data
                // both agree.
                let overhead = intercept.clamp(0.0, self.min_t);
                let cost = Cost {
                    overhead_s: overhead,
                    rate: self.n / (self.t - self.w * overhead),
                };
                if cost.is_usable() && slope > 0.0 {
                    return Some((cost, true));
                }
                if slope <= 0.0 {
                    return self.flat().map(|c| (c, true));
                }
            }
        }
        let cost = Cost::rate_only(mean_rate);
        // Forgetting-weighted: recent time (work and latency), not a
        // lifetime total.
        let trusted = self.t + self.lat >= TRUST_S || self.w >= TRUST_PACKAGES || self.settled;
        cost.is_usable().then_some((cost, trusted))
    }

    /// The fit of the cold samples alone (rate only), trusted only once
    /// they are several; `None` without any.
    fn cold_fit(&self) -> Option<(Cost, bool)> {
        let c = &self.cold;
        if !(c.w > 0.0 && c.n > 0.0 && c.t > 0.0) {
            return None;
        }
        let cost = Cost::rate_only(c.n / c.t);
        cost.is_usable()
            .then_some((cost, c.w >= TRUST_PACKAGES))
    }
}

/// Whether a sample of `n` units in `t` seconds can be recorded: both
/// finite and positive.
fn valid(n: f64, t: f64) -> bool {
    n > 0.0 && n.is_finite() && t.is_finite() && t > 0.0
}

/// The forgetting of one record from one of `parallel` claimants at once
/// (see [`CostFit::record_parallel`]).
fn forget(parallel: f64) -> f64 {
    let p = if parallel >= 1.0 { parallel } else { 1.0 };
    FORGET.powf(1.0 / p)
}

/// Seconds for a device of cost `cost` (whole-device rate) and `claimants`
/// claimants to run `units` alone: each claimant a share of whole units at
/// `rate / claimants`, paying the overhead once per claimant (a run of fewer
/// units than a CPU has workers leaves workers idle).
pub fn alone_time(cost: Cost, claimants: usize, units: u64) -> f64 {
    let n = claimants.max(1) as f64;
    n * cost.overhead_s + (units as f64 / n).ceil() * n / cost.rate
}

/// Whether running everything on one device beats co-executing, from each
/// device's cost (`None`: unknown, then co-execute) and its number of
/// claimants, for a run of `units`: the device to run alone, or `None` to
/// co-execute.
///
/// A device of `c` claimants alone takes `c * overhead + ceil(units / c) *
/// c / rate` (each claimant a share of whole units at `rate / c`: a run of
/// fewer units than a CPU has workers leaves workers idle); the devices
/// together at best `T_co = (units + rate'_f * fixed_f) / sum rate'_j`,
/// where `rate'_j` is a device's rate scaled down by the part of its
/// claimants the run can keep busy and `fixed_f` the fastest device's fixed
/// cost alone (`c * overhead`), which it pays together as well (the other
/// devices' overheads are left out: fitted over irregular packages they
/// can be far off). With a fixed cost, the estimated gain is then the
/// others' rates over the fastest's, as it is without. Co-execution is
/// declined when the
/// fastest alone, `T_f <= (1 + min_gain) * T_co`, when a package of one
/// unit on a claimant of every other device, its overhead included, takes
/// `T_f` or more (it could add nothing: the threshold below which a run is
/// too short to wake another device, learned from its fixed costs),
/// or when `T_f` is below `wake_s` (too short to be worth waking another
/// device).
pub fn single_device(
    costs: &[(Option<Cost>, usize)],
    units: u64,
    min_gain: f64,
    wake_s: f64,
) -> Option<usize> {
    single_device_after(costs, &[], units, min_gain, wake_s)
}

/// What a device waits for before its first package where it takes part in
/// a run (see [`single_device_after`]): under lazy host coherence, the host
/// copies it reads brought back from the GPUs' mirrors first.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct StartCost {
    /// Seconds it waits whatever its share (what it reads whole).
    pub fixed_s: f64,
    /// Seconds it would wait with all of the run (what it reads by its
    /// items): with a share of the run, that share of them.
    pub by_share_s: f64,
}

impl StartCost {
    /// Seconds it waits when it takes all of the run (runs alone).
    pub fn all_s(&self) -> f64 {
        self.fixed_s + self.by_share_s
    }
}

/// [`single_device`] where each device (by index of `costs`; missing
/// entries: nothing) waits `start` before its first package: a device's
/// time alone grows by all of it; one unit on a claimant of it, the
/// threshold of being able to add anything, by its fixed part; and the
/// devices together finish at `(units + sum rate_j * wait_j) / sum rate_j`,
/// where `wait_j` is its fixed part plus its share of the rest (devices
/// that start late finish with the others).
pub fn single_device_after(
    costs: &[(Option<Cost>, usize)],
    start: &[StartCost],
    units: u64,
    min_gain: f64,
    wake_s: f64,
) -> Option<usize> {
    let o = outlook(costs, start, units)?;
    if o.t_f < wake_s || o.one_unit >= o.t_f {
        return Some(o.fastest);
    }
    (o.t_f <= (1.0 + min_gain) * o.t_co).then_some(o.fastest)
}

/// Whether device `out` (an index of `costs`) adds too little to a run of
/// the others to be worth waking, by the cost model: the others together
/// at best (`T_co` of [`single_device_after`] over them) take at most
/// `1 + min_gain` times all of them together. `None` with fewer than two
/// others or a cost unknown.
///
/// `out`'s fitted fixed cost does not count, as in `T_co`: fitted over
/// co-executed packages it can be far off, and counted per claimant (the
/// threshold [`single_device_after`] weighs against the fastest device
/// alone) it left 31 CPU workers worth a third of two H200s' rate on a
/// stencil out of two runs in three (1.9-2.1 ms against 1.5-1.7 with
/// them; BENCHMARKS.md, section 0e, run 16).
///
/// # Why
/// [`single_device_after`] weighs one device against all of them; beside
/// two or more GPUs, a CPU worth a few percent of one of them was woken
/// for every run: 31 workers beside two H200s took 42-240 k of Collatz's
/// 8.4 M items a run, and the runs with the most took 7.3 ms where the two
/// GPUs alone took 1.6 (BENCHMARKS.md, section 0e, run 16); the learner
/// left them out only after measuring it, by the fifth run.
pub fn adds_little(
    costs: &[(Option<Cost>, usize)],
    start: &[StartCost],
    units: u64,
    out: usize,
    min_gain: f64,
) -> Option<bool> {
    if costs.len() < 3 || out >= costs.len() {
        return None;
    }
    let all = outlook(costs, start, units)?;
    let others = || (0..costs.len()).filter(|&j| j != out);
    let others_costs: Vec<_> = others().map(|j| costs[j]).collect();
    let others_start: Vec<_> = others()
        .map(|j| start.get(j).copied().unwrap_or_default())
        .collect();
    let without = outlook(&others_costs, &others_start, units)?;
    Some(without.t_co <= (1.0 + min_gain) * all.t_co)
}

/// What co-executing gains at best over the fastest device alone, as the
/// cost model sees it (its estimated `S_max` less 1; see
/// [`single_device_after`] for the figures and `start`): 0 where no other
/// device can add anything; `None` while a device's cost is unknown.
pub fn co_gain(costs: &[(Option<Cost>, usize)], start: &[StartCost], units: u64) -> Option<f64> {
    let o = outlook(costs, start, units)?;
    if o.one_unit >= o.t_f {
        return Some(0.0);
    }
    Some((o.t_f / o.t_co - 1.0).max(0.0))
}

/// The cost model's view of a run (see [`single_device_after`]).
struct Outlook {
    /// The device fastest alone, and its time alone.
    fastest: usize,
    t_f: f64,
    /// Every device together at best.
    t_co: f64,
    /// The quickest any other device could add one unit.
    one_unit: f64,
}

/// [`Outlook`] of a run of `units`; `None` with fewer than two devices, no
/// units, or a device whose cost is unknown.
fn outlook(costs: &[(Option<Cost>, usize)], start: &[StartCost], units: u64) -> Option<Outlook> {
    let start_of = |j: usize| start.get(j).copied().unwrap_or_default();
    if costs.len() < 2 || units == 0 {
        return None;
    }
    let known: Option<Vec<(Cost, f64)>> = costs
        .iter()
        .map(|(c, n)| c.filter(Cost::is_usable).map(|c| (c, (*n).max(1) as f64)))
        .collect();
    let known = known?;
    let g = units as f64;
    let (fastest, t_f) = known
        .iter()
        .enumerate()
        .map(|(j, &(c, n))| alone_time(c, n as usize, units) + start_of(j).all_s())
        .enumerate()
        .min_by(|a, b| a.1.total_cmp(&b.1))?;
    // One package of one unit on a claimant of another device, its fixed
    // cost included: if even that outlasts the fastest alone, the others
    // can add nothing, and waking them only costs (a GPU whose every
    // package pays milliseconds on an irregular kernel, next to a CPU that
    // does a short run in a fraction of that). The fitted overhead never
    // exceeds the quickest package the device ran, so this errs towards
    // co-executing.
    let one_unit = known
        .iter()
        .enumerate()
        .filter(|(j, _)| *j != fastest)
        .map(|(j, (c, n))| n * c.time(1.0) + start_of(j).fixed_s)
        .fold(f64::INFINITY, f64::min);
    // The other devices' overheads are left out: fitted over irregular
    // packages they can be far off, and a wrong fallback forfeits all of
    // co-execution's gain. The fastest device's own fixed cost is paid
    // together as alone, so it counts on both sides: counted alone only,
    // a GPU whose co-executed packages each waited for downloads (a fitted
    // 0.6 ms a package) was estimated a 40% gain from 15 CPU workers that
    // could take 1% of the run (the rates' ratio), and kept co-executing.
    let rate = |&(c, n): &(Cost, f64)| c.rate * (g / n).min(1.0);
    let rates: f64 = known.iter().map(rate).sum();
    let own_fixed = {
        let (c, n) = known[fastest];
        n * c.overhead_s
    };
    let waits: f64 = known
        .iter()
        .enumerate()
        .map(|(j, k)| {
            let (s, r) = (start_of(j), rate(k));
            let own = if j == fastest { own_fixed } else { 0.0 };
            r * (s.fixed_s + s.by_share_s * r / rates + own)
        })
        .sum();
    Some(Outlook {
        fastest,
        t_f,
        t_co: (g + waits) / rates,
        one_unit,
    })
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, rel: f64) -> bool {
        (a - b).abs() <= rel * b.abs().max(1e-12)
    }

    /// Small packages whose host times are round trips that vary far more
    /// than their work (an H200 histogram's first run: 2-24 work-groups on
    /// 132 SMs, 21-290 us on the host, 4-6 on the GPU): timed by the
    /// device's clock, the jitter is latency, a fixed cost, and each
    /// stands for a group on every core; fitted from the host times alone
    /// the jitter reads as work, and a wave-sized package is predicted
    /// tens of times too slow.
    #[test]
    fn a_package_under_a_group_a_core_is_timed_by_the_device() {
        // Work: 4 us plus 0.1 us a unit (10 M units/s); latency 20-290 us.
        let packages: [(u64, f64); 8] = [
            (2, 90e-6),
            (24, 21e-6),
            (6, 290e-6),
            (12, 33e-6),
            (4, 24e-6),
            (16, 60e-6),
            (8, 45e-6),
            (20, 120e-6),
        ];
        let (mut timed, mut host) = (CostFit::default(), CostFit::default());
        for &(n, latency) in &packages {
            let work = 4e-6 + n as f64 * 1e-7;
            let device = DeviceTime {
                seconds: work,
                flat_units: Some(132),
            };
            timed.record_timed(n, work + latency, Some(device), 1.0);
            host.record(n, work + latency);
        }
        let (t, _) = timed.fit().expect("fitted");
        let (h, _) = host.fit().expect("fitted");
        let mean_latency = packages.iter().map(|p| p.1).sum::<f64>() / packages.len() as f64;
        // A wave of 1056 units: 110 us of work after the mean latency.
        let truth = mean_latency + 4e-6 + 1056.0 * 1e-7;
        assert!(t.time(1056.0) < 1.5 * truth, "{t:?} against {truth}");
        assert!(t.time(1056.0) > mean_latency, "{t:?}");
        assert!(h.time(1056.0) > 5.0 * truth, "the host times alone: {h:?}");
        assert_eq!(timed.measured_up_to(), Some(132.0));
        // A package past a group a core is recorded at its size.
        let wave = DeviceTime {
            seconds: 60e-6,
            flat_units: Some(132),
        };
        timed.record_timed(1056, 80e-6, Some(wave), 1.0);
        assert_eq!(timed.measured_up_to(), Some(1056.0));
    }

    /// Where the device does not tell its cores, or a package ran at least
    /// a group on each, its device time changes nothing: its host time
    /// holds what grows with it beside the compute (waits for transfers),
    /// which taken as latency made a staged stencil's packages look 0.2 ms
    /// of fixed cost each.
    #[test]
    fn a_device_time_counts_only_under_a_group_a_core() {
        let (mut timed, mut host) = (CostFit::default(), CostFit::default());
        for (n, s) in [(140u64, 400e-6), (600, 1.2e-3), (300, 700e-6)] {
            for flat_units in [None, Some(132)] {
                let device = DeviceTime {
                    seconds: 0.5 * s,
                    flat_units,
                };
                timed.record_timed(n, s, Some(device), 1.0);
                host.record(n, s);
            }
        }
        assert_eq!(timed.fit(), host.fit());
    }

    #[test]
    fn fits_overhead_and_rate_from_two_sizes() {
        let truth = Cost {
            overhead_s: 50e-6,
            rate: 1e6,
        };
        let mut f = CostFit::default();
        assert_eq!(f.fit(), None);
        for n in [8u64, 1000, 250_000, 60_000, 15_000, 4_000] {
            f.record(n, truth.time(n as f64));
        }
        let (c, trusted) = f.fit().unwrap();
        assert!(trusted);
        assert!(close(c.overhead_s, 50e-6, 1e-6), "{c:?}");
        assert!(close(c.rate, 1e6, 1e-6), "{c:?}");
        assert!(close(c.efficient_size(0.2), 200.0, 1e-6));
    }

    #[test]
    fn one_size_is_rate_only_and_trusted_only_with_enough_time() {
        let mut f = CostFit::default();
        // A GPU probe: one wave, 60 us of mostly round trip.
        f.record(8, 60e-6);
        let (c, trusted) = f.fit().unwrap();
        assert_eq!(c.overhead_s, 0.0);
        assert!(close(c.rate, 8.0 / 60e-6, 1e-9));
        assert!(!trusted);
        // A second short probe of the same size: still not...
        f.record(8, 60e-6);
        assert!(!f.fit().unwrap().1);
        // ...until the run that measured them ends.
        f.settle();
        assert!(f.fit().unwrap().1);
        let mut empty = CostFit::default();
        empty.settle();
        assert_eq!(empty.fit(), None);
        // One package of 1 ms: trusted.
        let mut f = CostFit::default();
        f.record(64, 1e-3);
        assert!(f.fit().unwrap().1);
        // Three short ones (a CPU's workers' probes): trusted.
        let mut f = CostFit::default();
        for _ in 0..3 {
            f.record(1, 5e-6);
        }
        assert!(f.fit().unwrap().1);
    }

    #[test]
    fn one_size_is_known_until_a_second_size_separates_the_overhead() {
        let mut f = CostFit::default();
        assert_eq!(f.one_size(), None);
        // A cold package is no measurement of sizes.
        f.record_cold(1, 5e-3, 1.0);
        assert_eq!(f.one_size(), None);
        // One short probe: not trusted, so no size either.
        f.record(1056, 40e-6);
        assert_eq!(f.one_size(), None);
        // Trusted, all of one size (within DISTINCT).
        f.record(1056, 1e-3);
        f.record(1500, 1e-3);
        assert_eq!(f.one_size(), Some(1500.0));
        // Twice the size: a line, the overhead separable.
        f.record(3000, 1.1e-3);
        assert_eq!(f.one_size(), None);
        // Throughput-only samples (a CPU's chunks) have no fixed cost to
        // separate; a seed is two sizes.
        let mut t = CostFit::default();
        t.record_throughput(64, 1e-3, 4.0);
        assert_eq!(t.one_size(), None);
        let mut s = CostFit::default();
        s.seed(
            Cost {
                overhead_s: 1e-3,
                rate: 1e6,
            },
            4.0,
        );
        assert_eq!(s.one_size(), None);
    }

    /// How far a prediction extrapolates: the largest package the fit
    /// ran, for packages only; not for throughput or a profile's seed.
    #[test]
    fn a_fit_knows_the_largest_package_it_was_measured_on() {
        let mut f = CostFit::default();
        assert_eq!(f.measured_up_to(), None);
        for n in [40, 600, 50] {
            f.record(n, 1e-3);
        }
        assert_eq!(f.measured_up_to(), Some(600.0));
        let mut chunks = CostFit::default();
        chunks.record_throughput(100, 1e-3, 4.0);
        assert_eq!(chunks.measured_up_to(), None);
        let mut seeded = CostFit::default();
        seeded.seed(Cost::rate_only(1e6), 4.0);
        seeded.record(10, 1e-5);
        assert_eq!(seeded.measured_up_to(), None);
        // A provisional cost: its cold packages, summed.
        let mut cold = CostFit::default();
        cold.record_cold(30, 1e-2, 1.0);
        cold.record_cold_device(30, 1e-4);
        cold.settle();
        assert!(cold.is_provisional());
        assert_eq!(cold.measured_up_to(), Some(30.0));
    }

    #[test]
    fn forgets_old_behaviour() {
        let mut f = CostFit::default();
        for n in [100u64, 1000, 10_000] {
            f.record(n, n as f64 / 1e6);
        }
        // The device becomes twice as slow (a co-runner takes bandwidth).
        for i in 0..200u64 {
            let n = 100 + (i % 3) * 4_950;
            f.record(n, n as f64 / 5e5);
        }
        let (c, _) = f.fit().unwrap();
        assert!(close(c.rate, 5e5, 1e-3), "{c:?}");
    }

    #[test]
    fn noise_that_fits_a_negative_overhead_goes_through_the_origin() {
        let mut f = CostFit::default();
        // Larger packages slightly faster per unit: negative intercept.
        f.record(100, 80e-6);
        f.record(1000, 1000e-6);
        let (c, trusted) = f.fit().unwrap();
        assert!(trusted);
        assert_eq!(c.overhead_s, 0.0);
        assert!(c.rate > 0.0 && c.rate.is_finite());
        // Garbage is ignored.
        f.record(0, 1.0);
        f.record(10, f64::NAN);
        f.record(10, -1.0);
        assert_eq!(f.fit().unwrap().0, c);
    }

    /// Packages of irregular cost (each size's time scattered 3x around
    /// the truth): the rate is the throughput delivered, within 25%, where
    /// the line's slope would follow the scatter.
    #[test]
    fn irregular_packages_fit_the_delivered_throughput() {
        let mut f = CostFit::default();
        let mut x = 12345u64;
        let (mut sum_n, mut sum_t) = (0.0, 0.0);
        for i in 0..200u64 {
            // xorshift: a fixed pseudo-random scatter in [1/3, 3).
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let scatter = 1.0 / 3.0 + (x % 1000) as f64 / 1000.0 * (3.0 - 1.0 / 3.0);
            let n = 10 + (i * 37) % 500;
            let t = 1e-6 + n as f64 / 1e6 * scatter;
            f.record_parallel(n, t, 15.0);
            sum_n += n as f64;
            sum_t += t;
        }
        let (c, _) = f.fit().unwrap();
        let delivered = sum_n / sum_t;
        assert!(close(c.rate, delivered, 0.25), "{c:?} vs {delivered}");
        assert!(c.overhead_s <= 1e-5, "{c:?}");
    }

    /// Chunks sized to last the same time (1 unit of a costly region, 64
    /// of a cheap one) fit their throughput, not an overhead and an
    /// unbounded rate.
    #[test]
    fn chunks_sized_by_speed_fit_their_throughput() {
        let mut line = CostFit::default();
        let mut tp = CostFit::default();
        for (n, t) in [(64u64, 25e-6), (1, 25e-6), (32, 25e-6), (2, 25e-6)] {
            line.record(n, t);
            tp.record_throughput(n, t, 1.0);
        }
        let (c, _) = line.fit().unwrap();
        assert!(c.rate > 1e6, "the line fit reads a flat time: {c:?}");
        let (c, trusted) = tp.fit().unwrap();
        assert_eq!(c.overhead_s, 0.0);
        // Units over time, the older samples faded by FORGET each.
        let f = FORGET;
        let n = 64.0 * f.powi(3) + f.powi(2) + 32.0 * f + 2.0;
        let t = 25e-6 * (f.powi(3) + f.powi(2) + f + 1.0);
        assert!(close(c.rate, n / t, 1e-9), "{c:?}");
        assert!(trusted, "four packages");
    }

    /// Package times that do not grow with the size (each waits for its
    /// slowest item) fit a mostly-overhead cost whose largest package is
    /// the mean time, not a rate from the mean that ranks the device by its
    /// smallest packages.
    #[test]
    fn times_flat_in_size_fit_an_overhead() {
        let mut f = CostFit::default();
        let samples = [
            (1u64, 3.0e-3),
            (2112, 2.8e-3),
            (33, 3.4e-3),
            (120, 2.9e-3),
            (196, 3.1e-3),
        ];
        for (n, t) in samples {
            f.record(n, t);
        }
        let (c, trusted) = f.fit().unwrap();
        assert!(trusted);
        assert!(c.is_usable());
        let mean = samples.iter().map(|s| s.1).sum::<f64>() / 5.0;
        // Weighted by forgetting, so near (not at) the plain mean.
        assert!(close(c.time(2112.0), mean, 0.15), "{c:?}");
        assert!(c.overhead_s > 1e-3, "{c:?}");
        // Far faster per unit than the mean rate over the packages.
        let units: u64 = samples.iter().map(|s| s.0).sum();
        assert!(c.rate > 2.0 * (units as f64 / (mean * 5.0)), "{c:?}");
        // A larger package, once run, corrects it: time grows with size.
        let mut g = f.clone();
        for _ in 0..20 {
            g.record(8192, 12e-3);
            g.record(2112, 4.4e-3);
        }
        let (c2, _) = g.fit().unwrap();
        assert!(close(c2.time(8192.0), 12e-3, 0.1), "{c2:?}");
    }

    /// A record from one of `p` parallel claimants fades `p` times slower:
    /// after 48 records of a new behaviour, a lone claimant's fit follows
    /// it, a 15-claimant device's fit still mostly remembers the old one.
    #[test]
    fn parallel_records_fade_per_claimant() {
        let old = Cost::rate_only(1e6);
        let new = Cost::rate_only(4e6);
        let run = |parallel: f64| {
            let mut f = CostFit::default();
            for _ in 0..400 {
                f.record_parallel(1000, old.time(1000.0), parallel);
            }
            for _ in 0..48 {
                f.record_parallel(1000, new.time(1000.0), parallel);
            }
            f.fit().unwrap().0.rate
        };
        assert!(run(1.0) > 2.5e6, "{}", run(1.0));
        assert!(run(15.0) < 1.5e6, "{}", run(15.0));
        // Below 1 (or NaN) counts as 1.
        assert_eq!(run(0.5), run(1.0));
        assert_eq!(run(f64::NAN), run(1.0));
    }

    #[test]
    fn seed_reproduces_the_cost_and_fades() {
        let prior = Cost {
            overhead_s: 1e-3,
            rate: 2e6,
        };
        let mut f = CostFit::default();
        f.seed(prior, 4.0);
        let (c, trusted) = f.fit().unwrap();
        assert!(trusted);
        assert!(close(c.overhead_s, 1e-3, 1e-6) && close(c.rate, 2e6, 1e-6));
        // Unusable priors are ignored.
        let mut g = CostFit::default();
        g.seed(Cost::rate_only(f64::NAN), 4.0);
        g.seed(prior, 0.0);
        assert_eq!(g.fit(), None);
        // Live packages take over.
        for i in 0..100u64 {
            let n = 1000 + (i % 4) * 30_000;
            f.record(n, 10e-6 + n as f64 / 1e6);
        }
        let (c, _) = f.fit().unwrap();
        assert!(close(c.rate, 1e6, 0.02), "{c:?}");
    }

    /// A GPU's warm packages: 20 us each plus 50 000 units/s.
    const WARM: Cost = Cost {
        overhead_s: 20e-6,
        rate: 5e4,
    };
    const WARM_SIZES: [u64; 8] = [16, 512, 64, 1024, 256, 32, 128, 511];

    /// The cold first package (one unit, 6.4 ms: a pipeline's first use)
    /// then warm ones: the fit is the warm line (overhead near 20 us), where
    /// the same package recorded warm would own a fixed cost of hundreds of
    /// microseconds.
    #[test]
    fn a_cold_first_package_leaves_the_warm_fit_alone() {
        let mut cold = CostFit::default();
        let mut warm = CostFit::default();
        cold.record_cold(1, 6.4e-3, 1.0);
        warm.record(1, 6.4e-3);
        for n in WARM_SIZES {
            cold.record(n, WARM.time(n as f64));
            warm.record(n, WARM.time(n as f64));
        }
        let (c, trusted) = cold.fit().unwrap();
        assert!(trusted);
        assert!(close(c.overhead_s, 20e-6, 1e-6), "{c:?}");
        assert!(close(c.rate, 5e4, 1e-6), "{c:?}");
        // Recorded as if warm, it owns the overhead (the control).
        let (w, _) = warm.fit().unwrap();
        assert!(w.overhead_s > 10.0 * 20e-6, "{w:?}");
        // A cold package after warm ones is ignored.
        let before = cold.clone();
        cold.record_cold(1, 6.4e-3, 1.0);
        assert_eq!(cold, before);
    }

    /// Cold packages alone: one leaves the device unmeasured (it is probed
    /// again), several are a rate; the first warm package replaces them,
    /// and a run that ends with only cold ones forgets them.
    #[test]
    fn cold_packages_count_only_until_a_warm_one() {
        let mut f = CostFit::default();
        f.record_cold(1, 6.4e-3, 1.0);
        let (c, trusted) = f.fit().unwrap();
        assert!(!trusted, "one cold package is no measurement");
        assert!(close(c.rate, 1.0 / 6.4e-3, 1e-9), "{c:?}");
        // Garbage is ignored.
        f.record_cold(0, 1.0, 1.0);
        f.record_cold(4, f64::NAN, 1.0);
        assert!(close(f.fit().unwrap().0.rate, 1.0 / 6.4e-3, 1e-9));
        // Settling forgets cold packages alone.
        let mut settled = f.clone();
        settled.settle();
        assert_eq!(settled.fit(), None);
        // Several cold packages are a rate (forgetting-weighted).
        let mut cpu = CostFit::default();
        for _ in 0..3 {
            cpu.record_cold(10, 1e-4, 15.0);
        }
        assert!(cpu.fit().unwrap().1);
        // One warm package replaces the cold ones.
        f.record(64, 1e-3);
        let (c, _) = f.fit().unwrap();
        assert!(close(c.rate, 64.0 / 1e-3, 1e-9), "{c:?}");
        f.settle();
        assert!(close(f.fit().unwrap().0.rate, 64.0 / 1e-3, 1e-9));
    }

    /// Packages on the fit, within a few percent of it, leave the spread
    /// small; packages whose times swing by what their items cost (a
    /// fractal's GPU packages: 50-400 k units/s) put it past
    /// [`IRREGULAR`]. Packages mostly overhead are not weighed.
    #[test]
    fn irregularity_is_the_spread_of_packages_around_the_fit() {
        let mut regular = CostFit::default();
        assert_eq!(regular.irregularity(), None);
        for (i, n) in [100u64, 200, 400, 100, 200, 400, 100, 200].into_iter().enumerate() {
            let noise = if i % 2 == 0 { 1.03 } else { 0.97 };
            regular.record(n, (20e-6 + n as f64 / 1e5) * noise);
        }
        let r = regular.irregularity().expect("several packages weighed");
        assert!(r < 0.1, "{r}");
        let mut irregular = CostFit::default();
        for (i, n) in [200u64, 100, 70, 200, 100, 70, 200, 100].into_iter().enumerate() {
            let rate = [5e4, 1.5e5, 4e5][i % 3];
            irregular.record(n, 20e-6 + n as f64 / rate);
        }
        let r = irregular.irregularity().expect("several packages weighed");
        assert!(r > IRREGULAR, "{r}");
        // Packages of one unit on a fit of 20 us fixed cost: mostly
        // overhead, never weighed, whatever their times.
        let mut tiny = CostFit::default();
        tiny.record(1000, 20e-6 + 1000.0 / 1e5);
        tiny.record(100, 20e-6 + 100.0 / 1e5);
        for i in 0..8 {
            tiny.record(1, if i % 2 == 0 { 20e-6 } else { 60e-6 });
        }
        assert_eq!(tiny.irregularity(), None);
    }

    /// A warm package far slower than the trusted line predicts (a late
    /// one-time cost) is left out: the overhead stays at the truth. A
    /// lasting change still moves the fit.
    #[test]
    fn an_outlier_does_not_own_the_overhead() {
        let mut f = CostFit::default();
        let mut plain = CostFit::default();
        for n in WARM_SIZES {
            f.record(n, WARM.time(n as f64));
            plain.add(n as f64, (WARM.time(n as f64), 0.0), 1.0, FORGET);
        }
        f.record(1, 6.4e-3);
        plain.add(1.0, (6.4e-3, 0.0), 1.0, FORGET);
        for n in WARM_SIZES {
            f.record(n, WARM.time(n as f64));
            plain.add(n as f64, (WARM.time(n as f64), 0.0), 1.0, FORGET);
        }
        let (c, _) = f.fit().unwrap();
        assert!(close(c.overhead_s, 20e-6, 1e-6), "{c:?}");
        assert!(close(c.rate, 5e4, 1e-6), "{c:?}");
        // Unbounded, it would have owned the overhead (the control).
        let (p, _) = plain.fit().unwrap();
        assert!(p.overhead_s > 5.0 * 20e-6, "{p:?}");
        // The device becomes 100 times as slow: its first two packages are
        // left out, then the fit follows.
        let slow = Cost {
            overhead_s: 20e-6,
            rate: 5e4 / 100.0,
        };
        let before = f.fit();
        for n in [64u64, 512] {
            f.record(n, slow.time(n as f64));
        }
        assert_eq!(f.fit(), before);
        f.record(128, slow.time(128.0));
        assert_ne!(f.fit(), before);
        for _ in 0..6 {
            for n in WARM_SIZES {
                f.record(n, slow.time(n as f64));
            }
        }
        let (c, _) = f.fit().unwrap();
        assert!(close(c.rate, slow.rate, 0.05), "{c:?}");
    }

    /// A device measured only cold, whose cold packages' execution its own
    /// clock timed, ends the run with that as a provisional cost: trusted,
    /// of no fixed size, replaced whole by the first warm package (and by
    /// a profile's seed); without such a time, cold samples are forgotten.
    #[test]
    fn cold_packages_timed_by_the_device_make_a_provisional_cost() {
        let mut f = CostFit::default();
        f.record_cold(100, 40e-3, 1.0);
        f.record_cold_device(100, 1e-4);
        assert_eq!(f.fit().map(|(_, trusted)| trusted), Some(false));
        f.settle();
        assert!(f.is_provisional());
        let (c, trusted) = f.fit().unwrap();
        assert!(trusted);
        assert!(close(c.rate, 1e6, 1e-9), "{c:?}");
        assert_eq!(c.overhead_s, 0.0);
        assert_eq!(f.one_size(), None);
        // The first warm package replaces it.
        let mut warm = f.clone();
        warm.record(50, 1e-3);
        assert!(!warm.is_provisional());
        let mut fresh = CostFit::default();
        fresh.record(50, 1e-3);
        assert_eq!(warm, fresh);
        // A seed too.
        let mut seeded = f.clone();
        seeded.seed(Cost::rate_only(5e5), 4.0);
        assert!(!seeded.is_provisional());
        assert!(close(seeded.fit().unwrap().0.rate, 5e5, 1e-6));
        // Without the device's time, the cold samples are forgotten; after
        // a warm sample, the device's time of a cold one is ignored.
        let mut g = CostFit::default();
        g.record_cold(100, 40e-3, 1.0);
        g.settle();
        assert_eq!(g.fit(), None);
        let mut h = CostFit::default();
        h.record(50, 1e-3);
        h.record_cold_device(100, 1e-9);
        h.settle();
        assert!(!h.is_provisional());
        assert_eq!(h.fit().unwrap().0.rate, 5e4);
    }

    /// A CPU beside two GPUs adds too little where the GPUs alone take at
    /// most 1.05 times as long as all three (a start it waits for counts);
    /// a CPU worth a tenth of the GPUs' rate does not, whatever its fitted
    /// fixed cost; with two devices, a cost unknown or an index out of
    /// range, nothing is said.
    #[test]
    fn a_cpu_that_adds_little_beside_two_gpus_is_told_apart() {
        let gpu = Cost::rate_only(1e8);
        let units = 1 << 24;
        let three = |cpu: Cost| [(Some(cpu), 15), (Some(gpu), 1), (Some(gpu), 1)];
        // 2% of the GPUs' rate: the GPUs alone take 1.02x as long.
        let slow = Cost::rate_only(4e6);
        assert_eq!(adds_little(&three(slow), &[], units, 0, 0.05), Some(true));
        // 10%: left in.
        let fast = Cost::rate_only(2e7);
        assert_eq!(adds_little(&three(fast), &[], units, 0, 0.05), Some(false));
        // A fitted fixed cost does not count.
        let fixed = Cost {
            overhead_s: 0.2,
            rate: 2e7,
        };
        assert_eq!(adds_little(&three(fixed), &[], units, 0, 0.05), Some(false));
        // A start the CPU waits for counts the same way.
        let late = [StartCost {
            fixed_s: 0.2,
            by_share_s: 0.0,
        }];
        assert_eq!(adds_little(&three(fast), &late, units, 0, 0.05), Some(true));
        // Either GPU adds half: never little.
        assert_eq!(adds_little(&three(slow), &[], units, 1, 0.05), Some(false));
        assert_eq!(adds_little(&three(slow)[..2], &[], units, 0, 0.05), None);
        assert_eq!(adds_little(&three(slow), &[], units, 3, 0.05), None);
        let unknown = [(None, 15), (Some(gpu), 1), (Some(gpu), 1)];
        assert_eq!(adds_little(&unknown, &[], units, 0, 0.05), None);
    }

    /// The model's estimate of what co-executing gains: the estimated
    /// `S_max` less 1, from the rates; 0 where another device cannot add
    /// a unit before the fastest ends alone; unknown with a device
    /// unmeasured.
    #[test]
    fn co_gain_is_the_estimated_s_max_less_one() {
        let gpu = Cost::rate_only(1e8);
        let g = |cpu: Cost, units| co_gain(&[(Some(cpu), 1), (Some(gpu), 1)], &[], units).unwrap();
        assert!(close(g(Cost::rate_only(1e7), 1 << 24), 0.1, 1e-6));
        assert!(close(g(Cost::rate_only(1e8), 1 << 24), 1.0, 1e-6));
        // A CPU whose one unit costs more than the GPU's whole run.
        let slow = Cost {
            overhead_s: 1.0,
            rate: 1e7,
        };
        assert_eq!(g(slow, 1 << 20), 0.0);
        assert_eq!(co_gain(&[(None, 1), (Some(gpu), 1)], &[], 1 << 20), None);
        assert_eq!(co_gain(&[(Some(gpu), 1)], &[], 1 << 20), None);
    }

    #[test]
    fn single_device_when_co_execution_cannot_pay() {
        let gpu = Cost {
            overhead_s: 20e-6,
            rate: 1e8,
        };
        let cpu = Cost {
            overhead_s: 1e-6,
            rate: 1e6,
        };
        // S_max ~1.01: the GPU alone.
        assert_eq!(
            single_device(&[(Some(cpu), 1), (Some(gpu), 1)], 1 << 24, 0.05, 0.0),
            Some(1)
        );
        // Comparable devices: co-execute.
        let cpu2 = Cost::rate_only(8e7);
        assert_eq!(
            single_device(&[(Some(cpu2), 1), (Some(gpu), 1)], 1 << 24, 0.05, 0.0),
            None
        );
        // ...unless the run is too short to wake the other device.
        assert_eq!(
            single_device(&[(Some(cpu2), 1), (Some(gpu), 1)], 100, 0.05, 50e-6),
            Some(0)
        );
        // Overheads count for the device alone (a slow-to-start GPU on a
        // small run is not the fastest), and against waking a device whose
        // one package outlasts the fastest alone: a GPU that pays 5 ms a
        // package beside a CPU that does the run in 1.25 ms sits it out...
        let laggard = Cost {
            overhead_s: 5e-3,
            rate: 1e8,
        };
        assert_eq!(
            single_device(&[(Some(cpu2), 1), (Some(laggard), 1)], 100_000, 0.05, 0.0),
            Some(0)
        );
        // ...but not from a run of 10 ms on: there the guards keep its
        // packages to what pays at run time.
        assert_eq!(
            single_device(&[(Some(cpu2), 1), (Some(laggard), 1)], 800_000, 0.05, 0.0),
            None
        );
        // Anything unknown: co-execute (and measure).
        assert_eq!(
            single_device(&[(None, 1), (Some(gpu), 1)], 1 << 24, 0.05, 0.0),
            None
        );
        assert_eq!(single_device(&[(Some(gpu), 1)], 1 << 24, 0.05, 0.0), None);
        assert_eq!(
            single_device(&[(Some(cpu), 1), (Some(gpu), 1)], 0, 0.05, 0.0),
            None
        );
        // A CPU of 16 workers as fast as the GPU over large runs: on a run
        // of 2 units 14 of them idle, so the GPU alone is faster; on 2^20
        // units both together.
        let cpu16 = Cost::rate_only(1e6);
        let gpu = Cost::rate_only(1e6);
        assert_eq!(
            single_device(&[(Some(cpu16), 16), (Some(gpu), 1)], 2, 0.05, 0.0),
            Some(1)
        );
        assert_eq!(
            single_device(&[(Some(cpu16), 16), (Some(gpu), 1)], 1 << 20, 0.05, 0.0),
            None
        );
    }

    /// The fastest device's fixed cost is paid together as alone: a GPU
    /// whose fitted overhead is large (its co-executed packages waited
    /// for downloads) beside a CPU of under 1% of its rate gains under
    /// 1% by co-executing, not the 40% that counting the overhead alone
    /// only would give; beside an equal CPU, twice.
    #[test]
    fn the_fastest_devices_fixed_cost_counts_together_too() {
        let gpu = Cost {
            overhead_s: 0.6e-3,
            rate: 2e7,
        };
        let units = 32_768; // 1.64 ms of rate, 2.24 ms alone
        let cpu = Cost::rate_only(1.35e5);
        let gain = co_gain(&[(Some(cpu), 1), (Some(gpu), 1)], &[], units).unwrap();
        assert!(close(gain, 1.35e5 / 2e7, 1e-6), "{gain}");
        assert_eq!(
            single_device(&[(Some(cpu), 1), (Some(gpu), 1)], units, 0.05, 0.0),
            Some(1)
        );
        let equal = Cost::rate_only(2e7);
        let gain = co_gain(&[(Some(equal), 1), (Some(gpu), 1)], &[], units).unwrap();
        // The CPU alone is the fastest (no fixed cost), 1.64 ms; the
        // GPU's overhead, another device's, is left out: 0.82 together.
        assert!(close(gain, 1.0, 1e-6), "{gain}");
    }

    #[test]
    fn a_device_that_must_first_bring_data_back_sits_out() {
        // Two devices of equal rate: co-executing halves the time.
        let c = Cost {
            overhead_s: 10e-6,
            rate: 1e9,
        };
        let units = 1 << 20; // about 1 ms alone
        let both = [(Some(c), 1), (Some(c), 1)];
        assert_eq!(single_device_after(&both, &[], units, 0.05, 0.0), None);
        // The first must first wait 0.2 ms (a share of the run's data to
        // bring back): still worth it.
        let some = [StartCost {
            fixed_s: 0.0,
            by_share_s: 0.4e-3,
        }];
        assert_eq!(single_device_after(&both, &some, units, 0.05, 0.0), None);
        // 1.5 ms before it can start (a vector it reads whole): the other
        // alone is done first.
        let whole = [StartCost {
            fixed_s: 1.5e-3,
            by_share_s: 0.0,
        }];
        assert_eq!(single_device_after(&both, &whole, units, 0.05, 0.0), Some(1));
        // Its share's data, too much to pay: the gain is gone.
        let late = [StartCost {
            fixed_s: 0.0,
            by_share_s: 2.0e-3,
        }];
        assert_eq!(single_device_after(&both, &late, units, 0.05, 0.0), Some(1));
        // A wait for the second device only is the second's.
        let second = [StartCost::default(), whole[0]];
        assert_eq!(single_device_after(&both, &second, units, 0.05, 0.0), Some(0));
    }
}
