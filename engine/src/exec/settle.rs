//! After a GPU failure: waiting until the packages the GPU had in flight can
//! no longer be written by it, and telling what became of each.
//!
//! Vulkan cannot cancel submitted work, and a run's buffers are the very
//! memory the GPU writes (host-visible, mapped, no copies). A package given
//! back to the queue while its submission may still run would let another
//! device write the same items at the same time (a CPU worker's `&mut` slice
//! over a range the GPU also writes), and a kernel that reads what it writes
//! (`y += 2x`) would then apply twice. So a failed GPU settles its packages
//! first and gives back only afterwards.

use crate::error::VkError;
use crate::vk::{Device, DispatchRing};
use std::time::{Duration, Instant};

/// What became of a package in flight when its GPU failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// Its ticket was reached: it ran to the end, once. It counts as done.
    Ran,
    /// The device was lost while it was in flight: it may have written any
    /// part of its outputs, or none.
    Unknown,
}

/// How the settle phase observes a device (a trait so that the test hooks
/// can inject a loss and the unit tests a device that never was).
pub(crate) trait Observe {
    /// Waits until `ticket` completed, up to `timeout_ns`; `Ok(false)` on
    /// timeout.
    fn wait(&self, ticket: u64, timeout_ns: u64) -> Result<bool, VkError>;
    /// Whether `ticket` completed (does not block).
    fn is_complete(&self, ticket: u64) -> Result<bool, VkError>;
    /// Waits until the device's queue is idle or the device is lost.
    fn wait_idle(&self) -> Result<(), VkError>;
}

/// A dispatch ring and its device, as they are.
pub(crate) struct RingObserver<'a> {
    /// The ring whose tickets are observed.
    pub(crate) ring: &'a DispatchRing,
    /// Its device.
    pub(crate) device: &'a Device,
}

impl Observe for RingObserver<'_> {
    fn wait(&self, ticket: u64, timeout_ns: u64) -> Result<bool, VkError> {
        self.ring.wait(ticket, timeout_ns)
    }

    fn is_complete(&self, ticket: u64) -> Result<bool, VkError> {
        self.ring.is_complete(ticket)
    }

    fn wait_idle(&self) -> Result<(), VkError> {
        self.device.wait_idle()
    }
}

/// Waits until none of `tickets` (the packages in flight, oldest first) can
/// still run, and returns the outcome of each.
///
/// First the tickets are waited for, `timeout` for all of them together. If
/// one is not reached in that time, or the wait fails (device lost), the
/// device's queue is waited for until it is idle or the device is lost:
/// Vulkan requires that wait to return in finite time once the device is lost,
/// and a driver declares a device that hangs for good lost (its watchdog).
/// Then each ticket's outcome is read from the timeline: a ticket reached ran
/// to its end (a timeline signal covers every command submitted before it,
/// so this holds even when the wait itself reported an error); one not
/// reached, or whose counter cannot be read any more, is [`Outcome::Unknown`].
pub(crate) fn settle(obs: &dyn Observe, tickets: &[u64], timeout: Duration) -> Vec<Outcome> {
    let deadline = Instant::now() + timeout;
    let mut idle = false;
    let mut outcomes = Vec::with_capacity(tickets.len());
    for &t in tickets {
        if !idle {
            let left = deadline.saturating_duration_since(Instant::now());
            let ns = u64::try_from(left.as_nanos()).unwrap_or(u64::MAX);
            if matches!(obs.wait(t, ns), Ok(true)) {
                outcomes.push(Outcome::Ran);
                continue;
            }
            // Timed out or lost: its result does not matter, what counts is
            // that nothing runs any more once it returned.
            let _ = obs.wait_idle();
            idle = true;
        }
        outcomes.push(if matches!(obs.is_complete(t), Ok(true)) {
            Outcome::Ran
        } else {
            Outcome::Unknown
        });
    }
    outcomes
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::{Cell, RefCell};

    /// A device whose timeline stands at `reached` (and, after the queue
    /// idled, at `after_idle`); `lost` makes every wait report the loss, and
    /// `unreadable` every counter read too.
    #[derive(Default)]
    struct Fake {
        reached: u64,
        after_idle: u64,
        lost: bool,
        unreadable: bool,
        idles: Cell<u32>,
        waited_ns: RefCell<Vec<u64>>,
    }

    const LOST: VkError = VkError::DeviceLost { call: "fake" };

    impl Fake {
        fn value(&self) -> u64 {
            if self.idles.get() > 0 {
                self.after_idle
            } else {
                self.reached
            }
        }
    }

    impl Observe for Fake {
        fn wait(&self, ticket: u64, timeout_ns: u64) -> Result<bool, VkError> {
            self.waited_ns.borrow_mut().push(timeout_ns);
            if self.lost {
                return Err(LOST);
            }
            Ok(self.value() >= ticket)
        }
        fn is_complete(&self, ticket: u64) -> Result<bool, VkError> {
            if self.unreadable {
                return Err(LOST);
            }
            Ok(self.value() >= ticket)
        }
        fn wait_idle(&self) -> Result<(), VkError> {
            self.idles.set(self.idles.get() + 1);
            if self.lost {
                Err(LOST)
            } else {
                Ok(())
            }
        }
    }

    use Outcome::{Ran, Unknown};
    const T: Duration = Duration::from_millis(300);

    #[test]
    fn completed_tickets_ran_without_waiting_for_idle() {
        let f = Fake {
            reached: 8,
            ..Fake::default()
        };
        assert_eq!(settle(&f, &[7, 8], T), vec![Ran, Ran]);
        assert_eq!(f.idles.get(), 0);
        // One budget for all: no wait is longer than the timeout.
        assert!(f.waited_ns.borrow().iter().all(|&ns| ns <= 300_000_000));
    }

    #[test]
    fn a_late_package_that_ends_while_the_queue_idles_ran() {
        // The hung package completes once waited for (the hook's release,
        // or a package that was merely slow).
        let f = Fake {
            reached: 6,
            after_idle: 8,
            ..Fake::default()
        };
        assert_eq!(settle(&f, &[7, 8], T), vec![Ran, Ran]);
        assert_eq!(f.idles.get(), 1, "the queue is waited for once");
    }

    #[test]
    fn device_lost_after_completion_counts_the_package_once() {
        // The wait reports the loss, but the timeline says it completed.
        let f = Fake {
            reached: 7,
            after_idle: 7,
            lost: true,
            ..Fake::default()
        };
        assert_eq!(settle(&f, &[7, 8], T), vec![Ran, Unknown]);
        assert_eq!(f.idles.get(), 1);
    }

    #[test]
    fn a_lost_device_whose_counter_cannot_be_read_leaves_every_outcome_unknown() {
        let f = Fake {
            reached: 9,
            lost: true,
            unreadable: true,
            ..Fake::default()
        };
        assert_eq!(settle(&f, &[7, 8], T), vec![Unknown, Unknown]);
        assert_eq!(settle(&f, &[], T), vec![]);
    }
}
