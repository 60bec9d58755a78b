//! Reduction outputs through the C ABI: a CPU function's accumulator, the
//! result written into the argument's buffer, and bad reduction arguments
//! refused with their codes.

use super::api::{d1, engine, last_error, ok};
use crate::coexec_status::*;
use crate::*;
use std::ffi::c_void;
use std::ptr::{null, null_mut};

/// Adds `i` and `i % 7` for every item `i` into accumulators 0 (`u64`
/// sum) and 1 (`u32`, 2 elements: min and max of `i % 1000 + 5`).
unsafe extern "C" fn reduce_cpu(
    pkg: *const coexec_package,
    args: *const coexec_cpu_args,
    _user_data: *mut c_void,
) -> i32 {
    // SAFETY: coexec passes a valid package and arguments; reduction
    // arguments point at this call's own accumulators of `count` elements.
    unsafe {
        let (pkg, args) = (&*pkg, &*args);
        let b = std::slice::from_raw_parts(args.buffers, args.num_buffers);
        assert_eq!((b[0].count, b[0].per_item, b[0].elem_size), (1, 1, 8));
        let sum_u64 = coexec_access::COEXEC_ACCESS_REDUCE_SUM as u32
            | coexec_elem_type::COEXEC_ELEM_U64 as u32;
        assert_eq!(b[0].access & !COEXEC_REDUCE_DETERMINISTIC, sum_u64);
        let sum = b[0].data as *mut u64;
        let mm = std::slice::from_raw_parts_mut(b[1].data as *mut u32, 2);
        for i in pkg.item_start..pkg.item_end {
            *sum += i;
            let v = (i % 1000) as u32 + 5;
            mm[0] = mm[0].max(v);
            mm[1] = mm[1].max(v);
        }
    }
    0
}

fn alloc(e: coexec_engine, n: usize, size: usize) -> (coexec_buffer, *mut c_void) {
    let mut b = coexec_buffer::default();
    let mut p = null_mut();
    // SAFETY: writable out pointers.
    ok(unsafe { coexec_buffer_alloc(e, n, size, &mut b, &mut p) });
    (b, p)
}

/// An argument: `access` ORed with `flags` (element type, deterministic).
fn arg(buffer: coexec_buffer, access: coexec_access, flags: u32, per_item: u64) -> coexec_arg {
    coexec_arg {
        buffer,
        access: access as u32 | flags,
        per_item,
    }
}

fn run(
    e: coexec_engine,
    k: coexec_kernel,
    args: &[coexec_arg],
    space: coexec_index_space,
) -> coexec_status {
    // SAFETY: valid arguments; no push constants.
    unsafe {
        coexec_run(
            e,
            k,
            args.as_ptr(),
            args.len(),
            null(),
            0,
            space,
            null(),
            coexec_device_mask::COEXEC_DEVICE_CPU as u32,
            null_mut(),
        )
    }
}

#[test]
fn cpu_accumulators_combine_into_the_result_buffers() {
    let Some(e) = engine() else { return };
    let mut k = coexec_kernel::default();
    // SAFETY: a valid function and out pointer.
    ok(unsafe {
        coexec_kernel_cpu_only(
            e,
            c"sum".as_ptr(),
            64,
            1,
            Some(reduce_cpu),
            null_mut(),
            &mut k,
        )
    });
    let (sum, sp) = alloc(e, 1, 8);
    let (mm, mp) = alloc(e, 2, 4);
    use coexec_access::*;
    use coexec_elem_type::*;
    let n = 100_003u64;
    for det in [0, COEXEC_REDUCE_DETERMINISTIC] {
        let args = [
            arg(
                sum,
                COEXEC_ACCESS_REDUCE_SUM,
                COEXEC_ELEM_U64 as u32 | det,
                0,
            ),
            arg(mm, COEXEC_ACCESS_REDUCE_MAX, COEXEC_ELEM_U32 as u32, 2),
        ];
        ok(run(e, k, &args, d1(n)));
        // SAFETY: the buffers hold 1 u64 and 2 u32; no run is in flight.
        unsafe {
            assert_eq!(*(sp as *const u64), n * (n - 1) / 2);
            assert_eq!(
                std::slice::from_raw_parts(mp as *const u32, 2),
                &[1004, 1004]
            );
        }
    }
    // Bad reduction arguments.
    let bad = |a: coexec_arg, space: coexec_index_space, want: coexec_status, says: &str| {
        let args = [
            a,
            arg(mm, COEXEC_ACCESS_REDUCE_MAX, COEXEC_ELEM_U32 as u32, 2),
        ];
        assert_eq!(run(e, k, &args, space), want, "{}", last_error());
        assert!(last_error().contains(says), "{}", last_error());
    };
    let sum_arg = |flags, per_item| arg(sum, COEXEC_ACCESS_REDUCE_SUM, flags, per_item);
    bad(
        sum_arg(COEXEC_ELEM_F32 as u32, 1),
        d1(64),
        COEXEC_ERROR_INVALID_ARGUMENT,
        "4 bytes",
    );
    bad(
        sum_arg(0x1700, 1),
        d1(64),
        COEXEC_ERROR_INVALID_ARGUMENT,
        "coexec_elem_type",
    );
    bad(
        sum_arg(COEXEC_ELEM_U64 as u32 | 0x40000, 1),
        d1(64),
        COEXEC_ERROR_INVALID_ARGUMENT,
        "bits",
    );
    bad(
        sum_arg(COEXEC_ELEM_U64 as u32, 2),
        d1(64),
        COEXEC_ERROR_BUFFER_TOO_SMALL,
        "result",
    );
    let d2 = coexec_index_space {
        dims: 2,
        width: 64,
        height: 2,
    };
    bad(
        sum_arg(COEXEC_ELEM_U64 as u32, 1),
        d2,
        COEXEC_ERROR_INVALID_ARGUMENT,
        "1-D",
    );
    ok(coexec_kernel_destroy(k));
    ok(coexec_buffer_free(sum));
    ok(coexec_buffer_free(mm));
    ok(coexec_engine_destroy(e));
}
