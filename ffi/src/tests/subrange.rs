//! Runs of a sub-range of an index space through the C ABI
//! (`coexec_run_range`, `coexec_kernel_units`).

use super::api::{args3, buffer, d1, engine, info, last_error, ok, saxpy_kernel, Push, Saxpy};
use crate::coexec_status::*;
use crate::*;
use std::ptr::{null, null_mut};

/// Saxpy over consecutive sub-ranges covering the space, on the CPU, the
/// GPU and both: every element is computed once at its global index, and
/// each report counts its sub-range; bad ranges and a NULL out pointer are
/// refused with their codes.
#[test]
fn sub_ranges_cover_the_space_and_bad_ones_are_invalid() {
    let Some(e) = engine() else { return };
    let n = 10_007usize;
    let (x, xp) = buffer(e, n, |i| i as f32);
    let (y, yp) = buffer(e, n, |i| (i % 7) as f32);
    let (z, zp) = buffer(e, n, |_| -1.0);
    let s = Saxpy {
        x: xp,
        y: yp,
        z: zp,
    };
    let k = saxpy_kernel(e, &s);
    let push = Push {
        a: 2.5,
        n: n as u32,
    };
    let mut units = 0u64;
    // SAFETY: a writable out pointer.
    ok(unsafe { coexec_kernel_units(k, d1(n as u64), &mut units) });
    assert!(units > 3, "{units}");
    // SAFETY: NULL is refused before anything is written.
    let s_null = unsafe { coexec_kernel_units(k, d1(n as u64), null_mut()) };
    assert_eq!(s_null, COEXEC_ERROR_NULL_POINTER);
    let args = args3(x, y, z);
    let run = |first: u64, end: u64, devices: u32, report: *mut coexec_report| {
        // SAFETY: the arguments are valid for the run (buffers of n
        // elements, `push` the shader's block); `report` NULL or writable.
        unsafe {
            coexec_run_range(
                e,
                k,
                args.as_ptr(),
                args.len(),
                (&push as *const Push).cast(),
                std::mem::size_of::<Push>(),
                d1(n as u64),
                first,
                end,
                null(),
                devices,
                report,
            )
        }
    };
    let cpu = info(e).workers > 0;
    for devices in [1u32, 2, 3].into_iter().filter(|&d| cpu || d == 2) {
        for i in 0..n {
            // SAFETY: no run is in flight.
            unsafe { *zp.add(i) = -1.0 };
        }
        let cuts = [0, 1, units / 3, units / 2 + 1, units];
        for w in cuts.windows(2) {
            let mut r = std::mem::MaybeUninit::<coexec_report>::uninit();
            ok(run(w[0], w[1], devices, r.as_mut_ptr()));
            // SAFETY: filled on success.
            let r = unsafe { r.assume_init() };
            assert_eq!(r.units, w[1] - w[0]);
        }
        for i in 0..n {
            // SAFETY: the runs are over; the buffers hold n floats.
            let got = unsafe { *zp.add(i) };
            assert_eq!(
                got,
                2.5 * i as f32 + (i % 7) as f32,
                "item {i}, devices {devices}"
            );
        }
    }
    for (first, end) in [(2, 2), (3, 1), (0, units + 1), (units, units + 1)] {
        assert_eq!(
            run(first, end, 3, null_mut()),
            COEXEC_ERROR_INVALID_ARGUMENT,
            "{first}..{end}"
        );
        assert!(last_error().contains("sub-range"), "{}", last_error());
    }
    ok(coexec_kernel_destroy(k));
    for b in [x, y, z] {
        ok(coexec_buffer_free(b));
    }
    ok(coexec_engine_destroy(e));
}
