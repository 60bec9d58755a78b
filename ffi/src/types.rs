//! The C-visible types: handles, enums, option, argument and report structs.
//!
//! Enums that C passes *in* are declared here for the header, but the structs
//! and functions take them as plain integers (`uint32_t`) so that an
//! out-of-range value from C is an error code, never undefined behaviour.
//! Enums Rust hands *out* (`coexec_status`, `coexec_device_kind`) are real
//! enums.

#![allow(non_camel_case_types)]

use std::ffi::{c_char, c_void};

/// Number of device slots in a `coexec_report` (a run uses at most two: the
/// CPU, then the GPU).
pub const COEXEC_MAX_DEVICES: usize = 8;

/// Most buffer arguments of one run (`coexec_run`'s `num_args`).
pub const COEXEC_MAX_ARGS: usize = 64;

/// Most GPU packages in flight (`coexec_engine_options.gpu_in_flight`).
pub const COEXEC_MAX_GPU_IN_FLIGHT: u32 = 64;

/// Size of the fixed name buffers in reports and engine info, including the
/// terminating NUL (longer names are cut).
pub const COEXEC_NAME_MAX: usize = 256;

/// Result of every fallible coexec function. On anything but `COEXEC_OK`,
/// `coexec_last_error()` describes what went wrong.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum coexec_status {
    /// Success.
    COEXEC_OK = 0,
    /// A required pointer argument was NULL (each function says which of its
    /// pointers may be NULL; any other one is checked and rejected with this).
    COEXEC_ERROR_NULL_POINTER = 1,
    /// An argument is out of range or malformed (sizes, enum values, index
    /// space, strings that are not UTF-8, a buffer given as an output twice).
    COEXEC_ERROR_INVALID_ARGUMENT = 2,
    /// A handle is null, was already destroyed/freed, or is of the wrong kind.
    COEXEC_ERROR_INVALID_HANDLE = 3,
    /// A buffer or kernel belongs to another engine.
    COEXEC_ERROR_FOREIGN_HANDLE = 4,
    /// The object is in use by a run in progress (destroy/free it afterwards),
    /// or `coexec_run` was called from inside a CPU function.
    COEXEC_ERROR_BUSY = 5,
    /// No Vulkan loader, a loader older than Vulkan 1.1, or no usable Vulkan
    /// device (or `gpu_index` names none); the last error says which.
    COEXEC_ERROR_NO_DEVICE = 6,
    /// The device or build lacks a feature (host-memory import, the VMA
    /// allocator backend, a suitable memory type, runtime GLSL in a library
    /// built without the cargo feature `glsl`), or validation was required
    /// (`COEXEC_VALIDATION_ON`) but the layer is not installed.
    COEXEC_ERROR_UNSUPPORTED = 7,
    /// A pointer or size to import is not aligned as the device requires.
    COEXEC_ERROR_MISALIGNED = 8,
    /// Host or device memory ran out, or an allocation failed.
    COEXEC_ERROR_OUT_OF_MEMORY = 9,
    /// GLSL failed to compile; `coexec_last_error()` holds the compiler's text.
    COEXEC_ERROR_SHADER_COMPILE = 10,
    /// SPIR-V is malformed or not a usable compute shader.
    COEXEC_ERROR_INVALID_SPIRV = 11,
    /// The arguments do not match the kernel (binding count, read-only
    /// bindings, push-constant size, missing CPU or GPU implementation), or
    /// the kernel exceeds what the engine or the device allows (work-group
    /// size, work-group memory, push constants, binding numbers past 4095).
    COEXEC_ERROR_INTERFACE = 12,
    /// An output buffer holds fewer elements than the index space needs
    /// (work-items x `per_item`).
    COEXEC_ERROR_BUFFER_TOO_SMALL = 13,
    /// The scheduler configuration was rejected.
    COEXEC_ERROR_SCHEDULER = 14,
    /// The CPU function failed: it returned a non-zero value
    /// (`coexec_last_kernel_code()` gives it, `coexec_last_error()` says on
    /// which items). The run stopped claiming work; calls already under way
    /// on other workers finished, so outputs are partly written. The engine
    /// stays usable.
    COEXEC_ERROR_KERNEL_FAILED = 15,
    /// The GPU was lost or every device failed; recreate the engine.
    COEXEC_ERROR_DEVICE_LOST = 16,
    /// Another Vulkan call failed.
    COEXEC_ERROR_VULKAN = 17,
    /// An internal panic was caught at the boundary (a coexec bug).
    COEXEC_ERROR_PANIC = 18,
    /// Any other internal failure (CPU topology, threads).
    COEXEC_ERROR_INTERNAL = 19,
}

/// Allocator backend for unified buffers (`coexec_engine_options.allocator`).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum coexec_allocator {
    /// gpu-allocator (pure Rust), the default.
    COEXEC_ALLOCATOR_GPU_ALLOCATOR = 0,
    /// Vulkan Memory Allocator; needs a library built with the cargo feature `vma`.
    COEXEC_ALLOCATOR_VMA = 1,
}

/// Where the GPU reads and writes a run's buffers
/// (`coexec_engine_options.memory`, `coexec_report.memory`). The
/// environment variable `COEXEC_MEMORY=auto|zero-copy|staged` overrides the
/// option.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum coexec_memory {
    /// Zero-copy on unified memory (integrated GPUs, lavapipe), staged on a
    /// discrete GPU; the default.
    COEXEC_MEMORY_AUTO = 0,
    /// The GPU reads and writes the host buffers in place.
    COEXEC_MEMORY_ZERO_COPY = 1,
    /// Device-local mirrors: each run uploads what the GPU reads (what the
    /// host wrote since the last upload) and downloads what each GPU
    /// package writes before the run returns. The host pointer of a buffer
    /// stays the buffer's true contents between runs.
    COEXEC_MEMORY_STAGED = 2,
}

/// What HGuided minimizes (`coexec_engine_options.objective`).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum coexec_objective {
    /// Wall time; the default.
    COEXEC_OBJECTIVE_TIME = 0,
    /// Energy-delay product: a device whose speed-up costs more energy than
    /// it saves sits the run out (busy and idle power learned from RAPL/NVML
    /// over windows of earlier runs where readable, else a model of busy
    /// and idle watts per device).
    COEXEC_OBJECTIVE_EDP = 1,
}

/// Which path runs a run's CPU share (`coexec_engine_options.cpu_impl`,
/// `coexec_device_report.cpu_impl`).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum coexec_cpu_impl {
    /// The kernel's callback on the CPU workers; a kernel without one
    /// (a NULL callback) runs its SPIR-V on the engine's CPU Vulkan device
    /// where it has one (`coexec_engine_options.spirv_cpu`). The default.
    COEXEC_CPU_IMPL_NATIVE = 0,
    /// The kernel's SPIR-V on the engine's CPU Vulkan device (Mesa
    /// lavapipe, on the CPU workers' cores) whenever the kernel has SPIR-V.
    COEXEC_CPU_IMPL_SPIRV = 1,
}

/// Khronos validation layer (`coexec_engine_options.validation`).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum coexec_validation {
    /// The default: on only when the environment variable `COEXEC_VALIDATION`
    /// is exactly `1` at engine creation; unset, empty or any other value is
    /// off. With `1` but no layer installed, the engine is created without it.
    COEXEC_VALIDATION_ENV = 0,
    /// Off.
    COEXEC_VALIDATION_OFF = 1,
    /// On; engine creation fails if the layer is not installed.
    COEXEC_VALIDATION_ON = 2,
    /// On if the layer is installed, silently off otherwise.
    COEXEC_VALIDATION_IF_AVAILABLE = 3,
}

/// Scheduling policy (`coexec_scheduler.kind`). The zero value is HGuided, so a
/// zero-initialised `coexec_scheduler` means HGuided with default parameters.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum coexec_scheduler_kind {
    /// Guided packages sized by device power: `k` and `min_package` apply.
    COEXEC_SCHEDULER_HGUIDED = 0,
    /// One package per device, proportional to power.
    COEXEC_SCHEDULER_STATIC = 1,
    /// `packages` equal packages.
    COEXEC_SCHEDULER_DYNAMIC = 2,
}

/// Device selection bits for `coexec_run` (OR them together).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum coexec_device_mask {
    /// The CPU worker threads.
    COEXEC_DEVICE_CPU = 1,
    /// Every GPU of the engine.
    COEXEC_DEVICE_GPU = 2,
    /// The CPU workers and every GPU.
    COEXEC_DEVICE_ALL = 3,
    /// Engine GPU 0 alone; engine GPU `i` (0 to 29) is
    /// `COEXEC_DEVICE_GPU0 << i` (GPUs are numbered as `coexec info` numbers
    /// them among the engine's devices).
    COEXEC_DEVICE_GPU0 = 4,
}

/// How a kernel uses a buffer argument (`coexec_arg.access`).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum coexec_access {
    /// Read only: the binding must be declared `readonly` in the shader (else
    /// `COEXEC_ERROR_INTERFACE`).
    COEXEC_ACCESS_INPUT = 0,
    /// Written: `per_item` elements per work-item. The shader may declare the
    /// binding read-write (plain `buffer`) or `writeonly`, and a kernel may
    /// read back the elements of its own items. Outputs are not cleared
    /// before a run: elements that no work-item writes keep their previous
    /// contents.
    COEXEC_ACCESS_OUTPUT = 1,
    /// A reduction output combined with a sum: OR it with the element type
    /// (`coexec_elem_type`) and, for a deterministic result,
    /// `COEXEC_REDUCE_DETERMINISTIC`. The buffer receives the result, `per_item` elements (0 means 1), when
    /// the run returns. The shader sees, at this binding, the buffer of
    /// work-group partials (one slot of `per_item` elements per work-group,
    /// which each work-group writes whole: the helpers of
    /// `coexec_reduce.glsl`); the CPU function sees its call's accumulator
    /// (`per_item` elements, holding the identity when the call starts).
    /// 1-D index spaces only.
    COEXEC_ACCESS_REDUCE_SUM = 2,
    /// A reduction output combined with a minimum (as `COEXEC_ACCESS_REDUCE_SUM`).
    COEXEC_ACCESS_REDUCE_MIN = 3,
    /// A reduction output combined with a maximum (as `COEXEC_ACCESS_REDUCE_SUM`).
    COEXEC_ACCESS_REDUCE_MAX = 4,
}

/// Element type of a reduction output, ORed into `coexec_arg.access` with
/// a `COEXEC_ACCESS_REDUCE_*` value (bits 8-15). The result buffer's
/// `elem_size` must be the type's size.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum coexec_elem_type {
    /// `float`.
    COEXEC_ELEM_F32 = 0,
    /// `double`.
    COEXEC_ELEM_F64 = 0x100,
    /// `int32_t` (sums wrap).
    COEXEC_ELEM_I32 = 0x200,
    /// `uint32_t` (sums wrap).
    COEXEC_ELEM_U32 = 0x300,
    /// `uint64_t` (sums wrap).
    COEXEC_ELEM_U64 = 0x400,
}

/// `coexec_arg.access` flag of a reduction: a deterministic result, whose result does not
/// depend on which device ran what: the CPU function is then called once per
/// work-group, and must combine the work-group's items in the order of the
/// GLSL helpers (a pairwise tree over the work-group's invocations, padded
/// with the identity) for its partials to equal the GPU's bit for bit.
pub const COEXEC_REDUCE_DETERMINISTIC: u32 = 0x10000;

/// Kind of a device in a report.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum coexec_device_kind {
    /// The CPU worker threads.
    COEXEC_DEVICE_KIND_CPU = 0,
    /// The Vulkan device.
    COEXEC_DEVICE_KIND_GPU = 1,
}

/// An engine handle. `{0}` is the null handle. Handles are never reused: one
/// that was destroyed is rejected with `COEXEC_ERROR_INVALID_HANDLE`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct coexec_engine {
    /// Opaque identifier.
    pub id: u64,
}

/// A unified-buffer handle. `{0}` is the null handle.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct coexec_buffer {
    /// Opaque identifier.
    pub id: u64,
}

/// A kernel handle. `{0}` is the null handle.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct coexec_kernel {
    /// Opaque identifier.
    pub id: u64,
}

/// How an engine is built. Start from `coexec_engine_options_default()`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct coexec_engine_options {
    /// CPU worker threads: -1 for one per physical core left after the
    /// Vulkan device's share, 0 for none, n > 0 for n (at most the number of
    /// hardware threads, else `COEXEC_ERROR_INVALID_ARGUMENT`).
    pub workers: i32,
    /// A `coexec_allocator` value.
    pub allocator: u32,
    /// A `coexec_validation` value.
    pub validation: u32,
    /// Vulkan device index; -1 for every discrete and integrated GPU (a CPU
    /// implementation such as lavapipe only where it is the only device),
    /// -2 for the one best device. An index is the device's position in
    /// Vulkan's enumeration order, counting every device, usable or not (the
    /// number `coexec info` prints). An index past the last device, or one of
    /// a device coexec cannot use (Vulkan < 1.1, no compute queue), is
    /// `COEXEC_ERROR_NO_DEVICE`.
    pub gpu_index: i32,
    /// GPU packages kept in flight: 1 to `COEXEC_MAX_GPU_IN_FLIGHT` (larger
    /// values are rejected with `COEXEC_ERROR_INVALID_ARGUMENT`); 0 for the
    /// default (2).
    pub gpu_in_flight: u32,
    /// Seconds after which a GPU package counts as hung; 0 (or any value
    /// <= 0) for the default (30); NaN and infinity are rejected with
    /// `COEXEC_ERROR_INVALID_ARGUMENT`. The limit is at least 4x a package's
    /// expected time at the GPU's measured throughput. A package running
    /// longer than gpu_timeout_s is declared hung: the GPU gets no more work
    /// in this run and the other devices go on; the call returns only once
    /// the GPU can no longer write into the run's buffers (the package ended,
    /// or the driver declared the device lost), because the GPU writes the
    /// buffers in place.
    pub gpu_timeout_s: f64,
    /// Pipeline cache directory (UTF-8, NUL-terminated); NULL for the default
    /// (`$COEXEC_CACHE_DIR` or `~/.cache/coexec`), "" to disable the disk cache.
    /// A directory given here is created if missing and must be writable
    /// (else `COEXEC_ERROR_INVALID_ARGUMENT`).
    pub pipeline_cache_dir: *const c_char,
    /// `true`: no profiles. By default what the scheduler learns about each
    /// kernel (every device's package cost) is kept in `profiles/` under the
    /// pipeline cache directory and used by the next process's first run;
    /// a missing, stale or corrupt profile is ignored. Also off when the
    /// cache is disabled or the environment sets `COEXEC_PROFILE=off`.
    pub disable_profiles: bool,
    /// A `coexec_memory` value: where the GPU reads and writes the buffers
    /// (`COEXEC_MEMORY_AUTO` by default).
    pub memory: u32,
    /// A `coexec_objective` value: what HGuided minimizes
    /// (`COEXEC_OBJECTIVE_TIME` by default).
    pub objective: u32,
    /// `true`: open a CPU Vulkan device (Mesa lavapipe) beside the GPUs, on
    /// the CPU workers' cores, so that the CPU share of a kernel made with
    /// a NULL callback runs its SPIR-V there. Where none is installed such
    /// a kernel runs on the GPUs alone (its report's CPU entry has a
    /// `cpu_impl` of -1). Also on with `COEXEC_CPU_IMPL_SPIRV` or the
    /// environment variable `COEXEC_SPIRV_CPU=1`. Off by default.
    pub spirv_cpu: bool,
    /// A `coexec_cpu_impl` value: the CPU path of kernels that have both a
    /// callback and SPIR-V (`COEXEC_CPU_IMPL_NATIVE` by default).
    pub cpu_impl: u32,
}

/// Facts about an engine.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct coexec_engine_info {
    /// Name of the Vulkan device (GPU 0's where the engine has several;
    /// NUL-terminated).
    pub device_name: [c_char; COEXEC_NAME_MAX],
    /// `true` when the Vulkan device (GPU 0) is a CPU implementation (e.g.
    /// lavapipe).
    pub device_is_cpu: bool,
    /// `true` while a GPU of the engine can take part in runs.
    pub gpu_available: bool,
    /// Number of CPU worker threads.
    pub workers: u32,
    /// `minImportedHostPointerAlignment`: pointers and sizes given to
    /// `coexec_buffer_import` must be multiples of it; 0 when the device
    /// cannot import host memory.
    pub host_import_alignment: u64,
    /// Errors reported by the Khronos validation layer so far (0 when off).
    pub validation_errors: u64,
    /// How many GPUs the engine drives (at least 1): run masks name them
    /// as `COEXEC_DEVICE_GPU0 << i` for `i` below this.
    pub num_gpus: u32,
}

/// Facts about a buffer.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct coexec_buffer_info {
    /// The host pointer: the very memory kernels read and write.
    pub host_ptr: *mut c_void,
    /// Number of elements.
    pub count: usize,
    /// Bytes per element.
    pub elem_size: usize,
    /// `count * elem_size`.
    pub size_bytes: usize,
    /// `true` for imported host memory (`coexec_buffer_import`).
    pub imported: bool,
}

/// The index space of a run: its work-items.
///
/// 1-D: `width` work-items, ids `0 .. width - 1`. 2-D: `width` x `height`
/// work-items, item `(x, y)` at linear index `y * width + x`.
///
/// The GPU runs whole work-groups (`local_size_x` x `local_size_y` items), so
/// where `width` (or `height`) is not a multiple of the work-group size the
/// last work-groups contain invocations past the end. The shader must
/// bound-check them against the real size, which it learns only from you,
/// through the push constants (coexec adds nothing to them): pass `n` (2-D:
/// `width` and `height`) in the push-constant block and return early when
/// `gl_GlobalInvocationID.x >= n`. The CPU function is only given items
/// inside the index space.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct coexec_index_space {
    /// 1 or 2.
    pub dims: u32,
    /// 1-D: number of work-items (not work-groups); 2-D: items per row (at
    /// most 2^32 - 1).
    pub width: u64,
    /// 2-D: number of rows (at most 2^32 - 1); ignored in 1-D.
    pub height: u64,
}

/// A scheduler configuration. A zero-initialised one is HGuided with `k = 2`
/// and `min_package = 1`, measuring device powers live.
///
/// Packages are cut in *scheduler units*, never in single work-items: one
/// unit is one work-group (`local_size_x` items) in 1-D, and one row of
/// work-groups (`local_size_y` rows of the whole width) in 2-D; for a
/// CPU-only kernel the work-group is its `local_x` x `local_y`. A run has
/// `coexec_report.units` of them, and a package covers units
/// `coexec_package.unit_start .. unit_end - 1`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct coexec_scheduler {
    /// A `coexec_scheduler_kind` value.
    pub kind: u32,
    /// Dynamic: number of equal packages (>= 1), each of
    /// `ceil(units / packages)` scheduler units (more packages than units is
    /// fine: one unit each). There is no default: 0, the zero-initialised
    /// value, is rejected with `COEXEC_ERROR_SCHEDULER`, so set it whenever
    /// `kind` is `COEXEC_SCHEDULER_DYNAMIC`. Ignored by the other kinds.
    pub packages: u64,
    /// HGuided: divisor k (> 0; larger gives smaller packages); 0 for 2.
    /// Ignored by the other kinds.
    pub k: f64,
    /// HGuided: smallest package in scheduler units (the last one may be
    /// smaller); 0 for 1. Ignored by the other kinds.
    pub min_package: u64,
    /// Static and HGuided: relative device powers, one per device taking part
    /// in the run (CPU first, then GPU), or NULL to measure them. Measuring:
    /// the kernel keeps each device's throughput (work-groups per second)
    /// from its earlier runs over the same index space (a run over another
    /// index space starts afresh). HGuided updates them during the run.
    /// Static, which cuts its one package per device at the start, uses the
    /// kept figures; when a device has none yet (the kernel's first run over
    /// this space), the split is even, so a first Static run with NULL powers
    /// gives every device the same share.
    pub powers: *const f64,
    /// Number of values at `powers`.
    pub num_powers: usize,
}

/// One buffer argument of a run. The i-th argument is bound to the shader's
/// i-th storage buffer (by increasing binding number).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct coexec_arg {
    /// The buffer.
    pub buffer: coexec_buffer,
    /// A `coexec_access` value; for a reduction, ORed with its
    /// `coexec_elem_type` and flags (`COEXEC_REDUCE_DETERMINISTIC`).
    pub access: u32,
    /// Reductions: elements of the result (0 means 1), e.g. 256 for a
    /// histogram. Outputs: elements written per work-item (item i owns elements
    /// `i * per_item .. (i + 1) * per_item - 1`); 0 means 1. The buffer must
    /// hold at least work-items x `per_item` elements
    /// (`COEXEC_ERROR_BUFFER_TOO_SMALL`). Ignored (whatever its value) for
    /// inputs.
    pub per_item: u64,
}

/// What a CPU function is asked to compute: a contiguous range of
/// work-items, all inside the index space (no bound check needed). It must
/// write only the output elements of these items.
///
/// One package (as the scheduler cuts it and the report counts it) is given
/// to the CPU function in one or more calls, each for a contiguous part of
/// it ("chunks", sized to run a few tens of microseconds, so that idle
/// workers can take the rest of a long package); this struct describes the
/// part of one call.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct coexec_package {
    /// First work-item (linear, row-major in 2-D).
    pub item_start: u64,
    /// One past the last work-item. A tile (`col_start .. col_end` narrower
    /// than the row) covers only those columns of the rows between.
    pub item_end: u64,
    /// First scheduler unit (work-group in 1-D, row of work-groups in 2-D, a
    /// work-group in 2-D with tiles; see `coexec_scheduler`).
    pub unit_start: u64,
    /// One past the last scheduler unit.
    pub unit_end: u64,
    /// 2-D: first row; 0 in 1-D.
    pub row_start: u32,
    /// 2-D: one past the last row; 0 in 1-D.
    pub row_end: u32,
    /// 2-D: items per row; 0 in 1-D.
    pub width: u32,
    /// 1 or 2.
    pub dims: u32,
    /// 2-D: first column covered in each row (0 unless the kernel takes
    /// tiles, `coexec_kernel_take_tiles`); 0 in 1-D.
    pub col_start: u32,
    /// 2-D: one past the last column covered in each row (`width` unless
    /// the kernel takes tiles); 0 in 1-D.
    pub col_end: u32,
}

/// One buffer argument of a run as the CPU function sees it: the whole
/// buffer, indexed like the shader indexes it.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct coexec_cpu_buffer {
    /// The buffer's host memory (the same memory the GPU binds), aligned for
    /// its elements. Inputs must not be written; of an output, write only the
    /// elements of the call's items (`item * per_item ..`). A reduction: the
    /// call's own accumulator, `per_item` elements (`count`) holding the
    /// identity when the call starts, which the call combines its items into.
    pub data: *mut c_void,
    /// Number of elements.
    pub count: usize,
    /// Bytes per element.
    pub elem_size: usize,
    /// The `coexec_arg.access` value the run was given.
    pub access: u32,
    /// Outputs: elements per work-item (>= 1); reductions: elements of the
    /// accumulator (>= 1); 0 for inputs.
    pub per_item: u64,
}

/// The run's arguments, as the CPU function sees them: what `coexec_run`
/// was given. Valid during the call only.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct coexec_cpu_args {
    /// The buffer arguments, in `coexec_run`'s order (`num_buffers` of them).
    pub buffers: *const coexec_cpu_buffer,
    /// Number of buffer arguments.
    pub num_buffers: usize,
    /// The run's push-constant bytes (its scalar arguments); NULL when none.
    pub push: *const c_void,
    /// Number of push-constant bytes.
    pub push_size: usize,
}

/// The CPU implementation of a kernel: computes the items of `pkg` from the
/// run's `args` (see `coexec_package` and `coexec_cpu_args`), with the
/// `user_data` given when the kernel was built. It is called from several
/// worker threads at once, and one package may come in several calls.
///
/// It returns 0 on success. Any other value fails the run: no more work is
/// claimed, `coexec_run` returns `COEXEC_ERROR_KERNEL_FAILED`, and
/// `coexec_last_kernel_code()` gives the first non-zero value returned.
/// It must not unwind (no C++ exceptions, no longjmp out of it) and must
/// not call `coexec_run`.
pub type coexec_cpu_fn = Option<
    unsafe extern "C" fn(
        pkg: *const coexec_package,
        args: *const coexec_cpu_args,
        user_data: *mut c_void,
    ) -> i32,
>;

/// Figures of one device in a run.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct coexec_device_report {
    /// Device name (the CPU model for the CPU), NUL-terminated.
    pub name: [c_char; COEXEC_NAME_MAX],
    /// CPU or GPU.
    pub kind: coexec_device_kind,
    /// Claimants: CPU workers, or 1 for the GPU.
    pub claimants: u32,
    /// Packages executed. A package split by work stealing (CPU workers
    /// even out what they claimed; an idle GPU takes the unstarted end of a
    /// CPU worker's package) counts once per part.
    pub packages: u64,
    /// Work-items executed.
    pub items: u64,
    /// Seconds spent executing packages (summed over claimants).
    pub busy_s: f64,
    /// First package start, seconds from the run's start.
    pub first_start_s: f64,
    /// Last package end, seconds from the run's start.
    pub finish_s: f64,
    /// `true` when the device failed during the run (the others finished its work).
    pub failed: bool,
    /// When the device stopped taking work by design: the seconds the
    /// package it declined would have taken (HGuided's finish-time guard),
    /// or `INFINITY` when it sat the run out (a power of 0, or the
    /// single-device fallback; it then comes after the devices that ran).
    /// -1 when it took work until none was left.
    pub declined_s: f64,
    /// Staged runs (`COEXEC_MEMORY_STAGED`): bytes copied from host
    /// buffers to device-local mirrors; 0 otherwise and for the CPU.
    pub upload_bytes: u64,
    /// Staged runs: bytes copied from mirrors back to host buffers.
    pub download_bytes: u64,
    /// Staged runs: seconds the GPU's dispatch loop waited for transfers.
    pub transfer_s: f64,
    /// Joules the device used during the run, estimated from its power as
    /// learned from its energy counter (RAPL for the CPU package, NVML for
    /// an NVIDIA GPU) over windows of runs (the counters are read once per
    /// window, not around each run); -1 where unavailable (no counter, not
    /// readable, RAPL is usually root-only, or no window closed yet).
    pub energy_j: f64,
    /// The CPU only: the `coexec_cpu_impl` of the path that ran its share
    /// (0 native, 1 SPIR-V on a CPU Vulkan device); -1 for a GPU, and for a
    /// CPU that could not run the kernel (no callback and no CPU Vulkan
    /// device: the GPUs ran it alone).
    pub cpu_impl: i32,
    /// Why the device did not take part though asked for, where that is not
    /// a failure, NUL-terminated (truncated to `COEXEC_NAME_MAX - 1`
    /// bytes); empty where none. E.g. `left out: dispatch limit (...)`: its
    /// `maxComputeWorkGroupCount` cannot dispatch the index space and
    /// another device ran it; or a CPU without a path to run the kernel.
    pub note: [c_char; COEXEC_NAME_MAX],
}

/// The result of a run.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct coexec_report {
    /// Wall time, seconds.
    pub time_s: f64,
    /// Total work-items (of the sub-range, for `coexec_run_range`).
    pub items: u64,
    /// Scheduler units of the index space (work-groups in 1-D, rows of
    /// work-groups in 2-D; see `coexec_scheduler`); of the sub-range, for
    /// `coexec_run_range`.
    pub units: u64,
    /// Total packages (split packages count once per part).
    pub packages: u64,
    /// Earliest device finish / latest device finish, counting only the
    /// devices that executed at least one package (1.0: they finished
    /// together), where a device that declined work by design counts as
    /// finishing when its declined package would have ended (at most the
    /// latest finish; see `declined_s`). A device that was selected but got
    /// no package is left out, so a run where one device did all the work
    /// has balance 1.0; look at `devices[i].packages` to see who worked.
    pub balance: f64,
    /// The plain earliest / latest finish over the devices that executed a
    /// package, declined or not.
    pub balance_raw: f64,
    /// `true` when the scheduler's figures for this kernel and index space
    /// came, at least in part, from a profile on disk (see
    /// `coexec_engine_options.disable_profiles`).
    pub from_profile: bool,
    /// `true` when a staged GPU's first package brought up the rest of an
    /// input the kernel had read before, unchanged since (a one-time
    /// transfer: the input is resident afterwards); the scheduler does not
    /// time such a run.
    pub one_time_transfer: bool,
    /// A `coexec_memory` value: `COEXEC_MEMORY_ZERO_COPY` or
    /// `COEXEC_MEMORY_STAGED`, where the GPU read and wrote the buffers
    /// (zero-copy when no GPU took part).
    pub memory: u32,
    /// Devices filled in `devices`.
    pub num_devices: u32,
    /// Per device, in run order (CPU first; devices that sat the run out
    /// last).
    pub devices: [coexec_device_report; COEXEC_MAX_DEVICES],
    /// Joules of the devices with a figure (estimated, as
    /// `coexec_device_report.energy_j`); -1 where none has one.
    pub energy_j: f64,
    /// Energy-delay product, `energy_j * time_s` (J*s); -1 where energy is
    /// unavailable.
    pub edp: f64,
}
