//! Test data: a suite report of every kind of line and scaling points.

use super::schema::{CoRun, Corun, KernelResult, Machine, ScalingPoint, SoloRun, SuiteReport};
use super::stats::summarise;

/// A report of every kind of line: a kernel that could not run, solo
/// runs (one failed), co-executed runs (one failed, one unverified), with
/// or without energy counters.
pub(super) fn fixture(energy: bool) -> SuiteReport {
    let solo = |device: &str, scheduler: &str, time_s: Option<f64>| SoloRun {
        device: device.into(),
        scheduler: scheduler.into(),
        time_s,
        packages: time_s.map(|_| 8),
        verified: time_s.is_some(),
        energy_j: time_s.filter(|_| energy).map(|t| t * 40.0),
        error: time_s.is_none().then(|| "device lost".to_string()),
    };
    let co = |scheduler: &str, time_s: Option<f64>, verified: bool| CoRun {
        scheduler: scheduler.into(),
        time_s,
        speedup: time_s.map(|t| 0.010 / t),
        s_max: Some(1.25),
        he: time_s.map(|t| 0.010 / t / 1.25),
        balance: time_s.map(|_| 0.875),
        packages: time_s.map(|_| 17),
        cpu_share: time_s.map(|_| 0.2),
        verified,
        energy_j: time_s.filter(|_| energy).map(|t| t * 55.0),
        edp_rel: time_s.filter(|_| energy).map(|t| t / 0.010),
        corun: time_s.map(|_| Corun {
            cpu_rate: Some(1.5e6),
            gpu_rate: Some(6.25e6),
            cpu_rel: Some(0.9),
            gpu_rel: Some(0.95),
            s_ceiling: Some(1.1875),
        }),
        error: time_s.is_none().then(|| "out of memory".to_string()),
    };
    let ok = KernelResult {
        kernel: "mandelbrot".into(),
        size: "512x512".into(),
        t_cpu: Some(0.040),
        t_gpu: Some(0.010),
        t_cpu_scheduler: Some("dynamic:64".into()),
        t_gpu_scheduler: Some("static".into()),
        verified: false,
        runs: vec![
            co("dynamic:5", Some(0.0095), true),
            co("dynamic:200", None, false),
            co("static", Some(0.0081), true),
            co("hguided:hints", Some(0.0083), false),
            co("hguided:nohints", Some(0.0125), true),
        ],
        solo: vec![
            solo("cpu", "static", Some(0.045)),
            solo("cpu", "dynamic:64", Some(0.040)),
            solo("gpu", "static", Some(0.010)),
            solo("gpu", "hguided", None),
        ],
        scaling: vec![ScalingPoint {
            items: 1024,
            size: "32x32".into(),
            t_cpu: None,
            t_cpu_estimate: Some(0.002),
            t_gpu: 0.001,
            t_coexec: 0.0009,
            verified: true,
        }],
        scaling_stop: Some("cpu, gpu, hguided: largest size reached".into()),
        error: None,
    };
    let failed = KernelResult {
        error: Some("unknown size".into()),
        ..super::kernel::empty_result("nbody", None)
    };
    let kernels = vec![ok, failed];
    SuiteReport {
        machine: Machine {
            cpu_model: "Test CPU".into(),
            cores_used: 2,
            gpu_names: vec!["llvmpipe".into()],
            vulkan_device_type: "cpu".into(),
            memory: "zero-copy".into(),
            date: "2026-01-02T03:04:05Z".into(),
            command: "coexec suite --quick".into(),
            energy_sources: if energy {
                vec!["RAPL package".into(), "NVML".into()]
            } else {
                Vec::new()
            },
            energy_notes: if energy {
                Vec::new()
            } else {
                vec!["no RAPL".into(), "no NVML".into()]
            },
        },
        settings: serde_json::json!({ "quick": true, "reps": 2 }),
        summary: summarise(&kernels),
        kernels,
        files: vec!["out/speedup.svg".into()],
        wall_s: 12.5,
        complete: true,
    }
}

/// A point with a measured CPU time (`t_cpu: Some`) or not.
pub(super) fn point(items: u64, t_cpu: Option<f64>, t_gpu: f64, t_coexec: f64) -> ScalingPoint {
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
