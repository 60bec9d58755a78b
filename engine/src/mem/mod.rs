//! The memory layer: unified buffers in host-visible coherent memory, mapped
//! for their whole life, bound as storage buffers by kernels and read and
//! written as slices by CPU code, with no copies.
//!
//! Staged engines ([`MemoryPlacement::Staged`]) also give each buffer a GPU
//! run binds a device-local mirror on that GPU (module `mirror`; every
//! discrete GPU of the engine keeps its own), which the run keeps in step
//! with the host copy.
//!
//! Two allocator backends sit behind one internal trait: gpu-allocator (the
//! default) and Vulkan Memory Allocator through vk-mem (cargo feature `vma`).
//! Both are restricted to the one memory type chosen by
//! [`crate::vk::choose_memory_type`].

mod backend;
mod buffer;
pub(crate) mod coherence;
pub(crate) mod mirror;
mod peers;
pub(crate) mod placement;
pub(crate) mod ranges;

pub use backend::AllocatorBackend;
pub use coherence::HostCoherence;
pub(crate) use buffer::RawBuffer;
pub use buffer::{Buffer, BufferBinding, BufferId};
pub use placement::{is_unified_memory, MemoryPlacement};

use crate::error::{Error, Result};
use crate::vk::Device;
use backend::Backend;
use std::sync::Arc;

/// Allocates unified buffers on one device.
pub struct UnifiedMemory {
    // Field order: the backends (and their memory blocks) are dropped before
    // the devices they allocate from.
    backend: Box<dyn Backend>,
    /// Staged multi-device engines: the allocator of each other device
    /// (engine GPUs 1..), for its mirrors.
    peer_backends: Vec<Box<dyn Backend>>,
    device: Arc<Device>,
    /// The engine's other devices (multi-device engines): every buffer is
    /// imported into each of them too (see module `peers`).
    peers: Vec<Arc<Device>>,
    memory_type: u32,
    engine_id: u64,
    /// `minImportedHostPointerAlignment`; `None` without `VK_EXT_external_memory_host`.
    import_alignment: Option<u64>,
    /// Where GPU runs bind the buffers (never `Auto`).
    placement: MemoryPlacement,
    /// Staging was demanded, not chosen by `Auto`: a mirror that cannot be
    /// allocated is an error rather than a fallback.
    staging_demanded: bool,
    /// Lazy host coherence (see [`coherence`]): set once by a staged
    /// engine that chose it.
    lazy: std::sync::OnceLock<coherence::LazySync>,
    /// Test hook: mirror allocations fail; `Some(true)`: and staging counts
    /// as chosen by `Auto` (see [`UnifiedMemory::inject_mirror_failure`]).
    #[cfg(feature = "test-hooks")]
    mirror_fault: std::sync::Mutex<Option<bool>>,
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
    ///
    /// `placement` is resolved for the device (see
    /// [`MemoryPlacement::Auto`]; `COEXEC_MEMORY` overrides it).
    pub fn new(
        device: Arc<Device>,
        backend: AllocatorBackend,
        engine_id: u64,
        placement: MemoryPlacement,
    ) -> Result<Arc<Self>> {
        let info = device.info();
        let (placement, staging_demanded) = placement::resolve(placement, info);
        let memory_type = info
            .unified_memory_type()
            .ok_or_else(|| Error::NoMemoryType {
                device: info.name.clone(),
            })?;
        let backend = backend::create(&device, backend, memory_type)?;
        let import_alignment = import_alignment(&device);
        Ok(Arc::new(UnifiedMemory {
            backend,
            peer_backends: Vec::new(),
            device,
            peers: Vec::new(),
            memory_type,
            engine_id,
            import_alignment,
            placement,
            staging_demanded,
            lazy: std::sync::OnceLock::new(),
            #[cfg(feature = "test-hooks")]
            mirror_fault: std::sync::Mutex::new(None),
        }))
    }

    /// The allocator of a multi-device engine over `devices` (at least
    /// two): every buffer's bytes are host memory imported into each device
    /// (module `peers`), so every device can bind them zero-copy. Each
    /// device needs `VK_EXT_external_memory_host`
    /// ([`Error::HostImportUnsupported`] otherwise).
    ///
    /// Where `requested` (after `COEXEC_MEMORY`) stages on the first device
    /// (the placement is [`MemoryPlacement::Staged`]), every device gets
    /// device-local mirrors through an allocator of its own (`backend`'s
    /// kind): each GPU of a run uploads what it reads into its own mirrors
    /// (see module `mirror`). A device whose allocator cannot be created
    /// fails the engine.
    pub fn new_shared(
        devices: &[Arc<Device>],
        backend: AllocatorBackend,
        engine_id: u64,
        requested: MemoryPlacement,
    ) -> Result<Arc<Self>> {
        let Some((first, rest)) = devices.split_first() else {
            return Err(Error::NoDevice("no device for the allocator".into()));
        };
        let mut alignment = 1u64;
        for d in devices {
            let a = import_alignment(d).ok_or_else(|| Error::HostImportUnsupported {
                device: d.info().name.clone(),
                reason: "a device of a multi-device engine needs VK_EXT_external_memory_host"
                    .into(),
            })?;
            alignment = alignment.max(a.max(1));
        }
        let one = Self::new(first.clone(), backend, engine_id, requested)?;
        let mut one = Arc::into_inner(one).expect("just built, not shared");
        if one.placement == MemoryPlacement::Staged {
            for d in rest {
                let ty = d.info().unified_memory_type().unwrap_or(0);
                one.peer_backends.push(backend::create(d, backend, ty)?);
            }
        }
        one.peers = rest.to_vec();
        one.import_alignment = Some(alignment);
        Ok(Arc::new(one))
    }

    /// Makes host coherence lazy (staged engines only; see [`coherence`]):
    /// a buffer's mirror on engine GPU `g` downloads through `stagers[g]`,
    /// waiting up to `timeout_ns`.
    pub(crate) fn make_lazy(
        &self,
        stagers: Vec<Arc<std::sync::Mutex<crate::vk::transfer::Stager>>>,
        timeout_ns: u64,
    ) {
        let _ = self.lazy.set(coherence::LazySync {
            stagers,
            timeout_ns,
        });
    }

    /// Engine GPU `gpu`'s device and the allocator of its mirrors (`None`
    /// past the devices, or for a peer of a zero-copy engine).
    pub(crate) fn gpu(&self, gpu: usize) -> Option<(&Arc<Device>, &dyn Backend)> {
        match gpu {
            0 => Some((&self.device, &*self.backend)),
            g => Some((self.peers.get(g - 1)?, &**self.peer_backends.get(g - 1)?)),
        }
    }

    /// The lazy-coherence state, where host coherence is lazy.
    pub(crate) fn lazy(&self) -> Option<&coherence::LazySync> {
        self.lazy.get()
    }

    /// The engine's other devices, into which every buffer is imported
    /// too (empty for a single-device engine).
    pub fn peers(&self) -> &[Arc<Device>] {
        &self.peers
    }

    /// Where GPU runs bind this allocator's buffers: [`MemoryPlacement::ZeroCopy`]
    /// or [`MemoryPlacement::Staged`], never `Auto`.
    pub fn placement(&self) -> MemoryPlacement {
        self.placement
    }

    /// Staging was demanded ([`MemoryPlacement::Staged`] asked for), so a
    /// mirror that cannot be allocated fails the run.
    pub(crate) fn staging_demanded(&self) -> bool {
        #[cfg(feature = "test-hooks")]
        if self.mirror_fault() == Some(true) {
            return false;
        }
        self.staging_demanded
    }

    /// Test hook: from now on every new mirror allocation fails; with
    /// `as_auto`, staging also counts as chosen by `Auto` (the buffer then
    /// falls back to zero-copy instead of failing the run).
    #[cfg(feature = "test-hooks")]
    pub fn inject_mirror_failure(&self, as_auto: bool) {
        *self.mirror_fault.lock().unwrap_or_else(|p| p.into_inner()) = Some(as_auto);
    }

    /// The injected mirror fault, if any.
    #[cfg(feature = "test-hooks")]
    pub(crate) fn mirror_fault(&self) -> Option<bool> {
        *self.mirror_fault.lock().unwrap_or_else(|p| p.into_inner())
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

    /// `minImportedHostPointerAlignment` of the device (the largest of the
    /// devices' for a multi-device engine): the alignment of pointers and
    /// sizes [`UnifiedMemory::import_host`] accepts; `None` when the device
    /// cannot import host memory (no `VK_EXT_external_memory_host`).
    pub fn host_import_alignment(&self) -> Option<u64> {
        self.import_alignment
    }

    /// A buffer over existing host memory, imported zero-copy with
    /// `VK_EXT_external_memory_host`: CPU code and kernels read and write the
    /// caller's own pages. The memory is not zeroed.
    ///
    /// Errors: [`Error::HostImportUnsupported`] when the device lacks the
    /// extension or rejects the pointer, [`Error::HostImportMisaligned`] when
    /// `ptr` or `len * size_of::<T>()` is not a multiple of
    /// [`host_import_alignment`](Self::host_import_alignment) (page-aligned
    /// memory, e.g. from `mmap` or `posix_memalign(4096)`, with the size
    /// rounded up to it, qualifies on common devices).
    ///
    /// # Safety
    /// - `ptr` points to `len * size_of::<T>()` bytes of readable and writable
    ///   host memory that stays allocated (not freed, unmapped or remapped)
    ///   until the returned buffer is dropped;
    /// - while the buffer lives, that memory is accessed only through it (code
    ///   outside Rust may access it, but never while a run that writes it is
    ///   in flight).
    pub unsafe fn import_host<T: bytemuck::Pod>(
        self: &Arc<Self>,
        ptr: *mut T,
        len: usize,
    ) -> Result<Buffer<T>> {
        // SAFETY: forwarded from this function's contract.
        unsafe { Buffer::import(self.clone(), ptr, len) }
    }

    /// A buffer holding a copy of `data`.
    pub fn buffer_from_slice<T: bytemuck::Pod>(self: &Arc<Self>, data: &[T]) -> Result<Buffer<T>> {
        let mut b = Buffer::new(self.clone(), data.len())?;
        b.as_mut_slice().copy_from_slice(data);
        Ok(b)
    }
}

/// `minImportedHostPointerAlignment` of `device`; `None` without
/// `VK_EXT_external_memory_host`.
fn import_alignment(device: &Device) -> Option<u64> {
    device.memory_host().map(|_| {
        let mut host = ash::vk::PhysicalDeviceExternalMemoryHostPropertiesEXT::default();
        let mut props = ash::vk::PhysicalDeviceProperties2::default().push_next(&mut host);
        // SAFETY: Vulkan 1.1+ query on a physical device of this live
        // instance; the chain holds a structure of an extension the device
        // supports.
        unsafe {
            device
                .instance()
                .raw()
                .get_physical_device_properties2(device.info().handle, &mut props)
        };
        host.min_imported_host_pointer_alignment
    })
}
