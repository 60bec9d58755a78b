//! A device that cannot dispatch a run's index space through the C ABI: on
//! the GPU alone the run is refused with the limit named; with the CPU too,
//! the CPU runs it and the GPU's entry has the note `left out: dispatch
//! limit (...)`.

use super::api::{args3, buffer, d1, last_error, ok, run, saxpy_kernel, Push, Saxpy};
use crate::*;
use std::ffi::CStr;

#[test]
fn a_gpu_past_its_dispatch_limit_is_left_out_with_a_note() {
    let Some(e) = super::api::engine() else {
        return;
    };
    // 65536 work-groups of 64: past lavapipe's maxComputeWorkGroupCount[0].
    let n = 65_536usize * 64;
    let (x, xp) = buffer(e, n, |i| (i % 1000) as f32);
    let (y, yp) = buffer(e, n, |_| 1.0);
    let (z, zp) = buffer(e, n, |_| -1.0);
    let s = Saxpy {
        x: xp,
        y: yp,
        z: zp,
    };
    let k = saxpy_kernel(e, &s);
    let push = Push {
        a: 2.0,
        n: n as u32,
    };
    let args = args3(x, y, z);
    let mut r = std::mem::MaybeUninit::<coexec_report>::uninit();
    // SAFETY: valid arguments, report writable; devices 2: the GPU.
    let s2 = unsafe { run(e, k, &args, &push, d1(n as u64), None, 2, r.as_mut_ptr()) };
    if s2 == COEXEC_OK {
        eprintln!("skipping: the GPU dispatches {n} items");
    } else {
        assert_eq!(s2, COEXEC_ERROR_INVALID_ARGUMENT);
        let msg = last_error();
        assert!(msg.contains("no chosen device can dispatch"), "{msg}");
        // SAFETY: as above; devices 3: CPU and GPU.
        ok(unsafe { run(e, k, &args, &push, d1(n as u64), None, 3, r.as_mut_ptr()) });
        // SAFETY: filled on success.
        let r = unsafe { r.assume_init() };
        let devs = &r.devices[..r.num_devices as usize];
        let cpu = &devs[0];
        assert_eq!(cpu.kind, coexec_device_kind::COEXEC_DEVICE_KIND_CPU);
        assert_eq!(cpu.items, n as u64);
        // SAFETY: a NUL-terminated buffer.
        assert!(unsafe { CStr::from_ptr(cpu.note.as_ptr()) }.is_empty());
        let gpu = devs
            .iter()
            .find(|d| d.kind == coexec_device_kind::COEXEC_DEVICE_KIND_GPU)
            .expect("the GPU's entry");
        assert_eq!(gpu.items, 0);
        // SAFETY: a NUL-terminated buffer.
        let note = unsafe { CStr::from_ptr(gpu.note.as_ptr()) }.to_string_lossy();
        assert!(note.starts_with("left out: dispatch limit"), "{note}");
        for i in (0..n).step_by(997) {
            // SAFETY: the run is over; the buffers hold n floats.
            let (xv, zv) = unsafe { (*xp.add(i), *zp.add(i)) };
            assert_eq!(zv, 2.0 * xv + 1.0, "item {i}");
        }
    }
    ok(coexec_kernel_destroy(k));
    for b in [x, y, z] {
        ok(coexec_buffer_free(b));
    }
    ok(coexec_engine_destroy(e));
}
