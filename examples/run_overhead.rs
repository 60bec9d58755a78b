//! The engine's fixed cost per run: a tiny kernel over resident staged
//! data (lazy host coherence: nothing crosses to the host), run back to
//! back on the GPU alone; prints the wall time per `Engine::run` call.
//!
//!     cargo run --release --example run_overhead -- [items] [runs] [rounds]
//!
//! `COEXEC_MEMORY`, `COEXEC_HOST_COHERENCE` and `COEXEC_TRANSFER_QUEUE`
//! override the staged, lazy, automatic defaults.

use coexec::{
    Args, Devices, Engine, EngineOptions, HostCoherence, IndexSpace, MemoryPlacement, Scheduler,
};
use std::time::Instant;

const GLSL: &str = "#version 450
layout(local_size_x = 64) in;
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) buffer Y { float y[]; };
layout(push_constant) uniform P { uint n; float a; } p;
void main() {
    uint i = gl_GlobalInvocationID.x;
    if (i < p.n) { y[i] = p.a * x[i] + y[i]; }
}";

fn arg(i: usize, default: usize) -> usize {
    std::env::args()
        .nth(i)
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

fn main() -> coexec::Result<()> {
    let (n, runs, rounds) = (arg(1, 4096), arg(2, 500), arg(3, 5));
    let e = Engine::with_options(EngineOptions {
        workers: Some(1),
        memory: MemoryPlacement::Staged,
        host_coherence: HostCoherence::Lazy,
        profiles: false,
        ..Default::default()
    })?;
    let k = e.kernel_glsl("run-overhead", GLSL, None)?;
    let x = e.buffer_from_slice(&vec![1.0f32; n])?;
    let mut y = e.buffer_from_slice(&vec![0.0f32; n])?;
    let push = (n as u32, 2.0f32);
    let sched = Scheduler::Static { powers: None };
    let mut once = || -> coexec::Result<()> {
        let args = Args::new()
            .input(&x)
            .output(&mut y)
            .push(&[push.0, push.1.to_bits()]);
        e.run(&k, args, IndexSpace::D1(n as u64), &sched, Devices::GPU)?;
        Ok(())
    };
    for _ in 0..50 {
        once()?;
    }
    let mut per_run = Vec::new();
    for _ in 0..rounds {
        let t = Instant::now();
        for _ in 0..runs {
            once()?;
        }
        per_run.push(t.elapsed().as_secs_f64() * 1e6 / runs as f64);
    }
    per_run.sort_by(f64::total_cmp);
    println!(
        "memory {:?}, coherence {:?}, separate transfers {}: {n} items, {runs} runs x {rounds}: \
         per run min {:.1} us, median {:.1} us",
        e.memory_placement(),
        e.host_coherence(),
        e.separate_transfers(),
        per_run[0],
        per_run[per_run.len() / 2]
    );
    let expect = 2.0 * (50 + runs * rounds) as f32;
    assert!(y.as_slice().iter().all(|&v| v == expect), "wrong result");
    Ok(())
}
