//! The SPIR-V CPU path through the C ABI: a kernel made with a NULL
//! callback co-executes on an engine with `spirv_cpu`, and each device's
//! `cpu_impl` says which path ran; without the device the CPU entry says
//! -1 and the GPUs ran it alone.

use super::api::{args3, buffer, d1, last_error, ok, run, Push};
use super::shaders::{kernel, SAXPY};
use crate::*;

/// An engine with one worker and the SPIR-V CPU device where `spirv`.
fn engine(spirv: bool) -> Option<coexec_engine> {
    let mut opts = coexec_engine_options_default();
    assert!(!opts.spirv_cpu);
    assert_eq!(
        opts.cpu_impl,
        coexec_cpu_impl::COEXEC_CPU_IMPL_NATIVE as u32
    );
    opts.workers = 1;
    opts.spirv_cpu = spirv;
    opts.validation = coexec_validation::COEXEC_VALIDATION_IF_AVAILABLE as u32;
    opts.disable_profiles = true;
    let mut e = coexec_engine::default();
    // SAFETY: valid options and out pointer.
    let s = unsafe { coexec_engine_create(&opts, &mut e) };
    if s == COEXEC_ERROR_NO_DEVICE {
        eprintln!("skipping: {}", last_error());
        return None;
    }
    ok(s);
    Some(e)
}

/// Runs saxpy without a CPU callback on CPU and GPU (equal static powers);
/// checks the result and returns the report.
fn run_nocpu(e: coexec_engine) -> coexec_report {
    let n = 20_000usize;
    let (x, xp) = buffer(e, n, |i| i as f32);
    let (y, _) = buffer(e, n, |_| 1.0);
    let (z, zp) = buffer(e, n, |_| -1.0);
    // SAFETY: a NULL callback needs no user data.
    let k = unsafe { kernel(e, &SAXPY, None, std::ptr::null_mut()) };
    let powers = [1.0, 1.0];
    let sched = coexec_scheduler {
        kind: coexec_scheduler_kind::COEXEC_SCHEDULER_STATIC as u32,
        packages: 0,
        k: 0.0,
        min_package: 0,
        powers: powers.as_ptr(),
        num_powers: 2,
    };
    let push = Push {
        a: 2.0,
        n: n as u32,
    };
    let mut r = std::mem::MaybeUninit::<coexec_report>::uninit();
    let args = args3(x, y, z);
    // SAFETY: valid arguments, report writable; devices 3: CPU and GPU.
    ok(unsafe {
        run(
            e,
            k,
            &args,
            &push,
            d1(n as u64),
            Some(&sched),
            3,
            r.as_mut_ptr(),
        )
    });
    // SAFETY: filled on success.
    let r = unsafe { r.assume_init() };
    for i in 0..n {
        // SAFETY: the run is over; the buffers hold n floats.
        let (xv, zv) = unsafe { (*xp.add(i), *zp.add(i)) };
        assert_eq!(zv, 2.0 * xv + 1.0, "item {i}");
    }
    ok(coexec_kernel_destroy(k));
    for b in [x, y, z] {
        ok(coexec_buffer_free(b));
    }
    r
}

#[test]
fn a_null_callback_kernel_runs_its_cpu_share_as_spirv() {
    let Some(e) = engine(true) else { return };
    let r = run_nocpu(e);
    let devs = &r.devices[..r.num_devices as usize];
    let cpu = devs
        .iter()
        .find(|d| d.kind == coexec_device_kind::COEXEC_DEVICE_KIND_CPU)
        .expect("a CPU entry");
    assert_eq!(cpu.cpu_impl, coexec_cpu_impl::COEXEC_CPU_IMPL_SPIRV as i32);
    assert!(cpu.items > 0);
    let gpu = devs
        .iter()
        .find(|d| d.kind == coexec_device_kind::COEXEC_DEVICE_KIND_GPU)
        .expect("a GPU entry");
    assert_eq!(gpu.cpu_impl, -1);
    assert_eq!(cpu.items + gpu.items, 20_000);
    ok(coexec_engine_destroy(e));
}

#[test]
fn without_the_device_the_gpu_runs_it_alone() {
    if std::env::var("COEXEC_SPIRV_CPU").is_ok_and(|v| v.trim() == "1") {
        return;
    }
    let Some(e) = engine(false) else { return };
    let r = run_nocpu(e);
    let devs = &r.devices[..r.num_devices as usize];
    let cpu = devs
        .iter()
        .find(|d| d.kind == coexec_device_kind::COEXEC_DEVICE_KIND_CPU)
        .expect("a CPU entry");
    assert_eq!((cpu.cpu_impl, cpu.items), (-1, 0));
    ok(coexec_engine_destroy(e));
}
