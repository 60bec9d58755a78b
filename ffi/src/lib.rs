//! # coexec C ABI
//!
//! The C interface of [coexec](::coexec_engine): create an engine, allocate
//! unified buffers (or import page-aligned host memory), build kernels from
//! GLSL or SPIR-V plus a C function for the CPU, and co-execute them on the
//! CPU workers and the Vulkan device at once.
//!
//! The header `include/coexec.h` is generated from this crate by cbindgen;
//! the test `tests::header` fails when it is stale. See `README.md` for building,
//! linking and the ownership and threading rules.
//!
//! Every entry point runs inside `catch_unwind`: no panic crosses into C.
//! Handles are registry ids, never pointers, so null, stale and wrong-kind
//! handles are errors, not undefined behaviour.

mod callback;
mod footprint;
mod handles;
mod program;
mod reduce;
mod run;
mod status;
#[cfg(test)]
mod tests;
mod tiles;
mod types;

pub use footprint::*;
pub use program::*;
pub use run::{coexec_kernel_units, coexec_run, coexec_run_range};
pub use tiles::coexec_kernel_take_tiles;
pub use types::*;

use ::coexec_engine::CpuTopology;
use ::coexec_engine::{
    AllocatorBackend, Buffer, Engine, EngineOptions, GpuChoice, MemoryPlacement, Objective,
    Validation,
};
use callback::cpu_fn;
use handles::{BufferObj, EngineObj, KernelObj, BUFFERS, ENGINES, KERNELS};
use status::{guard, guard_value, FfiError, FfiResult};
use std::ffi::{c_char, c_void, CStr};
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};
use std::time::Duration;
use types::coexec_status::*;

// ---------------------------------------------------------------------------
// Helpers for raw pointers from C.

fn null(what: &str) -> FfiError {
    FfiError::new(COEXEC_ERROR_NULL_POINTER, format!("{what} is NULL"))
}

pub(crate) fn invalid(message: impl Into<String>) -> FfiError {
    FfiError::new(COEXEC_ERROR_INVALID_ARGUMENT, message)
}

/// Writes `value` through an out-pointer from C.
///
/// # Safety
/// `out` is NULL or valid for a write of `T` (alignment is not required).
pub(crate) unsafe fn put<T>(out: *mut T, value: T, what: &str) -> FfiResult {
    if out.is_null() {
        return Err(null(what));
    }
    // SAFETY: non-null, and the caller guarantees it is valid for a write.
    unsafe { out.write_unaligned(value) };
    Ok(())
}

/// A UTF-8 string from C; `None` for NULL.
///
/// # Safety
/// `s` is NULL or a NUL-terminated string that stays valid during the call.
unsafe fn opt_str<'a>(s: *const c_char, what: &str) -> FfiResult<Option<&'a str>> {
    if s.is_null() {
        return Ok(None);
    }
    // SAFETY: non-null and NUL-terminated per the caller's contract.
    let c = unsafe { CStr::from_ptr(s) };
    c.to_str()
        .map(Some)
        .map_err(|_| invalid(format!("{what} is not valid UTF-8")))
}

/// A slice from a C pointer and count; an empty slice for a count of 0. A
/// count no memory can hold (over `isize::MAX` bytes) is an argument error.
///
/// # Safety
/// When `len > 0`, `p` is NULL or valid for reads of `len` elements of `T`.
pub(crate) unsafe fn slice<'a, T>(p: *const T, len: usize, what: &str) -> FfiResult<&'a [T]> {
    if len == 0 {
        return Ok(&[]);
    }
    if p.is_null() {
        return Err(null(what));
    }
    if len > isize::MAX as usize / std::mem::size_of::<T>().max(1) {
        return Err(invalid(format!(
            "{what}: a count of {len} exceeds what any memory can hold"
        )));
    }
    if !p.is_aligned() {
        return Err(invalid(format!("{what} is not aligned for its type")));
    }
    // SAFETY: non-null, aligned, and valid for `len` reads per the caller.
    Ok(unsafe { std::slice::from_raw_parts(p, len) })
}

/// Copies `s` into a fixed, NUL-terminated C name buffer, cut at a character
/// boundary.
fn name_buf(s: &str) -> [c_char; COEXEC_NAME_MAX] {
    let mut out = [0 as c_char; COEXEC_NAME_MAX];
    let mut end = s.len().min(COEXEC_NAME_MAX - 1);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    for (o, b) in out.iter_mut().zip(&s.as_bytes()[..end]) {
        *o = *b as c_char;
    }
    out
}

// ---------------------------------------------------------------------------
// Library information and errors.

/// The library version, e.g. "0.1.0" (a static string).
#[no_mangle]
pub extern "C" fn coexec_version() -> *const c_char {
    concat!(env!("CARGO_PKG_VERSION"), "\0").as_ptr().cast()
}

/// The message of the last failed coexec call on this thread ("" when the
/// last call succeeded). The string is owned by coexec and stays valid until
/// the next coexec call on this thread; copy it to keep it.
#[no_mangle]
pub extern "C" fn coexec_last_error() -> *const c_char {
    guard_value(c"".as_ptr(), status::last_error_ptr)
}

/// The value the CPU function returned when it failed the last
/// `coexec_run` on this thread (that call returned
/// `COEXEC_ERROR_KERNEL_FAILED`); 0 after any other call.
#[no_mangle]
pub extern "C" fn coexec_last_kernel_code() -> i32 {
    guard_value(0, status::last_kernel_code)
}

/// The Khronos validation layer's error messages reported during the last
/// coexec call on this thread that used an engine (creating it, a buffer, a
/// kernel, a run, `coexec_engine_get_info`), one per line; "" when there were
/// none or validation is off. Owned by coexec, valid until the next coexec
/// call on this thread. Other threads' calls on the same engine may add to
/// them. `coexec_engine_info.validation_errors` counts them all.
#[no_mangle]
pub extern "C" fn coexec_last_validation_messages() -> *const c_char {
    guard_value(c"".as_ptr(), status::validation_messages_ptr)
}

/// Runs `f` on `e`, recording the validation messages reported meanwhile as
/// this call's (see `coexec_last_validation_messages`).
pub(crate) fn validation_scope<R>(e: &Engine, f: impl FnOnce() -> R) -> R {
    let (r, messages) = e.with_validation_messages(f);
    if !messages.is_empty() {
        status::set_validation_messages(&messages.join("\n"));
    }
    r
}

/// The name of a status code, e.g. "COEXEC_ERROR_INVALID_HANDLE" (a static
/// string; unknown values give "(unknown coexec_status)").
#[no_mangle]
pub extern "C" fn coexec_status_string(status: i32) -> *const c_char {
    guard_value(c"".as_ptr(), || status::status_name(status).as_ptr().cast())
}

// ---------------------------------------------------------------------------
// Engines.

/// Default engine options, with every default spelled out: workers -1
/// (automatic), gpu-allocator, validation `COEXEC_VALIDATION_ENV` (the
/// Khronos layer only when the environment variable `COEXEC_VALIDATION` is
/// exactly `1`; unset means off), every GPU (`gpu_index` -1; -2: the one best device),
/// `gpu_in_flight` 2, `gpu_timeout_s` 30.0, default pipeline cache (NULL).
/// (0 for `gpu_in_flight` and `gpu_timeout_s` also means the default.)
#[no_mangle]
pub extern "C" fn coexec_engine_options_default() -> coexec_engine_options {
    let d = EngineOptions::default();
    coexec_engine_options {
        workers: -1,
        allocator: coexec_allocator::COEXEC_ALLOCATOR_GPU_ALLOCATOR as u32,
        validation: coexec_validation::COEXEC_VALIDATION_ENV as u32,
        gpu_index: -1,
        gpu_in_flight: u32::try_from(d.gpu_in_flight).unwrap_or(2),
        gpu_timeout_s: d.gpu_timeout.as_secs_f64(),
        pipeline_cache_dir: std::ptr::null(),
        disable_profiles: !d.profiles,
        memory: coexec_memory::COEXEC_MEMORY_AUTO as u32,
        objective: coexec_objective::COEXEC_OBJECTIVE_TIME as u32,
        spirv_cpu: d.spirv_cpu,
        cpu_impl: coexec_cpu_impl::COEXEC_CPU_IMPL_NATIVE as u32,
    }
}

/// `workers`: -1 (automatic) or 0 ..= the number of hardware threads.
fn workers_of(n: i32) -> FfiResult<Option<usize>> {
    match n {
        -1 => Ok(None),
        n if n >= 0 => {
            let pus = CpuTopology::detect().pus;
            if n as usize > pus {
                return Err(invalid(format!(
                    "workers is {n} but this machine has {pus} hardware threads (each worker is pinned to its own)"
                )));
            }
            Ok(Some(n as usize))
        }
        n => Err(invalid(format!("workers must be -1 or >= 0 (got {n})"))),
    }
}

/// `gpu_timeout_s`: <= 0 for the default, finite otherwise.
fn timeout_of(s: f64, default: Duration) -> FfiResult<Duration> {
    if s.is_nan() || s.is_infinite() {
        return Err(invalid(format!(
            "gpu_timeout_s must be a finite number of seconds (got {s})"
        )));
    }
    if s <= 0.0 {
        return Ok(default);
    }
    Duration::try_from_secs_f64(s).map_err(|_| invalid(format!("gpu_timeout_s {s} is too large")))
}

/// `gpu_in_flight`: 0 for the default, else 1 ..= `COEXEC_MAX_GPU_IN_FLIGHT`.
fn in_flight_of(n: u32, default: usize) -> FfiResult<usize> {
    match n {
        0 => Ok(default),
        n if n <= COEXEC_MAX_GPU_IN_FLIGHT => Ok(n as usize),
        n => Err(invalid(format!(
            "gpu_in_flight is {n}; at most COEXEC_MAX_GPU_IN_FLIGHT ({COEXEC_MAX_GPU_IN_FLIGHT}) packages can be in flight"
        ))),
    }
}

/// Checks that a pipeline cache directory given explicitly exists (it is
/// created if missing) and takes files; "" (no disk cache) passes.
fn check_cache_dir(dir: &str) -> FfiResult {
    if dir.is_empty() {
        return Ok(());
    }
    let unwritable =
        |e: std::io::Error| invalid(format!("pipeline_cache_dir {dir:?} is not writable: {e}"));
    let path = Path::new(dir);
    std::fs::create_dir_all(path).map_err(unwritable)?;
    let probe = path.join(format!(".coexec-write-test-{}", std::process::id()));
    std::fs::write(&probe, b"").map_err(unwritable)?;
    let _ = std::fs::remove_file(&probe);
    Ok(())
}

/// # Safety
/// `o.pipeline_cache_dir` is NULL or a NUL-terminated string.
unsafe fn engine_options(o: &coexec_engine_options) -> FfiResult<EngineOptions> {
    let allocator = match o.allocator {
        0 => AllocatorBackend::GpuAllocator,
        1 => AllocatorBackend::Vma,
        v => return Err(invalid(format!("unknown coexec_allocator {v}"))),
    };
    let validation = match o.validation {
        0 => Validation::FromEnv,
        1 => Validation::Off,
        2 => Validation::Required,
        3 => Validation::IfAvailable,
        v => return Err(invalid(format!("unknown coexec_validation {v}"))),
    };
    let memory = match o.memory {
        0 => MemoryPlacement::Auto,
        1 => MemoryPlacement::ZeroCopy,
        2 => MemoryPlacement::Staged,
        v => return Err(invalid(format!("unknown coexec_memory {v}"))),
    };
    let objective = match o.objective {
        0 => Objective::Time,
        1 => Objective::Edp,
        v => return Err(invalid(format!("unknown coexec_objective {v}"))),
    };
    let cpu_impl = match o.cpu_impl {
        0 => ::coexec_engine::CpuImpl::Native,
        1 => ::coexec_engine::CpuImpl::Spirv,
        v => return Err(invalid(format!("unknown coexec_cpu_impl {v}"))),
    };
    let gpu = match o.gpu_index {
        -1 => GpuChoice::All,
        -2 => GpuChoice::Auto,
        i if i >= 0 => GpuChoice::Index(i as usize),
        i => {
            return Err(invalid(format!(
                "gpu_index must be -1, -2 or >= 0 (got {i})"
            )))
        }
    };
    // Field by field on top of the defaults: fields added to EngineOptions
    // later keep their defaults.
    let mut opts = EngineOptions::default();
    opts.gpu_timeout = timeout_of(o.gpu_timeout_s, opts.gpu_timeout)?;
    opts.gpu_in_flight = in_flight_of(o.gpu_in_flight, opts.gpu_in_flight)?;
    opts.workers = workers_of(o.workers)?;
    // SAFETY: forwarded from this function's contract.
    let cache = unsafe { opt_str(o.pipeline_cache_dir, "pipeline_cache_dir") }?;
    if let Some(dir) = cache {
        check_cache_dir(dir)?;
    }
    opts.gpu = gpu;
    opts.allocator = allocator;
    opts.validation = validation;
    opts.pipeline_cache_dir = cache.map(PathBuf::from);
    opts.profiles = !o.disable_profiles;
    opts.memory = memory;
    opts.objective = objective;
    opts.spirv_cpu = o.spirv_cpu;
    opts.cpu_impl = cpu_impl;
    Ok(opts)
}

/// Creates an engine: detects the CPU topology, opens the Vulkan device and
/// starts the (parked) worker threads. `options` may be NULL for the defaults.
/// On failure `*out` is set to the null handle.
///
/// # Safety
/// `options` is NULL or points to a valid `coexec_engine_options`; `out` is
/// valid for a write (NULL is rejected with `COEXEC_ERROR_NULL_POINTER`).
#[no_mangle]
pub unsafe extern "C" fn coexec_engine_create(
    options: *const coexec_engine_options,
    out: *mut coexec_engine,
) -> coexec_status {
    guard("coexec_engine_create", || {
        // SAFETY: `out` is NULL (checked by `put`) or writable per the contract.
        unsafe { put(out, types::coexec_engine::default(), "out") }?;
        let o = if options.is_null() {
            coexec_engine_options_default()
        } else {
            // SAFETY: non-null and valid per the contract.
            unsafe { options.read_unaligned() }
        };
        // SAFETY: the options come from C, whose strings are NUL-terminated per
        // the contract.
        let opts = unsafe { engine_options(&o) }?;
        let engine = Engine::with_options(opts)?;
        if engine.validation_errors() > 0 {
            status::set_validation_messages(&engine.validation_messages().join("\n"));
        }
        let id = ENGINES.insert(EngineObj {
            engine_id: engine.id(),
            engine: RwLock::new(Some(engine)),
        });
        // SAFETY: as above.
        unsafe { put(out, coexec_engine { id }, "out") }
    })
}

/// Destroys an engine: waits for nothing, joins its threads. Its buffers and
/// kernels stay valid to query and free, but cannot be used in runs of another
/// engine. Errors: `COEXEC_ERROR_INVALID_HANDLE` for a null, destroyed or
/// unknown handle, `COEXEC_ERROR_BUSY` while a run on it is in progress.
#[no_mangle]
pub extern "C" fn coexec_engine_destroy(engine: coexec_engine) -> coexec_status {
    guard("coexec_engine_destroy", || {
        handles::destroy(&ENGINES, engine.id, |o| &o.engine)
    })
}

/// Fills `*out` with facts about the engine.
///
/// # Safety
/// `out` is valid for a write (NULL is rejected with
/// `COEXEC_ERROR_NULL_POINTER`).
#[no_mangle]
pub unsafe extern "C" fn coexec_engine_get_info(
    engine: coexec_engine,
    out: *mut coexec_engine_info,
) -> coexec_status {
    guard("coexec_engine_get_info", || {
        if out.is_null() {
            return Err(null("out"));
        }
        let (_, value) = with_engine(engine, |e| {
            let info = e.device_info();
            Ok(coexec_engine_info {
                device_name: name_buf(&info.name),
                device_is_cpu: info.device_type == ::coexec_engine::DeviceType::Cpu,
                gpu_available: e.gpu_available(),
                workers: u32::try_from(e.workers()).unwrap_or(u32::MAX),
                host_import_alignment: e.host_import_alignment().unwrap_or(0),
                validation_errors: e.validation_errors(),
                num_gpus: u32::try_from(e.gpu_count()).unwrap_or(u32::MAX),
            })
        })?;
        // SAFETY: non-null (checked) and writable per the contract.
        unsafe { put(out, value, "out") }
    })
}

// ---------------------------------------------------------------------------
// Buffers.

fn engine_of(engine: coexec_engine) -> FfiResult<Arc<EngineObj>> {
    ENGINES.get(engine.id)
}

/// Runs `f` on the live engine behind `engine`, under its read lock (held
/// only for `f`); also gives the engine's registry record.
fn with_engine<R>(
    engine: coexec_engine,
    f: impl FnOnce(&Engine) -> FfiResult<R>,
) -> FfiResult<(Arc<EngineObj>, R)> {
    let obj = engine_of(engine)?;
    let r = {
        let g = handles::read(&obj.engine, "engine")?;
        let e = g.as_ref().expect("checked by read");
        validation_scope(e, || f(e))?
    };
    Ok((obj, r))
}

fn buffer_bytes(count: usize, elem_size: usize) -> FfiResult<usize> {
    if count == 0 || elem_size == 0 {
        return Err(invalid(format!(
            "count and elem_size must be > 0 (got {count} and {elem_size})"
        )));
    }
    count
        .checked_mul(elem_size)
        .ok_or_else(|| invalid(format!("{count} x {elem_size} bytes overflows")))
}

fn register_buffer(
    engine_id: u64,
    mut b: Buffer<u8>,
    count: usize,
    elem_size: usize,
    imported: bool,
) -> FfiResult<(coexec_buffer, *mut c_void)> {
    let ptr = b.as_mut_slice().as_mut_ptr();
    // C writes and reads through the host pointer whenever it likes: staged
    // runs upload the buffer whenever they read it, and download what the
    // GPU wrote before returning even under lazy host coherence (untracked
    // buffers stay eager; see coexec_engine's mem::coherence).
    b.untrack_host_writes();
    // The largest power of two dividing the element size, capped at 16: what
    // C needs to access elements in place.
    let align = (1usize << elem_size.trailing_zeros()).min(16);
    if (ptr as usize) % align != 0 {
        return Err(FfiError::new(
            COEXEC_ERROR_INTERNAL,
            format!("the buffer's host pointer {ptr:p} is not aligned to {align} bytes"),
        ));
    }
    let id = BUFFERS.insert(BufferObj {
        engine_id,
        buffer: RwLock::new(Some(b)),
        host_ptr: ptr as usize,
        count,
        elem_size,
        imported,
    });
    Ok((coexec_buffer { id }, ptr.cast()))
}

/// Allocates a zero-filled unified buffer of `count` elements of `elem_size`
/// bytes, mapped for its whole life. `*host_ptr` (if `host_ptr` is not NULL)
/// receives its host address: the very memory kernels read and write, aligned
/// for elements of `elem_size` (up to 16 bytes). It stays valid until
/// `coexec_buffer_free`. Do not touch it while a run that writes the buffer is
/// in flight.
///
/// # Safety
/// `out` is valid for a write (NULL is rejected with
/// `COEXEC_ERROR_NULL_POINTER`); `host_ptr` is NULL (not wanted) or valid for
/// a write.
#[no_mangle]
pub unsafe extern "C" fn coexec_buffer_alloc(
    engine: coexec_engine,
    count: usize,
    elem_size: usize,
    out: *mut coexec_buffer,
    host_ptr: *mut *mut c_void,
) -> coexec_status {
    guard("coexec_buffer_alloc", || {
        // SAFETY: NULL (checked by `put`) or writable per the contract.
        unsafe { put(out, coexec_buffer::default(), "out") }?;
        let bytes = buffer_bytes(count, elem_size)?;
        let (obj, b) = with_engine(engine, |e| Ok(e.buffer::<u8>(bytes)?))?;
        let (handle, ptr) = register_buffer(obj.engine_id, b, count, elem_size, false)?;
        // SAFETY: as above.
        unsafe { put(out, handle, "out") }?;
        if !host_ptr.is_null() {
            // SAFETY: non-null and writable per the contract.
            unsafe { put(host_ptr, ptr, "host_ptr") }?;
        }
        Ok(())
    })
}

/// Wraps existing host memory as a buffer without copying, through
/// `VK_EXT_external_memory_host`: kernels read and write `host_ptr` itself.
/// `host_ptr` and `count * elem_size` must be multiples of
/// `coexec_engine_info.host_import_alignment` (page-aligned memory from
/// `mmap`, `aligned_alloc(4096, ...)` or `posix_memalign` with the size
/// rounded up to a page works on common devices). The memory is not zeroed.
///
/// Errors: `COEXEC_ERROR_MISALIGNED` for a misaligned pointer or size,
/// `COEXEC_ERROR_UNSUPPORTED` when the device cannot import host memory.
///
/// # Safety
/// `host_ptr` points to `count * elem_size` readable and writable bytes that
/// stay allocated until `coexec_buffer_free` on the new buffer has returned
/// `COEXEC_OK` (NULL is rejected with `COEXEC_ERROR_NULL_POINTER`); `out` is
/// valid for a write (NULL is rejected likewise).
#[no_mangle]
pub unsafe extern "C" fn coexec_buffer_import(
    engine: coexec_engine,
    host_ptr: *mut c_void,
    count: usize,
    elem_size: usize,
    out: *mut coexec_buffer,
) -> coexec_status {
    guard("coexec_buffer_import", || {
        // SAFETY: NULL (checked by `put`) or writable per the contract.
        unsafe { put(out, coexec_buffer::default(), "out") }?;
        if host_ptr.is_null() {
            return Err(null("host_ptr"));
        }
        let bytes = buffer_bytes(count, elem_size)?;
        let (obj, b) = with_engine(engine, |e| {
            // SAFETY: the C caller guarantees the memory stays allocated until
            // coexec_buffer_free returns, and free drops the buffer before
            // returning (it refuses while a run holds it); C code may access
            // it, but per the documented rules not while a run writes it.
            Ok(unsafe { e.import_host::<u8>(host_ptr.cast(), bytes) }?)
        })?;
        let (handle, _) = register_buffer(obj.engine_id, b, count, elem_size, true)?;
        // SAFETY: as above.
        unsafe { put(out, handle, "out") }
    })
}

/// Frees a buffer (imported host memory is released back to its owner: once
/// this returns `COEXEC_OK`, the device no longer references it). Errors:
/// `COEXEC_ERROR_INVALID_HANDLE` for a null, freed or unknown handle (double
/// free), `COEXEC_ERROR_BUSY` while a run uses it.
#[no_mangle]
pub extern "C" fn coexec_buffer_free(buffer: coexec_buffer) -> coexec_status {
    guard("coexec_buffer_free", || {
        handles::destroy(&BUFFERS, buffer.id, |o| &o.buffer)
    })
}

/// Fills `*out` with the buffer's host pointer, element count and size.
///
/// # Safety
/// `out` is valid for a write (NULL is rejected with
/// `COEXEC_ERROR_NULL_POINTER`).
#[no_mangle]
pub unsafe extern "C" fn coexec_buffer_get_info(
    buffer: coexec_buffer,
    out: *mut coexec_buffer_info,
) -> coexec_status {
    guard("coexec_buffer_get_info", || {
        if out.is_null() {
            return Err(null("out"));
        }
        let b = BUFFERS.get(buffer.id)?;
        let value = coexec_buffer_info {
            host_ptr: b.host_ptr as *mut c_void,
            count: b.count,
            elem_size: b.elem_size,
            size_bytes: b.count * b.elem_size,
            imported: b.imported,
        };
        // SAFETY: non-null (checked) and writable per the contract.
        unsafe { put(out, value, "out") }
    })
}

// ---------------------------------------------------------------------------
// Kernels.

/// # Safety
/// `name` is NULL or a NUL-terminated string; `out` is NULL or writable.
unsafe fn make_kernel(
    engine: coexec_engine,
    name: *const c_char,
    out: *mut coexec_kernel,
    build: impl FnOnce(&Engine, &str) -> FfiResult<::coexec_engine::Kernel>,
) -> FfiResult {
    // `*out` is already the null handle: every caller sets it first.
    // SAFETY: NULL or NUL-terminated per the contract.
    let name = unsafe { opt_str(name, "name") }?;
    // "" counts as NULL: the kernel is called "kernel" (`compile_glsl` guards
    // shaderc against empty names itself).
    let name = name.filter(|n| !n.is_empty()).unwrap_or("kernel");
    let (obj, kernel) = with_engine(engine, |e| build(e, name))?;
    let id = KERNELS.insert(KernelObj {
        engine_id: obj.engine_id,
        kernel: RwLock::new(Some(kernel)),
        footprints: Default::default(),
    });
    // SAFETY: as above.
    unsafe { put(out, coexec_kernel { id }, "out") }
}

/// Builds a kernel from GLSL compute-shader source (compiled at run time for
/// Vulkan 1.1: SPIR-V 1.3) and, optionally, its CPU implementation `cpu` (NULL: GPU
/// only). On a compile error it returns `COEXEC_ERROR_SHADER_COMPILE` and
/// `coexec_last_error()` holds the compiler's messages. `name` (may be NULL)
/// appears in messages. A library built without the cargo feature `glsl`
/// (the lean build) returns `COEXEC_ERROR_UNSUPPORTED` for every source:
/// compile to SPIR-V ahead of time and use `coexec_kernel_from_spirv`.
///
/// `cpu` is called for every part of a package the CPU runs (see
/// `coexec_package`), from several worker threads at once, with the run's
/// arguments (`coexec_cpu_args`: its buffers and push constants, so one
/// kernel serves runs over any buffers) and `user_data`: whatever
/// `user_data` points to must be safe to use concurrently and stay valid
/// until `coexec_kernel_destroy` returns `COEXEC_OK`. A non-zero return
/// fails the run (`coexec_cpu_fn`).
///
/// # Safety
/// `name` is NULL (for "kernel") or NUL-terminated; `glsl` is NUL-terminated
/// (NULL is rejected with `COEXEC_ERROR_NULL_POINTER`); `cpu` is NULL or a
/// function with the documented behaviour; `out` is writable (NULL is
/// rejected with `COEXEC_ERROR_NULL_POINTER`).
#[no_mangle]
pub unsafe extern "C" fn coexec_kernel_from_glsl(
    engine: coexec_engine,
    name: *const c_char,
    glsl: *const c_char,
    cpu: coexec_cpu_fn,
    user_data: *mut c_void,
    out: *mut coexec_kernel,
) -> coexec_status {
    guard("coexec_kernel_from_glsl", || {
        // SAFETY: NULL (checked by `put`) or writable per the contract. First,
        // so that `*out` is the null handle on every failure.
        unsafe { put(out, coexec_kernel::default(), "out") }?;
        // SAFETY: NULL or NUL-terminated per the contract.
        let glsl = unsafe { opt_str(glsl, "glsl") }?.ok_or_else(|| null("glsl"))?;
        // SAFETY: forwarded from this function's contract.
        unsafe {
            make_kernel(engine, name, out, |e, name| {
                Ok(e.kernel_glsl(name, glsl, cpu_fn(cpu, user_data))?)
            })
        }
    })
}

/// Builds a kernel from SPIR-V bytes (`size` a multiple of 4; entry point
/// `main`) and, optionally, its CPU implementation (see
/// `coexec_kernel_from_glsl` for the rules on `cpu` and `user_data`).
///
/// # Safety
/// `spirv` is valid for reads of `size` bytes (NULL is rejected with
/// `COEXEC_ERROR_NULL_POINTER`); `name` is NULL (for "kernel") or
/// NUL-terminated; `out` is writable (NULL is rejected likewise).
#[no_mangle]
pub unsafe extern "C" fn coexec_kernel_from_spirv(
    engine: coexec_engine,
    name: *const c_char,
    spirv: *const c_void,
    size: usize,
    cpu: coexec_cpu_fn,
    user_data: *mut c_void,
    out: *mut coexec_kernel,
) -> coexec_status {
    guard("coexec_kernel_from_spirv", || {
        // SAFETY: NULL (checked by `put`) or writable per the contract. First,
        // so that `*out` is the null handle on every failure.
        unsafe { put(out, coexec_kernel::default(), "out") }?;
        if spirv.is_null() {
            return Err(null("spirv"));
        }
        // SAFETY: non-null and readable for `size` bytes per the contract
        // (bytes have no alignment requirement).
        let bytes = unsafe { slice(spirv.cast::<u8>(), size, "spirv") }?;
        // SAFETY: forwarded from this function's contract.
        unsafe {
            make_kernel(engine, name, out, |e, name| {
                Ok(e.kernel(name, Some(bytes), cpu_fn(cpu, user_data), None)?)
            })
        }
    })
}

/// Builds a CPU-only kernel (no GPU implementation): packages are counted in
/// work-groups of `local_x` x `local_y` items (each >= 1). `cpu` must not be
/// NULL; see `coexec_kernel_from_glsl` for the rules on it and `user_data`.
///
/// # Safety
/// `name` is NULL (for "kernel") or NUL-terminated; `out` is writable (NULL
/// is rejected with `COEXEC_ERROR_NULL_POINTER`, as is a NULL `cpu`).
#[no_mangle]
pub unsafe extern "C" fn coexec_kernel_cpu_only(
    engine: coexec_engine,
    name: *const c_char,
    local_x: u32,
    local_y: u32,
    cpu: coexec_cpu_fn,
    user_data: *mut c_void,
    out: *mut coexec_kernel,
) -> coexec_status {
    guard("coexec_kernel_cpu_only", || {
        // SAFETY: NULL (checked by `put`) or writable per the contract. First,
        // so that `*out` is the null handle on every failure.
        unsafe { put(out, coexec_kernel::default(), "out") }?;
        let f = cpu_fn(cpu, user_data).ok_or_else(|| null("cpu"))?;
        // SAFETY: forwarded from this function's contract.
        unsafe {
            make_kernel(engine, name, out, |e, name| {
                Ok(e.kernel(name, None, Some(f), Some([local_x, local_y, 1]))?)
            })
        }
    })
}

/// Destroys a kernel; once this returns `COEXEC_OK` its CPU function is never
/// called again. Errors: `COEXEC_ERROR_INVALID_HANDLE` for a null, destroyed
/// or unknown handle, `COEXEC_ERROR_BUSY` while a run uses it.
#[no_mangle]
pub extern "C" fn coexec_kernel_destroy(kernel: coexec_kernel) -> coexec_status {
    guard("coexec_kernel_destroy", || {
        handles::destroy(&KERNELS, kernel.id, |o| &o.kernel)
    })
}
