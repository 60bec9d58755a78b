//! The C ABI called from Rust exactly as C calls it: runs that verify, and bad
//! input at the boundary (null, stale, double-freed and foreign handles,
//! misaligned imports, invalid enums) coming back as error codes.

use crate::coexec_status::*;
use crate::*;
use std::ffi::{c_void, CStr};
use std::ptr::{null, null_mut};

use super::shaders::{kernel, SAXPY};

#[repr(C)]
#[derive(Clone, Copy)]
pub(super) struct Push {
    pub(super) a: f32,
    pub(super) n: u32,
}

/// The buffers' host pointers as the test knows them: the CPU function
/// checks that the run hands it the same ones.
pub(super) struct Saxpy {
    pub(super) x: *const f32,
    pub(super) y: *const f32,
    pub(super) z: *mut f32,
}

/// Saxpy on the CPU from the run's arguments (`args`), checked against what
/// the test allocated (`user_data`).
unsafe extern "C" fn saxpy_cpu(
    pkg: *const coexec_package,
    args: *const coexec_cpu_args,
    user_data: *mut c_void,
) -> i32 {
    // SAFETY: coexec passes a valid package and arguments, whose buffers
    // cover every item; this call writes only its own items of z.
    unsafe {
        let (pkg, args) = (&*pkg, &*args);
        let s = &*(user_data as *const Saxpy);
        assert_eq!(args.push_size, 8);
        assert_eq!(args.num_buffers, 3);
        let b = std::slice::from_raw_parts(args.buffers, 3);
        // (One test passes x as y too.)
        assert_eq!((b[0].data as *const f32, b[2].data as *mut f32), (s.x, s.z));
        assert!(b[1].data as *const f32 == s.y || b[1].data as *const f32 == s.x);
        assert_eq!((b[0].access, b[2].access, b[2].per_item), (0, 1, 1));
        assert_eq!(b[2].elem_size, 4);
        let (x, y, z) = (
            b[0].data as *const f32,
            b[1].data as *const f32,
            b[2].data as *mut f32,
        );
        let p = (args.push as *const Push).read_unaligned();
        for i in pkg.item_start..pkg.item_end {
            let i = i as usize;
            *z.add(i) = p.a * *x.add(i) + *y.add(i);
        }
    }
    0
}

pub(super) fn last_error() -> String {
    // SAFETY: coexec_last_error returns a NUL-terminated string valid until
    // the next coexec call on this thread; it is copied at once.
    unsafe { CStr::from_ptr(coexec_last_error()) }
        .to_string_lossy()
        .into_owned()
}

#[track_caller]
pub(super) fn ok(s: coexec_status) {
    assert_eq!(s, COEXEC_OK, "{}", last_error());
}

/// A Dynamic scheduler of `packages` equal packages.
pub(super) fn dynamic(packages: u64) -> coexec_scheduler {
    coexec_scheduler {
        kind: coexec_scheduler_kind::COEXEC_SCHEDULER_DYNAMIC as u32,
        packages,
        k: 0.0,
        min_package: 0,
        powers: null(),
        num_powers: 0,
    }
}

/// An engine, or `None` when this machine has no Vulkan device.
pub(super) fn engine() -> Option<coexec_engine> {
    engine_with_memory(coexec_memory::COEXEC_MEMORY_AUTO)
}

/// An engine with memory placement `memory`, or `None` when this machine
/// has no Vulkan device.
pub(super) fn engine_with_memory(memory: coexec_memory) -> Option<coexec_engine> {
    let mut opts = coexec_engine_options_default();
    opts.memory = memory as u32;
    opts.validation = coexec_validation::COEXEC_VALIDATION_IF_AVAILABLE as u32;
    let dir = std::env::temp_dir().join("coexec-ffi-test-cache\0");
    let dir = dir.to_str().unwrap().to_owned();
    opts.pipeline_cache_dir = dir.as_ptr().cast();
    // What earlier test runs left on disk must not change what a test sees.
    opts.disable_profiles = true;
    let mut e = coexec_engine { id: 99 };
    // SAFETY: valid options (the string outlives the call) and out pointer.
    let s = unsafe { coexec_engine_create(&opts, &mut e) };
    if s == COEXEC_ERROR_NO_DEVICE {
        eprintln!("skipping: {}", last_error());
        assert_eq!(e.id, 0, "the out handle is nulled on failure");
        return None;
    }
    ok(s);
    assert_ne!(e.id, 0);
    Some(e)
}

pub(super) fn info(e: coexec_engine) -> coexec_engine_info {
    let mut i = std::mem::MaybeUninit::<coexec_engine_info>::uninit();
    // SAFETY: a writable out pointer.
    ok(unsafe { coexec_engine_get_info(e, i.as_mut_ptr()) });
    // SAFETY: filled on success.
    unsafe { i.assume_init() }
}

/// A buffer of `n` f32, filled by `f`.
pub(super) fn buffer(
    e: coexec_engine,
    n: usize,
    f: impl Fn(usize) -> f32,
) -> (coexec_buffer, *mut f32) {
    let mut b = coexec_buffer::default();
    let mut p = null_mut();
    // SAFETY: writable out pointers.
    ok(unsafe { coexec_buffer_alloc(e, n, 4, &mut b, &mut p) });
    let p = p as *mut f32;
    for i in 0..n {
        // SAFETY: the buffer holds n floats; no run uses it.
        unsafe { *p.add(i) = f(i) };
    }
    (b, p)
}

pub(super) fn saxpy_kernel(e: coexec_engine, s: &Saxpy) -> coexec_kernel {
    // SAFETY: `saxpy_cpu` reads a `Saxpy`; `s` outlives the kernel in every
    // test.
    unsafe { kernel(e, &SAXPY, Some(saxpy_cpu), s as *const Saxpy as *mut c_void) }
}

pub(super) fn args3(x: coexec_buffer, y: coexec_buffer, z: coexec_buffer) -> [coexec_arg; 3] {
    let input = coexec_access::COEXEC_ACCESS_INPUT as u32;
    [
        coexec_arg {
            buffer: x,
            access: input,
            per_item: 0,
        },
        coexec_arg {
            buffer: y,
            access: input,
            per_item: 0,
        },
        coexec_arg {
            buffer: z,
            access: coexec_access::COEXEC_ACCESS_OUTPUT as u32,
            per_item: 1,
        },
    ]
}

pub(super) fn d1(n: u64) -> coexec_index_space {
    coexec_index_space {
        dims: 1,
        width: n,
        height: 0,
    }
}

/// # Safety
/// As `coexec_run` (whose argument list this mirrors).
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn run(
    e: coexec_engine,
    k: coexec_kernel,
    args: &[coexec_arg],
    push: &Push,
    space: coexec_index_space,
    sched: Option<&coexec_scheduler>,
    devices: u32,
    report: *mut coexec_report,
) -> coexec_status {
    // SAFETY: forwarded.
    unsafe {
        coexec_run(
            e,
            k,
            args.as_ptr(),
            args.len(),
            (push as *const Push).cast(),
            std::mem::size_of::<Push>(),
            space,
            sched.map_or(null(), |s| s as *const _),
            devices,
            report,
        )
    }
}

/// Staged placement through the C ABI: the report says so and counts the
/// transfers; what C writes through the host pointer between runs is seen
/// by the next run (C buffers are uploaded whenever a run reads them).
#[test]
fn staged_runs_report_transfers_and_see_host_writes() {
    let Some(e) = engine_with_memory(coexec_memory::COEXEC_MEMORY_STAGED) else {
        return;
    };
    let n = 10_001usize;
    let (x, xp) = buffer(e, n, |i| i as f32);
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
    for round in 0..2 {
        if round == 1 {
            for i in 0..n {
                // SAFETY: no run in flight; the buffer holds n floats.
                unsafe { *xp.add(i) = 3.0 };
            }
        }
        let mut r = std::mem::MaybeUninit::<coexec_report>::uninit();
        let args = args3(x, y, z);
        // SAFETY: valid arguments, report writable; devices 2: the GPU.
        ok(unsafe { run(e, k, &args, &push, d1(n as u64), None, 2, r.as_mut_ptr()) });
        // SAFETY: filled on success.
        let r = unsafe { r.assume_init() };
        assert_eq!(r.memory, coexec_memory::COEXEC_MEMORY_STAGED as u32);
        let g = &r.devices[0];
        assert!(g.upload_bytes >= 2 * n as u64 * 4, "{}", g.upload_bytes);
        assert_eq!(g.download_bytes, n as u64 * 4);
        assert!(g.transfer_s >= 0.0);
        // Energy: a reading, or -1 (unavailable) for the run and its EDP alike.
        assert!(g.energy_j == -1.0 || g.energy_j >= 0.0, "{}", g.energy_j);
        assert_eq!(r.energy_j < 0.0, r.edp < 0.0);
        if r.energy_j >= 0.0 {
            assert!((r.edp - r.energy_j * r.time_s).abs() <= 1e-9 * r.edp.max(1.0));
        }
        for i in 0..n {
            // SAFETY: the run is over.
            let (xv, zv) = unsafe { (*xp.add(i), *zp.add(i)) };
            assert_eq!(zv, 2.0 * xv + 1.0, "round {round} item {i}");
        }
    }
    ok(coexec_kernel_destroy(k));
    for b in [x, y, z] {
        ok(coexec_buffer_free(b));
    }
    ok(coexec_engine_destroy(e));
}

#[test]
fn saxpy_runs_on_cpu_gpu_and_both_with_every_scheduler() {
    let Some(e) = engine() else { return };
    let n = 100_003usize;
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
    let powers = [1.0, 3.0];
    let scheds = [
        coexec_scheduler {
            kind: coexec_scheduler_kind::COEXEC_SCHEDULER_HGUIDED as u32,
            packages: 0,
            k: 0.0,
            min_package: 0,
            powers: null(),
            num_powers: 0,
        },
        coexec_scheduler {
            kind: coexec_scheduler_kind::COEXEC_SCHEDULER_DYNAMIC as u32,
            packages: 37,
            k: 0.0,
            min_package: 0,
            powers: null(),
            num_powers: 0,
        },
        coexec_scheduler {
            kind: coexec_scheduler_kind::COEXEC_SCHEDULER_STATIC as u32,
            packages: 0,
            k: 0.0,
            min_package: 0,
            powers: powers.as_ptr(),
            num_powers: 2,
        },
    ];
    let inf = info(e);
    for devices in [1u32, 2, 3] {
        for (si, sched) in scheds.iter().enumerate() {
            if devices != 3 && si == 2 {
                continue; // two powers need two devices
            }
            if devices & 1 != 0 && inf.workers == 0 {
                continue;
            }
            for i in 0..n {
                // SAFETY: no run in flight.
                unsafe { *zp.add(i) = -1.0 };
            }
            let mut r = std::mem::MaybeUninit::<coexec_report>::uninit();
            let args = args3(x, y, z);
            // SAFETY: valid arguments, report writable.
            ok(unsafe {
                run(
                    e,
                    k,
                    &args,
                    &push,
                    d1(n as u64),
                    Some(sched),
                    devices,
                    r.as_mut_ptr(),
                )
            });
            // SAFETY: filled on success.
            let r = unsafe { r.assume_init() };
            for i in 0..n {
                // SAFETY: the run is over.
                let (xv, yv, zv) = unsafe { (*xp.add(i), *yp.add(i), *zp.add(i)) };
                assert_eq!(zv, 2.5 * xv + yv, "devices {devices} sched {si} item {i}");
            }
            assert_eq!(r.items, n as u64);
            let expected_devices = devices.count_ones();
            assert_eq!(r.num_devices, expected_devices);
            let items: u64 = r.devices[..r.num_devices as usize]
                .iter()
                .map(|d| d.items)
                .sum();
            assert_eq!(items, n as u64);
            assert!(r.packages >= 1 && r.time_s > 0.0);
            assert!(r.balance > 0.0 && r.balance <= 1.0);
            assert!(r.balance_raw > 0.0 && r.balance_raw <= r.balance);
            assert!(!r.from_profile, "profiles are off in these tests");
            for d in &r.devices[..r.num_devices as usize] {
                assert!(
                    d.declined_s == -1.0 || d.declined_s >= 0.0,
                    "{}",
                    d.declined_s
                );
            }
            if devices == 3 {
                // CPU first, unless one device sat the run out by design
                // (then it comes last).
                let kinds: Vec<_> = r.devices[..2].iter().map(|d| d.kind).collect();
                assert!(kinds.contains(&coexec_device_kind::COEXEC_DEVICE_KIND_CPU));
                assert!(kinds.contains(&coexec_device_kind::COEXEC_DEVICE_KIND_GPU));
                let gpu = r.devices[..2]
                    .iter()
                    .find(|d| d.kind == coexec_device_kind::COEXEC_DEVICE_KIND_GPU)
                    .expect("the GPU's report");
                // SAFETY: NUL-terminated by construction.
                let name = unsafe { CStr::from_ptr(gpu.name.as_ptr()) };
                // SAFETY: as above.
                let dev = unsafe { CStr::from_ptr(inf.device_name.as_ptr()) };
                assert_eq!(name, dev);
            }
            if si == 1 {
                // 37 claimed; where another worker or the GPU could steal,
                // split parts come on top.
                if devices == 1 && inf.workers == 1 {
                    assert_eq!(r.packages, 37);
                } else {
                    assert!(r.packages >= 37, "{}", r.packages);
                }
            }
        }
    }
    assert_eq!(last_error(), "", "success leaves no error");
    assert_eq!(info(e).validation_errors, 0);
    ok(coexec_kernel_destroy(k));
    for b in [x, y, z] {
        ok(coexec_buffer_free(b));
    }
    ok(coexec_engine_destroy(e));
}

#[test]
fn stale_null_double_freed_and_wrong_kind_handles_are_errors() {
    let Some(e) = engine() else { return };
    // Null handles.
    assert_eq!(
        coexec_engine_destroy(coexec_engine::default()),
        COEXEC_ERROR_INVALID_HANDLE
    );
    assert!(
        last_error().contains("null engine handle"),
        "{}",
        last_error()
    );
    assert_eq!(
        coexec_buffer_free(coexec_buffer::default()),
        COEXEC_ERROR_INVALID_HANDLE
    );
    assert_eq!(
        coexec_kernel_destroy(coexec_kernel::default()),
        COEXEC_ERROR_INVALID_HANDLE
    );
    // Never-issued and wrong-kind ids.
    assert_eq!(
        coexec_engine_destroy(coexec_engine { id: u64::MAX }),
        COEXEC_ERROR_INVALID_HANDLE
    );
    let (b, _) = buffer(e, 16, |_| 0.0);
    assert_eq!(
        coexec_engine_destroy(coexec_engine { id: b.id }),
        COEXEC_ERROR_INVALID_HANDLE
    );
    assert!(
        last_error().ends_with("(already destroyed or freed, or not an engine handle)"),
        "{}",
        last_error()
    );
    assert_eq!(
        coexec_kernel_destroy(coexec_kernel { id: e.id }),
        COEXEC_ERROR_INVALID_HANDLE
    );
    // Double free and use after free.
    let mut bi = std::mem::MaybeUninit::<coexec_buffer_info>::uninit();
    // SAFETY: writable out pointer.
    ok(unsafe { coexec_buffer_get_info(b, bi.as_mut_ptr()) });
    // SAFETY: filled on success.
    let bi = unsafe { bi.assume_init() };
    assert_eq!(
        (bi.count, bi.elem_size, bi.size_bytes, bi.imported),
        (16, 4, 64, false)
    );
    assert!(!bi.host_ptr.is_null());
    ok(coexec_buffer_free(b));
    assert_eq!(coexec_buffer_free(b), COEXEC_ERROR_INVALID_HANDLE);
    assert!(last_error().contains("not live"), "{}", last_error());
    assert!(
        last_error().ends_with("or not a buffer handle)"),
        "{}",
        last_error()
    );
    let mut bi = std::mem::MaybeUninit::<coexec_buffer_info>::uninit();
    // SAFETY: writable out pointer.
    let s = unsafe { coexec_buffer_get_info(b, bi.as_mut_ptr()) };
    assert_eq!(s, COEXEC_ERROR_INVALID_HANDLE);
    // A freed buffer in a run.
    let (x, xp) = buffer(e, 64, |_| 1.0);
    let (y, yp) = buffer(e, 64, |_| 1.0);
    let s = Saxpy {
        x: xp,
        y: yp,
        z: null_mut(),
    };
    let k = saxpy_kernel(e, &s);
    let push = Push { a: 1.0, n: 64 };
    let args = args3(x, y, b);
    // SAFETY: valid pointers; the stale handle is the point.
    let st = unsafe { run(e, k, &args, &push, d1(64), None, 3, null_mut()) };
    assert_eq!(st, COEXEC_ERROR_INVALID_HANDLE);
    assert!(last_error().contains("argument 2"), "{}", last_error());
    // Null out-pointers.
    // SAFETY: NULL is allowed and rejected.
    let st = unsafe { coexec_buffer_alloc(e, 4, 4, null_mut(), null_mut()) };
    assert_eq!(st, COEXEC_ERROR_NULL_POINTER);
    // SAFETY: as above.
    let st = unsafe { coexec_engine_get_info(e, null_mut()) };
    assert_eq!(st, COEXEC_ERROR_NULL_POINTER);
    // SAFETY: as above.
    let st = unsafe { coexec_engine_create(null(), null_mut()) };
    assert_eq!(st, COEXEC_ERROR_NULL_POINTER);
    // Kernel and engine destroyed: use after destroy.
    ok(coexec_kernel_destroy(k));
    assert_eq!(coexec_kernel_destroy(k), COEXEC_ERROR_INVALID_HANDLE);
    let args = args3(x, y, y);
    // SAFETY: valid pointers.
    let st = unsafe { run(e, k, &args, &push, d1(64), None, 3, null_mut()) };
    assert_eq!(st, COEXEC_ERROR_INVALID_HANDLE);
    ok(coexec_engine_destroy(e));
    assert_eq!(coexec_engine_destroy(e), COEXEC_ERROR_INVALID_HANDLE);
    let mut b2 = coexec_buffer::default();
    // SAFETY: writable out pointer.
    let st = unsafe { coexec_buffer_alloc(e, 4, 4, &mut b2, null_mut()) };
    assert_eq!(st, COEXEC_ERROR_INVALID_HANDLE);
    assert_eq!(b2.id, 0);
    // Buffers outlive their engine and are still freed cleanly.
    ok(coexec_buffer_free(x));
    ok(coexec_buffer_free(y));
}

#[test]
fn buffers_and_kernels_of_another_engine_are_rejected() {
    let Some(e1) = engine() else { return };
    let Some(e2) = engine() else { return };
    let n = 256usize;
    let (x1, xp) = buffer(e1, n, |i| i as f32);
    let (y1, yp) = buffer(e1, n, |_| 0.0);
    let (z1, zp) = buffer(e1, n, |_| 0.0);
    let (z2, _) = buffer(e2, n, |_| 0.0);
    let s = Saxpy {
        x: xp,
        y: yp,
        z: zp,
    };
    let k1 = saxpy_kernel(e1, &s);
    let k2 = saxpy_kernel(e2, &s);
    let push = Push {
        a: 1.0,
        n: n as u32,
    };
    // SAFETY: valid pointers throughout.
    unsafe {
        let st = run(
            e1,
            k1,
            &args3(x1, y1, z2),
            &push,
            d1(n as u64),
            None,
            3,
            null_mut(),
        );
        assert_eq!(st, COEXEC_ERROR_FOREIGN_HANDLE, "{}", last_error());
        assert!(last_error().contains("argument 2"), "{}", last_error());
        let st = run(
            e1,
            k2,
            &args3(x1, y1, z1),
            &push,
            d1(n as u64),
            None,
            3,
            null_mut(),
        );
        assert_eq!(st, COEXEC_ERROR_FOREIGN_HANDLE, "{}", last_error());
        ok(run(
            e1,
            k1,
            &args3(x1, y1, z1),
            &push,
            d1(n as u64),
            None,
            3,
            null_mut(),
        ));
    }
    for k in [k1, k2] {
        ok(coexec_kernel_destroy(k));
    }
    for b in [x1, y1, z1, z2] {
        ok(coexec_buffer_free(b));
    }
    ok(coexec_engine_destroy(e1));
    ok(coexec_engine_destroy(e2));
}

/// The lean library has no runtime GLSL: a typed status, and a message that
/// says what to do.
#[cfg(not(feature = "glsl"))]
#[test]
fn glsl_is_unsupported_without_the_feature() {
    let Some(e) = engine() else { return };
    let mut k = coexec_kernel { id: 5 };
    // SAFETY: NUL-terminated strings, writable out.
    let st = unsafe {
        coexec_kernel_from_glsl(
            e,
            SAXPY.name.as_ptr(),
            SAXPY.glsl.as_ptr().cast(),
            None,
            null_mut(),
            &mut k,
        )
    };
    assert_eq!(st, COEXEC_ERROR_UNSUPPORTED);
    assert!(last_error().contains("feature `glsl`"), "{}", last_error());
    assert_eq!(k.id, 0);
    ok(coexec_engine_destroy(e));
}

#[cfg(feature = "glsl")]
#[test]
fn compile_errors_and_invalid_arguments_come_back_as_codes() {
    let Some(e) = engine() else { return };
    let mut k = coexec_kernel { id: 5 };
    let bad = c"#version 450\nlayout(local_size_x = 64) in;\nvoid main() { undeclared_thing = 1; }";
    // SAFETY: NUL-terminated strings, writable out.
    let st = unsafe {
        coexec_kernel_from_glsl(e, c"bad".as_ptr(), bad.as_ptr(), None, null_mut(), &mut k)
    };
    assert_eq!(st, COEXEC_ERROR_SHADER_COMPILE);
    assert!(
        last_error().contains("undeclared_thing"),
        "{}",
        last_error()
    );
    assert_eq!(k.id, 0);
    // An empty name is a valid C string: the compile error still comes back
    // as a code (shaderc used to abort the process formatting it).
    // SAFETY: NUL-terminated strings, writable out.
    let st =
        unsafe { coexec_kernel_from_glsl(e, c"".as_ptr(), bad.as_ptr(), None, null_mut(), &mut k) };
    assert_eq!(st, COEXEC_ERROR_SHADER_COMPILE, "{}", last_error());
    assert!(last_error().contains("kernel:"), "{}", last_error());
    k.id = 5;
    // SAFETY: NULL source is rejected.
    let st = unsafe { coexec_kernel_from_glsl(e, null(), null(), None, null_mut(), &mut k) };
    assert_eq!(st, COEXEC_ERROR_NULL_POINTER);
    assert_eq!(k.id, 0, "out is the null handle on every failure");
    // SPIR-V that is not a multiple of 4 bytes / garbage.
    let junk = [1u8, 2, 3, 4, 5, 6];
    // SAFETY: readable bytes.
    let st = unsafe {
        coexec_kernel_from_spirv(e, null(), junk.as_ptr().cast(), 6, None, null_mut(), &mut k)
    };
    assert_eq!(st, COEXEC_ERROR_INVALID_SPIRV, "{}", last_error());
    // A CPU-only kernel needs a CPU function.
    k.id = 5;
    // SAFETY: writable out.
    let st = unsafe { coexec_kernel_cpu_only(e, null(), 64, 1, None, null_mut(), &mut k) };
    assert_eq!(st, COEXEC_ERROR_NULL_POINTER);
    assert_eq!(k.id, 0);
    // Zero-sized and overflowing buffers.
    let mut b = coexec_buffer::default();
    // SAFETY: writable out.
    unsafe {
        assert_eq!(
            coexec_buffer_alloc(e, 0, 4, &mut b, null_mut()),
            COEXEC_ERROR_INVALID_ARGUMENT
        );
        assert_eq!(
            coexec_buffer_alloc(e, usize::MAX, 4, &mut b, null_mut()),
            COEXEC_ERROR_INVALID_ARGUMENT
        );
    }
    // Invalid engine options.
    let mut opts = coexec_engine_options_default();
    opts.allocator = 42;
    let mut e2 = coexec_engine::default();
    // SAFETY: valid pointers.
    let st = unsafe { coexec_engine_create(&opts, &mut e2) };
    assert_eq!(st, COEXEC_ERROR_INVALID_ARGUMENT);
    opts = coexec_engine_options_default();
    opts.workers = -7;
    // SAFETY: valid pointers.
    let st = unsafe { coexec_engine_create(&opts, &mut e2) };
    assert_eq!(st, COEXEC_ERROR_INVALID_ARGUMENT);
    opts = coexec_engine_options_default();
    opts.objective = 9;
    // SAFETY: valid pointers.
    let st = unsafe { coexec_engine_create(&opts, &mut e2) };
    assert_eq!(st, COEXEC_ERROR_INVALID_ARGUMENT);
    assert!(
        last_error().contains("coexec_objective 9"),
        "{}",
        last_error()
    );

    // Run-time argument checks.
    let n = 128usize;
    let (x, xp) = buffer(e, n, |i| i as f32);
    let (y, yp) = buffer(e, n, |_| 1.0);
    let (z, zp) = buffer(e, n, |_| 0.0);
    let (small, _) = buffer(e, 8, |_| 0.0);
    let s = Saxpy {
        x: xp,
        y: yp,
        z: zp,
    };
    let k = saxpy_kernel(e, &s);
    let push = Push {
        a: 1.0,
        n: n as u32,
    };
    let space = d1(n as u64);
    let sched = |kind: u32, packages: u64, kk: f64, powers: &[f64]| coexec_scheduler {
        kind,
        packages,
        k: kk,
        min_package: 0,
        powers: powers.as_ptr(),
        num_powers: powers.len(),
    };
    // SAFETY: valid pointers throughout; the values are what is wrong.
    unsafe {
        let a = args3(x, y, z);
        assert_eq!(
            run(e, k, &a, &push, space, None, 0, null_mut()),
            COEXEC_ERROR_INVALID_ARGUMENT
        );
        assert_eq!(
            run(e, k, &a, &push, space, None, 8, null_mut()),
            COEXEC_ERROR_INVALID_ARGUMENT
        );
        let bad_space = coexec_index_space {
            dims: 3,
            width: 1,
            height: 1,
        };
        assert_eq!(
            run(e, k, &a, &push, bad_space, None, 3, null_mut()),
            COEXEC_ERROR_INVALID_ARGUMENT
        );
        assert_eq!(
            run(e, k, &a, &push, d1(0), None, 3, null_mut()),
            COEXEC_ERROR_INVALID_ARGUMENT
        );
        let mut a2 = a;
        a2[0].access = 9;
        assert_eq!(
            run(e, k, &a2, &push, space, None, 3, null_mut()),
            COEXEC_ERROR_INVALID_ARGUMENT
        );
        // The output also given as an input: aliasing is refused.
        let a3 = args3(z, y, z);
        assert_eq!(
            run(e, k, &a3, &push, space, None, 3, null_mut()),
            COEXEC_ERROR_INVALID_ARGUMENT
        );
        assert!(last_error().contains("output"), "{}", last_error());
        // An input twice is fine.
        ok(run(
            e,
            k,
            &args3(x, x, z),
            &push,
            space,
            None,
            3,
            null_mut(),
        ));
        // Too small an output: the message counts elements, not bytes.
        let a4 = args3(x, y, small);
        assert_eq!(
            run(e, k, &a4, &push, space, None, 3, null_mut()),
            COEXEC_ERROR_BUFFER_TOO_SMALL
        );
        assert_eq!(
            last_error(),
            "coexec_run: argument 2: the buffer holds 8 elements (of 4 bytes) but the index \
             space needs 128 (128 work-items x 1 per item)"
        );
        let mut a5 = args3(x, y, z);
        a5[2].per_item = 3;
        assert_eq!(
            run(e, k, &a5, &push, space, None, 3, null_mut()),
            COEXEC_ERROR_BUFFER_TOO_SMALL
        );
        assert!(
            last_error().ends_with("holds 128 elements (of 4 bytes) but the index space needs 384 (128 work-items x 3 per item)"),
            "{}",
            last_error()
        );
        // Binding count and push-constant size mismatches.
        assert_eq!(
            run(e, k, &a[..2], &push, space, None, 2, null_mut()),
            COEXEC_ERROR_INTERFACE
        );
        let st = coexec_run(
            e,
            k,
            a.as_ptr(),
            3,
            (&push as *const Push).cast(),
            4,
            space,
            null(),
            2,
            null_mut(),
        );
        assert_eq!(st, COEXEC_ERROR_INTERFACE, "{}", last_error());
        // Scheduler configurations.
        let sc = sched(0, 0, -1.0, &[]);
        assert_eq!(
            run(e, k, &a, &push, space, Some(&sc), 3, null_mut()),
            COEXEC_ERROR_SCHEDULER
        );
        let sc = sched(2, 0, 0.0, &[]);
        assert_eq!(
            run(e, k, &a, &push, space, Some(&sc), 3, null_mut()),
            COEXEC_ERROR_SCHEDULER
        );
        let sc = sched(1, 0, 0.0, &[1.0, 2.0, 3.0]);
        assert_eq!(
            run(e, k, &a, &push, space, Some(&sc), 3, null_mut()),
            COEXEC_ERROR_SCHEDULER
        );
        let sc = sched(7, 0, 0.0, &[]);
        assert_eq!(
            run(e, k, &a, &push, space, Some(&sc), 3, null_mut()),
            COEXEC_ERROR_INVALID_ARGUMENT
        );
        let mut sc = sched(1, 0, 0.0, &[]);
        sc.num_powers = 2;
        sc.powers = null();
        assert_eq!(
            run(e, k, &a, &push, space, Some(&sc), 3, null_mut()),
            COEXEC_ERROR_NULL_POINTER
        );
        // NULL args with a count.
        let st = coexec_run(e, k, null(), 3, null(), 0, space, null(), 3, null_mut());
        assert_eq!(st, COEXEC_ERROR_NULL_POINTER);
    }
    // Status names.
    // SAFETY: static NUL-terminated strings.
    unsafe {
        assert_eq!(
            CStr::from_ptr(coexec_status_string(3)),
            c"COEXEC_ERROR_INVALID_HANDLE"
        );
        assert_eq!(
            CStr::from_ptr(coexec_status_string(-5)),
            c"(unknown coexec_status)"
        );
        assert_eq!(
            CStr::from_ptr(coexec_version()).to_str().unwrap(),
            env!("CARGO_PKG_VERSION")
        );
    }
    ok(coexec_kernel_destroy(k));
    for b in [x, y, z, small] {
        ok(coexec_buffer_free(b));
    }
    ok(coexec_engine_destroy(e));
}

/// The page size, the alignment imports use here.
fn page() -> usize {
    4096
}

struct Aligned {
    ptr: *mut u8,
    layout: std::alloc::Layout,
}

impl Aligned {
    fn new(bytes: usize, align: usize) -> Self {
        let layout = std::alloc::Layout::from_size_align(bytes, align).unwrap();
        // SAFETY: non-zero size.
        let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
        assert!(!ptr.is_null());
        Aligned { ptr, layout }
    }
}

impl Drop for Aligned {
    fn drop(&mut self) {
        // SAFETY: allocated with this layout.
        unsafe { std::alloc::dealloc(self.ptr, self.layout) };
    }
}

#[test]
fn imported_host_memory_is_used_in_place_and_misalignment_is_an_error() {
    let Some(e) = engine() else { return };
    let align = info(e).host_import_alignment as usize;
    eprintln!("minImportedHostPointerAlignment: {align}");
    let mut b = coexec_buffer::default();
    if align == 0 {
        let mem = Aligned::new(page(), page());
        // SAFETY: valid memory; the device cannot import it.
        let st = unsafe { coexec_buffer_import(e, mem.ptr.cast(), page() / 4, 4, &mut b) };
        assert_eq!(st, COEXEC_ERROR_UNSUPPORTED);
        ok(coexec_engine_destroy(e));
        return;
    }
    let align = align.max(page());
    let n = 4 * align / 4; // four pages of f32
    let xs = Aligned::new(n * 4, align);
    let ys = Aligned::new(n * 4, align);
    let zs = Aligned::new(n * 4, align);
    let (xp, yp, zp) = (xs.ptr as *mut f32, ys.ptr as *mut f32, zs.ptr as *mut f32);
    for i in 0..n {
        // SAFETY: n floats each.
        unsafe {
            *xp.add(i) = i as f32;
            *yp.add(i) = 3.0;
        }
    }
    let mut x = coexec_buffer::default();
    let mut y = coexec_buffer::default();
    let mut z = coexec_buffer::default();
    // SAFETY: the memory outlives the buffers (freed below before `Aligned` drops).
    unsafe {
        ok(coexec_buffer_import(e, xs.ptr.cast(), n, 4, &mut x));
        ok(coexec_buffer_import(e, ys.ptr.cast(), n, 4, &mut y));
        ok(coexec_buffer_import(e, zs.ptr.cast(), n, 4, &mut z));
    }
    let mut bi = std::mem::MaybeUninit::<coexec_buffer_info>::uninit();
    // SAFETY: writable out pointer.
    ok(unsafe { coexec_buffer_get_info(x, bi.as_mut_ptr()) });
    // SAFETY: filled on success.
    let bi = unsafe { bi.assume_init() };
    assert_eq!(
        bi.host_ptr,
        xs.ptr.cast(),
        "zero-copy: the very same address"
    );
    assert!(bi.imported);
    // Not zeroed on import.
    // SAFETY: n floats.
    assert_eq!(unsafe { *xp.add(5) }, 5.0);
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
    for devices in [2u32, 3] {
        // SAFETY: valid arguments.
        ok(unsafe {
            run(
                e,
                k,
                &args3(x, y, z),
                &push,
                d1(n as u64),
                None,
                devices,
                null_mut(),
            )
        });
        for i in 0..n {
            // SAFETY: the run is over.
            assert_eq!(unsafe { *zp.add(i) }, 2.0 * i as f32 + 3.0, "item {i}");
        }
    }
    // Misaligned pointer, misaligned size, NULL.
    // SAFETY: the memory is valid; the alignment is what is wrong.
    unsafe {
        let st = coexec_buffer_import(e, xs.ptr.add(4).cast(), n / 2, 4, &mut b);
        assert_eq!(st, COEXEC_ERROR_MISALIGNED, "{}", last_error());
        assert!(last_error().contains("pointer"), "{}", last_error());
        assert_eq!(b.id, 0);
        let st = coexec_buffer_import(e, xs.ptr.cast(), 3, 4, &mut b);
        assert_eq!(st, COEXEC_ERROR_MISALIGNED, "{}", last_error());
        assert!(last_error().contains("size"), "{}", last_error());
        let st = coexec_buffer_import(e, null_mut(), 1024, 4, &mut b);
        assert_eq!(st, COEXEC_ERROR_NULL_POINTER);
    }
    assert_eq!(info(e).validation_errors, 0);
    ok(coexec_kernel_destroy(k));
    for b in [x, y, z] {
        ok(coexec_buffer_free(b));
    }
    ok(coexec_engine_destroy(e));
    drop((xs, ys, zs));
}

/// State of the re-entrancy test: handles the CPU function tries to tear down.
struct Reentrant {
    engine: coexec_engine,
    kernel: coexec_kernel,
    out: coexec_buffer,
    statuses: std::sync::Mutex<Vec<coexec_status>>,
    out_ptr: *mut u32,
}

unsafe extern "C" fn reentrant_cpu(
    pkg: *const coexec_package,
    _args: *const coexec_cpu_args,
    user_data: *mut c_void,
) -> i32 {
    // SAFETY: coexec passes a valid package and our `Reentrant`.
    let (pkg, r) = unsafe { (&*pkg, &*(user_data as *const Reentrant)) };
    assert_eq!(pkg.dims, 2);
    for row in pkg.row_start..pkg.row_end {
        for col in 0..pkg.width {
            let i = (row * pkg.width + col) as usize;
            assert!((pkg.item_start..pkg.item_end).contains(&(i as u64)));
            // SAFETY: this package's items only.
            unsafe { *r.out_ptr.add(i) = row * 1000 + col };
        }
    }
    let mut st = r.statuses.lock().unwrap();
    st.push(coexec_engine_destroy(r.engine));
    st.push(coexec_kernel_destroy(r.kernel));
    st.push(coexec_buffer_free(r.out));
    // SAFETY: valid (empty) arguments; the call itself is what is refused.
    st.push(unsafe {
        coexec_run(
            r.engine,
            r.kernel,
            null(),
            0,
            null(),
            0,
            coexec_index_space {
                dims: 1,
                width: 1,
                height: 0,
            },
            null(),
            1,
            null_mut(),
        )
    });
    0
}

#[test]
fn cpu_only_2d_kernel_and_teardown_during_a_run_is_busy() {
    let Some(e) = engine() else { return };
    if info(e).workers == 0 {
        ok(coexec_engine_destroy(e));
        return;
    }
    let (w, h) = (37u32, 21u32);
    let mut out = coexec_buffer::default();
    let mut p = null_mut();
    // SAFETY: writable out pointers.
    ok(unsafe { coexec_buffer_alloc(e, (w * h) as usize, 4, &mut out, &mut p) });
    let mut r = Reentrant {
        engine: e,
        kernel: coexec_kernel::default(),
        out,
        statuses: Default::default(),
        out_ptr: p.cast(),
    };
    let mut k = coexec_kernel::default();
    // SAFETY: `r` outlives the kernel.
    ok(unsafe {
        coexec_kernel_cpu_only(
            e,
            c"grid".as_ptr(),
            8,
            4,
            Some(reentrant_cpu),
            &r as *const Reentrant as *mut c_void,
            &mut k,
        )
    });
    r.kernel = k;
    let args = [coexec_arg {
        buffer: out,
        access: coexec_access::COEXEC_ACCESS_OUTPUT as u32,
        per_item: 1,
    }];
    let space = coexec_index_space {
        dims: 2,
        width: u64::from(w),
        height: u64::from(h),
    };
    let sched = dynamic(3);
    let mut rep = std::mem::MaybeUninit::<coexec_report>::uninit();
    // SAFETY: valid arguments; `r` is only read by the CPU function meanwhile.
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
            rep.as_mut_ptr(),
        )
    });
    // SAFETY: filled on success.
    let rep = unsafe { rep.assume_init() };
    assert_eq!(rep.num_devices, 1);
    assert_eq!(rep.units, 6, "rows of work-groups of height 4");
    for row in 0..h {
        for col in 0..w {
            // SAFETY: the run is over.
            let v = unsafe { *r.out_ptr.add((row * w + col) as usize) };
            assert_eq!(v, row * 1000 + col);
        }
    }
    let st = r.statuses.lock().unwrap().clone();
    assert_eq!(st.len(), 4 * rep.packages as usize);
    for c in st.chunks(4) {
        assert_eq!(c, [COEXEC_ERROR_BUSY; 4]);
    }
    // Everything is still alive and is torn down normally now.
    ok(coexec_kernel_destroy(k));
    ok(coexec_buffer_free(out));
    ok(coexec_engine_destroy(e));
}

#[cfg(not(feature = "vma"))]
#[test]
fn vma_without_the_feature_is_unsupported() {
    let mut opts = coexec_engine_options_default();
    opts.allocator = coexec_allocator::COEXEC_ALLOCATOR_VMA as u32;
    opts.validation = coexec_validation::COEXEC_VALIDATION_OFF as u32;
    let mut e = coexec_engine::default();
    // SAFETY: valid pointers.
    let s = unsafe { coexec_engine_create(&opts, &mut e) };
    assert!(
        s == COEXEC_ERROR_UNSUPPORTED || s == COEXEC_ERROR_NO_DEVICE,
        "{s:?}: {}",
        last_error()
    );
    assert_eq!(e.id, 0);
}
