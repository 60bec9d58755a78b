//! The engine's error types.
//!
//! One small enum for failed Vulkan calls ([`VkError`], mapped from
//! `vk::Result` so that a lost device is distinguishable), and one enum for
//! everything a caller can get wrong or run into ([`Error`]). Messages name the
//! rule that was broken.

use ash::vk;
use std::ops::Range;

/// An error kept as the source of another.
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// `e` and each of its sources, joined by `": "`: the whole story of an
/// error, for messages to people (the `coexec` command, the C ABI's last
/// error). Each error's own text names what failed; its source says why.
pub fn chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut s = e.to_string();
    let mut next = e.source();
    while let Some(cause) = next {
        s.push_str(": ");
        s.push_str(&cause.to_string());
        next = cause.source();
    }
    s
}

/// A failed Vulkan call, mapped from its `vk::Result`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum VkError {
    /// `VK_ERROR_DEVICE_LOST`: the device can no longer be used.
    #[error("{call}: the device was lost (VK_ERROR_DEVICE_LOST)")]
    DeviceLost {
        /// The Vulkan entry point that reported it.
        call: &'static str,
    },
    /// Host or device memory ran out.
    #[error("{call}: out of {} memory", if *.device { "device" } else { "host" })]
    OutOfMemory {
        /// The Vulkan entry point that reported it.
        call: &'static str,
        /// `true` for `VK_ERROR_OUT_OF_DEVICE_MEMORY`.
        device: bool,
    },
    /// A wait ran past its time limit (`VK_TIMEOUT`).
    #[error("{call}: timed out")]
    Timeout {
        /// The Vulkan entry point that reported it.
        call: &'static str,
    },
    /// Any other failure code.
    #[error("{call} failed: {result}")]
    Other {
        /// The Vulkan entry point that reported it.
        call: &'static str,
        /// The result code.
        result: VkResultCode,
    },
}

/// A raw `VkResult` code (shown by its Vulkan name).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct VkResultCode(i32);

impl VkResultCode {
    /// The code of `result`.
    pub(crate) fn of(result: vk::Result) -> Self {
        VkResultCode(result.as_raw())
    }

    /// The raw `VkResult` value (negative for errors).
    pub fn raw(self) -> i32 {
        self.0
    }
}

impl std::fmt::Display for VkResultCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(&vk::Result::from_raw(self.0), f)
    }
}

impl VkError {
    /// Maps a raw `vk::Result` returned by `call`.
    pub(crate) fn from_result(call: &'static str, result: vk::Result) -> Self {
        match result {
            vk::Result::ERROR_DEVICE_LOST => VkError::DeviceLost { call },
            vk::Result::ERROR_OUT_OF_HOST_MEMORY => VkError::OutOfMemory {
                call,
                device: false,
            },
            vk::Result::ERROR_OUT_OF_DEVICE_MEMORY => VkError::OutOfMemory { call, device: true },
            vk::Result::TIMEOUT => VkError::Timeout { call },
            result => VkError::Other {
                call,
                result: VkResultCode::of(result),
            },
        }
    }

    /// `true` when the device was lost and must not be used again.
    pub fn is_device_lost(&self) -> bool {
        matches!(self, VkError::DeviceLost { .. })
    }
}

/// Extension to turn `VkResult<T>` into `Result<T, VkError>` naming the call.
pub(crate) trait VkResultExt<T> {
    /// Names the failed call.
    fn call(self, call: &'static str) -> Result<T, VkError>;
}

impl<T> VkResultExt<T> for ash::prelude::VkResult<T> {
    fn call(self, call: &'static str) -> Result<T, VkError> {
        self.map_err(|r| VkError::from_result(call, r))
    }
}

/// Everything that can go wrong in coexec.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A Vulkan call failed.
    #[error(transparent)]
    Vulkan(#[from] VkError),
    /// The Vulkan loader (`libvulkan.so.1`) could not be loaded; the
    /// source says why.
    #[error("the Vulkan loader could not be loaded (install libvulkan1 and a driver, e.g. mesa-vulkan-drivers)")]
    NoLoader(#[source] BoxError),
    /// The Vulkan loader is older than Vulkan 1.1.
    #[error(
        "the Vulkan loader offers Vulkan {version} only; coexec needs 1.1 (update libvulkan1)"
    )]
    LoaderTooOld {
        /// The loader's version, `major.minor.patch`.
        version: String,
    },
    /// Validation was required ([`Validation::Required`]) but the Khronos
    /// validation layer is not installed.
    ///
    /// [`Validation::Required`]: crate::vk::Validation::Required
    #[error("validation was required but VK_LAYER_KHRONOS_validation is not installed (apt install vulkan-validationlayers, or point VK_LAYER_PATH at it)")]
    ValidationLayerMissing,
    /// No Vulkan device with Vulkan >= 1.2 and a compute queue exists.
    #[error("no Vulkan device with Vulkan >= 1.2 and a compute queue was found ({0})")]
    NoDevice(String),
    /// The requested device index does not exist.
    #[error("device index {index} does not exist: {available} Vulkan device(s) found (indices 0..{available}, see `coexec info`)")]
    DeviceIndex {
        /// The index asked for.
        index: usize,
        /// How many devices exist (usable or not): valid indices are
        /// `0..available`.
        available: usize,
    },
    /// The requested device exists but coexec cannot use it.
    #[error("device {index} ({device}) cannot be used: {reason}")]
    DeviceUnusable {
        /// The index asked for.
        index: usize,
        /// The device's name.
        device: String,
        /// Why (Vulkan older than 1.2, no compute queue).
        reason: String,
    },
    /// No memory type satisfies the unified-buffer rules on this device.
    #[error("no host-visible coherent memory type usable for unified buffers on {device}")]
    NoMemoryType {
        /// The device name.
        device: String,
    },
    /// The memory allocator failed.
    #[error("allocation of {bytes} bytes failed: {message}")]
    Allocation {
        /// Size asked for.
        bytes: u64,
        /// The allocator's message.
        message: String,
    },
    /// The memory allocator library failed; the source is its error.
    #[error("allocation of {bytes} bytes failed in the allocator")]
    Allocator {
        /// Size asked for (0: creating the allocator).
        bytes: u64,
        /// The allocator's error.
        #[source]
        source: BoxError,
    },
    /// The allocator backend asked for is not compiled in.
    #[error(
        "the {0} allocator backend is not available: build coexec with the cargo feature `vma`"
    )]
    BackendUnavailable(&'static str),
    /// A buffer of zero elements was asked for.
    #[error("a buffer must hold at least one element")]
    EmptyBuffer,
    /// A size computation overflowed.
    #[error("size overflow: {0}")]
    SizeOverflow(String),
    /// GLSL failed to compile; the message is the compiler's.
    #[error("GLSL compilation failed:\n{0}")]
    ShaderCompile(String),
    /// GLSL was given to a build without the runtime compiler (the cargo
    /// feature `glsl` is off: the lean build takes SPIR-V only).
    #[error("GLSL is not supported by this build: it was built without the cargo feature `glsl` (runtime shaderc); compile the shader to SPIR-V ahead of time (glslc, glslangValidator) and pass the SPIR-V")]
    GlslUnsupported,
    /// SPIR-V is malformed or not a usable compute shader.
    #[error("invalid SPIR-V: {0}")]
    InvalidSpirv(String),
    /// A kernel's declared interface does not match what was given.
    #[error("kernel interface mismatch: {0}")]
    Interface(String),
    /// An output was given 0 elements per work-item
    /// ([`Args::output_per_item`](crate::Args::output_per_item)).
    #[error(
        "binding {binding}: an output needs at least 1 element per work-item (per_item 0 given)"
    )]
    ZeroPerItem {
        /// The binding number.
        binding: u32,
    },
    /// A reduction output cannot be used as given (see
    /// [`Reduction`](crate::Reduction)).
    #[error("reduction: {0}")]
    Reduction(String),
    /// An argument's footprint ([`Args::footprint`](crate::Args::footprint))
    /// is not valid for it.
    #[error("binding {binding}: invalid footprint: {message}")]
    Footprint {
        /// The binding number.
        binding: u32,
        /// What is wrong.
        message: String,
    },
    /// A buffer is smaller than the range a kernel touches.
    #[error("binding {binding}: buffer holds {len} elements but the index space needs {needed}")]
    BufferTooSmall {
        /// The binding number.
        binding: u32,
        /// Elements the buffer holds.
        len: u64,
        /// Elements the run touches.
        needed: u64,
    },
    /// A buffer is larger than one storage-buffer binding may be on the device.
    #[error("binding {binding}: {bytes} bytes exceed {device}'s maxStorageBufferRange of {limit} bytes (the CPU alone can still use it)")]
    BindingRange {
        /// The binding number.
        binding: u32,
        /// Buffer size.
        bytes: u64,
        /// The device limit.
        limit: u32,
        /// The device name.
        device: String,
    },
    /// The index space is empty.
    #[error("the index space is empty")]
    EmptyRange,
    /// A sub-range of an index space ([`Engine::run_range`]) is empty or
    /// reaches past the space's units.
    ///
    /// [`Engine::run_range`]: crate::Engine::run_range
    #[error("{}", sub_range_message(*.start, *.end, *.units))]
    SubRange {
        /// The range's first unit.
        start: u64,
        /// Its end (exclusive).
        end: u64,
        /// Units of the whole space (work-groups in 1-D, rows of
        /// work-groups in 2-D).
        units: u64,
    },
    /// The index space exceeds what the device can dispatch.
    #[error("{device}: {groups} work-groups along {axis} exceed maxComputeWorkGroupCount[{axis}] = {limit}{hint}")]
    DispatchLimit {
        /// The device name.
        device: String,
        /// The axis, 0 (x) or 1 (y).
        axis: usize,
        /// Work-groups needed.
        groups: u64,
        /// The device limit.
        limit: u32,
        /// A hint on what to do.
        hint: &'static str,
    },
    /// A scheduler was configured wrongly.
    #[error(transparent)]
    Scheduler(#[from] crate::sched::SchedError),
    /// A CPU kernel panicked on a package.
    #[error("the CPU kernel panicked on package units {}..{} (worker {worker}): {message}", .units.start, .units.end)]
    KernelPanic {
        /// The package's units.
        units: Range<u64>,
        /// The worker index.
        worker: usize,
        /// The panic message.
        message: String,
    },
    /// A CPU kernel reported a failure on a package ([`CpuArgs::fail`]):
    /// the run stopped claiming work and returned this error.
    ///
    /// [`CpuArgs::fail`]: crate::CpuArgs::fail
    #[error("the CPU kernel failed on package units {}..{} (worker {worker}): {message}", .units.start, .units.end)]
    KernelFailed {
        /// The units of the call that failed.
        units: Range<u64>,
        /// The worker index.
        worker: usize,
        /// The kernel's message.
        message: String,
    },
    /// The kernel has no implementation for a selected device kind.
    #[error("the kernel has no {0} implementation but a {0} device was selected")]
    MissingImplementation(&'static str),
    /// No device was selected for a run.
    #[error("no device selected: {0}")]
    NoDeviceSelected(String),
    /// Setting up or running the CPU side (topology, threads) failed.
    #[error("CPU executor: {message}")]
    Cpu {
        /// What failed.
        message: String,
        /// Why, where another error says it.
        #[source]
        source: Option<BoxError>,
    },
    /// A buffer belongs to another engine.
    #[error("binding {binding}: the buffer belongs to another engine")]
    ForeignBuffer {
        /// The binding number.
        binding: u32,
    },
    /// Host memory cannot be imported: the device lacks
    /// `VK_EXT_external_memory_host`, or rejects this pointer.
    #[error("{device} cannot import host memory: {reason}")]
    HostImportUnsupported {
        /// The device name.
        device: String,
        /// Why.
        reason: String,
    },
    /// A host pointer or size to import is not a multiple of the device's
    /// `minImportedHostPointerAlignment`.
    #[error("host memory import: the {what} ({value:#x}) is not a multiple of minImportedHostPointerAlignment ({alignment} bytes); use page-aligned memory and a size rounded up to it")]
    HostImportMisaligned {
        /// `"pointer"` or `"size"`.
        what: &'static str,
        /// The offending address or size.
        value: u64,
        /// The device's `minImportedHostPointerAlignment`.
        alignment: u64,
    },
    /// Every device that could run the work failed; nothing is left to finish it.
    #[error("every device failed; {remaining} work-groups remain undone: {cause}")]
    AllDevicesFailed {
        /// Units left.
        remaining: u64,
        /// The last failure.
        cause: String,
    },
    /// The GPU was lost while it ran packages of a kernel that reads a
    /// binding it also writes (declared neither `readonly` nor `writeonly`,
    /// like `y += 2x`). Such a package may have written any part of its
    /// outputs before the loss, and running it again could apply it twice,
    /// so it is not run again: the outputs of `items` are undefined. Every
    /// other item was done, once, by the remaining devices. (When no device
    /// remained, the run returns [`Error::AllDevicesFailed`] instead.)
    ///
    /// Declaring every output `writeonly` (GLSL; `NonReadable` in SPIR-V)
    /// makes packages safe to run again: the engine then gives such packages
    /// to the other devices and the run succeeds.
    ///
    /// Staged runs ([`MemoryPlacement::Staged`](crate::MemoryPlacement))
    /// do not fail so: there the GPU writes device-local mirrors, and the
    /// host copies only through a package's download after it completed, so
    /// a lost package runs again elsewhere whatever the kernel.
    #[error("{device} was lost while it ran items {items:?} of a kernel that reads what it writes: their outputs are undefined (they may be written in part, and were not run again; declare outputs `writeonly` to make this recoverable): {cause}")]
    GpuLostMidPackage {
        /// The GPU's name.
        device: String,
        /// The items whose outputs are undefined (work-item ranges, in
        /// linear row-major order for 2-D index spaces).
        items: Vec<Range<u64>>,
        /// What failed.
        cause: String,
    },
    /// A staged run ([`MemoryPlacement::Staged`](crate::MemoryPlacement),
    /// demanded by the options or `COEXEC_MEMORY`) could not give argument
    /// `binding` a device-local mirror (under
    /// [`MemoryPlacement::Auto`](crate::MemoryPlacement) the buffer is bound
    /// zero-copy instead, with a warning).
    #[error("argument {binding} ({bytes} bytes) has no device-local mirror on {device}: {source}")]
    MirrorUnavailable {
        /// The argument's position.
        binding: u32,
        /// The buffer's size.
        bytes: u64,
        /// The GPU's name.
        device: String,
        /// Why the allocation failed.
        #[source]
        source: Box<Error>,
    },
    /// A step of a [`Program`](crate::Program) failed: the program stopped
    /// there (the steps after it did not run in that iteration, nor any
    /// later iteration). Every step before it ran exactly once per
    /// iteration started.
    #[error("program step {step} ({name}), iteration {iteration}: {source}")]
    ProgramStep {
        /// The step's index in the program, from 0 (kernel and host steps
        /// counted alike, in the order they were added).
        step: usize,
        /// The step's name: the kernel's, or `host`.
        name: String,
        /// The iteration, from 0.
        iteration: u64,
        /// What failed.
        #[source]
        source: Box<Error>,
    },
    /// A host step of a program reported a failure
    /// ([`Flow::Fail`](crate::Flow)).
    #[error("host step failed: {0}")]
    HostStep(String),
    /// The Khronos validation layer reported errors while the call ran (only
    /// with [`EngineOptions::validation_errors_fail`](crate::EngineOptions)).
    #[error(
        "the Vulkan validation layer reported {count} error(s) during this call: {messages:?}"
    )]
    Validation {
        /// Errors reported while the call ran (by any thread using the
        /// engine's instance).
        count: u64,
        /// Their messages: the first
        /// [`KEPT_VALIDATION_MESSAGES`](crate::Engine::KEPT_VALIDATION_MESSAGES) reported while the
        /// call ran, whatever the instance logged before it.
        messages: Vec<String>,
    },
}

/// The message of a caught panic: its `&str` or `String` payload, else
/// `"unknown panic (non-string payload)"`.
pub fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "unknown panic (non-string payload)".to_string()
    }
}

/// Result alias.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// The text of [`Error::SubRange`].
fn sub_range_message(start: u64, end: u64, units: u64) -> String {
    if start >= end {
        format!("the sub-range of units {start}..{end} is empty (the space has {units} units)")
    } else {
        format!("the sub-range of units {start}..{end} reaches past the space's {units} units (work-groups in 1-D, rows of work-groups in 2-D)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Wrapped errors keep their cause as a source, and `chain` tells both.
    #[test]
    fn sources_are_kept_and_chained() {
        let io = std::io::Error::new(std::io::ErrorKind::NotFound, "libvulkan.so.1: not here");
        let e = Error::NoLoader(Box::new(io));
        let source = std::error::Error::source(&e).expect("a source");
        assert!(source.to_string().contains("not here"));
        let text = chain(&e);
        assert!(
            text.starts_with("the Vulkan loader could not be loaded"),
            "{text}"
        );
        assert!(text.ends_with(": libvulkan.so.1: not here"), "{text}");
        let e = Error::Cpu {
            message: "starting threads".into(),
            source: None,
        };
        assert_eq!(chain(&e), "CPU executor: starting threads");
    }

    #[test]
    fn device_lost_is_distinguishable() {
        let e = VkError::from_result("vkQueueSubmit", vk::Result::ERROR_DEVICE_LOST);
        assert!(e.is_device_lost());
        assert!(e.to_string().contains("VK_ERROR_DEVICE_LOST"));
        let e = VkError::from_result("vkQueueSubmit", vk::Result::ERROR_INITIALIZATION_FAILED);
        assert!(!e.is_device_lost());
        assert_eq!(
            VkError::from_result("x", vk::Result::ERROR_OUT_OF_DEVICE_MEMORY),
            VkError::OutOfMemory {
                call: "x",
                device: true
            }
        );
    }
}
