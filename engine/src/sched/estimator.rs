//! Power (throughput) estimation: the extension point the adaptive policies
//! read from.

use std::fmt;

use std::sync::Mutex;

use crossbeam_utils::CachePadded;

use super::model::{Cost, CostFit, DeviceTime, EarlySample};
use super::sync::{AtomicU64, Ordering};

/// Clean extension point for smarter estimators.
///
/// One estimator is shared by all claimants of a run, and may outlive the run
/// so that the next run of the same kernel starts informed.
pub trait PowerEstimator: Send + Sync {
    /// Record that `device` finished `units` in `seconds` (wall time including
    /// its overheads).
    fn record(&self, device: usize, units: u64, seconds: f64);
    /// Like [`record`](Self::record), for a package that ran on one of
    /// `parallel` claimants of `device` at once (`seconds` already scaled to
    /// the whole device): each such record counts for `1 / parallel` of a
    /// package in how fast older ones are forgotten, so that a device's
    /// memory spans the same stretch of a run however many claimants it
    /// has (fifteen CPU workers would otherwise forget everything but each
    /// one's last package, and an irregular kernel's rate would follow its
    /// last few packages' luck). The default records it as one package.
    fn record_parallel(&self, device: usize, units: u64, seconds: f64, parallel: f64) {
        let _ = parallel;
        self.record(device, units, seconds);
    }
    /// Like [`record`](Self::record), where the device's own clock timed
    /// the package's execution (`timed`): a package under a group on each
    /// of the device's cores is fitted by that time, the rest of `seconds`
    /// as latency (see [`CostFit::record_timed`]). The default records
    /// `seconds` alone.
    fn record_timed(&self, device: usize, units: u64, seconds: f64, timed: Option<DeviceTime>) {
        let _ = timed;
        self.record(device, units, seconds);
    }
    /// Like [`record_parallel`](Self::record_parallel), for work whose
    /// sizes were chosen from its own speed (a CPU worker's chunks, each
    /// sized to last about the same time): their sizes say nothing about a
    /// fixed cost per package, so only the throughput delivered (units
    /// over time) is learned. On an irregular kernel, chunks sized that
    /// way take about the same time whatever their size, which a fit of
    /// time against size would read as a device that is nearly all fixed
    /// cost and infinitely fast. The default records it as a package.
    fn record_throughput(&self, device: usize, units: u64, seconds: f64, parallel: f64) {
        self.record_parallel(device, units, seconds, parallel);
    }
    /// Like [`record_parallel`](Self::record_parallel), for a *cold*
    /// package: the first `device` ran of the kernel in the process, which
    /// paid one-time costs (see [`CostFit::record_cold`]). It counts only
    /// while the device has no warm record. The default ignores it.
    fn record_cold(&self, device: usize, units: u64, seconds: f64, parallel: f64) {
        let _ = (device, units, seconds, parallel);
    }
    /// The time a cold package of `units` (see [`record_cold`](Self::record_cold))
    /// took on `device` by the device's own clock (see
    /// [`CostFit::record_cold_device`]). The default ignores it.
    fn record_cold_device(&self, device: usize, units: u64, device_seconds: f64) {
        let _ = (device, units, device_seconds);
    }
    /// What `device` ran before it is measured (see [`EarlySample`]): a
    /// bound on its packages' time until [`cost`](Self::cost) has one.
    /// The default knows none.
    fn early_sample(&self, device: usize) -> Option<EarlySample> {
        let _ = device;
        None
    }
    /// Units per second, if measured.
    ///
    /// The policies treat `None`, and any value that is not finite and
    /// positive, as "not measured yet".
    fn power(&self, device: usize) -> Option<f64>;
    /// The device's package cost (fixed overhead and rate), if measured:
    /// `power` is its rate. The default knows no overhead.
    fn cost(&self, device: usize) -> Option<Cost> {
        usable_power(self.power(device)).map(Cost::rate_only)
    }
    /// What a package of `device` costs to run on the device itself,
    /// without the transfers a staged run adds around it: when the
    /// dispatch loop expects a package to end. The default: [`cost`](Self::cost).
    fn run_cost(&self, device: usize) -> Option<Cost> {
        self.cost(device)
    }
    /// The size of the packages `device`'s cost was measured on, where they
    /// all had one size: its fixed cost per package cannot be told apart
    /// from its rate yet (a GPU package that waits for its heaviest
    /// work-group takes as long at one size as at five). HGuided then makes
    /// a lone claimant's next package twice as large, so that the next
    /// measurement separates them. The default knows none.
    fn one_size(&self, device: usize) -> Option<u64> {
        let _ = device;
        None
    }
    /// How far `device`'s packages fell from its fitted cost, either way
    /// (see [`CostFit::irregularity`]); past about 0.35 its kernel's
    /// items differ in cost, and a package's time depends on which it
    /// holds (see `Plan::whole_share_risks_idling`). The default: `None`,
    /// not known.
    fn irregularity(&self, device: usize) -> Option<f64> {
        let _ = device;
        None
    }

    /// The packages HGuided cuts the run of `device` into where it is the
    /// run's lone claimant (a lone GPU whose transfers have a queue of
    /// their own: a package's download then runs beside the next one's
    /// compute). The default: `None`, the whole range at once.
    fn lone_packages(&self, device: usize) -> Option<u64> {
        let _ = device;
        None
    }
    /// The seconds per unit that `device`'s packages spend uploading what
    /// they read from the host into its own memory (a staged GPU, at its
    /// learned upload bandwidth), where they upload any. The default:
    /// `None`, none (the device works on the host's bytes).
    fn upload_s_per_unit(&self, device: usize) -> Option<f64> {
        let _ = device;
        None
    }

    /// The seconds per unit that `device`'s packages spend bringing their
    /// results home (a staged GPU, at its learned download bandwidth),
    /// where its packages are to be cut for them as for uploads (see
    /// `Plan::pipelined`). The default: `None`, not cut for downloads.
    fn download_s_per_unit(&self, device: usize) -> Option<f64> {
        let _ = device;
        None
    }
}

/// `power` if it is a measurement the policies accept (finite and positive),
/// else `None`: the one rule for "measured", shared by the schedulers and
/// the executors.
pub fn usable_power(power: Option<f64>) -> Option<f64> {
    power.filter(|p| p.is_finite() && *p > 0.0)
}

/// One device's fit and the figures published from it.
struct DeviceModel {
    /// Guarded: a record is one short critical section per package.
    fit: Mutex<CostFit>,
    /// `f64` bits of the trusted fit's overhead and rate; rate 0: none.
    overhead: CachePadded<AtomicU64>,
    rate: CachePadded<AtomicU64>,
    /// The one size its packages had ([`CostFit::one_size`]), in units;
    /// 0: none.
    one_size: AtomicU64,
    /// Its packages' spread around the fit ([`CostFit::irregularity`]),
    /// as `f64` bits; 0: none known.
    irregularity: AtomicU64,
}

impl DeviceModel {
    fn new() -> Self {
        DeviceModel {
            fit: Mutex::new(CostFit::default()),
            overhead: CachePadded::new(AtomicU64::new(0)),
            rate: CachePadded::new(AtomicU64::new(0)),
            one_size: AtomicU64::new(0),
            irregularity: AtomicU64::new(0),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, CostFit> {
        self.fit.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Publishes the fit (under the lock, so publications are in fit order).
    fn publish(&self, fit: &CostFit) {
        let (overhead, rate, trusted) = match fit.fit() {
            Some((c, true)) => (c.overhead_s, c.rate, true),
            _ => (0.0, 0.0, false),
        };
        // Relaxed on the overhead, Release on the rate (paired with the
        // Acquire in `cost`): a reader that sees a rate sees at least the
        // overhead published with it. A reader racing a later publication
        // may pair that rate with a newer overhead: a blend of two
        // consecutive fits of one device, never garbage.
        self.overhead.store(overhead.to_bits(), Ordering::Relaxed);
        self.rate.store(rate.to_bits(), Ordering::Release);
        // Relaxed: a sizing hint read on its own, paired with nothing (a
        // reader that sees it one publication late sizes one package as
        // the fit before allowed).
        let one = fit.one_size_if(trusted).map_or(0, |n| n.ceil() as u64);
        self.one_size.store(one, Ordering::Relaxed);
        // Relaxed: a sizing hint read on its own, as `one_size`.
        let spread = fit.irregularity().filter(|r| r.is_finite()).unwrap_or(0.0);
        self.irregularity.store(spread.to_bits(), Ordering::Relaxed);
    }

    fn cost(&self) -> Option<Cost> {
        // Acquire: pairs with the Release in `publish` (see there); the
        // overhead is read after it, Relaxed.
        let rate = f64::from_bits(self.rate.load(Ordering::Acquire));
        let overhead = f64::from_bits(self.overhead.load(Ordering::Relaxed));
        let c = Cost {
            overhead_s: overhead,
            rate,
        };
        c.is_usable().then_some(c)
    }
}

/// Default estimator: per device a [`Cost`] model (`overhead + n / rate`)
/// fitted online from the packages recorded (see [`CostFit`]); power is the
/// fitted rate. Readers (every claim) read two published words without
/// locking; a record takes the device's lock for one fit.
pub struct ThroughputEstimator {
    devices: Vec<DeviceModel>,
}

impl ThroughputEstimator {
    /// An estimator for devices `0..devices`, with nothing measured.
    pub fn new(devices: usize) -> Self {
        Self {
            devices: (0..devices).map(|_| DeviceModel::new()).collect(),
        }
    }

    /// Number of devices this estimator tracks.
    pub fn devices(&self) -> usize {
        self.devices.len()
    }

    /// Forget every measurement.
    pub fn reset(&self) {
        for d in &self.devices {
            let mut fit = d.lock();
            *fit = CostFit::default();
            d.publish(&fit);
        }
    }

    /// Trusts what every device recorded so far (see [`CostFit::settle`]):
    /// the engine calls it when a run ends.
    pub fn settle(&self) {
        for d in &self.devices {
            let mut fit = d.lock();
            fit.settle();
            d.publish(&fit);
        }
    }

    /// Applies `record` to `device`'s fit and publishes it; ignores
    /// out-of-range devices, empty packages and times that are not finite
    /// and positive.
    fn record_with(&self, device: usize, units: u64, seconds: f64, record: impl FnOnce(&mut CostFit)) {
        let Some(d) = self.devices.get(device) else {
            return;
        };
        if !(seconds.is_finite() && seconds > 0.0) || units == 0 {
            return;
        }
        let mut fit = d.lock();
        record(&mut fit);
        d.publish(&fit);
    }

    /// Whether `device` is known only by a provisional cost (see
    /// [`CostFit::settle`]).
    pub fn is_provisional(&self, device: usize) -> bool {
        self.devices
            .get(device)
            .is_some_and(|d| d.lock().is_provisional())
    }

    /// The largest package `device`'s cost was measured on in this process
    /// (see [`CostFit::measured_up_to`]), in units.
    pub fn measured_up_to(&self, device: usize) -> Option<u64> {
        let n = self.devices.get(device)?.lock().measured_up_to()?;
        Some(n.ceil() as u64)
    }

    /// `device`'s cost where it is worth keeping beyond this process (for
    /// profiles): not a provisional one (see [`CostFit::settle`]).
    pub fn lasting_cost(&self, device: usize) -> Option<Cost> {
        if self.is_provisional(device) {
            return None;
        }
        self.devices.get(device)?.cost()
    }

    /// Starts `device` from `cost` as if it had measured it over `weight`
    /// packages (a prior, from a profile); live records soon outweigh it.
    pub fn seed(&self, device: usize, cost: Cost, weight: f64) {
        if let Some(d) = self.devices.get(device) {
            let mut fit = d.lock();
            fit.seed(cost, weight);
            d.publish(&fit);
        }
    }
}

impl PowerEstimator for ThroughputEstimator {
    /// Ignores out-of-range devices and times that are not finite and
    /// positive.
    fn record(&self, device: usize, units: u64, seconds: f64) {
        self.record_parallel(device, units, seconds, 1.0);
    }

    /// As [`record`](PowerEstimator::record), with the forgetting of one
    /// package spread over `parallel` records.
    fn record_parallel(&self, device: usize, units: u64, seconds: f64, parallel: f64) {
        self.record_with(device, units, seconds, |fit| {
            fit.record_parallel(units, seconds, parallel)
        });
    }

    /// As [`record`](PowerEstimator::record), with the package's latency
    /// told apart by the device's clock (see [`CostFit::record_timed`]).
    fn record_timed(&self, device: usize, units: u64, seconds: f64, timed: Option<DeviceTime>) {
        self.record_with(device, units, seconds, |fit| {
            fit.record_timed(units, seconds, timed, 1.0)
        });
    }

    /// As [`record_parallel`](PowerEstimator::record_parallel), learning
    /// the throughput only (see [`CostFit::record_throughput`]).
    fn record_throughput(&self, device: usize, units: u64, seconds: f64, parallel: f64) {
        self.record_with(device, units, seconds, |fit| {
            fit.record_throughput(units, seconds, parallel)
        });
    }

    /// As [`record_parallel`](PowerEstimator::record_parallel), for a cold
    /// package (see [`CostFit::record_cold`]).
    fn record_cold(&self, device: usize, units: u64, seconds: f64, parallel: f64) {
        let Some(d) = self.devices.get(device) else {
            return;
        };
        let mut fit = d.lock();
        fit.record_cold(units, seconds, parallel);
        d.publish(&fit);
    }

    /// As [`record_cold`](PowerEstimator::record_cold), the device's own
    /// time of a cold package (see [`CostFit::record_cold_device`]).
    fn record_cold_device(&self, device: usize, units: u64, device_seconds: f64) {
        if let Some(d) = self.devices.get(device) {
            d.lock().record_cold_device(units, device_seconds);
        }
    }

    fn early_sample(&self, device: usize) -> Option<EarlySample> {
        self.devices.get(device)?.lock().early_sample()
    }

    fn power(&self, device: usize) -> Option<f64> {
        self.cost(device).map(|c| c.rate)
    }

    fn cost(&self, device: usize) -> Option<Cost> {
        self.devices.get(device)?.cost()
    }

    fn one_size(&self, device: usize) -> Option<u64> {
        // Relaxed: see `DeviceModel::publish`.
        let n = self.devices.get(device)?.one_size.load(Ordering::Relaxed);
        (n > 0).then_some(n)
    }

    fn irregularity(&self, device: usize) -> Option<f64> {
        // Relaxed: see `DeviceModel::publish`.
        let bits = self.devices.get(device)?.irregularity.load(Ordering::Relaxed);
        Some(f64::from_bits(bits)).filter(|&r| r > 0.0)
    }
}

impl fmt::Debug for ThroughputEstimator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries((0..self.devices.len()).map(|d| self.power(d)))
            .finish()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn measures_units_per_second() {
        let e = ThroughputEstimator::new(2);
        assert_eq!(e.devices(), 2);
        assert_eq!(e.power(0), None);
        e.record(0, 100, 0.5);
        e.record(0, 300, 1.5);
        assert!((e.power(0).unwrap() - 200.0).abs() < 1e-9);
        assert_eq!(e.power(1), None);
        assert_eq!(e.power(7), None);
        e.record(7, 1, 1.0);
        e.record(1, 5, f64::NAN);
        e.record(1, 5, -1.0);
        assert_eq!(e.power(1), None);
        e.record(1, 5, 0.0); // no time: ignored
        assert_eq!(e.power(1), None);
        // One short probe is no measurement yet; a second size is.
        e.record(1, 8, 60e-6);
        assert_eq!(e.power(1), None);
        e.record(1, 800, 52e-6 + 800.0 / 1e6);
        let c = e.cost(1).unwrap();
        assert!(
            (c.rate - 1e6).abs() < 1.0 && (c.overhead_s - 52e-6).abs() < 1e-9,
            "{c:?}"
        );
        e.seed(0, Cost::rate_only(5.0), 4.0);
        e.reset();
        assert_eq!(e.power(0), None);
        assert_eq!(format!("{e:?}"), "[None, None]");
    }

    /// A device known only provisionally publishes its cost, but has no
    /// lasting one (for profiles) until a warm package replaces it.
    #[test]
    fn a_provisional_cost_is_published_but_not_lasting() {
        let e = ThroughputEstimator::new(2);
        e.record_cold(1, 100, 40e-3, 1.0);
        e.record_cold_device(1, 100, 1e-4);
        assert_eq!(e.cost(1), None);
        e.settle();
        assert!(e.is_provisional(1));
        assert!(e.cost(1).is_some());
        assert_eq!(e.lasting_cost(1), None);
        e.record(1, 100, 2e-4);
        assert!(!e.is_provisional(1));
        assert_eq!(e.lasting_cost(1), e.cost(1));
        assert!(!e.is_provisional(0) && !e.is_provisional(7));
    }

    /// A cold package alone publishes nothing (the device is probed
    /// again), is forgotten when the run ends, and leaves no trace in the
    /// fit once warm packages arrive.
    #[test]
    fn cold_packages_are_kept_apart() {
        let e = ThroughputEstimator::new(2);
        e.record_cold(0, 1, 6.4e-3, 1.0);
        assert_eq!(e.cost(0), None);
        e.settle();
        e.record(0, 8, 60e-6);
        assert_eq!(e.cost(0), None, "the cold package was not forgotten");
        e.record_cold(1, 1, 6.4e-3, 1.0);
        e.record_cold(9, 1, 6.4e-3, 1.0); // out of range: ignored
        for n in [16u64, 512, 64, 1024] {
            e.record(1, n, 20e-6 + n as f64 / 5e4);
        }
        let c = e.cost(1).unwrap();
        assert!((c.overhead_s - 20e-6).abs() < 1e-9, "{c:?}");
        assert!((c.rate - 5e4).abs() < 1e-3, "{c:?}");
    }
    /// What a device ran before it is measured: its cold packages, by the
    /// device's own clock where timed; then its warm packages' mean until
    /// the fit is trusted; nothing once it is.
    #[test]
    fn the_early_sample_follows_the_device_until_it_is_measured() {
        let e = ThroughputEstimator::new(1);
        assert_eq!(e.early_sample(0), None, "nothing ran");
        e.record_cold(0, 2, 4e-3, 1.0);
        let s = e.early_sample(0).unwrap();
        assert_eq!((s.units, s.seconds), (2.0, 4e-3));
        e.record_cold_device(0, 2, 1e-4);
        let s = e.early_sample(0).unwrap();
        assert_eq!((s.units, s.seconds), (2.0, 1e-4), "the device's clock");
        e.record(0, 10, 3e-5);
        assert_eq!(e.cost(0), None, "one warm package is not trusted");
        let s = e.early_sample(0).unwrap();
        assert_eq!((s.units, s.seconds), (10.0, 3e-5), "the warm package");
        e.record(0, 30, 5e-5);
        e.record(0, 50, 7e-5);
        assert!(e.cost(0).is_some());
        assert_eq!(e.early_sample(0), None, "measured");
        assert_eq!(e.early_sample(7), None, "out of range");
    }
}
