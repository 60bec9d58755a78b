//! The benchmark suite: every kernel alone on the CPU, alone on the GPU and
//! co-executed with each scheduler, with the papers' yardsticks (speedup,
//! maximum achievable speedup, heterogeneous efficiency, balancing
//! efficiency, energy and EDP where counters exist), a JSON record, a table
//! and SVG pictures.
//!
//! Yardsticks (see the README of the seed papers):
//! * `T_i`: device `i` alone on the whole problem. To keep `S_max` honest it
//!   is the **best** solo time over [`SOLO_SCHEDULERS`] (one package,
//!   8, 64 and 200 packages, HGuided; [`QUICK_SOLO_SCHEDULERS`] with
//!   `quick`) (on Mesa lavapipe
//!   many small dispatches beat one big one, so a one-package solo time
//!   would flatter co-execution).
//! * `S = T_fastest / T`, `S_max = T_fastest * sum_i 1/T_i`, `HE = S / S_max`,
//!   balance = earliest device finish / latest ([`Report::balance`]).
//! * The co-running ceiling ([`Corun`]): each device's throughput while the
//!   other runs (its work-items / its busy time) relative to its solo
//!   throughput (all work-items / `T_i`), and `S_ceiling = T_fastest *
//!   sum_i corun_rate_i / items`, the speedup had both devices run all along
//!   at their co-running rates. `S_ceiling` well below `S_max` with both
//!   relative rates below 1 is a pair contending for a shared resource
//!   (DRAM); `S` well below `S_ceiling` is a scheduling loss (idle time,
//!   imbalance, overhead).
//! * Energy: joules per run from the hardware counters of
//!   [`energy::EnergyMeter`], measured around each timed repetition; EDP
//!   relative to the fastest single device's run.
//!
//! Each configuration runs once to warm up, then `reps` times; figures are
//! those of the median-time repetition, and the output of the last one is
//! checked against the kernel's CPU reference.

pub mod energy;
mod error;
pub mod plots;

pub use error::SuiteError;

use crate::workloads::{self, Size, Workload};
use crate::{DeviceKind, Devices, Engine, Report, Scheduler};
use energy::EnergyMeter;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde::Serialize;
use serde_json::Value;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// The co-execution schedulers of the suite: `(key, label)`, in the papers'
/// figure order. `static` and `hguided:hints` get the solo powers
/// `P_i = 1 / T_i` as hints; `hguided:nohints` measures powers itself.
pub const SCHEDULERS: [(&str, &str); 5] = [
    ("dynamic:5", "Dynamic 5"),
    ("dynamic:200", "Dynamic 200"),
    ("static", "Static"),
    ("hguided:hints", "HGuided (hints)"),
    ("hguided:nohints", "HGuided (no hints)"),
];

/// The schedulers a device is timed with alone; its solo time `T_i` is the
/// best of them (one package, several package counts, HGuided).
pub const SOLO_SCHEDULERS: [&str; 5] = [
    "static",
    "dynamic:8",
    "dynamic:64",
    "dynamic:200",
    "hguided",
];

/// The solo schedulers of a quick suite: a subset of [`SOLO_SCHEDULERS`],
/// as many as the seed suite always had, so that the smoke test stays short.
pub const QUICK_SOLO_SCHEDULERS: [&str; 3] = ["static", "dynamic:64", "hguided"];

/// A set of kernels the suite runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum KernelSet {
    /// The seed kernels ([`workloads::NAMES`] but `saxpy`).
    #[default]
    Seed,
    /// The kernels where the devices are comparable
    /// ([`workloads::COMPARABLE`]).
    Comparable,
}

impl std::str::FromStr for KernelSet {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim() {
            "seed" => Ok(KernelSet::Seed),
            "comparable" => Ok(KernelSet::Comparable),
            other => Err(format!(
                "unknown kernel set `{other}` (one of seed, comparable)"
            )),
        }
    }
}

impl KernelSet {
    /// The set's name, as [`FromStr`](std::str::FromStr) reads it.
    pub fn name(self) -> &'static str {
        match self {
            KernelSet::Seed => "seed",
            KernelSet::Comparable => "comparable",
        }
    }

    /// The set's kernels.
    pub fn kernels(self) -> Vec<String> {
        match self {
            KernelSet::Seed => default_kernels(),
            KernelSet::Comparable => workloads::COMPARABLE
                .iter()
                .map(|n| n.to_string())
                .collect(),
        }
    }
}

/// The kernels the suite runs by default (the seed set): every seed
/// workload but `saxpy` (a memory-bound smoke test, still available by
/// name).
pub fn default_kernels() -> Vec<String> {
    workloads::NAMES
        .iter()
        .filter(|n| **n != "saxpy")
        .map(|n| n.to_string())
        .collect()
}

/// Seconds of one run (one configuration at one size) of a scaling sweep
/// above which the sweep stops growing.
pub const SCALING_BUDGET_S: f64 = 2.0;

/// Where energy counters exist, each configuration's energy is read over at
/// least this many seconds of repetitions (a quarter with `quick`).
pub const ENERGY_WINDOW_S: f64 = 1.0;

/// How the suite runs.
#[derive(Debug, Clone)]
pub struct Options {
    /// Small sizes ([`workloads::quick_size`]) and fewer repetitions.
    pub quick: bool,
    /// The kernel set run when `kernels` is `None`.
    pub set: KernelSet,
    /// Kernels to run, of any set (`None`: those of `set`).
    pub kernels: Option<Vec<String>>,
    /// Timed repetitions per configuration (`None`: 5, or 2 with `quick`).
    pub reps: Option<usize>,
    /// Where to write the pictures and traces (`None`: none).
    pub out: Option<PathBuf>,
    /// Where to write the JSON record: after every kernel (`complete:
    /// false`) and at the end (`None`: nowhere).
    pub json: Option<PathBuf>,
    /// Time against problem size, per kernel (needs `out` for pictures).
    pub scaling: bool,
    /// Show a progress bar on stderr (only when it is a terminal).
    pub progress: bool,
    /// Read energy counters.
    pub energy: bool,
    /// The command line, recorded in the JSON.
    pub command: String,
    /// Solo schedulers for the CPU baseline (`None`: all of
    /// [`Options::solo_schedulers`]). CPU workers have no dispatch-size effect, so one
    /// scheduler suffices on machines where the CPU baselines dominate the
    /// suite's time (an H200 against 16 cores).
    pub cpu_solo: Option<Vec<String>>,
    /// Co-executed configurations to run, keys of [`SCHEDULERS`] (`None`:
    /// all). On a machine where one device is far slower, `dynamic:5` hands
    /// a fifth of the work to one CPU worker and can take minutes.
    pub schedulers: Option<Vec<String>>,
    /// Problem sizes per kernel, overriding the default (or quick) size:
    /// machines far smaller than the one the defaults were chosen for (a GPU
    /// and 16 cores) run the suite at sizes that suit them.
    pub sizes: BTreeMap<String, Size>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            quick: false,
            set: KernelSet::Seed,
            kernels: None,
            reps: None,
            out: None,
            json: None,
            cpu_solo: None,
            schedulers: None,
            scaling: true,
            progress: true,
            energy: true,
            command: String::new(),
            sizes: BTreeMap::new(),
        }
    }
}

impl Options {
    /// Seconds over which energy is read per configuration, at least (see
    /// [`ENERGY_WINDOW_S`]).
    pub fn energy_window_s(&self) -> f64 {
        if self.quick {
            ENERGY_WINDOW_S / 4.0
        } else {
            ENERGY_WINDOW_S
        }
    }

    /// The solo schedulers: [`QUICK_SOLO_SCHEDULERS`] with `quick`, else
    /// [`SOLO_SCHEDULERS`].
    pub fn solo_schedulers(&self) -> &'static [&'static str] {
        if self.quick {
            &QUICK_SOLO_SCHEDULERS
        } else {
            &SOLO_SCHEDULERS
        }
    }

    /// Timed repetitions.
    pub fn reps(&self) -> usize {
        self.reps.unwrap_or(if self.quick { 2 } else { 5 }).max(1)
    }
}

/// The machine the suite ran on.
#[derive(Debug, Clone, Serialize)]
pub struct Machine {
    /// CPU model name.
    pub cpu_model: String,
    /// CPU worker threads of the engine.
    pub cores_used: usize,
    /// The engine's Vulkan device(s).
    pub gpu_names: Vec<String>,
    /// `discrete`, `integrated`, `cpu` (lavapipe), ...
    pub vulkan_device_type: String,
    /// UTC date and time of the start, ISO 8601.
    pub date: String,
    /// The command line.
    pub command: String,
    /// Energy counters summed for `energy_j` (empty: energy not available).
    pub energy_sources: Vec<String>,
    /// Why some or all counters are missing.
    pub energy_notes: Vec<String>,
}

/// One device alone with one scheduler.
#[derive(Debug, Clone, Serialize)]
pub struct SoloRun {
    /// `cpu` or `gpu`.
    pub device: String,
    /// One of [`SOLO_SCHEDULERS`].
    pub scheduler: String,
    /// Median seconds (`None`: the run failed).
    pub time_s: Option<f64>,
    /// Packages of the median repetition.
    pub packages: Option<usize>,
    /// Output matched the reference.
    pub verified: bool,
    /// Joules per run (`None`: not available).
    pub energy_j: Option<f64>,
    /// Why the run failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// One co-executed run.
#[derive(Debug, Clone, Serialize)]
pub struct CoRun {
    /// One of the keys of [`SCHEDULERS`].
    pub scheduler: String,
    /// Median seconds (`None`: the run failed).
    pub time_s: Option<f64>,
    /// `T_fastest / T`.
    pub speedup: Option<f64>,
    /// `T_fastest * sum 1/T_i`.
    pub s_max: Option<f64>,
    /// `speedup / s_max`.
    pub he: Option<f64>,
    /// Earliest device finish / latest.
    pub balance: Option<f64>,
    /// Packages of the median repetition.
    pub packages: Option<usize>,
    /// Work-items the CPU executed (share of the whole).
    pub cpu_share: Option<f64>,
    /// Output matched the reference.
    pub verified: bool,
    /// Joules per run (`None`: not available).
    pub energy_j: Option<f64>,
    /// `energy * time` over the fastest single device's.
    pub edp_rel: Option<f64>,
    /// The co-running ceiling of the median repetition (`None`: the run
    /// failed).
    pub corun: Option<Corun>,
    /// Why the run failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// Each device's throughput while co-running and the speedup it allows.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Corun {
    /// The CPU's work-items per second while co-running: its items over its
    /// busy time per worker (`busy_s / claimants`). `None`: it ran nothing.
    pub cpu_rate: Option<f64>,
    /// The GPU's work-items per second while co-running (items / busy time).
    pub gpu_rate: Option<f64>,
    /// `cpu_rate` over the CPU's solo rate (all items / `T_cpu`): below 1,
    /// the CPU ran slower beside the GPU than alone.
    pub cpu_rel: Option<f64>,
    /// `gpu_rate` over the GPU's solo rate (all items / `T_gpu`).
    pub gpu_rel: Option<f64>,
    /// `T_fastest * (cpu_rate + gpu_rate) / items`: the speedup had both
    /// devices run the whole time at their co-running rates (`None` unless
    /// both ran).
    pub s_ceiling: Option<f64>,
}

impl Corun {
    /// The ceiling of co-executed `report`, against the solo times.
    pub fn of(report: &Report, t_cpu: f64, t_gpu: f64) -> Corun {
        let rate = |kind: DeviceKind| {
            let (items, rate) = report
                .devices
                .iter()
                .filter(|d| d.kind == kind && d.items > 0 && d.busy_s > 0.0)
                .fold((0u64, 0.0), |(n, r), d| {
                    let per_claimant = d.busy_s / d.claimants.max(1) as f64;
                    (n + d.items, r + d.items as f64 / per_claimant)
                });
            (items > 0).then_some(rate)
        };
        let (cpu_rate, gpu_rate) = (rate(DeviceKind::Cpu), rate(DeviceKind::Gpu));
        let items = report.items as f64;
        let rel = |r: Option<f64>, t: f64| r.filter(|_| items > 0.0).map(|r| r * t / items);
        Corun {
            cpu_rate,
            gpu_rate,
            cpu_rel: rel(cpu_rate, t_cpu),
            gpu_rel: rel(gpu_rate, t_gpu),
            s_ceiling: cpu_rate
                .zip(gpu_rate)
                .filter(|_| items > 0.0)
                .map(|(c, g)| t_cpu.min(t_gpu) * (c + g) / items),
        }
    }
}

/// One point of a scaling sweep.
#[derive(Debug, Clone, Serialize)]
pub struct ScalingPoint {
    /// Work-items.
    pub items: u64,
    /// The index space.
    pub size: String,
    /// CPU alone, seconds (`None`, `null` in the JSON: not measured, the CPU
    /// series had stopped at its time budget).
    pub t_cpu: Option<f64>,
    /// Where `t_cpu` is `None`: the CPU time extrapolated from the last
    /// measured CPU points (`t_last * (n / n_last)^e`, `e` the growth
    /// exponent of the last two, clamped to 1..=3) that gave the co-executed
    /// run its hints (`None` where the CPU was measured).
    pub t_cpu_estimate: Option<f64>,
    /// GPU alone, seconds.
    pub t_gpu: f64,
    /// HGuided (hints from this point's solo times, the CPU's extrapolated
    /// where it was not measured), seconds.
    pub t_coexec: f64,
    /// Every output measured at this point verified.
    pub verified: bool,
}

/// One kernel's results.
#[derive(Debug, Clone, Serialize)]
pub struct KernelResult {
    /// Kernel name.
    pub kernel: String,
    /// Index space, e.g. `256x256`.
    pub size: String,
    /// Best solo CPU time, seconds.
    pub t_cpu: Option<f64>,
    /// Best solo GPU time, seconds.
    pub t_gpu: Option<f64>,
    /// The solo scheduler that gave `t_cpu`.
    pub t_cpu_scheduler: Option<String>,
    /// The solo scheduler that gave `t_gpu`.
    pub t_gpu_scheduler: Option<String>,
    /// Every run of this kernel verified.
    pub verified: bool,
    /// The co-executed runs, in [`SCHEDULERS`] order.
    pub runs: Vec<CoRun>,
    /// Every solo measurement.
    pub solo: Vec<SoloRun>,
    /// Time against problem size (empty without scaling).
    pub scaling: Vec<ScalingPoint>,
    /// Why the scaling sweep stopped.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scaling_stop: Option<String>,
    /// Why the kernel could not run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl KernelResult {
    /// `min(T_cpu, T_gpu)`.
    pub fn t_fastest(&self) -> Option<f64> {
        Some(self.t_cpu?.min(self.t_gpu?))
    }

    /// `T_fastest * (1/T_cpu + 1/T_gpu)`.
    pub fn s_max(&self) -> Option<f64> {
        Some(self.t_fastest()? * (1.0 / self.t_cpu? + 1.0 / self.t_gpu?))
    }
}

/// Aggregates of one scheduler over the kernels.
#[derive(Debug, Clone, Serialize)]
pub struct SchedulerSummary {
    /// Key from [`SCHEDULERS`].
    pub scheduler: String,
    /// Kernels with a successful run.
    pub kernels: usize,
    /// Mean heterogeneous efficiency.
    pub mean_he: Option<f64>,
    /// Geometric mean speedup.
    pub geomean_s: Option<f64>,
    /// Smallest heterogeneous efficiency.
    pub min_he: Option<f64>,
    /// Mean balancing efficiency.
    pub mean_balance: Option<f64>,
}

/// Everything the suite measured.
#[derive(Debug, Clone, Serialize)]
pub struct SuiteReport {
    /// The machine.
    pub machine: Machine,
    /// Repetitions and sizes used.
    pub settings: Value,
    /// Per kernel.
    pub kernels: Vec<KernelResult>,
    /// Per scheduler, over kernels.
    pub summary: Vec<SchedulerSummary>,
    /// Pictures and traces written.
    pub files: Vec<String>,
    /// Wall time of the whole suite, seconds.
    pub wall_s: f64,
    /// `false` in the JSON written after each kernel while the suite runs.
    pub complete: bool,
}

impl SuiteReport {
    /// Every run of every kernel verified and nothing failed.
    pub fn all_ok(&self) -> bool {
        self.kernels.iter().all(|k| k.verified && k.error.is_none())
    }

    /// The JSON document (`summary` keyed by scheduler).
    pub fn to_json(&self) -> Value {
        let mut v = serde_json::to_value(self).unwrap_or(Value::Null);
        let summary: serde_json::Map<String, Value> = self
            .summary
            .iter()
            .map(|s| {
                (
                    s.scheduler.clone(),
                    serde_json::json!({
                        "kernels": s.kernels,
                        "mean_he": s.mean_he,
                        "geomean_s": s.geomean_s,
                        "min_he": s.min_he,
                        "mean_balance": s.mean_balance,
                    }),
                )
            })
            .collect();
        v["summary"] = Value::Object(summary);
        v
    }

    /// The readable table: per kernel its solo times and one line per
    /// scheduler, then one summary line per scheduler.
    pub fn table(&self) -> String {
        let energy = !self.machine.energy_sources.is_empty();
        let f = |v: Option<f64>, p: usize| v.map_or("-".to_string(), |v| format!("{v:.p$}"));
        let ms = |v: Option<f64>| v.map_or("failed".to_string(), |v| format!("{:.3}", v * 1e3));
        let mut t = String::new();
        let _ = writeln!(
            t,
            "{:<12} {:<11} {:<23} {:>10} {:>6} {:>6} {:>6} {:>7} {:>6} {:>6} {:>6} {:>6} {:>5}{}",
            "kernel",
            "size",
            "scheduler",
            "T (ms)",
            "S",
            "S_max",
            "HE",
            "balance",
            "cpu_co",
            "gpu_co",
            "S_ceil",
            "pkgs",
            "ok",
            if energy { "   E (J)  EDP/best" } else { "" }
        );
        for k in &self.kernels {
            if let Some(e) = &k.error {
                let _ = writeln!(t, "{:<12} {:<11} error: {e}", k.kernel, k.size);
                continue;
            }
            let fastest = k.t_fastest();
            for (dev, time, sched) in [
                ("cpu alone", k.t_cpu, &k.t_cpu_scheduler),
                ("gpu alone", k.t_gpu, &k.t_gpu_scheduler),
            ] {
                let solo = k
                    .solo
                    .iter()
                    .find(|s| dev.starts_with(&s.device) && Some(&s.scheduler) == sched.as_ref());
                let _ = writeln!(
                    t,
                    "{:<12} {:<11} {:<23} {:>10} {:>6} {:>6} {:>6} {:>7} {:>6} {:>6} {:>6} {:>6} {:>5}{}",
                    k.kernel,
                    k.size,
                    format!("{dev} ({})", sched.as_deref().unwrap_or("-")),
                    ms(time),
                    f(fastest.zip(time).map(|(a, b)| a / b), 2),
                    "",
                    "",
                    "",
                    "",
                    "",
                    "",
                    f(solo.and_then(|s| s.packages.map(|p| p as f64)), 0),
                    if solo.is_some_and(|s| s.verified) {
                        "yes"
                    } else {
                        "NO"
                    },
                    if energy {
                        format!("{:>8} {:>9}", f(solo.and_then(|s| s.energy_j), 3), "")
                    } else {
                        String::new()
                    }
                );
            }
            for r in &k.runs {
                let label = SCHEDULERS
                    .iter()
                    .find(|s| s.0 == r.scheduler)
                    .map_or(r.scheduler.as_str(), |s| s.1);
                let _ = writeln!(
                    t,
                    "{:<12} {:<11} {:<23} {:>10} {:>6} {:>6} {:>6} {:>7} {:>6} {:>6} {:>6} {:>6} {:>5}{}",
                    k.kernel,
                    k.size,
                    label,
                    ms(r.time_s),
                    f(r.speedup, 2),
                    f(r.s_max, 2),
                    f(r.he, 2),
                    f(r.balance, 2),
                    f(r.corun.and_then(|c| c.cpu_rel), 2),
                    f(r.corun.and_then(|c| c.gpu_rel), 2),
                    f(r.corun.and_then(|c| c.s_ceiling), 2),
                    f(r.packages.map(|p| p as f64), 0),
                    if r.verified { "yes" } else { "NO" },
                    if energy {
                        format!("{:>8} {:>9}", f(r.energy_j, 3), f(r.edp_rel, 2))
                    } else {
                        String::new()
                    }
                );
            }
        }
        let _ = writeln!(t);
        for s in &self.summary {
            let label = SCHEDULERS
                .iter()
                .find(|x| x.0 == s.scheduler)
                .map_or(s.scheduler.as_str(), |x| x.1);
            let _ = writeln!(
                t,
                "{label:<23} mean HE {}  geomean S {}  min HE {}  mean balance {}  ({} kernels)",
                f(s.mean_he, 3),
                f(s.geomean_s, 3),
                f(s.min_he, 3),
                f(s.mean_balance, 3),
                s.kernels
            );
        }
        let _ = writeln!(
            t,
            "cpu_co, gpu_co: each device's throughput while co-running over its solo \
             throughput; S_ceil: the speedup at those throughputs (S_ceil < S_max: the \
             devices slow each other; S < S_ceil: a scheduling loss)"
        );
        if energy {
            let _ = writeln!(
                t,
                "energy: {} (joules per run; EDP relative to the fastest device alone)",
                self.machine.energy_sources.join(" + ")
            );
        } else {
            let _ = writeln!(
                t,
                "energy: not available ({})",
                self.machine.energy_notes.join("; ")
            );
        }
        t
    }
}

/// A configuration's measurement: the median repetition's report and time,
/// joules per run, and whether the output verified.
struct Measured {
    time_s: f64,
    report: Report,
    energy_j: Option<f64>,
    verified: bool,
}

/// Runs `w` once to warm up, then `reps` times; checks the last output.
///
/// Energy is read over the timed repetitions, extended by untimed ones until
/// the window lasts at least `energy_window_s`: NVML's counter advances in
/// steps of tens of milliseconds, so one short run alone would read 0 or one
/// whole step. Joules per run = the window's joules / its runs.
fn measure(
    w: &mut dyn Workload,
    engine: &Engine,
    scheduler: &Scheduler,
    devices: Devices,
    reps: usize,
    meter: &EnergyMeter,
    energy_window_s: f64,
) -> Result<Measured, String> {
    let run = |w: &mut dyn Workload| {
        w.run(engine, scheduler, devices)
            .map_err(|e| crate::error::chain(&e))
    };
    run(w)?;
    let before = meter.available().then(|| meter.sample());
    let window = Instant::now();
    let mut runs: Vec<Report> = Vec::with_capacity(reps);
    for _ in 0..reps {
        runs.push(run(w)?);
    }
    let mut energy_j = None;
    if let Some(before) = before {
        let mut n = reps;
        while window.elapsed().as_secs_f64() < energy_window_s {
            run(w)?;
            n += 1;
        }
        energy_j = meter.joules(&before, &meter.sample()).map(|j| j / n as f64);
    }
    let verified = w.verify().ok;
    runs.sort_by(|a, b| a.time_s.total_cmp(&b.time_s));
    let n = runs.len();
    let time_s = (runs[(n - 1) / 2].time_s + runs[n / 2].time_s) / 2.0;
    // The lower median's report (balance, packages, trace).
    let report = runs.swap_remove((n - 1) / 2);
    Ok(Measured {
        time_s,
        report,
        energy_j,
        verified,
    })
}

/// The scheduler of a [`SOLO_SCHEDULERS`] key (its text form), HGuided for
/// anything else.
fn solo_scheduler(key: &str) -> Scheduler {
    key.parse().unwrap_or_else(|_| Scheduler::hguided())
}

fn co_scheduler(key: &str, powers: &[f64]) -> Scheduler {
    match key {
        "dynamic:5" => Scheduler::Dynamic { packages: 5 },
        "dynamic:200" => Scheduler::Dynamic { packages: 200 },
        "static" => Scheduler::Static {
            powers: Some(powers.to_vec()),
        },
        "hguided:hints" => Scheduler::HGuided {
            powers: Some(powers.to_vec()),
            k: crate::sched::DEFAULT_K,
            min_package: 1,
        },
        _ => Scheduler::hguided(),
    }
}

/// The size of `name` at about `n` work-items: 2-D kernels get a square.
pub fn size_for_items(name: &str, n: u64) -> Size {
    match workloads::default_size(name) {
        Some(Size::Image(..)) => {
            let side = (n as f64).sqrt().ceil().min(u32::MAX as f64) as u32;
            Size::Image(side, side)
        }
        _ => Size::Linear(n),
    }
}

/// The sizes of a scaling sweep: 2^10 .. 2^26 work-items in steps of 2x
/// (quick: 2^10 .. 2^16 in steps of 4x).
pub fn scaling_sizes(quick: bool) -> Vec<u64> {
    if quick {
        (10..=16).step_by(2).map(|k| 1u64 << k).collect()
    } else {
        (10..=26).map(|k| 1u64 << k).collect()
    }
}

/// UTC `YYYY-MM-DDTHH:MM:SSZ` of now.
fn utc_now() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0);
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Civil date from days since 1970-01-01 (H. Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    )
}

fn geomean(v: &[f64]) -> Option<f64> {
    (!v.is_empty()).then(|| (v.iter().map(|x| x.ln()).sum::<f64>() / v.len() as f64).exp())
}

fn mean(v: &[f64]) -> Option<f64> {
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

fn summarise(kernels: &[KernelResult]) -> Vec<SchedulerSummary> {
    SCHEDULERS
        .iter()
        .map(|(key, _)| {
            let runs: Vec<&CoRun> = kernels
                .iter()
                .flat_map(|k| k.runs.iter().filter(|r| r.scheduler == *key))
                .filter(|r| r.he.is_some())
                .collect();
            let he: Vec<f64> = runs.iter().filter_map(|r| r.he).collect();
            let s: Vec<f64> = runs.iter().filter_map(|r| r.speedup).collect();
            let b: Vec<f64> = runs.iter().filter_map(|r| r.balance).collect();
            SchedulerSummary {
                scheduler: key.to_string(),
                kernels: runs.len(),
                mean_he: mean(&he),
                geomean_s: geomean(&s),
                min_he: he.iter().cloned().reduce(f64::min),
                mean_balance: mean(&b),
            }
        })
        .collect()
}

/// Progress on stderr: a bar when stderr is a terminal, nothing otherwise.
fn progress_bar(show: bool, steps: u64) -> ProgressBar {
    let pb = ProgressBar::with_draw_target(
        Some(steps),
        if show && std::io::stderr().is_terminal() {
            ProgressDrawTarget::stderr()
        } else {
            ProgressDrawTarget::hidden()
        },
    );
    if let Ok(style) = ProgressStyle::with_template(
        "{elapsed_precise:.dim} [{bar:30.cyan/blue}] {pos}/{len} {wide_msg}",
    ) {
        pb.set_style(style.progress_chars("=> "));
    }
    pb
}

/// The CPU's share of the work-items of a run.
fn cpu_share(r: &Report) -> Option<f64> {
    (r.items > 0).then(|| {
        r.devices
            .iter()
            .filter(|d| d.kind == DeviceKind::Cpu)
            .map(|d| d.items)
            .sum::<u64>() as f64
            / r.items as f64
    })
}

fn write_json(report: &SuiteReport, path: Option<&Path>) -> Result<(), SuiteError> {
    let Some(path) = path else { return Ok(()) };
    let text = serde_json::to_string_pretty(&report.to_json())?;
    std::fs::write(path, text + "\n").map_err(|source| SuiteError::WriteJson {
        path: path.to_path_buf(),
        source,
    })
}

/// Runs the suite on `engine`. Failed runs and failed verifications are
/// recorded in the report (see [`SuiteReport::all_ok`]); an `Err` means the
/// suite could not run at all (no GPU, unknown kernel, unwritable `out`).
pub fn run(engine: &Engine, opts: &Options) -> Result<SuiteReport, SuiteError> {
    let start = Instant::now();
    if !engine.gpu_available() {
        return Err(SuiteError::NoGpu);
    }
    if engine.workers() == 0 {
        return Err(SuiteError::NoWorkers);
    }
    let kernels = opts.kernels.clone().unwrap_or_else(|| opts.set.kernels());
    for k in &kernels {
        workloads::check_name(k).map_err(SuiteError::UnknownKernel)?;
    }
    if let Some(out) = &opts.out {
        std::fs::create_dir_all(out).map_err(|source| SuiteError::CreateDir {
            path: out.clone(),
            source,
        })?;
    }
    let reps = opts.reps();
    let meter = if opts.energy {
        EnergyMeter::new(engine)
    } else {
        EnergyMeter::none()
    };
    let info = engine.device().info();
    let machine = Machine {
        cpu_model: engine.topology().model.clone(),
        cores_used: engine.workers(),
        gpu_names: vec![info.name.clone()],
        vulkan_device_type: info.device_type.to_string(),
        date: utc_now(),
        command: opts.command.clone(),
        energy_sources: meter.sources(),
        energy_notes: meter.notes().to_vec(),
    };
    let mut report = SuiteReport {
        machine,
        settings: serde_json::json!({
            "quick": opts.quick,
            "warmup": 1,
            "reps": reps,
            "statistic": "median",
            "set": opts.set.name(),
            "solo_schedulers": opts.solo_schedulers(),
            "schedulers": SCHEDULERS.iter().map(|s| s.0).collect::<Vec<_>>(),
            "hguided_k": crate::sched::DEFAULT_K,
            "energy_window_s": meter.available().then(|| opts.energy_window_s()),
            "note": "hguided:nohints runs on a fresh instance of the workload, so it \
                     learns device powers only from its own warm-up and repetitions",
        }),
        kernels: Vec::new(),
        summary: Vec::new(),
        files: Vec::new(),
        wall_s: 0.0,
        complete: false,
    };
    let configs_per_kernel = 2 * opts.solo_schedulers().len() + SCHEDULERS.len();
    let pb = progress_bar(opts.progress, (kernels.len() * configs_per_kernel) as u64);
    for name in &kernels {
        let mut kr = run_kernel(engine, opts, name, reps, &meter, &pb, &mut report.files)
            .map_err(SuiteError::Output)?;
        if opts.scaling {
            scaling(engine, opts, &mut kr, &pb, &mut report.files).map_err(SuiteError::Output)?;
        }
        let line = format!(
            "{:<11} {:<11} {} ({:.1} s)",
            kr.kernel,
            kr.size,
            match (&kr.error, kr.verified) {
                (Some(e), _) => format!("error: {e}"),
                (None, true) => "done, verified".into(),
                (None, false) => "done, VERIFICATION FAILED".into(),
            },
            start.elapsed().as_secs_f64()
        );
        // Without a bar (a log, CI), one line per kernel still shows progress.
        if pb.is_hidden() {
            if opts.progress {
                eprintln!("{line}");
            }
        } else {
            pb.println(line);
        }
        report.kernels.push(kr);
        report.summary = summarise(&report.kernels);
        report.wall_s = start.elapsed().as_secs_f64();
        // After every kernel, so that an interrupted suite keeps its results.
        write_json(&report, opts.json.as_deref())?;
    }
    pb.finish_and_clear();
    if let Some(out) = &opts.out {
        let mut files = std::mem::take(&mut report.files);
        summary_plots(&report, out, &mut files).map_err(SuiteError::Output)?;
        report.files = files;
    }
    report.complete = true;
    report.wall_s = start.elapsed().as_secs_f64();
    write_json(&report, opts.json.as_deref())?;
    Ok(report)
}

fn run_kernel(
    engine: &Engine,
    opts: &Options,
    name: &str,
    reps: usize,
    meter: &EnergyMeter,
    pb: &ProgressBar,
    files: &mut Vec<String>,
) -> Result<KernelResult, String> {
    let size = opts.sizes.get(name).copied().or_else(|| {
        if opts.quick {
            workloads::quick_size(name)
        } else {
            workloads::default_size(name)
        }
    });
    let mut kr = KernelResult {
        kernel: name.to_string(),
        size: size.map(|s| s.to_string()).unwrap_or_default(),
        t_cpu: None,
        t_gpu: None,
        t_cpu_scheduler: None,
        t_gpu_scheduler: None,
        verified: false,
        runs: Vec::new(),
        solo: Vec::new(),
        scaling: Vec::new(),
        scaling_stop: None,
        error: None,
    };
    let configs = (2 * opts.solo_schedulers().len() + SCHEDULERS.len()) as u64;
    let mut w = match workloads::create(name, engine, size) {
        Ok(w) => Some(w),
        Err(e) => {
            kr.error = Some(e);
            pb.inc(configs);
            return Ok(kr);
        }
    };
    kr.size = w
        .as_ref()
        .map(|w| w.space().to_string())
        .unwrap_or_default();
    // Solo baselines: the best time over the solo schedulers.
    for (d, (dev, devices)) in [("cpu", Devices::CPU), ("gpu", Devices::GPU)]
        .into_iter()
        .enumerate()
    {
        for &key in opts.solo_schedulers() {
            if d == 0
                && opts
                    .cpu_solo
                    .as_ref()
                    .is_some_and(|only| !only.iter().any(|k| k == key))
            {
                continue;
            }
            pb.set_message(format!("{name} {}: {dev} alone, {key}", kr.size));
            let m = match w.as_deref_mut() {
                Some(w) => measure(
                    w,
                    engine,
                    &solo_scheduler(key),
                    devices,
                    reps,
                    meter,
                    opts.energy_window_s(),
                ),
                None => Err("no workload".to_string()),
            };
            pb.inc(1);
            let run = match m {
                Ok(m) => SoloRun {
                    device: dev.into(),
                    scheduler: key.into(),
                    time_s: Some(m.time_s),
                    packages: Some(m.report.package_count()),
                    verified: m.verified,
                    energy_j: m.energy_j,
                    error: None,
                },
                Err(e) => SoloRun {
                    device: dev.into(),
                    scheduler: key.into(),
                    time_s: None,
                    packages: None,
                    verified: false,
                    energy_j: None,
                    error: Some(e),
                },
            };
            kr.solo.push(run);
        }
    }
    // The fastest solo run of each device (the first of equal times).
    let best = |dev: &str| {
        kr.solo
            .iter()
            .filter(|s| s.device == dev)
            .filter_map(|s| s.time_s.map(|t| (t, s)))
            .min_by(|a, b| a.0.total_cmp(&b.0))
            .map(|(_, s)| s)
    };
    let (cpu, gpu) = (best("cpu"), best("gpu"));
    let solo_energy = [cpu.and_then(|s| s.energy_j), gpu.and_then(|s| s.energy_j)];
    kr.t_cpu = cpu.and_then(|s| s.time_s);
    kr.t_cpu_scheduler = cpu.map(|s| s.scheduler.clone());
    kr.t_gpu = gpu.and_then(|s| s.time_s);
    kr.t_gpu_scheduler = gpu.map(|s| s.scheduler.clone());
    let (Some(t_cpu), Some(t_gpu)) = (kr.t_cpu, kr.t_gpu) else {
        let why: Vec<String> = kr.solo.iter().filter_map(|s| s.error.clone()).collect();
        kr.error = Some(format!(
            "a device failed every solo run: {}",
            why.join("; ")
        ));
        pb.inc(SCHEDULERS.len() as u64);
        return Ok(kr);
    };
    let t_fast = t_cpu.min(t_gpu);
    let s_max = t_fast * (1.0 / t_cpu + 1.0 / t_gpu);
    let e_fast = if t_cpu <= t_gpu {
        solo_energy[0]
    } else {
        solo_energy[1]
    };
    let powers = [1.0 / t_cpu, 1.0 / t_gpu];
    let mut fresh_error: Option<String> = None;
    for (key, label) in SCHEDULERS {
        if opts
            .schedulers
            .as_ref()
            .is_some_and(|only| !only.iter().any(|k| k == key))
        {
            continue;
        }
        pb.set_message(format!("{name} {}: co-executed, {label}", kr.size));
        let scheduler = co_scheduler(key, &powers);
        if key == "hguided:nohints" {
            // A fresh instance (the old one freed first): no powers learned
            // from the runs above.
            w = None;
            match workloads::create(name, engine, size) {
                Ok(fresh) => w = Some(fresh),
                Err(e) => fresh_error = Some(e),
            }
        }
        let m = match w.as_deref_mut() {
            Some(w) => measure(
                w,
                engine,
                &scheduler,
                Devices::ALL,
                reps,
                meter,
                opts.energy_window_s(),
            ),
            None => Err(fresh_error.clone().unwrap_or_else(|| "no workload".into())),
        };
        pb.inc(1);
        let run = match m {
            Ok(m) => {
                let s = t_fast / m.time_s;
                if key == "hguided:hints" {
                    if let Some(out) = &opts.out {
                        // The figures of the repetition shown (the lower
                        // median), not the median over repetitions.
                        let shown = m.report.time_s;
                        let title = format!(
                            "{name} {}, {label}: {}, balance {:.2}, HE {:.2}",
                            kr.size,
                            plots::seconds_label(shown),
                            m.report.balance(),
                            t_fast / shown / s_max
                        );
                        run_pictures(out, name, &title, &m.report, files)?;
                    }
                }
                CoRun {
                    scheduler: key.into(),
                    time_s: Some(m.time_s),
                    speedup: Some(s),
                    s_max: Some(s_max),
                    he: Some(s / s_max),
                    balance: Some(m.report.balance()),
                    packages: Some(m.report.package_count()),
                    cpu_share: cpu_share(&m.report),
                    verified: m.verified,
                    energy_j: m.energy_j,
                    edp_rel: m
                        .energy_j
                        .zip(e_fast)
                        .filter(|(_, ef)| *ef > 0.0)
                        .map(|(e, ef)| (e * m.time_s) / (ef * t_fast)),
                    corun: Some(Corun::of(&m.report, t_cpu, t_gpu)),
                    error: None,
                }
            }
            Err(e) => CoRun {
                scheduler: key.into(),
                time_s: None,
                speedup: None,
                s_max: Some(s_max),
                he: None,
                balance: None,
                packages: None,
                cpu_share: None,
                verified: false,
                energy_j: None,
                edp_rel: None,
                corun: None,
                error: Some(e),
            },
        };
        kr.runs.push(run);
    }
    kr.verified = kr.solo.iter().all(|s| s.verified) && kr.runs.iter().all(|r| r.verified);
    Ok(kr)
}

/// The trace and the timeline picture of one run.
fn run_pictures(
    out: &Path,
    name: &str,
    title: &str,
    report: &Report,
    files: &mut Vec<String>,
) -> Result<(), String> {
    let trace = out.join(format!("trace-{name}.json"));
    crate::trace::write_chrome_trace(&trace, report, title).map_err(|e| crate::error::chain(&e))?;
    files.push(trace.display().to_string());
    let svg = out.join(format!("timeline-{name}.svg"));
    plots::timeline_chart(&svg, title, report)?;
    files.push(svg.display().to_string());
    Ok(())
}

/// The predicted time of a series' run at the next size of a sweep: time
/// grows at least with the size (`step`, its ratio to this size), and at
/// least as fast as it grew from the previous size (`prev` seconds) to this
/// one (`last` seconds).
fn predicted_next(last: f64, prev: Option<f64>, step: f64) -> f64 {
    let growth = prev
        .filter(|p| *p > 0.0)
        .map_or(step, |p| (last / p).max(step));
    last * growth
}

/// Whether a series' run at the next size is predicted
/// ([`predicted_next`]) to take more than [`SCALING_BUDGET_S`].
fn next_over_budget(last: f64, prev: Option<f64>, step: f64) -> bool {
    predicted_next(last, prev, step) > SCALING_BUDGET_S
}

/// The CPU-alone time at `items` work-items, extrapolated from the last two
/// points of `points` with a measured CPU time: `t_last * (items /
/// n_last)^e` with `e = ln(t_last / t_prev) / ln(n_last / n_prev)` clamped
/// to `1..=3` (1 with one measured point, or where the ratio is undefined).
/// `None` without a measured point.
fn extrapolate_cpu(points: &[ScalingPoint], items: u64) -> Option<f64> {
    let mut measured = points
        .iter()
        .rev()
        .filter_map(|p| p.t_cpu.map(|t| (p.items as f64, t)));
    let (n_last, t_last) = measured.next()?;
    let e = measured
        .next()
        .map(|(n_prev, t_prev)| (t_last / t_prev).ln() / (n_last / n_prev).ln())
        .filter(|e| e.is_finite())
        .map_or(1.0, |e| e.clamp(1.0, 3.0));
    Some(t_last * (items as f64 / n_last).powf(e))
}

/// Which series the budget rule stops after `point` (the previous point
/// `prev`, sizes growing by `step`).
#[derive(Debug, PartialEq, Eq)]
struct BudgetStop {
    /// The CPU-alone series: its next run would exceed the budget.
    cpu: bool,
    /// The whole sweep: the GPU-alone or the co-executed series' next run
    /// would exceed the budget.
    sweep: bool,
}

/// The budget rule after `point`: each series is judged on its own times,
/// the CPU's only while it is measured.
fn budget_stop(prev: Option<&ScalingPoint>, point: &ScalingPoint, step: f64) -> BudgetStop {
    BudgetStop {
        cpu: point
            .t_cpu
            .is_some_and(|t| next_over_budget(t, prev.and_then(|p| p.t_cpu), step)),
        sweep: next_over_budget(point.t_gpu, prev.map(|p| p.t_gpu), step)
            || next_over_budget(point.t_coexec, prev.map(|p| p.t_coexec), step),
    }
}

/// Drives a scaling sweep over `sizes` (each `step` times the previous):
/// `measure(n, with_cpu, points so far)` measures the point of about `n`
/// work-items, the CPU alone only when `with_cpu`. The CPU-alone series
/// stops at its own time budget; the sweep goes on without it until the
/// GPU-alone or co-executed series would exceed theirs, the largest size or
/// an error. Returns the points and `scaling_stop`.
fn sweep<F>(sizes: &[u64], step: f64, mut measure: F) -> (Vec<ScalingPoint>, String)
where
    F: FnMut(u64, bool, &[ScalingPoint]) -> Result<ScalingPoint, String>,
{
    let budget = |items: u64| {
        format!("time budget at {items} work-items (next run > ~{SCALING_BUDGET_S} s)")
    };
    let mut points: Vec<ScalingPoint> = Vec::new();
    let mut cpu_stop: Option<String> = None;
    let mut end: Option<String> = None;
    for (i, &n) in sizes.iter().enumerate() {
        let point = match measure(n, cpu_stop.is_none(), &points) {
            Ok(p) => p,
            Err(e) => {
                end = Some(e);
                break;
            }
        };
        let stop = budget_stop(points.last(), &point, step);
        let items = point.items;
        points.push(point);
        if i + 1 == sizes.len() {
            break;
        }
        if stop.cpu {
            cpu_stop = Some(budget(items));
        }
        if stop.sweep {
            end = Some(budget(items));
            break;
        }
    }
    let end = end.unwrap_or_else(|| "largest size reached".into());
    // `scaling_stop` names the series (CPU alone, GPU alone, HGuided) of
    // each reason: only the CPU's can differ from the others'.
    let stop = match cpu_stop {
        Some(why) if why != end => format!("cpu: {why}; gpu, hguided: {end}"),
        _ => format!("cpu, gpu, hguided: {end}"),
    };
    (points, stop)
}

/// Time against problem size for CPU alone, GPU alone (each with its best
/// solo scheduler) and HGuided co-executed, each series up to its own time
/// budget (see [`sweep`]).
fn scaling(
    engine: &Engine,
    opts: &Options,
    kr: &mut KernelResult,
    pb: &ProgressBar,
    files: &mut Vec<String>,
) -> Result<(), String> {
    if kr.error.is_some() {
        return Ok(());
    }
    let sizes = scaling_sizes(opts.quick);
    pb.inc_length(sizes.len() as u64);
    let reps = opts.reps().min(3);
    let meter = EnergyMeter::none();
    let cpu_key = kr
        .t_cpu_scheduler
        .clone()
        .unwrap_or_else(|| "hguided".into());
    let gpu_key = kr
        .t_gpu_scheduler
        .clone()
        .unwrap_or_else(|| "hguided".into());
    let kernel = &kr.kernel;
    let step = if opts.quick { 4.0 } else { 2.0 };
    let (points, stop) = sweep(&sizes, step, |n, with_cpu, points| {
        pb.set_message(format!("{kernel} scaling: {n} work-items"));
        let size = size_for_items(kernel, n);
        let mut w =
            workloads::create(kernel, engine, Some(size)).map_err(|e| format!("{size}: {e}"))?;
        let (items, space) = (w.space().items(), w.space().to_string());
        let mut run = |sched: &Scheduler, devices, series: &str| {
            measure(&mut *w, engine, sched, devices, reps, &meter, 0.0)
                .map_err(|e| format!("{space}, {series} run: {e}"))
        };
        let cpu = if with_cpu {
            Some(run(&solo_scheduler(&cpu_key), Devices::CPU, "cpu")?)
        } else {
            None
        };
        let gpu = run(&solo_scheduler(&gpu_key), Devices::GPU, "gpu")?;
        let t_cpu = cpu.as_ref().map(|c| c.time_s);
        let t_cpu_estimate = match t_cpu {
            Some(_) => None,
            None => extrapolate_cpu(points, items),
        };
        // Without any CPU time (never: the CPU series stops only after a
        // measured point), HGuided measures the powers itself.
        let co_sched = match t_cpu.or(t_cpu_estimate) {
            Some(t) => co_scheduler("hguided:hints", &[1.0 / t, 1.0 / gpu.time_s]),
            None => Scheduler::hguided(),
        };
        let co = run(&co_sched, Devices::ALL, "hguided")?;
        pb.inc(1);
        Ok(ScalingPoint {
            items,
            size: space,
            t_cpu,
            t_cpu_estimate,
            t_gpu: gpu.time_s,
            t_coexec: co.time_s,
            verified: cpu.as_ref().is_none_or(|c| c.verified) && gpu.verified && co.verified,
        })
    });
    pb.inc(sizes.len().saturating_sub(points.len()) as u64);
    if points.iter().any(|p| !p.verified) {
        kr.verified = false;
    }
    kr.scaling = points;
    kr.scaling_stop = Some(stop);
    if let Some(out) = &opts.out {
        if !kr.scaling.is_empty() {
            let p = |f: fn(&ScalingPoint) -> Option<f64>| -> Vec<(f64, f64)> {
                kr.scaling
                    .iter()
                    .filter_map(|s| f(s).map(|t| (s.items as f64, t)))
                    .collect()
            };
            let series = [
                (
                    format!("CPU alone ({cpu_key})"),
                    plots::device_colour(DeviceKind::Cpu),
                    p(|s| s.t_cpu),
                ),
                (
                    format!("GPU alone ({gpu_key})"),
                    plots::device_colour(DeviceKind::Gpu),
                    p(|s| Some(s.t_gpu)),
                ),
                (
                    "CPU+GPU, HGuided (hints)".to_string(),
                    plots::COEXEC_COLOUR,
                    p(|s| Some(s.t_coexec)),
                ),
            ];
            let path = out.join(format!("scaling-{}.svg", kr.kernel));
            plots::scaling_chart(
                &path,
                &format!("{}: time per run against problem size", kr.kernel),
                &series,
            )?;
            files.push(path.display().to_string());
        }
    }
    Ok(())
}

/// `speedup.svg` and `he.svg`.
fn summary_plots(r: &SuiteReport, out: &Path, files: &mut Vec<String>) -> Result<(), String> {
    let kernels: Vec<&KernelResult> = r.kernels.iter().filter(|k| k.error.is_none()).collect();
    if kernels.is_empty() {
        return Ok(());
    }
    let groups: Vec<String> = kernels.iter().map(|k| k.kernel.clone()).collect();
    let series = |f: fn(&CoRun) -> Option<f64>| -> Vec<(String, Vec<plots::Bar>)> {
        SCHEDULERS
            .iter()
            .map(|(key, label)| {
                let bars = kernels
                    .iter()
                    .map(|k| {
                        let run = k.runs.iter().find(|r| r.scheduler == *key);
                        plots::Bar {
                            value: run.and_then(f),
                            ok: run.is_none_or(|r| r.verified),
                        }
                    })
                    .collect();
                (label.to_string(), bars)
            })
            .collect()
    };
    let s_max: Vec<Option<f64>> = kernels.iter().map(|k| k.s_max()).collect();
    let machine = format!(
        "{} + {}",
        r.machine.cpu_model,
        r.machine.gpu_names.join(", ")
    );
    let speedup = out.join("speedup.svg");
    plots::bar_chart(
        &speedup,
        &plots::BarChart {
            title: &format!("Speedup over the fastest device alone ({machine})"),
            y_desc: "speedup S = T_fastest / T (higher is better)",
            groups: &groups,
            series: &series(|r| r.speedup),
            reference: Some((1.0, "S = 1: fastest device alone")),
            markers: Some((&s_max, "S_max: every device busy, no overhead")),
        },
    )?;
    files.push(speedup.display().to_string());
    let he = out.join("he.svg");
    plots::bar_chart(
        &he,
        &plots::BarChart {
            title: &format!("Heterogeneous efficiency ({machine})"),
            y_desc: "HE = S / S_max (1 is ideal)",
            groups: &groups,
            series: &series(|r| r.he),
            reference: Some((1.0, "HE = 1: ideal co-execution")),
            markers: None,
        },
    )?;
    files.push(he.display().to_string());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates() {
        let d = utc_now();
        assert_eq!(d.len(), 20, "{d}");
        assert!(d.starts_with("20"), "{d}");
    }

    #[test]
    fn sizes() {
        assert_eq!(scaling_sizes(true), [1 << 10, 1 << 12, 1 << 14, 1 << 16]);
        assert_eq!(scaling_sizes(false).len(), 17);
        assert_eq!(size_for_items("matmul", 1 << 20), Size::Image(1024, 1024));
        assert_eq!(size_for_items("taylor", 1 << 20), Size::Linear(1 << 20));
    }

    #[test]
    fn means() {
        assert!((geomean(&[1.0, 4.0]).unwrap() - 2.0).abs() < 1e-12);
        assert_eq!(mean(&[]), None);
    }

    #[test]
    fn scheduler_keys_map_to_their_schedulers() {
        assert_eq!(solo_scheduler("static"), Scheduler::Static { powers: None });
        assert_eq!(
            solo_scheduler("dynamic:200"),
            Scheduler::Dynamic { packages: 200 }
        );
        assert_eq!(solo_scheduler("hguided"), Scheduler::hguided());
        assert_eq!(solo_scheduler("anything"), Scheduler::hguided());
        let p = [1.0, 3.0];
        assert_eq!(
            co_scheduler("dynamic:5", &p),
            Scheduler::Dynamic { packages: 5 }
        );
        assert_eq!(co_scheduler("hguided:nohints", &p), Scheduler::hguided());
    }

    /// A point with a measured CPU time (`t_cpu: Some`) or not.
    fn point(items: u64, t_cpu: Option<f64>, t_gpu: f64, t_coexec: f64) -> ScalingPoint {
        ScalingPoint {
            items,
            size: items.to_string(),
            t_cpu,
            t_cpu_estimate: None,
            t_gpu,
            t_coexec,
            verified: true,
        }
    }

    #[test]
    fn budget_prediction_grows_with_size_and_observed_growth() {
        // First point: the size step only.
        assert!(!next_over_budget(0.9, None, 2.0));
        assert!(next_over_budget(1.1, None, 2.0));
        // Growth above the step counts (0.25 -> 0.9 is 3.6x: 3.24 s next).
        assert!(next_over_budget(0.9, Some(0.25), 2.0));
        // Growth below the step does not lower the prediction.
        assert!(!next_over_budget(0.9, Some(0.8), 2.0));
        assert!(next_over_budget(0.6, Some(0.59), 4.0));
        // A zero previous time falls back to the step.
        assert_eq!(predicted_next(0.5, Some(0.0), 2.0), 1.0);
    }

    #[test]
    fn cpu_stops_while_gpu_continues() {
        let prev = point(1 << 20, Some(0.5), 0.004, 0.004);
        let p = point(1 << 21, Some(1.2), 0.008, 0.008);
        assert_eq!(
            budget_stop(Some(&prev), &p, 2.0),
            BudgetStop {
                cpu: true,
                sweep: false
            }
        );
        // Without a CPU time the CPU rule has nothing to stop.
        let q = point(1 << 22, None, 0.016, 0.016);
        assert_eq!(
            budget_stop(Some(&p), &q, 2.0),
            BudgetStop {
                cpu: false,
                sweep: false
            }
        );
        // The co-executed series alone can stop the sweep.
        let r = point(1 << 23, None, 0.03, 1.2);
        assert!(budget_stop(Some(&q), &r, 2.0).sweep);
    }

    #[test]
    fn cpu_extrapolation_uses_the_last_two_measured_points() {
        assert_eq!(extrapolate_cpu(&[], 1 << 20), None);
        // One point: linear.
        let one = [point(1 << 20, Some(0.5), 0.01, 0.01)];
        let t = extrapolate_cpu(&one, 1 << 22).unwrap();
        assert!((t - 2.0).abs() < 1e-12, "{t}");
        // Two points growing as n^2, then points without a CPU time: the
        // last two measured ones count.
        let mut pts = vec![
            point(1 << 18, Some(0.1), 0.01, 0.01),
            point(1 << 19, Some(0.25), 0.01, 0.01),
            point(1 << 20, Some(1.0), 0.01, 0.01),
            point(1 << 21, None, 0.02, 0.02),
        ];
        let t = extrapolate_cpu(&pts, 1 << 22).unwrap();
        assert!((t - 16.0).abs() < 1e-9, "{t}");
        // Exponent clamped above (8x per doubling would be n^3 at most)...
        pts[1].t_cpu = Some(0.01);
        let t = extrapolate_cpu(&pts, 1 << 21).unwrap();
        assert!((t - 8.0).abs() < 1e-9, "{t}");
        // ... and below (a time that fell still grows linearly).
        pts[1].t_cpu = Some(2.0);
        let t = extrapolate_cpu(&pts, 1 << 22).unwrap();
        assert!((t - 4.0).abs() < 1e-9, "{t}");
        // Equal sizes: the exponent is undefined, linear.
        let same = [
            point(1 << 20, Some(0.5), 0.01, 0.01),
            point(1 << 20, Some(0.6), 0.01, 0.01),
        ];
        let t = extrapolate_cpu(&same, 1 << 21).unwrap();
        assert!((t - 1.2).abs() < 1e-9, "{t}");
    }

    /// A simulated sweep of a machine with a CPU 100x slower than its GPU:
    /// the CPU series stops at its budget, the others reach 2^26, and the
    /// co-executed runs after the CPU's stop got extrapolated CPU times.
    #[test]
    fn sweep_runs_gpu_and_coexec_past_the_cpu_budget() {
        let sizes = scaling_sizes(false);
        let mut asked_cpu = Vec::new();
        let (points, stop) = sweep(&sizes, 2.0, |n, with_cpu, pts| {
            asked_cpu.push(with_cpu);
            let t_gpu = n as f64 * 1e-8;
            let t_cpu = with_cpu.then_some(100.0 * t_gpu);
            let t_cpu_estimate = match t_cpu {
                Some(_) => None,
                None => extrapolate_cpu(pts, n),
            };
            Ok(ScalingPoint {
                t_cpu_estimate,
                ..point(n, t_cpu, t_gpu, t_gpu * 0.99)
            })
        });
        assert_eq!(points.len(), sizes.len());
        assert_eq!(points.last().map(|p| p.items), Some(1 << 26));
        // 2^20 work-items take 1.05 s on the CPU: the next would take 2.1 s.
        let last_cpu = points.iter().rposition(|p| p.t_cpu.is_some()).unwrap();
        assert_eq!(points[last_cpu].items, 1 << 20);
        assert!(points[..=last_cpu].iter().all(|p| p.t_cpu.is_some()));
        assert!(points[last_cpu..].iter().skip(1).all(|p| p.t_cpu.is_none()));
        assert_eq!(asked_cpu.iter().filter(|c| **c).count(), last_cpu + 1);
        for p in &points[last_cpu + 1..] {
            let est = p.t_cpu_estimate.unwrap();
            let want = 100.0 * p.t_gpu;
            assert!((est - want).abs() < 1e-9 * want, "{est} vs {want}");
        }
        assert_eq!(
            stop,
            "cpu: time budget at 1048576 work-items (next run > ~2 s); \
             gpu, hguided: largest size reached"
        );
    }

    #[test]
    fn sweep_stops_when_the_fastest_series_reach_the_budget() {
        // GPU 10x faster than the CPU, 2^26 out of reach for both.
        let sizes = scaling_sizes(false);
        let (points, stop) = sweep(&sizes, 2.0, |n, with_cpu, _| {
            let t_gpu = n as f64 * 1e-7;
            Ok(point(n, with_cpu.then_some(10.0 * t_gpu), t_gpu, t_gpu))
        });
        // CPU: 2^20 (1.05 s, 2.1 s predicted next); GPU: 2^24 (1.68 s).
        assert_eq!(points.last().map(|p| p.items), Some(1 << 24));
        assert_eq!(
            stop,
            "cpu: time budget at 1048576 work-items (next run > ~2 s); \
             gpu, hguided: time budget at 16777216 work-items (next run > ~2 s)"
        );
        // Everything within budget, or one series over it at once.
        let (_, stop) = sweep(&[1 << 10, 1 << 12], 4.0, |n, c, _| {
            Ok(point(n, c.then_some(1e-3), 1e-3, 1e-3))
        });
        assert_eq!(stop, "cpu, gpu, hguided: largest size reached");
        let (pts, stop) = sweep(&[1 << 10, 1 << 12], 4.0, |n, c, _| {
            Ok(point(n, c.then_some(1.0), 1.0, 1.0))
        });
        assert_eq!(pts.len(), 1);
        assert_eq!(
            stop,
            "cpu, gpu, hguided: time budget at 1024 work-items (next run > ~2 s)"
        );
    }

    #[test]
    fn sweep_stops_on_an_error() {
        let (points, stop) = sweep(&scaling_sizes(true), 4.0, |n, c, _| {
            if n < 1 << 14 {
                Ok(point(n, c.then_some(1e-3), 1e-4, 1e-4))
            } else {
                Err(format!("{n}, gpu run: out of memory"))
            }
        });
        assert_eq!(points.len(), 2);
        assert_eq!(stop, "cpu, gpu, hguided: 16384, gpu run: out of memory");
    }

    #[test]
    fn missing_cpu_times_are_null_in_the_json() {
        let v = serde_json::to_value(ScalingPoint {
            t_cpu_estimate: Some(3.0),
            ..point(1 << 22, None, 0.01, 0.01)
        })
        .unwrap();
        assert!(v["t_cpu"].is_null(), "{v}");
        assert_eq!(v["t_cpu_estimate"], 3.0);
        let v = serde_json::to_value(point(1 << 10, Some(0.5), 0.01, 0.01)).unwrap();
        assert_eq!(v["t_cpu"], 0.5);
        assert!(v["t_cpu_estimate"].is_null(), "{v}");
    }

    fn device(kind: DeviceKind, claimants: usize, items: u64, busy_s: f64) -> crate::DeviceReport {
        crate::DeviceReport {
            name: format!("{kind:?}"),
            kind,
            claimants,
            packages: usize::from(items > 0),
            items,
            busy_s,
            first_start_s: 0.0,
            finish_s: busy_s / claimants as f64,
            gpu_gaps: None,
            failure: None,
            declined_s: None,
        }
    }

    fn co_report(devices: Vec<crate::DeviceReport>) -> Report {
        Report {
            time_s: 1.0,
            items: devices.iter().map(|d| d.items).sum(),
            units: 10,
            devices,
            packages: Default::default(),
            from_profile: false,
        }
    }

    /// Two CPU workers busy 1 s each for 300 items (300 items/s), the GPU
    /// busy 0.5 s for 700 items (1400 items/s); alone the CPU took 4 s and
    /// the GPU 1 s for all 1000 (250 and 1000 items/s).
    #[test]
    fn corun_rates_are_per_device_and_relative_to_solo() {
        let r = co_report(vec![
            device(DeviceKind::Cpu, 2, 300, 2.0),
            device(DeviceKind::Gpu, 1, 700, 0.5),
        ]);
        let c = Corun::of(&r, 4.0, 1.0);
        let close = |a: Option<f64>, b: f64| (a.unwrap() - b).abs() < 1e-9 * b;
        assert!(close(c.cpu_rate, 300.0), "{c:?}");
        assert!(close(c.gpu_rate, 1400.0), "{c:?}");
        assert!(close(c.cpu_rel, 1.2), "{c:?}");
        assert!(close(c.gpu_rel, 1.4), "{c:?}");
        // T_fastest = 1 s: (300 + 1400) / 1000 items.
        assert!(close(c.s_ceiling, 1.7), "{c:?}");
        // Both at their solo rates: the ceiling is S_max.
        let r = co_report(vec![
            device(DeviceKind::Cpu, 1, 200, 0.8),
            device(DeviceKind::Gpu, 1, 800, 0.8),
        ]);
        let c = Corun::of(&r, 4.0, 1.0);
        assert!(close(c.s_ceiling, 1.25), "{c:?}");
        assert!(close(c.cpu_rel, 1.0) && close(c.gpu_rel, 1.0), "{c:?}");
        // A device that ran nothing has no rate, and there is no ceiling.
        let r = co_report(vec![
            device(DeviceKind::Cpu, 4, 0, 0.0),
            device(DeviceKind::Gpu, 1, 1000, 1.0),
        ]);
        let c = Corun::of(&r, 4.0, 1.0);
        assert_eq!((c.cpu_rate, c.cpu_rel, c.s_ceiling), (None, None, None));
        assert!(close(c.gpu_rel, 1.0), "{c:?}");
    }

    #[test]
    fn kernel_sets_parse_and_list_their_kernels() {
        assert_eq!("seed".parse(), Ok(KernelSet::Seed));
        assert_eq!(" comparable".parse(), Ok(KernelSet::Comparable));
        let e = "fast".parse::<KernelSet>().unwrap_err();
        assert!(e.contains("seed, comparable"), "{e}");
        assert_eq!(KernelSet::default(), KernelSet::Seed);
        assert_eq!(KernelSet::Seed.kernels(), default_kernels());
        assert_eq!(KernelSet::Comparable.kernels(), workloads::COMPARABLE);
        for set in [KernelSet::Seed, KernelSet::Comparable] {
            assert_eq!(set.name().parse(), Ok(set));
        }
        let quick = Options {
            quick: true,
            ..Options::default()
        };
        assert!(quick
            .solo_schedulers()
            .iter()
            .all(|k| SOLO_SCHEDULERS.contains(k)));
        assert_eq!(Options::default().solo_schedulers(), SOLO_SCHEDULERS);
    }

    #[test]
    fn default_kernels_leave_out_saxpy() {
        let k = default_kernels();
        assert!(!k.iter().any(|k| k == "saxpy"));
        assert!(k.iter().any(|k| k == "mandelbrot"));
    }
}
