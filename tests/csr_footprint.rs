//! [`Footprint::Offsets`]: a CSR matrix's column indices and values are
//! read by rows through a row pointer, so a staged GPU package uploads
//! only its rows of them. Checked on lavapipe with staging forced: the
//! product against a host reference, the upload bytes against the rows
//! the GPU ran (exactly), the fallback to the whole buffer where the row
//! pointer's host copy is stale, and the typed errors of a bad declaration.

// Kernels here are GLSL compiled at run time.
#![cfg(feature = "glsl")]

mod common;

use common::{gpu_items, upload_bytes};

use coexec::{
    Args, Buffer, CpuArgs, Devices, Engine, EngineOptions, Error, Footprint, HostCoherence,
    IndexSpace, Kernel, MemoryPlacement, Package, Report, Scheduler,
};
use std::sync::{Arc, OnceLock};

fn engine_of(host_coherence: HostCoherence) -> Option<Engine> {
    common::engine_from(EngineOptions {
        workers: Some(2),
        validation: coexec::Validation::IfAvailable,
        profiles: false,
        memory: MemoryPlacement::Staged,
        host_coherence,
        ..Default::default()
    })
}

/// The staged engine, eager host coherence.
fn staged() -> Option<Engine> {
    static E: OnceLock<Option<Engine>> = OnceLock::new();
    E.get_or_init(|| engine_of(HostCoherence::Eager)).clone()
}

/// The staged engine with lazy host coherence (GPU results stay in the
/// mirrors until read).
fn lazy() -> Option<Engine> {
    static E: OnceLock<Option<Engine>> = OnceLock::new();
    E.get_or_init(|| {
        let e = engine_of(HostCoherence::Lazy)?;
        (e.host_coherence() == HostCoherence::Lazy).then_some(e)
    })
    .clone()
}

/// `y[i] = sum over k in rows i of vals[k] * x[cols[k]]` (wrapping), one
/// row per item; `y` writeonly.
const CSR_GLSL: &str = "#version 450
layout(local_size_x = 8) in;
layout(std430, binding = 0) readonly buffer R { uint row_ptr[]; };
layout(std430, binding = 1) readonly buffer C { uint cols[]; };
layout(std430, binding = 2) readonly buffer V { uint vals[]; };
layout(std430, binding = 3) readonly buffer X { uint x[]; };
layout(std430, binding = 4) writeonly buffer Y { uint y[]; };
layout(push_constant) uniform P { uint n; } p;
void main() {
    uint i = gl_GlobalInvocationID.x;
    if (i >= p.n) return;
    uint s = 0u;
    for (uint k = row_ptr[i]; k < row_ptr[i + 1u]; k++) { s += vals[k] * x[cols[k]]; }
    y[i] = s;
}";

/// Row `i` of the product (`m`: the row pointer, columns and values).
fn csr_row(m: (&[u32], &[u32], &[u32]), x: &[u32], i: usize) -> u32 {
    let (row_ptr, cols, vals) = m;
    (row_ptr[i] as usize..row_ptr[i + 1] as usize).fold(0u32, |s, k| {
        s.wrapping_add(vals[k].wrapping_mul(x[cols[k] as usize]))
    })
}

fn csr_kernel(e: &Engine) -> Kernel {
    let cpu = Arc::new(|p: &Package, a: &mut CpuArgs<'_>| {
        let (row_ptr, cols, vals, x) = (
            a.input::<u32>(0),
            a.input::<u32>(1),
            a.input::<u32>(2),
            a.input::<u32>(3),
        );
        let y = a.output::<u32>(4);
        for (j, i) in p.items.clone().enumerate() {
            y[j] = csr_row((row_ptr, cols, vals), x, i as usize);
        }
    });
    e.kernel_glsl("csr-footprint", CSR_GLSL, Some(cpu)).unwrap()
}

/// A host CSR matrix: rows of 0 to 11 entries.
struct Csr {
    row_ptr: Vec<u32>,
    cols: Vec<u32>,
    vals: Vec<u32>,
}

fn matrix(n: usize) -> Csr {
    let mut m = Csr {
        row_ptr: vec![0],
        cols: Vec::new(),
        vals: Vec::new(),
    };
    for i in 0..n {
        for k in 0..(i * 7 + 3) % 12 {
            m.cols.push(((i * 31 + k * 17) % n) as u32);
            m.vals.push((i + 3 * k + 1) as u32);
        }
        m.row_ptr.push(m.cols.len() as u32);
    }
    m
}

/// The matrix and `x` in buffers of `e`, and `y`.
struct Operands {
    row_ptr: Buffer<u32>,
    cols: Buffer<u32>,
    vals: Buffer<u32>,
    x: Buffer<u32>,
    y: Buffer<u32>,
}

fn operands(e: &Engine, m: &Csr, x: &[u32]) -> Operands {
    Operands {
        row_ptr: e.buffer_from_slice(&m.row_ptr).unwrap(),
        cols: e.buffer_from_slice(&m.cols).unwrap(),
        vals: e.buffer_from_slice(&m.vals).unwrap(),
        x: e.buffer_from_slice(x).unwrap(),
        y: e.buffer::<u32>(x.len()).unwrap(),
    }
}

/// One run over `n` rows, the columns and values read by rows.
fn run(e: &Engine, k: &Kernel, o: &mut Operands, sched: &Scheduler) -> coexec::Result<Report> {
    run_on(e, k, o, sched, Devices::ALL)
}

/// [`run`] on `devices`.
fn run_on(
    e: &Engine,
    k: &Kernel,
    o: &mut Operands,
    sched: &Scheduler,
    devices: Devices,
) -> coexec::Result<Report> {
    let n = o.x.len() as u32;
    let args = Args::new()
        .input(&o.row_ptr)
        .input(&o.cols)
        .footprint(Footprint::Offsets {
            binding: 0,
            per_item: 1,
        })
        .input(&o.vals)
        .footprint(Footprint::Offsets {
            binding: 0,
            per_item: 1,
        })
        .input(&o.x)
        .output(&mut o.y)
        .push(&n);
    e.run(k, args, IndexSpace::D1(u64::from(n)), sched, devices)
}

fn check(o: &Operands, m: &Csr, x: &[u32]) {
    assert_eq!(o.y.len(), x.len());
    for (i, &y) in o.y.as_slice().iter().enumerate() {
        assert_eq!(y, csr_row((&m.row_ptr, &m.cols, &m.vals), x, i), "row {i}");
    }
}

#[test]
fn a_staged_gpu_uploads_only_its_rows_of_the_columns_and_values() {
    let Some(e) = staged() else { return };
    let n = 600;
    let m = matrix(n);
    let x: Vec<u32> = (0..n as u32).map(|i| i * 5 + 1).collect();
    let k = csr_kernel(&e);
    // Half each, then as dynamic packages (the GPU's rows in pieces).
    for sched in [
        Scheduler::Static {
            powers: Some(vec![0.5, 0.5]),
        },
        Scheduler::Dynamic { packages: 15 },
    ] {
        // Dynamic packages go to whichever device claims first: on a
        // loaded two-core machine the GPU may take all fifteen before the
        // one worker starts, so a run where it did is tried again (its
        // bytes checked all the same) before the GPU's rows must be part.
        common::retried(5, || {
            let mut o = operands(&e, &m, &x);
            let r = run(&e, &k, &mut o, &sched).unwrap();
            check(&o, &m, &x);
            let rows = gpu_items(&r);
            let nnz: u64 = rows
                .iter()
                .map(|r| u64::from(m.row_ptr[r.end as usize] - m.row_ptr[r.start as usize]))
                .sum();
            if rows.is_empty() {
                return Ok(());
            }
            // The row pointer and x whole, the GPU's rows of cols and vals:
            // every byte once.
            let want = 4 * (n as u64 + 1) + 4 * n as u64 + 2 * 4 * nnz;
            assert_eq!(upload_bytes(&r), want, "{sched:?}: GPU rows {rows:?}");
            match nnz < m.cols.len() as u64 {
                true => Ok(()),
                false => Err(format!("{sched:?}: the GPU ran every row")),
            }
        });
    }
    common::assert_validation_clean(&e);
}

/// `row_ptr[i] = i * 2` (the offsets of rows of two entries each),
/// written by the GPU.
const OFFSETS_GLSL: &str = "#version 450
layout(local_size_x = 8) in;
layout(std430, binding = 0) writeonly buffer R { uint row_ptr[]; };
layout(push_constant) uniform P { uint n; } p;
void main() {
    uint i = gl_GlobalInvocationID.x;
    if (i <= p.n) { row_ptr[i] = i * 2u; }
}";

#[test]
fn stale_offsets_on_the_host_upload_the_whole_buffer() {
    let Some(e) = lazy() else { return };
    let n = 200usize;
    // The row pointer computed by the GPU alone: its host copy stale.
    let offsets = e.kernel_glsl("csr-offsets", OFFSETS_GLSL, None).unwrap();
    let mut row_ptr = e.buffer::<u32>(n + 1).unwrap();
    let space = IndexSpace::D1(n as u64 + 1);
    e.run(
        &offsets,
        Args::new().output(&mut row_ptr).push(&(n as u32)),
        space,
        &Scheduler::Static { powers: None },
        Devices::GPU,
    )
    .unwrap();
    let m = Csr {
        row_ptr: (0..=n as u32).map(|i| i * 2).collect(),
        cols: (0..2 * n as u32).map(|k| (k * 7) % n as u32).collect(),
        vals: (0..2 * n as u32).map(|k| k + 1).collect(),
    };
    let x: Vec<u32> = (0..n as u32).map(|i| i + 2).collect();
    let mut o = operands(&e, &m, &x);
    o.row_ptr = row_ptr;
    let k = csr_kernel(&e);
    // The GPU alone: nothing syncs the row pointer's host copy, so the
    // columns and values come up whole (and x; the row pointer is
    // resident), in two packages.
    let sched = Scheduler::Dynamic { packages: 2 };
    let r = run_on(&e, &k, &mut o, &sched, Devices::GPU).unwrap();
    check(&o, &m, &x);
    assert_eq!(gpu_items(&r).len(), 2, "{:?}", r.packages);
    assert_eq!(upload_bytes(&r), 2 * 4 * 2 * n as u64 + 4 * n as u64);
    common::assert_validation_clean(&e);
}

#[test]
fn bad_offsets_footprints_are_typed_errors() {
    let Some(e) = staged() else { return };
    let n = 16usize;
    let m = matrix(n);
    let x = vec![1u32; n];
    let k = csr_kernel(&e);
    let mut o = operands(&e, &m, &x);
    let short = e.buffer::<u32>(n).unwrap();
    let wide = e.buffer::<u64>(n + 1).unwrap();
    let sched = Scheduler::Static { powers: None };
    let space = IndexSpace::D1(n as u64);
    let offsets = |binding, per_item| Footprint::Offsets { binding, per_item };
    let mut attempt = |row_ptr: Option<&Buffer<u32>>, wide_ptr: bool, f: Footprint| {
        let args = match (row_ptr, wide_ptr) {
            (_, true) => Args::new().input(&wide),
            (Some(b), false) => Args::new().input(b),
            (None, false) => Args::new().input(&o.row_ptr),
        };
        let args = args
            .input(&o.cols)
            .footprint(f)
            .input(&o.vals)
            .input(&o.x)
            .output(&mut o.y)
            .push(&(n as u32));
        e.run(&k, args, space, &sched, Devices::ALL)
    };
    for (what, r) in [
        ("no such argument", attempt(None, false, offsets(9, 1))),
        ("itself", attempt(None, false, offsets(1, 1))),
        ("an output", attempt(None, false, offsets(4, 1))),
        ("0 per offset", attempt(None, false, offsets(0, 0))),
        ("8-byte offsets", attempt(None, true, offsets(0, 1))),
        (
            "too few offsets",
            attempt(Some(&short), false, offsets(0, 1)),
        ),
    ] {
        assert!(
            matches!(r, Err(Error::Footprint { binding: 1, .. })),
            "{what}: {r:?}"
        );
    }
    // As an output's footprint: refused (an output's is its own items).
    let r = e.run(
        &k,
        Args::new()
            .input(&o.row_ptr)
            .input(&o.cols)
            .input(&o.vals)
            .input(&o.x)
            .output(&mut o.y)
            .footprint(offsets(0, 1))
            .push(&(n as u32)),
        space,
        &sched,
        Devices::ALL,
    );
    assert!(
        matches!(r, Err(Error::Footprint { binding: 4, .. })),
        "{r:?}"
    );
}
