//! Engines over several GPUs and the CPU workers, on one real GPU: the
//! testing aid `EngineOptions::duplicate_devices` (the variable
//! `COEXEC_DUPLICATE_DEVICES`) opens the one Vulkan device several times, so
//! that these run real multi-GPU co-execution on lavapipe.
//!
//! Every run is checked item by item against a CPU reference with an
//! accumulating kernel (`out[i] += hash(i)`), which shows any item run twice
//! or never; the validation layer is on where installed and any error it
//! reports fails the call.
//!
//! Needs the test-only hooks: `cargo test --features test-hooks`.

#![cfg(feature = "glsl")]
#![cfg(feature = "test-hooks")]

mod common;

use coexec::hooks::{FaultInjection, GpuFault};
use coexec::{
    Args, CpuArgs, Devices, Engine, EngineOptions, Error, IndexSpace, Package, Scheduler,
    Validation,
};
use std::sync::Arc;
use std::time::Duration;

const GLSL: &str = "#version 450
layout(local_size_x = 64) in;
layout(std430, binding = 0) QUALIFIER buffer O { uint o[]; };
layout(push_constant) uniform P { uint n; } p;
void main() {
    uint i = gl_GlobalInvocationID.x;
    if (i >= p.n) return;
    uint h = i;
    for (int r = 0; r < 64; r++) { h = h * 1664525u + 1013904223u; h ^= h >> 13; }
    STORE;
}";

fn hash(i: u32) -> u32 {
    common::hash(i, 64)
}

/// An engine with `copies` logical devices on each GPU and one CPU worker.
fn engine(copies: usize) -> Option<Engine> {
    let e = common::engine_from(EngineOptions {
        workers: Some(1),
        validation: Validation::IfAvailable,
        gpu_timeout: Duration::from_millis(300),
        duplicate_devices: copies,
        ..Default::default()
    })?;
    assert!(e.gpu_count() >= copies, "{} GPUs", e.gpu_count());
    Some(e)
}

/// `out[i] += hash(i)` (`accumulate`) or `out[i] = hash(i)` with a
/// write-only output.
fn kernel(e: &Engine, accumulate: bool) -> coexec::Kernel {
    let (qualifier, store) = if accumulate {
        ("", "o[i] += h")
    } else {
        ("writeonly", "o[i] = h")
    };
    let glsl = GLSL.replace("QUALIFIER", qualifier).replace("STORE", store);
    let cpu = Arc::new(move |pkg: &Package, args: &mut CpuArgs<'_>| {
        for (k, v) in args.output::<u32>(0).iter_mut().enumerate() {
            let h = hash(pkg.items.start as u32 + k as u32);
            *v = if accumulate { v.wrapping_add(h) } else { h };
        }
    });
    e.kernel_glsl("multi", &glsl, Some(cpu)).unwrap()
}

/// Runs `k` over `n` items on a zeroed output and checks every item was
/// applied exactly once.
fn run_checked(
    e: &Engine,
    k: &coexec::Kernel,
    n: u32,
    sched: &Scheduler,
    devices: Devices,
) -> Result<coexec::Report, Error> {
    let mut out = e.buffer_from_slice(&vec![0u32; n as usize]).unwrap();
    let r = e.run(
        k,
        Args::new().output(&mut out).push(&n),
        IndexSpace::D1(u64::from(n)),
        sched,
        devices,
    )?;
    for (i, &v) in out.iter().enumerate() {
        assert_eq!(v, hash(i as u32), "item {i} with {sched} on {devices}");
    }
    let items: u64 = r.devices.iter().map(|d| d.items).sum();
    assert_eq!(items, u64::from(n), "{r:?}");
    Ok(r)
}

/// The schedulers for `n` devices: each policy, without and with hints.
fn schedulers(n: usize) -> Vec<Scheduler> {
    let hints: Vec<f64> = (0..n).map(|i| 1.0 + i as f64).collect();
    vec![
        Scheduler::Static { powers: None },
        Scheduler::Static {
            powers: Some(hints.clone()),
        },
        Scheduler::Dynamic { packages: 24 },
        Scheduler::hguided(),
        Scheduler::HGuided {
            powers: Some(hints),
            k: 2.0,
            min_package: 1,
        },
    ]
}

#[test]
fn every_scheduler_covers_each_item_once_on_two_and_three_gpus() {
    for copies in [2, 3] {
        let Some(e) = engine(copies) else { return };
        let g = e.gpu_count();
        let k = kernel(&e, true);
        for devices in [Devices::ALL, Devices::GPU] {
            let n = usize::from(devices.cpu) + g;
            for sched in schedulers(n) {
                let r = run_checked(&e, &k, 20_000, &sched, devices).unwrap();
                assert_eq!(r.devices.len(), n, "{r:?}");
            }
        }
        common::assert_validation_clean(&e);
    }
}

#[test]
fn gpus_are_selected_by_index_and_share_every_buffer() {
    let Some(e) = engine(2) else { return };
    let k = kernel(&e, true);
    let n = 4096u32;
    let mut out = e.buffer_from_slice(&vec![0u32; n as usize]).unwrap();
    // The same buffer, accumulated into by GPU 1, then GPU 0, then the CPU
    // and GPU 1: every device sees the bytes the others wrote.
    for devices in [Devices::gpu(1), Devices::gpu(0), Devices::gpu(1).with_cpu()] {
        let r = e
            .run(
                &k,
                Args::new().output(&mut out).push(&n),
                IndexSpace::D1(u64::from(n)),
                &Scheduler::Dynamic { packages: 8 },
                devices,
            )
            .unwrap();
        let gpus: Vec<&str> = r
            .devices
            .iter()
            .filter(|d| d.kind == coexec::DeviceKind::Gpu)
            .map(|d| d.name.as_str())
            .collect();
        assert_eq!(gpus.len(), 1, "{r:?}");
        let want = if devices.has_gpu(1) {
            "(gpu1)"
        } else {
            "(gpu0)"
        };
        assert!(gpus[0].ends_with(want), "{gpus:?}");
    }
    for (i, &v) in out.iter().enumerate() {
        assert_eq!(v, hash(i as u32).wrapping_mul(3), "item {i}");
    }
    match e.run(
        &k,
        Args::new().output(&mut out).push(&n),
        IndexSpace::D1(u64::from(n)),
        &Scheduler::hguided(),
        Devices::gpu(7),
    ) {
        Err(Error::NoDeviceSelected(m)) => assert!(m.contains("gpu7"), "{m}"),
        other => panic!("expected NoDeviceSelected, got {other:?}"),
    }
    common::assert_validation_clean(&e);
}

#[test]
fn imported_host_memory_is_shared_by_every_gpu() {
    let Some(e) = engine(2) else { return };
    let Some(align) = e.host_import_alignment() else {
        eprintln!("skipping: no VK_EXT_external_memory_host");
        return;
    };
    let n = 8192u32;
    let bytes = (n as usize * 4).next_multiple_of(align as usize);
    let layout = std::alloc::Layout::from_size_align(bytes, align as usize).unwrap();
    // SAFETY: non-zero size; freed below after the buffer is dropped.
    let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
    assert!(!ptr.is_null());
    {
        // SAFETY: `bytes` zeroed, aligned bytes that outlive the buffer and
        // are accessed only through it.
        let mut out = unsafe { e.import_host(ptr.cast::<u32>(), bytes / 4) }.unwrap();
        let k = kernel(&e, true);
        e.run(
            &k,
            Args::new().output(&mut out).push(&n),
            IndexSpace::D1(u64::from(n)),
            &Scheduler::Dynamic { packages: 16 },
            Devices::GPU,
        )
        .unwrap();
        for i in 0..n {
            assert_eq!(out[i as usize], hash(i), "item {i}");
        }
    }
    // SAFETY: allocated above with this layout; the buffer is gone.
    unsafe { std::alloc::dealloc(ptr, layout) };
    common::assert_validation_clean(&e);
}

/// A fault on GPU 1 in a run with the CPU and 2 or 3 GPUs, and in a run of
/// the GPUs alone: the failing GPU's packages go to the others, each item
/// is applied exactly once, the report names the failure, and later runs
/// leave that GPU out.
#[test]
fn a_failing_gpu_hands_its_packages_to_the_others() {
    let faults = [GpuFault::SubmitError, GpuFault::DeviceLost, GpuFault::Hang];
    for (case, fault) in faults.into_iter().enumerate() {
        let copies = 2 + case % 2;
        let devices = if case % 2 == 0 {
            Devices::ALL
        } else {
            Devices::GPU
        };
        // Hints give GPU 1 work under every policy, so its fault happens.
        let n = usize::from(devices.cpu) + copies;
        let hints: Vec<f64> = vec![1.0; n];
        for sched in [
            Scheduler::Static { powers: None },
            Scheduler::Dynamic { packages: 24 },
            Scheduler::HGuided {
                powers: Some(hints),
                k: 2.0,
                min_package: 1,
            },
        ] {
            let Some(e) = engine(copies) else { return };
            let k = kernel(&e, true);
            e.inject_gpu_fault_on(
                1,
                FaultInjection {
                    fault,
                    after_packages: 0,
                },
            );
            let r = run_until_gpu1_claims(&e, &k, &sched, devices)
                .unwrap_or_else(|err| panic!("{fault:?} with {sched}: {err}"));
            let failed: Vec<_> = r.devices.iter().filter(|d| d.failure.is_some()).collect();
            assert_eq!(failed.len(), 1, "{fault:?} with {sched}: {r:?}");
            assert!(failed[0].name.ends_with("(gpu1)"), "{r:?}");
            assert!(!e.gpu_available_on(1) && e.gpu_available_on(0));
            // Later runs go on without it.
            let r = run_checked(&e, &k, 5_000, &sched, devices).unwrap();
            assert!(r.devices.iter().all(|d| !d.name.ends_with("(gpu1)")));
            common::assert_validation_clean(&e);
        }
    }
}

/// Runs until GPU 1 has claimed a package (so that its armed fault
/// happens), each run verified. Under Dynamic a loaded 2-core machine can
/// leave GPU 1's dispatch loop unscheduled for a whole run of 200 000 items
/// while the others finish it; the fault then stays armed for the next run.
fn run_until_gpu1_claims(
    e: &Engine,
    k: &coexec::Kernel,
    sched: &Scheduler,
    devices: Devices,
) -> Result<coexec::Report, Error> {
    const ATTEMPTS: usize = 20;
    let mut last = None;
    for _ in 0..ATTEMPTS {
        let r = run_checked(e, k, 200_000, sched, devices)?;
        let gpu1_worked = r
            .devices
            .iter()
            .any(|d| d.name.ends_with("(gpu1)") && (d.packages > 0 || d.failure.is_some()));
        if gpu1_worked {
            return Ok(r);
        }
        last = Some(r);
    }
    panic!("GPU 1 claimed nothing in {ATTEMPTS} runs with {sched}: {last:?}");
}

/// A GPU lost with a package in flight whose outcome is unknown: a
/// write-only kernel runs it again on the other devices.
#[test]
fn a_lost_package_of_a_write_only_kernel_runs_again_elsewhere() {
    let Some(e) = engine(2) else { return };
    let k = kernel(&e, false);
    e.inject_gpu_fault_on(
        0,
        FaultInjection {
            fault: GpuFault::HangThenLost,
            after_packages: 0,
        },
    );
    // Static: GPU 0 claims its share first, so its fault happens.
    let r = run_checked(
        &e,
        &k,
        20_000,
        &Scheduler::Static { powers: None },
        Devices::GPU,
    )
    .unwrap();
    assert!(r.devices.iter().any(|d| d.failure.is_some()), "{r:?}");
    assert!(!e.gpu_available_on(0) && e.gpu_available_on(1));
    common::assert_validation_clean(&e);
}

/// Report lines, trace processes and timeline rows come one per GPU.
#[test]
fn reports_and_traces_have_one_entry_per_gpu() {
    let Some(e) = engine(2) else { return };
    let k = kernel(&e, true);
    let r = run_checked(
        &e,
        &k,
        20_000,
        &Scheduler::Dynamic { packages: 32 },
        Devices::ALL,
    )
    .unwrap();
    let names: Vec<&str> = r.devices.iter().map(|d| d.name.as_str()).collect();
    assert_eq!(names.len(), 3, "{names:?}");
    assert!(
        names[1].ends_with("(gpu0)") && names[2].ends_with("(gpu1)"),
        "{names:?}"
    );
    let trace = coexec::trace::chrome_trace(&r, "multi");
    let text = trace.to_string();
    for name in &names[1..] {
        assert!(text.contains(*name), "{name} not in the trace");
    }
    let svg = std::env::temp_dir().join(format!("coexec-multi-{}.svg", std::process::id()));
    coexec::suite::plots::timeline_chart(&svg, "multi", &r).unwrap();
    let text = std::fs::read_to_string(&svg).unwrap();
    let _ = std::fs::remove_file(&svg);
    assert!(text.contains("GPU 0 queue") && text.contains("GPU 1 queue"));
}

/// Profiles are keyed by the whole device set: what an engine over two
/// GPUs learned serves the next engine over the same two, not an engine
/// over one.
#[test]
fn profiles_are_kept_per_device_set() {
    let dir = common::TempDir::new("multi-profiles");
    let open = |copies: usize| {
        common::engine_from(EngineOptions {
            workers: Some(1),
            validation: Validation::IfAvailable,
            duplicate_devices: copies,
            pipeline_cache_dir: Some(dir.to_path_buf()),
            profiles: true,
            ..Default::default()
        })
    };
    let Some(two) = open(2) else { return };
    let k = kernel(&two, true);
    for _ in 0..3 {
        run_checked(&two, &k, 20_000, &Scheduler::hguided(), Devices::ALL).unwrap();
    }
    drop((k, two));
    let one = open(1).unwrap();
    if one.gpu_count() == 1 {
        let k = kernel(&one, true);
        let r = run_checked(&one, &k, 20_000, &Scheduler::hguided(), Devices::ALL).unwrap();
        assert!(!r.from_profile, "a 1-GPU engine read the 2-GPU profile");
    }
    drop(one);
    let two = open(2).unwrap();
    let k = kernel(&two, true);
    let r = run_checked(&two, &k, 20_000, &Scheduler::hguided(), Devices::ALL).unwrap();
    assert!(r.from_profile, "the 2-GPU engine did not read its profile");
}

/// A staged engine over two GPUs mirrors the buffers on each GPU. A buffer
/// accumulated into by runs on changing device sets (`out[i] += hash(i)`,
/// no host write between them) holds `r * hash(i)` after run `r`: what one
/// GPU or the CPU wrote reaches the other GPU's mirror, and each GPU's
/// writes reach the host. (More in `tests/mirrors.rs`.)
#[test]
fn a_staged_engine_mirrors_on_every_gpu() {
    let Some(e) = common::engine_from(EngineOptions {
        workers: Some(1),
        validation: Validation::IfAvailable,
        duplicate_devices: 2,
        memory: coexec::MemoryPlacement::Staged,
        ..Default::default()
    }) else {
        return;
    };
    assert_eq!(e.memory_placement(), coexec::MemoryPlacement::Staged);
    assert_eq!(e.gpu_count(), 2);
    let k = kernel(&e, true);
    let n = 20_000u32;
    let mut out = e.buffer_from_slice(&vec![0u32; n as usize]).unwrap();
    let sets = [
        Devices::gpu(0),
        Devices::gpu(1),
        Devices::gpu(0),
        Devices::gpu(0).with_cpu(),
        Devices::GPU,
        Devices::gpu(0),
        Devices::ALL,
        Devices::gpu(1).with_cpu(),
        Devices::gpu(0),
    ];
    let scheds = [Scheduler::hguided(), Scheduler::Dynamic { packages: 9 }];
    let mut moved = [0u64; 2];
    for (r, devices) in sets.into_iter().enumerate() {
        let sched = &scheds[r % 2];
        let report = e
            .run(
                &k,
                Args::new().output(&mut out).push(&n),
                IndexSpace::D1(u64::from(n)),
                sched,
                devices,
            )
            .unwrap();
        let times = r as u32 + 1;
        for (i, &v) in out.iter().enumerate() {
            assert_eq!(
                v,
                hash(i as u32).wrapping_mul(times),
                "item {i} after run {times} on {devices} with {sched}"
            );
        }
        for d in &report.devices {
            let t = d.transfers;
            for (g, m) in moved.iter_mut().enumerate() {
                if d.name.ends_with(&format!("(gpu{g})")) {
                    *m += t.upload_bytes + t.download_bytes;
                }
            }
        }
    }
    assert!(
        moved.iter().all(|&m| m > 0),
        "a GPU never staged: {moved:?}"
    );
    common::assert_validation_clean(&e);
}
