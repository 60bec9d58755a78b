//! Energy over a window of runs: the counters are read once at the start
//! and once at the end of a series of runs (or of at least some seconds),
//! and each run is attributed the window's joules over its runs.
//!
//! Why: a counter read can cost milliseconds (NVML on an H200: ~9 ms of
//! wall time a read) and a counter can advance in steps coarser than one
//! short run (NVML's total-energy counter read 0 J for 23 of 24 runs of
//! 2-20 ms there). Over a window of a second or more both costs vanish.
//!
//! The same window also teaches a device's power: over a window of wall
//! time `T` in which device `i` was busy `b_i` seconds, the model is
//! `E_i = P_active,i * b_i + P_idle,i * (T - b_i)` (see [`fit_power`]).

use super::{delta_uj, DevicePower, EnergySource};
use std::sync::Arc;
use std::time::Instant;

/// How an energy figure was obtained.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Basis {
    /// A hardware counter read around the run, or around a window of runs
    /// (then the window's joules over its runs).
    #[default]
    Measured,
    /// Power readings at a fixed period, integrated over the window
    /// ([`PowerSampler`](super::PowerSampler)).
    Sampled,
    /// Not read for this run: the device's power learned from earlier
    /// windows times its busy and idle time ([`fit_power`]'s model).
    Estimated,
}

impl std::fmt::Display for Basis {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Basis::Measured => "measured",
            Basis::Sampled => "sampled",
            Basis::Estimated => "estimated",
        })
    }
}

/// The counters of one device, summed (e.g. every RAPL package for the
/// CPU side).
#[derive(Debug, Clone)]
pub struct MeteredDevice {
    /// What the device is, e.g. `cpu` or `gpu0`.
    pub label: String,
    /// Its counters; empty: the device is not metered.
    pub sources: Vec<Arc<dyn EnergySource>>,
}

/// Counter readings at a window's start.
#[derive(Debug, Clone)]
pub struct WindowStart {
    at: Instant,
    readings: Vec<Vec<Option<u64>>>,
}

impl WindowStart {
    /// Seconds since the window started.
    pub fn elapsed_s(&self) -> f64 {
        self.at.elapsed().as_secs_f64()
    }
}

/// Reads the counters of devices at the ends of windows.
#[derive(Debug, Clone, Default)]
pub struct WindowMeter {
    devices: Vec<MeteredDevice>,
}

/// One device over a window.
#[derive(Debug, Clone, PartialEq)]
pub struct DeviceWindow {
    /// The device's label.
    pub label: String,
    /// Joules over the window; `None` where a counter could not be read,
    /// the device has none, or the counter did not advance (a window
    /// shorter than its resolution: no figure, not 0 J).
    pub joules: Option<f64>,
    /// Seconds the device was busy in the window (its runs' busy time).
    pub busy_s: f64,
}

/// The energy of a window of runs.
#[derive(Debug, Clone, PartialEq)]
pub struct WindowEnergy {
    /// Wall seconds from the first reading to the last.
    pub wall_s: f64,
    /// Runs in the window (at least 1 where any figure is given).
    pub runs: usize,
    /// Each metered device, in the meter's order.
    pub devices: Vec<DeviceWindow>,
}

impl WindowEnergy {
    /// Joules per run of device `i`: the window's over its runs.
    pub fn per_run_j(&self, i: usize) -> Option<f64> {
        let j = self.devices.get(i)?.joules?;
        (self.runs > 0).then(|| j / self.runs as f64)
    }

    /// Joules per run of every device with a figure; `None` where none has.
    pub fn total_per_run_j(&self) -> Option<f64> {
        let v: Vec<f64> = (0..self.devices.len())
            .filter_map(|i| self.per_run_j(i))
            .collect();
        (!v.is_empty()).then(|| v.iter().sum())
    }

    /// Mean watts of device `i` over the window.
    pub fn mean_w(&self, i: usize) -> Option<f64> {
        let j = self.devices.get(i)?.joules?;
        (self.wall_s > 0.0).then(|| j / self.wall_s)
    }
}

impl WindowMeter {
    /// A meter over `devices`.
    pub fn new(devices: Vec<MeteredDevice>) -> WindowMeter {
        WindowMeter { devices }
    }

    /// The metered devices.
    pub fn devices(&self) -> &[MeteredDevice] {
        &self.devices
    }

    /// Whether any device has a counter.
    pub fn available(&self) -> bool {
        self.devices.iter().any(|d| !d.sources.is_empty())
    }

    /// Reads every counter now: a window starts.
    pub fn start(&self) -> WindowStart {
        WindowStart {
            at: Instant::now(),
            readings: self
                .devices
                .iter()
                .map(|d| d.sources.iter().map(|s| s.read_uj().ok()).collect())
                .collect(),
        }
    }

    /// Reads every counter now: the window from `start` ends after `runs`
    /// runs in which each device was busy `busy_s[i]` seconds (missing
    /// entries: 0).
    pub fn finish(&self, start: &WindowStart, runs: usize, busy_s: &[f64]) -> WindowEnergy {
        let wall_s = start.elapsed_s();
        let devices = self
            .devices
            .iter()
            .zip(&start.readings)
            .enumerate()
            .map(|(i, (d, from))| DeviceWindow {
                label: d.label.clone(),
                joules: joules_since(&d.sources, from).filter(|j| *j > 0.0),
                busy_s: busy_s.get(i).copied().unwrap_or(0.0),
            })
            .collect();
        WindowEnergy {
            wall_s,
            runs,
            devices,
        }
    }
}

/// Joules of `sources` (summed) since readings `from`; `None` without
/// sources or where one cannot be read or went back without a wrap.
pub fn joules_since(sources: &[Arc<dyn EnergySource>], from: &[Option<u64>]) -> Option<f64> {
    if sources.is_empty() || sources.len() != from.len() {
        return None;
    }
    let mut uj = 0u64;
    for (s, f) in sources.iter().zip(from) {
        let end = s.read_uj().ok()?;
        uj = uj.saturating_add(delta_uj((*f)?, end, s.wrap_uj())?);
    }
    Some(uj as f64 * 1e-6)
}

/// Busy fraction of a window below which it teaches idle power instead of
/// busy power (the busy term is then too small to separate from noise).
const IDLE_FRACTION: f64 = 0.05;

/// A device's power learned from a window of `wall_s` seconds in which it
/// used `joules` and was busy `busy_s` seconds, starting from `prior` (the
/// model, or what earlier windows taught).
///
/// The model: `joules = active_w * busy_s + idle_w * (wall_s - busy_s)`.
/// A window in which the device was busy less than 5 % of the time teaches
/// its idle power (`joules / wall_s`; the busy power is kept, at least the
/// idle one); otherwise the idle power is `prior`'s (at most the window's
/// mean power) and the busy power is what is left of the joules over the
/// busy time, at least the idle power. `None` for a window with no usable
/// figures.
pub fn fit_power(joules: f64, wall_s: f64, busy_s: f64, prior: DevicePower) -> Option<DevicePower> {
    let usable = |x: f64| x.is_finite() && x >= 0.0;
    if !(usable(joules) && usable(busy_s) && wall_s.is_finite() && wall_s > 0.0) {
        return None;
    }
    let busy_s = busy_s.min(wall_s);
    let mean_w = joules / wall_s;
    if busy_s < IDLE_FRACTION * wall_s {
        return Some(DevicePower {
            active_w: prior.active_w.max(mean_w),
            idle_w: mean_w,
        });
    }
    let idle_w = prior.idle_w.min(mean_w);
    let active_w = (joules - idle_w * (wall_s - busy_s)) / busy_s;
    Some(DevicePower {
        active_w: active_w.max(idle_w),
        idle_w,
    })
}

/// Joules a device of `power` uses in a run of `time_s` seconds in which it
/// was busy `busy_s` (the window model applied to one run).
pub fn estimate_j(power: DevicePower, time_s: f64, busy_s: f64) -> f64 {
    let busy = busy_s.clamp(0.0, time_s.max(0.0));
    power.active_w * busy + power.idle_w * (time_s - busy).max(0.0)
}
