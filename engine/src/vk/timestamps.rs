//! GPU timestamps of a dispatch ring's packages: two queries per slot (the
//! start and the end of its package), read back in one of the ways of
//! [`StampRead`].

use super::{Device, DeviceType};
use crate::error::{VkError, VkResultExt};
use ash::vk;
use std::sync::Arc;

/// GPU start and end of one package, in nanoseconds on the device clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GpuSpan {
    /// Start (top of pipe).
    pub start_ns: u64,
    /// End (bottom of pipe).
    pub end_ns: u64,
}

/// How a ring reads its packages' GPU timestamps back.
///
/// Chosen per device when the ring is created; the environment variable
/// `COEXEC_GPU_TIMESTAMPS` (`copy`, `query` or `off`) overrides the choice,
/// for diagnosis and measurement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StampRead {
    /// Each command buffer copies its two stamps into mapped host memory
    /// (`vkCmdCopyQueryPoolResults`). The default on CPU implementations:
    /// lavapipe's `vkGetQueryPoolResults` waits for its whole queue to idle,
    /// which would serialise the ring.
    Copy,
    /// Stamps are read with `vkGetQueryPoolResults` once the package's
    /// ticket completed: no transfer and no second barrier on the device
    /// between packages. The default on GPUs.
    Query,
    /// No timestamps: packages carry no GPU span.
    Off,
}

impl StampRead {
    /// The mode for `device`: the `COEXEC_GPU_TIMESTAMPS` override if set
    /// to a known value, else [`StampRead::Copy`] on CPU implementations and
    /// [`StampRead::Query`] elsewhere; [`StampRead::Off`] when the queue
    /// writes no timestamps.
    pub fn for_device(device: &Device) -> Self {
        if !device.has_timestamps() {
            return StampRead::Off;
        }
        match std::env::var("COEXEC_GPU_TIMESTAMPS").as_deref() {
            Ok("copy") => return StampRead::Copy,
            Ok("query") => return StampRead::Query,
            Ok("off") => return StampRead::Off,
            Ok(other) => tracing::warn!(
                value = other,
                "COEXEC_GPU_TIMESTAMPS is not copy, query or off; ignored"
            ),
            Err(_) => {}
        }
        if device.info().device_type == DeviceType::Cpu {
            StampRead::Copy
        } else {
            StampRead::Query
        }
    }
}

/// Where each command buffer copies its two timestamps
/// (`vkCmdCopyQueryPoolResults`), so that reading them is a plain memory read
/// once the ticket completed: no `vkGetQueryPoolResults` per package, which
/// some drivers (lavapipe) implement by waiting for the whole queue to idle.
struct Stamps {
    buffer: vk::Buffer,
    memory: vk::DeviceMemory,
    ptr: *mut u64,
}

// SAFETY: `ptr` is a persistent mapping owned by the ring; it is only
// dereferenced through `&self`/`&mut self` methods of the ring, which follow
// the ring's own synchronisation (a slot is read after its ticket completed
// and written before it is submitted, by the ring's single owner).
unsafe impl Send for Stamps {}
// SAFETY: see above; shared access only reads.
unsafe impl Sync for Stamps {}

impl Stamps {
    fn new(device: &Device, slots: usize) -> Result<Self, VkError> {
        let raw = device.raw();
        let size = 16 * slots as u64;
        let info = vk::BufferCreateInfo::default()
            .size(size)
            .usage(vk::BufferUsageFlags::TRANSFER_DST)
            .sharing_mode(vk::SharingMode::EXCLUSIVE);
        // SAFETY: plain object creation on a live device.
        let buffer = unsafe { raw.create_buffer(&info, None) }.call("vkCreateBuffer")?;
        // SAFETY: `buffer` is live.
        let req = unsafe { raw.get_buffer_memory_requirements(buffer) };
        let hv = vk::MemoryPropertyFlags::HOST_VISIBLE | vk::MemoryPropertyFlags::HOST_COHERENT;
        let types = &device.info().memory_types;
        let Some(index) = (0..types.len() as u32).find(|&i| {
            req.memory_type_bits & (1 << i) != 0 && types[i as usize].flags.contains(hv)
        }) else {
            // SAFETY: unused.
            unsafe { raw.destroy_buffer(buffer, None) };
            return Err(VkError::from_result(
                "vkAllocateMemory (timestamps)",
                vk::Result::ERROR_FEATURE_NOT_PRESENT,
            ));
        };
        let alloc = vk::MemoryAllocateInfo::default()
            .allocation_size(req.size)
            .memory_type_index(index);
        // SAFETY: a host-visible type the buffer accepts; freed in Drop.
        let memory = match unsafe { raw.allocate_memory(&alloc, None) } {
            Ok(m) => m,
            Err(r) => {
                // SAFETY: unused.
                unsafe { raw.destroy_buffer(buffer, None) };
                return Err(VkError::from_result("vkAllocateMemory", r));
            }
        };
        // SAFETY: fresh memory and buffer of this device; the memory is large
        // enough per `req`; mapping the whole of a host-visible allocation.
        let mapped = unsafe {
            raw.bind_buffer_memory(buffer, memory, 0).and_then(|_| {
                raw.map_memory(memory, 0, vk::WHOLE_SIZE, vk::MemoryMapFlags::empty())
            })
        };
        match mapped {
            Ok(p) => {
                let ptr = p as *mut u64;
                // SAFETY: the mapping holds 2 * slots u64 (size above).
                unsafe { std::ptr::write_bytes(ptr, 0, 2 * slots) };
                Ok(Stamps {
                    buffer,
                    memory,
                    ptr,
                })
            }
            Err(r) => {
                // SAFETY: unused.
                unsafe {
                    raw.destroy_buffer(buffer, None);
                    raw.free_memory(memory, None);
                }
                Err(VkError::from_result("vkMapMemory", r))
            }
        }
    }
}

/// The timestamp queries of a ring's slots and, in copy mode, the host
/// memory they are copied to.
///
/// Owned by one ring, which never lets a submission that writes them
/// outlive it (its `Drop` drains them before its fields drop).
pub(super) struct SlotStamps {
    device: Arc<Device>,
    queries: vk::QueryPool,
    /// Present in [`StampRead::Copy`] mode only.
    copies: Option<Stamps>,
}

impl SlotStamps {
    /// The stamps of `slots` slots read back by `read`; `None` for
    /// [`StampRead::Off`].
    pub(super) fn new(
        device: &Arc<Device>,
        slots: usize,
        read: StampRead,
    ) -> Result<Option<Self>, VkError> {
        if read == StampRead::Off {
            return Ok(None);
        }
        let raw = device.raw();
        let qi = vk::QueryPoolCreateInfo::default()
            .query_type(vk::QueryType::TIMESTAMP)
            .query_count(2 * slots as u32);
        // SAFETY: plain object creation on a live device.
        let queries = unsafe { raw.create_query_pool(&qi, None) }.call("vkCreateQueryPool")?;
        // SAFETY: host query reset was enabled at device creation; the pool
        // is new and unused.
        unsafe { raw.reset_query_pool(queries, 0, 2 * slots as u32) };
        // From here on, Drop destroys the pool on every error path.
        let mut stamps = SlotStamps {
            device: device.clone(),
            queries,
            copies: None,
        };
        if read == StampRead::Copy {
            stamps.copies = Some(Stamps::new(device, slots)?);
        }
        Ok(Some(stamps))
    }

    /// How the stamps are read back.
    pub(super) fn mode(&self) -> StampRead {
        if self.copies.is_some() {
            StampRead::Copy
        } else {
            StampRead::Query
        }
    }

    /// Resets (on the host) the two queries of `slot` and, in copy mode,
    /// zeroes its copies, so that a submission that writes none reads as
    /// "no span".
    ///
    /// # Safety
    /// The slot is idle: no pending submission uses its queries or copies.
    pub(super) unsafe fn clear(&self, slot: usize) {
        // SAFETY: host query reset is enabled at device creation; the
        // slot's queries are not used by any pending submission (contract).
        unsafe {
            self.device
                .raw()
                .reset_query_pool(self.queries, 2 * slot as u32, 2)
        };
        if let Some(st) = &self.copies {
            // SAFETY: the slot is idle (contract), so the device does not
            // write it now; 2 u64 per slot inside the mapping.
            unsafe { std::ptr::write_bytes(st.ptr.add(2 * slot), 0, 2) };
        }
    }

    /// Records the start stamp of `slot`'s package.
    ///
    /// # Safety
    /// `cb` is a command buffer of this device in the recording state, for
    /// the idle `slot`.
    pub(super) unsafe fn record_start(&self, cb: vk::CommandBuffer, slot: usize) {
        let q = 2 * slot as u32;
        // SAFETY: `cb` is recording (contract); the query is the slot's own
        // and was reset on the host (`clear`).
        unsafe {
            self.device.raw().cmd_write_timestamp(
                cb,
                vk::PipelineStageFlags::TOP_OF_PIPE,
                self.queries,
                q,
            )
        };
    }

    /// Records the end stamp of `slot`'s package and, in copy mode, the
    /// copy of both stamps to host memory, visible to the host once the
    /// submission completed.
    ///
    /// # Safety
    /// As for [`SlotStamps::record_start`], after it.
    pub(super) unsafe fn record_end(&self, cb: vk::CommandBuffer, slot: usize) {
        let raw = self.device.raw();
        let q = 2 * slot as u32;
        // SAFETY: `cb` is recording (contract); the queries are the slot's
        // own; the copy lands in the slot's 16 bytes of the stamps buffer.
        unsafe {
            raw.cmd_write_timestamp(cb, vk::PipelineStageFlags::BOTTOM_OF_PIPE, self.queries, q + 1);
            let Some(st) = &self.copies else {
                return;
            };
            raw.cmd_copy_query_pool_results(
                cb,
                self.queries,
                q,
                2,
                st.buffer,
                16 * slot as u64,
                8,
                vk::QueryResultFlags::TYPE_64 | vk::QueryResultFlags::WAIT,
            );
            let copied = vk::MemoryBarrier::default()
                .src_access_mask(vk::AccessFlags::TRANSFER_WRITE)
                .dst_access_mask(vk::AccessFlags::HOST_READ);
            raw.cmd_pipeline_barrier(
                cb,
                vk::PipelineStageFlags::TRANSFER,
                vk::PipelineStageFlags::HOST,
                vk::DependencyFlags::empty(),
                &[copied],
                &[],
                &[],
            );
        }
    }

    /// The span of `slot`'s package; `None` where it wrote no stamps.
    ///
    /// # Safety
    /// The slot's last submission completed (observed on the timeline it
    /// signals) and no later submission uses the slot.
    pub(super) unsafe fn span(&self, slot: usize) -> Result<Option<GpuSpan>, VkError> {
        let data = match &self.copies {
            // SAFETY: the submission completed (contract), and its copy was
            // made visible to the host by the barrier recorded after it; no
            // later submission rewrites the slot (contract). Volatile: the
            // device, not this thread, wrote the memory.
            Some(st) => unsafe {
                [
                    st.ptr.add(2 * slot).read_volatile(),
                    st.ptr.add(2 * slot + 1).read_volatile(),
                ]
            },
            None => {
                let mut data = [0u64; 2];
                // SAFETY: live pool; the two queries of the slot; `data`
                // holds two 64-bit results. No WAIT: the submission
                // completed (contract), so its stamps are available, and a
                // slot whose submission wrote none (reset on the host, see
                // `clear`) answers NOT_READY instead of blocking.
                let r = unsafe {
                    self.device.raw().get_query_pool_results(
                        self.queries,
                        2 * slot as u32,
                        &mut data,
                        vk::QueryResultFlags::TYPE_64,
                    )
                };
                match r {
                    Err(vk::Result::NOT_READY) => return Ok(None),
                    r => {
                        self.device.check(r.call("vkGetQueryPoolResults"))?;
                        data
                    }
                }
            }
        };
        if data == [0, 0] || data[1] < data[0] {
            return Ok(None);
        }
        let period = f64::from(self.device.info().timestamp_period);
        Ok(Some(GpuSpan {
            start_ns: (data[0] as f64 * period) as u64,
            end_ns: (data[1] as f64 * period) as u64,
        }))
    }
}

impl Drop for SlotStamps {
    fn drop(&mut self) {
        let raw = self.device.raw();
        // SAFETY: no pending submission uses the queries or the copies: the
        // owning ring drained its submissions first (see the type's docs).
        unsafe {
            raw.destroy_query_pool(self.queries, None);
            if let Some(st) = self.copies.take() {
                raw.unmap_memory(st.memory);
                raw.destroy_buffer(st.buffer, None);
                raw.free_memory(st.memory, None);
            }
        }
    }
}
