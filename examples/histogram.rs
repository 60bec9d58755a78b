//! A 256-bin byte histogram co-executed on the CPU and the GPU as an array
//! reduction: each GPU work-group counts its bytes in shared memory and
//! writes its 256 counts to its slot; each CPU package counts into its
//! accumulator; the engine adds the slots. Checked against a CPU reference;
//! exits non-zero on a mismatch.
//!
//! ```text
//! cargo run --release --example histogram [-- BYTES [ITERATIONS]]
//! ```

use coexec::{Args, CpuArgs, Devices, Engine, IndexSpace, Package, Reduction, Scheduler};
use std::sync::Arc;
use std::time::Instant;

/// Words (4 bytes each) per work-item.
const WORDS: usize = 16;

const SHADER: &str = r#"#version 450
layout(local_size_x = 256) in;
#include "coexec_reduce.glsl"
layout(std430, binding = 0) readonly buffer D { uint data[]; };
layout(std430, binding = 1) writeonly buffer H { uint partials[]; };
layout(push_constant) uniform P { uint items; } p;
shared uint bins[256];
void main() {
    uint l = gl_LocalInvocationIndex;
    bins[l] = 0u;
    barrier();
    uint i = gl_GlobalInvocationID.x;
    if (i < p.items) {
        for (uint j = 0u; j < 16u; j++) {
            uint w = data[i * 16u + j];
            atomicAdd(bins[w & 255u], 1u);
            atomicAdd(bins[(w >> 8) & 255u], 1u);
            atomicAdd(bins[(w >> 16) & 255u], 1u);
            atomicAdd(bins[w >> 24], 1u);
        }
    }
    barrier();
    partials[coexec_slot(256u) + l] = bins[l];
}"#;

fn count(words: &[u32], bins: &mut [u32]) {
    for w in words {
        for b in w.to_le_bytes() {
            bins[usize::from(b)] += 1;
        }
    }
}

fn cpu_histogram(pkg: &Package, args: &mut CpuArgs<'_>) {
    let data = args.input::<u32>(0);
    let bins = args.accumulator::<u32>(1);
    let (a, b) = (
        pkg.items.start as usize * WORDS,
        pkg.items.end as usize * WORDS,
    );
    count(&data[a..b], bins);
}

/// The command line's usage line.
const USAGE: &str = "usage: histogram [BYTES [ITERATIONS]] (defaults 67108864 10)";

fn main() -> Result<(), Box<dyn std::error::Error>> {
    if std::env::args().any(|a| a == "-h" || a == "--help") {
        println!("{USAGE}");
        return Ok(());
    }
    let mut args = std::env::args().skip(1);
    let bytes: usize = args
        .next()
        .map(|s| number(&s))
        .transpose()?
        .unwrap_or(1 << 26);
    let iterations: usize = args.next().map(|s| number(&s)).transpose()?.unwrap_or(10);
    let items = bytes.div_ceil(4 * WORDS).max(1);
    let engine = Engine::new()?;
    println!(
        "device: {}, CPU workers: {}, {} bytes",
        engine.device_info().name,
        engine.workers(),
        items * WORDS * 4
    );
    let kernel = engine.kernel_glsl("histogram", SHADER, Some(Arc::new(cpu_histogram)))?;
    // Skewed bytes: a few bins are hot (contention in shared memory).
    let words: Vec<u32> = (0..items * WORDS)
        .map(|i| {
            let h = (i as u32).wrapping_mul(2_654_435_761);
            (h >> 8) & 0x3f3f_ffff
        })
        .collect();
    let data = engine.buffer_from_slice(&words)?;
    let mut reference = vec![0u32; 256];
    count(&words, &mut reference);
    let mut hist = Reduction::<u32>::sum(256);
    let (mut total, mut bad) = (0.0, 0);
    for it in 0..iterations {
        let t = Instant::now();
        let run = Args::new()
            .input(&data)
            .reduce(&mut hist)
            .push(&(items as u32));
        let report = engine.run(
            &kernel,
            run,
            IndexSpace::D1(items as u64),
            &Scheduler::hguided(),
            Devices::ALL,
        )?;
        total += t.elapsed().as_secs_f64();
        let ok = hist.value() == &reference[..];
        bad += usize::from(!ok);
        if it == 0 || !ok {
            let split: Vec<String> = report
                .devices
                .iter()
                .map(|d| format!("{} {} items", d.kind, d.items))
                .collect();
            println!(
                "iteration {it}: {} ({})",
                if ok { "ok" } else { "MISMATCH" },
                split.join(", ")
            );
        }
    }
    println!(
        "time per iteration: {:.3} ms",
        total / iterations.max(1) as f64 * 1e3
    );
    if bad > 0 {
        return Err(format!("{bad} of {iterations} iterations differ from the reference").into());
    }
    println!("histogram: verified");
    Ok(())
}

/// `s` as a count, or an error that shows the usage.
fn number(s: &str) -> Result<usize, String> {
    s.parse().map_err(|e| format!("{s:?}: {e}; {USAGE}"))
}
