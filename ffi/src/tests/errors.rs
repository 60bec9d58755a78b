//! The error channel itself: the last-error message is per thread, a
//! successful call clears it, and a panic inside an entry point comes back as
//! `COEXEC_ERROR_PANIC` instead of unwinding into C.

use super::api::{engine, last_error, ok};
use crate::coexec_status::*;
use crate::status::{guard, guard_value, FfiError};
use crate::*;
use std::sync::{Arc, Barrier};

#[test]
fn the_last_error_of_one_thread_is_not_visible_on_another() {
    // Needs no device: a null handle fails before anything is looked up.
    assert_eq!(
        coexec_engine_destroy(coexec_engine::default()),
        COEXEC_ERROR_INVALID_HANDLE
    );
    let mine = last_error();
    assert_eq!(mine, "coexec_engine_destroy: null engine handle");

    // Both threads hold an error at the same time; neither sees the other's.
    let barrier = Arc::new(Barrier::new(2));
    let b = Arc::clone(&barrier);
    let other = std::thread::spawn(move || {
        let fresh = last_error();
        assert_eq!(
            coexec_kernel_destroy(coexec_kernel::default()),
            COEXEC_ERROR_INVALID_HANDLE
        );
        let own = last_error();
        b.wait(); // main thread checks its message while this one is set
        b.wait(); // main thread has failed again meanwhile
        (fresh, own, last_error())
    });
    barrier.wait();
    assert_eq!(last_error(), mine, "another thread's error leaked in");
    assert_eq!(
        coexec_buffer_free(coexec_buffer::default()),
        COEXEC_ERROR_INVALID_HANDLE
    );
    barrier.wait();
    let (fresh, own, later) = other.join().unwrap();
    assert_eq!(fresh, "", "a new thread starts with no error");
    assert_eq!(own, "coexec_kernel_destroy: null kernel handle");
    assert_eq!(
        later, own,
        "this thread's later error leaked into the other"
    );
    assert_eq!(last_error(), "coexec_buffer_free: null buffer handle");
}

#[test]
fn a_successful_call_clears_the_last_error() {
    let Some(e) = engine() else { return };
    // SAFETY: NULL is a documented, checked error.
    let st = unsafe { coexec_engine_get_info(e, std::ptr::null_mut()) };
    assert_eq!(st, COEXEC_ERROR_NULL_POINTER);
    assert_eq!(last_error(), "coexec_engine_get_info: out is NULL");
    let mut info = std::mem::MaybeUninit::<coexec_engine_info>::uninit();
    // SAFETY: a writable out pointer.
    ok(unsafe { coexec_engine_get_info(e, info.as_mut_ptr()) });
    assert_eq!(last_error(), "", "a success clears the message");
    // Value-returning helpers are not "calls that fail": they leave it alone.
    assert_eq!(
        coexec_engine_destroy(coexec_engine::default()),
        COEXEC_ERROR_INVALID_HANDLE
    );
    let _ = coexec_status_string(3);
    let _ = coexec_version();
    assert_eq!(last_error(), "coexec_engine_destroy: null engine handle");
    ok(coexec_engine_destroy(e));
    assert_eq!(last_error(), "");
}

#[test]
fn a_panic_inside_an_entry_point_becomes_coexec_error_panic() {
    // `guard` is what every status-returning entry point runs its body in.
    let st = guard("coexec_entry", || -> Result<(), FfiError> {
        panic!("index out of bounds in a test")
    });
    assert_eq!(st, COEXEC_ERROR_PANIC);
    let msg = last_error();
    assert!(
        msg.starts_with("coexec_entry: internal panic") && msg.contains("index out of bounds"),
        "{msg}"
    );
    // The thread is still usable and the next success clears the message.
    assert_eq!(guard("coexec_entry", || Ok(())), COEXEC_OK);
    assert_eq!(last_error(), "");
    // A panic with a non-string payload, and in a value-returning entry point.
    assert_eq!(
        guard("coexec_entry", || std::panic::panic_any(7u32)),
        COEXEC_ERROR_PANIC
    );
    let p = guard_value(std::ptr::null::<u8>(), || panic!("in guard_value"));
    assert!(p.is_null(), "the fallback comes back");
}

/// `gpu_index` counts devices as `coexec info` does (Vulkan's enumeration
/// order, every device): each usable device's index opens that device; one
/// past the last is `COEXEC_ERROR_NO_DEVICE`, named as such.
#[test]
fn gpu_index_is_the_index_coexec_info_prints() {
    let (Ok(all), Ok(usable)) = (
        ::coexec_engine::Engine::all_vulkan_devices(),
        ::coexec_engine::Engine::vulkan_devices(),
    ) else {
        eprintln!("skipping: no Vulkan loader");
        return;
    };
    let create = |index: usize| {
        let mut opts = coexec_engine_options_default();
        opts.validation = coexec_validation::COEXEC_VALIDATION_IF_AVAILABLE as u32;
        opts.gpu_index = index as i32;
        opts.disable_profiles = true;
        let mut e = coexec_engine { id: 0 };
        // SAFETY: valid options and out pointer.
        let s = unsafe { coexec_engine_create(&opts, &mut e) };
        (s, e)
    };
    for d in &usable {
        let (s, e) = create(d.index);
        ok(s);
        let mut i = std::mem::MaybeUninit::<coexec_engine_info>::uninit();
        // SAFETY: a live engine and a writable out pointer.
        ok(unsafe { coexec_engine_get_info(e, i.as_mut_ptr()) });
        // SAFETY: filled on success.
        let i = unsafe { i.assume_init() };
        // SAFETY: a NUL-terminated name filled by the call.
        let name = unsafe { std::ffi::CStr::from_ptr(i.device_name.as_ptr()) };
        assert_eq!(name.to_string_lossy(), d.name);
        ok(coexec_engine_destroy(e));
    }
    let (s, e) = create(all.len());
    assert_eq!(s, COEXEC_ERROR_NO_DEVICE);
    assert_eq!(e.id, 0);
    assert!(last_error().contains("does not exist"), "{}", last_error());
}
