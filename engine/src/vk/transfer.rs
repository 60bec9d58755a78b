//! Staged transfers between host buffers and their device-local mirrors:
//! one command buffer recorded per transfer batch, submitted to the compute
//! queue and waited for.
//!
//! This is the first slice of staging: transfers run on the compute queue,
//! synchronously (the dispatch loop waits for each batch); a transfer
//! queue, overlap with compute and double buffering come later.

use super::{Completion, Device};
use crate::error::{VkError, VkResultExt};
use ash::vk;
use std::sync::Arc;

/// One copy: `bytes` bytes at `offset` of `src` to the same offset of `dst`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Copy {
    pub(crate) src: vk::Buffer,
    pub(crate) dst: vk::Buffer,
    pub(crate) offset: u64,
    pub(crate) bytes: u64,
}

/// Which way a batch goes, and so which barriers surround it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Direction {
    /// Host buffers to mirrors, before the shaders that read them.
    Upload,
    /// Mirrors to host buffers, after the shader that wrote them, before the
    /// host reads them.
    Download,
}

/// A command buffer and its completion tracking for transfer batches on
/// one device.
pub(crate) struct Stager {
    device: Arc<Device>,
    pool: vk::CommandPool,
    cb: vk::CommandBuffer,
    done: Completion,
}

impl Stager {
    /// A stager on `device`'s compute queue.
    pub(crate) fn new(device: Arc<Device>) -> Result<Self, VkError> {
        let raw = device.raw();
        let pool_info = vk::CommandPoolCreateInfo::default()
            .flags(vk::CommandPoolCreateFlags::RESET_COMMAND_BUFFER)
            .queue_family_index(device.queue_family());
        // SAFETY: plain object creation on a live device.
        let pool =
            unsafe { raw.create_command_pool(&pool_info, None) }.call("vkCreateCommandPool")?;
        let alloc = vk::CommandBufferAllocateInfo::default()
            .command_pool(pool)
            .level(vk::CommandBufferLevel::PRIMARY)
            .command_buffer_count(1);
        // SAFETY: the pool is live; on failure it is destroyed unused.
        let cb = match unsafe { raw.allocate_command_buffers(&alloc) } {
            Ok(cbs) => cbs[0],
            Err(r) => {
                // SAFETY: created above, nothing allocated from it.
                unsafe { raw.destroy_command_pool(pool, None) };
                return Err(VkError::from_result("vkAllocateCommandBuffers", r));
            }
        };
        let done = match Completion::new(&device, 1) {
            Ok(d) => d,
            Err(e) => {
                // SAFETY: created above, never submitted.
                unsafe { raw.destroy_command_pool(pool, None) };
                return Err(e);
            }
        };
        Ok(Stager {
            device,
            pool,
            cb,
            done,
        })
    }

    /// Records `copies` between the barriers of `direction`, submits them
    /// (after `after`, a completion and the ticket to wait for, where given:
    /// on the device with timelines, on the host with fences) and waits up
    /// to `timeout_ns` for them. `Ok(false)` on timeout: the batch may
    /// still run (the next batch waits for it first).
    ///
    /// # Safety
    /// Every buffer of `copies` belongs to this device, is large enough
    /// for its copy, was created with the transfer usage its role needs,
    /// and stays alive until the batch completed; `after`'s completion
    /// belongs to this device and outlives the batch.
    pub(crate) unsafe fn run(
        &mut self,
        direction: Direction,
        copies: &[Copy],
        after: Option<(&Completion, u64)>,
        timeout_ns: u64,
    ) -> Result<bool, VkError> {
        if copies.is_empty() {
            return Ok(true);
        }
        // The command buffer is idle: the previous batch completed, or this
        // waits (bounded) until it does.
        if !self.drain(timeout_ns)? {
            return Ok(false);
        }
        // SAFETY: the command buffer is idle (above); the copies obey the
        // function contract.
        unsafe { self.record(direction, copies)? };
        // SAFETY: the command buffer is fully recorded and idle (so is the
        // one fence, with fences); both completions belong to this device
        // and outlive the batch (ours is a field, dropped after Drop waits;
        // `after`'s per the contract).
        match unsafe { self.done.submit(self.cb, after, timeout_ns)? } {
            Some(ticket) => self.done.wait(ticket, timeout_ns),
            None => Ok(false),
        }
    }

    /// Waits up to `timeout_ns` for the last batch; `Ok(false)` on timeout.
    pub(crate) fn drain(&self, timeout_ns: u64) -> Result<bool, VkError> {
        self.done.wait(self.done.last(), timeout_ns)
    }

    /// Records the batch into the idle command buffer.
    ///
    /// # Safety
    /// As for [`Stager::run`], and the command buffer is idle.
    unsafe fn record(&self, direction: Direction, copies: &[Copy]) -> Result<(), VkError> {
        let raw = self.device.raw();
        let begin = vk::CommandBufferBeginInfo::default()
            .flags(vk::CommandBufferUsageFlags::ONE_TIME_SUBMIT);
        // SAFETY: the command buffer is idle (contract); its pool allows
        // resetting it.
        let r = unsafe {
            raw.reset_command_buffer(self.cb, vk::CommandBufferResetFlags::empty())
                .and_then(|_| raw.begin_command_buffer(self.cb, &begin))
        };
        self.device.check(r.call("vkBeginCommandBuffer"))?;
        let (before, after) = barriers(direction);
        // SAFETY: the command buffer is recording; each copy names live
        // buffers of this device within their sizes (contract).
        unsafe {
            barrier(raw, self.cb, before);
            for c in copies.iter().filter(|c| c.bytes > 0) {
                let region = vk::BufferCopy::default()
                    .src_offset(c.offset)
                    .dst_offset(c.offset)
                    .size(c.bytes);
                raw.cmd_copy_buffer(self.cb, c.src, c.dst, &[region]);
            }
            barrier(raw, self.cb, after);
        }
        // SAFETY: the command buffer is recording.
        let r = unsafe { raw.end_command_buffer(self.cb) }.call("vkEndCommandBuffer");
        self.device.check(r)
    }
}

/// One global memory barrier: source stage and access, destination stage
/// and access.
type Barrier = (
    vk::PipelineStageFlags,
    vk::AccessFlags,
    vk::PipelineStageFlags,
    vk::AccessFlags,
);

/// The barriers before and after a batch's copies.
fn barriers(direction: Direction) -> (Barrier, Barrier) {
    use vk::AccessFlags as A;
    use vk::PipelineStageFlags as S;
    match direction {
        // Earlier shaders and copies touching the mirrors finish before the
        // copies overwrite them; the copies' writes reach the shaders after.
        Direction::Upload => (
            (
                S::COMPUTE_SHADER | S::TRANSFER,
                A::SHADER_READ | A::SHADER_WRITE | A::TRANSFER_READ | A::TRANSFER_WRITE,
                S::TRANSFER,
                A::TRANSFER_READ | A::TRANSFER_WRITE,
            ),
            (
                S::TRANSFER,
                A::TRANSFER_WRITE,
                S::COMPUTE_SHADER,
                A::SHADER_READ | A::SHADER_WRITE,
            ),
        ),
        // The shader's writes arrive through the semaphore wait (with
        // fences: the host waited for the package's fence); earlier
        // copies finish first; the host reads the copies' writes.
        Direction::Download => (
            (
                S::TRANSFER,
                A::TRANSFER_WRITE,
                S::TRANSFER,
                A::TRANSFER_READ | A::TRANSFER_WRITE,
            ),
            (S::TRANSFER, A::TRANSFER_WRITE, S::HOST, A::HOST_READ),
        ),
    }
}

/// Records `b` as a global memory barrier.
///
/// # Safety
/// `cb` is recording.
unsafe fn barrier(raw: &ash::Device, cb: vk::CommandBuffer, b: Barrier) {
    let mb = vk::MemoryBarrier::default()
        .src_access_mask(b.1)
        .dst_access_mask(b.3);
    // SAFETY: `cb` is recording (contract).
    unsafe {
        raw.cmd_pipeline_barrier(
            cb,
            b.0,
            b.2,
            vk::DependencyFlags::empty(),
            &[mb],
            &[],
            &[],
        )
    };
}

impl Drop for Stager {
    fn drop(&mut self) {
        // Never destroy the command buffer while a batch may run.
        if !matches!(self.drain(10_000_000_000), Ok(true)) {
            let _ = self.device.wait_idle();
        }
        // SAFETY: nothing pending uses the pool's command buffer (above).
        unsafe { self.device.raw().destroy_command_pool(self.pool, None) };
    }
}
