//! # coexec-engine
//!
//! The engine under [coexec](https://docs.rs/coexec): one data-parallel kernel
//! co-executed on every CPU core and Vulkan GPU of a machine at once.
//!
//! The public API is the one `coexec` re-exports: [`Engine`] and its options,
//! kernels and their arguments, unified [`Buffer`]s, the [`Scheduler`], the
//! [`Report`] of a run, the [`Error`] types, facts about the machine's
//! devices and CPU topology, and [`shader`] compilation.
//!
//! Layers, bottom up (private unless the `internals` feature is on):
//! - `vk`: the Vulkan layer (instance, devices, pipelines, dispatch rings);
//! - `mem`: unified host-visible buffers and allocator backends;
//! - `sched`: the schedulers and the lock-free claim protocol (no Vulkan);
//! - `exec`: CPU topology, the pinned worker pool and the device executors.
//!
//! ## The `internals` feature
//!
//! Makes the four layers public, for the benchmarks and tests that measure
//! or drive them directly (and for code that makes its own Vulkan calls on
//! the engine's device, through `vk::ash`). They are **not** a stable API:
//! any release may change them.

/// Declares an internal layer: public with the `internals` feature, private
/// otherwise. Its items are `pub` for that feature, so they are unreachable
/// (and, where only `internals` users call them, unused) without it.
macro_rules! layer {
    ($name:ident) => {
        #[cfg(feature = "internals")]
        pub mod $name;
        #[cfg(not(feature = "internals"))]
        #[allow(unreachable_pub, dead_code, unused_imports)]
        mod $name;
    };
}

mod depth;
pub mod energy;
mod engine;
pub mod error;
#[cfg(feature = "test-hooks")]
pub mod hooks;
mod learn;
mod outcomes;
mod profile;
mod program;
pub mod shader;
mod split;
mod switches;
#[cfg(test)]
mod test_engines;

layer!(exec);
layer!(mem);
layer!(sched);
layer!(vk);

/// The `bytemuck` this crate's API takes (buffer elements and push
/// constants are `bytemuck::Pod`).
pub use bytemuck;

pub use energy::Objective;
pub use engine::{CpuImpl, Devices, Engine, EngineOptions, GpuChoice, MAX_GPUS};
pub use error::{Error, Result, VkError, VkResultCode};
pub use exec::footprint::Footprint;
pub use exec::kernel::{Args, CpuArgs, CpuFn, IndexSpace, Kernel, OutputRows, Package};
pub use exec::pool::AwakeHold;
pub use exec::reduce::{ReduceOp, Reduction};
pub use program::{Flow, Program, ProgramReport, StepReport};

/// Reduction outputs (see [`Reduction`]): the element types of the
/// built-in combines, the canonical work-group order of the GLSL helpers
/// ([`reduce::tree`]) for results that do not depend on the device, and
/// the order the engine combines work-groups' partials in
/// ([`reduce::tree_of_partials`]).
pub mod reduce {
    pub use crate::exec::reduce::{
        tree, tree_of_partials, CombineFn, Element, ReduceOp, Reduction, GLSL_INCLUDE,
    };
}
pub use exec::report::{
    DeviceReport, GapStats, PackageLog, PackageRecord, Report, TransferSpan, Transfers,
};
pub use exec::topology::{
    pci_locality, CacheLevel, CorePlan, CoreSet, CpuTopology, NumaNode, PciAddress, PciLocality,
    PhysicalCore, PlanRequest, TopologyError,
};
pub use mem::{
    is_unified_memory, AllocatorBackend, Buffer, BufferId, HostCoherence, MemoryPlacement,
};
pub use sched::{DeviceKind, SchedError, Scheduler, DEFAULT_K};
pub use vk::{
    version_string, DeviceType, DriverEmulation, MemoryHeap, MemoryType, PhysicalDeviceInfo,
    QueueFamily, ShaderCores, ShaderInterface, SpirvBinding, SyncMode, TransferQueue, Validation,
};
