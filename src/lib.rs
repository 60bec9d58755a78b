//! # coexec
//!
//! One data-parallel kernel, run on every CPU core and Vulkan GPU of a
//! machine at once.
//!
//! Pinned CPU worker threads and one dispatch loop per GPU each claim
//! *packages* (contiguous ranges of work-groups) themselves from a lock-free
//! queue of atomic counters until the index space is done; no thread hands
//! out work. Package sizes come from a [`Scheduler`]: `Static`, `Dynamic` or
//! `HGuided`. Buffers live in host-visible coherent Vulkan memory, so on an
//! integrated GPU (and on Mesa's lavapipe) the CPU and the GPU read and write
//! the same bytes, with no copies.

pub use coexec_engine::{
    error, mem, sched, shader, vk, AllocatorBackend, Args, Buffer, CpuArgs, CpuFn, DeviceKind,
    DeviceReport, Devices, Engine, EngineOptions, Error, GapStats, GpuChoice, IndexSpace, Kernel,
    Package, PackageRecord, Report, Result, Scheduler, Validation,
};

pub mod suite;
#[cfg(feature = "test-hooks")]
pub use coexec_engine::hooks;

pub mod trace;
pub mod workloads;
