//! `coexec bench`: one kernel, one scheduler, some devices; time, balance
//! and per-device figures, as text or one JSON object.

use crate::args::{self, Given};
use crate::bench_energy::{BenchEnergy, BenchMeter, EnergyMode};
use crate::open_engine;
use coexec::error::chain;
use coexec::workloads::{self, Size, Verification, Workload};
use coexec::{DeviceKind, Devices, Report, Scheduler};
use serde_json::{json, Value};
use std::process::ExitCode;

#[derive(clap::Args)]
pub(crate) struct BenchArgs {
    /// Kernel: one of `coexec::workloads::NAMES` (saxpy, gaussian, matmul, taylor, binomial, nbody, mandelbrot, ray, rap) or `COMPARABLE` (spmv, gather, blackscholes, jacobi, histogram, collatz).
    #[arg(long, value_parser = args::kernel)]
    kernel: String,
    /// Problem size: N, 2^K or WxH (default: the kernel's).
    #[arg(long)]
    size: Option<Size>,
    /// static, dynamic:M, hguided (or hguided:k=K,min=M).
    #[arg(long, default_value = "hguided")]
    pub(crate) scheduler: Given<Scheduler>,
    /// cpu, gpu (every GPU), gpuN (GPU N as `coexec info` numbers them), a
    /// comma-separated list of those (cpu,gpu0,gpu1), or all.
    #[arg(long, default_value = "all")]
    pub(crate) devices: Given<Devices>,
    /// The CPU's share of the total power (0..1), a hint for static and
    /// hguided; the GPUs of the run share the rest equally.
    #[arg(long)]
    cpu_power: Option<f64>,
    /// CPU workers (default: one per physical core left by the GPU).
    #[arg(long)]
    pub(crate) workers: Option<usize>,
    /// Where the GPU reads the buffers: auto (zero-copy on unified memory,
    /// staged on a discrete GPU), zero-copy or staged (device-local
    /// mirrors). The environment variable COEXEC_MEMORY overrides it.
    #[arg(long, default_value = "auto")]
    pub(crate) memory: Given<coexec::MemoryPlacement>,
    /// What HGuided minimizes: time, or edp (energy-delay product: a
    /// device whose speed-up costs more energy than it saves sits out;
    /// measured power where RAPL/NVML can be read, else a model).
    #[arg(long, default_value = "time")]
    pub(crate) objective: Given<coexec::Objective>,
    /// The engine's GPUs: all (every discrete and integrated GPU), best (the
    /// one best device), or Vulkan device indices as `coexec info` lists
    /// them (1 or 0,1). `--devices` then picks among them (gpu0 is the
    /// first).
    #[arg(long, default_value = "all")]
    pub(crate) gpus: Given<coexec::GpuChoice>,
    /// The CPU share's path for kernels that have both: native (the CPU
    /// workers run the kernel's Rust code) or spirv (a CPU Vulkan device,
    /// Mesa lavapipe, runs its SPIR-V on the workers' cores); or, with
    /// --devices cpu only, rayon: the baseline without coexec, the kernel's
    /// Rust code through rayon's thread pool over the whole range.
    #[arg(long, default_value = "native")]
    pub(crate) cpu_impl: Given<args::BenchImpl>,
    /// Timed repetitions after the warm-ups; the median is reported.
    #[arg(long, default_value_t = 3)]
    reps: usize,
    /// Untimed runs before the timed ones (at least 1). The first run of
    /// the process is reported apart (`first_s`): with a fresh process it
    /// is the cold run.
    #[arg(long, default_value_t = 1)]
    warmup: usize,
    /// Energy and EDP over the repetitions: off, window (RAPL and NVML
    /// counters read before and after the timed repetitions, the window
    /// extended by untimed runs to --energy-window-s; joules per run =
    /// window / runs), or sampled (as window, with each NVIDIA GPU's power
    /// read every --sample-ms and integrated).
    #[arg(long, value_enum, default_value = "off")]
    energy: EnergyMode,
    /// The energy window's shortest length, seconds.
    #[arg(long, default_value_t = 2.0)]
    energy_window_s: f64,
    /// Milliseconds between power readings (--energy sampled).
    #[arg(long, default_value_t = 50)]
    sample_ms: u64,
    /// Print one JSON object.
    #[arg(long)]
    json: bool,
    /// Write the last run's packages as a Chrome/Perfetto trace to this file.
    #[arg(long)]
    trace: Option<std::path::PathBuf>,
    /// With --trace: the first run's packages instead (in a fresh process,
    /// the cold run: a kernel's first packages, and what the devices
    /// claimed while nothing was measured).
    #[arg(long, requires = "trace")]
    trace_first: bool,
    /// Print the last run's package log.
    #[arg(long)]
    log: bool,
}

/// The median of `v` (the upper one of an even count).
fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// The scheduler with `--cpu-power` as its power hints (where it takes
/// hints and the CPU and some of the engine's `gpus` GPUs run).
fn with_cpu_power(a: &BenchArgs, gpus: usize) -> Result<Scheduler, String> {
    let mut scheduler = a.scheduler.value.clone();
    let devices = a.devices.value;
    if let Some(f) = a.cpu_power {
        if !(0.0..=1.0).contains(&f) {
            return Err(format!("--cpu-power {f} is outside 0..1"));
        }
        let in_run = (0..gpus).filter(|&g| devices.has_gpu(g)).count();
        if devices.cpu && in_run > 0 {
            let mut powers = vec![f];
            powers.extend(std::iter::repeat_n((1.0 - f) / in_run as f64, in_run));
            let powers = Some(powers);
            match &mut scheduler {
                Scheduler::Static { powers: p } | Scheduler::HGuided { powers: p, .. } => {
                    *p = powers
                }
                Scheduler::Dynamic { .. } => {}
            }
        }
    }
    Ok(scheduler)
}

/// The runs of a benchmark: the first (cold in a fresh process), the last,
/// the median time of the timed ones, and their energy where measured.
struct Runs {
    first: Report,
    last: Report,
    time_s: f64,
    /// Every timed run's time, in order.
    times_s: Vec<f64>,
    /// Every timed run's CPU work-items, in order: which configuration
    /// each timed run was (all items: the CPU alone; 0: the GPUs alone).
    cpu_items: Vec<u64>,
    /// Every timed run's devices, briefly (see [`brief_devices`]).
    devices: Vec<Vec<Value>>,
    energy: Option<BenchEnergy>,
}

/// Runs `w` `warmup` (at least 1) times untimed, then `reps` (at least 1)
/// times timed; with `meter` on, in a window that untimed runs extend to
/// its shortest length.
fn repeat(
    w: &mut dyn Workload,
    engine: &coexec::Engine,
    (scheduler, devices): (&Scheduler, Devices),
    (warmup, reps): (usize, usize),
    meter: &BenchMeter,
) -> Result<Runs, String> {
    let warmup = warmup.max(1);
    let mut times = Vec::new();
    let mut items = Vec::new();
    let mut briefs = Vec::new();
    let mut first = None;
    let mut last = None;
    let mut window = None;
    for rep in 0..warmup + reps.max(1) {
        if rep == warmup && meter.on() {
            window = Some(meter.start());
        }
        let r = w.run(engine, scheduler, devices).map_err(|e| chain(&e))?;
        if rep >= warmup {
            times.push(r.time_s);
            items.push(cpu_items(&r));
            briefs.push(brief_devices(&r));
        }
        if let Some(win) = &mut window {
            win.add(meter, &r);
        }
        if rep == 0 {
            first = Some(r.clone());
        }
        last = Some(r);
    }
    let energy = match window {
        Some(mut win) => {
            while win.elapsed_s() < meter.window_s {
                let r = w.run(engine, scheduler, devices).map_err(|e| chain(&e))?;
                win.add(meter, &r);
            }
            Some(meter.finish(win))
        }
        None => None,
    };
    Ok(Runs {
        first: first.ok_or("no run")?,
        last: last.ok_or("no run")?,
        time_s: median(times.clone()),
        times_s: times,
        cpu_items: items,
        devices: briefs,
        energy,
    })
}

pub(crate) fn bench(a: BenchArgs) -> Result<ExitCode, String> {
    let engine = open_engine(
        a.workers,
        a.memory.value,
        a.gpus.value,
        a.objective.value,
        a.cpu_impl.value.engine(),
    )?;
    if a.cpu_impl.value == args::BenchImpl::Rayon {
        let d = a.devices.value;
        if !d.cpu || (0..engine.gpu_count()).any(|g| d.has_gpu(g)) {
            return Err("--cpu-impl rayon runs the CPU alone: give --devices cpu".into());
        }
        engine.set_rayon_baseline(true);
    }
    let scheduler = with_cpu_power(&a, engine.gpu_count())?;
    let mut w = workloads::create(&a.kernel, &engine, a.size)?;
    if !(a.energy_window_s.is_finite() && a.energy_window_s >= 0.0) {
        return Err(format!(
            "--energy-window-s {} is not a duration",
            a.energy_window_s
        ));
    }
    let meter = BenchMeter::new(
        &engine,
        a.devices.value,
        a.energy,
        a.energy_window_s,
        a.sample_ms,
    );
    let runs = repeat(
        &mut *w,
        &engine,
        (&scheduler, a.devices.value),
        (a.warmup, a.reps),
        &meter,
    )?;
    let v = w.verify();
    if let Some(path) = &a.trace {
        let title = format!("{} {} {}", w.name(), w.space(), a.scheduler);
        let run = if a.trace_first {
            &runs.first
        } else {
            &runs.last
        };
        coexec::trace::write_chrome_trace(path, run, &title).map_err(|e| chain(&e))?;
    }
    if a.log {
        for (which, r) in [("first", &runs.first), ("last", &runs.last)] {
            eprintln!("{which} run: {:.6} s", r.time_s);
            print_packages(r);
        }
    }
    if a.json {
        println!("{}", json_record(&a, &*w, &v, &runs));
    } else {
        print_text(&a, &*w, &v, &runs);
    }
    Ok(if v.ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(2)
    })
}

/// The CPU's work-items in `r`.
fn cpu_items(r: &Report) -> u64 {
    r.devices
        .iter()
        .filter(|d| d.kind == DeviceKind::Cpu)
        .map(|d| d.items)
        .sum()
}

/// What each device of `r` did, briefly: where a run's time went (the
/// first run's, whose devices' reports are otherwise not printed).
fn brief_devices(r: &Report) -> Vec<Value> {
    r.devices
        .iter()
        .map(|d| {
            json!({
                "kind": d.kind.to_string(),
                "packages": d.packages,
                "items": d.items,
                "first_start_s": d.first_start_s,
                "finish_s": d.finish_s,
                "settled_s": d.settled_s,
                "busy_s": d.busy_s,
                "upload_bytes": d.transfers.upload_bytes,
                "download_bytes": d.transfers.download_bytes,
                "own_queue": d.transfers.own_queue,
            })
        })
        .collect()
}

/// The JSON object of `--json`.
fn json_record(a: &BenchArgs, w: &dyn Workload, v: &Verification, runs: &Runs) -> Value {
    let (report, first) = (&runs.last, &runs.first);
    let per_device: Vec<_> = report
        .devices
        .iter()
        .enumerate()
        .map(|(i, d)| {
            json!({
                "name": d.name,
                "kind": d.kind.to_string(),
                "path": d.path(),
                "note": d.note,
                "claimants": d.claimants,
                "packages": d.packages,
                "items": d.items,
                "busy_s": d.busy_s,
                "gpu_busy_s": d.gpu_busy_s,
                "first_start_s": d.first_start_s,
                "finish_s": d.finish_s,
                "settled_s": d.settled_s,
                "gpu_gap_median_us": d.gpu_gaps.map(|g| g.median_us),
                "failure": d.failure,
                "declined_s": d.declined_s.map(|t| if t.is_finite() { json!(t) } else { json!("sat out") }),
                "upload_bytes": d.transfers.upload_bytes,
                "download_bytes": d.transfers.download_bytes,
                "transfer_s": d.transfers.seconds,
                "zero_copy_fallbacks": d.transfers.zero_copy_fallbacks,
                "own_queue": d.transfers.own_queue,
                "energy_j": energy(report).and_then(|e| e.devices.get(i).copied().flatten()),
                "edp": energy(report).and_then(|e| e.device_edp(i, report.time_s)),
            })
        })
        .collect();
    json!({
        "kernel": w.name(),
        "size": w.space().to_string(),
        "scheduler": a.scheduler.text,
        "devices": a.devices.text,
        "memory": report.memory.to_string(),
        "cpu_impl": a.cpu_impl.text,
        "time_s": runs.time_s,
        "times_s": runs.times_s,
        "times_cpu_items": runs.cpu_items,
        "times_devices": runs.devices,
        "verified": v.ok,
        "mismatches": v.mismatches,
        "balance": report.balance(),
        "balance_raw": report.balance_raw(),
        "packages": report.package_count(),
        "first_s": first.time_s,
        "first_from_profile": first.from_profile,
        "first_balance": first.balance(),
        "first_cpu_items": cpu_items(first),
        "first_per_device": brief_devices(first),
        "cpu_items": cpu_items(report),
        "objective": a.objective.text,
        "energy_j": report.joules(),
        "edp": report.edp(),
        "energy_basis": energy(report).map(|e| e.basis.to_string()),
        "energy": runs.energy.as_ref().map(|e| e.json(a.energy, runs.time_s)),
        "per_device": per_device,
    })
}

/// The text report: one summary line (the timed runs' median, and the
/// first run's time apart: with a fresh process, the cold run, which
/// `--warmup` never counts among the timed ones), then one line per
/// device.
fn print_text(a: &BenchArgs, w: &dyn Workload, v: &Verification, runs: &Runs) {
    let report = &runs.last;
    println!(
        "{} {} scheduler={} devices={} memory={}: {:.6} s (median of {} after {} warm-up; first run {:.6} s), verified={} ({}), balance={:.3}, packages={}",
        w.name(),
        w.space(),
        a.scheduler,
        a.devices,
        report.memory,
        runs.time_s,
        a.reps.max(1),
        a.warmup.max(1),
        runs.first.time_s,
        v.ok,
        v.rule,
        report.balance(),
        report.package_count()
    );
    match &runs.energy {
        Some(e) => println!("  {}", e.text(runs.time_s)),
        None => println!("  {}", energy_text(report)),
    }
    for (i, d) in report.devices.iter().enumerate() {
        let joules = energy(report)
            .and_then(|e| e.devices.get(i).copied().flatten())
            .map(|j| format!(" energy {j:.3} J"))
            .unwrap_or_default();
        println!(
            "  {:<12} {:<40} packages {:>6} items {:>12} busy {:.6} s finish {:.6} s{}{joules}{}",
            d.path(),
            d.name,
            d.packages,
            d.items,
            d.busy_s,
            d.finish_s,
            d.gpu_gaps
                .map(|g| format!(" gap median {:.1} us", g.median_us))
                .unwrap_or_default()
                + &transfers_text(&d.transfers),
            d.note
                .as_deref()
                .map(|n| format!(" ({n})"))
                .unwrap_or_default()
        );
    }
}

/// The report's energy, where a counter was read.
fn energy(r: &Report) -> Option<&coexec::energy::Energy> {
    r.energy.as_ref()
}

/// The run's energy line of the text report.
fn energy_text(r: &Report) -> String {
    match (r.joules(), r.edp()) {
        (Some(j), Some(edp)) => format!(
            "energy {j:.3} J, EDP {edp:.6} J*s (last run, {} from learned power)",
            energy(r).map_or(String::new(), |e| e.basis.to_string())
        ),
        _ => "energy not measured (--energy window or sampled measures it)".into(),
    }
}

/// A device's staged transfers for the text report ("" when none).
fn transfers_text(t: &coexec::Transfers) -> String {
    if *t == coexec::Transfers::default() {
        return String::new();
    }
    format!(
        " up {} B down {} B transfers {:.6} s{}",
        t.upload_bytes,
        t.download_bytes,
        t.seconds,
        if t.zero_copy_fallbacks > 0 {
            format!(" ({} buffers zero-copy)", t.zero_copy_fallbacks)
        } else {
            String::new()
        }
    )
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
            p.work_items,
            p.start_s,
            p.end_s,
            if p.stolen { " stolen" } else { "" }
        );
    }
}
