//! The CPU executor: each pinned worker claims packages and calls the
//! kernel's closure on them.

use super::kernel::{Args, CpuArgs, CpuFn, Geometry};
use super::report::{DeviceReport, PackageRecord};
use crate::error::Error;
use crate::sched::{DeviceKind, Plan, PowerEstimator, WorkQueue};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Mutex;
use std::time::{Duration, Instant};

pub(crate) struct CpuRole<'a> {
    pub(crate) device: usize,
    pub(crate) kernel: &'a CpuFn,
    pub(crate) args: &'a Args<'a>,
    pub(crate) geometry: &'a Geometry,
    pub(crate) workers: usize,
}

#[derive(Default)]
struct Lane {
    records: Vec<PackageRecord>,
    busy_s: f64,
    items: u64,
    panic: Option<Error>,
}

/// Per-worker results, each written once by its own worker at the end of a
/// run (so the mutexes are never contended).
pub(crate) struct Lanes(Vec<Mutex<Lane>>);

impl Lanes {
    pub(crate) fn new(workers: usize) -> Self {
        Lanes((0..workers).map(|_| Mutex::new(Lane::default())).collect())
    }

    /// Folds the lanes into the CPU device's report, moving their package
    /// records (which carry their device index already) to `log`.
    pub(crate) fn finish(
        self,
        name: &str,
        workers: usize,
        log: &mut Vec<PackageRecord>,
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
            failure: None,
        };
        let mut panic = None;
        let lanes: Vec<Lane> = self
            .0
            .into_iter()
            .map(|l| l.into_inner().unwrap_or_else(|p| p.into_inner()))
            .collect();
        log.reserve(lanes.iter().map(|l| l.records.len()).sum());
        for mut lane in lanes {
            report.packages += lane.records.len();
            report.items += lane.items;
            report.busy_s += lane.busy_s;
            for r in &lane.records {
                report.first_start_s = report.first_start_s.min(r.start_s);
                report.finish_s = report.finish_s.max(r.end_s);
            }
            log.append(&mut lane.records);
            if panic.is_none() {
                panic = lane.panic;
            }
        }
        if report.packages == 0 {
            report.first_start_s = 0.0;
        }
        if let Some(p) = &panic {
            report.failure = Some(p.to_string());
        }
        (report, panic)
    }
}

/// Waits a little while other devices finish (or requeue) their packages.
pub(crate) struct Idle(u32);

impl Idle {
    pub(crate) fn new() -> Self {
        Idle(0)
    }
    /// Spins briefly, then yields, then sleeps in short steps.
    pub(crate) fn wait(&mut self) {
        self.0 = self.0.saturating_add(1);
        if self.0 < 64 {
            std::hint::spin_loop();
        } else if self.0 < 256 {
            std::thread::yield_now();
        } else {
            std::thread::sleep(Duration::from_micros(50));
        }
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
    /// completion count.
    fn flush(
        &mut self,
        device: usize,
        share: f64,
        queue: &WorkQueue,
        estimates: &dyn PowerEstimator,
    ) {
        if self.units == 0 {
            return;
        }
        estimates.record(device, self.units, self.time.as_secs_f64() / share);
        queue.complete(self.units);
        *self = Pending::default();
    }
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
    let mut idle = Idle::new();
    // Each claimant's time is recorded divided by the number of workers, so
    // that the estimator's units/second is the whole CPU device's throughput
    // (all workers run at once).
    let share = role.workers.max(1) as f64;
    let mut pending = Pending::default();
    loop {
        let claimed = plan.claim(queue, &mut state, estimates);
        let Some((units, _source)) = claimed else {
            // Nothing to claim now: publish what this worker still holds, so
            // that the run can be seen done. Then stay until every unit is
            // done: another device may still fail and give its packages back.
            pending.flush(role.device, share, queue, estimates);
            if queue.is_done() || queue.is_aborted() {
                break;
            }
            idle.wait();
            continue;
        };
        idle = Idle::new();
        let pkg = role.geometry.package(units.clone());
        let mut cargs = CpuArgs {
            buffers: &role.args.buffers,
            push: &role.args.push,
            items: pkg.items.clone(),
            taken: 0,
        };
        let start = Instant::now();
        let outcome = catch_unwind(AssertUnwindSafe(|| (role.kernel)(&pkg, &mut cargs)));
        let end = Instant::now();
        match outcome {
            Ok(()) => {
                let n = units.end - units.start;
                pending.add(n, end - start);
                if pending.time >= PUBLISH_AFTER {
                    pending.flush(role.device, share, queue, estimates);
                }
                lane.busy_s += (end - start).as_secs_f64();
                lane.items += pkg.len();
                lane.records.push(PackageRecord {
                    device: role.device,
                    lane: worker,
                    units,
                    items: pkg.items,
                    start_s: (start - t0).as_secs_f64(),
                    end_s: (end - t0).as_secs_f64(),
                });
            }
            Err(payload) => {
                lane.panic = Some(Error::KernelPanic {
                    units,
                    worker,
                    message: crate::error::panic_message(&*payload),
                });
                // The run fails: nobody claims more.
                queue.abort();
                pending.flush(role.device, share, queue, estimates);
                break;
            }
        }
    }
    if let Some(slot) = lanes.0.get(worker) {
        *slot.lock().unwrap_or_else(|p| p.into_inner()) = lane;
    }
}
