//! Energy counters for the suite: the engine's own sources (RAPL package
//! zones through the powercap sysfs files, NVIDIA GPUs through NVML's
//! total-energy counter; `coexec_engine::energy`), read around each timed
//! repetition rather than around each run.
//!
//! Every figure comes from a hardware counter; where no counter can be read
//! the meter has no sources and every reading is `None` (reported as "not
//! available", never estimated).

use coexec_engine::energy::{delta_uj, EnergySource, NvmlGpu, RaplPackage};
use std::path::Path;
use std::sync::Arc;

/// Counter readings, one per source (`None`: that read failed).
#[derive(Debug, Clone, Default)]
pub struct Sample {
    uj: Vec<Option<u64>>,
}

/// The energy counters of this machine that can be read.
pub struct EnergyMeter {
    sources: Vec<Arc<dyn EnergySource>>,
    notes: Vec<String>,
}

impl std::fmt::Debug for EnergyMeter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EnergyMeter")
            .field("sources", &self.sources())
            .field("notes", &self.notes)
            .finish()
    }
}

/// The engine's Vulkan device UUID (`VkPhysicalDeviceIDProperties`), when the
/// device is an NVIDIA one (the only vendor NVML knows).
fn engine_nvidia_uuid(engine: &crate::Engine) -> Option<[u8; 16]> {
    let info = engine.device_info();
    (info.vendor_id == 0x10de).then_some(info.device_uuid)
}

impl EnergyMeter {
    /// Finds the readable counters: RAPL package domains and, when the
    /// engine's GPU is an NVIDIA one, its NVML energy counter.
    pub fn new(engine: &crate::Engine) -> EnergyMeter {
        let nvml = match engine_nvidia_uuid(engine) {
            None => Err("the engine's GPU is not an NVIDIA one".to_string()),
            Some(uuid) => NvmlGpu::open(uuid)
                .map(|g| Arc::new(g) as Arc<dyn EnergySource>)
                .map_err(|e| e.0),
        };
        Self::with_rapl_root(Path::new("/sys/class/powercap"), nvml)
    }

    /// No sources at all (every reading `None`).
    pub fn none() -> EnergyMeter {
        EnergyMeter {
            sources: Vec::new(),
            notes: vec!["energy measurement turned off".into()],
        }
    }

    fn with_rapl_root(root: &Path, nvml: Result<Arc<dyn EnergySource>, String>) -> EnergyMeter {
        let mut notes = Vec::new();
        let mut sources: Vec<Arc<dyn EnergySource>> = RaplPackage::all_in(root)
            .into_iter()
            .map(|p| Arc::new(p) as Arc<dyn EnergySource>)
            .collect();
        if sources.is_empty() {
            notes.push(format!(
                "RAPL: no readable package zone under {}",
                root.display()
            ));
        }
        match nvml {
            Ok(gpu) => sources.push(gpu),
            Err(e) => notes.push(format!("NVML: {e}")),
        }
        EnergyMeter { sources, notes }
    }

    /// The sources summed by [`EnergyMeter::joules`], e.g.
    /// `rapl:package-0` or `nvml:GPU-…`; empty when none is readable.
    pub fn sources(&self) -> Vec<String> {
        self.sources
            .iter()
            .map(|s| s.name().replacen(' ', ":", 1))
            .collect()
    }

    /// Whether any counter is readable.
    pub fn available(&self) -> bool {
        !self.sources.is_empty()
    }

    /// Why sources are missing (one line per missing kind).
    pub fn notes(&self) -> &[String] {
        &self.notes
    }

    /// Reads every source now.
    pub fn sample(&self) -> Sample {
        Sample {
            uj: self.sources.iter().map(|s| s.read_uj().ok()).collect(),
        }
    }

    /// Joules spent between two samples, summed over the sources, or `None`
    /// when there is no source or one of them failed to read.
    pub fn joules(&self, before: &Sample, after: &Sample) -> Option<f64> {
        if !self.available() {
            return None;
        }
        let mut uj = 0u64;
        for (s, (b, a)) in self.sources.iter().zip(before.uj.iter().zip(&after.uj)) {
            uj += delta_uj((*b)?, (*a)?, s.wrap_uj())?;
        }
        Some(uj as f64 * 1e-6)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rapl_wraps_around() {
        let j = |b, a, range| delta_uj(b, a, Some(range)).unwrap() as f64 * 1e-6;
        assert_eq!(j(1_000_000, 3_000_000, 10_000_000), 2.0);
        assert_eq!(j(9_000_000, 1_000_000, 10_000_000), 2.0);
    }

    #[test]
    fn rapl_from_a_fake_sysfs() {
        let root = std::env::temp_dir().join(format!("coexec-rapl-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        for (zone, name, uj) in [
            ("intel-rapl:0", "package-0", "5000000"),
            ("intel-rapl:0:0", "core", "1"),
            ("intel-rapl:1", "package-1", "7000000"),
        ] {
            let d = root.join(zone);
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(d.join("name"), name).unwrap();
            std::fs::write(d.join("energy_uj"), uj).unwrap();
            std::fs::write(d.join("max_energy_range_uj"), "10000000").unwrap();
        }
        let m = EnergyMeter::with_rapl_root(&root, Err("none here".into()));
        assert_eq!(m.sources(), ["rapl:package-0", "rapl:package-1"]);
        let before = m.sample();
        std::fs::write(root.join("intel-rapl:0/energy_uj"), "1000000").unwrap();
        std::fs::write(root.join("intel-rapl:1/energy_uj"), "7500000").unwrap();
        let after = m.sample();
        let j = m.joules(&before, &after).unwrap();
        assert!((j - 6.5).abs() < 1e-9, "{j}");
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn no_sources_means_no_figure() {
        let m = EnergyMeter::with_rapl_root(Path::new("/nonexistent"), Err("no".into()));
        assert!(!m.available());
        assert_eq!(m.joules(&m.sample(), &m.sample()), None);
        assert_eq!(m.notes().len(), 2);
    }
}
