//! Errors of a distributed run.

use std::ops::Range;

/// What can go wrong in a distributed run. Every rank of a run returns an
/// error when any rank failed (the ranks agree on the outcome before
/// returning), so no rank waits forever in a collective call.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The index space has no item.
    #[error("the index space has no work-item")]
    EmptySpace,
    /// A grain (items or rows per unit) of 0.
    #[error("a unit must hold at least one item or row (grain 0)")]
    ZeroGrain,
    /// Options out of range.
    #[error("invalid options: {0}")]
    Options(String),
    /// This rank's local run (the engine, or the code around it) failed.
    #[error("local run of units {units:?} failed: {source}")]
    Local {
        /// The claim whose run failed.
        units: Range<u64>,
        /// The engine's error.
        #[source]
        source: coexec::Error,
    },
    /// The code run for a claim panicked on this rank.
    #[error("local run of units {units:?} panicked: {message}")]
    Panicked {
        /// The claim whose run panicked.
        units: Range<u64>,
        /// The panic's message.
        message: String,
    },
    /// Another rank failed; this rank stopped claiming.
    #[error("{failed} rank(s) failed; the run was abandoned")]
    PeerFailed {
        /// How many ranks failed.
        failed: u32,
    },
    /// An MPI call returned an error code.
    #[error("{call} failed with MPI error code {code}")]
    Mpi {
        /// The MPI function.
        call: &'static str,
        /// Its return code.
        code: i32,
    },
    /// A piece of results does not match its range.
    #[error("items {items:?} with {per_item} element(s) each need {needed} elements, got {got}")]
    PieceLength {
        /// The piece's items.
        items: Range<u64>,
        /// Elements per item.
        per_item: usize,
        /// Elements the range needs.
        needed: u64,
        /// Elements given.
        got: usize,
    },
    /// The gathered pieces do not cover the space exactly once.
    #[error("the gathered results do not cover items 0..{total} exactly once: {problem}")]
    Coverage {
        /// Items of the space.
        total: u64,
        /// The first gap, overlap or stray range found.
        problem: String,
    },
    /// A message larger than MPI's counts (`i32`) can describe.
    #[error("{what} is too large for one MPI message ({len} elements)")]
    TooLarge {
        /// What was being sent.
        what: &'static str,
        /// Its length.
        len: usize,
    },
}

/// A distributed run's result.
pub type Result<T> = std::result::Result<T, Error>;

/// Turns an MPI return code into a result.
pub(crate) fn check(call: &'static str, code: i32) -> Result<()> {
    // MPI_SUCCESS is 0 in every implementation (the standard fixes it).
    if code == 0 {
        Ok(())
    } else {
        Err(Error::Mpi { call, code })
    }
}
