//! Traces of a run: the package log as Chrome / Perfetto trace JSON (one
//! track per device and lane, one slice per package).

use crate::Report;
use serde_json::{json, Value};
use std::path::Path;

/// Writes [`chrome_trace`] of `report` to `path`; the error names the file.
pub fn write_chrome_trace(path: &Path, report: &Report, title: &str) -> Result<(), String> {
    std::fs::write(path, chrome_trace(report, title).to_string())
        .map_err(|e| format!("{}: {e}", path.display()))
}

/// The run as a Chrome trace-event JSON document (open it in
/// <https://ui.perfetto.dev> or `chrome://tracing`). Each device is a
/// process, each CPU worker or GPU queue a thread, each package a slice.
pub fn chrome_trace(report: &Report, title: &str) -> Value {
    let mut events = Vec::new();
    for (d, dev) in report.devices.iter().enumerate() {
        events.push(json!({
            "ph": "M", "name": "process_name", "pid": d, "tid": 0,
            "args": { "name": format!("{} ({})", dev.name, dev.kind) }
        }));
        for lane in 0..dev.claimants {
            let name = if dev.claimants > 1 {
                format!("worker {lane}")
            } else {
                "queue".to_string()
            };
            events.push(json!({
                "ph": "M", "name": "thread_name", "pid": d, "tid": lane,
                "args": { "name": name }
            }));
        }
    }
    for p in &report.packages {
        events.push(json!({
            "ph": "X",
            "name": format!("units {}..{}", p.units.start, p.units.end),
            "cat": "package",
            "pid": p.device,
            "tid": p.lane,
            "ts": p.start_s * 1e6,
            "dur": (p.end_s - p.start_s) * 1e6,
            "args": {
                "items": format!("{}..{}", p.items.start, p.items.end),
                "work_items": p.items.end - p.items.start,
                "stolen": p.stolen,
            }
        }));
    }
    json!({
        "traceEvents": events,
        "displayTimeUnit": "ms",
        "otherData": { "title": title, "time_s": report.time_s, "balance": report.balance() }
    })
}
