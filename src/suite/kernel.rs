//! One kernel of the suite: its solo baselines on each device, then its
//! co-executed runs with each scheduler, with the papers' yardsticks.

use super::energy::EnergyMeter;
use super::measure::{co_scheduler, measure, solo_scheduler, split_gpu_power, Measured};
use super::options::{Options, SCHEDULERS};
use super::pictures;
use super::plots;
use super::schema::{CoRun, Corun, KernelResult, SoloRun};
use super::stats::cpu_share;
use crate::workloads::{self, Size, Workload};
use crate::{Devices, Engine, Scheduler};
use indicatif::ProgressBar;

/// What every measurement of a suite run shares.
pub(super) struct Ctx<'a> {
    /// The engine.
    pub(super) engine: &'a Engine,
    /// The suite's options.
    pub(super) opts: &'a Options,
    /// Timed repetitions per configuration.
    pub(super) reps: usize,
    /// The energy counters.
    pub(super) meter: &'a EnergyMeter,
    /// The progress bar.
    pub(super) pb: &'a ProgressBar,
}

impl Ctx<'_> {
    /// Measures `w` with `scheduler` on `devices` (`w` `None`: `missing`).
    fn measure(
        &self,
        w: &mut Option<Box<dyn Workload>>,
        scheduler: &Scheduler,
        devices: Devices,
        missing: impl FnOnce() -> String,
    ) -> Result<Measured, String> {
        let w = w.as_deref_mut().ok_or_else(missing)?;
        let window = self.opts.energy_window_s();
        measure(
            w,
            self.engine,
            scheduler,
            devices,
            self.reps,
            self.meter,
            window,
        )
    }

    /// Configurations measured per kernel (for the progress bar).
    fn configs(&self) -> u64 {
        (2 * self.opts.solo_schedulers().len() + SCHEDULERS.len()) as u64
    }
}

/// The solo yardsticks of a kernel: `T_cpu`, `T_gpu`, `T_fastest`,
/// `S_max`, the fastest device's joules and the powers `1 / T_i`.
struct Baseline {
    t_cpu: f64,
    t_gpu: f64,
    t_fast: f64,
    s_max: f64,
    e_fast: Option<f64>,
    powers: [f64; 2],
}

/// Runs kernel `name`: solo baselines, then each co-executed scheduler.
/// A kernel that cannot run is recorded in the result (`error`); an `Err`
/// is only a picture that could not be written.
pub(super) fn run_kernel(
    ctx: &Ctx<'_>,
    name: &str,
    files: &mut Vec<String>,
) -> Result<KernelResult, String> {
    let size = kernel_size(ctx.opts, name);
    let mut kr = empty_result(name, size);
    let mut w = match workloads::create(name, ctx.engine, size) {
        Ok(w) => Some(w),
        Err(e) => {
            kr.error = Some(e);
            ctx.pb.inc(ctx.configs());
            return Ok(kr);
        }
    };
    kr.size = w
        .as_ref()
        .map(|w| w.space().to_string())
        .unwrap_or_default();
    solo_runs(ctx, &mut w, &mut kr);
    let Some(base) = baseline(&mut kr) else {
        let why: Vec<String> = kr.solo.iter().filter_map(|s| s.error.clone()).collect();
        kr.error = Some(format!(
            "a device failed every solo run: {}",
            why.join("; ")
        ));
        ctx.pb.inc(SCHEDULERS.len() as u64);
        return Ok(kr);
    };
    co_runs(ctx, &mut w, &base, &mut kr, size, files)?;
    kr.verified = kr.solo.iter().all(|s| s.verified) && kr.runs.iter().all(|r| r.verified);
    Ok(kr)
}

/// The size `name` runs at: the option's, else the quick or default one.
fn kernel_size(opts: &Options, name: &str) -> Option<Size> {
    opts.sizes.get(name).copied().or_else(|| {
        if opts.quick {
            workloads::quick_size(name)
        } else {
            workloads::default_size(name)
        }
    })
}

/// A result with nothing measured yet.
pub(super) fn empty_result(name: &str, size: Option<Size>) -> KernelResult {
    KernelResult {
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
    }
}

/// Each device alone with each solo scheduler (the CPU only with those of
/// `cpu_solo` where given), into `kr.solo`.
fn solo_runs(ctx: &Ctx<'_>, w: &mut Option<Box<dyn Workload>>, kr: &mut KernelResult) {
    let opts = ctx.opts;
    for (dev, devices) in [("cpu", Devices::CPU), ("gpu", Devices::GPU)] {
        for &key in opts.solo_schedulers() {
            let skipped = dev == "cpu"
                && opts
                    .cpu_solo
                    .as_ref()
                    .is_some_and(|only| !only.iter().any(|k| k == key));
            if skipped {
                continue;
            }
            ctx.pb
                .set_message(format!("{} {}: {dev} alone, {key}", kr.kernel, kr.size));
            let m = ctx.measure(w, &solo_scheduler(key), devices, || {
                "no workload".to_string()
            });
            ctx.pb.inc(1);
            kr.solo.push(solo_run(dev, key, m));
        }
    }
}

/// The record of one solo measurement.
fn solo_run(dev: &str, key: &str, m: Result<Measured, String>) -> SoloRun {
    match m {
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
    }
}

/// Sets `kr`'s solo times to each device's fastest solo run (the first of
/// equal times) and returns the yardsticks, `None` where a device has no
/// successful solo run.
fn baseline(kr: &mut KernelResult) -> Option<Baseline> {
    let best = |dev: &str| {
        kr.solo
            .iter()
            .filter(|s| s.device == dev)
            .filter_map(|s| s.time_s.map(|t| (t, s)))
            .min_by(|a, b| a.0.total_cmp(&b.0))
            .map(|(_, s)| s.clone())
    };
    let (cpu, gpu) = (best("cpu"), best("gpu"));
    kr.t_cpu = cpu.as_ref().and_then(|s| s.time_s);
    kr.t_cpu_scheduler = cpu.as_ref().map(|s| s.scheduler.clone());
    kr.t_gpu = gpu.as_ref().and_then(|s| s.time_s);
    kr.t_gpu_scheduler = gpu.as_ref().map(|s| s.scheduler.clone());
    let (t_cpu, t_gpu) = (kr.t_cpu?, kr.t_gpu?);
    let t_fast = t_cpu.min(t_gpu);
    let fastest = if t_cpu <= t_gpu { cpu } else { gpu };
    Some(Baseline {
        t_cpu,
        t_gpu,
        t_fast,
        s_max: t_fast * (1.0 / t_cpu + 1.0 / t_gpu),
        e_fast: fastest.and_then(|s| s.energy_j),
        powers: [1.0 / t_cpu, 1.0 / t_gpu],
    })
}

/// Each co-executed scheduler of [`SCHEDULERS`] (those of `schedulers`
/// where given), into `kr.runs`; `hguided:nohints` on a fresh instance of
/// the workload. With `out`, the trace and timeline of `hguided:hints`.
fn co_runs(
    ctx: &Ctx<'_>,
    w: &mut Option<Box<dyn Workload>>,
    base: &Baseline,
    kr: &mut KernelResult,
    size: Option<Size>,
    files: &mut Vec<String>,
) -> Result<(), String> {
    let name = kr.kernel.clone();
    let mut fresh_error: Option<String> = None;
    for (key, label) in SCHEDULERS {
        let chosen = ctx.opts.schedulers.as_ref();
        if chosen.is_some_and(|only| !only.iter().any(|k| k == key)) {
            continue;
        }
        ctx.pb
            .set_message(format!("{name} {}: co-executed, {label}", kr.size));
        if key == "hguided:nohints" {
            // A fresh instance (the old one freed first): no powers learned
            // from the runs above.
            *w = None;
            match workloads::create(&name, ctx.engine, size) {
                Ok(fresh) => *w = Some(fresh),
                Err(e) => fresh_error = Some(e),
            }
        }
        let powers = split_gpu_power(&base.powers, ctx.engine.gpu_count());
        let scheduler = co_scheduler(key, &powers);
        let m = ctx.measure(w, &scheduler, Devices::ALL, || {
            fresh_error.clone().unwrap_or_else(|| "no workload".into())
        });
        ctx.pb.inc(1);
        if let (Ok(m), Some(out), "hguided:hints") = (&m, &ctx.opts.out, key) {
            // The figures of the repetition shown (the lower median), not
            // the median over repetitions.
            let shown = m.report.time_s;
            let title = format!(
                "{name} {}, {label}: {}, balance {:.2}, HE {:.2}",
                kr.size,
                plots::seconds_label(shown),
                m.report.balance(),
                base.t_fast / shown / base.s_max
            );
            pictures::run_pictures(out, &name, &title, &m.report, files)?;
        }
        kr.runs.push(co_run(key, base, m));
    }
    Ok(())
}

/// The record of one co-executed measurement against the baseline.
fn co_run(key: &str, base: &Baseline, m: Result<Measured, String>) -> CoRun {
    match m {
        Ok(m) => {
            let s = base.t_fast / m.time_s;
            CoRun {
                scheduler: key.into(),
                time_s: Some(m.time_s),
                speedup: Some(s),
                s_max: Some(base.s_max),
                he: Some(s / base.s_max),
                balance: Some(m.report.balance()),
                packages: Some(m.report.package_count()),
                cpu_share: cpu_share(&m.report),
                verified: m.verified,
                energy_j: m.energy_j,
                edp_rel: m
                    .energy_j
                    .zip(base.e_fast)
                    .filter(|(_, ef)| *ef > 0.0)
                    .map(|(e, ef)| (e * m.time_s) / (ef * base.t_fast)),
                corun: Some(Corun::of(&m.report, base.t_cpu, base.t_gpu)),
                error: None,
            }
        }
        Err(e) => CoRun {
            scheduler: key.into(),
            time_s: None,
            speedup: None,
            s_max: Some(base.s_max),
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
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::suite::fixture::fixture;

    #[test]
    fn baseline_is_each_devices_fastest_solo_run() {
        let mut kr = fixture(true).kernels.remove(0);
        (kr.t_cpu, kr.t_gpu, kr.t_cpu_scheduler) = (None, None, None);
        let b = baseline(&mut kr).unwrap();
        // CPU: 45 ms (static) and 40 ms (dynamic:64); GPU: 10 ms (static),
        // its hguided run failed.
        assert_eq!((b.t_cpu, b.t_gpu, b.t_fast), (0.040, 0.010, 0.010));
        assert_eq!(kr.t_cpu_scheduler.as_deref(), Some("dynamic:64"));
        assert_eq!(kr.t_gpu_scheduler.as_deref(), Some("static"));
        assert!((b.s_max - 1.25).abs() < 1e-12, "{}", b.s_max);
        // The fixture's solo energy is 40 J/s of run time: the GPU's run.
        assert!((b.e_fast.unwrap() - 0.4).abs() < 1e-12);
        assert_eq!(b.powers, [25.0, 100.0]);
        // A device without a successful solo run: no baseline.
        kr.solo.retain(|s| s.device == "cpu");
        assert!(baseline(&mut kr).is_none());
        assert_eq!(kr.t_gpu, None);
    }

    #[test]
    fn failed_co_runs_keep_s_max_and_the_error() {
        let b = Baseline {
            t_cpu: 0.04,
            t_gpu: 0.01,
            t_fast: 0.01,
            s_max: 1.25,
            e_fast: None,
            powers: [25.0, 100.0],
        };
        let r = co_run("static", &b, Err("device lost".into()));
        assert_eq!(r.s_max, Some(1.25));
        assert_eq!((r.time_s, r.he, r.verified), (None, None, false));
        assert_eq!(r.error.as_deref(), Some("device lost"));
        let s = solo_run("gpu", "hguided", Err("device lost".into()));
        assert_eq!((s.time_s, s.error.as_deref()), (None, Some("device lost")));
    }

    #[test]
    fn option_sizes_override_the_defaults() {
        let mut opts = Options::default();
        assert_eq!(
            kernel_size(&opts, "mandelbrot"),
            workloads::default_size("mandelbrot")
        );
        opts.quick = true;
        assert_eq!(
            kernel_size(&opts, "mandelbrot"),
            workloads::quick_size("mandelbrot")
        );
        opts.sizes.insert("mandelbrot".into(), Size::Image(64, 32));
        assert_eq!(kernel_size(&opts, "mandelbrot"), Some(Size::Image(64, 32)));
    }
}
