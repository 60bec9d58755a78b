//! Kernels that take tiles (`Kernel::with_tiles`): 2-D packages that cover
//! part of their rows. Every item runs exactly once and matches the host
//! reference, zero-copy and staged, for every scheduler and device set,
//! also where the GPU takes the unstarted tiles of a CPU worker's row; a
//! tile refuses `CpuArgs::output`; the GPU's dispatch limits count rows of
//! work-groups, not work-groups.

// Kernels here are GLSL compiled at run time (the lean build has none).
#![cfg(feature = "glsl")]

mod common;

use coexec::{
    Args, CpuArgs, DeviceKind, Devices, Engine, Error, IndexSpace, Kernel, MemoryPlacement,
    Package, Report, Scheduler,
};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

fn zero_copy() -> Option<Engine> {
    static E: OnceLock<Option<Engine>> = OnceLock::new();
    E.get_or_init(|| common::engine_placed(MemoryPlacement::ZeroCopy, 2))
        .clone()
}

fn staged() -> Option<Engine> {
    static E: OnceLock<Option<Engine>> = OnceLock::new();
    E.get_or_init(|| common::engine_placed(MemoryPlacement::Staged, 2))
        .clone()
}

/// The tiled kernel; its CPU closure writes through `output_rows`, adds
/// the items it ran to `ran`, and naps `nap` per call.
fn img_kernel(e: &Engine, w: u32, ran: Arc<AtomicU64>, nap: Duration) -> Kernel {
    let cpu = Arc::new(move |p: &Package, a: &mut CpuArgs<'_>| {
        let x = a.input::<u32>(0);
        let rows = p.rows.clone().expect("2-D");
        assert_eq!(p.width, w);
        let mut n = 0;
        for (gy, o) in a.output_rows::<u32>(1) {
            assert!(rows.contains(&gy));
            assert_eq!(o.len(), 2 * (p.cols.end - p.cols.start) as usize);
            for (j, gx) in p.cols.clone().enumerate() {
                let k = (gy * w + gx) as usize;
                o[2 * j] = x[k] ^ gy;
                o[2 * j + 1] = x[k].wrapping_add(gx);
                n += 1;
            }
        }
        assert_eq!(n, p.len());
        // Relaxed: a count read after the run (which orders it).
        ran.fetch_add(n, Ordering::Relaxed);
        if !nap.is_zero() {
            std::thread::sleep(nap);
        }
    });
    e.kernel_glsl("tiles-img", common::IMG_GLSL, Some(cpu))
        .unwrap()
        .with_tiles()
}

fn schedulers() -> Vec<Scheduler> {
    vec![
        Scheduler::Static { powers: None },
        Scheduler::Dynamic { packages: 7 },
        Scheduler::hguided(),
    ]
}

/// Runs the kernel over `w x h` and checks the output against the
/// reference and the CPU's item count against the report.
fn run_checked(
    e: &Engine,
    k: &Kernel,
    ran: &AtomicU64,
    w: u32,
    h: u32,
    s: &Scheduler,
    d: Devices,
) -> Report {
    let data = common::input((w * h) as usize, w ^ h);
    let want = common::img_ref(&data, w);
    let x = e.buffer_from_slice(&data).unwrap();
    let mut o = e.buffer::<u32>(want.len()).unwrap();
    ran.store(0, Ordering::Relaxed);
    let r = e
        .run(
            k,
            Args::new()
                .input(&x)
                .output_per_item(&mut o, 2)
                .push(&[w, h]),
            IndexSpace::D2 {
                width: w,
                height: h,
            },
            s,
            d,
        )
        .unwrap();
    assert_eq!(&o[..], &want[..], "{w}x{h} {s:?} {d:?}");
    let items: u64 = r.devices.iter().map(|d| d.items).sum();
    assert_eq!(items, u64::from(w * h), "items counted once");
    let cpu: u64 = r
        .devices
        .iter()
        .filter(|d| d.kind == DeviceKind::Cpu)
        .map(|d| d.items)
        .sum();
    assert_eq!(ran.load(Ordering::Relaxed), cpu, "CPU items ran once each");
    r
}

#[test]
fn tiled_outputs_match_the_reference_zero_copy_and_staged() {
    for e in [zero_copy(), staged()].into_iter().flatten() {
        let ran = Arc::new(AtomicU64::new(0));
        // Clipped work-groups on both axes; a space of one row of groups.
        for (w, h) in [(45u32, 29u32), (8, 4), (17, 3), (64, 40)] {
            let k = img_kernel(&e, w, ran.clone(), Duration::ZERO);
            assert!(k.takes_tiles());
            let units = k
                .units(IndexSpace::D2 {
                    width: w,
                    height: h,
                })
                .unwrap();
            assert_eq!(units, u64::from(w.div_ceil(8) * h.div_ceil(4)));
            for s in schedulers() {
                for d in [Devices::ALL, Devices::CPU, Devices::GPU] {
                    run_checked(&e, &k, &ran, w, h, &s, d);
                }
            }
        }
        common::assert_validation_clean(&e);
    }
}

/// A CPU that naps on every tile holds its rows long: the GPU takes the
/// unstarted tiles of a worker's package, packages that start or end
/// inside a row of work-groups, and every item still runs once.
#[test]
fn the_gpu_takes_the_unstarted_tiles_of_a_workers_rows() {
    for e in [zero_copy(), staged()].into_iter().flatten() {
        if e.gpu_count() == 0 {
            return;
        }
        let ran = Arc::new(AtomicU64::new(0));
        let (w, h) = (80u32, 16u32); // 10 x 4 work-groups
        let k = img_kernel(&e, w, ran.clone(), Duration::from_millis(2));
        let mut partial = 0;
        for _ in 0..3 {
            let r = run_checked(
                &e,
                &k,
                &ran,
                w,
                h,
                &Scheduler::Static { powers: None },
                Devices::ALL,
            );
            let gx = 10;
            partial += r
                .packages
                .iter()
                .filter(|p| r.devices[p.device].kind == DeviceKind::Gpu)
                .filter(|p| p.units.start % gx != 0 || p.units.end % gx != 0)
                .count();
        }
        assert!(partial > 0, "no GPU package started or ended inside a row");
        common::assert_validation_clean(&e);
    }
}

/// A tile's items are not contiguous: `CpuArgs::output` refuses it (a
/// typed error, the run's), `output_rows` is the way.
#[test]
fn a_tile_refuses_a_contiguous_output() {
    let Some(e) = zero_copy() else { return };
    let cpu = Arc::new(|_: &Package, a: &mut CpuArgs<'_>| {
        let _ = a.output::<u32>(1);
    });
    let k = e
        .kernel_glsl("tiles-refuse", common::IMG_GLSL, Some(cpu))
        .unwrap()
        .with_tiles();
    let x = e.buffer::<u32>(64 * 8).unwrap();
    let mut o = e.buffer::<u32>(2 * 64 * 8).unwrap();
    let r = e.run(
        &k,
        Args::new()
            .input(&x)
            .output_per_item(&mut o, 2)
            .push(&[64u32, 8]),
        IndexSpace::D2 {
            width: 64,
            height: 8,
        },
        &Scheduler::Dynamic { packages: 64 },
        Devices::CPU,
    );
    match r {
        Err(Error::KernelPanic { message, .. }) => {
            assert!(message.contains("output_rows"), "{message}")
        }
        other => panic!("expected a kernel panic, got {other:?}"),
    }
}

/// The same kernel untiled counts rows of work-groups and gives whole
/// rows; `with_tiles` changes what a unit is.
#[test]
fn untiled_kernels_keep_rows_of_work_groups() {
    let Some(e) = zero_copy() else { return };
    let k = e
        .kernel_glsl("tiles-untiled", common::IMG_GLSL, None)
        .unwrap();
    let space = IndexSpace::D2 {
        width: 45,
        height: 29,
    };
    assert!(!k.takes_tiles());
    assert_eq!(k.units(space).unwrap(), 8);
    assert_eq!(k.with_tiles().units(space).unwrap(), 48);
}

/// The GPU's limit on work-groups per dispatch applies to each axis: a
/// tiled run of more work-groups than the limit, in rows and columns each
/// within it, still runs on the GPU.
#[cfg(feature = "test-hooks")]
#[test]
fn dispatch_limits_count_rows_of_work_groups() {
    let Some(e) = common::engine_placed(MemoryPlacement::ZeroCopy, 2) else {
        return;
    };
    if e.gpu_count() == 0 {
        return;
    }
    e.cap_dispatch_groups(1, 12);
    let ran = Arc::new(AtomicU64::new(0));
    let (w, h) = (96u32, 48u32); // 12 x 12 work-groups: 144 units
    let k = img_kernel(&e, w, ran.clone(), Duration::ZERO);
    let r = run_checked(&e, &k, &ran, w, h, &Scheduler::hguided(), Devices::GPU);
    assert_eq!(
        r.devices
            .iter()
            .find(|d| d.kind == DeviceKind::Gpu)
            .unwrap()
            .items,
        u64::from(w * h)
    );
}

/// Sub-ranges of a tiled space cut inside rows of work-groups: each runs
/// its work-groups once, at their place, and its report counts its items.
#[test]
fn tiled_sub_ranges_cut_inside_rows() {
    let Some(e) = zero_copy() else { return };
    let ran = Arc::new(AtomicU64::new(0));
    let (w, h) = (45u32, 29u32); // 6 x 8 work-groups, clipped on both axes
    let k = img_kernel(&e, w, ran.clone(), Duration::ZERO);
    let space = IndexSpace::D2 {
        width: w,
        height: h,
    };
    let data = common::input((w * h) as usize, 5);
    let want = common::img_ref(&data, w);
    let x = e.buffer_from_slice(&data).unwrap();
    let mut o = e.buffer::<u32>(want.len()).unwrap();
    let cuts = [0u64, 1, 5, 13, 14, 30, 48];
    let mut total = 0;
    for c in cuts.windows(2) {
        let r = e
            .run_range(
                &k,
                Args::new()
                    .input(&x)
                    .output_per_item(&mut o, 2)
                    .push(&[w, h]),
                space,
                c[0]..c[1],
                &Scheduler::hguided(),
                Devices::ALL,
            )
            .unwrap();
        // Each work-group's items: 8 x 4, less what the space clips.
        let items: u64 = (c[0]..c[1])
            .map(|g| {
                let (gx, gy) = (g % 6, g / 6);
                let cols = (u64::from(w) - gx * 8).min(8);
                let rows = (u64::from(h) - gy * 4).min(4);
                cols * rows
            })
            .sum();
        assert_eq!(r.items, items, "{c:?}");
        total += r.items;
    }
    assert_eq!(total, u64::from(w * h));
    assert_eq!(&o[..], &want[..]);
}

/// `o[k] += x[k] ^ y`: a read-write output, so a package reads what the
/// last run left in its items.
const ACC_GLSL: &str = "#version 450
layout(local_size_x = 8, local_size_y = 4) in;
layout(std430, binding = 0) readonly buffer X { uint x[]; };
layout(std430, binding = 1) buffer O { uint o[]; };
layout(push_constant) uniform P { uint w; uint h; } p;
void main() {
    uvec2 g = gl_GlobalInvocationID.xy;
    if (g.x >= p.w || g.y >= p.h) return;
    uint k = g.y * p.w + g.x;
    o[k] += x[k] ^ g.y;
}";

/// Staged memory with lazy host coherence: what the GPU wrote in one run
/// stays in its mirror, and a CPU tile of the next run brings back its own
/// items before reading them. Runs that split rows between the devices
/// accumulate into one output without reading it in between; the sum is
/// the reference's.
#[test]
fn lazy_runs_split_inside_rows_accumulate_exactly() {
    let Some(e) = common::engine_from(coexec::EngineOptions {
        workers: Some(2),
        validation: coexec::Validation::IfAvailable,
        profiles: false,
        memory: MemoryPlacement::Staged,
        host_coherence: coexec::HostCoherence::Lazy,
        ..Default::default()
    }) else {
        return;
    };
    let (w, h) = (80u32, 24u32); // 10 x 6 work-groups
    let cpu = Arc::new(move |p: &Package, a: &mut CpuArgs<'_>| {
        let x = a.input::<u32>(0);
        for (gy, o) in a.output_rows::<u32>(1) {
            for (j, gx) in p.cols.clone().enumerate() {
                let k = (gy * w + gx) as usize;
                o[j] = o[j].wrapping_add(x[k] ^ gy);
            }
        }
        std::thread::sleep(Duration::from_micros(300));
    });
    let k = e
        .kernel_glsl("tiles-acc", ACC_GLSL, Some(cpu))
        .unwrap()
        .with_tiles();
    let data = common::input((w * h) as usize, 9);
    let start = common::input((w * h) as usize, 4);
    let x = e.buffer_from_slice(&data).unwrap();
    let mut o = e.buffer_from_slice(&start).unwrap();
    let runs = 4u32;
    for i in 0..runs {
        let sched = match i % 2 {
            0 => Scheduler::Static { powers: None },
            _ => Scheduler::Dynamic { packages: 7 },
        };
        e.run(
            &k,
            Args::new().input(&x).output(&mut o).push(&[w, h]),
            IndexSpace::D2 {
                width: w,
                height: h,
            },
            &sched,
            Devices::ALL,
        )
        .unwrap();
    }
    let want: Vec<u32> = (0..(w * h) as usize)
        .map(|k| {
            let gy = k as u32 / w;
            start[k].wrapping_add((data[k] ^ gy).wrapping_mul(runs))
        })
        .collect();
    assert_eq!(&o[..], &want[..]);
    common::assert_validation_clean(&e);
}
