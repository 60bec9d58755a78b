//! Executors: CPU topology, the pinned thread pool, the CPU worker loop and
//! the GPU dispatch loop, kernels and reports.

pub(crate) mod cpu;
pub mod footprint;
pub(crate) mod gpu;
mod gpu_steal;
pub(crate) mod idle;
#[cfg(feature = "test-hooks")]
pub(crate) mod inject;
pub mod kernel;
pub mod pool;
pub mod reduce;
pub mod report;
pub(crate) mod pipeline;
pub(crate) mod settle;
pub(crate) mod stagers;
pub(crate) mod staging;
pub mod topology;
pub(crate) mod wait;
