//! Misuse that used to crash, hang or pass silently, each now a typed status;
//! and the CPU function's view of the run: its arguments and its status.

use super::api::{args3, buffer, d1, engine, info, last_error, ok};
use super::shaders::{kernel, SCALE};
use crate::coexec_status::*;
use crate::*;
use std::ffi::c_void;
use std::ptr::{null, null_mut};
use std::sync::atomic::{AtomicU64, Ordering};

const CPU: u32 = coexec_device_mask::COEXEC_DEVICE_CPU as u32;

/// Creates an engine from `o` (the cache in the temp dir), returning the
/// status; a created engine is destroyed again.
fn create(mut o: coexec_engine_options) -> coexec_status {
    let dir = std::env::temp_dir().join("coexec-ffi-test-cache\0");
    let dir = dir.to_str().unwrap().to_owned();
    if o.pipeline_cache_dir.is_null() {
        o.pipeline_cache_dir = dir.as_ptr().cast();
    }
    o.validation = coexec_validation::COEXEC_VALIDATION_IF_AVAILABLE as u32;
    let mut e = coexec_engine::default();
    // SAFETY: valid options (the string outlives the call) and out pointer.
    let s = unsafe { coexec_engine_create(&o, &mut e) };
    if s == COEXEC_OK {
        ok(coexec_engine_destroy(e));
    }
    s
}

/// The C ABI's default options make the safe API's default engine: every
/// GPU among them (the safe API's default took the one best device while
/// the C default took every GPU).
#[test]
fn default_options_are_the_safe_apis() {
    let d = coexec_engine_options_default();
    // SAFETY: the only pointer in the defaults, the cache directory, is
    // null.
    let o = unsafe { engine_options(&d) }.unwrap_or_else(|_| panic!("the defaults are valid"));
    let r = EngineOptions::default();
    assert_eq!(o.gpu, GpuChoice::All);
    assert_eq!(o.gpu, r.gpu);
    assert_eq!(
        (o.workers, o.gpu_in_flight, o.gpu_timeout, o.profiles),
        (r.workers, r.gpu_in_flight, r.gpu_timeout, r.profiles)
    );
}

#[test]
fn engine_options_out_of_range_are_argument_errors() {
    let d = coexec_engine_options_default();
    // The documented defaults, spelled out.
    assert_eq!((d.gpu_in_flight, d.gpu_timeout_s), (2, 30.0));
    if engine().map(|e| ok(coexec_engine_destroy(e))).is_none() {
        return;
    }
    for n in [u32::MAX, 1 << 20, COEXEC_MAX_GPU_IN_FLIGHT + 1] {
        let o = coexec_engine_options {
            gpu_in_flight: n,
            ..d
        };
        assert_eq!(create(o), COEXEC_ERROR_INVALID_ARGUMENT, "{n}");
        assert!(last_error().contains("COEXEC_MAX_GPU_IN_FLIGHT"));
    }
    let o = coexec_engine_options {
        gpu_in_flight: COEXEC_MAX_GPU_IN_FLIGHT,
        ..d
    };
    ok(create(o));
    for t in [f64::NAN, f64::INFINITY] {
        let o = coexec_engine_options {
            gpu_timeout_s: t,
            ..d
        };
        assert_eq!(create(o), COEXEC_ERROR_INVALID_ARGUMENT, "{t}");
    }
    let o = coexec_engine_options {
        workers: i32::MAX,
        ..d
    };
    assert_eq!(create(o), COEXEC_ERROR_INVALID_ARGUMENT);
    assert!(
        last_error().contains("hardware threads"),
        "{}",
        last_error()
    );
    let o = coexec_engine_options {
        pipeline_cache_dir: c"/proc/coexec-cache".as_ptr(),
        ..d
    };
    assert_eq!(create(o), COEXEC_ERROR_INVALID_ARGUMENT);
    assert!(last_error().contains("not writable"), "{}", last_error());
}

#[repr(C)]
#[derive(Clone, Copy)]
struct Push {
    a: f32,
    n: u32,
}

/// Calls made, and the item from which the function fails (u64::MAX: never).
struct Scale {
    calls: AtomicU64,
    calls_after_failure: AtomicU64,
    fail_from: u64,
}

/// y = a * x from the run's arguments; returns 7 on items from `fail_from`.
unsafe extern "C" fn scale_cpu(
    pkg: *const coexec_package,
    args: *const coexec_cpu_args,
    user_data: *mut c_void,
) -> i32 {
    // SAFETY: coexec passes a valid package, arguments and our `Scale`; the
    // buffers cover every item, and this call writes only its own items.
    unsafe {
        let (pkg, args, s) = (&*pkg, &*args, &*(user_data as *const Scale));
        // Relaxed: counters read after the run returned.
        if s.calls.fetch_add(1, Ordering::Relaxed) > 0 && s.fail_from == 0 {
            s.calls_after_failure.fetch_add(1, Ordering::Relaxed);
        }
        if pkg.item_end > s.fail_from {
            return 7;
        }
        let b = std::slice::from_raw_parts(args.buffers, args.num_buffers);
        let p = (args.push as *const Push).read_unaligned();
        let (x, y) = (b[0].data as *const f32, b[1].data as *mut f32);
        for i in pkg.item_start as usize..pkg.item_end as usize {
            *y.add(i) = p.a * *x.add(i);
        }
    }
    0
}

fn io(x: coexec_buffer, y: coexec_buffer) -> [coexec_arg; 2] {
    let [a, _, b] = args3(x, x, y);
    [a, b]
}

/// `coexec_run` of `k` over `args` with `push` (its size `push_size`).
fn run_with(
    e: coexec_engine,
    k: coexec_kernel,
    args: &[coexec_arg],
    num_args: usize,
    push: &Push,
    push_size: usize,
    n: u64,
) -> coexec_status {
    // SAFETY: `args` and `push` are valid for what the checks let through:
    // the tests below pass sizes that are rejected before anything is read.
    unsafe {
        coexec_run(
            e,
            k,
            args.as_ptr(),
            num_args,
            (push as *const Push).cast(),
            push_size,
            d1(n),
            null(),
            CPU,
            null_mut(),
        )
    }
}

fn scale_kernel(e: coexec_engine, s: &Scale) -> coexec_kernel {
    // SAFETY: `scale_cpu` reads a `Scale`; `s` outlives the kernel.
    unsafe { kernel(e, &SCALE, Some(scale_cpu), s as *const Scale as *mut c_void) }
}

#[test]
fn one_kernel_runs_over_any_buffers_and_a_failing_cpu_function_stops_the_run() {
    let Some(e) = engine() else { return };
    if info(e).workers == 0 {
        ok(coexec_engine_destroy(e));
        return;
    }
    let n = 50_000usize;
    let s = Scale {
        calls: AtomicU64::new(0),
        calls_after_failure: AtomicU64::new(0),
        fail_from: u64::MAX,
    };
    let k = scale_kernel(e, &s);
    let push = Push {
        a: 3.0,
        n: n as u32,
    };
    // The same kernel over two sets of buffers: the function sees each run's.
    for shift in [0.0f32, 100.0] {
        let (x, _) = buffer(e, n, |i| i as f32 + shift);
        let (y, yp) = buffer(e, n, |_| -1.0);
        ok(run_with(e, k, &io(x, y), 2, &push, 8, n as u64));
        for i in 0..n {
            // SAFETY: n floats; the run is over.
            assert_eq!(unsafe { *yp.add(i) }, 3.0 * (i as f32 + shift), "{i}");
        }
        ok(coexec_buffer_free(x));
        ok(coexec_buffer_free(y));
    }
    ok(coexec_kernel_destroy(k));

    // A function that fails on its first call: the run stops claiming.
    let failing = Scale {
        calls: AtomicU64::new(0),
        calls_after_failure: AtomicU64::new(0),
        fail_from: 0,
    };
    let k = scale_kernel(e, &failing);
    let (x, _) = buffer(e, n, |i| i as f32);
    let (y, _) = buffer(e, n, |_| 0.0);
    assert_eq!(
        run_with(e, k, &io(x, y), 2, &push, 8, n as u64),
        COEXEC_ERROR_KERNEL_FAILED
    );
    assert_eq!(coexec_last_kernel_code(), 7);
    assert!(last_error().contains("returned 7"), "{}", last_error());
    // Only calls already under way on other workers may follow the first.
    let workers = u64::from(info(e).workers);
    let after = failing.calls_after_failure.load(Ordering::Relaxed);
    assert!(after < workers, "{after} calls after the failure");
    assert_eq!(coexec_last_kernel_code(), 0, "cleared by the next call");
    ok(coexec_kernel_destroy(k));
    // The engine stays usable.
    let k = scale_kernel(e, &s);
    ok(run_with(e, k, &io(x, y), 2, &push, 8, n as u64));
    ok(coexec_kernel_destroy(k));
    ok(coexec_buffer_free(x));
    ok(coexec_buffer_free(y));
    ok(coexec_engine_destroy(e));
}

#[test]
fn sizes_from_c_are_checked_before_anything_is_read() {
    let Some(e) = engine() else { return };
    let n = 1000usize;
    let s = Scale {
        calls: AtomicU64::new(0),
        calls_after_failure: AtomicU64::new(0),
        fail_from: u64::MAX,
    };
    let k = scale_kernel(e, &s);
    let (x, _) = buffer(e, n, |i| i as f32);
    let (y, _) = buffer(e, n, |_| 0.0);
    let push = Push { a: 1.0, n: 1000 };
    let a = io(x, y);
    // A push size far past the 8 bytes there are: refused, not read.
    for size in [1 << 30, 12, usize::MAX] {
        assert_eq!(
            run_with(e, k, &a, 2, &push, size, n as u64),
            COEXEC_ERROR_INTERFACE,
            "{size}"
        );
        assert!(last_error().contains("takes 8"), "{}", last_error());
    }
    // Argument counts past COEXEC_MAX_ARGS: an argument error, not a panic.
    for num in [usize::MAX, COEXEC_MAX_ARGS + 1] {
        assert_eq!(
            run_with(e, k, &a, num, &push, 8, n as u64),
            COEXEC_ERROR_INVALID_ARGUMENT
        );
        assert!(last_error().contains("COEXEC_MAX_ARGS"), "{}", last_error());
    }
    // per_item is ignored for inputs, whatever its value.
    let mut big = a;
    big[0].per_item = u64::MAX;
    ok(run_with(e, k, &big, 2, &push, 8, n as u64));
    // Element sizes against the shader's array strides (4 for float).
    let mut half = coexec_buffer::default();
    // SAFETY: writable out pointer; no host pointer wanted.
    ok(unsafe { coexec_buffer_alloc(e, 2 * n, 2, &mut half, null_mut()) });
    for args in [io(half, y), io(x, half)] {
        assert_eq!(
            run_with(e, k, &args, 2, &push, 8, n as u64),
            COEXEC_ERROR_INTERFACE
        );
        assert!(
            last_error().contains("elements of 4 bytes"),
            "{}",
            last_error()
        );
    }
    for b in [x, y, half] {
        ok(coexec_buffer_free(b));
    }
    ok(coexec_kernel_destroy(k));
    ok(coexec_engine_destroy(e));
}

#[cfg(feature = "glsl")]
#[test]
fn glsl_without_version_is_a_compile_error_and_calls_report_validation_messages() {
    let Some(e) = engine() else { return };
    for src in [c"", c"layout(local_size_x = 1) in; void main() {}"] {
        let mut k = coexec_kernel::default();
        // SAFETY: NUL-terminated strings and a writable out pointer.
        let st =
            unsafe { coexec_kernel_from_glsl(e, null(), src.as_ptr(), None, null_mut(), &mut k) };
        assert_eq!(st, COEXEC_ERROR_SHADER_COMPILE);
        assert!(last_error().contains("the GLSL source"), "{}", last_error());
    }
    // A clean call has no validation messages.
    let (b, _) = buffer(e, 4, |_| 0.0);
    // SAFETY: a static, NUL-terminated string.
    let msgs = unsafe { std::ffi::CStr::from_ptr(coexec_last_validation_messages()) };
    assert_eq!(msgs.to_bytes(), b"");
    ok(coexec_buffer_free(b));
    ok(coexec_engine_destroy(e));
}
