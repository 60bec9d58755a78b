//! Staged transfers between host buffers and their device-local mirrors:
//! batches of copies recorded into a ring of command buffers and submitted
//! to the device's transfer queue (see [`super::queues`]: a dedicated one,
//! or the compute queue) without waiting, each signalling the next value of
//! one timeline, so that uploads and downloads queue up with the packages'
//! dispatches (package k's download overlaps package k + 1's compute).
//!
//! Ordering on the compute queue: an upload batch ends with a barrier from
//! its copies to every later compute shader, so a dispatch submitted after
//! it reads what it copied; a download waits (timeline) for the package it
//! brings back, and ends with a barrier to host reads, made visible by the
//! host's wait for its value. Uploads only write mirror bytes no earlier
//! shader of the run touched (bytes not valid in the mirror, which no
//! earlier package read or wrote), so nothing orders them after earlier
//! dispatches of the run; those of earlier runs come before the batch
//! [`Stager::after_dispatches`] submitted at the end of each run.
//!
//! On a separate transfer queue the semaphores carry every dependency (the
//! dispatch loop makes each dispatch wait for the last upload batch): the
//! upload batches end with no barrier to the compute stage (a transfer-only
//! queue has none).
//!
//! On a device without timeline semaphores ([`super::SyncMode::Fences`])
//! a batch's completion is a fence, and a download's wait for its package
//! is the host's, before submitting (the dispatch loop submits a download
//! once it saw its package complete, so that wait does not block).

use super::queues::QueueLane;
use super::{Completion, Device};
use crate::sched::transfers::TransferRates;
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

impl Direction {
    /// The direction as the cost model names it.
    pub(crate) fn way(self) -> crate::sched::transfers::Way {
        match self {
            Direction::Upload => crate::sched::transfers::Way::Up,
            Direction::Download => crate::sched::transfers::Way::Down,
        }
    }
}

/// Command buffers in the ring: batches that may be pending at once.
const SLOTS: usize = 8;

/// A ring of command buffers and their completion tracking for transfer
/// batches on one device: batch `v` (from 1) is recorded into slot
/// `v % SLOTS` and signals ticket `v` of [`Completion`] when it completes.
pub(crate) struct Stager {
    device: Arc<Device>,
    /// The queue it submits to: [`QueueLane::Transfer`] or
    /// [`QueueLane::ComputeCopies`].
    lane: QueueLane,
    pool: vk::CommandPool,
    cbs: Vec<vk::CommandBuffer>,
    done: Completion,
    /// The device's transfer bandwidth, learned from the batches.
    rates: Arc<TransferRates>,
    /// The highest dispatch ticket a batch waited for (separate queues).
    covered: u64,
    /// The value of the last batch that copied anything (0: none): those
    /// after it are [`Stager::after_dispatches`]' empty ones.
    copied: u64,
}

impl Stager {
    /// A stager on `device`'s transfer queue (its compute queue where it
    /// has no other) for `lane` [`QueueLane::Transfer`], on its compute
    /// queue for [`QueueLane::ComputeCopies`] (the two lanes of transfers).
    pub(crate) fn new(device: Arc<Device>, lane: QueueLane) -> Result<Self, VkError> {
        debug_assert_ne!(lane, QueueLane::Compute, "dispatches' lane");
        let family = if lane == QueueLane::Transfer {
            device.transfer_family()
        } else {
            device.queue_family()
        };
        let raw = device.raw();
        let pool_info = vk::CommandPoolCreateInfo::default()
            .flags(vk::CommandPoolCreateFlags::RESET_COMMAND_BUFFER)
            .queue_family_index(family);
        // SAFETY: plain object creation on a live device.
        let pool =
            unsafe { raw.create_command_pool(&pool_info, None) }.call("vkCreateCommandPool")?;
        let alloc = vk::CommandBufferAllocateInfo::default()
            .command_pool(pool)
            .level(vk::CommandBufferLevel::PRIMARY)
            .command_buffer_count(SLOTS as u32);
        // SAFETY: the pool is live; on failure it is destroyed unused.
        let cbs = match unsafe { raw.allocate_command_buffers(&alloc) } {
            Ok(cbs) => cbs,
            Err(r) => {
                // SAFETY: created above, nothing allocated from it.
                unsafe { raw.destroy_command_pool(pool, None) };
                return Err(VkError::from_result("vkAllocateCommandBuffers", r));
            }
        };
        let done = match Completion::on(&device, SLOTS, lane) {
            Ok(d) => d,
            Err(e) => {
                // SAFETY: created above, never submitted.
                unsafe { raw.destroy_command_pool(pool, None) };
                return Err(e);
            }
        };
        Ok(Stager {
            device,
            lane,
            pool,
            cbs,
            done,
            rates: Arc::default(),
            covered: 0,
            copied: 0,
        })
    }

    /// Records `copies` between the barriers of `direction` and submits
    /// them (after `after`, a completion and the ticket to wait for, where
    /// given: on the device with timelines, on the host with fences) without
    /// waiting for them: the value the batch signals. Waits up to
    /// `timeout_ns` for the batch that last used the command buffer (and,
    /// with fences, for `after`); `Ok(None)` when it did not end in time
    /// (nothing was submitted).
    ///
    /// # Safety
    /// Every buffer of `copies` belongs to this device, is large enough
    /// for its copy, was created with the transfer usage its role needs,
    /// and stays alive until the batch completed; `after`'s completion
    /// belongs to this device and outlives the batch.
    pub(crate) unsafe fn submit(
        &mut self,
        direction: Direction,
        copies: &[Copy],
        after: Option<(&Completion, u64)>,
        timeout_ns: u64,
    ) -> Result<Option<u64>, VkError> {
        let value = self.done.last() + 1;
        let reuse = value.saturating_sub(SLOTS as u64);
        // The slot is idle once the batch that last used it completed.
        if reuse > 0 && !self.done.wait(reuse, timeout_ns)? {
            return Ok(None);
        }
        let cb = self.cbs[(value % SLOTS as u64) as usize];
        // SAFETY: the command buffer is idle (above); the copies obey the
        // function contract.
        unsafe { self.record(cb, direction, copies)? };
        // SAFETY: the command buffer is fully recorded and idle (so is its
        // slot's fence, with fences: the completion has SLOTS of them and
        // slot `value % SLOTS`'s last batch completed, above); both
        // completions belong to this device and outlive the batch (ours is
        // a field, dropped after Drop waits; `after`'s per the contract).
        let r = unsafe { self.done.submit(cb, after, timeout_ns) };
        if let (Ok(Some(_)), Some((_, v))) = (&r, after) {
            self.covered = self.covered.max(v);
        }
        if let (Ok(Some(value)), true) = (&r, copies.iter().any(|c| c.bytes > 0)) {
            self.copied = *value;
        }
        r
    }

    /// At the end of a run on a separate transfer queue: where no batch
    /// waited for dispatch ticket `last` of `ring` (the run's last), submits
    /// an empty batch that does, so that every later batch follows the
    /// run's dispatches (see [`super::queues`]). `Ok(false)`: it could not
    /// be submitted in time.
    ///
    /// # Safety
    /// `ring` is the completion of this device's dispatch ring, which
    /// outlives the batch.
    pub(crate) unsafe fn after_dispatches(
        &mut self,
        ring: &Completion,
        last: u64,
        timeout_ns: u64,
    ) -> Result<bool, VkError> {
        if !self.separate() || last <= self.covered {
            return Ok(true);
        }
        // SAFETY: no copies; `ring` per the contract.
        let r = unsafe { self.submit(Direction::Download, &[], Some((ring, last)), timeout_ns)? };
        Ok(r.is_some())
    }

    /// The device.
    pub(crate) fn device(&self) -> &Arc<Device> {
        &self.device
    }

    /// Whether batches are ordered with dispatches by semaphores alone.
    pub(crate) fn separate(&self) -> bool {
        self.lane == QueueLane::Transfer && self.device.separate_transfers()
    }

    /// The completion of the batches: a dispatch waits for an upload's
    /// value on it.
    pub(crate) fn completion(&self) -> &Completion {
        &self.done
    }

    /// The value of the batch submitted last (0: none).
    pub(crate) fn last(&self) -> u64 {
        self.done.last()
    }

    /// The value of the last batch that copied anything (0: none). The
    /// batches after it are empty ones that only order later batches
    /// after dispatches ([`Stager::after_dispatches`]): they touch no
    /// buffer, so nothing waits for them but the next batch on their
    /// command buffers.
    pub(crate) fn last_copies(&self) -> u64 {
        self.copied
    }

    /// Waits up to `timeout_ns` for batch `value`; `Ok(false)` on timeout.
    pub(crate) fn wait(&self, value: u64, timeout_ns: u64) -> Result<bool, VkError> {
        self.done.wait(value, timeout_ns)
    }

    /// Whether batch `value` completed (without waiting).
    pub(crate) fn reached(&self, value: u64) -> Result<bool, VkError> {
        self.done.is_complete(value)
    }

    /// The device's transfer bandwidth per direction.
    pub(crate) fn rates(&self) -> &Arc<TransferRates> {
        &self.rates
    }

    /// The stager, learning into `rates` (another stager's of the same
    /// device) instead of its own.
    pub(crate) fn sharing(mut self, rates: Arc<TransferRates>) -> Self {
        self.rates = rates;
        self
    }

    /// Waits up to `timeout_ns` for the last batch; `Ok(false)` on timeout.
    pub(crate) fn drain(&self, timeout_ns: u64) -> Result<bool, VkError> {
        self.done.wait(self.done.last(), timeout_ns)
    }

    /// Records the batch into the idle command buffer `cb`.
    ///
    /// # Safety
    /// As for [`Stager::submit`], and `cb` is one of ours and idle.
    unsafe fn record(
        &self,
        cb: vk::CommandBuffer,
        direction: Direction,
        copies: &[Copy],
    ) -> Result<(), VkError> {
        let raw = self.device.raw();
        let begin = vk::CommandBufferBeginInfo::default()
            .flags(vk::CommandBufferUsageFlags::ONE_TIME_SUBMIT);
        // SAFETY: the command buffer is idle (contract); its pool allows
        // resetting it.
        let r = unsafe {
            raw.reset_command_buffer(cb, vk::CommandBufferResetFlags::empty())
                .and_then(|_| raw.begin_command_buffer(cb, &begin))
        };
        self.device.check(r.call("vkBeginCommandBuffer"))?;
        let (before, after) = barriers(direction, self.separate());
        // SAFETY: the command buffer is recording; each copy names live
        // buffers of this device within their sizes (contract).
        unsafe {
            barrier(raw, cb, before);
            for c in copies.iter().filter(|c| c.bytes > 0) {
                let region = vk::BufferCopy::default()
                    .src_offset(c.offset)
                    .dst_offset(c.offset)
                    .size(c.bytes);
                raw.cmd_copy_buffer(cb, c.src, c.dst, &[region]);
            }
            barrier(raw, cb, after);
        }
        // SAFETY: the command buffer is recording.
        let r = unsafe { raw.end_command_buffer(cb) }.call("vkEndCommandBuffer");
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

/// The barriers before and after a batch's copies; `separate`: on a
/// separate transfer queue, where semaphores order the copies with the
/// shaders (a transfer-only queue has no compute stage to name).
fn barriers(direction: Direction, separate: bool) -> (Barrier, Barrier) {
    use vk::AccessFlags as A;
    use vk::PipelineStageFlags as S;
    let chain = (
        S::TRANSFER,
        A::TRANSFER_WRITE,
        S::TRANSFER,
        A::TRANSFER_READ | A::TRANSFER_WRITE,
    );
    match direction {
        Direction::Upload if separate => (chain, chain),
        // Earlier copies finish before these (no earlier shader touches the
        // bytes an upload writes: see the module's notes); the copies'
        // writes reach every later shader.
        Direction::Upload => (
            (
                S::TRANSFER,
                A::TRANSFER_WRITE,
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

#[cfg(test)]
mod tests {
    /// A stager tells the last batch that copied anything from the empty
    /// ones after it (the closing batches a run no longer waits for).
    #[test]
    fn the_last_batch_that_copied_is_told_from_empty_ones() {
        use super::*;
        let Some(e) = crate::test_engines::staged() else {
            return;
        };
        let mut stager = Stager::new(e.device().clone(), QueueLane::ComputeCopies).unwrap();
        let (mut a, b) = (e.buffer::<u32>(64).unwrap(), e.buffer::<u32>(64).unwrap());
        a.iter_mut().enumerate().for_each(|(i, v)| *v = i as u32);
        let copy = Copy {
            src: a.raw().handle(),
            dst: b.raw().handle(),
            offset: 0,
            bytes: 256,
        };
        let ns = 10_000_000_000;
        let submit = |stager: &mut Stager, copies: &[Copy]| {
            // SAFETY: both buffers are the engine's staged host buffers of
            // this device (transfer usage), 256 bytes long, alive until
            // the batch is waited for below.
            let v = unsafe { stager.submit(Direction::Download, copies, None, ns) };
            let v = v.unwrap().unwrap();
            assert!(stager.wait(v, ns).unwrap());
            v
        };
        assert_eq!((stager.last(), stager.last_copies()), (0, 0));
        assert_eq!(submit(&mut stager, &[]), 1);
        assert_eq!(stager.last_copies(), 0);
        let copied = submit(&mut stager, &[copy]);
        assert_eq!(stager.last_copies(), copied);
        let empty = submit(&mut stager, &[]);
        assert_eq!((stager.last(), stager.last_copies()), (empty, copied));
        assert!(b.iter().enumerate().all(|(i, &v)| v == i as u32));
        assert_eq!(e.validation_errors(), 0, "{:?}", e.validation_messages());
    }
}
