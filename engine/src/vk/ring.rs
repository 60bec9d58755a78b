//! The dispatch ring: one command buffer per package in flight, re-recorded
//! and submitted for each package, its completion tracked by the device's
//! [`SyncMode`](super::SyncMode) (one timeline semaphore, or a fence per slot).

use super::timestamps::SlotStamps;
use super::{BindingSet, Completion, ComputePipeline, Device, GpuSpan, StampRead};
#[cfg(feature = "test-hooks")]
use super::gate::Gate;
use crate::error::{VkError, VkResultExt};
use ash::vk;
use std::sync::Arc;

/// One package's dispatch, as a [`DispatchRing`] records it: the
/// work-groups of each of its `groups` (one per part: a package stolen from
/// several CPU workers at once has several), with `pipeline`, `set` and
/// `push`.
#[derive(Clone, Copy)]
pub(crate) struct Dispatch<'a> {
    pub(crate) pipeline: &'a ComputePipeline,
    pub(crate) set: &'a BindingSet,
    pub(crate) push: &'a [u8],
    pub(crate) groups: &'a [Groups],
}

/// The work-groups of one GPU dispatch: up to three rectangles (a package
/// of a tiled 2-D run may start and end inside a row of work-groups), each
/// `(base, count)` in work-groups.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Groups {
    regions: [([u32; 3], [u32; 3]); 3],
    len: usize,
}

impl Groups {
    /// One rectangle.
    pub(crate) fn one(base: [u32; 3], count: [u32; 3]) -> Self {
        let mut g = Groups::none();
        g.push(base, count);
        g
    }

    /// No rectangle yet.
    pub(crate) fn none() -> Self {
        Groups {
            regions: [([0; 3], [0; 3]); 3],
            len: 0,
        }
    }

    /// Adds a rectangle.
    ///
    /// # Panics
    /// Past three.
    pub(crate) fn push(&mut self, base: [u32; 3], count: [u32; 3]) {
        self.regions[self.len] = (base, count);
        self.len += 1;
    }

    /// The rectangles, `(base, count)` each.
    pub(crate) fn regions(&self) -> &[([u32; 3], [u32; 3])] {
        &self.regions[..self.len]
    }
}

/// What a slot's command buffer was recorded with: a package of the same
/// pipeline, binding set (by its serial: a set's bindings never change, and
/// a serial is never reused), push constants and work-groups is resubmitted
/// as recorded.
#[derive(Clone, PartialEq, Eq)]
struct Recorded {
    pipeline: vk::Pipeline,
    set: u64,
    push: Vec<u8>,
    groups: Vec<Groups>,
}

impl Recorded {
    /// What `d` recorded, its push constants and work-groups copied into
    /// `buffers` (those of the slot's previous recording, so that
    /// re-recording a slot allocates nothing once they are large enough).
    fn of(d: &Dispatch<'_>, buffers: (Vec<u8>, Vec<Groups>)) -> Self {
        let (mut push, mut groups) = buffers;
        push.clear();
        push.extend_from_slice(d.push);
        groups.clear();
        groups.extend_from_slice(d.groups);
        Recorded {
            pipeline: d.pipeline.pipeline,
            set: d.set.serial,
            push,
            groups,
        }
    }

    fn matches(&self, d: &Dispatch<'_>) -> bool {
        self.pipeline == d.pipeline.pipeline
            && self.set == d.set.serial
            && self.push == d.push
            && self.groups == d.groups
    }
}

/// A ring of command buffers, one per in-flight package, signalling one
/// timeline semaphore (or a fence per slot). Nothing is allocated per
/// package: a slot's command buffer is re-recorded (a handful of commands),
/// or, for the same dispatch as its last one (a program's next run of a
/// kernel over the same buffers and range), resubmitted as it is: recording
/// took 40-60 us per package on the H200.
pub struct DispatchRing {
    device: Arc<Device>,
    pool: vk::CommandPool,
    cbs: Vec<vk::CommandBuffer>,
    /// What each slot's command buffer holds (`None`: nothing reusable).
    recorded: Vec<Option<Recorded>>,
    /// Absent in [`StampRead::Off`] mode.
    stamps: Option<SlotStamps>,
    /// Tracks each ticket's package; `None` only while the ring is being
    /// built.
    done: Option<Completion>,
}

/// The most slots (GPU packages in flight) a [`DispatchRing`] has: a deeper
/// ring is cut to this. Each slot holds a command buffer, two timestamp
/// queries and a fence value; a few packages in flight already hide the
/// submission gaps, and a depth near `u32::MAX` would allocate tens of GiB.
pub const MAX_IN_FLIGHT: usize = 64;

impl DispatchRing {
    /// Creates a ring with `depth` slots (packages in flight; 0 counts as 1,
    /// more than [`MAX_IN_FLIGHT`] as that many), reading
    /// timestamps back as [`StampRead::for_device`] chooses.
    pub fn new(device: Arc<Device>, depth: usize) -> Result<Self, VkError> {
        let read = StampRead::for_device(&device);
        Self::with_stamps(device, depth, read)
    }

    /// Creates a ring with `depth` slots reading timestamps back by `read`
    /// ([`StampRead::Off`] where the queue writes no timestamps).
    pub fn with_stamps(
        device: Arc<Device>,
        depth: usize,
        read: StampRead,
    ) -> Result<Self, VkError> {
        let read = if device.has_timestamps() {
            read
        } else {
            StampRead::Off
        };
        let raw = device.raw();
        let depth = depth.clamp(1, MAX_IN_FLIGHT);
        let pool_info = vk::CommandPoolCreateInfo::default()
            .flags(vk::CommandPoolCreateFlags::RESET_COMMAND_BUFFER)
            .queue_family_index(device.queue_family());
        // SAFETY: plain object creation on a live device.
        let pool =
            unsafe { raw.create_command_pool(&pool_info, None) }.call("vkCreateCommandPool")?;
        let mut ring = DispatchRing {
            device: device.clone(),
            pool,
            cbs: Vec::new(),
            recorded: Vec::new(),
            stamps: None,
            done: None,
        };
        let alloc = vk::CommandBufferAllocateInfo::default()
            .command_pool(pool)
            .level(vk::CommandBufferLevel::PRIMARY)
            .command_buffer_count(depth as u32);
        // SAFETY: the pool is live and owned by the ring.
        ring.cbs =
            unsafe { raw.allocate_command_buffers(&alloc) }.call("vkAllocateCommandBuffers")?;
        ring.recorded = vec![None; ring.cbs.len()];
        ring.stamps = SlotStamps::new(&device, depth, read)?;
        ring.done = Some(Completion::new(&device, depth)?);
        Ok(ring)
    }

    /// Number of slots.
    pub fn depth(&self) -> usize {
        self.cbs.len()
    }

    /// The ticket of the last submission (0: none yet).
    pub fn last_ticket(&self) -> u64 {
        self.done.as_ref().map_or(0, Completion::last)
    }

    /// How this ring reads timestamps back.
    pub fn stamp_read(&self) -> StampRead {
        self.stamps.as_ref().map_or(StampRead::Off, SlotStamps::mode)
    }

    /// Records and submits one package: `count` work-groups starting at
    /// work-group `base`. Returns its ticket.
    ///
    /// # Safety
    /// The slot reused by this submission is idle: the ticket `depth()`
    /// submissions back has completed (see [`DispatchRing::wait`]). `set` was
    /// made by `pipeline`, its buffers stay alive until this ticket
    /// completes, and `push` is exactly the pipeline's push-constant size.
    pub unsafe fn submit(
        &mut self,
        pipeline: &ComputePipeline,
        set: &BindingSet,
        push: &[u8],
        base: [u32; 3],
        count: [u32; 3],
    ) -> Result<u64, VkError> {
        let d = Dispatch {
            pipeline,
            set,
            push,
            groups: &[Groups::one(base, count)],
        };
        // SAFETY: function contract.
        unsafe { self.submit_after(d, None) }
    }

    /// [`DispatchRing::submit`] of `d`, once ticket `after.1` of `after.0`
    /// completed where given (a separate transfer queue's upload: the
    /// dispatch waits for it on the device, at the compute-shader stage).
    ///
    /// # Safety
    /// As for [`DispatchRing::submit`]; `after`'s completion is one of
    /// timeline semaphores of this device that outlives the submission.
    pub(crate) unsafe fn submit_after(
        &mut self,
        d: Dispatch<'_>,
        after: Option<(&Completion, u64)>,
    ) -> Result<u64, VkError> {
        let ticket = self.last_ticket() + 1;
        // Timed only where traced: this is every package's path.
        let recording = tracing::enabled!(tracing::Level::TRACE).then(std::time::Instant::now);
        // SAFETY: the slot is idle and `d` is valid (function contract).
        let cb = unsafe { self.record_or_reuse(ticket, d)? };
        if let Some(t) = recording {
            let record_us = t.elapsed().as_secs_f64() * 1e6;
            tracing::trace!(record_us, "package recorded");
        }
        // SAFETY: `cb` is fully recorded and not pending (slot idle: so is
        // the slot's fence, with fences; the ring has `depth` of each); the
        // completion is the ring's own, which outlives its submissions (Drop
        // drains them first); `after`'s per the contract. A timeline wait
        // is the device's: the call cannot time out.
        let submitted = unsafe { self.completion_mut().submit(cb, after, 0)? };
        Ok(submitted.unwrap_or(ticket))
    }

    fn completion_mut(&mut self) -> &mut Completion {
        self.done.as_mut().expect("a built ring has its completion")
    }

    /// The command buffer of `ticket`'s slot holding `d`, ready to submit:
    /// as the slot last recorded it where that was `d`, else re-recorded.
    ///
    /// # Safety
    /// As for [`DispatchRing::record`].
    unsafe fn record_or_reuse(
        &mut self,
        ticket: u64,
        d: Dispatch<'_>,
    ) -> Result<vk::CommandBuffer, VkError> {
        let slot = (ticket as usize) % self.cbs.len();
        if self.recorded[slot].as_ref().is_some_and(|r| r.matches(&d)) {
            // The slot's queries are reset on the host, as a recording
            // does; the commands are as recorded (and every object they
            // name is alive: `d` names the same ones, per the contract).
            if let Some(stamps) = &self.stamps {
                // SAFETY: the slot is idle (function contract).
                unsafe { stamps.clear(slot) };
            }
            return Ok(self.cbs[slot]);
        }
        let buffers = self.recorded[slot]
            .take()
            .map(|r| (r.push, r.groups))
            .unwrap_or_default();
        // SAFETY: function contract.
        let cb = unsafe { self.record(ticket, Some(d))? };
        self.recorded[slot] = Some(Recorded::of(&d, buffers));
        Ok(cb)
    }

    /// Re-records the command buffer of `ticket`'s slot with `dispatch` (or
    /// with nothing, where `None`) and returns it, ready to submit.
    ///
    /// # Safety
    /// The slot is idle, and `dispatch` obeys the contract of
    /// [`DispatchRing::submit`].
    unsafe fn record(
        &mut self,
        ticket: u64,
        dispatch: Option<Dispatch<'_>>,
    ) -> Result<vk::CommandBuffer, VkError> {
        let raw = self.device.raw();
        let slot = (ticket as usize) % self.cbs.len();
        let cb = self.cbs[slot];
        // Whatever happens next, the slot holds nothing reusable until a
        // recording of a dispatch completes (see `record_or_reuse`).
        self.recorded[slot] = None;
        // Not one-time: a slot's recording may be submitted again.
        let begin = vk::CommandBufferBeginInfo::default();
        let r = {
            // SAFETY: the caller guarantees the slot is idle, so resetting and
            // re-recording its command buffer is allowed (the pool was created
            // with RESET_COMMAND_BUFFER).
            unsafe {
                raw.reset_command_buffer(cb, vk::CommandBufferResetFlags::empty())
                    .and_then(|_| raw.begin_command_buffer(cb, &begin))
            }
        };
        self.device.check(r.call("vkBeginCommandBuffer"))?;
        // The queries are reset here on the host, not by a command: a reset
        // command would sit on the device between this package and the one
        // before it. A slot recorded empty writes no stamps, so they read as
        // "no span".
        if let Some(stamps) = &self.stamps {
            // SAFETY: the slot is idle (function contract).
            unsafe { stamps.clear(slot) };
        }
        if let Some(d) = dispatch {
            // SAFETY: `cb` is recording; `d` is valid (function contract).
            unsafe { self.record_dispatch(cb, slot, d) };
        }
        // SAFETY: `cb` is recording.
        let r = unsafe { raw.end_command_buffer(cb) }.call("vkEndCommandBuffer");
        self.device.check(r)?;
        Ok(cb)
    }

    /// Records one package's commands into `cb`: its stamps, the dispatch,
    /// and the barriers that make its writes visible to the host.
    ///
    /// # Safety
    /// `cb` is the recording command buffer of the idle `slot`; `d` obeys
    /// the contract of [`DispatchRing::submit`].
    unsafe fn record_dispatch(&self, cb: vk::CommandBuffer, slot: usize, d: Dispatch<'_>) {
        let raw = self.device.raw();
        let barrier = vk::MemoryBarrier::default()
            .src_access_mask(vk::AccessFlags::SHADER_WRITE)
            .dst_access_mask(vk::AccessFlags::HOST_READ);
        // SAFETY: `cb` is in the recording state; see the function contract
        // for the pipeline, set and push-constant size.
        unsafe {
            if let Some(stamps) = &self.stamps {
                stamps.record_start(cb, slot);
            }
            raw.cmd_bind_pipeline(cb, vk::PipelineBindPoint::COMPUTE, d.pipeline.pipeline);
            raw.cmd_bind_descriptor_sets(
                cb,
                vk::PipelineBindPoint::COMPUTE,
                d.pipeline.layout,
                0,
                &[d.set.set],
                &[],
            );
            if !d.push.is_empty() {
                raw.cmd_push_constants(
                    cb,
                    d.pipeline.layout,
                    vk::ShaderStageFlags::COMPUTE,
                    0,
                    d.push,
                );
            }
            for &(base, count) in d.groups.iter().flat_map(Groups::regions) {
                // A package from the origin needs no base (the pipeline
                // allows one; a plain dispatch is what most programs
                // record). The rectangles of one package (of all its
                // parts) are disjoint: no barrier between them.
                if base == [0; 3] {
                    raw.cmd_dispatch(cb, count[0], count[1], count[2]);
                } else {
                    raw.cmd_dispatch_base(
                        cb, base[0], base[1], base[2], count[0], count[1], count[2],
                    );
                }
            }
            // Make the shader's writes visible to the host once the timeline
            // signal is observed.
            raw.cmd_pipeline_barrier(
                cb,
                vk::PipelineStageFlags::COMPUTE_SHADER,
                vk::PipelineStageFlags::HOST,
                vk::DependencyFlags::empty(),
                &[barrier],
                &[],
                &[],
            );
            if let Some(stamps) = &self.stamps {
                stamps.record_end(cb, slot);
            }
        }
    }

    /// The ring's completion tracking: ticket `t` is its `t`-th package.
    pub(crate) fn completion(&self) -> &Completion {
        self.done.as_ref().expect("a built ring has its completion")
    }

    /// Waits until `ticket` completed; `Ok(false)` on timeout.
    pub fn wait(&self, ticket: u64, timeout_ns: u64) -> Result<bool, VkError> {
        self.completion().wait(ticket, timeout_ns)
    }

    /// `true` once `ticket` completed (does not block).
    pub fn is_complete(&self, ticket: u64) -> Result<bool, VkError> {
        self.completion().is_complete(ticket)
    }

    /// The GPU span of `ticket`; `None` when the queue has no timestamps,
    /// when the ticket has not completed yet, and when its slot was reused
    /// since (only the last `depth()` tickets are kept).
    pub fn span(&self, ticket: u64) -> Result<Option<GpuSpan>, VkError> {
        let Some(stamps) = &self.stamps else {
            return Ok(None);
        };
        let last = self.last_ticket();
        if ticket == 0
            || ticket > last
            || last - ticket >= self.cbs.len() as u64
            || !self.is_complete(ticket)?
        {
            return Ok(None);
        }
        let slot = (ticket as usize) % self.cbs.len();
        // SAFETY: the ticket completed (checked above, on the timeline its
        // submission signals), and no later ticket reuses its slot (checked
        // above: it is among the last `depth` submissions, and only
        // `&mut self` submits).
        unsafe { stamps.span(slot) }
    }

    /// Submits a package that waits behind `gate` until the host opens it
    /// and then runs `dispatch` (or nothing, where `None`): a GPU hang that
    /// can be ended, after which the package really writes its outputs.
    /// Test hook.
    ///
    /// (A timeline wait is a real blocking wait in every driver; lavapipe's
    /// `vkCmdWaitEvents` spins on a plain field and may never see the set.
    /// Without timelines the gate holds the submission back instead.)
    ///
    /// # Safety
    /// As for [`DispatchRing::submit`] (idle slot, valid dispatch); `gate`
    /// is a closed gate of this device that the caller opens before
    /// dropping it.
    #[cfg(feature = "test-hooks")]
    pub(crate) unsafe fn submit_blocked(
        &mut self,
        gate: &Gate,
        dispatch: Option<Dispatch<'_>>,
    ) -> Result<u64, VkError> {
        let ticket = self.last_ticket() + 1;
        let (Some(blocker), Some(timeline)) = (gate.timeline(), self.completion().timeline())
        else {
            // SAFETY: the slot is idle and `dispatch` is valid (contract).
            let cb = unsafe { self.record(ticket, dispatch)? };
            // SAFETY: the slot is idle (contract), so is its fence.
            let (ticket, fence) = unsafe { self.completion_mut().take_fence()? };
            // SAFETY: `cb` is fully recorded and idle, `fence` unsignalled
            // and unused; both live as long as the ring, which waits for
            // its tickets before it goes (the gate is opened first: contract).
            unsafe { gate.hold(cb, fence)? };
            return Ok(ticket);
        };
        let signal = timeline.raw();
        // SAFETY: the slot is idle and `dispatch` is valid (contract).
        let cb = unsafe { self.record(ticket, dispatch)? };
        let cbs = [cb];
        let waits = [blocker.raw()];
        let wait_values = [1u64];
        let stages = [vk::PipelineStageFlags::COMPUTE_SHADER];
        let signals = [signal];
        let signal_values = [ticket];
        let mut timeline = vk::TimelineSemaphoreSubmitInfo::default()
            .wait_semaphore_values(&wait_values)
            .signal_semaphore_values(&signal_values);
        let submit = vk::SubmitInfo::default()
            .wait_semaphores(&waits)
            .wait_dst_stage_mask(&stages)
            .command_buffers(&cbs)
            .signal_semaphores(&signals)
            .push_next(&mut timeline);
        // SAFETY: `cb` is fully recorded and not pending (slot idle); the
        // gate outlives the submission (caller) and the ring's timeline
        // does (Drop drains first); the ticket is one more than the last
        // signalled value. The queue is only used by this ring's owner during
        // a run (the engine holds the ring's mutex), as for `Device::submit`.
        unsafe { self.device.submit_raw(&[submit])? };
        self.completion_mut().submitted_elsewhere(ticket);
        Ok(ticket)
    }

    /// Waits for everything submitted, up to `timeout_ns`; `Ok(false)` on timeout.
    pub fn drain(&self, timeout_ns: u64) -> Result<bool, VkError> {
        match &self.done {
            Some(done) if done.last() > 0 => done.wait(done.last(), timeout_ns),
            _ => Ok(true),
        }
    }
}

impl Drop for DispatchRing {
    fn drop(&mut self) {
        // Never destroy objects the GPU may still use: wait (bounded) first;
        // if the wait fails (device lost) or times out, wait for the whole
        // device, which returns once nothing is pending or the device is lost.
        if !matches!(self.drain(10_000_000_000), Ok(true)) {
            let _ = self.device.wait_idle();
        }
        // No submission of this ring is pending any more (see above): the
        // completion and the stamps go with the fields, after this.
        // SAFETY: as above: nothing pending uses the pool's command buffers.
        unsafe { self.device.raw().destroy_command_pool(self.pool, None) };
    }
}

