//! Timeline semaphores owned by their device: the handle never leaves the
//! Vulkan layer, so a safe caller cannot name another device's semaphore,
//! a destroyed one or a binary one.

use super::Device;
use crate::error::{VkError, VkResultExt};
use ash::vk;
use std::sync::Arc;

/// A timeline semaphore of a [`Device`], destroyed with this value.
///
/// Waiting and reading the counter are safe. Only unsafe functions of the
/// Vulkan layer make the device signal or wait on it; their contracts
/// require it to outlive that work, so dropping it never destroys a
/// semaphore that pending work uses.
pub struct Timeline {
    device: Arc<Device>,
    raw: vk::Semaphore,
}

impl std::fmt::Debug for Timeline {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Timeline").finish_non_exhaustive()
    }
}

impl Timeline {
    /// Creates a timeline semaphore of `device` starting at `initial`; an
    /// error (`VK_ERROR_FEATURE_NOT_PRESENT`) on a device without timeline
    /// semaphores ([`SyncMode::Fences`](super::SyncMode::Fences)).
    pub fn new(device: &Arc<Device>, initial: u64) -> Result<Self, VkError> {
        if !device.sync_mode().has_timelines() {
            return Err(super::completion::no_timelines(
                "vkCreateSemaphore (no timeline semaphores)",
            ));
        }
        let mut ty = vk::SemaphoreTypeCreateInfo::default()
            .semaphore_type(vk::SemaphoreType::TIMELINE)
            .initial_value(initial);
        let info = vk::SemaphoreCreateInfo::default().push_next(&mut ty);
        // SAFETY: timeline semaphores were enabled at device creation; the
        // create info and its chain live until the call returns.
        let raw =
            unsafe { device.raw().create_semaphore(&info, None) }.call("vkCreateSemaphore")?;
        Ok(Timeline {
            device: device.clone(),
            raw,
        })
    }

    /// The device it belongs to.
    pub fn device(&self) -> &Arc<Device> {
        &self.device
    }

    /// The raw handle, for the Vulkan layer's own submissions.
    pub(crate) fn raw(&self) -> vk::Semaphore {
        self.raw
    }

    /// Waits until the counter reaches `value`; `Ok(false)` on timeout.
    pub fn wait(&self, value: u64, timeout_ns: u64) -> Result<bool, VkError> {
        let sems = [self.raw];
        let values = [value];
        let info = vk::SemaphoreWaitInfo::default()
            .semaphores(&sems)
            .values(&values);
        // SAFETY: `self.raw` is a live timeline semaphore of this device
        // (owned by `self`); the entry point is the one the device enabled.
        let r = unsafe {
            match self.device.timeline_khr() {
                Some(khr) => khr.wait_semaphores(&info, timeout_ns),
                None => self.device.raw().wait_semaphores(&info, timeout_ns),
            }
        };
        match r {
            Ok(()) => Ok(true),
            Err(vk::Result::TIMEOUT) => Ok(false),
            Err(r) => self
                .device
                .check(Err(VkError::from_result("vkWaitSemaphores", r))),
        }
    }

    /// The counter's current value.
    pub fn value(&self) -> Result<u64, VkError> {
        // SAFETY: `self.raw` is a live timeline semaphore of this device;
        // the entry point is the one the device enabled.
        let r = unsafe {
            match self.device.timeline_khr() {
                Some(khr) => khr.get_semaphore_counter_value(self.raw),
                None => self.device.raw().get_semaphore_counter_value(self.raw),
            }
        }
        .call("vkGetSemaphoreCounterValue");
        self.device.check(r)
    }

    /// Signals the counter to `value` from the host.
    ///
    /// # Safety
    /// `value` is greater than the counter's current value and less than the
    /// value of every signal operation pending on the device for it, and no
    /// other thread signals it meanwhile.
    #[cfg(feature = "test-hooks")]
    pub(crate) unsafe fn signal(&self, value: u64) -> Result<(), VkError> {
        let info = vk::SemaphoreSignalInfo::default()
            .semaphore(self.raw)
            .value(value);
        // SAFETY: live timeline of this device; the value rules are the
        // caller's (function contract); the entry point is the one the
        // device enabled.
        let r = unsafe {
            match self.device.timeline_khr() {
                Some(khr) => khr.signal_semaphore(&info),
                None => self.device.raw().signal_semaphore(&info),
            }
        }
        .call("vkSignalSemaphore");
        self.device.check(r)
    }
}

impl Drop for Timeline {
    fn drop(&mut self) {
        // SAFETY: ours and live; no pending work uses it: every submission
        // that names it is made by an unsafe function whose contract keeps
        // it alive until that work completed.
        unsafe { self.device.raw().destroy_semaphore(self.raw, None) };
    }
}
