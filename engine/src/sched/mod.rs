//! Scheduling layer: how one run's units are cut into packages and handed to
//! claimants. Pure, deterministic logic plus atomics: no threads, no Vulkan.
//!
//! # Model
//! A run covers `total` *units* (a work-group in 1-D, a row of work-groups in
//! 2-D; the caller maps units to items). Devices `0..n` each have a
//! [`DeviceKind`] and a number of *claimants* ([`DeviceSlot`]): the CPU's
//! pinned workers, each GPU's dispatch loop. There is no director thread:
//! every claimant claims its own *packages* (`Range<u64>` of units) from one
//! shared [`WorkQueue`], sized by a per-run [`Plan`] built from a
//! [`Scheduler`] and a [`PowerEstimator`].
//!
//! # Claim protocol
//! * Fresh work is one atomic counter `next`. A claim reads `cur`, asks the
//!   plan for a size given `total - cur` units left, clamps it to
//!   `[1, total - cur]` and CASes `cur -> cur + size`, retrying with the
//!   observed value (and a recomputed size) when another claimant won. So
//!   every unit is handed out at most once, without locks.
//! * Ranges given back by a failing device ([`WorkQueue::requeue`]) sit in a
//!   side store and are offered **before** fresh work to every claimant,
//!   whatever its policy says about fresh work: sizing requeued work goes
//!   through [`Plan::requeued_size`], which never answers 0, while
//!   [`Plan::package_size`] (fresh) may answer 0 ("no more for me"). A cheap
//!   atomic count of requeued units keeps the store off the common path.
//! * Completion is a second counter: [`WorkQueue::complete`] returns true to
//!   exactly one caller, the one finishing the last unit.
//! * [`WorkQueue::abort`] makes later claims return `None`.
//!
//! Each claimant runs (names other than this module's are the engine's):
//!
//! ```ignore
//! let mut me = plan.claimant(device, index);
//! loop {
//!     match plan.claim(&queue, &mut me, &*estimator) {
//!         Some((range, _source)) => match execute(range.clone()) {
//!             Ok(seconds) => {
//!                 let units = range.end - range.start;
//!                 estimator.record(device, units, seconds);
//!                 if queue.complete(units) { signal_run_finished(); }
//!             }
//!             Err(e) => {
//!                 queue.requeue(range);                      // others redo it
//!                 plan.forfeit(&queue, &mut me, &*estimator); // Static: give back an unclaimed share
//!                 report_device_failure(e);                   // abort if no claimant is left
//!                 break;
//!             }
//!         },
//!         // Nothing for us now; but until the run is done a failing device
//!         // may still give work back, so keep polling (with a backoff).
//!         None if queue.is_done() || queue.is_aborted() => break,
//!         None => backoff(),
//!     }
//! }
//! ```
//!
//! A claimant must keep polling until the run is done or aborted: otherwise
//! work requeued after it left would be stranded. If the last live claimant
//! fails, the engine must [`abort`](WorkQueue::abort) the run.
//!
//! # Splitting within a device
//! A device with several claimants (the CPU's workers) also has a
//! [`StealBoard`]: each claimant publishes the package it claimed there and
//! runs it in chunks from the front, and a claimant for which
//! [`Plan::claim`] has nothing takes the back half of the largest unstarted
//! remainder among its siblings. The scheduler's sizes split the work
//! between devices; stealing evens out, within the device, packages whose
//! cost turned out larger than their size suggested. A GPU with nothing in
//! flight and nothing to claim steals there too, when the remainder is
//! large enough to pay for its latency ([`worth_splitting`]).
//!
//! # Policies
//! See [`Scheduler`] for the formulas and [`Plan`] for how powers are
//! resolved (hints, measurements, exploration).

#![forbid(unsafe_code)]

mod estimator;
mod model;
mod plan;
mod queue;
mod scheduler;
mod steal;
mod sync;
pub(crate) mod transfers;
#[cfg(all(test, not(loom)))]
mod cold_tests;
#[cfg(all(test, not(loom)))]
mod tests;

pub use estimator::{usable_power, PowerEstimator, ThroughputEstimator};
pub use model::{
    adds_little, alone_time, co_gain, single_device, single_device_after, Cost, CostFit, DeviceTime,
    EarlySample, StartCost,
};
pub use plan::{
    ClaimantState, Plan, FAIR_SHARE, GUARD_MARGIN, MAX_OVERHEAD, PROBE_PACKAGES, PROBE_SHARE,
};
pub use queue::{Source, WorkQueue};
pub use scheduler::{DeviceKind, DeviceSlot, SchedError, Scheduler, DEFAULT_K};
pub use steal::{run_us, worth_splitting, Progress, Remainder, StealBoard};
