//! The lock-free work queue shared by every claimant of one run.

use std::fmt;
use std::ops::Range;

use crossbeam_utils::CachePadded;

use super::sync::{AtomicBool, AtomicU64, Ordering, RangeStore};

/// Where a claimed range came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Source {
    /// Never handed out before: taken from the fresh counter.
    Fresh,
    /// Given back by a claimant whose device failed ([`WorkQueue::requeue`]).
    Requeued,
}

/// How many claimants' worth of overshoot `claim_fixed` leaves room for in
/// `u64` above `total` (far more threads than any machine runs).
const FIXED_HEADROOM: u64 = 1 << 20;

/// Shared state of one run: the lock-free queue.
///
/// Fresh work is a single counter `next`: the units `next..total` have not been
/// handed out. A claim is a compare-and-swap `cur -> cur + size` (a
/// `fetch_add` where the size is fixed, see [`claim_fixed`](Self::claim_fixed)),
/// so two claimants can never receive overlapping ranges. Ranges given back by a
/// failed device go to a side store and are always offered before fresh work
/// (see [`claim_from`](Self::claim_from)). Completion is a second counter; the
/// claimant whose [`complete`](Self::complete) brings it to `total` is told so,
/// exactly once.
pub struct WorkQueue {
    /// First unit never handed out. Hammered by every claim: own cache line.
    next: CachePadded<AtomicU64>,
    /// Units finished. Bumped once per package: own cache line.
    done: CachePadded<AtomicU64>,
    /// Units currently sitting in `requeued` (an over-estimate while a push
    /// is in progress). Lets the common path skip the store with one load.
    requeued_units: CachePadded<AtomicU64>,
    /// Set by [`abort`](Self::abort).
    aborted: AtomicBool,
    total: u64,
    requeued: RangeStore,
}

impl WorkQueue {
    /// A queue over the units `0..total`, none handed out, none done.
    ///
    /// With `total == 0` nothing can be claimed and [`is_done`](Self::is_done)
    /// is true from the start.
    pub fn new(total: u64) -> Self {
        Self {
            next: CachePadded::new(AtomicU64::new(0)),
            done: CachePadded::new(AtomicU64::new(0)),
            requeued_units: CachePadded::new(AtomicU64::new(0)),
            aborted: AtomicBool::new(false),
            total,
            requeued: RangeStore::new(),
        }
    }

    /// Number of units of the run.
    pub fn total(&self) -> u64 {
        self.total
    }

    /// Units not yet handed out (excluding requeued ranges), as observed now.
    pub fn remaining(&self) -> u64 {
        // Relaxed: a snapshot for reporting/heuristics; nothing is read
        // through it, and `next` only grows, so any value seen is a valid
        // past state. It may pass `total` (see `claim_fixed`): saturate.
        self.total.saturating_sub(self.next.load(Ordering::Relaxed))
    }

    /// Units given back by failed devices and not yet claimed again, as
    /// observed now (may briefly over-count while a split is pushed back).
    pub fn requeued_units(&self) -> u64 {
        // Relaxed: a hint; the ranges themselves travel through the store,
        // which synchronises on its own.
        self.requeued_units.load(Ordering::Relaxed)
    }

    /// Units completed so far.
    pub fn completed(&self) -> u64 {
        // Acquire: pairs with the Release half of `complete`, so a caller that
        // sees `n` units done also sees the results written for them.
        self.done.load(Ordering::Acquire)
    }

    /// Claim with one sizing function for both kinds of work.
    ///
    /// Equivalent to [`claim_from`](Self::claim_from) with `size_for` ignoring
    /// the [`Source`]: a requeued range (if any) is taken first, split to at
    /// most `size_for(len)` units (the rest pushed back); otherwise fresh work
    /// is taken by a CAS loop on `next` with `size_for(total - cur)` clamped to
    /// `[1, total - cur]`, re-asking `size_for` with the new value after a lost
    /// race. `size_for` returning 0 means "this claimant wants nothing more"
    /// and yields `None` **for fresh work only**: a requeued range can never be
    /// declined, and a 0 answer takes it whole. `size_for` may be called
    /// several times per claim, so it must not count claims itself.
    ///
    /// Returns `None` once [`abort`](Self::abort) has been observed.
    pub fn claim(&self, mut size_for: impl FnMut(u64) -> u64) -> Option<Range<u64>> {
        self.claim_from(|n, _| size_for(n)).map(|(r, _)| r)
    }

    /// Claim, telling `size_for` whether it is sizing requeued or fresh work.
    ///
    /// This is how requeued work reaches claimants that are otherwise done
    /// (e.g. a `Static` claimant that already took its one package): the
    /// requeued store is tried first and there a 0 answer takes the whole
    /// range, so whoever still calls `claim_from` drains it, whatever its
    /// policy says about fresh work. Only then is fresh work tried, where a 0
    /// answer means "no more" (`None`). [`Plan::claim`](super::Plan::claim)
    /// wires a [`Plan`](super::Plan) in here.
    pub fn claim_from(
        &self,
        mut size_for: impl FnMut(u64, Source) -> u64,
    ) -> Option<(Range<u64>, Source)> {
        if let Some(r) = self.claim_requeued(|n| size_for(n, Source::Requeued)) {
            return Some((r, Source::Requeued));
        }
        self.claim_fresh(|n| size_for(n, Source::Fresh))
            .map(|r| (r, Source::Fresh))
    }

    /// Takes (part of) one requeued range, if any: at most `size_for(len)`
    /// units, the whole range if `size_for` answers 0 (requeued work cannot
    /// be declined); the tail is pushed back for others.
    pub fn claim_requeued(&self, size_for: impl FnOnce(u64) -> u64) -> Option<Range<u64>> {
        if self.is_aborted() {
            return None;
        }
        // Relaxed: only a hint to skip the store on the common path. A stale 0
        // merely defers requeued work to the claimant's next call (claimants
        // keep calling until the run is done); a stale non-zero costs one
        // failed pop. No data is read through this counter.
        if self.requeued_units.load(Ordering::Relaxed) == 0 {
            return None;
        }
        let r = self.requeued.pop()?;
        let len = r.end - r.start;
        let take = match size_for(len) {
            0 => len,
            s => s.min(len),
        };
        // Relaxed: counter-only bookkeeping. It cannot underflow: the
        // `fetch_add` that counted these units (in `requeue`) happens-before
        // their `push`, which happens-before our `pop` (the store synchronises
        // push->pop), so that add precedes this sub in the counter's
        // modification order. The pushed-back tail stays counted by it.
        self.requeued_units.fetch_sub(take, Ordering::Relaxed);
        if take < len {
            self.requeued.push(r.start + take..r.end);
        }
        Some(r.start..r.start + take)
    }

    /// Takes fresh work only: CAS loop on `next`; `size_for(total - cur)`
    /// clamped to `[1, total - cur]`; 0 or exhaustion gives `None`.
    /// Recomputes the size with the new `cur` after a lost race.
    pub fn claim_fresh(&self, mut size_for: impl FnMut(u64) -> u64) -> Option<Range<u64>> {
        // Relaxed: `next` guards no data. Disjointness of claimed ranges comes
        // from the atomicity of the CAS alone (all RMWs on `next` are totally
        // ordered), not from ordering with other memory.
        let mut cur = self.next.load(Ordering::Relaxed);
        loop {
            if cur >= self.total || self.is_aborted() {
                return None;
            }
            let left = self.total - cur;
            let size = size_for(left);
            if size == 0 {
                return None;
            }
            let end = cur + size.min(left);
            // Relaxed on success and failure: see the load above; on failure
            // we only need the current value to retry from.
            match self
                .next
                .compare_exchange_weak(cur, end, Ordering::Relaxed, Ordering::Relaxed)
            {
                Ok(_) => return Some(cur..end),
                Err(seen) => cur = seen,
            }
        }
    }

    /// Takes `size` fresh units (fewer at the end) with one `fetch_add`
    /// instead of a compare-and-swap loop: for policies whose package size
    /// does not depend on what is left (`Dynamic`). Under contention a CAS
    /// can fail and retry, each try moving the counter's cache line twice
    /// (load, then CAS); a `fetch_add` always succeeds at its first move.
    /// `None` when `size` is 0, once fresh work is exhausted, or after
    /// [`abort`](Self::abort).
    ///
    /// `next` may end up past `total`, by at most `size` per claimant that
    /// saw it below `total` just before; readers of `next` treat anything
    /// `>= total` as exhausted.
    pub fn claim_fixed(&self, size: u64) -> Option<Range<u64>> {
        if size == 0 || self.is_aborted() {
            return None;
        }
        if size > (u64::MAX - self.total) / FIXED_HEADROOM {
            // So large a size could let the overshoot wrap `next`: CAS.
            return self.claim_fresh(|_| size);
        }
        // Relaxed (both): as in `claim_fresh`, `next` guards no data;
        // disjointness comes from the atomicity of the RMW alone. The load
        // first keeps claimants that keep calling after exhaustion (until
        // the run is done) from pushing `next` further each time, which
        // bounds the overshoot to one `size` per claimant.
        if self.next.load(Ordering::Relaxed) >= self.total {
            return None;
        }
        let cur = self.next.fetch_add(size, Ordering::Relaxed);
        if cur >= self.total {
            return None;
        }
        Some(cur..(cur + size).min(self.total))
    }

    /// Give a range back (a device failed): it will be claimed by others.
    ///
    /// The range must have been claimed from this queue and not completed.
    /// Empty ranges are ignored. Claimants that are still looping drain it,
    /// whatever their policy (see [`claim_from`](Self::claim_from)); if no
    /// claimant is left, the caller must [`abort`](Self::abort) the run.
    pub fn requeue(&self, r: Range<u64>) {
        if r.start >= r.end {
            return;
        }
        debug_assert!(
            r.end <= self.total,
            "requeued range {r:?} outside 0..{}",
            self.total
        );
        // Relaxed: counted *before* the push so that no claimant can pop the
        // range and subtract it first (see `claim_requeued`); the store itself
        // publishes the range, the counter is only a hint.
        self.requeued_units
            .fetch_add(r.end - r.start, Ordering::Relaxed);
        self.requeued.push(r);
    }

    /// Mark units finished; returns true when every unit of the run is done.
    ///
    /// Exactly one call of a run returns true: the one that brings the count
    /// to `total` (calls with `units == 0` return false).
    pub fn complete(&self, units: u64) -> bool {
        if units == 0 {
            return false;
        }
        // AcqRel: Release publishes this claimant's writes for its units;
        // Acquire makes the caller that sees the final count (and returns
        // true) also see every other claimant's released writes, via the
        // release sequence formed by the RMWs on `done`.
        let prev = self.done.fetch_add(units, Ordering::AcqRel);
        debug_assert!(
            prev.checked_add(units).is_some_and(|n| n <= self.total),
            "completed more units than the run has ({prev} + {units} > {})",
            self.total
        );
        prev + units == self.total
    }

    /// Whether every unit of the run has been completed.
    pub fn is_done(&self) -> bool {
        // Acquire: pairs with `complete`'s Release, so seeing `done` means
        // seeing all results.
        self.done.load(Ordering::Acquire) >= self.total
    }

    /// Ask every claimant to stop claiming (a run failed); claim() returns
    /// None afterwards.
    ///
    /// "Afterwards" means a claim that starts after it has observed the
    /// abort; a claim racing with `abort` may still succeed.
    pub fn abort(&self) {
        // Relaxed: the flag publishes no data. Per-location coherence still
        // guarantees that a load happening-after this store sees `true`.
        self.aborted.store(true, Ordering::Relaxed);
    }

    /// Whether [`abort`](Self::abort) has been called.
    pub fn is_aborted(&self) -> bool {
        // Relaxed: see `abort`.
        self.aborted.load(Ordering::Relaxed)
    }
}

impl fmt::Debug for WorkQueue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WorkQueue")
            .field("total", &self.total)
            .field("remaining", &self.remaining())
            .field("requeued_units", &self.requeued_units())
            .field("completed", &self.completed())
            .field("aborted", &self.is_aborted())
            .finish()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn claims_fresh_in_order_and_clamps() {
        let q = WorkQueue::new(10);
        assert_eq!(q.claim(|_| 4), Some(0..4));
        assert_eq!(q.remaining(), 6);
        assert_eq!(q.claim(|left| left + 100), Some(4..10));
        assert_eq!(q.claim(|_| 1), None);
        assert_eq!(q.remaining(), 0);
    }

    #[test]
    fn fixed_claims_in_order_clamped_and_bounded_after_exhaustion() {
        let q = WorkQueue::new(10);
        assert_eq!(q.claim_fixed(0), None);
        assert_eq!(q.claim_fixed(4), Some(0..4));
        assert_eq!(q.claim_fixed(4), Some(4..8));
        assert_eq!(q.claim_fixed(4), Some(8..10));
        assert_eq!(q.remaining(), 0);
        // Exhausted: no further claim moves the counter.
        for _ in 0..1000 {
            assert_eq!(q.claim_fixed(4), None);
        }
        assert_eq!(q.next.load(Ordering::Relaxed), 12);
        assert_eq!(q.claim(|left| left), None);
        // A size that could wrap the counter falls back to the CAS path.
        let q = WorkQueue::new(u64::MAX - 3);
        assert_eq!(q.claim_fixed(u64::MAX), Some(0..u64::MAX - 3));
        assert_eq!(q.claim_fixed(u64::MAX), None);
        // Aborted: nothing.
        let q = WorkQueue::new(10);
        q.abort();
        assert_eq!(q.claim_fixed(1), None);
    }

    #[test]
    fn size_for_sees_remaining_and_zero_stops() {
        let q = WorkQueue::new(7);
        let mut seen = vec![];
        assert_eq!(
            q.claim(|left| {
                seen.push(left);
                0
            }),
            None
        );
        assert_eq!(seen, vec![7]);
        assert_eq!(q.remaining(), 7);
    }

    #[test]
    fn requeued_first_split_and_not_declinable() {
        let q = WorkQueue::new(10);
        let a = q.claim(|_| 6).unwrap();
        q.requeue(a);
        assert_eq!(q.requeued_units(), 6);
        // Sized by size_for(len), tail pushed back.
        assert_eq!(
            q.claim_from(|n, s| if s == Source::Requeued { n / 3 } else { 0 }),
            Some((0..2, Source::Requeued))
        );
        assert_eq!(q.requeued_units(), 4);
        // A 0 answer takes the whole requeued range.
        assert_eq!(q.claim(|_| 0), Some(2..6));
        assert_eq!(q.requeued_units(), 0);
        // Fresh work can be declined.
        assert_eq!(q.claim(|_| 0), None);
        assert_eq!(q.claim_from(|_, _| 9), Some((6..10, Source::Fresh)));
        q.requeue(5..5);
        assert_eq!(q.requeued_units(), 0);
    }

    #[test]
    fn complete_true_exactly_once() {
        let q = WorkQueue::new(5);
        assert!(!q.is_done());
        assert!(!q.complete(0));
        assert!(!q.complete(2));
        assert_eq!(q.completed(), 2);
        assert!(q.complete(3));
        assert!(q.is_done());
        assert!(!q.complete(0));
    }

    #[test]
    fn empty_run_is_done() {
        let q = WorkQueue::new(0);
        assert!(q.is_done());
        assert_eq!(q.claim(|_| 1), None);
    }

    #[test]
    fn abort_stops_claims() {
        let q = WorkQueue::new(10);
        let r = q.claim(|_| 3).unwrap();
        q.requeue(r);
        q.abort();
        assert!(q.is_aborted());
        assert_eq!(q.claim(|_| 1), None);
        assert_eq!(q.claim_fresh(|_| 1), None);
        assert_eq!(q.claim_requeued(|_| 1), None);
        assert!(format!("{q:?}").contains("aborted: true"));
    }
}

/// Loom model tests. Run with (about 20 s on 2 cores; the preemption bound
/// defaults to 3 in `model`, `LOOM_MAX_PREEMPTIONS` overrides it):
///
/// ```text
/// RUSTFLAGS="--cfg loom" cargo test --release --lib loom
/// ```
#[cfg(all(test, loom))]
mod loom_tests {
    use super::*;
    use loom::sync::Arc;
    use loom::thread;

    use crate::sched::sync::{assert_exact_cover, loom_model as model};

    /// Claims with `claim` until `None`, completing each package; returns
    /// the ranges and how many `complete` calls returned true.
    fn drain_with(
        q: &WorkQueue,
        claim: impl Fn(&WorkQueue) -> Option<Range<u64>>,
    ) -> (Vec<Range<u64>>, usize) {
        let mut got = vec![];
        let mut finals = 0;
        while let Some(r) = claim(q) {
            finals += usize::from(q.complete(r.end - r.start));
            got.push(r);
        }
        (got, finals)
    }

    /// [`drain_with`] through `claim` with packages of at most `size`.
    fn drain(q: &WorkQueue, size: u64) -> (Vec<Range<u64>>, usize) {
        drain_with(q, |q| q.claim(|left| left.min(size)))
    }

    /// Joins the claimant threads: all their ranges, and their final
    /// completions summed.
    fn join_all(hs: Vec<thread::JoinHandle<(Vec<Range<u64>>, usize)>>) -> (Vec<Range<u64>>, usize) {
        let (mut all, mut finals) = (vec![], 0);
        for h in hs {
            let (r, f) = h.join().unwrap();
            all.extend(r);
            finals += f;
        }
        (all, finals)
    }

    /// Three claimants race on fresh work with different package sizes.
    #[test]
    fn loom_three_claimants_cover_once() {
        model(|| {
            let q = Arc::new(WorkQueue::new(4));
            let hs: Vec<_> = [1, 2, 3]
                .into_iter()
                .map(|size| {
                    let q = q.clone();
                    thread::spawn(move || drain(&q, size))
                })
                .collect();
            let (all, finals) = join_all(hs);
            assert_exact_cover(all, 4);
            assert_eq!(finals, 1);
            assert!(q.is_done());
        });
    }

    /// Three claimants race on fixed-size claims (`fetch_add`), which may
    /// push `next` past `total`: still every unit exactly once, and the
    /// claim after exhaustion is `None` for everyone.
    #[test]
    fn loom_fixed_claims_cover_once() {
        model(|| {
            let q = Arc::new(WorkQueue::new(5));
            let hs: Vec<_> = (0..3)
                .map(|_| {
                    let q = q.clone();
                    thread::spawn(move || drain_with(&q, |q| q.claim_fixed(2)))
                })
                .collect();
            let (all, finals) = join_all(hs);
            assert_exact_cover(all, 5);
            assert_eq!(finals, 1);
            assert!(q.is_done());
            assert_eq!(q.remaining(), 0);
            assert_eq!(q.claim_fixed(2), None);
        });
    }

    /// Two claimants race while a third gives back a package it had claimed
    /// (its device "failed"). Whatever the claimants leave behind is drained
    /// by the joining thread, as a still-running claimant would.
    #[test]
    fn loom_requeue_while_claiming() {
        model(|| {
            let q = Arc::new(WorkQueue::new(5));
            let failed = q.claim(|_| 2).unwrap();
            let claimers: Vec<_> = [1, 2]
                .into_iter()
                .map(|size| {
                    let q = q.clone();
                    thread::spawn(move || drain(&q, size))
                })
                .collect();
            let q2 = q.clone();
            let failer = thread::spawn(move || q2.requeue(failed));
            failer.join().unwrap();
            let (mut all, mut finals) = join_all(claimers);
            let (r, f) = drain(&q, 5);
            all.extend(r);
            finals += f;
            assert_exact_cover(all, 5);
            assert_eq!(finals, 1);
            assert!(q.is_done());
            assert_eq!(q.requeued_units(), 0);
        });
    }
}
