//! Kernels that take tiles through the C ABI (`coexec_kernel_take_tiles`):
//! 2-D calls that cover part of their rows (`col_start .. col_end`).

use super::api::{buffer, dynamic, engine, info, ok};
use crate::coexec_status::*;
use crate::*;
use std::ffi::c_void;
use std::ptr::{null, null_mut};
use std::sync::atomic::{AtomicU64, Ordering};

/// What the CPU function counts: calls that were tiles, and items.
#[derive(Default)]
struct Seen {
    tiles: AtomicU64,
    items: AtomicU64,
}

/// `out[y * w + x] = x + 1000 * y` over the call's columns of its rows.
unsafe extern "C" fn tile_fn(
    pkg: *const coexec_package,
    args: *const coexec_cpu_args,
    user_data: *mut c_void,
) -> i32 {
    // SAFETY: coexec passes a valid package, its arguments and the kernel's
    // user data (a `Seen` the test keeps alive) for the call.
    let (p, a, seen) = unsafe { (&*pkg, &*args, &*(user_data as *const Seen)) };
    // SAFETY: one output argument, of `u32`s; a call writes its own items.
    let out = unsafe { (*a.buffers).data as *mut u32 };
    for y in p.row_start..p.row_end {
        for x in p.col_start..p.col_end {
            // SAFETY: (x, y) is inside the space, which the buffer holds.
            unsafe { *out.add((y * p.width + x) as usize) = x + 1000 * y };
        }
    }
    let n = u64::from(p.row_end - p.row_start) * u64::from(p.col_end - p.col_start);
    // Relaxed: counts read after the run, which orders them.
    seen.items.fetch_add(n, Ordering::Relaxed);
    if p.col_start != 0 || p.col_end != p.width {
        seen.tiles.fetch_add(1, Ordering::Relaxed);
    }
    0
}

/// A CPU kernel that takes tiles: its units are work-groups, calls cover
/// part of their rows, every item is written once; a bad handle is refused.
#[test]
fn a_kernel_that_takes_tiles_gets_columns_of_its_rows() {
    let Some(e) = engine() else { return };
    if info(e).workers == 0 {
        return;
    }
    let (w, h) = (45u32, 13u32);
    let (o, op) = buffer(e, (w * h) as usize, |_| 0.0f32);
    let seen = Seen::default();
    let mut k = coexec_kernel::default();
    // SAFETY: `seen` outlives the kernel; `k` is writable.
    ok(unsafe {
        coexec_kernel_cpu_only(
            e,
            null(),
            8,
            4,
            Some(tile_fn),
            (&seen as *const Seen).cast_mut().cast(),
            &mut k,
        )
    });
    let space = coexec_index_space {
        dims: 2,
        width: u64::from(w),
        height: u64::from(h),
    };
    let mut units = 0u64;
    // SAFETY: writable out.
    ok(unsafe { coexec_kernel_units(k, space, &mut units) });
    assert_eq!(units, 4, "rows of work-groups");
    ok(coexec_kernel_take_tiles(k));
    ok(coexec_kernel_take_tiles(k));
    // SAFETY: writable out.
    ok(unsafe { coexec_kernel_units(k, space, &mut units) });
    assert_eq!(units, 24, "work-groups: 6 x 4");
    let args = [coexec_arg {
        buffer: o,
        access: coexec_access::COEXEC_ACCESS_OUTPUT as u32,
        per_item: 1,
    }];
    let sched = dynamic(10);
    // SAFETY: the argument is a buffer of w * h elements; no push constants.
    ok(unsafe {
        coexec_run(
            e,
            k,
            args.as_ptr(),
            1,
            null(),
            0,
            space,
            &sched,
            1,
            null_mut(),
        )
    });
    for y in 0..h {
        for x in 0..w {
            // SAFETY: the run is over; the buffer holds w * h elements.
            let got = unsafe { *op.cast::<u32>().add((y * w + x) as usize) };
            assert_eq!(got, x + 1000 * y, "({x}, {y})");
        }
    }
    assert_eq!(seen.items.load(Ordering::Relaxed), u64::from(w * h));
    assert!(seen.tiles.load(Ordering::Relaxed) > 0, "no call was a tile");
    assert_eq!(
        coexec_kernel_take_tiles(coexec_kernel::default()),
        COEXEC_ERROR_INVALID_HANDLE
    );
    ok(coexec_kernel_destroy(k));
    ok(coexec_buffer_free(o));
    ok(coexec_engine_destroy(e));
}
