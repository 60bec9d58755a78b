//! Lazy host coherence in co-executed runs: each CPU package downloads the
//! stale bytes it reads (its arguments' footprints), not every stale range
//! of every buffer the run binds.

// Kernels here are GLSL compiled at run time; a test hook opts lavapipe in.
#![cfg(all(feature = "glsl", feature = "test-hooks"))]

mod common;

use coexec::{
    Args, CpuArgs, DeviceKind, Devices, Engine, EngineOptions, Footprint, HostCoherence,
    IndexSpace, Kernel, MemoryPlacement, Package, Scheduler,
};
use std::sync::Arc;

/// `o[i] = x[i-1] + 3 x[i] + x[i+1]` (clamped): reads a halo of 1.
const GLSL: &str = "#version 450
layout(local_size_x = 64) in;
layout(std430, binding = 0) readonly buffer X { uint x[]; };
layout(std430, binding = 1) writeonly buffer O { uint o[]; };
layout(push_constant) uniform P { uint n; } p;
void main() {
    uint i = gl_GlobalInvocationID.x;
    if (i >= p.n) return;
    uint l = i == 0u ? 0u : i - 1u;
    uint r = min(i + 1u, p.n - 1u);
    o[i] = x[l] + x[i] * 3u + x[r];
}";

const HALO: Footprint = Footprint::Halo {
    per_item: 1,
    halo: 1,
};

fn reference(x: &[u32]) -> Vec<u32> {
    let n = x.len();
    (0..n)
        .map(|i| {
            let (l, r) = (i.saturating_sub(1), (i + 1).min(n - 1));
            x[l].wrapping_add(x[i].wrapping_mul(3)).wrapping_add(x[r])
        })
        .collect()
}

fn kernel(e: &Engine) -> Kernel {
    let cpu = Arc::new(|p: &Package, a: &mut CpuArgs<'_>| {
        let x = a.input::<u32>(0).to_vec();
        let o = a.output::<u32>(1);
        let n = x.len();
        for (k, i) in p.items.clone().enumerate() {
            let i = i as usize;
            let (l, r) = (i.saturating_sub(1), (i + 1).min(n - 1));
            o[k] = x[l].wrapping_add(x[i].wrapping_mul(3)).wrapping_add(x[r]);
        }
    });
    e.kernel_glsl("lazy-cpu-reads", GLSL, Some(cpu)).unwrap()
}

#[test]
fn a_co_executed_lazy_run_downloads_only_what_the_cpu_reads() {
    let Some(e) = common::engine_from(EngineOptions {
        workers: Some(1),
        validation: coexec::Validation::IfAvailable,
        pipeline_cache_dir: Some(std::env::temp_dir().join("coexec-test-pipeline-cache")),
        profiles: false,
        memory: MemoryPlacement::Staged,
        host_coherence: HostCoherence::Lazy,
        ..Default::default()
    }) else {
        return;
    };
    if e.host_coherence() != HostCoherence::Lazy {
        return; // COEXEC_MEMORY / COEXEC_HOST_COHERENCE chose otherwise.
    }
    // (Lavapipe's transfers share its one queue.)
    e.sync_per_cpu_package(true);
    let n = 1usize << 14;
    let k = kernel(&e);
    let init: Vec<u32> = (0..n as u32)
        .map(|i| i.wrapping_mul(2_654_435_761))
        .collect();
    let a = e.buffer_from_slice(&init).unwrap();
    let mut b = e.buffer::<u32>(n).unwrap();
    let mut c = e.buffer::<u32>(n).unwrap();
    let run = |x: &coexec::Buffer<u32>, o: &mut coexec::Buffer<u32>, sched, devices| {
        e.run(
            &k,
            Args::new()
                .input(x)
                .footprint(HALO)
                .output(o)
                .push(&(n as u32)),
            IndexSpace::D1(n as u64),
            sched,
            devices,
        )
        .unwrap()
    };
    // The GPU alone: all of `b` stays in the mirror, stale on the host.
    run(
        &a,
        &mut b,
        &Scheduler::Static { powers: None },
        Devices::GPU,
    );
    // Co-executed, half each: the CPU's packages download their rows of
    // `b` and a halo, not the whole of it.
    let sched = Scheduler::Static {
        powers: Some(vec![1.0, 1.0]),
    };
    let r = run(&b, &mut c, &sched, Devices::ALL);
    let cpu = r
        .devices
        .iter()
        .find(|d| d.kind == DeviceKind::Cpu)
        .unwrap();
    let gpu = r
        .devices
        .iter()
        .find(|d| d.kind == DeviceKind::Gpu)
        .unwrap();
    assert!(
        cpu.items > 0 && gpu.items > 0,
        "both devices take part: {r:?}"
    );
    let down = gpu.transfers.download_bytes;
    let bound = 4 * (cpu.items + 2 * cpu.packages as u64);
    assert!(
        down >= 4 * cpu.items,
        "{down} bytes for {} CPU items",
        cpu.items
    );
    assert!(
        down <= bound,
        "{down} bytes downloaded, at most {bound} read by the CPU"
    );
    assert!(down < 4 * n as u64);
    // Every byte right once the host reads them (the rest syncs now).
    let want_b = reference(&init);
    assert_eq!(c.as_slice(), &reference(&want_b)[..]);
    assert_eq!(b.as_slice(), &want_b[..]);
    common::assert_validation_clean(&e);
}

/// The GPU report of a run with one GPU.
fn gpu_of(r: &coexec::Report) -> &coexec::DeviceReport {
    let mut gpus = r.devices.iter().filter(|d| d.kind == DeviceKind::Gpu);
    let g = gpus.next().expect("a GPU took part");
    assert!(gpus.next().is_none(), "one GPU: {r:?}");
    g
}

#[test]
fn cpu_packages_read_from_each_gpus_mirrors() {
    // Two GPUs (lavapipe twice), each with mirrors of its own.
    let Some(e) = common::engine_from(EngineOptions {
        workers: Some(1),
        validation: coexec::Validation::IfAvailable,
        pipeline_cache_dir: Some(std::env::temp_dir().join("coexec-test-pipeline-cache")),
        profiles: false,
        duplicate_devices: 2,
        memory: MemoryPlacement::Staged,
        host_coherence: HostCoherence::Lazy,
        ..Default::default()
    }) else {
        return;
    };
    if e.host_coherence() != HostCoherence::Lazy || e.memory_placement() != MemoryPlacement::Staged
    {
        return; // COEXEC_MEMORY / COEXEC_HOST_COHERENCE chose otherwise.
    }
    assert_eq!(e.gpu_count(), 2);
    e.sync_per_cpu_package(true);
    let n = 1usize << 14;
    let k = kernel(&e);
    let init: Vec<u32> = (0..n as u32).map(|i| i.wrapping_mul(40_503)).collect();
    let a = e.buffer_from_slice(&init).unwrap();
    let mut b = e.buffer::<u32>(n).unwrap();
    let mut c = e.buffer::<u32>(n).unwrap();
    let halves = Scheduler::Static {
        powers: Some(vec![1.0, 1.0]),
    };
    let run = |x: &coexec::Buffer<u32>, o: &mut coexec::Buffer<u32>, sched, devices| {
        e.hold_cpu_until_gpus_claim(1);
        e.run(
            &k,
            Args::new()
                .input(x)
                .footprint(HALO)
                .output(o)
                .push(&(n as u32)),
            IndexSpace::D1(n as u64),
            sched,
            devices,
        )
        .unwrap()
    };
    let want_b = reference(&init);
    let want_c = reference(&want_b);
    let gpu_alone = Scheduler::Static { powers: None };
    // GPU 1 alone writes `b` (stale in its mirrors); the CPU beside GPU 1
    // downloads from GPU 1's mirror only what its packages read.
    run(&a, &mut b, &gpu_alone, Devices::gpu(1));
    let r = run(&b, &mut c, &halves, Devices::gpu(1).with_cpu());
    let cpu = r
        .devices
        .iter()
        .find(|d| d.kind == DeviceKind::Cpu)
        .unwrap();
    let down = gpu_of(&r).transfers.download_bytes;
    assert!(cpu.items > 0 && gpu_of(&r).items > 0, "{r:?}");
    assert!(
        down >= 4 * cpu.items,
        "{down} bytes for {} CPU items",
        cpu.items
    );
    assert!(
        down <= 4 * (cpu.items + 2 * cpu.packages as u64),
        "{down} bytes"
    );
    assert_eq!(c.as_slice(), &want_c[..]);
    assert_eq!(b.as_slice(), &want_b[..]);
    // GPU 0 alone writes `b` again; the run of the CPU beside GPU 1 brings
    // back all of it at its start (GPU 1 uploads what it reads from the
    // host copy), and every byte comes out right.
    run(&a, &mut b, &gpu_alone, Devices::gpu(0));
    let r = run(&b, &mut c, &halves, Devices::gpu(1).with_cpu());
    assert!(gpu_of(&r).transfers.download_bytes >= 4 * n as u64, "{r:?}");
    assert_eq!(c.as_slice(), &want_c[..]);
    // The CPU beside both GPUs: everything stale syncs at the start.
    run(&a, &mut b, &gpu_alone, Devices::gpu(1));
    let thirds = Scheduler::Static {
        powers: Some(vec![1.0, 1.0, 1.0]),
    };
    run(&b, &mut c, &thirds, Devices::ALL);
    assert_eq!(c.as_slice(), &want_c[..]);
    assert_eq!(b.as_slice(), &want_b[..]);
    common::assert_validation_clean(&e);
}
