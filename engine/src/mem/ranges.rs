//! Sets of byte ranges: where a device-local mirror holds the same bytes as
//! its host copy (see [`super::mirror`]).

use std::ops::Range;

/// A set of `u64` offsets kept as sorted, disjoint, non-adjacent ranges.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct RangeSet {
    ranges: Vec<Range<u64>>,
}

impl RangeSet {
    /// The empty set.
    pub(crate) fn new() -> Self {
        RangeSet::default()
    }

    /// Empties the set.
    pub(crate) fn clear(&mut self) {
        self.ranges.clear();
    }

    /// The ranges, in increasing order.
    pub(crate) fn ranges(&self) -> &[Range<u64>] {
        &self.ranges
    }

    /// Adds `r` (an empty range adds nothing).
    pub(crate) fn insert(&mut self, r: Range<u64>) {
        if r.is_empty() {
            return;
        }
        // The first range that ends at or after r.start (touching merges).
        let lo = self.ranges.partition_point(|x| x.end < r.start);
        // The first range that starts after r.end (touching merges).
        let hi = self.ranges.partition_point(|x| x.start <= r.end);
        let (mut start, mut end) = (r.start, r.end);
        if lo < hi {
            start = start.min(self.ranges[lo].start);
            end = end.max(self.ranges[hi - 1].end);
        }
        self.ranges.splice(lo..hi, std::iter::once(start..end));
    }

    /// Removes `r`.
    pub(crate) fn remove(&mut self, r: Range<u64>) {
        if r.is_empty() {
            return;
        }
        let lo = self.ranges.partition_point(|x| x.end <= r.start);
        let hi = self.ranges.partition_point(|x| x.start < r.end);
        if lo >= hi {
            return;
        }
        let first = self.ranges[lo].clone();
        let last = self.ranges[hi - 1].clone();
        let mut keep = Vec::with_capacity(2);
        if first.start < r.start {
            keep.push(first.start..r.start);
        }
        if last.end > r.end {
            keep.push(r.end..last.end);
        }
        self.ranges.splice(lo..hi, keep);
    }

    /// The parts of `r` not in the set, in increasing order.
    pub(crate) fn missing(&self, r: Range<u64>) -> Vec<Range<u64>> {
        let mut out = Vec::new();
        if r.is_empty() {
            return out;
        }
        let mut at = r.start;
        let lo = self.ranges.partition_point(|x| x.end <= r.start);
        for x in &self.ranges[lo..] {
            if x.start >= r.end {
                break;
            }
            if x.start > at {
                out.push(at..x.start);
            }
            at = at.max(x.end);
        }
        if at < r.end {
            out.push(at..r.end);
        }
        out
    }

    /// Whether the set holds every offset of `r`.
    #[cfg(test)]
    pub(crate) fn covers(&self, r: Range<u64>) -> bool {
        self.missing(r).is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn inserts_merge_and_removes_split() {
        let mut s = RangeSet::new();
        s.insert(10..20);
        s.insert(30..40);
        s.insert(20..25);
        assert_eq!(s.ranges(), &[10..25, 30..40]);
        s.insert(24..30);
        assert_eq!(s.ranges(), &[Range { start: 10, end: 40 }]);
        s.remove(15..18);
        assert_eq!(s.ranges(), &[10..15, 18..40]);
        assert_eq!(s.missing(0..50), vec![0..10, 15..18, 40..50]);
        assert!(s.covers(20..40));
        assert!(!s.covers(14..16));
        s.remove(0..100);
        assert!(s.ranges().is_empty());
    }

    proptest! {
        /// Against a bitmap of 64 offsets: any sequence of inserts and
        /// removes leaves the same set, kept normalized, and `missing` is
        /// exactly the complement within the queried range.
        #[test]
        fn prop_matches_a_bitmap(
            ops in proptest::collection::vec((any::<bool>(), 0u64..64, 0u64..64), 0..24),
            q in (0u64..64, 0u64..64),
        ) {
            let mut s = RangeSet::new();
            let mut bits = [false; 64];
            for (add, a, b) in ops {
                let r = a.min(b)..a.max(b);
                for i in r.clone() {
                    bits[i as usize] = add;
                }
                if add { s.insert(r) } else { s.remove(r) }
            }
            for w in s.ranges().windows(2) {
                prop_assert!(w[0].end < w[1].start, "{:?}", s);
            }
            for (i, &bit) in bits.iter().enumerate() {
                let i = i as u64;
                prop_assert_eq!(s.covers(i..i + 1), bit);
            }
            let q = q.0.min(q.1)..q.0.max(q.1);
            let missing: Vec<u64> = s.missing(q.clone()).into_iter().flatten().collect();
            let want: Vec<u64> = q.filter(|&i| !bits[i as usize]).collect();
            prop_assert_eq!(missing, want);
        }
    }
}
