//! A dot product co-executed on the CPU and the GPU as a reduction output:
//! each GPU work-group combines its products in shared memory (the
//! `coexec_reduce.glsl` helpers) and writes its partial; each CPU package
//! adds its items into its accumulator; the engine combines the partials.
//! Checked against a CPU reference; exits non-zero on a mismatch.
//!
//! ```text
//! cargo run --release --example dot [-- N [ITERATIONS [--deterministic]]]
//! ```
//!
//! With `--deterministic`, the CPU runs one work-group per call and combines
//! it in the GPU's order ([`coexec::reduce::tree`]): the result is then
//! bit-identical whichever device ran what, and is checked so.

use coexec::reduce::{tree, tree_of_partials, ReduceOp};
use coexec::{Args, CpuArgs, Devices, Engine, IndexSpace, Package, Reduction, Scheduler};
use std::sync::Arc;
use std::time::Instant;

const LOCAL: usize = 256;
/// Elements per work-item (so that 2^24 elements fit in the 65535
/// work-groups a 1-D dispatch may have).
const PER_ITEM: usize = 4;

const SHADER: &str = r#"#version 450
layout(local_size_x = 256) in;
#include "coexec_reduce.glsl"
COEXEC_DEFINE_REDUCE(group_sum, float, COEXEC_SUM)
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer Y { float y[]; };
layout(std430, binding = 2) writeonly buffer P { float partials[]; };
layout(push_constant) uniform Push { uint n; } p;
void main() {
    // `precise`: no fused multiply-add, so that the CPU's order gives the
    // same bits (deterministic mode).
    precise float v = 0.0;
    uint i = gl_GlobalInvocationID.x * 4u;
    for (uint j = i; j < min(i + 4u, p.n); j++) v += x[j] * y[j];
    float s = group_sum(v);
    if (gl_LocalInvocationIndex == 0u) partials[coexec_slot(1u)] = s;
}"#;

/// One work-item's value: its elements' products added in order.
fn item_value(x: &[f32], y: &[f32], item: usize) -> f32 {
    let start = (item * PER_ITEM).min(x.len());
    let end = (start + PER_ITEM).min(x.len());
    let mut v = 0.0f32;
    for j in start..end {
        v += x[j] * y[j];
    }
    v
}

/// Work-group `g`'s partial in the canonical order (padded with 0).
fn group_partial(x: &[f32], y: &[f32], g: usize) -> f32 {
    let mut v = [0.0f32; LOCAL];
    for (l, v) in v.iter_mut().enumerate() {
        *v = item_value(x, y, g * LOCAL + l);
    }
    tree(ReduceOp::Sum, &mut v)
}

fn cpu_dot(pkg: &Package, args: &mut CpuArgs<'_>) {
    let (x, y) = (args.input::<f32>(0), args.input::<f32>(1));
    let acc = args.accumulator::<f32>(2);
    if pkg.units.end - pkg.units.start == 1 {
        // One work-group: the canonical order (what a deterministic
        // reduction needs; as good as any otherwise).
        acc[0] += group_partial(x, y, pkg.units.start as usize);
        return;
    }
    let a = pkg.items.start as usize * PER_ITEM;
    let b = (pkg.items.end as usize * PER_ITEM).min(x.len());
    let s: f64 = x[a..b]
        .iter()
        .zip(&y[a..b])
        .map(|(x, y)| f64::from(x * y))
        .sum();
    acc[0] += s as f32;
}

/// The command line's usage line.
const USAGE: &str = "usage: dot [N [ITERATIONS]] [--deterministic] (defaults 16777216 10)";

fn main() -> Result<(), Box<dyn std::error::Error>> {
    if std::env::args().any(|a| a == "-h" || a == "--help") {
        println!("{USAGE}");
        return Ok(());
    }
    let mut args = std::env::args().skip(1);
    let n: usize = args
        .next()
        .map(|s| number(&s))
        .transpose()?
        .unwrap_or(1 << 24);
    let iterations: usize = args.next().map(|s| number(&s)).transpose()?.unwrap_or(10);
    let deterministic = args.any(|a| a == "--deterministic");
    let items = n.div_ceil(PER_ITEM);
    let engine = Engine::new()?;
    println!(
        "device: {}, CPU workers: {}, n = {n}, deterministic: {deterministic}",
        engine.device_info().name,
        engine.workers()
    );
    let kernel = engine.kernel_glsl("dot", SHADER, Some(Arc::new(cpu_dot)))?;
    let value =
        |i: usize, s: u32| 0.5 + ((i as u32 ^ s).wrapping_mul(2_654_435_761) >> 22) as f32 / 1024.0;
    let xs: Vec<f32> = (0..n).map(|i| value(i, 1)).collect();
    let ys: Vec<f32> = (0..n).map(|i| value(i, 7)).collect();
    let x = engine.buffer_from_slice(&xs)?;
    let y = engine.buffer_from_slice(&ys)?;
    let reference: f64 = xs
        .iter()
        .zip(&ys)
        .map(|(a, b)| f64::from(*a) * f64::from(*b))
        .sum();
    let canonical = {
        let mut parts: Vec<f32> = (0..items.div_ceil(LOCAL))
            .map(|g| group_partial(&xs, &ys, g))
            .collect();
        tree_of_partials(ReduceOp::Sum, &mut parts)
    };
    let mut dot = Reduction::<f32>::sum(1).deterministic(deterministic);
    let (mut total, mut bad) = (0.0, 0);
    for it in 0..iterations {
        let t = Instant::now();
        let run = Args::new()
            .input(&x)
            .input(&y)
            .reduce(&mut dot)
            .push(&(n as u32));
        let report = engine.run(
            &kernel,
            run,
            IndexSpace::D1(items as u64),
            &Scheduler::hguided(),
            Devices::ALL,
        )?;
        total += t.elapsed().as_secs_f64();
        let got = dot.scalar();
        let ok = if deterministic {
            got.to_bits() == canonical.to_bits()
        } else {
            (f64::from(got) - reference).abs() <= 1e-5 * reference.abs()
        };
        bad += usize::from(!ok);
        if it == 0 || !ok {
            let split: Vec<String> = report
                .devices
                .iter()
                .map(|d| format!("{} {} items", d.kind, d.items))
                .collect();
            println!(
                "iteration {it}: dot = {got} (reference {reference:.1}), {}",
                split.join(", ")
            );
        }
    }
    if deterministic {
        // Each device alone gives the same bits.
        for (label, devices) in [("CPU", Devices::CPU), ("GPU", Devices::GPU)] {
            let run = Args::new()
                .input(&x)
                .input(&y)
                .reduce(&mut dot)
                .push(&(n as u32));
            engine.run(
                &kernel,
                run,
                IndexSpace::D1(items as u64),
                &Scheduler::hguided(),
                devices,
            )?;
            let same = dot.scalar().to_bits() == canonical.to_bits();
            println!(
                "{label} alone: dot = {}, bit-identical: {same}",
                dot.scalar()
            );
            bad += usize::from(!same);
        }
    }
    println!(
        "time per iteration: {:.3} ms",
        total / iterations.max(1) as f64 * 1e3
    );
    if bad > 0 {
        return Err(format!("{bad} runs differ from the reference").into());
    }
    println!("dot: verified");
    Ok(())
}

/// `s` as a count, or an error that shows the usage.
fn number(s: &str) -> Result<usize, String> {
    s.parse().map_err(|e| format!("{s:?}: {e}; {USAGE}"))
}
