//! Typed unified buffers.

use super::backend::Block;
use super::mirror::{Mirrors, STAGED_USAGE};
use super::peers::{HostBlock, PeerView};
use super::{MemoryPlacement, UnifiedMemory};
use crate::error::{Error, Result, VkResultExt};
use ash::vk;
use std::marker::PhantomData;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

/// Identity of a buffer: the engine it belongs to and a process-unique number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct BufferId {
    /// The owning engine.
    pub engine: u64,
    /// Unique per buffer within the process.
    pub serial: u64,
}

static NEXT_SERIAL: AtomicU64 = AtomicU64::new(1);

/// Host memory imported through `VK_EXT_external_memory_host`: the buffer owns
/// the `VkDeviceMemory` object, the caller owns the pages.
struct Imported {
    memory: vk::DeviceMemory,
    ptr: NonNull<u8>,
}

// SAFETY: the pointer refers to host memory that the importer guarantees stays
// allocated while the buffer lives (see `UnifiedMemory::import_host`); the
// memory handle is a plain Vulkan handle with no thread affinity.
unsafe impl Send for Imported {}
// SAFETY: shared references only read the plain fields.
unsafe impl Sync for Imported {}

/// The untyped part of a buffer: a `VkBuffer` bound to mapped memory, either
/// allocated by the backend (`block`) or imported host memory (`imported`).
pub(crate) struct RawBuffer {
    memory: Arc<UnifiedMemory>,
    buffer: vk::Buffer,
    block: Option<Block>,
    imported: Option<Imported>,
    bytes: u64,
    id: BufferId,
    /// Host-write generation: bumped by every `&mut` host access through
    /// the API (changed only through `&mut self`, so plain loads suffice).
    host_gen: AtomicU64,
    /// The host memory is written behind the API's back (imported memory,
    /// C host pointers): staged runs upload it every time they read it.
    untracked: bool,
    /// The device-local mirrors of staged runs, one per engine GPU.
    mirrors: Mutex<Mirrors>,
    /// Multi-device engines: the views of the other devices (engine GPUs
    /// 1..), dropped after the first device's import (see `super::peers`).
    peers: Vec<PeerView>,
    /// Multi-device engines: the host bytes the engine allocated, freed
    /// after every device's import of them.
    host: Option<HostBlock>,
}

impl RawBuffer {
    /// Creates the `VkBuffer` (storage usage, `bytes` > 0; with `external`
    /// chained for imported memory) and its identity, with no memory bound
    /// yet, and returns it with its memory requirements.
    fn create(
        memory: Arc<UnifiedMemory>,
        bytes: u64,
        external: Option<&mut vk::ExternalMemoryBufferCreateInfo<'_>>,
    ) -> Result<(Self, vk::MemoryRequirements)> {
        let device = memory.device().clone();
        let untracked = external.is_some();
        let usage = match memory.placement() {
            MemoryPlacement::Staged => STAGED_USAGE,
            _ => vk::BufferUsageFlags::STORAGE_BUFFER,
        };
        let mut info = vk::BufferCreateInfo::default()
            .size(bytes)
            .usage(usage)
            .sharing_mode(vk::SharingMode::EXCLUSIVE);
        // Shared with a separate transfer queue's family (see
        // `vk::queues`): no ownership transfers.
        let families = device.concurrent_families();
        if let Some(f) = &families {
            info = info
                .sharing_mode(vk::SharingMode::CONCURRENT)
                .queue_family_indices(f);
        }
        if let Some(ext) = external {
            info = info.push_next(ext);
        }
        // SAFETY: plain object creation on a live device; size > 0 (checked
        // by the callers); an external-memory chain only when the extension
        // is enabled (checked by the import path).
        let buffer = unsafe { device.raw().create_buffer(&info, None) }.call("vkCreateBuffer")?;
        // SAFETY: `buffer` was just created on this device.
        let req = unsafe { device.raw().get_buffer_memory_requirements(buffer) };
        let id = BufferId {
            engine: memory.engine_id(),
            // Relaxed: only uniqueness matters, which fetch_add gives in any ordering.
            serial: NEXT_SERIAL.fetch_add(1, Ordering::Relaxed),
        };
        // From here on, Drop destroys the buffer on every error path.
        let raw = RawBuffer {
            memory,
            buffer,
            block: None,
            imported: None,
            bytes,
            id,
            host_gen: AtomicU64::new(0),
            untracked,
            mirrors: Mutex::new(Mirrors::default()),
            peers: Vec::new(),
            host: None,
        };
        Ok((raw, req))
    }

    fn new(memory: Arc<UnifiedMemory>, bytes: u64) -> Result<Self> {
        if !memory.peers().is_empty() {
            return RawBuffer::new_shared(memory, bytes);
        }
        let device = memory.device().clone();
        let (mut raw, req) = RawBuffer::create(memory, bytes, None)?;
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
                .bind_buffer_memory(raw.buffer, block.memory, block.offset)
        }
        .call("vkBindBufferMemory");
        raw.block = Some(block);
        r?;
        Ok(raw)
    }

    /// A buffer bound to `bytes` bytes of host memory at `ptr`, imported with
    /// `VK_EXT_external_memory_host` (no copy, no zeroing).
    ///
    /// # Safety
    /// `ptr .. ptr + bytes` is readable and writable host memory that stays
    /// allocated until the returned buffer is dropped.
    unsafe fn import(memory: Arc<UnifiedMemory>, ptr: NonNull<u8>, bytes: u64) -> Result<Self> {
        let device = memory.device().clone();
        let info = device.info();
        let unsupported = |reason: String| Error::HostImportUnsupported {
            device: info.name.clone(),
            reason,
        };
        let (Some(ext), Some(alignment)) = (device.memory_host(), memory.host_import_alignment())
        else {
            return Err(unsupported(
                "the device does not support VK_EXT_external_memory_host".into(),
            ));
        };
        let alignment = alignment.max(1);
        let address = ptr.as_ptr() as usize as u64;
        if address % alignment != 0 {
            return Err(Error::HostImportMisaligned {
                what: "pointer",
                value: address,
                alignment,
            });
        }
        if bytes % alignment != 0 {
            return Err(Error::HostImportMisaligned {
                what: "size",
                value: bytes,
                alignment,
            });
        }
        let max = u64::from(info.max_storage_buffer_range);
        if bytes > max {
            return Err(Error::Allocation {
                bytes,
                message: format!("exceeds the device's maxStorageBufferRange of {max} bytes"),
            });
        }
        let handle_type = vk::ExternalMemoryHandleTypeFlags::HOST_ALLOCATION_EXT;
        let mut host = vk::MemoryHostPointerPropertiesEXT::default();
        // SAFETY: the extension is enabled on this device (`memory_host` is
        // `Some`); the pointer is aligned as the extension requires (checked
        // above) and, per this function's contract, points to live host memory.
        // The function pointer was loaded when the extension was enabled.
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
        let mut external = vk::ExternalMemoryBufferCreateInfo::default().handle_types(handle_type);
        let (mut raw, req) = RawBuffer::create(memory, bytes, Some(&mut external))?;
        // Bound at offset 0, so only the size can fall short.
        if req.size > bytes {
            return Err(unsupported(format!(
                "the buffer needs {} bytes aligned to {}",
                req.size, req.alignment
            )));
        }
        // A coherent type both the buffer and the pointer accept; the engine's
        // unified type first.
        let allowed = req.memory_type_bits & host.memory_type_bits;
        let coherent =
            vk::MemoryPropertyFlags::HOST_VISIBLE | vk::MemoryPropertyFlags::HOST_COHERENT;
        let preferred = raw.memory.memory_type();
        let memory_type = std::iter::once(preferred)
            .chain(0..info.memory_types.len() as u32)
            .find(|&t| {
                allowed & (1 << t) != 0 && info.memory_types[t as usize].flags.contains(coherent)
            })
            .ok_or_else(|| {
                unsupported("no host-coherent memory type accepts this pointer".into())
            })?;
        let mut import = vk::ImportMemoryHostPointerInfoEXT::default()
            .handle_type(handle_type)
            .host_pointer(ptr.as_ptr().cast::<std::ffi::c_void>());
        let alloc = vk::MemoryAllocateInfo::default()
            .allocation_size(bytes)
            .memory_type_index(memory_type)
            .push_next(&mut import);
        // SAFETY: the import info names host memory that is aligned and sized
        // as the device requires (checked above) and stays allocated while the
        // buffer lives (this function's contract); the memory type accepts the
        // pointer (vkGetMemoryHostPointerPropertiesEXT).
        let mem = unsafe { device.raw().allocate_memory(&alloc, None) }.call("vkAllocateMemory")?;
        raw.imported = Some(Imported { memory: mem, ptr });
        // SAFETY: the memory was just allocated, is large enough for `req` and
        // of a type the buffer accepts; the buffer was not bound before.
        unsafe { device.raw().bind_buffer_memory(raw.buffer, mem, 0) }
            .call("vkBindBufferMemory")?;
        Ok(raw)
    }

    /// A buffer of `bytes` bytes over the `alloc_bytes` bytes of host
    /// memory at `ptr`, imported into the engine's first device and then
    /// into the others (see [`super::peers`]). Host writes are tracked:
    /// the pages belong to the engine.
    ///
    /// # Safety
    /// `ptr .. ptr + alloc_bytes` stays allocated while the buffer lives;
    /// `ptr` and `alloc_bytes` are multiples of every device's
    /// `minImportedHostPointerAlignment`.
    pub(super) unsafe fn import_shared(
        memory: Arc<UnifiedMemory>,
        ptr: NonNull<u8>,
        bytes: u64,
        alloc_bytes: u64,
    ) -> Result<Self> {
        let device = memory.device().clone();
        let mut external = vk::ExternalMemoryBufferCreateInfo::default()
            .handle_types(vk::ExternalMemoryHandleTypeFlags::HOST_ALLOCATION_EXT);
        let (mut raw, _) = RawBuffer::create(memory, bytes, Some(&mut external))?;
        raw.untracked = false;
        let preferred = Some(raw.memory.memory_type());
        // SAFETY: `raw.buffer` is an unbound buffer of `device` created for
        // host allocations; the rest is this function's contract.
        let mem = unsafe {
            super::peers::import_memory(&device, raw.buffer, ptr, alloc_bytes, preferred)
        }?;
        raw.imported = Some(Imported { memory: mem, ptr });
        // SAFETY: forwarded from this function's contract.
        unsafe { raw.import_peers(alloc_bytes) }?;
        Ok(raw)
    }

    /// Makes the buffer own the host bytes it was imported from.
    pub(super) fn attach_host(&mut self, host: HostBlock) {
        self.host = Some(host);
    }

    /// Adds the view of another device.
    pub(super) fn push_peer(&mut self, view: PeerView) {
        self.peers.push(view);
    }

    /// The `VkBuffer` engine GPU `gpu` binds, and its device (`None` past
    /// the engine's devices).
    pub(crate) fn view_on(&self, gpu: usize) -> Option<(vk::Buffer, &Arc<crate::vk::Device>)> {
        match gpu {
            0 => Some((self.buffer, self.memory.device())),
            k => self.peers.get(k - 1).map(|p| (p.handle(), p.device())),
        }
    }

    pub(crate) fn handle(&self) -> vk::Buffer {
        self.buffer
    }

    pub(crate) fn bytes(&self) -> u64 {
        self.bytes
    }

    pub(crate) fn ptr(&self) -> *mut u8 {
        match (&self.block, &self.imported) {
            (Some(b), _) => b.ptr.map_or(std::ptr::null_mut(), NonNull::as_ptr),
            (None, Some(i)) => i.ptr.as_ptr(),
            (None, None) => std::ptr::null_mut(),
        }
    }

    pub(crate) fn id(&self) -> BufferId {
        self.id
    }

    /// The `index`-th 4-byte word of the host copy as it is (`None` past
    /// its end or where it has no mapping): what a
    /// [`Footprint::Offsets`](crate::Footprint::Offsets) reads.
    pub(crate) fn host_u32(&self, index: u64) -> Option<u32> {
        let ptr = self.ptr();
        let end = index.checked_add(1)?.checked_mul(4)?;
        if ptr.is_null() || end > self.bytes {
            return None;
        }
        // SAFETY: the mapping holds `self.bytes` bytes and stays mapped
        // while `self` lives; the word lies inside it (checked above). It
        // is read unaligned, and every bit pattern is a valid u32. Callers
        // read inputs of a run, which nothing writes while it runs.
        Some(unsafe { ptr.add((index * 4) as usize).cast::<u32>().read_unaligned() })
    }

    /// The device the buffer lives on.
    pub(crate) fn device(&self) -> &Arc<crate::vk::Device> {
        self.memory.device()
    }

    /// The allocator the buffer comes from.
    pub(crate) fn memory(&self) -> &Arc<UnifiedMemory> {
        &self.memory
    }

    /// The host-write generation (see [`super::mirror`]).
    pub(crate) fn host_generation(&self) -> u64 {
        // Relaxed: the value changes only through `&mut self`, so no other
        // thread can write it while this shared borrow lives.
        self.host_gen.load(Ordering::Relaxed)
    }

    /// Whether host writes escape the generation count.
    pub(crate) fn untracked(&self) -> bool {
        self.untracked
    }

    /// The mirror slots, locked.
    pub(crate) fn mirrors(&self) -> MutexGuard<'_, Mirrors> {
        self.mirrors.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// A buffer of any element type, as a compute pipeline binds it (see
/// [`ComputePipeline::bind`](crate::vk::ComputePipeline::bind)): its handle
/// and size are those of a live buffer of a known device.
#[derive(Clone, Copy)]
pub struct BufferBinding<'a> {
    raw: &'a RawBuffer,
    /// What is bound: the buffer itself, its device-local mirror, or its
    /// view on another device of the engine.
    handle: vk::Buffer,
    /// The device of `handle`.
    device: &'a Arc<crate::vk::Device>,
}

impl<'a> BufferBinding<'a> {
    /// The binding of `raw`.
    pub(crate) fn of(raw: &'a RawBuffer) -> Self {
        BufferBinding {
            raw,
            handle: raw.handle(),
            device: raw.device(),
        }
    }

    /// The binding of `raw` on engine GPU `gpu` (0: the buffer itself; `None`
    /// where the buffer has no view on that device).
    pub(crate) fn on(raw: &'a RawBuffer, gpu: usize) -> Option<Self> {
        raw.view_on(gpu).map(|(handle, device)| BufferBinding {
            raw,
            handle,
            device,
        })
    }

    /// The binding of `raw`'s device-local mirror `mirror` on engine GPU
    /// `gpu` (of the same size, kept alive with `raw`); `None` past the
    /// engine's devices.
    pub(crate) fn mirrored(raw: &'a RawBuffer, mirror: vk::Buffer, gpu: usize) -> Option<Self> {
        raw.view_on(gpu).map(|(_, device)| BufferBinding {
            raw,
            handle: mirror,
            device,
        })
    }

    /// The buffer.
    pub(crate) fn raw(self) -> &'a RawBuffer {
        self.raw
    }

    /// The `VkBuffer` bound.
    pub(crate) fn handle(self) -> vk::Buffer {
        self.handle
    }

    /// The device of the `VkBuffer` bound.
    pub(crate) fn device(self) -> &'a Arc<crate::vk::Device> {
        self.device
    }
}

impl std::fmt::Debug for BufferBinding<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BufferBinding")
            .field("id", &self.raw.id())
            .field("bytes", &self.raw.bytes())
            .finish()
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
        let mirrors = self.mirrors.get_mut().unwrap_or_else(|p| p.into_inner());
        mirrors.free_all(&self.memory);
        if let Some(imported) = self.imported.take() {
            // SAFETY: the buffer bound to it was destroyed above; the memory
            // object belongs to this buffer alone. The host pages stay the
            // importer's.
            unsafe {
                self.memory
                    .device()
                    .raw()
                    .free_memory(imported.memory, None)
            };
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
///
/// On a staged engine with lazy host coherence
/// ([`HostCoherence::Lazy`](super::HostCoherence::Lazy)) what the GPU wrote
/// may still be in the device-local mirror only: every host access through
/// the API downloads it first ([`Buffer::sync`] does so explicitly).
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
    /// Bytes of `len` elements: at least one element, of non-zero size,
    /// without overflow.
    fn byte_size(len: usize) -> Result<u64> {
        if len == 0 {
            return Err(Error::EmptyBuffer);
        }
        if std::mem::size_of::<T>() == 0 {
            return Err(Error::SizeOverflow(
                "zero-sized element types cannot be stored".into(),
            ));
        }
        len.checked_mul(std::mem::size_of::<T>())
            .and_then(|b| u64::try_from(b).ok())
            .ok_or_else(|| {
                Error::SizeOverflow(format!(
                    "{len} elements of {} bytes",
                    std::mem::size_of::<T>()
                ))
            })
    }

    pub(super) fn new(memory: Arc<UnifiedMemory>, len: usize) -> Result<Self> {
        let bytes = Self::byte_size(len)?;
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

    /// A buffer over `len` elements of caller-owned host memory at `ptr`; see
    /// [`UnifiedMemory::import_host`].
    ///
    /// # Safety
    /// As for [`UnifiedMemory::import_host`].
    pub(super) unsafe fn import(
        memory: Arc<UnifiedMemory>,
        ptr: *mut T,
        len: usize,
    ) -> Result<Self> {
        let bytes = Self::byte_size(len)?;
        let Some(ptr) = NonNull::new(ptr.cast::<u8>()) else {
            return Err(Error::HostImportUnsupported {
                device: memory.device().info().name.clone(),
                reason: "the pointer is null".into(),
            });
        };
        if ptr.as_ptr() as usize % std::mem::align_of::<T>() != 0 {
            return Err(Error::HostImportMisaligned {
                what: "pointer",
                value: ptr.as_ptr() as usize as u64,
                alignment: std::mem::align_of::<T>() as u64,
            });
        }
        // SAFETY: forwarded from this function's contract.
        let mut raw = unsafe { RawBuffer::import(memory, ptr, bytes) }?;
        // SAFETY: the caller's pages stay allocated while the buffer lives
        // (this function's contract); `RawBuffer::import` checked `ptr` and
        // `bytes` against the engine's import alignment, the largest of its
        // devices'.
        unsafe { raw.import_peers(bytes) }?;
        Ok(Buffer {
            raw,
            len,
            _t: PhantomData,
        })
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

    /// The elements, read directly from unified memory. On a lazy staged
    /// engine ([`HostCoherence::Lazy`](super::HostCoherence::Lazy)), first
    /// downloads what the GPU wrote and the host copy lacks.
    ///
    /// # Panics
    /// When that download fails (the device was lost with the only copy of
    /// those bytes); [`try_as_slice`](Self::try_as_slice) returns the error.
    pub fn as_slice(&self) -> &[T] {
        self.raw.sync_or_panic();
        self.host_slice()
    }

    /// [`as_slice`](Self::as_slice), with a failed download as an error.
    pub fn try_as_slice(&self) -> Result<&[T]> {
        self.raw.sync()?;
        Ok(self.host_slice())
    }

    /// Makes the host copy current (lazy staged engines: downloads what
    /// the GPU wrote and the host copy lacks; nothing to do elsewhere), for
    /// code that reads the buffer through a pointer taken earlier; the
    /// bytes downloaded.
    pub fn sync(&self) -> Result<u64> {
        self.raw.sync()
    }

    /// The host copy's elements as they are.
    fn host_slice(&self) -> &[T] {
        // SAFETY: the mapping holds `len * size_of::<T>()` bytes, is aligned
        // for T (checked at creation), stays mapped while `self` lives, and
        // every bit pattern is a valid T (Pod). No GPU or CPU-kernel write can
        // happen meanwhile: runs need `&mut Buffer` to write it.
        unsafe { std::slice::from_raw_parts(self.raw.ptr() as *const T, self.len) }
    }

    /// The elements, writable in place. Counts as a host write: a staged
    /// run uploads the buffer again before the GPU reads it.
    ///
    /// # Panics
    /// As [`as_slice`](Self::as_slice) (call [`sync`](Self::sync) first to
    /// get the error instead).
    pub fn as_mut_slice(&mut self) -> &mut [T] {
        self.raw.sync_or_panic();
        let gen = self.raw.host_gen.get_mut();
        *gen = gen.wrapping_add(1);
        // SAFETY: as in `as_slice`, and `&mut self` makes this the only access.
        unsafe { std::slice::from_raw_parts_mut(self.raw.ptr() as *mut T, self.len) }
    }

    /// Declares that the host wrote the buffer (bumps its host-write
    /// generation, as [`as_mut_slice`](Self::as_mut_slice) does): for code
    /// that wrote it through a pointer taken earlier. The host copy is
    /// then current everywhere: on a lazy staged engine, GPU results it
    /// lacked are dropped (call [`sync`](Self::sync) before writing through
    /// such a pointer after a run).
    pub fn host_written(&mut self) {
        self.raw.mirrors().clear_stale();
        let gen = self.raw.host_gen.get_mut();
        *gen = gen.wrapping_add(1);
    }

    /// Declares that the host may write the buffer at any time through a
    /// pointer the engine cannot see (as C code does with the host
    /// pointer): every staged run that reads it uploads it again.
    ///
    /// # Panics
    /// As [`as_slice`](Self::as_slice): it first makes the host copy
    /// current, since untracked buffers stay eager.
    pub fn untrack_host_writes(&mut self) {
        self.raw.sync_or_panic();
        self.raw.untracked = true;
    }

    /// The raw `VkBuffer`, for code that records its own Vulkan commands.
    /// It stays valid while `self` lives (unstable: feature `internals`).
    #[cfg(feature = "internals")]
    pub fn vk_handle(&self) -> vk::Buffer {
        self.raw.handle()
    }

    /// The buffer as a compute pipeline binds it (unstable: feature
    /// `internals`).
    #[cfg(feature = "internals")]
    pub fn binding(&self) -> BufferBinding<'_> {
        BufferBinding::of(&self.raw)
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
