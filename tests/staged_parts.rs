//! Staged memory with argument footprints ([`Footprint`]): a GPU package
//! uploads only the part of each argument it reads that the mirror does not
//! hold, and mirrors stay current across co-executed runs (what the GPU
//! wrote stays valid in the mirror, what the CPU wrote is valid on the host
//! only). Checked on lavapipe with staging forced, against a host reference
//! and against a model of the mirrors' valid rows built from the package
//! log: the report's upload bytes must equal the model's exactly (every
//! byte moved once, nothing resident moved again).

// Kernels here are GLSL compiled at run time.
#![cfg(feature = "glsl")]

mod common;

use common::{gpu_items, gpu_own_items, upload_bytes};

use coexec::{
    Args, Buffer, CpuArgs, Devices, Engine, EngineOptions, Error, Footprint, IndexSpace, Kernel,
    MemoryPlacement, Package, Report, Scheduler,
};
use proptest::prelude::*;
use std::ops::Range;
use std::sync::{Arc, OnceLock};

/// The shared staged engine (two CPU workers, so that they steal).
fn staged() -> Option<Engine> {
    static E: OnceLock<Option<Engine>> = OnceLock::new();
    E.get_or_init(|| {
        common::engine_from(EngineOptions {
            workers: Some(2),
            validation: coexec::Validation::IfAvailable,
            pipeline_cache_dir: Some(std::env::temp_dir().join("coexec-test-pipeline-cache")),
            profiles: false,
            memory: MemoryPlacement::Staged,
            ..Default::default()
        })
    })
    .clone()
}

/// A 5-point integer stencil (clamped at the edges), `o` writeonly:
/// each item reads its row and the rows above and below.
const STENCIL_GLSL: &str = "#version 450
layout(local_size_x = 8, local_size_y = 4) in;
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
    uint c = x[g.y * p.w + g.x];
    o[g.y * p.w + g.x] = c * 3u + x[up * p.w + g.x] + x[dn * p.w + g.x]
        + (x[g.y * p.w + lf] ^ x[g.y * p.w + rt]);
}";

/// One output element of the stencil over `x` (`w` x `h`).
fn stencil_at(x: &[u32], w: usize, h: usize, gx: usize, gy: usize) -> u32 {
    let (up, dn) = (gy.saturating_sub(1), (gy + 1).min(h - 1));
    let (lf, rt) = (gx.saturating_sub(1), (gx + 1).min(w - 1));
    let c = x[gy * w + gx];
    c.wrapping_mul(3)
        .wrapping_add(x[up * w + gx])
        .wrapping_add(x[dn * w + gx])
        .wrapping_add(x[gy * w + lf] ^ x[gy * w + rt])
}

fn stencil_ref(x: &[u32], w: usize, h: usize) -> Vec<u32> {
    (0..w * h)
        .map(|k| stencil_at(x, w, h, k % w, k / w))
        .collect()
}

fn stencil_kernel(e: &Engine, w: u32, h: u32) -> Kernel {
    let cpu = Arc::new(move |p: &Package, a: &mut CpuArgs<'_>| {
        let x = a.input::<u32>(0);
        let o = a.output::<u32>(1);
        for (j, k) in p.items.clone().enumerate() {
            let (gx, gy) = (k as usize % w as usize, k as usize / w as usize);
            o[j] = stencil_at(x, w as usize, h as usize, gx, gy);
        }
    });
    e.kernel_glsl("parts-stencil", STENCIL_GLSL, Some(cpu))
        .unwrap()
}

/// The items a package of items `items` reads under `fp` (1-D) in an input
/// of `n`.
fn footprint_of(fp: Footprint, items: Range<usize>, n: usize) -> Range<usize> {
    match fp {
        Footprint::Items { .. } => items,
        Footprint::Halo { halo, .. } => {
            items.start.saturating_sub(halo as usize)..(items.end + halo as usize).min(n)
        }
        _ => 0..n,
    }
}

/// 1 where GPU runs download their outputs before returning (eager host
/// coherence, unless `COEXEC_HOST_COHERENCE=lazy`: tests/lazy.rs), else 0.
fn eager(e: &Engine) -> u64 {
    u64::from(e.host_coherence() == coexec::HostCoherence::Eager)
}

fn download_bytes(r: &Report) -> u64 {
    r.devices.iter().map(|d| d.transfers.download_bytes).sum()
}

/// A model of one mirror: which rows (or items) it holds valid.
#[derive(Clone)]
struct Valid(Vec<bool>);

impl Valid {
    /// Marks `r` valid; the number of entries that were not.
    fn fill(&mut self, r: Range<usize>) -> u64 {
        let mut n = 0;
        for v in &mut self.0[r] {
            n += u64::from(!*v);
            *v = true;
        }
        n
    }

    /// After a run that wrote every entry: valid exactly where the GPU
    /// wrote (`gpu`).
    fn written(&mut self, gpu: &[Range<usize>]) {
        self.0.iter_mut().for_each(|v| *v = false);
        for r in gpu {
            self.fill(r.clone());
        }
    }
}

/// Runs `sweeps` stencil sweeps ping-ponging between two buffers, each
/// checked against the reference, and checks every sweep's upload bytes
/// against the row model; returns the reports.
fn sweep(
    e: &Engine,
    w: u32,
    h: u32,
    sched: &Scheduler,
    devices: Devices,
    sweeps: usize,
) -> Vec<Report> {
    let (wu, hu) = (w as usize, h as usize);
    let k = stencil_kernel(e, w, h);
    let mut host = common::input(wu * hu, 7);
    let mut bufs: [Buffer<u32>; 2] = [
        e.buffer_from_slice(&host).unwrap(),
        e.buffer::<u32>(wu * hu).unwrap(),
    ];
    let mut valid = [Valid(vec![false; hu]), Valid(vec![false; hu])];
    let mut reports = Vec::new();
    for s in 0..sweeps {
        let (i, o) = (s % 2, 1 - s % 2);
        let [a, b] = &mut bufs;
        let (x, out) = if i == 0 { (&*a, b) } else { (&*b, a) };
        let r = e
            .run(
                &k,
                Args::new()
                    .input(x)
                    .footprint(Footprint::rows(1))
                    .output(out)
                    .push(&[w, h]),
                IndexSpace::D2 {
                    width: w,
                    height: h,
                },
                sched,
                devices,
            )
            .unwrap();
        host = stencil_ref(&host, wu, hu);
        assert_eq!(bufs[o].as_slice(), &host[..], "sweep {s}");
        // The model: each GPU package uploads its rows +-1 not yet valid.
        let rows: Vec<Range<usize>> = gpu_items(&r)
            .iter()
            .map(|it| it.start as usize / wu..it.end as usize / wu)
            .collect();
        let mut want = 0;
        for rr in &rows {
            let widened = rr.start.saturating_sub(1)..(rr.end + 1).min(hu);
            want += valid[i].fill(widened) * u64::from(w) * 4;
        }
        // What it wrote itself is in the mirror (what it stole, on the
        // host only).
        let own: Vec<Range<usize>> = gpu_own_items(&r)
            .iter()
            .map(|it| it.start as usize / wu..it.end as usize / wu)
            .collect();
        valid[o].written(&own);
        assert_eq!(upload_bytes(&r), want, "sweep {s}: {:?}", rows);
        let gpu_rows: usize = own.iter().map(|r| r.len()).sum();
        let bytes = eager(e) * (gpu_rows * wu * 4) as u64;
        assert_eq!(download_bytes(&r), bytes, "sweep {s}");
        reports.push(r);
    }
    reports
}

/// Co-executed: after the first sweeps, each sweep uploads only the halo
/// rows the CPU wrote and the rows the split moved, never the GPU's own.
#[test]
fn a_coexecuted_stencil_uploads_only_halos_and_the_cpu_part() {
    let Some(e) = staged() else { return };
    let (w, h) = (40, 64);
    let sched = Scheduler::Static {
        powers: Some(vec![0.5, 0.5]),
    };
    let reports = sweep(&e, w, h, &sched, Devices::ALL, 6);
    // From the second sweep on, the GPU's input holds the rows the GPU
    // wrote in the sweep before: where the split did not move (stealing may
    // move it), only the halo rows come up, and on average well under half
    // the buffer.
    let whole = u64::from(w * h) * 4;
    let rows = |r: &Report| -> Vec<Range<u64>> { gpu_items(r) };
    let span = |v: Vec<Range<u64>>| {
        (
            v.iter().map(|r| r.start).min(),
            v.iter().map(|r| r.end).max(),
        )
    };
    let mut total = 0;
    for s in 1..reports.len() {
        let r = &reports[s];
        total += upload_bytes(r);
        let now = rows(r);
        let before = rows(&reports[s - 1]);
        let same = now.iter().map(|r| r.end - r.start).sum::<u64>()
            == before.iter().map(|r| r.end - r.start).sum::<u64>()
            && span(now) == span(before);
        if same {
            assert!(
                upload_bytes(r) <= 2 * u64::from(w) * 4,
                "sweep {s}: {}",
                upload_bytes(r)
            );
        }
    }
    assert!(total < whole / 2 * (reports.len() as u64 - 1), "{total}");
    common::assert_validation_clean(&e);
}

/// The GPU alone: once both buffers are resident, a sweep uploads nothing.
#[test]
fn a_gpu_alone_stencil_is_resident_after_the_first_sweep() {
    let Some(e) = staged() else { return };
    let reports = sweep(
        &e,
        24,
        36,
        &Scheduler::Static { powers: None },
        Devices::GPU,
        4,
    );
    assert_eq!(upload_bytes(&reports[0]), 24 * 36 * 4);
    for r in &reports[1..] {
        assert_eq!(upload_bytes(r), 0);
    }
}

/// Dynamic packages and work stealing move the split each sweep: the
/// uploads still match the model exactly.
#[test]
fn stencil_uploads_match_the_model_under_dynamic_splits() {
    let Some(e) = staged() else { return };
    for sched in [
        Scheduler::Dynamic { packages: 5 },
        Scheduler::HGuided {
            powers: Some(vec![0.3, 0.7]),
            k: 1.5,
            min_package: 1,
        },
    ] {
        sweep(&e, 16, 60, &sched, Devices::ALL, 4);
    }
}

/// Bad declarations are typed errors before anything runs.
#[test]
fn bad_footprints_are_typed_errors() {
    let Some(e) = staged() else { return };
    let k = stencil_kernel(&e, 4, 4);
    let x = e.buffer::<u32>(16).unwrap();
    let mut o = e.buffer::<u32>(16).unwrap();
    let space = IndexSpace::D2 {
        width: 4,
        height: 4,
    };
    let sched = Scheduler::Static { powers: None };
    let run = |args: Args<'_>| e.run(&k, args, space, &sched, Devices::ALL);
    let r = run(Args::new()
        .input(&x)
        .output(&mut o)
        .footprint(Footprint::Whole)
        .push(&[4u32, 4]));
    assert!(
        matches!(r, Err(Error::Footprint { binding: 1, .. })),
        "{r:?}"
    );
    let r = run(Args::new()
        .input(&x)
        .footprint(Footprint::Items { per_item: 0 })
        .output(&mut o)
        .push(&[4u32, 4]));
    assert!(
        matches!(r, Err(Error::Footprint { binding: 0, .. })),
        "{r:?}"
    );
    let r = run(Args::new()
        .input(&x)
        .footprint(Footprint::Halo {
            per_item: 2,
            halo: 1,
        })
        .output(&mut o)
        .push(&[4u32, 4]));
    assert!(
        matches!(
            r,
            Err(Error::BufferTooSmall {
                binding: 0,
                needed: 32,
                ..
            })
        ),
        "{r:?}"
    );
    // Restating an output's own items is fine.
    let r = run(Args::new()
        .input(&x)
        .output(&mut o)
        .footprint(Footprint::Items { per_item: 1 })
        .push(&[4u32, 4]));
    assert!(r.is_ok(), "{r:?}");
}

/// `o[i] = x[i] * 3 + i` (1-D; `o` writeonly).
const MAP_GLSL: &str = "#version 450
layout(local_size_x = 16) in;
layout(std430, binding = 0) readonly buffer X { uint x[]; };
layout(std430, binding = 1) writeonly buffer O { uint o[]; };
layout(push_constant) uniform P { uint n; } p;
void main() {
    uint i = gl_GlobalInvocationID.x;
    if (i < p.n) { o[i] = x[i] * 3u + i; }
}";

fn map_kernel(e: &Engine) -> Kernel {
    let cpu = Arc::new(move |p: &Package, a: &mut CpuArgs<'_>| {
        let x = a.input::<u32>(0);
        let o = a.output::<u32>(1);
        for (j, i) in p.items.clone().enumerate() {
            o[j] = x[i as usize].wrapping_mul(3).wrapping_add(i as u32);
        }
    });
    e.kernel_glsl("parts-map", MAP_GLSL, Some(cpu)).unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 16, ..ProptestConfig::default() })]

    /// Any footprint and any split (static, dynamic, guided; CPU workers
    /// and the GPU stealing): the output is the reference's, each byte the
    /// GPU needs is uploaded exactly once (the union of its packages'
    /// footprints), and each GPU package's items are downloaded once.
    #[test]
    fn prop_uploads_are_the_union_of_gpu_footprints(
        groups in 1u64..48,
        tail in 0u64..16,
        halo in 0u64..40,
        shape in 0u8..3,
        kind in 0u8..3,
        cpu_power in 0.05f64..0.95,
        seed in any::<u32>(),
    ) {
        let Some(e) = staged() else { return Ok(()) };
        let n = (groups * 16 + tail) as usize;
        let data = common::input(n, seed);
        let want: Vec<u32> = (0..n)
            .map(|i| data[i].wrapping_mul(3).wrapping_add(i as u32))
            .collect();
        let fp = match shape {
            0 => Footprint::Whole,
            1 => Footprint::Items { per_item: 1 },
            _ => Footprint::Halo { per_item: 1, halo },
        };
        let sched = match kind {
            0 => Scheduler::Static { powers: Some(vec![cpu_power, 1.0 - cpu_power]) },
            1 => Scheduler::Dynamic { packages: groups.min(9) },
            _ => Scheduler::HGuided { powers: Some(vec![cpu_power, 1.0 - cpu_power]), k: 1.5, min_package: 1 },
        };
        let x = e.buffer_from_slice(&data).unwrap();
        let mut o = e.buffer::<u32>(n).unwrap();
        let k = map_kernel(&e);
        let r = e
            .run(
                &k,
                Args::new().input(&x).footprint(fp).output(&mut o).push(&(n as u32)),
                IndexSpace::D1(n as u64),
                &sched,
                Devices::ALL,
            )
            .unwrap();
        prop_assert_eq!(o.as_slice(), &want[..]);
        let gpu = gpu_items(&r);
        let mut model = Valid(vec![false; n]);
        for it in &gpu {
            let (s, t) = (it.start as usize, it.end as usize);
            model.fill(footprint_of(fp, s..t, n));
        }
        let uploaded = model.0.iter().filter(|v| **v).count() as u64 * 4;
        prop_assert_eq!(upload_bytes(&r), uploaded, "{:?}", gpu);
        let own: u64 = gpu_own_items(&r).iter().map(|r| r.end - r.start).sum();
        prop_assert_eq!(download_bytes(&r), eager(&e) * own * 4);
        // Run again with nothing written by the host: the input is resident
        // where the GPU read it, and read again unchanged, so the next GPU
        // package uploads the rest of it at once (where the first run left
        // none of it resident, its packages upload what they read).
        let r2 = e
            .run(
                &k,
                Args::new().input(&x).footprint(fp).output(&mut o).push(&(n as u32)),
                IndexSpace::D1(n as u64),
                &sched,
                Devices::ALL,
            )
            .unwrap();
        prop_assert_eq!(o.as_slice(), &want[..]);
        let before = model.clone();
        let reused = before.0.iter().any(|v| *v);
        for it in &gpu_items(&r2) {
            let (s, t) = (it.start as usize, it.end as usize);
            model.fill(match reused {
                true => 0..n,
                false => footprint_of(fp, s..t, n),
            });
        }
        let more = model.0.iter().zip(&before.0).filter(|(a, b)| **a && !**b).count() as u64 * 4;
        prop_assert_eq!(upload_bytes(&r2), more);
    }
}

/// Failures (test hooks): a GPU that fails mid-run gives its packages back
/// or completes them, and each byte is still uploaded at most once and each
/// completed package downloaded once; the output is the reference's.
#[cfg(feature = "test-hooks")]
mod faults {
    use super::*;
    use coexec::hooks::{FaultInjection, GpuFault};
    use std::time::Duration;

    fn fresh() -> Option<Engine> {
        common::engine_from(EngineOptions {
            workers: Some(1),
            validation: coexec::Validation::IfAvailable,
            gpu_timeout: Duration::from_millis(300),
            profiles: false,
            memory: MemoryPlacement::Staged,
            ..Default::default()
        })
    }

    #[test]
    fn failed_gpus_transfer_each_byte_at_most_once() {
        let n = 16 * 600;
        for (fault, after_packages) in [
            (GpuFault::DeviceLost, 1),
            (GpuFault::SubmitError, 2),
            (GpuFault::HangThenLost, 1),
        ] {
            let Some(e) = fresh() else { return };
            e.inject_gpu_fault(FaultInjection {
                fault,
                after_packages,
            });
            let data = common::input(n, 3);
            let want: Vec<u32> = (0..n)
                .map(|i| data[i].wrapping_mul(3).wrapping_add(i as u32))
                .collect();
            let x = e.buffer_from_slice(&data).unwrap();
            let mut o = e.buffer::<u32>(n).unwrap();
            let k = map_kernel(&e);
            let r = e
                .run(
                    &k,
                    Args::new()
                        .input(&x)
                        .footprint(Footprint::Halo {
                            per_item: 1,
                            halo: 5,
                        })
                        .output(&mut o)
                        .push(&(n as u32)),
                    IndexSpace::D1(n as u64),
                    &Scheduler::Dynamic { packages: 30 },
                    Devices::ALL,
                )
                .unwrap();
            assert_eq!(o.as_slice(), &want[..], "{fault:?}");
            // Each input byte at most once, at least the GPU's done items.
            let gpu_done: u64 = gpu_items(&r).iter().map(|r| r.end - r.start).sum();
            assert!(upload_bytes(&r) <= n as u64 * 4, "{fault:?}");
            assert!(upload_bytes(&r) >= gpu_done * 4, "{fault:?}");
            // Lazy host coherence downloads a GPU's results at the run's
            // end only where it failed.
            let failed = r.devices.iter().any(|d| d.failure.is_some());
            let once = eager(&e).max(u64::from(failed));
            let own: u64 = gpu_own_items(&r).iter().map(|r| r.end - r.start).sum();
            assert_eq!(download_bytes(&r), once * own * 4, "{fault:?}");
            let total: u64 = r.devices.iter().map(|d| d.items).sum();
            assert_eq!(total, n as u64, "{fault:?}");
        }
    }
}

/// An input read again unchanged: the first run uploads the GPU's items of
/// it, the second the rest at once (a one-time transfer, so reported), the
/// third nothing; after the host writes it, the GPU's items again.
#[test]
fn an_input_read_again_unchanged_comes_up_whole_once() {
    let Some(e) = staged() else { return };
    let n = 4096usize;
    let k = map_kernel(&e);
    let mut x = e
        .buffer_from_slice(&(0..n as u32).collect::<Vec<_>>())
        .unwrap();
    let mut o = e.buffer::<u32>(n).unwrap();
    let sched = Scheduler::Static {
        powers: Some(vec![0.5, 0.5]),
    };
    let run = |x: &Buffer<u32>, o: &mut Buffer<u32>| {
        let r = e
            .run(
                &k,
                Args::new()
                    .input(x)
                    .footprint(Footprint::Items { per_item: 1 })
                    .output(o)
                    .push(&(n as u32)),
                IndexSpace::D1(n as u64),
                &sched,
                Devices::ALL,
            )
            .unwrap();
        let want: Vec<u32> = (0..n as u32)
            .map(|i| x[i as usize].wrapping_mul(3).wrapping_add(i))
            .collect();
        assert_eq!(o.as_slice(), &want[..]);
        r
    };
    let items = |r: &Report| -> u64 { gpu_items(r).iter().map(|g| g.end - g.start).sum() };
    let r1 = run(&x, &mut o);
    let first = items(&r1);
    if first == 0 || first == n as u64 {
        return; // The GPU took none or all of it: nothing partly resident.
    }
    assert!(!r1.one_time_transfer);
    assert_eq!(upload_bytes(&r1), first * 4);
    let r2 = run(&x, &mut o);
    if items(&r2) > 0 {
        assert!(r2.one_time_transfer);
        assert_eq!(upload_bytes(&r2), (n as u64 - first) * 4);
        let r3 = run(&x, &mut o);
        assert!(!r3.one_time_transfer);
        assert_eq!(upload_bytes(&r3), 0);
    }
    // Written by the host: what the GPU reads comes up by its items again.
    x.as_mut_slice()[0] = 7;
    let r4 = run(&x, &mut o);
    assert!(!r4.one_time_transfer);
    assert_eq!(upload_bytes(&r4), items(&r4) * 4);
    common::assert_validation_clean(&e);
}
