//! The gate an injected GPU hang waits behind until the host opens it (test
//! hooks): a timeline semaphore the submission waits on, or, on a device
//! without timeline semaphores, the held-back submission itself, submitted
//! when the gate opens (its fence stays unsignalled until then, so the
//! package reads as running).

use super::{Device, Timeline};
use crate::error::VkError;
use ash::vk;
use std::sync::{Arc, Mutex};

/// A gate of one device, closed when made.
pub(crate) enum Gate {
    /// A timeline at 0 that a submission waits on for 1.
    Timeline(Timeline),
    /// With fences: the submission held back, until opened.
    Held {
        device: Arc<Device>,
        state: Mutex<Held>,
    },
}

/// What a fence-mode gate holds.
#[derive(Default)]
pub(crate) struct Held {
    /// A recorded command buffer and the unsignalled fence to submit it with.
    pending: Option<(vk::CommandBuffer, vk::Fence)>,
    open: bool,
}

impl Gate {
    /// A closed gate on `device`.
    pub(crate) fn new(device: &Arc<Device>) -> Result<Gate, VkError> {
        if device.sync_mode().has_timelines() {
            Ok(Gate::Timeline(Timeline::new(device, 0)?))
        } else {
            Ok(Gate::Held {
                device: device.clone(),
                state: Mutex::new(Held::default()),
            })
        }
    }

    /// Holds `cb` back until the gate opens (submitting it with `fence`
    /// then; at once where it is open already).
    ///
    /// # Safety
    /// A fence-mode gate; `cb` is a fully recorded command buffer of this
    /// device that is not pending, `fence` an unsignalled fence of it that
    /// no pending submission uses; both stay alive until the submission
    /// completed or, never opened, the gate is dropped.
    pub(crate) unsafe fn hold(&self, cb: vk::CommandBuffer, fence: vk::Fence) -> Result<(), VkError> {
        let Gate::Held { device, state } = self else {
            return Err(super::completion::no_timelines("hold (a timeline gate)"));
        };
        let mut s = state.lock().unwrap_or_else(|p| p.into_inner());
        if s.open {
            // SAFETY: the function contract.
            return unsafe { device.submit_fenced(cb, fence) };
        }
        s.pending = Some((cb, fence));
        Ok(())
    }

    /// Opens the gate (once: later calls do nothing).
    pub(crate) fn open(&self) {
        match self {
            Gate::Timeline(t) => {
                if t.value().is_ok_and(|v| v >= 1) {
                    return;
                }
                // SAFETY: a timeline below 1 (read above) that nothing on
                // the device signals, and only the dispatch loop's thread
                // opens the gate.
                let _ = unsafe { t.signal(1) };
            }
            Gate::Held { device, state } => {
                let mut s = state.lock().unwrap_or_else(|p| p.into_inner());
                s.open = true;
                if let Some((cb, fence)) = s.pending.take() {
                    // SAFETY: what `hold` was given, under its contract.
                    let _ = unsafe { device.submit_fenced(cb, fence) };
                }
            }
        }
    }

    /// The timeline, for a timeline gate.
    pub(crate) fn timeline(&self) -> Option<&Timeline> {
        match self {
            Gate::Timeline(t) => Some(t),
            Gate::Held { .. } => None,
        }
    }
}
