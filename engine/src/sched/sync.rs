//! Concurrency shim: std atomics and `SegQueue` normally, loom's primitives
//! under `--cfg loom` so the model checker can explore every interleaving.

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicBool, AtomicU64, Ordering};
#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use std::ops::Range;

/// Unbounded MPMC store of requeued ranges.
///
/// Normally a lock-free `crossbeam_queue::SegQueue`. `SegQueue` is not
/// loom-aware, so under `cfg(loom)` it is a loom `Mutex<VecDeque>`: same FIFO
/// semantics, and loom then sees the synchronisation the real queue provides
/// (a `push` happens-before the `pop` that returns that element).
pub(crate) struct RangeStore {
    #[cfg(not(loom))]
    inner: crossbeam_queue::SegQueue<Range<u64>>,
    #[cfg(loom)]
    inner: loom::sync::Mutex<std::collections::VecDeque<Range<u64>>>,
}

impl RangeStore {
    /// An empty store.
    pub(crate) fn new() -> Self {
        Self {
            inner: Default::default(),
        }
    }

    /// Appends a range.
    pub(crate) fn push(&self, r: Range<u64>) {
        #[cfg(not(loom))]
        self.inner.push(r);
        #[cfg(loom)]
        self.inner.lock().unwrap().push_back(r);
    }

    /// Takes the oldest range, if any.
    pub(crate) fn pop(&self) -> Option<Range<u64>> {
        #[cfg(not(loom))]
        return self.inner.pop();
        #[cfg(loom)]
        return self.inner.lock().unwrap().pop_front();
    }
}

/// Runs `f` under loom, bounded to 3 preemptions unless
/// `LOOM_MAX_PREEMPTIONS` says otherwise (unbounded takes minutes).
#[cfg(all(test, loom))]
pub(crate) fn loom_model(f: impl Fn() + Sync + Send + 'static) {
    let mut b = loom::model::Builder::new();
    if b.preemption_bound.is_none() {
        b.preemption_bound = Some(3);
    }
    b.check(f);
}

/// Asserts that `ranges` cover `0..total` exactly once (no gap, no overlap,
/// no empty range).
#[cfg(all(test, loom))]
pub(crate) fn assert_exact_cover(mut ranges: Vec<Range<u64>>, total: u64) {
    ranges.sort_by_key(|r| r.start);
    let mut at = 0;
    for r in ranges {
        assert_eq!(r.start, at, "gap or overlap");
        assert!(r.end > r.start);
        at = r.end;
    }
    assert_eq!(at, total);
}
