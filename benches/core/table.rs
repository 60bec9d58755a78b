//! Output: the table each section prints, its cell formats and headers.

/// A titled table of text cells with notes under it.
pub(crate) struct Table {
    title: String,
    headers: Vec<String>,
    rows: Vec<Vec<String>>,
    notes: Vec<String>,
}

impl Table {
    pub(crate) fn new(title: &str, headers: &[&str]) -> Self {
        Table {
            title: title.to_string(),
            headers: headers.iter().map(|s| s.to_string()).collect(),
            rows: Vec::new(),
            notes: Vec::new(),
        }
    }
    pub(crate) fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }
    pub(crate) fn note(&mut self, s: impl Into<String>) {
        self.notes.push(s.into());
    }
    pub(crate) fn print(&self) {
        let cols = self.headers.len();
        let mut w: Vec<usize> = self.headers.iter().map(|h| h.len()).collect();
        for r in &self.rows {
            for (i, c) in r.iter().enumerate().take(cols) {
                w[i] = w[i].max(c.len());
            }
        }
        println!("\n== {} ==", self.title);
        let line = |cells: &[String]| {
            let s: Vec<String> = (0..cols)
                .map(|i| {
                    let c = cells.get(i).map(String::as_str).unwrap_or("");
                    if i == 0 {
                        format!("{c:<width$}", width = w[i])
                    } else {
                        format!("{c:>width$}", width = w[i])
                    }
                })
                .collect();
            println!("{}", s.join("  ").trim_end());
        };
        line(&self.headers);
        println!(
            "{}",
            "-".repeat(w.iter().sum::<usize>() + 2 * cols.saturating_sub(1))
        );
        for r in &self.rows {
            line(r);
        }
        for n in &self.notes {
            println!("  note: {n}");
        }
    }
}

pub(crate) fn ms(s: f64) -> String {
    format!("{:.3}", s * 1e3)
}
pub(crate) fn us(s: f64) -> String {
    format!("{:.2}", s * 1e6)
}
pub(crate) fn f3(x: f64) -> String {
    format!("{x:.3}")
}
pub(crate) fn target(ok: bool, what: &str) -> String {
    format!("{what} {}", if ok { "pass" } else { "MISS" })
}

pub(crate) fn headers(name: &str) -> (&'static str, Vec<&'static str>) {
    match name {
        "claim" => (
            "1. claim: cost of one Plan::claim",
            vec!["case", "threads", "claims", "ns/claim/thread", "Mclaims/s"],
        ),
        "cpu_package_overhead" => (
            "2. cpu_package_overhead: Engine::run CPU-only, empty closure",
            vec![
                "case",
                "packages",
                "wall (ms|us)",
                "engine (ms|us)",
                "target",
                "",
            ],
        ),
        "gpu_gap" => (
            "3. gpu_gap: GPU idle gap between consecutive packages (GPU-only)",
            vec![
                "workload",
                "scheduler",
                "time (ms)",
                "packages",
                "median (us)",
                "mean (us)",
                "max (us)",
                "gaps/run",
                "target",
            ],
        ),
        "cpu_vs_rayon" => (
            "4. cpu_vs_rayon: engine CPU-only vs rayon, same work",
            vec![
                "workload",
                "scheduler",
                "packages",
                "engine (ms)",
                "rayon (ms)",
                "rayon vec (ms)",
                "ratio",
                "ratio vec",
                "same out",
                "target",
            ],
        ),
        "gpu_vs_raw" => (
            "5. gpu_vs_raw: engine GPU-only vs one raw dispatch",
            vec![
                "workload",
                "scheduler",
                "packages",
                "engine wall (ms)",
                "engine run (ms)",
                "raw (ms)",
                "raw gpu span (ms)",
                "ratio",
                "same out",
                "target",
            ],
        ),
        "gpu_local_vs_raw" => (
            "7. gpu_local_vs_raw: engine GPU-only, staged, vs raw Vulkan over device-local buffers",
            vec![
                "workload",
                "raw resident (ms)",
                "engine resident (ms)",
                "ratio",
                "target",
                "raw one-shot (ms)",
                "raw overlapped (ms)",
                "engine one-shot (ms)",
                "ratio",
                "target",
            ],
        ),
        _ => (
            "6. coexec_mandelbrot: co-execution vs each device alone",
            vec![
                "config",
                "devices",
                "time (ms)",
                "S",
                "S_max",
                "HE",
                "balance",
                "packages",
                "verified",
                "target HE",
            ],
        ),
    }
}
