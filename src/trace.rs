//! Traces of a run: the package log as Chrome / Perfetto trace JSON (one
//! track per device and lane, one slice per package).

use crate::Report;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

/// Why a trace could not be written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TraceError {
    /// Writing the file failed; the source is the I/O error.
    #[error("cannot write the trace {}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}

/// Writes [`chrome_trace`] of `report` to `path`.
pub fn write_chrome_trace(path: &Path, report: &Report, title: &str) -> Result<(), TraceError> {
    std::fs::write(path, chrome_trace(report, title).to_string()).map_err(|source| {
        TraceError::Write {
            path: path.to_path_buf(),
            source,
        }
    })
}

/// The run as a Chrome trace-event JSON document (open it in
/// <https://ui.perfetto.dev> or `chrome://tracing`). Each device is a
/// process, each CPU worker or GPU queue a thread, each package a slice;
/// a staged GPU's transfer batches are slices of one more thread of its
/// process, "transfers" (upload or download, with their bytes).
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
    for (d, dev) in report.devices.iter().enumerate() {
        if report.packages.transfers().iter().any(|t| t.device == d) {
            events.push(json!({
                "ph": "M", "name": "thread_name", "pid": d, "tid": dev.claimants,
                "args": { "name": "transfers" }
            }));
        }
    }
    for t in report.packages.transfers() {
        let tid = report.devices.get(t.device).map_or(1, |d| d.claimants);
        events.push(json!({
            "ph": "X",
            "name": if t.upload { "upload" } else { "download" },
            "cat": "transfer",
            "pid": t.device,
            "tid": tid,
            "ts": t.start_s * 1e6,
            "dur": (t.end_s - t.start_s).max(0.0) * 1e6,
            "args": { "bytes": t.bytes }
        }));
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
                "work_items": p.work_items,
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

#[cfg(test)]
mod tests {
    /// An unwritable path is a typed error that names the file and keeps
    /// the I/O error as its source.
    #[test]
    fn an_unwritable_trace_is_a_typed_error() {
        let report = crate::Report {
            time_s: 0.0,
            items: 0,
            units: 0,
            devices: Vec::new(),
            packages: Default::default(),
            from_profile: false,
            one_time_transfer: false,
            memory: crate::MemoryPlacement::ZeroCopy,
            energy: None,
        };
        let path = std::path::Path::new("/nonexistent/coexec/trace.json");
        let err = super::write_chrome_trace(path, &report, "t").unwrap_err();
        let super::TraceError::Write { path: p, source } = &err;
        assert_eq!(p, path);
        assert_eq!(source.kind(), std::io::ErrorKind::NotFound);
        assert!(std::error::Error::source(&err).is_some());
        assert!(err.to_string().contains("/nonexistent/coexec/trace.json"));
    }
}
