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
//!   - at the start of every run in which a GPU other than engine GPU 0
//!     takes part (its packages read and write the host copies; only GPU 0
//!     has mirrors), for every buffer the run binds;
//!   - before each CPU package of a run (the CPU workers with engine GPU 0
//!     at most), for what the package reads: each argument's footprint of
//!     its items (an output's: its own items), so a co-executed run
//!     downloads only what the CPU reads, not every stale range. A CPU
//!     function that reads outside its footprint reads stale data there,
//!     as a staged GPU does;
//!   - at the end of a run whose GPU failed, while the mirror can still be
//!     read: a failure to download then fails the run, so that no host range
//!     is taken for current when it is not.
//!
//!   [`Buffer::host_written`] declares the host copy current (stale ranges
//!   are dropped: the host's own writes win); pointers taken earlier must be
//!   refreshed with [`Buffer::sync`] before they are read after a run.
//!   Buffers whose host memory is written or read behind the engine's back
//!   (imported host memory, the C ABI's host pointers: *untracked*) stay
//!   eager. Dropping a buffer needs nothing. A buffer belongs to one engine
//!   (a foreign buffer is refused), and only engine GPU 0 binds mirrors, so
//!   no other device reads one.
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
use crate::error::{Error, Result, VkError};
use crate::vk::transfer::{Copy, Direction, Stager};
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
/// the engine's GPU (not the one its runs hold: a CPU package syncs what it
/// reads while the GPU's dispatch loop runs), and its GPU timeout.
pub(crate) struct LazySync {
    pub(crate) stager: Arc<Mutex<Stager>>,
    pub(crate) timeout_ns: u64,
}

/// A download that could not complete: the bytes it was to bring are
/// unknown on the host.
fn failed(e: VkError) -> Error {
    Error::Vulkan(e)
}

impl RawBuffer {
    /// Downloads the byte ranges stale on the host (lazy engines); the
    /// bytes moved. On error the ranges stay stale.
    pub(crate) fn sync(&self) -> Result<u64> {
        self.sync_range(0..self.bytes())
    }

    /// [`RawBuffer::sync`] of the stale bytes within `range` only (what a
    /// CPU package reads, in a run with the engine's staged GPU: see
    /// [`crate::exec::staging::sync_package`]). Callable while a run's
    /// dispatch loop holds the engine's stager: lazy engines download with
    /// a stager of their own.
    pub(crate) fn sync_range(&self, range: std::ops::Range<u64>) -> Result<u64> {
        let wanted = |slot: &super::mirror::MirrorSlot| -> Vec<std::ops::Range<u64>> {
            let stale = slot.stale().ranges().iter();
            stale
                .map(|r| r.start.max(range.start)..r.end.min(range.end))
                .filter(|r| r.start < r.end)
                .collect()
        };
        if wanted(&self.mirror()).is_empty() {
            return Ok(0);
        }
        let Some(lazy) = self.memory().lazy() else {
            return Ok(0);
        };
        // Lock order: stager, then mirror slot (as the dispatch loop).
        let mut stager = lazy.stager.lock().unwrap_or_else(|p| p.into_inner());
        let mut slot = self.mirror();
        let Some(src) = slot.mirror.as_ref().map(|m| m.buffer) else {
            return Ok(0);
        };
        let ranges = wanted(&slot);
        let copies: Vec<Copy> = ranges
            .iter()
            .map(|r| Copy {
                src,
                dst: self.handle(),
                offset: r.start,
                bytes: r.end - r.start,
            })
            .collect();
        if copies.is_empty() {
            return Ok(0);
        }
        // SAFETY: the mirror and the buffer belong to this device, are
        // `bytes()` long (the ranges lie within), carry the transfer usage
        // of staged engines, and live while `self` does; the batch is
        // waited for below (or, on timeout, by the stager's drop, which the
        // engine's device outlives). No `after`: the runs that wrote the
        // mirror drained their GPU work before returning, and the batch's
        // leading barrier orders it after their dispatches on the compute
        // queue; on a separate transfer queue, after the batch each run
        // submitted at its end, which waited for its last dispatch
        // (`Stager::after_dispatches`). A run in progress writes none of
        // these bytes (stale bytes are ones it does not write: its CPU
        // packages sync before they write, its GPU packages write their
        // own items).
        let value = unsafe { stager.submit(Direction::Download, &copies, None, lazy.timeout_ns) }
            .map_err(failed)?
            .ok_or(Error::Vulkan(VkError::Timeout {
                call: "vkWaitSemaphores",
            }))?;
        if !stager.wait(value, lazy.timeout_ns).map_err(failed)? {
            return Err(Error::Vulkan(VkError::Timeout {
                call: "vkWaitSemaphores",
            }));
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
