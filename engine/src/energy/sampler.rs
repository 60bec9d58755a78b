//! Sampled power: a background thread reads a device's power at a fixed
//! period and integrates it (trapezoids between readings), for devices
//! whose energy counter is too coarse for the window at hand (NVML's power
//! reading is a running average over a fraction of a second).

use super::Unavailable;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// A power reading.
pub trait PowerSource: Send + Sync + std::fmt::Debug {
    /// What it measures, e.g. `nvml GPU-…`.
    fn name(&self) -> String;
    /// The power now, in milliwatts.
    fn read_mw(&self) -> Result<u64, Unavailable>;
}

/// Joules integrated from power readings.
#[derive(Debug, Clone, PartialEq)]
pub struct Sampled {
    /// Joules from the first successful reading to the last.
    pub joules: f64,
    /// Seconds from the first successful reading to the last.
    pub span_s: f64,
    /// Successful readings.
    pub samples: usize,
    /// Readings that failed (left out of the integral: the trapezoid
    /// spans them).
    pub failed: usize,
}

/// A running sampler; [`stop`](Self::stop) ends it and gives the joules.
#[derive(Debug)]
pub struct PowerSampler {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<Sampled>>,
}

/// What the sampling thread keeps.
struct Integral {
    last: Option<(Instant, f64)>,
    first: Option<Instant>,
    out: Sampled,
}

impl Integral {
    fn read(&mut self, source: &dyn PowerSource) {
        let Ok(mw) = source.read_mw() else {
            self.out.failed += 1;
            return;
        };
        let (now, w) = (Instant::now(), mw as f64 * 1e-3);
        if let Some((t, p)) = self.last {
            self.out.joules += 0.5 * (p + w) * (now - t).as_secs_f64();
        }
        self.first.get_or_insert(now);
        self.out.span_s = self.first.map_or(0.0, |f| (now - f).as_secs_f64());
        self.last = Some((now, w));
        self.out.samples += 1;
    }
}

impl PowerSampler {
    /// Starts reading `source` every `period` (at least 1 ms), the first
    /// reading at once.
    pub fn start(source: Arc<dyn PowerSource>, period: Duration) -> PowerSampler {
        let period = period.max(Duration::from_millis(1));
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::Builder::new()
            .name("coexec-power".into())
            .spawn(move || {
                let mut acc = Integral {
                    last: None,
                    first: None,
                    out: Sampled {
                        joules: 0.0,
                        span_s: 0.0,
                        samples: 0,
                        failed: 0,
                    },
                };
                let mut next = Instant::now();
                // Acquire: pairs with `stop`'s Release; nothing else is
                // handed over, it only ends the loop.
                while !flag.load(Ordering::Acquire) {
                    acc.read(&*source);
                    next += period;
                    if let Some(wait) = next.checked_duration_since(Instant::now()) {
                        std::thread::park_timeout(wait);
                    }
                }
                // The window's end.
                acc.read(&*source);
                acc.out
            })
            .ok();
        PowerSampler { stop, thread }
    }

    /// Ends the sampling: one last reading, then the joules; `None` where
    /// fewer than two readings succeeded (no integral) or the thread could
    /// not be started.
    pub fn stop(mut self) -> Option<Sampled> {
        let thread = self.thread.take()?;
        // Release: see the thread's Acquire load.
        self.stop.store(true, Ordering::Release);
        thread.thread().unpark();
        thread.join().ok().filter(|s| s.samples >= 2)
    }
}

impl Drop for PowerSampler {
    fn drop(&mut self) {
        if let Some(t) = self.thread.take() {
            // Release: as in `stop`.
            self.stop.store(true, Ordering::Release);
            t.thread().unpark();
            let _ = t.join();
        }
    }
}
