//! Staged memory on engines over several GPUs: every GPU keeps device-local
//! mirrors of its own (on lavapipe through the testing aid
//! `EngineOptions::duplicate_devices`, with `MemoryPlacement::Staged`).
//!
//! Outputs are checked against a host reference (what a zero-copy run
//! gives), under every scheduler, eager and lazy host coherence, with
//! exactly-once downloads (eager: the GPUs download exactly the bytes of
//! the items they ran), residency across runs on changing GPUs, and host
//! writes between runs. The validation layer is on where installed.
//!
//! Needs the test-only hooks: `cargo test --features test-hooks`.

#![cfg(feature = "glsl")]
#![cfg(feature = "test-hooks")]

mod common;

use coexec::hooks::{FaultInjection, GpuFault};
use coexec::{
    Args, Buffer, CpuArgs, Devices, Engine, EngineOptions, Footprint, HostCoherence, IndexSpace,
    Kernel, MemoryPlacement, Package, Report, Scheduler, Validation,
};
use proptest::prelude::*;
use std::sync::Arc;
use std::time::Duration;

/// A staged engine of `copies` GPUs, one CPU worker, and `coherence`
/// (`None`, the test skipped, where `COEXEC_MEMORY` overrides the placement).
fn engine(copies: usize, coherence: HostCoherence) -> Option<Engine> {
    let e = common::engine_from(EngineOptions {
        workers: Some(1),
        validation: Validation::IfAvailable,
        gpu_timeout: Duration::from_millis(300),
        duplicate_devices: copies,
        memory: MemoryPlacement::Staged,
        host_coherence: coherence,
        ..Default::default()
    })?;
    assert_eq!(e.gpu_count(), copies);
    if e.memory_placement() != MemoryPlacement::Staged {
        eprintln!("skipping: COEXEC_MEMORY overrides the staged placement");
        return None;
    }
    Some(e)
}

/// `o[i] = x[i] * 3 + i` (`o` writeonly).
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
    let cpu = Arc::new(|p: &Package, a: &mut CpuArgs<'_>| {
        let x = a.input::<u32>(0);
        let o = a.output::<u32>(1);
        for (k, i) in p.items.clone().enumerate() {
            o[k] = map_ref(x[i as usize], i as u32);
        }
    });
    e.kernel_glsl("mirrors-map", MAP_GLSL, Some(cpu)).unwrap()
}

/// `o[i] += i + 1` (`o` read and written).
const ACC_GLSL: &str = "#version 450
layout(local_size_x = 32) in;
layout(std430, binding = 0) buffer O { uint o[]; };
layout(push_constant) uniform P { uint n; } p;
void main() {
    uint i = gl_GlobalInvocationID.x;
    if (i < p.n) { o[i] += i + 1u; }
}";

fn acc_kernel(e: &Engine) -> Kernel {
    let cpu = Arc::new(|p: &Package, a: &mut CpuArgs<'_>| {
        let o = a.output::<u32>(0);
        for (k, i) in p.items.clone().enumerate() {
            o[k] = o[k].wrapping_add(i as u32 + 1);
        }
    });
    e.kernel_glsl("mirrors-acc", ACC_GLSL, Some(cpu)).unwrap()
}

/// Every policy, with hints that give each device work.
fn schedulers(n: usize) -> Vec<Scheduler> {
    let hints: Vec<f64> = vec![1.0; n];
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

/// Runs the map kernel from `x` (read by each package whole, or only its
/// own `items`) into a fresh output and checks it.
fn run_map(
    e: &Engine,
    k: &Kernel,
    (x, items): (&Buffer<u32>, bool),
    sched: &Scheduler,
    devices: Devices,
) -> Report {
    let n = x.len() as u32;
    let mut o = e.buffer::<u32>(x.len()).unwrap();
    let mut args = Args::new().input(x);
    if items {
        args = args.footprint(Footprint::Items { per_item: 1 });
    }
    let r = e
        .run(
            k,
            args.output(&mut o).push(&n),
            IndexSpace::D1(u64::from(n)),
            sched,
            devices,
        )
        .unwrap_or_else(|err| panic!("{sched} on {devices}: {err}"));
    for (i, (&v, &xi)) in o.iter().zip(x.iter()).enumerate() {
        assert_eq!(v, map_ref(xi, i as u32), "item {i}, {sched} on {devices}");
    }
    r
}

/// The report of engine GPU `g`, where it took part.
fn gpu_report(r: &Report, g: usize) -> Option<&coexec::DeviceReport> {
    let tag = format!("(gpu{g})");
    r.devices.iter().find(|d| d.name.ends_with(&tag))
}

/// Eager coherence: the GPUs together download exactly the output bytes
/// of the items they ran, each GPU only its own (lazy: none); each GPU uploads into its
/// own mirrors exactly what its packages read, once: the whole input where
/// a package reads it whole, else its items' part.
#[test]
fn every_scheduler_matches_the_reference_on_two_and_three_gpus() {
    for copies in [2, 3] {
        let Some(e) = engine(copies, HostCoherence::Eager) else {
            return;
        };
        let k = map_kernel(&e);
        let n = 24_000;
        for devices in [Devices::ALL, Devices::GPU] {
            let slots = usize::from(devices.cpu) + copies;
            for (s, sched) in schedulers(slots).into_iter().enumerate() {
                for items in [false, true] {
                    let x = e.buffer_from_slice(&common::input(n, s as u32)).unwrap();
                    let r = run_map(&e, &k, (&x, items), &sched, devices);
                    for g in 0..copies {
                        let Some(d) = gpu_report(&r, g) else { continue };
                        let t = d.transfers;
                        // (Lazy where `COEXEC_HOST_COHERENCE=lazy` overrides
                        // the option: nothing is downloaded during the run.)
                        let eager = e.host_coherence() == HostCoherence::Eager;
                        let down = common::own_items(&r, d) * 4 * u64::from(eager);
                        assert_eq!(t.download_bytes, down, "gpu{g}, {sched}: {d:?}");
                        let read = match (items, d.items) {
                            (_, 0) => 0,
                            (true, i) => i * 4,
                            (false, _) => n as u64 * 4,
                        };
                        assert_eq!(t.upload_bytes, read, "gpu{g}, {sched}, {items}: {d:?}");
                    }
                }
            }
        }
        common::assert_validation_clean(&e);
    }
}

/// A buffer written on GPU 1 is read on GPU 0 in the next run (it uploads
/// it from the host copy, made current first under lazy coherence) and
/// again on GPU 1, whose mirror still holds it (nothing uploaded); a host
/// write between runs is seen by both GPUs.
#[test]
fn residency_follows_each_gpu_and_host_writes_are_seen() {
    for coherence in [HostCoherence::Eager, HostCoherence::Lazy] {
        let Some(e) = engine(2, coherence) else {
            return;
        };
        let k = map_kernel(&e);
        let n = 8_192usize;
        let sched = Scheduler::Static { powers: None };
        let mut x = e.buffer_from_slice(&common::input(n, 7)).unwrap();
        let mut y = e.buffer::<u32>(n).unwrap();
        let mut z = e.buffer::<u32>(n).unwrap();
        let nn = n as u32;
        let space = IndexSpace::D1(n as u64);
        let step = |src: &Buffer<u32>, dst: &mut Buffer<u32>, g: usize| {
            e.run(
                &k,
                Args::new().input(src).output(dst).push(&nn),
                space,
                &sched,
                Devices::gpu(g),
            )
            .unwrap()
        };
        // y = f(x) on GPU 1, z = f(y) on GPU 0, z = f(y) on GPU 1.
        let r1 = step(&x, &mut y, 1);
        assert_eq!(
            gpu_report(&r1, 1).unwrap().transfers.upload_bytes,
            n as u64 * 4
        );
        let r2 = step(&y, &mut z, 0);
        let t2 = gpu_report(&r2, 0).unwrap().transfers;
        assert_eq!(t2.upload_bytes, n as u64 * 4, "{coherence:?}: {t2:?}");
        let want: Vec<u32> = (0..nn)
            .map(|i| map_ref(map_ref(x[i as usize], i), i))
            .collect();
        assert_eq!(&z[..], &want[..], "{coherence:?}");
        let r3 = step(&y, &mut z, 1);
        let t3 = gpu_report(&r3, 1).unwrap().transfers;
        assert_eq!(
            t3.upload_bytes, 0,
            "{coherence:?}: GPU 1's mirror of y: {t3:?}"
        );
        assert_eq!(&z[..], &want[..], "{coherence:?}");
        // A host write: both GPUs upload x again.
        x.as_mut_slice()[5] ^= 0xffff;
        for g in [0, 1] {
            let r = step(&x, &mut y, g);
            let t = gpu_report(&r, g).unwrap().transfers;
            assert_eq!(t.upload_bytes, n as u64 * 4, "gpu{g} {coherence:?}: {t:?}");
            assert_eq!(y[5], map_ref(x[5], 5), "gpu{g} {coherence:?}");
        }
        common::assert_validation_clean(&e);
    }
}

/// A buffer accumulated into (`o[i] += i + 1`) by runs on changing device
/// sets, no host access between them: after run `r` it holds
/// `r * (i + 1)`, so what each GPU wrote reached every later reader
/// exactly once, eager and lazy, with every scheduler.
#[test]
fn accumulation_over_changing_device_sets() {
    for coherence in [HostCoherence::Eager, HostCoherence::Lazy] {
        for copies in [2, 3] {
            let Some(e) = engine(copies, coherence) else {
                return;
            };
            let k = acc_kernel(&e);
            let n = 12_000u32;
            let mut o = e.buffer::<u32>(n as usize).unwrap();
            let sets = [
                Devices::gpu(0),
                Devices::gpu(1),
                Devices::GPU,
                Devices::gpu(1),
                Devices::gpu(0).with_cpu(),
                Devices::ALL,
                Devices::gpu(copies - 1),
                Devices::GPU,
                Devices::gpu(0),
            ];
            for (r, devices) in sets.into_iter().enumerate() {
                let slots =
                    usize::from(devices.cpu) + (0..copies).filter(|&g| devices.has_gpu(g)).count();
                let mut scheds = schedulers(slots);
                let sched = scheds.swap_remove(r % scheds.len());
                e.run(
                    &k,
                    Args::new().output(&mut o).push(&n),
                    IndexSpace::D1(u64::from(n)),
                    &sched,
                    devices,
                )
                .unwrap_or_else(|err| panic!("run {r} on {devices}: {err}"));
                // Lazy: only the last run's results are read (the host
                // reads nothing in between, so every run before it leaves
                // its results in the mirrors).
                if coherence == HostCoherence::Eager || r + 1 == sets.len() {
                    let times = r as u32 + 1;
                    for (i, &v) in o.iter().enumerate() {
                        let want = (i as u32 + 1).wrapping_mul(times);
                        assert_eq!(
                            v, want,
                            "item {i} after run {times} on {devices} {coherence:?}"
                        );
                    }
                }
            }
            common::assert_validation_clean(&e);
        }
    }
}

/// A fault on GPU 1 while every GPU stages: its packages go to the others,
/// each item is applied exactly once, and the other GPUs' mirrors stay
/// coherent for the next run.
#[test]
fn a_fault_on_one_gpu_keeps_every_mirror_coherent() {
    let faults = [GpuFault::SubmitError, GpuFault::DeviceLost, GpuFault::Hang];
    for coherence in [HostCoherence::Eager, HostCoherence::Lazy] {
        for fault in faults {
            let Some(e) = engine(2, coherence) else {
                return;
            };
            let k = acc_kernel(&e);
            let n = 200_000u32;
            let mut o = e.buffer::<u32>(n as usize).unwrap();
            // Hints give GPU 1 work, so its fault happens.
            let sched = Scheduler::Static {
                powers: Some(vec![1.0, 1.0, 1.0]),
            };
            let mut run = |devices: Devices| {
                e.run(
                    &k,
                    Args::new().output(&mut o).push(&n),
                    IndexSpace::D1(u64::from(n)),
                    &sched,
                    devices,
                )
            };
            run(Devices::ALL).unwrap();
            e.inject_gpu_fault_on(
                1,
                FaultInjection {
                    fault,
                    after_packages: 0,
                },
            );
            let r = run(Devices::ALL).unwrap_or_else(|err| panic!("{fault:?}: {err}"));
            assert!(
                r.devices.iter().any(|d| d.failure.is_some()),
                "{fault:?}: {r:?}"
            );
            // GPU 1 is left out from now on; GPU 0 and the CPU go on.
            run(Devices::ALL).unwrap();
            for (i, &v) in o.iter().enumerate() {
                let want = (i as u32 + 1).wrapping_mul(3);
                assert_eq!(v, want, "item {i}, {fault:?} {coherence:?}");
            }
            common::assert_validation_clean(&e);
        }
    }
}

/// One step of [`prop_runs_and_host_writes_match_a_model`].
#[derive(Debug, Clone)]
enum Step {
    /// A run of the accumulating kernel over the devices of `mask` (bit 0:
    /// the CPU, bit `1 + g`: GPU `g`) with scheduler number `sched`, over
    /// the units `from..` (a sub-range run where `from > 0`).
    Run { mask: u8, sched: usize, from: u32 },
    /// The host writes `value` at `index`.
    Write { index: usize, value: u32 },
    /// The host reads the buffer.
    Read,
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        4 => (1u8..16, 0usize..5, prop_oneof![Just(0u32), 0u32..40]).prop_map(|(mask, sched, from)| Step::Run { mask, sched, from }),
        1 => (0usize..2_000, any::<u32>()).prop_map(|(index, value)| Step::Write { index, value }),
        1 => Just(Step::Read),
    ]
}

/// The engines of the property test: 3 GPUs, eager and lazy.
fn prop_engines() -> &'static [Option<Engine>; 2] {
    static E: std::sync::OnceLock<[Option<Engine>; 2]> = std::sync::OnceLock::new();
    E.get_or_init(|| {
        [
            engine(3, HostCoherence::Eager),
            engine(3, HostCoherence::Lazy),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 16, ..ProptestConfig::default() })]

    /// Any sequence of runs on any device sets (sub-range runs included),
    /// host writes and reads gives the model's bytes, eager and lazy.
    #[test]
    fn prop_runs_and_host_writes_match_a_model(
        steps in proptest::collection::vec(step(), 1..10),
        lazy in any::<bool>(),
    ) {
        let Some(e) = &prop_engines()[usize::from(lazy)] else { return Ok(()) };
        let k = acc_kernel(e);
        // 2_000 items in 32-item groups: 63 units, the last one partial.
        let n = 2_000u32;
        let mut model = vec![0u32; n as usize];
        let mut o = e.buffer::<u32>(n as usize).unwrap();
        for s in &steps {
            match *s {
                Step::Run { mask, sched, from } => {
                    let mut devices = Devices { cpu: mask & 1 != 0, ..Devices::NONE };
                    for g in (0..3usize).filter(|g| mask & (2 << g) != 0) {
                        devices = devices.with_gpu(g);
                    }
                    let slots = usize::from(devices.cpu) + (0..3).filter(|&g| devices.has_gpu(g)).count();
                    let mut scheds = schedulers(slots);
                    let sched = scheds.swap_remove(sched % scheds.len());
                    e.run_range(&k, Args::new().output(&mut o).push(&n), IndexSpace::D1(u64::from(n)), u64::from(from)..63, &sched, devices)
                        .map_err(|err| TestCaseError::fail(format!("{s:?}: {err}")))?;
                    for (i, v) in model.iter_mut().enumerate().skip(from as usize * 32) {
                        *v = v.wrapping_add(i as u32 + 1);
                    }
                }
                Step::Write { index, value } => {
                    o.as_mut_slice()[index] = value;
                    model[index] = value;
                }
                Step::Read => prop_assert_eq!(&o[..], &model[..], "{:?}", steps),
            }
        }
        prop_assert_eq!(&o[..], &model[..], "{:?}", steps);
    }
}
