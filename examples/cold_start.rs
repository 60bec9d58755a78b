//! A first run in a fresh process, where the CPU's cost per work-group is
//! far from even: a testbed for how a cold run splits work before any
//! device is measured.
//!
//! The kernel hashes every work-item (256 rounds). The GPU runs the shader;
//! the CPU runs the same hash and, with `irregular`, also spends
//! `HEAVY_US` microseconds on each work-group of the middle third of the
//! range, and 2 microseconds on the others: a GPU-dominated kernel whose
//! CPU cost varies a hundredfold over the range, as Mandelbrot's does.
//! With `even`, the CPU runs the hash alone. Every run is checked against
//! the hash computed here.
//!
//! ```text
//! cargo run --release --example cold_start -- [even|irregular] [cpu|gpu|all] [GROUPS] [RUNS]
//! ```
//!
//! It prints the time of each run; the first is the cold one (run it with
//! `COEXEC_PROFILE=off` for a first run with nothing learned). With
//! `COLD_START_PACKAGES` set, it also lists each run's packages by start
//! time: device (0: the CPU), lane, units and span.

use coexec::{Args, CpuArgs, Devices, Engine, IndexSpace, Package, Scheduler};
use std::sync::Arc;
use std::time::{Duration, Instant};

const LOCAL: u64 = 64;
const ROUNDS: u32 = 256;
const HEAVY_US: u64 = 2000;

const SHADER: &str = r#"#version 450
layout(local_size_x = 64) in;
layout(std430, binding = 0) writeonly buffer O { uint o[]; };
layout(push_constant) uniform P { uint n; uint rounds; } p;
void main() {
    uint i = gl_GlobalInvocationID.x;
    if (i >= p.n) return;
    uint h = i;
    for (uint r = 0u; r < p.rounds; r++) { h = h * 1664525u + 1013904223u; h ^= h >> 13; }
    o[i] = h;
}"#;

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    n: u32,
    rounds: u32,
}

fn hash(i: u32, rounds: u32) -> u32 {
    let mut h = i;
    for _ in 0..rounds {
        h = h.wrapping_mul(1664525).wrapping_add(1013904223);
        h ^= h >> 13;
    }
    h
}

/// Spins for `us` microseconds (a busy CPU, not a sleeping one).
fn spin(us: u64) {
    let until = Instant::now() + Duration::from_micros(us);
    while Instant::now() < until {
        std::hint::spin_loop();
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut argv = std::env::args().skip(1);
    let irregular = match argv.next().as_deref() {
        None | Some("irregular") => true,
        Some("even") => false,
        Some(other) => return Err(format!("unknown profile {other:?}: even or irregular").into()),
    };
    let devices = match argv.next().as_deref() {
        None | Some("all") => Devices::ALL,
        Some("cpu") => Devices::CPU,
        Some("gpu") => Devices::GPU,
        Some(other) => return Err(format!("unknown devices {other:?}: cpu, gpu or all").into()),
    };
    let groups: u64 = argv.next().map(|s| s.parse()).transpose()?.unwrap_or(256);
    let runs: usize = argv.next().map(|s| s.parse()).transpose()?.unwrap_or(3);
    if groups == 0 || runs == 0 {
        return Err("GROUPS and RUNS must be at least 1".into());
    }
    let n = groups * LOCAL;
    let n32 = u32::try_from(n).map_err(|_| "GROUPS * 64 must fit in 32 bits")?;
    let heavy = groups / 3..2 * groups / 3;

    let engine = Engine::new()?;
    let cpu = Arc::new(move |pkg: &Package, args: &mut CpuArgs<'_>| {
        let p: Params = args.push();
        let start = pkg.items.start;
        for (k, o) in args.output::<u32>(0).iter_mut().enumerate() {
            *o = hash((start + k as u64) as u32, p.rounds);
        }
        if irregular {
            for unit in pkg.units.clone() {
                spin(if heavy.contains(&unit) { HEAVY_US } else { 2 });
            }
        }
    });
    let kernel = engine.kernel_glsl("cold_start", SHADER, Some(cpu))?;
    let mut out = engine.buffer::<u32>(n as usize)?;
    let reference: Vec<u32> = (0..n32).map(|i| hash(i, ROUNDS)).collect();
    println!(
        "{} groups of {LOCAL}, {} profile, devices {devices:?}",
        groups,
        if irregular { "irregular" } else { "even" }
    );
    for run in 0..runs {
        out.fill(0);
        let args = Args::new().output(&mut out).push(&Params {
            n: n32,
            rounds: ROUNDS,
        });
        let report = engine.run(
            &kernel,
            args,
            IndexSpace::D1(n),
            &Scheduler::hguided(),
            devices,
        )?;
        if let Some(i) = out.iter().zip(&reference).position(|(a, b)| a != b) {
            eprintln!(
                "run {run}: element {i} is {} instead of {}",
                out[i], reference[i]
            );
            std::process::exit(1);
        }
        let cpu_items: u64 = report
            .devices
            .iter()
            .filter(|d| d.kind == coexec::DeviceKind::Cpu)
            .map(|d| d.items)
            .sum();
        println!(
            "run {run}: {:.3} ms, CPU items {cpu_items}",
            report.time_s * 1e3
        );
        if std::env::var_os("COLD_START_PACKAGES").is_some() {
            let mut log: Vec<_> = report.packages.iter().collect();
            log.sort_by(|a, b| a.start_s.total_cmp(&b.start_s));
            for r in log {
                println!(
                    "  device {} lane {} units {:?} {:.3}-{:.3} ms{}",
                    r.device,
                    r.lane,
                    r.units,
                    r.start_s * 1e3,
                    r.end_s * 1e3,
                    if r.stolen { " stolen" } else { "" }
                );
            }
        }
    }
    println!("verified");
    Ok(())
}
