//! How a claimant with nothing to claim waits for the run to end (or for
//! work another device gives back): it spins, yields, then sleeps in short
//! steps; the run's [`Bell`] ends a sleep at once when the last units are
//! done or the run is aborted. Before the bell, every idle CPU worker slept
//! 50 us at a time (60-110 us with the kernel's timer slack), and the run
//! ended only when the last of them woke: 0.1-0.3 ms after its last
//! package on the H200, on runs of 2 ms.

use std::sync::{Condvar, Mutex};
use std::time::Duration;

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

/// One claimant's idle spell.
pub(crate) struct Idle(u32);

impl Idle {
    pub(crate) fn new() -> Self {
        Idle(0)
    }

    /// Spins briefly, then yields, then sleeps in short steps (until the
    /// bell rings after `ticket`).
    pub(crate) fn wait(&mut self, bell: &Bell, ticket: u64) {
        self.0 = self.0.saturating_add(1);
        if self.0 < 64 {
            std::hint::spin_loop();
        } else if self.0 < 256 {
            std::thread::yield_now();
        } else {
            bell.sleep(ticket, Duration::from_micros(50));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

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
