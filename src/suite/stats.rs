//! Statistics of the suite: means over kernels, the per-scheduler summary,
//! medians of repetitions and the CPU's share of a run.

use super::options::SCHEDULERS;
use super::schema::{CoRun, KernelResult, SchedulerSummary};
use crate::{DeviceKind, Report};

/// The geometric mean (`None` for no values).
pub(super) fn geomean(v: &[f64]) -> Option<f64> {
    (!v.is_empty()).then(|| (v.iter().map(|x| x.ln()).sum::<f64>() / v.len() as f64).exp())
}

/// The arithmetic mean (`None` for no values).
pub(super) fn mean(v: &[f64]) -> Option<f64> {
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

/// The median of values sorted in ascending order: the mean of the two
/// middle ones for an even count. `sorted` must not be empty.
pub(super) fn median_of_sorted(sorted: &[f64]) -> f64 {
    let n = sorted.len();
    (sorted[(n - 1) / 2] + sorted[n / 2]) / 2.0
}

/// Per scheduler of [`SCHEDULERS`], its aggregates over the kernels where
/// it has a heterogeneous efficiency.
pub(super) fn summarise(kernels: &[KernelResult]) -> Vec<SchedulerSummary> {
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

/// The CPU's share of the work-items of a run.
pub(super) fn cpu_share(r: &Report) -> Option<f64> {
    (r.items > 0).then(|| {
        r.devices
            .iter()
            .filter(|d| d.kind == DeviceKind::Cpu)
            .map(|d| d.items)
            .sum::<u64>() as f64
            / r.items as f64
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::suite::fixture::fixture;

    #[test]
    fn means() {
        assert!((geomean(&[1.0, 4.0]).unwrap() - 2.0).abs() < 1e-12);
        assert_eq!(mean(&[]), None);
        assert_eq!(geomean(&[]), None);
        assert_eq!(mean(&[1.0, 2.0, 6.0]), Some(3.0));
    }

    #[test]
    fn medians_of_odd_and_even_counts() {
        assert_eq!(median_of_sorted(&[1.0, 2.0, 9.0]), 2.0);
        assert_eq!(median_of_sorted(&[1.0, 2.0, 4.0, 9.0]), 3.0);
        assert_eq!(median_of_sorted(&[5.0]), 5.0);
    }

    #[test]
    fn summary_skips_failed_runs() {
        let r = fixture(false);
        let s = summarise(&r.kernels);
        assert_eq!(s.len(), SCHEDULERS.len());
        // `dynamic:200` failed on the only kernel that ran.
        assert_eq!((s[1].scheduler.as_str(), s[1].kernels), ("dynamic:200", 0));
        assert_eq!(s[1].mean_he, None);
        // `static`: 10 ms fastest over 8.1 ms, S_max 1.25.
        assert_eq!(s[2].kernels, 1);
        let he = s[2].mean_he.unwrap();
        assert!((he - 0.010 / 0.0081 / 1.25).abs() < 1e-12, "{he}");
        assert_eq!(s[2].min_he, s[2].mean_he);
    }
}
