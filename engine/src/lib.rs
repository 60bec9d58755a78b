//! # coexec-engine
//!
//! The engine under [coexec](https://docs.rs/coexec): one data-parallel kernel
//! co-executed on every CPU core and Vulkan GPU of a machine at once.
//!
//! Layers, bottom up:
//! - [`vk`]: the Vulkan layer (instance, devices, pipelines, dispatch rings);
//! - [`mem`]: unified host-visible buffers and allocator backends;
//! - [`sched`]: the schedulers and the lock-free claim protocol (no Vulkan);
//! - [`exec`]: CPU topology, the pinned worker pool and the device executors;
//! - [`engine`]: a co-execution engine tying them together.

pub mod error;
#[cfg(feature = "test-hooks")]
pub mod hooks;
mod learn;
pub mod mem;
mod outcomes;
mod profile;
pub mod sched;
pub mod shader;
pub mod vk;

/// The `bytemuck` this crate's API takes (buffer elements and push
/// constants are `bytemuck::Pod`).
pub use bytemuck;
pub use error::{Error, Result, VkError};
pub mod engine;
pub mod exec;

pub use engine::{Devices, Engine, EngineOptions, GpuChoice};
pub use exec::kernel::{Args, CpuArgs, CpuFn, IndexSpace, Kernel, Package};
pub use exec::report::{DeviceReport, GapStats, PackageLog, PackageRecord, Report};
pub use mem::{AllocatorBackend, Buffer};
pub use sched::{DeviceKind, Scheduler};
pub use vk::Validation;
