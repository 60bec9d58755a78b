//! Buffers of engines over several Vulkan devices.
//!
//! Design: a buffer's bytes live once, in host memory, and every device
//! binds those same bytes zero-copy. On a multi-device engine a buffer's
//! host bytes are an aligned host allocation of the engine's own
//! ([`HostBlock`], aligned and sized to the largest
//! `minImportedHostPointerAlignment` of the devices), imported with
//! `VK_EXT_external_memory_host` into the first device (the buffer itself)
//! and into each other device (a [`PeerView`]: a `VkBuffer` of that device
//! bound to the imported pages). A buffer the caller imports
//! ([`crate::Engine::import_host`]) is imported into every device the same
//! way. So CPU code, and the kernels of every device, read and write the
//! very same bytes; no device has a copy to keep in step.
//!
//! On a staged engine each device also keeps device-local mirrors of the
//! buffers its runs bind (see [`super::mirror`]): the views then carry
//! transfer usage, since they are the source and destination of that
//! device's uploads and downloads. Every device of a
//! multi-device engine must offer `VK_EXT_external_memory_host` (Mesa
//! lavapipe, NVIDIA, AMD and Intel drivers do); the engine leaves out a GPU
//! that does not.

use super::buffer::RawBuffer;
use crate::error::{Error, Result, VkResultExt};
use crate::vk::Device;
use ash::vk;
use std::alloc::Layout;
use std::ptr::NonNull;
use std::sync::Arc;

/// Host memory the engine allocated for a buffer of a multi-device engine,
/// freed with the buffer (after every device's import of it).
pub(crate) struct HostBlock {
    ptr: NonNull<u8>,
    layout: Layout,
}

// SAFETY: the block is plain heap memory owned by this value; the pointer
// has no thread affinity, and access to the bytes goes through the
// buffer's borrow rules.
unsafe impl Send for HostBlock {}
// SAFETY: shared references only read the pointer and layout.
unsafe impl Sync for HostBlock {}

impl HostBlock {
    /// `bytes` (> 0) zeroed bytes aligned to `align` (a power of two).
    pub(crate) fn new(bytes: u64, align: u64) -> Result<HostBlock> {
        let failed = |message: String| Error::Allocation { bytes, message };
        let size = usize::try_from(bytes).map_err(|_| failed("too large for this host".into()))?;
        let align = usize::try_from(align).map_err(|_| failed("alignment too large".into()))?;
        let layout = Layout::from_size_align(size, align)
            .map_err(|e| failed(format!("host layout: {e}")))?;
        // SAFETY: the layout has a non-zero size (buffers hold at least one
        // byte; callers pass `bytes` > 0).
        let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
        let ptr = NonNull::new(ptr).ok_or_else(|| failed("the host allocation failed".into()))?;
        Ok(HostBlock { ptr, layout })
    }

    /// The first byte.
    pub(crate) fn ptr(&self) -> NonNull<u8> {
        self.ptr
    }
}

impl Drop for HostBlock {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with this layout, freed once; the
        // buffer that owns this block frees every device's import of it
        // before its fields drop.
        unsafe { std::alloc::dealloc(self.ptr.as_ptr(), self.layout) }
    }
}

/// A buffer's view on another device of its engine: a `VkBuffer` of that
/// device bound to the buffer's host bytes, imported.
pub(crate) struct PeerView {
    device: Arc<Device>,
    buffer: vk::Buffer,
    memory: vk::DeviceMemory,
}

impl PeerView {
    /// Imports `alloc_bytes` bytes at `ptr` into `device` and binds a
    /// buffer of `bytes` bytes and `usage` (storage, and transfers on a
    /// staged engine) to them.
    ///
    /// # Safety
    /// `ptr .. ptr + alloc_bytes` is host memory that stays allocated until
    /// the view is dropped; `ptr` and `alloc_bytes` are multiples of the
    /// device's `minImportedHostPointerAlignment`.
    pub(crate) unsafe fn import(
        device: &Arc<Device>,
        ptr: NonNull<u8>,
        bytes: u64,
        alloc_bytes: u64,
        usage: vk::BufferUsageFlags,
    ) -> Result<PeerView> {
        let mut external = vk::ExternalMemoryBufferCreateInfo::default()
            .handle_types(vk::ExternalMemoryHandleTypeFlags::HOST_ALLOCATION_EXT);
        let mut info = vk::BufferCreateInfo::default()
            .size(bytes)
            .usage(usage)
            .sharing_mode(vk::SharingMode::EXCLUSIVE)
            .push_next(&mut external);
        // Shared with the peer's separate transfer queue's family (see
        // `vk::queues`): no ownership transfers.
        let families = device.concurrent_families();
        if let Some(f) = &families {
            info = info
                .sharing_mode(vk::SharingMode::CONCURRENT)
                .queue_family_indices(f);
        }
        // SAFETY: plain object creation on a live device; size > 0; the
        // external-memory chain is core (Vulkan 1.1).
        let buffer = unsafe { device.raw().create_buffer(&info, None) }.call("vkCreateBuffer")?;
        // SAFETY: forwarded from this function's contract; `buffer` is of
        // `device` and unbound.
        match unsafe { import_memory(device, buffer, ptr, alloc_bytes, None) } {
            Ok(memory) => Ok(PeerView {
                device: device.clone(),
                buffer,
                memory,
            }),
            Err(e) => {
                // SAFETY: created above, never used.
                unsafe { device.raw().destroy_buffer(buffer, None) };
                Err(e)
            }
        }
    }

    /// The device of the view.
    pub(crate) fn device(&self) -> &Arc<Device> {
        &self.device
    }

    /// The view's `VkBuffer`.
    pub(crate) fn handle(&self) -> vk::Buffer {
        self.buffer
    }
}

impl Drop for PeerView {
    fn drop(&mut self) {
        // SAFETY: runs that bind a view wait for their GPU work before
        // returning, and views are dropped with their buffer only, so
        // nothing pending uses them; the memory object belongs to this view.
        unsafe {
            self.device.raw().destroy_buffer(self.buffer, None);
            self.device.raw().free_memory(self.memory, None);
        }
    }
}

/// Imports `alloc_bytes` bytes of host memory at `ptr` into `device` with
/// `VK_EXT_external_memory_host` and binds `buffer` to them at offset 0; a
/// host-coherent memory type that both accept (`preferred` first).
///
/// # Safety
/// `buffer` is an unbound buffer of `device` created with the host
/// allocation handle type; `ptr .. ptr + alloc_bytes` stays allocated
/// until the returned memory is freed, and both are multiples of the
/// device's `minImportedHostPointerAlignment`.
pub(crate) unsafe fn import_memory(
    device: &Device,
    buffer: vk::Buffer,
    ptr: NonNull<u8>,
    alloc_bytes: u64,
    preferred: Option<u32>,
) -> Result<vk::DeviceMemory> {
    let info = device.info();
    let unsupported = |reason: String| Error::HostImportUnsupported {
        device: info.name.clone(),
        reason,
    };
    let Some(ext) = device.memory_host() else {
        return Err(unsupported(
            "the device does not support VK_EXT_external_memory_host".into(),
        ));
    };
    let handle_type = vk::ExternalMemoryHandleTypeFlags::HOST_ALLOCATION_EXT;
    let mut host = vk::MemoryHostPointerPropertiesEXT::default();
    // SAFETY: the extension is enabled on this device; the pointer is
    // aligned and live (function contract); the function pointer was loaded
    // when the extension was enabled.
    unsafe {
        (ext.fp().get_memory_host_pointer_properties_ext)(
            ext.device(),
            handle_type,
            ptr.as_ptr().cast::<std::ffi::c_void>(),
            &mut host,
        )
    }
    .result()
    .map_err(|r| unsupported(format!("vkGetMemoryHostPointerPropertiesEXT: {r}")))?;
    // SAFETY: `buffer` is a live buffer of this device (function contract).
    let req = unsafe { device.raw().get_buffer_memory_requirements(buffer) };
    if req.size > alloc_bytes {
        return Err(unsupported(format!(
            "the buffer needs {} bytes aligned to {}",
            req.size, req.alignment
        )));
    }
    let allowed = req.memory_type_bits & host.memory_type_bits;
    let coherent = vk::MemoryPropertyFlags::HOST_VISIBLE | vk::MemoryPropertyFlags::HOST_COHERENT;
    let memory_type = preferred
        .into_iter()
        .chain(0..info.memory_types.len() as u32)
        .find(|&t| {
            allowed & (1 << t) != 0
                && info
                    .memory_types
                    .get(t as usize)
                    .is_some_and(|m| m.flags.contains(coherent))
        })
        .ok_or_else(|| unsupported("no host-coherent memory type accepts this pointer".into()))?;
    let mut import = vk::ImportMemoryHostPointerInfoEXT::default()
        .handle_type(handle_type)
        .host_pointer(ptr.as_ptr().cast::<std::ffi::c_void>());
    let alloc = vk::MemoryAllocateInfo::default()
        .allocation_size(alloc_bytes)
        .memory_type_index(memory_type)
        .push_next(&mut import);
    // SAFETY: the import names live host memory aligned and sized as the
    // device requires (function contract); the type accepts the pointer.
    let mem = unsafe { device.raw().allocate_memory(&alloc, None) }.call("vkAllocateMemory")?;
    // SAFETY: the memory was just allocated, large enough for `req`, of a
    // type the buffer accepts; the buffer is unbound (function contract).
    if let Err(e) = unsafe { device.raw().bind_buffer_memory(buffer, mem, 0) }
        .call("vkBindBufferMemory")
    {
        // SAFETY: allocated above, bound to nothing.
        unsafe { device.raw().free_memory(mem, None) };
        return Err(e.into());
    }
    Ok(mem)
}

/// `bytes` rounded up to a multiple of `align` (a power of two), or an
/// error on overflow.
pub(crate) fn round_up(bytes: u64, align: u64) -> Result<u64> {
    bytes
        .checked_next_multiple_of(align.max(1))
        .ok_or_else(|| Error::SizeOverflow(format!("{bytes} bytes aligned to {align}")))
}

impl RawBuffer {
    /// A buffer of a multi-device engine: `bytes` zeroed bytes of host
    /// memory of its own, imported into every device of the engine.
    pub(super) fn new_shared(
        memory: Arc<super::UnifiedMemory>,
        bytes: u64,
    ) -> Result<RawBuffer> {
        let align = memory.host_import_alignment().unwrap_or(4096).max(1);
        let alloc_bytes = round_up(bytes, align)?;
        let host = HostBlock::new(alloc_bytes, align)?;
        // SAFETY: the block is aligned and sized to every device's
        // alignment, and `attach_host` makes the buffer own it, so it
        // outlives every import.
        let mut raw = unsafe { RawBuffer::import_shared(memory, host.ptr(), bytes, alloc_bytes) }?;
        raw.attach_host(host);
        Ok(raw)
    }

    /// Imports the other devices' views of this buffer's host bytes
    /// (`alloc_bytes` of them): nothing on a single-device engine.
    ///
    /// # Safety
    /// The buffer's host bytes are `alloc_bytes` long, aligned for every
    /// device, and stay allocated while the buffer lives.
    pub(super) unsafe fn import_peers(&mut self, alloc_bytes: u64) -> Result<()> {
        let Some(ptr) = NonNull::new(self.ptr()) else {
            return Ok(());
        };
        let peers = self.memory().peers().to_vec();
        let usage = match self.memory().placement() {
            super::MemoryPlacement::Staged => super::mirror::STAGED_USAGE,
            _ => vk::BufferUsageFlags::STORAGE_BUFFER,
        };
        for device in &peers {
            // SAFETY: forwarded from this function's contract.
            let view = unsafe { PeerView::import(device, ptr, self.bytes(), alloc_bytes, usage) }?;
            self.push_peer(view);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_blocks_are_aligned_and_zeroed() {
        let b = HostBlock::new(8192, 4096).unwrap();
        assert_eq!(b.ptr().as_ptr() as usize % 4096, 0);
        // SAFETY: 8192 bytes were allocated and zeroed.
        let s = unsafe { std::slice::from_raw_parts(b.ptr().as_ptr(), 8192) };
        assert!(s.iter().all(|&x| x == 0));
        assert!(HostBlock::new(10, 3).is_err(), "not a power of two");
    }

    #[test]
    fn sizes_round_up_to_the_alignment() {
        assert_eq!(round_up(1, 4096).unwrap(), 4096);
        assert_eq!(round_up(4096, 4096).unwrap(), 4096);
        assert_eq!(round_up(4097, 4096).unwrap(), 8192);
        assert_eq!(round_up(5, 0).unwrap(), 5);
        assert!(round_up(u64::MAX, 4096).is_err());
    }
}
