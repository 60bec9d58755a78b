//! Where the GPU reads a run's buffers: in place in host memory (zero-copy)
//! or from device-local mirrors (staged).

use crate::vk::PhysicalDeviceInfo;
use ash::vk;

/// Where the GPU reads and writes a run's buffers ([`EngineOptions::memory`],
/// `COEXEC_MEMORY`).
///
/// [`EngineOptions::memory`]: crate::EngineOptions::memory
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub enum MemoryPlacement {
    /// Zero-copy where the device's memory is unified (a memory type that is
    /// device-local, host-visible, coherent and cached, or a single heap:
    /// integrated GPUs, lavapipe); staged on a discrete GPU.
    #[default]
    Auto,
    /// The GPU reads and writes the host buffers in place.
    ZeroCopy,
    /// Every buffer a GPU run binds gets a device-local mirror: the run
    /// uploads what the GPU reads and downloads what each GPU package
    /// writes. A mirror that cannot be allocated fails the run.
    Staged,
}

impl std::fmt::Display for MemoryPlacement {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            MemoryPlacement::Auto => "auto",
            MemoryPlacement::ZeroCopy => "zero-copy",
            MemoryPlacement::Staged => "staged",
        })
    }
}

impl std::str::FromStr for MemoryPlacement {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s.trim() {
            "auto" => Ok(MemoryPlacement::Auto),
            "zero-copy" | "zero_copy" | "zerocopy" => Ok(MemoryPlacement::ZeroCopy),
            "staged" => Ok(MemoryPlacement::Staged),
            other => Err(format!(
                "unknown memory placement {other:?} (auto, zero-copy or staged)"
            )),
        }
    }
}

/// `COEXEC_MEMORY` where set to a valid placement (read once per process; an
/// invalid value is ignored with a warning).
pub(crate) fn env_override() -> Option<MemoryPlacement> {
    static ENV: std::sync::OnceLock<Option<MemoryPlacement>> = std::sync::OnceLock::new();
    *ENV.get_or_init(|| {
        let v = std::env::var("COEXEC_MEMORY").ok()?;
        match v.parse() {
            Ok(p) => Some(p),
            Err(e) => {
                tracing::warn!("COEXEC_MEMORY ignored: {e}");
                None
            }
        }
    })
}

/// `true` when the GPU reads host memory at device speed: a memory type that
/// is device-local, host-visible, coherent and cached, or a single heap.
pub fn is_unified_memory(info: &PhysicalDeviceInfo) -> bool {
    let all = vk::MemoryPropertyFlags::DEVICE_LOCAL
        | vk::MemoryPropertyFlags::HOST_VISIBLE
        | vk::MemoryPropertyFlags::HOST_COHERENT
        | vk::MemoryPropertyFlags::HOST_CACHED;
    info.heaps.len() == 1 || info.memory_types.iter().any(|t| t.flags.contains(all))
}

/// The placement an engine uses on `info`: `COEXEC_MEMORY` over `requested`,
/// and [`MemoryPlacement::Auto`] resolved by [`is_unified_memory`]. Never
/// `Auto`; also whether staging was demanded (not chosen by `Auto`).
pub(crate) fn resolve(
    requested: MemoryPlacement,
    info: &PhysicalDeviceInfo,
) -> (MemoryPlacement, bool) {
    match env_override().unwrap_or(requested) {
        MemoryPlacement::Auto if is_unified_memory(info) => (MemoryPlacement::ZeroCopy, false),
        MemoryPlacement::Auto => (MemoryPlacement::Staged, false),
        p => (p, p == MemoryPlacement::Staged),
    }
}

/// The memory type for device-local mirrors among `allowed` (a bit mask):
/// device-local, preferring one the host cannot map (never resizable BAR
/// where plain device memory exists); the lowest index among equals.
pub(crate) fn device_local_type(info: &PhysicalDeviceInfo, allowed: u32) -> Option<u32> {
    info.memory_types
        .iter()
        .enumerate()
        .filter(|(i, t)| {
            allowed & (1 << i) != 0
                && t.device_local()
                && !t.flags.contains(vk::MemoryPropertyFlags::PROTECTED)
                && !t.flags.contains(vk::MemoryPropertyFlags::LAZILY_ALLOCATED)
        })
        .min_by_key(|(i, t)| (t.host_visible(), *i))
        .map(|(i, _)| i as u32)
}
