//! Windows, power fits and sampled power, with fake sources: counters set
//! by the test that advance in coarse steps, wrap, or cannot be read.

use super::*;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

/// A counter set by the test, read in steps of `step_uj` (as NVML's
/// advances), wrapping at `wrap`, or unreadable.
#[derive(Debug)]
struct Stepped {
    uj: AtomicU64,
    step_uj: u64,
    wrap: Option<u64>,
    readable: bool,
}

impl EnergySource for Stepped {
    fn name(&self) -> String {
        "stepped".into()
    }
    fn read_uj(&self) -> Result<u64, Unavailable> {
        if !self.readable {
            return Err(Unavailable("permission denied".into()));
        }
        // Relaxed: one test thread sets and reads it.
        let v = self.uj.load(Ordering::Relaxed);
        let v = self.wrap.map_or(v, |w| v % w);
        Ok(v / self.step_uj * self.step_uj)
    }
    fn wrap_uj(&self) -> Option<u64> {
        self.wrap
    }
}

fn stepped(step_uj: u64, wrap: Option<u64>, readable: bool) -> Arc<Stepped> {
    Arc::new(Stepped {
        uj: AtomicU64::new(0),
        step_uj,
        wrap,
        readable,
    })
}

fn advance(s: &Stepped, uj: u64) {
    // Relaxed: as in `read_uj`.
    s.uj.fetch_add(uj, Ordering::Relaxed);
}

fn device(label: &str, sources: Vec<Arc<dyn EnergySource>>) -> MeteredDevice {
    MeteredDevice {
        label: label.into(),
        sources,
    }
}

/// One short run reads 0 J of a counter stepping by 1 J (no figure, not
/// 0 J); a window of 20 runs spans the steps and gives joules per run
/// within a step of the truth.
#[test]
fn a_window_spans_a_coarse_counter() {
    let gpu = stepped(1_000_000, None, true);
    advance(&gpu, 400_000); // mid-step
    let meter = WindowMeter::new(vec![device("gpu0", vec![gpu.clone()])]);
    let one = meter.start();
    advance(&gpu, 300_000); // a 0.3 J run
    let w = meter.finish(&one, 1, &[0.01]);
    assert_eq!(w.devices[0].joules, None, "below the counter's step");
    assert_eq!(w.per_run_j(0), None);
    let start = meter.start();
    for _ in 0..20 {
        advance(&gpu, 300_000);
    }
    let w = meter.finish(&start, 20, &[0.2]);
    let per_run = w.per_run_j(0).unwrap();
    assert!((per_run - 0.3).abs() <= 1.0 / 20.0, "{per_run}");
    assert_eq!(w.total_per_run_j(), Some(per_run));
    assert_eq!(w.devices[0].busy_s, 0.2);
    assert_eq!(w.devices[0].label, "gpu0");
}

/// A RAPL-like counter that wraps within the window still reads; an
/// unreadable one gives no figure for its device only; a device without
/// counters has none.
#[test]
fn windows_wrap_and_unreadable_devices_have_no_figure() {
    let wrap = 10_000_000;
    let cpu = stepped(1, Some(wrap), true);
    advance(&cpu, 9_000_000);
    let locked = stepped(1, None, false);
    let meter = WindowMeter::new(vec![
        device("cpu", vec![cpu.clone()]),
        device("gpu0", vec![locked]),
        device("gpu1", vec![]),
    ]);
    assert!(meter.available());
    let start = meter.start();
    advance(&cpu, 4_000_000); // past the wrap
    let w = meter.finish(&start, 4, &[1.0, 2.0]);
    assert_eq!(w.per_run_j(0), Some(1.0));
    assert_eq!((w.per_run_j(1), w.per_run_j(2)), (None, None));
    assert_eq!(w.devices[2].busy_s, 0.0);
    assert_eq!(w.total_per_run_j(), Some(1.0));
    assert!(w.mean_w(0).unwrap() > 0.0);
    // Nothing readable: nothing at all.
    let none = WindowMeter::new(vec![device("cpu", vec![])]);
    assert!(!none.available());
    let w = none.finish(&none.start(), 3, &[]);
    assert_eq!((w.total_per_run_j(), w.mean_w(0)), (None, None));
    // No runs: no per-run figure.
    let w = meter.finish(&meter.start(), 0, &[]);
    assert_eq!(w.per_run_j(0), None);
}

const fn w(active_w: f64, idle_w: f64) -> DevicePower {
    DevicePower { active_w, idle_w }
}

/// The model E = active x busy + idle x (wall - busy) recovers the busy
/// power of a window with the prior's idle power; a mostly idle window
/// teaches the idle power; nonsense gives nothing.
#[test]
fn power_is_fitted_from_windows() {
    // 2 s window, busy 0.5 s at 300 W, idle 50 W: 150 + 75 J.
    let fit = fit_power(225.0, 2.0, 0.5, w(250.0, 50.0)).unwrap();
    assert!((fit.active_w - 300.0).abs() < 1e-9, "{fit:?}");
    assert_eq!(fit.idle_w, 50.0);
    // Idle 2 s at 40 W: the idle power is learned, the busy kept.
    let fit = fit_power(80.0, 2.0, 0.0, w(250.0, 50.0)).unwrap();
    assert_eq!(fit, w(250.0, 40.0));
    // A prior idle power above the window's mean is capped by it, and the
    // busy power is never below the idle power.
    let fit = fit_power(10.0, 1.0, 0.5, w(250.0, 50.0)).unwrap();
    assert_eq!(fit, w(10.0, 10.0));
    assert_eq!(fit_power(f64::NAN, 1.0, 0.5, w(1.0, 1.0)), None);
    assert_eq!(fit_power(1.0, 0.0, 0.0, w(1.0, 1.0)), None);
    assert_eq!(fit_power(1.0, 1.0, -1.0, w(1.0, 1.0)), None);
    // One run's estimate from the learned power.
    assert!((estimate_j(w(300.0, 50.0), 0.02, 0.01) - 3.5).abs() < 1e-12);
    assert_eq!(estimate_j(w(300.0, 50.0), 0.01, 0.5), 3.0);
}

/// A power source of `watts`; every `fail_every`-th read fails.
#[derive(Debug)]
struct Power {
    watts: Option<f64>,
    fail_every: usize,
    reads: AtomicUsize,
}

impl PowerSource for Power {
    fn name(&self) -> String {
        "power".into()
    }
    fn read_mw(&self) -> Result<u64, Unavailable> {
        // Relaxed: a count of this source's own reads.
        let n = self.reads.fetch_add(1, Ordering::Relaxed) + 1;
        match self.watts {
            Some(_) if self.fail_every > 0 && n % self.fail_every == 0 => {
                Err(Unavailable("busy".into()))
            }
            Some(w) => Ok((w * 1e3) as u64),
            None => Err(Unavailable("no power reading".into())),
        }
    }
}

fn power(watts: Option<f64>, fail_every: usize) -> Arc<dyn PowerSource> {
    Arc::new(Power {
        watts,
        fail_every,
        reads: AtomicUsize::new(0),
    })
}

/// 100 W sampled every 5 ms over ~200 ms integrates to 100 W x the span;
/// failed reads are bridged; an unreadable source gives nothing.
#[test]
fn sampled_power_integrates() {
    let s = PowerSampler::start(power(Some(100.0), 3), Duration::from_millis(5));
    std::thread::sleep(Duration::from_millis(200));
    let got = s.stop().unwrap();
    assert!(got.samples >= 2 && got.failed >= 1, "{got:?}");
    assert!(got.span_s >= 0.19, "{got:?}");
    assert!((got.joules - 100.0 * got.span_s).abs() < 1e-6, "{got:?}");
    let s = PowerSampler::start(power(None, 0), Duration::from_millis(5));
    std::thread::sleep(Duration::from_millis(20));
    assert_eq!(s.stop(), None);
    // Dropped without stopping: the thread ends.
    drop(PowerSampler::start(
        power(Some(1.0), 0),
        Duration::from_secs(3600),
    ));
}
