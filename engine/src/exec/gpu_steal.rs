//! What an idle GPU takes from the CPU workers' packages: the unstarted
//! ends of all of them at once, in one package (see [`GpuRole::steal`]).

use super::gpu::GpuRole;
use crate::sched::{usable_power, worth_splitting, PowerEstimator, Progress};
use std::ops::Range;
use std::time::Duration;

/// What a GPU package costs beyond its own run time: the host's round trip
/// from submission to observed completion (41-53 us on the H200, see
/// BENCHMARKS.md). The GPU splits a CPU worker's remainder only when that
/// remainder is large enough to pay for it.
const STEAL_LATENCY: Duration = Duration::from_micros(50);

/// How long a worker's package must have run before its progress counts as
/// its rate (see [`owner_rate`]): several chunks, so that one slow chunk
/// does not stand for the package.
const LIVE_AFTER: Duration = Duration::from_micros(200);

impl GpuRole<'_> {
    /// With nothing in flight and nothing to claim: the GPU's share of
    /// every CPU worker's unstarted remainder, taken at once (see
    /// [`gpu_takes`]), to run as one package; empty where no split ends
    /// sooner. Before the GPU is measured, half of each remainder worth
    /// splitting (see [`worth_splitting`]). `now_us`: the run's
    /// microsecond, the clock of the workers' package starts; `first`:
    /// whether this is the GPU's first steal of the run (only that one may
    /// weigh the workers at their fastest, see [`cautious_takes`]); `backlog`:
    /// how long until the GPU could have the stolen units' results home
    /// at the earliest (a staged run's downloads in flight come first).
    ///
    /// # Why all at once
    /// On a kernel's first run a worker's packages are sized from the
    /// items it probed, which on an irregular kernel may be the cheapest
    /// ones: a fractal's workers, measured on the edge of the image, ran
    /// its interior forty times slower, and the GPU, done with its own
    /// share, took their remainders back one at a time, a round trip
    /// (about 110 us on the H200) each, 24-29 of them (BENCHMARKS.md, run
    /// 18). One package of all of them pays one round trip.
    pub(super) fn steal(
        &self,
        estimates: &dyn PowerEstimator,
        (now_us, first): (u64, bool),
        backlog: Duration,
    ) -> Vec<Range<u64>> {
        let Some(cpu) = self.cpu.as_ref() else {
            return Vec::new();
        };
        let estimated = estimates
            .power(cpu.device)
            .map(|p| p / cpu.workers.max(1) as f64);
        // The GPU's learned cost where known: on an irregular kernel a
        // package of any size may wait milliseconds for its slowest
        // work-group, far past the round trip.
        // Where it is not yet measured, its early sample as a rate: a
        // bound its packages stay within (see `EarlySample`).
        let mine = estimates.cost(self.device).or_else(|| {
            estimates
                .early_sample(self.device)
                .map(|s| s.as_cost())
        });
        let round_trip = mine
            .map_or(0.0, |c| c.overhead_s)
            .max(STEAL_LATENCY.as_secs_f64());
        let lat = round_trip + backlog.as_secs_f64();
        // The GPU has no word on the board: any index past the workers.
        let remainders = cpu.board.remainders(usize::MAX);
        let takes = match usable_power(mine.map(|c| c.rate)) {
            Some(g) => {
                let rated = |pick: Pick| -> Vec<(u64, Option<f64>)> {
                    remainders
                        .iter()
                        .map(|r| (r.left, owner_rate(estimated, r.progress, now_us, pick)))
                        .collect()
                };
                let owners = rated(Pick::Slowest);
                let mut takes = if first && come_back_on() {
                    cautious_takes(&owners, &rated(Pick::Fastest), g, (lat, round_trip))
                } else {
                    gpu_takes(&owners, g, lat)
                };
                if take_all_on() {
                    takes_all_when_kept_is_cheap(&mut takes, &owners, g, round_trip);
                }
                tracing::trace!(
                    gpu_rate = g,
                    latency_us = lat * 1e6,
                    owners = ?owners,
                    takes = ?takes,
                    "stealing from the CPU workers"
                );
                takes
            }
            None => match worth_splitting(lat, estimated, None) {
                Some(min) => remainders
                    .iter()
                    .map(|r| if r.left >= min { r.left / 2 } else { 0 })
                    .collect(),
                None => return Vec::new(),
            },
        };
        remainders
            .iter()
            .zip(takes)
            .filter(|&(_, t)| t > 0)
            .filter_map(|(r, t)| {
                // The owner keeps what it was meant to keep of its
                // remainder as the CAS finds it (it may have run chunks
                // since it was weighed).
                let keep = r.left - t;
                cpu.board
                    .steal_from(r.owner, |left| left.saturating_sub(keep))
            })
            .collect()
    }
}

/// Where the GPU steals at all (some of `takes` is not 0), is many times
/// faster than the workers it weighs (their rates, all known, add up to
/// at most [`CHEAP_SHARE`] of its own), and what they would keep of their
/// remainders after `takes` (`owners` as for [`gpu_takes`]) would cost a
/// GPU of `gpu` units/s less than half of its `round_trip_s` to run, the
/// GPU takes every remainder whole instead. Where it would not steal,
/// nothing changes: its package would cost a round trip that workers
/// ending their remainders sooner do not.
///
/// # Why
/// A worker's rate on a kernel's first run comes from the items it ran,
/// which on an irregular kernel may be the cheapest: a fractal's workers
/// measured at 170-260 k units/s on the image's edge ran its interior at
/// 3.3-4.4 k, so each kept a few units it would end a millisecond past the
/// GPU, and the GPU came back for them round after round, 110-135 us each,
/// eight times in one cold run on the H200 (BENCHMARKS.md, run 34). Taking
/// what they would keep costs the GPU at most half a round trip beyond the
/// even end its rates promise; leaving it costs at least one more round
/// trip whenever a rate was too high.
///
/// # Why only a much faster GPU
/// What the workers keep takes them the time to the even end; on the GPU
/// it takes that time times their rates over its own. Where the devices
/// are comparable that is most of the end itself, and a GPU whose round
/// trip is long (lavapipe's fitted fixed cost) could take it all and end
/// well past the workers it idled. The bound keeps the rule to where its
/// premise holds: what the workers keep is small for the GPU. (On the dev
/// machine, lavapipe beside one worker, the unbounded rule's fractal
/// warm HE was 0.71-0.74 against 0.77-0.86 without it, within the
/// 0.70-0.83 the same path spans from round to round: BENCHMARKS.md, dev
/// run 35.)
fn takes_all_when_kept_is_cheap(
    takes: &mut [u64],
    owners: &[(u64, Option<f64>)],
    gpu: f64,
    round_trip_s: f64,
) {
    let Some(g) = usable_power(Some(gpu)) else {
        return;
    };
    let kept: u64 = owners.iter().zip(&*takes).map(|(&(left, _), &t)| left - t).sum();
    let steals = takes.iter().any(|&t| t > 0);
    // The rates of the workers with units left; `None` if one is unknown.
    let rates: Option<f64> = owners
        .iter()
        .filter(|&&(left, _)| left > 0)
        .map(|&(_, r)| usable_power(r))
        .sum();
    let much_faster = rates.is_some_and(|r| r <= CHEAP_SHARE * g);
    if !steals || kept == 0 || !much_faster || kept as f64 / g > round_trip_s / 2.0 {
        return;
    }
    for (t, &(left, _)) in takes.iter_mut().zip(owners) {
        *t = left;
    }
}

/// How much of an idle GPU's rate the workers it steals from may have
/// together for it to take what they would keep (see
/// [`takes_all_when_kept_is_cheap`]): a tenth, so what they keep costs it
/// at most a tenth of the time to their even end.
const CHEAP_SHARE: f64 = 0.1;

/// Whether an idle GPU takes every remainder whole where what the workers
/// would keep is cheap for it (see [`takes_all_when_kept_is_cheap`]): yes
/// unless `COEXEC_STEAL_ALL=0` (to measure what the rule changes). Read
/// once per process.
fn take_all_on() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    crate::switches::on_unless_zero(&ON, "COEXEC_STEAL_ALL")
}

/// Which of a worker's rates a thief weighs (see [`owner_rate`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pick {
    /// The slowest: what the worker keeps it surely ends by the GPU's end.
    Slowest,
    /// The fastest, unless it started nothing for a while: what the
    /// worker keeps it ends by the GPU's end only if it keeps its best
    /// pace.
    Fastest,
}

/// A worker's rate for a thief to weigh, in units/s: of its estimate
/// (`estimated`), what it ran of its current package since it started
/// (`progress`, at the run's microsecond `now_us`, once that package has
/// gone on for [`LIVE_AFTER`]), and its last chunk's rate, the slowest or
/// the fastest (`pick`); `None` where none is known. A worker that started
/// nothing in its package's last [`LIVE_AFTER`] is as slow as can be
/// either way. Which one the GPU acts on is [`cautious_takes`]'s choice.
fn owner_rate(
    estimated: Option<f64>,
    progress: Progress,
    now_us: u64,
    pick: Pick,
) -> Option<f64> {
    let live = progress
        .rate(now_us, LIVE_AFTER.as_micros() as u64)
        .filter(|r| r.is_finite());
    if live.is_some_and(|l| l <= 0.0) {
        // A worker that started nothing since: as slow as can be.
        return Some(f64::MIN_POSITIVE);
    }
    let last = usable_power(progress.last_rate());
    let rates = [usable_power(estimated), live, last].into_iter().flatten();
    match pick {
        Pick::Slowest => rates.reduce(f64::min),
        Pick::Fastest => rates.reduce(f64::max),
    }
}

/// What an idle GPU of `gpu` units/s takes of the workers' remainders,
/// weighing them at their slowest rates (`slow`, as for [`gpu_takes`]) or
/// at their fastest (`fast`, the same remainders): the slowest, unless
/// what that takes beyond the fastest would cost the GPU more than its
/// `round_trip_s`; then the fastest, and the GPU comes back for what the
/// workers did not end by its own end. `latency_s`: when the GPU's
/// package could end at the earliest, as for [`gpu_takes`].
///
/// # Why
/// A stolen package cannot be given back: what the GPU takes too much, it
/// runs while the workers it took it from sit idle, its whole time lost
/// to the run. What it takes too little costs it one more steal, a round
/// trip, once it sees the workers are not done. A worker's rates disagree
/// most on an irregular kernel, where the next units need not cost what
/// the last ones did: on the dev machine (lavapipe beside one worker, a
/// 512^2 fractal) the worker's last chunk, in the image's interior, rated
/// it at 6.5 k units/s; the GPU took 160-230 of its 190-260 units left,
/// 4-5 ms of its own time, while the worker ended the 30 it kept in
/// 1.1-1.5 ms, at 20-27 k units/s, and sat idle for the rest of the run
/// (balance 0.60-0.72). Where the GPU is many times faster than the
/// workers, what the two picks differ by costs it less than a round trip,
/// and the slowest stands: the GPU does not come back round after round
/// (a cold fractal's workers rated on the image's edge, BENCHMARKS.md, run
/// 18).
///
/// # Once a run
/// Only the GPU's first steal of a run weighs the workers at their
/// fastest; when it comes back, the workers were slower than that, and it
/// weighs them at their slowest. The bound is by design: a worker's
/// fastest rate could stay far above what it runs, and a GPU taking
/// little at each visit would leave the workers most of the rest. (A
/// sparse product's warm runs on an H200 that left the workers 0.7-1.8 M
/// of 2.1 M rows, 5.3-9.8 ms against 1.5-1.7, were seen with the rule on
/// and off alike: BENCHMARKS.md, h200 run 36.)
fn cautious_takes(
    slow: &[(u64, Option<f64>)],
    fast: &[(u64, Option<f64>)],
    gpu: f64,
    (latency_s, round_trip_s): (f64, f64),
) -> Vec<u64> {
    let sure = gpu_takes(slow, gpu, latency_s);
    let least = gpu_takes(fast, gpu, latency_s);
    let (sure_n, least_n): (u64, u64) = (sure.iter().sum(), least.iter().sum());
    let costs_more = sure_n.saturating_sub(least_n) as f64 / gpu;
    if costs_more > round_trip_s {
        least
    } else {
        sure
    }
}

/// Whether an idle GPU weighs the workers at their fastest where its take
/// at their slowest would cost it more than a round trip (see
/// [`cautious_takes`]): yes unless `COEXEC_STEAL_COME_BACK=0` (to measure
/// what the rule changes). Read once per process.
fn come_back_on() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    crate::switches::on_unless_zero(&ON, "COEXEC_STEAL_COME_BACK")
}

/// What a GPU running `gpu` units/s, whose package ends `latency_s` after
/// its units, takes of each of the `owners`' remainders (`(left, rate)`,
/// the rate in units/s, `None` where unknown) in one package, so that the
/// GPU and every worker it takes from end together: at `T`, when each
/// worker kept `rate * T` units and the GPU ran the rest. A worker that
/// ends its whole remainder by `T` keeps it (and `T` is solved again
/// without it, which only moves it later). Of a remainder whose owner's
/// rate is unknown the GPU takes half, its cost added to the GPU's. A GPU
/// a hundred times faster than the workers takes nearly all; one thousands
/// of times faster takes all, rather than leave a worker one more unit
/// that costs it milliseconds. Zeros where the GPU would end later
/// whatever it took.
fn gpu_takes(owners: &[(u64, Option<f64>)], gpu: f64, latency_s: f64) -> Vec<u64> {
    let mut takes = vec![0; owners.len()];
    let Some(g) = usable_power(Some(gpu)) else {
        return takes;
    };
    // Halves of the unknown ones first: a fixed load on the GPU.
    let mut fixed = latency_s.max(0.0);
    for (t, &(left, rate)) in takes.iter_mut().zip(owners) {
        if usable_power(rate).is_none() && left >= 2 {
            *t = left / 2;
            fixed += *t as f64 / g;
        }
    }
    // The known ones, soonest own end first: those that end by `T` drop
    // out from the front.
    let mut known: Vec<(usize, u64, f64)> = owners
        .iter()
        .enumerate()
        .filter_map(|(i, &(left, rate))| Some((i, left, usable_power(rate)?)))
        .filter(|&(_, left, _)| left > 0)
        .collect();
    known.sort_by(|a, b| (a.1 as f64 / a.2).total_cmp(&(b.1 as f64 / b.2)));
    let (mut units_s, mut rates) = known
        .iter()
        .fold((0.0, 0.0), |(u, r), &(_, left, o)| (u + left as f64 / g, r + o / g));
    let mut first = 0;
    let mut t = (fixed + units_s) / (1.0 + rates);
    while let Some(&(_, left, o)) = known.get(first) {
        if left as f64 / o > t {
            break;
        }
        units_s -= left as f64 / g;
        rates -= o / g;
        first += 1;
        t = (fixed + units_s) / (1.0 + rates);
    }
    if !t.is_finite() {
        return takes;
    }
    for &(i, left, o) in &known[first..] {
        // Rounded to the nearest whole unit; below `left`, since the
        // worker's own end is past `t`.
        let keep = ((o * t).round() as u64).min(left);
        takes[i] = left - keep;
    }
    takes
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One worker: both end together. A GPU 99x faster leaves the worker
    /// about 1% of the remainder plus what it runs during the GPU's
    /// latency; equal rates split it in half (less the latency).
    #[test]
    fn a_faster_gpu_leaves_a_worker_its_share_of_the_remainder() {
        let keeps = |left, o, g, lat| left - gpu_takes(&[(left, Some(o))], g, lat)[0];
        assert_eq!(keeps(1000, 1.0e3, 99.0e3, 0.0), 10);
        assert_eq!(keeps(1000, 1.0e3, 99.0e3, 50e-6), 10);
        assert_eq!(keeps(1000, 1.0e3, 1.0e3, 0.0), 500);
        // A slow GPU: the worker keeps it all.
        assert_eq!(keeps(10, 1.0e3, 1.0, 1.0), 10);
        // A unit costs the worker 1 ms and the GPU 0.1 ms after 50 us: the
        // GPU takes the worker's last unit; one hardly faster leaves it.
        assert_eq!(keeps(1, 1.0e3, 1.0e4, 50e-6), 0);
        assert_eq!(keeps(1, 1.0e3, 1.1e3, 2e-3), 1);
        // A GPU a billion times faster takes all of a remainder.
        assert_eq!(keeps(100, 1.0, 1e9, 0.0), 0);
    }

    /// Several workers: the GPU's one package carries the shares of all,
    /// and each worker keeps what it runs in the same time.
    #[test]
    fn the_gpu_takes_from_every_worker_at_once() {
        // Ten workers of 1000 units/s, 1000 units left each; a GPU of
        // 90_000 units/s: together 100_000 units/s over 10_000 units, so
        // all end at 0.1 s: each worker keeps 100.
        let owners = vec![(1000, Some(1e3)); 10];
        assert_eq!(gpu_takes(&owners, 9e4, 0.0), vec![900; 10]);
        // A worker whose remainder ends before the others' common end
        // keeps it; the rest is shared as before among the others.
        let mut owners = vec![(1000, Some(1e3)); 9];
        owners.push((50, Some(1e3)));
        let t = gpu_takes(&owners, 9e4, 0.0);
        assert_eq!(t[9], 0, "{t:?}");
        // 9000 units over 9 workers and the GPU (99_000 units/s): 90.9 ms.
        assert!(t[..9].iter().all(|&x| x == 909), "{t:?}");
        // A worker measured ten times slower than the others keeps a
        // tenth as much.
        let t = gpu_takes(&[(1000, Some(1e3)), (1000, Some(1e2))], 1e5, 0.0);
        let keeps = (1000 - t[0], 1000 - t[1]);
        assert!(keeps.0 >= 9 * keeps.1 && keeps.0 <= 11 * keeps.1, "{keeps:?}");
        // Unknown rates: half, which loads the GPU; nothing of a single
        // unit.
        let t = gpu_takes(&[(1000, None), (1, None), (1000, Some(1e3))], 1e6, 0.0);
        assert_eq!(&t[..2], &[500, 0]);
        assert!(t[2] > 990, "{t:?}");
        // No remainders, or no usable GPU rate: nothing.
        assert!(gpu_takes(&[], 1e6, 0.0).is_empty());
        assert_eq!(gpu_takes(&[(10, Some(1.0))], f64::NAN, 0.0), vec![0]);
        assert_eq!(gpu_takes(&[(0, Some(1.0))], 1e6, 0.0), vec![0]);
    }

    /// What the workers would keep, where it is cheap for the GPU, goes
    /// with what it takes; not where the GPU would not steal, nor where
    /// the devices are comparable.
    #[test]
    fn a_gpu_takes_what_workers_would_keep_where_it_costs_little() {
        let rule = |owners: &[(u64, Option<f64>)], g: f64, rt: f64| {
            let mut t = gpu_takes(owners, g, rt);
            takes_all_when_kept_is_cheap(&mut t, owners, g, rt);
            t
        };
        // A cold fractal's end (BENCHMARKS.md, run 34): workers rated at
        // 7-235 k units/s beside a GPU of 20 M; the rates alone leave the
        // fast-rated workers all of their few units.
        let owners = [(4, Some(6.9e3)), (8, Some(2.35e5)), (7, Some(2.35e5)), (3, Some(4e3))];
        let alone = gpu_takes(&owners, 2e7, 70e-6);
        assert!(alone.iter().zip(&owners).any(|(&t, &(l, _))| t < l), "{alone:?}");
        assert_eq!(rule(&owners, 2e7, 70e-6), vec![4, 8, 7, 3]);
        // A worker of unknown rate: not weighed, unchanged.
        let unknown = [(4, Some(6.9e3)), (8, Some(2.35e5)), (3, None)];
        assert_eq!(rule(&unknown, 2e7, 70e-6), gpu_takes(&unknown, 2e7, 70e-6));
        // Workers together above a tenth of the GPU's rate (a long round
        // trip, as lavapipe's, would let the GPU take it all): unchanged.
        let near = [(40, Some(1e3)), (40, Some(1e3))];
        assert_eq!(rule(&near, 1.5e4, 10e-3), gpu_takes(&near, 1.5e4, 10e-3));
        assert!(rule(&near, 1.5e4, 10e-3).iter().any(|&t| t < 40));
        // Kept units past half a round trip on this GPU: unchanged.
        assert_eq!(rule(&owners, 2e5, 70e-6), gpu_takes(&owners, 2e5, 70e-6));
        // A worker ending its last unit in 1 us: no package for it.
        assert_eq!(rule(&[(1, Some(1e6))], 1e7, 100e-6), vec![0]);
        // Comparable devices: each worker keeps its share.
        assert_eq!(rule(&[(1000, Some(1e3)); 10], 9e4, 50e-6), vec![900; 10]);
        // Nothing to weigh, or no usable GPU rate: unchanged.
        assert!(rule(&[], 1e6, 50e-6).is_empty());
        let mut t = vec![1, 0];
        takes_all_when_kept_is_cheap(&mut t, &[(2, None), (3, None)], f64::NAN, 1.0);
        assert_eq!(t, vec![1, 0]);
    }

    fn owner_rate_slow(estimated: Option<f64>, progress: Progress, now_us: u64) -> Option<f64> {
        owner_rate(estimated, progress, now_us, Pick::Slowest)
    }

    /// The fastest of a worker's rates, except for one that started
    /// nothing for a while.
    #[test]
    fn a_worker_s_fastest_rate_is_its_best_pace() {
        let at = |started, since_us, last_chunk| Progress {
            started,
            since_us: Some(since_us),
            last_chunk,
        };
        let fast = |e, p, now| owner_rate(e, p, now, Pick::Fastest);
        // Estimated 1e4; 100 units in 1000 us (1e5); a last chunk of 1
        // unit in 200 us (5e3): 1e5 at best, 5e3 at worst.
        let p = at(100, 1000, Some((1, 200_000)));
        assert_eq!(fast(Some(1e4), p, 2000), Some(1e5));
        assert_eq!(owner_rate_slow(Some(1e4), p, 2000), Some(5e3));
        // Nothing started in 1 ms: as slow as can be either way.
        let stuck = at(0, 0, Some((10, 1000)));
        assert_eq!(fast(Some(1e6), stuck, 1000), Some(f64::MIN_POSITIVE));
        // Nothing known: nothing.
        assert_eq!(fast(None, at(5, 1000, None), 1100), None);
    }

    /// The take at the workers' slowest rates, unless what it takes beyond
    /// the take at their fastest costs the GPU more than a round trip.
    #[test]
    fn a_gpu_takes_less_where_over_taking_would_cost_more_than_coming_back() {
        // The dev machine's fractal (a GPU of 37 k units/s, one worker
        // with 200 units left rated 6.5 k at its last chunk and 25 k over
        // its package): at the slowest the GPU takes about 170 units,
        // 4.6 ms; at the fastest about 120, 1.3 ms less, far past a 50 us
        // round trip: it takes the fewer and comes back.
        let slow = [(200, Some(6.5e3))];
        let fast = [(200, Some(2.5e4))];
        let sure = gpu_takes(&slow, 3.7e4, 50e-6);
        let least = gpu_takes(&fast, 3.7e4, 50e-6);
        assert!(sure[0] > least[0] + 40, "{sure:?} {least:?}");
        assert_eq!(cautious_takes(&slow, &fast, 3.7e4, (50e-6, 50e-6)), least);
        // A GPU a thousand times faster than the workers: what the two
        // differ by is a few microseconds of its time, and it takes what
        // the slowest rates say.
        let slow = [(4, Some(4e3)), (8, Some(4e3))];
        let fast = [(4, Some(2.3e5)), (8, Some(2.3e5))];
        let sure = gpu_takes(&slow, 2e7, 70e-6);
        assert_ne!(sure, gpu_takes(&fast, 2e7, 70e-6));
        assert_eq!(cautious_takes(&slow, &fast, 2e7, (70e-6, 70e-6)), sure);
        // The picks agree (a regular kernel): that take.
        let same = [(1000, Some(1e3)); 3];
        assert_eq!(
            cautious_takes(&same, &same, 9e4, (50e-6, 50e-6)),
            gpu_takes(&same, 9e4, 50e-6)
        );
    }

    #[test]
    fn a_worker_slower_than_estimated_keeps_less() {
        let at = |started, since_us| Progress {
            started,
            since_us: Some(since_us),
            last_chunk: None,
        };
        // Estimated 1e6 units/s; 100 units in its package's first 1000 us:
        // 1e5 units/s, the slower, once the package ran 200 us.
        assert_eq!(owner_rate_slow(Some(1e6), at(100, 1000), 2000), Some(1e5));
        assert_eq!(owner_rate_slow(Some(1e6), at(100, 1000), 1100), Some(1e6));
        // Faster than estimated: the estimate stands.
        assert_eq!(owner_rate_slow(Some(1e6), at(10_000, 1000), 2000), Some(1e6));
        // No time given, or nothing estimated and not long enough.
        let untimed = Progress {
            started: 5,
            since_us: None,
            last_chunk: None,
        };
        assert_eq!(owner_rate_slow(Some(1e6), untimed, 5000), Some(1e6));
        assert_eq!(owner_rate_slow(None, at(5, 1000), 1100), None);
        assert_eq!(owner_rate_slow(None, at(100, 1000), 2000), Some(1e5));
        // Nothing started in 1 ms: as slow as can be, so the GPU takes all.
        let stuck = owner_rate_slow(Some(1e6), at(0, 0), 1000);
        assert_eq!(gpu_takes(&[(1000, stuck)], 1e9, 50e-6), vec![1000]);
        // Its last chunk, one unit in 200 us, slower than its package's
        // average (100 units in 1000 us): 5000 units/s; before 200 us of
        // its package, the last chunk alone; faster, it does not count.
        let chunk = |last_chunk| Progress {
            last_chunk,
            ..at(100, 1000)
        };
        assert_eq!(owner_rate_slow(Some(1e6), chunk(Some((1, 200_000))), 2000), Some(5000.0));
        assert_eq!(owner_rate_slow(None, chunk(Some((1, 200_000))), 1100), Some(5000.0));
        assert_eq!(owner_rate_slow(Some(1e6), chunk(Some((100, 1000))), 2000), Some(1e5));
        assert_eq!(owner_rate_slow(Some(1e6), chunk(Some((1, 0))), 2000), Some(1e5));
    }
}
