//! The engine's log for the examples that print it: on stderr, where
//! `COEXEC_LOG` asks for it (`tracing_subscriber::EnvFilter` syntax, e.g.
//! `coexec_engine::learn=debug`); nothing otherwise.

/// Sends the engine's `tracing` events to stderr if `COEXEC_LOG` is set.
pub(crate) fn init() {
    if let Ok(filter) = tracing_subscriber::EnvFilter::try_from_env("COEXEC_LOG") {
        let _ = tracing_subscriber::fmt()
            .with_env_filter(filter)
            .with_writer(std::io::stderr)
            .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
            .try_init();
    }
}
