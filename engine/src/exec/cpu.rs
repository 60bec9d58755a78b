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

    /// Folds the lanes into the CPU device's report.
    pub(crate) fn finish(
        self,
        device: usize,
        name: &str,
        workers: usize,
    ) -> (DeviceReport, Vec<PackageRecord>, Option<Error>) {
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
        let mut records = Vec::new();
        let mut panic = None;
        for lane in self.0 {
            let lane = lane.into_inner().unwrap_or_else(|p| p.into_inner());
            report.packages += lane.records.len();
            report.items += lane.items;
            report.busy_s += lane.busy_s;
            for r in &lane.records {
                report.first_start_s = report.first_start_s.min(r.start_s);
                report.finish_s = report.finish_s.max(r.end_s);
            }
            records.extend(lane.records.into_iter().map(|mut r| {
                r.device = device;
                r
            }));
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
        (report, records, panic)
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
    loop {
        let claimed = plan.claim(queue, &mut state, estimates);
        let Some((units, _source)) = claimed else {
            // Nothing to claim now. Stay until every unit is done: another
            // device may still fail and give its packages back.
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
                estimates.record(role.device, n, (end - start).as_secs_f64() / share);
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
                queue.complete(n);
            }
            Err(payload) => {
                lane.panic = Some(Error::KernelPanic {
                    units,
                    worker,
                    message: crate::error::panic_message(&*payload),
                });
                // The run fails: nobody claims more.
                queue.abort();
                break;
            }
        }
    }
    if let Some(slot) = lanes.0.get(worker) {
        *slot.lock().unwrap_or_else(|p| p.into_inner()) = lane;
    }
}
