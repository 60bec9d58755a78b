//! Section 3, `gpu_gap`: the GPU's idle gap between consecutive packages.

use crate::args::Opts;
use crate::stats::{median, repeat, Runs};
use crate::table::{ms, target, Table};
use coexec::workloads::{Mandelbrot, Saxpy, Workload};
use coexec::{DeviceKind, Devices, Engine, Scheduler};
use serde_json::{json, Value};

pub(crate) fn gap_row(t: &mut Table, name: &str, sched: &Scheduler, runs: &Runs) -> Value {
    let gaps: Vec<_> = runs
        .reports
        .iter()
        .filter_map(|r| {
            r.devices
                .iter()
                .find(|d| d.kind == DeviceKind::Gpu)
                .and_then(|d| d.gpu_gaps)
        })
        .collect();
    let r = runs.mid();
    let pk = r.package_count();
    if gaps.is_empty() {
        t.row(vec![
            name.into(),
            sched.to_string(),
            ms(runs.time()),
            pk.to_string(),
            "n/a".into(),
            "n/a".into(),
            "n/a".into(),
            "0".into(),
            "n/a".into(),
        ]);
        return json!({ "scheduler": sched.to_string(), "runs": runs.json(), "gaps": null });
    }
    let med = median(&gaps.iter().map(|g| g.median_us).collect::<Vec<_>>());
    let total_count: usize = gaps.iter().map(|g| g.count).sum();
    let mean =
        gaps.iter().map(|g| g.mean_us * g.count as f64).sum::<f64>() / total_count.max(1) as f64;
    let max = gaps.iter().map(|g| g.max_us).fold(0.0, f64::max);
    let count = total_count as f64 / gaps.len() as f64;
    t.row(vec![
        name.into(),
        sched.to_string(),
        ms(runs.time()),
        pk.to_string(),
        format!("{med:.2}"),
        format!("{mean:.2}"),
        format!("{max:.2}"),
        format!("{count:.0}"),
        target(med < 10.0, "< 10 us"),
    ]);
    json!({
        "scheduler": sched.to_string(),
        "runs": runs.json(),
        "gap_median_us": med,
        "gap_mean_us": mean,
        "gap_max_us": max,
        "gaps_per_run": count,
        "per_run": gaps.iter().map(|g| json!({
            "count": g.count, "median_us": g.median_us, "mean_us": g.mean_us, "max_us": g.max_us
        })).collect::<Vec<_>>(),
        "target_median_us": 10.0,
        "pass": med < 10.0,
    })
}

pub(crate) fn bench_gpu_gap(o: &Opts, e: &Engine, t: &mut Table) -> Result<Value, String> {
    let mut out = Vec::new();
    let mut saxpy = Saxpy::new(e, o.saxpy).map_err(|x| x.to_string())?;
    for packages in [64, 512] {
        let s = Scheduler::Dynamic { packages };
        let runs = repeat(o, || saxpy.run(e, &s, Devices::GPU))?;
        let name = format!("saxpy {}", o.saxpy);
        out.push(json!({ "workload": name, "result": gap_row(t, &name, &s, &runs) }));
    }
    drop(saxpy);
    let (w, h) = o.mandel;
    let mut mandel = Mandelbrot::new(e, w, h, o.iters).map_err(|x| x.to_string())?;
    // HGuided with the GPU alone is one package (nothing to balance), so its
    // gaps are measured co-executed, where it cuts the range.
    for (s, devices, label) in [
        (Scheduler::Dynamic { packages: 64 }, Devices::GPU, ""),
        (Scheduler::hguided(), Devices::ALL, ", cpu+gpu"),
    ] {
        let runs = repeat(o, || mandel.run(e, &s, devices))?;
        let name = format!("mandelbrot {w}x{h}{label}");
        out.push(json!({ "workload": name, "result": gap_row(t, &name, &s, &runs) }));
    }
    t.note(
        "GPU-only runs except 'cpu+gpu'; gaps from GPU timestamp queries \
         (Report.devices[gpu].gpu_gaps): median = median over reps of each run's median, \
         mean = over all gaps, max = over all runs, count = gaps per run. Timestamps read \
         back by the ring's mode (StampRead; COEXEC_GPU_TIMESTAMPS overrides).",
    );
    Ok(Value::Array(out))
}
