//! Scaling sweeps: time against problem size for the CPU alone, the GPU
//! alone and HGuided co-executed, each series up to its own time budget.

use super::energy::EnergyMeter;
use super::measure::{co_scheduler, measure, solo_scheduler, split_gpu_power};
use super::options::Options;
use super::pictures;
use super::schema::{KernelResult, ScalingPoint};
use crate::workloads::{self, Size};
use crate::{Devices, Engine, Scheduler};
use indicatif::ProgressBar;

/// Seconds of one run (one configuration at one size) of a scaling sweep
/// above which the sweep stops growing.
pub const SCALING_BUDGET_S: f64 = 2.0;

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

/// The solo schedulers of a sweep's series: each device's best solo one.
struct SeriesKeys {
    cpu: String,
    gpu: String,
}

/// Time against problem size for CPU alone, GPU alone (each with its best
/// solo scheduler) and HGuided co-executed, each series up to its own time
/// budget (see [`sweep`]).
pub(super) fn scaling(
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
    let keys = SeriesKeys {
        cpu: kr
            .t_cpu_scheduler
            .clone()
            .unwrap_or_else(|| "hguided".into()),
        gpu: kr
            .t_gpu_scheduler
            .clone()
            .unwrap_or_else(|| "hguided".into()),
    };
    let kernel = &kr.kernel;
    let step = if opts.quick { 4.0 } else { 2.0 };
    let (points, stop) = sweep(&sizes, step, |n, with_cpu, points| {
        pb.set_message(format!("{kernel} scaling: {n} work-items"));
        let point = scaling_point(engine, kernel, &keys, reps, n, with_cpu, points);
        pb.inc(1);
        point
    });
    pb.inc(sizes.len().saturating_sub(points.len()) as u64);
    if points.iter().any(|p| !p.verified) {
        kr.verified = false;
    }
    kr.scaling = points;
    kr.scaling_stop = Some(stop);
    if let Some(out) = &opts.out {
        pictures::scaling_pictures(out, kr, &keys.cpu, &keys.gpu, files)?;
    }
    Ok(())
}

/// One point of a sweep of `kernel` at about `n` work-items: the CPU alone
/// (only `with_cpu`), the GPU alone and HGuided with the solo times as hints
/// (the CPU's extrapolated from `points` where it is not measured).
fn scaling_point(
    engine: &Engine,
    kernel: &str,
    keys: &SeriesKeys,
    reps: usize,
    n: u64,
    with_cpu: bool,
    points: &[ScalingPoint],
) -> Result<ScalingPoint, String> {
    let meter = EnergyMeter::none();
    let size = size_for_items(kernel, n);
    let mut w =
        workloads::create(kernel, engine, Some(size)).map_err(|e| format!("{size}: {e}"))?;
    let (items, space) = (w.space().items(), w.space().to_string());
    let mut run = |sched: &Scheduler, devices, series: &str| {
        measure(&mut *w, engine, sched, devices, reps, &meter, 0.0)
            .map_err(|e| format!("{space}, {series} run: {e}"))
    };
    let cpu = if with_cpu {
        Some(run(&solo_scheduler(&keys.cpu), Devices::CPU, "cpu")?)
    } else {
        None
    };
    let gpu = run(&solo_scheduler(&keys.gpu), Devices::GPU, "gpu")?;
    let t_cpu = cpu.as_ref().map(|c| c.time_s);
    let t_cpu_estimate = match t_cpu {
        Some(_) => None,
        None => extrapolate_cpu(points, items),
    };
    // Without any CPU time (never: the CPU series stops only after a
    // measured point), HGuided measures the powers itself.
    let co_sched = match t_cpu.or(t_cpu_estimate) {
        Some(t) => co_scheduler(
            "hguided:hints",
            &split_gpu_power(&[1.0 / t, 1.0 / gpu.time_s], engine.gpu_count()),
        ),
        None => Scheduler::hguided(),
    };
    let co = run(&co_sched, Devices::ALL, "hguided")?;
    Ok(ScalingPoint {
        items,
        size: space,
        t_cpu,
        t_cpu_estimate,
        t_gpu: gpu.time_s,
        t_coexec: co.time_s,
        verified: cpu.as_ref().is_none_or(|c| c.verified) && gpu.verified && co.verified,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::suite::fixture::point;

    #[test]
    fn sizes() {
        assert_eq!(scaling_sizes(true), [1 << 10, 1 << 12, 1 << 14, 1 << 16]);
        assert_eq!(scaling_sizes(false).len(), 17);
        assert_eq!(size_for_items("matmul", 1 << 20), Size::Image(1024, 1024));
        assert_eq!(size_for_items("taylor", 1 << 20), Size::Linear(1 << 20));
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
}
