//! Property tests: real threads claiming concurrently through the whole
//! stack (plan + queue + estimator), checking exactly-once coverage.

use std::ops::Range;
use std::sync::atomic::{AtomicUsize, Ordering};

use proptest::prelude::*;

use super::model::Cost;
use super::*;

fn totals() -> impl Strategy<Value = u64> {
    prop_oneof![
        Just(1u64),
        Just(2),
        Just(1 << 26),
        prop::sample::select(vec![3u64, 5, 7, 13, 97, 101, 997, 7919, 65_537]),
        1u64..5_000,
    ]
}

fn devices() -> impl Strategy<Value = Vec<DeviceSlot>> {
    prop::collection::vec(
        (
            any::<bool>(),
            1usize..=4,
            prop_oneof![Just(1u64), 1u64..2_000],
        )
            .prop_map(|(cpu, claimants, granule)| DeviceSlot {
                kind: if cpu {
                    DeviceKind::Cpu
                } else {
                    DeviceKind::Gpu
                },
                claimants,
                granule,
            }),
        1..=3,
    )
}

fn powers(n: usize) -> impl Strategy<Value = Option<Vec<f64>>> {
    prop::option::of(
        prop::collection::vec(prop_oneof![Just(0.0), 0.01f64..10.0], n).prop_map(|mut p| {
            if p.iter().all(|&x| x == 0.0) {
                p[0] = 1.0;
            }
            p
        }),
    )
}

fn scheduler(n: usize) -> impl Strategy<Value = Scheduler> {
    prop_oneof![
        powers(n).prop_map(|powers| Scheduler::Static { powers }),
        (1u64..3_000).prop_map(|packages| Scheduler::Dynamic { packages }),
        (powers(n), 0.25f64..8.0, 1u64..=64).prop_map(|(powers, k, min_package)| {
            Scheduler::HGuided {
                powers,
                k,
                min_package,
            }
        }),
    ]
}

/// A run's configuration: devices, a scheduler fitting them, total, and the
/// simulated speed (units/s) of each device.
fn setup() -> impl Strategy<Value = (Vec<DeviceSlot>, Scheduler, u64, Vec<f64>)> {
    devices().prop_flat_map(|d| {
        let n = d.len();
        (
            Just(d),
            scheduler(n),
            totals(),
            prop::collection::vec(1.0f64..1e6, n),
        )
    })
}

/// What one claimant thread saw.
#[derive(Default)]
struct Seen {
    completed: Vec<Range<u64>>,
    finals: usize,
}

/// Runs every claimant of `plan` on its own thread, following the protocol
/// of the module docs; each device's first package is recorded cold. Each
/// claimant `(device, index, after)` of `fails` requeues its package number
/// `after` (0-based) instead of completing it, forfeits, and leaves.
fn run(
    plan: &Plan,
    queue: &WorkQueue,
    est: &ThroughputEstimator,
    speeds: &[f64],
    fails: &[(usize, usize, u64)],
) -> Vec<Seen> {
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..plan.devices())
            .flat_map(|d| (0..plan.claimants(d)).map(move |j| (d, j)))
            .map(|(d, j)| {
                s.spawn(move || {
                    let mut me = plan.claimant(d, j);
                    let mut seen = Seen::default();
                    let mut claimed = 0u64;
                    let start = std::time::Instant::now();
                    loop {
                        match plan.claim(queue, &mut me, est) {
                            Some((r, _)) => {
                                let units = r.end - r.start;
                                if fails.contains(&(d, j, claimed)) {
                                    queue.requeue(r);
                                    plan.forfeit(queue, &mut me, est);
                                    break;
                                }
                                claimed += 1;
                                let seconds = units as f64 / speeds[d];
                                if claimed == 1 && j == 0 {
                                    // A device's first package is cold
                                    // (ten times slower as the host saw
                                    // it): until a warm one lands, the
                                    // device is sized by that bound, and
                                    // may decline for it.
                                    est.record_cold(d, units, 10.0 * seconds, 1.0);
                                    est.record_cold_device(d, units, seconds);
                                } else {
                                    est.record(d, units, seconds);
                                }
                                seen.finals += usize::from(queue.complete(units));
                                seen.completed.push(r);
                            }
                            None if queue.is_done() || queue.is_aborted() => break,
                            // Watchdog: lost work would make us wait forever;
                            // abort so the test fails instead of hanging.
                            None if start.elapsed().as_secs() > 5 => queue.abort(),
                            None => std::thread::yield_now(),
                        }
                    }
                    seen
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    })
}

fn check(seen: Vec<Seen>, queue: &WorkQueue, total: u64) -> Result<(), TestCaseError> {
    let finals: usize = seen.iter().map(|s| s.finals).sum();
    let mut all: Vec<Range<u64>> = seen.into_iter().flat_map(|s| s.completed).collect();
    all.sort_by_key(|r| r.start);
    let mut at = 0;
    for r in &all {
        prop_assert_eq!(r.start, at, "gap or overlap at {:?}", r);
        prop_assert!(r.end > r.start, "empty package {:?}", r);
        at = r.end;
    }
    prop_assert_eq!(at, total);
    prop_assert_eq!(finals, 1, "complete() returned true {} times", finals);
    prop_assert!(queue.is_done());
    prop_assert_eq!(queue.remaining(), 0);
    prop_assert_eq!(queue.requeued_units(), 0);
    Ok(())
}

proptest! {
    // Few shrink iterations: a lost-work failure costs a 5 s watchdog each.
    #![proptest_config(ProptestConfig { cases: 96, max_shrink_iters: 8, ..ProptestConfig::default() })]

    #[test]
    fn prop_concurrent_claims_cover_exactly_once((devs, sched, total, speeds) in setup()) {
        let est = ThroughputEstimator::new(devs.len());
        let plan = Plan::new(&sched, &devs, total, &est).unwrap();
        let queue = WorkQueue::new(total);
        let seen = run(&plan, &queue, &est, &speeds, &[]);
        check(seen, &queue, total)?;
    }

    /// Whatever a profile says (any overheads and rates, also far from the
    /// simulated devices') and whatever the hints (zeros included), every
    /// unit is claimed exactly once.
    #[test]
    fn prop_any_profile_covers_exactly_once(
        (devs, sched, total, speeds) in setup(),
        prior in prop::collection::vec(prop::option::of((0.0f64..1e-2, 1.0f64..1e7)), 3),
    ) {
        let est = ThroughputEstimator::new(devs.len());
        for (d, p) in prior.iter().take(devs.len()).enumerate() {
            if let Some((overhead_s, rate)) = *p {
                est.seed(d, Cost { overhead_s, rate }, 4.0);
            }
        }
        let plan = Plan::new(&sched, &devs, total, &est).unwrap();
        let queue = WorkQueue::new(total);
        let seen = run(&plan, &queue, &est, &speeds, &[]);
        check(seen, &queue, total)?;
    }

    #[test]
    fn prop_failed_claimant_requeues(
        (devs, sched, total, speeds) in setup(),
        who in any::<prop::sample::Index>(),
        after in 0u64..4,
    ) {
        let mut devs = devs;
        let count: usize = devs.iter().map(|d| d.claimants).sum();
        if count == 1 {
            // Someone must survive to drain the failed work.
            devs[0].claimants = 2;
        }
        let all: Vec<(usize, usize)> = devs
            .iter()
            .enumerate()
            .flat_map(|(d, s)| (0..s.claimants).map(move |j| (d, j)))
            .collect();
        let (d, j) = *who.get(&all);
        let est = ThroughputEstimator::new(devs.len());
        let plan = Plan::new(&sched, &devs, total, &est).unwrap();
        let queue = WorkQueue::new(total);
        let seen = run(&plan, &queue, &est, &speeds, &[(d, j, after)]);
        check(seen, &queue, total)?;
    }
}

proptest! {
    #[test]
    fn prop_sizes_respect_policy((devs, sched, total, speeds) in setup(), informed in any::<bool>()) {
        let est = ThroughputEstimator::new(devs.len());
        if informed {
            for (d, s) in speeds.iter().enumerate() {
                est.record(d, 1000, 1000.0 / s);
            }
        }
        let plan = Plan::new(&sched, &devs, total, &est).unwrap();
        let mut share_sum = 0;
        for (d, slot) in devs.iter().enumerate() {
            for j in 0..slot.claimants {
                let mut c = plan.claimant(d, j);
                share_sum += c.share();
                for left in [1, 2, total / 3 + 1, total] {
                    let size = plan.package_size(&mut c, left, &est);
                    prop_assert!(size <= left);
                    prop_assert!(plan.requeued_size(&c, left, &est) >= 1);
                    prop_assert!(plan.requeued_size(&c, left, &est) <= left);
                    match &sched {
                        Scheduler::Dynamic { packages } => {
                            prop_assert_eq!(size, total.div_ceil(*packages).clamp(1, left));
                        }
                        Scheduler::HGuided { min_package, .. } => {
                            // Either the formula (at least min_package), or 0
                            // from the finish-time guard.
                            prop_assert!(size == 0 || size >= (*min_package).min(left));
                        }
                        Scheduler::Static { .. } => prop_assert_eq!(size, c.share().min(left)),
                    }
                }
            }
        }
        if let Scheduler::HGuided { .. } = &sched {
            // Progress: whatever is left, some claimant takes fresh work.
            for left in [1, 2, total / 3 + 1, total] {
                let mut any = false;
                for (d, slot) in devs.iter().enumerate() {
                    for j in 0..slot.claimants {
                        any |= plan.package_size(&mut plan.claimant(d, j), left, &est) > 0;
                    }
                }
                prop_assert!(any, "nobody takes the last {} units", left);
            }
        }
        if let Scheduler::Static { powers } = &sched {
            prop_assert_eq!(share_sum, total);
            if let Some(p) = powers {
                for (d, &pw) in p.iter().enumerate() {
                    if pw == 0.0 {
                        let strongest_first = p.iter().enumerate().fold(0, |b, (i, x)| if *x > p[b] { i } else { b });
                        prop_assert!(d == strongest_first || plan.claimant(d, 0).share() == 0);
                    }
                }
            }
        }
    }

    #[test]
    fn prop_display_parses_back(sched in (1usize..=3).prop_flat_map(scheduler)) {
        let text = sched.to_string();
        prop_assert_eq!(text.parse::<Scheduler>(), Ok(sched));
    }
}

/// A single-threaded run of the protocol, cheap enough for miri.
#[test]
fn protocol_single_thread_with_failure() {
    let devs = [DeviceSlot::cpu(2), DeviceSlot::gpu()];
    let est = ThroughputEstimator::new(2);
    let plan = Plan::new(&Scheduler::hguided(), &devs, 50, &est).unwrap();
    let queue = WorkQueue::new(50);
    let mut gpu = plan.claimant(1, 0);
    let (failed, _) = plan.claim(&queue, &mut gpu, &est).unwrap();
    queue.requeue(failed.clone());
    plan.forfeit(&queue, &mut gpu, &est);
    let mut cs = [plan.claimant(0, 0), plan.claimant(0, 1)];
    let mut got = vec![];
    let finals = AtomicUsize::new(0);
    'outer: loop {
        for c in cs.iter_mut() {
            match plan.claim(&queue, c, &est) {
                Some((r, _)) => {
                    est.record(0, r.end - r.start, 1e-3);
                    if queue.complete(r.end - r.start) {
                        finals.fetch_add(1, Ordering::Relaxed);
                    }
                    got.push(r);
                }
                None if queue.is_done() => break 'outer,
                None => {}
            }
        }
    }
    got.sort_by_key(|r| r.start);
    assert!(got.windows(2).all(|w| w[0].end == w[1].start));
    assert_eq!((got[0].start, got.last().unwrap().end), (0, 50));
    assert_eq!(finals.load(Ordering::Relaxed), 1);
    assert!(cs.iter().any(|c| c.requeued_packages() > 0));
}

/// A small concurrent run with a failing claimant, cheap enough for miri
/// (which then also checks the run for data races).
#[test]
fn threads_small_run_with_failure() {
    for sched in [
        Scheduler::Static { powers: None },
        Scheduler::Dynamic { packages: 8 },
        Scheduler::hguided(),
    ] {
        let devs = [DeviceSlot::cpu(2), DeviceSlot::gpu()];
        let est = ThroughputEstimator::new(2);
        let plan = Plan::new(&sched, &devs, 40, &est).unwrap();
        let queue = WorkQueue::new(40);
        let seen = run(&plan, &queue, &est, &[100.0, 400.0], &[(1, 0, 0)]);
        check(seen, &queue, 40).unwrap();
    }
}

/// An engine's devices with several GPUs: the CPU workers (1 to 4) and 2 to
/// 5 GPUs of one dispatch loop each (3 to 6 devices), with their simulated
/// speeds.
fn multi_gpu_setup() -> impl Strategy<Value = (Vec<DeviceSlot>, Scheduler, u64, Vec<f64>)> {
    (1usize..=4, 2usize..=5, 1u64..2_000).prop_flat_map(|(workers, gpus, granule)| {
        let mut d = vec![DeviceSlot::cpu(workers)];
        d.extend((0..gpus).map(|_| DeviceSlot::gpu().with_granule(granule)));
        let n = d.len();
        (
            Just(d),
            scheduler(n),
            totals(),
            prop::collection::vec(1.0f64..1e6, n),
        )
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, max_shrink_iters: 8, ..ProptestConfig::default() })]

    /// 3 to 6 devices, one or two GPUs failing at any package: every unit
    /// is completed exactly once by the others.
    #[test]
    fn prop_failing_gpus_among_many_requeue_exactly_once(
        (devs, sched, total, speeds) in multi_gpu_setup(),
        first in any::<prop::sample::Index>(),
        second in any::<prop::sample::Index>(),
        two in any::<bool>(),
        after in 0u64..4,
    ) {
        let gpus: Vec<usize> = (1..devs.len()).collect();
        let a = *first.get(&gpus);
        let mut fails = vec![(a, 0, after)];
        let b = *second.get(&gpus);
        if two && b != a {
            fails.push((b, 0, 0));
        }
        let est = ThroughputEstimator::new(devs.len());
        let plan = Plan::new(&sched, &devs, total, &est).unwrap();
        let queue = WorkQueue::new(total);
        let seen = run(&plan, &queue, &est, &speeds, &fails);
        check(seen, &queue, total)?;
    }

    /// Only GPUs (2 to 5), one failing: the others finish its work.
    #[test]
    fn prop_gpus_alone_cover_exactly_once_with_a_failure(
        (devs, sched, total, speeds) in multi_gpu_setup(),
        who in any::<prop::sample::Index>(),
        after in 0u64..4,
    ) {
        let devs: Vec<DeviceSlot> = devs[1..].to_vec();
        let n = devs.len();
        let sched = sched.for_devices(&std::iter::once(false).chain(std::iter::repeat(true)).take(n + 1).collect::<Vec<_>>());
        let d = who.index(n);
        let est = ThroughputEstimator::new(n);
        let plan = Plan::new(&sched, &devs, total, &est).unwrap();
        let queue = WorkQueue::new(total);
        let seen = run(&plan, &queue, &est, &speeds[1..], &[(d, 0, after)]);
        check(seen, &queue, total)?;
    }
}
