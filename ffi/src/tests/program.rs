//! Programs through the C ABI: a run step whose push constants a host step
//! changes between iterations, on the CPU, the GPU and both, verified;
//! stop and failure from a host step; bad handles and pointers.

use super::api::{buffer, d1, engine, last_error, ok};
use super::shaders::{kernel, SCALE};
use crate::coexec_status::*;
use crate::*;
use std::ffi::c_void;
use std::ptr::{null, null_mut};

/// The push constants of `SCALE` (`y = a * x`).
#[repr(C)]
#[derive(Clone, Copy)]
struct Push {
    a: f32,
    n: u32,
}

/// `SCALE` on the CPU.
unsafe extern "C" fn scale_cpu(
    pkg: *const coexec_package,
    args: *const coexec_cpu_args,
    _user_data: *mut c_void,
) -> i32 {
    // SAFETY: coexec passes a valid package and arguments whose buffers
    // cover every item; this call writes only its own items of y.
    unsafe {
        let (pkg, args) = (&*pkg, &*args);
        let b = std::slice::from_raw_parts(args.buffers, 2);
        let (x, y) = (b[0].data as *const f32, b[1].data as *mut f32);
        let p = (args.push as *const Push).read_unaligned();
        for i in pkg.item_start..pkg.item_end {
            *y.add(i as usize) = p.a * *x.add(i as usize);
        }
    }
    0
}

/// What the host step sees: the first step's push constants, the calls.
struct Host {
    push: Push,
    calls: u64,
    /// Return `COEXEC_HOST_STOP` at this iteration; a failure code at
    /// `fail_at`.
    stop_at: u64,
    fail_at: u64,
}

/// `a += 1` for the next iteration; stops or fails where asked.
unsafe extern "C" fn host_step(iteration: u64, user_data: *mut c_void) -> i32 {
    // SAFETY: the test passes its `Host`, alive for the program.
    let h = unsafe { &mut *(user_data as *mut Host) };
    assert_eq!(iteration, h.calls, "once per iteration, in order");
    h.calls += 1;
    h.push.a += 1.0;
    match iteration {
        i if i == h.stop_at => COEXEC_HOST_STOP,
        i if i == h.fail_at => 7,
        _ => COEXEC_HOST_CONTINUE,
    }
}

fn args(x: coexec_buffer, y: coexec_buffer) -> [coexec_arg; 2] {
    [
        coexec_arg {
            buffer: x,
            access: coexec_access::COEXEC_ACCESS_INPUT as u32,
            per_item: 0,
        },
        coexec_arg {
            buffer: y,
            access: coexec_access::COEXEC_ACCESS_OUTPUT as u32,
            per_item: 1,
        },
    ]
}

/// y = a x (a = 2, 3, 4 over the iterations, set by the host step between
/// the runs), host, x = y / 2: after 3 iterations x = 3 x0 and y = 6 x0.
#[test]
fn a_program_runs_steps_and_host_callbacks_in_order() {
    let Some(e) = engine() else { return };
    let n = 10_000usize;
    // SAFETY: `scale_cpu` uses no user data.
    let k = unsafe { kernel(e, &SCALE, Some(scale_cpu), null_mut()) };
    use coexec_device_mask::*;
    for devices in [COEXEC_DEVICE_CPU, COEXEC_DEVICE_GPU, COEXEC_DEVICE_ALL] {
        let (x, xp) = buffer(e, n, |i| i as f32);
        let (y, yp) = buffer(e, n, |_| 0.0);
        let mut host = Box::new(Host {
            push: Push {
                a: 2.0,
                n: n as u32,
            },
            calls: 0,
            stop_at: u64::MAX,
            fail_at: u64::MAX,
        });
        let half = Push {
            a: 0.5,
            n: n as u32,
        };
        let mut p = coexec_program::default();
        // SAFETY: valid handles and pointers; `host` and `half` outlive
        // the program.
        unsafe {
            ok(coexec_program_create(e, &mut p));
            let size = std::mem::size_of::<Push>();
            let a = args(x, y);
            let push = (&host.push as *const Push).cast();
            ok(coexec_program_add_run(
                p,
                k,
                a.as_ptr(),
                2,
                push,
                size,
                d1(n as u64),
                null(),
                devices as u32,
            ));
            let h = (&mut *host as *mut Host).cast();
            ok(coexec_program_add_host(p, Some(host_step), h));
            let b = args(y, x);
            let half = (&half as *const Push).cast();
            ok(coexec_program_add_run(
                p,
                k,
                b.as_ptr(),
                2,
                half,
                size,
                d1(n as u64),
                null(),
                devices as u32,
            ));
            let mut done = 0;
            ok(coexec_program_run(p, 3, &mut done));
            assert_eq!(done, 3);
            assert_eq!(host.calls, 3);
            for i in 0..n {
                assert_eq!(*xp.add(i), 3.0 * i as f32, "x[{i}], devices {devices:?}");
                assert_eq!(*yp.add(i), 6.0 * i as f32, "y[{i}], devices {devices:?}");
            }
            ok(coexec_program_destroy(p));
            ok(coexec_buffer_free(x));
            ok(coexec_buffer_free(y));
        }
    }
    ok(coexec_kernel_destroy(k));
}

/// A host step stops the program (`COEXEC_OK`, fewer iterations) or fails
/// it with the step and iteration named; bad handles and pointers are
/// refused.
#[test]
fn host_steps_stop_or_fail_and_bad_input_is_refused() {
    let Some(e) = engine() else { return };
    let mut host = Box::new(Host {
        push: Push { a: 0.0, n: 0 },
        calls: 0,
        stop_at: 1,
        fail_at: u64::MAX,
    });
    let mut p = coexec_program::default();
    // SAFETY: valid handles and pointers; `host` outlives the program.
    unsafe {
        ok(coexec_program_create(e, &mut p));
        let h = (&mut *host as *mut Host).cast();
        ok(coexec_program_add_host(p, Some(host_step), h));
        let mut done = 0;
        ok(coexec_program_run(p, 10, &mut done));
        assert_eq!((done, host.calls), (2, 2));
        // Fails at its third call (iteration 0 of the next run).
        host.calls = 0;
        host.stop_at = u64::MAX;
        host.fail_at = 0;
        let s = coexec_program_run(p, 10, &mut done);
        assert_eq!(s, COEXEC_ERROR_KERNEL_FAILED);
        assert!(
            last_error().contains("program step 0, iteration 0"),
            "{}",
            last_error()
        );
        assert!(last_error().contains("returned 7"), "{}", last_error());
        assert_eq!(done, 1);
        assert_eq!(
            coexec_program_add_host(p, None, null_mut()),
            COEXEC_ERROR_NULL_POINTER
        );
        let bad_kernel = coexec_kernel { id: 0 };
        let s = coexec_program_add_run(p, bad_kernel, null(), 0, null(), 0, d1(64), null(), 1);
        assert_eq!(s, COEXEC_ERROR_INVALID_HANDLE);
        assert_eq!(
            coexec_program_create(e, null_mut()),
            COEXEC_ERROR_NULL_POINTER
        );
        ok(coexec_program_destroy(p));
        assert_eq!(coexec_program_destroy(p), COEXEC_ERROR_INVALID_HANDLE);
        assert_eq!(
            coexec_program_run(p, 1, null_mut()),
            COEXEC_ERROR_INVALID_HANDLE
        );
    }
}
