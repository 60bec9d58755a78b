//! The suite's readable table: one line per solo baseline and per
//! co-executed run of each kernel, then one summary line per scheduler. Every
//! line of the first part goes through one formatter ([`Line`]).

use super::options::SCHEDULERS;
use super::schema::{CoRun, KernelResult, SchedulerSummary, SuiteReport};
use std::fmt::Write as _;

/// How a column aligns its cells.
#[derive(Clone, Copy)]
enum Align {
    Left,
    Right,
}

/// A column: its header, width, alignment and the text before it.
struct Column {
    header: &'static str,
    width: usize,
    align: Align,
    sep: &'static str,
}

const fn col(header: &'static str, width: usize, align: Align, sep: &'static str) -> Column {
    Column {
        header,
        width,
        align,
        sep,
    }
}

/// The columns of every line.
const COLUMNS: [Column; 13] = [
    col("kernel", 12, Align::Left, ""),
    col("size", 11, Align::Left, " "),
    col("scheduler", 23, Align::Left, " "),
    col("T (ms)", 10, Align::Right, " "),
    col("S", 6, Align::Right, " "),
    col("S_max", 6, Align::Right, " "),
    col("HE", 6, Align::Right, " "),
    col("balance", 7, Align::Right, " "),
    col("cpu_co", 6, Align::Right, " "),
    col("gpu_co", 6, Align::Right, " "),
    col("S_ceil", 6, Align::Right, " "),
    col("pkgs", 6, Align::Right, " "),
    col("ok", 5, Align::Right, " "),
];

/// The columns added where energy counters exist.
const ENERGY_COLUMNS: [Column; 2] = [
    col("E (J)", 8, Align::Right, ""),
    col("EDP/best", 9, Align::Right, " "),
];

/// One line of the table: its cells, and its energy cells where the
/// machine had counters.
struct Line {
    cells: [String; 13],
    energy: Option<[String; 2]>,
}

impl Line {
    /// The header line.
    fn header(energy: bool) -> Line {
        Line {
            cells: COLUMNS.map(|c| c.header.to_string()),
            energy: energy.then(|| ENERGY_COLUMNS.map(|c| c.header.to_string())),
        }
    }

    /// The line's text, without the newline.
    fn render(&self) -> String {
        let mut t = String::new();
        let energy = self
            .energy
            .iter()
            .flat_map(|e| ENERGY_COLUMNS.iter().zip(e));
        for (c, cell) in COLUMNS.iter().zip(&self.cells).chain(energy) {
            let w = c.width;
            let _ = match c.align {
                Align::Left => write!(t, "{}{cell:<w$}", c.sep),
                Align::Right => write!(t, "{}{cell:>w$}", c.sep),
            };
        }
        t
    }
}

/// `v` with `p` decimals, `-` for none.
fn fixed(v: Option<f64>, p: usize) -> String {
    v.map_or("-".to_string(), |v| format!("{v:.p$}"))
}

/// Seconds as milliseconds with 3 decimals, `failed` for none.
fn ms(v: Option<f64>) -> String {
    v.map_or("failed".to_string(), |v| format!("{:.3}", v * 1e3))
}

/// `yes` or `NO`.
fn ok(verified: bool) -> String {
    (if verified { "yes" } else { "NO" }).to_string()
}

/// A scheduler key's label in [`SCHEDULERS`] (the key if it has none).
fn label(key: &str) -> &str {
    SCHEDULERS.iter().find(|s| s.0 == key).map_or(key, |s| s.1)
}

/// The lines of a kernel's solo baselines: each device's best solo run.
fn solo_lines(k: &KernelResult, energy: bool) -> Vec<Line> {
    let fastest = k.t_fastest();
    [
        ("cpu alone", k.t_cpu, &k.t_cpu_scheduler),
        ("gpu alone", k.t_gpu, &k.t_gpu_scheduler),
    ]
    .into_iter()
    .map(|(dev, time, sched)| {
        let solo = k
            .solo
            .iter()
            .find(|s| dev.starts_with(&s.device) && Some(&s.scheduler) == sched.as_ref());
        let empty = String::new;
        Line {
            cells: [
                k.kernel.clone(),
                k.size.clone(),
                format!("{dev} ({})", sched.as_deref().unwrap_or("-")),
                ms(time),
                fixed(fastest.zip(time).map(|(a, b)| a / b), 2),
                empty(),
                empty(),
                empty(),
                empty(),
                empty(),
                empty(),
                fixed(solo.and_then(|s| s.packages.map(|p| p as f64)), 0),
                ok(solo.is_some_and(|s| s.verified)),
            ],
            energy: energy.then(|| [fixed(solo.and_then(|s| s.energy_j), 3), empty()]),
        }
    })
    .collect()
}

/// The line of one co-executed run of kernel `k`.
fn co_line(k: &KernelResult, r: &CoRun, energy: bool) -> Line {
    Line {
        cells: [
            k.kernel.clone(),
            k.size.clone(),
            label(&r.scheduler).to_string(),
            ms(r.time_s),
            fixed(r.speedup, 2),
            fixed(r.s_max, 2),
            fixed(r.he, 2),
            fixed(r.balance, 2),
            fixed(r.corun.and_then(|c| c.cpu_rel), 2),
            fixed(r.corun.and_then(|c| c.gpu_rel), 2),
            fixed(r.corun.and_then(|c| c.s_ceiling), 2),
            fixed(r.packages.map(|p| p as f64), 0),
            ok(r.verified),
        ],
        energy: energy.then(|| [fixed(r.energy_j, 3), fixed(r.edp_rel, 2)]),
    }
}

/// The summary line of one scheduler.
fn summary_line(s: &SchedulerSummary) -> String {
    format!(
        "{:<23} mean HE {}  geomean S {}  min HE {}  mean balance {}  ({} kernels)",
        label(&s.scheduler),
        fixed(s.mean_he, 3),
        fixed(s.geomean_s, 3),
        fixed(s.min_he, 3),
        fixed(s.mean_balance, 3),
        s.kernels
    )
}

impl SuiteReport {
    /// The readable table: per kernel its solo times and one line per
    /// scheduler, then one summary line per scheduler.
    pub fn table(&self) -> String {
        let energy = !self.machine.energy_sources.is_empty();
        let mut t = String::new();
        let _ = writeln!(t, "{}", Line::header(energy).render());
        for k in &self.kernels {
            if let Some(e) = &k.error {
                let _ = writeln!(t, "{:<12} {:<11} error: {e}", k.kernel, k.size);
                continue;
            }
            let runs = k.runs.iter().map(|r| co_line(k, r, energy));
            for line in solo_lines(k, energy).into_iter().chain(runs) {
                let _ = writeln!(t, "{}", line.render());
            }
        }
        let _ = writeln!(t);
        for s in &self.summary {
            let _ = writeln!(t, "{}", summary_line(s));
        }
        let _ = writeln!(
            t,
            "cpu_co, gpu_co: each device's throughput while co-running over its solo \
             throughput; S_ceil: the speedup at those throughputs (S_ceil < S_max: the \
             devices slow each other; S < S_ceil: a scheduling loss)"
        );
        let _ = if energy {
            writeln!(
                t,
                "energy: {} (joules per run; EDP relative to the fastest device alone)",
                self.machine.energy_sources.join(" + ")
            )
        } else {
            writeln!(
                t,
                "energy: not available ({})",
                self.machine.energy_notes.join("; ")
            )
        };
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::suite::fixture::fixture;

    /// The table of the fixture, with and without energy counters, is the
    /// one recorded before the table had its own formatter.
    #[test]
    fn table_matches_the_recorded_text() {
        for (energy, want) in [
            (
                true,
                include_str!("../../tests/data/suite/table-energy.txt"),
            ),
            (
                false,
                include_str!("../../tests/data/suite/table-no-energy.txt"),
            ),
        ] {
            assert_eq!(fixture(energy).table(), want, "energy: {energy}");
        }
    }

    #[test]
    fn every_line_has_the_header_width() {
        let header = Line::header(true).render();
        let table = fixture(true).table();
        for line in table.lines().take_while(|l| !l.is_empty()) {
            if !line.contains("error:") {
                assert_eq!(line.len(), header.len(), "{line}");
            }
        }
    }
}
