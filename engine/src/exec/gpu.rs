//! The GPU executor: one dispatch loop per GPU queue that keeps packages in
//! flight, claiming the next while the current one runs, so the GPU does not
//! wait for the host round trip between packages.

use super::cpu::Idle;
use super::kernel::Geometry;
use super::report::{DeviceReport, GapStats, PackageLog, PackageRecord};
use crate::engine::GpuUnit;
use crate::sched::{
    usable_power, worth_splitting, DeviceKind, Plan, PowerEstimator, StealBoard, WorkQueue,
};
use crate::vk::{BindingSet, ComputePipeline};
use std::collections::VecDeque;
use std::ops::Range;
use std::sync::Mutex;
use std::time::{Duration, Instant};

pub(crate) struct GpuRole<'a> {
    pub(crate) device: usize,
    pub(crate) unit: &'a GpuUnit,
    pub(crate) pipeline: &'a ComputePipeline,
    pub(crate) set: &'a BindingSet,
    pub(crate) push: &'a [u8],
    pub(crate) geometry: &'a Geometry,
    pub(crate) timeout: Duration,
    /// The CPU device's workers, whose unstarted remainders the GPU may
    /// take when it has nothing else to run.
    pub(crate) cpu: Option<CpuPeers<'a>>,
    #[cfg(feature = "test-hooks")]
    pub(crate) fault: Option<crate::hooks::FaultInjection>,
}

/// The CPU device of a run, seen from the GPU's dispatch loop.
pub(crate) struct CpuPeers<'a> {
    /// Its workers' board.
    pub(crate) board: &'a StealBoard,
    /// Its index among the run's devices.
    pub(crate) device: usize,
    /// Its number of workers.
    pub(crate) workers: usize,
}

/// What a GPU package costs beyond its own run time: the host's round trip
/// from submission to observed completion (41-53 us on the H200, see
/// BENCHMARKS.md). The GPU splits a CPU worker's remainder only when that
/// remainder is large enough to pay for it.
const STEAL_LATENCY: Duration = Duration::from_micros(50);

impl GpuRole<'_> {
    /// With nothing in flight and nothing to claim: the back half of the
    /// largest CPU worker's remainder, when splitting it ends it sooner.
    fn steal(&self, estimates: &dyn PowerEstimator) -> Option<Range<u64>> {
        let cpu = self.cpu.as_ref()?;
        let worker_rate = estimates
            .power(cpu.device)
            .map(|p| p / cpu.workers.max(1) as f64);
        let min_left = worth_splitting(
            STEAL_LATENCY.as_secs_f64(),
            worker_rate,
            estimates.power(self.device),
        )?;
        // The GPU has no word on the board: any index past the workers.
        cpu.board.steal(usize::MAX, min_left)
    }
}

/// The injected fault of this run, armed once its package is reached.
#[cfg(feature = "test-hooks")]
struct Injected {
    spec: crate::hooks::FaultInjection,
    /// Timeline semaphore the injected hang waits on.
    blocker: ash::vk::Semaphore,
    /// Ticket of the sabotaged package.
    ticket: Option<u64>,
}

#[derive(Default)]
struct LaneData {
    records: Vec<PackageRecord>,
    busy_s: f64,
    items: u64,
    gaps_ns: Vec<u64>,
    failure: Option<String>,
    declined_s: Option<f64>,
}

/// The loop's results, written once at its end.
#[derive(Default)]
pub(crate) struct Lane(Mutex<LaneData>);

impl Lane {
    /// The GPU's report; its package records (which carry their device
    /// index already) are moved to `log`.
    pub(crate) fn finish(self, name: &str, log: &mut PackageLog) -> DeviceReport {
        let d = self.0.into_inner().unwrap_or_else(|p| p.into_inner());
        let first = d
            .records
            .iter()
            .map(|r| r.start_s)
            .fold(f64::INFINITY, f64::min);
        let report = DeviceReport {
            name: name.to_string(),
            kind: DeviceKind::Gpu,
            claimants: 1,
            packages: d.records.len(),
            items: d.items,
            busy_s: d.busy_s,
            first_start_s: if d.records.is_empty() { 0.0 } else { first },
            finish_s: d.records.iter().map(|r| r.end_s).fold(0.0, f64::max),
            gpu_gaps: GapStats::from_gaps(d.gaps_ns),
            failure: d.failure,
            declined_s: d.declined_s,
        };
        log.push_lane(d.records);
        report
    }
}

struct InFlight {
    ticket: u64,
    units: Range<u64>,
    /// Taken from a CPU worker's package rather than from the queue.
    stolen: bool,
    submitted: Instant,
}

impl InFlight {
    /// Units of the package.
    fn len(&self) -> u64 {
        self.units.end - self.units.start
    }

    /// When the package could start on the device: its submission, or the
    /// completion of the package before it (`last_done`), whichever is
    /// later.
    fn could_start(&self, last_done: Option<Instant>) -> Instant {
        last_done.map_or(self.submitted, |p| p.max(self.submitted))
    }
}

/// The next package is claimed when the packages in flight are expected to
/// end within this lead time: about ten host round trips on a discrete GPU
/// (41-53 us measured on the H200), so the GPU does not wait between
/// packages, yet the claim is made as late as possible, with the smallest
/// `G_r` and the freshest power estimates. Claiming it as soon as the first
/// package is submitted would size it from a stale `G_r` and let it sit
/// queued behind the current package near the end of a run.
const PREFETCH_LEAD: Duration = Duration::from_micros(500);

/// [`PREFETCH_LEAD`], or the environment variable `COEXEC_PREFETCH_LEAD_US`
/// (microseconds) where set: a knob for measuring the rule, not for tuning
/// runs. Read once per process, not per run.
fn prefetch_lead() -> Duration {
    static LEAD: std::sync::OnceLock<Duration> = std::sync::OnceLock::new();
    *LEAD.get_or_init(|| {
        std::env::var("COEXEC_PREFETCH_LEAD_US")
            .ok()
            .and_then(|v| v.trim().parse::<u64>().ok())
            .map_or(PREFETCH_LEAD, Duration::from_micros)
    })
}

/// A package counts as hung once it has run this many times its expected
/// time (at the device's measured throughput), if that is longer than the
/// engine's GPU timeout.
const HANG_FACTOR: f64 = 4.0;

/// How long a package of `units` may run before it counts as hung: the
/// engine's `base` timeout, or [`HANG_FACTOR`] times its expected time where
/// the device is measured, whichever is longer. A long package that the
/// scheduler chose knowingly (a GPU alone takes its whole range at once) is
/// not mistaken for a hang.
fn package_timeout(base: Duration, units: u64, units_per_s: Option<f64>) -> Duration {
    match usable_power(units_per_s) {
        Some(p) => base.max(Duration::from_secs_f64(
            (HANG_FACTOR * units as f64 / p).min(86_400.0),
        )),
        None => base,
    }
}

/// When the packages in flight are expected to be done, from the device's
/// measured throughput (`None` before the first measurement).
fn expected_end(
    inflight: &VecDeque<InFlight>,
    front_start: Instant,
    units_per_s: Option<f64>,
) -> Option<Instant> {
    let p = usable_power(units_per_s)?;
    let units: u64 = inflight.iter().map(InFlight::len).sum();
    Some(front_start + Duration::from_secs_f64((units as f64 / p).min(3600.0)))
}

/// The dispatch loop of the GPU.
pub(crate) fn dispatch_loop(
    role: &GpuRole<'_>,
    plan: &Plan,
    queue: &WorkQueue,
    estimates: &dyn PowerEstimator,
    t0: Instant,
    lane: &Lane,
) {
    let mut ring = role.unit.ring.lock().unwrap_or_else(|p| p.into_inner());
    let depth = ring.depth();
    let mut state = plan.claimant(role.device, 0);
    let mut inflight: VecDeque<InFlight> = VecDeque::with_capacity(depth);
    let mut data = LaneData::default();
    let mut last_done: Option<Instant> = None;
    let mut last_span_end: Option<u64> = None;
    let mut idle = Idle::new();
    let timeout_ns = u64::try_from(role.timeout.as_nanos()).unwrap_or(u64::MAX);
    let mut failed: Option<String> = None;
    let lead = prefetch_lead();
    #[cfg(feature = "test-hooks")]
    let mut injected = role.fault.map(|spec| Injected {
        spec,
        blocker: role.unit.device.create_timeline(0).unwrap_or_default(),
        ticket: None,
    });
    #[cfg(feature = "test-hooks")]
    let mut completed_packages = 0usize;
    'run: loop {
        // Keep up to `depth` packages in flight, claiming each extra one
        // only when those in flight are about to end (see PREFETCH_LEAD).
        let mut prefetch_at: Option<Instant> = None;
        while inflight.len() < depth && !queue.is_aborted() {
            if let Some(front) = inflight.front() {
                let front_start = front.could_start(last_done);
                match expected_end(&inflight, front_start, estimates.power(role.device)) {
                    // No measurement yet: no prefetch; the first completion
                    // gives one.
                    None => break,
                    Some(end) if end > Instant::now() + lead => {
                        prefetch_at = Some(end - lead);
                        break;
                    }
                    Some(_) => {}
                }
            }
            // Fresh or requeued work first; with nothing in flight, the
            // unstarted end of a CPU worker's package.
            let claimed = plan
                .claim(queue, &mut state, estimates)
                .map(|(units, _source)| (units, false))
                .or_else(|| {
                    inflight
                        .is_empty()
                        .then(|| role.steal(estimates))
                        .flatten()
                        .map(|units| (units, true))
                });
            let Some((units, stolen)) = claimed else {
                break;
            };
            let (base, count) = role.geometry.dispatch(&units);
            #[cfg(feature = "test-hooks")]
            if let Some(inj) = injected
                .as_mut()
                .filter(|i| i.ticket.is_none() && completed_packages >= i.spec.after_packages)
            {
                use crate::hooks::GpuFault;
                let r = match inj.spec.fault {
                    GpuFault::SubmitError => Err(crate::error::VkError::Other {
                        call: "vkQueueSubmit (injected)",
                        result: ash::vk::Result::ERROR_UNKNOWN,
                    }),
                    // SAFETY: as for `submit` below; the blocker lives until
                    // the end of this loop and is signalled before it is
                    // destroyed.
                    GpuFault::Hang => unsafe { ring.submit_blocked(inj.blocker) },
                    // SAFETY: as for `submit` below.
                    GpuFault::DeviceLost => unsafe {
                        ring.submit(role.pipeline, role.set, role.push, base, count)
                    },
                };
                match r {
                    Ok(ticket) => {
                        inj.ticket = Some(ticket);
                        inflight.push_back(InFlight {
                            ticket,
                            units,
                            stolen,
                            submitted: Instant::now(),
                        });
                        continue;
                    }
                    Err(e) => {
                        inj.ticket = Some(0);
                        queue.requeue(units);
                        failed = Some(e.to_string());
                        break 'run;
                    }
                }
            }
            // SAFETY: the slot this ticket reuses is idle: at most `depth - 1`
            // tickets are in flight, all newer than the one `depth` back. The
            // set was made by this pipeline for this run, its buffers are
            // borrowed by the run until every ticket completed (this loop
            // drains before returning), and the push size was checked
            // against the shader at run start.
            let submitted = unsafe { ring.submit(role.pipeline, role.set, role.push, base, count) };
            match submitted {
                Ok(ticket) => inflight.push_back(InFlight {
                    ticket,
                    units,
                    stolen,
                    submitted: Instant::now(),
                }),
                Err(e) => {
                    queue.requeue(units);
                    failed = Some(e.to_string());
                    break 'run;
                }
            }
        }
        let Some(f) = inflight.front() else {
            if queue.is_done() || queue.is_aborted() {
                break;
            }
            idle.wait();
            continue;
        };
        idle = Idle::new();
        // Wait for the oldest package; wake up early when the next one is due
        // to be claimed.
        let now = Instant::now();
        // A package may run `timeout` from when it could start (its
        // submission, or the completion of the one before it).
        let started = f.could_start(last_done);
        let timeout = package_timeout(role.timeout, f.len(), estimates.power(role.device));
        let deadline = started + timeout;
        let wake = prefetch_at.map_or(deadline, |t| t.min(deadline)).max(now);
        let waited = ring.wait(
            f.ticket,
            (wake - now).as_nanos().min(u128::from(timeout_ns)) as u64,
        );
        #[cfg(feature = "test-hooks")]
        let waited = match (&injected, waited) {
            (Some(i), Ok(true))
                if i.spec.fault == crate::hooks::GpuFault::DeviceLost
                    && i.ticket == Some(f.ticket) =>
            {
                Err(crate::error::VkError::DeviceLost {
                    call: "vkWaitSemaphores (injected)",
                })
            }
            (_, w) => w,
        };
        match waited {
            Ok(true) => {}
            Ok(false) if Instant::now() < deadline => continue,
            Ok(false) => {
                failed = Some(format!("a package ran past the {timeout:?} timeout"));
                break;
            }
            Err(e) => {
                failed = Some(e.to_string());
                break;
            }
        }
        let done = Instant::now();
        let f = inflight.pop_front().expect("front exists");
        let start = f.could_start(last_done);
        last_done = Some(done);
        if let Ok(Some(span)) = ring.span(f.ticket) {
            if let Some(prev_end) = last_span_end {
                data.gaps_ns.push(span.start_ns.saturating_sub(prev_end));
            }
            last_span_end = Some(span.end_ns);
        }
        #[cfg(feature = "test-hooks")]
        {
            completed_packages += 1;
        }
        let n = f.len();
        let pkg = role.geometry.package(f.units.clone());
        estimates.record(role.device, n, (done - start).as_secs_f64());
        data.busy_s += (done - start).as_secs_f64();
        data.items += pkg.len();
        data.records.push(PackageRecord {
            device: role.device,
            lane: 0,
            units: f.units,
            items: pkg.items,
            start_s: (start - t0).as_secs_f64(),
            end_s: (done - t0).as_secs_f64(),
            stolen: f.stolen,
        });
        queue.complete(n);
    }
    if let Some(why) = failed {
        // Give every package still in flight back to the queue, and under
        // Static the share this loop had not claimed yet: the other devices
        // complete them. The device is left out of later runs.
        for f in inflight.drain(..) {
            queue.requeue(f.units);
        }
        plan.forfeit(queue, &mut state, estimates);
        role.unit.device.mark_lost();
        tracing::error!(
            "GPU {} failed and leaves the run: {why}",
            role.unit.device.info().name
        );
        data.failure = Some(why);
    }
    #[cfg(feature = "test-hooks")]
    if let Some(inj) = &injected {
        // End the injected hang so the queue drains.
        let info = ash::vk::SemaphoreSignalInfo::default()
            .semaphore(inj.blocker)
            .value(1);
        // SAFETY: the blocker is ours, a timeline at 0, signalled once to 1.
        let _ = unsafe { role.unit.device.raw().signal_semaphore(&info) };
    }
    // Never leave GPU work running past the run: its buffers are released
    // when the run returns.
    if (!inflight.is_empty() || ring.last_ticket() > 0)
        && !matches!(ring.drain(timeout_ns), Ok(true))
    {
        let _ = role.unit.device.wait_idle();
    }
    #[cfg(feature = "test-hooks")]
    if let Some(inj) = injected {
        // SAFETY: the queue drained above, so no submission waits on it now.
        unsafe { role.unit.device.destroy_semaphore(inj.blocker) };
    }
    data.declined_s = state.declined_s();
    *lane.0.lock().unwrap_or_else(|p| p.into_inner()) = data;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hang_timeout_grows_with_the_expected_time_only() {
        let base = Duration::from_millis(300);
        // Unmeasured, or a measure that is no measure: the base.
        assert_eq!(package_timeout(base, 1_000, None), base);
        assert_eq!(package_timeout(base, 1_000, Some(f64::NAN)), base);
        assert_eq!(package_timeout(base, 1_000, Some(0.0)), base);
        // Expected 10 ms: 4x is below the base.
        assert_eq!(package_timeout(base, 1_000, Some(100_000.0)), base);
        // Expected 1 s: 4 s.
        let t = package_timeout(base, 1_000, Some(1_000.0));
        assert!((t.as_secs_f64() - 4.0).abs() < 1e-9, "{t:?}");
        // Absurd estimates saturate at a day instead of overflowing.
        assert_eq!(
            package_timeout(base, u64::MAX, Some(1e-300)),
            Duration::from_secs(86_400)
        );
    }
}
