//! Host coherence of staged runs: when what a GPU package wrote into a
//! device-local mirror reaches the host copy.
//!
//! - [`HostCoherence::Eager`] (the default): each GPU package's outputs are
//!   downloaded behind it, and the package counts done once its download
//!   completed; when a run returns, every host copy is current.
//! - [`HostCoherence::Lazy`]: GPU packages download nothing. What they wrote
//!   stays in the mirror, valid there, and is recorded as *stale on the
//!   host* (the mirror slot's `stale` ranges, always within its valid
//!   ranges). It is downloaded only when the host can observe it:
//!   - every host access through the Rust API: [`Buffer::as_slice`],
//!     [`Buffer::as_mut_slice`], `Deref`/`DerefMut`,
//!     [`Buffer::untrack_host_writes`], and [`Buffer::sync`] /
//!     [`Buffer::try_as_slice`], which report a failed download as an error
//!     where the infallible accessors cannot (they panic: a failed download
//!     means the device was lost with the only copy of those bytes);
//!   - at the start of a run, for every buffer the run binds, from the
//!     mirror of each GPU unless that GPU is the run's only device (the
//!     CPU's packages read and write the host copies, and another GPU
//!     uploads what it reads from them: each discrete GPU has mirrors of
//!     its own). In a run of the CPU with one GPU at most whose transfers
//!     do not queue behind its packages (a dedicated transfer queue), that
//!     GPU's mirrors are left out: before each CPU package, what the
//!     package reads is downloaded instead (each argument's footprint of
//!     its items, an output's: its own items), so a co-executed run
//!     downloads only what the CPU reads, not every stale range. A CPU
//!     function that reads outside its footprint reads stale data there,
//!     as a staged GPU does;
//!   - at the end of a run in which a GPU failed, from that GPU's mirror,
//!     while it can still be read: a failure to download then fails the
//!     run, so that no host range is taken for current when it is not.
//!
//!   [`Buffer::host_written`] declares the host copy current (stale ranges
//!   are dropped: the host's own writes win); pointers taken earlier must be
//!   refreshed with [`Buffer::sync`] before they are read after a run.
//!   Buffers whose host memory is written or read behind the engine's back
//!   (imported host memory, the C ABI's host pointers: *untracked*) stay
//!   eager. Dropping a buffer needs nothing. A buffer belongs to one engine
//!   (a foreign buffer is refused), and a GPU binds only its own mirrors,
//!   so no other device reads one. A byte range is stale in at most one
//!   mirror: when a run ends, what a GPU wrote leaves every other mirror.
//!
//! Lazy is not the default because the infallible accessors cannot return
//! the error of a download from a lost device.
//!
//! [`Buffer::as_slice`]: super::Buffer::as_slice
//! [`Buffer::as_mut_slice`]: super::Buffer::as_mut_slice
//! [`Buffer::untrack_host_writes`]: super::Buffer::untrack_host_writes
//! [`Buffer::sync`]: super::Buffer::sync
//! [`Buffer::try_as_slice`]: super::Buffer::try_as_slice
//! [`Buffer::host_written`]: super::Buffer::host_written

use super::buffer::RawBuffer;
use super::mirror::MirrorSlot;
use crate::error::{Error, Result, VkError};
use crate::vk::transfer::{Copy, Direction, Stager};
use std::ops::Range;
use std::sync::{Arc, Mutex};

/// When GPU results of a staged run reach the host copies (see the module
/// `coherence` of the memory layer for the rules).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum HostCoherence {
    /// Downloaded behind each GPU package: current when the run returns.
    #[default]
    Eager,
    /// Kept in the device-local mirror; downloaded when the host can
    /// observe it (host access through the API, a run with the CPU).
    Lazy,
}

impl std::str::FromStr for HostCoherence {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "eager" => Ok(HostCoherence::Eager),
            "lazy" => Ok(HostCoherence::Lazy),
            other => Err(format!("unknown host coherence {other:?} (eager or lazy)")),
        }
    }
}

/// `COEXEC_HOST_COHERENCE` where set to a valid value (read once per
/// process; an invalid value is ignored with a warning).
pub(crate) fn env_override() -> Option<HostCoherence> {
    static ENV: std::sync::OnceLock<Option<HostCoherence>> = std::sync::OnceLock::new();
    *ENV.get_or_init(|| {
        let v = std::env::var("COEXEC_HOST_COHERENCE").ok()?;
        match v.parse() {
            Ok(c) => Some(c),
            Err(e) => {
                tracing::warn!("COEXEC_HOST_COHERENCE ignored: {e}");
                None
            }
        }
    })
}

/// What a lazy engine's buffers download with: a stager of their own on
/// each GPU (by engine GPU; not the ones its runs hold: a CPU package syncs
/// what it reads while the GPU's dispatch loop runs), and the GPU timeout.
pub(crate) struct LazySync {
    pub(crate) stagers: Vec<Arc<Mutex<Stager>>>,
    pub(crate) timeout_ns: u64,
}

/// A download that could not complete: the bytes it was to bring are
/// unknown on the host.
fn failed(e: VkError) -> Error {
    Error::Vulkan(e)
}

/// The stale ranges of `slot` within `range`.
fn wanted(slot: &MirrorSlot, range: &Range<u64>) -> Vec<Range<u64>> {
    let stale = slot.stale().ranges().iter();
    stale
        .map(|r| r.start.max(range.start)..r.end.min(range.end))
        .filter(|r| r.start < r.end)
        .collect()
}

/// A transfer that did not end in time.
fn timed_out() -> Error {
    Error::Vulkan(VkError::Timeout {
        call: "vkWaitSemaphores",
    })
}

impl RawBuffer {
    /// Downloads the byte ranges stale on the host (lazy engines), from
    /// every GPU's mirror; the bytes moved. On error the ranges not yet
    /// brought back stay stale.
    pub(crate) fn sync(&self) -> Result<u64> {
        self.sync_range_where(0..self.bytes(), |_| true)
    }

    /// [`RawBuffer::sync`] for the mirrors of the engine GPUs `which`
    /// accepts; the bytes moved.
    pub(crate) fn sync_where(&self, which: impl Fn(usize) -> bool) -> Result<u64> {
        self.sync_range_where(0..self.bytes(), which)
    }

    /// [`RawBuffer::sync`] of the stale bytes within `range` only (what a
    /// CPU package reads: see [`crate::exec::staging::sync_package`]), from
    /// every GPU's mirror. Callable while a run's dispatch loop holds its
    /// GPU's stager: lazy engines download with stagers of their own.
    pub(crate) fn sync_range(&self, range: Range<u64>) -> Result<u64> {
        self.sync_range_where(range, |_| true)
    }

    /// [`RawBuffer::sync_range`] for the mirrors of the engine GPUs `which`
    /// accepts; the bytes moved.
    fn sync_range_where(&self, range: Range<u64>, which: impl Fn(usize) -> bool) -> Result<u64> {
        if !self.mirrors().any_stale() {
            return Ok(0);
        }
        let Some(lazy) = self.memory().lazy() else {
            return Ok(0);
        };
        let mut bytes = 0;
        for (g, stager) in lazy.stagers.iter().enumerate() {
            if which(g) {
                bytes += self.sync_gpu(g, stager, &range, lazy.timeout_ns)?;
            }
        }
        Ok(bytes)
    }

    /// Downloads what engine GPU `g`'s mirror holds stale on the host
    /// within `range`, through `stager` (that GPU's); the bytes moved.
    fn sync_gpu(
        &self,
        g: usize,
        stager: &Mutex<Stager>,
        range: &Range<u64>,
        timeout_ns: u64,
    ) -> Result<u64> {
        if wanted(self.mirrors().slot(g), range).is_empty() {
            return Ok(0);
        }
        let Some((dst, _)) = self.view_on(g) else {
            return Ok(0);
        };
        // Lock order: stager, then mirror slots (as the dispatch loop).
        let mut stager = stager.lock().unwrap_or_else(|p| p.into_inner());
        let mut mirrors = self.mirrors();
        let slot = mirrors.slot(g);
        let Some(src) = slot.mirror.as_ref().map(|m| m.buffer) else {
            return Ok(0);
        };
        let ranges = wanted(slot, range);
        let copies: Vec<Copy> = ranges
            .iter()
            .map(|r| Copy {
                src,
                dst,
                offset: r.start,
                bytes: r.end - r.start,
            })
            .collect();
        if copies.is_empty() {
            return Ok(0);
        }
        // SAFETY: the mirror and the host bytes' view are of engine GPU
        // `g`, the stager's device; both are `bytes()` long (the ranges lie
        // within), carry the transfer usage of staged engines, and live
        // while `self` does; the batch is waited for below (or, on timeout,
        // by the stager's drop, which the engine's devices outlive). No
        // `after`: the runs that wrote the mirror drained their GPU work
        // before returning, and the batch's leading barrier orders it after
        // their dispatches on the compute queue; on a separate transfer
        // queue, after the batch each run submitted at its end, which
        // waited for its last dispatch (`Stager::after_dispatches`). A run
        // in progress writes none of these bytes (stale bytes are ones it
        // does not write: its CPU packages sync before they write, its GPU
        // packages write their own items).
        let value = unsafe { stager.submit(Direction::Download, &copies, None, timeout_ns) }
            .map_err(failed)?
            .ok_or_else(timed_out)?;
        if !stager.wait(value, timeout_ns).map_err(failed)? {
            return Err(timed_out());
        }
        for r in ranges {
            slot.stale_mut().remove(r);
        }
        Ok(copies.iter().map(|c| c.bytes).sum())
    }

    /// [`RawBuffer::sync`] for accessors that cannot return an error.
    ///
    /// # Panics
    /// When the download fails (the device was lost with the only copy of
    /// the GPU's results).
    pub(crate) fn sync_or_panic(&self) {
        if let Err(e) = self.sync() {
            panic!("downloading the GPU's results for host access failed: {e} (Buffer::sync reports this as an error)");
        }
    }
}
