//! Work stealing between the claimants of one device; see [`StealBoard`].

use super::estimator::usable_power;
use super::sync::{AtomicU64, Ordering};
/// The hint words (`since`, `last`): plain atomics even under loom. They
/// carry no part of the protocol (what is taken is decided by the words'
/// CAS alone, whatever a thief read from them), so the models need not
/// explore their interleavings.
use std::sync::atomic::AtomicU64 as HintU64;
use crossbeam_utils::CachePadded;
use std::ops::Range;
use std::time::{Duration, Instant};

/// Work stealing between the claimants of one device: a claimant left
/// without work takes the back half of what a sibling has not started yet.
///
/// # Why
/// A package's cost is unknown when it is claimed. On an irregular kernel
/// (Mandelbrot's rows) an early, large package may cost several times its
/// share: its worker finishes last while the others wait. The scheduler's
/// sizes decide how the work is split between *devices*; inside the CPU
/// device the workers even out what they claimed among themselves.
///
/// # Protocol
/// Each claimant has one cache-padded word holding the part of its current
/// package that nobody has started: `next` in the low 32 bits and `end` in
/// the high 32 bits, as absolute unit indices.
/// * The owner [`publish`](Self::publish)es a package it claimed into
///   its word, which is empty at that moment (it has finished the previous
///   one), then takes chunks from the front with
///   [`next_chunk`](Self::next_chunk): CAS `(next, end) -> (next + c,
///   end)`.
/// * A thief ([`steal`](Self::steal)) picks the word with the most
///   units left, `r = end - next >= 2`, and takes the back half: CAS `(next,
///   end) -> (next, end - r / 2)`, owning `[end - r / 2, end)`. It publishes
///   that range as its own package, which may be split again.
/// * A thief of another device (a GPU) weighs every word at once
///   ([`remainders`](Self::remainders)) and takes the back of each with the
///   same CAS ([`steal_from`](Self::steal_from)), running what it took as
///   one package of several parts without publishing it.
///
/// Every unit leaves a word once, to whoever moved a boundary past it with a
/// successful CAS: the owner moves `next` up, thieves move `end` down, and a
/// CAS fails whenever the word changed since it was read. The one plain
/// store (publishing into an empty word) cannot lose a thief's update:
/// thieves never CAS an empty word, and the owner publishes only once it
/// saw its word empty. A stale CAS cannot succeed on a later value that
/// happens to be equal (ABA) with another meaning either: a word's value
/// is exactly the set of units it holds unstarted, and a unit that ran is
/// never published again, so an equal value names the same unstarted
/// units in the same word.
///
/// Packages of more than `u32::MAX` units cannot be packed in a word: a
/// board for a run that large is disabled ([`publish`](Self::publish)
/// answers false and the owner runs its package whole).
///
/// The words carry unit indices only, never data: the kernel's inputs were
/// written before the run started and its outputs are read after the run's
/// end, both ordered by the run's own start and end. So every access here is
/// `Relaxed`; what makes the split exact is that all operations on one word
/// are totally ordered (its modification order) and a CAS succeeds only on
/// the latest value.
pub struct StealBoard {
    words: Box<[CachePadded<AtomicU64>]>,
    /// Per claimant, where and when its current package started: its first
    /// unit (low 32 bits) and the microsecond of the run it was published
    /// at (high 32 bits; [`NO_TIME`] where not given). What the owner ran
    /// of its package over the time since is its live rate (see
    /// [`Progress`]).
    since: Box<[CachePadded<HintU64>]>,
    /// Per claimant, the last chunk it ran of its current package: its
    /// units (low 32 bits) and nanoseconds (high 32 bits, at most
    /// `u32::MAX`); 0 before the first (see [`Progress::last_rate`]).
    last: Box<[CachePadded<HintU64>]>,
    enabled: bool,
}

/// The time of a package published without one.
const NO_TIME: u64 = u32::MAX as u64;

/// The microsecond of a run started at `t0` that it is now: the clock of
/// the package starts on a board (see [`StealBoard::publish_at`]).
pub fn run_us(t0: Instant) -> u64 {
    u64::try_from(t0.elapsed().as_micros()).unwrap_or(u64::MAX)
}

/// How far the owner of a remainder has got with its package: what a thief
/// weighs against the owner's estimated rate, which on an irregular kernel
/// can be far off (a fractal's CPU workers, measured on the cheap edge of
/// the image, ran its interior forty times slower).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Progress {
    /// Units the owner took from its package since it was published (those
    /// it ran and the chunk it is running).
    pub started: u64,
    /// The microsecond of the run the package was published at (`None`
    /// where its owner gave no time).
    pub since_us: Option<u64>,
    /// The last chunk it ran of that package, as `(units, nanoseconds)`
    /// (`None` before the first, or where its owner reports none).
    pub last_chunk: Option<(u64, u64)>,
}

impl Progress {
    /// The owner's rate over its package, in units per second, at the
    /// run's microsecond `now_us`: `None` before `min_us` microseconds
    /// passed or where no time is known.
    pub fn rate(&self, now_us: u64, min_us: u64) -> Option<f64> {
        let since = self.since_us?;
        let elapsed = now_us
            .checked_sub(since)
            .filter(|&e| e >= min_us.max(1))?;
        Some(self.started as f64 / (elapsed as f64 * 1e-6))
    }

    /// The owner's rate over the last chunk it ran, in units per second:
    /// on a kernel whose cost varies smoothly over the index space (a
    /// fractal's interior), what its next units will cost more nearly than
    /// its package's average, which the cheap units it began with lower.
    pub fn last_rate(&self) -> Option<f64> {
        let (units, ns) = self.last_chunk?;
        (ns > 0).then(|| units as f64 / (ns as f64 * 1e-9))
    }
}

/// One claimant's unstarted remainder, as a thief saw it (see
/// [`StealBoard::remainders`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Remainder {
    /// The claimant.
    pub owner: usize,
    /// Units it has not started.
    pub left: u64,
    /// How far it has got with its package.
    pub progress: Progress,
}

/// Packs `[next, end)` into a word (both fit in 32 bits: checked by the
/// caller).
fn pack(next: u64, end: u64) -> u64 {
    (end << 32) | next
}

/// Unpacks a word into `(next, end)`.
fn unpack(w: u64) -> (u64, u64) {
    (w & u64::from(u32::MAX), w >> 32)
}

/// The smallest remainder worth splitting with a thief of another device:
/// one that pays `latency_s` per package on top of running `thief_rate`
/// units/s, taking half from an owner running `owner_rate` units/s (rates
/// measured, `None` before the first measurement).
///
/// Left alone, the owner ends the remainder `r` after `r / owner`; split,
/// the later of the two ends after `max(r / 2 / owner, latency + r / 2 /
/// thief)`. That is sooner when `r * (1 / owner - 1 / (2 * thief)) >
/// latency`. Answers `None` when no remainder is worth it (the thief is
/// less than half as fast as the owner), at least 2 otherwise. An unmeasured
/// owner has just started: any remainder is worth splitting. An unmeasured
/// thief is taken as infinitely fast, which leaves the latency.
pub fn worth_splitting(
    latency_s: f64,
    owner_rate: Option<f64>,
    thief_rate: Option<f64>,
) -> Option<u64> {
    let Some(owner) = usable_power(owner_rate) else {
        return Some(2);
    };
    let thief_inv = usable_power(thief_rate).map_or(0.0, |t| 1.0 / (2.0 * t));
    let gain = 1.0 / owner - thief_inv;
    if gain <= 0.0 {
        return None;
    }
    let r = (latency_s.max(0.0) / gain).floor() + 1.0;
    // Saturating: `as` maps values past u64::MAX to u64::MAX.
    Some((r as u64).max(2))
}

impl StealBoard {
    /// A board for `claimants` claimants of a run of `total` units, with or
    /// without thieves from `outside` (another device). It is disabled
    /// (nothing is ever shared) when nobody could steal (no claimant, or a
    /// single one and no outside thief) or past `u32::MAX` units.
    pub fn new(claimants: usize, total: u64, outside: bool) -> Self {
        let thieves = claimants >= 2 || (claimants == 1 && outside);
        let hint = |_| CachePadded::new(HintU64::new(0));
        StealBoard {
            words: (0..claimants)
                .map(|_| CachePadded::new(AtomicU64::new(0)))
                .collect(),
            since: (0..claimants).map(hint).collect(),
            last: (0..claimants).map(hint).collect(),
            enabled: thieves && total <= u64::from(u32::MAX),
        }
    }

    /// Whether claimants can split each other's packages.
    pub fn enabled(&self) -> bool {
        self.enabled
    }

    /// Makes `range` claimant `me`'s current package, to be taken with
    /// [`next_chunk`](Self::next_chunk). Answers false, sharing nothing,
    /// when the board is disabled (or `me` is not one of its claimants): the
    /// caller then runs `range` itself, whole.
    ///
    /// Call it only once the previous package is used up (`next_chunk`
    /// answered `None`).
    pub fn publish(&self, me: usize, range: Range<u64>) -> bool {
        self.publish_at(me, range, None)
    }

    /// [`publish`](Self::publish), at the run's microsecond `now_us`, so
    /// that thieves see how fast the package goes (see [`Progress`]).
    pub fn publish_at(&self, me: usize, range: Range<u64>, now_us: Option<u64>) -> bool {
        let Some(word) = self.words.get(me).filter(|_| self.enabled) else {
            return false;
        };
        if range.end > u64::from(u32::MAX) || range.start > range.end {
            return false;
        }
        let at = now_us.map_or(NO_TIME, |t| t.min(NO_TIME - 1));
        // Relaxed, and before the word: a thief that pairs a new word with
        // the old start (or the reverse) misjudges one rate for one steal;
        // what it takes is decided by the word's CAS alone.
        self.since[me].store(pack(range.start, at), Ordering::Relaxed);
        // Relaxed: a hint, as `since`.
        self.last[me].store(0, Ordering::Relaxed);
        // Relaxed: see the type's docs (a store into an empty word, which
        // no thief writes; the word carries no data).
        word.store(pack(range.start, range.end), Ordering::Relaxed);
        true
    }

    /// Takes up to `max` (at least 1) units from the front of `me`'s
    /// package; `None` once it is used up (by `me` or by thieves).
    pub fn next_chunk(&self, me: usize, max: u64) -> Option<Range<u64>> {
        self.next_chunk_of(me, |_| max)
    }

    /// Takes `size(left)` units (at least 1, at most `left`) from the
    /// front of `me`'s package, `left` its unstarted units as the CAS
    /// finds them; `None` once it is used up (by `me` or by thieves).
    pub fn next_chunk_of(&self, me: usize, size: impl Fn(u64) -> u64) -> Option<Range<u64>> {
        let word = self.words.get(me)?;
        // Relaxed throughout: see the type's docs.
        let mut cur = word.load(Ordering::Relaxed);
        loop {
            let (next, end) = unpack(cur);
            if next >= end {
                return None;
            }
            let left = end - next;
            let to = next + size(left).clamp(1, left);
            match word.compare_exchange_weak(
                cur,
                pack(to, end),
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => return Some(next..to),
                Err(seen) => cur = seen,
            }
        }
    }

    /// Tells thieves that `me` ran its last chunk, of `units` units, in
    /// `time` (see [`Progress::last_rate`]).
    pub fn chunk_ran(&self, me: usize, units: u64, time: Duration) {
        if let Some(w) = self.last.get(me).filter(|_| self.enabled) {
            let units = units.min(u64::from(u32::MAX));
            let ns = u64::try_from(time.as_nanos()).unwrap_or(u64::MAX);
            // Relaxed: a hint for weighing, as `since` (see `publish_at`).
            w.store(pack(units, ns.min(u64::from(u32::MAX))), Ordering::Relaxed);
        }
    }

    /// Empties `me`'s word, so that nobody takes the rest of its package
    /// (the run is failing). A thief may still have taken a part just
    /// before.
    pub fn withdraw(&self, me: usize) {
        if let Some(word) = self.words.get(me) {
            // Relaxed: see the type's docs; a thief's CAS that lands first
            // keeps its part, one that comes later fails.
            word.store(0, Ordering::Relaxed);
        }
    }

    /// Takes the back half of the largest remainder among the other
    /// claimants' packages; `None` when none has `min_left` (at least 2)
    /// units left. `me` is the thief's own index, or any index past the
    /// board's claimants for a thief that has no word (another device).
    pub fn steal(&self, me: usize, min_left: u64) -> Option<Range<u64>> {
        self.steal_part(me, min_left.max(2), |left| left / 2)
    }

    /// [`steal`](Self::steal), taking `take(left)` units of a remainder of
    /// `left` instead of half (at most `left`; `None` where it asks for
    /// none), from a remainder of at least `min_left` (at least 1) units. A thief much faster than the
    /// owner takes most of it, or all of it: halves would leave the owner a
    /// long tail, taken back one round trip at a time, and a GPU thousands
    /// of times faster than a worker should not leave it even the next
    /// unit (the owner is running the unit before it; it finds its word
    /// empty when it looks for the next).
    pub fn steal_part(
        &self,
        me: usize,
        min_left: u64,
        take: impl Fn(u64) -> u64,
    ) -> Option<Range<u64>> {
        if !self.enabled {
            return None;
        }
        let min_left = min_left.max(1);
        loop {
            // Relaxed loads: a stale value only makes the CAS below fail.
            let (victim, cur, left) = self
                .words
                .iter()
                .enumerate()
                .filter(|&(i, _)| i != me)
                .map(|(i, w)| {
                    let cur = w.load(Ordering::Relaxed);
                    let (next, end) = unpack(cur);
                    (i, cur, end.saturating_sub(next))
                })
                .max_by_key(|&(_, _, left)| left)?;
            if left < min_left {
                return None;
            }
            match self.split(victim, cur, take(left)) {
                Ok(taken) => return taken,
                // The word changed (the owner took a chunk, or another
                // thief came first): look again.
                Err(_) => continue,
            }
        }
    }

    /// Whether any claimant's package has unstarted units, as read now
    /// (what [`remainders`](Self::remainders) would list, without
    /// building the list). False on a disabled board.
    pub fn has_unstarted(&self) -> bool {
        self.unstarted_each().any(|left| left > 0)
    }

    /// The units of every claimant's package not yet started, as read now
    /// (the sum of what [`remainders`](Self::remainders) would list,
    /// without building the list). 0 on a disabled board.
    pub fn unstarted(&self) -> u64 {
        self.unstarted_each().sum()
    }

    /// Each claimant's unstarted units, as read now; none on a disabled
    /// board.
    fn unstarted_each(&self) -> impl Iterator<Item = u64> + '_ {
        let words = if self.enabled { &self.words[..] } else { &[] };
        words.iter().map(|w| {
            // Relaxed: a snapshot, as in `remainders`; a word only changes
            // by its owner's publish or a CAS that takes units.
            let (next, end) = unpack(w.load(Ordering::Relaxed));
            end.saturating_sub(next)
        })
    }

    /// The unstarted remainders of the other claimants' packages (`me` as
    /// in [`steal`](Self::steal)), those with at least one unit left, as
    /// read now: what a thief that takes from several at once
    /// ([`steal_from`](Self::steal_from)) weighs. Empty on a disabled
    /// board.
    pub fn remainders(&self, me: usize) -> Vec<Remainder> {
        if !self.enabled {
            return Vec::new();
        }
        self.words
            .iter()
            .enumerate()
            .filter(|&(i, _)| i != me)
            .filter_map(|(i, w)| {
                // Relaxed: a snapshot for weighing; what is taken is decided
                // by each word's CAS (see the type's docs). The start is a
                // hint (see `publish_at`).
                let (next, end) = unpack(w.load(Ordering::Relaxed));
                let (first, at) = unpack(self.since[i].load(Ordering::Relaxed));
                let (units, ns) = unpack(self.last[i].load(Ordering::Relaxed));
                (end > next).then(|| Remainder {
                    owner: i,
                    left: end - next,
                    progress: Progress {
                        started: next.saturating_sub(first),
                        since_us: (at != NO_TIME).then_some(at),
                        last_chunk: (units > 0).then_some((units, ns)),
                    },
                })
            })
            .collect()
    }

    /// Takes `take(left)` units (at most `left`; `None` where it asks for
    /// none) from the back of claimant `victim`'s remainder of `left`
    /// units, as it is when the CAS lands (the owner may have taken chunks
    /// since the thief weighed it). `None` also on a disabled board.
    pub fn steal_from(&self, victim: usize, take: impl Fn(u64) -> u64) -> Option<Range<u64>> {
        let word = self.words.get(victim).filter(|_| self.enabled)?;
        // Relaxed: a stale value only makes the CAS fail.
        let mut cur = word.load(Ordering::Relaxed);
        loop {
            let (next, end) = unpack(cur);
            match self.split(victim, cur, take(end.saturating_sub(next))) {
                Ok(taken) => return taken,
                Err(seen) => cur = seen,
            }
        }
    }

    /// Moves the end of `victim`'s word, read as `cur`, down by `t` units
    /// (at most what it holds): `Ok(None)` where that is none, `Ok` with
    /// the units taken, or `Err` with the word's value where it changed
    /// since `cur`.
    fn split(&self, victim: usize, cur: u64, t: u64) -> Result<Option<Range<u64>>, u64> {
        let (next, end) = unpack(cur);
        let mid = match t.min(end.saturating_sub(next)) {
            0 => return Ok(None),
            t => end - t,
        };
        // Relaxed: see the type's docs. On failure the word changed since
        // `cur`.
        self.words[victim]
            .compare_exchange(cur, pack(next, mid), Ordering::Relaxed, Ordering::Relaxed)
            .map(|_| Some(mid..end))
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn a_chunk_is_sized_from_what_is_left_when_it_is_taken() {
        let b = StealBoard::new(2, 1000, true);
        assert!(b.publish(0, 0..100));
        // A thief takes the back half first: the owner's chunk is sized
        // from the 50 units left.
        assert_eq!(b.steal(1, 2), Some(50..100));
        assert_eq!(b.next_chunk_of(0, |left| left / 5), Some(0..10));
        assert_eq!(b.next_chunk_of(0, |left| left / 5), Some(10..18));
        // At least one unit, at most what is left.
        assert_eq!(b.next_chunk_of(0, |_| 0), Some(18..19));
        assert_eq!(b.next_chunk_of(0, |_| u64::MAX), Some(19..50));
        assert_eq!(b.next_chunk_of(0, |_| 1), None);
    }

    #[test]
    fn a_thief_sees_every_remainder_and_how_far_its_owner_got() {
        let b = StealBoard::new(3, 1000, true);
        assert!(b.publish_at(0, 100..200, Some(1000)));
        assert!(b.publish(1, 300..310));
        assert_eq!(b.next_chunk(0, 10), Some(100..110));
        assert_eq!(b.next_chunk(0, 10), Some(110..120));
        let r = b.remainders(usize::MAX);
        assert_eq!(
            r,
            vec![
                Remainder {
                    owner: 0,
                    left: 80,
                    progress: Progress {
                        started: 20,
                        since_us: Some(1000),
                        last_chunk: None
                    }
                },
                Remainder {
                    owner: 1,
                    left: 10,
                    progress: Progress {
                        started: 0,
                        since_us: None,
                        last_chunk: None
                    }
                },
            ]
        );
        // 20 units in 200 us; too early before `min_us`; no time: none.
        assert!((r[0].progress.rate(1200, 100).unwrap() - 1e5).abs() < 1e-6);
        assert_eq!(r[0].progress.rate(1050, 100), None);
        assert_eq!(r[0].progress.rate(900, 0), None);
        assert_eq!(r[1].progress.rate(5000, 0), None);
        // A claimant does not see its own word.
        assert_eq!(b.remainders(1).len(), 1);
        // The owner runs on after being weighed: the thief takes what it
        // asked of the remainder as the CAS finds it.
        assert_eq!(b.next_chunk(0, 30), Some(120..150));
        assert_eq!(b.steal_from(0, |left| left.saturating_sub(10)), Some(160..200));
        assert_eq!(b.steal_from(1, |left| left), Some(300..310));
        assert_eq!(b.steal_from(1, |left| left), None, "nothing is left");
        assert_eq!(b.steal_from(0, |_| 0), None, "nothing asked");
        assert_eq!(b.steal_from(7, |left| left), None, "not a claimant");
        assert_eq!(b.next_chunk(0, 100), Some(150..160));
        assert!(b.remainders(usize::MAX).is_empty());
        assert!(!b.has_unstarted());
        // The last chunk a claimant ran, until it publishes a new package.
        assert!(b.publish(2, 700..800));
        b.chunk_ran(2, 4, Duration::from_micros(2));
        assert!(b.has_unstarted());
        let p = b.remainders(usize::MAX)[0].progress;
        assert_eq!(p.last_chunk, Some((4, 2_000)));
        assert!((p.last_rate().unwrap() - 2e6).abs() < 1e-3);
        assert!(b.publish(2, 800..900));
        assert_eq!(b.remainders(usize::MAX)[0].progress.last_chunk, None);
        let off = StealBoard::new(1, 100, false);
        assert!(off.remainders(usize::MAX).is_empty());
        assert!(!off.publish(0, 0..10) && !off.has_unstarted());
        assert_eq!(off.steal_from(0, |left| left), None);
    }

    #[test]
    fn owner_takes_chunks_in_order() {
        let b = StealBoard::new(2, 100, false);
        assert!(b.publish(0, 10..17));
        assert_eq!(b.next_chunk(0, 3), Some(10..13));
        assert_eq!(b.next_chunk(0, 0), Some(13..14));
        assert_eq!(b.next_chunk(0, 10), Some(14..17));
        assert_eq!(b.next_chunk(0, 1), None);
    }

    #[test]
    fn thief_takes_the_back_half_of_the_largest() {
        let b = StealBoard::new(3, 100, false);
        assert!(b.publish(0, 0..4));
        assert!(b.publish(1, 10..20));
        assert_eq!(b.steal(2, 2), Some(15..20));
        // Word 1 holds 10..15 (5 left), word 0 0..4 (4 left).
        assert_eq!(b.steal(2, 2), Some(13..15));
        // Word 1 holds 10..13 (3 left): word 0 is the largest now.
        assert_eq!(b.steal(2, 2), Some(2..4));
        assert_eq!(b.next_chunk(1, 100), Some(10..13));
        assert_eq!(b.next_chunk(0, 100), Some(0..2));
        assert_eq!(b.steal(2, 2), None);
    }

    #[test]
    fn a_thief_takes_the_part_asked_up_to_all_of_it() {
        let b = StealBoard::new(2, 100, false);
        assert!(b.publish(0, 10..20));
        assert_eq!(b.steal_part(1, 2, |left| left - 2), Some(12..20));
        assert_eq!(b.next_chunk(0, 8), Some(10..12));
        assert!(b.publish(0, 30..40));
        // All of it: the owner finds its word empty.
        assert_eq!(b.steal_part(1, 2, |left| left), Some(30..40));
        assert_eq!(b.next_chunk(0, 1), None);
        assert_eq!(b.steal_part(1, 1, |left| left), None, "nothing is left");
        // Nothing asked: nothing taken. A single unit left can be taken.
        assert!(b.publish(0, 50..60));
        assert_eq!(b.steal_part(1, 2, |_| 0), None);
        assert_eq!(b.next_chunk(0, 8), Some(50..58));
        assert_eq!(b.steal_part(1, 3, |left| left), None, "below the minimum");
        assert_eq!(b.steal_part(1, 1, |left| left - 1), Some(59..60));
        assert_eq!(b.steal_part(1, 1, |left| left), Some(58..59));
        assert_eq!(b.next_chunk(0, 8), None);
        // Halves never take a sibling's last unit.
        assert!(b.publish(0, 70..71));
        assert_eq!(b.steal(1, 1), None);
    }

    #[test]
    fn a_thief_does_not_steal_from_itself_or_single_units() {
        let b = StealBoard::new(2, 100, false);
        assert!(b.publish(0, 0..50));
        assert_eq!(b.steal(0, 2), None);
        assert!(b.publish(1, 50..51));
        assert_eq!(b.steal(0, 2), None);
        assert_eq!(b.next_chunk(0, 49), Some(0..49));
        assert_eq!(b.steal(1, 2), None);
        assert_eq!(b.next_chunk(0, 49), Some(49..50));
    }

    #[test]
    fn an_outside_thief_respects_its_minimum() {
        let b = StealBoard::new(2, 100, false);
        assert!(b.publish(0, 0..10));
        assert_eq!(b.steal(usize::MAX, 11), None);
        assert_eq!(b.steal(usize::MAX, 10), Some(5..10));
        assert_eq!(b.steal(7, 0), Some(3..5), "the minimum is at least 2");
    }

    #[test]
    fn splitting_pays_only_beyond_the_thief_latency() {
        // Owner 1000 units/s, thief 10x faster, 50 us latency:
        // r * (1/1000 - 1/20000) > 50e-6  <=>  r > 0.0526...
        assert_eq!(worth_splitting(50e-6, Some(1e3), Some(1e4)), Some(2));
        // Owner 1e6 units/s: r > 50e-6 / (1e-6 - 0.05e-6) = 52.6.
        assert_eq!(worth_splitting(50e-6, Some(1e6), Some(1e7)), Some(53));
        // Unmeasured thief: r > latency * owner = 50.5.
        assert_eq!(worth_splitting(50e-6, Some(1.01e6), None), Some(51));
        // Unmeasured owner: anything.
        assert_eq!(worth_splitting(50e-6, None, Some(1.0)), Some(2));
        // A thief at most half as fast as the owner never gains.
        assert_eq!(worth_splitting(0.0, Some(2.0), Some(1.0)), None);
        assert_eq!(worth_splitting(0.0, Some(3.0), Some(1.0)), None);
        // Nonsense rates count as unmeasured; huge thresholds saturate.
        assert_eq!(worth_splitting(1e-3, Some(f64::NAN), Some(1.0)), Some(2));
        assert_eq!(worth_splitting(1e300, Some(1.0), None), Some(u64::MAX));
    }

    #[test]
    fn disabled_boards_share_nothing() {
        let one = StealBoard::new(1, 100, false);
        assert!(!one.enabled() && !one.publish(0, 0..10));
        assert_eq!(one.steal(0, 2), None);
        let none = StealBoard::new(0, 100, true);
        assert!(!none.enabled() && !none.publish(0, 0..10));
        let gpu_only_thief = StealBoard::new(1, 100, true);
        assert!(gpu_only_thief.enabled() && gpu_only_thief.publish(0, 0..10));
        assert_eq!(gpu_only_thief.steal(1, 2), Some(5..10));
        let huge = StealBoard::new(4, u64::from(u32::MAX) + 1, true);
        assert!(!huge.enabled() && !huge.publish(0, 0..10));
        let b = StealBoard::new(2, 100, false);
        assert!(!b.publish(5, 0..10), "not a claimant");
        assert_eq!(b.next_chunk(5, 1), None);
    }

    #[test]
    fn withdrawn_packages_are_not_stolen() {
        let b = StealBoard::new(2, 100, false);
        assert!(b.publish(0, 0..50));
        b.withdraw(0);
        assert_eq!(b.steal(1, 2), None);
        assert_eq!(b.next_chunk(0, 1), None);
    }

    /// Threads run packages chunk by chunk and steal when out of work:
    /// every unit is taken exactly once.
    #[test]
    fn concurrent_owners_and_thieves_cover_once() {
        use std::sync::atomic::AtomicU64 as StdU64;
        // Small under miri, which runs every atomic step slowly.
        const TOTAL: u64 = if cfg!(miri) { 200 } else { 20_000 };
        let b = StealBoard::new(4, TOTAL, false);
        let hits: Vec<StdU64> = (0..TOTAL).map(|_| StdU64::new(0)).collect();
        std::thread::scope(|s| {
            for me in 0..4u64 {
                let (b, hits) = (&b, &hits);
                s.spawn(move || {
                    // Uneven initial packages: worker 0 holds most of it.
                    let (q1, q2) = (TOTAL * 17 / 20, TOTAL * 19 / 20);
                    let mine = match me {
                        0 => 0..q1,
                        1 => q1..q2,
                        2 => q2..TOTAL,
                        _ => TOTAL..TOTAL,
                    };
                    let mut next = Some(mine);
                    while let Some(r) = next.take() {
                        assert!(b.publish(me as usize, r));
                        while let Some(c) = b.next_chunk(me as usize, 1 + me) {
                            for u in c {
                                hits[u as usize].fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                            }
                        }
                        // Worker 3 steals greedily (see `steal_part`),
                        // worker 2 from every remainder at once, running
                        // what it took without publishing it, as a GPU
                        // does.
                        next = match me {
                            3 => b.steal_part(3, 1, |left| left),
                            2 => {
                                for r in b.remainders(2) {
                                    let keep = r.left / 3;
                                    let took = b.steal_from(r.owner, |l| l.saturating_sub(keep));
                                    for u in took.into_iter().flatten() {
                                        hits[u as usize]
                                            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                                    }
                                }
                                b.steal(2, 2)
                            }
                            _ => b.steal(me as usize, 2),
                        };
                    }
                });
            }
        });
        for (u, h) in hits.iter().enumerate() {
            assert_eq!(h.load(std::sync::atomic::Ordering::Relaxed), 1, "unit {u}");
        }
    }
}

/// Loom model of the stealing protocol. Run with the queue's models:
///
/// ```text
/// RUSTFLAGS="--cfg loom" cargo test --release --lib loom
/// ```
#[cfg(all(test, loom))]
mod loom_tests {
    use super::*;
    use loom::sync::Arc;
    use loom::thread;

    /// Runs `me`'s package chunk by chunk (at most `chunk` units, and at
    /// most half of what is left, as a worker's chunks are held to a part
    /// of it), then steals and runs what it stole, until there is nothing
    /// left to steal; returns what it ran.
    /// Odd claimants steal greedily (all of a remainder, down to a single
    /// unit, as a GPU much faster than the owner does), even ones halves.
    fn work(b: &StealBoard, me: usize, first: Range<u64>, chunk: u64) -> Vec<Range<u64>> {
        let mut ran = vec![];
        let mut next = Some(first);
        while let Some(r) = next.take() {
            assert!(b.publish(me, r));
            while let Some(c) = b.next_chunk_of(me, |left| chunk.min(left.div_ceil(2))) {
                ran.push(c);
            }
            next = match me % 2 {
                1 => b.steal_part(me, 1, |left| left),
                _ => b.steal(me, 2),
            };
        }
        ran
    }

    /// A thief without a word (another device, a GPU): part of every
    /// remainder at once, run without being published.
    fn outside(b: &StealBoard) -> Vec<Range<u64>> {
        b.remainders(usize::MAX)
            .into_iter()
            .filter_map(|r| b.steal_from(r.owner, |left| left.saturating_sub(r.left / 2)))
            .collect()
    }

    /// Runs one claimant per `(first package, chunk size)` of `claimants`,
    /// and an outside thief where `gpu`, and checks that together they
    /// ran every unit of `0..total` once.
    fn check(total: u64, claimants: &'static [(Range<u64>, u64)], gpu: bool) {
        crate::sched::sync::loom_model(move || {
            let b = Arc::new(StealBoard::new(claimants.len(), total, gpu));
            let mut hs: Vec<_> = claimants
                .iter()
                .enumerate()
                .map(|(me, (first, chunk))| {
                    let b = b.clone();
                    let (first, chunk) = (first.clone(), *chunk);
                    thread::spawn(move || work(&b, me, first, chunk))
                })
                .collect();
            if gpu {
                let b = b.clone();
                hs.push(thread::spawn(move || outside(&b)));
            }
            let all = hs.into_iter().flat_map(|h| h.join().unwrap()).collect();
            crate::sched::sync::assert_exact_cover(all, total);
        });
    }

    /// An owner running a 4-unit package one unit at a time races a thief
    /// that has nothing (and may itself be robbed back).
    #[test]
    fn loom_owner_and_thief_cover_once() {
        check(4, &[(0..4, 1), (4..4, 1)], false);
    }

    /// An owner whose chunks are sized from what is left (2, then 1, then
    /// 1 of 4 units) races a thief.
    #[test]
    fn loom_chunks_sized_from_what_is_left_cover_once() {
        check(4, &[(0..4, 4), (4..4, 1)], false);
    }

    /// Two thieves race for the end of one owner's package.
    #[test]
    fn loom_two_thieves_cover_once() {
        check(2, &[(0..2, 1), (2..2, 1), (2..2, 1)], false);
    }

    /// A thief of another device, taking part of every remainder at once,
    /// races two owners, one of which steals greedily from the other.
    #[test]
    fn loom_a_thief_of_all_remainders_covers_once() {
        check(2, &[(0..1, 1), (1..2, 1)], true);
    }
}
