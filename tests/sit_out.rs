//! A device that sits a run out costs that run nothing: when the CPU runs
//! alone with a GPU in the run's device set, the GPU gets no submission (no
//! dispatch, upload or download), its dispatch loop is not woken, and its
//! mirrors of what the CPU wrote become stale (uploaded by the next GPU run
//! that reads them, not by this one); when the GPU runs alone with the CPU
//! in the set, no CPU worker is woken. Staged (eager and lazy host
//! coherence) and zero-copy engines, outputs checked against a count of
//! the runs.

// Kernels here are GLSL compiled at run time.
#![cfg(all(feature = "glsl", feature = "test-hooks"))]

mod common;

use coexec::{
    Args, Buffer, DeviceKind, Devices, Engine, EngineOptions, HostCoherence, IndexSpace, Kernel,
    MemoryPlacement, Report, Scheduler,
};

/// Items of each run: 64 work-groups of 64.
const N: u64 = 64 * 64;

/// An engine of one worker with `memory` and `coherence` (the environment's
/// `COEXEC_MEMORY` / `COEXEC_HOST_COHERENCE` may override them).
fn engine(memory: MemoryPlacement, coherence: HostCoherence) -> Option<Engine> {
    common::engine_from(EngineOptions {
        workers: Some(1),
        validation: coexec::Validation::IfAvailable,
        profiles: false,
        memory,
        host_coherence: coherence,
        ..Default::default()
    })
}

/// The engines the tests run on: staged eager, staged lazy, zero-copy.
fn engines() -> Vec<Engine> {
    [
        (MemoryPlacement::Staged, HostCoherence::Eager),
        (MemoryPlacement::Staged, HostCoherence::Lazy),
        (MemoryPlacement::ZeroCopy, HostCoherence::Eager),
    ]
    .into_iter()
    .filter_map(|(m, c)| engine(m, c))
    .collect()
}

/// `out[i] += 1`: an output the kernel reads, so a stale copy anywhere
/// shows as a wrong count.
fn count_kernel(e: &Engine) -> Kernel {
    e.kernel_glsl(
        "sit-out-count",
        &common::count_glsl(64, 1, false),
        Some(common::count_cpu()),
    )
    .unwrap()
}

/// `out[i] += 1` after a loop of `spin` steps on the GPU (the CPU's twin
/// adds 1 at once): the GPU far slower than the CPU, whatever the load.
const SLOW_GPU_GLSL: &str = "#version 450
layout(local_size_x = 64) in;
layout(std430, binding = 0) buffer O { uint out_[]; };
layout(push_constant) uniform P { uint n; uint spin; uint never; } p;
void main() {
    uint i = gl_GlobalInvocationID.x;
    if (i < p.n) {
        uint a = i;
        for (uint j = 0u; j < p.spin; ++j) { a = a * 1664525u + 1013904223u; }
        out_[i] += 1u + uint(a == p.never && p.never == 1u);
    }
}";

/// Static with every item on one device: `cpu` true puts them all on the
/// CPU (the GPU, in the set, sits out), else all on the GPU.
fn one_device(cpu: bool) -> Scheduler {
    let p = if cpu { vec![1.0, 0.0] } else { vec![0.0, 1.0] };
    Scheduler::Static { powers: Some(p) }
}

/// One run of the count kernel over `out`.
fn count(e: &Engine, k: &Kernel, out: &mut Buffer<u32>, s: &Scheduler, d: Devices) -> Report {
    count_n(e, k, (out, N), s, d)
}

/// [`count`] over the first `n` items of `out`.
fn count_n(
    e: &Engine,
    k: &Kernel,
    (out, n): (&mut Buffer<u32>, u64),
    s: &Scheduler,
    d: Devices,
) -> Report {
    e.run(
        k,
        Args::new().output(out).push(&[n as u32, 0, 0]),
        IndexSpace::D1(n),
        s,
        d,
    )
    .unwrap()
}

/// The report of the device of `kind`.
fn of(r: &Report, kind: DeviceKind) -> &coexec::DeviceReport {
    r.devices
        .iter()
        .find(|d| d.kind == kind)
        .expect("a report of each device")
}

/// Whether the device of `kind` sat the run out (in the report, taking
/// nothing).
fn sat_out(r: &Report, kind: DeviceKind) -> bool {
    let d = of(r, kind);
    d.items == 0 && d.packages == 0 && d.declined_s == Some(f64::INFINITY)
}

/// GPU 0's submissions and the wake-ups of the workers and of GPU 0's
/// dispatch loop so far.
fn counters(e: &Engine) -> (u64, u64, u64) {
    let (workers, gpus) = e.wake_counts();
    (e.gpu_submissions(0).unwrap(), workers.iter().sum(), gpus[0])
}

#[test]
fn the_cpu_alone_with_the_gpu_in_the_set_leaves_the_gpu_untouched() {
    for e in engines() {
        let staged = e.memory_placement() == MemoryPlacement::Staged;
        let k = count_kernel(&e);
        let mut out = e.buffer::<u32>(N as usize).unwrap();
        // The GPU alone first: its mirror of `out` (staged) holds 1s.
        let r = count(&e, &k, &mut out, &one_device(false), Devices::ALL);
        assert_eq!(of(&r, DeviceKind::Gpu).items, N);
        // The host sees the GPU's results (lazy: downloads them now, so
        // that nothing is left stale for the next run to fetch).
        assert!(out.iter().all(|&v| v == 1));
        let before = counters(&e);
        for round in 0..3 {
            let r = count(&e, &k, &mut out, &one_device(true), Devices::ALL);
            assert!(sat_out(&r, DeviceKind::Gpu), "{:#?}", r.devices);
            assert_eq!(of(&r, DeviceKind::Cpu).items, N);
            let g = of(&r, DeviceKind::Gpu);
            assert_eq!(
                (g.transfers.upload_bytes, g.transfers.download_bytes),
                (0, 0)
            );
            let (subs, workers, loops) = counters(&e);
            assert_eq!(subs, before.0, "round {round}: the GPU was given work");
            assert_eq!(loops, before.2, "round {round}: the GPU's loop was woken");
            // Each round wakes the workers once, but for the one the
            // caller runs itself where it is on that worker's core (a job
            // run in a thread's place is not counted).
            assert!(workers <= before.1 + (round + 1) * e.workers() as u64);
        }
        // The CPU's counts reached the host copy, and only the host copy:
        // the next GPU run uploads all of `out` again (staged) and adds to
        // what the CPU wrote.
        assert!(out.iter().all(|&v| v == 4), "{:?}", e.memory_placement());
        let r = count(&e, &k, &mut out, &one_device(false), Devices::ALL);
        let up = of(&r, DeviceKind::Gpu).transfers.upload_bytes;
        assert_eq!(up, u64::from(staged) * N * 4);
        for (i, &v) in out.iter().enumerate() {
            assert_eq!(v, 5, "item {i}");
        }
        common::assert_validation_clean(&e);
    }
}

/// Lazy host coherence: a CPU-alone run after a GPU run downloads what the
/// GPU left stale (the only GPU work it causes, as a `Devices::CPU` run
/// does); the next CPU-alone run causes none.
#[test]
fn a_lazy_cpu_alone_run_downloads_only_what_is_stale() {
    let Some(e) = engine(MemoryPlacement::Staged, HostCoherence::Lazy) else {
        return;
    };
    if e.host_coherence() != HostCoherence::Lazy || e.memory_placement() != MemoryPlacement::Staged
    {
        return; // COEXEC_MEMORY / COEXEC_HOST_COHERENCE chose otherwise.
    }
    let k = count_kernel(&e);
    let mut out = e.buffer::<u32>(N as usize).unwrap();
    count(&e, &k, &mut out, &one_device(false), Devices::ALL);
    let (s0, ..) = counters(&e);
    count(&e, &k, &mut out, &one_device(true), Devices::ALL);
    let (s1, ..) = counters(&e);
    assert!(s1 > s0, "the GPU's results were downloaded for the CPU");
    count(&e, &k, &mut out, &one_device(true), Devices::ALL);
    assert_eq!(counters(&e).0, s1, "nothing stale: no GPU work");
    let r = count(&e, &k, &mut out, &one_device(false), Devices::ALL);
    assert_eq!(of(&r, DeviceKind::Gpu).transfers.upload_bytes, N * 4);
    for (i, &v) in out.iter().enumerate() {
        assert_eq!(v, 4, "item {i}");
    }
    common::assert_validation_clean(&e);
}

/// HGuided without hints: once the learner runs the CPU alone (the GPU's
/// kernel is made far slower than the CPU's), those runs give the GPU
/// nothing and do not wake its loop.
#[test]
fn runs_the_learner_gives_to_the_cpu_alone_leave_the_gpu_untouched() {
    for e in engines() {
        let k = e
            .kernel_glsl("sit-out-slow-gpu", SLOW_GPU_GLSL, Some(common::count_cpu()))
            .unwrap();
        let mut out = e.buffer::<u32>(N as usize).unwrap();
        let sched = Scheduler::hguided();
        let mut alone = 0;
        let mut cpu_items = Vec::new();
        for run in 1..=40u32 {
            let before = counters(&e);
            let args = Args::new().output(&mut out).push(&[N as u32, 2000, 0]);
            let r = e
                .run(&k, args, IndexSpace::D1(N), &sched, Devices::ALL)
                .unwrap();
            cpu_items.push((of(&r, DeviceKind::Cpu).items, r.time_s));
            if sat_out(&r, DeviceKind::Gpu) {
                let after = counters(&e);
                assert_eq!((after.0, after.2), (before.0, before.2), "run {run}");
                alone += 1;
            }
            assert!(out.iter().all(|&v| v == run), "run {run}");
        }
        assert!(
            alone > 0,
            "the learner never ran the CPU alone: {cpu_items:?}"
        );
        common::assert_validation_clean(&e);
    }
}

#[test]
fn the_gpu_alone_with_the_cpu_in_the_set_wakes_no_worker() {
    for e in engines() {
        let k = count_kernel(&e);
        let mut out = e.buffer::<u32>(N as usize).unwrap();
        let mut before = counters(&e);
        for round in 1..=3u64 {
            let r = count(&e, &k, &mut out, &one_device(false), Devices::ALL);
            assert!(sat_out(&r, DeviceKind::Cpu), "{:#?}", r.devices);
            assert_eq!(of(&r, DeviceKind::Gpu).items, N);
            let now = counters(&e);
            assert_eq!(now.1, before.1, "round {round}: a worker was woken");
            assert!(now.0 > before.0, "round {round}: the GPU ran nothing");
            // The GPU's loop ran on its pool thread (woken) or on the
            // caller's (`COEXEC_GPU_INLINE`: no thread woken at all).
            assert!(now.2 - before.2 <= 1, "round {round}");
            before = now;
        }
        assert!(out.iter().all(|&v| v == 3));
        common::assert_validation_clean(&e);
    }
}

/// CPU workers worth a few percent of two GPUs sit runs out as soon as
/// every device's cost is known: two logical copies of the GPU (the
/// testing aid `duplicate_devices`) count as fast as ever, the CPU's twin
/// waits 2 ms a package (a CPU far slower than the GPUs, whatever the
/// load). The first run measures every device; the second may still wake
/// the workers (a GPU known only by its probe is a cost in doubt); from
/// the third on, the workers are woken in at most one run of four (the
/// learner may measure every device together once more). Every item
/// counted once in every run. (Whether the model itself leaves the CPU
/// out is `learn`'s unit test: on lavapipe the learner's own tries reach
/// the GPUs without the CPU by the fourth run as well.)
#[test]
fn cpu_workers_that_add_little_beside_two_gpus_are_not_woken() {
    let Some(e) = common::engine_from(EngineOptions {
        workers: Some(1),
        validation: coexec::Validation::IfAvailable,
        profiles: false,
        duplicate_devices: 2,
        ..Default::default()
    }) else {
        return;
    };
    if e.gpu_count() < 2 {
        return;
    }
    let slow_cpu: std::sync::Arc<coexec::CpuFn> =
        std::sync::Arc::new(|_: &coexec::Package, args: &mut coexec::CpuArgs<'_>| {
            std::thread::sleep(std::time::Duration::from_millis(2));
            for v in args.output::<u32>(0) {
                *v += 1;
            }
        });
    let count = common::count_glsl(64, 1, false);
    let k = e
        .kernel_glsl("sit-out-slow-cpu", &count, Some(slow_cpu))
        .unwrap();
    let n: u64 = 1 << 20;
    let mut out = e.buffer::<u32>(n as usize).unwrap();
    let runs = 6;
    let mut seen = Vec::new();
    for _ in 0..runs {
        let before = e.wake_counts().0.iter().sum::<u64>();
        let r = count_n(&e, &k, (&mut out, n), &Scheduler::hguided(), Devices::ALL);
        let woken = e.wake_counts().0.iter().sum::<u64>() - before;
        seen.push((woken, of(&r, DeviceKind::Cpu).items));
    }
    assert!(out.iter().all(|&v| v == runs));
    let later = &seen[2..];
    assert!(
        later.iter().all(|&(w, items)| w > 0 || items == 0),
        "{seen:?}"
    );
    let woken = later.iter().filter(|&&(w, _)| w > 0).count();
    assert!(woken <= 1, "workers woken, CPU items per run: {seen:?}");
    common::assert_validation_clean(&e);
}
