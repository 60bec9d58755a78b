//! A Mandelbrot image rendered by every MPI rank's engine: the ranks claim
//! packages of rows from the RMA counter, each runs its rows on its own
//! node's CPU cores and GPU, and rank 0 gathers the image and checks every
//! pixel against a CPU reference (exit status 1 on a mismatch). Each claim
//! runs its rows of the whole image (`Engine::run_range`): the kernel sees
//! global ids, and what it learned on one claim holds for the next.
//! `--rows` is rounded up to whole rows of work-groups (16 rows).
//!
//! ```text
//! mpirun -n 2 --oversubscribe target/release/examples/mandelbrot \
//!     [--width 256] [--height 256] [--iters 256] [--rows 4] \
//!     [--workers N] [--devices cpu|gpu|all] [--reps 1] [--alone]
//! ```
//! `--reps N` times N runs (rank 0 prints the median, a barrier before and
//! after each); `--alone` times one engine over the whole image on rank 0
//! instead (no MPI run), the baseline of the overhead figures.

use coexec::workloads::mandelbrot::{mandel_pixel, Params};
use coexec::{Args, Buffer, CpuArgs, Devices, Engine, EngineOptions, Kernel, Package, Scheduler};
use coexec_mpi::mpi::topology::SimpleCommunicator;
use coexec_mpi::mpi::traits::*;
use coexec_mpi::{DistOptions, DistSpace, Pieces};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The shader of `shaders/mandelbrot.comp`: a claim runs its rows of the
/// whole image (`Engine::run_range`), so ids are global.
const GLSL: &str = "#version 450
layout(local_size_x = 16, local_size_y = 16) in;
layout(std430, binding = 0) writeonly buffer Out { uint iters[]; };
layout(push_constant) uniform Params {
    uint width; uint height; uint max_iter; uint pad;
    float x0; float y0; float dx; float dy;
} p;
void main() {
    uint px = gl_GlobalInvocationID.x;
    uint py = gl_GlobalInvocationID.y;
    if (px >= p.width || py >= p.height) return;
    precise float cr = p.x0 + float(px) * p.dx;
    precise float ci = p.y0 + float(py) * p.dy;
    precise float zr = 0.0;
    precise float zi = 0.0;
    uint i = 0u;
    while (i < p.max_iter) {
        precise float zr2 = zr * zr;
        precise float zi2 = zi * zi;
        if (zr2 + zi2 > 4.0) break;
        precise float t = zr2 - zi2 + cr;
        zi = 2.0 * zr * zi + ci;
        zr = t;
        i++;
    }
    iters[py * p.width + px] = i;
}";

/// The CPU implementation: the package's rows (global ones).
fn rows_cpu(pkg: &Package, args: &mut CpuArgs<'_>) {
    let p: Params = args.push();
    let out = args.output::<u32>(0);
    let w = p.width as usize;
    for (r, py) in pkg.rows.clone().unwrap_or(0..0).enumerate() {
        for px in 0..p.width {
            out[r * w + px as usize] = mandel_pixel(&p, px, py);
        }
    }
}

/// Command-line options.
struct Opts {
    width: u32,
    height: u32,
    iters: u32,
    rows: u32,
    workers: Option<usize>,
    devices: Devices,
    reps: usize,
    alone: bool,
}

fn parse() -> Result<Opts, String> {
    let mut o = Opts {
        width: 256,
        height: 256,
        iters: 256,
        rows: 4,
        workers: None,
        devices: Devices::ALL,
        reps: 1,
        alone: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        if flag == "--alone" {
            o.alone = true;
            continue;
        }
        let v = it.next().ok_or(format!("{flag} needs a value"))?;
        let num = |v: &str| v.parse::<u64>().map_err(|e| format!("{flag} {v}: {e}"));
        match flag.as_str() {
            "--width" => o.width = num(&v)? as u32,
            "--height" => o.height = num(&v)? as u32,
            "--iters" => o.iters = num(&v)? as u32,
            "--rows" => o.rows = num(&v)? as u32,
            "--workers" => o.workers = Some(num(&v)? as usize),
            "--reps" => o.reps = (num(&v)? as usize).max(1),
            "--devices" => o.devices = v.parse()?,
            _ => return Err(format!("unknown flag {flag}")),
        }
    }
    Ok(o)
}

fn main() -> ExitCode {
    let Some(universe) = coexec_mpi::initialize() else {
        eprintln!("mandelbrot: MPI is already initialized");
        return ExitCode::FAILURE;
    };
    let world = universe.world();
    match render(&world) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("mandelbrot: rank {}: {e}", world.rank());
            ExitCode::FAILURE
        }
    }
}

/// Renders (and times) the image; `Ok(false)` when rank 0 found a mismatch.
fn render(world: &SimpleCommunicator) -> Result<bool, Box<dyn std::error::Error>> {
    let o = parse()?;
    let engine = Engine::with_options(EngineOptions {
        workers: o.workers,
        profiles: false,
        ..Default::default()
    })?;
    let kernel = engine.kernel_glsl("mandelbrot-mpi", GLSL, Some(Arc::new(rows_cpu)))?;
    let params = Params::view(o.width, o.height, o.iters);
    if o.alone {
        return alone(world, &engine, &kernel, params, &o);
    }
    let mut times = Vec::new();
    let mut image = None;
    let mut local: Buffer<u32> = engine.buffer((o.width as usize * o.height as usize).max(1))?;
    for _ in 0..o.reps {
        world.barrier();
        let t = Instant::now();
        let pieces = distributed(world, &engine, &kernel, &mut local, params, &o)?;
        let img = pieces.gather(world, 0, u64::from(o.width) * u64::from(o.height))?;
        world.barrier();
        times.push(t.elapsed());
        image = img;
    }
    let Some(image) = image else {
        return Ok(true);
    };
    let ok = verify(&image, &params);
    println!(
        "mandelbrot {}x{} on {} rank(s): median {:.3} ms over {} run(s); {}",
        o.width,
        o.height,
        world.size(),
        median(&mut times).as_secs_f64() * 1e3,
        o.reps,
        if ok { "verified" } else { "MISMATCH" }
    );
    Ok(ok)
}

/// One distributed run: this rank's pieces of the image. Each claim runs
/// its rows of the whole image (`Engine::run_range`) into `image`, a
/// whole-image buffer kept across runs, so that what the kernel learned
/// on one claim holds for the next.
fn distributed(
    world: &SimpleCommunicator,
    engine: &Engine,
    kernel: &Kernel,
    image: &mut Buffer<u32>,
    params: Params,
    o: &Opts,
) -> Result<Pieces<u32>, Box<dyn std::error::Error>> {
    // Units of whole rows of work-groups: `--rows` rounded up to a
    // multiple of the work-group's 16 rows.
    let groups = o.rows.div_ceil(kernel.local_size()[1]).max(1);
    let space = DistSpace::for_kernel(kernel, whole(o), groups)?;
    let mut pieces = Pieces::new(1)?;
    let scheduler = Scheduler::hguided();
    let p = Params { pad: 0, ..params };
    let report = coexec_mpi::run(world, space, &DistOptions::default(), |claim| {
        let units = space.kernel_units(claim, kernel)?;
        let args = Args::new().output(image).push(&p);
        engine.run_range(kernel, args, whole(o), units, &scheduler, o.devices)?;
        let items = claim.items.start as usize..claim.items.end as usize;
        pieces
            .push(claim.items.clone(), &image[items])
            .map_err(|e| coexec::Error::Interface(e.to_string()))
    })?;
    if std::env::var_os("COEXEC_MPI_VERBOSE").is_some() {
        eprintln!("{report:?}");
    }
    Ok(pieces)
}

/// The whole image's index space.
fn whole(o: &Opts) -> coexec::IndexSpace {
    coexec::IndexSpace::D2 {
        width: o.width,
        height: o.height,
    }
}

/// One engine over the whole image, on rank 0 only (the baseline).
fn alone(
    world: &SimpleCommunicator,
    engine: &Engine,
    kernel: &Kernel,
    params: Params,
    o: &Opts,
) -> Result<bool, Box<dyn std::error::Error>> {
    if world.rank() != 0 {
        return Ok(true);
    }
    let mut out: Buffer<u32> = engine.buffer((o.width as usize * o.height as usize).max(1))?;
    let space = coexec::IndexSpace::D2 {
        width: o.width,
        height: o.height,
    };
    let p = Params { pad: 0, ..params };
    let mut times = Vec::new();
    for _ in 0..o.reps {
        let t = Instant::now();
        let args = Args::new().output(&mut out).push(&p);
        engine.run(kernel, args, space, &Scheduler::hguided(), o.devices)?;
        times.push(t.elapsed());
    }
    let ok = verify(&out, &params);
    println!(
        "mandelbrot {}x{} alone (one engine): median {:.3} ms over {} run(s); {}",
        o.width,
        o.height,
        median(&mut times).as_secs_f64() * 1e3,
        o.reps,
        if ok { "verified" } else { "MISMATCH" }
    );
    Ok(ok)
}

/// Every pixel against the CPU reference: exact on >= 99.9% of pixels (a
/// GPU may round one float step differently near the set's boundary), as
/// the suite's Mandelbrot checks.
fn verify(image: &[u32], p: &Params) -> bool {
    let total = u64::from(p.width) * u64::from(p.height);
    if image.len() as u64 != total {
        eprintln!("mandelbrot: {} pixels, expected {total}", image.len());
        return false;
    }
    let mut mismatches = 0u64;
    for py in 0..p.height {
        for px in 0..p.width {
            if image[(py * p.width + px) as usize] != mandel_pixel(p, px, py) {
                mismatches += 1;
            }
        }
    }
    if mismatches > 0 {
        eprintln!("mandelbrot: {mismatches} of {total} pixels differ from the reference");
    }
    mismatches * 1000 <= total
}

fn median(t: &mut [Duration]) -> Duration {
    t.sort();
    t[t.len() / 2]
}
