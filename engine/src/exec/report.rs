//! What a run reports: times, per-device figures, the package log.

use crate::sched::DeviceKind;
use std::ops::Range;

/// One executed package, for traces.
#[derive(Debug, Clone, PartialEq)]
pub struct PackageRecord {
    /// Index of the device in [`Report::devices`].
    pub device: usize,
    /// The claimant within the device (CPU worker index; 0 for a GPU).
    pub lane: usize,
    /// Scheduler units.
    pub units: Range<u64>,
    /// Work-items.
    pub items: Range<u64>,
    /// Seconds from the run's start to the package's start (CPU: the call of
    /// the kernel; GPU: its submission, or the previous package's completion if
    /// later).
    pub start_s: f64,
    /// Seconds from the run's start to its completion being observed.
    pub end_s: f64,
    /// CPU only: the package was split off the end of another worker's
    /// package (work stealing) rather than claimed from the run's queue.
    pub stolen: bool,
}

/// Every package a run executed, kept as one list per claimant (each in the
/// order its claimant ran them).
///
/// The lists are the claimants' own, moved into the report when the run
/// ends: building the log costs nothing per package after the run, however
/// many packages there were. [`iter`](PackageLog::iter) walks them claimant
/// by claimant.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PackageLog {
    lanes: Vec<Vec<PackageRecord>>,
}

impl PackageLog {
    /// Adds one claimant's packages.
    pub(crate) fn push_lane(&mut self, records: Vec<PackageRecord>) {
        if !records.is_empty() {
            self.lanes.push(records);
        }
    }

    /// Number of packages.
    pub fn len(&self) -> usize {
        self.lanes.iter().map(Vec::len).sum()
    }

    /// Whether no package ran.
    pub fn is_empty(&self) -> bool {
        self.lanes.is_empty()
    }

    /// Every package, claimant by claimant.
    pub fn iter(&self) -> impl Iterator<Item = &PackageRecord> + '_ {
        self.into_iter()
    }
}

impl<'a> IntoIterator for &'a PackageLog {
    type Item = &'a PackageRecord;
    type IntoIter = std::iter::Flatten<std::slice::Iter<'a, Vec<PackageRecord>>>;

    fn into_iter(self) -> Self::IntoIter {
        self.lanes.iter().flatten()
    }
}

/// GPU idle time between consecutive packages, from timestamp queries.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct GapStats {
    /// Number of gaps measured.
    pub count: usize,
    /// Median gap in microseconds.
    pub median_us: f64,
    /// Mean gap in microseconds.
    pub mean_us: f64,
    /// Largest gap in microseconds.
    pub max_us: f64,
}

impl GapStats {
    pub(crate) fn from_gaps(mut gaps_ns: Vec<u64>) -> Option<Self> {
        if gaps_ns.is_empty() {
            return None;
        }
        gaps_ns.sort_unstable();
        let n = gaps_ns.len();
        let us = |ns: u64| ns as f64 / 1000.0;
        Some(GapStats {
            count: n,
            median_us: us(gaps_ns[n / 2]),
            mean_us: gaps_ns.iter().map(|&g| us(g)).sum::<f64>() / n as f64,
            max_us: us(gaps_ns[n - 1]),
        })
    }
}

/// Figures of one device in a run.
#[derive(Debug, Clone, PartialEq)]
pub struct DeviceReport {
    /// Device name (the CPU model for the CPU device).
    pub name: String,
    /// CPU or GPU.
    pub kind: DeviceKind,
    /// Claimants (CPU workers, or 1 dispatch loop).
    pub claimants: usize,
    /// Packages executed. On the CPU, a package split by work stealing
    /// counts once per part: the claimant's and each thief's
    /// ([`PackageRecord::stolen`]).
    pub packages: usize,
    /// Work-items executed.
    pub items: u64,
    /// Seconds spent executing packages (summed over claimants).
    pub busy_s: f64,
    /// First package start, seconds from the run's start (0 if none).
    pub first_start_s: f64,
    /// Last package end, seconds from the run's start (0 if none).
    pub finish_s: f64,
    /// GPU only: idle gaps between consecutive packages on the device.
    pub gpu_gaps: Option<GapStats>,
    /// Why the device failed in this run, if it did (its packages were
    /// completed by the others).
    pub failure: Option<String>,
}

/// The result of a run.
#[derive(Debug, Clone, PartialEq)]
pub struct Report {
    /// Wall time of the run, seconds.
    pub time_s: f64,
    /// Total work-items.
    pub items: u64,
    /// Scheduler units (work-groups or rows of work-groups).
    pub units: u64,
    /// Per device, in run order.
    pub devices: Vec<DeviceReport>,
    /// Every package executed.
    pub packages: PackageLog,
}

impl Report {
    /// Balancing efficiency: earliest device finish / latest device finish,
    /// over devices that executed work (1.0: all finished together).
    pub fn balance(&self) -> f64 {
        let finishes: Vec<f64> = self
            .devices
            .iter()
            .filter(|d| d.packages > 0)
            .map(|d| d.finish_s)
            .collect();
        if finishes.len() < 2 {
            return 1.0;
        }
        let lo = finishes.iter().cloned().fold(f64::INFINITY, f64::min);
        let hi = finishes.iter().cloned().fold(0.0, f64::max);
        if hi > 0.0 {
            lo / hi
        } else {
            1.0
        }
    }

    /// Total packages.
    pub fn package_count(&self) -> usize {
        self.devices.iter().map(|d| d.packages).sum()
    }
}

impl std::fmt::Display for DeviceKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            DeviceKind::Cpu => "cpu",
            DeviceKind::Gpu => "gpu",
        })
    }
}
