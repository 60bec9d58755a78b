//! Energy: counters read around each run (RAPL for CPU packages, NVML for
//! NVIDIA GPUs, or sources an application injects), the joules and
//! energy-delay product a [`Report`](crate::Report) gives, and the
//! objective HGuided minimizes ([`Objective`]).
//!
//! A counter that cannot be read (no such interface, or root-only, as RAPL
//! usually is) is *unavailable*: the run goes on and its report has no
//! energy for that device. Nothing here is ever an error of a run.

mod nvml;
mod objective;
mod rapl;
mod sampler;
mod window;
#[cfg(test)]
mod window_tests;

pub use nvml::NvmlGpu;
pub use objective::{edp_choice, DevicePower, Objective};
pub use rapl::RaplPackage;
pub use sampler::{PowerSampler, PowerSource, Sampled};
pub use window::{
    estimate_j, fit_power, joules_since, Basis, DeviceWindow, MeteredDevice, WindowEnergy,
    WindowMeter, WindowStart,
};

use std::sync::Arc;

/// Why an energy counter gave no reading.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("energy unavailable: {0}")]
pub struct Unavailable(pub String);

/// A cumulative energy counter.
pub trait EnergySource: Send + Sync + std::fmt::Debug {
    /// What it measures, e.g. `rapl package-0` or `nvml GPU-…`.
    fn name(&self) -> String;
    /// The counter now, in microjoules.
    fn read_uj(&self) -> Result<u64, Unavailable>;
    /// The value at which the counter wraps back to 0 (RAPL's
    /// `max_energy_range_uj`); `None` for a counter that does not wrap.
    fn wrap_uj(&self) -> Option<u64>;
}

/// Microjoules from reading `start` to reading `end` of a counter that wraps
/// at `wrap` (one wrap at most between them: RAPL's range lasts minutes
/// at full power); `None` where the counter went back without a wrap value.
pub fn delta_uj(start: u64, end: u64, wrap: Option<u64>) -> Option<u64> {
    if end >= start {
        Some(end - start)
    } else {
        let w = wrap?;
        (start <= w).then(|| w - start + end)
    }
}

/// The counters of an engine's devices.
#[derive(Debug, Clone, Default)]
pub struct EnergySources {
    /// The CPU device's counters (RAPL packages; summed).
    pub cpu: Vec<Arc<dyn EnergySource>>,
    /// The GPU's counter.
    pub gpu: Option<Arc<dyn EnergySource>>,
}

impl EnergySources {
    /// What this machine offers for a GPU of Vulkan device UUID `gpu_uuid`:
    /// every readable RAPL package for the CPU, NVML for an NVIDIA GPU.
    /// `None` for a GPU that is a CPU implementation (its energy is the
    /// CPU package's).
    pub fn detect(gpu_uuid: Option<[u8; 16]>) -> EnergySources {
        let cpu = RaplPackage::all()
            .into_iter()
            .map(|p| Arc::new(p) as Arc<dyn EnergySource>)
            .collect();
        let gpu = gpu_uuid.and_then(nvml_gpu);
        EnergySources { cpu, gpu }
    }

    /// Reads every counter now (the start of a run).
    pub fn start(&self) -> Reading {
        let read = |s: &Arc<dyn EnergySource>| s.read_uj().ok();
        Reading {
            cpu: self.cpu.iter().map(read).collect(),
            gpu: self.gpu.as_ref().and_then(read),
        }
    }

    /// Joules from reading `a` to the later reading `b` (both of these
    /// sources): (CPU, GPU), each `None` where either could not be read.
    pub fn between(&self, a: &Reading, b: &Reading) -> (Option<f64>, Option<f64>) {
        let joules = |s: &Arc<dyn EnergySource>, from: Option<u64>, to: Option<u64>| {
            delta_uj(from?, to?, s.wrap_uj()).map(|uj| uj as f64 * 1e-6)
        };
        let cpu: Option<Vec<f64>> = (self.cpu.len() == a.cpu.len() && a.cpu.len() == b.cpu.len())
            .then(|| {
                self.cpu
                    .iter()
                    .enumerate()
                    .map(|(i, s)| joules(s, a.cpu[i], b.cpu[i]))
                    .collect()
            })
            .flatten();
        let cpu = cpu.filter(|v| !v.is_empty()).map(|v| v.iter().sum());
        let gpu = self.gpu.as_ref().and_then(|s| joules(s, a.gpu, b.gpu));
        (cpu, gpu)
    }

    /// Whether there is any counter.
    pub fn is_empty(&self) -> bool {
        self.cpu.is_empty() && self.gpu.is_none()
    }

    /// Joules since `start`: (CPU, GPU), each `None` where unreadable.
    pub fn since(&self, start: &Reading) -> (Option<f64>, Option<f64>) {
        let joules = |s: &Arc<dyn EnergySource>, from: Option<u64>| {
            let end = s.read_uj().ok()?;
            delta_uj(from?, end, s.wrap_uj()).map(|uj| uj as f64 * 1e-6)
        };
        let cpu: Option<Vec<f64>> = self
            .cpu
            .iter()
            .zip(&start.cpu)
            .map(|(s, &from)| joules(s, from))
            .collect();
        let cpu = cpu.filter(|v| !v.is_empty()).map(|v| v.iter().sum());
        let gpu = self.gpu.as_ref().and_then(|s| joules(s, start.gpu));
        (cpu, gpu)
    }
}

/// The NVML counter of the GPU of `uuid`, opened once per process (NVML's
/// initialisation can take a good part of a second; engines after the
/// first share it).
fn nvml_gpu(uuid: [u8; 16]) -> Option<Arc<dyn EnergySource>> {
    type Opened = Vec<([u8; 16], Option<Arc<NvmlGpu>>)>;
    static OPENED: std::sync::Mutex<Opened> = std::sync::Mutex::new(Vec::new());
    let mut opened = OPENED.lock().unwrap_or_else(|p| p.into_inner());
    let gpu = match opened.iter().find(|(u, _)| *u == uuid) {
        Some((_, g)) => g.clone(),
        None => {
            let g = NvmlGpu::open(uuid).ok().map(Arc::new);
            opened.push((uuid, g.clone()));
            g
        }
    };
    gpu.map(|g| g as Arc<dyn EnergySource>)
}

/// Counter readings of an [`EnergySources`] at one moment.
#[derive(Debug, Clone, Default)]
pub struct Reading {
    cpu: Vec<Option<u64>>,
    gpu: Option<u64>,
}

/// The energy of one run.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Energy {
    /// Joules per device, in the order of [`Report::devices`](crate::Report::devices);
    /// `None` where unavailable. A GPU that is a CPU implementation
    /// (lavapipe) has none: its energy is in the CPU package's.
    pub devices: Vec<Option<f64>>,
    /// How the figures were obtained: an engine's per-run figures are
    /// [`Basis::Estimated`] (learned power x busy time; the counters are
    /// read once per window of runs, see [`WindowMeter`]).
    pub basis: Basis,
}

impl Energy {
    /// Joules of the devices that could be read; `None` when none could.
    pub fn joules(&self) -> Option<f64> {
        let read: Vec<f64> = self.devices.iter().flatten().copied().collect();
        (!read.is_empty()).then(|| read.iter().sum())
    }

    /// Energy-delay product of the run (joules x seconds of `time_s`).
    pub fn edp(&self, time_s: f64) -> Option<f64> {
        self.joules().map(|j| j * time_s)
    }

    /// Energy-delay product of device `i` over the run's `time_s`.
    pub fn device_edp(&self, i: usize, time_s: f64) -> Option<f64> {
        self.devices.get(i).copied().flatten().map(|j| j * time_s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU64, Ordering};

    /// A counter set by the test.
    #[derive(Debug)]
    struct Fake {
        uj: AtomicU64,
        wrap: Option<u64>,
        ok: bool,
    }

    impl EnergySource for Fake {
        fn name(&self) -> String {
            "fake".into()
        }
        fn read_uj(&self) -> Result<u64, Unavailable> {
            // Relaxed: one test thread sets and reads it.
            self.ok
                .then(|| self.uj.load(Ordering::Relaxed))
                .ok_or_else(|| Unavailable("permission denied".into()))
        }
        fn wrap_uj(&self) -> Option<u64> {
            self.wrap
        }
    }

    fn fake(uj: u64, wrap: Option<u64>, ok: bool) -> Arc<Fake> {
        Arc::new(Fake {
            uj: AtomicU64::new(uj),
            wrap,
            ok,
        })
    }

    #[test]
    fn counters_wrap_once_at_their_range() {
        assert_eq!(delta_uj(10, 25, None), Some(15));
        // RAPL: 262143328850 µJ range; read near its end, then past the wrap.
        let w = 262_143_328_850;
        assert_eq!(delta_uj(w - 100, 50, Some(w)), Some(150));
        // Back without a wrap value: no reading, not a huge one.
        assert_eq!(delta_uj(25, 10, None), None);
        // A start past the stated range is no reading either.
        assert_eq!(delta_uj(w + 5, 10, Some(w)), None);
    }

    #[test]
    fn readings_sum_packages_and_unreadable_sources_are_unavailable() {
        let (a, b, g) = (
            fake(1_000_000, None, true),
            fake(90, Some(100), true),
            fake(0, None, false),
        );
        let sources = EnergySources {
            cpu: vec![a.clone(), b.clone()],
            gpu: Some(g),
        };
        let start = sources.start();
        a.uj.store(3_000_000, Ordering::Relaxed);
        b.uj.store(10, Ordering::Relaxed); // wrapped: 20 µJ
        let (cpu, gpu) = sources.since(&start);
        assert!((cpu.unwrap() - 2.000_02).abs() < 1e-9, "{cpu:?}");
        assert_eq!(gpu, None);
        let e = Energy {
            devices: vec![cpu, gpu],
            basis: Basis::Measured,
        };
        assert!((e.joules().unwrap() - 2.000_02).abs() < 1e-9);
        assert!((e.edp(0.5).unwrap() - 1.000_01).abs() < 1e-9);
        assert_eq!(e.device_edp(1, 0.5), None);
        assert_eq!(
            Energy {
                devices: vec![None, None],
                basis: Basis::Measured,
            }
            .joules(),
            None
        );
        // No sources at all: nothing, not zero.
        let (cpu, gpu) = EnergySources::default().since(&Reading::default());
        assert_eq!((cpu, gpu), (None, None));
    }
}
