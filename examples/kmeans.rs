//! k-means co-executed on the CPU and the GPU: two kernels over the same
//! buffers each iteration, `assign` (a map: each point's nearest centroid)
//! and `update` (a reduction: per centroid, the sum of its points and their
//! count). Each kernel keeps what the scheduler learned about it from one
//! iteration to the next. Checked against a CPU reference; prints the time
//! per iteration and how much of it is spent between runs; exits non-zero
//! on a mismatch.
//!
//! By default the iterations run as one [`Program`] (assign, update, and
//! the centroid update as a host step, the workers held awake between
//! steps); `parked` runs the program with the workers parked between
//! steps, and `runs` as separate `Engine::run` calls, for comparison.
//!
//! ```text
//! cargo run --release --example kmeans [-- N [ITERATIONS [cpu|gpu|all [program|parked|runs]]]]
//! ```
//!
//! `COEXEC_LOG` (`tracing_subscriber::EnvFilter` syntax, e.g.
//! `coexec_engine::learn=debug`: the learner's decision before each run)
//! prints the engine's log on stderr.

#[path = "shared/log.rs"]
mod log;
#[path = "shared/steps.rs"]
mod steps;

use coexec::{
    Args, Buffer, CpuArgs, Devices, Engine, Flow, IndexSpace, Kernel, Package, Program, Reduction,
    Scheduler,
};
use std::sync::Arc;
use std::time::Instant;

/// Centroids.
const K: usize = 8;
/// Fixed point of the GPU's per-work-group sums: coordinates are multiples
/// of 1/65536 in [0, 1), so 256 of them sum exactly in a `uint`, and the
/// sum is exact as a `float`.
const SCALE: f32 = 65536.0;

const ASSIGN: &str = r#"#version 450
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer P { vec2 pts[]; };
layout(std430, binding = 1) readonly buffer C { vec2 cent[]; };
layout(std430, binding = 2) writeonly buffer L { uint labels[]; };
layout(push_constant) uniform Push { uint n; } p;
void main() {
    uint i = gl_GlobalInvocationID.x;
    if (i >= p.n) return;
    vec2 x = pts[i];
    uint best = 0u;
    float bd = 3.0e38;
    for (uint c = 0u; c < 8u; c++) {
        vec2 d = x - cent[c];
        float dd = dot(d, d);
        if (dd < bd) { bd = dd; best = c; }
    }
    labels[i] = best;
}"#;

const UPDATE: &str = r#"#version 450
layout(local_size_x = 256) in;
#include "coexec_reduce.glsl"
layout(std430, binding = 0) readonly buffer P { vec2 pts[]; };
layout(std430, binding = 1) readonly buffer L { uint labels[]; };
layout(std430, binding = 2) writeonly buffer S { float partials[]; };
layout(push_constant) uniform Push { uint n; } p;
shared uint sums[24];
void main() {
    uint l = gl_LocalInvocationIndex;
    if (l < 24u) sums[l] = 0u;
    barrier();
    uint i = gl_GlobalInvocationID.x;
    if (i < p.n) {
        uint c = labels[i];
        uvec2 q = uvec2(pts[i] * 65536.0);
        atomicAdd(sums[c * 3u], q.x);
        atomicAdd(sums[c * 3u + 1u], q.y);
        atomicAdd(sums[c * 3u + 2u], 1u);
    }
    barrier();
    if (l < 24u) {
        float s = float(sums[l]);
        partials[coexec_slot(24u) + l] = (l % 3u == 2u) ? s : s / 65536.0;
    }
}"#;

fn nearest(x: [f32; 2], cent: &[[f32; 2]]) -> u32 {
    let mut best = (0, f32::INFINITY);
    for (c, m) in cent.iter().enumerate() {
        let d = [x[0] - m[0], x[1] - m[1]];
        let dd = d[0] * d[0] + d[1] * d[1];
        if dd < best.1 {
            best = (c as u32, dd);
        }
    }
    best.0
}

fn cpu_assign(pkg: &Package, args: &mut CpuArgs<'_>) {
    let pts = args.input::<[f32; 2]>(0);
    let cent = args.input::<[f32; 2]>(1);
    let labels = args.output::<u32>(2);
    for (l, i) in labels.iter_mut().zip(pkg.items.clone()) {
        *l = nearest(pts[i as usize], cent);
    }
}

fn cpu_update(pkg: &Package, args: &mut CpuArgs<'_>) {
    let pts = args.input::<[f32; 2]>(0);
    let labels = args.input::<u32>(1);
    let mut s = [0.0f64; 3 * K];
    for i in pkg.items.clone() {
        let (p, c) = (pts[i as usize], labels[i as usize] as usize);
        s[c * 3] += f64::from(p[0]);
        s[c * 3 + 1] += f64::from(p[1]);
        s[c * 3 + 2] += 1.0;
    }
    for (a, s) in args.accumulator::<f32>(2).iter_mut().zip(s) {
        *a += s as f32;
    }
}

/// New centroids from per-centroid (sum x, sum y, count); a centroid with
/// no point stays.
fn centroids(sums: &[f32], old: &mut [[f32; 2]]) {
    for (c, m) in old.iter_mut().enumerate() {
        let n = sums[c * 3 + 2];
        if n > 0.0 {
            *m = [sums[c * 3] / n, sums[c * 3 + 1] / n];
        }
    }
}

/// Points around K centers on a circle, quantized to 1/65536.
fn points(n: usize) -> Vec<[f32; 2]> {
    (0..n)
        .map(|i| {
            let c = (i % K) as f32 * std::f32::consts::TAU / K as f32;
            let h = (i as u32).wrapping_mul(2_654_435_761);
            let (dx, dy) = ((h >> 16) as f32 / 65536.0, (h & 0xffff) as f32 / 65536.0);
            let x = 0.5 + 0.35 * c.cos() + 0.1 * (dx - 0.5);
            let y = 0.5 + 0.35 * c.sin() + 0.1 * (dy - 0.5);
            [(x * SCALE).floor() / SCALE, (y * SCALE).floor() / SCALE]
        })
        .collect()
}

/// The devices named on the command line (default: both).
fn devices(arg: Option<&str>) -> Result<Devices, String> {
    match arg {
        None | Some("all") => Ok(Devices::ALL),
        Some("cpu") => Ok(Devices::CPU),
        Some("gpu") => Ok(Devices::GPU),
        Some(other) => Err(format!("devices: cpu, gpu or all (got {other:?})")),
    }
}

/// What the iterations share.
struct State {
    n: u32,
    pts: Buffer<[f32; 2]>,
    cent: Buffer<[f32; 2]>,
    labels: Buffer<u32>,
    sums: Reduction<f32>,
}

impl State {
    fn assign(&mut self) -> Args<'_> {
        Args::new()
            .input(&self.pts)
            .input(&self.cent)
            .output(&mut self.labels)
            .push(&self.n)
    }

    fn update(&mut self) -> Args<'_> {
        Args::new()
            .input(&self.pts)
            .input(&self.labels)
            .reduce(&mut self.sums)
            .push(&self.n)
    }

    fn move_centroids(&mut self) {
        centroids(self.sums.value(), self.cent.as_mut_slice());
    }
}

/// The iterations as one program.
fn program<'k>(
    engine: &Engine,
    (assign, update): (&'k Kernel, &'k Kernel),
    all: Devices,
    space: IndexSpace,
) -> Program<'k, State> {
    engine
        .program::<State>()
        .devices(all)
        .kernel(assign, space, State::assign)
        .kernel(update, space, State::update)
        .host(|s| {
            s.move_centroids();
            Flow::Continue
        })
}

/// `iterations` iterations as separate runs; the seconds inside the runs.
fn by_runs(
    engine: &Engine,
    (assign, update): (&Kernel, &Kernel),
    s: &mut State,
    (all, space): (Devices, IndexSpace),
    iterations: usize,
) -> coexec::Result<f64> {
    let sched = Scheduler::hguided();
    let mut in_runs = 0.0;
    for _ in 0..iterations {
        in_runs += engine.run(assign, s.assign(), space, &sched, all)?.time_s;
        in_runs += engine.run(update, s.update(), space, &sched, all)?.time_s;
        s.move_centroids();
    }
    Ok(in_runs)
}

/// The command line's usage line.
const USAGE: &str = "usage: kmeans [N [ITERATIONS [cpu|gpu|all [program|parked|runs]]]] (defaults 1048576 20 all program)";

fn main() -> Result<(), Box<dyn std::error::Error>> {
    log::init();
    if std::env::args().any(|a| a == "-h" || a == "--help") {
        println!("{USAGE}");
        return Ok(());
    }
    let mut argv = std::env::args().skip(1);
    let n: usize = argv
        .next()
        .map(|s| number(&s))
        .transpose()?
        .unwrap_or(1 << 20);
    let iterations: usize = argv.next().map(|s| number(&s)).transpose()?.unwrap_or(20);
    let all = devices(argv.next().as_deref())?;
    // Program (workers held awake, or parked between steps) or runs.
    let (as_program, awake) = match argv.next().as_deref() {
        None | Some("program") => (true, true),
        Some("parked") => (true, false),
        Some("runs") => (false, false),
        Some(other) => return Err(format!("mode: program, parked or runs (got {other:?})").into()),
    };
    let engine = Engine::new()?;
    println!(
        "device: {}, CPU workers: {}, n = {n}, k = {K}, {}",
        engine.device_info().name,
        engine.workers(),
        if as_program {
            "one program"
        } else {
            "run by run"
        }
    );
    let assign = engine.kernel_glsl("kmeans_assign", ASSIGN, Some(Arc::new(cpu_assign)))?;
    let update = engine.kernel_glsl("kmeans_update", UPDATE, Some(Arc::new(cpu_update)))?;
    let pts = points(n);
    let start: Vec<[f32; 2]> = pts[..K]
        .iter()
        .map(|p| [p[0] + 0.05, p[1] - 0.05])
        .collect();
    let mut s = State {
        n: n as u32,
        pts: engine.buffer_from_slice(&pts)?,
        cent: engine.buffer_from_slice(&start)?,
        labels: engine.buffer::<u32>(n)?,
        sums: Reduction::<f32>::sum(3 * K),
    };
    let space = IndexSpace::D1(n as u64);
    let kernels = (&assign, &update);
    let mut prog = program(&engine, kernels, all, space).keep_awake(awake);
    // Seconds of an iteration count inside the runs.
    // The last program run's steps, printed at the end.
    let mut last_steps = None;
    let mut run = |s: &mut State, its: usize| match as_program {
        true => prog.run(s, its as u64).map(|r| {
            last_steps = Some(steps::line(&r));
            r.kernel_time_s()
        }),
        false => by_runs(&engine, kernels, s, (all, space), its),
    };
    // The first iteration pays one-time costs (the GPU's first packages,
    // the scheduler's first measurements): apart.
    let t0 = Instant::now();
    run(&mut s, iterations.min(1))?;
    let first = t0.elapsed().as_secs_f64();
    let t0 = Instant::now();
    let in_runs = run(&mut s, iterations.saturating_sub(1))?;
    let wall = t0.elapsed().as_secs_f64();
    let timed = iterations.saturating_sub(1).max(1) as f64;
    // The reference: the same algorithm on the CPU, in f64.
    let mut want = start.clone();
    let mut lab = vec![0u32; n];
    for _ in 0..iterations {
        let mut s = [0.0f64; 3 * K];
        for (i, p) in pts.iter().enumerate() {
            lab[i] = nearest(*p, &want);
            let c = lab[i] as usize;
            s[c * 3] += f64::from(p[0]);
            s[c * 3 + 1] += f64::from(p[1]);
            s[c * 3 + 2] += 1.0;
        }
        let s: Vec<f32> = s.iter().map(|v| *v as f32).collect();
        centroids(&s, &mut want);
    }
    let wrong_labels = lab
        .iter()
        .zip(s.labels.iter())
        .filter(|(a, b)| a != b)
        .count();
    let err = s
        .cent
        .iter()
        .zip(&want)
        .map(|(a, b)| (a[0] - b[0]).abs().max((a[1] - b[1]).abs()))
        .fold(0.0f32, f32::max);
    println!(
        "time per iteration: {:.3} ms ({:.3} ms in the two runs, {:.3} ms outside them); the first: {:.3} ms",
        wall / timed * 1e3,
        in_runs / timed * 1e3,
        (wall - in_runs) / timed * 1e3,
        first * 1e3
    );
    if let Some(l) = last_steps {
        println!("{l}");
    }
    println!("centroids: max error {err:.2e}, labels differing from the reference: {wrong_labels}");
    if err > 1e-4 || wrong_labels > 0 {
        return Err("k-means differs from the CPU reference".into());
    }
    println!("kmeans: verified");
    Ok(())
}

/// `s` as a count, or an error that shows the usage.
fn number(s: &str) -> Result<usize, String> {
    s.parse().map_err(|e| format!("{s:?}: {e}; {USAGE}"))
}
