//! Lazy host coherence (`HostCoherence::Lazy` on a staged engine): what the
//! GPU writes stays in the device-local mirrors, downloaded only when the
//! host can observe it (host access through the API, a run in which the CPU
//! takes part). On lavapipe, with staging forced: host reads see the GPU's
//! results, resident runs download nothing, co-executed and mixed runs stay
//! byte-identical to zero-copy, host writes between runs are seen, and
//! untracked buffers (the C ABI's) stay eager.

// Kernels here are GLSL compiled at run time.
#![cfg(feature = "glsl")]

mod common;

use coexec::{
    Args, Buffer, CpuArgs, Devices, Engine, EngineOptions, Footprint, HostCoherence, IndexSpace,
    Kernel, MemoryPlacement, Package, Report, Scheduler,
};
use proptest::prelude::*;
use std::sync::{Arc, OnceLock};

fn engine_of(memory: MemoryPlacement, host_coherence: HostCoherence) -> Option<Engine> {
    common::engine_from(EngineOptions {
        workers: Some(1),
        validation: coexec::Validation::IfAvailable,
        profiles: false,
        memory,
        host_coherence,
        ..Default::default()
    })
}

/// The shared lazy staged engine (`None`: no device, or
/// `COEXEC_HOST_COHERENCE=eager` overrides the choice).
fn lazy() -> Option<Engine> {
    static E: OnceLock<Option<Engine>> = OnceLock::new();
    E.get_or_init(|| {
        let e = engine_of(MemoryPlacement::Staged, HostCoherence::Lazy)?;
        (e.host_coherence() == HostCoherence::Lazy).then_some(e)
    })
    .clone()
}

/// The shared zero-copy engine (staged where `COEXEC_MEMORY=staged`).
fn zero_copy() -> Option<Engine> {
    static E: OnceLock<Option<Engine>> = OnceLock::new();
    E.get_or_init(|| engine_of(MemoryPlacement::ZeroCopy, HostCoherence::Eager))
        .clone()
}

/// `o[i] += i + 1` (read-write output).
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

/// [`acc_kernel`] whose CPU packages sleep `nap` each: the GPU then takes
/// part in every run.
fn acc_kernel_slow(e: &Engine, nap: std::time::Duration) -> Kernel {
    let cpu = Arc::new(move |p: &Package, a: &mut CpuArgs<'_>| {
        std::thread::sleep(nap);
        let o = a.output::<u32>(0);
        for (k, i) in p.items.clone().enumerate() {
            o[k] = o[k].wrapping_add(i as u32 + 1);
        }
    });
    e.kernel_glsl("lazy-acc", ACC_GLSL, Some(cpu)).unwrap()
}

/// An integer 5-point stencil (exact on every device): `o = 3 * (c + up +
/// down + left + right) + 1`, clamped at the edges.
const STENCIL_GLSL: &str = "#version 450
layout(local_size_x = 8, local_size_y = 8) in;
layout(std430, binding = 0) readonly buffer X { uint x[]; };
layout(std430, binding = 1) writeonly buffer O { uint o[]; };
layout(push_constant) uniform P { uint w; uint h; } p;
void main() {
    uvec2 g = gl_GlobalInvocationID.xy;
    if (g.x >= p.w || g.y >= p.h) return;
    uint up = g.y == 0u ? 0u : g.y - 1u;
    uint dn = min(g.y + 1u, p.h - 1u);
    uint lf = g.x == 0u ? 0u : g.x - 1u;
    uint rt = min(g.x + 1u, p.w - 1u);
    uint s = x[g.y * p.w + g.x] + x[up * p.w + g.x] + x[dn * p.w + g.x]
        + x[g.y * p.w + lf] + x[g.y * p.w + rt];
    o[g.y * p.w + g.x] = s * 3u + 1u;
}";

fn point(x: &[u32], w: usize, h: usize, k: usize) -> u32 {
    let (gx, gy) = (k % w, k / w);
    let (up, dn) = (gy.saturating_sub(1), (gy + 1).min(h - 1));
    let (lf, rt) = (gx.saturating_sub(1), (gx + 1).min(w - 1));
    let s = x[k]
        .wrapping_add(x[up * w + gx])
        .wrapping_add(x[dn * w + gx])
        .wrapping_add(x[gy * w + lf])
        .wrapping_add(x[gy * w + rt]);
    s.wrapping_mul(3).wrapping_add(1)
}

fn stencil_kernel(e: &Engine, w: usize, h: usize) -> Kernel {
    let cpu = Arc::new(move |p: &Package, a: &mut CpuArgs<'_>| {
        let x = a.input::<u32>(0);
        let o = a.output::<u32>(1);
        for (j, k) in p.items.clone().enumerate() {
            o[j] = point(x, w, h, k as usize);
        }
    });
    e.kernel_glsl("lazy-stencil", STENCIL_GLSL, Some(cpu))
        .unwrap()
}

fn acc(e: &Engine, k: &Kernel, o: &mut Buffer<u32>, devices: Devices) -> Report {
    let n = o.len();
    e.run(
        k,
        Args::new().output(o).push(&(n as u32)),
        IndexSpace::D1(n as u64),
        &Scheduler::hguided(),
        devices,
    )
    .unwrap()
}

fn gpu(r: &Report) -> &coexec::DeviceReport {
    r.devices
        .iter()
        .find(|d| d.kind == coexec::DeviceKind::Gpu)
        .expect("a GPU report")
}

#[test]
fn gpu_results_stay_resident_until_the_host_reads_them() {
    let Some(e) = lazy() else { return };
    assert_eq!(e.memory_placement(), MemoryPlacement::Staged);
    let k = acc_kernel(&e);
    let n = 10_007;
    let mut o = e.buffer_from_slice(&vec![7u32; n]).unwrap();
    let r1 = acc(&e, &k, &mut o, Devices::GPU);
    assert_eq!(gpu(&r1).transfers.upload_bytes, n as u64 * 4);
    assert_eq!(gpu(&r1).transfers.download_bytes, 0);
    // A second run without host access moves nothing.
    let r2 = acc(&e, &k, &mut o, Devices::GPU);
    assert_eq!(gpu(&r2).transfers.upload_bytes, 0);
    assert_eq!(gpu(&r2).transfers.download_bytes, 0);
    // The host read downloads what the GPU wrote, once.
    let want: Vec<u32> = (0..n as u32).map(|i| 7 + 2 * (i + 1)).collect();
    assert_eq!(o.try_as_slice().unwrap(), &want[..]);
    assert_eq!(o.sync().unwrap(), 0);
    assert_eq!(&o[..], &want[..]);
    common::assert_validation_clean(&e);
}

#[test]
fn an_explicit_sync_reports_the_bytes_and_host_writes_are_seen() {
    let Some(e) = lazy() else { return };
    let k = acc_kernel(&e);
    let n = 5_000;
    let mut o = e.buffer_from_slice(&vec![1u32; n]).unwrap();
    acc(&e, &k, &mut o, Devices::GPU);
    assert_eq!(o.sync().unwrap(), n as u64 * 4);
    // A host write after a GPU run: the rest of the buffer keeps the
    // GPU's bytes (downloaded before the write), and the next run sees it.
    acc(&e, &k, &mut o, Devices::GPU);
    o.as_mut_slice()[..10].fill(100);
    let r = acc(&e, &k, &mut o, Devices::GPU);
    assert_eq!(gpu(&r).transfers.upload_bytes, n as u64 * 4);
    let want: Vec<u32> = (0..n as u32)
        .map(|i| if i < 10 { 100 + i + 1 } else { 1 + 3 * (i + 1) })
        .collect();
    assert_eq!(o.to_vec(), want);
    // A co-executed run starts from the host copy the GPU's results
    // reached first: the same as the model.
    acc(&e, &k, &mut o, Devices::GPU);
    acc(&e, &k, &mut o, Devices::ALL);
    let want: Vec<u32> = want.iter().zip(0..).map(|(v, i)| v + 2 * (i + 1)).collect();
    assert_eq!(o.to_vec(), want);
}

/// The rayon baseline reads the host copies a CPU run would: what a GPU
/// run left in its mirror is downloaded first; and what it writes is the
/// host's, so the next GPU run uploads it rather than read its mirror.
#[test]
fn the_rayon_baseline_keeps_lazy_host_coherence() {
    // An engine of its own: the baseline is an engine-wide setting.
    let Some(e) = engine_of(MemoryPlacement::Staged, HostCoherence::Lazy) else {
        return;
    };
    if e.host_coherence() != HostCoherence::Lazy {
        return;
    }
    let k = acc_kernel(&e);
    let n = 9_001;
    let mut o = e.buffer_from_slice(&vec![5u32; n]).unwrap();
    let r = acc(&e, &k, &mut o, Devices::GPU);
    assert_eq!(gpu(&r).transfers.download_bytes, 0, "left in the mirror");
    e.set_rayon_baseline(true);
    let r = acc(&e, &k, &mut o, Devices::CPU);
    assert!(r.devices[0].note.as_deref().unwrap().contains("rayon"));
    e.set_rayon_baseline(false);
    let r = acc(&e, &k, &mut o, Devices::GPU);
    assert_eq!(gpu(&r).transfers.upload_bytes, n as u64 * 4, "re-uploaded");
    let want: Vec<u32> = (0..n as u32).map(|i| 5 + 3 * (i + 1)).collect();
    assert_eq!(o.to_vec(), want);
    common::assert_validation_clean(&e);
}

#[test]
fn untracked_buffers_stay_eager() {
    let Some(e) = lazy() else { return };
    let k = acc_kernel(&e);
    let n = 4_096;
    let mut o = e.buffer_from_slice(&vec![0u32; n]).unwrap();
    // As the C ABI does with every buffer: C reads the host pointer at will.
    o.untrack_host_writes();
    let r = acc(&e, &k, &mut o, Devices::GPU);
    assert_eq!(gpu(&r).transfers.download_bytes, n as u64 * 4);
    let ptr = o.as_slice().as_ptr();
    // SAFETY: the buffer holds n elements and no run is in flight.
    let host = unsafe { std::slice::from_raw_parts(ptr, n) };
    assert!(host.iter().zip(1..).all(|(&v, i)| v == i));
}

#[test]
fn another_engine_cannot_read_a_mirror() {
    let Some(e) = lazy() else { return };
    let Some(other) = engine_of(MemoryPlacement::Staged, HostCoherence::Lazy) else {
        return;
    };
    let (k, ko) = (acc_kernel(&e), acc_kernel(&other));
    let n = 1_000;
    let mut o = e.buffer_from_slice(&vec![0u32; n]).unwrap();
    acc(&e, &k, &mut o, Devices::GPU);
    // A buffer belongs to its engine: another one refuses it before
    // anything could read the stale host copy.
    let err = other
        .run(
            &ko,
            Args::new().output(&mut o).push(&(n as u32)),
            IndexSpace::D1(n as u64),
            &Scheduler::hguided(),
            Devices::ALL,
        )
        .unwrap_err();
    assert!(
        matches!(err, coexec::Error::ForeignBuffer { binding: 0 }),
        "{err}"
    );
    assert!(o.iter().zip(1..).all(|(&v, i)| v == i));
}

/// Two GPUs (one opened twice): GPU 0 keeps its results in its mirrors,
/// GPU 1 reads host memory as the CPU does, so a run with GPU 1 or the CPU
/// first brings back what GPU 0 left there; no host read in between.
#[test]
fn runs_on_changing_device_sets_see_each_others_results() {
    let Some(e) = common::engine_from(EngineOptions {
        workers: Some(1),
        validation: coexec::Validation::IfAvailable,
        duplicate_devices: 2,
        memory: MemoryPlacement::Staged,
        host_coherence: HostCoherence::Lazy,
        ..Default::default()
    }) else {
        return;
    };
    if e.gpu_count() != 2 || e.host_coherence() != HostCoherence::Lazy {
        return;
    }
    let k = acc_kernel(&e);
    let n = 9_000;
    let mut o = e.buffer_from_slice(&vec![5u32; n]).unwrap();
    let sets = [
        Devices::gpu(0),
        Devices::gpu(1),
        Devices::gpu(0),
        Devices::gpu(0),
        Devices::CPU,
        Devices::gpu(0),
        Devices::ALL,
        Devices::gpu(0),
        Devices::gpu(1).with_cpu(),
        Devices::gpu(0),
    ];
    for devices in sets {
        acc(&e, &k, &mut o, devices);
    }
    let times = sets.len() as u32;
    let want: Vec<u32> = (0..n as u32).map(|i| 5 + times * (i + 1)).collect();
    assert_eq!(o.to_vec(), want);
    common::assert_validation_clean(&e);
}

/// Sub-range runs on the GPU alone, no host read in between: each run's
/// results stay stale on the host until the read, whatever the others did.
#[test]
fn sub_range_runs_keep_each_others_results() {
    let Some(e) = lazy() else { return };
    let k = acc_kernel(&e);
    let n = 32 * 100;
    let mut o = e.buffer_from_slice(&vec![0u32; n]).unwrap();
    let space = IndexSpace::D1(n as u64);
    for range in [0..30, 30..100, 10..60] {
        e.run_range(
            &k,
            Args::new().output(&mut o).push(&(n as u32)),
            space,
            range,
            &Scheduler::hguided(),
            Devices::GPU,
        )
        .unwrap();
    }
    let want: Vec<u32> = (0..n as u32)
        .map(|i| (i + 1) * if (320..1920).contains(&i) { 2 } else { 1 })
        .collect();
    assert_eq!(o.to_vec(), want);
}

/// `sweeps` stencil sweeps of a `w` x `h` grid on `e`, run on
/// `devices(sweep)`; the final grid and the bytes downloaded by runs.
fn sweeps(
    e: &Engine,
    (w, h, n): (usize, usize, usize),
    devices: impl Fn(usize) -> Devices,
) -> (Vec<u32>, u64) {
    let k = stencil_kernel(e, w, h);
    let init: Vec<u32> = (0..(w * h) as u32)
        .map(|i| i.wrapping_mul(2_654_435_761))
        .collect();
    let mut bufs = [
        e.buffer_from_slice(&init).unwrap(),
        e.buffer::<u32>(w * h).unwrap(),
    ];
    let space = IndexSpace::D2 {
        width: w as u32,
        height: h as u32,
    };
    let mut down = 0;
    for s in 0..n {
        let [a, b] = &mut bufs;
        let (x, o) = if s % 2 == 0 { (&*a, b) } else { (&*b, a) };
        let args = Args::new()
            .input(x)
            .footprint(Footprint::rows(1))
            .output(o)
            .push(&[w as u32, h as u32]);
        let sched = Scheduler::Dynamic { packages: 5 };
        let r = e.run(&k, args, space, &sched, devices(s)).unwrap();
        down += r
            .devices
            .iter()
            .map(|d| d.transfers.download_bytes)
            .sum::<u64>();
    }
    (bufs[n % 2].to_vec(), down)
}

#[test]
fn stencil_sweeps_match_zero_copy_whoever_runs_them() {
    let (Some(l), Some(z)) = (lazy(), zero_copy()) else {
        return;
    };
    let dims = (48, 40, 8);
    let (want, _) = sweeps(&z, dims, |_| Devices::ALL);
    let (all, _) = sweeps(&l, dims, |_| Devices::ALL);
    assert_eq!(all, want, "co-executed");
    let (alone, down) = sweeps(&l, dims, |_| Devices::GPU);
    assert_eq!(alone, want, "GPU alone");
    assert_eq!(down, 0, "GPU-alone sweeps keep their results resident");
    let mixed = |s: usize| match s % 3 {
        0 => Devices::GPU,
        1 => Devices::ALL,
        _ => Devices::CPU,
    };
    let (got, _) = sweeps(&l, dims, mixed);
    assert_eq!(got, want, "GPU, CPU + GPU and CPU sweeps in turn");
    common::assert_validation_clean(&l);
}

/// One step of a sequence: a run of the accumulate kernel on some devices,
/// a host read, or a host write of `value` at `index`.
#[derive(Debug, Clone)]
enum Step {
    Run(u8),
    Read,
    Write(usize, u32),
    Written,
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        3 => (0u8..3).prop_map(Step::Run),
        1 => Just(Step::Read),
        1 => (0usize..700, any::<u32>()).prop_map(|(i, v)| Step::Write(i, v)),
        1 => Just(Step::Written),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]

    /// Against a host model: any sequence of runs (GPU alone, CPU + GPU,
    /// CPU alone) and host accesses leaves the same bytes the host sees.
    #[test]
    fn prop_sequences_match_a_host_model(steps in proptest::collection::vec(step(), 1..10)) {
        let Some(e) = lazy() else { return Ok(()) };
        let k = acc_kernel(&e);
        let n = 700usize;
        let mut model: Vec<u32> = (0..n as u32).collect();
        let mut o = e.buffer_from_slice(&model).unwrap();
        for s in &steps {
            match *s {
                Step::Run(d) => {
                    let devices = [Devices::GPU, Devices::ALL, Devices::CPU][d as usize];
                    acc(&e, &k, &mut o, devices);
                    for (i, v) in model.iter_mut().enumerate() {
                        *v = v.wrapping_add(i as u32 + 1);
                    }
                }
                Step::Read => prop_assert_eq!(o.as_slice(), &model[..]),
                Step::Write(i, v) => {
                    o.as_mut_slice()[i] = v;
                    model[i] = v;
                }
                Step::Written => {
                    // Declared after a sync: the host copy is current.
                    o.sync().unwrap();
                    o.host_written();
                }
            }
        }
        prop_assert_eq!(o.to_vec(), model);
    }
}

#[cfg(feature = "test-hooks")]
mod faults {
    use super::*;
    use coexec::hooks::{FaultInjection, GpuFault};
    use std::time::Duration;

    /// A GPU that fails mid-run: what it completed before is brought back
    /// before the run returns (a download that fails would fail the run).
    #[test]
    fn a_failed_gpu_leaves_no_stale_range() {
        for fault in [GpuFault::DeviceLost, GpuFault::Hang, GpuFault::SubmitError] {
            let Some(e) = common::engine_from(EngineOptions {
                workers: Some(1),
                validation: coexec::Validation::IfAvailable,
                gpu_timeout: Duration::from_millis(300),
                profiles: false,
                memory: MemoryPlacement::Staged,
                host_coherence: HostCoherence::Lazy,
                ..Default::default()
            }) else {
                return;
            };
            if e.host_coherence() != HostCoherence::Lazy {
                return;
            }
            let k = acc_kernel_slow(&e, Duration::from_millis(1));
            let n = 64 * 400;
            let mut o = e.buffer_from_slice(&vec![7u32; n]).unwrap();
            acc(&e, &k, &mut o, Devices::GPU);
            e.inject_gpu_fault(FaultInjection {
                fault,
                after_packages: 1,
            });
            let r = e.run(
                &k,
                Args::new().output(&mut o).push(&(n as u32)),
                IndexSpace::D1(n as u64),
                &Scheduler::Dynamic { packages: 40 },
                Devices::ALL,
            );
            // Injected faults leave the device usable: the run succeeds,
            // and what the GPU completed before failing was brought back.
            let r = r.unwrap();
            assert!(gpu(&r).failure.is_some(), "{fault:?}");
            assert_eq!(o.sync().unwrap(), 0, "{fault:?}: nothing left stale");
            let want: Vec<u32> = (0..n as u32).map(|i| 7 + 2 * (i + 1)).collect();
            assert_eq!(o.to_vec(), want, "{fault:?}");
        }
    }
}
