//! The engine's Vulkan devices: which physical devices an
//! [`EngineOptions`](super::EngineOptions) chooses, how many logical devices
//! are opened on them (the `COEXEC_DUPLICATE_DEVICES` testing aid), and each
//! kernel's pipeline on each of them.

use super::{find_index, pick, GpuChoice};
use crate::error::{Error, Result};
use crate::exec::kernel::Kernel;
use crate::vk::{ComputePipeline, DeviceType, PhysicalDeviceInfo};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

/// Most GPUs an engine drives (the width of [`GpuChoice::Set`] and of
/// [`Devices`](super::Devices)' GPU mask).
pub const MAX_GPUS: usize = 64;

/// The physical devices `choice` names among `devs` (every device, in
/// Vulkan's enumeration order), in that order.
///
/// [`GpuChoice::All`]: every usable discrete and integrated GPU with
/// host-visible coherent memory; where there is none, the best device
/// ([`GpuChoice::Auto`]: a CPU implementation such as lavapipe is taken only
/// then, or when named by index). Where several are found, those without
/// `VK_EXT_external_memory_host` (which a multi-device engine needs to share
/// its buffers) are left out with a warning.
pub(super) fn pick_all(
    devs: &[PhysicalDeviceInfo],
    choice: GpuChoice,
) -> Result<Vec<PhysicalDeviceInfo>> {
    match choice {
        GpuChoice::Auto | GpuChoice::Index(_) => Ok(vec![pick(devs, choice)?]),
        GpuChoice::Set(mask) => {
            if mask == 0 {
                return Err(Error::NoDeviceSelected(
                    "GpuChoice::Set names no device".into(),
                ));
            }
            (0..MAX_GPUS)
                .filter(|i| mask & (1u64 << i) != 0)
                .map(|i| pick(devs, GpuChoice::Index(i)))
                .collect()
        }
        GpuChoice::All => {
            let gpus: Vec<PhysicalDeviceInfo> = devs
                .iter()
                .filter(|d| {
                    d.unusable_reason().is_none()
                        && d.unified_memory_type().is_some()
                        && matches!(d.device_type, DeviceType::Discrete | DeviceType::Integrated)
                })
                .cloned()
                .collect();
            match gpus.len() {
                0 => Ok(vec![pick(devs, GpuChoice::Auto)?]),
                1 => Ok(gpus),
                _ => Ok(shareable(gpus)),
            }
        }
    }
}

/// The devices of `gpus` that can import host memory, or the first alone
/// where fewer than two can.
fn shareable(gpus: Vec<PhysicalDeviceInfo>) -> Vec<PhysicalDeviceInfo> {
    let (ok, not): (Vec<_>, Vec<_>) = gpus.iter().cloned().partition(|d| d.external_memory_host);
    for d in &not {
        tracing::warn!(
            "{} (device {}) lacks VK_EXT_external_memory_host and is left out of the multi-device engine",
            d.name,
            d.index
        );
    }
    if ok.len() >= 2 {
        ok
    } else {
        gpus.into_iter().take(1).collect()
    }
}

/// How many logical devices to open on each chosen physical device:
/// `option` where non-zero, else `COEXEC_DUPLICATE_DEVICES` (a testing aid:
/// it lets one GPU, lavapipe included, stand for several), else 1. An
/// unreadable or zero value of the variable counts as 1; the result is
/// capped so that the engine keeps at most [`MAX_GPUS`] GPUs.
pub(super) fn copies(option: usize, physical: usize) -> usize {
    let n = if option > 0 {
        option
    } else {
        std::env::var("COEXEC_DUPLICATE_DEVICES")
            .ok()
            .and_then(|v| v.trim().parse::<usize>().ok())
            .unwrap_or(1)
    };
    n.clamp(1, (MAX_GPUS / physical.max(1)).max(1))
}

/// The physical device of index `index` among `devs`, for re-reading a
/// device from another instance.
pub(super) fn refind(devs: &[PhysicalDeviceInfo], index: usize) -> Result<PhysicalDeviceInfo> {
    find_index(devs, index).cloned()
}

/// A kernel's pipeline on engine GPU `gpu` (0: the first), with its flag
/// "this GPU completed a package of it" (see [`Kernel`]'s `gpu_warm`).
pub(crate) fn pipeline_on(kernel: &Kernel, gpu: usize) -> Option<(&ComputePipeline, &AtomicBool)> {
    match gpu {
        0 => kernel.pipeline.as_deref().map(|p| (p, &*kernel.gpu_warm)),
        g => kernel
            .other_gpus
            .get(g - 1)
            .map(|(p, warm)| (&**p, &**warm)),
    }
}

/// The kernel's pipelines on the engine's GPUs after the first, built from
/// the first one's.
pub(super) fn other_pipelines(
    first: &Option<Arc<ComputePipeline>>,
    words: &Option<Vec<u32>>,
    others: &[&Arc<crate::vk::Device>],
) -> Result<Vec<(Arc<ComputePipeline>, Arc<AtomicBool>)>> {
    let (Some(first), Some(words)) = (first, words) else {
        return Ok(Vec::new());
    };
    others
        .iter()
        .map(|d| {
            let p = ComputePipeline::new((*d).clone(), words, first.interface().clone())?;
            Ok((Arc::new(p), Arc::default()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fake(index: usize, ty: DeviceType, host_import: bool) -> Option<PhysicalDeviceInfo> {
        let mut d = crate::Engine::vulkan_devices().ok()?.into_iter().next()?;
        d.index = index;
        d.device_type = ty;
        d.external_memory_host = host_import;
        Some(d)
    }

    /// Every discrete and integrated GPU by default; a CPU implementation
    /// only when alone or named; sets by physical index.
    #[test]
    fn default_takes_every_gpu_and_lavapipe_only_alone() {
        let (Some(cpu), Some(i1), Some(i2), Some(i3)) = (
            fake(0, DeviceType::Cpu, true),
            // Integrated: lavapipe's memory types are those of one.
            fake(1, DeviceType::Integrated, true),
            fake(2, DeviceType::Integrated, true),
            fake(3, DeviceType::Integrated, false),
        ) else {
            eprintln!("skipping: no Vulkan device");
            return;
        };
        let idx = |v: Vec<PhysicalDeviceInfo>| v.iter().map(|d| d.index).collect::<Vec<_>>();
        let all = [cpu.clone(), i1, i2, i3.clone()];
        // Device 3 cannot share host memory: left out.
        assert_eq!(idx(pick_all(&all, GpuChoice::All).unwrap()), [1, 2]);
        assert_eq!(
            idx(pick_all(std::slice::from_ref(&cpu), GpuChoice::All).unwrap()),
            [0]
        );
        assert_eq!(
            idx(pick_all(&[cpu.clone(), i3], GpuChoice::All).unwrap()),
            [3]
        );
        assert_eq!(idx(pick_all(&all, GpuChoice::Set(0b1001)).unwrap()), [0, 3]);
        assert!(matches!(
            pick_all(&all, GpuChoice::Set(1 << 9)),
            Err(Error::DeviceIndex { index: 9, .. })
        ));
        assert!(matches!(
            pick_all(&all, GpuChoice::Set(0)),
            Err(Error::NoDeviceSelected(_))
        ));
        assert_eq!(idx(pick_all(&all, GpuChoice::Index(0)).unwrap()), [0]);
    }

    #[test]
    fn copies_come_from_the_option_and_are_capped() {
        assert_eq!(copies(3, 1), 3);
        assert_eq!(copies(1000, 1), MAX_GPUS);
        assert_eq!(copies(1000, 3), MAX_GPUS / 3);
    }
}
