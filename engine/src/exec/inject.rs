//! The GPU side of the test hooks (cargo feature `test-hooks`): the fault
//! injected into one run, armed once its package is reached (see
//! [`crate::hooks`]).

use super::settle::{settle, Observe, Outcome, RingObserver};
use crate::error::{VkError, VkResultCode};
use crate::hooks::{FaultInjection, GpuFault};
use crate::vk::gate::Gate;
use crate::vk::{Device, Dispatch, DispatchRing};
use ash::vk;
use std::sync::Arc;
use std::time::Duration;

/// What the injected loss reports.
const INJECTED_LOSS: VkError = VkError::DeviceLost {
    call: "vkWaitSemaphores (injected)",
};

/// The injected fault of a run.
pub(crate) struct Injected {
    spec: FaultInjection,
    /// The gate the injected hangs wait behind (`None` where it could not
    /// be created: the hang then fails to submit).
    blocker: Option<Gate>,
    /// Ticket of the sabotaged package once it is submitted (0: its
    /// submission failed).
    ticket: Option<u64>,
}

impl Injected {
    /// The fault `spec`, not armed yet.
    pub(crate) fn new(spec: FaultInjection, device: &Arc<Device>) -> Self {
        Injected {
            spec,
            blocker: Gate::new(device).ok(),
            ticket: None,
        }
    }

    /// Whether the next package, after `completed` ones, is the sabotaged one.
    pub(crate) fn due(&self, completed: usize) -> bool {
        self.ticket.is_none() && completed >= self.spec.after_packages
    }

    /// Submits the sabotaged package `d` the injected way.
    ///
    /// # Safety
    /// As for [`DispatchRing::submit`] (idle slot, valid dispatch).
    pub(crate) unsafe fn submit(
        &mut self,
        ring: &mut DispatchRing,
        d: Dispatch<'_>,
    ) -> Result<u64, VkError> {
        let hang = |ring: &mut DispatchRing, d: Option<Dispatch<'_>>| {
            let Some(blocker) = &self.blocker else {
                return Err(VkError::Other {
                    call: "vkCreateSemaphore (injected hang)",
                    result: VkResultCode::of(vk::Result::ERROR_UNKNOWN),
                });
            };
            // SAFETY: as for `submit` (caller); the blocker is a closed
            // gate of the ring's device that `release` opens, and that
            // outlives the submission (`destroy` comes after the drain).
            unsafe { ring.submit_blocked(blocker, d) }
        };
        let r = match self.spec.fault {
            GpuFault::SubmitError => Err(VkError::Other {
                call: "vkQueueSubmit (injected)",
                result: VkResultCode::of(vk::Result::ERROR_UNKNOWN),
            }),
            GpuFault::Hang => hang(ring, Some(d)),
            GpuFault::HangThenLost => hang(ring, None),
            // SAFETY: as for `submit` (caller).
            GpuFault::DeviceLost => unsafe {
                ring.submit_after(d, None)
            },
        };
        self.ticket = Some(*r.as_ref().unwrap_or(&0));
        r
    }

    /// The dispatch loop's wait for `ticket`, as the fault shows it: under
    /// [`GpuFault::DeviceLost`] the sabotaged package's completion reads as
    /// the device lost.
    pub(crate) fn filter_wait(
        &self,
        ticket: u64,
        waited: Result<bool, VkError>,
    ) -> Result<bool, VkError> {
        match waited {
            Ok(true) if self.spec.fault == GpuFault::DeviceLost && self.ticket == Some(ticket) => {
                Err(INJECTED_LOSS)
            }
            w => w,
        }
    }

    /// Settles the packages in flight ([`settle`]) under the fault: a hang
    /// ends once the timeout was declared (its package then runs, late); a
    /// hang that ends in a lost device reads as lost from then on.
    pub(crate) fn settle(
        &self,
        obs: &RingObserver<'_>,
        tickets: &[u64],
        timeout: Duration,
    ) -> Vec<Outcome> {
        match self.spec.fault {
            GpuFault::Hang => {
                self.release();
                settle(obs, tickets, timeout)
            }
            GpuFault::HangThenLost if self.ticket.is_some_and(|t| tickets.contains(&t)) => {
                let lost = Lost {
                    inner: obs,
                    hook: self,
                };
                settle(&lost, tickets, timeout)
            }
            _ => settle(obs, tickets, timeout),
        }
    }

    /// Ends the injected hang (once: later calls do nothing).
    pub(crate) fn release(&self) {
        if let Some(blocker) = &self.blocker {
            blocker.open();
        }
    }

    /// Destroys the blocker.
    ///
    /// # Safety
    /// No submission waits on it any more: it was released and the queue
    /// drained.
    pub(crate) unsafe fn destroy(self) {
        drop(self.blocker);
    }
}

/// The device once the injected loss struck: every wait and counter read
/// reports it lost. Waiting for the queue to idle first ends the hang, so
/// that the real queue can idle (the blocked submission then runs, empty).
struct Lost<'a> {
    inner: &'a RingObserver<'a>,
    hook: &'a Injected,
}

impl Observe for Lost<'_> {
    fn wait(&self, _ticket: u64, _timeout_ns: u64) -> Result<bool, VkError> {
        Err(INJECTED_LOSS)
    }

    fn is_complete(&self, _ticket: u64) -> Result<bool, VkError> {
        Err(INJECTED_LOSS)
    }

    fn wait_idle(&self) -> Result<(), VkError> {
        self.hook.release();
        let _ = self.inner.wait_idle();
        Err(INJECTED_LOSS)
    }
}
