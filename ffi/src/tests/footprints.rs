//! Argument footprints through the C ABI (`coexec_kernel_set_footprint`):
//! a staged run uploads only the items the GPU's packages read, and bad
//! declarations are error codes.

use super::api::{
    args3, buffer, d1, engine_with_memory, last_error, ok, run, saxpy_kernel, Push, Saxpy,
};
use crate::coexec_status::*;
use crate::*;
use std::ptr::null;

fn items(per_item: u64) -> coexec_footprint {
    coexec_footprint {
        kind: coexec_footprint_kind::COEXEC_FOOTPRINT_ITEMS as u32,
        per_item,
        halo: 0,
        offsets: 0,
    }
}

#[test]
fn staged_runs_upload_only_the_gpu_items_of_declared_inputs() {
    let Some(e) = engine_with_memory(coexec_memory::COEXEC_MEMORY_STAGED) else {
        return;
    };
    let n = 20_000usize;
    let (x, xp) = buffer(e, n, |i| i as f32);
    let (y, yp) = buffer(e, n, |i| (i % 5) as f32);
    let (z, zp) = buffer(e, n, |_| -1.0);
    let s = Saxpy {
        x: xp,
        y: yp,
        z: zp,
    };
    let k = saxpy_kernel(e, &s);
    for i in 0..2 {
        // SAFETY: a valid footprint to read.
        ok(unsafe { coexec_kernel_set_footprint(k, i, &items(1)) });
    }
    let push = Push {
        a: 2.0,
        n: n as u32,
    };
    let powers = [1.0, 1.0];
    let sched = coexec_scheduler {
        kind: coexec_scheduler_kind::COEXEC_SCHEDULER_STATIC as u32,
        packages: 0,
        k: 0.0,
        min_package: 0,
        powers: powers.as_ptr(),
        num_powers: 2,
    };
    let mut r = std::mem::MaybeUninit::<coexec_report>::uninit();
    // SAFETY: valid arguments, report writable; devices 3: both.
    ok(unsafe {
        run(
            e,
            k,
            &args3(x, y, z),
            &push,
            d1(n as u64),
            Some(&sched),
            3,
            r.as_mut_ptr(),
        )
    });
    // SAFETY: filled on success.
    let r = unsafe { r.assume_init() };
    let gpu = r.devices[..r.num_devices as usize]
        .iter()
        .find(|d| d.kind == coexec_device_kind::COEXEC_DEVICE_KIND_GPU)
        .expect("a GPU report");
    // Two inputs and the output (read-write in the shader), each the GPU's
    // items only (C buffers are uploaded by every run that reads them:
    // nothing is resident from before).
    assert!(gpu.items > 0 && gpu.items < n as u64, "{}", gpu.items);
    assert_eq!(gpu.upload_bytes, 3 * gpu.items * 4, "{}", gpu.items);
    assert_eq!(gpu.download_bytes, gpu.items * 4);
    for i in 0..n {
        // SAFETY: the run is over; the buffers hold n floats.
        let (xv, yv, zv) = unsafe { (*xp.add(i), *yp.add(i), *zp.add(i)) };
        assert_eq!(zv, 2.0 * xv + yv, "item {i}");
    }
    ok(coexec_kernel_destroy(k));
    for b in [x, y, z] {
        ok(coexec_buffer_free(b));
    }
    ok(coexec_engine_destroy(e));
}

#[test]
fn bad_footprints_are_error_codes() {
    let Some(e) = engine_with_memory(coexec_memory::COEXEC_MEMORY_AUTO) else {
        return;
    };
    let n = 256usize;
    let (x, xp) = buffer(e, n, |i| i as f32);
    let (y, yp) = buffer(e, n, |_| 1.0);
    let (z, zp) = buffer(e, n, |_| 0.0);
    let s = Saxpy {
        x: xp,
        y: yp,
        z: zp,
    };
    let k = saxpy_kernel(e, &s);
    // SAFETY: footprints are valid to read or NULL; run arguments valid.
    unsafe {
        assert_eq!(
            coexec_kernel_set_footprint(coexec_kernel::default(), 0, &items(1)),
            COEXEC_ERROR_INVALID_HANDLE
        );
        assert_eq!(
            coexec_kernel_set_footprint(k, COEXEC_MAX_ARGS as u32, &items(1)),
            COEXEC_ERROR_INVALID_ARGUMENT
        );
        let bad = coexec_footprint {
            kind: 9,
            per_item: 1,
            halo: 0,
            offsets: 0,
        };
        assert_eq!(
            coexec_kernel_set_footprint(k, 0, &bad),
            COEXEC_ERROR_INVALID_ARGUMENT
        );
        // An output whose footprint is not its own items fails the run.
        let whole = coexec_footprint {
            kind: coexec_footprint_kind::COEXEC_FOOTPRINT_WHOLE as u32,
            per_item: 0,
            halo: 0,
            offsets: 0,
        };
        ok(coexec_kernel_set_footprint(k, 2, &whole));
        let push = Push {
            a: 1.0,
            n: n as u32,
        };
        // A run on both devices, its report not asked for.
        let run_both = || {
            run(
                e,
                k,
                &args3(x, y, z),
                &push,
                d1(n as u64),
                None,
                3,
                std::ptr::null_mut(),
            )
        };
        let s = run_both();
        assert_eq!(s, COEXEC_ERROR_INVALID_ARGUMENT);
        assert!(last_error().contains("footprint"), "{}", last_error());
        // NULL restores the default: the run succeeds.
        ok(coexec_kernel_set_footprint(k, 2, null()));
        ok(run_both());
        // per_item 0 on an input is an error of the run.
        ok(coexec_kernel_set_footprint(k, 0, &items(0)));
        let s = run_both();
        assert_eq!(s, COEXEC_ERROR_INVALID_ARGUMENT, "{}", last_error());
        // Offsets that are the run's output: an error of the run.
        let by_output = coexec_footprint {
            kind: coexec_footprint_kind::COEXEC_FOOTPRINT_OFFSETS as u32,
            per_item: 1,
            halo: 0,
            offsets: 2,
        };
        ok(coexec_kernel_set_footprint(k, 0, &by_output));
        let s = run_both();
        assert_eq!(s, COEXEC_ERROR_INVALID_ARGUMENT, "{}", last_error());
        assert!(last_error().contains("offsets"), "{}", last_error());
    }
    ok(coexec_kernel_destroy(k));
    for b in [x, y, z] {
        ok(coexec_buffer_free(b));
    }
    ok(coexec_engine_destroy(e));
}

#[test]
fn offsets_footprints_count_c_elements_in_bytes() {
    let f = coexec_footprint {
        kind: coexec_footprint_kind::COEXEC_FOOTPRINT_OFFSETS as u32,
        per_item: 2,
        halo: 0,
        offsets: 3,
    };
    // C buffers are bytes: 2 elements of 4 bytes per offset.
    assert_eq!(
        crate::footprint::to_engine(&f, 4).unwrap(),
        ::coexec_engine::Footprint::Offsets {
            binding: 3,
            per_item: 8
        }
    );
    let huge = coexec_footprint {
        per_item: u64::MAX,
        ..f
    };
    assert!(crate::footprint::to_engine(&huge, 4).is_err());
}
