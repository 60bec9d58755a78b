//! Runs of a sub-range of a fixed index space (`Engine::run_range`): every
//! item of a sequence of sub-ranges that covers the space runs exactly
//! once, at its global position, whichever scheduler and devices; what the
//! kernel learned carries from one sub-range to the next; bad ranges are
//! typed errors.

// Kernels here are GLSL compiled at run time (the lean build has none).
#![cfg(feature = "glsl")]

mod common;

use coexec::{
    Args, CpuArgs, DeviceKind, Devices, Engine, EngineOptions, Error, IndexSpace, Kernel, Package,
    Reduction, Scheduler, Validation,
};
use std::ops::Range;
use std::sync::Arc;
use std::time::Duration;

fn schedulers() -> Vec<Scheduler> {
    vec![
        Scheduler::Static { powers: None },
        Scheduler::Dynamic { packages: 5 },
        Scheduler::hguided(),
    ]
}

fn engine() -> Option<Engine> {
    common::engine_from(EngineOptions {
        workers: Some(1),
        validation: Validation::IfAvailable,
        ..Default::default()
    })
}

/// Consecutive sub-ranges of `units` units, of growing sizes (1, 2, 3, ...
/// units), the last one clipped.
fn cover(units: u64) -> Vec<Range<u64>> {
    let (mut out, mut at, mut size) = (Vec::new(), 0, 1);
    while at < units {
        out.push(at..(at + size).min(units));
        at += size;
        size += 1;
    }
    out
}

/// The GLSL of [`common::count_glsl`] that also checks, on the CPU side,
/// that a package's items are its units' (global) ones.
fn count_kernel(e: &Engine, local: [u32; 2], two_d: bool) -> Kernel {
    let glsl = common::count_glsl(local[0], local[1], two_d);
    let cpu = Arc::new(move |p: &Package, args: &mut CpuArgs<'_>| {
        let per_unit = match &p.rows {
            Some(rows) => {
                assert_eq!(u64::from(rows.start), p.units.start * u64::from(local[1]));
                u64::from(p.width) * u64::from(local[1])
            }
            None => u64::from(local[0]),
        };
        assert_eq!(p.items.start, p.units.start * per_unit, "global items");
        for v in args.output::<u32>(0) {
            *v += 1;
        }
    });
    e.kernel_glsl("count", &glsl, Some(cpu)).unwrap()
}

/// Runs `k` over `space` by the sub-ranges of [`cover`], checks each
/// report and package log, and that every item ran exactly once.
fn run_by_parts(e: &Engine, k: &Kernel, space: IndexSpace, sched: &Scheduler, d: Devices) {
    let (w, h) = match space {
        IndexSpace::D2 { width, height } => (width, height),
        IndexSpace::D1(n) => (n as u32, 1),
    };
    let units = k.units(space).unwrap();
    let mut out = e.buffer::<u32>(space.items() as usize).unwrap();
    let push = [space.items() as u32, w, h];
    for range in cover(units) {
        let args = Args::new().output(&mut out).push(&push);
        let r = e
            .run_range(k, args, space, range.clone(), sched, d)
            .unwrap_or_else(|err| panic!("{sched} {d} {range:?}: {err}"));
        assert_eq!(r.units, range.end - range.start);
        let mut logged: Vec<Range<u64>> = r.packages.iter().map(|p| p.units.clone()).collect();
        logged.sort_by_key(|u| u.start);
        let mut at = range.start;
        for u in &logged {
            assert_eq!(u.start, at, "{sched} {d}: log {logged:?} of {range:?}");
            at = u.end;
        }
        assert_eq!(at, range.end, "{sched} {d}: log {logged:?} of {range:?}");
        let worked: u64 = r.devices.iter().map(|x| x.items).sum();
        assert_eq!(worked, r.items);
    }
    let bad: Vec<usize> = (0..out.len()).filter(|&i| out[i] != 1).take(8).collect();
    assert!(
        bad.is_empty(),
        "{sched} {d} {space}: items {bad:?} not run exactly once"
    );
}

#[test]
fn sub_ranges_cover_a_1d_space_exactly_once() {
    let Some(e) = engine() else { return };
    let k = count_kernel(&e, [64, 1], false);
    for sched in schedulers() {
        for d in [Devices::CPU, Devices::GPU, Devices::ALL] {
            // 47 units, the last a partial work-group.
            run_by_parts(&e, &k, IndexSpace::D1(64 * 46 + 17), &sched, d);
        }
    }
    common::assert_validation_clean(&e);
}

#[test]
fn sub_ranges_cover_a_2d_space_exactly_once() {
    let Some(e) = engine() else { return };
    let k = count_kernel(&e, [8, 4], true);
    let space = IndexSpace::D2 {
        width: 37,
        height: 4 * 20 + 3,
    };
    assert_eq!(k.units(space).unwrap(), 21);
    for sched in schedulers() {
        for d in [Devices::CPU, Devices::GPU, Devices::ALL] {
            run_by_parts(&e, &k, space, &sched, d);
        }
    }
    common::assert_validation_clean(&e);
}

#[test]
fn empty_and_out_of_range_sub_ranges_are_typed_errors() {
    let Some(e) = engine() else { return };
    let k = count_kernel(&e, [64, 1], false);
    let space = IndexSpace::D1(640);
    assert_eq!(k.units(space).unwrap(), 10);
    assert!(matches!(k.units(IndexSpace::D1(0)), Err(Error::EmptyRange)));
    let mut out = e.buffer::<u32>(640).unwrap();
    for (range, text) in [
        (3..3, "empty"),
        (Range { start: 5, end: 2 }, "empty"),
        (8..11, "past"),
        (10..11, "past"),
    ] {
        let args = Args::new().output(&mut out).push(&[640u32, 0, 0]);
        let sched = Scheduler::hguided();
        match e.run_range(&k, args, space, range.clone(), &sched, Devices::ALL) {
            Err(err @ Error::SubRange { start, end, units }) => {
                assert_eq!((start, end, units), (range.start, range.end, 10));
                assert!(err.to_string().contains(text), "{err}");
            }
            other => panic!("{range:?}: expected Error::SubRange, got {other:?}"),
        }
    }
    assert!(out.iter().all(|&v| v == 0), "nothing ran");
    // An output sized for the sub-range only is too small: outputs hold the
    // whole space.
    let mut small = e.buffer::<u32>(64).unwrap();
    let args = Args::new().output(&mut small).push(&[640u32, 0, 0]);
    let r = e.run_range(&k, args, space, 0..1, &Scheduler::hguided(), Devices::ALL);
    assert!(matches!(r, Err(Error::BufferTooSmall { .. })), "{r:?}");
}

/// What a kernel learns holds for the whole space: with a CPU far slower
/// than the GPU, HGuided leaves the CPU out after a few sub-ranges of
/// different sizes and places (each would start unmeasured if it were a
/// space of its own, and co-execute).
#[test]
fn what_is_learned_carries_across_sub_ranges() {
    let Some(e) = engine() else { return };
    let n = 64 * 512;
    let cpu = common::slow_count_cpu(Duration::from_millis(50), n);
    let k = e
        .kernel_glsl("count", &common::count_glsl(64, 1, false), Some(cpu))
        .unwrap();
    let space = IndexSpace::D1(n);
    let mut out = e.buffer::<u32>(n as usize).unwrap();
    let sched = Scheduler::hguided();
    let ranges = [
        0..48,
        48..112,
        112..200,
        200..260,
        260..340,
        340..420,
        420..512,
    ];
    let mut last = None;
    for range in ranges {
        let args = Args::new().output(&mut out).push(&[n as u32, 0, 0]);
        last = Some(
            e.run_range(&k, args, space, range, &sched, Devices::ALL)
                .unwrap(),
        );
    }
    assert!(out.iter().all(|&v| v == 1), "every item exactly once");
    let last = last.unwrap();
    let cpu_out = last
        .devices
        .iter()
        .any(|d| d.kind == DeviceKind::Cpu && d.packages == 0);
    assert!(cpu_out, "the CPU sits out: {:#?}", last.devices);
    assert_eq!(last.devices[0].kind, DeviceKind::Gpu);
    assert_eq!(last.devices[0].items, 64 * 92);
}

/// A reduction over a sub-range combines that sub-range's work-groups only
/// (the GPU writes its work-groups' slots at their global ids).
#[test]
fn a_reduction_over_a_sub_range_sums_its_items() {
    const GLSL: &str = "#version 450
layout(local_size_x = 64) in;
#include \"coexec_reduce.glsl\"
COEXEC_DEFINE_REDUCE(gsum, uint, COEXEC_SUM)
layout(std430, binding = 0) writeonly buffer S { uint s[]; };
layout(push_constant) uniform P { uint n; } p;
void main() {
    uint i = gl_GlobalInvocationID.x;
    uint a = gsum(i < p.n ? i : 0u);
    if (gl_LocalInvocationIndex == 0u) { s[coexec_slot(1u)] = a; }
}";
    let Some(e) = engine() else { return };
    // Staged memory refuses reductions (COEXEC_MEMORY=staged).
    if e.memory_placement() == coexec::MemoryPlacement::Staged {
        return;
    }
    let cpu = Arc::new(|pkg: &Package, args: &mut CpuArgs<'_>| {
        let s: u64 = pkg.items.clone().sum();
        let acc = args.accumulator::<u32>(0);
        acc[0] = acc[0].wrapping_add(s as u32);
    });
    let k = e.kernel_glsl("ids_sum", GLSL, Some(cpu)).unwrap();
    let n = 64 * 100 + 5;
    let space = IndexSpace::D1(n);
    for sched in schedulers() {
        for d in [Devices::CPU, Devices::GPU, Devices::ALL] {
            for range in [0..1, 3..40, 40..101, 100..101] {
                let mut sum = Reduction::<u32>::sum(1);
                let args = Args::new().reduce(&mut sum).push(&(n as u32));
                e.run_range(&k, args, space, range.clone(), &sched, d)
                    .unwrap();
                let items = range.start * 64..(range.end * 64).min(n);
                let want = items.sum::<u64>() as u32;
                assert_eq!(sum.scalar(), want, "{sched} {d} {range:?}");
            }
        }
    }
    common::assert_validation_clean(&e);
}

/// With staged memory (device-local mirrors): sub-ranges still cover the
/// space exactly once, the GPU's packages uploading and downloading their
/// own global items.
#[test]
fn sub_ranges_with_staged_memory_cover_the_space_exactly_once() {
    let Some(e) = common::engine_from(EngineOptions {
        workers: Some(1),
        validation: Validation::IfAvailable,
        memory: coexec::MemoryPlacement::Staged,
        ..Default::default()
    }) else {
        return;
    };
    let k = count_kernel(&e, [64, 1], false);
    for sched in schedulers() {
        for d in [Devices::GPU, Devices::ALL] {
            run_by_parts(&e, &k, IndexSpace::D1(64 * 30 + 9), &sched, d);
        }
    }
    common::assert_validation_clean(&e);
}
