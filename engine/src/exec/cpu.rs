//! The CPU executor: each pinned worker claims packages and calls the
//! kernel's closure on them.

use super::idle::{nothing_left, Bell, Standby};
use super::kernel::{Args, CpuFn, Geometry};
use super::reduce;
use super::report::{DeviceReport, PackageLog, PackageRecord};
use crate::error::Error;
use crate::sched::{
    run_us, usable_power, DeviceKind, Plan, PowerEstimator, StealBoard, WorkQueue,
};
use std::ops::Range;
use std::sync::Mutex;
use std::time::{Duration, Instant};

pub(crate) struct CpuRole<'a> {
    pub(crate) device: usize,
    pub(crate) kernel: &'a CpuFn,
    pub(crate) args: &'a Args<'a>,
    pub(crate) geometry: &'a Geometry,
    pub(crate) workers: usize,
    /// Where the workers split each other's packages.
    pub(crate) board: &'a StealBoard,
    /// The estimator slots of the run's GPUs, which steal from `board` too.
    pub(crate) thieves: Vec<usize>,
    /// Rung when the run is done or aborted.
    pub(crate) bell: &'a Bell,
    /// Which claimant stays until the run is done (worker `i` is pool
    /// thread `i`); the others leave once nothing is left.
    pub(crate) standby: Standby,
    /// Lazy host coherence: each package first downloads the stale bytes
    /// it reads; the bytes downloaded are added here (`None`: the run
    /// synced every buffer at its start, or there is nothing stale).
    pub(crate) sync: Option<&'a std::sync::atomic::AtomicU64>,
    /// Test hook: units the GPUs must have claimed before a worker claims
    /// its first package (see `Engine::hold_cpu_until_gpus_claim`).
    #[cfg(feature = "test-hooks")]
    pub(crate) hold_units: Option<u64>,
}

/// Test hook: waits until `units` of the queue were claimed by others (the
/// GPUs: no CPU worker has claimed yet), the run is done or aborted, or
/// 10 s passed (a GPU that never claims must not hang the run).
#[cfg(feature = "test-hooks")]
fn hold(queue: &WorkQueue, units: u64) {
    let deadline = Instant::now() + Duration::from_secs(10);
    let want = units.min(queue.total());
    while queue.total() - queue.remaining() < want
        && !queue.is_done()
        && !queue.is_aborted()
        && Instant::now() < deadline
    {
        std::thread::sleep(Duration::from_micros(100));
    }
}

#[derive(Default)]
struct Lane {
    records: Vec<PackageRecord>,
    busy_s: f64,
    items: u64,
    panic: Option<Error>,
    /// See [`DeviceReport::declined_s`].
    declined_s: Option<f64>,
}

/// Per-worker results, each written once by its own worker at the end of a
/// run (so the mutexes are never contended).
pub(crate) struct Lanes(Vec<Mutex<Lane>>);

impl Lanes {
    pub(crate) fn new(workers: usize) -> Self {
        Lanes((0..workers).map(|_| Mutex::new(Lane::default())).collect())
    }

    /// Folds the lanes into the CPU device's report, moving their package
    /// records (which carry their device index already) to `log`: one list
    /// per worker, without copying.
    pub(crate) fn finish(
        self,
        name: &str,
        workers: usize,
        log: &mut PackageLog,
    ) -> (DeviceReport, Option<Error>) {
        let mut report = DeviceReport {
            name: name.to_string(),
            kind: DeviceKind::Cpu,
            claimants: workers,
            packages: 0,
            items: 0,
            busy_s: 0.0,
            first_start_s: f64::INFINITY,
            finish_s: 0.0,
            gpu_gaps: None,
            settled_s: 0.0,
            gpu_busy_s: None,
            failure: None,
            declined_s: None,
            transfers: Default::default(),
            cpu_impl: Some(crate::CpuImpl::Native),
            note: None,
        };
        let mut panic = None;
        for lane in self.0 {
            let lane = lane.into_inner().unwrap_or_else(|p| p.into_inner());
            report.packages += lane.records.len();
            report.items += lane.items;
            report.busy_s += lane.busy_s;
            // A worker's records are in the order it ran them.
            if let (Some(first), Some(last)) = (lane.records.first(), lane.records.last()) {
                report.first_start_s = report.first_start_s.min(first.start_s);
                report.finish_s = report.finish_s.max(last.end_s);
            }
            log.push_lane(lane.records);
            // The device stopped early by design when a worker declined: by
            // the shortest package one of them declined.
            report.declined_s = report
                .declined_s
                .into_iter()
                .chain(lane.declined_s)
                .reduce(f64::min);
            if panic.is_none() {
                panic = lane.panic;
            }
        }
        if report.packages == 0 {
            report.first_start_s = 0.0;
        }
        report.settled_s = report.finish_s;
        if let Some(p) = &panic {
            report.failure = Some(p.to_string());
        }
        (report, panic)
    }
}

/// How much package time a worker gathers before it publishes its completed
/// units and its measurement. Packages longer than this (every package of a
/// real kernel) are published one by one, as soon as they end; very short
/// ones are published in batches, so that workers running tiny packages do
/// not all write the shared `done` counter and the estimator's counters once
/// per package (each of those writes moves a cache line between cores).
const PUBLISH_AFTER: Duration = Duration::from_micros(20);

/// Completed units and package time not yet published by one worker.
#[derive(Default)]
struct Pending {
    units: u64,
    time: Duration,
}

impl Pending {
    fn add(&mut self, units: u64, time: Duration) {
        self.units += units;
        self.time += time;
    }

    /// Publishes the gathered units: to the estimator (as whole-device time,
    /// divided by the `share` of workers running at once) and to the queue's
    /// completion count. Recorded warm from the first: a CPU's first
    /// packages pay page faults, not the GPU's pipeline start, and a CPU
    /// measured at once lets the cost model rule out a device that cannot
    /// help from the second run (the GPU's first package is recorded cold:
    /// see `CostFit::record_cold`).
    fn flush(
        &mut self,
        (device, share): (usize, f64),
        queue: &WorkQueue,
        estimates: &dyn PowerEstimator,
        bell: &Bell,
    ) {
        if self.units == 0 {
            return;
        }
        // Throughput only: chunk sizes follow the worker's own speed (see
        // `PowerEstimator::record_throughput`).
        estimates.record_throughput(device, self.units, self.time.as_secs_f64() / share, share);
        if queue.complete(self.units) {
            bell.ring();
        }
        *self = Pending::default();
    }
}

/// How long one chunk of a package should run: long enough that a chunk's
/// own cost (a CAS on the worker's word, two clock reads, a call of the
/// kernel) is lost in it, short enough that what is left of a package stays
/// splittable until close to its end.
const CHUNK_TARGET: Duration = Duration::from_micros(25);

/// A chunk takes at most this part of its package's unstarted units
/// (rounded up): what a worker has started no thief can take.
///
/// # Why
/// A chunk is sized from the last one's rate, growing up to 8-fold a step:
/// on a kernel whose first units are cheap, a worker's third chunk took
/// every unit of its package left (193 units of 1 ms each, after 56 that
/// took 0.8 us), and the GPU, idle from the run's 3rd millisecond, had
/// nothing to take: the run took 214 ms where the runs whose chunk
/// stopped short of the costly units took 11 (lavapipe, one worker, about
/// half of the runs). An eighth bounds the time a worker holds units no
/// thief can take to an eighth of its remainder's (where the costs within
/// it are even), at a few more chunks (a CAS and two clock reads each)
/// at the end of each package.
const CHUNK_PARTS: u64 = 8;

/// Whether a chunk is held to a [`CHUNK_PARTS`]th of its package's
/// unstarted units: yes, unless the environment sets
/// `COEXEC_CHUNK_CAP=0` (to measure what the cap changes). Read once per
/// process.
fn chunk_cap_on() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    crate::switches::on_unless_zero(&ON, "COEXEC_CHUNK_CAP")
}

/// A worker's chunk size, in units, from the rate of its last chunk.
struct Chunker {
    /// What the last chunk's rate asks for.
    units: u64,
    /// A chunk takes at most this part of its package's unstarted units:
    /// [`CHUNK_PARTS`], or 1 where the cap is off.
    parts: u64,
}

impl Chunker {
    fn new() -> Self {
        Chunker {
            units: 1,
            parts: if chunk_cap_on() { CHUNK_PARTS } else { 1 },
        }
    }

    /// The next chunk's size, `left` units of the package unstarted: one
    /// unit in a tiled run (see
    /// [`Kernel::with_tiles`](crate::Kernel::with_tiles)), whose units are
    /// single work-groups of a kernel whose rows proved too coarse: their
    /// cost can vary a hundredfold across the image (a fractal's edge and
    /// its interior), so a chunk sized from the last one's rate can last
    /// a hundred times its target, and what a worker has started no thief
    /// can take. One unit per chunk bounds that to one work-group, for a
    /// CAS and two clock reads per work-group. Otherwise the size its last
    /// chunk's rate asks for, at most a [`CHUNK_PARTS`]th of `left` (see
    /// there).
    fn size(&self, geometry: &Geometry, left: u64) -> u64 {
        if geometry.tiles {
            1
        } else {
            self.units.min(left.div_ceil(self.parts)).max(1)
        }
    }

    /// Learns from a chunk of `units` that ran for `time`: the next chunk
    /// aims at [`CHUNK_TARGET`], growing at most 8-fold at a time (one short
    /// chunk is a noisy measurement), shrinking at once.
    fn learn(&mut self, units: u64, time: Duration) {
        let ns = time.as_nanos().max(1) as f64;
        let want = (units as f64 * CHUNK_TARGET.as_nanos() as f64 / ns) as u64;
        self.units = want.clamp(1, self.units.saturating_mul(8));
    }
}

/// The part of a package one worker ran itself: contiguous from the
/// package's start (siblings take from its end).
struct Ran {
    units: Range<u64>,
    start: Instant,
    end: Instant,
}

/// Whether a worker left without work should take half of a sibling's
/// remainder: not where a GPU of the run (which steals from the same
/// board once its own work is done) is expected to run every unit not yet
/// done before this worker would end even one unit of it. On a ray tracer
/// a work-group costs a worker 1-3 ms and the GPU microseconds: a worker
/// that stole a sibling's last tiles near the end ran milliseconds past
/// the GPU, which would have taken them in one package. Unmeasured
/// devices steal as before. `role`: the CPU's estimator slot, its
/// workers and the GPUs' slots.
fn sibling_steal_pays(
    role: (usize, usize, &[usize]),
    queue: &WorkQueue,
    estimates: &dyn PowerEstimator,
) -> bool {
    let (device, workers, thieves) = role;
    let Some(rate) = usable_power(estimates.power(device)) else {
        return true;
    };
    let one_unit_s = workers.max(1) as f64 / rate;
    let not_done = queue.total().saturating_sub(queue.completed()) as f64;
    let gpu_s = thieves
        .iter()
        .filter_map(|&g| estimates.cost(g))
        .map(|c| c.time(not_done))
        .fold(f64::INFINITY, f64::min);
    one_unit_s <= gpu_s
}

/// The claim loop of CPU worker `worker`.
pub(crate) fn worker_loop(
    role: &CpuRole<'_>,
    worker: usize,
    plan: &Plan,
    queue: &WorkQueue,
    estimates: &dyn PowerEstimator,
    t0: Instant,
    lanes: &Lanes,
) {
    let mut state = plan.claimant(role.device, worker);
    let mut lane = Lane::default();
    let mut idle = role.standby.idle(worker);
    let mut chunker = Chunker::new();
    // Each claimant's time is recorded divided by the number of workers, so
    // that the estimator's units/second is the whole CPU device's throughput
    // (all workers run at once).
    let share = role.workers.max(1) as f64;
    let mut pending = Pending::default();
    // Whether the CPU's measurement is trusted (see `Plan::slow_start`):
    // asked after each chunk until it is, never again once it is (a claim
    // path stays free of the estimator's reads). A lone worker publishes
    // as it always did.
    let mut measured = role.workers <= 1;
    #[cfg(feature = "test-hooks")]
    if let Some(units) = role.hold_units {
        hold(queue, units);
    }
    'claims: loop {
        // Fresh or requeued work first; then the unstarted end of a
        // sibling's package.
        let claimed = plan
            .claim(queue, &mut state, estimates)
            .map(|(units, _source)| (units, false))
            .or_else(|| {
                sibling_steal_pays((role.device, role.workers, &role.thieves), queue, estimates)
                    .then(|| role.board.steal(worker, 2))
                    .flatten()
                    .map(|units| (units, true))
            });
        let Some((units, stolen)) = claimed else {
            // Nothing to claim now: publish what this worker still holds, so
            // that the run can be seen done. Then the run's standby stays
            // until every unit is done (another device may still fail and
            // give its packages back); the others leave once nothing is
            // left to claim or steal.
            let ticket = role.bell.ticket();
            pending.flush((role.device, share), queue, estimates, role.bell);
            if queue.is_done() || queue.is_aborted() {
                break;
            }
            if role.standby.may_leave(worker) && nothing_left(queue, Some(role.board)) {
                break;
            }
            idle.wait(role.bell, ticket);
            continue;
        };
        idle = idle.restart();
        // Shared on the board, the package is run chunk by chunk and
        // siblings may take its end; otherwise it is run whole.
        // With its start, so that a GPU that steals from it sees how fast
        // it goes.
        let shared = role.board.publish_at(worker, units.clone(), Some(run_us(t0)));
        let mut whole = (!shared).then_some(units);
        let mut ran: Option<Ran> = None;
        loop {
            let chunk = match whole.take() {
                Some(all) => all,
                None if queue.is_aborted() => break,
                None => match role
                    .board
                    .next_chunk_of(worker, |left| chunker.size(role.geometry, left)) {
                    Some(c) => c,
                    None => break,
                },
            };
            let start = Instant::now();
            let mut items = 0;
            let failed = match sync_reads(role, &chunk) {
                Ok(()) => {
                    let called = reduce::call(role.kernel, role.args, role.geometry, &chunk);
                    items = called.items;
                    // The space's units, for the error.
                    let first = role.geometry.first;
                    let units = chunk.start + first..chunk.end + first;
                    call_failure(called.outcome, called.failure, &units, worker)
                }
                Err(e) => Some(e),
            };
            let end = Instant::now();
            if let Some(err) = failed {
                // The run fails: nobody claims or steals more.
                role.board.withdraw(worker);
                lane.panic = Some(err);
                queue.abort();
                role.bell.ring();
                pending.flush((role.device, share), queue, estimates, role.bell);
                lane.push(role, worker, ran, stolen, t0);
                break 'claims;
            }
            let n = chunk.end - chunk.start;
            role.board.chunk_ran(worker, n, end - start);
            pending.add(n, end - start);
            // While a CPU of several workers is unmeasured, at once: its
            // packages grow from its probe until the estimator trusts what
            // they measured (see `Plan::slow_start`).
            measured = measured || estimates.power(role.device).is_some();
            if pending.time >= PUBLISH_AFTER || !measured {
                pending.flush((role.device, share), queue, estimates, role.bell);
            }
            chunker.learn(n, end - start);
            lane.busy_s += (end - start).as_secs_f64();
            lane.items += items;
            // Chunks follow each other from the package's start.
            let (from, first) = ran.map_or((chunk.start, start), |r| (r.units.start, r.start));
            ran = Some(Ran {
                units: from..chunk.end,
                start: first,
                end,
            });
        }
        lane.push(role, worker, ran, stolen, t0);
    }
    lane.declined_s = state.declined_s();
    if let Some(slot) = lanes.0.get(worker) {
        *slot.lock().unwrap_or_else(|p| p.into_inner()) = lane;
    }
}

/// Lazy host coherence: downloads the stale bytes the run's `units` read
/// (see [`CpuRole::sync`]), piece by piece (see [`Geometry::pieces`]).
fn sync_reads(role: &CpuRole<'_>, units: &Range<u64>) -> Result<(), Error> {
    let Some(total) = role.sync else {
        return Ok(());
    };
    let mut bytes = 0;
    for p in role.geometry.pieces(units.clone()) {
        bytes += super::staging::sync_package(&role.args.buffers, &p, role.geometry.space)?;
    }
    // Relaxed: a sum read once the workers are joined (the join orders it).
    total.fetch_add(bytes, std::sync::atomic::Ordering::Relaxed);
    Ok(())
}

/// The error of a kernel call that panicked or reported a failure
/// ([`CpuArgs::fail`]); `None` when it succeeded.
pub(crate) fn call_failure(
    outcome: std::thread::Result<()>,
    failure: Option<String>,
    units: &Range<u64>,
    worker: usize,
) -> Option<Error> {
    match (outcome, failure) {
        (Err(payload), _) => Some(Error::KernelPanic {
            units: units.clone(),
            worker,
            message: crate::error::panic_message(&*payload),
        }),
        (Ok(()), Some(message)) => Some(Error::KernelFailed {
            units: units.clone(),
            worker,
            message,
        }),
        (Ok(()), None) => None,
    }
}

impl Lane {
    /// Records the part of a package the worker ran, if any.
    fn push(
        &mut self,
        role: &CpuRole<'_>,
        worker: usize,
        ran: Option<Ran>,
        stolen: bool,
        t0: Instant,
    ) {
        if let Some(r) = ran {
            // The space's units and items.
            let work_items = role.geometry.items_in(r.units.clone());
            let pkg = role.geometry.package(r.units);
            self.records.push(PackageRecord {
                device: role.device,
                lane: worker,
                items: pkg.items,
                work_items,
                units: pkg.units,
                start_s: (r.start - t0).as_secs_f64(),
                end_s: (r.end - t0).as_secs_f64(),
                stolen,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workers_leave_sibling_remainders_to_a_gpu_that_ends_everything_sooner() {
        let est = crate::sched::ThroughputEstimator::new(2);
        let queue = WorkQueue::new(1000);
        // Unmeasured: siblings steal.
        assert!(sibling_steal_pays((0, 15, &[1]), &queue, &est));
        // 15 workers at 10_000 units/s in all: a unit costs one 1.5 ms.
        est.record(0, 100, 0.01);
        // No GPU in the run, or an unmeasured one: they steal.
        assert!(sibling_steal_pays((0, 15, &[]), &queue, &est));
        assert!(sibling_steal_pays((0, 15, &[1]), &queue, &est));
        // A GPU that runs the 1000 units not done in 1 ms: it takes them.
        est.record(1, 1_000_000, 1.0);
        assert!(!sibling_steal_pays((0, 15, &[1]), &queue, &est));
        // ... in 0.1 ms once 900 of them are done; 100 not done of a
        // slower GPU (10_000 units/s: 10 ms): siblings steal.
        assert!(queue.claim(|n| n).is_some());
        queue.complete(900);
        assert!(!sibling_steal_pays((0, 15, &[1]), &queue, &est));
        let slow = crate::sched::ThroughputEstimator::new(2);
        slow.record(0, 100, 0.01);
        slow.record(1, 100, 0.01);
        assert!(sibling_steal_pays((0, 15, &[1]), &queue, &slow));
    }

    #[test]
    fn a_chunk_takes_at_most_an_eighth_of_what_is_left_and_at_least_one_unit() {
        let rows = Geometry::new(crate::IndexSpace::D1(64 * 1000), [64, 1, 1], false).unwrap();
        let mut c = Chunker::new();
        // Cheap units: the size grows 8-fold a chunk (1, 8, 64, 512) ...
        for want in [8, 64, 512] {
            c.learn(c.units, Duration::from_nanos(1));
            assert_eq!(c.units, want);
        }
        // ... and takes an eighth of a large remainder, rounded up, at most.
        assert_eq!(c.size(&rows, 100_000), 512);
        assert_eq!(c.size(&rows, 193), 25);
        assert_eq!(c.size(&rows, 8), 1);
        assert_eq!(c.size(&rows, 1), 1);
        // One unit a chunk in a tiled run.
        let space = crate::IndexSpace::D2 {
            width: 256,
            height: 256,
        };
        let tiles = Geometry::new(space, [16, 16, 1], true).unwrap();
        assert_eq!(c.size(&tiles, 100), 1);
        // A slow chunk shrinks the next at once.
        c.learn(10, Duration::from_millis(10));
        assert_eq!(c.size(&rows, 100_000), 1);
    }

    #[test]
    fn a_failed_call_is_a_kernel_failure_and_a_panic_wins() {
        let units = 3..5;
        assert!(call_failure(Ok(()), None, &units, 1).is_none());
        let failed = call_failure(Ok(()), Some("code 7".into()), &units, 1);
        assert!(
            matches!(&failed, Some(Error::KernelFailed { units: u, worker: 1, message })
                if *u == (3..5) && message == "code 7"),
            "{failed:?}"
        );
        let payload: Box<dyn std::any::Any + Send> = Box::new("boom");
        let panicked = call_failure(Err(payload), Some("code 7".into()), &units, 0);
        assert!(
            matches!(&panicked, Some(Error::KernelPanic { message, .. }) if message == "boom"),
            "{panicked:?}"
        );
    }
}
