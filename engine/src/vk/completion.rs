//! Completion tracking, chosen once per device: how the host (and later
//! submissions) learn that a submitted command buffer completed.
//!
//! - [`SyncMode::Timeline`]: a timeline semaphore (core in Vulkan 1.2);
//! - [`SyncMode::TimelineKhr`]: the same through `VK_KHR_timeline_semaphore`
//!   on a Vulkan 1.1 device;
//! - [`SyncMode::Fences`]: no timeline semaphores; one fence per in-flight
//!   slot, and a submission that must follow another one waits for it on
//!   the host before it is submitted.
//!
//! [`Completion`] numbers the submissions of one owner (a dispatch ring, a
//! stager) 1, 2, ... as *tickets*, and answers "has ticket `t` completed?"
//! the same way in every mode.

use super::queues::QueueLane;
use super::{Device, PhysicalDeviceInfo, Timeline};
use crate::error::{VkError, VkResultCode, VkResultExt};
use ash::vk;
use std::sync::Arc;

/// How a device's submissions signal their completion.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SyncMode {
    /// Timeline semaphores, core in Vulkan 1.2.
    Timeline,
    /// Timeline semaphores of `VK_KHR_timeline_semaphore` (Vulkan 1.1).
    TimelineKhr,
    /// A fence per in-flight slot (Vulkan 1.1 without timeline semaphores).
    Fences,
}

impl SyncMode {
    /// The mode a device with the facts `info` uses: timelines where it
    /// offers them, else fences.
    pub fn for_device(info: &PhysicalDeviceInfo) -> SyncMode {
        if info.api_version >= vk::API_VERSION_1_2 {
            // Vulkan 1.2 requires the timelineSemaphore feature.
            SyncMode::Timeline
        } else if info.timeline_semaphore_khr {
            SyncMode::TimelineKhr
        } else {
            SyncMode::Fences
        }
    }

    /// `true` for the two timeline-semaphore modes.
    pub fn has_timelines(self) -> bool {
        self != SyncMode::Fences
    }
}

impl std::fmt::Display for SyncMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            SyncMode::Timeline => "timeline semaphores",
            SyncMode::TimelineKhr => "timeline semaphores (VK_KHR_timeline_semaphore)",
            SyncMode::Fences => "fences",
        })
    }
}

/// A testing aid: makes a device look older than it is, so that the
/// fallbacks for older drivers run (and are validated) on a current one.
/// The environment variable `COEXEC_EMULATE_DRIVER=native|vulkan1.1|no-timelines`
/// overrides [`EngineOptions::driver`](crate::EngineOptions::driver).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DriverEmulation {
    /// The device as it is.
    #[default]
    Native,
    /// Vulkan 1.1 with `VK_KHR_timeline_semaphore` (where the device has it).
    Vulkan11,
    /// Vulkan 1.1 without timeline semaphores: fences.
    NoTimelines,
}

impl DriverEmulation {
    /// `COEXEC_EMULATE_DRIVER` where set to a valid value (an invalid one
    /// is ignored with a warning).
    pub fn from_env() -> Option<DriverEmulation> {
        let v = std::env::var("COEXEC_EMULATE_DRIVER").ok()?;
        match v.parse() {
            Ok(e) => Some(e),
            Err(why) => {
                tracing::warn!("COEXEC_EMULATE_DRIVER ignored: {why}");
                None
            }
        }
    }

    /// The highest Vulkan version the instance may use under it.
    pub fn api_cap(self) -> u32 {
        match self {
            DriverEmulation::Native => vk::API_VERSION_1_3,
            DriverEmulation::Vulkan11 | DriverEmulation::NoTimelines => vk::API_VERSION_1_1,
        }
    }

    /// `info` as the emulated driver reports it.
    pub fn apply(self, info: &mut PhysicalDeviceInfo) {
        if self == DriverEmulation::Native {
            return;
        }
        info.api_version = info.api_version.min(vk::API_VERSION_1_1);
        // maintenance4 is Vulkan 1.3; the memory budget extension is kept.
        info.maintenance4 = false;
        if self == DriverEmulation::NoTimelines {
            info.timeline_semaphore_khr = false;
        }
    }
}

impl std::str::FromStr for DriverEmulation {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "native" => Ok(DriverEmulation::Native),
            "vulkan1.1" => Ok(DriverEmulation::Vulkan11),
            "no-timelines" => Ok(DriverEmulation::NoTimelines),
            other => Err(format!(
                "{other:?} is not native, vulkan1.1 or no-timelines"
            )),
        }
    }
}

/// What signals completion in each mode.
enum Signal {
    Timeline(Timeline),
    /// One fence per slot; ticket `t` signals fence `t % len`.
    Fences(Vec<vk::Fence>),
}

/// The completion of one owner's submissions, numbered 1, 2, ... (tickets).
pub(crate) struct Completion {
    device: Arc<Device>,
    signal: Signal,
    last: u64,
    /// The queue its submissions go to.
    lane: QueueLane,
}

impl Completion {
    /// Tracks submissions on `device`, at most `slots` of them in flight
    /// (fences only: a timeline tracks any number).
    pub(crate) fn new(device: &Arc<Device>, slots: usize) -> Result<Self, VkError> {
        Self::on(device, slots, QueueLane::Compute)
    }

    /// As [`Completion::new`], for submissions to the queue of `lane`.
    pub(crate) fn on(
        device: &Arc<Device>,
        slots: usize,
        lane: QueueLane,
    ) -> Result<Self, VkError> {
        let signal = if device.sync_mode().has_timelines() {
            Signal::Timeline(Timeline::new(device, 0)?)
        } else {
            let mut fences = Vec::with_capacity(slots.max(1));
            let info = vk::FenceCreateInfo::default().flags(vk::FenceCreateFlags::SIGNALED);
            for _ in 0..slots.max(1) {
                // SAFETY: plain object creation on a live device.
                match unsafe { device.raw().create_fence(&info, None) }.call("vkCreateFence") {
                    Ok(f) => fences.push(f),
                    Err(e) => {
                        destroy_fences(device, &fences);
                        return Err(e);
                    }
                }
            }
            Signal::Fences(fences)
        };
        Ok(Completion {
            device: device.clone(),
            signal,
            last: 0,
            lane,
        })
    }

    /// The ticket of the last submission (0: none yet).
    pub(crate) fn last(&self) -> u64 {
        self.last
    }

    /// The timeline semaphore, in the timeline modes.
    pub(crate) fn timeline(&self) -> Option<&Timeline> {
        match &self.signal {
            Signal::Timeline(t) => Some(t),
            Signal::Fences(_) => None,
        }
    }

    /// Submits `cb` as the next ticket, once ticket `after.1` of `after.0`
    /// completed (where given); returns the ticket, or `None` when `after`
    /// did not complete within `timeout_ns` (fences: the host waits for it;
    /// nothing was submitted then).
    ///
    /// # Safety
    /// `cb` is a fully recorded primary command buffer of this device that
    /// is not pending, and stays alive until its ticket completed; with
    /// fences, the ticket `slots` submissions back completed (its fence is
    /// reused); `after`'s completion belongs to this device and outlives
    /// the submission.
    pub(crate) unsafe fn submit(
        &mut self,
        cb: vk::CommandBuffer,
        after: Option<(&Completion, u64)>,
        timeout_ns: u64,
    ) -> Result<Option<u64>, VkError> {
        let ticket = self.last + 1;
        match &self.signal {
            Signal::Timeline(t) => {
                let wait = after.and_then(|(c, v)| c.timeline().map(|t| (t, v)));
                // SAFETY: the contract, and the ticket exceeds every earlier
                // signal of this timeline.
                unsafe { self.device.submit_after(self.lane, cb, wait, t, ticket)? };
            }
            Signal::Fences(fences) => {
                if let Some((c, v)) = after {
                    if !c.wait(v, timeout_ns)? {
                        return Ok(None);
                    }
                }
                let fence = fences[(ticket % fences.len() as u64) as usize];
                // SAFETY: the fence's last submission completed (contract),
                // and `&mut self` makes this the only user of the fence.
                let r = unsafe { self.device.raw().reset_fences(&[fence]) }.call("vkResetFences");
                self.device.check(r)?;
                // SAFETY: the contract; the fence is unsignalled and not
                // used by a pending submission (reset above).
                unsafe { self.device.submit_fenced(cb, fence)? };
            }
        }
        self.last = ticket;
        Ok(Some(ticket))
    }

    /// Counts `ticket`, the next one, as submitted by a raw submission that
    /// signals [`Completion::timeline`] to it (test hooks).
    #[cfg(feature = "test-hooks")]
    pub(crate) fn submitted_elsewhere(&mut self, ticket: u64) {
        debug_assert_eq!(ticket, self.last + 1);
        self.last = ticket;
    }

    /// Takes the next ticket without submitting it, with fences: resets
    /// its fence and returns it, for a submission made later (test hooks).
    ///
    /// # Safety
    /// As for [`Completion::submit`]: the fence's last submission completed.
    #[cfg(feature = "test-hooks")]
    pub(crate) unsafe fn take_fence(&mut self) -> Result<(u64, vk::Fence), VkError> {
        let Signal::Fences(fences) = &self.signal else {
            return Err(no_timelines("take_fence (a timeline completion)"));
        };
        let ticket = self.last + 1;
        let fence = fences[(ticket % fences.len() as u64) as usize];
        // SAFETY: the fence's last submission completed (contract), and
        // `&mut self` makes this the only user of the fence.
        let r = unsafe { self.device.raw().reset_fences(&[fence]) }.call("vkResetFences");
        self.device.check(r)?;
        self.last = ticket;
        Ok((ticket, fence))
    }

    /// Waits until `ticket` completed; `Ok(false)` on timeout (at once
    /// for a ticket not submitted yet, with fences).
    pub(crate) fn wait(&self, ticket: u64, timeout_ns: u64) -> Result<bool, VkError> {
        match &self.signal {
            Signal::Timeline(t) => t.wait(ticket, timeout_ns),
            Signal::Fences(fences) => {
                let Some(fence) = self.fence_of(fences, ticket) else {
                    return Ok(ticket <= self.last);
                };
                // SAFETY: a live fence of this device (owned by `self`).
                match unsafe { self.device.raw().wait_for_fences(&[fence], true, timeout_ns) } {
                    Ok(()) => Ok(true),
                    Err(vk::Result::TIMEOUT) => Ok(false),
                    Err(r) => self
                        .device
                        .check(Err(VkError::from_result("vkWaitForFences", r))),
                }
            }
        }
    }

    /// `true` once `ticket` completed (does not block).
    pub(crate) fn is_complete(&self, ticket: u64) -> Result<bool, VkError> {
        match &self.signal {
            Signal::Timeline(t) => Ok(t.value()? >= ticket),
            Signal::Fences(fences) => {
                let Some(fence) = self.fence_of(fences, ticket) else {
                    return Ok(ticket <= self.last);
                };
                // SAFETY: a live fence of this device (owned by `self`).
                let r = unsafe { self.device.raw().get_fence_status(fence) }
                    .call("vkGetFenceStatus");
                self.device.check(r)
            }
        }
    }

    /// The fence still tracking `ticket`; `None` for ticket 0, for one not
    /// submitted yet, and for one whose fence was reused since (which had
    /// completed: a fence is only reused once its submission completed).
    fn fence_of(&self, fences: &[vk::Fence], ticket: u64) -> Option<vk::Fence> {
        let n = fences.len() as u64;
        (ticket > 0 && ticket <= self.last && self.last - ticket < n)
            .then(|| fences[(ticket % n) as usize])
    }
}

/// Destroys `fences`.
fn destroy_fences(device: &Device, fences: &[vk::Fence]) {
    for &f in fences {
        // SAFETY: ours; no pending submission uses it (the owner waited).
        unsafe { device.raw().destroy_fence(f, None) };
    }
}

impl Drop for Completion {
    fn drop(&mut self) {
        // The owner (ring, stager) waits for its submissions before it drops
        // this; a timeline goes with its own Drop.
        if let Signal::Fences(fences) = &self.signal {
            destroy_fences(&self.device, fences);
        }
    }
}

/// The error of a timeline asked for on a device that has none.
pub(crate) fn no_timelines(call: &'static str) -> VkError {
    VkError::Other {
        call,
        result: VkResultCode::of(vk::Result::ERROR_FEATURE_NOT_PRESENT),
    }
}
