//! A user's program: `y = 2x + y` co-executed on the CPU workers and the
//! Vulkan device, from a GLSL kernel compiled at run time (shaderc linked
//! into this binary through coexec), checked against a plain loop.

use coexec::{Args, CpuArgs, Devices, Engine, IndexSpace, Package, Scheduler};
use std::process::ExitCode;
use std::sync::Arc;

const N: usize = 1 << 16;

const SHADER: &str = r#"#version 450
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) buffer Y { float y[]; };
layout(push_constant) uniform P { uint n; } p;
void main() {
    uint i = gl_GlobalInvocationID.x;
    if (i < p.n) y[i] += 2.0 * x[i];
}"#;

fn run() -> coexec::Result<usize> {
    let engine = Engine::new()?;
    let cpu = Arc::new(|pkg: &Package, args: &mut CpuArgs<'_>| {
        let x = &args.input::<f32>(0)[pkg.items.start as usize..pkg.items.end as usize];
        for (y, x) in args.output::<f32>(1).iter_mut().zip(x) {
            *y += 2.0 * x;
        }
    });
    let kernel = engine.kernel_glsl("downstream_saxpy", SHADER, Some(cpu))?;
    let x: Vec<f32> = (0..N).map(|i| i as f32).collect();
    let x = engine.buffer_from_slice(&x)?;
    let mut y = engine.buffer::<f32>(N)?;
    y.fill(1.0);
    engine.run(
        &kernel,
        Args::new().input(&x).output(&mut y).push(&(N as u32)),
        IndexSpace::D1(N as u64),
        &Scheduler::hguided(),
        Devices::ALL,
    )?;
    Ok((0..N).filter(|&i| y[i] != 2.0 * i as f32 + 1.0).count())
}

fn main() -> ExitCode {
    match run() {
        Ok(0) => {
            println!("downstream: {N} items verified");
            ExitCode::SUCCESS
        }
        Ok(bad) => {
            eprintln!("downstream: {bad} of {N} items wrong");
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("downstream: {e}");
            ExitCode::FAILURE
        }
    }
}
