//! The binomial kernel (`shaders/binomial.comp`) in variants, on the GPU
//! alone: SPIR-V optimization level, work-group size, where the node array
//! lives and how the inner loop reads it. Each variant is verified against
//! the CPU reference (`coexec::workloads::binomial::price_option`, the
//! suite's tolerance) and timed: the median of `--reps` runs after
//! `--warmup` runs. One line per variant, then one JSON line; the GLSL,
//! SPIR-V and disassembly of each go to `--dump-dir`. Exits non-zero when a
//! variant fails to build, to run or to verify.
//!
//! ```text
//! cargo run --release --example binomial_variants -- --log2 14
//! ```

mod dump;
mod shaders;
#[cfg(test)]
mod tests;
mod variants;

use clap::Parser;
use coexec::workloads::binomial::{price_option, Params};
use coexec::{Args, Buffer, Devices, Engine, IndexSpace, Kernel, Scheduler};
use serde::Serialize;
use std::path::PathBuf;
use variants::{Source, Variant};

/// Command line.
#[derive(Parser)]
#[command(about = "Binomial kernel variants on the GPU alone (issue #14)")]
struct Cli {
    /// Options to price: 2^LOG2.
    #[arg(long, default_value_t = 22, value_parser = clap::value_parser!(u32).range(0..=28))]
    log2: u32,
    /// Timed runs per variant (the median is reported).
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..))]
    reps: u32,
    /// Untimed runs per variant before the timed ones.
    #[arg(long, default_value_t = 1)]
    warmup: u32,
    /// Options checked against the CPU reference at most (evenly spread).
    #[arg(long, default_value_t = 1 << 16)]
    check: usize,
    /// Only these variants (comma-separated names; see --list).
    #[arg(long, value_delimiter = ',')]
    only: Vec<String>,
    /// Print the variants and exit.
    #[arg(long)]
    list: bool,
    /// Where each variant's GLSL, SPIR-V and disassembly go.
    #[arg(long, default_value = "target/binomial_variants")]
    dump_dir: PathBuf,
}

/// One variant's outcome (a JSON element).
#[derive(Serialize)]
struct Outcome {
    name: String,
    what: String,
    /// "ok", "mismatch", "skipped: ..." or "failed: ...".
    status: String,
    median_ms: Option<f64>,
    times_ms: Vec<f64>,
    checked: usize,
    mismatches: usize,
    spirv: Option<dump::Stats>,
}

/// The options, the output and the reference prices of a sample.
struct Problem {
    options: Buffer<[f32; 4]>,
    price: Buffer<f32>,
    params: Params,
    sample: Vec<(usize, f32)>,
}

/// Deterministic options: S in [10, 100), K in [0.7 S, 1.3 S), T in
/// [0.25, 2) years, sigma in [0.1, 0.5) (the suite's ranges).
fn options(n: usize) -> Vec<[f32; 4]> {
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = || {
        // xorshift64*: a fixed stream, independent of the platform.
        state ^= state >> 12;
        state ^= state << 25;
        state ^= state >> 27;
        (state.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 40) as f32 / (1u64 << 24) as f32
    };
    (0..n)
        .map(|_| {
            let (a, b, c, d) = (next(), next(), next(), next());
            let s = 10.0 + 90.0 * a;
            [s, s * (0.7 + 0.6 * b), 0.25 + 1.75 * c, 0.1 + 0.4 * d]
        })
        .collect()
}

/// Reference prices of `check` options evenly spread over `opts`, priced
/// on every available core.
fn reference(opts: &[[f32; 4]], check: usize, rate: f32) -> Vec<(usize, f32)> {
    let n = opts.len();
    let k = check.clamp(1, n.max(1)).min(n);
    let idx: Vec<usize> = (0..k).map(|j| j * n / k).collect();
    let threads = std::thread::available_parallelism().map_or(1, |t| t.get());
    let chunk = idx.len().div_ceil(threads).max(1);
    std::thread::scope(|s| {
        let parts: Vec<_> = idx
            .chunks(chunk)
            .map(|c| {
                s.spawn(move || {
                    c.iter()
                        .map(|&i| (i, price_option(&opts[i], rate)))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        parts
            .into_iter()
            .flat_map(|h| h.join().expect("reference thread"))
            .collect()
    })
}

/// Mismatches of the last run's prices against the sample, with the
/// suite's rule: finite and `|d| <= 1e-3 * (1 + |ref|)`.
fn mismatches(p: &Problem) -> usize {
    p.sample
        .iter()
        .filter(|&&(i, r)| {
            let g = p.price[i];
            !g.is_finite() || f64::from((g - r).abs()) > 1e-3 * (1.0 + f64::from(r.abs()))
        })
        .count()
}

/// One GPU-only run, one package; its time in milliseconds.
fn run_once(engine: &Engine, kernel: &Kernel, p: &mut Problem) -> coexec::Result<f64> {
    p.price.as_mut_slice().fill(f32::NAN);
    let n = u64::from(p.params.n);
    let args = Args::new()
        .input(&p.options)
        .output(&mut p.price)
        .push(&p.params);
    let sched = Scheduler::Static { powers: None };
    let report = engine.run(kernel, args, IndexSpace::D1(n), &sched, Devices::GPU)?;
    Ok(report.time_s * 1e3)
}

/// The device's `maxComputeSharedMemorySize`.
fn max_shared(engine: &Engine) -> u64 {
    u64::from(engine.device_info().max_shared_memory)
}

/// Builds, dumps, checks and times one variant.
fn measure(engine: &Engine, cli: &Cli, v: &Variant, p: &mut Problem, shared_max: u64) -> Outcome {
    let mut out = Outcome {
        name: v.name.clone(),
        what: v.what.clone(),
        status: "ok".into(),
        median_ms: None,
        times_ms: vec![],
        checked: p.sample.len(),
        mismatches: 0,
        spirv: None,
    };
    if v.shared_bytes > shared_max {
        out.status = format!(
            "skipped: {} B shared > maxComputeSharedMemorySize {shared_max}",
            v.shared_bytes
        );
        return out;
    }
    let (words, glsl) = match &v.source {
        Source::Build => {
            // SPIR-V is a stream of little-endian words.
            let bytes = coexec::workloads::spirv::BINOMIAL;
            let w: Vec<u32> = bytes
                .chunks_exact(4)
                .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect();
            (w, None)
        }
        Source::Glsl(src, level) => match coexec::shader::compile_glsl_with(src, &v.name, *level) {
            Ok(w) => (w, Some(src.as_str())),
            Err(e) => {
                out.status = format!("failed: {e}");
                return out;
            }
        },
    };
    let mut stats = dump::stats(&words);
    stats.dis_lines = dump::write(&cli.dump_dir, &v.name, glsl, &words);
    out.spirv = Some(stats);
    let kernel = match engine.kernel(&v.name, Some(bytemuck::cast_slice(&words)), None, None) {
        Ok(k) => k,
        Err(e) => {
            out.status = format!("failed: {e}");
            return out;
        }
    };
    for rep in 0..cli.warmup + cli.reps {
        match run_once(engine, &kernel, p) {
            Ok(ms) if rep >= cli.warmup => out.times_ms.push(ms),
            Ok(_) => {}
            Err(e) => {
                out.status = format!("failed: {e}");
                return out;
            }
        }
        out.mismatches = out.mismatches.max(mismatches(p));
    }
    if out.mismatches > 0 {
        out.status = "mismatch".into();
    }
    out.median_ms = median(&out.times_ms);
    out
}

/// The variants that failed to build or run, or did not verify (skipped
/// ones, over the device's shared memory, are not failures).
fn failures(outcomes: &[Outcome]) -> Vec<&str> {
    outcomes
        .iter()
        .filter(|o| o.status != "ok" && !o.status.starts_with("skipped"))
        .map(|o| o.name.as_str())
        .collect()
}

/// The median (mean of the middle two for an even count).
fn median(xs: &[f64]) -> Option<f64> {
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    let m = v.len() / 2;
    match v.len() {
        0 => None,
        l if l % 2 == 1 => Some(v[m]),
        _ => Some((v[m - 1] + v[m]) / 2.0),
    }
}

/// The output line of one variant.
fn line(o: &Outcome) -> String {
    let ms = o.median_ms.map_or("-".into(), |m| format!("{m:.3}"));
    let (bytes, dis, fvars, loops) = o.spirv.as_ref().map_or((0, None, 0, 0), |s| {
        (s.bytes, s.dis_lines, s.function_vars, s.loops)
    });
    let dis = dis.map_or("-".into(), |l| l.to_string());
    format!(
        "{:<15} {:>10} ms  {:>4}/{:<5} bad  spv {:>6} B {:>5} lines  fvars {fvars} loops {loops}  {:<8}  {}",
        o.name, ms, o.mismatches, o.checked, bytes, dis, o.status, o.what
    )
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let cli = Cli::parse();
    let all = variants::all();
    if cli.list {
        for v in &all {
            println!("{:<15} {}", v.name, v.what);
        }
        return Ok(());
    }
    if let Some(bad) = cli.only.iter().find(|n| !all.iter().any(|v| &v.name == *n)) {
        return Err(format!("no variant named {bad:?} (see --list)").into());
    }
    let engine = Engine::new()?;
    let info = engine.device_info();
    let n = 1usize << cli.log2;
    let shared_max = max_shared(&engine);
    println!(
        "device: {} ({}), options: {n}, warm-up {}, reps {}, shared max {shared_max} B, dump {}",
        info.name,
        info.device_type,
        cli.warmup,
        cli.reps,
        cli.dump_dir.display()
    );
    let opts = options(n);
    let params = Params {
        n: n as u32,
        rate: 0.02,
    };
    let mut problem = Problem {
        options: engine.buffer_from_slice(&opts)?,
        price: engine.buffer::<f32>(n)?,
        sample: reference(&opts, cli.check, params.rate),
        params,
    };
    let mut outcomes = vec![];
    for v in all
        .iter()
        .filter(|v| cli.only.is_empty() || cli.only.contains(&v.name))
    {
        let o = measure(&engine, &cli, v, &mut problem, shared_max);
        println!("{}", line(&o));
        outcomes.push(o);
    }
    let json = serde_json::json!({
        "bench": "binomial_variants",
        "device": info.name,
        "options": n,
        "warmup": cli.warmup,
        "reps": cli.reps,
        "max_shared_bytes": shared_max,
        "variants": outcomes,
    });
    println!("{json}");
    let bad = failures(&outcomes);
    if !bad.is_empty() {
        return Err(format!("variants that failed or did not verify: {}", bad.join(", ")).into());
    }
    Ok(())
}
