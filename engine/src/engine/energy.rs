//! An engine's energy: its counters, read around each run, the power each
//! device drew in its last measured run, and the EDP objective's choice of
//! devices (see [`crate::energy`]).

use super::Engine;
use crate::energy::{edp_choice, DevicePower, Energy, EnergySources, Objective, Reading};
use crate::exec::kernel::Kernel;
use crate::exec::report::DeviceReport;
use crate::sched::{alone_time, DeviceKind, PowerEstimator, Scheduler};
use crate::vk::DeviceType;
use std::sync::Mutex;

/// Engine slot of the CPU workers and of the GPU (as in the estimators).
const CPU: usize = 0;
const GPU: usize = 1;

/// What an engine keeps about energy.
#[derive(Debug, Default)]
pub(crate) struct EngineEnergy {
    sources: Mutex<EnergySources>,
    /// Watts each engine device (CPU, GPU) drew in the last run that
    /// measured it.
    measured_w: Mutex<[Option<f64>; 2]>,
}

/// The counters of one run, read at its start.
pub(super) struct Meter {
    sources: EnergySources,
    start: Reading,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl EngineEnergy {
    /// Counters `sources`, nothing measured yet.
    pub(crate) fn new(sources: EnergySources) -> Self {
        EngineEnergy {
            sources: Mutex::new(sources),
            measured_w: Mutex::default(),
        }
    }
}

impl Engine {
    /// The energy counters the engine reads around each run: the readable
    /// RAPL packages for the CPU and, for an NVIDIA GPU, NVML (detected when
    /// the engine is built).
    pub fn energy_sources(&self) -> EnergySources {
        lock(&self.inner.energy.sources).clone()
    }

    /// Replaces the energy counters (a board's own meter, or a fake one in
    /// tests); forgets the power measured so far.
    pub fn set_energy_sources(&self, sources: EnergySources) {
        *lock(&self.inner.energy.sources) = sources;
        *lock(&self.inner.energy.measured_w) = [None, None];
    }

    /// What HGuided minimizes ([`EngineOptions::objective`](super::EngineOptions::objective)).
    pub fn objective(&self) -> Objective {
        self.inner.options.objective
    }

    /// Reads the counters at the start of a run.
    pub(super) fn meter(&self) -> Meter {
        let sources = self.energy_sources();
        let start = sources.start();
        Meter { sources, start }
    }

    /// The run's energy per device of `devices` (`None` where no counter
    /// was readable), keeping the power of each device that took part.
    pub(super) fn energy(
        &self,
        meter: Meter,
        time_s: f64,
        devices: &[DeviceReport],
    ) -> Option<Energy> {
        let (cpu, gpu) = meter.sources.since(&meter.start);
        if cpu.is_none() && gpu.is_none() {
            return None;
        }
        let mut measured = lock(&self.inner.energy.measured_w);
        let energy = Energy {
            devices: devices
                .iter()
                .map(|d| {
                    let (j, slot) = match d.kind {
                        DeviceKind::Cpu => (cpu, CPU),
                        DeviceKind::Gpu => (gpu, GPU),
                    };
                    if let (Some(j), true) = (j, d.packages > 0 && time_s > 0.0) {
                        measured[slot] = Some(j / time_s);
                    }
                    j
                })
                .collect(),
        };
        Some(energy)
    }

    /// Each present device's power (CPU, GPU order of `present`): measured
    /// where a counter read it, else the model ([`DevicePower`]).
    fn device_powers(&self, present: &[(usize, usize)]) -> Vec<DevicePower> {
        let measured = *lock(&self.inner.energy.measured_w);
        let info = self.device().info();
        let lavapipe_cores = self
            .inner
            .plan
            .cpu_vulkan_devices
            .first()
            .map_or(1, |c| c.pus.len());
        present
            .iter()
            .map(|&(slot, claimants)| {
                let model = if slot == CPU {
                    DevicePower::model_cpu(claimants)
                } else {
                    let cores = if info.device_type == DeviceType::Cpu {
                        lavapipe_cores
                    } else {
                        0
                    };
                    DevicePower::model_gpu(info.device_type, cores)
                };
                model.measured(measured.get(slot).copied().flatten())
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
