//! How the suite runs: the schedulers it compares, the kernel sets and the
//! options of one suite run.

use crate::workloads::{self, Size};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// The co-execution schedulers of the suite: `(key, label)`, in the papers'
/// figure order. `static` and `hguided:hints` get the solo powers
/// `P_i = 1 / T_i` as hints; `hguided:nohints` measures powers itself.
pub const SCHEDULERS: [(&str, &str); 5] = [
    ("dynamic:5", "Dynamic 5"),
    ("dynamic:200", "Dynamic 200"),
    ("static", "Static"),
    ("hguided:hints", "HGuided (hints)"),
    ("hguided:nohints", "HGuided (no hints)"),
];

/// The schedulers a device is timed with alone; its solo time `T_i` is the
/// best of them (one package, several package counts, HGuided).
pub const SOLO_SCHEDULERS: [&str; 5] = [
    "static",
    "dynamic:8",
    "dynamic:64",
    "dynamic:200",
    "hguided",
];

/// The solo schedulers of a quick suite: a subset of [`SOLO_SCHEDULERS`],
/// as many as the seed suite always had, so that the smoke test stays short.
pub const QUICK_SOLO_SCHEDULERS: [&str; 3] = ["static", "dynamic:64", "hguided"];

/// A set of kernels the suite runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum KernelSet {
    /// The seed kernels ([`workloads::NAMES`] but `saxpy`).
    #[default]
    Seed,
    /// The kernels where the devices are comparable
    /// ([`workloads::COMPARABLE`]).
    Comparable,
}

impl std::str::FromStr for KernelSet {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim() {
            "seed" => Ok(KernelSet::Seed),
            "comparable" => Ok(KernelSet::Comparable),
            other => Err(format!(
                "unknown kernel set `{other}` (one of seed, comparable)"
            )),
        }
    }
}

impl KernelSet {
    /// The set's name, as [`FromStr`](std::str::FromStr) reads it.
    pub fn name(self) -> &'static str {
        match self {
            KernelSet::Seed => "seed",
            KernelSet::Comparable => "comparable",
        }
    }

    /// The set's kernels.
    pub fn kernels(self) -> Vec<String> {
        match self {
            KernelSet::Seed => default_kernels(),
            KernelSet::Comparable => workloads::COMPARABLE
                .iter()
                .map(|n| n.to_string())
                .collect(),
        }
    }
}

/// The kernels the suite runs by default (the seed set): every seed
/// workload but `saxpy` (a memory-bound smoke test, still available by
/// name).
pub fn default_kernels() -> Vec<String> {
    workloads::NAMES
        .iter()
        .filter(|n| **n != "saxpy")
        .map(|n| n.to_string())
        .collect()
}

/// Where energy counters exist, each configuration's energy is read over at
/// least this many seconds of repetitions (a quarter with `quick`).
pub const ENERGY_WINDOW_S: f64 = 1.0;

/// How the suite runs.
#[derive(Debug, Clone)]
pub struct Options {
    /// Small sizes ([`workloads::quick_size`]) and fewer repetitions.
    pub quick: bool,
    /// The kernel set run when `kernels` is `None`.
    pub set: KernelSet,
    /// Kernels to run, of any set (`None`: those of `set`).
    pub kernels: Option<Vec<String>>,
    /// Timed repetitions per configuration (`None`: 5, or 2 with `quick`).
    pub reps: Option<usize>,
    /// Where to write the pictures and traces (`None`: none).
    pub out: Option<PathBuf>,
    /// Where to write the JSON record: after every kernel (`complete:
    /// false`) and at the end (`None`: nowhere).
    pub json: Option<PathBuf>,
    /// Time against problem size, per kernel (needs `out` for pictures).
    pub scaling: bool,
    /// Show a progress bar on stderr (only when it is a terminal).
    pub progress: bool,
    /// Read energy counters.
    pub energy: bool,
    /// The command line, recorded in the JSON.
    pub command: String,
    /// Solo schedulers for the CPU baseline (`None`: all of
    /// [`Options::solo_schedulers`]). CPU workers have no dispatch-size effect, so one
    /// scheduler suffices on machines where the CPU baselines dominate the
    /// suite's time (an H200 against 16 cores).
    pub cpu_solo: Option<Vec<String>>,
    /// Co-executed configurations to run, keys of [`SCHEDULERS`] (`None`:
    /// all). On a machine where one device is far slower, `dynamic:5` hands
    /// a fifth of the work to one CPU worker and can take minutes.
    pub schedulers: Option<Vec<String>>,
    /// Problem sizes per kernel, overriding the default (or quick) size:
    /// machines far smaller than the one the defaults were chosen for (a GPU
    /// and 16 cores) run the suite at sizes that suit them.
    pub sizes: BTreeMap<String, Size>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            quick: false,
            set: KernelSet::Seed,
            kernels: None,
            reps: None,
            out: None,
            json: None,
            cpu_solo: None,
            schedulers: None,
            scaling: true,
            progress: true,
            energy: true,
            command: String::new(),
            sizes: BTreeMap::new(),
        }
    }
}

impl Options {
    /// Seconds over which energy is read per configuration, at least (see
    /// [`ENERGY_WINDOW_S`]).
    pub fn energy_window_s(&self) -> f64 {
        if self.quick {
            ENERGY_WINDOW_S / 4.0
        } else {
            ENERGY_WINDOW_S
        }
    }

    /// The solo schedulers: [`QUICK_SOLO_SCHEDULERS`] with `quick`, else
    /// [`SOLO_SCHEDULERS`].
    pub fn solo_schedulers(&self) -> &'static [&'static str] {
        if self.quick {
            &QUICK_SOLO_SCHEDULERS
        } else {
            &SOLO_SCHEDULERS
        }
    }

    /// Timed repetitions.
    pub fn reps(&self) -> usize {
        self.reps.unwrap_or(if self.quick { 2 } else { 5 }).max(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_sets_parse_and_list_their_kernels() {
        assert_eq!("seed".parse(), Ok(KernelSet::Seed));
        assert_eq!(" comparable".parse(), Ok(KernelSet::Comparable));
        let e = "fast".parse::<KernelSet>().unwrap_err();
        assert!(e.contains("seed, comparable"), "{e}");
        assert_eq!(KernelSet::default(), KernelSet::Seed);
        assert_eq!(KernelSet::Seed.kernels(), default_kernels());
        assert_eq!(KernelSet::Comparable.kernels(), workloads::COMPARABLE);
        for set in [KernelSet::Seed, KernelSet::Comparable] {
            assert_eq!(set.name().parse(), Ok(set));
        }
        let quick = Options {
            quick: true,
            ..Options::default()
        };
        assert!(quick
            .solo_schedulers()
            .iter()
            .all(|k| SOLO_SCHEDULERS.contains(k)));
        assert_eq!(Options::default().solo_schedulers(), SOLO_SCHEDULERS);
    }

    #[test]
    fn default_kernels_leave_out_saxpy() {
        let k = default_kernels();
        assert!(!k.iter().any(|k| k == "saxpy"));
        assert!(k.iter().any(|k| k == "mandelbrot"));
    }
}
