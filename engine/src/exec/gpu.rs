//! The GPU executor: one dispatch loop per GPU queue that keeps packages in
//! flight, claiming the next while the current one runs, so the GPU does not
//! wait for the host round trip between packages.

use super::idle::{nothing_left, Bell, Standby};
#[cfg(feature = "test-hooks")]
use super::inject::Injected;
use super::kernel::Geometry;
use super::report::{
    DeviceReport, GapStats, PackageLog, PackageRecord, TransferSpan, Transfers,
};
use super::settle::{settle, Outcome, RingObserver};
use super::pipeline::{Download, Pipeline, TransferError};
use super::staging::Staging;
use super::wait;
use crate::error::{Error, VkError};
use crate::sched::transfers::Way;
use crate::sched::{
    run_us, usable_power, ClaimantState, DeviceKind, DeviceTime, Plan, PowerEstimator, StealBoard,
    WorkQueue,
};
use super::stagers::RunStagers;
use crate::vk::{BindingSet, ComputePipeline, Device, Dispatch, DispatchRing};
use std::collections::VecDeque;
use std::ops::Range;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// An engine's GPU: its device, the dispatch ring its runs submit to, and
/// the pool thread that runs its dispatch loop.
pub(crate) struct GpuUnit {
    /// The device.
    pub(crate) device: Arc<Device>,
    /// The ring; a run's dispatch loop holds it for the whole run.
    pub(crate) ring: Mutex<DispatchRing>,
    /// Index of the dispatch loop's thread in the engine's pool.
    pub(crate) thread: usize,
    /// Transfers of staged runs (`None` for a zero-copy engine).
    pub(crate) stagers: Option<RunStagers>,
}

/// What a run's dispatch loop needs: the GPU, the kernel's pipeline and
/// binding set, the geometry, and the CPU device it may take work from.
pub(crate) struct GpuRole<'a> {
    pub(crate) device: usize,
    pub(crate) unit: &'a GpuUnit,
    pub(crate) pipeline: &'a ComputePipeline,
    pub(crate) set: &'a BindingSet,
    /// The binding set of its stolen packages, where it has one: a staged
    /// run's outputs bound to their host bytes (see
    /// [`Staging::steal_bindings`]). A stolen package then writes the host
    /// copies itself, with no download: on an H200 a stolen package's
    /// scattered tile rows took 300-1300 us to download whatever their
    /// size (2 MB to 14 KB), each behind the one before, the last of a
    /// fractal's first run ending 1.6 ms after its last package
    /// (BENCHMARKS.md, h200 run 30).
    pub(crate) steal_set: Option<&'a BindingSet>,
    pub(crate) push: &'a [u8],
    pub(crate) geometry: &'a Geometry,
    pub(crate) timeout: Duration,
    /// Rung when the run is done or aborted, or work is given back.
    pub(crate) bell: &'a Bell,
    /// Which claimant stays until the run is done; the others leave once
    /// nothing is left (the loop is pool thread `unit.thread`).
    pub(crate) standby: Standby,
    /// The CPU device's workers, whose unstarted remainders the GPU may
    /// take when it has nothing else to run.
    pub(crate) cpu: Option<CpuPeers<'a>>,
    /// The kernel's flag: set once this engine's GPU has completed a
    /// package of it (see [`Kernel`](crate::Kernel)'s `gpu_warm`).
    pub(crate) warm: &'a AtomicBool,
    /// Test hook: delay added to the cold package (see
    /// `Engine::delay_cold_gpu_packages`).
    #[cfg(feature = "test-hooks")]
    pub(crate) cold_delay: Option<Duration>,
    /// The staged plan of a staged run; `None`: zero-copy.
    pub(crate) staging: Option<&'a Staging<'a>>,
    /// The run transfers on the GPU's transfer queue: a lone GPU's run cut
    /// in packages (see [`RunStagers::for_run`]).
    pub(crate) own_queue: bool,
    /// What the GPU's cold first package of the kernel is expected to cost
    /// beyond a warm one, seconds (a first run from a profile: see
    /// [`crate::learn::Learning::profile_cold`]; 0 otherwise): while the
    /// GPU is cold, its first package waits that long.
    pub(crate) cold_start_s: f64,
    /// How long after the run's start the GPU claims its first package:
    /// `None` at once; in a run that measures another device first (see
    /// [`crate::learn::Measure`]), that device's time box.
    pub(crate) join_after: Option<Duration>,
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

#[derive(Default)]
struct LaneData {
    records: Vec<PackageRecord>,
    busy_s: f64,
    items: u64,
    gaps_ns: Vec<u64>,
    /// Device nanoseconds of the packages with timestamps.
    gpu_ns: Option<u64>,
    failure: Option<String>,
    declined_s: Option<f64>,
    /// Items of packages whose outcome is unknown and that could not run
    /// again (see [`Error::GpuLostMidPackage`]).
    lost: Vec<Range<u64>>,
    /// Units of those packages.
    lost_units: u64,
    /// Staged transfers.
    transfers: Transfers,
    /// Their batches, for traces.
    spans: Vec<TransferSpan>,
    /// A package brought up the rest of an input read again unchanged
    /// (see [`Staging::completes_residency`]): the run paid a one-time
    /// transfer.
    one_time: bool,
    /// The kernel's first package on this GPU (cold): its units and
    /// seconds, its upload left out (see [`Lane::cold`]).
    cold: Option<(u64, f64)>,
}

/// The loop's results, written once at its end.
#[derive(Default)]
pub(crate) struct Lane(Mutex<LaneData>);

/// Items a failed GPU may have written in part and that could not run
/// again: the run fails with `error`.
pub(crate) struct LostItems {
    /// Units they make up (counted done in the queue, so that the other
    /// devices could finish the rest).
    pub(crate) units: u64,
    /// [`Error::GpuLostMidPackage`] naming them.
    pub(crate) error: Error,
}

impl Lane {
    /// After a staged run: counts the buffers bound zero-copy (the run
    /// updates the mirrors' residency, see
    /// [`finish_all`](super::staging::finish_all)).
    pub(crate) fn staged(&self, staging: &Staging<'_>) {
        let mut d = self.0.lock().unwrap_or_else(|p| p.into_inner());
        d.transfers.zero_copy_fallbacks = staging.fallbacks;
    }

    /// Adds `bytes` downloaded for the host outside the loop (lazy host
    /// coherence, see [`crate::mem::coherence`]).
    pub(crate) fn add_download(&self, bytes: u64) {
        let mut d = self.0.lock().unwrap_or_else(|p| p.into_inner());
        d.transfers.download_bytes += bytes;
    }

    /// Whether a package of the run brought up the rest of an input read
    /// again unchanged (a one-time transfer).
    pub(crate) fn one_time(&self) -> bool {
        let d = self.0.lock().unwrap_or_else(|p| p.into_inner());
        d.one_time
    }

    /// The kernel's first package on this GPU, where this run ran it: its
    /// units and the seconds it took less what its upload is expected to
    /// take (what the profile keeps of a cold start, see
    /// [`crate::learn::Learning::profile_cold`]).
    pub(crate) fn cold(&self) -> Option<(u64, f64)> {
        let d = self.0.lock().unwrap_or_else(|p| p.into_inner());
        d.cold
    }

    /// Whether the GPU failed during the run.
    pub(crate) fn failed(&self) -> bool {
        let d = self.0.lock().unwrap_or_else(|p| p.into_inner());
        d.failure.is_some()
    }

    /// The GPU's report, and its lost items if any; its package records
    /// (which carry their device index already) are moved to `log`.
    pub(crate) fn finish(
        self,
        name: &str,
        log: &mut PackageLog,
    ) -> (DeviceReport, Option<LostItems>) {
        let mut d = self.0.into_inner().unwrap_or_else(|p| p.into_inner());
        let items = std::mem::take(&mut d.lost);
        let lost = (!items.is_empty()).then(|| LostItems {
            units: d.lost_units,
            error: Error::GpuLostMidPackage {
                device: name.to_string(),
                items,
                cause: d.failure.clone().unwrap_or_default(),
            },
        });
        let first = d
            .records
            .iter()
            .map(|r| r.start_s)
            .fold(f64::INFINITY, f64::min);
        let finish_s = d.records.iter().map(|r| r.end_s).fold(0.0, f64::max);
        let settled_s = d
            .spans
            .iter()
            .filter(|s| !s.upload)
            .map(|s| s.end_s)
            .fold(finish_s, f64::max);
        let report = DeviceReport {
            name: name.to_string(),
            kind: DeviceKind::Gpu,
            claimants: 1,
            packages: d.records.len(),
            items: d.items,
            busy_s: d.busy_s,
            first_start_s: if d.records.is_empty() { 0.0 } else { first },
            finish_s,
            gpu_gaps: GapStats::from_gaps(d.gaps_ns),
            settled_s,
            gpu_busy_s: d.gpu_ns.map(|ns| ns as f64 * 1e-9),
            failure: d.failure,
            declined_s: d.declined_s,
            transfers: d.transfers,
            cpu_impl: None,
            note: None,
        };
        // In the order the packages ran: a package is recorded once its
        // results are home, and a stolen one that wrote the host copies
        // itself (see `GpuRole::steal_set`) before an older one whose
        // download is still in flight.
        d.records.sort_by(|a, b| a.start_s.total_cmp(&b.start_s));
        log.push_lane(d.records);
        log.push_transfers(d.spans);
        (report, lost)
    }
}

struct InFlight {
    ticket: u64,
    /// Its units.
    parts: Parts,
    /// Taken from CPU workers' packages rather than from the queue.
    stolen: bool,
    /// Ran with [`GpuRole::steal_set`]: it wrote the host copies itself.
    to_host: bool,
    /// When its submission began.
    submitted: Instant,
    /// Staged runs: the bytes uploaded for it (0 where it read only what
    /// the mirrors held).
    uploaded: u64,
    /// Its upload carried what the GPU reads whole (the run's first
    /// package: see [`upfront_s`]).
    carries_upfront: bool,
    /// When its upload's submission began, where nothing else was in
    /// flight on the GPU (from then to its completion it ran its upload and
    /// itself: see [`UPLOAD_LEARN_BYTES`]).
    upload_alone_since: Option<Instant>,
}

/// Uploads at least this large, submitted with nothing else in flight,
/// teach the device's upload bandwidth: the package's host time less its
/// own GPU time (its recording and the host's round trip stay in it: on
/// the H200 under 0.1 ms warm, under 10% of 32 MiB at 43 GB/s). A
/// kernel's first package on a GPU also waits for one-time costs (0.2-0.25
/// ms on the H200 once its pipeline is primed, more elsewhere): its time
/// only bounds the bandwidth from below
/// ([`TransferRates::record_at_least`](crate::sched::transfers::TransferRates::record_at_least)).
/// A transfer of its own is timed for downloads only; without this, a new
/// process priced every upload at the seed's 25 GB/s (the H200: 41-43).
const UPLOAD_LEARN_BYTES: u64 = 32 << 20;

impl InFlight {
    /// Units of the package.
    fn len(&self) -> u64 {
        self.parts.units()
    }

    /// When the package could start on the device: its submission, or the
    /// completion of the package before it (`last_done`), whichever is
    /// later.
    fn could_start(&self, last_done: Option<Instant>) -> Instant {
        last_done.map_or(self.submitted, |p| p.max(self.submitted))
    }
}

/// A package that ran, waiting for its download: it, when it could start,
/// and when it was seen complete.
type Ran = (InFlight, Instant, Instant);

/// The next package is claimed when the packages in flight are expected to
/// end within this lead time: about ten host round trips on a discrete GPU
/// (41-53 us measured on the H200), so the GPU does not wait between
/// packages, yet the claim is made as late as possible, with the smallest
/// `G_r` and the freshest power estimates. Claiming it as soon as the first
/// package is submitted would size it from a stale `G_r` and let it sit
/// queued behind the current package near the end of a run.
const PREFETCH_LEAD: Duration = Duration::from_micros(500);

/// Whether a staged GPU claims its next package earlier by the time its
/// upload takes, timed from its cold package until it is measured (see
/// `Loop::upload_lead`, `Loop::cold_power`): yes, unless the environment
/// sets `COEXEC_UPLOAD_LEAD=0` (to measure what the rule changes). Read
/// once per process.
fn upload_lead_on() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    crate::switches::on_unless_zero(&ON, "COEXEC_UPLOAD_LEAD")
}

/// Whether a staged GPU's claim counts the downloads its package's upload
/// waits for (see [`upload_waits`]): yes, unless the environment sets
/// `COEXEC_UPLOAD_WAITS=0` (to measure what the rule changes). Read once
/// per process.
fn upload_waits_on() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    crate::switches::on_unless_zero(&ON, "COEXEC_UPLOAD_WAITS")
}

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

/// How long a package of `units` units is expected to run on the device
/// at cost `c`: its fixed cost and its units at the rate (the rate alone
/// would expect a package that waits for its heaviest items, a power-law
/// sparse matrix's 1 ms, to end a millisecond early, and the loop would
/// poll before it and block through its end). `None` for an unusable cost.
fn expected_run_s(c: crate::sched::Cost, units: u64) -> Option<f64> {
    let s = c.overhead_s.max(0.0) + units as f64 / usable_power(Some(c.rate))?;
    s.is_finite().then_some(s.min(3600.0))
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

/// Why the loop stopped early: the GPU failed.
struct Failure {
    /// What failed.
    why: String,
    /// A package whose submission failed with the device lost: Vulkan
    /// then no longer promises that the submission left the buffers
    /// untouched.
    unsent: Option<Parts>,
    /// That package was bound to write the host copies itself (see
    /// [`GpuRole::steal_set`]).
    unsent_to_host: bool,
}

impl Failure {
    fn new(why: impl ToString) -> Self {
        Failure {
            why: why.to_string(),
            unsent: None,
            unsent_to_host: false,
        }
    }
}

/// The units of a GPU package: one range claimed from the queue (nothing
/// allocated on the dispatch path), or the ranges taken at once from CPU
/// workers' packages (see [`GpuRole::steal`]).
enum Parts {
    One(Range<u64>),
    Many(Vec<Range<u64>>),
}

impl Parts {
    /// Its ranges.
    fn as_slice(&self) -> &[Range<u64>] {
        match self {
            Parts::One(u) => std::slice::from_ref(u),
            Parts::Many(v) => v,
        }
    }

    /// Its units.
    fn units(&self) -> u64 {
        self.as_slice().iter().map(|u| u.end - u.start).sum()
    }
}

/// The dispatch loop of one run: its role, the run's shared state, and the
/// packages in flight.
struct Loop<'r, 'a> {
    role: &'r GpuRole<'a>,
    plan: &'r Plan,
    queue: &'r WorkQueue,
    estimates: &'r dyn PowerEstimator,
    t0: Instant,
    ring: MutexGuard<'r, DispatchRing>,
    /// Staged runs: the transfers in flight.
    transfers: Option<Pipeline<'r, Ran>>,
    state: ClaimantState,
    inflight: VecDeque<InFlight>,
    data: LaneData,
    /// When the last package was seen complete.
    last_done: Option<Instant>,
    /// Device-clock end of the last package with a GPU span.
    last_span_end: Option<u64>,
    /// Staged runs: how long the first package's upload of what the GPU
    /// reads whole is expected to take (see [`upfront_s`]).
    upfront_s: f64,
    /// Units of a package of one work-group on each of the GPU's cores,
    /// where it tells them (see [`DeviceTime::flat_units`]).
    flat_units: Option<u64>,
    /// Whether a claim waits for the downloads ahead of its package's
    /// upload (see [`upload_waits`]): its packages upload (the run's
    /// plan has a figure for it), unless the switch is off. Fixed for
    /// the run.
    uploads: bool,
    /// Whether a package of the run was submitted: the first one carries
    /// the upload of what the GPU reads whole.
    submitted_any: bool,
    /// How it waits for its oldest package (see [`wait::mode_for`]).
    wait_mode: wait::WaitMode,
    /// Whether it stole from the workers in this run: its first steal
    /// may weigh them at their fastest, later ones at their slowest (see
    /// [`GpuRole::steal`]).
    stole: bool,
    /// Packages seen complete (their downloads may still be in flight).
    #[cfg(feature = "test-hooks")]
    ran: usize,
    #[cfg(feature = "test-hooks")]
    injected: Option<Injected>,
}

/// The dispatch loop of the GPU.
///
/// On a failure (a submission or a wait fails, or a package runs past its
/// timeout) the GPU claims nothing more and gives its unclaimed share back at
/// once; the packages it had in flight are given back only once it can no
/// longer write them (see [`super::settle`]).
pub(crate) fn dispatch_loop(
    role: &GpuRole<'_>,
    plan: &Plan,
    queue: &WorkQueue,
    estimates: &dyn PowerEstimator,
    t0: Instant,
    lane: &Lane,
) {
    if let Some(after) = role.join_after {
        // Polling only where the GPU is not the host's cores.
        let polls = role.unit.device.info().device_type != crate::vk::DeviceType::Cpu;
        super::idle::wait_until(role.bell, queue, t0 + after, polls);
    }
    let ring = role.unit.ring.lock().unwrap_or_else(|p| p.into_inner());
    // A staged run's stagers.
    let stagers = role.staging.and(role.unit.stagers.as_ref());
    let mut l = Loop {
        role,
        plan,
        queue,
        estimates,
        t0,
        state: plan.claimant(role.device, 0),
        inflight: VecDeque::with_capacity(ring.depth()),
        ring,
        transfers: stagers.map(|s| Pipeline::new(s.for_run(role.own_queue, timeout_ns(role)))),
        data: LaneData {
            transfers: Transfers {
                own_queue: stagers.is_some_and(|s| s.on_own_queue(role.own_queue)),
                ..Transfers::default()
            },
            ..LaneData::default()
        },
        last_done: None,
        last_span_end: None,
        upfront_s: upfront_s(role),
        flat_units: flat_units(role),
        uploads: upload_waits_on() && estimates.upload_s_per_unit(role.device).is_some(),
        submitted_any: false,
        stole: false,
        wait_mode: wait::mode_for(
            role.unit.device.info().device_type == crate::vk::DeviceType::Cpu,
        ),
        #[cfg(feature = "test-hooks")]
        ran: 0,
        #[cfg(feature = "test-hooks")]
        injected: role
            .fault
            .map(|spec| Injected::new(spec, &role.unit.device)),
    };
    tracing::trace!(us = t0.elapsed().as_micros() as u64, "a GPU's loop starts");
    if let Err(f) = l.run() {
        l.fail(f);
    }
    let data = l.finish();
    *lane.0.lock().unwrap_or_else(|p| p.into_inner()) = data;
}

/// Staged runs: the seconds the upload of what the GPU reads whole (what
/// its mirrors lack of it) is expected to take at its learned upload
/// bandwidth; its first package waits for it. 0 otherwise.
fn upfront_s(role: &GpuRole<'_>) -> f64 {
    let (Some(staging), Some(stagers)) = (role.staging, role.unit.stagers.as_ref()) else {
        return 0.0;
    };
    let bytes = staging.upfront_bytes() as f64;
    stagers.rates().seconds(crate::sched::transfers::Way::Up, bytes)
}

/// Units of a package that runs one work-group on each of the GPU's
/// shader cores, where its driver tells them (see
/// [`DeviceTime::flat_units`]).
fn flat_units(role: &GpuRole<'_>) -> Option<u64> {
    let cores = role.unit.device.info().shader_cores?;
    Some(cores.one_group_each(role.geometry.groups_per_unit()))
}

/// Where the GPU is cold for the kernel, its expected cold start
/// ([`GpuRole::cold_start_s`]); 0 once warm.
fn cold_start_s(role: &GpuRole<'_>) -> f64 {
    // Relaxed: as in `Loop::measure`.
    match role.warm.load(Ordering::Relaxed) {
        true => 0.0,
        false => role.cold_start_s.max(0.0),
    }
}

/// When a staged GPU's next package can start: after `compute`, the
/// packages in flight, and where its packages upload (`uploads`, see
/// [`PowerEstimator::upload_s_per_unit`]), after `downloads`, those in
/// flight on the transfer queue it shares with them.
///
/// # Why
/// A transfer queue runs its batches in order, so a package's upload
/// waits for the downloads submitted before it. A co-executed cold
/// Jacobi sweep's GPU (each unit 0.5 MB up and 0.5 MB down on an H200)
/// claimed a last package of 6 units, 3.2 MB up, while 9.5 MB of an
/// earlier one's results were still on their way home: it ended 560 us
/// later, 1 ms after the CPU workers, who had been told that package
/// started at once (BENCHMARKS.md, section 0, h200 run 39). A package
/// that uploads nothing (a warm run's, its inputs resident) starts behind
/// the compute in flight only.
fn upload_waits(compute: Duration, downloads: Duration, uploads: bool) -> Duration {
    match uploads {
        true => compute.max(downloads),
        false => compute,
    }
}

/// `s` seconds as a duration: none where `s` is not a positive number,
/// the longest where it is too long for one.
fn duration_s(s: f64) -> Duration {
    match s > 0.0 {
        true => Duration::try_from_secs_f64(s).unwrap_or(Duration::MAX),
        false => Duration::ZERO,
    }
}

/// The throughput of a cold package that ran `units` in `seconds` (see
/// `Loop::cold_power`); `None` where there is none or it is not a
/// positive number (see [`usable_power`]).
fn cold_throughput(cold: Option<(u64, f64)>) -> Option<f64> {
    let (units, s) = cold?;
    usable_power(Some(units as f64 / s))
}

/// The lead a package's upload of `upload_s` seconds adds to the next
/// claim (see `Loop::upload_lead`): all of it, less `once_s`, what the
/// GPU reads whole, where the package carried that (it comes up once).
fn lead_for_upload(upload_s: f64, once_s: Option<f64>) -> Duration {
    duration_s(upload_s - once_s.unwrap_or(0.0))
}

/// What a package is recorded at (see `Loop::net_of_upload`): its host
/// time `busy`, never below its time on the GPU's own clock `gpu_s`, less
/// what its upload is expected to take (`upload_s`, where it uploaded;
/// see [`less_upload`]). Without the GPU's clock, `busy`.
fn package_sample(busy: f64, gpu_s: Option<f64>, upload_s: Option<f64>) -> f64 {
    match (gpu_s, upload_s) {
        (Some(g), Some(up)) => less_upload(busy.max(g), g, up),
        (Some(g), None) => busy.max(g),
        (None, _) => busy,
    }
}

/// A package's host time `busy` less its upload's expected `upload_s`,
/// never below its own time on the GPU (`gpu_s`: an upload that ran beside
/// the previous package's compute took nothing of its time) nor above
/// `busy`.
fn less_upload(busy: f64, gpu_s: f64, upload_s: f64) -> f64 {
    (busy - upload_s).max(gpu_s).min(busy)
}

/// Whether a package under a group on each of the GPU's cores is fitted
/// by its time on the GPU's own clock, the rest of its host time as
/// latency (see `CostFit::record_timed`): yes unless
/// `COEXEC_DEVICE_CLOCK=0` (to measure what the rule changes). Read once
/// per process.
fn device_clock_on() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    crate::switches::on_unless_zero(&ON, "COEXEC_DEVICE_CLOCK")
}

/// The engine's GPU timeout in nanoseconds.
fn timeout_ns(role: &GpuRole<'_>) -> u64 {
    u64::try_from(role.timeout.as_nanos()).unwrap_or(u64::MAX)
}

impl Loop<'_, '_> {
    /// The engine's GPU timeout in nanoseconds.
    fn timeout_ns(&self) -> u64 {
        timeout_ns(self.role)
    }

    /// Runs packages until the queue is done or aborted. `Err` when the GPU
    /// failed; the packages in flight are left in flight.
    fn run(&mut self) -> Result<(), Failure> {
        let thread = self.role.unit.thread;
        let mut idle = self.role.standby.idle(thread);
        loop {
            let prefetch_at = self.fill()?;
            self.reap(false)?;
            let ticket = self.role.bell.ticket();
            let Some(f) = self.inflight.front() else {
                if self.transfers.as_ref().is_some_and(Pipeline::has_downloads) {
                    // Nothing to run: wait for the oldest download.
                    self.reap(true)?;
                    continue;
                }
                if self.queue.is_done() || self.queue.is_aborted() {
                    return Ok(());
                }
                let board = self.role.cpu.as_ref().map(|c| c.board);
                if self.role.standby.may_leave(thread) && nothing_left(self.queue, board) {
                    return Ok(());
                }
                idle.wait(self.role.bell, ticket);
                continue;
            };
            idle = idle.restart();
            // Wait for the oldest package; wake up early when the next one
            // is due to be claimed. A package may run `timeout` from when it
            // could start (its submission, or the end of the one before it).
            let now = Instant::now();
            let started = f.could_start(self.last_done);
            let power = self.estimates.power(self.role.device);
            let timeout = package_timeout(self.role.timeout, f.len(), power);
            let deadline = started + timeout;
            let wake = prefetch_at.map_or(deadline, |t| t.min(deadline)).max(now);
            let ticket = f.ticket;
            let wait_ns = (wake - now).as_nanos().min(u128::from(self.timeout_ns())) as u64;
            let expected = self
                .estimates
                .run_cost(self.role.device)
                .and_then(|c| expected_run_s(c, f.len()))
                .map(|s| started + Duration::from_secs_f64(s));
            let until = now + Duration::from_nanos(wait_ns);
            let waited = wait::wait_ticket(self.ring.completion(), ticket, until, (expected, self.wait_mode));
            #[cfg(feature = "test-hooks")]
            let waited = match &self.injected {
                Some(i) => i.filter_wait(ticket, waited),
                None => waited,
            };
            match waited {
                Ok(true) => {}
                Ok(false) if Instant::now() < deadline => continue,
                Ok(false) => {
                    let why = format!("a package ran past the {timeout:?} timeout");
                    return Err(Failure::new(why));
                }
                Err(e) => return Err(Failure::new(e)),
            }
            let f = self.inflight.pop_front().expect("front exists");
            self.publish_held();
            self.retire(f, Instant::now(), true)?;
        }
    }

    /// Tells the plan the units this GPU holds in flight (see
    /// `Plan::set_held`): the other devices' guards count them.
    fn publish_held(&self) {
        let units = self.inflight.iter().map(InFlight::len).sum();
        self.plan.set_held(self.role.device, units);
    }

    /// Keeps up to `depth` packages in flight, claiming each extra one only
    /// when those in flight are about to end (see [`PREFETCH_LEAD`]).
    /// Returns when the next claim is due, if it is deferred.
    fn fill(&mut self) -> Result<Option<Instant>, Failure> {
        while self.inflight.len() < self.ring.depth() && !self.queue.is_aborted() {
            let mut backlog = Duration::ZERO;
            if let Some(front) = self.inflight.front() {
                let lead = prefetch_lead().saturating_add(self.upload_lead());
                let front_start = front.could_start(self.last_done);
                let power = self
                    .estimates
                    .power(self.role.device)
                    .or_else(|| self.cold_power());
                match expected_end(&self.inflight, front_start, power) {
                    // No measurement yet: no prefetch; the first completion
                    // gives one (on a staged GPU, the cold one).
                    None => return Ok(None),
                    Some(end) if end > Instant::now() + lead => return Ok(Some(end - lead)),
                    Some(end) => backlog = end.saturating_duration_since(Instant::now()),
                }
            }
            // A package claimed ahead starts only when those in flight end:
            // the plan counts that wait in its finish times. (Not the
            // downloads in flight: counted there, a staged GPU declined
            // fresh work while its last package's results came home, and
            // warm runs of a download-bound stencil took 8% longer on the
            // H200: BENCHMARKS.md, run 19. Unless its packages upload:
            // see `upload_waits`. A steal, below, reads the host copies
            // where it writes them, and keeps the compute's backlog.)
            let downloads = match self.uploads {
                true => self.download_backlog(),
                false => Duration::ZERO,
            };
            let claim_backlog = upload_waits(backlog, downloads, self.uploads);
            // The first package also waits for what the GPU reads whole to
            // come up (a sparse matrix's 234 MB: 5.4 ms on the H200).
            // And a cold GPU's first package pays its cold start (see
            // `GpuRole::cold_start_s`).
            let first = self.inflight.is_empty() && self.state.units() == 0;
            let cold = if first { cold_start_s(self.role) } else { 0.0 };
            let upfront = if first { self.upfront_s } else { 0.0 } + cold;
            self.state.set_backlog_s(claim_backlog.as_secs_f64() + upfront);
            self.state.set_cold_start_s(cold);
            // What the CPU workers still have to start of their packages:
            // work they do before they are free for what is left.
            let cpu_unstarted = self.role.cpu.as_ref().map_or(0, |c| c.board.unstarted());
            self.state.set_others_held(cpu_unstarted);
            // Fresh or requeued work first; with nothing in flight, the
            // unstarted end of a CPU worker's package. (Stealing as late as
            // a claim, with packages in flight, was measured on the H200
            // and changed nothing beyond the spread: BENCHMARKS.md, run 15;
            // nor did keeping two steals in flight back to back: run 16.)
            let claimed = self
                .plan
                .claim(self.queue, &mut self.state, self.estimates)
                .map(|(units, _source)| (Parts::One(units), false))
                .or_else(|| {
                    self.inflight
                        .is_empty()
                        .then(|| {
                            // Stolen units' results come home after the
                            // downloads in flight (not where they write
                            // the host copies themselves, see
                            // `GpuRole::steal_set`), and a first
                            // package's after what it waits for.
                            let downloads = match self.role.steal_set {
                                Some(_) => Duration::ZERO,
                                None => self.download_backlog(),
                            };
                            let backlog = backlog
                                .max(downloads)
                                .saturating_add(duration_s(upfront));
                            let first = !self.stole;
                            self.role.steal(self.estimates, (run_us(self.t0), first), backlog)
                        })
                        .filter(|parts| !parts.is_empty())
                        .inspect(|_| self.stole = true)
                        .map(|parts| (Parts::Many(parts), true))
                });
            let Some((parts, stolen)) = claimed else {
                break;
            };
            self.submit(parts, stolen)?;
        }
        Ok(None)
    }

    /// Submits the package of `parts`.
    fn submit(&mut self, parts: Parts, stolen: bool) -> Result<(), Failure> {
        // Staged, with nothing else in flight: the upload's time can teach
        // its bandwidth. Taken before the call: a CPU implementation may
        // copy inside it.
        let alone = self.transfers.as_ref().is_some_and(|t| !t.has_downloads())
            && self.inflight.is_empty();
        let uploading = alone.then(Instant::now);
        let uploaded = match self
            .upload(parts.as_slice())
            .map_err(TransferError::into_message)
        {
            Ok(bytes) => bytes,
            Err(why) => {
                // Nothing of the package was submitted: it goes back as is
                // (uploads submitted for some of its parts only bring
                // bytes).
                self.requeue(&parts);
                return Err(Failure::new(why));
            }
        };
        let geometry = self.role.geometry;
        let (one, many): ([_; 1], Vec<_>);
        let groups = match &parts {
            Parts::One(u) => {
                one = [geometry.dispatch(u)];
                &one[..]
            }
            Parts::Many(v) => {
                many = v.iter().map(|u| geometry.dispatch(u)).collect();
                &many[..]
            }
        };
        let steal_set = self.role.steal_set.filter(|_| stolen);
        let d = Dispatch {
            pipeline: self.role.pipeline,
            set: steal_set.unwrap_or(self.role.set),
            push: self.role.push,
            groups,
        };
        // From before the call: a CPU implementation (lavapipe) may run much
        // of the package inside `vkQueueSubmit`, which is then the
        // package's time too.
        let submitting = Instant::now();
        #[cfg(feature = "test-hooks")]
        self.cold_delay();
        // SAFETY: the slot this ticket reuses is idle: at most `depth - 1`
        // tickets are in flight, all newer than the one `depth` back. The
        // set was made by this pipeline for this run, its buffers are
        // borrowed by the run until every ticket completed (`finish` drains
        // before the loop returns), and the push size was checked against
        // the shader at run start.
        let submitted = unsafe { self.submit_dispatch(d) };
        tracing::trace!(
            units = parts.units(),
            parts = parts.as_slice().len(),
            submit_us = submitting.elapsed().as_secs_f64() * 1e6,
            "package recorded and submitted"
        );
        match submitted {
            Ok(ticket) => {
                self.inflight.push_back(InFlight {
                    ticket,
                    parts,
                    stolen,
                    to_host: steal_set.is_some(),
                    submitted: submitting,
                    uploaded,
                    carries_upfront: !std::mem::replace(&mut self.submitted_any, true),
                    upload_alone_since: uploading,
                });
                self.publish_held();
                Ok(())
            }
            // A submission that fails with anything but DEVICE_LOST leaves
            // every resource it names untouched (Vulkan spec,
            // vkQueueSubmit): the package never ran and can go back now.
            Err(e) if !e.is_device_lost() => {
                self.requeue(&parts);
                Err(Failure::new(e))
            }
            Err(e) => Err(Failure {
                why: e.to_string(),
                unsent: Some(parts),
                unsent_to_host: steal_set.is_some(),
            }),
        }
    }

    /// Gives the units of `parts`, which never ran, back to the queue.
    fn requeue(&self, parts: &Parts) {
        for units in parts.as_slice() {
            self.queue.requeue(units.clone());
        }
    }

    /// How much earlier than [`PREFETCH_LEAD`] a staged GPU claims its
    /// next package: what uploading the inputs of the package it submitted
    /// last took at its upload bandwidth (HGuided's packages shrink, so
    /// that bounds the next one's), less what the GPU reads whole where
    /// that package carried it (it comes up once). 0 where it uploaded
    /// nothing (a zero-copy GPU, or mirrors that hold what it reads).
    ///
    /// # Why
    /// A staged package's compute waits for its upload. Claimed half a
    /// millisecond before the packages in flight end, a package whose
    /// upload takes a millisecond left the GPU idle for the rest: on the
    /// H200 a co-executed cold Collatz 2^23 ran its packages one at a
    /// time (uploads of 17 and 43 MB, each package's host time about twice
    /// its time on the GPU), 4.6 ms against the GPU alone's 4.0
    /// (BENCHMARKS.md, section 0, run 34).
    fn upload_lead(&self) -> Duration {
        if !upload_lead_on() {
            return Duration::ZERO;
        }
        let Some(last) = self.inflight.back() else {
            return Duration::ZERO;
        };
        let once = last.carries_upfront.then_some(self.upfront_s);
        lead_for_upload(self.upload_seconds(last.uploaded), once)
    }

    /// A staged GPU not yet measured: the throughput of its cold first
    /// package (units over its host time less its upload), a bound below
    /// the warm one, for timing its next claim only (see
    /// [`upload_lead`](Self::upload_lead)); `None` on a zero-copy GPU
    /// (whose next package waits for no upload) or before the cold
    /// package is seen complete.
    ///
    /// # Why
    /// The cold package publishes no throughput (see
    /// `CostFit::record_cold`), so the package after it was claimed only
    /// once it had run: on the H200 a co-executed cold Collatz 2^23's
    /// second package (8448 units, 17 MB up) ran alone, 938 us against
    /// its 529 on the GPU, and the third's 43 MB went up only after it.
    fn cold_power(&self) -> Option<f64> {
        match upload_lead_on() && self.transfers.is_some() {
            true => cold_throughput(self.data.cold),
            false => None,
        }
    }

    /// Staged runs: how long until the downloads in flight are expected
    /// home (see [`Pipeline::download_backlog`]).
    fn download_backlog(&self) -> Duration {
        self.transfers
            .as_ref()
            .map_or(Duration::ZERO, |t| t.download_backlog(Instant::now()))
    }

    /// Test hook: before the cold package (the GPU's first of the kernel,
    /// submitted alone), waits the delay asked for.
    #[cfg(feature = "test-hooks")]
    fn cold_delay(&self) {
        // Relaxed: as in `measure`.
        let cold = !self.role.warm.load(Ordering::Relaxed)
            && self.data.records.is_empty()
            && self.inflight.is_empty();
        if let Some(d) = self.role.cold_delay.filter(|_| cold) {
            std::thread::sleep(d);
        }
    }

    /// Submits `d` (the injected way where the test hooks say so).
    ///
    /// # Safety
    /// As for [`DispatchRing::submit`].
    unsafe fn submit_dispatch(&mut self, d: Dispatch<'_>) -> Result<u64, VkError> {
        let wait = self.transfers.as_ref().and_then(Pipeline::dispatch_wait);
        #[cfg(feature = "test-hooks")]
        if let Some(inj) = self
            .injected
            .as_mut()
            .filter(|i| i.due(self.ran))
        {
            // The injected submissions wait for no semaphore: the upload
            // is waited for on the host first.
            if let Some((c, v)) = wait {
                c.wait(v, u64::MAX)?;
            }
            // SAFETY: as for `submit` (function contract).
            return unsafe { inj.submit(&mut self.ring, d) };
        }
        // SAFETY: function contract; `wait` is the stager's completion (a
        // timeline of this device: separate transfers need timelines),
        // which the engine keeps as long as the ring.
        unsafe { self.ring.submit_after(d, wait) }
    }

    /// Staged runs, before the package of `parts`: submits the upload of
    /// what it reads that the mirrors lack (the dispatch submitted next
    /// reads it). Returns the bytes.
    fn upload(&mut self, parts: &[Range<u64>]) -> Result<u64, TransferError> {
        let timeout_ns = self.timeout_ns();
        let (Some(t), Some(staging)) = (self.transfers.as_mut(), self.role.staging) else {
            return Ok(0);
        };
        let mut bytes = 0;
        for units in parts {
            let p = self.role.geometry.package(units.clone());
            let b = t.upload(staging, &p, timeout_ns)?;
            tracing::trace!(?units, rows = ?p.rows, bytes = b, "part uploaded");
            bytes += b;
        }
        self.data.transfers.upload_bytes += bytes;
        tracing::trace!(bytes, "uploads submitted");
        Ok(bytes)
    }

    /// Staged runs: hands the completed transfers over (with `wait`, after
    /// waiting up to the GPU's timeout for the oldest download, as the
    /// loop waits, see [`Pipeline::reap`]): each downloaded package counts
    /// done.
    fn reap(&mut self, wait: bool) -> Result<(), Failure> {
        let wait = wait.then(|| (self.timeout_ns(), self.wait_mode));
        let (Some(t), Some(staging)) = (self.transfers.as_mut(), self.role.staging) else {
            return Ok(());
        };
        let done = t
            .reap(staging, wait)
            .map_err(|e| Failure::new(e.into_message()))?;
        for d in done {
            self.downloaded(d);
        }
        Ok(())
    }

    /// A package whose download completed: it counts done.
    fn downloaded(&mut self, d: Download<Ran>) {
        if let Some(staging) = self.role.staging {
            staging.downloaded(&d.package);
        }
        self.data.transfers.download_bytes += d.bytes;
        let (f, start, done) = d.payload;
        self.commit(f, start, done);
    }

    /// Records the package `f`, seen complete at `done`, and submits the
    /// download of what it wrote (staged runs): its units complete in the
    /// queue once that download completed ([`Loop::reap`]), or now where
    /// there is none. `measured`: its time measures the device (not so for
    /// packages settled after a failure). A download that could not be
    /// submitted leaves the package's outcome unknown ([`Loop::unknown`])
    /// and fails the GPU.
    fn retire(&mut self, f: InFlight, done: Instant, measured: bool) -> Result<(), Failure> {
        let start = self.measure(&f, done, measured);
        #[cfg(feature = "test-hooks")]
        {
            self.ran += 1;
        }
        let timeout_ns = self.timeout_ns();
        let alone = self.inflight.is_empty();
        let (Some(t), Some(staging)) = (self.transfers.as_mut(), self.role.staging) else {
            self.commit(f, start, done);
            return Ok(());
        };
        if f.to_host {
            // It wrote the host copies itself: nothing to download, and
            // its bytes stay invalid in the mirrors (see `finish_all`).
            self.commit(f, start, done);
            return Ok(());
        }
        let geometry = self.role.geometry;
        let package = f
            .parts
            .as_slice()
            .iter()
            .flat_map(|u| geometry.pieces(u.clone()))
            .collect();
        let after = (self.ring.completion(), f.ticket);
        match t.download(staging, package, after, ((f, start, done), alone), timeout_ns) {
            Ok(Some((f, start, done))) => self.commit(f, start, done),
            Ok(None) => {}
            Err((TransferError::TimedOut(why), (f, ..))) => {
                // Nothing was submitted: the host copies are as the
                // package left them.
                let untouched = self.host_untouched();
                self.unknown(f.parts, untouched);
                return Err(Failure::new(why));
            }
            Err((TransferError::Failed(why), (f, ..))) => {
                // The download may have written part of the host copies.
                self.unknown(f.parts, false);
                return Err(Failure::new(why));
            }
        }
        Ok(())
    }

    /// After a failure, once nothing the GPU had in flight can still run:
    /// each package whose download was in flight counts done where that
    /// download completed, else its outcome is unknown.
    fn settle_transfers(&mut self) {
        let timeout_ns = self.timeout_ns();
        let (Some(t), Some(staging)) = (self.transfers.as_mut(), self.role.staging) else {
            return;
        };
        let (done, left) = t.drain(staging, timeout_ns);
        for d in done {
            self.downloaded(d);
        }
        for d in left {
            self.unknown(d.payload.0.parts, false);
        }
    }

    /// Measures the package `f`, seen complete at `done`: its time (into
    /// the estimator where `measured`), its gap; when it could start.
    fn measure(&mut self, f: &InFlight, done: Instant, measured: bool) -> Instant {
        let start = f.could_start(self.last_done);
        self.last_done = Some(done);
        let span = self.ring.span(f.ticket).ok().flatten();
        // The package's time on the GPU's own clock.
        let gpu_ns = span.map(|s| s.end_ns.saturating_sub(s.start_ns));
        tracing::trace!(
            host_us = (done - start).as_secs_f64() * 1e6,
            gpu_us = gpu_ns.map(|ns| ns as f64 * 1e-3),
            "package seen complete"
        );
        if let (Some(span), Some(ns)) = (span, gpu_ns) {
            if let Some(prev_end) = self.last_span_end {
                self.data
                    .gaps_ns
                    .push(span.start_ns.saturating_sub(prev_end));
            }
            self.last_span_end = Some(span.end_ns);
            self.data.gpu_ns = Some(self.data.gpu_ns.unwrap_or(0) + ns);
        }
        let n = f.len();
        let busy = (done - start).as_secs_f64();
        if let Some(ns) = gpu_ns {
            self.learn_upload(f, done, ns);
        }
        // The run's first package, where it brought up the rest of an input
        // read again unchanged, waited for a one-time transfer: not a
        // measure of the device.
        let one_time = !self.data.one_time
            && self
                .role
                .staging
                .is_some_and(|s| s.completes_residency());
        self.data.one_time |= one_time;
        if measured && !one_time {
            // The first package of a kernel on this GPU pays one-time costs
            // (the pipeline's first use, first touches of its buffers): up
            // to tens of ms on a discrete GPU, thousands of times a warm
            // probe. It is recorded cold: the cost model keeps it apart
            // and drops it once warm packages arrive (see
            // `CostFit::record_cold`). Relaxed: a flag of its own, read and
            // set by one dispatch loop at a time (runs of an engine are
            // serialized), guarding no other data.
            if self.role.warm.swap(true, Ordering::Relaxed) {
                let sample = self.net_of_upload(f, busy, gpu_ns);
                let timed = gpu_ns.filter(|_| device_clock_on()).map(|ns| DeviceTime {
                    seconds: ns as f64 * 1e-9,
                    flat_units: self.flat_units,
                });
                self.estimates
                    .record_timed(self.role.device, n, sample, timed);
            } else {
                self.estimates.record_cold(self.role.device, n, busy, 1.0);
                self.data.cold = Some((n, (busy - self.upload_s(f)).max(0.0)));
                if let Some(ns) = gpu_ns {
                    let device_s = ns as f64 * 1e-9;
                    self.estimates
                        .record_cold_device(self.role.device, n, device_s);
                }
            }
        }
        self.data.busy_s += busy;
        start
    }

    /// The time of package `f` (`busy` on the host, `gpu_ns` on the GPU's
    /// own clock) less what its own upload is expected to take (see
    /// [`less_upload`]); `busy` where it uploaded nothing or the GPU's clock
    /// is not read. Never less than its time on the GPU's own clock.
    ///
    /// # Why the GPU's clock bounds it
    /// A package's host time runs from when it could start (its
    /// submission, or the completion the loop saw before it) to when the
    /// loop sees it complete. Where the loop sees two packages complete at
    /// one look, the second's host time is the few microseconds between
    /// the two observations: on lavapipe a 13-unit package measured 14 us
    /// that ran 40 us on the device. The fit clamps its fixed cost to its
    /// quickest package, and such a sample pinned lavapipe's at 1.5 us
    /// (it is about 45): every package then looked like work, and a
    /// regular kernel's packages fell 2-7 times off the fit.
    ///
    /// # Why
    /// A run's transfers are costed apart, by what the mirrors lack (see
    /// `engine::run::transfer_cost`); a package's time that holds its upload
    /// counted it twice, and a GPU measured only on a kernel's first run,
    /// whose every package brought up its own inputs, kept a rate bound by
    /// its uploads: a histogram's H200 rated 15 times slower than 30 CPU
    /// workers (it runs 7 times faster), spmv's 40 times; declined by the
    /// claim guard in the runs that followed, it was never measured again,
    /// and its time alone, predicted from that rate, was never tried
    /// (BENCHMARKS.md, section 0e, run 10).
    fn net_of_upload(&self, f: &InFlight, busy: f64, gpu_ns: Option<u64>) -> f64 {
        let upload_s = (f.uploaded > 0).then(|| self.upload_seconds(f.uploaded));
        package_sample(busy, gpu_ns.map(|ns| ns as f64 * 1e-9), upload_s)
    }

    /// What uploading `bytes` takes at the GPU's upload bandwidth (0 where
    /// the GPU stages nothing).
    fn upload_seconds(&self, bytes: u64) -> f64 {
        self.role
            .unit
            .stagers
            .as_ref()
            .map_or(0.0, |s| s.rates().seconds(Way::Up, bytes as f64))
    }

    /// What the upload before package `f` is expected to take, where it
    /// was submitted with nothing else in flight (as a kernel's first
    /// package is), at the GPU's upload bandwidth; 0 otherwise.
    fn upload_s(&self, f: &InFlight) -> f64 {
        match f.upload_alone_since {
            Some(_) => self.upload_seconds(f.uploaded),
            None => 0.0,
        }
    }

    /// Teaches the GPU's upload bandwidth from the package `f`, seen
    /// complete at `done` after `gpu_ns` of its own, where it uploaded
    /// [`UPLOAD_LEARN_BYTES`] or more with nothing else in flight.
    fn learn_upload(&self, f: &InFlight, done: Instant, gpu_ns: u64) {
        let (Some(began), Some(s)) = (f.upload_alone_since, self.role.unit.stagers.as_ref()) else {
            return;
        };
        let bytes = f.uploaded;
        if bytes < UPLOAD_LEARN_BYTES {
            return;
        }
        let up_s = (done - began).as_secs_f64() - gpu_ns as f64 * 1e-9;
        // Relaxed: a flag read and set by this loop alone (see `measure`).
        // A kernel's first package on the GPU also waited for one-time
        // costs: its time bounds the upload's.
        match self.role.warm.load(Ordering::Relaxed) {
            true => s.rates().record(Way::Up, bytes, up_s),
            false => s.rates().record_at_least(Way::Up, bytes, up_s),
        }
    }

    /// The package `f` (which could start at `start` and was seen complete
    /// at `done`) is done: its record, and its units complete in the queue.
    /// A package of several parts has a record per part, with the same
    /// times.
    fn commit(&mut self, f: InFlight, start: Instant, done: Instant) {
        let n = f.len();
        for units in f.parts.as_slice() {
            let pkg = self.role.geometry.package(units.clone());
            let work_items = self.role.geometry.items_in(units.clone());
            self.data.items += work_items;
            self.data.records.push(PackageRecord {
                device: self.role.device,
                lane: 0,
                // The space's units and items.
                units: pkg.units,
                items: pkg.items,
                work_items,
                start_s: (start - self.t0).as_secs_f64(),
                end_s: (done - self.t0).as_secs_f64(),
                stolen: f.stolen,
            });
        }
        self.completed(n);
    }

    /// `n` more units are done: the bell rings if that ends the run.
    fn completed(&mut self, n: u64) {
        if self.queue.complete(n) {
            self.role.bell.ring();
        }
    }

    /// After a failure: gives the unclaimed share back at once (the GPU
    /// never had it), waits until the GPU can no longer write any package
    /// it had in flight, and then counts each as done (it ran to its end),
    /// or, where its outcome is unknown, gives it back or declares its items
    /// lost ([`Loop::unknown`]). The device is left out of later runs.
    fn fail(&mut self, f: Failure) {
        // What it held goes back to the queue: the others' guards no
        // longer wait for it.
        self.plan.set_held(self.role.device, 0);
        self.plan
            .forfeit(self.queue, &mut self.state, self.estimates);
        // Its share is the others' now: idle claimants wake to take it.
        self.role.bell.ring();
        let device = &self.role.unit.device;
        device.mark_lost();
        tracing::error!(
            "GPU {} failed and leaves the run: {}",
            device.info().name,
            f.why
        );
        let inflight = std::mem::take(&mut self.inflight);
        let tickets: Vec<u64> = inflight.iter().map(|p| p.ticket).collect();
        let outcomes = self.settle(&tickets);
        if f.unsent.is_some() {
            // The device is lost: this returns at once, and afterwards
            // nothing of the unsent package can run.
            let _ = device.wait_idle();
        }
        let settled = Instant::now();
        self.settle_transfers();
        for (p, outcome) in inflight.into_iter().zip(outcomes) {
            match outcome {
                // A download that cannot be submitted gives the package
                // back; the others are waited for below (nothing else can
                // run now).
                Outcome::Ran => {
                    let _ = self.retire(p, settled, false);
                }
                Outcome::Unknown => {
                    let untouched = !p.to_host && self.host_untouched();
                    self.unknown(p.parts, untouched);
                }
            }
        }
        self.settle_transfers();
        if let Some(parts) = f.unsent {
            let untouched = !f.unsent_to_host && self.host_untouched();
            self.unknown(parts, untouched);
        }
        self.data.failure = Some(f.why);
    }

    /// A staged run whose outputs all have mirrors: the GPU's packages
    /// write the host copies only through their downloads.
    fn host_untouched(&self) -> bool {
        self.role.staging.is_some_and(Staging::outputs_mirrored)
    }

    /// Waits until no ticket of `tickets` can still run; the outcome of each.
    fn settle(&self, tickets: &[u64]) -> Vec<Outcome> {
        let obs = RingObserver {
            ring: &self.ring,
            device: &self.role.unit.device,
        };
        #[cfg(feature = "test-hooks")]
        if let Some(inj) = &self.injected {
            return inj.settle(&obs, tickets, self.role.timeout);
        }
        settle(&obs, tickets, self.role.timeout)
    }

    /// A package whose outcome is unknown (the device was lost while it was
    /// in flight): it runs again elsewhere where that cannot change the
    /// result (every output is write-only); otherwise its items are lost,
    /// and counted done so that the other devices can finish the rest.
    ///
    /// `host_untouched`: the package cannot have written the host copies
    /// (a staged run whose outputs all have mirrors, and no download of it
    /// began): it then runs again elsewhere whatever the kernel, since the
    /// other devices read and write those host copies only.
    fn unknown(&mut self, parts: Parts, host_untouched: bool) {
        if host_untouched || self.role.pipeline.interface().rerun_safe() {
            self.requeue(&parts);
            return;
        }
        let n = parts.units();
        for units in parts.as_slice() {
            for p in self.role.geometry.pieces(units.clone()) {
                self.data.lost.extend(p.item_ranges());
            }
        }
        self.data.lost_units += n;
        self.completed(n);
    }

    /// Leaves nothing running (the run's buffers are released when it
    /// returns) and hands the results over.
    fn finish(mut self) -> LaneData {
        let device = &self.role.unit.device;
        #[cfg(feature = "test-hooks")]
        if let Some(inj) = &self.injected {
            inj.release();
        }
        if self.ring.last_ticket() > 0 && !matches!(self.ring.drain(self.timeout_ns()), Ok(true)) {
            let _ = device.wait_idle();
        }
        // Later transfers (the next run's uploads, lazy downloads) follow
        // this run's dispatches.
        let (last, timeout_ns) = (self.ring.last_ticket(), self.timeout_ns());
        if let Some(t) = self.transfers.as_mut() {
            if !t.close(self.ring.completion(), last, timeout_ns) {
                let _ = device.wait_idle();
            }
        }
        // A transfer batch that timed out may still run: the run's buffers
        // must outlive it too. Uploads that completed make their bytes
        // valid in the mirrors.
        if let Some(t) = &self.transfers {
            if !t.idle(self.timeout_ns(), self.wait_mode) {
                let _ = device.wait_idle();
            }
        }
        self.settle_transfers();
        if let Some(t) = &mut self.transfers {
            self.data.transfers.seconds += t.seconds;
            let (device, t0) = (self.role.device, self.t0);
            let at = |i: Instant| i.saturating_duration_since(t0).as_secs_f64();
            self.data.spans = std::mem::take(&mut t.spans)
                .into_iter()
                .map(|(upload, bytes, start, end)| TransferSpan {
                    device,
                    upload,
                    bytes,
                    start_s: at(start),
                    end_s: at(end),
                })
                .collect();
        }
        #[cfg(feature = "test-hooks")]
        if let Some(inj) = self.injected {
            // SAFETY: released above, and the queue drained.
            unsafe { inj.destroy() };
        }
        let mut data = self.data;
        data.declined_s = self.state.declined_s();
        data
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A staged GPU's cold package times its next claim until the GPU is
    /// measured: its units over its time, where it ran and took time.
    #[test]
    fn a_cold_package_times_the_next_claim() {
        assert_eq!(cold_throughput(Some((1000, 1e-3))), Some(1e6));
        assert_eq!(cold_throughput(None), None);
        assert_eq!(cold_throughput(Some((1000, 0.0))), None);
        assert_eq!(cold_throughput(Some((1000, f64::NAN))), None);
        assert_eq!(cold_throughput(Some((0, 1e-3))), None);
        // With it, a package of 8448 units in flight since `t` is
        // expected to end 8448 / 7 us later (the cold rate, below the
        // warm one: the claim comes late rather than early).
        let t = Instant::now();
        let inflight = VecDeque::from([InFlight {
            ticket: 0,
            parts: Parts::One(0..8448),
            stolen: false,
            to_host: false,
            submitted: t,
            uploaded: 17 << 20,
            carries_upfront: false,
            upload_alone_since: None,
        }]);
        let end = expected_end(&inflight, t, cold_throughput(Some((7, 1e-6)))).unwrap();
        let us = (end - t).as_secs_f64() * 1e6;
        assert!((us - 8448.0 / 7.0).abs() < 0.01, "{us}");
        assert_eq!(expected_end(&inflight, t, cold_throughput(None)), None);
    }

    /// A package that uploads starts after the downloads ahead of it on
    /// the transfer queue as well as the compute in flight; one that
    /// uploads nothing, after the compute only.
    #[test]
    fn an_upload_waits_for_the_downloads_ahead_of_it() {
        let us = Duration::from_micros;
        assert_eq!(upload_waits(us(100), us(400), true), us(400));
        assert_eq!(upload_waits(us(500), us(400), true), us(500));
        assert_eq!(upload_waits(us(100), us(400), false), us(100));
        assert_eq!(upload_waits(Duration::ZERO, Duration::ZERO, true), Duration::ZERO);
    }

    /// The next claim comes earlier by the last package's upload, not by
    /// what it brought up of what the GPU reads whole.
    #[test]
    fn the_lead_counts_a_package_s_own_upload() {
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        assert!((ms(lead_for_upload(1e-3, None)) - 1.0).abs() < 1e-9);
        assert!((ms(lead_for_upload(6e-3, Some(5e-3))) - 1.0).abs() < 1e-9);
        assert_eq!(lead_for_upload(4e-3, Some(5e-3)), Duration::ZERO);
        assert_eq!(lead_for_upload(0.0, None), Duration::ZERO);
        assert_eq!(lead_for_upload(f64::NAN, None), Duration::ZERO);
    }

    #[test]
    fn a_package_is_expected_after_its_fixed_cost_and_its_units() {
        let c = |overhead_s, rate| crate::sched::Cost { overhead_s, rate };
        // 1 ms of fixed cost (a sparse matrix's densest rows) and 1e9
        // units/s: 1000 units end 1.001 ms in, not 1 us.
        let s = expected_run_s(c(1e-3, 1e9), 1000).unwrap();
        assert!((s - 1.001e-3).abs() < 1e-12, "{s}");
        assert_eq!(expected_run_s(c(0.0, 1e6), 2_000_000), Some(2.0));
        assert_eq!(expected_run_s(c(0.0, 1.0), u64::MAX), Some(3600.0));
        assert_eq!(expected_run_s(c(1e-3, 0.0), 10), None);
        assert_eq!(expected_run_s(c(1e-3, f64::NAN), 10), None);
    }

    /// A package's sample is its host time less its own upload, within
    /// its GPU time and its host time.
    #[test]
    fn a_packages_upload_is_not_its_compute() {
        // 1.2 ms on the host, 0.1 ms of it on the GPU, 1 ms of upload.
        let s = less_upload(1.2e-3, 0.1e-3, 1.0e-3);
        assert!((s - 0.2e-3).abs() < 1e-12, "{s}");
        // An upload that ran beside the previous package: the GPU's time.
        assert_eq!(less_upload(0.3e-3, 0.25e-3, 1.0e-3), 0.25e-3);
        // Nothing uploaded, or a clock past the host's: the host's time.
        assert_eq!(less_upload(0.3e-3, 0.25e-3, 0.0), 0.3e-3);
        assert_eq!(less_upload(0.3e-3, 0.5e-3, 0.1e-3), 0.3e-3);
    }

    /// A package the loop saw complete right after the one before it
    /// (14 us on the host, 40 us on the device) is recorded at its device
    /// time, uploading or not; without the device's clock, at the host's.
    #[test]
    fn a_package_is_recorded_at_no_less_than_its_device_time() {
        assert_eq!(package_sample(14e-6, Some(40e-6), None), 40e-6);
        assert_eq!(package_sample(14e-6, Some(40e-6), Some(5e-6)), 40e-6);
        assert_eq!(package_sample(14e-6, None, Some(5e-6)), 14e-6);
        // A host time past the device's, nothing uploaded: the host's.
        assert_eq!(package_sample(90e-6, Some(40e-6), None), 90e-6);
        // Uploading: as `less_upload`.
        let s = package_sample(1.2e-3, Some(0.1e-3), Some(1.0e-3));
        assert!((s - 0.2e-3).abs() < 1e-12, "{s}");
    }

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
