//! The suite's pictures and traces: a run's timeline and trace, a kernel's
//! scaling chart, and the speedup and efficiency bar charts over kernels
//! (drawn by [`plots`]).

use super::options::SCHEDULERS;
use super::plots;
use super::schema::{CoRun, KernelResult, ScalingPoint, SuiteReport};
use crate::{DeviceKind, Report};
use std::path::Path;

/// The trace and the timeline picture of one run.
pub(super) fn run_pictures(
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

/// `scaling-KERNEL.svg`: `kr`'s sweep, one series per device alone (with
/// the solo scheduler named) and one co-executed (nothing without points).
pub(super) fn scaling_pictures(
    out: &Path,
    kr: &KernelResult,
    cpu_key: &str,
    gpu_key: &str,
    files: &mut Vec<String>,
) -> Result<(), String> {
    if kr.scaling.is_empty() {
        return Ok(());
    }
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
    Ok(())
}

/// `speedup.svg` and `he.svg`.
pub(super) fn summary_plots(
    r: &SuiteReport,
    out: &Path,
    files: &mut Vec<String>,
) -> Result<(), String> {
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
    use crate::suite::fixture::fixture;

    #[test]
    fn summary_and_scaling_pictures_are_written_and_listed() {
        let dir = std::env::temp_dir().join(format!("coexec-pictures-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let r = fixture(false);
        let mut files = Vec::new();
        summary_plots(&r, &dir, &mut files).unwrap();
        scaling_pictures(&dir, &r.kernels[0], "dynamic:64", "static", &mut files).unwrap();
        // The failed kernel has no scaling points: no picture.
        scaling_pictures(&dir, &r.kernels[1], "static", "static", &mut files).unwrap();
        let names: Vec<String> = files
            .iter()
            .map(|f| {
                Path::new(f)
                    .file_name()
                    .unwrap()
                    .to_string_lossy()
                    .into_owned()
            })
            .collect();
        assert_eq!(names, ["speedup.svg", "he.svg", "scaling-mandelbrot.svg"]);
        for f in &files {
            let svg = std::fs::read_to_string(f).unwrap();
            assert!(
                svg.starts_with("<svg"),
                "{f}: {}",
                &svg[..svg.len().min(40)]
            );
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
