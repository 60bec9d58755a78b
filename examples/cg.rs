//! Conjugate gradient co-executed on the CPU and the GPU, on a generated
//! sparse SPD matrix (the 5-point Laplacian of an m x m grid plus 0.5 on
//! the diagonal, in CSR). Four kernels over the same buffers each
//! iteration: `spmv` (q = A p), `dot` (p.q, a reduction), `update` (x += a
//! p, r -= a q, and r.r as a reduction) and `direction` (p = r + b p). Each
//! kernel keeps what the scheduler learned about it from one iteration to
//! the next. Checked against a CPU reference in f64 and by its residual;
//! prints the time per iteration; exits non-zero on a mismatch.
//!
//! By default the iterations run as one [`Program`] (the four kernels and
//! the two scalar updates as host steps, the workers held awake between
//! steps); `parked` runs the program with the workers parked between
//! steps, and `runs` as separate `Engine::run` calls, for comparison.
//!
//! ```text
//! cargo run --release --example cg [-- M [ITERATIONS [cpu|gpu|all [program|parked|runs]]]]
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

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct Push {
    n: u32,
    a: f32,
}

const SPMV: &str = r#"#version 450
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer R { uint row[]; };
layout(std430, binding = 1) readonly buffer C { uint col[]; };
layout(std430, binding = 2) readonly buffer V { float val[]; };
layout(std430, binding = 3) readonly buffer P { float p[]; };
layout(std430, binding = 4) writeonly buffer Q { float q[]; };
layout(push_constant) uniform Push { uint n; float a; } c;
void main() {
    uint i = gl_GlobalInvocationID.x;
    if (i >= c.n) return;
    float s = 0.0;
    for (uint k = row[i]; k < row[i + 1u]; k++) s += val[k] * p[col[k]];
    q[i] = s;
}"#;

const DOT: &str = r#"#version 450
layout(local_size_x = 256) in;
#include "coexec_reduce.glsl"
COEXEC_DEFINE_REDUCE(group_sum, float, COEXEC_SUM)
layout(std430, binding = 0) readonly buffer P { float p[]; };
layout(std430, binding = 1) readonly buffer Q { float q[]; };
layout(std430, binding = 2) writeonly buffer S { float partials[]; };
layout(push_constant) uniform Push { uint n; float a; } c;
void main() {
    uint i = gl_GlobalInvocationID.x;
    float s = group_sum(i < c.n ? p[i] * q[i] : 0.0);
    if (gl_LocalInvocationIndex == 0u) partials[coexec_slot(1u)] = s;
}"#;

const UPDATE: &str = r#"#version 450
layout(local_size_x = 256) in;
#include "coexec_reduce.glsl"
COEXEC_DEFINE_REDUCE(group_sum, float, COEXEC_SUM)
layout(std430, binding = 0) readonly buffer P { float p[]; };
layout(std430, binding = 1) readonly buffer Q { float q[]; };
layout(std430, binding = 2) buffer X { float x[]; };
layout(std430, binding = 3) buffer R { float r[]; };
layout(std430, binding = 4) writeonly buffer S { float partials[]; };
layout(push_constant) uniform Push { uint n; float a; } c;
void main() {
    uint i = gl_GlobalInvocationID.x;
    float rr = 0.0;
    if (i < c.n) {
        x[i] += c.a * p[i];
        float ri = r[i] - c.a * q[i];
        r[i] = ri;
        rr = ri * ri;
    }
    float s = group_sum(rr);
    if (gl_LocalInvocationIndex == 0u) partials[coexec_slot(1u)] = s;
}"#;

const DIRECTION: &str = r#"#version 450
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer R { float r[]; };
layout(std430, binding = 1) buffer P { float p[]; };
layout(push_constant) uniform Push { uint n; float a; } c;
void main() {
    uint i = gl_GlobalInvocationID.x;
    if (i < c.n) p[i] = r[i] + c.a * p[i];
}"#;

fn cpu_spmv(pkg: &Package, args: &mut CpuArgs<'_>) {
    let (row, col) = (args.input::<u32>(0), args.input::<u32>(1));
    let (val, p) = (args.input::<f32>(2), args.input::<f32>(3));
    for (q, i) in args.output::<f32>(4).iter_mut().zip(pkg.items.clone()) {
        let i = i as usize;
        let ks = row[i] as usize..row[i + 1] as usize;
        *q = ks.map(|k| val[k] * p[col[k] as usize]).sum();
    }
}

fn cpu_dot(pkg: &Package, args: &mut CpuArgs<'_>) {
    let (p, q) = (args.input::<f32>(0), args.input::<f32>(1));
    let (a, b) = (pkg.items.start as usize, pkg.items.end as usize);
    let s: f64 = p[a..b]
        .iter()
        .zip(&q[a..b])
        .map(|(p, q)| f64::from(p * q))
        .sum();
    args.accumulator::<f32>(2)[0] += s as f32;
}

fn cpu_update(pkg: &Package, args: &mut CpuArgs<'_>) {
    let c: Push = args.push();
    let (p, q) = (args.input::<f32>(0), args.input::<f32>(1));
    let (a, b) = (pkg.items.start as usize, pkg.items.end as usize);
    for (x, i) in args.output::<f32>(2).iter_mut().zip(a..b) {
        *x += c.a * p[i];
    }
    let mut rr = 0.0f64;
    for (r, i) in args.output::<f32>(3).iter_mut().zip(a..b) {
        *r -= c.a * q[i];
        rr += f64::from(*r * *r);
    }
    args.accumulator::<f32>(4)[0] += rr as f32;
}

fn cpu_direction(pkg: &Package, args: &mut CpuArgs<'_>) {
    let c: Push = args.push();
    let r = args.input::<f32>(0);
    for (p, i) in args.output::<f32>(1).iter_mut().zip(pkg.items.clone()) {
        *p = r[i as usize] + c.a * *p;
    }
}

/// The CSR matrix of the grid's 5-point Laplacian plus 0.5 on the diagonal.
fn matrix(m: usize) -> (Vec<u32>, Vec<u32>, Vec<f32>) {
    let (mut row, mut col, mut val) = (vec![0u32], Vec::new(), Vec::new());
    for i in 0..m * m {
        let (y, x) = (i / m, i % m);
        let mut push = |j: usize, v: f32| {
            col.push(j as u32);
            val.push(v);
        };
        if y > 0 {
            push(i - m, -1.0);
        }
        if x > 0 {
            push(i - 1, -1.0);
        }
        push(i, 4.5);
        if x + 1 < m {
            push(i + 1, -1.0);
        }
        if y + 1 < m {
            push(i + m, -1.0);
        }
        row.push(col.len() as u32);
    }
    (row, col, val)
}

fn spmv64(row: &[u32], col: &[u32], val: &[f32], p: &[f64]) -> Vec<f64> {
    (0..row.len() - 1)
        .map(|i| {
            (row[i] as usize..row[i + 1] as usize)
                .map(|k| f64::from(val[k]) * p[col[k] as usize])
                .sum()
        })
        .collect()
}

fn dot64(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(a, b)| a * b).sum()
}

/// CG in f64 from x = 0: the reference.
fn reference(row: &[u32], col: &[u32], val: &[f32], b: &[f32], iterations: usize) -> Vec<f64> {
    let n = b.len();
    let (mut x, mut r) = (
        vec![0.0f64; n],
        b.iter().map(|v| f64::from(*v)).collect::<Vec<_>>(),
    );
    let mut p = r.clone();
    let mut rr = dot64(&r, &r);
    for _ in 0..iterations {
        let q = spmv64(row, col, val, &p);
        let a = rr / dot64(&p, &q);
        for i in 0..n {
            x[i] += a * p[i];
            r[i] -= a * q[i];
        }
        let new = dot64(&r, &r);
        for i in 0..n {
            p[i] = r[i] + new / rr * p[i];
        }
        rr = new;
    }
    x
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

/// The four kernels.
struct Kernels {
    spmv: Kernel,
    dot: Kernel,
    update: Kernel,
    direction: Kernel,
}

/// What the iterations share: the matrix, the vectors, the reductions and
/// the host's scalars.
struct State {
    n: u32,
    row: Buffer<u32>,
    col: Buffer<u32>,
    val: Buffer<f32>,
    x: Buffer<f32>,
    r: Buffer<f32>,
    p: Buffer<f32>,
    q: Buffer<f32>,
    pq: Reduction<f32>,
    rr_new: Reduction<f32>,
    /// r.r of the current residual, and the step sizes.
    rr: f32,
    alpha: f32,
    beta: f32,
}

impl State {
    fn push(&self, a: f32) -> Push {
        Push { n: self.n, a }
    }

    fn spmv(&mut self) -> Args<'_> {
        let c = self.push(0.0);
        Args::new()
            .input(&self.row)
            .input(&self.col)
            .input(&self.val)
            .input(&self.p)
            .output(&mut self.q)
            .push(&c)
    }

    fn dot(&mut self) -> Args<'_> {
        let c = self.push(0.0);
        Args::new()
            .input(&self.p)
            .input(&self.q)
            .reduce(&mut self.pq)
            .push(&c)
    }

    fn step_size(&mut self) {
        self.alpha = self.rr / self.pq.scalar();
    }

    fn update(&mut self) -> Args<'_> {
        let c = self.push(self.alpha);
        Args::new()
            .input(&self.p)
            .input(&self.q)
            .output(&mut self.x)
            .output(&mut self.r)
            .reduce(&mut self.rr_new)
            .push(&c)
    }

    fn new_direction(&mut self) {
        self.beta = self.rr_new.scalar() / self.rr;
        self.rr = self.rr_new.scalar();
    }

    fn direction(&mut self) -> Args<'_> {
        let c = self.push(self.beta);
        Args::new().input(&self.r).output(&mut self.p).push(&c)
    }
}

/// The iterations as one program.
fn program<'k>(
    engine: &Engine,
    k: &'k Kernels,
    all: Devices,
    space: IndexSpace,
) -> Program<'k, State> {
    engine
        .program::<State>()
        .devices(all)
        .kernel(&k.spmv, space, State::spmv)
        .kernel(&k.dot, space, State::dot)
        .host(|s| {
            s.step_size();
            Flow::Continue
        })
        .kernel(&k.update, space, State::update)
        .host(|s| {
            s.new_direction();
            Flow::Continue
        })
        .kernel(&k.direction, space, State::direction)
}

/// `iterations` iterations as separate runs.
fn by_runs(
    engine: &Engine,
    k: &Kernels,
    s: &mut State,
    (all, space): (Devices, IndexSpace),
    iterations: usize,
) -> coexec::Result<()> {
    let sched = Scheduler::hguided();
    for _ in 0..iterations {
        engine.run(&k.spmv, s.spmv(), space, &sched, all)?;
        engine.run(&k.dot, s.dot(), space, &sched, all)?;
        s.step_size();
        engine.run(&k.update, s.update(), space, &sched, all)?;
        s.new_direction();
        engine.run(&k.direction, s.direction(), space, &sched, all)?;
    }
    Ok(())
}

/// The command line's usage line.
const USAGE: &str = "usage: cg [M [ITERATIONS [cpu|gpu|all [program|parked|runs]]]] (an M x M grid; defaults 1024 30 all program)";

fn main() -> Result<(), Box<dyn std::error::Error>> {
    log::init();
    if std::env::args().any(|a| a == "-h" || a == "--help") {
        println!("{USAGE}");
        return Ok(());
    }
    let mut argv = std::env::args().skip(1);
    let m: usize = argv.next().map(|s| number(&s)).transpose()?.unwrap_or(1024);
    let iterations: usize = argv.next().map(|s| number(&s)).transpose()?.unwrap_or(30);
    let all = devices(argv.next().as_deref())?;
    // Program (workers held awake, or parked between steps) or runs.
    let (as_program, awake) = match argv.next().as_deref() {
        None | Some("program") => (true, true),
        Some("parked") => (true, false),
        Some("runs") => (false, false),
        Some(other) => return Err(format!("mode: program, parked or runs (got {other:?})").into()),
    };
    let n = m * m;
    let engine = Engine::new()?;
    println!(
        "device: {}, CPU workers: {}, {m}x{m} grid, n = {n}, {}",
        engine.device_info().name,
        engine.workers(),
        if as_program {
            "one program"
        } else {
            "run by run"
        }
    );
    let k = |name: &str, glsl: &str, f: fn(&Package, &mut CpuArgs<'_>)| {
        engine.kernel_glsl(name, glsl, Some(Arc::new(f)))
    };
    let kernels = Kernels {
        spmv: k("cg_spmv", SPMV, cpu_spmv)?,
        dot: k("cg_dot", DOT, cpu_dot)?,
        update: k("cg_update", UPDATE, cpu_update)?,
        direction: k("cg_direction", DIRECTION, cpu_direction)?,
    };
    let (row, col, val) = matrix(m);
    let b: Vec<f32> = (0..n).map(|i| 1.0 + (i % 13) as f32 / 13.0).collect();
    let mut s = State {
        n: n as u32,
        row: engine.buffer_from_slice(&row)?,
        col: engine.buffer_from_slice(&col)?,
        val: engine.buffer_from_slice(&val)?,
        x: engine.buffer::<f32>(n)?,
        r: engine.buffer_from_slice(&b)?,
        p: engine.buffer_from_slice(&b)?,
        q: engine.buffer::<f32>(n)?,
        pq: Reduction::sum(1),
        rr_new: Reduction::sum(1),
        rr: b.iter().map(|v| f64::from(*v) * f64::from(*v)).sum::<f64>() as f32,
        alpha: 0.0,
        beta: 0.0,
    };
    let space = IndexSpace::D1(n as u64);
    // The first iteration pays one-time costs: timed apart.
    let t0 = Instant::now();
    let mut prog = program(&engine, &kernels, all, space).keep_awake(awake);
    // A program's run gives its steps' times; run by run, none.
    let run = |s: &mut State, prog: &mut Program<'_, State>, its: usize| match as_program {
        true => prog.run(s, its as u64).map(Some),
        false => by_runs(&engine, &kernels, s, (all, space), its).map(|()| None),
    };
    let first_steps = run(&mut s, &mut prog, iterations.min(1))?;
    let first = t0.elapsed().as_secs_f64();
    // The second iteration apart too (where switching devices after the
    // first shows: uploads of what the CPU wrote), then the rest.
    let t0 = Instant::now();
    let second_steps = run(&mut s, &mut prog, iterations.saturating_sub(1).min(1))?;
    let rest_steps = run(&mut s, &mut prog, iterations.saturating_sub(2))?;
    let wall = t0.elapsed().as_secs_f64();
    let want = reference(&row, &col, &val, &b, iterations);
    let x64: Vec<f64> = s.x.iter().map(|v| f64::from(*v)).collect();
    let diff: Vec<f64> = x64.iter().zip(&want).map(|(a, b)| a - b).collect();
    let err = (dot64(&diff, &diff) / dot64(&want, &want)).sqrt();
    let ax = spmv64(&row, &col, &val, &x64);
    let res: Vec<f64> = ax
        .iter()
        .zip(&b)
        .map(|(ax, b)| f64::from(*b) - ax)
        .collect();
    let b64: Vec<f64> = b.iter().map(|v| f64::from(*v)).collect();
    let residual = (dot64(&res, &res) / dot64(&b64, &b64)).sqrt();
    // The f64 reference's own residual after as many iterations: a short
    // run has not converged, and is judged against that.
    let ax_ref = spmv64(&row, &col, &val, &want);
    let res_ref: Vec<f64> = ax_ref.iter().zip(&b64).map(|(ax, b)| b - ax).collect();
    let residual_ref = (dot64(&res_ref, &res_ref) / dot64(&b64, &b64)).sqrt();
    println!(
        "time per iteration: {:.3} ms (4 runs); the first: {:.3} ms",
        wall / iterations.saturating_sub(1).max(1) as f64 * 1e3,
        first * 1e3
    );
    if let Some(r) = rest_steps.filter(|r| r.iterations > 0) {
        println!("{} (iterations 3-{iterations})", steps::line(&r));
    }
    for (which, r) in [("first", first_steps), ("second", second_steps)] {
        if let Some(r) = r.filter(|r| r.iterations > 0) {
            println!("the {which} iteration's runs: {}", steps::one_iteration(&r));
        }
    }
    println!(
        "relative error against the f64 reference: {err:.2e}, relative residual: {residual:.2e} (the reference's: {residual_ref:.2e})"
    );
    if err > 1e-4 || residual > 1e-4_f64.max(2.0 * residual_ref) {
        return Err("CG differs from the reference".into());
    }
    println!("cg: verified");
    Ok(())
}

/// `s` as a count, or an error that shows the usage.
fn number(s: &str) -> Result<usize, String> {
    s.parse().map_err(|e| format!("{s:?}: {e}; {USAGE}"))
}
