//! What the process sets up before it starts any thread: the logger and
//! lavapipe's thread count.

use coexec::Engine;

/// Sends the engine's `tracing` events, and the `log` records of its
/// dependencies (gpu-allocator), to stderr: the filter is `COEXEC_LOG`, else
/// `RUST_LOG` (`tracing_subscriber::EnvFilter` syntax, e.g. `info` or
/// `coexec_engine=debug`), else warnings and errors.
pub(crate) fn init_log() {
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

/// Gives lavapipe (a Vulkan device that runs on the CPU) one thread per
/// hardware thread the engine leaves it, unless `LP_NUM_THREADS` is set
/// already. Lavapipe reads the variable when its device is created; the
/// library never writes the environment, so the application does, here,
/// before this process starts any thread. With `spirv` (lavapipe runs the
/// CPU share's SPIR-V on the CPU workers' cores), the smaller of that and
/// the workers' hardware threads: the variable is one for every lavapipe
/// device of the process.
pub(crate) fn size_lavapipe(workers: Option<usize>, spirv: bool) {
    if std::env::var_os("LP_NUM_THREADS").is_some() {
        return;
    }
    let own = Engine::cpu_device_cores(workers);
    let n = match (spirv, own) {
        (true, Some(n)) => Some(n.min(Engine::spirv_cpu_threads(workers).unwrap_or(n))),
        (true, None) => Engine::spirv_cpu_threads(workers),
        (false, own) => own,
    };
    if let Some(n) = n {
        // Single-threaded here: no other thread can read the environment
        // while it changes.
        std::env::set_var("LP_NUM_THREADS", n.to_string());
    }
}
