//! `coexec bench --energy window|sampled`: energy and EDP over the
//! benchmark's repetitions. The counters (RAPL packages for the CPU side,
//! NVML for each NVIDIA GPU of the run) are read once before the timed
//! repetitions and once after them, the window extended by untimed runs to
//! at least `--energy-window-s`; each device's joules per run are the
//! window's over its runs. `sampled` integrates each NVIDIA GPU's power,
//! read every `--sample-ms` by a background thread, instead of its energy
//! counter (where the counter is too coarse even for the window).

use coexec::energy::{
    Basis, MeteredDevice, NvmlGpu, PowerSampler, PowerSource, RaplPackage, Sampled, WindowEnergy,
    WindowMeter, WindowStart,
};
use coexec::{DeviceKind, Devices, Engine, Report};
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;

/// How `coexec bench` measures energy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum EnergyMode {
    /// No measurement beyond the engine's own (its estimates, where its
    /// counters are on).
    Off,
    /// Counters read at the ends of a window of runs.
    Window,
    /// As window, with each NVIDIA GPU's power sampled and integrated
    /// instead of its energy counter.
    Sampled,
}

/// The meters of a benchmark's devices.
pub(crate) struct BenchMeter {
    mode: EnergyMode,
    meter: WindowMeter,
    /// Each metered device's power reading (sampled mode, NVIDIA GPUs).
    power: Vec<Option<Arc<dyn PowerSource>>>,
    period: Duration,
    /// Shortest window, seconds.
    pub(crate) window_s: f64,
    notes: Vec<String>,
}

/// A window under way.
pub(crate) struct Running {
    start: WindowStart,
    samplers: Vec<Option<PowerSampler>>,
    busy: Vec<f64>,
    runs: usize,
}

/// The energy of a benchmark's window.
pub(crate) struct BenchEnergy {
    window: WindowEnergy,
    basis: Vec<Option<Basis>>,
    notes: Vec<String>,
}

impl BenchMeter {
    /// The meters of `devices` of `engine`: `cpu` (RAPL packages) where
    /// the CPU takes part, then `gpuN` (NVML) for each engine GPU N of the
    /// run.
    pub(crate) fn new(
        engine: &Engine,
        devices: Devices,
        mode: EnergyMode,
        window_s: f64,
        sample_ms: u64,
    ) -> BenchMeter {
        let mut notes = Vec::new();
        let mut metered = Vec::new();
        let mut power = Vec::new();
        if devices.cpu {
            let sources: Vec<_> = RaplPackage::all()
                .into_iter()
                .map(|p| Arc::new(p) as Arc<dyn coexec::energy::EnergySource>)
                .collect();
            if sources.is_empty() {
                notes.push("cpu: no readable RAPL package (powercap)".to_string());
            }
            metered.push(MeteredDevice {
                label: "cpu".into(),
                sources,
            });
            power.push(None);
        }
        for g in (0..engine.gpu_count()).filter(|&g| devices.has_gpu(g)) {
            let label = format!("gpu{g}");
            let (sources, p) = match nvml_of(engine, g) {
                Ok(gpu) => {
                    let p = (mode == EnergyMode::Sampled).then(|| gpu.clone() as _);
                    (vec![gpu as _], p)
                }
                Err(why) => {
                    notes.push(format!("{label}: {why}"));
                    (Vec::new(), None)
                }
            };
            metered.push(MeteredDevice { label, sources });
            power.push(p);
        }
        BenchMeter {
            mode,
            meter: WindowMeter::new(metered),
            power,
            period: Duration::from_millis(sample_ms.max(1)),
            window_s,
            notes,
        }
    }

    /// Whether energy is measured at all.
    pub(crate) fn on(&self) -> bool {
        self.mode != EnergyMode::Off
    }

    /// Starts a window: reads the counters, starts the samplers.
    pub(crate) fn start(&self) -> Running {
        Running {
            samplers: self
                .power
                .iter()
                .map(|p| p.clone().map(|p| PowerSampler::start(p, self.period)))
                .collect(),
            start: self.meter.start(),
            busy: vec![0.0; self.meter.devices().len()],
            runs: 0,
        }
    }

    /// Ends window `r`.
    pub(crate) fn finish(&self, r: Running) -> BenchEnergy {
        let mut window = self.meter.finish(&r.start, r.runs, &r.busy);
        let mut basis: Vec<Option<Basis>> = window
            .devices
            .iter()
            .map(|d| d.joules.map(|_| Basis::Measured))
            .collect();
        let mut notes = self.notes.clone();
        for (i, s) in r.samplers.into_iter().enumerate() {
            let Some(s) = s else { continue };
            match s.stop() {
                Some(Sampled { joules, .. }) if joules > 0.0 => {
                    window.devices[i].joules = Some(joules);
                    basis[i] = Some(Basis::Sampled);
                }
                _ => notes.push(format!(
                    "{}: no power readings; its counter's figure is kept",
                    window.devices[i].label
                )),
            }
        }
        for (d, b) in window.devices.iter().zip(&basis) {
            if b.is_none() && !self.meter.devices().iter().all(|m| m.sources.is_empty()) {
                notes.push(format!(
                    "{}: no figure (unreadable, or the counter did not advance in the window)",
                    d.label
                ));
            }
        }
        BenchEnergy {
            window,
            basis,
            notes,
        }
    }
}

/// The NVML meter of engine GPU `g`, or why there is none.
fn nvml_of(engine: &Engine, g: usize) -> Result<Arc<NvmlGpu>, String> {
    let info = engine.gpu_info(g).ok_or("no such GPU")?;
    if info.vendor_id != 0x10de {
        return Err(format!(
            "not an NVIDIA GPU ({}), no NVML{}",
            info.name,
            if info.device_type == coexec::DeviceType::Cpu {
                "; a CPU implementation's energy is the CPU package's"
            } else {
                ""
            }
        ));
    }
    NvmlGpu::open(info.device_uuid)
        .map(Arc::new)
        .map_err(|e| e.0)
}

impl Running {
    /// Adds run `r` to the window: each metered device's busy time (the
    /// CPU's over its workers), matched by kind and order.
    pub(crate) fn add(&mut self, meter: &BenchMeter, r: &Report) {
        self.runs += 1;
        let labels: Vec<&str> = meter
            .meter
            .devices()
            .iter()
            .map(|d| d.label.as_str())
            .collect();
        let first_gpu = labels.iter().position(|l| l.starts_with("gpu"));
        let mut gpu_k = 0;
        for d in &r.devices {
            let i = match d.kind {
                DeviceKind::Cpu => labels.iter().position(|l| *l == "cpu"),
                DeviceKind::Gpu => {
                    gpu_k += 1;
                    first_gpu.map(|f| f + gpu_k - 1)
                }
            };
            if let Some(b) = i.and_then(|i| self.busy.get_mut(i)) {
                *b += d.busy_s / d.claimants.max(1) as f64;
            }
        }
    }

    /// Seconds since the window started.
    pub(crate) fn elapsed_s(&self) -> f64 {
        self.start.elapsed_s()
    }
}

impl BenchEnergy {
    /// Joules per run of the devices with a figure.
    pub(crate) fn joules_per_run(&self) -> Option<f64> {
        self.window.total_per_run_j()
    }

    /// The `energy` object of `--json`, EDP over the median time `time_s`.
    pub(crate) fn json(&self, mode: EnergyMode, time_s: f64) -> Value {
        let w = &self.window;
        let devices: Vec<Value> = w
            .devices
            .iter()
            .enumerate()
            .map(|(i, d)| {
                json!({
                    "device": d.label,
                    "basis": self.basis[i].map(|b| b.to_string()),
                    "joules_per_run": w.per_run_j(i),
                    "mean_w": w.mean_w(i),
                    "busy_s": d.busy_s,
                })
            })
            .collect();
        let jpr = self.joules_per_run();
        json!({
            "mode": format!("{mode:?}").to_lowercase(),
            "window_s": w.wall_s,
            "runs": w.runs,
            "joules_per_run": jpr,
            "edp": jpr.map(|j| j * time_s),
            "complete": self.basis.iter().all(Option::is_some),
            "devices": devices,
            "notes": self.notes,
        })
    }

    /// The text report's energy line(s).
    pub(crate) fn text(&self, time_s: f64) -> String {
        let w = &self.window;
        let Some(jpr) = self.joules_per_run() else {
            return format!(
                "energy unavailable over {} runs ({:.2} s): {}",
                w.runs,
                w.wall_s,
                self.notes.join("; ")
            );
        };
        let parts: Vec<String> = w
            .devices
            .iter()
            .enumerate()
            .map(|(i, d)| match (w.per_run_j(i), self.basis[i]) {
                (Some(j), Some(b)) => format!("{} {j:.4} J/run ({b})", d.label),
                _ => format!("{} unavailable", d.label),
            })
            .collect();
        format!(
            "energy over {} runs ({:.2} s): {jpr:.4} J/run, EDP {:.6} J*s (median time); {}",
            w.runs,
            w.wall_s,
            jpr * time_s,
            parts.join(", ")
        )
    }
}
