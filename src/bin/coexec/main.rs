//! `coexec`: device information and single-kernel benchmarks.

mod args;
mod bench;
mod bench_energy;
mod info;
mod reduce;
mod setup;
mod suite;

use clap::{Parser, Subcommand};
use coexec::error::chain;
use coexec::{Engine, EngineOptions, MemoryPlacement, Objective};
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
    Bench(bench::BenchArgs),
    /// Runs the benchmark suite: every kernel alone on each device and
    /// co-executed with each scheduler; table, JSON and SVG pictures.
    Suite(suite::SuiteArgs),
    /// A reduction output against the same kernel as a map, and the time
    /// between two consecutive runs.
    Reduce(reduce::ReduceArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    setup::init_log();
    let (workers, spirv) = match &cli.command {
        Command::Info => (None, false),
        Command::Bench(a) => (
            a.workers,
            a.cpu_impl.value.engine() == coexec::CpuImpl::Spirv,
        ),
        Command::Suite(a) => (a.workers, a.cpu_impl.value == coexec::CpuImpl::Spirv),
        Command::Reduce(a) => (a.workers, false),
    };
    setup::size_lavapipe(workers, spirv);
    let r = match cli.command {
        Command::Info => info::info(),
        Command::Bench(a) => bench::bench(a),
        Command::Suite(a) => suite::suite(a),
        Command::Reduce(a) => reduce::reduce(a),
    };
    match r {
        Ok(code) => code,
        Err(e) => {
            eprintln!("coexec: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The command's engine: with COEXEC_VALIDATION=1, a validation error fails
/// the command.
fn open_engine(
    workers: Option<usize>,
    memory: MemoryPlacement,
    gpus: coexec::GpuChoice,
    objective: Objective,
    cpu_impl: coexec::CpuImpl,
) -> Result<Engine, String> {
    Engine::with_options(EngineOptions {
        workers,
        memory,
        gpu: gpus,
        objective,
        cpu_impl,
        validation_errors_fail: true,
        ..Default::default()
    })
    .map_err(|e| chain(&e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use coexec::{Devices, Scheduler};

    /// The error clap gives for `args` (`coexec` prepended).
    fn error(args: &[&str]) -> String {
        let argv = std::iter::once("coexec").chain(args.iter().copied());
        match Cli::try_parse_from(argv) {
            Ok(_) => panic!("{args:?} parsed"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn bench_values_are_parsed_by_the_library() {
        let argv = [
            "coexec",
            "bench",
            "--kernel",
            "mandelbrot",
            "--scheduler",
            "dynamic:16",
            "--devices",
            "gpu",
        ];
        let Command::Bench(a) = Cli::try_parse_from(argv).unwrap().command else {
            panic!("not bench");
        };
        assert_eq!(a.scheduler.value, Scheduler::Dynamic { packages: 16 });
        assert_eq!(a.scheduler.text, "dynamic:16");
        assert_eq!(a.devices.value, Devices::GPU);
        // The defaults go through the same parsers.
        let Command::Bench(a) = Cli::try_parse_from(["coexec", "bench", "--kernel", "nbody"])
            .unwrap()
            .command
        else {
            panic!("not bench");
        };
        assert_eq!(a.scheduler.value, Scheduler::hguided());
        assert_eq!(a.devices.value, Devices::ALL);
    }

    #[test]
    fn memory_placement_is_parsed_for_bench_and_suite() {
        let argv = ["coexec", "bench", "--kernel", "nbody", "--memory", "staged"];
        let Command::Bench(a) = Cli::try_parse_from(argv).unwrap().command else {
            panic!("not bench");
        };
        assert_eq!(a.memory.value, MemoryPlacement::Staged);
        let Command::Suite(a) = Cli::try_parse_from(["coexec", "suite", "--memory", "zero-copy"])
            .unwrap()
            .command
        else {
            panic!("not suite");
        };
        assert_eq!(a.memory.value, MemoryPlacement::ZeroCopy);
        let Command::Bench(a) = Cli::try_parse_from(["coexec", "bench", "--kernel", "nbody"])
            .unwrap()
            .command
        else {
            panic!("not bench");
        };
        assert_eq!(a.memory.value, MemoryPlacement::Auto);
        let e = error(&["bench", "--kernel", "nbody", "--memory", "fast"]);
        assert!(e.contains("--memory") && e.contains("zero-copy"), "{e}");
    }

    #[test]
    fn objective_is_parsed_for_bench_and_suite() {
        let argv = ["coexec", "bench", "--kernel", "nbody", "--objective", "edp"];
        let Command::Bench(a) = Cli::try_parse_from(argv).unwrap().command else {
            panic!("not bench");
        };
        assert_eq!(a.objective.value, Objective::Edp);
        let Command::Suite(a) = Cli::try_parse_from(["coexec", "suite"]).unwrap().command else {
            panic!("not suite");
        };
        assert_eq!(a.objective.value, Objective::Time);
        let e = error(&["suite", "--objective", "energy"]);
        assert!(
            e.contains("--objective") && e.contains("time or edp"),
            "{e}"
        );
    }

    #[test]
    fn cpu_impl_is_parsed_for_bench_and_suite() {
        let argv = [
            "coexec",
            "bench",
            "--kernel",
            "nbody",
            "--cpu-impl",
            "spirv",
        ];
        let Command::Bench(a) = Cli::try_parse_from(argv).unwrap().command else {
            panic!("not bench");
        };
        assert_eq!(a.cpu_impl.value.engine(), coexec::CpuImpl::Spirv);
        let Command::Suite(a) = Cli::try_parse_from(["coexec", "suite"]).unwrap().command else {
            panic!("not suite");
        };
        assert_eq!(a.cpu_impl.value, coexec::CpuImpl::Native);
        let e = error(&["suite", "--cpu-impl", "rayon"]);
        assert!(
            e.contains("--cpu-impl") && e.contains("native or spirv"),
            "{e}"
        );
        let argv = [
            "coexec",
            "bench",
            "--kernel",
            "saxpy",
            "--cpu-impl",
            "rayon",
        ];
        let Command::Bench(a) = Cli::try_parse_from(argv).unwrap().command else {
            panic!("not bench");
        };
        assert_eq!(a.cpu_impl.value, args::BenchImpl::Rayon);
        assert_eq!(a.cpu_impl.value.engine(), coexec::CpuImpl::Native);
        let e = error(&["bench", "--kernel", "saxpy", "--cpu-impl", "tbb"]);
        assert!(e.contains("native, spirv or rayon"), "{e}");
        let e = error(&["bench", "--kernel", "saxpy", "--energy", "joules"]);
        assert!(e.contains("--energy"), "{e}");
    }

    #[test]
    fn bad_bench_values_name_their_flag() {
        let e = error(&["bench", "--kernel", "fft"]);
        assert!(
            e.contains("--kernel") && e.contains("unknown kernel `fft`"),
            "{e}"
        );
        let e = error(&["bench", "--kernel", "nbody", "--scheduler", "fastest"]);
        assert!(e.contains("--scheduler"), "{e}");
        let e = error(&["bench", "--kernel", "nbody", "--devices", "tpu"]);
        assert!(
            e.contains("--devices") && e.contains("unknown device"),
            "{e}"
        );
    }

    #[test]
    fn bad_suite_lists_name_the_bad_item() {
        let e = error(&["suite", "--kernels", "nbody,fft"]);
        assert!(
            e.contains("--kernels") && e.contains("unknown kernel `fft`"),
            "{e}"
        );
        let e = error(&["suite", "--schedulers", "static,hguided"]);
        assert!(
            e.contains("--schedulers") && e.contains("unknown `hguided`"),
            "{e}"
        );
        let e = error(&["suite", "--cpu-solo", "dynamic:5"]);
        assert!(e.contains("--cpu-solo"), "{e}");
        let ok = ["coexec", "suite", "--schedulers", "static,hguided:hints"];
        let Command::Suite(a) = Cli::try_parse_from(ok).unwrap().command else {
            panic!("not suite");
        };
        let want = ["static".to_string(), "hguided:hints".to_string()];
        assert_eq!(a.schedulers.as_deref(), Some(&want[..]));
    }
}
