//! How a claimant with nothing to claim waits for the run to end (or for
//! work another device gives back): it spins, yields, then sleeps in short
//! steps; the run's [`Bell`] ends a sleep at once when the last units are
//! done or the run is aborted. Before the bell, every idle CPU worker slept
//! 50 us at a time (60-110 us with the kernel's timer slack), and the run
//! ended only when the last of them woke: 0.1-0.3 ms after its last
//! package on the H200, on runs of 2 ms. Where a run has a [`Standby`],
//! only it waits for the end (yielding, not sleeping); the other claimants
//! leave once nothing is left for them.

use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

use crate::sched::{StealBoard, WorkQueue};

/// A run's bell: rung when its queue is done or aborted, or when a failed
/// device gives its share back.
#[derive(Default)]
pub(crate) struct Bell {
    /// How many times it rang.
    rings: Mutex<u64>,
    rung: Condvar,
}

impl Bell {
    /// A ticket for [`Idle::wait`]: take it before checking whether the
    /// run is done, so that a ring between the check and the wait is not
    /// missed.
    pub(crate) fn ticket(&self) -> u64 {
        *self.rings.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Wakes every claimant asleep on it.
    pub(crate) fn ring(&self) {
        *self.rings.lock().unwrap_or_else(|p| p.into_inner()) += 1;
        self.rung.notify_all();
    }

    /// Sleeps up to `d`, or until it rings after `ticket`.
    fn sleep(&self, ticket: u64, d: Duration) {
        let rings = self.rings.lock().unwrap_or_else(|p| p.into_inner());
        let _ = self
            .rung
            .wait_timeout_while(rings, d, |n| *n == ticket)
            .unwrap_or_else(|p| p.into_inner());
    }
}

/// How long the run's standby (see [`Standby`]) yields its core instead
/// of sleeping once it has nothing to claim, where it polls: the rest of
/// a run after the CPU's last package (a GPU's last packages and
/// downloads) took up to 1-2 ms on the H200.
const STANDBY_POLL: Duration = Duration::from_millis(3);

/// Which claimant of a run stays until its last unit is done. Every other
/// claimant leaves once nothing of the run is left to claim or steal
/// ([`nothing_left`]), and the standby yields its core while it waits
/// (see [`STANDBY_POLL`]) rather than sleeping at once: the run's end then
/// waits for the standby alone, which is running, and not for every idle
/// claimant to wake from its sleep (on the H200 a co-executed run ended
/// 90-250 us after its last results were home, the GPU alone's 10-20:
/// BENCHMARKS.md, run 38). The standby alone takes what a failing device
/// gives back. A run beside a device that runs on the host's cores
/// (lavapipe) has none: a claimant yielding there takes that device's
/// cycles.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Standby {
    /// The pool thread whose claimant stays (`None`: every claimant stays
    /// until the run is done, as a run without a standby always did).
    pub(crate) thread: Option<usize>,
}

impl Standby {
    /// Every claimant stays until the run is done.
    pub(crate) fn none() -> Self {
        Standby { thread: None }
    }

    /// Whether the claimant on pool thread `thread` may leave before the
    /// run is done.
    pub(crate) fn may_leave(&self, thread: usize) -> bool {
        self.thread.is_some_and(|t| t != thread)
    }

    /// How the claimant on `thread` idles: the standby polls.
    pub(crate) fn idle(&self, thread: usize) -> Idle {
        Idle::new(self.thread == Some(thread))
    }
}

/// Whether nothing of the run is left to claim or steal: every unit was
/// handed out, nothing was given back, and no CPU worker's package has
/// unstarted units on `board` (where the run has CPU workers). What is
/// left then is in the hands of the claimants that hold it; only a failing
/// device can give some back.
pub(crate) fn nothing_left(queue: &WorkQueue, board: Option<&StealBoard>) -> bool {
    queue.remaining() == 0
        && queue.requeued_units() == 0
        && !board.is_some_and(StealBoard::has_unstarted)
}

/// The last stretch of [`wait_until`] that yields instead of sleeping: a
/// sleep's timeout may end 50-60 us late (the kernel's timer slack).
const YIELD_BEFORE: Duration = Duration::from_micros(200);

/// Waits until `at`, or until the run of `queue` is done or aborted (its
/// `bell` rings then): a device that joins a run late (see
/// [`crate::learn::Measure`]). Sleeps on the bell; where it `polls`, it
/// yields for the last [`YIELD_BEFORE`] instead (not beside a Vulkan
/// device that runs on the host's cores, whose cycles a yielding thread
/// takes).
pub(crate) fn wait_until(bell: &Bell, queue: &WorkQueue, at: Instant, polls: bool) {
    loop {
        // The ticket first: a ring between the check and the sleep ends
        // the sleep at once (see `Bell::ticket`).
        let ticket = bell.ticket();
        let now = Instant::now();
        if queue.is_done() || queue.is_aborted() || now >= at {
            return;
        }
        match at - now {
            left if polls && left <= YIELD_BEFORE => std::thread::yield_now(),
            left if polls => bell.sleep(ticket, left - YIELD_BEFORE),
            left => bell.sleep(ticket, left),
        }
    }
}

/// One claimant's idle spell.
pub(crate) struct Idle {
    tries: u32,
    /// Whether it yields for [`STANDBY_POLL`] from its first wait.
    polls: bool,
    /// Until when it yields instead of sleeping: set at its first wait
    /// where it polls.
    poll_until: Option<Instant>,
}

impl Idle {
    /// A new idle spell: it spins, yields, then sleeps; where it `polls`,
    /// it yields for [`STANDBY_POLL`] from its first wait before it
    /// sleeps.
    fn new(polls: bool) -> Self {
        Idle {
            tries: 0,
            polls,
            poll_until: None,
        }
    }

    /// The same kind of spell, from its start again.
    pub(crate) fn restart(&self) -> Self {
        Idle::new(self.polls)
    }

    /// Spins briefly, then yields (for as long as the spell polls), then
    /// sleeps in short steps (until the bell rings after `ticket`).
    pub(crate) fn wait(&mut self, bell: &Bell, ticket: u64) {
        match self.step(Instant::now()) {
            Step::Spin => std::hint::spin_loop(),
            Step::Yield => std::thread::yield_now(),
            Step::Sleep => bell.sleep(ticket, Duration::from_micros(50)),
        }
    }

    /// What the spell's next wait, at `now`, does.
    fn step(&mut self, now: Instant) -> Step {
        if self.polls && self.poll_until.is_none() {
            self.poll_until = Some(now + STANDBY_POLL);
        }
        self.tries = self.tries.saturating_add(1);
        if self.tries < 64 {
            Step::Spin
        } else if self.tries < 256 || self.poll_until.is_some_and(|t| now < t) {
            Step::Yield
        } else {
            Step::Sleep
        }
    }
}

/// One wait of an idle spell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    Spin,
    Yield,
    Sleep,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Only the standby stays: every other claimant may leave, none may
    /// where the run has no standby; the standby alone polls.
    #[test]
    fn only_the_standby_stays_and_only_it_polls() {
        let s = Standby { thread: Some(2) };
        assert!(!s.may_leave(2));
        assert!(s.may_leave(0) && s.may_leave(3));
        assert!(s.idle(2).polls);
        assert!(!s.idle(0).polls);
        let none = Standby::none();
        assert!((0..4).all(|t| !none.may_leave(t)));
        assert!((0..4).all(|t| !none.idle(t).polls));
        // A spell restarts as the kind it is.
        assert!(s.idle(2).restart().polls);
        assert!(!s.idle(0).restart().polls);
    }

    /// Something is left while units are unclaimed, given back, or
    /// unstarted in a worker's package on the board; nothing once all of
    /// them are in hand.
    #[test]
    fn nothing_is_left_once_every_unit_is_in_hand() {
        let queue = WorkQueue::new(100);
        let board = StealBoard::new(2, 100, true);
        assert!(!nothing_left(&queue, Some(&board)));
        let a = queue.claim(|_| 60).unwrap();
        assert!(!nothing_left(&queue, None));
        let b = queue.claim(|_| 40).unwrap();
        assert!(nothing_left(&queue, None));
        // Worker 0 shares its package: its unstarted units can be stolen.
        assert!(board.publish(0, a.clone()));
        assert!(!nothing_left(&queue, Some(&board)));
        while board.next_chunk(0, 16).is_some() {}
        assert!(nothing_left(&queue, Some(&board)));
        // A failing device gives units back.
        queue.requeue(b);
        assert!(!nothing_left(&queue, Some(&board)));
        assert!(queue.claim(|_| 0).is_some());
        assert!(nothing_left(&queue, Some(&board)));
    }

    /// A spell spins, then yields, then sleeps; a polling one yields
    /// until its window, from its first wait, is over, however long after
    /// it was made that wait comes.
    #[test]
    fn a_polling_spell_yields_until_its_window_is_over() {
        let steps = |idle: &mut Idle, at: &dyn Fn(usize) -> Instant| -> Vec<Step> {
            (0..300).map(|i| idle.step(at(i))).collect()
        };
        let t0 = Instant::now() + Duration::from_secs(60);
        let plain = steps(&mut Idle::new(false), &|_| t0);
        assert!(plain[..63].iter().all(|&s| s == Step::Spin));
        assert!(plain[63..255].iter().all(|&s| s == Step::Yield));
        assert!(plain[255..].iter().all(|&s| s == Step::Sleep));
        // Its first wait a minute after it was made: it yields through
        // the window from there.
        let within = steps(&mut Idle::new(true), &|_| t0);
        assert!(within[63..].iter().all(|&s| s == Step::Yield));
        let past = t0 + STANDBY_POLL + Duration::from_micros(1);
        let s = steps(&mut Idle::new(true), &|i| if i == 0 { t0 } else { past });
        assert_eq!(s[255..], plain[255..]);
    }

    /// A late joiner waits until its time, polling or not; a run that
    /// ends (or is aborted) first, its bell rung, ends the wait at once.
    #[test]
    fn a_late_joiner_waits_for_its_time_or_the_runs_end() {
        let bell = Bell::default();
        let queue = WorkQueue::new(10);
        for polls in [false, true] {
            let start = Instant::now();
            wait_until(&bell, &queue, start + Duration::from_millis(3), polls);
            assert!(start.elapsed() >= Duration::from_millis(3));
        }
        let (bell, queue) = (&bell, &queue);
        std::thread::scope(|s| {
            let start = Instant::now();
            let joiner = s.spawn(move || {
                wait_until(bell, queue, start + Duration::from_secs(30), false);
                start.elapsed()
            });
            std::thread::sleep(Duration::from_millis(20));
            let all = queue.claim(|_| 10).unwrap();
            assert!(queue.complete(all.end - all.start));
            bell.ring();
            assert!(joiner.join().unwrap() < Duration::from_secs(10));
        });
        // Aborted before it waits: it does not wait.
        let aborted = WorkQueue::new(10);
        aborted.abort();
        let start = Instant::now();
        wait_until(bell, &aborted, start + Duration::from_secs(30), true);
        assert!(start.elapsed() < Duration::from_secs(10));
    }

    #[test]
    fn a_ring_ends_a_sleep_and_a_stale_ticket_does_not_sleep() {
        let bell = Bell::default();
        let bell = &bell;
        std::thread::scope(|s| {
            let t = bell.ticket();
            let sleeper = s.spawn(move || {
                let start = Instant::now();
                bell.sleep(t, Duration::from_secs(30));
                start.elapsed()
            });
            std::thread::sleep(Duration::from_millis(20));
            bell.ring();
            assert!(sleeper.join().unwrap() < Duration::from_secs(10));
        });
        // Rung since the ticket: no sleep at all.
        let start = Instant::now();
        bell.sleep(0, Duration::from_secs(30));
        assert!(start.elapsed() < Duration::from_secs(10));
    }
}
