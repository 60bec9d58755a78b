//! Energy: the counters read once per window of runs, the power learned
//! from the windows, the report's per-run joules and energy-delay product
//! estimated from it ("unavailable" where no counter reads), and the EDP
//! objective's choice of devices, with fake counters injected through
//! `Engine::set_energy_sources` (the counters advance at a set power while
//! the test runs).

#![cfg(feature = "glsl")]

mod common;

use coexec::energy::{Basis, DevicePower, EnergySource, EnergySources, Unavailable};
use coexec::{Args, Devices, Engine, EngineOptions, IndexSpace, Objective, Scheduler, Validation};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A counter that advances at `watts` from its creation; `None`: it cannot
/// be read.
#[derive(Debug)]
struct Fake {
    since: Instant,
    watts: Option<f64>,
    reads: AtomicU64,
}

impl EnergySource for Fake {
    fn name(&self) -> String {
        "fake".into()
    }
    fn read_uj(&self) -> Result<u64, Unavailable> {
        // Relaxed: a count read after the runs, on the same thread.
        self.reads.fetch_add(1, Ordering::Relaxed);
        let w = self
            .watts
            .ok_or_else(|| Unavailable("permission denied".into()))?;
        Ok((self.since.elapsed().as_secs_f64() * w * 1e6) as u64)
    }
    fn wrap_uj(&self) -> Option<u64> {
        None
    }
}

fn fake(watts: Option<f64>) -> Arc<Fake> {
    Arc::new(Fake {
        since: Instant::now(),
        watts,
        reads: AtomicU64::new(0),
    })
}

fn engine(objective: Objective) -> Option<Engine> {
    common::engine_from(EngineOptions {
        workers: Some(1),
        validation: Validation::IfAvailable,
        pipeline_cache_dir: Some(std::path::PathBuf::new()),
        profiles: false,
        objective,
        ..Default::default()
    })
}

/// The counting kernel, its CPU side slowed so that both devices work.
fn kernel(e: &Engine) -> coexec::Kernel {
    let slow = common::slow_count_cpu(std::time::Duration::from_micros(20), u64::MAX);
    e.kernel_glsl("count", &common::count_glsl(64, 1, false), Some(slow))
        .unwrap()
}

/// Runs kernel `k` over `n` items (each item once) and returns the report.
fn count(
    e: &Engine,
    k: &coexec::Kernel,
    n: u64,
    sched: &Scheduler,
    devices: Devices,
) -> coexec::Report {
    let mut out = e.buffer::<u32>(n as usize).unwrap();
    let r = e
        .run(
            k,
            Args::new().output(&mut out).push(&[n as u32, 0, 0]),
            IndexSpace::D1(n),
            sched,
            devices,
        )
        .unwrap();
    assert!(out.iter().all(|&v| v == 1), "an item ran other than once");
    r
}

/// With a window of one run, the counters are read after each run: the
/// first opens the window, the next ones teach the CPU's power (100 W,
/// busy or idle), and their per-run joules are estimates from it, about
/// 100 W x the run's time; an unreadable counter leaves its device without
/// energy, and no readable counter leaves the report without any.
#[test]
fn the_report_estimates_joules_and_edp_from_windows() {
    let Some(e) = engine(Objective::Time) else {
        return;
    };
    e.set_energy_window(Duration::ZERO);
    e.set_energy_sources(EnergySources {
        cpu: vec![fake(Some(100.0))],
        gpu: Some(fake(None)),
    });
    let k = kernel(&e);
    let sched = Scheduler::Dynamic { packages: 8 };
    let first = count(&e, &k, 200_000, &sched, Devices::ALL);
    assert_eq!(first.energy, None, "nothing learned before a window closed");
    let mut r = first;
    for _ in 0..3 {
        r = count(&e, &k, 200_000, &sched, Devices::ALL);
    }
    let energy = r.energy.as_ref().expect("the CPU counter reads");
    assert_eq!(energy.basis, Basis::Estimated);
    let cpu_j = energy.devices[0].unwrap();
    assert!(
        (cpu_j / r.time_s - 100.0).abs() < 30.0,
        "{cpu_j} J in {} s",
        r.time_s
    );
    assert_eq!(energy.devices[1], None);
    assert_eq!(r.joules(), Some(cpu_j));
    assert!((r.edp().unwrap() - cpu_j * r.time_s).abs() < 1e-12);
    let [cpu_w, gpu_w] = e.device_power();
    assert!(cpu_w.is_some() && gpu_w.is_none(), "{cpu_w:?} {gpu_w:?}");
    assert_eq!(e.energy_reads(), 4);
    e.set_energy_sources(EnergySources {
        cpu: vec![fake(None)],
        gpu: None,
    });
    for _ in 0..2 {
        let r = count(&e, &k, 50_000, &sched, Devices::ALL);
        assert_eq!((&r.energy, r.joules(), r.edp()), (&None, None, None));
    }
    common::assert_validation_clean(&e);
}

/// Under the EDP objective the counters are read once per window (1 s by
/// default), not around each run.
#[test]
fn edp_reads_the_counters_once_per_window() {
    let Some(e) = engine(Objective::Edp) else {
        return;
    };
    let (cpu, gpu) = (fake(Some(10.0)), fake(Some(20.0)));
    e.set_energy_window(Duration::from_secs(3600));
    e.set_energy_sources(EnergySources {
        cpu: vec![cpu.clone()],
        gpu: Some(gpu.clone()),
    });
    let k = kernel(&e);
    for _ in 0..5 {
        count(&e, &k, 20_000, &Scheduler::hguided(), Devices::ALL);
    }
    // One reading (the window's start) of each counter in five runs.
    assert_eq!(e.energy_reads(), 1);
    assert_eq!(cpu.reads.load(Ordering::Relaxed), 1);
    assert_eq!(gpu.reads.load(Ordering::Relaxed), 1);
}

/// With EDP as the objective, HGuided leaves out the device that draws a
/// million watts busy against the other's 1 W once both devices' costs are
/// known (a run of each alone measures them), whichever device that is;
/// under the time objective the same power changes nothing.
#[test]
fn edp_leaves_out_the_hungry_device() {
    use coexec::DeviceKind::{Cpu, Gpu};
    for (objective, hungry) in [
        (Objective::Edp, Cpu),
        (Objective::Edp, Gpu),
        (Objective::Time, Gpu),
    ] {
        let Some(e) = engine(objective) else {
            return;
        };
        let power = |kind| DevicePower {
            active_w: if kind == hungry { 1e6 } else { 1.0 },
            idle_w: 1.0,
        };
        e.set_device_power(Some(power(Cpu)), Some(power(Gpu)));
        let k = kernel(&e);
        for alone in [Devices::CPU, Devices::GPU] {
            count(&e, &k, 400_000, &Scheduler::hguided(), alone);
        }
        let r = count(&e, &k, 400_000, &Scheduler::hguided(), Devices::ALL);
        let of = |kind| r.devices.iter().find(|d| d.kind == kind).unwrap();
        let case = format!("{objective} with a hungry {hungry}: {:?}", r.devices);
        if objective == Objective::Edp {
            assert_eq!(of(hungry).packages, 0, "{case}");
            assert_eq!(of(hungry).declined_s, Some(f64::INFINITY), "{case}");
            assert!(
                of(if hungry == Cpu { Gpu } else { Cpu }).packages > 0,
                "{case}"
            );
        } else {
            // The GPU is far faster here: time keeps it.
            assert!(of(Gpu).packages > 0, "{case}");
        }
        common::assert_validation_clean(&e);
    }
}

/// The power learned from windows drives the EDP choice: a GPU counter
/// that reads a million watts over a window in which the GPU ran teaches
/// that busy power, and the GPU (the faster device here, which the time
/// objective keeps) then sits out.
#[test]
fn edp_uses_the_power_learned_from_windows() {
    let Some(e) = engine(Objective::Edp) else {
        return;
    };
    e.set_energy_window(Duration::ZERO);
    e.set_energy_sources(EnergySources {
        cpu: vec![fake(Some(1.0))],
        gpu: Some(fake(Some(1e6))),
    });
    let k = kernel(&e);
    // The CPU-alone run opens the window; the GPU-alone run closes it.
    for alone in [Devices::CPU, Devices::GPU] {
        count(&e, &k, 400_000, &Scheduler::hguided(), alone);
    }
    let [_, gpu_w] = e.device_power();
    let gpu_w = gpu_w.expect("learned");
    assert!(gpu_w.active_w > 1e5 && gpu_w.idle_w < 1e3, "{gpu_w:?}");
    let r = count(&e, &k, 400_000, &Scheduler::hguided(), Devices::ALL);
    let gpu = &r.devices[1];
    assert_eq!(gpu.packages, 0, "{:?}", r.devices);
    assert_eq!(gpu.declined_s, Some(f64::INFINITY));
    assert!(r.devices[0].packages > 0);
}
