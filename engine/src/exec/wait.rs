//! How a GPU's dispatch loop waits for its oldest package (and a staged
//! GPU's for its transfers).
//!
//! A blocking wait (`vkWaitSemaphores`) leaves the core to others, but the
//! driver may report the completion late: on the H200, a resident SAXPY
//! package whose kernel took 0.28 ms by the GPU's own timestamps was seen
//! complete 0.52 ms after its submission, where a program that submits and
//! waits once took 0.385 ms in all; tiny packages (tens of microseconds) were
//! seen at once. So near the package's expected end the loop polls the
//! timeline instead ([`WaitMode::Hybrid`], the default): it blocks until
//! [`SPIN_LEAD`] before the end the cost model expects, polls until as long
//! after it, and blocks again past that (the estimate was wrong: a core is not
//! burnt for a package of unknown length beyond that). A package of unknown
//! length (a kernel's first, unmeasured: a small probe) is polled for from
//! the start of its wait, for as long as the lead. The loop's core is
//! reserved for it (the CPU workers leave one per GPU), so the polling takes
//! no worker's time. A staged GPU's waits for its transfer queue (its oldest
//! download, the last batch of a run) poll the same way (see
//! [`crate::exec::pipeline::Pipeline::reap`]).

use crate::error::VkError;
use crate::vk::Completion;
use std::time::{Duration, Instant};

/// How the dispatch loop waits (`COEXEC_GPU_WAIT`: `block`, `spin` or
/// `hybrid`; a knob for measuring the rule, not for tuning runs; see
/// [`mode_for`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WaitMode {
    /// Always the driver's blocking wait.
    Block,
    /// Polls the timeline until the package completes or the wait ends.
    Spin,
    /// Blocks, then polls around the package's expected end.
    Hybrid,
}

/// The window around a package's expected end in which [`WaitMode::Hybrid`]
/// polls: wider than the late reports seen (0.15-0.3 ms on the H200) and
/// than the cost model's usual error on a warm kernel.
pub(crate) const SPIN_LEAD: Duration = Duration::from_micros(400);

/// The mode `COEXEC_GPU_WAIT` asks for, if it names one. Read once per
/// process.
fn asked_mode() -> Option<WaitMode> {
    static MODE: std::sync::OnceLock<Option<WaitMode>> = std::sync::OnceLock::new();
    *MODE.get_or_init(|| match std::env::var("COEXEC_GPU_WAIT").as_deref().map(str::trim) {
        Ok("block") => Some(WaitMode::Block),
        Ok("spin") => Some(WaitMode::Spin),
        Ok("hybrid") => Some(WaitMode::Hybrid),
        _ => None,
    })
}

/// How a dispatch loop waits for a device: as `COEXEC_GPU_WAIT` asks,
/// else [`WaitMode::Hybrid`], except for a Vulkan device that is a CPU
/// implementation (`on_host`: Mesa lavapipe), which is never polled: it
/// runs its dispatches on the host's cores, and a loop polling beside it
/// takes the cycles it runs on. (On the 2-core dev machine, lavapipe and
/// one worker under a fixed even split ran 1.20-1.24 ms a run with the
/// loop polling, 0.72-0.74 blocking: BENCHMARKS.md, run 25.)
pub(crate) fn mode_for(on_host: bool) -> WaitMode {
    mode_given(asked_mode(), on_host)
}

/// [`mode_for`] with `asked` what the environment asked for.
fn mode_given(asked: Option<WaitMode>, on_host: bool) -> WaitMode {
    match (asked, on_host) {
        (Some(m), _) => m,
        (None, true) => WaitMode::Block,
        (None, false) => WaitMode::Hybrid,
    }
}

/// The polling window of a wait from `now` until `until` for a package
/// expected to end at `expected` (`None`: unknown), under `mode`: when
/// polling starts and stops (an empty window: no polling).
pub(crate) fn spin_window(
    mode: WaitMode,
    now: Instant,
    until: Instant,
    expected: Option<Instant>,
) -> (Instant, Instant) {
    match (mode, expected) {
        (WaitMode::Spin, _) => (now, until),
        (WaitMode::Hybrid, Some(end)) => {
            let from = end.checked_sub(SPIN_LEAD).unwrap_or(now).max(now);
            (from.min(until), (end + SPIN_LEAD).min(until))
        }
        // A kernel's first package, unmeasured, is small (a probe): its
        // end is polled for from the start, for as long as the lead (a
        // cold co-executed run's first package, 6 us on an H200's clock,
        // was seen complete 128 us after its submission, while the
        // learned sizes of the next waited on it: BENCHMARKS.md, run 37).
        (WaitMode::Hybrid, None) => (now, (now + SPIN_LEAD).min(until)),
        _ => (until, until),
    }
}

/// Waits until `ticket` of `ring` (a dispatch ring's or a transfer
/// queue's completion) completed (`Ok(true)`) or `until` passed
/// (`Ok(false)`), polling in the window [`spin_window`] gives under `mode`
/// and blocking outside it.
pub(crate) fn wait_ticket(
    ring: &Completion,
    ticket: u64,
    until: Instant,
    (expected, mode): (Option<Instant>, WaitMode),
) -> Result<bool, VkError> {
    let now = Instant::now();
    let (from, to) = spin_window(mode, now, until, expected);
    if now < from && ring.wait(ticket, nanos(from - now))? {
        return Ok(true);
    }
    while Instant::now() < to {
        if ring.is_complete(ticket)? {
            return Ok(true);
        }
        std::hint::spin_loop();
    }
    let now = Instant::now();
    if now >= until {
        return ring.is_complete(ticket);
    }
    ring.wait(ticket, nanos(until - now))
}

/// The instant `ns` nanoseconds after `now` (a day where that is past what
/// an `Instant` holds: an engine's timeout may be set that long).
pub(crate) fn deadline(now: Instant, ns: u64) -> Instant {
    now.checked_add(Duration::from_nanos(ns))
        .or_else(|| now.checked_add(Duration::from_secs(86_400)))
        .unwrap_or(now)
}

fn nanos(d: Duration) -> u64 {
    d.as_nanos().min(u128::from(u64::MAX)) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_window_surrounds_the_expected_end_within_the_wait() {
        let now = Instant::now();
        let ms = Duration::from_millis;
        let until = now + ms(100);
        // Hybrid: from SPIN_LEAD before to SPIN_LEAD after the end.
        let end = now + ms(10);
        assert_eq!(
            spin_window(WaitMode::Hybrid, now, until, Some(end)),
            (end - SPIN_LEAD, end + SPIN_LEAD)
        );
        // An end closer than the lead: polling starts now.
        let soon = now + Duration::from_micros(100);
        assert_eq!(
            spin_window(WaitMode::Hybrid, now, until, Some(soon)),
            (now, soon + SPIN_LEAD)
        );
        // An end past the wait: no polling past `until`.
        let late = now + ms(200);
        assert_eq!(spin_window(WaitMode::Hybrid, now, until, Some(late)), (until, until));
        // An unknown end: polled from the start, for the lead.
        assert_eq!(
            spin_window(WaitMode::Hybrid, now, until, None),
            (now, now + SPIN_LEAD)
        );
        let short = now + Duration::from_micros(50);
        assert_eq!(spin_window(WaitMode::Hybrid, now, short, None), (now, short));
        // Blocking: no polling at all.
        assert_eq!(spin_window(WaitMode::Block, now, until, Some(end)), (until, until));
        // Spinning: the whole wait.
        assert_eq!(spin_window(WaitMode::Spin, now, until, None), (now, until));
    }

    /// A device that runs on the host's cores is never polled unless the
    /// environment asks; any other is polled around a package's end.
    #[test]
    fn a_device_on_the_hosts_cores_blocks() {
        assert_eq!(mode_given(None, true), WaitMode::Block);
        assert_eq!(mode_given(None, false), WaitMode::Hybrid);
        for m in [WaitMode::Block, WaitMode::Spin, WaitMode::Hybrid] {
            assert_eq!(mode_given(Some(m), true), m);
            assert_eq!(mode_given(Some(m), false), m);
        }
    }

    /// A deadline is `ns` after now; however far that is, never a panic and
    /// never sooner than a day.
    #[test]
    fn a_deadline_is_the_timeout_after_now_and_never_panics() {
        let now = Instant::now();
        assert_eq!(deadline(now, 5_000), now + Duration::from_micros(5));
        assert!(deadline(now, u64::MAX) >= now + Duration::from_secs(86_400));
        assert_eq!(deadline(now, 0), now);
    }
}
