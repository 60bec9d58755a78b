//! What staged transfers add to a GPU package's cost: the bytes a unit
//! moves each way over the device's bandwidth in that direction, learned
//! from the transfers it ran and seeded from a documented PCIe figure.
//!
//! A package of `n` units on a staged GPU costs `overhead + n / rate +
//! n * s`, where `s = up_bytes_per_unit / up_bw + down_bytes_per_unit /
//! down_bw`: the cost model's rate ([`super::Cost`]) is slowed to `1 / (1 /
//! rate + s)`, so the plan gives the CPU the ranges it finishes before the
//! GPU could have computed and shipped them.
//!
//! Only the bytes beyond those the measured packages held count: a package
//! whose copies share the queue with its dispatches waits for its upload
//! and for the downloads queued in front of it, and its measured time holds
//! them (see [`super::PowerEstimator::transfers_held`]). Counted again, they
//! made a download-bound stencil's GPU look half as fast as it was, and a
//! cold run gave the CPU 70% of the work where 55-60% ended together.

use super::Cost;
use std::sync::atomic::{AtomicU64, Ordering};

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
}

impl Default for TransferRates {
    fn default() -> Self {
        TransferRates {
            up: AtomicU64::new(SEED_BANDWIDTH.to_bits()),
            down: AtomicU64::new(SEED_BANDWIDTH.to_bits()),
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

    /// Bytes per second `way`.
    pub(crate) fn bandwidth(&self, way: Way) -> f64 {
        // Relaxed: a lone figure; a reader that sees the previous one
        // plans with a slightly older estimate, nothing more.
        f64::from_bits(self.cell(way).load(Ordering::Relaxed))
    }

    /// Learns from a batch that moved `bytes` `way` in `seconds` with
    /// nothing else on the queue (small or unusable batches are ignored).
    pub(crate) fn record(&self, way: Way, bytes: u64, seconds: f64) {
        if bytes < MIN_LEARN_BYTES || !(seconds.is_finite() && seconds > 0.0) {
            return;
        }
        let measured = bytes as f64 / seconds;
        let old = self.bandwidth(way);
        let new = old + LEARN_WEIGHT * (measured - old);
        tracing::debug!(?way, bytes, seconds, measured, learned = new, "transfer timed");
        if new.is_finite() && new > 0.0 {
            // Relaxed: one writer (the device's dispatch loop, runs being
            // serialized); see `bandwidth`.
            self.cell(way).store(new.to_bits(), Ordering::Relaxed);
        }
    }

    /// Seconds per unit that transfers add to a package whose measured
    /// cost already holds `held` bytes per unit (up, down: see
    /// [`super::PowerEstimator::transfers_held`]), for a run that moves
    /// `now` bytes per unit: what goes beyond them, each way.
    pub(crate) fn seconds_per_unit(&self, now: (f64, f64), held: (f64, f64)) -> f64 {
        let beyond = |n: f64, h: f64| if h.is_finite() { (n - h).max(0.0) } else { n };
        let up = beyond(now.0, held.0);
        let down = beyond(now.1, held.1);
        let s = up / self.bandwidth(Way::Up) + down / self.bandwidth(Way::Down);
        if s.is_finite() && s > 0.0 {
            s
        } else {
            0.0
        }
    }
}

impl TransferRates {
    /// Seconds a package of `units` units waits after its compute for its
    /// own download where its cost holds `held` bytes per unit of the
    /// downloads in front of it (of at most the run's `down` bytes per
    /// unit): those bytes, its own, at the download bandwidth.
    pub(crate) fn drain_s(&self, down: f64, held: f64, units: u64) -> f64 {
        if !(down.is_finite() && held.is_finite()) {
            return 0.0;
        }
        let bytes = down.min(held).max(0.0) * units as f64;
        let s = bytes / self.bandwidth(Way::Down);
        if s.is_finite() {
            s
        } else {
            0.0
        }
    }
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
        let s = r.seconds_per_unit((0.0, 1e6), (0.0, 0.0));
        assert!((s - 40e-6).abs() < 1e-12, "{s}");
        // A GPU computing 100k units/s (10 us each) then ships 40 us each:
        // 20k units/s.
        let c = with_transfers(Cost::rate_only(1e5), s);
        assert!((c.rate - 2e4).abs() < 1e-6, "{}", c.rate);
        assert_eq!(with_transfers(Cost::rate_only(1e5), 0.0).rate, 1e5);
        assert_eq!(with_transfers(Cost::rate_only(1e5), f64::NAN).rate, 1e5);
        assert_eq!(r.seconds_per_unit((f64::INFINITY, 0.0), (0.0, 0.0)), 0.0);
        // What the measured packages held is not added again: 1 MB up and
        // 1 MB down per unit, of which their times held all of the
        // downloads and half of the uploads (a NaN holds nothing).
        let s = r.seconds_per_unit((1e6, 1e6), (5e5, 1e6));
        assert!((s - 20e-6).abs() < 1e-12, "{s}");
        let s = r.seconds_per_unit((1e6, 0.0), (f64::NAN, 2e6));
        assert!((s - 40e-6).abs() < 1e-12, "{s}");
    }

    #[test]
    fn a_package_drains_the_download_its_cost_held_in_front_of_the_next() {
        let r = TransferRates::default();
        // 1 MB per unit down, all held: 100 units, 100 MB at 25 GB/s.
        assert!((r.drain_s(1e6, 1e6, 100) - 4e-3).abs() < 1e-12);
        // Held beyond the run's bytes counts the run's; nothing held, none.
        assert!((r.drain_s(1e6, 5e6, 100) - 4e-3).abs() < 1e-12);
        assert_eq!(r.drain_s(1e6, 0.0, 100), 0.0);
        assert_eq!(r.drain_s(0.0, 1e6, 100), 0.0);
        assert_eq!(r.drain_s(f64::NAN, 1e6, 100), 0.0);
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
}
