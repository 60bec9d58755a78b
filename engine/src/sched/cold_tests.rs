//! A device's cold first package and the plan: with the history of a first
//! run whose GPUs each began with a cold package, the next run still splits
//! between the GPUs where an even split pays.

use super::*;

/// The run: 1024 units (nbody's 262144 bodies in work-groups of 256), each
/// GPU's wave 1056 work-groups (so each gets half the run as its granule).
const TOTAL: u64 = 1024;
const WAVE: u64 = 1056;

/// Warm GPU packages: 20 us each plus the units at `rate` (GPU 1 1% slower,
/// as two real devices are).
fn warm(gpu: usize) -> Cost {
    Cost {
        overhead_s: 20e-6,
        rate: [47_600.0, 47_124.0][gpu],
    }
}

/// Warm packages of a first run over several sizes.
const SIZES: [u64; 5] = [511, 128, 256, 64, 32];

/// The history of a first run: each GPU's cold package (one unit, 6.4 ms)
/// recorded cold or, with `as_warm`, as if warm; then warm packages of
/// `sizes`.
fn history(as_warm: bool, sizes: &[u64]) -> ThroughputEstimator {
    let est = ThroughputEstimator::new(2);
    for gpu in 0..2 {
        if as_warm {
            est.record(gpu, 1, 6.4e-3);
        } else {
            est.record_cold(gpu, 1, 6.4e-3, 1.0);
        }
        for &n in sizes {
            est.record(gpu, n, warm(gpu).time(n as f64));
        }
    }
    est.settle();
    est
}

/// The units each GPU claims in a run planned from `est`, the GPUs
/// claiming in turn, each package taken as soon as asked for.
fn split(est: &ThroughputEstimator) -> [u64; 2] {
    let slots = [DeviceSlot::gpu().with_granule(WAVE); 2];
    let plan = Plan::new(&Scheduler::hguided(), &slots, TOTAL, est).unwrap();
    let queue = WorkQueue::new(TOTAL);
    let mut claimants = [plan.claimant(0, 0), plan.claimant(1, 0)];
    let mut units = [0u64; 2];
    let mut idle = 0;
    while queue.remaining() > 0 && idle < 4 {
        idle += 1;
        for (gpu, c) in claimants.iter_mut().enumerate() {
            if let Some((r, _)) = plan.claim(&queue, c, est) {
                units[gpu] += r.end - r.start;
                idle = 0;
            }
        }
    }
    assert_eq!(units[0] + units[1], TOTAL, "{units:?}");
    units
}

#[test]
fn two_gpus_both_take_work_after_a_cold_start() {
    // The split pays: either GPU alone takes 21.5 ms, half each 10.8 ms.
    let est = history(false, &SIZES);
    let c = est.cost(0).unwrap();
    assert!(c.overhead_s < 40e-6, "{c:?}");
    let units = split(&est);
    assert!(units.iter().all(|&u| u >= TOTAL / 4), "{units:?}");
    // The first run's warm packages all of one size (the cold probe, then
    // each GPU its half of the rest): the same.
    let units = split(&history(false, &[511, 512]));
    assert!(units.iter().all(|&u| u >= TOTAL / 4), "{units:?}");
}

/// The control: the cold package recorded as if warm owns a fixed cost of
/// hundreds of microseconds (the quickest package bounds it), or, where the
/// first run's warm packages were all of one size, of its whole 6.4 ms.
#[test]
fn a_cold_package_recorded_warm_owns_the_overhead() {
    let c = history(true, &SIZES).cost(0).unwrap();
    assert!(c.overhead_s > 10.0 * warm(0).overhead_s, "{c:?}");
    let c = history(true, &[511, 512]).cost(0).unwrap();
    assert!(c.overhead_s > 6e-3, "{c:?}");
}

/// Two GPUs a percent apart and a CPU whose rate, added to the slower
/// GPU's, just exceeds the faster GPU's: when the slower GPU claims first,
/// the faster one still takes the other half (counting the slower one as
/// free to do it, it used to decline, and the slower ran the whole range in
/// twice the time).
#[test]
fn the_second_gpu_to_claim_takes_its_half_beside_a_cpu() {
    let est = ThroughputEstimator::new(3);
    est.seed(0, Cost::rate_only(512.0), 8.0);
    est.seed(1, warm(0), 8.0);
    est.seed(2, warm(1), 8.0);
    let gpu = DeviceSlot::gpu().with_granule(WAVE);
    let slots = [DeviceSlot::cpu(31), gpu, gpu];
    let plan = Plan::new(&Scheduler::hguided(), &slots, TOTAL, &est).unwrap();
    let queue = WorkQueue::new(TOTAL);
    let mut units = [0u64; 3];
    let mut claimants = [plan.claimant(2, 0), plan.claimant(1, 0)];
    let mut cpu: Vec<_> = (0..31).map(|i| plan.claimant(0, i)).collect();
    for _ in 0..4 {
        for (c, dev) in claimants.iter_mut().zip([2, 1]) {
            if let Some((r, _)) = plan.claim(&queue, c, &est) {
                units[dev] += r.end - r.start;
            }
        }
        for c in &mut cpu {
            if let Some((r, _)) = plan.claim(&queue, c, &est) {
                units[0] += r.end - r.start;
            }
        }
    }
    assert_eq!(units, [0, TOTAL / 2, TOTAL / 2]);
}
