//! Older drivers: a device used as Vulkan 1.1 with `VK_KHR_timeline_semaphore`
//! and as a device without timeline semaphores (fences) runs the same
//! engine: outputs checked item by item under every scheduler, zero-copy and
//! staged, a GPU hang requeued, and the validation layer clean (its
//! instance is capped at Vulkan 1.1 there, so a 1.2 call would be an error).
//!
//! The emulation is `EngineOptions::driver`; `COEXEC_EMULATE_DRIVER` runs the
//! other integration tests under a mode too (scripts/test.sh does).

#![cfg(feature = "glsl")]

mod common;

use coexec::{
    Args, Devices, DriverEmulation, Engine, EngineOptions, IndexSpace, MemoryPlacement, Scheduler,
    SyncMode, Validation,
};

const MODES: [(DriverEmulation, SyncMode); 3] = [
    (DriverEmulation::Native, SyncMode::Timeline),
    (DriverEmulation::Vulkan11, SyncMode::TimelineKhr),
    (DriverEmulation::NoTimelines, SyncMode::Fences),
];

/// An engine emulating `driver` with placement `memory`; `None` without a
/// device or where `COEXEC_EMULATE_DRIVER` overrides the option.
fn engine(driver: DriverEmulation, memory: MemoryPlacement) -> Option<Engine> {
    engine_with(driver, memory, std::time::Duration::from_secs(30))
}

/// [`engine`] with a GPU timeout of `gpu_timeout`.
fn engine_with(
    driver: DriverEmulation,
    memory: MemoryPlacement,
    gpu_timeout: std::time::Duration,
) -> Option<Engine> {
    if std::env::var_os("COEXEC_EMULATE_DRIVER").is_some() {
        eprintln!("skipping: COEXEC_EMULATE_DRIVER overrides the option");
        return None;
    }
    common::engine_from(EngineOptions {
        workers: Some(1),
        validation: Validation::IfAvailable,
        pipeline_cache_dir: Some(std::path::PathBuf::new()),
        profiles: false,
        memory,
        driver,
        gpu_timeout,
        ..Default::default()
    })
}

fn schedulers() -> [Scheduler; 3] {
    [
        Scheduler::Static { powers: None },
        Scheduler::Dynamic { packages: 9 },
        Scheduler::hguided(),
    ]
}

/// Runs the counting kernel over `n` items on `devices`; every item must
/// have run exactly once. Returns the GPU's packages.
fn count_once(e: &Engine, n: u64, sched: &Scheduler, devices: Devices) -> usize {
    count_once_with(e, n, sched, devices, common::count_cpu())
}

/// [`count_once`] with `cpu` as the kernel's CPU function.
fn count_once_with(
    e: &Engine,
    n: u64,
    sched: &Scheduler,
    devices: Devices,
    cpu: std::sync::Arc<coexec::CpuFn>,
) -> usize {
    let k = e
        .kernel_glsl("count", &common::count_glsl(64, 1, false), Some(cpu))
        .unwrap();
    let mut out = e.buffer::<u32>(n as usize).unwrap();
    let push = [n as u32, 0, 0];
    let r = e
        .run(
            &k,
            Args::new().output(&mut out).push(&push),
            IndexSpace::D1(n),
            sched,
            devices,
        )
        .unwrap_or_else(|err| panic!("{sched:?}: {err}"));
    let bad = out.iter().position(|&v| v != 1);
    assert_eq!(bad, None, "{sched:?}: an item ran other than once");
    r.devices
        .iter()
        .filter(|d| d.kind == coexec::DeviceKind::Gpu)
        .map(|d| d.packages)
        .sum()
}

/// Every mode picks its completion tracking and runs every scheduler,
/// co-executed and GPU alone, zero-copy and staged, validation clean.
#[test]
fn every_mode_runs_every_scheduler_exactly_once() {
    for (driver, sync) in MODES {
        for memory in [MemoryPlacement::ZeroCopy, MemoryPlacement::Staged] {
            let Some(e) = engine(driver, memory) else {
                return;
            };
            assert_eq!(e.sync_mode(), sync, "{driver:?}");
            for sched in schedulers() {
                count_once(&e, 300_000, &sched, Devices::ALL);
                // GPU alone: several packages through the ring (its slots and
                // fences reused), each checked.
                let gpu = count_once(
                    &e,
                    100_000,
                    &Scheduler::Dynamic { packages: 7 },
                    Devices::GPU,
                );
                assert!(gpu >= 7, "{driver:?}: the GPU ran {gpu} packages");
            }
            common::assert_validation_clean(&e);
        }
    }
}

/// A GPU hang past the timeout, in every mode: the package ends late and
/// counts once (fences: the hung submission is held back, then submitted).
#[cfg(feature = "test-hooks")]
#[test]
fn a_hang_is_survived_in_every_mode() {
    use coexec::hooks::{FaultInjection, GpuFault};
    for (driver, _) in MODES {
        let timeout = std::time::Duration::from_millis(300);
        let Some(e) = engine_with(driver, MemoryPlacement::ZeroCopy, timeout) else {
            return;
        };
        let dynamic = Scheduler::Dynamic { packages: 40 };
        // A slow CPU, so that the GPU takes several packages.
        let slow = || common::slow_count_cpu(std::time::Duration::from_micros(200), u64::MAX);
        // A healthy run first: the GPU takes part.
        assert!(count_once_with(&e, 400_000, &dynamic, Devices::ALL, slow()) > 1);
        e.inject_gpu_fault(FaultInjection {
            fault: GpuFault::Hang,
            after_packages: 1,
        });
        count_once_with(&e, 400_000, &dynamic, Devices::ALL, slow());
        assert!(!e.gpu_available(), "{driver:?}: the hung GPU is left out");
        common::assert_validation_clean(&e);
    }
}

/// A device without timeline semaphores refuses to make one, with a typed
/// error, not a validation error or a crash.
#[test]
fn no_timelines_means_no_timeline_semaphore() {
    let Some(e) = engine(DriverEmulation::NoTimelines, MemoryPlacement::ZeroCopy) else {
        return;
    };
    let err = coexec_engine::vk::Timeline::new(e.device(), 0).unwrap_err();
    assert!(err.to_string().contains("no timeline semaphores"), "{err}");
    common::assert_validation_clean(&e);
}

/// `COEXEC_EMULATE_DRIVER`'s values, and bad ones refused by name.
#[test]
fn emulation_names_parse() {
    assert_eq!("vulkan1.1".parse(), Ok(DriverEmulation::Vulkan11));
    assert_eq!("no-timelines".parse(), Ok(DriverEmulation::NoTimelines));
    assert_eq!("native".parse(), Ok(DriverEmulation::Native));
    let err = "vulkan1.0".parse::<DriverEmulation>().unwrap_err();
    assert!(err.contains("vulkan1.0"), "{err}");
}

/// What each driver offers decides the mode; below Vulkan 1.1 a device is
/// unusable, with the reason (what `coexec info` prints), and the
/// emulation lowers what a device reports.
#[test]
fn modes_follow_what_the_driver_offers() {
    let Ok(devs) = Engine::all_vulkan_devices() else {
        eprintln!("skipping: no Vulkan loader");
        return;
    };
    let Some(real) = devs.into_iter().next() else {
        eprintln!("skipping: no Vulkan device");
        return;
    };
    let mut d = real.clone();
    d.api_version = ash_version(1, 2);
    assert_eq!(d.sync_mode(), SyncMode::Timeline);
    d.api_version = ash_version(1, 1);
    d.timeline_semaphore_khr = true;
    assert_eq!(d.sync_mode(), SyncMode::TimelineKhr);
    assert_eq!(d.unusable_reason(), None);
    d.timeline_semaphore_khr = false;
    assert_eq!(d.sync_mode(), SyncMode::Fences);
    assert_eq!(d.unusable_reason(), None);
    d.api_version = ash_version(1, 0);
    let why = d
        .unusable_reason()
        .expect("Vulkan 1.0 is below the minimum");
    assert!(why.contains("1.0") && why.contains("needs 1.1"), "{why}");
    let mut e = real.clone();
    DriverEmulation::NoTimelines.apply(&mut e);
    assert_eq!((e.sync_mode(), e.maintenance4), (SyncMode::Fences, false));
    let mut e = real;
    DriverEmulation::Vulkan11.apply(&mut e);
    assert!(e.api_version < ash_version(1, 2));
}

/// A packed Vulkan version `major.minor.0`.
fn ash_version(major: u32, minor: u32) -> u32 {
    (major << 22) | (minor << 12)
}
