//! The benchmark suite: every kernel alone on the CPU, alone on the GPU and
//! co-executed with each scheduler, with the papers' yardsticks (speedup,
//! maximum achievable speedup, heterogeneous efficiency, balancing
//! efficiency, energy and EDP where counters exist), a JSON record, a table
//! and SVG pictures.
//!
//! Yardsticks (see the README of the seed papers):
//! * `T_i`: device `i` alone on the whole problem. To keep `S_max` honest it
//!   is the **best** solo time over [`SOLO_SCHEDULERS`] (one package,
//!   8, 64 and 200 packages, HGuided; [`QUICK_SOLO_SCHEDULERS`] with
//!   `quick`) (on Mesa lavapipe
//!   many small dispatches beat one big one, so a one-package solo time
//!   would flatter co-execution).
//! * `S = T_fastest / T`, `S_max = T_fastest * sum_i 1/T_i`, `HE = S / S_max`,
//!   balance = earliest device finish / latest ([`Report::balance`](crate::Report::balance)).
//! * The co-running ceiling ([`Corun`]): each device's throughput while the
//!   other runs (its work-items / its busy time) relative to its solo
//!   throughput (all work-items / `T_i`), and `S_ceiling = T_fastest *
//!   sum_i corun_rate_i / items`, the speedup had both devices run all along
//!   at their co-running rates. `S_ceiling` well below `S_max` with both
//!   relative rates below 1 is a pair contending for a shared resource
//!   (DRAM); `S` well below `S_ceiling` is a scheduling loss (idle time,
//!   imbalance, overhead).
//! * Energy: joules per run from the hardware counters of
//!   [`energy::EnergyMeter`], measured around each timed repetition; EDP
//!   relative to the fastest single device's run.
//!
//! Each configuration runs once to warm up, then `reps` times; figures are
//! those of the median-time repetition, and the output of the last one is
//! checked against the kernel's CPU reference.

mod date;
pub mod energy;
mod error;
#[cfg(test)]
mod fixture;
mod kernel;
mod measure;
mod options;
mod pictures;
pub mod plots;
mod schema;
mod stats;
mod sweep;
mod table;

pub use error::SuiteError;
pub use options::{
    default_kernels, KernelSet, Options, ENERGY_WINDOW_S, QUICK_SOLO_SCHEDULERS, SCHEDULERS,
    SOLO_SCHEDULERS,
};
pub use schema::{
    CoRun, Corun, KernelResult, Machine, ScalingPoint, SchedulerSummary, SoloRun, SuiteReport,
};
pub use sweep::{scaling_sizes, size_for_items, SCALING_BUDGET_S};

use crate::workloads;
use crate::Engine;
use energy::EnergyMeter;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use kernel::{run_kernel, Ctx};
use schema::write_json;
use std::io::IsTerminal;
use std::time::Instant;

/// Progress on stderr: a bar when stderr is a terminal, nothing otherwise.
fn progress_bar(show: bool, steps: u64) -> ProgressBar {
    let pb = ProgressBar::with_draw_target(
        Some(steps),
        if show && std::io::stderr().is_terminal() {
            ProgressDrawTarget::stderr()
        } else {
            ProgressDrawTarget::hidden()
        },
    );
    if let Ok(style) = ProgressStyle::with_template(
        "{elapsed_precise:.dim} [{bar:30.cyan/blue}] {pos}/{len} {wide_msg}",
    ) {
        pb.set_style(style.progress_chars("=> "));
    }
    pb
}

/// The machine of `engine`, as the report records it.
fn machine(engine: &Engine, opts: &Options, meter: &EnergyMeter) -> Machine {
    let info = engine.device_info();
    Machine {
        cpu_model: engine.topology().model.clone(),
        cores_used: engine.workers(),
        gpu_names: vec![info.name.clone()],
        vulkan_device_type: info.device_type.to_string(),
        memory: engine.memory_placement().to_string(),
        date: date::utc_now(),
        command: opts.command.clone(),
        energy_sources: meter.sources(),
        energy_notes: meter.notes().to_vec(),
    }
}

/// The report's `settings`: repetitions, statistic, schedulers.
fn settings(opts: &Options, reps: usize, meter: &EnergyMeter) -> serde_json::Value {
    serde_json::json!({
        "quick": opts.quick,
        "warmup": 1,
        "reps": reps,
        "statistic": "median",
        "set": opts.set.name(),
        "solo_schedulers": opts.solo_schedulers(),
        "schedulers": SCHEDULERS.iter().map(|s| s.0).collect::<Vec<_>>(),
        "hguided_k": crate::DEFAULT_K,
        "energy_window_s": meter.available().then(|| opts.energy_window_s()),
        "note": "hguided:nohints runs on a fresh instance of the workload, so it \
                 learns device powers only from its own warm-up and repetitions",
    })
}

/// The line that reports a finished kernel.
fn kernel_line(kr: &KernelResult, start: Instant) -> String {
    format!(
        "{:<11} {:<11} {} ({:.1} s)",
        kr.kernel,
        kr.size,
        match (&kr.error, kr.verified) {
            (Some(e), _) => format!("error: {e}"),
            (None, true) => "done, verified".into(),
            (None, false) => "done, VERIFICATION FAILED".into(),
        },
        start.elapsed().as_secs_f64()
    )
}

/// Checks what the suite needs before anything runs: a GPU, CPU workers,
/// known kernels and a writable `out`. Returns the kernels to run.
fn preflight(engine: &Engine, opts: &Options) -> Result<Vec<String>, SuiteError> {
    if !engine.gpu_available() {
        return Err(SuiteError::NoGpu);
    }
    if engine.workers() == 0 {
        return Err(SuiteError::NoWorkers);
    }
    let kernels = opts.kernels.clone().unwrap_or_else(|| opts.set.kernels());
    for k in &kernels {
        workloads::check_name(k).map_err(SuiteError::UnknownKernel)?;
    }
    if let Some(out) = &opts.out {
        std::fs::create_dir_all(out).map_err(|source| SuiteError::CreateDir {
            path: out.clone(),
            source,
        })?;
    }
    Ok(kernels)
}

/// Runs the suite on `engine`. Failed runs and failed verifications are
/// recorded in the report (see [`SuiteReport::all_ok`]); an `Err` means the
/// suite could not run at all (no GPU, unknown kernel, unwritable `out`).
pub fn run(engine: &Engine, opts: &Options) -> Result<SuiteReport, SuiteError> {
    let start = Instant::now();
    let kernels = preflight(engine, opts)?;
    let reps = opts.reps();
    let meter = if opts.energy {
        EnergyMeter::new(engine)
    } else {
        EnergyMeter::none()
    };
    let mut report = SuiteReport {
        machine: machine(engine, opts, &meter),
        settings: settings(opts, reps, &meter),
        kernels: Vec::new(),
        summary: Vec::new(),
        files: Vec::new(),
        wall_s: 0.0,
        complete: false,
    };
    let configs_per_kernel = 2 * opts.solo_schedulers().len() + SCHEDULERS.len();
    let pb = progress_bar(opts.progress, (kernels.len() * configs_per_kernel) as u64);
    let ctx = Ctx {
        engine,
        opts,
        reps,
        meter: &meter,
        pb: &pb,
    };
    for name in &kernels {
        let mut kr = run_kernel(&ctx, name, &mut report.files).map_err(SuiteError::Output)?;
        if opts.scaling {
            sweep::scaling(engine, opts, &mut kr, &pb, &mut report.files)
                .map_err(SuiteError::Output)?;
        }
        let line = kernel_line(&kr, start);
        // Without a bar (a log, CI), one line per kernel still shows progress.
        if pb.is_hidden() {
            if opts.progress {
                eprintln!("{line}");
            }
        } else {
            pb.println(line);
        }
        report.kernels.push(kr);
        report.summary = stats::summarise(&report.kernels);
        report.wall_s = start.elapsed().as_secs_f64();
        // After every kernel, so that an interrupted suite keeps its results.
        write_json(&report, opts.json.as_deref())?;
    }
    pb.finish_and_clear();
    if let Some(out) = &opts.out {
        let mut files = std::mem::take(&mut report.files);
        pictures::summary_plots(&report, out, &mut files).map_err(SuiteError::Output)?;
        report.files = files;
    }
    report.complete = true;
    report.wall_s = start.elapsed().as_secs_f64();
    write_json(&report, opts.json.as_deref())?;
    Ok(report)
}
