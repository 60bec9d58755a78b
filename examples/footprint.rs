//! The memory footprint of an engine: creates one, runs SAXPY from SPIR-V
//! (the build's `shaders/saxpy.comp`, so the lean build runs it too) on the
//! CPU and the GPU at once, checks the result, and prints the process's
//! resident memory (`VmRSS`, and its peak `VmHWM`, from `/proc/self/status`).
//! BENCHMARKS.md compares the lean and the default build with it.
//!
//! ```text
//! cargo run --release --example footprint [-- N]
//! cargo run --release --no-default-features --example footprint [-- N]
//! ```

use coexec::{Args, CpuArgs, Devices, Engine, IndexSpace, Package, Scheduler};
use std::sync::Arc;

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    a: f32,
    n: u32,
}

/// `VmRSS` and `VmHWM` in KiB (Linux; `None` elsewhere).
fn resident_kib() -> Option<(u64, u64)> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let field = |name: &str| {
        status.lines().find_map(|line| {
            let rest = line.strip_prefix(name)?.trim();
            rest.strip_suffix("kB")?.trim().parse::<u64>().ok()
        })
    };
    Some((field("VmRSS:")?, field("VmHWM:")?))
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let n: usize = std::env::args()
        .nth(1)
        .map(|s| s.parse())
        .transpose()?
        .unwrap_or(1 << 16);
    let before = resident_kib();
    let engine = Engine::new()?;
    let cpu = Arc::new(|pkg: &Package, args: &mut CpuArgs<'_>| {
        let p: Params = args.push();
        let x = &args.input::<f32>(0)[pkg.items.start as usize..pkg.items.end as usize];
        for (y, x) in args.output::<f32>(1).iter_mut().zip(x) {
            *y += p.a * x;
        }
    });
    let kernel = engine.kernel(
        "saxpy",
        Some(coexec::workloads::spirv::SAXPY),
        Some(cpu),
        None,
    )?;
    let x = engine.buffer_from_slice(&(0..n).map(|i| i as f32).collect::<Vec<_>>())?;
    let mut y = engine.buffer_from_slice(&vec![1.0f32; n])?;
    let args = Args::new().input(&x).output(&mut y).push(&Params {
        a: 2.0,
        n: n as u32,
    });
    let report = engine.run(
        &kernel,
        args,
        IndexSpace::D1(n as u64),
        &Scheduler::hguided(),
        Devices::ALL,
    )?;
    if let Some(i) = (0..n).find(|&i| y[i] != 2.0 * i as f32 + 1.0) {
        return Err(format!("y[{i}] = {} is wrong", y[i]).into());
    }
    let build = if cfg!(feature = "glsl") || cfg!(feature = "hwloc") {
        "default"
    } else {
        "lean"
    };
    let devices: Vec<String> = report
        .devices
        .iter()
        .map(|d| format!("{}: {} items", d.name, d.items))
        .collect();
    println!(
        "build: {build}; {n} items verified ({})",
        devices.join(", ")
    );
    match (before, resident_kib()) {
        (Some((rss0, _)), Some((rss, hwm))) => println!(
            "resident: {rss0} KiB before the engine; {rss} KiB after the run (VmRSS), peak {hwm} KiB (VmHWM)"
        ),
        _ => println!("resident memory: /proc/self/status not readable here"),
    }
    Ok(())
}
