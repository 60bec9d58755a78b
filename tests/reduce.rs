//! Reduction outputs: every work-item's contribution combined exactly once,
//! whichever devices ran what, under stealing, splitting and injected GPU
//! faults; deterministic reductions bit-identical across schedulers and
//! device sets; bad input refused with a typed error.

// Kernels here are GLSL compiled at run time (the lean build has none).
#![cfg(feature = "glsl")]

mod common;

use coexec::reduce::{tree, tree_of_partials, ReduceOp};
use coexec::{
    Args, CpuArgs, Devices, Engine, Error, HostCoherence, IndexSpace, Kernel, MemoryPlacement,
    Package, Reduction, Scheduler,
};
use proptest::prelude::*;
use std::sync::Arc;

/// Work-group size of the kernels here.
const LOCAL: usize = 64;

fn hash(i: u32) -> u32 {
    let mut h = i;
    for _ in 0..64 {
        h = h.wrapping_mul(1664525).wrapping_add(1013904223);
        h ^= h >> 13;
    }
    h
}

/// Sum (binding 0) and minimum (binding 1) of `hash(i)`, both `writeonly`
/// so that a package lost with the GPU may run again elsewhere.
const HASH_GLSL: &str = "#version 450
layout(local_size_x = 64) in;
#include \"coexec_reduce.glsl\"
COEXEC_DEFINE_REDUCE(gsum, uint, COEXEC_SUM)
COEXEC_DEFINE_REDUCE(gmin, uint, COEXEC_MIN)
layout(std430, binding = 0) writeonly buffer S { uint s[]; };
layout(std430, binding = 1) writeonly buffer M { uint m[]; };
layout(push_constant) uniform P { uint n; } p;
void main() {
    uint i = gl_GlobalInvocationID.x;
    uint h = 0u;
    uint lo = 0xffffffffu;
    if (i < p.n) {
        h = i;
        for (int r = 0; r < 64; r++) { h = h * 1664525u + 1013904223u; h ^= h >> 13; }
        lo = h;
    }
    uint a = gsum(h);
    uint b = gmin(lo);
    if (gl_LocalInvocationIndex == 0u) { s[coexec_slot(1u)] = a; m[coexec_slot(1u)] = b; }
}";

fn hash_kernel(e: &Engine) -> Kernel {
    let cpu = Arc::new(|pkg: &Package, args: &mut CpuArgs<'_>| {
        let (mut s, mut m) = (0u32, u32::MAX);
        for i in pkg.items.clone() {
            let h = hash(i as u32);
            s = s.wrapping_add(h);
            m = m.min(h);
        }
        let sum = args.accumulator::<u32>(0);
        sum[0] = sum[0].wrapping_add(s);
        let min = args.accumulator::<u32>(1);
        min[0] = min[0].min(m);
    });
    e.kernel_glsl("hash_reduce", HASH_GLSL, Some(cpu)).unwrap()
}

fn hash_reference(n: u32) -> (u32, u32) {
    (0..n)
        .map(hash)
        .fold((0u32, u32::MAX), |(s, m), h| (s.wrapping_add(h), m.min(h)))
}

/// Runs the hash kernel over `n` items; checks sum and minimum.
fn check_hash(
    e: &Engine,
    k: &Kernel,
    n: u32,
    sched: &Scheduler,
    devices: Devices,
) -> coexec::Report {
    let mut sum = Reduction::<u32>::sum(1);
    let mut min = Reduction::<u32>::min(1);
    let args = Args::new().reduce(&mut sum).reduce(&mut min).push(&n);
    let r = e
        .run(k, args, IndexSpace::D1(u64::from(n)), sched, devices)
        .unwrap();
    assert_eq!(
        (sum.scalar(), min.scalar()),
        hash_reference(n),
        "n {n}, {sched:?}"
    );
    r
}

fn engine(workers: usize) -> Option<Engine> {
    // Staged memory (COEXEC_MEMORY=staged) reduces too: the partials are
    // bound zero-copy, the inputs mirrored.
    common::engine_with(Some(workers), coexec::AllocatorBackend::default())
}

fn schedulers() -> Vec<Scheduler> {
    vec![
        Scheduler::Static { powers: None },
        Scheduler::Static {
            powers: Some(vec![1.0, 1.0]),
        },
        Scheduler::Dynamic { packages: 7 },
        Scheduler::Dynamic { packages: 300 },
        Scheduler::hguided(),
    ]
}

#[test]
fn sums_and_minima_are_exact_on_every_scheduler_and_device_set() {
    let Some(e) = engine(2) else { return };
    let k = hash_kernel(&e);
    for sched in schedulers() {
        for devices in [Devices::ALL, Devices::CPU, Devices::GPU] {
            let sched = match (&sched, devices == Devices::ALL) {
                (Scheduler::Static { powers: Some(_) }, false) => {
                    Scheduler::Static { powers: None }
                }
                _ => sched.clone(),
            };
            for n in [1, 63, 64, 65, 100_003] {
                check_hash(&e, &k, n, &sched, devices);
            }
        }
    }
    common::assert_validation_clean(&e);
}

#[test]
fn split_and_stolen_packages_count_once() {
    // Two workers and one package per device: a worker that finishes first
    // splits its sibling's package, and the GPU takes remainders too.
    let Some(e) = engine(2) else { return };
    let k = hash_kernel(&e);
    let mut stolen = 0;
    for round in 0..12 {
        let sched = if round % 2 == 0 {
            Scheduler::Static { powers: None }
        } else {
            Scheduler::Dynamic { packages: 3 }
        };
        let r = check_hash(&e, &k, 400_000, &sched, Devices::ALL);
        stolen += r.packages.iter().filter(|p| p.stolen).count();
        let r = check_hash(&e, &k, 400_000, &sched, Devices::CPU);
        stolen += r.packages.iter().filter(|p| p.stolen).count();
    }
    // Stealing is the default: some package was split (unless disabled).
    if std::env::var("COEXEC_STEAL").map_or(true, |v| v.trim() != "0") {
        assert!(stolen > 0, "no package was stolen in 24 runs");
    }
}

/// `x[i] * y[i]` summed: binding 2 is the partials.
const DOT_GLSL: &str = "#version 450
layout(local_size_x = 64) in;
#include \"coexec_reduce.glsl\"
COEXEC_DEFINE_REDUCE(gsum, float, COEXEC_SUM)
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer Y { float y[]; };
layout(std430, binding = 2) writeonly buffer P { float partials[]; };
layout(push_constant) uniform Push { uint n; } p;
void main() {
    uint i = gl_GlobalInvocationID.x;
    float s = gsum(i < p.n ? x[i] * y[i] : 0.0);
    if (gl_LocalInvocationIndex == 0u) partials[coexec_slot(1u)] = s;
}";

/// The dot kernel: deterministic closures combine each work-group in the
/// canonical order; others sum their package's items in sequence.
fn dot_kernel(e: &Engine) -> Kernel {
    let cpu = Arc::new(|pkg: &Package, args: &mut CpuArgs<'_>| {
        let (x, y) = (args.input::<f32>(0), args.input::<f32>(1));
        let n = x.len() as u64;
        let acc = args.accumulator::<f32>(2);
        if pkg.units.end - pkg.units.start == 1 {
            acc[0] = group_partial(x, y, pkg.units.start as usize, n as usize);
        } else {
            acc[0] += pkg
                .items
                .clone()
                .map(|i| x[i as usize] * y[i as usize])
                .sum::<f32>();
        }
    });
    e.kernel_glsl("dot", DOT_GLSL, Some(cpu)).unwrap()
}

/// Work-group `g`'s partial in the canonical order (padded with 0).
fn group_partial(x: &[f32], y: &[f32], g: usize, n: usize) -> f32 {
    let mut v = [0.0f32; LOCAL];
    for (l, v) in v.iter_mut().enumerate() {
        let i = g * LOCAL + l;
        if i < n {
            *v = x[i] * y[i];
        }
    }
    tree(ReduceOp::Sum, &mut v)
}

fn dot_data(n: usize) -> (Vec<f32>, Vec<f32>) {
    let f = |i: usize, s: u32| 0.5 + (hash(i as u32 ^ s) % 1000) as f32 / 1000.0;
    (
        (0..n).map(|i| f(i, 1)).collect(),
        (0..n).map(|i| f(i, 2)).collect(),
    )
}

fn run_dot(
    e: &Engine,
    k: &Kernel,
    x: &[f32],
    y: &[f32],
    det: bool,
    sched: &Scheduler,
    devices: Devices,
) -> f32 {
    let (xb, yb) = (
        e.buffer_from_slice(x).unwrap(),
        e.buffer_from_slice(y).unwrap(),
    );
    let mut dot = Reduction::<f32>::sum(1).deterministic(det);
    let args = Args::new()
        .input(&xb)
        .input(&yb)
        .reduce(&mut dot)
        .push(&(x.len() as u32));
    e.run(k, args, IndexSpace::D1(x.len() as u64), sched, devices)
        .unwrap();
    dot.scalar()
}

#[test]
fn deterministic_floats_are_bit_identical_across_schedulers_and_devices() {
    let Some(e) = engine(2) else { return };
    let k = dot_kernel(&e);
    let n = 200_003;
    let (x, y) = dot_data(n);
    // The reference: each group's canonical partial, combined in the
    // canonical order too.
    let mut parts: Vec<f32> = (0..n.div_ceil(LOCAL))
        .map(|g| group_partial(&x, &y, g, n))
        .collect();
    let want = tree_of_partials(ReduceOp::Sum, &mut parts);
    for sched in schedulers() {
        for devices in [Devices::ALL, Devices::CPU, Devices::GPU] {
            let sched = match (&sched, devices == Devices::ALL) {
                (Scheduler::Static { powers: Some(_) }, false) => {
                    Scheduler::Static { powers: None }
                }
                _ => sched.clone(),
            };
            let got = run_dot(&e, &k, &x, &y, true, &sched, devices);
            assert_eq!(
                got.to_bits(),
                want.to_bits(),
                "{got} vs {want}: {sched:?} {devices:?}"
            );
        }
    }
    // Without the option: the same value up to rounding.
    let f64_ref: f64 = x
        .iter()
        .zip(&y)
        .map(|(a, b)| f64::from(*a) * f64::from(*b))
        .sum();
    let got = run_dot(&e, &k, &x, &y, false, &Scheduler::hguided(), Devices::ALL);
    assert!(
        (f64::from(got) - f64_ref).abs() < 1e-4 * f64_ref,
        "{got} vs {f64_ref}"
    );
    common::assert_validation_clean(&e);
}

/// A 256-bin histogram of bytes, privatized per work-group: slots of 256.
const HIST_GLSL: &str = "#version 450
layout(local_size_x = 256) in;
#include \"coexec_reduce.glsl\"
layout(std430, binding = 0) readonly buffer D { uint data[]; };
layout(std430, binding = 1) writeonly buffer H { uint partials[]; };
layout(push_constant) uniform P { uint n; } p;
shared uint bins[256];
void main() {
    uint l = gl_LocalInvocationIndex;
    bins[l] = 0u;
    barrier();
    uint i = gl_GlobalInvocationID.x;
    if (i < p.n) atomicAdd(bins[data[i] & 255u], 1u);
    barrier();
    partials[coexec_slot(256u) + l] = bins[l];
}";

#[test]
fn histograms_are_arrays_of_sums() {
    let Some(e) = engine(2) else { return };
    let cpu = Arc::new(|pkg: &Package, args: &mut CpuArgs<'_>| {
        let data = args.input::<u32>(0);
        let bins = args.accumulator::<u32>(1);
        for i in pkg.items.clone() {
            bins[(data[i as usize] & 255) as usize] += 1;
        }
    });
    let k = e.kernel_glsl("hist", HIST_GLSL, Some(cpu)).unwrap();
    let n = 300_001u32;
    let data: Vec<u32> = (0..n).map(|i| hash(i) % 97).collect();
    let mut want = vec![0u32; 256];
    data.iter().for_each(|d| want[(d & 255) as usize] += 1);
    let buf = e.buffer_from_slice(&data).unwrap();
    for sched in schedulers() {
        let mut h = Reduction::<u32>::sum(256);
        let args = Args::new().input(&buf).reduce(&mut h).push(&n);
        e.run(&k, args, IndexSpace::D1(u64::from(n)), &sched, Devices::ALL)
            .unwrap();
        assert_eq!(h.value(), &want[..], "{sched:?}");
    }
    common::assert_validation_clean(&e);
}

#[test]
fn custom_combines_and_wider_types_run_on_the_cpu() {
    let Some(e) = engine(2) else { return };
    // (min, argmin) as a u64 pair: a custom combine keeping the first minimum.
    let cpu = Arc::new(|pkg: &Package, args: &mut CpuArgs<'_>| {
        let acc = args.accumulator::<u64>(0);
        for i in pkg.items.clone() {
            let v = u64::from(hash(i as u32) % 1000);
            if v < acc[0] {
                acc[0] = v;
                acc[1] = i;
            }
        }
        let sum = args.accumulator::<f64>(1);
        sum[0] += pkg.items.clone().map(|i| i as f64).sum::<f64>();
    });
    let k = e
        .kernel("argmin", None, Some(cpu), Some([64, 1, 1]))
        .unwrap();
    let n = 100_000u64;
    let mut arg = Reduction::<u64>::custom(vec![u64::MAX, u64::MAX], |acc, x| {
        if x[0] < acc[0] || (x[0] == acc[0] && x[1] < acc[1]) {
            acc.copy_from_slice(x);
        }
    });
    let mut sum = Reduction::<f64>::sum(1);
    let args = Args::new().reduce(&mut arg).reduce(&mut sum);
    e.run(
        &k,
        args,
        IndexSpace::D1(n),
        &Scheduler::Dynamic { packages: 50 },
        Devices::CPU,
    )
    .unwrap();
    let min = (0..n)
        .map(|i| u64::from(hash(i as u32) % 1000))
        .min()
        .unwrap();
    let at = (0..n)
        .find(|&i| u64::from(hash(i as u32) % 1000) == min)
        .unwrap();
    assert_eq!(arg.value(), &[min, at]);
    assert_eq!(sum.scalar(), (n * (n - 1) / 2) as f64);
}

/// A run's time holds the combine of its partials: a custom combine that
/// takes 2 ms a call, called at least 10 times, makes the run last 20 ms
/// at least, however fast its packages ran.
#[test]
fn the_combine_counts_in_the_runs_time() {
    let Some(e) = engine(1) else { return };
    let cpu = Arc::new(|_: &Package, args: &mut CpuArgs<'_>| {
        args.accumulator::<u32>(0)[0] += 1;
    });
    let k = e
        .kernel("count", None, Some(cpu), Some([64, 1, 1]))
        .unwrap();
    let mut slow = Reduction::<u32>::custom(vec![0], |acc, x| {
        std::thread::sleep(std::time::Duration::from_millis(2));
        acc[0] += x[0];
    });
    // 64 work-groups, one package each: 63 combines.
    let sched = Scheduler::Dynamic { packages: 64 };
    let r = e
        .run(
            &k,
            Args::new().reduce(&mut slow),
            IndexSpace::D1(64 * 64),
            &sched,
            Devices::CPU,
        )
        .unwrap();
    assert_eq!(slow.scalar(), 64);
    assert!(r.time_s >= 0.020, "{r:?}");
}

#[test]
fn bad_reductions_are_typed_errors() {
    let Some(e) = engine(1) else { return };
    let k = hash_kernel(&e);
    // A 2-D space.
    let (mut s, mut m) = (Reduction::<u32>::sum(1), Reduction::<u32>::min(1));
    let args = Args::new().reduce(&mut s).reduce(&mut m).push(&64u32);
    let err = e
        .run(
            &k,
            args,
            IndexSpace::D2 {
                width: 64,
                height: 2,
            },
            &Scheduler::hguided(),
            Devices::ALL,
        )
        .unwrap_err();
    assert!(
        matches!(&err, Error::Reduction(m) if m.contains("1-D")),
        "{err}"
    );
    // Width 0.
    let (mut s, mut m) = (Reduction::<u32>::sum(0), Reduction::<u32>::min(1));
    let args = Args::new().reduce(&mut s).reduce(&mut m).push(&64u32);
    let err = e
        .run(
            &k,
            args,
            IndexSpace::D1(64),
            &Scheduler::hguided(),
            Devices::ALL,
        )
        .unwrap_err();
    assert!(
        matches!(&err, Error::Reduction(m) if m.contains("width")),
        "{err}"
    );
    // A wrong element type is the shader interface's error.
    let (mut s, mut m) = (Reduction::<u32>::sum(1), Reduction::<f64>::max(1));
    let args = Args::new().reduce(&mut s).reduce(&mut m).push(&64u32);
    let err = e
        .run(
            &k,
            args,
            IndexSpace::D1(64),
            &Scheduler::hguided(),
            Devices::ALL,
        )
        .unwrap_err();
    assert!(matches!(&err, Error::Interface(_)), "{err}");
    // A closure that takes a reduction as an output panics, reported.
    let cpu = Arc::new(|_: &Package, args: &mut CpuArgs<'_>| {
        args.output::<u32>(0);
    });
    let k = e
        .kernel("misuse", None, Some(cpu), Some([64, 1, 1]))
        .unwrap();
    let mut s = Reduction::<u32>::sum(1);
    let err = e
        .run(
            &k,
            Args::new().reduce(&mut s),
            IndexSpace::D1(64),
            &Scheduler::hguided(),
            Devices::CPU,
        )
        .unwrap_err();
    assert!(
        matches!(&err, Error::KernelPanic { message, .. } if message.contains("accumulator")),
        "{err}"
    );
}

#[test]
fn staged_memory_reduces_like_zero_copy() {
    for coherence in [HostCoherence::Eager, HostCoherence::Lazy] {
        let Some(e) = common::engine_from(coexec::EngineOptions {
            workers: Some(2),
            memory: MemoryPlacement::Staged,
            host_coherence: coherence,
            ..Default::default()
        }) else {
            return;
        };
        assert_eq!(e.memory_placement(), MemoryPlacement::Staged);
        let k = hash_kernel(&e);
        for devices in [Devices::GPU, Devices::ALL] {
            let r = check_hash(&e, &k, 10_007, &Scheduler::hguided(), devices);
            assert!(r
                .devices
                .iter()
                .all(|d| d.transfers.zero_copy_fallbacks == 0));
        }
        // Mirrored inputs, partials bound zero-copy: bit-identical to the
        // canonical order on the GPU alone and co-executed.
        let dk = dot_kernel(&e);
        let n = 50_001;
        let (x, y) = dot_data(n);
        let mut parts: Vec<f32> = (0..n.div_ceil(LOCAL))
            .map(|g| group_partial(&x, &y, g, n))
            .collect();
        let want = tree_of_partials(ReduceOp::Sum, &mut parts);
        for devices in [Devices::GPU, Devices::ALL] {
            let got = run_dot(&e, &dk, &x, &y, true, &Scheduler::hguided(), devices);
            assert_eq!(got.to_bits(), want.to_bits(), "{coherence:?} {devices:?}");
        }
        common::assert_validation_clean(&e);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 16, ..ProptestConfig::default() })]

    #[test]
    fn any_size_and_scheduler_sums_exactly(n in 1u32..150_000, which in 0usize..5, dev in 0usize..3) {
        let Some(e) = engine(2) else { return Ok(()) };
        let k = hash_kernel(&e);
        let devices = [Devices::ALL, Devices::CPU, Devices::GPU][dev];
        let sched = match (schedulers().swap_remove(which), dev) {
            (Scheduler::Static { powers: Some(_) }, 1 | 2) => Scheduler::Static { powers: None },
            (s, _) => s,
        };
        check_hash(&e, &k, n, &sched, devices);
    }
}

/// Injected GPU faults: whatever became of the GPU's packages, each
/// work-group's partial counts once.
#[cfg(feature = "test-hooks")]
mod faults {
    use super::*;
    use coexec::hooks::{FaultInjection, GpuFault};
    use std::time::Duration;

    fn survives(fault: GpuFault) {
        let Some(e) = common::engine_from(coexec::EngineOptions {
            workers: Some(1),
            gpu_timeout: Duration::from_millis(300),
            ..Default::default()
        }) else {
            return;
        };
        if e.memory_placement() == MemoryPlacement::Staged {
            return;
        }
        let k = hash_kernel(&e);
        let sched = Scheduler::Dynamic { packages: 40 };
        let r = check_hash(&e, &k, 400_000, &sched, Devices::ALL);
        assert!(r.devices[1].packages > 0, "the GPU took part");
        e.inject_gpu_fault(FaultInjection {
            fault,
            after_packages: 1,
        });
        let r = check_hash(&e, &k, 400_000, &sched, Devices::ALL);
        assert!(
            r.devices[1].failure.is_some(),
            "{fault:?}: {:#?}",
            r.devices
        );
        assert!(!e.gpu_available());
        check_hash(&e, &k, 50_000, &sched, Devices::ALL);
        common::assert_validation_clean(&e);
    }

    #[test]
    fn submit_error() {
        survives(GpuFault::SubmitError);
    }

    #[test]
    fn device_lost_after_the_package_ran() {
        survives(GpuFault::DeviceLost);
    }

    #[test]
    fn hang_past_the_timeout() {
        survives(GpuFault::Hang);
    }

    #[test]
    fn lost_mid_package() {
        survives(GpuFault::HangThenLost);
    }
}

/// The dot kernel at work-group size `local`, reducing with `helper`.
fn dot_glsl(local: usize, subgroup: bool) -> String {
    let define = if subgroup {
        "COEXEC_DEFINE_REDUCE_SUBGROUP(gsum, float, subgroupAdd, COEXEC_SUM)"
    } else {
        "COEXEC_DEFINE_REDUCE(gsum, float, COEXEC_SUM)"
    };
    DOT_GLSL
        .replace("local_size_x = 64", &format!("local_size_x = {local}"))
        .replace("COEXEC_DEFINE_REDUCE(gsum, float, COEXEC_SUM)", define)
        .replace(
            "#version 450",
            "#version 450\n#extension GL_KHR_shader_subgroup_arithmetic : require",
        )
}

/// Work-group `g`'s partial at size `local` in the canonical order.
fn group_partial_at(x: &[f32], y: &[f32], g: usize, local: usize) -> f32 {
    let mut v: Vec<f32> = (g * local..(g + 1) * local)
        .map(|i| if i < x.len() { x[i] * y[i] } else { 0.0 })
        .collect();
    tree(ReduceOp::Sum, &mut v)
}

#[test]
fn the_canonical_order_holds_for_any_work_group_size() {
    let Some(e) = engine(1) else { return };
    let n = 30_011;
    let (x, y) = dot_data(n);
    for local in [1usize, 7, 33, 100, 256] {
        let cpu = Arc::new(move |pkg: &Package, args: &mut CpuArgs<'_>| {
            let (x, y) = (args.input::<f32>(0), args.input::<f32>(1));
            let g = pkg.units.start as usize;
            args.accumulator::<f32>(2)[0] = group_partial_at(x, y, g, local);
        });
        let k = e
            .kernel_glsl("dot_at", &dot_glsl(local, false), Some(cpu))
            .unwrap();
        let mut parts: Vec<f32> = (0..n.div_ceil(local))
            .map(|g| group_partial_at(&x, &y, g, local))
            .collect();
        let want = tree_of_partials(ReduceOp::Sum, &mut parts);
        for devices in [Devices::GPU, Devices::CPU, Devices::ALL] {
            let got = run_dot(&e, &k, &x, &y, true, &Scheduler::hguided(), devices);
            assert_eq!(got.to_bits(), want.to_bits(), "local {local}, {devices:?}");
        }
    }
    common::assert_validation_clean(&e);
}

#[test]
fn the_subgroup_helper_sums_too() {
    let Some(e) = engine(1) else { return };
    let k = e.kernel_glsl("dot_sg", &dot_glsl(128, true), None).unwrap();
    let n = 100_003;
    let (x, y) = dot_data(n);
    let want: f64 = x
        .iter()
        .zip(&y)
        .map(|(a, b)| f64::from(*a) * f64::from(*b))
        .sum();
    let got = run_dot(&e, &k, &x, &y, false, &Scheduler::hguided(), Devices::GPU);
    assert!(
        (f64::from(got) - want).abs() < 1e-5 * want,
        "{got} vs {want}"
    );
    common::assert_validation_clean(&e);
}

/// On two logical GPUs (the `duplicate_devices` testing aid) with the CPU,
/// every device set and scheduler sums and minimises exactly: the partials
/// buffer is seen by every GPU.
#[test]
fn two_gpus_and_the_cpu_reduce_exactly() {
    let Some(e) = common::engine_from(coexec::EngineOptions {
        workers: Some(1),
        validation: coexec::Validation::IfAvailable,
        duplicate_devices: 2,
        ..Default::default()
    }) else {
        return;
    };
    if e.memory_placement() == MemoryPlacement::Staged || e.gpu_count() < 2 {
        return;
    }
    let k = hash_kernel(&e);
    let sets = [
        Devices::gpu(0).with_gpu(1),
        Devices::gpu(1).with_cpu(),
        Devices::ALL,
    ];
    let scheds = [
        Scheduler::hguided(),
        Scheduler::Dynamic { packages: 17 },
        Scheduler::Static { powers: None },
    ];
    for devices in sets {
        for sched in &scheds {
            for n in [1u32, 1000, 40_000] {
                check_hash(&e, &k, n, sched, devices);
            }
        }
    }
    common::assert_validation_clean(&e);
}
