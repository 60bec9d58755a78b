//! # coexec-mpi
//!
//! Co-execution across the nodes of a cluster: every MPI rank runs a
//! [`coexec::Engine`] over its own node's devices, and the ranks share one
//! index space by the same lock-free self-scheduling the engine uses
//! inside a node.
//!
//! - **Claims.** The ranks claim packages (contiguous ranges of *units*:
//!   groups of items in 1-D, groups of rows in 2-D, [`DistSpace`]) from a
//!   counter in an MPI RMA window held by rank 0, with
//!   `MPI_Fetch_and_op` (fetch-and-add) under a passive-target `MPI_Win_lock_all`
//!   epoch. No rank hands out work: rank 0 only hosts the memory.
//! - **Sizes.** Packages follow HGuided across ranks: a rank takes
//!   `ceil(R * P_i / (k * sum P))` of the `R` units left, where `P_i` is its
//!   own measured throughput (units per second over its packages) and the
//!   sum is published in the same window by every rank after each package.
//! - **Local runs.** For each [`Claim`] the caller's code runs the local
//!   engine over the claim's part of the global space
//!   ([`DistSpace::kernel_units`] with [`coexec::Engine::run_range`]): the
//!   kernel sees global ids, outputs are sized for the whole space, and
//!   what the engine learned about the kernel's devices on one claim holds
//!   for the next (the engine splits the claim among the node's CPU cores
//!   and GPU with its own scheduler). [`DistSpace::for_kernel`] makes a
//!   space whose claims are whole work-groups.
//! - **Results.** Inputs are replicated on every rank (each builds them).
//!   A rank keeps what its claims produced in [`Pieces`]; the user either
//!   leaves them distributed or [`Pieces::gather`]s them once at a root,
//!   which checks that they cover the space exactly once.
//!
//! ## When a rank fails or dies
//!
//! A local run that fails or panics is counted in the window: the other ranks
//! stop claiming, and every rank's [`run`] returns an error (its own on
//! the failing rank, [`Error::PeerFailed`] on the others), so no rank waits
//! in a collective call. A rank that *dies* (killed, crashed, its node
//! lost) is outside what MPI recovers from: under MPI's fault model
//! (`MPI_ERRORS_ARE_FATAL`), `mpirun` aborts the whole job, and its work
//! is lost. Run again.
//!
//! ## Example
//!
//! Each global item `i` gets `2 * i`, computed by whichever rank claimed it
//! on that rank's CPU cores and GPU, and gathered at rank 0 (run it under
//! `mpirun`):
//!
//! ```no_run
//! use coexec::{Args, Devices, Engine, IndexSpace, Scheduler};
//! use coexec_mpi::{DistOptions, DistSpace, Pieces};
//!
//! const GLSL: &str = "#version 450
//! layout(local_size_x = 64) in;
//! layout(std430, binding = 0) writeonly buffer Y { uint y[]; };
//! layout(push_constant) uniform P { uint n; } p;
//! void main() { uint i = gl_GlobalInvocationID.x; if (i < p.n) y[i] = 2u * i; }";
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let universe = coexec_mpi::initialize().ok_or("MPI already initialized")?;
//! let world = universe.world();
//! let engine = Engine::new()?;
//! let kernel = engine.kernel_glsl("twice", GLSL, None)?;
//! let total = 1_000_000u64;
//! // Units of 4 work-groups: every claim is whole work-groups.
//! let space = DistSpace::for_kernel(&kernel, IndexSpace::D1(total), 4)?;
//! let mut out = engine.buffer::<u32>(total as usize)?;
//! let mut pieces = Pieces::new(1)?;
//! coexec_mpi::run(&world, space, &DistOptions::default(), |claim| {
//!     let units = space.kernel_units(claim, &kernel)?;
//!     let args = Args::new().output(&mut out).push(&(total as u32));
//!     let all = space.index_space();
//!     engine.run_range(&kernel, args, all, units, &Scheduler::hguided(), Devices::ALL)?;
//!     let items = claim.items.start as usize..claim.items.end as usize;
//!     pieces.push(claim.items.clone(), &out[items]).expect("one element per item");
//!     Ok(())
//! })?;
//! // Rank 0 gets every item, checked to be covered exactly once.
//! if let Some(all) = pieces.gather(&world, 0, total)? {
//!     assert!(all.iter().enumerate().all(|(i, v)| *v == 2 * i as u32));
//! }
//! # Ok(())
//! # }
//! ```
//!
//! `mpi/examples/mandelbrot.rs` renders an image the same way (2-D, by
//! rows) and checks it at rank 0; `mpi/examples/mpi_dot.rs` sums a dot
//! product's per-claim [`coexec::Reduction`]s across ranks with an MPI
//! reduce; `scripts/mpi-example.sh` runs both on 2 ranks.

mod counter;
pub mod error;
mod gather;
mod run;
mod sizing;
mod space;

pub use error::{Error, Result};
pub use gather::{assemble, Pieces};
pub use run::{run, DistOptions, RankReport};
pub use sizing::{Powers, Sizing};
pub use space::{Claim, DistSpace};

/// The rsmpi crate this one is built on (initialize MPI and make
/// communicators through it).
pub use mpi;

/// Initializes MPI for a coexec run ([`mpi::Threading::Funneled`]: the
/// engine's threads never call MPI; the thread that calls this one makes
/// every MPI call). `None` when MPI was already initialized.
pub fn initialize() -> Option<mpi::environment::Universe> {
    mpi::initialize_with_threading(mpi::Threading::Funneled).map(|(u, _)| u)
}
