//! A staged run's transfers in flight: uploads submitted ahead of the
//! dispatches that read them, downloads submitted behind the packages that
//! wrote them, neither waited for at submission (see
//! [`crate::vk::transfer`] for how the queue orders them). A package's
//! units count as done only once its download completed, so exactly-once
//! and host visibility are those of a synchronous download.

use super::kernel::Package;
use super::staging::Staging;
use super::wait::{self, WaitMode};
use crate::vk::transfer::{Copy, Direction, Stager};
use crate::vk::Completion;
use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// Why a transfer batch did not complete.
pub(crate) enum TransferError {
    /// It did not end in time; it may still run.
    TimedOut(String),
    /// It failed; it may have run in part.
    Failed(String),
}

impl TransferError {
    /// The message.
    pub(crate) fn into_message(self) -> String {
        match self {
            TransferError::TimedOut(m) | TransferError::Failed(m) => m,
        }
    }
}

/// A package whose download is in flight; `T` is what the dispatch loop
/// keeps of it.
pub(crate) struct Download<T> {
    pub(crate) payload: T,
    /// The package's pieces (see `Geometry::pieces`).
    pub(crate) package: Vec<Package>,
    pub(crate) bytes: u64,
    value: u64,
    submitted: Instant,
    /// Nothing else was on the queue when it was submitted: its time to
    /// completion measures the bandwidth.
    alone: bool,
}

/// The transfers of one staged run on one GPU.
pub(crate) struct Pipeline<'r, T> {
    stager: std::sync::MutexGuard<'r, Stager>,
    /// Uploads in flight: the batch's value, its copies, and when it was
    /// submitted.
    uploads: VecDeque<(u64, Vec<Copy>, Instant)>,
    downloads: VecDeque<Download<T>>,
    /// The value of the last upload batch of the run (0: none).
    last_upload: u64,
    /// Wall seconds the loop spent submitting and waiting for transfers.
    pub(crate) seconds: f64,
    /// The completed batches: upload or not, bytes, submitted, seen
    /// complete.
    pub(crate) spans: Vec<(bool, u64, Instant, Instant)>,
}

impl<'r, T> Pipeline<'r, T> {
    /// The pipeline over `stager`.
    pub(crate) fn new(stager: std::sync::MutexGuard<'r, Stager>) -> Self {
        Pipeline {
            stager,
            uploads: VecDeque::new(),
            downloads: VecDeque::new(),
            last_upload: 0,
            seconds: 0.0,
            spans: Vec::new(),
        }
    }

    /// Submits what package `p` reads that the mirrors lack (the dispatch
    /// submitted next reads it); the bytes.
    pub(crate) fn upload(
        &mut self,
        staging: &Staging<'_>,
        p: &Package,
        timeout_ns: u64,
    ) -> Result<u64, TransferError> {
        let copies = staging.uploads(p);
        if copies.is_empty() {
            return Ok(0);
        }
        let submitted = Instant::now();
        self.submit(Direction::Upload, &copies, None, timeout_ns)?;
        let value = self.stager_last();
        self.last_upload = value;
        staging.queued(&copies);
        let bytes = copies.iter().map(|c| c.bytes).sum();
        self.uploads.push_back((value, copies, submitted));
        Ok(bytes)
    }

    /// Submits the download of what `package` wrote, after ring ticket
    /// `after`; `Ok(Some(payload))` back when there is nothing to download
    /// (the package is done now). `alone`: nothing else is on the queue.
    pub(crate) fn download(
        &mut self,
        staging: &Staging<'_>,
        package: Vec<Package>,
        after: (&Completion, u64),
        (payload, alone): (T, bool),
        timeout_ns: u64,
    ) -> Result<Option<T>, (TransferError, T)> {
        let copies = staging.downloads(&package);
        if copies.is_empty() {
            // Nothing to bring back (lazy outputs stay in the mirrors).
            staging.downloaded(&package);
            return Ok(Some(payload));
        }
        if let Err(e) = self.submit(Direction::Download, &copies, Some(after), timeout_ns) {
            return Err((e, payload));
        }
        self.downloads.push_back(Download {
            payload,
            package,
            bytes: copies.iter().map(|c| c.bytes).sum(),
            value: self.stager_last(),
            submitted: Instant::now(),
            alone,
        });
        Ok(None)
    }

    /// On a separate transfer queue, what the next dispatch waits for: the
    /// last upload batch of the run (and so every batch before it); `None`
    /// on the compute queue (submission order and barriers order them) or
    /// before the first upload.
    pub(crate) fn dispatch_wait(&self) -> Option<(&Completion, u64)> {
        (self.stager.separate() && self.last_upload > 0)
            .then(|| (self.stager.completion(), self.last_upload))
    }

    /// At the end of the run: orders later batches after its dispatches,
    /// the last of which is ticket `last` of `ring` (see
    /// [`Stager::after_dispatches`]).
    pub(crate) fn close(&mut self, ring: &Completion, last: u64, timeout_ns: u64) -> bool {
        // SAFETY: `ring` is the completion of this device's dispatch ring,
        // which the engine keeps as long as its stager.
        let r = unsafe { self.stager.after_dispatches(ring, last, timeout_ns) };
        matches!(r, Ok(true))
    }

    /// Whether a download is in flight.
    pub(crate) fn has_downloads(&self) -> bool {
        !self.downloads.is_empty()
    }

    /// How long, from `now`, until the downloads in flight are expected
    /// home: their bytes at the device's learned download bandwidth, from
    /// when the oldest was submitted (they run one after another; one
    /// queued behind a dispatch starts later, which this does not see).
    /// Zero with none in flight.
    pub(crate) fn download_backlog(&self, now: Instant) -> Duration {
        let Some(oldest) = self.downloads.front() else {
            return Duration::ZERO;
        };
        let bytes: u64 = self.downloads.iter().map(|d| d.bytes).sum();
        let bw = self.stager.rates().bandwidth(Direction::Download.way());
        backlog(oldest.submitted, bytes, bw, now)
    }

    /// The completed transfers, oldest first: uploads are marked valid in
    /// the mirrors, downloads handed back (their packages are done). With
    /// `wait`, waits up to its nanoseconds for the oldest download first,
    /// polling around the download's expected end as its mode asks (see
    /// [`wait::wait_ticket`]): a blocking wait on a transfer queue was seen
    /// to return 100-180 us after a co-executed first run's last download
    /// came home on an H200, where the GPU alone's run, whose downloads
    /// share the polled compute queue, ended 10-20 us after its own
    /// (BENCHMARKS.md, run 37).
    pub(crate) fn reap(
        &mut self,
        staging: &Staging<'_>,
        wait: Option<(u64, WaitMode)>,
    ) -> Result<Vec<Download<T>>, TransferError> {
        let failed = |e: crate::error::VkError| TransferError::Failed(e.to_string());
        if let (Some((ns, mode)), Some(d)) = (wait, self.downloads.front()) {
            let t = Instant::now();
            let bw = self.stager.rates().bandwidth(Direction::Download.way());
            let expected = t + backlog(d.submitted, d.bytes, bw, t);
            let ok = wait::wait_ticket(
                self.stager.completion(),
                d.value,
                wait::deadline(t, ns),
                (Some(expected), mode),
            )
            .map_err(failed)?;
            self.seconds += t.elapsed().as_secs_f64();
            if !ok {
                return Err(TransferError::TimedOut(
                    "a download ran past the timeout".into(),
                ));
            }
        }
        let now = Instant::now();
        while let Some((value, ..)) = self.uploads.front() {
            if !self.stager.reached(*value).map_err(failed)? {
                break;
            }
            let (_, copies, submitted) = self.uploads.pop_front().expect("front exists");
            let bytes = copies.iter().map(|c| c.bytes).sum();
            self.spans.push((true, bytes, submitted, now));
            staging.uploaded(&copies);
        }
        let mut done = Vec::new();
        while let Some(d) = self.downloads.front() {
            if !self.stager.reached(d.value).map_err(failed)? {
                break;
            }
            let d = self.downloads.pop_front().expect("front exists");
            self.spans.push((false, d.bytes, d.submitted, now));
            if d.alone {
                let s = d.submitted.elapsed().as_secs_f64();
                self.stager.rates().record(Direction::Download.way(), d.bytes, s);
            }
            done.push(d);
        }
        Ok(done)
    }

    /// Waits up to `timeout_ns` for every batch submitted; then the
    /// completed transfers as [`Pipeline::reap`] gives them, and the
    /// downloads that did not complete (their outcome is unknown).
    pub(crate) fn drain(
        &mut self,
        staging: &Staging<'_>,
        timeout_ns: u64,
    ) -> (Vec<Download<T>>, Vec<Download<T>>) {
        let _ = self.stager.drain(timeout_ns);
        let done = self.reap(staging, None).unwrap_or_default();
        let left = self.downloads.drain(..).collect();
        self.uploads.clear();
        (done, left)
    }

    /// Waits up to `timeout_ns` for every batch that copied anything,
    /// polling at first as `mode` asks. Not for [`close`](Self::close)'s
    /// empty batch: it touches none of the run's buffers, and waiting for
    /// its round trip was most of the 100-185 us by which a co-executed
    /// first run on an H200 ended after its last results were home
    /// (BENCHMARKS.md, run 38).
    pub(crate) fn idle(&self, timeout_ns: u64, mode: WaitMode) -> bool {
        let now = Instant::now();
        let last = self.stager.last_copies();
        if last == 0 {
            return true;
        }
        let until = wait::deadline(now, timeout_ns);
        matches!(
            wait::wait_ticket(self.stager.completion(), last, until, (Some(now), mode)),
            Ok(true)
        )
    }

    /// Submits one batch without waiting for it.
    fn submit(
        &mut self,
        direction: Direction,
        copies: &[Copy],
        after: Option<(&Completion, u64)>,
        timeout_ns: u64,
    ) -> Result<(), TransferError> {
        let t = Instant::now();
        // SAFETY: the copies name the run's buffers and their mirrors, of
        // this device, sized by the buffers, with transfer usage (staged
        // engines create both so); the run borrows them until it returns,
        // and the dispatch loop drains the stager before returning (or the
        // stager waits for its batches when dropped, and the engine's
        // devices outlive it). The ring's timeline outlives the batch
        // likewise.
        let r = unsafe { self.stager.submit(direction, copies, after, timeout_ns) };
        self.seconds += t.elapsed().as_secs_f64();
        match r {
            Ok(Some(_)) => Ok(()),
            Ok(None) => Err(TransferError::TimedOut(format!(
                "a {direction:?} transfer waited past the timeout for a command buffer"
            ))),
            Err(e) => Err(TransferError::Failed(e.to_string())),
        }
    }

    /// The value of the batch submitted last.
    fn stager_last(&self) -> u64 {
        self.stager.last()
    }
}

/// How long, from `now`, until `bytes` queued one after another since
/// `since` are home at `bandwidth` bytes per second (zero where they
/// should be already, or where the figures are no figures).
fn backlog(since: Instant, bytes: u64, bandwidth: f64, now: Instant) -> Duration {
    let s = bytes as f64 / bandwidth;
    if !(s.is_finite() && s > 0.0) {
        return Duration::ZERO;
    }
    let end = since + Duration::from_secs_f64(s.min(3600.0));
    end.saturating_duration_since(now)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_download_backlog_is_what_is_left_of_the_bytes_in_flight() {
        let t0 = Instant::now();
        let ms = Duration::from_millis;
        // 40 MB at 40 GB/s from t0: 1 ms, of which 0.25 ms have passed.
        let left = backlog(t0, 40_000_000, 40e9, t0 + Duration::from_micros(250));
        assert_eq!(left, Duration::from_micros(750));
        // Past their end, or nothing, or no bandwidth: none.
        assert_eq!(backlog(t0, 40_000_000, 40e9, t0 + ms(2)), Duration::ZERO);
        assert_eq!(backlog(t0, 0, 40e9, t0), Duration::ZERO);
        assert_eq!(backlog(t0, 1, 0.0, t0), Duration::ZERO);
        assert_eq!(backlog(t0, 1, f64::NAN, t0), Duration::ZERO);
        // Absurd figures are capped at an hour.
        assert_eq!(backlog(t0, u64::MAX, 1e-9, t0), Duration::from_secs(3600));
    }
}
