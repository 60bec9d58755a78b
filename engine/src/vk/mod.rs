//! The Vulkan layer: instance, physical-device facts, logical device, compute
//! pipelines, command recording and synchronisation.
//!
//! Everything above this layer speaks in coexec's own types; every raw Vulkan
//! call of the engine is made here or in the memory layer, each in a small
//! `unsafe` block whose `SAFETY` comment states why it holds.

mod cache;
mod completion;
mod descriptors;
mod device;
#[cfg(feature = "test-hooks")]
pub(crate) mod gate;
mod instance;
mod pipeline;
mod primer;
mod queues;
mod ring;
mod set_cache;
pub mod spirv;
mod timeline;
mod timestamps;
pub(crate) mod transfer;

pub(crate) use completion::Completion;
pub use completion::{DriverEmulation, SyncMode};
pub use device::{Device, DeviceOptions};
pub use cache::PipelineCache;
pub use descriptors::BindingSet;
pub use instance::{
    version_string, Instance, Validation, ValidationCapture, ValidationLog, KEPT_MESSAGES,
    VALIDATION_LAYER,
};
pub use pipeline::ComputePipeline;
pub(crate) use queues::QueueLane;
pub use queues::TransferQueue;
pub(crate) use ring::{Dispatch, Groups};
pub use ring::{DispatchRing, MAX_IN_FLIGHT};
pub use timestamps::{GpuSpan, StampRead};
pub use spirv::{ShaderInterface, SpirvBinding};
pub use timeline::Timeline;

use ash::vk;

/// The `ash` crate coexec is built on, for code that makes its own Vulkan calls.
pub use ash;

/// The kind of a physical device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeviceType {
    /// A GPU sharing memory with the CPU.
    Integrated,
    /// A GPU with its own memory.
    Discrete,
    /// A virtual GPU.
    Virtual,
    /// A Vulkan implementation running on the CPU (e.g. Mesa lavapipe).
    Cpu,
    /// Anything else.
    Other,
}

impl DeviceType {
    fn from_vk(t: vk::PhysicalDeviceType) -> Self {
        match t {
            vk::PhysicalDeviceType::INTEGRATED_GPU => DeviceType::Integrated,
            vk::PhysicalDeviceType::DISCRETE_GPU => DeviceType::Discrete,
            vk::PhysicalDeviceType::VIRTUAL_GPU => DeviceType::Virtual,
            vk::PhysicalDeviceType::CPU => DeviceType::Cpu,
            _ => DeviceType::Other,
        }
    }

    /// `true` when the CPU and the device share physical memory (integrated
    /// GPUs and CPU implementations): unified memory, no copies.
    pub fn is_unified(self) -> bool {
        matches!(self, DeviceType::Integrated | DeviceType::Cpu)
    }

    /// Preference order when choosing a default device (lower is better).
    pub fn rank(self) -> u8 {
        match self {
            DeviceType::Discrete => 0,
            DeviceType::Integrated => 1,
            DeviceType::Virtual => 2,
            DeviceType::Cpu => 3,
            DeviceType::Other => 4,
        }
    }
}

impl std::fmt::Display for DeviceType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            DeviceType::Integrated => "integrated",
            DeviceType::Discrete => "discrete",
            DeviceType::Virtual => "virtual",
            DeviceType::Cpu => "cpu",
            DeviceType::Other => "other",
        })
    }
}

/// One memory heap.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemoryHeap {
    /// Size in bytes.
    pub size: u64,
    /// `true` when the heap is device-local.
    pub device_local: bool,
}

/// One memory type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemoryType {
    /// Vulkan property flags.
    pub(crate) flags: vk::MemoryPropertyFlags,
    /// The heap it allocates from.
    pub heap: u32,
}

impl MemoryType {
    /// The raw `VkMemoryPropertyFlags` bits.
    pub fn property_flags(&self) -> u32 {
        self.flags.as_raw()
    }

    /// `VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT`.
    pub fn device_local(&self) -> bool {
        self.flags.contains(vk::MemoryPropertyFlags::DEVICE_LOCAL)
    }

    /// `VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT`.
    pub fn host_visible(&self) -> bool {
        self.flags.contains(vk::MemoryPropertyFlags::HOST_VISIBLE)
    }

    /// `VK_MEMORY_PROPERTY_HOST_COHERENT_BIT`.
    pub fn host_coherent(&self) -> bool {
        self.flags.contains(vk::MemoryPropertyFlags::HOST_COHERENT)
    }

    /// `VK_MEMORY_PROPERTY_HOST_CACHED_BIT`.
    pub fn host_cached(&self) -> bool {
        self.flags.contains(vk::MemoryPropertyFlags::HOST_CACHED)
    }

    /// Short readable form of the flags, e.g. `DEVICE_LOCAL|HOST_VISIBLE|HOST_COHERENT`.
    pub fn flags_string(&self) -> String {
        let mut parts = Vec::new();
        for (flag, name) in [
            (vk::MemoryPropertyFlags::DEVICE_LOCAL, "DEVICE_LOCAL"),
            (vk::MemoryPropertyFlags::HOST_VISIBLE, "HOST_VISIBLE"),
            (vk::MemoryPropertyFlags::HOST_COHERENT, "HOST_COHERENT"),
            (vk::MemoryPropertyFlags::HOST_CACHED, "HOST_CACHED"),
            (
                vk::MemoryPropertyFlags::LAZILY_ALLOCATED,
                "LAZILY_ALLOCATED",
            ),
            (vk::MemoryPropertyFlags::PROTECTED, "PROTECTED"),
        ] {
            if self.flags.contains(flag) {
                parts.push(name);
            }
        }
        if parts.is_empty() {
            "(none)".into()
        } else {
            parts.join("|")
        }
    }
}

/// One queue family that supports compute.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueueFamily {
    /// Family index.
    pub index: u32,
    /// Number of queues.
    pub count: u32,
    /// `true` when the family also does graphics.
    pub graphics: bool,
    /// Valid bits of timestamps written on this family (0: no timestamps).
    pub timestamp_bits: u32,
}

/// The facts of a physical device that coexec uses.
#[derive(Debug, Clone)]
pub struct PhysicalDeviceInfo {
    /// Index in Vulkan's enumeration order (`vkEnumeratePhysicalDevices`),
    /// counting every device, usable or not: the number `coexec info`
    /// prints, [`GpuChoice::Index`](crate::GpuChoice::Index) and the C
    /// `gpu_index` take.
    pub index: usize,
    /// The raw handle.
    pub(crate) handle: vk::PhysicalDevice,
    /// The driver's name of the device.
    pub name: String,
    /// Its kind.
    pub device_type: DeviceType,
    /// Supported Vulkan version.
    pub api_version: u32,
    /// Driver version (vendor encoded).
    pub driver_version: u32,
    /// Vendor id.
    pub vendor_id: u32,
    /// Device id.
    pub device_id: u32,
    /// Pipeline cache UUID, keys the on-disk pipeline cache.
    pub pipeline_cache_uuid: [u8; 16],
    /// `VkPhysicalDeviceIDProperties::deviceUUID`: the device's identity
    /// across APIs (NVML names the same GPU by it).
    pub device_uuid: [u8; 16],
    /// Memory heaps.
    pub heaps: Vec<MemoryHeap>,
    /// Memory types.
    pub memory_types: Vec<MemoryType>,
    /// Queue families with compute.
    pub compute_families: Vec<QueueFamily>,
    /// A transfer-only queue family (transfer, neither compute nor
    /// graphics: a discrete GPU's copy engines), where the device has one.
    pub transfer_family: Option<u32>,
    /// `maxComputeWorkGroupCount`.
    pub max_group_count: [u32; 3],
    /// `maxComputeWorkGroupSize`.
    pub max_group_size: [u32; 3],
    /// `maxComputeWorkGroupInvocations`.
    pub max_group_invocations: u32,
    /// `maxComputeSharedMemorySize`: bytes of shared (work-group) memory a
    /// compute shader may declare.
    pub max_shared_memory: u32,
    /// `maxPushConstantsSize`.
    pub max_push_constants: u32,
    /// Storage buffers one compute shader may bind: the smaller of
    /// `maxPerStageDescriptorStorageBuffers` and
    /// `maxDescriptorSetStorageBuffers` (a kernel's bindings are all in one
    /// set and one stage).
    pub max_storage_buffers: u32,
    /// `maxStorageBufferRange`.
    pub max_storage_buffer_range: u32,
    /// `minStorageBufferOffsetAlignment`.
    pub min_storage_offset_alignment: u64,
    /// Nanoseconds per timestamp tick.
    pub timestamp_period: f32,
    /// `VK_EXT_external_memory_host` is supported.
    pub external_memory_host: bool,
    /// `maintenance4` is supported (needed by SPIR-V using LocalSizeId).
    pub maintenance4: bool,
    /// `VK_EXT_memory_budget` is supported: staged runs check a mirror
    /// against its heap's budget before allocating it.
    pub memory_budget: bool,
    /// `VK_KHR_timeline_semaphore` is supported (timeline semaphores on a
    /// Vulkan 1.1 device; see [`SyncMode`]).
    pub timeline_semaphore_khr: bool,
    /// The device's shader cores, where a vendor extension tells them
    /// (`VK_NV_shader_sm_builtins`, `VK_AMD_shader_core_properties`).
    pub shader_cores: Option<ShaderCores>,
    /// `VkPhysicalDeviceSubgroupProperties::subgroupSize`: invocations per
    /// subgroup (0 where the device does not say).
    pub subgroup_size: u32,
    /// Compute shaders may use the relative subgroup shuffles
    /// (`subgroupShuffleUp`/`Down`, `GL_KHR_shader_subgroup_shuffle_relative`).
    pub subgroup_shuffle_relative: bool,
    /// The device's PCI address, where it offers `VK_EXT_pci_bus_info`
    /// (its NUMA node is then [`pci_locality`](crate::pci_locality)'s).
    pub pci_bus: Option<crate::exec::topology::PciAddress>,
}

/// How wide a GPU is: its shader cores (NVIDIA SMs, AMD compute units) and
/// the threads each can hold resident at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShaderCores {
    /// Number of shader cores.
    pub cores: u32,
    /// Resident threads (invocations) per core at full occupancy.
    pub threads_per_core: u32,
}

impl ShaderCores {
    /// Work-groups of `group_invocations` threads that fill every core once
    /// at full occupancy: one *wave*. A dispatch of fewer groups leaves cores
    /// idle, and one of a few groups more runs a second, mostly empty, wave.
    pub fn wave_groups(&self, group_invocations: u32) -> u64 {
        let per_core = (self.threads_per_core / group_invocations.max(1)).max(1);
        u64::from(self.cores.max(1)) * u64::from(per_core)
    }

    /// Units of `groups_per_unit` work-groups each that give every core
    /// one group at most (at least 1): a dispatch of fewer runs each of
    /// its groups on a core of its own, in about one group's time.
    pub fn one_group_each(&self, groups_per_unit: u64) -> u64 {
        u64::from(self.cores).div_ceil(groups_per_unit.max(1)).max(1)
    }
}

impl PhysicalDeviceInfo {
    /// [`pipeline_cache_uuid`](Self::pipeline_cache_uuid) as 32 lowercase
    /// hex digits (it names the pipeline cache file and keys profiles).
    pub fn pipeline_cache_uuid_hex(&self) -> String {
        self.pipeline_cache_uuid
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    }

    fn query(instance: &Instance, pd: vk::PhysicalDevice, index: usize) -> Self {
        let raw = instance.raw();
        // SAFETY: `pd` was enumerated from this live instance; these are plain
        // queries with no preconditions beyond that.
        let (props, mem, families, exts) = unsafe {
            (
                raw.get_physical_device_properties(pd),
                raw.get_physical_device_memory_properties(pd),
                raw.get_physical_device_queue_family_properties(pd),
                raw.enumerate_device_extension_properties(pd)
                    .unwrap_or_default(),
            )
        };
        // What may be asked of the device: its version, capped by the
        // instance's.
        let effective = props.api_version.min(instance.api_version());
        let mut m4 = vk::PhysicalDeviceMaintenance4Features::default();
        if effective >= vk::API_VERSION_1_3 {
            let mut f2 = vk::PhysicalDeviceFeatures2::default().push_next(&mut m4);
            // SAFETY: Vulkan 1.1+ entry point, 1.3 for instance and device; the chain holds
            // only structures valid for it.
            unsafe { raw.get_physical_device_features2(pd, &mut f2) };
        }
        let has_ext = |n: &std::ffi::CStr| {
            exts.iter()
                .any(|e| e.extension_name_as_c_str().ok() == Some(n))
        };
        let shader_cores = Self::shader_cores(instance, pd, &has_ext);
        let pci_bus = (effective >= vk::API_VERSION_1_1 && has_ext(ash::ext::pci_bus_info::NAME))
            .then(|| Self::pci_bus(instance, pd));
        let mut id = vk::PhysicalDeviceIDProperties::default();
        let mut sg = vk::PhysicalDeviceSubgroupProperties::default();
        if effective >= vk::API_VERSION_1_1 {
            let mut p2 = vk::PhysicalDeviceProperties2::default()
                .push_next(&mut id)
                .push_next(&mut sg);
            // SAFETY: Vulkan 1.1 entry point (the instance is 1.1+) on a 1.1+
            // device; the chain holds two core 1.1 output structures.
            unsafe { raw.get_physical_device_properties2(pd, &mut p2) };
        }
        let sg_compute = sg.supported_stages.contains(vk::ShaderStageFlags::COMPUTE);
        let heaps = mem.memory_heaps[..mem.memory_heap_count as usize]
            .iter()
            .map(|h| MemoryHeap {
                size: h.size,
                device_local: h.flags.contains(vk::MemoryHeapFlags::DEVICE_LOCAL),
            })
            .collect();
        let memory_types = mem.memory_types[..mem.memory_type_count as usize]
            .iter()
            .map(|t| MemoryType {
                flags: t.property_flags,
                heap: t.heap_index,
            })
            .collect();
        let compute_families = families
            .iter()
            .enumerate()
            .filter(|(_, f)| f.queue_flags.contains(vk::QueueFlags::COMPUTE))
            .map(|(i, f)| QueueFamily {
                index: i as u32,
                count: f.queue_count,
                graphics: f.queue_flags.contains(vk::QueueFlags::GRAPHICS),
                timestamp_bits: f.timestamp_valid_bits,
            })
            .collect();
        let transfer_family = families
            .iter()
            .position(|f| {
                f.queue_count > 0
                    && f.queue_flags.contains(vk::QueueFlags::TRANSFER)
                    && !f
                        .queue_flags
                        .intersects(vk::QueueFlags::COMPUTE | vk::QueueFlags::GRAPHICS)
            })
            .map(|i| i as u32);
        let l = &props.limits;
        PhysicalDeviceInfo {
            index,
            handle: pd,
            name: props
                .device_name_as_c_str()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_else(|_| "(unnamed)".into()),
            device_type: DeviceType::from_vk(props.device_type),
            api_version: props.api_version,
            driver_version: props.driver_version,
            vendor_id: props.vendor_id,
            device_id: props.device_id,
            pipeline_cache_uuid: props.pipeline_cache_uuid,
            device_uuid: id.device_uuid,
            heaps,
            memory_types,
            compute_families,
            transfer_family,
            max_group_count: l.max_compute_work_group_count,
            max_group_size: l.max_compute_work_group_size,
            max_group_invocations: l.max_compute_work_group_invocations,
            max_shared_memory: l.max_compute_shared_memory_size,
            max_push_constants: l.max_push_constants_size,
            max_storage_buffers: l
                .max_per_stage_descriptor_storage_buffers
                .min(l.max_descriptor_set_storage_buffers),
            max_storage_buffer_range: l.max_storage_buffer_range,
            min_storage_offset_alignment: l.min_storage_buffer_offset_alignment,
            timestamp_period: l.timestamp_period,
            external_memory_host: has_ext(ash::ext::external_memory_host::NAME),
            maintenance4: m4.maintenance4 == vk::TRUE,
            memory_budget: has_ext(ash::ext::memory_budget::NAME),
            timeline_semaphore_khr: has_ext(ash::khr::timeline_semaphore::NAME),
            shader_cores,
            subgroup_size: sg.subgroup_size,
            subgroup_shuffle_relative: sg_compute
                && sg
                    .supported_operations
                    .contains(vk::SubgroupFeatureFlags::SHUFFLE_RELATIVE),
            pci_bus,
        }
    }

    /// The PCI address of a Vulkan 1.1+ device that offers
    /// `VK_EXT_pci_bus_info`.
    fn pci_bus(instance: &Instance, pd: vk::PhysicalDevice) -> crate::exec::topology::PciAddress {
        let mut pci = vk::PhysicalDevicePCIBusInfoPropertiesEXT::default();
        let mut p2 = vk::PhysicalDeviceProperties2::default().push_next(&mut pci);
        // SAFETY: Vulkan 1.1 entry point (the instance is 1.1+, the caller
        // checked the device); the chain holds a structure of an extension
        // the device supports.
        unsafe { instance.raw().get_physical_device_properties2(pd, &mut p2) };
        crate::exec::topology::PciAddress {
            domain: pci.pci_domain,
            bus: pci.pci_bus,
            device: pci.pci_device,
            function: pci.pci_function,
        }
    }

    /// Shader cores from the vendor extension the device supports, if any.
    fn shader_cores(
        instance: &Instance,
        pd: vk::PhysicalDevice,
        has_ext: &dyn Fn(&std::ffi::CStr) -> bool,
    ) -> Option<ShaderCores> {
        let raw = instance.raw();
        if has_ext(ash::nv::shader_sm_builtins::NAME) {
            let mut sm = vk::PhysicalDeviceShaderSMBuiltinsPropertiesNV::default();
            let mut p2 = vk::PhysicalDeviceProperties2::default().push_next(&mut sm);
            // SAFETY: Vulkan 1.1+ entry point (the instance is 1.1+); the chain
            // holds a structure of an extension the device supports.
            unsafe { raw.get_physical_device_properties2(pd, &mut p2) };
            // A warp is 32 threads on every NVIDIA GPU with this extension.
            return (sm.shader_sm_count > 0).then_some(ShaderCores {
                cores: sm.shader_sm_count,
                threads_per_core: sm.shader_warps_per_sm.max(1) * 32,
            });
        }
        if has_ext(ash::amd::shader_core_properties::NAME) {
            let mut amd = vk::PhysicalDeviceShaderCorePropertiesAMD::default();
            let mut p2 = vk::PhysicalDeviceProperties2::default().push_next(&mut amd);
            // SAFETY: as above.
            unsafe { raw.get_physical_device_properties2(pd, &mut p2) };
            let cores = amd.shader_engine_count
                * amd.shader_arrays_per_engine_count
                * amd.compute_units_per_shader_array;
            let threads = amd.simd_per_compute_unit * amd.wavefronts_per_simd * amd.wavefront_size;
            return (cores > 0 && threads > 0).then_some(ShaderCores {
                cores,
                threads_per_core: threads,
            });
        }
        None
    }

    /// The compute queue family to use: a compute-only family if there is one
    /// (it runs beside graphics work), else the first family with compute.
    pub fn compute_family(&self) -> Option<QueueFamily> {
        self.compute_families
            .iter()
            .find(|f| !f.graphics)
            .or_else(|| self.compute_families.first())
            .copied()
    }

    /// Why coexec cannot use this device; `None` when it can.
    ///
    /// coexec needs Vulkan 1.1 (`vkCmdDispatchBase`, the `*2` queries,
    /// SPIR-V 1.3) and a compute queue; storage buffers and host-visible
    /// coherent memory are Vulkan 1.0 requirements. Timeline semaphores
    /// (core 1.2, or `VK_KHR_timeline_semaphore`) are used where offered,
    /// else fences ([`SyncMode`]).
    pub fn unusable_reason(&self) -> Option<String> {
        if self.api_version < vk::API_VERSION_1_1 {
            Some(format!(
                "it supports Vulkan {} only; coexec needs 1.1",
                instance::version_string(self.api_version)
            ))
        } else if self.compute_family().is_none() {
            Some("it has no compute queue".into())
        } else {
            None
        }
    }

    /// How the device's submissions signal completion ([`SyncMode`]).
    pub fn sync_mode(&self) -> SyncMode {
        SyncMode::for_device(self)
    }

    /// `true` when the device shares memory with the CPU.
    pub fn is_unified(&self) -> bool {
        self.device_type.is_unified()
    }

    /// The memory type unified buffers use on this device; see `choose_memory_type`.
    pub fn unified_memory_type(&self) -> Option<u32> {
        choose_memory_type(&self.memory_types, &self.heaps, self.is_unified())
    }
}

/// Chooses the memory type for unified (CPU and GPU visible) buffers.
///
/// - On unified-memory devices (integrated GPUs, CPU implementations):
///   prefer `DEVICE_LOCAL | HOST_VISIBLE | HOST_COHERENT` (cached if offered),
///   else any `HOST_VISIBLE | HOST_COHERENT` type.
/// - On discrete GPUs: system memory that is `HOST_VISIBLE | HOST_COHERENT`,
///   cached where available, and never a `DEVICE_LOCAL | HOST_VISIBLE` type
///   (resizable BAR): CPU reads from BAR memory run at practically 0 GB/s.
///
/// Returns `None` when no type qualifies.
pub fn choose_memory_type(
    types: &[MemoryType],
    heaps: &[MemoryHeap],
    unified: bool,
) -> Option<u32> {
    let hv = vk::MemoryPropertyFlags::HOST_VISIBLE | vk::MemoryPropertyFlags::HOST_COHERENT;
    let cached = vk::MemoryPropertyFlags::HOST_CACHED;
    let local = vk::MemoryPropertyFlags::DEVICE_LOCAL;
    let usable = |t: &MemoryType| {
        t.flags.contains(hv)
            && !t.flags.contains(vk::MemoryPropertyFlags::PROTECTED)
            && !t.flags.contains(vk::MemoryPropertyFlags::LAZILY_ALLOCATED)
    };
    let score = |t: &MemoryType| -> Option<u32> {
        if !usable(t) {
            return None;
        }
        let is_local = t.flags.contains(local);
        let is_cached = t.flags.contains(cached);
        let heap_size = heaps.get(t.heap as usize).map_or(0, |h| h.size);
        if unified {
            // Higher is better: local first, then cached.
            Some(u32::from(is_local) * 2 + u32::from(is_cached))
        } else if is_local {
            None
        } else {
            Some(u32::from(is_cached) + u32::from(heap_size > 0))
        }
    };
    types
        .iter()
        .enumerate()
        .filter_map(|(i, t)| score(t).map(|s| (s, i)))
        // Highest score; among equals the lowest index (Vulkan orders types
        // by preference).
        .max_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)))
        .map(|(_, i)| i as u32)
}

#[cfg(test)]
mod tests {
    use super::*;
    use vk::MemoryPropertyFlags as F;

    fn t(flags: F, heap: u32) -> MemoryType {
        MemoryType { flags, heap }
    }

    #[test]
    fn one_group_each_core_in_units() {
        let h200 = ShaderCores {
            cores: 132,
            threads_per_core: 2048,
        };
        // 1-D: a unit is a group.
        assert_eq!(h200.one_group_each(1), 132);
        // 2-D rows of 16 groups: 9 rows give every core a group.
        assert_eq!(h200.one_group_each(16), 9);
        // A row wider than the GPU: one row already fills it.
        assert_eq!(h200.one_group_each(512), 1);
        assert_eq!(h200.one_group_each(0), 132);
        let none = ShaderCores {
            cores: 0,
            threads_per_core: 0,
        };
        assert_eq!(none.one_group_each(1), 1);
    }

    #[test]
    fn h200_memory_types_pick_cached_system_memory_never_bar() {
        // The H200's types, as read on the GPU machine.
        let heaps = [
            MemoryHeap {
                size: 143771 << 20,
                device_local: true,
            },
            MemoryHeap {
                size: 96665 << 20,
                device_local: false,
            },
        ];
        let types = [
            t(F::empty(), 1),
            t(F::DEVICE_LOCAL, 0),
            t(F::HOST_VISIBLE | F::HOST_COHERENT, 1),
            t(F::HOST_VISIBLE | F::HOST_COHERENT | F::HOST_CACHED, 1),
            t(F::DEVICE_LOCAL | F::HOST_VISIBLE | F::HOST_COHERENT, 0),
        ];
        assert_eq!(choose_memory_type(&types, &heaps, false), Some(3));
        // Without the cached type, plain coherent system memory, still not BAR.
        assert_eq!(choose_memory_type(&types[..3], &heaps, false), Some(2));
        let only_bar = [t(F::DEVICE_LOCAL, 0), types[4]];
        assert_eq!(choose_memory_type(&only_bar, &heaps, false), None);
    }

    #[test]
    fn unified_prefers_device_local_host_visible() {
        let heaps = [MemoryHeap {
            size: 1 << 30,
            device_local: true,
        }];
        let lavapipe = [t(
            F::DEVICE_LOCAL | F::HOST_VISIBLE | F::HOST_COHERENT | F::HOST_CACHED,
            0,
        )];
        assert_eq!(choose_memory_type(&lavapipe, &heaps, true), Some(0));
        let igpu = [
            t(F::DEVICE_LOCAL, 0),
            t(F::HOST_VISIBLE | F::HOST_COHERENT, 0),
            t(F::DEVICE_LOCAL | F::HOST_VISIBLE | F::HOST_COHERENT, 0),
            t(F::HOST_VISIBLE | F::HOST_CACHED, 0),
        ];
        assert_eq!(choose_memory_type(&igpu, &heaps, true), Some(2));
        assert_eq!(choose_memory_type(&igpu[..1], &heaps, true), None);
    }
}
