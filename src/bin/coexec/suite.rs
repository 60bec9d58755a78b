//! `coexec suite`: the benchmark suite, its table and where its JSON and
//! pictures went.

use crate::args::{self, Given};
use crate::open_engine;
use coexec::error::chain;
use std::process::ExitCode;

#[derive(clap::Args)]
pub(crate) struct SuiteArgs {
    /// Small sizes and 2 repetitions (a smoke test).
    #[arg(long)]
    quick: bool,
    /// The kernel set: `seed` (the seed kernels but saxpy) or `comparable`
    /// (spmv, gather, blackscholes, jacobi, histogram, collatz: devices
    /// within a small factor of each other).
    #[arg(long, default_value = "seed")]
    set: coexec::suite::KernelSet,
    /// Comma-separated kernels of any set, instead of --set's.
    #[arg(long, value_delimiter = ',', value_parser = args::kernel)]
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
    /// Skip the time-against-problem-size sweeps.
    #[arg(long)]
    no_scaling: bool,
    /// Solo schedulers for the CPU baseline, comma-separated (default:
    /// static,dynamic:8,dynamic:64,dynamic:200,hguided; with --quick
    /// static,dynamic:64,hguided).
    #[arg(long, value_delimiter = ',', value_parser = args::solo_key)]
    cpu_solo: Option<Vec<String>>,
    /// Co-executed configurations, comma-separated (default: dynamic:5,dynamic:200,static,hguided:hints,hguided:nohints).
    #[arg(long, value_delimiter = ',', value_parser = args::co_key)]
    pub(crate) schedulers: Option<Vec<String>>,
    /// Problem sizes overriding the defaults, comma-separated KERNEL=SIZE
    /// (SIZE: N, 2^K or WxH), e.g. `nbody=32768,matmul=1024x1024`.
    #[arg(long, value_delimiter = ',')]
    sizes: Option<Vec<String>>,
}

pub(crate) fn suite(a: SuiteArgs) -> Result<ExitCode, String> {
    // Arguments first: a typo must not cost an engine start.
    let sizes = args::parse_sizes(a.sizes.as_deref().unwrap_or_default())?;
    let engine = open_engine(a.workers, a.memory.value, a.gpus.value, a.objective.value)?;
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
