//! Priming a pipeline when it is made: one command buffer per device that
//! binds the new pipeline and is never submitted.
//!
//! Some drivers finish a pipeline on its first bind rather than in
//! `vkCreateComputePipelines`. Measured on the H200 (NVIDIA 1.4.312): the
//! first package of mandelbrot took 1.2-11.4 ms to *record* in a fresh
//! process, against 50-75 us once a throwaway command buffer had bound the
//! pipeline beforehand, and its first run on the GPU alone went from 3.4-14
//! ms to 2.5-2.6 ms (warm: 1.9 ms). That cost belongs to making the
//! kernel, not to its first run, where it also misled the scheduler (the
//! GPU's first package looked thousands of times slower than the next, and
//! the CPU workers took work the GPU would have done in a fraction of the
//! time). The recording binds the pipeline and nothing else: no
//! descriptor set, no dispatch, so it is valid for any pipeline.

use crate::error::{VkError, VkResultExt};
use ash::vk;

/// A device's priming command pool and its one command buffer.
pub(super) struct Primer {
    pool: vk::CommandPool,
    cb: vk::CommandBuffer,
}

impl Primer {
    /// A pool of the compute queue `family` with one command buffer.
    ///
    /// # Safety
    /// `raw` is a live device with a queue of `family`.
    pub(super) unsafe fn new(raw: &ash::Device, family: u32) -> Result<Self, VkError> {
        let pool_info = vk::CommandPoolCreateInfo::default()
            .flags(
                vk::CommandPoolCreateFlags::RESET_COMMAND_BUFFER
                    | vk::CommandPoolCreateFlags::TRANSIENT,
            )
            .queue_family_index(family);
        // SAFETY: plain object creation on a live device (function
        // contract), of one of its queue families.
        let pool =
            unsafe { raw.create_command_pool(&pool_info, None) }.call("vkCreateCommandPool")?;
        let alloc = vk::CommandBufferAllocateInfo::default()
            .command_pool(pool)
            .level(vk::CommandBufferLevel::PRIMARY)
            .command_buffer_count(1);
        // SAFETY: the pool was just created on `raw`.
        match unsafe { raw.allocate_command_buffers(&alloc) } {
            Ok(cbs) => Ok(Primer { pool, cb: cbs[0] }),
            Err(r) => {
                // SAFETY: created above, nothing allocated from it.
                unsafe { raw.destroy_command_pool(pool, None) };
                Err(VkError::from_result("vkAllocateCommandBuffers", r))
            }
        }
    }

    /// Records a command buffer that binds `pipeline`, and leaves it
    /// unsubmitted.
    ///
    /// # Safety
    /// `raw` is the device this primer was made on; `pipeline` is a live
    /// compute pipeline of it; no other thread uses this primer (the device
    /// keeps it behind a lock). The command buffer is never submitted, so
    /// it is never pending.
    pub(super) unsafe fn prime(
        &self,
        raw: &ash::Device,
        pipeline: vk::Pipeline,
    ) -> Result<(), VkError> {
        let begin = vk::CommandBufferBeginInfo::default()
            .flags(vk::CommandBufferUsageFlags::ONE_TIME_SUBMIT);
        // SAFETY: the command buffer is not pending (never submitted) and
        // its pool allows resetting it; no other thread records it
        // (function contract).
        unsafe {
            raw.reset_command_buffer(self.cb, vk::CommandBufferResetFlags::empty())
                .and_then(|_| raw.begin_command_buffer(self.cb, &begin))
        }
        .call("vkBeginCommandBuffer")?;
        // SAFETY: the command buffer is recording; the pipeline is a live
        // compute pipeline of this device (function contract). Binding
        // alone needs no descriptor set or push constants.
        unsafe {
            raw.cmd_bind_pipeline(self.cb, vk::PipelineBindPoint::COMPUTE, pipeline);
        }
        // SAFETY: the command buffer is recording.
        unsafe { raw.end_command_buffer(self.cb) }.call("vkEndCommandBuffer")?;
        // Reset again, so that the recording does not name the pipeline
        // after the pipeline is gone (a command buffer in the executable
        // state that names a destroyed object becomes invalid: harmless,
        // but a reset one names nothing).
        // SAFETY: as above: not pending, resettable, ours alone.
        unsafe { raw.reset_command_buffer(self.cb, vk::CommandBufferResetFlags::empty()) }
            .call("vkResetCommandBuffer")
    }

    /// Destroys the pool (and its command buffer).
    ///
    /// # Safety
    /// `raw` is the device this primer was made on; the primer is not used
    /// again.
    pub(super) unsafe fn destroy(&self, raw: &ash::Device) {
        // SAFETY: its command buffer was never submitted, so nothing
        // pending uses the pool (function contract for the rest).
        unsafe { raw.destroy_command_pool(self.pool, None) };
    }
}
