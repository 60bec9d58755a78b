//! Power (throughput) estimation: the extension point the adaptive policies
//! read from.

use std::fmt;

use crossbeam_utils::CachePadded;

use super::sync::{AtomicU64, Ordering};

/// Clean extension point for smarter estimators.
///
/// One estimator is shared by all claimants of a run, and may outlive the run
/// so that the next run of the same kernel starts informed.
pub trait PowerEstimator: Send + Sync {
    /// Record that `device` finished `units` in `seconds` (wall time including
    /// its overheads).
    fn record(&self, device: usize, units: u64, seconds: f64);
    /// Units per second, if measured.
    ///
    /// The policies treat `None`, and any value that is not finite and
    /// positive, as "not measured yet".
    fn power(&self, device: usize) -> Option<f64>;
}

/// `power` if it is a measurement the policies accept (finite and positive),
/// else `None`: the one rule for "measured", shared by the schedulers and
/// the executors.
pub fn usable_power(power: Option<f64>) -> Option<f64> {
    power.filter(|p| p.is_finite() && *p > 0.0)
}

/// Per-device pair of cumulative counters, each on its own cache line.
struct Counters {
    units: CachePadded<AtomicU64>,
    nanos: CachePadded<AtomicU64>,
}

/// Default estimator: lock-free, per-device cumulative units and nanoseconds
/// in `AtomicU64`s; power = units / time (a throughput averaged over
/// everything recorded since creation or the last [`reset`](Self::reset)).
pub struct ThroughputEstimator {
    devices: Vec<Counters>,
}

impl ThroughputEstimator {
    /// An estimator for devices `0..devices`, with nothing measured.
    pub fn new(devices: usize) -> Self {
        Self {
            devices: (0..devices)
                .map(|_| Counters {
                    units: CachePadded::new(AtomicU64::new(0)),
                    nanos: CachePadded::new(AtomicU64::new(0)),
                })
                .collect(),
        }
    }

    /// Number of devices this estimator tracks.
    pub fn devices(&self) -> usize {
        self.devices.len()
    }

    /// Forget every measurement. Records racing with the reset may be
    /// partially kept; that only skews one sample.
    pub fn reset(&self) {
        for c in &self.devices {
            // Relaxed: plain counters, no data published through them.
            c.units.store(0, Ordering::Relaxed);
            c.nanos.store(0, Ordering::Relaxed);
        }
    }
}

impl PowerEstimator for ThroughputEstimator {
    /// Ignores out-of-range devices and non-finite or negative `seconds`.
    fn record(&self, device: usize, units: u64, seconds: f64) {
        let Some(c) = self.devices.get(device) else {
            return;
        };
        if !(seconds.is_finite() && seconds >= 0.0) {
            return;
        }
        // Float-to-int `as` saturates, so absurd durations cannot wrap.
        let nanos = (seconds * 1e9).round() as u64;
        // Relaxed: the time is added first...
        c.nanos.fetch_add(nanos, Ordering::Relaxed);
        // ...and Release on the units makes it visible to any reader whose
        // Acquire load of `units` sees these units, so a reader never pairs
        // units with less than their time (power is never over-estimated by a
        // torn read; at worst it briefly counts time of an in-flight record).
        c.units.fetch_add(units, Ordering::Release);
    }

    fn power(&self, device: usize) -> Option<f64> {
        let c = self.devices.get(device)?;
        // Acquire: pairs with the Release in `record` (see there).
        let units = c.units.load(Ordering::Acquire);
        // Relaxed: ordered after the Acquire above.
        let nanos = c.nanos.load(Ordering::Relaxed);
        if units == 0 || nanos == 0 {
            return None;
        }
        Some(units as f64 / (nanos as f64 * 1e-9))
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
        assert_eq!(e.power(0), Some(200.0));
        assert_eq!(e.power(1), None);
        assert_eq!(e.power(7), None);
        e.record(7, 1, 1.0);
        e.record(1, 5, f64::NAN);
        e.record(1, 5, -1.0);
        assert_eq!(e.power(1), None);
        e.record(1, 5, 0.0); // no time yet: still unmeasured
        assert_eq!(e.power(1), None);
        e.reset();
        assert_eq!(e.power(0), None);
        assert_eq!(format!("{e:?}"), "[None, None]");
    }
}
