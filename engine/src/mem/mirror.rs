//! Device-local mirrors of unified buffers, for staged runs (see
//! [`MemoryPlacement::Staged`](super::MemoryPlacement::Staged)).
//!
//! Each discrete GPU of a staged engine keeps its own mirror of a buffer
//! (one [`MirrorSlot`] per engine GPU, in [`Mirrors`]). A buffer's mirror on
//! a GPU is allocated when the engine makes the buffer
//! (`exec::staging::mirror_ahead`), or where that failed, the first time a
//! staged run on that GPU binds it; it is kept with the buffer and freed
//! with it. Residency rule: each mirror holds
//! the host copy's bytes in the byte ranges `valid`, as of host-write
//! generation `generation`; every `&mut` host access through the API
//! ([`Buffer::as_mut_slice`], `DerefMut`, [`Buffer::host_written`]) bumps
//! the generation, which empties `valid`. A GPU package uploads only the
//! part of its footprint ([`crate::Footprint`]) outside `valid`, which then
//! joins it. After a run, what GPU packages wrote (and downloaded) is valid
//! in both copies; what CPU packages wrote is valid on the host only. Under
//! lazy host coherence ([`super::coherence`]) GPU packages download nothing:
//! what they wrote is valid in the mirror and recorded as `stale` on the
//! host until a download brings it back.
//! Several GPUs: what one GPU's packages wrote is valid in that GPU's mirror
//! only; every other mirror loses those bytes when the run ends (see
//! `Staging::finish_all`), so a GPU that reads them later uploads them from
//! the host copy (made current first, see [`super::coherence`]). A byte range
//! is stale on the host in at most one mirror.
//! Buffers whose host memory is written behind the engine's back (imported
//! host memory, the C ABI's host pointers) are marked untracked: every run
//! starts with nothing of them valid.
//!
//! [`Buffer::as_mut_slice`]: super::Buffer::as_mut_slice
//! [`Buffer::host_written`]: super::Buffer::host_written

use super::backend::Block;
use super::ranges::RangeSet;
use super::{placement, UnifiedMemory};
use crate::error::{Error, Result, VkResultExt};
use ash::vk;
use std::sync::Arc;

/// A device-local copy of one buffer on one engine GPU.
pub(crate) struct Mirror {
    pub(crate) buffer: vk::Buffer,
    block: Option<Block>,
    /// The engine GPU whose memory holds it.
    gpu: usize,
}

/// A buffer's mirrors, one slot per engine GPU (grown on first use).
#[derive(Default)]
pub(crate) struct Mirrors {
    slots: Vec<MirrorSlot>,
}

impl Mirrors {
    /// The slot of engine GPU `gpu`.
    pub(crate) fn slot(&mut self, gpu: usize) -> &mut MirrorSlot {
        if self.slots.len() <= gpu {
            self.slots.resize_with(gpu + 1, MirrorSlot::default);
        }
        &mut self.slots[gpu]
    }

    /// Whether some mirror holds bytes the host copy lacks.
    pub(crate) fn any_stale(&self) -> bool {
        self.slots.iter().any(|s| !s.stale.ranges().is_empty())
    }

    /// Bytes stale on the host, summed over the mirrors of every GPU.
    pub(crate) fn stale_bytes(&self) -> u64 {
        let ranges = self.slots.iter().flat_map(|s| s.stale.ranges());
        ranges.map(|r| r.end - r.start).sum()
    }

    /// The host copy was declared current: no mirror holds newer bytes.
    pub(crate) fn clear_stale(&mut self) {
        for s in &mut self.slots {
            s.stale.clear();
        }
    }

    /// The host copy's bytes `r` changed, or their current value lies in
    /// another mirror: no mirror holds them any longer.
    pub(crate) fn forget(&mut self, gen: u64, untracked: bool, r: std::ops::Range<u64>) {
        for s in &mut self.slots {
            s.valid(gen, untracked).remove(r.clone());
            s.stale.remove(r.clone());
            s.written = true;
        }
    }

    /// Frees every mirror (the buffer is dropped).
    pub(crate) fn free_all(&mut self, memory: &UnifiedMemory) {
        for s in &mut self.slots {
            if let Some(m) = s.mirror.take() {
                m.free(memory);
            }
        }
    }
}

/// What a buffer keeps of its mirror.
#[derive(Default)]
pub(crate) struct MirrorSlot {
    pub(crate) mirror: Option<Mirror>,
    /// Byte ranges where the mirror equals the host copy, as of host-write
    /// generation `generation`.
    valid: RangeSet,
    /// The host-write generation `valid` is about.
    generation: u64,
    /// Lazy host coherence (see [`super::coherence`]): byte ranges the GPU
    /// wrote into the mirror and that the host copy lacks; always within
    /// `valid`.
    stale: RangeSet,
    /// The mirror could not be allocated: the buffer is bound zero-copy.
    pub(crate) failed: bool,
    /// A run wrote the buffer since the host last did (at `generation`):
    /// what is valid may be what a GPU wrote, not the host's bytes.
    written: bool,
}

impl MirrorSlot {
    /// The byte ranges where the mirror equals the host copy at host-write
    /// generation `gen` (nothing where the host wrote it since, or where
    /// host writes are `untracked`).
    pub(crate) fn valid(&mut self, gen: u64, untracked: bool) -> &mut RangeSet {
        if self.generation != gen || untracked {
            self.valid.clear();
            // The host copy was declared current (see `Buffer::host_written`).
            self.stale.clear();
            self.generation = gen;
            self.written = false;
        }
        &mut self.valid
    }

    /// Whether the mirror holds part, not all, of the `bytes` bytes the
    /// host last wrote (generation `gen`), uploaded by earlier runs that
    /// only read them: a buffer read unchanged run after run (see
    /// `exec::staging`).
    pub(crate) fn holds_host_part(&mut self, gen: u64, untracked: bool, bytes: u64) -> bool {
        let written = self.written;
        let valid = self.valid(gen, untracked);
        !written && !valid.ranges().is_empty() && !valid.missing(0..bytes).is_empty()
    }

    /// Nothing of the mirror is valid (it was just allocated).
    pub(crate) fn invalidate(&mut self) {
        self.valid.clear();
        self.stale.clear();
    }

    /// The byte ranges stale on the host (see [`super::coherence`]).
    pub(crate) fn stale(&self) -> &RangeSet {
        &self.stale
    }

    /// The byte ranges stale on the host, to update.
    pub(crate) fn stale_mut(&mut self) -> &mut RangeSet {
        &mut self.stale
    }
}

/// Usage of host buffers that may be staged, and of mirrors.
pub(crate) const STAGED_USAGE: vk::BufferUsageFlags = vk::BufferUsageFlags::from_raw(
    vk::BufferUsageFlags::STORAGE_BUFFER.as_raw()
        | vk::BufferUsageFlags::TRANSFER_SRC.as_raw()
        | vk::BufferUsageFlags::TRANSFER_DST.as_raw(),
);

/// Checks that `bytes` more of memory type `ty` fit its heap's budget
/// (`VK_EXT_memory_budget`, where the device has it).
fn within_budget(device: &crate::vk::Device, ty: u32, bytes: u64) -> Result<()> {
    let Some(heap) = device.info().memory_types.get(ty as usize).map(|t| t.heap) else {
        return Ok(());
    };
    match device.heap_budget(heap) {
        Some((usage, budget)) if usage.saturating_add(bytes) > budget => Err(Error::Allocation {
            bytes,
            message: format!(
                "heap {heap} would exceed its memory budget ({usage} of {budget} bytes in use)"
            ),
        }),
        _ => Ok(()),
    }
}

impl Mirror {
    /// A device-local buffer of `bytes` bytes on engine GPU `gpu` of
    /// `memory`, through that device's allocator backend.
    pub(crate) fn new(memory: &Arc<UnifiedMemory>, gpu: usize, bytes: u64) -> Result<Mirror> {
        #[cfg(feature = "test-hooks")]
        if memory.mirror_fault().is_some() {
            return Err(Error::Allocation {
                bytes,
                message: "mirror allocation failed (injected)".into(),
            });
        }
        let (device, backend) = memory.gpu(gpu).ok_or_else(|| Error::Allocation {
            bytes,
            message: format!("engine GPU {gpu} has no allocator for mirrors"),
        })?;
        let mut info = vk::BufferCreateInfo::default()
            .size(bytes)
            .usage(STAGED_USAGE)
            .sharing_mode(vk::SharingMode::EXCLUSIVE);
        // Shared with a separate transfer queue's family (see
        // `vk::queues`): no ownership transfers.
        let families = device.concurrent_families();
        if let Some(f) = &families {
            info = info
                .sharing_mode(vk::SharingMode::CONCURRENT)
                .queue_family_indices(f);
        }
        // SAFETY: plain object creation on a live device; bytes > 0 (a
        // buffer's size).
        let buffer = unsafe { device.raw().create_buffer(&info, None) }.call("vkCreateBuffer")?;
        let mut m = Mirror {
            buffer,
            block: None,
            gpu,
        };
        // SAFETY: `buffer` was just created on this device.
        let req = unsafe { device.raw().get_buffer_memory_requirements(buffer) };
        let Some(ty) = placement::device_local_type(device.info(), req.memory_type_bits) else {
            m.free(memory);
            return Err(Error::NoMemoryType {
                device: device.info().name.clone(),
            });
        };
        if let Err(e) = within_budget(device, ty, req.size) {
            m.free(memory);
            return Err(e);
        }
        let block = match backend.allocate_device_local(req, ty, "coexec mirror") {
            Ok(b) => b,
            Err(e) => {
                m.free(memory);
                return Err(e);
            }
        };
        // SAFETY: the block is of a type the buffer accepts, sized and
        // aligned per `req`, and the buffer was not bound before.
        let r = unsafe {
            device
                .raw()
                .bind_buffer_memory(buffer, block.memory, block.offset)
        }
        .call("vkBindBufferMemory");
        m.block = Some(block);
        if let Err(e) = r {
            m.free(memory);
            return Err(e.into());
        }
        Ok(m)
    }

    /// Destroys the buffer and frees its memory.
    pub(crate) fn free(mut self, memory: &UnifiedMemory) {
        let Some((device, backend)) = memory.gpu(self.gpu) else {
            return;
        };
        // SAFETY: runs that bind a mirror wait for their GPU work before
        // returning, and the mirror is freed only with its buffer (or on
        // the error path of its creation), so nothing pending uses it; it
        // was created on `device` (engine GPU `self.gpu`).
        unsafe { device.raw().destroy_buffer(self.buffer, None) };
        if let Some(block) = self.block.take() {
            backend.free(block);
        }
    }
}
