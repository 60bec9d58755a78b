//! Allocator backends behind one trait.

use crate::error::{Error, Result};
use crate::vk::Device;
use ash::vk;
use std::ptr::NonNull;
use std::sync::Arc;

/// Which library sub-allocates device memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum AllocatorBackend {
    /// gpu-allocator (pure Rust), the default.
    #[default]
    GpuAllocator,
    /// Vulkan Memory Allocator through vk-mem (cargo feature `vma`).
    Vma,
}

impl std::fmt::Display for AllocatorBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            AllocatorBackend::GpuAllocator => "gpu-allocator",
            AllocatorBackend::Vma => "vma",
        })
    }
}

impl std::str::FromStr for AllocatorBackend {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s {
            "gpu-allocator" | "gpu_allocator" | "default" => Ok(AllocatorBackend::GpuAllocator),
            "vma" | "vk-mem" => Ok(AllocatorBackend::Vma),
            _ => Err(format!(
                "unknown allocator backend {s:?} (gpu-allocator or vma)"
            )),
        }
    }
}

/// A block of mapped memory a buffer is bound to.
pub(crate) struct Block {
    pub(crate) memory: vk::DeviceMemory,
    pub(crate) offset: u64,
    /// The host mapping; `None` for device-local blocks.
    pub(crate) ptr: Option<NonNull<u8>>,
    pub(crate) handle: Handle,
}

pub(crate) enum Handle {
    GpuAllocator(gpu_allocator::vulkan::Allocation),
    #[cfg(feature = "vma")]
    Vma(vk_mem::Allocation),
}

// SAFETY: a Block is an owned allocation; its pointer refers to mapped memory
// that stays mapped until the block is freed, and no thread-affine state is
// involved (both allocators' handles are Send).
unsafe impl Send for Block {}
// SAFETY: shared references to a Block only read its plain fields.
unsafe impl Sync for Block {}

pub(crate) trait Backend: Send + Sync {
    fn kind(&self) -> AllocatorBackend;
    /// Allocates mapped memory of the backend's memory type for `req`.
    fn allocate(&self, req: vk::MemoryRequirements, name: &str) -> Result<Block>;
    /// Allocates device memory of `memory_type` (a device-local type `req`
    /// accepts) for `req`, not necessarily mapped: a mirror's.
    fn allocate_device_local(
        &self,
        req: vk::MemoryRequirements,
        memory_type: u32,
        name: &str,
    ) -> Result<Block>;
    /// Frees a block from this backend.
    fn free(&self, block: Block);
}

pub(crate) fn create(
    device: &Arc<Device>,
    kind: AllocatorBackend,
    memory_type: u32,
) -> Result<Box<dyn Backend>> {
    match kind {
        AllocatorBackend::GpuAllocator => {
            Ok(Box::new(GpuAllocatorBackend::new(device, memory_type)?))
        }
        #[cfg(feature = "vma")]
        AllocatorBackend::Vma => Ok(Box::new(vma::VmaBackend::new(device, memory_type)?)),
        #[cfg(not(feature = "vma"))]
        AllocatorBackend::Vma => Err(Error::BackendUnavailable("vma")),
    }
}

struct GpuAllocatorBackend {
    allocator: std::sync::Mutex<gpu_allocator::vulkan::Allocator>,
    memory_type: u32,
}

impl GpuAllocatorBackend {
    fn new(device: &Arc<Device>, memory_type: u32) -> Result<Self> {
        let allocator =
            gpu_allocator::vulkan::Allocator::new(&gpu_allocator::vulkan::AllocatorCreateDesc {
                instance: device.instance().raw().clone(),
                device: device.raw().clone(),
                physical_device: device.info().handle,
                debug_settings: Default::default(),
                buffer_device_address: false,
                allocation_sizes: Default::default(),
            })
            .map_err(|e| Error::Allocator {
                bytes: 0,
                source: Box::new(e),
            })?;
        Ok(GpuAllocatorBackend {
            allocator: std::sync::Mutex::new(allocator),
            memory_type,
        })
    }
}

impl GpuAllocatorBackend {
    /// One allocation of `req` restricted to `memory_type`, at `location`.
    fn allocate_in(
        &self,
        mut req: vk::MemoryRequirements,
        memory_type: u32,
        location: gpu_allocator::MemoryLocation,
        name: &str,
    ) -> Result<gpu_allocator::vulkan::Allocation> {
        req.memory_type_bits &= 1 << memory_type;
        let bytes = req.size;
        self.allocator
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .allocate(&gpu_allocator::vulkan::AllocationCreateDesc {
                name,
                requirements: req,
                location,
                linear: true,
                allocation_scheme: gpu_allocator::vulkan::AllocationScheme::GpuAllocatorManaged,
            })
            .map_err(|e| Error::Allocator {
                bytes,
                source: Box::new(e),
            })
    }

    fn free_allocation(&self, a: gpu_allocator::vulkan::Allocation) {
        let _ = self
            .allocator
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .free(a);
    }
}

impl Backend for GpuAllocatorBackend {
    fn kind(&self) -> AllocatorBackend {
        AllocatorBackend::GpuAllocator
    }

    fn allocate(&self, req: vk::MemoryRequirements, name: &str) -> Result<Block> {
        // Our chosen memory type; GpuToCpu requires HOST_VISIBLE |
        // HOST_COHERENT, which that type has.
        let location = gpu_allocator::MemoryLocation::GpuToCpu;
        let a = self.allocate_in(req, self.memory_type, location, name)?;
        let Some(ptr) = a.mapped_ptr() else {
            self.free_allocation(a);
            return Err(Error::Allocation {
                bytes: req.size,
                message: "allocation is not host-mapped".into(),
            });
        };
        Ok(Block {
            // SAFETY: the allocation is alive; its memory handle is only used
            // while the Block (which owns the allocation) exists.
            memory: unsafe { a.memory() },
            offset: a.offset(),
            ptr: Some(ptr.cast()),
            handle: Handle::GpuAllocator(a),
        })
    }

    fn allocate_device_local(
        &self,
        req: vk::MemoryRequirements,
        memory_type: u32,
        name: &str,
    ) -> Result<Block> {
        let location = gpu_allocator::MemoryLocation::GpuOnly;
        let a = self.allocate_in(req, memory_type, location, name)?;
        Ok(Block {
            // SAFETY: as in `allocate`.
            memory: unsafe { a.memory() },
            offset: a.offset(),
            ptr: a.mapped_ptr().map(|p| p.cast()),
            handle: Handle::GpuAllocator(a),
        })
    }

    fn free(&self, block: Block) {
        #[allow(irrefutable_let_patterns)]
        if let Handle::GpuAllocator(a) = block.handle {
            self.free_allocation(a);
        }
    }
}

#[cfg(feature = "vma")]
mod vma {
    use super::{AllocatorBackend, Backend, Block, Handle};
    use crate::error::{Error, Result};
    use crate::vk::Device;
    use ash::vk;
    use std::ptr::NonNull;
    use std::sync::Arc;
    use vk_mem::Alloc;

    pub(super) struct VmaBackend {
        allocator: vk_mem::Allocator,
        memory_type: u32,
    }

    impl VmaBackend {
        pub(super) fn new(device: &Arc<Device>, memory_type: u32) -> Result<Self> {
            let mut info = vk_mem::AllocatorCreateInfo::new(
                device.instance().raw(),
                device.raw(),
                device.info().handle,
            );
            info.vulkan_api_version = device
                .instance()
                .api_version()
                .min(device.info().api_version);
            // SAFETY: instance, device and physical device are live and stay
            // alive longer than the allocator (UnifiedMemory drops its backend
            // before its device).
            let allocator =
                unsafe { vk_mem::Allocator::new(info) }.map_err(|r| Error::Allocator {
                    bytes: 0,
                    source: Box::new(crate::error::VkError::from_result("vmaCreateAllocator", r)),
                })?;
            Ok(VmaBackend {
                allocator,
                memory_type,
            })
        }
    }

    impl Backend for VmaBackend {
        fn kind(&self) -> AllocatorBackend {
            AllocatorBackend::Vma
        }

        fn allocate(&self, req: vk::MemoryRequirements, _name: &str) -> Result<Block> {
            let info = vk_mem::AllocationCreateInfo {
                flags: vk_mem::AllocationCreateFlags::MAPPED
                    | vk_mem::AllocationCreateFlags::HOST_ACCESS_RANDOM,
                usage: vk_mem::MemoryUsage::Unknown,
                required_flags: vk::MemoryPropertyFlags::HOST_VISIBLE
                    | vk::MemoryPropertyFlags::HOST_COHERENT,
                memory_type_bits: req.memory_type_bits & (1 << self.memory_type),
                ..Default::default()
            };
            // SAFETY: the requirements come from vkGetBufferMemoryRequirements
            // on this device; the allocator is alive.
            let a = unsafe { self.allocator.allocate_memory(&req, &info) }.map_err(|r| {
                Error::Allocator {
                    bytes: req.size,
                    source: Box::new(crate::error::VkError::from_result("vmaAllocateMemory", r)),
                }
            })?;
            let ai = self.allocator.get_allocation_info(&a);
            let Some(ptr) = NonNull::new(ai.mapped_data as *mut u8) else {
                let mut a = a;
                // SAFETY: allocated just above and not bound to anything.
                unsafe { self.allocator.free_memory(&mut a) };
                return Err(Error::Allocation {
                    bytes: req.size,
                    message: "allocation is not host-mapped".into(),
                });
            };
            Ok(Block {
                memory: ai.device_memory,
                offset: ai.offset,
                ptr: Some(ptr),
                handle: Handle::Vma(a),
            })
        }

        fn allocate_device_local(
            &self,
            req: vk::MemoryRequirements,
            memory_type: u32,
            _name: &str,
        ) -> Result<Block> {
            let info = vk_mem::AllocationCreateInfo {
                usage: vk_mem::MemoryUsage::Unknown,
                required_flags: vk::MemoryPropertyFlags::DEVICE_LOCAL,
                memory_type_bits: req.memory_type_bits & (1 << memory_type),
                ..Default::default()
            };
            // SAFETY: as in `allocate`.
            let a = unsafe { self.allocator.allocate_memory(&req, &info) }.map_err(|r| {
                Error::Allocator {
                    bytes: req.size,
                    source: Box::new(crate::error::VkError::from_result("vmaAllocateMemory", r)),
                }
            })?;
            let ai = self.allocator.get_allocation_info(&a);
            Ok(Block {
                memory: ai.device_memory,
                offset: ai.offset,
                ptr: None,
                handle: Handle::Vma(a),
            })
        }

        fn free(&self, block: Block) {
            #[allow(irrefutable_let_patterns)]
            if let Handle::Vma(mut a) = block.handle {
                // SAFETY: the block came from this allocator and its buffer
                // was destroyed before it is freed.
                unsafe { self.allocator.free_memory(&mut a) };
            }
        }
    }
}
