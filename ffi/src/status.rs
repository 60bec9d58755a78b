//! Errors at the boundary: status codes, the thread-local last error, and the
//! guard every entry point runs in (no panic ever crosses into C).

use super::types::coexec_status::{self, *};
use coexec_engine::{Error, VkError};
use std::cell::{Cell, RefCell};
use std::ffi::{c_char, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};

/// An error on its way to C: a status code and a message.
#[derive(Debug)]
pub(crate) struct FfiError {
    pub(crate) code: coexec_status,
    pub(crate) message: String,
}

impl FfiError {
    pub(crate) fn new(code: coexec_status, message: impl Into<String>) -> Self {
        FfiError {
            code,
            message: message.into(),
        }
    }
}

/// Result of the inner body of an entry point.
pub(crate) type FfiResult<T = ()> = Result<T, FfiError>;

/// The status code for an engine error.
pub(crate) fn code_of(e: &Error) -> coexec_status {
    match e {
        Error::Vulkan(VkError::DeviceLost { .. }) => COEXEC_ERROR_DEVICE_LOST,
        Error::Vulkan(VkError::OutOfMemory { .. }) => COEXEC_ERROR_OUT_OF_MEMORY,
        // Only with `validation_errors_fail`, which the C options leave off.
        Error::Vulkan(_) | Error::Validation { .. } => COEXEC_ERROR_VULKAN,
        Error::NoLoader(_)
        | Error::LoaderTooOld { .. }
        | Error::NoDevice(_)
        | Error::DeviceIndex { .. }
        | Error::DeviceUnusable { .. } => COEXEC_ERROR_NO_DEVICE,
        Error::NoMemoryType { .. }
        | Error::ValidationLayerMissing
        | Error::BackendUnavailable(_)
        | Error::HostImportUnsupported { .. }
        | Error::GlslUnsupported => COEXEC_ERROR_UNSUPPORTED,
        Error::HostImportMisaligned { .. } => COEXEC_ERROR_MISALIGNED,
        Error::Allocation { .. } | Error::Allocator { .. } | Error::MirrorUnavailable { .. } => {
            COEXEC_ERROR_OUT_OF_MEMORY
        }
        Error::EmptyBuffer
        | Error::SizeOverflow(_)
        | Error::EmptyRange
        | Error::SubRange { .. }
        | Error::DispatchLimit { .. }
        | Error::NoDeviceSelected(_)
        | Error::ZeroPerItem { .. }
        | Error::Reduction(_)
        | Error::Footprint { .. } => COEXEC_ERROR_INVALID_ARGUMENT,
        Error::ShaderCompile(_) => COEXEC_ERROR_SHADER_COMPILE,
        Error::InvalidSpirv(_) => COEXEC_ERROR_INVALID_SPIRV,
        Error::Interface(_) | Error::MissingImplementation(_) => COEXEC_ERROR_INTERFACE,
        Error::BufferTooSmall { .. } => COEXEC_ERROR_BUFFER_TOO_SMALL,
        Error::Scheduler(_) => COEXEC_ERROR_SCHEDULER,
        Error::KernelPanic { .. } | Error::KernelFailed { .. } => COEXEC_ERROR_KERNEL_FAILED,
        Error::ForeignBuffer { .. } => COEXEC_ERROR_FOREIGN_HANDLE,
        Error::AllDevicesFailed { .. } | Error::GpuLostMidPackage { .. } => {
            COEXEC_ERROR_DEVICE_LOST
        }
        Error::ProgramStep { source, .. } => code_of(source),
        Error::HostStep(_) => COEXEC_ERROR_KERNEL_FAILED,
        _ => COEXEC_ERROR_INTERNAL,
    }
}

impl From<Error> for FfiError {
    fn from(e: Error) -> Self {
        // The whole chain: C sees only this text.
        FfiError::new(code_of(&e), coexec_engine::error::chain(&e))
    }
}

thread_local! {
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
    /// What the CPU function returned in the last failed run on this thread.
    static LAST_KERNEL_CODE: Cell<i32> = const { Cell::new(0) };
    /// Validation-layer messages of the last call on this thread.
    static LAST_VALIDATION: RefCell<CString> = RefCell::new(CString::default());
}

/// Replaces the thread-local string `slot` (NUL bytes escaped).
fn set_string(slot: &'static std::thread::LocalKey<RefCell<CString>>, message: &str) {
    let c = CString::new(message.replace('\0', "\\0")).unwrap_or_default();
    // `try_with`: during thread teardown the slot may be gone; then there is
    // nobody left to read the message anyway.
    let _ = slot.try_with(|slot| {
        if let Ok(mut s) = slot.try_borrow_mut() {
            *s = c;
        }
    });
}

/// A pointer to the thread-local string `slot` (an empty string when gone).
fn string_ptr(slot: &'static std::thread::LocalKey<RefCell<CString>>) -> *const c_char {
    static EMPTY: &[u8] = b"\0";
    slot.try_with(|slot| slot.try_borrow().map(|s| s.as_ptr()).ok())
        .ok()
        .flatten()
        .unwrap_or(EMPTY.as_ptr().cast())
}

/// Records the value a CPU function failed a run with.
pub(crate) fn set_last_kernel_code(code: i32) {
    let _ = LAST_KERNEL_CODE.try_with(|c| c.set(code));
}

/// The value the CPU function failed this thread's last call with (0: none).
pub(crate) fn last_kernel_code() -> i32 {
    LAST_KERNEL_CODE.try_with(Cell::get).unwrap_or(0)
}

/// Records the validation messages of this thread's current call.
pub(crate) fn set_validation_messages(messages: &str) {
    set_string(&LAST_VALIDATION, messages);
}

/// The validation messages of this thread's last call ("" when none).
pub(crate) fn validation_messages_ptr() -> *const c_char {
    string_ptr(&LAST_VALIDATION)
}

/// Replaces this thread's last-error message.
pub(crate) fn set_last_error(message: &str) {
    set_string(&LAST_ERROR, message);
}

/// This thread's last-error message (empty string when none). The pointer is
/// valid until the next coexec call on this thread.
pub(crate) fn last_error_ptr() -> *const c_char {
    string_ptr(&LAST_ERROR)
}

/// Runs the body of an entry point: clears the last error (and the last
/// kernel code and validation messages), turns an `Err` into
/// its status code (and message), and a panic into `COEXEC_ERROR_PANIC`.
pub(crate) fn guard(name: &str, body: impl FnOnce() -> FfiResult) -> coexec_status {
    set_last_error("");
    set_last_kernel_code(0);
    set_validation_messages("");
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(())) => COEXEC_OK,
        Ok(Err(e)) => {
            set_last_error(&format!("{name}: {}", e.message));
            e.code
        }
        Err(payload) => {
            let what = coexec_engine::error::panic_message(&*payload);
            // Dropping the payload runs foreign code in theory; keep even that
            // on this side of the boundary.
            let _ = catch_unwind(AssertUnwindSafe(move || drop(payload)));
            set_last_error(&format!(
                "{name}: internal panic (a coexec bug, please report it): {what}"
            ));
            COEXEC_ERROR_PANIC
        }
    }
}

/// Like [`guard`] for functions that return a value rather than a status: the
/// fallback is returned on panic.
pub(crate) fn guard_value<T>(fallback: T, body: impl FnOnce() -> T) -> T {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(v) => v,
        Err(payload) => {
            let _ = catch_unwind(AssertUnwindSafe(move || drop(payload)));
            fallback
        }
    }
}

/// The static name of a status code.
pub(crate) fn status_name(status: i32) -> &'static [u8] {
    let s: &[u8] = match status {
        0 => b"COEXEC_OK\0",
        1 => b"COEXEC_ERROR_NULL_POINTER\0",
        2 => b"COEXEC_ERROR_INVALID_ARGUMENT\0",
        3 => b"COEXEC_ERROR_INVALID_HANDLE\0",
        4 => b"COEXEC_ERROR_FOREIGN_HANDLE\0",
        5 => b"COEXEC_ERROR_BUSY\0",
        6 => b"COEXEC_ERROR_NO_DEVICE\0",
        7 => b"COEXEC_ERROR_UNSUPPORTED\0",
        8 => b"COEXEC_ERROR_MISALIGNED\0",
        9 => b"COEXEC_ERROR_OUT_OF_MEMORY\0",
        10 => b"COEXEC_ERROR_SHADER_COMPILE\0",
        11 => b"COEXEC_ERROR_INVALID_SPIRV\0",
        12 => b"COEXEC_ERROR_INTERFACE\0",
        13 => b"COEXEC_ERROR_BUFFER_TOO_SMALL\0",
        14 => b"COEXEC_ERROR_SCHEDULER\0",
        15 => b"COEXEC_ERROR_KERNEL_FAILED\0",
        16 => b"COEXEC_ERROR_DEVICE_LOST\0",
        17 => b"COEXEC_ERROR_VULKAN\0",
        18 => b"COEXEC_ERROR_PANIC\0",
        19 => b"COEXEC_ERROR_INTERNAL\0",
        _ => b"(unknown coexec_status)\0",
    };
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::CStr;

    fn last() -> String {
        // SAFETY: `last_error_ptr` returns a NUL-terminated string valid until
        // the next call on this thread; it is copied at once.
        unsafe { CStr::from_ptr(last_error_ptr()) }
            .to_string_lossy()
            .into_owned()
    }

    #[test]
    fn a_panic_becomes_a_status_not_an_unwind() {
        let s = guard("coexec_test", || panic!("boom"));
        assert_eq!(s, COEXEC_ERROR_PANIC);
        assert!(last().contains("boom"), "{}", last());
        let s = guard("coexec_test", || std::panic::panic_any(42u8));
        assert_eq!(s, COEXEC_ERROR_PANIC);
        assert!(last().contains("unknown panic"));
        assert_eq!(guard_value(7, || panic!("x")), 7);
    }

    #[test]
    fn success_clears_the_last_error_and_errors_set_it() {
        let s = guard("f", || Err(FfiError::new(COEXEC_ERROR_BUSY, "in\0use")));
        assert_eq!(s, COEXEC_ERROR_BUSY);
        assert_eq!(last(), "f: in\\0use");
        assert_eq!(guard("f", || Ok(())), COEXEC_OK);
        assert_eq!(last(), "");
    }

    /// Each error of the engine gets its status; the message is the whole
    /// chain of causes.
    #[test]
    fn engine_errors_map_to_statuses_with_their_causes() {
        let io = || Box::new(std::io::Error::other("the cause"));
        for (e, code) in [
            (Error::NoLoader(io()), COEXEC_ERROR_NO_DEVICE),
            (
                Error::LoaderTooOld {
                    version: "1.1.0".into(),
                },
                COEXEC_ERROR_NO_DEVICE,
            ),
            (
                Error::DeviceUnusable {
                    index: 1,
                    device: "old".into(),
                    reason: "Vulkan 1.1".into(),
                },
                COEXEC_ERROR_NO_DEVICE,
            ),
            (Error::ValidationLayerMissing, COEXEC_ERROR_UNSUPPORTED),
            (
                Error::Allocator {
                    bytes: 4,
                    source: io(),
                },
                COEXEC_ERROR_OUT_OF_MEMORY,
            ),
            (
                Error::ZeroPerItem { binding: 1 },
                COEXEC_ERROR_INVALID_ARGUMENT,
            ),
        ] {
            assert_eq!(code_of(&e), code, "{e}");
        }
        let f = FfiError::from(Error::Allocator {
            bytes: 4,
            source: io(),
        });
        assert!(f.message.ends_with(": the cause"), "{}", f.message);
    }

    #[test]
    fn every_status_has_a_name() {
        for i in 0..=19 {
            let n = status_name(i);
            assert!(n.starts_with(b"COEXEC_"), "{i}");
        }
        assert!(status_name(-1).starts_with(b"(unknown"));
    }
}
