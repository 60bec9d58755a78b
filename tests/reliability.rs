//! Reliability: concurrent callers on one engine, and a soak of back-to-back
//! runs with no growth in resident memory or live Vulkan objects.

// Kernels here are GLSL compiled at run time: the lean build (no feature
// `glsl`) runs none of these tests (its kernels are SPIR-V: tests/workloads.rs).
#![cfg(feature = "glsl")]

mod common;

use coexec::{Args, CpuArgs, Devices, Engine, IndexSpace, Package, Scheduler};
use std::sync::Arc;

const GLSL: &str = "#version 450
layout(local_size_x = 64) in;
layout(std430, binding = 0) readonly buffer I { uint a[]; };
layout(std430, binding = 1) buffer O { uint o[]; };
layout(push_constant) uniform P { uint n; uint add; } p;
void main() { uint i = gl_GlobalInvocationID.x; if (i < p.n) o[i] = a[i] * 2u + p.add; }";

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct P {
    n: u32,
    add: u32,
}

fn kernel(e: &Engine) -> coexec::Kernel {
    let cpu = Arc::new(|pkg: &Package, args: &mut CpuArgs<'_>| {
        let p: P = args.push();
        let a = &args.input::<u32>(0)[pkg.items.start as usize..pkg.items.end as usize];
        for (o, a) in args.output::<u32>(1).iter_mut().zip(a) {
            *o = a * 2 + p.add;
        }
    });
    e.kernel_glsl("double_add", GLSL, Some(cpu)).unwrap()
}

fn one_run(
    e: &Engine,
    k: &coexec::Kernel,
    n: usize,
    add: u32,
    sched: &Scheduler,
    devices: Devices,
) {
    let a = e
        .buffer_from_slice(&(0..n as u32).collect::<Vec<_>>())
        .unwrap();
    let mut o = e.buffer::<u32>(n).unwrap();
    e.run(
        k,
        Args::new()
            .input(&a)
            .output(&mut o)
            .push(&P { n: n as u32, add }),
        IndexSpace::D1(n as u64),
        sched,
        devices,
    )
    .unwrap();
    for (i, v) in o.iter().enumerate() {
        assert_eq!(*v, 2 * i as u32 + add, "item {i} (add {add})");
    }
}

#[test]
fn eight_threads_times_1000_runs_on_one_engine_all_verified() {
    let Some(e) = common::engine() else { return };
    let k = kernel(&e);
    std::thread::scope(|s| {
        for t in 0..8u32 {
            let (e, k) = (&e, &k);
            s.spawn(move || {
                let scheds = [
                    Scheduler::hguided(),
                    Scheduler::Dynamic { packages: 3 },
                    Scheduler::Static { powers: None },
                ];
                let devs = [Devices::ALL, Devices::CPU, Devices::GPU];
                for r in 0..1000u32 {
                    let n = 1 + ((t * 7919 + r * 104_729) % 3000) as usize;
                    one_run(
                        e,
                        k,
                        n,
                        t * 1000 + r,
                        &scheds[(r % 3) as usize],
                        devs[((r / 3) % 3) as usize],
                    );
                }
            });
        }
    });
    common::assert_validation_clean(&e);
}

fn rss_kib() -> u64 {
    let s = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: u64 = s
        .split_whitespace()
        .nth(1)
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    pages * 4
}

#[test]
fn soak_10000_runs_no_memory_growth_no_leaked_vulkan_objects() {
    let Some(e) = common::engine_with(Some(1), coexec::AllocatorBackend::default()) else {
        return;
    };
    let k = kernel(&e);
    let n = 4096;
    let a = e
        .buffer_from_slice(&(0..n as u32).collect::<Vec<_>>())
        .unwrap();
    let mut o = e.buffer::<u32>(n).unwrap();
    let mut run = |i: u32| {
        let devices = [Devices::ALL, Devices::GPU, Devices::CPU][(i % 3) as usize];
        e.run(
            &k,
            Args::new().input(&a).output(&mut o).push(&P {
                n: n as u32,
                add: i,
            }),
            IndexSpace::D1(n as u64),
            &Scheduler::hguided(),
            devices,
        )
        .unwrap();
        assert_eq!(o[n - 1], 2 * (n as u32 - 1) + i);
    };
    // Warm up: caches, allocator pools and the pool's buffers settle.
    for i in 0..1000 {
        run(i);
    }
    let before = rss_kib();
    for i in 0..10_000 {
        run(i);
    }
    let after = rss_kib();
    assert!(
        after <= before + 4096,
        "resident memory grew from {before} KiB to {after} KiB over 10,000 runs"
    );
    // Live Vulkan objects: the validation layer's object tracker reports every
    // object still alive when the device is destroyed as an error.
    let instance = e.device().instance().clone();
    let device = Arc::downgrade(e.device());
    drop(a);
    drop(o);
    drop(k);
    drop(e);
    assert!(
        device.upgrade().is_none(),
        "the device was destroyed (so the tracker checked it)"
    );
    let errors = instance.validation_log().errors();
    if instance.validation_enabled() {
        assert_eq!(
            errors,
            0,
            "{:#?}",
            instance.validation_log().error_messages()
        );
    }
}
