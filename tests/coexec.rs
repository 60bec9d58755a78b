//! The co-execution core: every work-item executed exactly once, whatever
//! the size, scheduler, device set and worker count; kernel panics become
//! typed errors; reports add up.

// Kernels here are GLSL compiled at run time: the lean build (no feature
// `glsl`) runs none of these tests (its kernels are SPIR-V: tests/workloads.rs).
#![cfg(feature = "glsl")]

mod common;

use coexec::{
    AllocatorBackend, Args, Devices, Engine, Error, IndexSpace, Kernel, Report, Scheduler,
};
use common::{
    assert_validation_clean, count_cpu, count_glsl, engine_with, run_slow_first_half,
    slow_count_cpu,
};
use proptest::prelude::*;
use std::sync::{Arc, Mutex, OnceLock};

/// Engines with 1 and 2 CPU workers, created once.
fn engines() -> &'static [Engine] {
    static E: OnceLock<Vec<Engine>> = OnceLock::new();
    E.get_or_init(|| {
        [Some(1), Some(2)]
            .into_iter()
            .filter_map(|w| engine_with(w, AllocatorBackend::default()))
            .collect()
    })
}

/// Count kernels per engine: 1-D with local 64, 2-D with local 8x4.
fn kernels(e: &Engine) -> (Kernel, Kernel) {
    static K: OnceLock<Mutex<Vec<(u64, Kernel, Kernel)>>> = OnceLock::new();
    let m = K.get_or_init(|| Mutex::new(Vec::new()));
    let mut g = m.lock().unwrap();
    if let Some((_, a, b)) = g.iter().find(|(id, _, _)| *id == e.id()) {
        return (a.clone(), b.clone());
    }
    let k1 = e
        .kernel_glsl("count1d", &count_glsl(64, 1, false), Some(count_cpu()))
        .unwrap();
    let k2 = e
        .kernel_glsl("count2d", &count_glsl(8, 4, true), Some(count_cpu()))
        .unwrap();
    g.push((e.id(), k1.clone(), k2.clone()));
    (k1, k2)
}

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct Dims {
    n: u32,
    w: u32,
    h: u32,
}

impl Dims {
    /// The push constants that describe `space`.
    fn of(space: IndexSpace) -> Dims {
        match space {
            IndexSpace::D1(n) => Dims {
                n: n as u32,
                w: 0,
                h: 0,
            },
            IndexSpace::D2 { width, height } => Dims {
                n: 0,
                w: width,
                h: height,
            },
        }
    }
}

/// Runs the count kernel of `space`'s dimension into `out`, with the push
/// constants that describe `space`.
fn count_into(
    e: &Engine,
    out: &mut coexec::Buffer<u32>,
    space: IndexSpace,
    sched: &Scheduler,
    devices: Devices,
) -> Result<Report, Error> {
    let (k1, k2) = kernels(e);
    let kernel = match space {
        IndexSpace::D1(_) => &k1,
        IndexSpace::D2 { .. } => &k2,
    };
    e.run(
        kernel,
        Args::new().output(out).push(&Dims::of(space)),
        space,
        sched,
        devices,
    )
}

/// Runs the count kernel and checks every element is exactly 1, and that
/// the report's packages cover the index space exactly once.
fn run_count(e: &Engine, space: IndexSpace, sched: &Scheduler, devices: Devices) -> Report {
    let n = space.items() as usize;
    let mut out = e.buffer::<u32>(n).unwrap();
    let report = count_into(e, &mut out, space, sched, devices)
        .unwrap_or_else(|err| panic!("{space} {sched} {devices:?}: {err}"));
    if let Some(i) = out.iter().position(|&v| v != 1) {
        panic!(
            "{space} {sched} {devices:?}: item {i} executed {} times",
            out[i]
        );
    }
    check_report(&report, space);
    report
}

/// The package log covers the run's units once (units, not items: a tiled
/// package's item range spans columns of its rows that are not its), and
/// the items each package ran add up to the space's.
fn check_report(r: &Report, space: IndexSpace) {
    let mut ranges: Vec<_> = r.packages.iter().map(|p| p.units.clone()).collect();
    ranges.sort_by_key(|x| x.start);
    let mut next = 0;
    for x in &ranges {
        assert_eq!(x.start, next, "packages leave a gap or overlap: {ranges:?}");
        next = x.end;
    }
    assert_eq!(next, r.units);
    let logged: u64 = r.packages.iter().map(|p| p.work_items).sum();
    assert_eq!(logged, space.items());
    let items: u64 = r.devices.iter().map(|d| d.items).sum();
    assert_eq!(items, space.items());
    assert_eq!(r.package_count(), r.packages.len());
    let b = r.balance();
    assert!(b > 0.0 && b <= 1.0, "balance {b}");
    for p in &r.packages {
        assert!(p.end_s >= p.start_s && p.end_s <= r.time_s + 1e-3);
    }
}

fn schedulers() -> impl Strategy<Value = Scheduler> {
    prop_oneof![
        Just(Scheduler::Static { powers: None }),
        (0.05f64..0.95).prop_map(|c| Scheduler::Static {
            powers: Some(vec![c, 1.0 - c])
        }),
        (1u64..300).prop_map(|m| Scheduler::Dynamic { packages: m }),
        Just(Scheduler::hguided()),
        (0.5f64..4.0, 1u64..8).prop_map(|(k, min)| Scheduler::HGuided {
            powers: None,
            k,
            min_package: min
        }),
        (0.05f64..0.95).prop_map(|c| Scheduler::HGuided {
            powers: Some(vec![c, 1.0 - c]),
            k: 2.0,
            min_package: 1
        }),
    ]
}

fn fit(sched: &Scheduler, devices: Devices) -> Scheduler {
    // Powers are per device of the run: drop them when only one device runs.
    if devices.cpu && devices.gpu {
        return sched.clone();
    }
    match sched {
        Scheduler::Static { .. } => Scheduler::Static { powers: None },
        Scheduler::HGuided { k, min_package, .. } => Scheduler::HGuided {
            powers: None,
            k: *k,
            min_package: *min_package,
        },
        s => s.clone(),
    }
}

fn device_sets() -> impl Strategy<Value = Devices> {
    prop_oneof![Just(Devices::CPU), Just(Devices::GPU), Just(Devices::ALL)]
}

fn sizes_1d() -> impl Strategy<Value = u64> {
    prop_oneof![
        Just(1u64),
        Just(63),
        Just(64),
        Just(65),
        Just(7919),
        Just(65_521),
        1u64..200_000,
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, .. ProptestConfig::default() })]

    #[test]
    fn every_item_exactly_once_1d(n in sizes_1d(), sched in schedulers(), devices in device_sets(), engine in 0usize..2) {
        let es = engines();
        if es.is_empty() { return Ok(()); }
        let e = &es[engine % es.len()];
        run_count(e, IndexSpace::D1(n), &fit(&sched, devices), devices);
    }

    #[test]
    fn every_item_exactly_once_2d(w in 1u32..700, h in 1u32..300, sched in schedulers(), devices in device_sets(), engine in 0usize..2) {
        let es = engines();
        if es.is_empty() { return Ok(()); }
        let e = &es[engine % es.len()];
        run_count(e, IndexSpace::D2 { width: w, height: h }, &fit(&sched, devices), devices);
    }
}

#[test]
fn two_to_the_26_items_exactly_once() {
    let es = engines();
    let Some(e) = es.first() else { return };
    // 1-D on the CPU alone. With the GPU, as an image (lavapipe's
    // maxComputeWorkGroupCount of 65535 along x cannot hold 2^26 / 64
    // groups), of 2^26 items where one binding can hold 2^26 u32 (the H200),
    // else of the largest power of two that fits (2^25 on lavapipe, whose
    // maxStorageBufferRange is 128 MiB).
    run_count(
        e,
        IndexSpace::D1(1 << 26),
        &Scheduler::hguided(),
        Devices::CPU,
    );
    let fits = (u64::from(e.device().info().max_storage_buffer_range) / 4).min(1 << 26);
    let log2 = 63 - fits.leading_zeros();
    let (w, h) = (1u32 << (log2 / 2), 1u32 << (log2 - log2 / 2));
    // Both devices take part whatever the machine's load: with the test
    // hooks the CPU waits for the GPU's first claim (a fresh engine: the
    // shared ones serve concurrent tests); without them, static shares.
    #[cfg(feature = "test-hooks")]
    let fresh = engine_with(Some(1), AllocatorBackend::default()).expect("a second engine");
    #[cfg(feature = "test-hooks")]
    let (e, sched) = {
        fresh.hold_cpu_until_gpus_claim(1);
        (&fresh, Scheduler::hguided())
    };
    #[cfg(not(feature = "test-hooks"))]
    let sched = Scheduler::Static {
        powers: Some(vec![0.5, 0.5]),
    };
    let r = run_count(
        e,
        IndexSpace::D2 {
            width: w,
            height: h,
        },
        &sched,
        Devices::ALL,
    );
    assert!(
        r.devices.iter().all(|d| d.packages > 0),
        "both devices took part: {:?}",
        r.devices
    );
    let n = fits * 2;
    if n * 4 > u64::from(e.device().info().max_storage_buffer_range) {
        let mut big = e.buffer::<u32>(n as usize).unwrap();
        let err = count_into(
            e,
            &mut big,
            IndexSpace::D1(n),
            &Scheduler::hguided(),
            Devices::GPU,
        )
        .unwrap_err();
        assert!(
            matches!(
                err,
                Error::BindingRange { .. } | Error::DispatchLimit { .. }
            ),
            "{err}"
        );
    }
    assert_validation_clean(e);
}

#[test]
fn one_dimensional_range_beyond_dispatch_limits_is_refused_clearly() {
    let es = engines();
    let Some(e) = es.first() else { return };
    let limit = u64::from(e.device().info().max_group_count[0]);
    let n = (limit + 1) * 64;
    if n > (1 << 31) {
        return; // a device with a huge limit: nothing to refuse here
    }
    let mut out = e.buffer::<u32>(n as usize).unwrap();
    let err = count_into(
        e,
        &mut out,
        IndexSpace::D1(n),
        &Scheduler::hguided(),
        Devices::GPU,
    )
    .unwrap_err();
    assert!(matches!(err, Error::DispatchLimit { axis: 0, .. }), "{err}");
    // The CPU alone has no such limit.
    run_count(e, IndexSpace::D1(n), &Scheduler::hguided(), Devices::CPU);
    // With the CPU chosen too, the CPU runs it and the GPU is left out,
    // with a note.
    let r = run_count(e, IndexSpace::D1(n), &Scheduler::hguided(), Devices::ALL);
    let gpu = r
        .devices
        .iter()
        .find(|d| d.kind == coexec::DeviceKind::Gpu)
        .unwrap();
    assert_eq!(gpu.items, 0);
    let note = gpu.note.as_deref().unwrap_or_default();
    assert!(note.starts_with("left out: dispatch limit"), "{note}");
}

#[test]
fn cpu_kernel_panic_is_a_typed_error_and_the_engine_stays_usable() {
    let es = engines();
    let Some(e) = es.first() else { return };
    let panicking: Arc<coexec::CpuFn> =
        Arc::new(|pkg: &coexec::Package, args: &mut coexec::CpuArgs<'_>| {
            let out = args.output::<u32>(0);
            if pkg.items.contains(&5000) {
                panic!("boom at {:?}", pkg.items);
            }
            for v in out {
                *v += 1;
            }
        });
    let k = e
        .kernel("panicky", None, Some(panicking), Some([64, 1, 1]))
        .unwrap();
    for _ in 0..3 {
        let mut out = e.buffer::<u32>(10_000).unwrap();
        let err = e
            .run(
                &k,
                Args::new().output(&mut out),
                IndexSpace::D1(10_000),
                &Scheduler::Dynamic { packages: 50 },
                Devices::CPU,
            )
            .unwrap_err();
        match err {
            Error::KernelPanic { units, message, .. } => {
                assert!(message.contains("boom"), "{message}");
                assert!(
                    units.start * 64 <= 5000 && 5000 < units.end * 64,
                    "{units:?}"
                );
            }
            other => panic!("expected KernelPanic, got {other}"),
        }
        // The pool and the engine still work.
        run_count(
            e,
            IndexSpace::D1(10_000),
            &Scheduler::hguided(),
            Devices::ALL,
        );
    }
}

#[test]
fn run_arguments_are_checked() {
    let es = engines();
    let Some(e) = es.first() else { return };
    let (k1, _) = kernels(e);
    let mut small = e.buffer::<u32>(10).unwrap();
    let err = count_into(
        e,
        &mut small,
        IndexSpace::D1(11),
        &Scheduler::hguided(),
        Devices::ALL,
    )
    .unwrap_err();
    assert!(
        matches!(
            err,
            Error::BufferTooSmall {
                binding: 0,
                len: 10,
                needed: 11
            }
        ),
        "{err}"
    );
    let err = count_into(
        e,
        &mut small,
        IndexSpace::D1(0),
        &Scheduler::hguided(),
        Devices::ALL,
    )
    .unwrap_err();
    assert!(matches!(err, Error::EmptyRange), "{err}");
    let err = e
        .run(
            &k1,
            Args::new().output(&mut small).push(&7u32),
            IndexSpace::D1(10),
            &Scheduler::hguided(),
            Devices::GPU,
        )
        .unwrap_err();
    assert!(matches!(err, Error::Interface(_)), "{err}");
    let err = count_into(
        e,
        &mut small,
        IndexSpace::D1(10),
        &Scheduler::Dynamic { packages: 0 },
        Devices::ALL,
    )
    .unwrap_err();
    assert!(matches!(err, Error::Scheduler(_)), "{err}");
    let err = count_into(
        e,
        &mut small,
        IndexSpace::D1(10),
        &Scheduler::Static {
            powers: Some(vec![1.0]),
        },
        Devices::ALL,
    )
    .unwrap_err();
    assert!(matches!(err, Error::Scheduler(_)), "{err}");
    // A buffer of another engine.
    if let Some(other) = es.get(1) {
        let mut foreign = other.buffer::<u32>(10).unwrap();
        let err = count_into(
            e,
            &mut foreign,
            IndexSpace::D1(10),
            &Scheduler::hguided(),
            Devices::ALL,
        )
        .unwrap_err();
        assert!(matches!(err, Error::ForeignBuffer { binding: 0 }), "{err}");
    }
    // A CPU-only kernel on the GPU.
    let cpu_only = e
        .kernel("cpu", None, Some(count_cpu()), Some([64, 1, 1]))
        .unwrap();
    let err = e
        .run(
            &cpu_only,
            Args::new().output(&mut small),
            IndexSpace::D1(10),
            &Scheduler::hguided(),
            Devices::ALL,
        )
        .unwrap_err();
    assert!(matches!(err, Error::MissingImplementation("GPU")), "{err}");
    assert_validation_clean(e);
}

#[test]
fn co_execution_uses_both_devices_and_reports_them() {
    let es = engines();
    let Some(e) = es.first() else { return };
    // Mandelbrot: each package costs about a millisecond, so both devices
    // are awake long before the work runs out.
    let mut w = coexec::workloads::create(
        "mandelbrot",
        e,
        Some(coexec::workloads::Size::Image(1024, 1024)),
    )
    .unwrap();
    let r = w
        .run(e, &Scheduler::Dynamic { packages: 64 }, Devices::ALL)
        .unwrap();
    assert!(w.verify().ok);
    check_report(&r, w.space());
    assert_eq!(r.devices.len(), 2);
    assert_eq!(r.devices[0].kind, coexec::DeviceKind::Cpu);
    assert_eq!(r.devices[1].kind, coexec::DeviceKind::Gpu);
    // 64 claimed; split parts (none here: 1-unit packages) come on top.
    assert_eq!(r.packages.iter().filter(|p| !p.stolen).count(), 64);
    assert!(r.devices.iter().all(|d| d.packages > 0 && d.busy_s > 0.0));
    // Timestamps: gaps between the GPU's packages were measured.
    if e.device().has_timestamps() && r.devices[1].packages > 1 {
        let g = r.devices[1].gpu_gaps.expect("gaps measured");
        assert_eq!(g.count, r.devices[1].packages - 1);
    }
}

/// A worker left without work takes the unstarted end of a sibling's
/// package: with Static, each of two workers claims half of the range, and
/// the half whose units are slow is split with the worker whose half is fast.
#[test]
fn idle_workers_steal_the_end_of_a_slow_package() {
    let es = engines();
    let Some(e) = es.iter().find(|e| e.workers() == 2) else {
        return;
    };
    const UNITS: u64 = 40;
    let r = run_slow_first_half(e, UNITS, std::time::Duration::from_millis(2));
    let space = IndexSpace::D1(UNITS * 64);
    check_report(&r, space);
    let stolen: Vec<_> = r.packages.iter().filter(|p| p.stolen).collect();
    assert!(!stolen.is_empty(), "no package was split: {:?}", r.packages);
    // Stolen parts come from the slow half, and both workers ran some of it.
    assert!(
        stolen.iter().all(|p| p.units.end <= UNITS / 2),
        "{stolen:?}"
    );
    let lanes_in_slow_half: std::collections::HashSet<_> = r
        .packages
        .iter()
        .filter(|p| p.units.start < UNITS / 2)
        .map(|p| p.lane)
        .collect();
    assert_eq!(lanes_in_slow_half.len(), 2, "{:?}", r.packages);
    assert_eq!(r.package_count(), 2 + stolen.len());
}

/// Runs a count kernel over `units` work-groups of 64 items whose every
/// work-group takes 2 ms on the CPU, under Static with 90% of the range
/// for the CPU; checks the output and the report.
fn run_slow_cpu_static(e: &Engine, units: u64) -> Report {
    let slow = slow_count_cpu(std::time::Duration::from_millis(2), u64::MAX);
    let k = e
        .kernel_glsl("count1d-slow-cpu", &count_glsl(64, 1, false), Some(slow))
        .unwrap();
    let space = IndexSpace::D1(units * 64);
    let mut out = e.buffer::<u32>(space.items() as usize).unwrap();
    let r = e
        .run(
            &k,
            Args::new().output(&mut out).push(&Dims::of(space)),
            space,
            &Scheduler::Static {
                powers: Some(vec![0.9, 0.1]),
            },
            Devices::ALL,
        )
        .unwrap();
    assert!(out.iter().all(|&v| v == 1));
    check_report(&r, space);
    r
}

/// A GPU with nothing left to claim takes the unstarted end of a CPU
/// worker's package: Static gives the CPU 90% of the range, and the CPU's
/// kernel is slow.
#[test]
fn an_idle_gpu_steals_the_end_of_a_slow_cpu_package() {
    let es = engines();
    let Some(e) = es.first() else { return };
    let r = run_slow_cpu_static(e, 40);
    let gpu_stolen: Vec<_> = r
        .packages
        .iter()
        .filter(|p| p.device == 1 && p.stolen)
        .collect();
    assert!(
        !gpu_stolen.is_empty(),
        "the GPU stole nothing: {:?}",
        r.packages
    );
    // Its own share, claimed from the queue, stays one package of 4 units
    // (which 4 depends on who claimed first); the rest came from the CPU.
    let own: Vec<_> = r
        .packages
        .iter()
        .filter(|p| p.device == 1 && !p.stolen)
        .map(|p| p.units.end - p.units.start)
        .collect();
    assert_eq!(own, vec![4], "{:?}", r.packages);
    assert_validation_clean(e);
}

/// A GPU with nothing left to claim takes the unstarted ends of all the
/// CPU workers' packages at once, in one package of several parts (one
/// record per part, with the package's times): Static gives the two
/// workers 90% of the range, and the CPU's kernel is slow. The GPU's
/// first package is held back (a test hook) until both workers started.
#[cfg(feature = "test-hooks")]
#[test]
fn an_idle_gpu_takes_from_every_worker_in_one_package() {
    let es = engines();
    let Some(e) = es.iter().find(|e| e.workers() == 2) else {
        return;
    };
    e.delay_cold_gpu_packages(Some(std::time::Duration::from_millis(5)));
    let r = run_slow_cpu_static(e, 80);
    let stolen: Vec<_> = r
        .packages
        .iter()
        .filter(|p| p.device == 1 && p.stolen)
        .collect();
    // Parts of one package: stolen records of different units with the
    // same times (a package takes one part of each worker's package).
    let together = stolen.iter().any(|a| {
        stolen
            .iter()
            .any(|b| a.units != b.units && a.start_s == b.start_s && a.end_s == b.end_s)
    });
    e.delay_cold_gpu_packages(None);
    assert!(
        together,
        "no package took from both workers: {:?}",
        r.packages
    );
    assert_validation_clean(e);
}
