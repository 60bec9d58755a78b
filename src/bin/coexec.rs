//! `coexec`: device information and single-kernel benchmarks.

use clap::{Parser, Subcommand};
use coexec::error::chain;
use coexec::workloads::{self, Size};
use coexec::{Devices, Engine, EngineOptions, Report, Scheduler};
use serde_json::json;
use std::collections::BTreeMap;
use std::process::ExitCode;

#[derive(Parser)]
#[command(name = "coexec", version, about = "CPU+GPU co-execution engine")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Vulkan devices, chosen memory types and the CPU topology.
    Info,
    /// Runs one kernel and reports time, balance and per-device figures.
    Bench(BenchArgs),
    /// Runs the benchmark suite: every kernel alone on each device and
    /// co-executed with each scheduler; table, JSON and SVG pictures.
    Suite(SuiteArgs),
}

#[derive(clap::Args)]
struct SuiteArgs {
    /// Small sizes and 2 repetitions (a smoke test).
    #[arg(long)]
    quick: bool,
    /// The kernel set: `seed` (the seed kernels but saxpy) or `comparable`
    /// (spmv, gather, blackscholes, jacobi, histogram, collatz: devices
    /// within a small factor of each other).
    #[arg(long, default_value = "seed")]
    set: coexec::suite::KernelSet,
    /// Comma-separated kernels of any set, instead of --set's.
    #[arg(long, value_delimiter = ',')]
    kernels: Option<Vec<String>>,
    /// Timed repetitions after one warm-up (default 5; 2 with --quick).
    #[arg(long)]
    reps: Option<usize>,
    /// Write the results as JSON to this file.
    #[arg(long)]
    json: Option<std::path::PathBuf>,
    /// Write pictures (SVG) and traces (Chrome/Perfetto JSON) to this folder.
    #[arg(long)]
    out: Option<std::path::PathBuf>,
    /// CPU workers (default: one per physical core left by the GPU).
    #[arg(long)]
    workers: Option<usize>,
    /// Skip the time-against-problem-size sweeps.
    #[arg(long)]
    no_scaling: bool,
    /// Solo schedulers for the CPU baseline, comma-separated (default:
    /// static,dynamic:8,dynamic:64,dynamic:200,hguided; with --quick
    /// static,dynamic:64,hguided).
    #[arg(long, value_delimiter = ',')]
    cpu_solo: Option<Vec<String>>,
    /// Co-executed configurations, comma-separated (default: dynamic:5,dynamic:200,static,hguided:hints,hguided:nohints).
    #[arg(long, value_delimiter = ',')]
    schedulers: Option<Vec<String>>,
    /// Problem sizes overriding the defaults, comma-separated KERNEL=SIZE
    /// (SIZE: N, 2^K or WxH), e.g. `nbody=32768,matmul=1024x1024`.
    #[arg(long, value_delimiter = ',')]
    sizes: Option<Vec<String>>,
}

/// Parses `KERNEL=SIZE` pairs of `--sizes`.
fn parse_sizes(pairs: &[String]) -> Result<BTreeMap<String, Size>, String> {
    let mut sizes = BTreeMap::new();
    for pair in pairs {
        let (k, v) = pair
            .split_once('=')
            .ok_or_else(|| format!("--sizes: `{pair}` is not KERNEL=SIZE"))?;
        let k = k.trim();
        workloads::check_name(k).map_err(|e| format!("--sizes: {e}"))?;
        let size: Size = v
            .trim()
            .parse()
            .map_err(|e| format!("--sizes: {k}={v}: {e}"))?;
        if sizes.insert(k.to_string(), size).is_some() {
            return Err(format!("--sizes: {k} given twice"));
        }
    }
    Ok(sizes)
}

#[derive(clap::Args)]
struct BenchArgs {
    /// Kernel: one of `coexec::workloads::NAMES` (saxpy, gaussian, matmul, taylor, binomial, nbody, mandelbrot, ray, rap) or `COMPARABLE` (spmv, gather, blackscholes, jacobi, histogram, collatz).
    #[arg(long)]
    kernel: String,
    /// Problem size: N, 2^K or WxH (default: the kernel's).
    #[arg(long)]
    size: Option<Size>,
    /// static, dynamic:M, hguided (or hguided:k=K,min=M).
    #[arg(long, default_value = "hguided")]
    scheduler: String,
    /// cpu, gpu, cpu,gpu or all.
    #[arg(long, default_value = "all")]
    devices: String,
    /// The CPU's share of the total power (0..1), a hint for static and hguided.
    #[arg(long)]
    cpu_power: Option<f64>,
    /// CPU workers (default: one per physical core left by the GPU).
    #[arg(long)]
    workers: Option<usize>,
    /// Timed repetitions after the warm-ups; the median is reported.
    #[arg(long, default_value_t = 3)]
    reps: usize,
    /// Untimed runs before the timed ones (at least 1). The first run of
    /// the process is reported apart (`first_s`): with a fresh process it
    /// is the cold run.
    #[arg(long, default_value_t = 1)]
    warmup: usize,
    /// Print one JSON object.
    #[arg(long)]
    json: bool,
    /// Write the last run's packages as a Chrome/Perfetto trace to this file.
    #[arg(long)]
    trace: Option<std::path::PathBuf>,
    /// Print the last run's package log.
    #[arg(long)]
    log: bool,
}

/// Sends the engine's `tracing` events, and the `log` records of its
/// dependencies (gpu-allocator), to stderr: the filter is `COEXEC_LOG`, else
/// `RUST_LOG` (`tracing_subscriber::EnvFilter` syntax, e.g. `info` or
/// `coexec_engine=debug`), else warnings and errors.
fn init_log() {
    use tracing_subscriber::EnvFilter;
    let filter = EnvFilter::try_from_env("COEXEC_LOG")
        .or_else(|_| EnvFilter::try_from_default_env())
        .unwrap_or_else(|_| EnvFilter::new("warn"));
    // `try_init` also routes `log` records into `tracing` (the `tracing-log`
    // feature). It fails only when a subscriber is already set: then that one
    // gets the events.
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .try_init();
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    init_log();
    let workers = match &cli.command {
        Command::Info => None,
        Command::Bench(a) => a.workers,
        Command::Suite(a) => a.workers,
    };
    size_lavapipe(workers);
    let r = match cli.command {
        Command::Info => info(),
        Command::Bench(a) => bench(a),
        Command::Suite(a) => suite(a),
    };
    match r {
        Ok(code) => code,
        Err(e) => {
            eprintln!("coexec: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Gives lavapipe (a Vulkan device that runs on the CPU) one thread per
/// hardware thread the engine leaves it, unless `LP_NUM_THREADS` is set
/// already. Lavapipe reads the variable when its device is created; the
/// library never writes the environment, so the application does, here,
/// before this process starts any thread.
fn size_lavapipe(workers: Option<usize>) {
    if std::env::var_os("LP_NUM_THREADS").is_some() {
        return;
    }
    if let Some(n) = Engine::cpu_device_cores(workers) {
        // Single-threaded here: no other thread can read the environment
        // while it changes.
        std::env::set_var("LP_NUM_THREADS", n.to_string());
    }
}

fn info() -> Result<ExitCode, String> {
    let devs = Engine::all_vulkan_devices().map_err(|e| chain(&e))?;
    // One numbering: Vulkan's enumeration order, which `GpuChoice::Index`
    // and the C `gpu_index` take too.
    println!("Vulkan devices:");
    for d in &devs {
        if let Some(reason) = d.unusable_reason() {
            println!("  [{}] {} (not usable: {reason})", d.index, d.name);
            continue;
        }
        println!(
            "  [{}] {} ({}, Vulkan {}, {} memory)",
            d.index,
            d.name,
            d.device_type,
            coexec::vk::version_string(d.api_version),
            if d.is_unified() {
                "unified"
            } else {
                "separate"
            }
        );
        for (i, h) in d.heaps.iter().enumerate() {
            println!(
                "      heap {i}: {} MiB{}",
                h.size >> 20,
                if h.device_local { " device-local" } else { "" }
            );
        }
        let chosen = d.unified_memory_type();
        for (i, t) in d.memory_types.iter().enumerate() {
            println!(
                "      type {i}: heap {} {}{}",
                t.heap,
                t.flags_string(),
                if chosen == Some(i as u32) {
                    "  <- unified buffers"
                } else {
                    ""
                }
            );
        }
        for f in &d.compute_families {
            println!(
                "      queue family {}: {} queue(s){}, timestamps {} bits",
                f.index,
                f.count,
                if f.graphics {
                    " graphics+compute"
                } else {
                    " compute-only"
                },
                f.timestamp_bits
            );
        }
        println!(
            "      max work-groups {:?}, max work-group size {:?}, push constants {} B, external host memory: {}",
            d.max_group_count, d.max_group_size, d.max_push_constants, d.external_memory_host
        );
    }
    let engine = Engine::new().map_err(|e| chain(&e))?;
    println!("\nCPU topology:\n{}", engine.topology());
    let plan = engine.core_plan();
    println!("Engine: device {:?}", engine.device().info().name);
    println!(
        "  CPU workers: {} on PUs {:?}",
        engine.workers(),
        plan.workers
            .iter()
            .map(|c| c.pus.clone())
            .collect::<Vec<_>>()
    );
    for c in &plan.cpu_vulkan_devices {
        println!(
            "  Vulkan CPU device cores: PUs {:?} (LP_NUM_THREADS={})",
            c.pus,
            std::env::var("LP_NUM_THREADS").unwrap_or_else(|_| "unset".into())
        );
    }
    for c in &plan.gpu_loops {
        println!("  GPU dispatch loop: PUs {:?}", c.pus);
    }
    println!(
        "  unified buffers: memory type {} via {}",
        engine.memory().memory_type(),
        engine.memory().backend()
    );
    Ok(ExitCode::SUCCESS)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn bench(a: BenchArgs) -> Result<ExitCode, String> {
    let devices: Devices = a.devices.parse()?;
    let mut scheduler: Scheduler = a
        .scheduler
        .parse()
        .map_err(|e: coexec::sched::SchedError| e.to_string())?;
    if let Some(f) = a.cpu_power {
        if !(0.0..=1.0).contains(&f) {
            return Err(format!("--cpu-power {f} is outside 0..1"));
        }
        if devices.cpu && devices.gpu {
            let powers = Some(vec![f, 1.0 - f]);
            match &mut scheduler {
                Scheduler::Static { powers: p } | Scheduler::HGuided { powers: p, .. } => {
                    *p = powers
                }
                Scheduler::Dynamic { .. } => {}
            }
        }
    }
    let engine = open_engine(a.workers)?;
    let mut w = workloads::create(&a.kernel, &engine, a.size)?;
    let mut times = Vec::new();
    let mut last: Option<Report> = None;
    let mut first: Option<Report> = None;
    let warmup = a.warmup.max(1);
    for rep in 0..warmup + a.reps.max(1) {
        let r = w.run(&engine, &scheduler, devices).map_err(|e| chain(&e))?;
        if rep >= warmup {
            times.push(r.time_s);
        }
        if rep == 0 {
            first = Some(r.clone());
        }
        last = Some(r);
    }
    let report = last.expect("at least one run");
    let first = first.expect("at least one run");
    let v = w.verify();
    let time_s = median(times);
    if let Some(path) = &a.trace {
        let title = format!("{} {} {}", w.name(), w.space(), a.scheduler);
        coexec::trace::write_chrome_trace(path, &report, &title).map_err(|e| chain(&e))?;
    }
    if a.log {
        for (which, r) in [("first", &first), ("last", &report)] {
            eprintln!("{which} run: {:.6} s", r.time_s);
            print_packages(r);
        }
    }
    if a.json {
        let per_device: Vec<_> = report
            .devices
            .iter()
            .map(|d| {
                json!({
                    "name": d.name,
                    "kind": d.kind.to_string(),
                    "claimants": d.claimants,
                    "packages": d.packages,
                    "items": d.items,
                    "busy_s": d.busy_s,
                    "first_start_s": d.first_start_s,
                    "finish_s": d.finish_s,
                    "gpu_gap_median_us": d.gpu_gaps.map(|g| g.median_us),
                    "failure": d.failure,
                    "declined_s": d.declined_s.map(|t| if t.is_finite() { json!(t) } else { json!("sat out") }),
                })
            })
            .collect();
        let out = json!({
            "kernel": w.name(),
            "size": w.space().to_string(),
            "scheduler": a.scheduler,
            "devices": a.devices,
            "time_s": time_s,
            "verified": v.ok,
            "mismatches": v.mismatches,
            "balance": report.balance(),
            "balance_raw": report.balance_raw(),
            "packages": report.package_count(),
            "first_s": first.time_s,
            "first_from_profile": first.from_profile,
            "first_balance": first.balance(),
            "first_cpu_items": first.devices.iter().filter(|d| d.kind == coexec::DeviceKind::Cpu).map(|d| d.items).sum::<u64>(),
            "cpu_items": report.devices.iter().filter(|d| d.kind == coexec::DeviceKind::Cpu).map(|d| d.items).sum::<u64>(),
            "per_device": per_device,
        });
        println!("{out}");
    } else {
        println!(
            "{} {} scheduler={} devices={}: {:.6} s (median of {}), verified={} ({}), balance={:.3}, packages={}",
            w.name(),
            w.space(),
            a.scheduler,
            a.devices,
            time_s,
            a.reps.max(1),
            v.ok,
            v.rule,
            report.balance(),
            report.package_count()
        );
        for d in &report.devices {
            println!(
                "  {:>3} {:<40} packages {:>6} items {:>12} busy {:.6} s finish {:.6} s{}",
                d.kind.to_string(),
                d.name,
                d.packages,
                d.items,
                d.busy_s,
                d.finish_s,
                d.gpu_gaps
                    .map(|g| format!(" gap median {:.1} us", g.median_us))
                    .unwrap_or_default()
            );
        }
    }
    Ok(if v.ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(2)
    })
}

/// The command's engine: with COEXEC_VALIDATION=1, a validation error fails
/// the command.
fn open_engine(workers: Option<usize>) -> Result<Engine, String> {
    Engine::with_options(EngineOptions {
        workers,
        validation_errors_fail: true,
        ..Default::default()
    })
    .map_err(|e| chain(&e))
}

fn suite(a: SuiteArgs) -> Result<ExitCode, String> {
    // Arguments first: a typo must not cost an engine start.
    let sizes = parse_sizes(a.sizes.as_deref().unwrap_or_default())?;
    let engine = open_engine(a.workers)?;
    let opts = coexec::suite::Options {
        quick: a.quick,
        set: a.set,
        kernels: a.kernels,
        reps: a.reps,
        out: a.out,
        json: a.json,
        scaling: !a.no_scaling,
        progress: true,
        energy: true,
        command: std::env::args().collect::<Vec<_>>().join(" "),
        cpu_solo: a.cpu_solo,
        schedulers: a.schedulers,
        sizes,
    };
    let report = coexec::suite::run(&engine, &opts).map_err(|e| chain(&e))?;
    println!(
        "{} ({}) on {} ({}), {} CPU workers, median of {} after 1 warm-up\n",
        if opts.quick { "quick suite" } else { "suite" },
        if opts.kernels.is_some() {
            "chosen kernels"
        } else {
            opts.set.name()
        },
        report.machine.gpu_names.join(", "),
        report.machine.vulkan_device_type,
        report.machine.cores_used,
        opts.reps()
    );
    print!("{}", report.table());
    if let Some(path) = &opts.json {
        println!("JSON: {}", path.display());
    }
    if let Some(out) = &opts.out {
        println!(
            "pictures and traces: {} ({} files)",
            out.display(),
            report.files.len()
        );
    }
    println!("suite took {:.1} s", report.wall_s);
    if report.all_ok() {
        Ok(ExitCode::SUCCESS)
    } else {
        eprintln!("coexec suite: some runs failed or did not verify (see the table)");
        Ok(ExitCode::from(2))
    }
}

/// Prints a run's package log to stderr, one package a line.
fn print_packages(r: &Report) {
    for p in &r.packages {
        eprintln!(
            "dev {} lane {} units {:>6}..{:<6} items {:>10} start {:.6} end {:.6}{}",
            p.device,
            p.lane,
            p.units.start,
            p.units.end,
            p.items.end - p.items.start,
            p.start_s,
            p.end_s,
            if p.stolen { " stolen" } else { "" }
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn sizes_parse_and_bad_ones_are_named() {
        let s = parse_sizes(&pairs(&["nbody=32768", " matmul = 512x256", "taylor=2^20"])).unwrap();
        assert_eq!(s["nbody"], Size::Linear(32768));
        assert_eq!(s["matmul"], Size::Image(512, 256));
        assert_eq!(s["taylor"], Size::Linear(1 << 20));
        assert!(parse_sizes(&[]).unwrap().is_empty());
        let err = |v: &[&str]| parse_sizes(&pairs(v)).unwrap_err();
        assert!(err(&["nbody"]).contains("not KERNEL=SIZE"));
        assert!(err(&["fft=1024"]).contains("unknown kernel `fft`"));
        assert!(err(&["nbody=lots"]).contains("nbody=lots"));
        assert!(err(&["nbody=1", "nbody=2"]).contains("given twice"));
    }
}
