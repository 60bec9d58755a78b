//! A dot product of two vectors co-executed by every MPI rank's engine:
//! the ranks claim packages of work-groups from the RMA counter, each runs
//! its claims on its own node's CPU cores and GPU with a sum
//! [`Reduction`] over the claim's sub-range (`Engine::run_range`), adds
//! its claims' partial sums, and an MPI reduce gives the total at rank 0,
//! which checks it against a CPU reference (exit status 1 on a mismatch).
//!
//! Precision: the vectors are `f32`, replicated on every rank, and hold
//! small integers (0 to 7), so every partial sum is an integer below
//! 2^24 and exact in `f32` (the work-groups' and the claims' sums); the
//! claims' sums are added in `f64` on each rank and across ranks (exact
//! too). The result is then exact whichever rank and device ran what, and
//! is checked to equal the reference exactly; `--n` is refused where the
//! sum could reach 2^24. Every item is claimed exactly once (the claims'
//! guarantee); rank 0 also checks that the ranks' claimed items add up to
//! `--n`.
//!
//! ```text
//! mpirun -n 2 --oversubscribe target/release/examples/mpi_dot \
//!     [--n 200003] [--groups 4] [--workers N] [--devices cpu|gpu|all]
//! ```

use coexec::{Args, CpuArgs, Devices, Engine, EngineOptions, IndexSpace, Package, Reduction};
use coexec::{Buffer, Kernel, Scheduler};
use coexec_mpi::mpi::collective::SystemOperation;
use coexec_mpi::mpi::topology::SimpleCommunicator;
use coexec_mpi::mpi::traits::*;
use coexec_mpi::{DistOptions, DistSpace};
use std::process::ExitCode;
use std::sync::Arc;

/// One element per work-item; each work-group writes its sum to its slot.
const GLSL: &str = r#"#version 450
layout(local_size_x = 256) in;
#include "coexec_reduce.glsl"
COEXEC_DEFINE_REDUCE(group_sum, float, COEXEC_SUM)
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer Y { float y[]; };
layout(std430, binding = 2) writeonly buffer P { float partials[]; };
layout(push_constant) uniform Push { uint n; } p;
void main() {
    uint i = gl_GlobalInvocationID.x;
    float s = group_sum(i < p.n ? x[i] * y[i] : 0.0);
    if (gl_LocalInvocationIndex == 0u) partials[coexec_slot(1u)] = s;
}"#;

/// The largest element (the data are integers 0..=MAX).
const MAX: u64 = 7;

/// The CPU implementation: the package's (global) items into its
/// accumulator.
fn cpu_dot(pkg: &Package, args: &mut CpuArgs<'_>) {
    let (x, y) = (args.input::<f32>(0), args.input::<f32>(1));
    let acc = args.accumulator::<f32>(2);
    let items = pkg.items.start as usize..(pkg.items.end as usize).min(x.len());
    acc[0] += x[items.clone()]
        .iter()
        .zip(&y[items])
        .map(|(a, b)| a * b)
        .sum::<f32>();
}

/// Element `i` of vector `seed`: an integer in 0..=MAX.
fn value(i: u64, seed: u64) -> f32 {
    (((i.wrapping_mul(2_654_435_761) ^ seed) >> 7) % (MAX + 1)) as f32
}

/// Command-line options.
struct Opts {
    n: u64,
    groups: u32,
    workers: Option<usize>,
    devices: Devices,
}

fn parse() -> Result<Opts, String> {
    let mut o = Opts {
        n: 200_003,
        groups: 4,
        workers: None,
        devices: Devices::ALL,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let v = it.next().ok_or(format!("{flag} needs a value"))?;
        let num = |v: &str| v.parse::<u64>().map_err(|e| format!("{flag} {v}: {e}"));
        match flag.as_str() {
            "--n" => o.n = num(&v)?,
            "--groups" => o.groups = u32::try_from(num(&v)?).map_err(|e| e.to_string())?,
            "--workers" => o.workers = Some(num(&v)? as usize),
            "--devices" => o.devices = v.parse()?,
            _ => return Err(format!("unknown flag {flag}")),
        }
    }
    // Every partial sum an integer below 2^24: exact in f32.
    if o.n == 0 || o.n.saturating_mul(MAX * MAX) >= 1 << 24 {
        return Err(format!(
            "--n {} must be 1 to {} (sums below 2^24 stay exact in f32)",
            o.n,
            ((1u64 << 24) - 1) / (MAX * MAX)
        ));
    }
    Ok(o)
}

fn main() -> ExitCode {
    let Some(universe) = coexec_mpi::initialize() else {
        eprintln!("dot: MPI is already initialized");
        return ExitCode::FAILURE;
    };
    let world = universe.world();
    match dot(&world) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("dot: rank {}: {e}", world.rank());
            ExitCode::FAILURE
        }
    }
}

/// The distributed dot product; `Ok(false)` when rank 0 found a mismatch.
fn dot(world: &SimpleCommunicator) -> Result<bool, Box<dyn std::error::Error>> {
    let o = parse()?;
    let engine = Engine::with_options(EngineOptions {
        workers: o.workers,
        profiles: false,
        ..Default::default()
    })?;
    let kernel = engine.kernel_glsl("dot-mpi", GLSL, Some(Arc::new(cpu_dot)))?;
    // Replicated inputs: every rank builds them.
    let xs: Vec<f32> = (0..o.n).map(|i| value(i, 0x55)).collect();
    let ys: Vec<f32> = (0..o.n).map(|i| value(i, 0xa3)).collect();
    let x = engine.buffer_from_slice(&xs)?;
    let y = engine.buffer_from_slice(&ys)?;
    let (local, items) = local_sum(world, &engine, &kernel, [&x, &y], &o)?;
    let root = world.process_at_rank(0);
    if world.rank() != 0 {
        root.reduce_into(&local, SystemOperation::sum());
        root.reduce_into(&items, SystemOperation::sum());
        return Ok(true);
    }
    let (mut total, mut covered) = (0.0f64, 0u64);
    root.reduce_into_root(&local, &mut total, SystemOperation::sum());
    root.reduce_into_root(&items, &mut covered, SystemOperation::sum());
    let reference: u64 = xs.iter().zip(&ys).map(|(a, b)| (a * b) as u64).sum();
    let ok = total == reference as f64 && covered == o.n;
    println!(
        "dot n = {} on {} rank(s): {total} (reference {reference}, {covered} items claimed); {}",
        o.n,
        world.size(),
        if ok { "verified" } else { "MISMATCH" }
    );
    Ok(ok)
}

/// This rank's part: the sum of its claims' reductions (in f64) and the
/// items it claimed.
fn local_sum(
    world: &SimpleCommunicator,
    engine: &Engine,
    kernel: &Kernel,
    [x, y]: [&Buffer<f32>; 2],
    o: &Opts,
) -> Result<(f64, u64), Box<dyn std::error::Error>> {
    let space = DistSpace::for_kernel(kernel, IndexSpace::D1(o.n), o.groups.max(1))?;
    let mut sum = Reduction::<f32>::sum(1);
    let mut local = 0.0f64;
    let scheduler = Scheduler::hguided();
    let report = coexec_mpi::run(world, space, &DistOptions::default(), |claim| {
        let units = space.kernel_units(claim, kernel)?;
        let args = Args::new()
            .input(x)
            .input(y)
            .reduce(&mut sum)
            .push(&(o.n as u32));
        engine.run_range(
            kernel,
            args,
            space.index_space(),
            units,
            &scheduler,
            o.devices,
        )?;
        local += f64::from(sum.scalar());
        Ok(())
    })?;
    if std::env::var_os("COEXEC_MPI_VERBOSE").is_some() {
        eprintln!("{report:?}");
    }
    Ok((local, report.items))
}
