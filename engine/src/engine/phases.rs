//! Where a run's host time goes, for the trace: the time at which each step
//! of a run ended, emitted as one event at its end. Nothing is timed unless
//! trace logging is on for this module.

use std::time::Instant;

/// The steps of one run and when each ended, in microseconds from the
/// run's start (`None`: not traced).
pub(super) struct Phases(Option<(Instant, Vec<(&'static str, u32)>)>);

impl Phases {
    /// Starts timing where this module's trace events are enabled.
    pub(super) fn start() -> Self {
        Phases(tracing::enabled!(tracing::Level::TRACE).then(|| (Instant::now(), Vec::new())))
    }

    /// The step `name` ended now.
    pub(super) fn mark(&mut self, name: &'static str) {
        if let Some((t, steps)) = &mut self.0 {
            let us = t.elapsed().as_micros().min(u128::from(u32::MAX)) as u32;
            steps.push((name, us));
        }
    }

    /// Emits the steps as one trace event.
    pub(super) fn emit(self) {
        if let Some((_, steps)) = self.0 {
            tracing::trace!(?steps, "run steps (us from the run's start)");
        }
    }
}
