//! Staged transfers on a separate queue (`TransferQueue::Separate`,
//! `COEXEC_TRANSFER_QUEUE=separate`): ordered with the dispatches by timeline
//! semaphores alone. Lavapipe has one queue family of one queue, so the
//! protocol runs there on the compute queue itself (no reliance on
//! submission order; the validation layer checks the waits); outputs must
//! be byte-identical to the compute-queue path and to a host reference,
//! across runs with host writes between them, eager and lazy. The same
//! for the choice per run (`TransferQueue::SeparateWhenLone`: a lone GPU's
//! runs on the separate protocol, shared runs on the compute queue).

// Kernels here are GLSL compiled at run time.
#![cfg(feature = "glsl")]

mod common;

use coexec::{
    Args, CpuArgs, Devices, Engine, EngineOptions, HostCoherence, IndexSpace, Kernel,
    MemoryPlacement, Package, Scheduler, TransferQueue,
};
use std::sync::Arc;

fn engine(queue: TransferQueue, coherence: HostCoherence) -> Option<Engine> {
    common::engine_from(EngineOptions {
        workers: Some(1),
        validation: coexec::Validation::IfAvailable,
        pipeline_cache_dir: Some(std::env::temp_dir().join("coexec-test-pipeline-cache")),
        profiles: false,
        memory: MemoryPlacement::Staged,
        host_coherence: coherence,
        transfer_queue: queue,
        ..Default::default()
    })
}

/// `o[i] = x[max(i,1)-1] + x[i] + x[min(i+1,n-1)]`: a 1-D stencil whose
/// packages read a halo of their neighbours' inputs.
const STENCIL_GLSL: &str = "#version 450
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

/// The stencil's input footprint: its items and one on each side.
const HALO: coexec::Footprint = coexec::Footprint::Halo {
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
    e.kernel_glsl("xfer-stencil", STENCIL_GLSL, Some(cpu))
        .unwrap()
}

/// Sweeps the stencil `sweeps` times (ping-pong), the host rewriting part
/// of the input before every other sweep; every output checked against
/// the reference. The final grid.
fn sweeps(e: &Engine, sweeps: usize, devices: Devices, sched: &Scheduler) -> Vec<u32> {
    sweeps_on(e, sweeps, |_| devices, sched)
}

/// [`sweeps`] on the devices `devices(s)` for sweep `s`.
fn sweeps_on(
    e: &Engine,
    sweeps: usize,
    devices: impl Fn(usize) -> Devices,
    sched: &Scheduler,
) -> Vec<u32> {
    let n = 5_000usize;
    let k = kernel(e);
    let init: Vec<u32> = (0..n as u32)
        .map(|i| i.wrapping_mul(2_654_435_761))
        .collect();
    let mut a = e.buffer_from_slice(&init).unwrap();
    let mut b = e.buffer::<u32>(n).unwrap();
    let mut host = init;
    for s in 0..sweeps {
        if s % 2 == 1 {
            // A host write between runs: the next run must upload it.
            a.as_mut_slice()[s * 7..s * 7 + 100].fill(s as u32);
            host[s * 7..s * 7 + 100].fill(s as u32);
        }
        stencil_run(e, &k, (&a, &mut b), sched, devices(s));
        host = reference(&host);
        assert_eq!(b.as_slice(), &host[..], "sweep {s}");
        std::mem::swap(&mut a, &mut b);
    }
    common::assert_validation_clean(e);
    a.to_vec()
}

/// One run of the stencil from `io.0` into `io.1` (as long as it) on
/// `devices`; the report.
fn stencil_run(
    e: &Engine,
    k: &Kernel,
    io: (&coexec::Buffer<u32>, &mut coexec::Buffer<u32>),
    sched: &Scheduler,
    devices: Devices,
) -> coexec::Report {
    let n = io.0.len();
    e.run(
        k,
        Args::new()
            .input(io.0)
            .footprint(HALO)
            .output(io.1)
            .push(&(n as u32)),
        IndexSpace::D1(n as u64),
        sched,
        devices,
    )
    .unwrap()
}

fn schedulers() -> Vec<Scheduler> {
    vec![
        Scheduler::Static { powers: None },
        Scheduler::Dynamic { packages: 9 },
        Scheduler::HGuided {
            powers: None,
            k: coexec::DEFAULT_K,
            min_package: 1,
        },
    ]
}

/// An engine whose transfers go to `queue`, and one on the compute queue;
/// where the first is staged (and no environment variable forces a queue),
/// its transfers are separate exactly where it has timeline semaphores
/// (fences: the compute queue).
fn against_compute(queue: TransferQueue, coherence: HostCoherence) -> Option<(Engine, Engine)> {
    let e = engine(queue, coherence)?;
    let one = engine(TransferQueue::Compute, coherence)?;
    let forced = std::env::var("COEXEC_TRANSFER_QUEUE").is_ok();
    if !forced && e.memory_placement() == MemoryPlacement::Staged {
        assert_eq!(e.separate_transfers(), e.sync_mode().has_timelines());
        assert!(!one.separate_transfers());
    }
    Some((e, one))
}

#[test]
fn separate_queue_is_byte_identical_to_the_compute_queue() {
    for coherence in [HostCoherence::Eager, HostCoherence::Lazy] {
        let Some((sep, one)) = against_compute(TransferQueue::Separate, coherence) else {
            return;
        };
        for sched in schedulers() {
            for devices in [Devices::GPU, Devices::ALL] {
                let a = sweeps(&sep, 6, devices, &sched);
                let b = sweeps(&one, 6, devices, &sched);
                assert_eq!(a, b, "{coherence:?} {sched:?} {devices:?}");
            }
        }
    }
}

/// `Auto`'s choice per run (`SeparateWhenLone` on lavapipe): a lone GPU's
/// runs on the separate protocol, shared runs on the compute queue, the
/// stager switching between runs in both directions (and twice in a row
/// on one), with host writes between them.
#[test]
fn switching_queues_between_runs_is_byte_identical() {
    for coherence in [HostCoherence::Eager, HostCoherence::Lazy] {
        let Some((sw, one)) = against_compute(TransferQueue::SeparateWhenLone, coherence) else {
            return;
        };
        // GPU, GPU, all, all, GPU, all, ...
        let pick = |s: usize| match s % 5 {
            0 | 1 | 4 => Devices::GPU,
            _ => Devices::ALL,
        };
        for sched in schedulers() {
            let a = sweeps_on(&sw, 10, pick, &sched);
            let b = sweeps_on(&one, 10, pick, &sched);
            assert_eq!(a, b, "{coherence:?} {sched:?}");
        }
    }
}

#[test]
fn uploads_and_downloads_are_counted_on_the_separate_queue() {
    for queue in [
        TransferQueue::Separate,
        TransferQueue::SeparateWhenLone,
        TransferQueue::Compute,
    ] {
        counted_on(queue);
    }
}

fn counted_on(queue: TransferQueue) {
    let Some(e) = engine(queue, HostCoherence::Eager) else {
        return;
    };
    if e.memory_placement() != MemoryPlacement::Staged {
        return;
    }
    let n = 4096usize;
    let k = kernel(&e);
    let x = e.buffer_from_slice(&vec![1u32; n]).unwrap();
    let mut o = e.buffer::<u32>(n).unwrap();
    let r = e
        .run(
            &k,
            Args::new()
                .input(&x)
                .footprint(HALO)
                .output(&mut o)
                .push(&(n as u32)),
            IndexSpace::D1(n as u64),
            &Scheduler::Dynamic { packages: 4 },
            Devices::GPU,
        )
        .unwrap();
    let t = &r.devices[0].transfers;
    assert_eq!(t.upload_bytes, 4 * n as u64);
    // (`COEXEC_HOST_COHERENCE=lazy` keeps the output in the mirror.)
    let eager = u64::from(e.host_coherence() == HostCoherence::Eager);
    assert_eq!(t.download_bytes, eager * 4 * n as u64);
    assert!(o.as_slice().iter().all(|&v| v == 5));
    common::assert_validation_clean(&e);
    check_transfer_lane(&r);
}

/// The report's transfer batches add up to its bytes, and the trace JSON
/// and the SVG timeline show them on a lane of their own.
fn check_transfer_lane(r: &coexec::Report) {
    let spans = r.packages.transfers();
    let t = &r.devices[0].transfers;
    let sum = |up: bool| -> u64 {
        let s = spans.iter().filter(|s| s.upload == up);
        s.map(|s| s.bytes).sum()
    };
    assert_eq!(sum(true), t.upload_bytes);
    assert_eq!(sum(false), t.download_bytes);
    assert!(spans.iter().all(|s| s.device == 0 && s.end_s >= s.start_s));
    // The device's results are home when its last download ended: how the
    // run ended is judged by that, not by its last package's end.
    let d = &r.devices[0];
    let last_down = spans.iter().filter(|s| !s.upload).map(|s| s.end_s);
    let want = last_down.fold(d.finish_s, f64::max);
    assert_eq!(d.settled_s, want, "{d:#?}");
    if t.download_bytes > 0 {
        assert!(d.settled_s >= d.finish_s, "{d:#?}");
    }
    let trace = coexec::trace::chrome_trace(r, "t");
    let events = trace["traceEvents"].as_array().unwrap();
    let lane = r.devices[0].claimants;
    let named = events.iter().any(|e| {
        e["name"] == "thread_name" && e["tid"] == lane && e["args"]["name"] == "transfers"
    });
    assert!(named, "{trace}");
    let traced: u64 = events
        .iter()
        .filter(|e| e["cat"] == "transfer" && e["tid"] == lane)
        .map(|e| e["args"]["bytes"].as_u64().unwrap())
        .sum();
    assert_eq!(traced, t.upload_bytes + t.download_bytes);
    let svg = std::env::temp_dir().join(format!("coexec-xfer-{}.svg", std::process::id()));
    coexec::suite::plots::timeline_chart(&svg, "t", r).unwrap();
    let text = std::fs::read_to_string(&svg).unwrap();
    let _ = std::fs::remove_file(&svg);
    assert!(text.contains("GPU transfers"), "no transfer lane");
    assert!(text.contains("upload:") && text.contains("download:"));
}

/// Engine options for the depth-profile test: a staged engine whose lone
/// GPU runs take the separate protocol, profiles on under `dir`.
fn depth_options(dir: &std::path::Path) -> EngineOptions {
    depth_options_with(dir, HostCoherence::Eager)
}

/// [`depth_options`] under `coherence`.
fn depth_options_with(dir: &std::path::Path, coherence: HostCoherence) -> EngineOptions {
    EngineOptions {
        workers: Some(1),
        validation: coexec::Validation::IfAvailable,
        pipeline_cache_dir: Some(dir.to_path_buf()),
        profiles: true,
        memory: MemoryPlacement::Staged,
        host_coherence: coherence,
        transfer_queue: TransferQueue::SeparateWhenLone,
        ..Default::default()
    }
}

/// The depth tests' engine (see [`depth_options`]), where a lone GPU's
/// runs have a transfer queue of their own; `None` elsewhere (fences,
/// zero-copy, or a queue forced by the environment).
fn depth_engine(dir: &std::path::Path) -> Option<Engine> {
    depth_engine_with(dir, HostCoherence::Eager)
}

/// [`depth_engine`] under `coherence`.
fn depth_engine_with(dir: &std::path::Path, coherence: HostCoherence) -> Option<Engine> {
    separate(common::engine_from(depth_options_with(dir, coherence))?)
}

/// `e` where its GPUs' runs can have a transfer queue of their own
/// (staged, the separate protocol, no queue forced by the environment).
fn separate(e: Engine) -> Option<Engine> {
    let forced = std::env::var("COEXEC_TRANSFER_QUEUE").is_ok();
    let own_queue = e.memory_placement() == MemoryPlacement::Staged && e.separate_transfers();
    (!forced && own_queue).then_some(e)
}

/// HGuided with equal power hints for `devices` devices.
fn even(devices: usize) -> Scheduler {
    Scheduler::HGuided {
        powers: Some(vec![1.0; devices]),
        k: coexec::DEFAULT_K,
        min_package: 1,
    }
}

/// One GPU-alone HGuided run of the stencil over `n` items, checked; the
/// report.
fn lone_run(e: &Engine, k: &Kernel, n: usize) -> coexec::Report {
    let x: Vec<u32> = (0..n as u32).map(|i| i.wrapping_mul(7)).collect();
    let a = e.buffer_from_slice(&x).unwrap();
    let mut b = e.buffer::<u32>(n).unwrap();
    let r = stencil_run(e, k, (&a, &mut b), &Scheduler::hguided(), Devices::GPU);
    assert_eq!(b.as_slice(), &reference(&x)[..]);
    r
}

/// A lone GPU's depth ladder (the packages its runs are cut into) is kept
/// in the kernel's profile, and the next engine's first run is cut as the
/// profile says.
#[test]
fn a_lone_gpus_depth_comes_from_the_profile() {
    let dir = common::TempDir::new("depth-profile");
    let n = 1 << 20;
    {
        let Some(e) = depth_engine(&dir) else {
            return;
        };
        let k = kernel(&e);
        for _ in 0..6 {
            lone_run(&e, &k, n);
        }
    }
    let file = common::the_profile(&dir);
    let text = std::fs::read_to_string(&file).unwrap();
    // Its second run (the first is not recorded) was one package.
    assert!(text.contains("\ndepth 1 1 "), "{text}");
    let kept: String = text
        .lines()
        .filter(|l| !l.starts_with("depth "))
        .map(|l| format!("{l}\n"))
        .collect();
    // Eight packages measured fastest, then one.
    for (steps, many) in [
        (
            "depth 1 1 1e-6\ndepth 1 2 5e-7\ndepth 1 4 2.5e-7\ndepth 1 8 1.25e-7\n",
            true,
        ),
        ("depth 1 1 1e-7\ndepth 1 2 1e-6\n", false),
    ] {
        std::fs::write(&file, format!("{kept}{steps}")).unwrap();
        let e = common::engine_from(depth_options(&dir)).unwrap();
        let k = kernel(&e);
        let r = lone_run(&e, &k, n);
        assert!(r.from_profile);
        let gpu = &r.devices[0];
        assert_eq!(gpu.packages > 1, many, "{steps:?}: {gpu:?}");
        common::assert_validation_clean(&e);
    }
}

/// One co-executed HGuided run of the stencil over `n` items (power hints,
/// so that both devices take part in every run), checked: whether the
/// GPU's transfers went to its own queue.
fn shared_run(e: &Engine, k: &Kernel, n: usize) -> bool {
    let x: Vec<u32> = (0..n as u32).map(|i| i.wrapping_mul(7)).collect();
    let a = e.buffer_from_slice(&x).unwrap();
    let mut b = e.buffer::<u32>(n).unwrap();
    let r = stencil_run(e, k, (&a, &mut b), &even(2), Devices::ALL);
    assert_eq!(b.as_slice(), &reference(&x)[..]);
    assert!(r.devices.iter().all(|d| d.items > 0), "{r:?}");
    let gpu = r.devices.iter().find(|d| d.kind == coexec::DeviceKind::Gpu);
    gpu.expect("a GPU report").transfers.own_queue
}

/// A kernel's first co-executed run with nothing learned transfers on the
/// GPU's own queue (the separate protocol on lavapipe), where each
/// package's download need not wait behind the next dispatch; its later
/// runs, and a new engine's first run from the profile, on the compute
/// queue. Every output checked; validation clean.
#[test]
fn a_first_co_executed_run_transfers_on_the_gpus_own_queue() {
    if std::env::var("COEXEC_FIRST_RUN_QUEUE").is_ok() {
        return;
    }
    let dir = common::TempDir::new("first-run-queue");
    let n = 1 << 18;
    {
        let Some(e) = depth_engine(&dir) else {
            return;
        };
        let k = kernel(&e);
        let queues: Vec<bool> = (0..3).map(|_| shared_run(&e, &k, n)).collect();
        assert_eq!(queues, [true, false, false]);
        common::assert_validation_clean(&e);
    }
    let e = depth_engine(&dir).expect("the same engine again");
    let k = kernel(&e);
    assert!(!shared_run(&e, &k, n), "a first run from a profile");
    common::assert_validation_clean(&e);
}

/// A lone GPU's run right after a run of other devices (which may pay
/// their uploads) still counts for its depth: the ladder records it (marked
/// so, to be measured again once the ladder settled) and climbs. Not
/// counting it delayed every kernel's climb by a run.
#[test]
fn a_lone_run_after_a_co_executed_one_counts_for_its_depth() {
    let dir = common::TempDir::new("depth-switch");
    let n = 1 << 20;
    let Some(e) = depth_engine(&dir) else {
        return;
    };
    let k = kernel(&e);
    let x: Vec<u32> = (0..n as u32).map(|i| i.wrapping_mul(7)).collect();
    let a = e.buffer_from_slice(&x).unwrap();
    let mut b = e.buffer::<u32>(n).unwrap();
    let together = Scheduler::Static {
        powers: Some(vec![1.0, 1.0]),
    };
    // The first run (never timed), a co-executed one, then the lone run
    // right after it (one package).
    lone_run(&e, &k, n);
    let r = stencil_run(&e, &k, (&a, &mut b), &together, Devices::ALL);
    assert_eq!(b.as_slice(), &reference(&x)[..]);
    assert!(r.devices.iter().all(|d| d.items > 0), "{r:?}");
    let switched = lone_run(&e, &k, n);
    assert_eq!(switched.devices[0].packages, 1, "{switched:?}");
    // It counted: the next lone run climbs to two packages (had it not counted,
    // one package again).
    let next = lone_run(&e, &k, n);
    assert_eq!(next.devices[0].packages, 2, "{next:?}");
    common::assert_validation_clean(&e);
}

/// A lone GPU's run that moves nothing (lazy host coherence: its input
/// resident, its output left in the mirror) runs in one package: with no
/// download to run beside the next package's compute, the depth ladder is
/// not climbed (under eager coherence the third run is cut in two: see
/// [`a_lone_run_after_a_co_executed_one_counts_for_its_depth`]).
#[test]
fn a_lone_run_that_moves_nothing_runs_in_one_package() {
    let dir = common::TempDir::new("depth-resident");
    let n = 1 << 20;
    let Some(e) = depth_engine_with(&dir, HostCoherence::Lazy) else {
        return;
    };
    assert_eq!(e.host_coherence(), HostCoherence::Lazy);
    let k = kernel(&e);
    let x: Vec<u32> = (0..n as u32).map(|i| i.wrapping_mul(7)).collect();
    let a = e.buffer_from_slice(&x).unwrap();
    let mut b = e.buffer::<u32>(n).unwrap();
    // The first run probes the unmeasured GPU and uploads the input.
    stencil_run(&e, &k, (&a, &mut b), &Scheduler::hguided(), Devices::GPU);
    for run in 1..6 {
        let r = stencil_run(&e, &k, (&a, &mut b), &Scheduler::hguided(), Devices::GPU);
        let gpu = &r.devices[0];
        assert_eq!(gpu.packages, 1, "run {run}: {gpu:?}");
        assert_eq!(gpu.transfers.upload_bytes, 0, "run {run}: {gpu:?}");
        assert_eq!(gpu.transfers.download_bytes, 0, "run {run}: {gpu:?}");
    }
    assert_eq!(b.as_slice(), &reference(&x)[..]);
    common::assert_validation_clean(&e);
}

/// A run of two staged GPUs without the CPU workers (two logical copies
/// of the GPU: the testing aid `duplicate_devices`) transfers on each
/// GPU's own queue in every run, with nothing learned or after it; with
/// the CPU workers beside them, later runs keep the compute queue. Every
/// output checked; validation clean.
#[test]
fn two_gpus_without_the_cpu_transfer_on_their_own_queues() {
    if std::env::var("COEXEC_GPUS_OWN_QUEUE").is_ok_and(|v| v.trim() == "0") {
        return;
    }
    let dir = common::TempDir::new("gpus-own-queue");
    let options = EngineOptions {
        duplicate_devices: 2,
        profiles: false,
        ..depth_options(&dir)
    };
    let Some(e) = common::engine_from(options).and_then(separate) else {
        return;
    };
    if e.gpu_count() < 2 {
        return;
    }
    let k = kernel(&e);
    let n = 1 << 18;
    let x: Vec<u32> = (0..n as u32).map(|i| i.wrapping_mul(7)).collect();
    let a = e.buffer_from_slice(&x).unwrap();
    let mut b = e.buffer::<u32>(n).unwrap();
    for run in 0..3 {
        let r = stencil_run(&e, &k, (&a, &mut b), &even(2), Devices::GPU);
        assert_eq!(b.as_slice(), &reference(&x)[..], "run {run}");
        assert_eq!(r.devices.len(), 2, "{r:?}");
        for d in &r.devices {
            assert!(d.items > 0 && d.transfers.own_queue, "run {run}: {d:?}");
        }
    }
    for run in 0..2 {
        let r = stencil_run(&e, &k, (&a, &mut b), &even(3), Devices::ALL);
        assert_eq!(b.as_slice(), &reference(&x)[..], "run {run} with the CPU");
        let gpus = r
            .devices
            .iter()
            .filter(|d| d.kind == coexec::DeviceKind::Gpu);
        for d in gpus {
            assert!(!d.transfers.own_queue, "run {run} with the CPU: {d:?}");
        }
    }
    common::assert_validation_clean(&e);
}
