//! What staged transfers add to a GPU package's cost: the bytes a unit
//! moves each way over the device's bandwidth in that direction, learned
//! from the transfers it ran and seeded from a documented PCIe figure.
//!
//! A package of `n` units on a staged GPU costs `overhead + n / rate +
//! n * s`, where `s = up_bytes_per_unit / up_bw + down_bytes_per_unit /
//! down_bw`: the cost model's rate ([`super::Cost`], learned from compute
//! alone) is slowed to `1 / (1 / rate + s)`, so the plan gives the CPU the
//! ranges it finishes before the GPU could have computed and shipped them.

use super::Cost;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// The seed of both directions, bytes per second: PCIe 4.0 x16's 32 GB/s
/// less protocol overhead, as measured copies reach (about 25 GB/s). PCIe
/// 5.0 devices (the H200: about 43 GB/s measured for a 128 MB download) are
/// faster and learn it from their first large transfers.
pub(crate) const SEED_BANDWIDTH: f64 = 25e9;

/// Batches smaller than this teach nothing: their time is mostly the
/// submission's round trip, not bandwidth.
pub(crate) const MIN_LEARN_BYTES: u64 = 1 << 20;

/// Weight of each new measurement in the running figure.
const LEARN_WEIGHT: f64 = 0.25;

/// Which way bytes go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Way {
    /// Host to device.
    Up,
    /// Device to host.
    Down,
}

/// One device's transfer bandwidth per direction, in bytes per second:
/// shared between its runs (written by its dispatch loop, read when a run
/// is planned).
#[derive(Debug)]
pub(crate) struct TransferRates {
    /// `f64` bits of each direction's figure.
    up: AtomicU64,
    down: AtomicU64,
    /// Whether each direction's figure was learned from a transfer of
    /// this process (see [`TransferRates::seed`]).
    up_learned: AtomicBool,
    down_learned: AtomicBool,
}

impl Default for TransferRates {
    fn default() -> Self {
        TransferRates {
            up: AtomicU64::new(SEED_BANDWIDTH.to_bits()),
            down: AtomicU64::new(SEED_BANDWIDTH.to_bits()),
            up_learned: AtomicBool::new(false),
            down_learned: AtomicBool::new(false),
        }
    }
}

impl TransferRates {
    fn cell(&self, way: Way) -> &AtomicU64 {
        match way {
            Way::Up => &self.up,
            Way::Down => &self.down,
        }
    }

    fn learned_cell(&self, way: Way) -> &AtomicBool {
        match way {
            Way::Up => &self.up_learned,
            Way::Down => &self.down_learned,
        }
    }

    /// Bytes per second `way`, where a transfer of this process taught
    /// it (`None`: still the seed, or a figure [`seed`](Self::seed)ed
    /// from a profile).
    pub(crate) fn learned(&self, way: Way) -> Option<f64> {
        // Relaxed: a lone flag beside a lone figure (see `bandwidth`).
        self.learned_cell(way)
            .load(Ordering::Relaxed)
            .then(|| self.bandwidth(way))
    }

    /// Starts `way` from `bytes_per_s` (a figure a profile kept, measured
    /// by an earlier process on this device and driver), unless this
    /// process already learned it; ignored unless finite and positive. A
    /// first run from a profile prices what the GPU must upload with it:
    /// at the seed's 25 GB/s the H200's 43 made a 234 MB matrix look 4 ms
    /// dearer than it was.
    pub(crate) fn seed(&self, way: Way, bytes_per_s: f64) {
        if bytes_per_s.is_finite() && bytes_per_s > 0.0 && self.learned(way).is_none() {
            // Relaxed: see `bandwidth`; a transfer learned meanwhile
            // starts from this figure, which it would have done anyway.
            self.cell(way).store(bytes_per_s.to_bits(), Ordering::Relaxed);
        }
    }

    /// Bytes per second `way`.
    pub(crate) fn bandwidth(&self, way: Way) -> f64 {
        // Relaxed: a lone figure; a reader that sees the previous one
        // plans with a slightly older estimate, nothing more.
        f64::from_bits(self.cell(way).load(Ordering::Relaxed))
    }

    /// Seconds `bytes` take `way` at the learned bandwidth (0 where that
    /// is no figure).
    pub(crate) fn seconds(&self, way: Way, bytes: f64) -> f64 {
        let s = bytes / self.bandwidth(way);
        if s.is_finite() {
            s.max(0.0)
        } else {
            0.0
        }
    }

    /// Learns from a batch that moved `bytes` `way` in `seconds` with
    /// nothing else on the queue (small or unusable batches are ignored).
    pub(crate) fn record(&self, way: Way, bytes: u64, seconds: f64) {
        let Some(measured) = usable_rate(bytes, seconds) else {
            return;
        };
        let old = self.bandwidth(way);
        let new = old + LEARN_WEIGHT * (measured - old);
        tracing::debug!(?way, bytes, seconds, measured, learned = new, "transfer timed");
        self.learn(way, new);
    }

    /// Learns from a batch that moved `bytes` `way` in at most `seconds`
    /// (a kernel's first package on a device, whose time also holds
    /// one-time costs): a bound below the bandwidth, which raises the
    /// figure to it where the figure is lower, and is ignored elsewhere
    /// (small or unusable batches too).
    pub(crate) fn record_at_least(&self, way: Way, bytes: u64, seconds: f64) {
        match usable_rate(bytes, seconds) {
            Some(bound) if bound > self.bandwidth(way) => {
                tracing::debug!(?way, bytes, seconds, bound, "transfer bound");
                self.learn(way, bound);
            }
            _ => {}
        }
    }

    /// Sets `way`'s figure to `bytes_per_s`, learned in this process
    /// (ignored unless finite and positive).
    fn learn(&self, way: Way, bytes_per_s: f64) {
        if bytes_per_s.is_finite() && bytes_per_s > 0.0 {
            // Relaxed: one writer (the device's dispatch loop, runs being
            // serialized); see `bandwidth` and `learned`.
            self.cell(way).store(bytes_per_s.to_bits(), Ordering::Relaxed);
            self.learned_cell(way).store(true, Ordering::Relaxed);
        }
    }

    /// Seconds per unit that transfers add to a package, for a run that
    /// moves `up` and `down` bytes per unit.
    pub(crate) fn seconds_per_unit(&self, up: f64, down: f64) -> f64 {
        let s = up / self.bandwidth(Way::Up) + down / self.bandwidth(Way::Down);
        if s.is_finite() && s > 0.0 {
            s
        } else {
            0.0
        }
    }
}

/// Bytes per second of a batch of `bytes` in `seconds`, where it can teach
/// a bandwidth (see [`MIN_LEARN_BYTES`]).
fn usable_rate(bytes: u64, seconds: f64) -> Option<f64> {
    (bytes >= MIN_LEARN_BYTES && seconds.is_finite() && seconds > 0.0)
        .then(|| bytes as f64 / seconds)
        .filter(|r| r.is_finite())
}

/// `cost` with `s` more seconds per unit.
pub(crate) fn with_transfers(cost: Cost, s: f64) -> Cost {
    if !(s.is_finite() && s > 0.0) {
        return cost;
    }
    Cost {
        overhead_s: cost.overhead_s,
        rate: 1.0 / (1.0 / cost.rate + s),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transfers_slow_the_rate_by_their_seconds_per_unit() {
        let r = TransferRates::default();
        assert_eq!(r.bandwidth(Way::Up), SEED_BANDWIDTH);
        // 1 MB down per unit at 25 GB/s: 40 us per unit.
        let s = r.seconds_per_unit(0.0, 1e6);
        assert!((s - 40e-6).abs() < 1e-12, "{s}");
        // A GPU computing 100k units/s (10 us each) then ships 40 us each:
        // 20k units/s.
        let c = with_transfers(Cost::rate_only(1e5), s);
        assert!((c.rate - 2e4).abs() < 1e-6, "{}", c.rate);
        assert_eq!(with_transfers(Cost::rate_only(1e5), 0.0).rate, 1e5);
        assert_eq!(with_transfers(Cost::rate_only(1e5), f64::NAN).rate, 1e5);
        assert_eq!(r.seconds_per_unit(f64::INFINITY, 0.0), 0.0);
    }

    #[test]
    fn large_batches_teach_the_bandwidth_small_ones_do_not() {
        let r = TransferRates::default();
        r.record(Way::Down, 1000, 1e-9);
        r.record(Way::Down, 1 << 30, 0.0);
        r.record(Way::Down, 1 << 30, f64::NAN);
        assert_eq!(r.bandwidth(Way::Down), SEED_BANDWIDTH);
        for _ in 0..60 {
            r.record(Way::Down, 128 << 20, (128 << 20) as f64 / 43e9);
        }
        assert!((r.bandwidth(Way::Down) - 43e9).abs() < 1e6);
        assert_eq!(r.bandwidth(Way::Up), SEED_BANDWIDTH);
    }

    /// A cold package's time bounds the bandwidth from below: it raises
    /// a lower figure to that bound, never lowers one.
    #[test]
    fn a_bound_below_raises_only() {
        let r = TransferRates::default();
        r.record_at_least(Way::Up, 64 << 20, (64 << 20) as f64 / 10e9);
        assert_eq!(r.bandwidth(Way::Up), SEED_BANDWIDTH);
        assert_eq!(r.learned(Way::Up), None);
        r.record_at_least(Way::Up, 1000, 1e-9);
        r.record_at_least(Way::Up, 64 << 20, 0.0);
        assert_eq!(r.bandwidth(Way::Up), SEED_BANDWIDTH);
        r.record_at_least(Way::Up, 64 << 20, (64 << 20) as f64 / 33e9);
        assert!((r.bandwidth(Way::Up) - 33e9).abs() < 1.0);
        assert_eq!(r.learned(Way::Up), Some(r.bandwidth(Way::Up)));
    }

    /// A profile's figure starts a direction this process has not learned
    /// (and is not itself learned); one learned here is kept.
    #[test]
    fn a_profile_seeds_only_what_was_not_learned() {
        let r = TransferRates::default();
        assert_eq!(r.learned(Way::Up), None);
        r.seed(Way::Up, 43e9);
        r.seed(Way::Down, f64::NAN);
        r.seed(Way::Down, -1.0);
        assert_eq!(r.bandwidth(Way::Up), 43e9);
        assert_eq!(r.bandwidth(Way::Down), SEED_BANDWIDTH);
        assert_eq!(r.learned(Way::Up), None);
        r.record(Way::Down, 128 << 20, (128 << 20) as f64 / 45e9);
        let down = r.learned(Way::Down).unwrap();
        assert!(down > SEED_BANDWIDTH && down < 45e9, "{down}");
        r.seed(Way::Down, 10e9);
        assert_eq!(r.bandwidth(Way::Down), down);
    }
}
