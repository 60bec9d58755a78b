//! The harness's command line (clap): every size, count and section comes
//! from the arguments, none from cargo's environment, so that the binary can
//! run on a machine without a Rust toolchain.

use clap::Parser;

/// The sections, in the order they run.
pub(crate) const SECTIONS: &[&str] = &[
    "claim",
    "cpu_package_overhead",
    "gpu_gap",
    "cpu_vs_rayon",
    "gpu_vs_raw",
    "coexec_mandelbrot",
    "gpu_local_vs_raw",
];

/// The command line as given; [`Cli::opts`] resolves the defaults.
#[derive(Parser, Debug)]
#[command(
    name = "core",
    about = "Benchmarks of the co-execution core (see benches/README.md)",
    after_help = "sections: claim, cpu_package_overhead, gpu_gap, cpu_vs_rayon, gpu_vs_raw, \
                  coexec_mandelbrot, gpu_local_vs_raw\n--bench (passed by cargo) is accepted and ignored, as \
                  are positional arguments."
)]
pub(crate) struct Cli {
    /// Small sizes and 2 reps.
    #[arg(long)]
    quick: bool,
    /// Write every figure (and every rep's raw sample) as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    json: Option<String>,
    /// Sections to run, comma-separated (`--list` prints them).
    #[arg(long, value_name = "NAME,...", value_delimiter = ',', value_parser = section)]
    only: Option<Vec<String>>,
    /// Measured repetitions; each figure is the median [default: 5, 2 with --quick].
    #[arg(long, value_name = "N")]
    reps: Option<usize>,
    /// Unmeasured runs before each measured series.
    #[arg(long, value_name = "N", default_value_t = 1)]
    warmup: usize,
    /// Mandelbrot image [default: 2048x2048, 512x512 with --quick].
    #[arg(long, value_name = "WxH", value_parser = image)]
    mandel: Option<(u32, u32)>,
    /// Mandelbrot iteration cap.
    #[arg(long, value_name = "N", default_value_t = 256)]
    iters: u32,
    /// SAXPY elements [default: 2^24, 2^20 with --quick].
    #[arg(long, value_name = "N")]
    saxpy: Option<u64>,
    /// Matrix side of section 7's matmul [default: 4096, 256 with --quick].
    #[arg(long, value_name = "N")]
    local_matmul: Option<u32>,
    /// Grid of section 7's Jacobi sweep [default: 8192x8192, 512x512 with --quick].
    #[arg(long, value_name = "WxH", value_parser = image)]
    local_jacobi: Option<(u32, u32)>,
    /// Chunks of section 7's overlapped raw one-shot run.
    #[arg(long, value_name = "N", default_value_t = 8)]
    chunks: u64,
    /// Claims per rep in section 1 [default: 2000000, 200000 with --quick].
    #[arg(long, value_name = "N")]
    claims: Option<u64>,
    /// Units (packages of the large run) in section 2 [default: 100000, 20000 with --quick].
    #[arg(long, value_name = "M")]
    overhead_packages: Option<u64>,
    /// CPU workers (`EngineOptions::workers`) [default: the engine's].
    #[arg(long, value_name = "N")]
    workers: Option<usize>,
    /// Vulkan device index (`coexec info` lists them) [default: auto].
    #[arg(long, value_name = "INDEX")]
    gpu: Option<usize>,
    /// Print the sections and exit.
    #[arg(long)]
    pub(crate) list: bool,
    /// Passed by `cargo bench`; ignored.
    #[arg(long, hide = true)]
    bench: bool,
    /// Filters `cargo bench NAME` passes; ignored.
    #[arg(hide = true)]
    filters: Vec<String>,
}

/// Command-line options, defaults resolved.
#[derive(Debug, Clone)]
pub(crate) struct Opts {
    pub(crate) quick: bool,
    pub(crate) json: Option<String>,
    pub(crate) only: Option<Vec<String>>,
    pub(crate) reps: usize,
    pub(crate) warmup: usize,
    pub(crate) mandel: (u32, u32),
    pub(crate) iters: u32,
    pub(crate) saxpy: u64,
    pub(crate) claims: u64,
    pub(crate) local_matmul: u32,
    pub(crate) local_jacobi: (u32, u32),
    pub(crate) chunks: u64,
    pub(crate) overhead_packages: u64,
    pub(crate) workers: Option<usize>,
    pub(crate) gpu: Option<usize>,
}

impl Cli {
    /// The options: quick or full defaults where a value was not given,
    /// counts raised to their least meaningful value (1; 2 packages for the
    /// overhead section's large run).
    pub(crate) fn opts(self) -> Opts {
        let q = self.quick;
        let pick =
            |v: Option<u64>, quick: u64, full: u64| v.unwrap_or(if q { quick } else { full });
        Opts {
            quick: q,
            json: self.json,
            only: self
                .only
                .map(|v| v.into_iter().filter(|s| !s.is_empty()).collect()),
            reps: self.reps.unwrap_or(if q { 2 } else { 5 }).max(1),
            warmup: self.warmup,
            mandel: self
                .mandel
                .unwrap_or(if q { (512, 512) } else { (2048, 2048) }),
            iters: self.iters.max(1),
            saxpy: pick(self.saxpy, 1 << 20, 1 << 24).max(1),
            claims: pick(self.claims, 200_000, 2_000_000).max(1),
            local_matmul: self
                .local_matmul
                .unwrap_or(if q { 256 } else { 4096 })
                .max(16),
            local_jacobi: self
                .local_jacobi
                .unwrap_or(if q { (512, 512) } else { (8192, 8192) }),
            chunks: self.chunks.max(1),
            overhead_packages: pick(self.overhead_packages, 20_000, 100_000).max(2),
            workers: self.workers,
            gpu: self.gpu,
        }
    }
}

/// A section name of [`SECTIONS`] (or nothing: `--only a,,b` is `a,b`).
fn section(name: &str) -> Result<String, String> {
    let name = name.trim();
    if name.is_empty() || SECTIONS.contains(&name) {
        Ok(name.to_string())
    } else {
        Err(format!(
            "unknown section {name:?} (known: {})",
            SECTIONS.join(", ")
        ))
    }
}

/// `WxH`, both above 0.
fn image(v: &str) -> Result<(u32, u32), String> {
    let (w, h) = v
        .split_once(['x', 'X'])
        .ok_or_else(|| format!("expected WxH, got {v:?}"))?;
    let num = |s: &str| {
        s.trim()
            .parse::<u32>()
            .map_err(|_| format!("cannot parse {s:?} in {v:?}"))
    };
    let (w, h) = (num(w)?, num(h)?);
    if w == 0 || h == 0 {
        return Err("width and height must be > 0".into());
    }
    Ok((w, h))
}
