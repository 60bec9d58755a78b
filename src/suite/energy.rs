//! Energy counters: Intel RAPL package domains through the powercap sysfs
//! files and NVIDIA GPUs through NVML's total-energy counter.
//!
//! Every figure comes from a hardware counter; where no counter can be read
//! the meter has no sources and every reading is `None` (reported as "not
//! available", never estimated).
//!
//! NVML (`libnvidia-ml.so.1`) is opened at run time with `libloading`, so the
//! crate builds and runs on machines without the NVIDIA driver.

use std::ffi::{c_char, c_int, c_uint, c_ulonglong, c_void};
use std::path::{Path, PathBuf};

/// One RAPL package domain (`/sys/class/powercap/intel-rapl:N`).
#[derive(Debug, Clone)]
struct RaplDomain {
    /// `energy_uj`.
    path: PathBuf,
    /// Display name, e.g. `package-0`.
    name: String,
    /// `max_energy_range_uj`: the counter wraps to 0 past this value.
    range_uj: u64,
}

impl RaplDomain {
    fn read(&self) -> Option<u64> {
        read_u64(&self.path)
    }
}

fn read_u64(path: &Path) -> Option<u64> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

/// The package domains under `root` (top-level `intel-rapl:N` zones; their
/// `intel-rapl:N:M` subzones are parts of the package and would count twice),
/// or why there are none.
fn rapl_domains(root: &Path) -> Result<Vec<RaplDomain>, String> {
    let entries = std::fs::read_dir(root).map_err(|e| format!("{}: {e}", root.display()))?;
    let mut names: Vec<String> = entries
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| {
            n.strip_prefix("intel-rapl:")
                .is_some_and(|rest| !rest.is_empty() && rest.bytes().all(|b| b.is_ascii_digit()))
        })
        .collect();
    names.sort();
    if names.is_empty() {
        return Err(format!("no intel-rapl package zone in {}", root.display()));
    }
    let mut domains = Vec::new();
    let mut unreadable = Vec::new();
    for n in names {
        let dir = root.join(&n);
        let path = dir.join("energy_uj");
        let name = std::fs::read_to_string(dir.join("name"))
            .map(|s| s.trim().to_string())
            .unwrap_or_else(|_| n.clone());
        let range_uj = read_u64(&dir.join("max_energy_range_uj")).unwrap_or(0);
        if read_u64(&path).is_none() {
            unreadable.push(path.display().to_string());
            continue;
        }
        domains.push(RaplDomain {
            path,
            name,
            range_uj,
        });
    }
    if domains.is_empty() {
        return Err(format!(
            "{} not readable (root only on most systems)",
            unreadable.join(", ")
        ));
    }
    Ok(domains)
}

/// Joules between two readings of a counter that wraps past `range_uj`.
fn rapl_delta_j(before: u64, after: u64, range_uj: u64) -> f64 {
    let uj = if after >= before {
        after - before
    } else if range_uj > before {
        // One wrap-around: up to the top, then from 0.
        range_uj - before + after
    } else {
        after
    };
    uj as f64 * 1e-6
}

type NvmlReturn = c_int;
type NvmlDevice = *mut c_void;
const NVML_SUCCESS: NvmlReturn = 0;

/// The NVML entry points the meter uses, from a library opened at run time.
struct Nvml {
    shutdown: unsafe extern "C" fn() -> NvmlReturn,
    total_energy: unsafe extern "C" fn(NvmlDevice, *mut c_ulonglong) -> NvmlReturn,
    /// The devices measured, with their names.
    devices: Vec<(NvmlDevice, String)>,
    // Kept last so that the function pointers above never outlive it.
    _lib: libloading::Library,
}

// SAFETY: NVML is thread-safe (its documentation: "all NVML functions are
// thread-safe"); device handles are plain identifiers valid until
// `nvmlShutdown`, which only `Drop` calls.
unsafe impl Send for Nvml {}
// SAFETY: as above; `&Nvml` only calls thread-safe NVML functions.
unsafe impl Sync for Nvml {}

impl Nvml {
    /// Opens NVML and picks the devices whose UUID is `uuid` (the engine's
    /// GPU), or explains why none is measured.
    fn open(uuid: Option<[u8; 16]>) -> Result<Nvml, String> {
        let uuid = uuid.ok_or("the engine's Vulkan device is not an NVIDIA GPU")?;
        // SAFETY: loading the NVIDIA management library runs its
        // initialisers, which have no preconditions.
        let lib = unsafe { libloading::Library::new("libnvidia-ml.so.1") }
            // SAFETY: as above.
            .or_else(|_| unsafe { libloading::Library::new("libnvidia-ml.so") })
            .map_err(|e| format!("libnvidia-ml.so.1 not loadable ({e})"))?;
        // SAFETY: the symbol types are those of `nvml.h` (NVML API v2
        // entry points); the pointers are copied out and used only while
        // `lib` is alive (it is stored next to them).
        let (init, shutdown, count, by_index, get_uuid, name, total_energy) = unsafe {
            (
                *lib.get::<unsafe extern "C" fn() -> NvmlReturn>(b"nvmlInit_v2\0")
                    .map_err(|e| e.to_string())?,
                *lib.get::<unsafe extern "C" fn() -> NvmlReturn>(b"nvmlShutdown\0")
                    .map_err(|e| e.to_string())?,
                *lib.get::<unsafe extern "C" fn(*mut c_uint) -> NvmlReturn>(
                    b"nvmlDeviceGetCount_v2\0",
                )
                .map_err(|e| e.to_string())?,
                *lib.get::<unsafe extern "C" fn(c_uint, *mut NvmlDevice) -> NvmlReturn>(
                    b"nvmlDeviceGetHandleByIndex_v2\0",
                )
                .map_err(|e| e.to_string())?,
                *lib.get::<unsafe extern "C" fn(NvmlDevice, *mut c_char, c_uint) -> NvmlReturn>(
                    b"nvmlDeviceGetUUID\0",
                )
                .map_err(|e| e.to_string())?,
                *lib.get::<unsafe extern "C" fn(NvmlDevice, *mut c_char, c_uint) -> NvmlReturn>(
                    b"nvmlDeviceGetName\0",
                )
                .map_err(|e| e.to_string())?,
                *lib.get::<unsafe extern "C" fn(NvmlDevice, *mut c_ulonglong) -> NvmlReturn>(
                    b"nvmlDeviceGetTotalEnergyConsumption\0",
                )
                .map_err(|e| e.to_string())?,
            )
        };
        // SAFETY: `init` is `nvmlInit_v2`, callable at any time.
        let r = unsafe { init() };
        if r != NVML_SUCCESS {
            return Err(format!("nvmlInit_v2 failed (NVML error {r})"));
        }
        // From here on `Drop` calls `nvmlShutdown`.
        let mut nvml = Nvml {
            shutdown,
            total_energy,
            devices: Vec::new(),
            _lib: lib,
        };
        let mut n: c_uint = 0;
        // SAFETY: NVML is initialised; `n` is a valid out-pointer.
        let r = unsafe { count(&mut n) };
        if r != NVML_SUCCESS {
            return Err(format!("nvmlDeviceGetCount_v2 failed (NVML error {r})"));
        }
        let want = uuid_string(&uuid);
        for i in 0..n {
            let mut dev: NvmlDevice = std::ptr::null_mut();
            // SAFETY: NVML is initialised, `i < count`, `dev` is a valid
            // out-pointer.
            if unsafe { by_index(i, &mut dev) } != NVML_SUCCESS {
                continue;
            }
            let text = |f: unsafe extern "C" fn(NvmlDevice, *mut c_char, c_uint) -> NvmlReturn| {
                let mut buf = [0 as c_char; 96];
                // SAFETY: `dev` is a live handle; NVML writes at most
                // `buf.len()` bytes, NUL-terminated.
                let r = unsafe { f(dev, buf.as_mut_ptr(), buf.len() as c_uint) };
                (r == NVML_SUCCESS).then(|| {
                    let bytes: Vec<u8> = buf
                        .iter()
                        .take_while(|&&c| c != 0)
                        .map(|&c| c as u8)
                        .collect();
                    String::from_utf8_lossy(&bytes).into_owned()
                })
            };
            if text(get_uuid).is_some_and(|u| u.eq_ignore_ascii_case(&want)) {
                let name = text(name).unwrap_or_else(|| format!("GPU {i}"));
                nvml.devices.push((dev, name));
            }
        }
        if nvml.devices.is_empty() {
            return Err(format!("no NVML device has the engine GPU's UUID {want}"));
        }
        if nvml.read_mj().is_none() {
            return Err("nvmlDeviceGetTotalEnergyConsumption not supported".into());
        }
        Ok(nvml)
    }

    /// Total energy of the measured devices since the driver loaded, mJ.
    fn read_mj(&self) -> Option<u64> {
        let mut sum = 0u64;
        for (dev, _) in &self.devices {
            let mut mj: c_ulonglong = 0;
            // SAFETY: `dev` is a live handle (NVML stays initialised until
            // `Drop`); `mj` is a valid out-pointer.
            if unsafe { (self.total_energy)(*dev, &mut mj) } != NVML_SUCCESS {
                return None;
            }
            sum = sum.wrapping_add(mj);
        }
        Some(sum)
    }
}

impl Drop for Nvml {
    fn drop(&mut self) {
        // SAFETY: balances the successful `nvmlInit_v2` of `open`; no handle
        // is used afterwards.
        unsafe {
            (self.shutdown)();
        }
    }
}

/// NVML's text form of a GPU UUID: `GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx`.
fn uuid_string(u: &[u8; 16]) -> String {
    let hex =
        |r: std::ops::Range<usize>| -> String { u[r].iter().map(|b| format!("{b:02x}")).collect() };
    format!(
        "GPU-{}-{}-{}-{}-{}",
        hex(0..4),
        hex(4..6),
        hex(6..8),
        hex(8..10),
        hex(10..16)
    )
}

/// The engine's Vulkan device UUID (`VkPhysicalDeviceIDProperties`), when the
/// device is an NVIDIA one (the only vendor NVML knows).
fn engine_nvidia_uuid(engine: &crate::Engine) -> Option<[u8; 16]> {
    let info = engine.device_info();
    (info.vendor_id == 0x10de).then_some(info.device_uuid)
}

/// One reading of every source.
#[derive(Debug, Clone)]
pub struct Sample {
    rapl_uj: Vec<Option<u64>>,
    nvml_mj: Option<u64>,
}

/// The energy counters of this machine that can be read.
pub struct EnergyMeter {
    rapl: Vec<RaplDomain>,
    nvml: Option<Nvml>,
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

impl EnergyMeter {
    /// Finds the readable counters: RAPL package domains and, when the
    /// engine's GPU is an NVIDIA one, its NVML energy counter.
    pub fn new(engine: &crate::Engine) -> EnergyMeter {
        Self::with_rapl_root(
            Path::new("/sys/class/powercap"),
            Nvml::open(engine_nvidia_uuid(engine)),
        )
    }

    /// No sources at all (every reading `None`).
    pub fn none() -> EnergyMeter {
        EnergyMeter {
            rapl: Vec::new(),
            nvml: None,
            notes: vec!["energy measurement turned off".into()],
        }
    }

    fn with_rapl_root(root: &Path, nvml: Result<Nvml, String>) -> EnergyMeter {
        let mut notes = Vec::new();
        let rapl = rapl_domains(root).unwrap_or_else(|e| {
            notes.push(format!("RAPL: {e}"));
            Vec::new()
        });
        let nvml = nvml.map_err(|e| notes.push(format!("NVML: {e}"))).ok();
        EnergyMeter { rapl, nvml, notes }
    }

    /// The sources summed by [`EnergyMeter::joules`], e.g.
    /// `rapl:package-0` or `nvml:NVIDIA H200`; empty when none is readable.
    pub fn sources(&self) -> Vec<String> {
        let mut s: Vec<String> = self
            .rapl
            .iter()
            .map(|d| format!("rapl:{}", d.name))
            .collect();
        if let Some(n) = &self.nvml {
            s.extend(n.devices.iter().map(|(_, name)| format!("nvml:{name}")));
        }
        s
    }

    /// Whether any counter is readable.
    pub fn available(&self) -> bool {
        !self.rapl.is_empty() || self.nvml.is_some()
    }

    /// Why sources are missing (one line per missing kind).
    pub fn notes(&self) -> &[String] {
        &self.notes
    }

    /// Reads every source now.
    pub fn sample(&self) -> Sample {
        Sample {
            rapl_uj: self.rapl.iter().map(RaplDomain::read).collect(),
            nvml_mj: self.nvml.as_ref().and_then(Nvml::read_mj),
        }
    }

    /// Joules spent between two samples, summed over the sources, or `None`
    /// when there is no source or one of them failed to read.
    pub fn joules(&self, before: &Sample, after: &Sample) -> Option<f64> {
        if !self.available() {
            return None;
        }
        let mut j = 0.0;
        for (d, (b, a)) in self
            .rapl
            .iter()
            .zip(before.rapl_uj.iter().zip(&after.rapl_uj))
        {
            j += rapl_delta_j((*b)?, (*a)?, d.range_uj);
        }
        if self.nvml.is_some() {
            let (b, a) = (before.nvml_mj?, after.nvml_mj?);
            j += a.checked_sub(b)? as f64 * 1e-3;
        }
        Some(j)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rapl_wraps_around() {
        assert_eq!(rapl_delta_j(1_000_000, 3_000_000, 10_000_000), 2.0);
        assert_eq!(rapl_delta_j(9_000_000, 1_000_000, 10_000_000), 2.0);
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

    #[test]
    fn uuid_text() {
        let u = [
            0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc, 0xde, 0xf0, 0x01, 0x23, 0x45, 0x67, 0x89, 0xab,
            0xcd, 0xef,
        ];
        assert_eq!(uuid_string(&u), "GPU-12345678-9abc-def0-0123-456789abcdef");
    }
}
