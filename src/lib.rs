//! # coexec
//!
//! One data-parallel kernel, run on every CPU core and Vulkan GPU of a
//! machine at once.
//!
//! ## Concepts
//!
//! - **Devices.** An [`Engine`] owns a pool of pinned CPU worker threads (one
//!   per physical core by default) and one Vulkan device with a dispatch loop
//!   thread. A run selects which of them take part ([`Devices`]).
//! - **Packages.** A run's index space ([`IndexSpace`], 1-D or 2-D) is counted
//!   in work-groups. Each claimant (a CPU worker, a GPU dispatch loop) takes
//!   its next *package*, a contiguous range of work-groups (whole rows of
//!   work-groups in 2-D), from a lock-free queue of atomic counters. No thread
//!   hands out work. The GPU runs a package with `vkCmdDispatchBase`, so the
//!   shader sees the global ids of the whole range; the CPU calls the kernel's
//!   closure with the [`Package`].
//! - **Schedulers.** [`Scheduler`] decides package sizes: `Static` (one per
//!   device, by power), `Dynamic` (M equal packages) or `HGuided` (large
//!   first, shrinking, bigger for faster devices; without power hints the
//!   engine measures each device's throughput as it runs, and a slower device
//!   declines work it would finish after the others).
//! - **Unified memory.** A [`Buffer`] lives in host-visible coherent Vulkan
//!   memory, mapped for its whole life: the CPU reads and writes it as a
//!   slice, kernels bind it as a storage buffer, with no copies. It holds a
//!   reference count on its device instead of borrowing the [`Engine`]: it
//!   may outlive the engine and stays valid (the device goes when its last
//!   buffer does), so no order of drops can make it dangle, and buffers can
//!   live in structs and C handles without carrying the engine's lifetime.
//! - **Reports.** [`Engine::run`] blocks until every work-item is done and
//!   returns a [`Report`]: time, per-device packages, items, busy time and
//!   finish time, GPU idle gaps, the balancing efficiency and the package log
//!   ([`trace::chrome_trace`] turns it into a Perfetto trace).
//!
//! ## Example
//!
//! ```
//! use coexec::{Args, CpuArgs, Devices, Engine, IndexSpace, Package, Scheduler};
//! use std::sync::Arc;
//!
//! const GLSL: &str = "#version 450
//! layout(local_size_x = 64) in;
//! layout(std430, binding = 0) readonly buffer X { float x[]; };
//! layout(std430, binding = 1) buffer Y { float y[]; };
//! layout(push_constant) uniform P { uint n; } p;
//! void main() { uint i = gl_GlobalInvocationID.x; if (i < p.n) y[i] = 2.0 * x[i]; }";
//!
//! # fn main() -> Result<(), coexec::Error> {
//! let engine = Engine::new()?;
//! // The CPU implementation: it gets exactly its package's part of `y`.
//! let cpu = Arc::new(|pkg: &Package, args: &mut CpuArgs<'_>| {
//!     let x = args.input::<f32>(0);
//!     for (k, y) in args.output::<f32>(1).iter_mut().enumerate() {
//!         *y = 2.0 * x[pkg.items.start as usize + k];
//!     }
//! });
//! let kernel = engine.kernel_glsl("double", GLSL, Some(cpu))?;
//! let n = 100_000;
//! let x = engine.buffer_from_slice(&(0..n).map(|i| i as f32).collect::<Vec<_>>())?;
//! let mut y = engine.buffer::<f32>(n)?;
//! let args = Args::new().input(&x).output(&mut y).push(&(n as u32));
//! let report = engine.run(&kernel, args, IndexSpace::D1(n as u64), &Scheduler::hguided(), Devices::ALL)?;
//! assert!(y.iter().enumerate().all(|(i, v)| *v == 2.0 * i as f32));
//! assert_eq!(report.devices.iter().map(|d| d.items).sum::<u64>(), n as u64);
//! # Ok(())
//! # }
//! ```
//!
//! ## What the types rule out
//!
//! A run borrows its outputs exclusively until it returns, so CPU code cannot
//! touch a buffer a run is writing:
//!
//! ```compile_fail
//! # use coexec::{Args, Engine};
//! # let engine = Engine::new().unwrap();
//! let mut y = engine.buffer::<f32>(16).unwrap();
//! let args = Args::new().output(&mut y);
//! y[0] = 1.0; // error: `y` is mutably borrowed by `args`
//! drop(args);
//! ```
//!
//! The same buffer cannot be both an input and an output of a run:
//!
//! ```compile_fail
//! # use coexec::{Args, Engine};
//! # let engine = Engine::new().unwrap();
//! let mut y = engine.buffer::<f32>(16).unwrap();
//! let args = Args::new().input(&y).output(&mut y); // error: already borrowed
//! # drop(args);
//! ```
//!
//! A CPU kernel sees its package's part of an output, and can take it only
//! once per package (a second `output` call for the same argument panics,
//! which the run reports as [`Error::KernelPanic`]), so no two packages alias.
//! A C API mirrors this crate (`ffi/`, `coexec.h`).
//!
//! ## API surface
//!
//! The items at the root are the API: the engine, kernels and their
//! arguments, buffers, schedulers, reports, errors, device and CPU facts,
//! and [`shader`] compilation. [`suite`], [`workloads`] and [`trace`] are
//! the `coexec` command's benchmark suite, its kernels and its trace
//! writer, public for the command and the tests.
//!
//! The engine's layers (Vulkan, memory, scheduling, executors) are not part
//! of it; the cargo feature `internals` exposes them as `coexec::internals` for
//! benchmarks and tests, with no stability promise. Without it no public
//! item names an `ash` type:
//!
//! ```compile_fail
//! use coexec::vk::Device; // error: no `vk` at the root
//! ```

pub use coexec_engine::{
    energy, error, pci_locality, reduce, shader, version_string, AllocatorBackend, Args, Buffer,
    BufferId, CacheLevel, CorePlan, CoreSet, CpuArgs, CpuFn, CpuImpl, CpuTopology, DeviceKind,
    DeviceReport, DeviceType, Devices, DriverEmulation, Engine, EngineOptions, Error, Footprint,
    GapStats, GpuChoice, HostCoherence, IndexSpace, Kernel, MemoryHeap, MemoryPlacement,
    MemoryType, NumaNode, Objective, Package, PackageLog, PackageRecord, PciAddress, PciLocality,
    PhysicalCore, PhysicalDeviceInfo, PlanRequest, QueueFamily, ReduceOp, Reduction, Report,
    Result, SchedError, Scheduler, ShaderCores, ShaderInterface, SpirvBinding, SyncMode,
    TopologyError, TransferQueue, TransferSpan, Transfers, Validation, VkError, VkResultCode,
    DEFAULT_K, MAX_GPUS,
};
pub use coexec_engine::{AwakeHold, Flow, Program, ProgramReport, StepReport};

/// The engine's internal layers (`vk`, `mem`, `sched`, `exec`), for
/// benchmarks and tests that drive them directly (cargo feature
/// `internals`). **Unstable**: not covered by semver; any release may
/// change them.
#[cfg(feature = "internals")]
pub mod internals {
    pub use coexec_engine::{exec, mem, sched, vk};
}

/// The `bytemuck` this crate's API takes (`Buffer<T: Pod>`,
/// [`Args::push`]), so that push-constant structs and buffer elements need
/// no direct dependency: derive through this path, naming it with
/// `#[bytemuck(crate = ...)]`.
///
/// ```
/// use coexec::bytemuck;
///
/// #[repr(C)]
/// #[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
/// #[bytemuck(crate = "coexec::bytemuck")]
/// struct Push {
///     n: u32,
///     a: f32,
/// }
///
/// let args = coexec::Args::new().push(&Push { n: 8, a: 2.0 });
/// # let _ = args;
/// assert_eq!(bytemuck::bytes_of(&Push { n: 1, a: 0.0 }).len(), 8);
/// ```
pub use coexec_engine::bytemuck;

pub mod suite;
#[cfg(feature = "test-hooks")]
pub use coexec_engine::hooks;

pub mod trace;
pub mod workloads;
