//! `coexec reduce`: what a reduction output costs against the same kernel
//! as a map, and what separates two consecutive runs.
//!
//! The kernel: each work-item adds the products of 4 consecutive elements
//! of two vectors (`x[j] * y[j]`). As a map it writes that value (one float
//! per work-item); as a reduction each work-group sums its values in shared
//! memory (`coexec_reduce.glsl`) and writes one partial, which the engine
//! combines. Both are verified; each figure is the median of `--reps` runs.

use crate::args::Given;
use crate::open_engine;
use coexec::error::chain;
use coexec::{Args, CpuArgs, Devices, Engine, IndexSpace, Kernel, Package, Reduction, Scheduler};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

#[derive(clap::Args)]
pub(crate) struct ReduceArgs {
    /// Elements (log2); the index space has a quarter as many work-items.
    #[arg(long, default_value_t = 24)]
    log2: u32,
    /// static, dynamic:M, hguided (or hguided:k=K,min=M).
    #[arg(long, default_value = "hguided")]
    scheduler: Given<Scheduler>,
    /// cpu, gpu, cpu,gpu or all.
    #[arg(long, default_value = "all")]
    devices: Given<Devices>,
    /// CPU workers (default: one per physical core left by the GPU).
    #[arg(long)]
    pub(crate) workers: Option<usize>,
    /// Timed runs of each variant (after 2 warm-ups); the median is reported.
    #[arg(long, default_value_t = 9)]
    reps: usize,
}

const PER_ITEM: usize = 4;

const GLSL: &str = "#version 450
#extension GL_KHR_shader_subgroup_arithmetic : require
layout(local_size_x = 256) in;
#include \"coexec_reduce.glsl\"
COEXEC_DEFINE_REDUCE(group_sum, float, COEXEC_SUM)
COEXEC_DEFINE_REDUCE_SUBGROUP(group_sum_sg, float, subgroupAdd, COEXEC_SUM)
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer Y { float y[]; };
layout(std430, binding = 2) writeonly buffer O { float o[]; };
layout(push_constant) uniform Push { uint n; } p;
void main() {
    float v = 0.0;
    uint i = gl_GlobalInvocationID.x * 4u;
    for (uint j = i; j < min(i + 4u, p.n); j++) v += x[j] * y[j];
    STORE
}";

const MAP: &str = "if (gl_GlobalInvocationID.x * 4u < p.n) o[gl_GlobalInvocationID.x] = v;";
const REDUCE: &str =
    "float s = group_sum(v); if (gl_LocalInvocationIndex == 0u) o[coexec_slot(1u)] = s;";
const REDUCE_SUBGROUP: &str =
    "float s = group_sum_sg(v); if (gl_LocalInvocationIndex == 0u) o[coexec_slot(1u)] = s;";

fn item(x: &[f32], y: &[f32], i: usize) -> f32 {
    let (a, b) = (i * PER_ITEM, ((i + 1) * PER_ITEM).min(x.len()));
    x[a..b].iter().zip(&y[a..b]).map(|(x, y)| x * y).sum()
}

/// The elements of the work-items `items`: `[a, b)` of `x` and `y`.
fn elements(items: &std::ops::Range<u64>, len: usize) -> std::ops::Range<usize> {
    let a = (items.start as usize * PER_ITEM).min(len);
    a..(items.end as usize * PER_ITEM).min(len)
}

fn cpu_map(pkg: &Package, args: &mut CpuArgs<'_>) {
    let (x, y) = (args.input::<f32>(0), args.input::<f32>(1));
    let e = elements(&pkg.items, x.len());
    let pairs = x[e.clone()].chunks(PER_ITEM).zip(y[e].chunks(PER_ITEM));
    for (o, (x, y)) in args.output::<f32>(2).iter_mut().zip(pairs) {
        // The products summed in order, as `item` does.
        *o = x.iter().zip(y).map(|(x, y)| x * y).sum();
    }
}

/// Independent f32 sums the CPU reduction keeps (a vector register's
/// worth twice over): one chain of dependent adds would be slower than the
/// map's independent stores.
const LANES: usize = 16;

/// Elements summed in f32 lanes before their total is added in f64, so
/// that the f32 sums stay short whatever the package's size.
const CHUNK: usize = 4096;

/// The sum of `x[i] * y[i]`: each chunk of [`CHUNK`] elements in [`LANES`]
/// f32 sums, the chunks' totals in f64.
fn dot(x: &[f32], y: &[f32]) -> f64 {
    let chunk = |(x, y): (&[f32], &[f32])| {
        let mut lanes = [0.0f32; LANES];
        let (xs, ys) = (x.chunks_exact(LANES), y.chunks_exact(LANES));
        let tail: f32 = xs
            .remainder()
            .iter()
            .zip(ys.remainder())
            .map(|(a, b)| a * b)
            .sum();
        for (a, b) in xs.zip(ys) {
            for k in 0..LANES {
                lanes[k] += a[k] * b[k];
            }
        }
        lanes.iter().map(|&v| f64::from(v)).sum::<f64>() + f64::from(tail)
    };
    x.chunks(CHUNK).zip(y.chunks(CHUNK)).map(chunk).sum()
}

fn cpu_reduce(pkg: &Package, args: &mut CpuArgs<'_>) {
    let (x, y) = (args.input::<f32>(0), args.input::<f32>(1));
    let e = elements(&pkg.items, x.len());
    args.accumulator::<f32>(2)[0] += dot(&x[e.clone()], &y[e]) as f32;
}

/// The map, the reduction with the canonical helper, and the reduction
/// with the subgroup helper.
fn kernels(e: &Engine) -> Result<[Kernel; 3], String> {
    let k = |name: &str, store: &str, cpu: Arc<coexec::CpuFn>| {
        e.kernel_glsl(name, &GLSL.replace("STORE", store), Some(cpu))
            .map_err(|e| chain(&e))
    };
    Ok([
        k("map", MAP, Arc::new(cpu_map))?,
        k("reduce", REDUCE, Arc::new(cpu_reduce))?,
        k("reduce_subgroup", REDUCE_SUBGROUP, Arc::new(cpu_reduce))?,
    ])
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Runs `run` 2 + reps times; the median wall time of the timed ones.
fn timed(reps: usize, mut run: impl FnMut() -> Result<(), String>) -> Result<f64, String> {
    let mut t = Vec::with_capacity(reps);
    for r in 0..reps + 2 {
        let start = Instant::now();
        run()?;
        if r >= 2 {
            t.push(start.elapsed().as_secs_f64());
        }
    }
    Ok(median(t))
}

pub(crate) fn reduce(a: ReduceArgs) -> Result<ExitCode, String> {
    // Measured over zero-copy memory (staged memory reduces too, with
    // transfers this comparison leaves out).
    let engine = open_engine(
        a.workers,
        coexec::MemoryPlacement::ZeroCopy,
        coexec::GpuChoice::default(),
        coexec::Objective::Time,
        coexec::CpuImpl::Native,
    )?;
    let n = 1usize << a.log2.min(31);
    let items = n.div_ceil(PER_ITEM);
    let [map, red, red_sg] = kernels(&engine)?;
    let xs: Vec<f32> = (0..n).map(|i| 0.5 + (i % 1000) as f32 / 1000.0).collect();
    let ys: Vec<f32> = (0..n).map(|i| 1.5 - (i % 777) as f32 / 777.0).collect();
    let x = engine.buffer_from_slice(&xs).map_err(|e| chain(&e))?;
    let y = engine.buffer_from_slice(&ys).map_err(|e| chain(&e))?;
    let mut out = engine.buffer::<f32>(items).map_err(|e| chain(&e))?;
    let reference: f64 = (0..items).map(|i| f64::from(item(&xs, &ys, i))).sum();
    let (space, sched, devices) = (
        IndexSpace::D1(items as u64),
        &a.scheduler.value,
        a.devices.value,
    );
    let push = n as u32;
    let fail = |e: coexec::Error| chain(&e);
    let map_s = timed(a.reps, || {
        let args = Args::new().input(&x).input(&y).output(&mut out).push(&push);
        engine
            .run(&map, args, space, sched, devices)
            .map(drop)
            .map_err(fail)
    })?;
    let map_sum: f64 = out.iter().map(|v| f64::from(*v)).sum();
    let mut sums = Vec::new();
    let mut variant = |red: &Kernel, det: bool| {
        let mut r = Reduction::<f32>::sum(1).deterministic(det);
        let s = timed(a.reps, || {
            let args = Args::new().input(&x).input(&y).reduce(&mut r).push(&push);
            engine
                .run(red, args, space, sched, devices)
                .map(drop)
                .map_err(fail)
        });
        sums.push(f64::from(r.scalar()));
        s
    };
    let red_s = variant(&red, false)?;
    let sg_s = variant(&red_sg, false)?;
    let det_s = variant(&red, true)?;
    // Back to back: a one-work-group run, timed from outside and inside.
    let (mut wall, mut inside) = (Vec::new(), Vec::new());
    let mut r = Reduction::<f32>::sum(1);
    for k in 0..a.reps.max(1) * 20 + 5 {
        let start = Instant::now();
        let args = Args::new().input(&x).input(&y).reduce(&mut r).push(&push);
        let rep = engine
            .run(&red, args, IndexSpace::D1(256), sched, devices)
            .map_err(fail)?;
        if k >= 5 {
            wall.push(start.elapsed().as_secs_f64());
            inside.push(rep.time_s);
        }
    }
    println!(
        "device: {}, CPU workers: {}, {n} elements ({items} work-items), {} on {}",
        engine.device_info().name,
        engine.workers(),
        a.scheduler.text,
        a.devices.text
    );
    println!("map:                     {:9.3} ms", map_s * 1e3);
    println!(
        "reduction:               {:9.3} ms  ({:+.1}% against the map)",
        red_s * 1e3,
        (red_s / map_s - 1.0) * 100.0
    );
    println!(
        "reduction, subgroups:    {:9.3} ms  ({:+.1}%)",
        sg_s * 1e3,
        (sg_s / map_s - 1.0) * 100.0
    );
    println!(
        "reduction, deterministic:{:9.3} ms  ({:+.1}%)",
        det_s * 1e3,
        (det_s / map_s - 1.0) * 100.0
    );
    let (w, i) = (median(wall), median(inside));
    println!("one-group run back to back: {:.1} us per call, {:.1} us of it inside the run, {:.1} us around it", w * 1e6, i * 1e6, (w - i) * 1e6);
    let bad = [map_sum, sums[0], sums[1], sums[2]]
        .iter()
        .any(|s| (s - reference).abs() > 1e-4 * reference);
    if bad {
        eprintln!(
            "coexec reduce: results {map_sum}, {:?} differ from {reference}",
            sums
        );
        return Ok(ExitCode::FAILURE);
    }
    println!("verified");
    Ok(ExitCode::SUCCESS)
}
