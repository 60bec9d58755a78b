//! The claim window: a few 64-bit counters in an MPI RMA window held by
//! rank 0, updated by every rank with atomic RMA operations under a
//! passive-target `MPI_Win_lock_all` epoch (rank 0 takes no part in
//! another rank's claims; there is no master loop).
//!
//! Slots:
//! - `NEXT`: the next unclaimed unit. A rank claims `[v, v + n)` with one
//!   `MPI_Fetch_and_op(+n)` that returns `v` (wait-free: no retry loop; a
//!   fetch-and-add never fails, and no two return overlapping ranges).
//!   Past the end of the space a claim returns nothing (NEXT grows past
//!   the end by at most one package per rank, far from overflowing).
//! - `POWER_SUM`, `PUBLISHED`: the ranks' published powers (sizing.rs),
//!   in milli-units per second. Each rank adds the change of its own
//!   figure (`MPI_SUM`, wrapping u64 arithmetic), so the sum stays exact
//!   without `MPI_REPLACE`.
//! - `FAILED`: ranks whose local run failed; the others stop claiming once
//!   they read it non-zero.
//!
//! Every operation is an accumulate-family call with `MPI_UINT64_T` and
//! `MPI_SUM` (a read adds zeros), which MPI makes atomic per element
//! against each other, and is completed by `MPI_Win_flush(0)` before its
//! result is used: there is no ordering to reason about beyond that.
//! Compare-and-swap is not used: besides needing a retry loop under
//! contention, Open MPI 4.1's `osc/rdma` crashes in it over shared memory
//! (`btl/vader`'s emulated atomics), where fetch-and-add works.

use crate::error::{check, Result};
use mpi::ffi;
use mpi::raw::AsRaw;
use mpi::topology::SimpleCommunicator;
use mpi::traits::CommunicatorCollectives;
use std::ffi::c_void;
use std::ptr;

/// The slot of the next unit.
const NEXT: isize = 0;
/// The slot of the sum of published powers.
const POWER_SUM: isize = 1;
/// The slot of the count of ranks that published.
const PUBLISHED: isize = 2;
/// The slot of the count of ranks that failed.
const FAILED: isize = 3;
/// Slots in the window.
const SLOTS: usize = 4;
/// The rank that holds the window's memory.
const HOST: i32 = 0;

/// What the window held at one read.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Slots {
    /// The next unclaimed unit.
    pub(crate) next: u64,
    /// The sum of published powers, milli-units per second.
    pub(crate) power_sum: u64,
    /// Ranks that published.
    pub(crate) published: u64,
    /// Ranks that failed.
    pub(crate) failed: u64,
}

/// An MPI window of claim counters, locked for the whole run.
pub(crate) struct ClaimWindow {
    win: ffi::MPI_Win,
}

impl ClaimWindow {
    /// Collective over `comm`: allocates the window (zeroed) and opens a
    /// passive-target epoch on every rank.
    pub(crate) fn new(comm: &SimpleCommunicator) -> Result<ClaimWindow> {
        let bytes = if comm_rank(comm) == HOST {
            (SLOTS * 8) as ffi::MPI_Aint
        } else {
            0
        };
        let mut base: *mut u64 = ptr::null_mut();
        // SAFETY: reads an immutable handle constant that MPI defines.
        let mut win = unsafe { ffi::RSMPI_WIN_NULL };
        // SAFETY: `base` and `win` are valid out-pointers; `comm` is a live
        // communicator; MPI allocates `bytes` bytes aligned for any type.
        check("MPI_Win_allocate", unsafe {
            ffi::MPI_Win_allocate(
                bytes,
                8,
                ffi::RSMPI_INFO_NULL,
                comm.as_raw(),
                (&mut base as *mut *mut u64).cast::<c_void>(),
                &mut win,
            )
        })?;
        if !base.is_null() && bytes > 0 {
            zero_slots(win, base)?;
        }
        // Every rank's first access comes after the zeroing.
        comm.barrier();
        let w = ClaimWindow { win };
        // SAFETY: `win` is live; lock_all with MPI_MODE_NOCHECK is allowed
        // because no rank ever takes an exclusive lock on it.
        check("MPI_Win_lock_all", unsafe {
            ffi::MPI_Win_lock_all(ffi::MPI_MODE_NOCHECK as i32, w.win)
        })?;
        Ok(w)
    }

    /// Atomically adds `n` to `NEXT`; returns what it held: the claim is
    /// `[old, old + n)`.
    pub(crate) fn fetch_add_next(&self, n: u64) -> Result<u64> {
        self.fetch_add(NEXT, n)
    }

    /// Atomically adds `delta` (wrapping) to `slot`; returns what it held.
    fn fetch_add(&self, slot: isize, delta: u64) -> Result<u64> {
        let mut old = 0u64;
        // SAFETY: origin and result point to live u64s for the call and
        // the flush that completes it; `slot` is inside rank 0's window;
        // the epoch is open (lock_all in `new`).
        check("MPI_Fetch_and_op", unsafe {
            ffi::MPI_Fetch_and_op(
                (&delta as *const u64).cast(),
                (&mut old as *mut u64).cast(),
                ffi::RSMPI_UINT64_T,
                HOST,
                slot,
                ffi::RSMPI_SUM,
                self.win,
            )
        })?;
        self.flush()?;
        Ok(old)
    }

    /// Counts this rank as failed: the others stop claiming.
    pub(crate) fn poison(&self) -> Result<()> {
        self.fetch_add(FAILED, 1).map(drop)
    }

    /// Adds the change of this rank's power (milli-units/s) to the sum;
    /// `first` also counts the rank as published.
    pub(crate) fn publish(&self, delta: u64, first: bool) -> Result<()> {
        self.fetch_add(POWER_SUM, delta)?;
        if first {
            self.fetch_add(PUBLISHED, 1)?;
        }
        Ok(())
    }

    /// Reads every slot in one `MPI_Get_accumulate` (adding zeros). Each
    /// element is read atomically, not the three together: a publish
    /// between them can show a new sum with the old count for one claim,
    /// which sizing tolerates.
    pub(crate) fn read(&self) -> Result<Slots> {
        let zero = [0u64; SLOTS];
        let mut got = [0u64; SLOTS];
        // SAFETY: `zero` and `got` are live arrays of SLOTS u64s for the
        // call and its flush; the slots are the whole window at rank 0.
        check("MPI_Get_accumulate", unsafe {
            ffi::MPI_Get_accumulate(
                zero.as_ptr().cast(),
                SLOTS as i32,
                ffi::RSMPI_UINT64_T,
                got.as_mut_ptr().cast(),
                SLOTS as i32,
                ffi::RSMPI_UINT64_T,
                HOST,
                NEXT,
                SLOTS as i32,
                ffi::RSMPI_UINT64_T,
                ffi::RSMPI_SUM,
                self.win,
            )
        })?;
        self.flush()?;
        Ok(Slots {
            next: got[NEXT as usize],
            power_sum: got[POWER_SUM as usize],
            published: got[PUBLISHED as usize],
            failed: got[FAILED as usize],
        })
    }

    fn flush(&self) -> Result<()> {
        // SAFETY: `win` is live and in a passive epoch.
        check("MPI_Win_flush", unsafe {
            ffi::MPI_Win_flush(HOST, self.win)
        })
    }

    /// Collective: closes the epoch and frees the window.
    pub(crate) fn free(mut self) -> Result<()> {
        let r = self.release();
        std::mem::forget(self);
        r
    }

    fn release(&mut self) -> Result<()> {
        // SAFETY: `win` is live and locked by lock_all in `new`; after
        // MPI_Win_free it is set to MPI_WIN_NULL and never used again.
        check("MPI_Win_unlock_all", unsafe {
            ffi::MPI_Win_unlock_all(self.win)
        })?;
        // SAFETY: as above.
        check("MPI_Win_free", unsafe { ffi::MPI_Win_free(&mut self.win) })
    }
}

impl Drop for ClaimWindow {
    /// Frees the window if `free` was not called (a panic between): this is
    /// collective, as every path through `run` reaches it on every rank.
    fn drop(&mut self) {
        let _ = self.release();
    }
}

/// Zeroes the host's slots (MPI does not zero a window) inside an
/// exclusive lock of its own window, the store visible to RMA once the lock
/// is released.
fn zero_slots(win: ffi::MPI_Win, base: *mut u64) -> Result<()> {
    // SAFETY: `win` is live; no other rank accesses it before the barrier
    // that follows in `new`.
    check("MPI_Win_lock", unsafe {
        ffi::MPI_Win_lock(ffi::MPI_LOCK_EXCLUSIVE as i32, HOST, 0, win)
    })?;
    // SAFETY: `base` is this rank's window memory, `SLOTS` u64s aligned
    // for u64 (MPI_Win_allocate aligns for any type), owned by the window.
    unsafe { ptr::write_bytes(base, 0, SLOTS) };
    // SAFETY: the lock taken above.
    check("MPI_Win_unlock", unsafe { ffi::MPI_Win_unlock(HOST, win) })
}

/// This process's rank in `comm`.
fn comm_rank(comm: &SimpleCommunicator) -> i32 {
    use mpi::topology::Communicator;
    comm.rank()
}
