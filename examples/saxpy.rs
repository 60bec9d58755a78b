//! SAXPY (`y = a * x + y`) on the GPU alone, on the CPU alone, and on both
//! at once, each checked against a plain CPU reference.
//!
//! ```text
//! cargo run --release --example saxpy [-- N]
//! ```

use coexec::{Args, CpuArgs, Devices, Engine, IndexSpace, Package, Scheduler};
use std::sync::Arc;

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    a: f32,
    n: u32,
}

const SHADER: &str = r#"#version 450
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) buffer Y { float y[]; };
layout(push_constant) uniform P { float a; uint n; } p;
void main() {
    uint i = gl_GlobalInvocationID.x;   // the global id, also inside a package
    if (i < p.n) y[i] = p.a * x[i] + y[i];
}"#;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let n: usize = std::env::args()
        .nth(1)
        .map(|s| s.parse())
        .transpose()?
        .unwrap_or(1 << 22);
    let engine = Engine::new()?;
    println!(
        "device: {} ({}), CPU workers: {}",
        engine.device_info().name,
        engine.device_info().device_type,
        engine.workers()
    );

    // The CPU implementation: one package, writing only its own part of y.
    let cpu = Arc::new(|pkg: &Package, args: &mut CpuArgs<'_>| {
        let p: Params = args.push();
        let x = &args.input::<f32>(0)[pkg.items.start as usize..pkg.items.end as usize];
        for (y, x) in args.output::<f32>(1).iter_mut().zip(x) {
            *y += p.a * x;
        }
    });
    let kernel = engine.kernel_glsl("saxpy", SHADER, Some(cpu))?;

    // Unified buffers: the CPU fills them in place, the GPU reads the same bytes.
    let mut x = engine.buffer::<f32>(n)?;
    let mut y = engine.buffer::<f32>(n)?;
    let a = 2.0f32;
    for i in 0..n {
        x[i] = i as f32 * 0.001;
    }
    let reference: Vec<f32> = (0..n).map(|i| a * (i as f32 * 0.001) + 1.0).collect();

    for (label, devices) in [
        ("GPU alone", Devices::GPU),
        ("CPU alone", Devices::CPU),
        ("CPU + GPU", Devices::ALL),
    ] {
        y.fill(1.0);
        let args = Args::new()
            .input(&x)
            .output(&mut y)
            .push(&Params { a, n: n as u32 });
        let report = engine.run(
            &kernel,
            args,
            IndexSpace::D1(n as u64),
            &Scheduler::hguided(),
            devices,
        )?;
        let bad = y
            .iter()
            .zip(&reference)
            .filter(|(g, r)| (**g - **r).abs() > 1e-5 * (1.0 + r.abs()))
            .count();
        println!(
            "{label:>10}: {:.3} ms, {} packages, {bad} mismatches",
            report.time_s * 1e3,
            report.package_count()
        );
        for d in &report.devices {
            println!(
                "            {} {}: {} packages, {} items",
                d.kind, d.name, d.packages, d.items
            );
        }
        if bad != 0 {
            return Err(format!("{label}: {bad} of {n} results differ from the reference").into());
        }
    }

    // A GPU run over a sub-range only: items [n/4, n/2) via a second buffer
    // view is not needed; a smaller index space works on the same buffers.
    y.fill(1.0);
    let half = (n / 2) as u64;
    let args = Args::new()
        .input(&x)
        .output(&mut y)
        .push(&Params { a, n: half as u32 });
    engine.run(
        &kernel,
        args,
        IndexSpace::D1(half),
        &Scheduler::Dynamic { packages: 4 },
        Devices::GPU,
    )?;
    let inside =
        (0..n / 2).all(|i| (y[i] - reference[i]).abs() <= 1e-5 * (1.0 + reference[i].abs()));
    let outside = y[n / 2..].iter().all(|&v| v == 1.0);
    println!(
        "sub-range [0, n/2) on the GPU: inside correct: {inside}, outside untouched: {outside}"
    );
    if !(inside && outside) {
        return Err("sub-range run touched the wrong elements".into());
    }
    println!("saxpy: all results verified");
    Ok(())
}
