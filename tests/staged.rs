//! Staged memory (`MemoryPlacement::Staged`, `COEXEC_MEMORY=staged`): every
//! buffer a GPU run binds gets a device-local mirror; the run uploads what
//! the GPU reads and downloads what each GPU package writes. On lavapipe the
//! outputs must be byte-identical to zero-copy runs and to a host
//! reference, whichever devices and scheduler run them, with residency
//! (nothing uploaded again that the host did not write) and exactly-once
//! downloads under failures.

// Kernels here are GLSL compiled at run time.
#![cfg(feature = "glsl")]

mod common;

use coexec::{
    Args, Buffer, CpuArgs, Devices, Engine, IndexSpace, Kernel, MemoryPlacement, Package, Report,
    Scheduler,
};
use proptest::prelude::*;
use std::sync::{Arc, OnceLock};

/// The shared staged engine.
fn staged() -> Option<Engine> {
    static E: OnceLock<Option<Engine>> = OnceLock::new();
    E.get_or_init(|| common::engine_placed(MemoryPlacement::Staged, 1))
        .clone()
}

/// The shared zero-copy engine (staged too where `COEXEC_MEMORY=staged`:
/// the host reference then checks both).
fn zero_copy() -> Option<Engine> {
    static E: OnceLock<Option<Engine>> = OnceLock::new();
    E.get_or_init(|| common::engine_placed(MemoryPlacement::ZeroCopy, 1))
        .clone()
}

/// `out[i] = x[i] * 3 + i` (1-D; `out` writeonly): what a pure output does.
const MAP_GLSL: &str = "#version 450
layout(local_size_x = 64) in;
layout(std430, binding = 0) readonly buffer X { uint x[]; };
layout(std430, binding = 1) writeonly buffer O { uint o[]; };
layout(push_constant) uniform P { uint n; } p;
void main() {
    uint i = gl_GlobalInvocationID.x;
    if (i < p.n) { o[i] = x[i] * 3u + i; }
}";

fn map_ref(x: u32, i: u32) -> u32 {
    x.wrapping_mul(3).wrapping_add(i)
}

fn map_kernel(e: &Engine) -> Kernel {
    map_kernel_slow(e, std::time::Duration::ZERO)
}

/// [`map_kernel`] whose CPU packages sleep `nap` each: the GPU then takes
/// part in every run.
fn map_kernel_slow(e: &Engine, nap: std::time::Duration) -> Kernel {
    let cpu = Arc::new(move |p: &Package, a: &mut CpuArgs<'_>| {
        std::thread::sleep(nap);
        let x = a.input::<u32>(0);
        let o = a.output::<u32>(1);
        for (k, i) in p.items.clone().enumerate() {
            o[k] = map_ref(x[i as usize], i as u32);
        }
    });
    e.kernel_glsl("staged-map", MAP_GLSL, Some(cpu)).unwrap()
}

/// `o[i] += i + 1` (1-D, `o` read-write): an output the kernel also reads.
const ACC_GLSL: &str = "#version 450
layout(local_size_x = 32) in;
layout(std430, binding = 0) buffer O { uint o[]; };
layout(push_constant) uniform P { uint n; } p;
void main() {
    uint i = gl_GlobalInvocationID.x;
    if (i < p.n) { o[i] += i + 1u; }
}";

fn acc_kernel(e: &Engine) -> Kernel {
    acc_kernel_slow(e, std::time::Duration::ZERO)
}

/// [`acc_kernel`] whose CPU packages sleep `nap` each.
fn acc_kernel_slow(e: &Engine, nap: std::time::Duration) -> Kernel {
    let cpu = Arc::new(move |p: &Package, a: &mut CpuArgs<'_>| {
        std::thread::sleep(nap);
        let o = a.output::<u32>(0);
        for (k, i) in p.items.clone().enumerate() {
            o[k] = o[k].wrapping_add(i as u32 + 1);
        }
    });
    e.kernel_glsl("staged-acc", ACC_GLSL, Some(cpu)).unwrap()
}

fn img_kernel(e: &Engine, w: u32) -> Kernel {
    let cpu = Arc::new(move |p: &Package, a: &mut CpuArgs<'_>| {
        let x = a.input::<u32>(0);
        let o = a.output::<u32>(1);
        for (j, k) in p.items.clone().enumerate() {
            let (gx, gy) = (k as u32 % w, k as u32 / w);
            o[2 * j] = x[k as usize] ^ gy;
            o[2 * j + 1] = x[k as usize].wrapping_add(gx);
        }
    });
    e.kernel_glsl("staged-img", common::IMG_GLSL, Some(cpu))
        .unwrap()
}

fn schedulers() -> Vec<Scheduler> {
    vec![
        Scheduler::Static { powers: None },
        Scheduler::Dynamic { packages: 7 },
        Scheduler::HGuided {
            powers: None,
            k: coexec::DEFAULT_K,
            min_package: 1,
        },
    ]
}

/// Runs the map kernel on `e` and returns the output and the report.
fn run_map(e: &Engine, x: &Buffer<u32>, sched: &Scheduler, devices: Devices) -> (Vec<u32>, Report) {
    run_map_with(e, &map_kernel(e), x, sched, devices)
}

/// Runs map kernel `k` on `e`.
fn run_map_with(
    e: &Engine,
    k: &Kernel,
    x: &Buffer<u32>,
    sched: &Scheduler,
    devices: Devices,
) -> (Vec<u32>, Report) {
    let mut o = e.buffer::<u32>(x.len()).unwrap();
    let r = e
        .run(
            k,
            Args::new().input(x).output(&mut o).push(&(x.len() as u32)),
            IndexSpace::D1(x.len() as u64),
            sched,
            devices,
        )
        .unwrap();
    (o.to_vec(), r)
}

/// 1 where GPU runs download their outputs before returning (eager host
/// coherence, unless `COEXEC_HOST_COHERENCE=lazy`), else 0.
fn eager(e: &Engine) -> u64 {
    u64::from(e.host_coherence() == coexec::HostCoherence::Eager)
}

fn gpu(r: &Report) -> &coexec::DeviceReport {
    r.devices
        .iter()
        .find(|d| d.kind == coexec::DeviceKind::Gpu)
        .expect("a GPU report")
}

#[test]
fn staged_1d_outputs_match_zero_copy_and_the_reference() {
    let (Some(s), Some(z)) = (staged(), zero_copy()) else {
        return;
    };
    assert_eq!(s.memory_placement(), MemoryPlacement::Staged);
    let n = 64 * 37 + 5;
    let data = common::input(n, 7);
    let want: Vec<u32> = (0..n).map(|i| map_ref(data[i], i as u32)).collect();
    let xs = s.buffer_from_slice(&data).unwrap();
    let xz = z.buffer_from_slice(&data).unwrap();
    for sched in schedulers() {
        for devices in [Devices::GPU, Devices::ALL] {
            let (got, r) = run_map(&s, &xs, &sched, devices);
            assert_eq!(r.memory, MemoryPlacement::Staged);
            assert_eq!(got, want, "{sched:?} {devices:?}");
            let (zero, _) = run_map(&z, &xz, &sched, devices);
            assert_eq!(bytemuck_bytes(&got), bytemuck_bytes(&zero));
            // Downloads: exactly the items the GPU ran, once (not what it
            // stole: it wrote the host copies itself).
            let g = gpu(&r);
            assert_eq!(
                g.transfers.download_bytes,
                eager(&s) * common::own_items(&r, g) * 4,
                "{sched:?} {devices:?}"
            );
        }
    }
    common::assert_validation_clean(&s);
}

fn bytemuck_bytes(v: &[u32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

#[test]
fn staged_2d_outputs_match_the_reference() {
    let Some(s) = staged() else { return };
    let (w, h) = (45u32, 29u32);
    let data = common::input((w * h) as usize, 3);
    let want = common::img_ref(&data, w);
    let k = img_kernel(&s, w);
    let x = s.buffer_from_slice(&data).unwrap();
    for sched in schedulers() {
        for devices in [Devices::GPU, Devices::ALL] {
            let mut o = s.buffer::<u32>(want.len()).unwrap();
            let r = s
                .run(
                    &k,
                    Args::new()
                        .input(&x)
                        .output_per_item(&mut o, 2)
                        .push(&[w, h]),
                    IndexSpace::D2 {
                        width: w,
                        height: h,
                    },
                    &sched,
                    devices,
                )
                .unwrap();
            assert_eq!(&o[..], &want[..], "{sched:?} {devices:?}");
            let bytes = eager(&s) * gpu(&r).items * 8;
            assert_eq!(gpu(&r).transfers.download_bytes, bytes);
        }
    }
    common::assert_validation_clean(&s);
}

#[test]
fn residency_host_writes_and_read_write_outputs() {
    let Some(s) = staged() else { return };
    let n = 64 * 20;
    let mut x = s.buffer_from_slice(&common::input(n, 1)).unwrap();
    let sched = Scheduler::Dynamic { packages: 5 };
    let (_, r1) = run_map(&s, &x, &sched, Devices::GPU);
    assert_eq!(gpu(&r1).transfers.upload_bytes, n as u64 * 4);
    // Not written by the host since: nothing to upload.
    let (got, r2) = run_map(&s, &x, &sched, Devices::GPU);
    assert_eq!(gpu(&r2).transfers.upload_bytes, 0);
    assert_eq!(got[5], map_ref(x[5], 5));
    // A host write between runs is seen by the next run.
    x[5] = 1000;
    let (got, r3) = run_map(&s, &x, &sched, Devices::GPU);
    assert_eq!(got[5], 3005);
    assert_eq!(gpu(&r3).transfers.upload_bytes, n as u64 * 4);

    // An output the kernel reads: uploaded once, then what the GPU wrote
    // stays resident for the next run; after a co-executed run the next
    // one uploads what the CPU wrote (the host copy alone).
    let k = acc_kernel(&s);
    let mut o = s.buffer::<u32>(n).unwrap();
    let acc = |o: &mut Buffer<u32>, devices| {
        s.run(
            &k,
            Args::new().output(o).push(&(n as u32)),
            IndexSpace::D1(n as u64),
            &sched,
            devices,
        )
        .unwrap()
    };
    let r = acc(&mut o, Devices::GPU);
    assert_eq!(gpu(&r).transfers.upload_bytes, n as u64 * 4);
    let r = acc(&mut o, Devices::GPU);
    assert_eq!(gpu(&r).transfers.upload_bytes, 0);
    let r = acc(&mut o, Devices::ALL);
    let gpu_did = r
        .devices
        .iter()
        .find(|d| d.kind == coexec::DeviceKind::Gpu)
        .map_or(0, |d| d.items);
    let r = acc(&mut o, Devices::GPU);
    let again = (n as u64 - gpu_did) * 4;
    assert_eq!(gpu(&r).transfers.upload_bytes, again);
    for (i, &v) in o.iter().enumerate() {
        assert_eq!(v, 4 * (i as u32 + 1), "item {i}");
    }
    common::assert_validation_clean(&s);
}

#[test]
fn a_buffer_written_as_output_is_read_as_input_next() {
    let Some(s) = staged() else { return };
    let n = 64 * 16;
    let data = common::input(n, 9);
    let x = s.buffer_from_slice(&data).unwrap();
    let k = map_kernel(&s);
    for first in [Devices::GPU, Devices::ALL] {
        let mut mid = s.buffer::<u32>(n).unwrap();
        let mut out = s.buffer::<u32>(n).unwrap();
        let sched = Scheduler::Dynamic { packages: 6 };
        let args = Args::new().input(&x).output(&mut mid).push(&(n as u32));
        let r1 = s
            .run(&k, args, IndexSpace::D1(n as u64), &sched, first)
            .unwrap();
        let args = Args::new().input(&mid).output(&mut out).push(&(n as u32));
        let r2 = s
            .run(&k, args, IndexSpace::D1(n as u64), &sched, Devices::GPU)
            .unwrap();
        for i in 0..n {
            let m = map_ref(data[i], i as u32);
            assert_eq!(mid[i], m);
            assert_eq!(out[i], map_ref(m, i as u32), "{first:?} item {i}");
        }
        // What the GPU wrote of `mid` stayed current in its mirror: the
        // second run uploads only the CPU's part (nothing after GPU alone).
        let cpu_items = n as u64 - gpu(&r1).items;
        let up = gpu(&r2).transfers.upload_bytes;
        assert_eq!(up, cpu_items * 4, "{first:?}");
    }
    common::assert_validation_clean(&s);
}

/// A CPU-only run writes an output's host copy alone: the next GPU run
/// that reads the buffer uploads it again.
#[test]
fn a_cpu_only_run_makes_the_mirror_stale() {
    let Some(s) = staged() else { return };
    let n = 64 * 8;
    let k = map_kernel(&s);
    let x1 = s.buffer_from_slice(&common::input(n, 1)).unwrap();
    let x2 = s.buffer_from_slice(&common::input(n, 2)).unwrap();
    let mut mid = s.buffer::<u32>(n).unwrap();
    let mut out = s.buffer::<u32>(n).unwrap();
    let sched = Scheduler::Dynamic { packages: 4 };
    let space = IndexSpace::D1(n as u64);
    let push = n as u32;
    s.run(
        &k,
        Args::new().input(&x1).output(&mut mid).push(&push),
        space,
        &sched,
        Devices::GPU,
    )
    .unwrap();
    s.run(
        &k,
        Args::new().input(&x2).output(&mut mid).push(&push),
        space,
        &sched,
        Devices::CPU,
    )
    .unwrap();
    let r = s
        .run(
            &k,
            Args::new().input(&mid).output(&mut out).push(&push),
            space,
            &sched,
            Devices::GPU,
        )
        .unwrap();
    assert_eq!(gpu(&r).transfers.upload_bytes, n as u64 * 4);
    for i in 0..n {
        let m = map_ref(x2[i], i as u32);
        assert_eq!((mid[i], out[i]), (m, map_ref(m, i as u32)), "item {i}");
    }
}

/// Where the device has `VK_EXT_memory_budget`, each heap has a budget
/// that mirrors are checked against, and a mirror takes from it.
#[test]
fn heap_budgets_are_read_where_the_device_has_them() {
    let Some(s) = staged() else { return };
    let info = s.device_info();
    let heap = info.memory_types[s.memory_type() as usize].heap;
    match s.device().heap_budget(heap) {
        None => assert!(!info.memory_budget),
        Some((usage, budget)) => {
            assert!(info.memory_budget);
            assert!(budget > 0 && budget <= info.heaps[heap as usize].size);
            assert!(usage <= info.heaps[heap as usize].size, "{usage}");
        }
    }
    assert!(s.device().heap_budget(info.heaps.len() as u32).is_none());
}

/// A buffer bound twice as an input is uploaded once.
#[test]
fn a_buffer_bound_twice_is_uploaded_once() {
    let Some(s) = staged() else { return };
    const ADD: &str = "#version 450
layout(local_size_x = 64) in;
layout(std430, binding = 0) readonly buffer A { uint a[]; };
layout(std430, binding = 1) readonly buffer B { uint b[]; };
layout(std430, binding = 2) writeonly buffer O { uint o[]; };
layout(push_constant) uniform P { uint n; } p;
void main() {
    uint i = gl_GlobalInvocationID.x;
    if (i < p.n) { o[i] = a[i] + b[i]; }
}";
    let k = s.kernel_glsl("staged-add", ADD, None).unwrap();
    let n = 64 * 5;
    let x = s.buffer_from_slice(&common::input(n, 8)).unwrap();
    let mut o = s.buffer::<u32>(n).unwrap();
    let r = s
        .run(
            &k,
            Args::new()
                .input(&x)
                .input(&x)
                .output(&mut o)
                .push(&(n as u32)),
            IndexSpace::D1(n as u64),
            &Scheduler::Dynamic { packages: 2 },
            Devices::GPU,
        )
        .unwrap();
    assert_eq!(gpu(&r).transfers.upload_bytes, n as u64 * 4);
    for i in 0..n {
        assert_eq!(o[i], x[i].wrapping_add(x[i]), "item {i}");
    }
    common::assert_validation_clean(&s);
}

#[test]
fn zero_copy_runs_transfer_nothing() {
    let Some(z) = zero_copy() else { return };
    if z.memory_placement() != MemoryPlacement::ZeroCopy {
        return; // COEXEC_MEMORY=staged
    }
    let x = z.buffer_from_slice(&common::input(640, 2)).unwrap();
    let (_, r) = run_map(&z, &x, &Scheduler::Dynamic { packages: 4 }, Devices::ALL);
    assert_eq!(r.memory, MemoryPlacement::ZeroCopy);
    assert_eq!(gpu(&r).transfers, coexec::Transfers::default());
}

#[test]
fn auto_placement_is_zero_copy_on_unified_memory() {
    let Some(e) = common::engine_placed(MemoryPlacement::Auto, 1) else {
        return;
    };
    if std::env::var("COEXEC_MEMORY").is_ok() {
        return;
    }
    let unified = coexec_engine::is_unified_memory(e.device_info());
    let want = if unified {
        MemoryPlacement::ZeroCopy
    } else {
        MemoryPlacement::Staged
    };
    assert_eq!(e.memory_placement(), want);
    assert_eq!(
        "zero-copy".parse::<MemoryPlacement>(),
        Ok(MemoryPlacement::ZeroCopy)
    );
    assert_eq!(
        "staged".parse::<MemoryPlacement>(),
        Ok(MemoryPlacement::Staged)
    );
    assert_eq!("auto".parse::<MemoryPlacement>(), Ok(MemoryPlacement::Auto));
    assert!("fast".parse::<MemoryPlacement>().is_err());
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]

    /// Any split of the range between the devices gives the same bytes.
    #[test]
    fn prop_staged_equals_reference_under_any_split(
        groups in 1u64..40,
        tail in 0u64..64,
        packages in 1u64..12,
        cpu_power in 0.05f64..0.95,
        seed in any::<u32>(),
        kind in 0u8..3,
    ) {
        let Some(s) = staged() else { return Ok(()) };
        let n = (groups * 64 + tail) as usize;
        let data = common::input(n, seed);
        let want: Vec<u32> = (0..n).map(|i| map_ref(data[i], i as u32)).collect();
        let sched = match kind {
            0 => Scheduler::Static { powers: Some(vec![cpu_power, 1.0 - cpu_power]) },
            1 => Scheduler::Dynamic { packages },
            _ => Scheduler::HGuided { powers: Some(vec![cpu_power, 1.0 - cpu_power]), k: 1.5, min_package: 1 },
        };
        let x = s.buffer_from_slice(&data).unwrap();
        let (got, r) = run_map(&s, &x, &sched, Devices::ALL);
        prop_assert_eq!(got, want);
        let g = gpu(&r);
        prop_assert_eq!(g.transfers.download_bytes, eager(&s) * common::own_items(&r, g) * 4);
    }
}

/// Failures (test hooks): every package the GPU completed is downloaded
/// exactly once, and the result is the reference's.
#[cfg(feature = "test-hooks")]
mod faults {
    use super::*;
    use coexec::hooks::{FaultInjection, GpuFault};
    use std::time::Duration;

    fn fresh() -> Option<Engine> {
        common::engine_from(coexec::EngineOptions {
            workers: Some(1),
            validation: coexec::Validation::IfAvailable,
            gpu_timeout: Duration::from_millis(300),
            profiles: false,
            memory: MemoryPlacement::Staged,
            ..Default::default()
        })
    }

    #[test]
    fn a_failed_gpu_downloads_each_completed_package_once() {
        let n = 64 * 400;
        for (fault, writeonly) in [
            (GpuFault::DeviceLost, false),
            (GpuFault::Hang, false),
            (GpuFault::HangThenLost, true),
            // Read-write output: the lost packages wrote only the mirror,
            // so they run again on the CPU (zero-copy: GpuLostMidPackage).
            (GpuFault::HangThenLost, false),
            (GpuFault::SubmitError, false),
        ] {
            let Some(e) = fresh() else { return };
            e.inject_gpu_fault(FaultInjection {
                fault,
                after_packages: 1,
            });
            let sched = Scheduler::Dynamic { packages: 40 };
            // The CPU waits until the GPU claimed the failing package and
            // the one after it (or failed): 10 units a package.
            e.hold_cpu_until_gpus_claim(30);
            let nap = Duration::from_millis(1);
            let (got, want, r) = if writeonly {
                let data = common::input(n, 5);
                let x = e.buffer_from_slice(&data).unwrap();
                let k = map_kernel_slow(&e, nap);
                let (got, r) = run_map_with(&e, &k, &x, &sched, Devices::ALL);
                let want: Vec<u32> = (0..n).map(|i| map_ref(data[i], i as u32)).collect();
                (got, want, r)
            } else {
                let k = acc_kernel_slow(&e, nap);
                let mut o = e.buffer_from_slice(&vec![7u32; n]).unwrap();
                let r = e
                    .run(
                        &k,
                        Args::new().output(&mut o).push(&(n as u32)),
                        IndexSpace::D1(n as u64),
                        &sched,
                        Devices::ALL,
                    )
                    .unwrap();
                let want: Vec<u32> = (0..n as u32).map(|i| 7 + i + 1).collect();
                (o.to_vec(), want, r)
            };
            assert_eq!(got, want, "{fault:?}");
            let g = gpu(&r);
            assert!(g.failure.is_some(), "{fault:?} {:?} {:?}", g, r.devices);
            assert_eq!(
                g.transfers.download_bytes,
                common::own_items(&r, g) * 4,
                "{fault:?}"
            );
            let total: u64 = r.devices.iter().map(|d| d.items).sum();
            assert_eq!(total, n as u64, "{fault:?}");
        }
    }

    /// A package that hangs while the download of the one before it waits
    /// behind it on the queue: once the hang ends, that download completes
    /// and its package counts once (it is neither lost nor run again).
    #[test]
    fn a_download_queued_behind_a_hang_completes_once() {
        let n = 64 * 400;
        for after_packages in [1, 2, 3, 4] {
            let Some(e) = fresh() else { return };
            let k = acc_kernel_slow(&e, Duration::from_millis(1));
            let mut o = e.buffer_from_slice(&vec![7u32; n]).unwrap();
            let sched = Scheduler::Dynamic { packages: 40 };
            let run = |o: &mut Buffer<u32>| {
                e.run(
                    &k,
                    Args::new().output(o).push(&(n as u32)),
                    IndexSpace::D1(n as u64),
                    &sched,
                    Devices::ALL,
                )
            };
            // Warm: the GPU is measured, so it keeps two packages in flight.
            run(&mut o).unwrap();
            e.inject_gpu_fault(FaultInjection {
                fault: GpuFault::Hang,
                after_packages,
            });
            let r = run(&mut o).unwrap_or_else(|err| panic!("after {after_packages}: {err}"));
            for (i, &v) in o.iter().enumerate() {
                assert_eq!(
                    v,
                    7 + 2 * (i as u32 + 1),
                    "after {after_packages}: item {i}"
                );
            }
            let g = gpu(&r);
            // (Lazy host coherence also brings back, at the run's start,
            // what the warm-up run left in the mirror: tests/lazy.rs.)
            if eager(&e) == 1 {
                assert_eq!(g.transfers.download_bytes, common::own_items(&r, g) * 4);
            }
        }
    }

    #[test]
    fn a_buffer_gets_its_mirror_when_it_is_made() {
        let Some(e) = fresh() else { return };
        let x = e.buffer_from_slice(&common::input(640, 4)).unwrap();
        let mut o = e.buffer::<u32>(640).unwrap();
        // From here no mirror can be allocated: the run needs none, both
        // buffers got theirs when they were made.
        e.inject_mirror_failure(false);
        let k = map_kernel(&e);
        let r = e
            .run(
                &k,
                Args::new().input(&x).output(&mut o).push(&640u32),
                IndexSpace::D1(640),
                &Scheduler::Dynamic { packages: 3 },
                Devices::GPU,
            )
            .unwrap();
        let want: Vec<u32> = (0..640).map(|i| map_ref(x[i], i as u32)).collect();
        assert_eq!(o.to_vec(), want);
        let g = gpu(&r);
        assert_eq!(g.transfers.zero_copy_fallbacks, 0);
        assert_eq!(g.transfers.upload_bytes, 2560);
    }

    #[test]
    fn a_mirror_that_does_not_fit_fails_staged_and_falls_back_under_auto() {
        let Some(e) = fresh() else { return };
        // Demanded: a typed error. (Made after the fault: the buffer's
        // mirror could not be made ahead either.)
        e.inject_mirror_failure(false);
        let x = e.buffer_from_slice(&common::input(640, 4)).unwrap();
        let k = map_kernel(&e);
        let mut o = e.buffer::<u32>(640).unwrap();
        // The GPU alone, and with the CPU (which runs while the GPU's
        // thread finds its mirrors missing): the same error, and the GPU
        // is not left out of later runs.
        for devices in [Devices::GPU, Devices::ALL] {
            let err = e
                .run(
                    &k,
                    Args::new().input(&x).output(&mut o).push(&640u32),
                    IndexSpace::D1(640),
                    &Scheduler::Dynamic { packages: 3 },
                    devices,
                )
                .unwrap_err();
            assert!(
                matches!(
                    err,
                    coexec::Error::MirrorUnavailable {
                        binding: 0,
                        bytes: 2560,
                        ..
                    }
                ),
                "{devices:?}: {err}"
            );
        }
        // Chosen by Auto: the buffers are bound zero-copy, the run is right.
        e.inject_mirror_failure(true);
        let (got, r) = run_map(&e, &x, &Scheduler::Dynamic { packages: 3 }, Devices::ALL);
        let want: Vec<u32> = (0..640).map(|i| map_ref(x[i], i as u32)).collect();
        assert_eq!(got, want);
        let g = gpu(&r);
        assert_eq!(g.transfers.zero_copy_fallbacks, 2);
        assert_eq!(
            (g.transfers.upload_bytes, g.transfers.download_bytes),
            (0, 0)
        );
    }
}

/// Mirrors through the Vulkan Memory Allocator backend.
#[cfg(feature = "vma")]
#[test]
fn staged_mirrors_through_vma() {
    let Some(e) = common::engine_from(coexec::EngineOptions {
        workers: Some(1),
        allocator: coexec::AllocatorBackend::Vma,
        validation: coexec::Validation::IfAvailable,
        profiles: false,
        memory: MemoryPlacement::Staged,
        ..Default::default()
    }) else {
        return;
    };
    let n = 64 * 30 + 3;
    let data = common::input(n, 11);
    let x = e.buffer_from_slice(&data).unwrap();
    for devices in [Devices::GPU, Devices::ALL] {
        let (got, r) = run_map(&e, &x, &Scheduler::Dynamic { packages: 5 }, devices);
        let want: Vec<u32> = (0..n).map(|i| map_ref(data[i], i as u32)).collect();
        assert_eq!(got, want, "{devices:?}");
        assert_eq!(r.memory, MemoryPlacement::Staged);
        assert_eq!(
            gpu(&r).transfers.download_bytes,
            common::own_items(&r, gpu(&r)) * 4
        );
    }
    common::assert_validation_clean(&e);
}
