//! Programs of several kernels over the same buffers: results against a
//! CPU reference under every scheduler and device set, on staged memory,
//! each step exactly once per iteration, host steps that stop or fail the
//! program, typed errors naming the failing step, and a GPU fault injected
//! in one step.

// Kernels here are GLSL compiled at run time (the lean build has none).
#![cfg(feature = "glsl")]

mod common;

use coexec::{
    AllocatorBackend, Args, Buffer, CpuArgs, Devices, Engine, EngineOptions, Error, Flow,
    HostCoherence, IndexSpace, Kernel, MemoryPlacement, Package, ProgramReport, Reduction,
    Scheduler, Validation,
};
use std::sync::Arc;

/// `b[i] = a[i] * m + c` (wrapping), `b` write-only: a package lost with
/// the GPU may run again elsewhere.
const MAP: &str = "#version 450
layout(local_size_x = 64) in;
layout(std430, binding = 0) readonly buffer A { uint a[]; };
layout(std430, binding = 1) writeonly buffer B { uint b[]; };
layout(push_constant) uniform P { uint n; uint m; uint c; } p;
void main() {
    uint i = gl_GlobalInvocationID.x;
    if (i < p.n) b[i] = a[i] * p.m + p.c;
}";

/// The sum (wrapping) of `a[0..n]` as a reduction.
const SUM: &str = "#version 450
layout(local_size_x = 64) in;
#include \"coexec_reduce.glsl\"
COEXEC_DEFINE_REDUCE(gsum, uint, COEXEC_SUM)
layout(std430, binding = 0) readonly buffer A { uint a[]; };
layout(std430, binding = 1) writeonly buffer S { uint s[]; };
layout(push_constant) uniform P { uint n; } p;
void main() {
    uint i = gl_GlobalInvocationID.x;
    uint v = i < p.n ? a[i] : 0u;
    uint t = gsum(v);
    if (gl_LocalInvocationIndex == 0u) s[coexec_slot(1u)] = t;
}";

/// Push constants of [`MAP`].
#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct MapPush {
    n: u32,
    m: u32,
    c: u32,
}

fn kernels(e: &Engine) -> (Kernel, Kernel) {
    let map = Arc::new(|pkg: &Package, args: &mut CpuArgs<'_>| {
        let p: MapPush = args.push();
        let a = args.input::<u32>(0);
        let b = args.output::<u32>(1);
        for (o, i) in b.iter_mut().zip(pkg.items.clone()) {
            *o = a[i as usize].wrapping_mul(p.m).wrapping_add(p.c);
        }
    });
    let sum = Arc::new(|pkg: &Package, args: &mut CpuArgs<'_>| {
        let a = args.input::<u32>(0);
        let s = pkg
            .items
            .clone()
            .fold(0u32, |s, i| s.wrapping_add(a[i as usize]));
        let acc = args.accumulator::<u32>(1);
        acc[0] = acc[0].wrapping_add(s);
    });
    (
        e.kernel_glsl("map", MAP, Some(map)).unwrap(),
        e.kernel_glsl("sum", SUM, Some(sum)).unwrap(),
    )
}

/// The program's state: two vectors, the sum, what the host step saw.
struct State {
    x: Buffer<u32>,
    y: Buffer<u32>,
    sum: Reduction<u32>,
    sums: Vec<u32>,
}

const N: usize = 10_007;

fn state(e: &Engine) -> State {
    let x: Vec<u32> = (0..N as u32)
        .map(|i| i.wrapping_mul(2_654_435_761))
        .collect();
    State {
        x: e.buffer_from_slice(&x).unwrap(),
        y: e.buffer::<u32>(N).unwrap(),
        sum: Reduction::sum(1),
        sums: Vec::new(),
    }
}

/// The reference of `iterations` of [`standard`]: (x, y, sums).
fn reference(iterations: usize) -> (Vec<u32>, Vec<u32>, Vec<u32>) {
    let mut x: Vec<u32> = (0..N as u32)
        .map(|i| i.wrapping_mul(2_654_435_761))
        .collect();
    let mut y = vec![0u32; N];
    let mut sums = Vec::new();
    for _ in 0..iterations {
        for (y, x) in y.iter_mut().zip(&x) {
            *y = x.wrapping_mul(3).wrapping_add(1);
        }
        for (x, y) in x.iter_mut().zip(&y) {
            *x = y.wrapping_mul(5).wrapping_add(7);
        }
        sums.push(x.iter().fold(0u32, |s, v| s.wrapping_add(*v)));
    }
    (x, y, sums)
}

fn push(m: u32, c: u32) -> MapPush {
    MapPush { n: N as u32, m, c }
}

/// Runs y = 3x + 1, x = 5y + 7, sum(x), host: keep the sum;
/// `iterations` times. Checks the results against [`reference`] and that
/// every step ran once per iteration over every item.
fn standard(e: &Engine, sched: &Scheduler, devices: Devices, iterations: u64) -> ProgramReport {
    let (map, sum) = kernels(e);
    let space = IndexSpace::D1(N as u64);
    let mut s = state(e);
    let mut program = e
        .program::<State>()
        .scheduler(sched.clone())
        .devices(devices)
        .kernel(&map, space, |s| {
            Args::new().input(&s.x).output(&mut s.y).push(&push(3, 1))
        })
        .kernel(&map, space, |s| {
            Args::new().input(&s.y).output(&mut s.x).push(&push(5, 7))
        })
        .kernel(&sum, space, |s| {
            Args::new().input(&s.x).reduce(&mut s.sum).push(&(N as u32))
        })
        .host(|s| {
            s.sums.push(s.sum.scalar());
            Flow::Continue
        });
    assert_eq!(program.len(), 4);
    let r = program.run(&mut s, iterations).unwrap();
    let (x, y, sums) = reference(iterations as usize);
    assert_eq!(s.sums, sums, "{sched:?} {devices}");
    assert!(s.x.as_slice() == x.as_slice(), "x, {sched:?} {devices}");
    assert!(s.y.as_slice() == y.as_slice(), "y, {sched:?} {devices}");
    assert_eq!(r.iterations, iterations);
    assert!(!r.stopped);
    for step in &r.steps {
        assert_eq!(step.runs, iterations, "{}", step.name);
        if let Some(last) = &step.last {
            let items: u64 = last.devices.iter().map(|d| d.items).sum();
            assert_eq!(items, N as u64, "{}: every item once", step.name);
        }
    }
    assert_eq!(r.steps[0].name, "map");
    assert_eq!(r.steps[3].name, "host");
    common::assert_validation_clean(e);
    r
}

fn schedulers() -> Vec<Scheduler> {
    vec![
        Scheduler::Static { powers: None },
        Scheduler::Dynamic { packages: 16 },
        Scheduler::hguided(),
    ]
}

#[test]
fn programs_match_the_reference_under_every_scheduler_and_device_set() {
    let Some(e) = common::engine() else { return };
    for sched in schedulers() {
        for devices in [Devices::CPU, Devices::GPU, Devices::ALL] {
            standard(&e, &sched, devices, 3);
        }
    }
}

/// Staged memory (device-local mirrors), eager and lazy host coherence:
/// the steps read what the earlier ones left in the mirrors. With lazy
/// coherence nothing goes back to the host between GPU steps: the host
/// step reads the reduction only, so the GPU alone downloads nothing.
#[test]
fn programs_run_on_staged_memory() {
    for coherence in [HostCoherence::Eager, HostCoherence::Lazy] {
        let Some(e) = common::engine_from(EngineOptions {
            workers: Some(1),
            memory: MemoryPlacement::Staged,
            host_coherence: coherence,
            validation: Validation::IfAvailable,
            allocator: AllocatorBackend::default(),
            profiles: false,
            ..Default::default()
        }) else {
            return;
        };
        assert_eq!(e.memory_placement(), MemoryPlacement::Staged);
        for sched in schedulers() {
            for devices in [Devices::GPU, Devices::ALL] {
                let r = standard(&e, &sched, devices, 3);
                if coherence == HostCoherence::Lazy && devices == Devices::GPU {
                    let down: u64 = r
                        .steps
                        .iter()
                        .filter_map(|s| s.last.as_ref())
                        .flat_map(|l| &l.devices)
                        .map(|d| d.transfers.download_bytes)
                        .sum();
                    assert_eq!(down, 0, "{sched:?}: the data stays on the GPU");
                }
            }
        }
    }
}

/// A program runs again with what its kernels learned: the second run is
/// as correct as the first (a fresh state each time).
#[test]
fn a_program_runs_again() {
    let Some(e) = common::engine() else { return };
    let r1 = standard(&e, &Scheduler::hguided(), Devices::ALL, 2);
    let r2 = standard(&e, &Scheduler::hguided(), Devices::ALL, 2);
    assert!(r1.time_s > 0.0 && r2.time_s > 0.0);
    assert!(r2.kernel_time_s() <= r2.time_s);
}

/// `Flow::Stop` ends the program after the host step: the steps after it
/// do not run in that iteration. (Here with the workers parked between
/// steps: the same results.)
#[test]
fn a_host_step_stops_the_program() {
    let Some(e) = common::engine() else { return };
    let (map, _) = kernels(&e);
    let space = IndexSpace::D1(N as u64);
    let mut s = state(&e);
    let mut rounds = 0;
    let mut program = e
        .program::<State>()
        .keep_awake(false)
        .kernel(&map, space, |s| {
            Args::new().input(&s.x).output(&mut s.y).push(&push(3, 1))
        })
        .host(|_| {
            rounds += 1;
            if rounds == 3 {
                Flow::Stop
            } else {
                Flow::Continue
            }
        })
        .kernel(&map, space, |s| {
            Args::new().input(&s.y).output(&mut s.x).push(&push(5, 7))
        });
    assert!(format!("{program:?}").contains("awake: false"));
    let r = program.run(&mut s, 10).unwrap();
    drop(program);
    assert!(r.stopped);
    assert_eq!(r.iterations, 3);
    let runs: Vec<u64> = r.steps.iter().map(|s| s.runs).collect();
    assert_eq!(runs, [3, 3, 2]);
    assert_eq!(rounds, 3);
    // x after two full iterations; y after the third's first step.
    let (x2, _, _) = reference(2);
    let y3: Vec<u32> = x2
        .iter()
        .map(|x| x.wrapping_mul(3).wrapping_add(1))
        .collect();
    assert!(s.x.as_slice() == x2.as_slice());
    assert!(s.y.as_slice() == y3.as_slice());
}

/// A failing step stops the program with its index, its iteration and the
/// cause; the steps before it ran.
#[test]
fn a_failing_step_is_named_and_stops_the_program() {
    let Some(e) = common::engine() else { return };
    let (map, _) = kernels(&e);
    let space = IndexSpace::D1(N as u64);
    /// The state with an output too short for the second step.
    struct Bad {
        s: State,
        short: Buffer<u32>,
    }
    let mut bad = Bad {
        s: state(&e),
        short: e.buffer::<u32>(N / 2).unwrap(),
    };
    let mut ran_after = 0;
    let mut program = e
        .program::<Bad>()
        .kernel(&map, space, |b| {
            Args::new()
                .input(&b.s.x)
                .output(&mut b.s.y)
                .push(&push(3, 1))
        })
        .kernel(&map, space, |b| {
            Args::new()
                .input(&b.s.y)
                .output(&mut b.short)
                .push(&push(5, 7))
        })
        .host(|_| {
            ran_after += 1;
            Flow::Continue
        });
    let err = program.run(&mut bad, 4).unwrap_err();
    drop(program);
    match &err {
        Error::ProgramStep {
            step: 1,
            iteration: 0,
            name,
            source,
        } => {
            assert_eq!(name, "map");
            assert!(matches!(**source, Error::BufferTooSmall { .. }), "{source}");
        }
        other => panic!("unexpected: {other}"),
    }
    assert!(err
        .to_string()
        .contains("program step 1 (map), iteration 0"));
    assert_eq!(ran_after, 0);
    // The first step ran, once.
    let (_, y1, _) = reference(1);
    assert!(bad.s.y.as_slice() == y1.as_slice());
}

/// A host step's `Flow::Fail` is a typed error at its index.
#[test]
fn a_host_step_fails_the_program() {
    let Some(e) = common::engine() else { return };
    let mut n = 0u32;
    let mut program = e.program::<u32>().host(|c| {
        *c += 1;
        match *c {
            3 => Flow::Fail("diverged".into()),
            _ => Flow::Continue,
        }
    });
    let err = program.run(&mut n, 10).unwrap_err();
    assert!(
        matches!(
            &err,
            Error::ProgramStep { step: 0, iteration: 2, source, .. }
                if matches!(**source, Error::HostStep(ref m) if m == "diverged")
        ),
        "{err}"
    );
    assert_eq!(n, 3);
    // An empty program runs its iterations and does nothing.
    let mut empty = e.program::<()>();
    assert!(empty.is_empty());
    assert_eq!(empty.run(&mut (), 5).unwrap().iterations, 5);
}

/// A GPU fault injected in the second step (by a host step before it):
/// co-executed, the CPU takes the failed packages and the program goes on,
/// every step exactly once; on the GPU alone the step fails the program
/// with its index.
#[cfg(feature = "test-hooks")]
#[test]
fn a_gpu_fault_in_one_step() {
    use coexec::hooks::{FaultInjection, GpuFault};
    let fresh = || common::engine_with(Some(1), AllocatorBackend::default());
    let Some(e) = fresh() else { return };
    let (map, sum) = kernels(&e);
    let space = IndexSpace::D1(N as u64);
    // A static half for the GPU: it takes part in every run, so the
    // fault fires in the step it was injected before (with HGuided the
    // CPU may finish a small run before the GPU's first claim).
    let sched = Scheduler::Static {
        powers: Some(vec![0.5, 0.5]),
    };
    let inject = |e: &Engine| {
        e.inject_gpu_fault(FaultInjection {
            fault: GpuFault::SubmitError,
            after_packages: 0,
        })
    };
    let mut s = state(&e);
    let mut injected = false;
    // Whether the GPU was still there after step 2, per iteration.
    let after_step2 = std::cell::RefCell::new(Vec::new());
    let mut program = e
        .program::<State>()
        .scheduler(sched)
        .kernel(&map, space, |s| {
            Args::new().input(&s.x).output(&mut s.y).push(&push(3, 1))
        })
        .host(|_| {
            if !injected {
                assert!(e.gpu_available());
                inject(&e);
                injected = true;
            }
            Flow::Continue
        })
        .kernel(&map, space, |s| {
            Args::new().input(&s.y).output(&mut s.x).push(&push(5, 7))
        })
        .host(|_| {
            after_step2.borrow_mut().push(e.gpu_available());
            Flow::Continue
        })
        .kernel(&sum, space, |s| {
            Args::new().input(&s.x).reduce(&mut s.sum).push(&(N as u32))
        })
        .host(|s| {
            s.sums.push(s.sum.scalar());
            Flow::Continue
        });
    let r = program.run(&mut s, 3).unwrap();
    drop(program);
    // The fault fired in step 2 of the first iteration.
    assert_eq!(*after_step2.borrow(), [false, false, false]);
    let (x, y, sums) = reference(3);
    assert_eq!(s.sums, sums);
    assert!(s.x.as_slice() == x.as_slice() && s.y.as_slice() == y.as_slice());
    assert!(r.steps.iter().all(|s| s.runs == 3));
    assert!(!e.gpu_available(), "the fault left the GPU out");
    // On the GPU alone: the faulted step fails the program, named.
    let Some(e) = fresh() else { return };
    let (map, _) = kernels(&e);
    let mut s = state(&e);
    let mut program = e
        .program::<State>()
        .devices(Devices::GPU)
        .kernel(&map, space, |s| {
            Args::new().input(&s.x).output(&mut s.y).push(&push(3, 1))
        })
        .host(|_| {
            inject(&e);
            Flow::Continue
        })
        .kernel(&map, space, |s| {
            Args::new().input(&s.y).output(&mut s.x).push(&push(5, 7))
        });
    let err = program.run(&mut s, 2).unwrap_err();
    assert!(
        matches!(
            err,
            Error::ProgramStep {
                step: 2,
                iteration: 0,
                ..
            }
        ),
        "{err}"
    );
}
