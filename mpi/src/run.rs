//! One distributed run: every rank claims packages from the window and
//! runs each with the caller's code, then the ranks agree on the outcome.

use crate::counter::ClaimWindow;
use crate::error::{Error, Result};
use crate::sizing::{Powers, Sizing};
use crate::space::{Claim, DistSpace};
use mpi::collective::SystemOperation;
use mpi::topology::{Communicator, SimpleCommunicator};
use mpi::traits::CommunicatorCollectives;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::{Duration, Instant};

/// How the ranks size their packages.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DistOptions {
    /// HGuided's `k` (at least 1): a rank takes `1/k` of its share of
    /// what is left, so packages shrink towards the end.
    pub k: f64,
    /// The smallest package, in units (at least 1).
    pub min_units: u64,
}

impl Default for DistOptions {
    fn default() -> Self {
        DistOptions {
            k: coexec::DEFAULT_K,
            min_units: 1,
        }
    }
}

/// What one rank did in a run.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RankReport {
    /// This rank.
    pub rank: i32,
    /// Packages it claimed.
    pub packages: u64,
    /// Units it claimed.
    pub units: u64,
    /// Work-items it claimed.
    pub items: u64,
    /// Time in its code for its claims (local runs).
    pub busy: Duration,
    /// Time in RMA operations (claims, power reads and publishes).
    pub claiming: Duration,
    /// Claims where another rank claimed between this rank's read of the
    /// counter and its fetch-and-add (the package then starts later).
    pub raced: u64,
    /// From the start of the run to its end on this rank (before the final
    /// agreement).
    pub wall: Duration,
    /// Its measured power at the end, in units per second (0: no package).
    pub power: f64,
}

/// Runs `space` over the ranks of `comm`: collective (every rank of `comm`
/// calls it with the same space and options).
///
/// Each rank claims packages from a counter in an MPI window (no rank hands
/// out work) and calls `body` with each [`Claim`], where it runs the claim
/// on its own engine. Every unit is claimed by exactly one rank. If `body`
/// fails or panics on any rank, the others stop claiming and every rank
/// returns an error: that rank's own, [`Error::PeerFailed`] elsewhere.
pub fn run<F>(
    comm: &SimpleCommunicator,
    space: DistSpace,
    options: &DistOptions,
    mut body: F,
) -> Result<RankReport>
where
    F: FnMut(&Claim) -> coexec::Result<()>,
{
    space.validate()?;
    if !(options.k >= 1.0 && options.k.is_finite()) || options.min_units == 0 {
        return Err(Error::Options(format!(
            "k must be finite and at least 1 (got {}), min_units at least 1 (got {})",
            options.k, options.min_units
        )));
    }
    let window = ClaimWindow::new(comm)?;
    let sizing = Sizing {
        k: options.k,
        min_units: options.min_units,
        ranks: comm.size() as u32,
    };
    let mut rank = Rank::new(comm.rank(), space, sizing);
    let start = Instant::now();
    let local = rank.claim_all(&window, &mut body);
    rank.report.wall = start.elapsed();
    let freed = window.free();
    let local = local.and(freed);
    agree(comm, local).map(|()| rank.report)
}

/// One rank's state through a run.
struct Rank {
    space: DistSpace,
    sizing: Sizing,
    units: u64,
    /// The power last published, in milli-units per second.
    published: Option<u64>,
    report: RankReport,
}

impl Rank {
    fn new(rank: i32, space: DistSpace, sizing: Sizing) -> Rank {
        Rank {
            space,
            sizing,
            units: space.units(),
            published: None,
            report: RankReport {
                rank,
                ..RankReport::default()
            },
        }
    }

    /// Claims and runs packages until none is left; on a failure, counts
    /// this rank failed in the window, so that the others stop.
    fn claim_all<F>(&mut self, w: &ClaimWindow, body: &mut F) -> Result<()>
    where
        F: FnMut(&Claim) -> coexec::Result<()>,
    {
        loop {
            let Some(claim) = self.claim(w)? else {
                return Ok(());
            };
            let t = Instant::now();
            let outcome = run_one(&claim, body);
            let dt = t.elapsed();
            if let Err(e) = outcome {
                let _ = w.poison();
                return Err(e);
            }
            self.record(&claim, dt);
            self.publish(w)?;
        }
    }

    /// The next package: `None` when the space is done. A window where a
    /// rank counted itself failed is [`Error::PeerFailed`] (the count is settled by the agreement).
    ///
    /// Two RMA operations, wait-free: one atomic read of the counter and
    /// the powers (to size the package from what is left now), then one
    /// fetch-and-add of that size. Another rank may add in between: then
    /// this package starts later than the read said, and the last one is
    /// clipped to the space; units are still claimed exactly once, since
    /// each fetch-and-add returns a range no other one returns.
    fn claim(&mut self, w: &ClaimWindow) -> Result<Option<Claim>> {
        let t = Instant::now();
        let got = self.claim_inner(w);
        self.report.claiming += t.elapsed();
        got
    }

    fn claim_inner(&mut self, w: &ClaimWindow) -> Result<Option<Claim>> {
        let state = w.read()?;
        if state.failed > 0 {
            return Err(Error::PeerFailed { failed: 1 });
        }
        if state.next >= self.units {
            return Ok(None);
        }
        let powers = Powers {
            sum: state.power_sum as f64 / 1000.0,
            published: state.published.min(u64::from(u32::MAX)) as u32,
        };
        let own = (self.report.power > 0.0).then_some(self.report.power);
        let n = self.sizing.package(self.units - state.next, own, powers);
        let old = w.fetch_add_next(n)?;
        if old >= self.units {
            return Ok(None);
        }
        if old != state.next {
            self.report.raced += 1;
        }
        Ok(Some(self.space.claim(old..(old + n).min(self.units))))
    }

    fn record(&mut self, claim: &Claim, dt: Duration) {
        let r = &mut self.report;
        r.packages += 1;
        r.units += claim.units.end - claim.units.start;
        r.items += claim.len();
        r.busy += dt;
        // At least a microsecond of busy time: a rate, never infinity.
        r.power = r.units as f64 / r.busy.as_secs_f64().max(1e-6);
    }

    /// Publishes the change of this rank's power.
    fn publish(&mut self, w: &ClaimWindow) -> Result<()> {
        let t = Instant::now();
        let milli = (self.report.power * 1000.0).min(1e15) as u64;
        let old = self.published.unwrap_or(0);
        w.publish(milli.wrapping_sub(old), self.published.is_none())?;
        self.published = Some(milli);
        self.report.claiming += t.elapsed();
        Ok(())
    }
}

/// Runs `body` on one claim, turning a panic into an error.
fn run_one<F>(claim: &Claim, body: &mut F) -> Result<()>
where
    F: FnMut(&Claim) -> coexec::Result<()>,
{
    match catch_unwind(AssertUnwindSafe(|| body(claim))) {
        Ok(Ok(())) => Ok(()),
        Ok(Err(source)) => Err(Error::Local {
            units: claim.units.clone(),
            source,
        }),
        Err(p) => Err(Error::Panicked {
            units: claim.units.clone(),
            message: p
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| p.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "(no message)".into()),
        }),
    }
}

/// Collective: every rank learns how many ranks failed. A rank that failed
/// keeps its own error; the others get [`Error::PeerFailed`].
pub(crate) fn agree(comm: &SimpleCommunicator, local: Result<()>) -> Result<()> {
    let mine = match &local {
        Err(Error::PeerFailed { .. }) | Ok(()) => 0u32,
        Err(_) => 1,
    };
    let mut failed = 0u32;
    comm.all_reduce_into(&mine, &mut failed, SystemOperation::sum());
    match local {
        Err(Error::PeerFailed { .. }) | Ok(()) if failed > 0 => Err(Error::PeerFailed { failed }),
        Err(Error::PeerFailed { .. }) => Err(Error::PeerFailed { failed: 0 }),
        other => other,
    }
}
