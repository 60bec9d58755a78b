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

/// One line for a program's single iteration: each kernel step's
/// milliseconds, and per device of its run the share of the items and the
/// megabytes it uploaded and downloaded (where a first iteration's time
/// goes: what each device ran, what came up).
#[allow(dead_code)]
pub(crate) fn one_iteration(r: &ProgramReport) -> String {
    let parts: Vec<String> = r
        .steps
        .iter()
        .filter_map(|s| {
            let last = s.last.as_ref()?;
            let total = last.items.max(1) as f64;
            let devices: Vec<String> = last
                .devices
                .iter()
                .filter(|d| d.items > 0 || d.transfers.upload_bytes > 0)
                .map(|d| {
                    format!(
                        "{:?} {:.0}% up {:.1} MB down {:.1} MB",
                        d.kind,
                        d.items as f64 / total * 100.0,
                        d.transfers.upload_bytes as f64 / 1e6,
                        d.transfers.download_bytes as f64 / 1e6
                    )
                })
                .collect();
            Some(format!(
                "{} {:.3} ({})",
                s.name,
                s.time_s * 1e3,
                devices.join(", ")
            ))
        })
        .collect();
    format!("{:.3} ms: {}", r.time_s * 1e3, parts.join("; "))
}
