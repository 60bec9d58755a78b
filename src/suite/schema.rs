//! The result schema: what the suite measured, as written to its JSON
//! record (field order is the JSON's).

use super::SuiteError;
use crate::{DeviceKind, Report};
use serde::Serialize;
use serde_json::Value;
use std::path::Path;

/// The machine the suite ran on.
#[derive(Debug, Clone, Serialize)]
pub struct Machine {
    /// CPU model name.
    pub cpu_model: String,
    /// CPU worker threads of the engine.
    pub cores_used: usize,
    /// The engine's Vulkan device(s).
    pub gpu_names: Vec<String>,
    /// Where the GPU reads the buffers: `zero-copy` or `staged`
    /// (`coexec::MemoryPlacement`).
    pub memory: String,
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
    /// One of [`SOLO_SCHEDULERS`](super::SOLO_SCHEDULERS).
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
    /// One of the keys of [`SCHEDULERS`](super::SCHEDULERS).
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
    /// The GPU's work-items per second while co-running: its items over
    /// its busy time, or over the span from its first package to when its
    /// results were home where that is longer (a staged GPU whose
    /// downloads outlast its packages: its packages alone overstate it).
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
                    let time = match d.kind {
                        DeviceKind::Gpu => per_claimant.max(d.settled_s - d.first_start_s),
                        DeviceKind::Cpu => per_claimant,
                    };
                    (n + d.items, r + d.items as f64 / time)
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
    /// The co-executed runs, in [`SCHEDULERS`](super::SCHEDULERS) order.
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
    /// Key from [`SCHEDULERS`](super::SCHEDULERS).
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
}

/// Writes `report`'s JSON document to `path` (nothing without a path).
pub(super) fn write_json(report: &SuiteReport, path: Option<&Path>) -> Result<(), SuiteError> {
    let Some(path) = path else { return Ok(()) };
    let text = serde_json::to_string_pretty(&report.to_json())?;
    std::fs::write(path, text + "\n").map_err(|source| SuiteError::WriteJson {
        path: path.to_path_buf(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::suite::fixture::{fixture, point};

    #[test]
    fn json_matches_the_recorded_schema() {
        for (energy, want) in [
            (
                true,
                include_str!("../../tests/data/suite/report-energy.json"),
            ),
            (
                false,
                include_str!("../../tests/data/suite/report-no-energy.json"),
            ),
        ] {
            let got = serde_json::to_string_pretty(&fixture(energy).to_json()).unwrap() + "\n";
            assert_eq!(got, want, "energy: {energy}");
        }
    }

    #[test]
    fn all_ok_needs_every_kernel_verified_and_none_failed() {
        let mut r = fixture(false);
        assert!(!r.all_ok());
        r.kernels.retain(|k| k.error.is_none());
        r.kernels[0].verified = true;
        assert!(r.all_ok());
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
            settled_s: busy_s / claimants as f64,
            gpu_busy_s: None,
            failure: None,
            declined_s: None,
            transfers: Default::default(),
            cpu_impl: None,
            note: None,
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
            one_time_transfer: false,
            memory: crate::MemoryPlacement::ZeroCopy,
            energy: None,
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
        // A staged GPU whose packages took 0.25 s and whose last download
        // ended at 0.5 s (from its first package at 0.1 s): 700 items in
        // 0.4 s, not in 0.25.
        let mut gpu = device(DeviceKind::Gpu, 1, 700, 0.25);
        gpu.first_start_s = 0.1;
        gpu.settled_s = 0.5;
        let r = co_report(vec![device(DeviceKind::Cpu, 2, 300, 2.0), gpu]);
        let c = Corun::of(&r, 4.0, 1.0);
        assert!(close(c.gpu_rate, 1750.0), "{c:?}");
        assert!(close(c.s_ceiling, 2.05), "{c:?}");
    }
}
