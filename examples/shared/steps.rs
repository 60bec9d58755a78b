//! A program's time per iteration, step by step, for the examples that run
//! one: where an iteration's time goes (each kernel's runs, each host step)
//! and what is left outside the steps (the engine's work between runs).

use coexec::ProgramReport;

/// One line: each step's milliseconds per iteration, and the rest of the
/// program's time per iteration outside the steps.
pub(crate) fn line(r: &ProgramReport) -> String {
    let its = r.iterations.max(1) as f64;
    let mut parts: Vec<String> = r
        .steps
        .iter()
        .map(|s| format!("{} {:.3}", s.name, s.time_s / its * 1e3))
        .collect();
    let inside: f64 = r.steps.iter().map(|s| s.time_s).sum();
    parts.push(format!("outside {:.3}", (r.time_s - inside) / its * 1e3));
    format!("steps (ms per iteration): {}", parts.join(", "))
}
