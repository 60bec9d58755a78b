//! Energy: joules and energy-delay product in the report where a counter
//! reads ("unavailable" where none does), and the EDP objective's choice of
//! devices, with fake counters injected through
//! `Engine::set_energy_sources` (the counters advance at a set power while
//! the test runs).

#![cfg(feature = "glsl")]

mod common;

use coexec::energy::{EnergySource, EnergySources, Unavailable};
use coexec::{Args, Devices, Engine, EngineOptions, IndexSpace, Objective, Scheduler, Validation};
use std::sync::Arc;
use std::time::Instant;

/// A counter that advances at `watts` from its creation; `None`: it cannot
/// be read.
#[derive(Debug)]
struct Fake {
    since: Instant,
    watts: Option<f64>,
}

impl EnergySource for Fake {
    fn name(&self) -> String {
        "fake".into()
    }
    fn read_uj(&self) -> Result<u64, Unavailable> {
        let w = self
            .watts
            .ok_or_else(|| Unavailable("permission denied".into()))?;
        Ok((self.since.elapsed().as_secs_f64() * w * 1e6) as u64)
    }
    fn wrap_uj(&self) -> Option<u64> {
        None
    }
}

fn fake(watts: Option<f64>) -> Arc<dyn EnergySource> {
    Arc::new(Fake {
        since: Instant::now(),
        watts,
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

/// Joules per device follow the counters; EDP is joules x time; an
/// unreadable counter leaves its device without energy, and no readable
/// counter leaves the report without any.
#[test]
fn the_report_gives_joules_and_edp_where_readable() {
    let Some(e) = engine(Objective::Time) else {
        return;
    };
    e.set_energy_sources(EnergySources {
        cpu: vec![fake(Some(100.0))],
        gpu: Some(fake(None)),
    });
    let k = kernel(&e);
    let r = count(
        &e,
        &k,
        200_000,
        &Scheduler::Dynamic { packages: 8 },
        Devices::ALL,
    );
    let energy = r.energy.as_ref().expect("the CPU counter reads");
    let cpu_j = energy.devices[0].unwrap();
    // 100 W over the run (the counters are read just outside it).
    assert!(
        (cpu_j / r.time_s - 100.0).abs() < 30.0,
        "{cpu_j} J in {} s",
        r.time_s
    );
    assert_eq!(energy.devices[1], None);
    assert_eq!(r.joules(), Some(cpu_j));
    assert!((r.edp().unwrap() - cpu_j * r.time_s).abs() < 1e-12);
    e.set_energy_sources(EnergySources {
        cpu: vec![fake(None)],
        gpu: None,
    });
    let r = count(
        &e,
        &k,
        50_000,
        &Scheduler::Dynamic { packages: 8 },
        Devices::ALL,
    );
    assert_eq!((&r.energy, r.joules(), r.edp()), (&None, None, None));
    common::assert_validation_clean(&e);
}

/// With EDP as the objective, HGuided leaves out the device that draws a
/// million watts against the other's 1 W once both devices' costs are
/// known (a run of each alone measures them), whichever device that is;
/// under the time objective the same counters change nothing.
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
        let watts = |kind| if kind == hungry { 1e6 } else { 1.0 };
        e.set_energy_sources(EnergySources {
            cpu: vec![fake(Some(watts(Cpu)))],
            gpu: Some(fake(Some(watts(Gpu)))),
        });
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
