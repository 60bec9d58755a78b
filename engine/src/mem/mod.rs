//! The memory layer: unified buffers in host-visible coherent memory, mapped
//! for their whole life, bound as storage buffers by kernels and read and
//! written as slices by CPU code, with no copies.
//!
//! Two allocator backends sit behind one internal trait: gpu-allocator (the
//! default) and Vulkan Memory Allocator through vk-mem (cargo feature `vma`).
//! Both are restricted to the one memory type chosen by
//! [`crate::vk::choose_memory_type`].

mod backend;
mod buffer;

pub use backend::AllocatorBackend;
pub(crate) use buffer::RawBuffer;
pub use buffer::{Buffer, BufferId};

use crate::error::{Error, Result};
use crate::vk::Device;
use backend::Backend;
use std::sync::Arc;

/// Allocates unified buffers on one device.
pub struct UnifiedMemory {
    // Field order: the backend (and its memory blocks) is dropped before the
    // device it allocates from.
    backend: Box<dyn Backend>,
    device: Arc<Device>,
    memory_type: u32,
    engine_id: u64,
}

impl std::fmt::Debug for UnifiedMemory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UnifiedMemory")
            .field("device", &self.device.info().name)
            .field("memory_type", &self.memory_type)
            .field("backend", &self.backend.kind())
            .finish()
    }
}

impl UnifiedMemory {
    /// Creates the allocator for `device` with the chosen backend. `engine_id`
    /// tags every buffer so that a buffer of another engine is recognised.
    pub fn new(
        device: Arc<Device>,
        backend: AllocatorBackend,
        engine_id: u64,
    ) -> Result<Arc<Self>> {
        let info = device.info();
        let memory_type = info
            .unified_memory_type()
            .ok_or_else(|| Error::NoMemoryType {
                device: info.name.clone(),
            })?;
        let backend = backend::create(&device, backend, memory_type)?;
        Ok(Arc::new(UnifiedMemory {
            backend,
            device,
            memory_type,
            engine_id,
        }))
    }

    /// The device.
    pub fn device(&self) -> &Arc<Device> {
        &self.device
    }

    /// Index of the memory type every buffer uses.
    pub fn memory_type(&self) -> u32 {
        self.memory_type
    }

    /// Which backend allocates.
    pub fn backend(&self) -> AllocatorBackend {
        self.backend.kind()
    }

    /// The engine this allocator belongs to.
    pub fn engine_id(&self) -> u64 {
        self.engine_id
    }

    /// A zero-filled buffer of `len` elements of `T`.
    pub fn buffer<T: bytemuck::Pod>(self: &Arc<Self>, len: usize) -> Result<Buffer<T>> {
        Buffer::new(self.clone(), len)
    }

    /// A buffer holding a copy of `data`.
    pub fn buffer_from_slice<T: bytemuck::Pod>(self: &Arc<Self>, data: &[T]) -> Result<Buffer<T>> {
        let mut b = Buffer::new(self.clone(), data.len())?;
        b.as_mut_slice().copy_from_slice(data);
        Ok(b)
    }
}
