//! An engine's energy: its counters, read once per window of runs (never
//! around each run), the power each device draws as learned from those
//! windows, the per-run estimates drawn from it, and the EDP objective's
//! choice of devices (see [`crate::energy`]).
//!
//! The model: over a window of wall time `T` in which device `i` was busy
//! `b_i` seconds (its packages' time; the CPU's summed over its workers and
//! divided by them), its counter reads `E_i = A_i * b_i + I_i * (T - b_i)`
//! joules, `A_i` its busy power and `I_i` its idle power
//! ([`fit_power`](crate::energy::fit_power)). A window in which the device
//! barely ran teaches `I_i`; the others teach `A_i`. A run of a
//! configuration of devices then costs `sum_i A_i * b_i + I_i * (t - b_i)`
//! ([`estimate_j`]), and the EDP objective compares configurations with it
//! ([`edp_choice`]). The configuration's other dimension, the CPU's worker
//! count, is fixed per engine, so the power is learned per engine device.

use super::Engine;
use crate::energy::{
    edp_choice, estimate_j, fit_power, Basis, DevicePower, Energy, EnergySources, Objective,
    Reading,
};
use crate::exec::kernel::Kernel;
use crate::exec::report::DeviceReport;
use crate::sched::{alone_time, DeviceKind, PowerEstimator, Scheduler};
use crate::vk::DeviceType;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Engine slot of the CPU workers and of the GPU (as in the estimators).
const CPU: usize = 0;
const GPU: usize = 1;

/// The default window: the environment variable `COEXEC_ENERGY_WINDOW_S`
/// (seconds), else 1 s.
fn default_window() -> Duration {
    std::env::var("COEXEC_ENERGY_WINDOW_S")
        .ok()
        .and_then(|v| v.parse::<f64>().ok())
        .and_then(|s| Duration::try_from_secs_f64(s).ok())
        .unwrap_or(Duration::from_secs(1))
}

/// What an engine keeps about energy.
#[derive(Debug)]
pub(crate) struct EngineEnergy {
    sources: Mutex<EnergySources>,
    state: Mutex<State>,
}

/// The open window and what the closed ones taught.
#[derive(Debug)]
struct State {
    /// Shortest window.
    window: Duration,
    open: Option<Window>,
    /// Power of each engine device (CPU, GPU) learned from windows, or
    /// set by the application.
    learned: [Option<DevicePower>; 2],
    /// Counter reads so far (each window's end is the next one's start).
    reads: u64,
}

/// A window of runs under way.
#[derive(Debug)]
struct Window {
    start: Reading,
    at: Instant,
    /// Busy seconds of each engine device (CPU, GPU) in the window's runs.
    busy: [f64; 2],
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl EngineEnergy {
    /// Counters `sources`, nothing measured yet.
    pub(crate) fn new(sources: EnergySources) -> Self {
        EngineEnergy {
            sources: Mutex::new(sources),
            state: Mutex::new(State {
                window: default_window(),
                open: None,
                learned: [None, None],
                reads: 0,
            }),
        }
    }
}

/// Busy seconds of each engine device (CPU, GPU) in a run of `time_s`.
fn busy_of(devices: &[DeviceReport], time_s: f64) -> [f64; 2] {
    let mut busy = [0.0; 2];
    for d in devices {
        let (slot, b) = match d.kind {
            DeviceKind::Cpu => (CPU, d.busy_s / d.claimants.max(1) as f64),
            DeviceKind::Gpu => (GPU, d.busy_s),
        };
        busy[slot] = (busy[slot] + b).min(time_s.max(0.0));
    }
    busy
}

impl Engine {
    /// The energy counters the engine reads once per window of runs: the
    /// readable RAPL packages for the CPU and, for an NVIDIA GPU, NVML
    /// (detected when the engine is built, where metering is wanted).
    pub fn energy_sources(&self) -> EnergySources {
        lock(&self.inner.energy.sources).clone()
    }

    /// Replaces the energy counters (a board's own meter, or a fake one in
    /// tests); forgets the power learned so far and the open window.
    pub fn set_energy_sources(&self, sources: EnergySources) {
        *lock(&self.inner.energy.sources) = sources;
        let mut st = lock(&self.inner.energy.state);
        st.open = None;
        st.learned = [None, None];
    }

    /// Sets the shortest window over which the counters are read (default
    /// 1 s, or `COEXEC_ENERGY_WINDOW_S`): the counters are read at the end
    /// of the first run that ends at least this long after the last read.
    /// `Duration::ZERO` reads them after every run (a window of one run).
    pub fn set_energy_window(&self, window: Duration) {
        lock(&self.inner.energy.state).window = window;
    }

    /// The power of the engine's CPU side and GPU (in that order) as
    /// learned from the counters' windows, or as set by
    /// [`set_device_power`](Self::set_device_power); `None` where neither
    /// (the EDP objective then uses [`DevicePower`]'s model).
    pub fn device_power(&self) -> [Option<DevicePower>; 2] {
        lock(&self.inner.energy.state).learned
    }

    /// Sets the power of the CPU side and of the GPU (a board's known
    /// figures), as if learned; later windows refine it where counters
    /// read. `None` leaves a device's power as it is.
    pub fn set_device_power(&self, cpu: Option<DevicePower>, gpu: Option<DevicePower>) {
        let mut st = lock(&self.inner.energy.state);
        for (slot, p) in [(CPU, cpu), (GPU, gpu)] {
            if let Some(p) = p {
                st.learned[slot] = Some(p);
            }
        }
    }

    /// Counter reads since the engine was built or its sources were set
    /// (one per window, not one per run).
    pub fn energy_reads(&self) -> u64 {
        lock(&self.inner.energy.state).reads
    }

    /// What HGuided minimizes ([`EngineOptions::objective`](super::EngineOptions::objective)).
    pub fn objective(&self) -> Objective {
        self.inner.options.objective
    }

    /// After a run of `time_s` with `devices`: adds its busy time to the
    /// open window, closes the window where it lasted long enough (one read
    /// of the counters, the devices' power learned, the next window opened
    /// by the same reading), and gives the run's energy as estimated from
    /// the learned power (`None` without counters or before any window
    /// closed).
    pub(super) fn energy(&self, time_s: f64, devices: &[DeviceReport]) -> Option<Energy> {
        let sources = self.energy_sources();
        if sources.is_empty() {
            return None;
        }
        let busy = busy_of(devices, time_s);
        let mut st = lock(&self.inner.energy.state);
        let due = st.open.as_ref().map(|w| w.at.elapsed() >= st.window);
        match due {
            None => {
                st.open = Some(Window {
                    start: sources.start(),
                    at: Instant::now(),
                    busy: [0.0; 2],
                });
                st.reads += 1;
            }
            Some(due) => {
                let w = st.open.as_mut().expect("checked above");
                w.busy[CPU] += busy[CPU];
                w.busy[GPU] += busy[GPU];
                if due {
                    self.close_window(&mut st, &sources);
                }
            }
        }
        let powers = st.learned;
        drop(st);
        let figures: Vec<Option<f64>> = devices
            .iter()
            .map(|d| {
                let (slot, b) = match d.kind {
                    DeviceKind::Cpu => (CPU, d.busy_s / d.claimants.max(1) as f64),
                    DeviceKind::Gpu => (GPU, d.busy_s),
                };
                powers[slot].map(|p| estimate_j(p, time_s, b))
            })
            .collect();
        figures.iter().any(Option::is_some).then_some(Energy {
            devices: figures,
            basis: Basis::Estimated,
        })
    }

    /// Closes the open window of `st`: reads the counters, fits each
    /// device's power, and opens the next window at this reading.
    fn close_window(&self, st: &mut State, sources: &EnergySources) {
        let Some(w) = st.open.take() else { return };
        let end = sources.start();
        st.reads += 1;
        let wall_s = w.at.elapsed().as_secs_f64();
        let (cpu_j, gpu_j) = sources.between(&w.start, &end);
        for (slot, j) in [(CPU, cpu_j), (GPU, gpu_j)] {
            // 0 J over a window: the counter did not step (coarser than
            // the window); no figure.
            let Some(j) = j.filter(|j| *j > 0.0) else {
                continue;
            };
            let prior = st.learned[slot].unwrap_or_else(|| self.model_power(slot));
            if let Some(p) = fit_power(j, wall_s, w.busy[slot], prior) {
                st.learned[slot] = Some(p);
            }
        }
        st.open = Some(Window {
            start: end,
            at: Instant::now(),
            busy: [0.0; 2],
        });
    }

    /// The model's power of engine device `slot` (nothing measured).
    fn model_power(&self, slot: usize) -> DevicePower {
        if slot == CPU {
            return DevicePower::model_cpu(self.inner.workers);
        }
        let info = self.device().info();
        let cores = self
            .inner
            .plan
            .cpu_vulkan_devices
            .first()
            .map_or(1, |c| c.pus.len());
        let cores = if info.device_type == DeviceType::Cpu {
            cores
        } else {
            0
        };
        DevicePower::model_gpu(info.device_type, cores)
    }

    /// Each present device's power (CPU, GPU order of `present`): learned
    /// from windows where a counter read it, else the model
    /// ([`DevicePower`]; the CPU's for the run's claimants).
    fn device_powers(&self, present: &[(usize, usize)]) -> Vec<DevicePower> {
        let learned = lock(&self.inner.energy.state).learned;
        present
            .iter()
            .map(|&(slot, claimants)| {
                learned.get(slot).copied().flatten().unwrap_or_else(|| {
                    if slot == CPU {
                        DevicePower::model_cpu(claimants)
                    } else {
                        self.model_power(slot)
                    }
                })
            })
            .collect()
    }

    /// Under [`Objective::Edp`] and HGuided, the devices of `present` that
    /// sit the run out to minimize its energy-delay product, from their
    /// learned costs; `sit` (the time objective's choice) otherwise, and
    /// while a cost is unknown. `true` in the second place where the choice
    /// changed `sit` (the learner's configuration then does not apply).
    pub(super) fn edp_sit_out(
        &self,
        kernel: &Kernel,
        scheduler: &Scheduler,
        present: &[(usize, usize)],
        units: u64,
        sit: Vec<bool>,
    ) -> (Vec<bool>, bool) {
        if self.objective() != Objective::Edp
            || !matches!(scheduler, Scheduler::HGuided { .. })
            || present.len() < 2
        {
            return (sit, false);
        }
        let est = &*kernel.estimator;
        let alone: Vec<Option<f64>> = present
            .iter()
            .map(|&(slot, claimants)| est.cost(slot).map(|c| alone_time(c, claimants, units)))
            .collect();
        match edp_choice(&alone, &self.device_powers(present)) {
            Some(edp) if edp != sit => {
                tracing::debug!(?alone, ?edp, ?sit, "EDP objective: devices that sit out");
                (edp, true)
            }
            _ => (sit, false),
        }
    }
}
