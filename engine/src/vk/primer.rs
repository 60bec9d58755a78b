//! Priming a pipeline when it is made, so that a driver's deferred work on
//! it happens then rather than in the kernel's first package.
//!
//! Two kinds of driver defer it, to two different points:
//! - **the first bind.** Measured on the H200 (NVIDIA 1.4.312): the first
//!   package of mandelbrot took 1.2-11.4 ms to *record* in a fresh
//!   process, against 50-75 us once a throwaway command buffer had bound
//!   the pipeline beforehand, and its first run on the GPU alone went from
//!   3.4-14 ms to 2.5-2.6 ms (warm: 1.9 ms).
//! - **the first dispatch.** Mesa's lavapipe (22.3) compiles a compute
//!   shader's machine code when it first executes a dispatch of it: the
//!   first package of blackscholes took 2.47 ms on the device against 0.30
//!   for the same units later, so a co-executed first run waited for a
//!   one-unit probe the CPU had long outrun.
//!
//! So each new pipeline is bound in a command buffer that is never
//! submitted (valid for any pipeline: no descriptor set, no dispatch), and
//! then a dispatch of **zero work-groups** is submitted: it runs no
//! invocation, so it touches no memory, but the driver prepares the
//! pipeline for it. Its descriptors point at a small scratch buffer of the
//! primer's own, its push constants are zeros. The submission is not
//! waited for: a run's first package, submitted later on the same queue,
//! finds the work done, and until then the caller goes on (filling its
//! buffers while the driver compiles). A slot of the primer holds each
//! submission until its fence signals; a pipeline is destroyed only after
//! the slots that name it are done ([`Primer::settle`]).
//! Cost on a driver that needs none of it: one submission per kernel.

use super::MemoryType;
use crate::error::{VkError, VkResultExt};
use ash::vk;
use std::time::Duration;

/// Bytes of the scratch buffer every binding of a priming dispatch points
/// at. No invocation runs, so nothing reads it; it only has to be a valid
/// storage buffer, large enough for a fixed-size block a shader declares.
const SCRATCH_BYTES: u64 = 64 * 1024;

/// What a priming dispatch needs to know of the pipeline.
#[derive(Debug, Clone, Copy)]
pub(super) struct PrimeTarget<'a> {
    /// The pipeline itself.
    pub(super) pipeline: vk::Pipeline,
    /// Its layout.
    pub(super) layout: vk::PipelineLayout,
    /// The layout of its one descriptor set.
    pub(super) set_layout: vk::DescriptorSetLayout,
    /// The binding numbers of that set (storage buffers).
    pub(super) bindings: &'a [u32],
    /// Bytes of push constants its layout declares.
    pub(super) push_constant_bytes: u32,
}

/// One submitted priming dispatch (or a free slot for the next one).
struct Slot {
    cb: vk::CommandBuffer,
    fence: vk::Fence,
    /// The descriptor pool of its set; `Some` while the submission may be
    /// pending.
    pool: Option<vk::DescriptorPool>,
    /// The pipeline it dispatches, while pending.
    pipeline: vk::Pipeline,
}

/// A device's priming objects: a command pool, the bind-only command
/// buffer, the scratch buffer and the slots of submitted dispatches.
pub(super) struct Primer {
    pool: vk::CommandPool,
    cb: vk::CommandBuffer,
    scratch: vk::Buffer,
    memory: vk::DeviceMemory,
    slots: Vec<Slot>,
}

impl Primer {
    /// A pool of the compute queue `family` with one command buffer, and
    /// the scratch buffer in one of `memory_types` (the device's, as
    /// [`super::PhysicalDeviceInfo`] lists them).
    ///
    /// # Safety
    /// `raw` is a live device with a queue of `family`, whose memory types
    /// are `memory_types`.
    pub(super) unsafe fn new(
        raw: &ash::Device,
        family: u32,
        memory_types: &[MemoryType],
    ) -> Result<Self, VkError> {
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
        // SAFETY: the pool was just created on `raw`.
        let made = unsafe { allocate_cb(raw, pool) }.and_then(|cb| {
            // SAFETY: a live device whose memory types these are (contract).
            let (scratch, memory) = unsafe { scratch_buffer(raw, memory_types) }?;
            Ok(Primer {
                pool,
                cb,
                scratch,
                memory,
                slots: Vec::new(),
            })
        });
        if made.is_err() {
            // SAFETY: created above; what was allocated from it is unused.
            unsafe { raw.destroy_command_pool(pool, None) };
        }
        made
    }

    /// Records a command buffer that binds `pipeline`, and leaves it
    /// unsubmitted.
    ///
    /// # Safety
    /// `raw` is the device this primer was made on; `pipeline` is a live
    /// compute pipeline of it; no other thread uses this primer (the device
    /// keeps it behind a lock). The command buffer is never submitted, so
    /// it is never pending.
    pub(super) unsafe fn bind(&self, raw: &ash::Device, pipeline: vk::Pipeline) -> Result<(), VkError> {
        // SAFETY: never submitted, so not pending; ours alone (contract).
        unsafe { begin(raw, self.cb) }?;
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

    /// Records a dispatch of zero work-groups of `target` in a free slot
    /// and hands it to `submit` with the slot's fence; the slot stays
    /// pending until [`Primer::reclaim`] sees the fence signalled.
    ///
    /// # Safety
    /// `raw` is the device this primer was made on; the objects of
    /// `target` are live objects of it, its bindings those of its set
    /// layout (storage buffers); no other thread uses this primer.
    /// `submit` submits the command buffer to a queue of the primer's
    /// family with the fence, and the pipeline is not destroyed before
    /// [`Primer::settle`] has returned for it.
    pub(super) unsafe fn dispatch(
        &mut self,
        raw: &ash::Device,
        target: PrimeTarget<'_>,
        submit: impl FnOnce(vk::CommandBuffer, vk::Fence) -> Result<(), VkError>,
    ) -> Result<(), VkError> {
        // SAFETY: this primer's device (contract).
        unsafe { self.reclaim(raw) }?;
        let slot = match self.slots.iter().position(|s| s.pool.is_none()) {
            Some(i) => i,
            None => {
                // SAFETY: the pool is this primer's, made on `raw`.
                let slot = unsafe { new_slot(raw, self.pool) }?;
                self.slots.push(slot);
                self.slots.len() - 1
            }
        };
        // SAFETY: a live layout of `raw` (contract).
        let (pool, set) = unsafe { scratch_set(raw, &target, self.scratch) }?;
        let Slot { cb, fence, .. } = self.slots[slot];
        // SAFETY: a free slot's command buffer is not pending (its fence
        // signalled, or it was never submitted); the objects are live
        // (contract) and the set was just written.
        let recorded = unsafe { record_dispatch(raw, cb, &target, set) }
            .and_then(|()| submit(cb, fence));
        match recorded {
            Ok(()) => {
                let s = &mut self.slots[slot];
                s.pool = Some(pool);
                s.pipeline = target.pipeline;
                Ok(())
            }
            Err(e) => {
                // Not submitted (the submission's own failure leaves
                // nothing pending): the set's pool goes at once.
                // SAFETY: no pending command buffer uses its set.
                unsafe { raw.destroy_descriptor_pool(pool, None) };
                Err(e)
            }
        }
    }

    /// Frees the slots whose submission completed: their fences are reset,
    /// their sets' pools destroyed.
    ///
    /// # Safety
    /// `raw` is the device this primer was made on; no other thread uses
    /// this primer.
    unsafe fn reclaim(&mut self, raw: &ash::Device) -> Result<(), VkError> {
        for s in self.slots.iter_mut() {
            let Some(pool) = s.pool else { continue };
            // SAFETY: the fence is this slot's, a live object of `raw`.
            let done = unsafe { raw.get_fence_status(s.fence) }.call("vkGetFenceStatus")?;
            if done {
                // SAFETY: the submission completed, so nothing pending uses
                // the set or the fence.
                unsafe {
                    raw.destroy_descriptor_pool(pool, None);
                    raw.reset_fences(&[s.fence]).call("vkResetFences")?;
                }
                s.pool = None;
            }
        }
        Ok(())
    }

    /// Waits until no pending priming dispatch names `pipeline`, polling
    /// every `step` while `alive` says the device is still in use; returns
    /// early, with the slot left pending, once `alive` says it is not (a
    /// lost device's submissions count as complete).
    ///
    /// # Safety
    /// `raw` is the device this primer was made on; no other thread uses
    /// this primer.
    pub(super) unsafe fn settle(
        &mut self,
        raw: &ash::Device,
        pipeline: vk::Pipeline,
        step: Duration,
        alive: impl Fn() -> bool,
    ) -> Result<(), VkError> {
        let step_ns = u64::try_from(step.as_nanos()).unwrap_or(u64::MAX);
        for s in &self.slots {
            if s.pool.is_none() || s.pipeline != pipeline {
                continue;
            }
            // SAFETY: the slot's fence, a live object of `raw`.
            while unsafe { raw.wait_for_fences(&[s.fence], true, step_ns) }
                == Err(vk::Result::TIMEOUT)
            {
                if !alive() {
                    return Ok(());
                }
            }
        }
        // SAFETY: as the contract.
        unsafe { self.reclaim(raw) }
    }

    /// Destroys the pools, the slots' fences and the scratch buffer.
    ///
    /// # Safety
    /// `raw` is the device this primer was made on and is idle; the primer
    /// is not used again.
    pub(super) unsafe fn destroy(&self, raw: &ash::Device) {
        // SAFETY: the device is idle, so nothing pending uses any of these
        // objects (function contract); each is destroyed once.
        unsafe {
            for s in &self.slots {
                if let Some(pool) = s.pool {
                    raw.destroy_descriptor_pool(pool, None);
                }
                raw.destroy_fence(s.fence, None);
            }
            raw.destroy_command_pool(self.pool, None);
            raw.destroy_buffer(self.scratch, None);
            raw.free_memory(self.memory, None);
        }
    }
}

/// One primary command buffer from `pool`.
///
/// # Safety
/// `pool` is a live command pool of `raw`, used by no other thread.
unsafe fn allocate_cb(raw: &ash::Device, pool: vk::CommandPool) -> Result<vk::CommandBuffer, VkError> {
    let alloc = vk::CommandBufferAllocateInfo::default()
        .command_pool(pool)
        .level(vk::CommandBufferLevel::PRIMARY)
        .command_buffer_count(1);
    // SAFETY: per the function contract.
    let cbs = unsafe { raw.allocate_command_buffers(&alloc) }.call("vkAllocateCommandBuffers")?;
    Ok(cbs[0])
}

/// A free slot: a command buffer of `pool` and an unsignalled fence.
///
/// # Safety
/// As [`allocate_cb`].
unsafe fn new_slot(raw: &ash::Device, pool: vk::CommandPool) -> Result<Slot, VkError> {
    // SAFETY: per the function contract.
    let cb = unsafe { allocate_cb(raw, pool) }?;
    // SAFETY: plain object creation on a live device.
    match unsafe { raw.create_fence(&vk::FenceCreateInfo::default(), None) } {
        Ok(fence) => Ok(Slot {
            cb,
            fence,
            pool: None,
            pipeline: vk::Pipeline::null(),
        }),
        Err(r) => {
            // SAFETY: allocated above, never recorded.
            unsafe { raw.free_command_buffers(pool, &[cb]) };
            Err(VkError::from_result("vkCreateFence", r))
        }
    }
}

/// The scratch buffer, bound to memory of the first type it allows
/// (device-local first).
///
/// # Safety
/// `raw` is a live device whose memory types are `types`.
unsafe fn scratch_buffer(
    raw: &ash::Device,
    types: &[MemoryType],
) -> Result<(vk::Buffer, vk::DeviceMemory), VkError> {
    let info = vk::BufferCreateInfo::default()
        .size(SCRATCH_BYTES)
        .usage(vk::BufferUsageFlags::STORAGE_BUFFER)
        .sharing_mode(vk::SharingMode::EXCLUSIVE);
    // SAFETY: plain object creation on a live device.
    let buffer = unsafe { raw.create_buffer(&info, None) }.call("vkCreateBuffer")?;
    // SAFETY: the buffer was just created on `raw`.
    let req = unsafe { raw.get_buffer_memory_requirements(buffer) };
    let allowed = |i: &usize| req.memory_type_bits & (1 << i) != 0;
    let local = (0..types.len())
        .filter(allowed)
        .find(|&i| types[i].flags.contains(vk::MemoryPropertyFlags::DEVICE_LOCAL));
    let made = local
        .or_else(|| (0..types.len()).find(allowed))
        .ok_or_else(|| VkError::from_result("vkAllocateMemory", vk::Result::ERROR_UNKNOWN))
        .and_then(|ty| {
            let alloc = vk::MemoryAllocateInfo::default()
                .allocation_size(req.size)
                .memory_type_index(ty as u32);
            // SAFETY: a type the buffer allows, of this device.
            let memory =
                unsafe { raw.allocate_memory(&alloc, None) }.call("vkAllocateMemory")?;
            // SAFETY: fresh memory of a type the buffer allows, at offset 0,
            // of its required size.
            match unsafe { raw.bind_buffer_memory(buffer, memory, 0) } {
                Ok(()) => Ok(memory),
                Err(r) => {
                    // SAFETY: allocated above, bound to nothing.
                    unsafe { raw.free_memory(memory, None) };
                    Err(VkError::from_result("vkBindBufferMemory", r))
                }
            }
        });
    match made {
        Ok(memory) => Ok((buffer, memory)),
        Err(e) => {
            // SAFETY: created above, bound to nothing that remains.
            unsafe { raw.destroy_buffer(buffer, None) };
            Err(e)
        }
    }
}

/// A descriptor set of `target`'s layout in a pool of its own, every
/// binding the scratch buffer whole.
///
/// # Safety
/// `target`'s set layout and `scratch` are live objects of `raw`.
unsafe fn scratch_set(
    raw: &ash::Device,
    target: &PrimeTarget<'_>,
    scratch: vk::Buffer,
) -> Result<(vk::DescriptorPool, vk::DescriptorSet), VkError> {
    let sizes = [vk::DescriptorPoolSize::default()
        .ty(vk::DescriptorType::STORAGE_BUFFER)
        .descriptor_count(target.bindings.len().max(1) as u32)];
    let pool_info = vk::DescriptorPoolCreateInfo::default()
        .max_sets(1)
        .pool_sizes(&sizes);
    // SAFETY: plain object creation on a live device.
    let pool =
        unsafe { raw.create_descriptor_pool(&pool_info, None) }.call("vkCreateDescriptorPool")?;
    let layouts = [target.set_layout];
    let alloc = vk::DescriptorSetAllocateInfo::default()
        .descriptor_pool(pool)
        .set_layouts(&layouts);
    // SAFETY: the pool has room for exactly this set.
    let set = match unsafe { raw.allocate_descriptor_sets(&alloc) } {
        Ok(s) => s[0],
        Err(r) => {
            // SAFETY: created above, unused.
            unsafe { raw.destroy_descriptor_pool(pool, None) };
            return Err(VkError::from_result("vkAllocateDescriptorSets", r));
        }
    };
    let info = [vk::DescriptorBufferInfo::default()
        .buffer(scratch)
        .offset(0)
        .range(vk::WHOLE_SIZE)];
    let writes: Vec<_> = target
        .bindings
        .iter()
        .map(|&b| {
            vk::WriteDescriptorSet::default()
                .dst_set(set)
                .dst_binding(b)
                .descriptor_type(vk::DescriptorType::STORAGE_BUFFER)
                .buffer_info(&info)
        })
        .collect();
    // SAFETY: a fresh set, in use by nothing; each binding of its layout
    // (a storage buffer, contract) gets the live scratch buffer.
    unsafe { raw.update_descriptor_sets(&writes, &[]) };
    Ok((pool, set))
}

/// Resets `cb` and begins a one-time recording.
///
/// # Safety
/// `cb` is a command buffer of `raw` from a pool that allows resetting it,
/// not pending, used by no other thread.
unsafe fn begin(raw: &ash::Device, cb: vk::CommandBuffer) -> Result<(), VkError> {
    let begin = vk::CommandBufferBeginInfo::default()
        .flags(vk::CommandBufferUsageFlags::ONE_TIME_SUBMIT);
    // SAFETY: per the function contract.
    unsafe {
        raw.reset_command_buffer(cb, vk::CommandBufferResetFlags::empty())
            .and_then(|_| raw.begin_command_buffer(cb, &begin))
    }
    .call("vkBeginCommandBuffer")
}

/// Records into `cb`: bind `target`'s pipeline and `set`, push zeros for
/// its push constants, dispatch zero work-groups.
///
/// # Safety
/// As [`begin`]; `target`'s objects and `set` (of its set layout, every
/// binding written) are live objects of `raw`.
unsafe fn record_dispatch(
    raw: &ash::Device,
    cb: vk::CommandBuffer,
    target: &PrimeTarget<'_>,
    set: vk::DescriptorSet,
) -> Result<(), VkError> {
    // SAFETY: per the function contract.
    unsafe { begin(raw, cb) }?;
    let zeros = vec![0u8; target.push_constant_bytes as usize];
    // SAFETY: the command buffer is recording; the pipeline, its layout
    // and the set (of that layout, fully written) are live. The push
    // constants cover the layout's one range exactly, so every push
    // constant the shader reads is set, and a dispatch of zero
    // work-groups runs no invocation.
    unsafe {
        raw.cmd_bind_pipeline(cb, vk::PipelineBindPoint::COMPUTE, target.pipeline);
        raw.cmd_bind_descriptor_sets(
            cb,
            vk::PipelineBindPoint::COMPUTE,
            target.layout,
            0,
            &[set],
            &[],
        );
        if !zeros.is_empty() {
            raw.cmd_push_constants(cb, target.layout, vk::ShaderStageFlags::COMPUTE, 0, &zeros);
        }
        raw.cmd_dispatch(cb, 0, 0, 0);
    }
    // SAFETY: the command buffer is recording.
    unsafe { raw.end_command_buffer(cb) }.call("vkEndCommandBuffer")
}
