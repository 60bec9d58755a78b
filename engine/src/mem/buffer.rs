//! Typed unified buffers.

use super::backend::Block;
use super::UnifiedMemory;
use crate::error::{Error, Result, VkResultExt};
use ash::vk;
use std::marker::PhantomData;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Identity of a buffer: the engine it belongs to and a process-unique number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct BufferId {
    /// The owning engine.
    pub engine: u64,
    /// Unique per buffer within the process.
    pub serial: u64,
}

static NEXT_SERIAL: AtomicU64 = AtomicU64::new(1);

/// The untyped part of a buffer: a `VkBuffer` bound to mapped memory.
pub(crate) struct RawBuffer {
    memory: Arc<UnifiedMemory>,
    buffer: vk::Buffer,
    block: Option<Block>,
    bytes: u64,
    id: BufferId,
}

impl RawBuffer {
    fn new(memory: Arc<UnifiedMemory>, bytes: u64) -> Result<Self> {
        let device = memory.device().clone();
        let info = vk::BufferCreateInfo::default()
            .size(bytes)
            .usage(vk::BufferUsageFlags::STORAGE_BUFFER)
            .sharing_mode(vk::SharingMode::EXCLUSIVE);
        // SAFETY: plain object creation on a live device; size > 0 (checked
        // by the caller).
        let buffer = unsafe { device.raw().create_buffer(&info, None) }.call("vkCreateBuffer")?;
        // SAFETY: `buffer` was just created on this device.
        let req = unsafe { device.raw().get_buffer_memory_requirements(buffer) };
        let id = BufferId {
            engine: memory.engine_id(),
            // Relaxed: only uniqueness matters, which fetch_add gives in any ordering.
            serial: NEXT_SERIAL.fetch_add(1, Ordering::Relaxed),
        };
        let mut raw = RawBuffer {
            memory,
            buffer,
            block: None,
            bytes,
            id,
        };
        if req.memory_type_bits & (1 << raw.memory.memory_type()) == 0 {
            return Err(Error::NoMemoryType {
                device: device.info().name.clone(),
            });
        }
        let block = raw.memory.backend.allocate(req, "coexec buffer")?;
        // SAFETY: the block is of a type the buffer accepts, large and aligned
        // enough per `req` (the allocator honours both), and not bound before.
        let r = unsafe {
            device
                .raw()
                .bind_buffer_memory(buffer, block.memory, block.offset)
        }
        .call("vkBindBufferMemory");
        raw.block = Some(block);
        r?;
        Ok(raw)
    }

    pub(crate) fn handle(&self) -> vk::Buffer {
        self.buffer
    }

    pub(crate) fn bytes(&self) -> u64 {
        self.bytes
    }

    pub(crate) fn ptr(&self) -> *mut u8 {
        self.block
            .as_ref()
            .map_or(std::ptr::null_mut(), |b| b.ptr.as_ptr())
    }

    pub(crate) fn id(&self) -> BufferId {
        self.id
    }
}

impl Drop for RawBuffer {
    fn drop(&mut self) {
        // SAFETY: runs that use a buffer borrow it and wait for their GPU work
        // before returning, so no pending command references it now.
        unsafe { self.memory.device().raw().destroy_buffer(self.buffer, None) };
        if let Some(block) = self.block.take() {
            self.memory.backend.free(block);
        }
    }
}

/// A buffer of `len` elements of `T` in unified memory.
///
/// It stays mapped for its whole life: [`Buffer::as_slice`] and
/// [`Buffer::as_mut_slice`] are the very bytes kernels read and write, with no
/// copy. The buffer keeps its device alive. A run borrows the buffers it uses
/// (shared for inputs, exclusive for outputs) for as long as it is in flight,
/// so the borrow checker forbids CPU access to a buffer a run is writing.
pub struct Buffer<T: bytemuck::Pod> {
    raw: RawBuffer,
    len: usize,
    _t: PhantomData<T>,
}

impl<T: bytemuck::Pod> std::fmt::Debug for Buffer<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Buffer")
            .field("len", &self.len)
            .field("elem", &std::any::type_name::<T>())
            .field("id", &self.raw.id)
            .finish()
    }
}

impl<T: bytemuck::Pod> Buffer<T> {
    pub(super) fn new(memory: Arc<UnifiedMemory>, len: usize) -> Result<Self> {
        if len == 0 {
            return Err(Error::EmptyBuffer);
        }
        if std::mem::size_of::<T>() == 0 {
            return Err(Error::SizeOverflow(
                "zero-sized element types cannot be stored".into(),
            ));
        }
        let bytes = len
            .checked_mul(std::mem::size_of::<T>())
            .and_then(|b| u64::try_from(b).ok())
            .ok_or_else(|| {
                Error::SizeOverflow(format!(
                    "{len} elements of {} bytes",
                    std::mem::size_of::<T>()
                ))
            })?;
        let raw = RawBuffer::new(memory, bytes)?;
        if raw.ptr() as usize % std::mem::align_of::<T>() != 0 {
            return Err(Error::Allocation {
                bytes,
                message: "mapped pointer is not aligned for the element type".into(),
            });
        }
        let mut b = Buffer {
            raw,
            len,
            _t: PhantomData,
        };
        // Fresh memory may hold stale bytes: start zeroed.
        b.as_mut_slice().fill(T::zeroed());
        Ok(b)
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Always `false`: buffers hold at least one element.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// Size in bytes.
    pub fn size_bytes(&self) -> u64 {
        self.raw.bytes()
    }

    /// The buffer's identity.
    pub fn id(&self) -> BufferId {
        self.raw.id()
    }

    /// The elements, read directly from unified memory.
    pub fn as_slice(&self) -> &[T] {
        // SAFETY: the mapping holds `len * size_of::<T>()` bytes, is aligned
        // for T (checked at creation), stays mapped while `self` lives, and
        // every bit pattern is a valid T (Pod). No GPU or CPU-kernel write can
        // happen meanwhile: runs need `&mut Buffer` to write it.
        unsafe { std::slice::from_raw_parts(self.raw.ptr() as *const T, self.len) }
    }

    /// The elements, writable in place.
    pub fn as_mut_slice(&mut self) -> &mut [T] {
        // SAFETY: as in `as_slice`, and `&mut self` makes this the only access.
        unsafe { std::slice::from_raw_parts_mut(self.raw.ptr() as *mut T, self.len) }
    }

    /// The raw `VkBuffer`, for code that records its own Vulkan commands.
    /// It stays valid while `self` lives.
    pub fn vk_handle(&self) -> vk::Buffer {
        self.raw.handle()
    }

    pub(crate) fn raw(&self) -> &RawBuffer {
        &self.raw
    }
}

impl<T: bytemuck::Pod> std::ops::Deref for Buffer<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        self.as_slice()
    }
}

impl<T: bytemuck::Pod> std::ops::DerefMut for Buffer<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        self.as_mut_slice()
    }
}
