//! Which queue a device's staged transfers go to.
//!
//! - A *dedicated* transfer queue: a queue of a transfer-only family (a
//!   discrete GPU's copy engines; the H200 has one). Uploads and downloads
//!   then run beside the dispatches instead of between them.
//! - The compute queue (the only choice on lavapipe, whose one family has
//!   one queue): transfers and dispatches are ordered by submission order
//!   and pipeline barriers (see [`super::transfer`]).
//!
//! Under [`TransferQueue::Auto`] (the default) a device with a dedicated
//! queue uses both, chosen per run: a lone GPU's runs cut in packages and
//! a kernel's first co-executed run with nothing learned on the dedicated
//! queue, every other run on the compute queue (see
//! [`crate::exec::stagers`] and [`crate::depth`]).
//!
//! On a separate queue nothing is ordered by submission order across the
//! two queues; every dependency goes through timeline semaphores:
//!
//! - a dispatch waits (at the compute-shader stage) for the last upload
//!   batch submitted before it, and so for every earlier batch of the
//!   transfer queue (a semaphore signal's first scope holds every command
//!   earlier in submission order);
//! - a download waits (at the transfer stage) for the package it brings
//!   back;
//! - at the end of a run whose last dispatch no transfer waited for, an
//!   empty batch on the transfer queue waits for it, so that later
//!   transfers (the next run's uploads, lazy downloads on host access) come
//!   after every dispatch that touched the mirrors.
//!
//! Buffers (host copies and mirrors) are created `CONCURRENT` between the
//! two families when they differ, so no ownership transfer is needed. The
//! dedicated queue needs timeline semaphores: with fences
//! ([`super::SyncMode::Fences`]) transfers stay on the compute queue.

use super::{PhysicalDeviceInfo, SyncMode};

/// Where a device's staged transfers are submitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TransferQueue {
    /// Chosen per run: a lone GPU's runs (no other device takes part)
    /// transfer on a dedicated queue where the device has a transfer-only
    /// family, so that a package's download overlaps the next package's
    /// compute (on an H200, a lone GPU in 4-8 packages ran 8-24% faster
    /// there than in one package: BENCHMARKS.md, section 0, run 17); runs
    /// shared with other devices transfer on the compute queue, where they
    /// measured best (run 16), but for a kernel's first run with nothing
    /// learned (run 30). The compute queue alone where the device has no
    /// transfer-only family. The default.
    #[default]
    Auto,
    /// Always the compute queue.
    Compute,
    /// Every run on a dedicated queue where the device has a transfer-only
    /// family, else the compute queue.
    Dedicated,
    /// A testing aid: always ordered as on a separate queue (timeline
    /// semaphores, no reliance on submission order): a transfer-only
    /// family's queue, else a second queue of the compute family, else the
    /// compute queue itself (lavapipe: the cross-queue protocol then runs,
    /// and is validated, on one queue). Needs timeline semaphores; with
    /// fences it is the compute queue.
    Separate,
    /// A testing aid: [`TransferQueue::Auto`]'s choice per run, with a lone
    /// GPU's runs on the queue [`TransferQueue::Separate`] takes, so that
    /// switching between the two runs where the device has no
    /// transfer-only family (lavapipe). Needs timeline semaphores; with
    /// fences it is the compute queue.
    SeparateWhenLone,
}

impl std::str::FromStr for TransferQueue {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "auto" => Ok(TransferQueue::Auto),
            "compute" => Ok(TransferQueue::Compute),
            "dedicated" => Ok(TransferQueue::Dedicated),
            "separate" => Ok(TransferQueue::Separate),
            "separate-when-lone" => Ok(TransferQueue::SeparateWhenLone),
            other => Err(format!(
                "unknown transfer queue {other:?} (auto, compute, dedicated, separate or separate-when-lone)"
            )),
        }
    }
}

impl TransferQueue {
    /// `COEXEC_TRANSFER_QUEUE=auto|compute|dedicated|separate|separate-when-lone`
    /// where set to a valid
    /// value (an invalid one is ignored with a warning).
    pub fn from_env() -> Option<TransferQueue> {
        let v = std::env::var("COEXEC_TRANSFER_QUEUE").ok()?;
        match v.parse() {
            Ok(q) => Some(q),
            Err(why) => {
                tracing::warn!("COEXEC_TRANSFER_QUEUE ignored: {why}");
                None
            }
        }
    }
}

/// Which of a device's queues a submission goes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum QueueLane {
    /// The compute queue (dispatches; a semaphore wait is at the
    /// compute-shader stage).
    Compute,
    /// The transfer queue, which is the compute queue where the device has
    /// no other (a semaphore wait is at the transfer stage).
    Transfer,
    /// Transfers on the compute queue of a device that also has a transfer
    /// queue (runs shared with other devices under
    /// [`TransferQueue::Auto`]; a semaphore wait is at the transfer stage).
    ComputeCopies,
}

/// The queue chosen for transfers: `(family, index)` within it; `None` on
/// a plan that keeps them on the compute queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TransferPlan {
    /// The family and queue index of a queue other than the compute queue
    /// (`None`: the compute queue itself).
    pub(crate) queue: Option<(u32, u32)>,
    /// Transfers are ordered with the dispatches by semaphores alone.
    pub(crate) separate: bool,
    /// Only a lone GPU's runs transfer on that queue; the others on the
    /// compute queue (in submission order, as without one).
    pub(crate) lone_only: bool,
}

/// The transfer queue of a device with facts `info` whose compute queue is
/// queue 0 of family `compute`, under `mode` and `sync`.
pub(crate) fn plan(
    info: &PhysicalDeviceInfo,
    compute: u32,
    mode: TransferQueue,
    sync: SyncMode,
) -> TransferPlan {
    let shared = TransferPlan {
        queue: None,
        separate: false,
        lone_only: false,
    };
    if !sync.has_timelines() || mode == TransferQueue::Compute {
        return shared;
    }
    let lone_only = matches!(mode, TransferQueue::Auto | TransferQueue::SeparateWhenLone);
    if let Some(f) = info.transfer_family {
        return TransferPlan {
            queue: Some((f, 0)),
            separate: true,
            lone_only,
        };
    }
    if matches!(mode, TransferQueue::Auto | TransferQueue::Dedicated) {
        return shared;
    }
    let second = info
        .compute_families
        .iter()
        .find(|f| f.index == compute)
        .is_some_and(|f| f.count > 1);
    TransferPlan {
        queue: second.then_some((compute, 1)),
        separate: true,
        lone_only,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_and_bad_ones_are_refused() {
        assert_eq!("auto".parse(), Ok(TransferQueue::Auto));
        assert_eq!(" Separate ".parse(), Ok(TransferQueue::Separate));
        assert_eq!("compute".parse(), Ok(TransferQueue::Compute));
        assert_eq!("dedicated".parse(), Ok(TransferQueue::Dedicated));
        assert_eq!(
            "separate-when-lone".parse(),
            Ok(TransferQueue::SeparateWhenLone)
        );
        assert!("dma".parse::<TransferQueue>().is_err());
    }
}
