//! An iterative 2-D stencil (a 5-point Jacobi sweep, 100 sweeps by default)
//! co-executed with its data kept resident: the two grids ping-pong between
//! runs, and on a staged engine each sweep moves only what the other device
//! needs next (the halo rows, the rows the split moved) while the GPU's own
//! rows stay in its memory. Prints the time per sweep over zero-copy
//! memory, staged memory (eager and lazy host coherence: lazy keeps what
//! the GPU wrote in its memory until the host reads it, so GPU-alone sweeps
//! move nothing down), and on the GPU alone, with the MB moved up and down
//! per sweep (the final read included), each verified against a CPU
//! reference.
//!
//! ```text
//! cargo run --release --example stencil [-- WIDTH HEIGHT SWEEPS]
//! ```
//!
//! On an integrated GPU or lavapipe the two placements are the same memory
//! (staging is forced here to show its transfers); on a discrete GPU
//! `staged` is what `auto` chooses.

use coexec::{
    Args, Buffer, CpuArgs, Devices, Engine, EngineOptions, Footprint, HostCoherence, IndexSpace,
    Kernel, MemoryPlacement, Package, Scheduler,
};
use std::sync::Arc;
use std::time::Instant;

const SHADER: &str = r#"#version 450
layout(local_size_x = 16, local_size_y = 16) in;
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) writeonly buffer O { float o[]; };
layout(push_constant) uniform P { uint w; uint h; } p;
void main() {
    uvec2 g = gl_GlobalInvocationID.xy;
    if (g.x >= p.w || g.y >= p.h) return;
    uint up = g.y == 0u ? 0u : g.y - 1u;
    uint dn = min(g.y + 1u, p.h - 1u);
    uint lf = g.x == 0u ? 0u : g.x - 1u;
    uint rt = min(g.x + 1u, p.w - 1u);
    float s = x[g.y * p.w + g.x] + x[up * p.w + g.x];
    s = s + x[dn * p.w + g.x];
    s = s + x[g.y * p.w + lf];
    s = s + x[g.y * p.w + rt];
    o[g.y * p.w + g.x] = s * 0.2;
}"#;

/// One output point, in the shader's order of operations.
fn point(x: &[f32], w: usize, h: usize, gx: usize, gy: usize) -> f32 {
    let (up, dn) = (gy.saturating_sub(1), (gy + 1).min(h - 1));
    let (lf, rt) = (gx.saturating_sub(1), (gx + 1).min(w - 1));
    let s = x[gy * w + gx] + x[up * w + gx];
    let s = s + x[dn * w + gx];
    let s = s + x[gy * w + lf];
    let s = s + x[gy * w + rt];
    s * 0.2
}

fn kernel(engine: &Engine, w: usize, h: usize) -> coexec::Result<Kernel> {
    let cpu = Arc::new(move |pkg: &Package, args: &mut CpuArgs<'_>| {
        let x = args.input::<f32>(0);
        let o = args.output::<f32>(1);
        for (j, k) in pkg.items.clone().enumerate() {
            let k = k as usize;
            o[j] = point(x, w, h, k % w, k / w);
        }
    });
    engine.kernel_glsl("stencil", SHADER, Some(cpu))
}

fn initial(w: usize, h: usize) -> Vec<f32> {
    (0..w * h)
        .map(|k| {
            if (k / w) % 64 < 8 && (k % w) % 64 < 8 {
                1.0
            } else {
                0.0
            }
        })
        .collect()
}

/// `sweeps` sweeps on the host.
fn reference(w: usize, h: usize, sweeps: usize) -> Vec<f32> {
    let mut a = initial(w, h);
    let mut b = vec![0.0; w * h];
    for _ in 0..sweeps {
        for (k, v) in b.iter_mut().enumerate() {
            *v = point(&a, w, h, k % w, k / w);
        }
        std::mem::swap(&mut a, &mut b);
    }
    a
}

/// What one configuration measured.
struct Measured {
    per_sweep_s: f64,
    upload_bytes: u64,
    download_bytes: u64,
    gpu_items: u64,
    max_error: f32,
}

/// Runs `sweeps` sweeps on `devices` of `engine` and checks the result.
fn sweep(
    engine: &Engine,
    (w, h, sweeps): (usize, usize, usize),
    devices: Devices,
    want: &[f32],
) -> coexec::Result<Measured> {
    let k = kernel(engine, w, h)?;
    let mut bufs: [Buffer<f32>; 2] = [
        engine.buffer_from_slice(&initial(w, h))?,
        engine.buffer::<f32>(w * h)?,
    ];
    let space = IndexSpace::D2 {
        width: w as u32,
        height: h as u32,
    };
    let sched = Scheduler::hguided();
    let mut m = Measured {
        per_sweep_s: 0.0,
        upload_bytes: 0,
        download_bytes: 0,
        gpu_items: 0,
        max_error: 0.0,
    };
    let t = Instant::now();
    for s in 0..sweeps {
        let [a, b] = &mut bufs;
        let (x, o) = if s % 2 == 0 { (&*a, b) } else { (&*b, a) };
        let args = Args::new()
            .input(x)
            .footprint(Footprint::rows(1))
            .output(o)
            .push(&[w as u32, h as u32]);
        let r = engine.run(&k, args, space, &sched, devices)?;
        for d in &r.devices {
            m.upload_bytes += d.transfers.upload_bytes;
            m.download_bytes += d.transfers.download_bytes;
            if d.kind == coexec::DeviceKind::Gpu {
                m.gpu_items += d.items;
            }
        }
    }
    // Lazy host coherence: what the GPU left in the mirrors comes back
    // when the host reads it; timed and counted with the sweeps.
    m.download_bytes += bufs[sweeps % 2].sync()?;
    m.per_sweep_s = t.elapsed().as_secs_f64() / sweeps as f64;
    let got = &bufs[sweeps % 2];
    m.max_error = got
        .iter()
        .zip(want)
        .map(|(g, w)| (g - w).abs())
        .fold(0.0, f32::max);
    Ok(m)
}

fn engine_with(memory: MemoryPlacement, host_coherence: HostCoherence) -> coexec::Result<Engine> {
    Engine::with_options(EngineOptions {
        memory,
        host_coherence,
        ..Default::default()
    })
}

/// The command line's usage line.
const USAGE: &str = "usage: stencil [WIDTH HEIGHT SWEEPS] (defaults 1024 1024 100)";

fn main() -> Result<(), Box<dyn std::error::Error>> {
    if std::env::args().any(|a| a == "-h" || a == "--help") {
        println!("{USAGE}");
        return Ok(());
    }
    let arg = |i: usize, default: usize| -> Result<usize, Box<dyn std::error::Error>> {
        match std::env::args().nth(i) {
            None => Ok(default),
            Some(s) => s
                .parse()
                .map_err(|e| format!("argument {i} ({s:?}): {e}; {USAGE}").into()),
        }
    };
    let (w, h, sweeps) = (arg(1, 1024)?, arg(2, 1024)?, arg(3, 100)?);
    if w < 2 || h < 2 || sweeps == 0 {
        return Err("WIDTH and HEIGHT must be at least 2, SWEEPS at least 1".into());
    }
    let want = reference(w, h, sweeps);
    let zero_copy = engine_with(MemoryPlacement::ZeroCopy, HostCoherence::Eager)?;
    let staged = engine_with(MemoryPlacement::Staged, HostCoherence::Eager)?;
    let lazy = engine_with(MemoryPlacement::Staged, HostCoherence::Lazy)?;
    println!(
        "device: {}, CPU workers: {}; {w}x{h}, {sweeps} sweeps",
        staged.device_info().name,
        staged.workers()
    );
    let mut bad = false;
    for (label, engine, devices) in [
        ("zero-copy, CPU + GPU", &zero_copy, Devices::ALL),
        ("staged, CPU + GPU", &staged, Devices::ALL),
        ("staged, GPU alone", &staged, Devices::GPU),
        ("staged lazy, CPU + GPU", &lazy, Devices::ALL),
        ("staged lazy, GPU alone", &lazy, Devices::GPU),
        ("zero-copy, GPU alone", &zero_copy, Devices::GPU),
    ] {
        let m = sweep(engine, (w, h, sweeps), devices, &want)?;
        let per = |bytes: u64| bytes as f64 / sweeps as f64 / 1e6;
        println!(
            "{label:<22} [{}] {:>9.3} ms/sweep  GPU share {:>5.1}%  up {:>8.3} MB/sweep  down {:>8.3} MB/sweep  max error {:.2e}",
            engine.memory_placement(),
            m.per_sweep_s * 1e3,
            100.0 * m.gpu_items as f64 / (w * h * sweeps) as f64,
            per(m.upload_bytes),
            per(m.download_bytes),
            m.max_error,
        );
        bad |= m.max_error > 1e-4;
    }
    if bad {
        return Err("a result differs from the CPU reference".into());
    }
    println!("all results match the CPU reference");
    Ok(())
}
