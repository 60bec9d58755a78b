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
    /// Units of the index space (work-groups or rows of work-groups; in a
    /// run of a sub-range, the space's units, inside that sub-range): what
    /// the package covered, exactly.
    pub units: Range<u64>,
    /// Work-items, linear (row-major): from the first to one past the
    /// last. A package of a kernel that takes tiles
    /// ([`Kernel::with_tiles`](crate::Kernel::with_tiles)) covers only some
    /// columns of its rows, so the other columns between are not its; see
    /// `work_items`.
    pub items: Range<u64>,
    /// The number of work-items the package ran.
    pub work_items: u64,
    /// Seconds from the run's start to the package's start (CPU: the call of
    /// the kernel; GPU: its submission, or the previous package's completion if
    /// later).
    pub start_s: f64,
    /// Seconds from the run's start to its completion being observed.
    pub end_s: f64,
    /// The package was split off the end of a CPU worker's package (work
    /// stealing) rather than claimed from the run's queue. The thief is
    /// another CPU worker or the GPU: a stolen package may be on either
    /// device; it is always taken from a CPU worker.
    pub stolen: bool,
}

/// One batch of staged transfers of a GPU, for traces: from its
/// submission to its completion being observed by the dispatch loop.
#[derive(Debug, Clone, PartialEq)]
pub struct TransferSpan {
    /// Index of the GPU in [`Report::devices`].
    pub device: usize,
    /// `true`: host buffers to mirrors; `false`: mirrors to host buffers.
    pub upload: bool,
    /// Bytes copied.
    pub bytes: u64,
    /// Seconds from the run's start to the batch's submission.
    pub start_s: f64,
    /// Seconds from the run's start to its completion being observed.
    pub end_s: f64,
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
    /// The GPUs' staged transfer batches.
    transfers: Vec<TransferSpan>,
}

impl PackageLog {
    /// Adds one claimant's packages.
    pub(crate) fn push_lane(&mut self, records: Vec<PackageRecord>) {
        if !records.is_empty() {
            self.lanes.push(records);
        }
    }

    /// Adds one GPU's transfer batches.
    pub(crate) fn push_transfers(&mut self, spans: Vec<TransferSpan>) {
        self.transfers.extend(spans);
    }

    /// The GPUs' staged transfer batches (empty for zero-copy runs), GPU
    /// by GPU, each GPU's in submission order.
    pub fn transfers(&self) -> &[TransferSpan] {
        &self.transfers
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

/// What a device moved between host buffers and device-local mirrors in a
/// staged run ([`MemoryPlacement::Staged`](crate::MemoryPlacement)); zero
/// for zero-copy runs and for the CPU.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Transfers {
    /// Bytes copied from host buffers to mirrors.
    pub upload_bytes: u64,
    /// Bytes copied from mirrors to host buffers.
    pub download_bytes: u64,
    /// Wall seconds the device's dispatch loop spent waiting for transfers.
    pub seconds: f64,
    /// Buffers the run bound zero-copy although staging was chosen (their
    /// mirror did not fit; `Auto` placement only).
    pub zero_copy_fallbacks: u32,
    /// The run's transfers went to the GPU's transfer queue, beside its
    /// dispatches, rather than to its compute queue (see
    /// [`TransferQueue`](crate::TransferQueue)).
    pub own_queue: bool,
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
    /// Packages executed. A package split by work stealing counts once per
    /// part: the claimant's and each thief's, a CPU worker or the GPU
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
    /// When the device's results were home, seconds from the run's start:
    /// on a staged GPU, the end of its last download where that came after
    /// its last package; else [`finish_s`](Self::finish_s). How a
    /// co-executed run ended is judged by it (a GPU whose last package
    /// ended first may still be downloading when the others are done).
    pub settled_s: f64,
    /// GPU only: seconds the device itself spent in its packages, from its
    /// timestamps (`None` without them). Against [`busy_s`](Self::busy_s),
    /// measured on the host from submission to completion, it tells the
    /// kernel's own time from the round trips around it.
    pub gpu_busy_s: Option<f64>,
    /// Why the device failed in this run, if it did (its packages were
    /// completed by the others).
    pub failure: Option<String>,
    /// Set when the device stopped taking fresh work by design: the seconds
    /// the package it declined would have taken (HGuided's finish-time
    /// guard), or infinity when it sat the run out (a power of 0, or the
    /// single-device fallback when co-executing could not pay). `None`:
    /// it took work until none was left.
    pub declined_s: Option<f64>,
    /// Staged transfers (GPU only).
    pub transfers: Transfers,
    /// CPU only: which path ran its share, `native` (the CPU workers) or
    /// `spirv` (the kernel's SPIR-V on a CPU Vulkan device); `None` for a
    /// GPU and for a CPU that had no path ([`note`](Self::note)).
    pub cpu_impl: Option<crate::CpuImpl>,
    /// Why the device did not take part though asked for, where that is not
    /// a failure (a kernel without a CPU implementation on an engine
    /// without a CPU Vulkan device: the GPUs ran it alone).
    pub note: Option<String>,
}

impl DeviceReport {
    /// The report of a device that sat the run out by design.
    pub(crate) fn sat_out(name: &str, kind: DeviceKind, claimants: usize) -> DeviceReport {
        DeviceReport {
            name: name.to_string(),
            kind,
            claimants,
            packages: 0,
            items: 0,
            busy_s: 0.0,
            first_start_s: 0.0,
            finish_s: 0.0,
            gpu_gaps: None,
            settled_s: 0.0,
            gpu_busy_s: None,
            failure: None,
            declined_s: Some(f64::INFINITY),
            transfers: Transfers::default(),
            cpu_impl: None,
            note: None,
        }
    }

    /// The report of a CPU asked for that could not run the kernel: `why`.
    pub(crate) fn no_cpu_path(name: &str, why: &str) -> DeviceReport {
        DeviceReport {
            note: Some(why.to_string()),
            ..DeviceReport::sat_out(name, DeviceKind::Cpu, 0)
        }
    }

    /// The device's path in reports: `cpu (native)`, `cpu (spirv)`, `cpu`
    /// (no path) or `gpu`.
    pub fn path(&self) -> String {
        match self.cpu_impl {
            Some(i) => format!("{} ({i})", self.kind),
            None => self.kind.to_string(),
        }
    }
}

/// The result of a run.
#[derive(Debug, Clone, PartialEq)]
pub struct Report {
    /// Wall time of the run, seconds: from before the downloads a staged
    /// run makes at its start (lazy host coherence) to after its mirrors
    /// were settled at its end, and the combine of its reductions'
    /// partials after that; the packages' times count from when the
    /// claimants started, at most that much later.
    pub time_s: f64,
    /// Total work-items.
    pub items: u64,
    /// Scheduler units (work-groups or rows of work-groups) the run
    /// covered: its sub-range's where it ran one.
    pub units: u64,
    /// Per device, in run order.
    pub devices: Vec<DeviceReport>,
    /// Every package executed.
    pub packages: PackageLog,
    /// Whether the scheduler's figures for this kernel and space came, at
    /// least in part, from a profile on disk (see
    /// `EngineOptions::profiles`): a first run that knew the devices.
    pub from_profile: bool,
    /// A staged GPU's first package brought up the rest of an input this
    /// kernel had read before, unchanged since, which earlier runs left
    /// partly in the GPU's memory (they uploaded only what their packages
    /// read): a one-time transfer, after which the input is resident. The
    /// scheduler does not time such a run.
    pub one_time_transfer: bool,
    /// Where the GPU read and wrote the buffers: zero-copy or staged
    /// ([`crate::MemoryPlacement`]; zero-copy when no GPU took part).
    pub memory: crate::MemoryPlacement,
    /// Joules per device where an energy counter could be read (RAPL, NVML,
    /// [`Engine::set_energy_sources`](crate::Engine::set_energy_sources));
    /// `None` where none could: energy unavailable.
    pub energy: Option<crate::energy::Energy>,
}

impl Report {
    /// Balancing efficiency: earliest device finish / latest device finish,
    /// over devices that executed work (1.0: all finished together), where
    /// a device that declined work by design counts as finishing when the
    /// package it declined would have ended (at most the latest finish): a
    /// slow device that stopped because its next package would have ended
    /// after the others is balanced, one that stopped too early is not.
    /// Devices that sat the run out are left out. See
    /// [`balance_raw`](Self::balance_raw) for the plain ratio.
    pub fn balance(&self) -> f64 {
        let latest = self.finishes().fold(0.0, f64::max);
        ratio(self.devices.iter().filter(|d| d.packages > 0).map(|d| {
            d.declined_s
                .map_or(d.finish_s, |t| (d.finish_s + t).min(latest))
        }))
    }

    /// Earliest device finish / latest device finish over the devices that
    /// executed work, declined or not.
    pub fn balance_raw(&self) -> f64 {
        ratio(self.finishes())
    }

    /// Joules of the run, over the devices whose counters could be read.
    pub fn joules(&self) -> Option<f64> {
        self.energy.as_ref()?.joules()
    }

    /// Energy-delay product of the run: [`joules`](Self::joules) x
    /// [`time_s`](Self::time_s).
    pub fn edp(&self) -> Option<f64> {
        self.energy.as_ref()?.edp(self.time_s)
    }

    /// Total packages.
    pub fn package_count(&self) -> usize {
        self.devices.iter().map(|d| d.packages).sum()
    }

    fn finishes(&self) -> impl Iterator<Item = f64> + '_ {
        self.devices
            .iter()
            .filter(|d| d.packages > 0)
            .map(|d| d.finish_s)
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

/// Smallest over largest of `finishes`; 1.0 for fewer than two or a zero
/// largest.
fn ratio(finishes: impl Iterator<Item = f64>) -> f64 {
    let (mut n, mut lo, mut hi) = (0usize, f64::INFINITY, 0.0f64);
    for f in finishes {
        n += 1;
        lo = lo.min(f);
        hi = hi.max(f);
    }
    if n < 2 || hi <= 0.0 {
        1.0
    } else {
        lo / hi
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn device(kind: DeviceKind, finish_s: f64, declined_s: Option<f64>) -> DeviceReport {
        DeviceReport {
            name: kind.to_string(),
            kind,
            claimants: 1,
            packages: 1,
            items: 1,
            busy_s: finish_s,
            first_start_s: 0.0,
            finish_s,
            gpu_gaps: None,
            settled_s: finish_s,
            gpu_busy_s: None,
            failure: None,
            declined_s,
            transfers: Transfers::default(),
            cpu_impl: None,
            note: None,
        }
    }

    fn report(devices: Vec<DeviceReport>) -> Report {
        Report {
            time_s: 1.0,
            items: 2,
            units: 2,
            devices,
            packages: PackageLog::default(),
            from_profile: false,
            one_time_transfer: false,
            memory: crate::MemoryPlacement::ZeroCopy,
            energy: None,
        }
    }

    #[test]
    fn a_device_that_declined_by_design_counts_as_balanced() {
        use DeviceKind::{Cpu, Gpu};
        // The CPU stopped at 0.25 s: its next package would have ended at
        // 1.25 s, after the GPU's 1 s. Balanced; the raw ratio says 0.25.
        let r = report(vec![device(Cpu, 0.25, Some(1.0)), device(Gpu, 1.0, None)]);
        assert_eq!(r.balance(), 1.0);
        assert_eq!(r.balance_raw(), 0.25);
        // It declined a package of 0.25 s though 0.75 s were left: not.
        let r = report(vec![device(Cpu, 0.25, Some(0.25)), device(Gpu, 1.0, None)]);
        assert_eq!(r.balance(), 0.5);
        // A device that sat the run out is left out.
        let mut idle = DeviceReport::sat_out("gpu", Gpu, 1);
        idle.declined_s = Some(f64::INFINITY);
        let r = report(vec![device(Cpu, 1.0, None), idle]);
        assert_eq!((r.balance(), r.balance_raw()), (1.0, 1.0));
        // No decline: the plain ratio.
        let r = report(vec![device(Cpu, 0.5, None), device(Gpu, 1.0, None)]);
        assert_eq!((r.balance(), r.balance_raw()), (0.5, 0.5));
    }
}
