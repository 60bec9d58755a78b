//! Statistics of repeated runs: medians and the engine runs of a series.

use crate::args::Opts;
use coexec::Report;
use serde_json::{json, Value};
use std::time::Instant;

/// The median (mean of the middle two of an even count; NaN for none).
pub(crate) fn median(xs: &[f64]) -> f64 {
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

/// Index of the sample at the (lower) median.
pub(crate) fn median_index(xs: &[f64]) -> usize {
    let mut idx: Vec<usize> = (0..xs.len()).collect();
    idx.sort_by(|&a, &b| xs[a].total_cmp(&xs[b]));
    idx.get(xs.len().saturating_sub(1) / 2)
        .copied()
        .unwrap_or(0)
}

/// Engine runs: wall time around each call and the engine's reports.
#[derive(Default)]
pub(crate) struct Runs {
    pub(crate) wall_s: Vec<f64>,
    pub(crate) reports: Vec<Report>,
}

impl Runs {
    /// Records a run that started at `t`, if it is `measured` (not a
    /// warm-up).
    pub(crate) fn push(&mut self, measured: bool, t: Instant, r: Option<Report>) {
        if measured {
            self.wall_s.push(t.elapsed().as_secs_f64());
            self.reports.extend(r);
        }
    }
    pub(crate) fn wall(&self) -> f64 {
        median(&self.wall_s)
    }
    pub(crate) fn times(&self) -> Vec<f64> {
        self.reports.iter().map(|r| r.time_s).collect()
    }
    pub(crate) fn time(&self) -> f64 {
        median(&self.times())
    }
    /// The report of the run with the median engine time.
    pub(crate) fn mid(&self) -> &Report {
        &self.reports[median_index(&self.times())]
    }
    pub(crate) fn json(&self) -> Value {
        let r = self.mid();
        json!({
            "wall_s": self.wall_s,
            "wall_median_s": self.wall(),
            "engine_time_s": self.times(),
            "engine_time_median_s": self.time(),
            "packages": r.package_count(),
            "balance": r.balance(),
            "devices": r.devices.iter().map(|d| json!({
                "name": d.name,
                "kind": d.kind.to_string(),
                "packages": d.packages,
                "items": d.items,
                "busy_s": d.busy_s,
                "gpu_busy_s": d.gpu_busy_s,
                "finish_s": d.finish_s,
            })).collect::<Vec<_>>(),
        })
    }
}

pub(crate) fn repeat(
    o: &Opts,
    mut f: impl FnMut() -> coexec::Result<Report>,
) -> Result<Runs, String> {
    for _ in 0..o.warmup {
        f().map_err(|e| e.to_string())?;
    }
    let mut runs = Runs::default();
    for _ in 0..o.reps {
        let t = Instant::now();
        let r = f().map_err(|e| e.to_string())?;
        runs.push(true, t, Some(r));
    }
    Ok(runs)
}
