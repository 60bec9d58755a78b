//! A staged GPU's stagers for its runs, and the choice of one per run.
//!
//! Under [`TransferQueue::Auto`](crate::vk::TransferQueue::Auto) on a GPU
//! with a transfer-only family, a run of that GPU alone transfers on the
//! transfer queue, where a package's download runs beside the next
//! package's compute; a run shared with other devices transfers on the
//! compute queue (see [`crate::vk::queues`]), but for its kernel's first
//! run with nothing learned and for runs of several GPUs without the CPU
//! workers (see `Engine::shared_on_own_queue`). Everywhere
//! else one stager serves every run.
//!
//! Switching: a run ends with its dispatches complete (the dispatch loop
//! drains its ring) and every download it waited for; what may still be
//! pending on the stager it used is at most the empty batch that orders
//! later transfers of its queue after its dispatches. Before a run takes
//! the other stager, the one used last is drained on the host, so that no
//! batch of one queue is pending while the other queue's batches touch the
//! same mirrors.

use crate::error::VkError;
use crate::sched::transfers::TransferRates;
use crate::vk::QueueLane;
use crate::vk::transfer::Stager;
use crate::vk::Device;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

/// The stagers of a staged GPU's runs.
pub(crate) struct RunStagers {
    /// Runs shared with other devices, and every run where the GPU has no
    /// per-run choice.
    shared: Mutex<Stager>,
    /// A lone GPU's runs, on the transfer queue (`None`: no per-run choice).
    lone: Option<Mutex<Stager>>,
    /// The last run used `lone`.
    lone_last: AtomicBool,
    /// The bandwidths both stagers learn into.
    rates: Arc<TransferRates>,
}

impl RunStagers {
    /// The stagers of `device`'s runs.
    pub(crate) fn new(device: &Arc<Device>) -> Result<Self, VkError> {
        let shared = Stager::new(device.clone(), device.shared_copies_lane())?;
        // One bandwidth per device: both queues move the same bytes over
        // the same link.
        let lone = if device.transfers_lone_only() {
            let s = Stager::new(device.clone(), QueueLane::Transfer)?;
            Some(Mutex::new(s.sharing(shared.rates().clone())))
        } else {
            None
        };
        Ok(RunStagers {
            rates: shared.rates().clone(),
            shared: Mutex::new(shared),
            lone,
            lone_last: AtomicBool::new(false),
        })
    }

    /// Whether a lone GPU's runs transfer on a queue of their own, so that
    /// a package's download overlaps the next package's compute.
    pub(crate) fn lone_overlaps(&self) -> bool {
        self.lone.is_some()
    }

    /// Whether a run whose `own_queue` asks for the transfer queue gets it.
    pub(crate) fn on_own_queue(&self, own_queue: bool) -> bool {
        own_queue && self.lone.is_some()
    }

    /// The stager of a run, on the transfer queue where `own_queue` asks
    /// for it and the GPU has one, held for the run. Where it is not the
    /// stager used last, that one is drained first (up to `timeout_ns`; on
    /// timeout the device is waited idle, as a run's end does on a
    /// transfer that timed out).
    pub(crate) fn for_run(&self, own_queue: bool, timeout_ns: u64) -> MutexGuard<'_, Stager> {
        let lone = self.on_own_queue(own_queue);
        // Relaxed: runs of an engine are serialized by its run lock, which
        // the caller holds for the whole run; the dispatch loop runs
        // between the pool's hand-off to it and its hand-back, both
        // synchronized with the caller. So the store of the run before
        // happens before this load, and no two runs race on it.
        if self.lone_last.swap(lone, Ordering::Relaxed) != lone {
            let before = if lone {
                Some(&self.shared)
            } else {
                self.lone.as_ref()
            };
            if let Some(m) = before {
                let s = lock(m);
                if !matches!(s.drain(timeout_ns), Ok(true)) {
                    let _ = s.device().wait_idle();
                }
            }
        }
        match (&self.lone, lone) {
            (Some(m), true) => lock(m),
            _ => lock(&self.shared),
        }
    }

    /// The transfer bandwidths its runs learned (both stagers share them).
    /// Read without locking either: a run in progress holds one.
    pub(crate) fn rates(&self) -> &Arc<TransferRates> {
        &self.rates
    }
}

/// `m` locked; a poisoned stager is still consistent (its state is the
/// Vulkan objects' and the completion's, updated before a panic could
/// leave them).
fn lock(m: &Mutex<Stager>) -> MutexGuard<'_, Stager> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}
