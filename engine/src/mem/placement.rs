//! Where the GPU reads a run's buffers: in place in host memory (zero-copy)
//! or from device-local mirrors (staged).

use crate::vk::{MemoryHeap, MemoryType, PhysicalDeviceInfo};
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
    /// Every buffer a GPU run binds gets a device-local mirror on each GPU
    /// (allocated when the engine makes the buffer, where it fits, else at
    /// the first run that binds it): the run uploads what the GPU reads
    /// and downloads what each GPU package writes. A mirror that cannot be
    /// allocated fails the run.
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
    unified(&info.memory_types, &info.heaps)
}

/// [`is_unified_memory`] over the device's memory types and heaps.
fn unified(types: &[MemoryType], heaps: &[MemoryHeap]) -> bool {
    let all = vk::MemoryPropertyFlags::DEVICE_LOCAL
        | vk::MemoryPropertyFlags::HOST_VISIBLE
        | vk::MemoryPropertyFlags::HOST_COHERENT
        | vk::MemoryPropertyFlags::HOST_CACHED;
    heaps.len() == 1 || types.iter().any(|t| t.flags.contains(all))
}

/// The placement an engine uses on `info`: `COEXEC_MEMORY` over `requested`,
/// and [`MemoryPlacement::Auto`] resolved by [`is_unified_memory`]. Never
/// `Auto`; also whether staging was demanded (not chosen by `Auto`).
pub(crate) fn resolve(
    requested: MemoryPlacement,
    info: &PhysicalDeviceInfo,
) -> (MemoryPlacement, bool) {
    choose(env_override().unwrap_or(requested), is_unified_memory(info))
}

/// `requested` on a device whose memory is `unified` or not.
fn choose(requested: MemoryPlacement, unified: bool) -> (MemoryPlacement, bool) {
    match requested {
        MemoryPlacement::Auto if unified => (MemoryPlacement::ZeroCopy, false),
        MemoryPlacement::Auto => (MemoryPlacement::Staged, false),
        p => (p, p == MemoryPlacement::Staged),
    }
}

/// The memory type for device-local mirrors among `allowed` (a bit mask):
/// device-local, preferring one the host cannot map (never resizable BAR
/// where plain device memory exists); the lowest index among equals.
pub(crate) fn device_local_type(info: &PhysicalDeviceInfo, allowed: u32) -> Option<u32> {
    local_type(&info.memory_types, allowed)
}

/// [`device_local_type`] over the device's memory types.
fn local_type(types: &[MemoryType], allowed: u32) -> Option<u32> {
    types
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

#[cfg(test)]
mod tests {
    use super::*;
    use vk::MemoryPropertyFlags as F;

    fn t(flags: F, heap: u32) -> MemoryType {
        MemoryType { flags, heap }
    }

    fn heap(gib: u64, device_local: bool) -> MemoryHeap {
        MemoryHeap {
            size: gib << 30,
            device_local,
        }
    }

    /// The H200's memory (as read on the GPU machine) is not unified:
    /// `Auto` stages there, into plain device memory, never BAR.
    #[test]
    fn auto_stages_on_the_h200_into_device_memory() {
        let heaps = [heap(140, true), heap(94, false)];
        let types = [
            t(F::empty(), 1),
            t(F::DEVICE_LOCAL, 0),
            t(F::HOST_VISIBLE | F::HOST_COHERENT, 1),
            t(F::HOST_VISIBLE | F::HOST_COHERENT | F::HOST_CACHED, 1),
            t(F::DEVICE_LOCAL | F::HOST_VISIBLE | F::HOST_COHERENT, 0),
        ];
        assert!(!unified(&types, &heaps));
        assert_eq!(
            choose(MemoryPlacement::Auto, false),
            (MemoryPlacement::Staged, false)
        );
        assert_eq!(local_type(&types, u32::MAX), Some(1));
        // Where the buffer accepts only BAR: BAR.
        assert_eq!(local_type(&types, 1 << 4), Some(4));
        assert_eq!(local_type(&types, 1 << 2 | 1 << 3), None);
    }

    /// Lavapipe and integrated GPUs stay zero-copy under `Auto`; an
    /// explicit choice is kept, and only `Staged` counts as demanded.
    #[test]
    fn auto_is_zero_copy_on_unified_memory() {
        let lavapipe = [t(
            F::DEVICE_LOCAL | F::HOST_VISIBLE | F::HOST_COHERENT | F::HOST_CACHED,
            0,
        )];
        assert!(unified(&lavapipe, &[heap(8, true)]));
        // A single heap is unified whatever its types.
        assert!(unified(&[t(F::DEVICE_LOCAL, 0)], &[heap(8, true)]));
        assert_eq!(
            choose(MemoryPlacement::Auto, true),
            (MemoryPlacement::ZeroCopy, false)
        );
        assert_eq!(
            choose(MemoryPlacement::Staged, true),
            (MemoryPlacement::Staged, true)
        );
        assert_eq!(
            choose(MemoryPlacement::ZeroCopy, false),
            (MemoryPlacement::ZeroCopy, false)
        );
        assert_eq!(local_type(&lavapipe, 1), Some(0));
    }

    #[test]
    fn placements_parse_and_print_round_trip() {
        for p in [
            MemoryPlacement::Auto,
            MemoryPlacement::ZeroCopy,
            MemoryPlacement::Staged,
        ] {
            assert_eq!(p.to_string().parse::<MemoryPlacement>(), Ok(p));
        }
        let e = "fast".parse::<MemoryPlacement>().unwrap_err();
        assert!(e.contains("auto, zero-copy or staged"), "{e}");
    }
}
