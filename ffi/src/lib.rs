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

mod handles;
mod status;
#[cfg(test)]
mod tests;
mod types;

pub use types::*;

use ::coexec_engine::{
    AllocatorBackend, Args, Buffer, CpuArgs, CpuFn, Devices, Engine, EngineOptions, Error,
    GpuChoice, IndexSpace, Package, Report, Scheduler, Validation,
};
use handles::{BufferObj, EngineObj, KernelObj, BUFFERS, ENGINES, KERNELS};
use status::{guard, guard_value, FfiError, FfiResult};
use std::cell::Cell;
use std::collections::{BTreeMap, HashMap};
use std::ffi::{c_char, c_void, CStr};
use std::path::PathBuf;
use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::Duration;
use types::coexec_status::*;

// ---------------------------------------------------------------------------
// Helpers for raw pointers from C.

fn null(what: &str) -> FfiError {
    FfiError::new(COEXEC_ERROR_NULL_POINTER, format!("{what} is NULL"))
}

fn invalid(message: impl Into<String>) -> FfiError {
    FfiError::new(COEXEC_ERROR_INVALID_ARGUMENT, message)
}

/// Writes `value` through an out-pointer from C.
///
/// # Safety
/// `out` is NULL or valid for a write of `T` (alignment is not required).
unsafe fn put<T>(out: *mut T, value: T, what: &str) -> FfiResult {
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

/// A slice from a C pointer and count; an empty slice for a count of 0.
///
/// # Safety
/// When `len > 0`, `p` is NULL or valid for reads of `len` elements of `T`.
unsafe fn slice<'a, T>(p: *const T, len: usize, what: &str) -> FfiResult<&'a [T]> {
    if len == 0 {
        return Ok(&[]);
    }
    if p.is_null() {
        return Err(null(what));
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

/// The name of a status code, e.g. "COEXEC_ERROR_INVALID_HANDLE" (a static
/// string; unknown values give "(unknown coexec_status)").
#[no_mangle]
pub extern "C" fn coexec_status_string(status: i32) -> *const c_char {
    guard_value(c"".as_ptr(), || status::status_name(status).as_ptr().cast())
}

// ---------------------------------------------------------------------------
// Engines.

/// Default engine options: workers -1 (automatic), gpu-allocator, validation
/// `COEXEC_VALIDATION_ENV` (the Khronos layer only when the environment
/// variable `COEXEC_VALIDATION` is exactly `1`; unset means off), the best
/// Vulkan device, 2 packages in flight, 30 s GPU timeout, default pipeline
/// cache.
#[no_mangle]
pub extern "C" fn coexec_engine_options_default() -> coexec_engine_options {
    coexec_engine_options {
        workers: -1,
        allocator: coexec_allocator::COEXEC_ALLOCATOR_GPU_ALLOCATOR as u32,
        validation: coexec_validation::COEXEC_VALIDATION_ENV as u32,
        gpu_index: -1,
        gpu_in_flight: 0,
        gpu_timeout_s: 0.0,
        pipeline_cache_dir: std::ptr::null(),
    }
}

/// # Safety
/// `o.pipeline_cache_dir` is NULL or a NUL-terminated string.
unsafe fn engine_options(o: &coexec_engine_options) -> FfiResult<EngineOptions> {
    let workers = match o.workers {
        -1 => None,
        n if n >= 0 => Some(n as usize),
        n => return Err(invalid(format!("workers must be -1 or >= 0 (got {n})"))),
    };
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
    let gpu = match o.gpu_index {
        -1 => GpuChoice::Auto,
        i if i >= 0 => GpuChoice::Index(i as usize),
        i => return Err(invalid(format!("gpu_index must be -1 or >= 0 (got {i})"))),
    };
    let defaults = EngineOptions::default();
    let gpu_timeout = if o.gpu_timeout_s > 0.0 {
        Duration::try_from_secs_f64(o.gpu_timeout_s)
            .map_err(|_| invalid(format!("gpu_timeout_s {} is too large", o.gpu_timeout_s)))?
    } else {
        defaults.gpu_timeout
    };
    // SAFETY: forwarded from this function's contract.
    let cache = unsafe { opt_str(o.pipeline_cache_dir, "pipeline_cache_dir") }?;
    // Field by field on top of the defaults: fields added to EngineOptions
    // later keep their defaults.
    let mut opts = defaults;
    opts.gpu = gpu;
    opts.workers = workers;
    opts.allocator = allocator;
    opts.validation = validation;
    opts.pipeline_cache_dir = cache.map(PathBuf::from);
    if o.gpu_in_flight != 0 {
        opts.gpu_in_flight = o.gpu_in_flight as usize;
    }
    opts.gpu_timeout = gpu_timeout;
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
            let info = e.device().info();
            Ok(coexec_engine_info {
                device_name: name_buf(&info.name),
                device_is_cpu: info.device_type == ::coexec_engine::vk::DeviceType::Cpu,
                gpu_available: e.gpu_available(),
                workers: u32::try_from(e.workers()).unwrap_or(u32::MAX),
                host_import_alignment: e.memory().host_import_alignment().unwrap_or(0),
                validation_errors: e.validation_errors(),
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
        f(g.as_ref().expect("checked by read"))?
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
            Ok(unsafe { e.memory().import_host::<u8>(host_ptr.cast(), bytes) }?)
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

thread_local! {
    /// Set while this thread runs a C CPU function (to refuse `coexec_run`
    /// from inside one, which would deadlock).
    static IN_CPU_FN: Cell<bool> = const { Cell::new(false) };
}

/// A C CPU function with its user data.
struct CpuCallback {
    f: unsafe extern "C" fn(*const coexec_package, *mut c_void),
    user_data: *mut c_void,
}

// SAFETY: the C side owns `user_data` and, per the documented contract of the
// kernel constructors, makes whatever it points to safe to use from several
// threads at once and keeps it alive until the kernel is destroyed; coexec
// never dereferences it, only passes it back.
unsafe impl Send for CpuCallback {}
// SAFETY: as above; `call` takes `&self` and only copies the two pointers.
unsafe impl Sync for CpuCallback {}

impl CpuCallback {
    fn call(&self, pkg: &Package, args: &CpuArgs<'_>) {
        let push = args.push_bytes();
        let rows = pkg.rows.clone().unwrap_or(0..0);
        let p = coexec_package {
            item_start: pkg.items.start,
            item_end: pkg.items.end,
            unit_start: pkg.units.start,
            unit_end: pkg.units.end,
            row_start: rows.start,
            row_end: rows.end,
            width: pkg.width,
            dims: if pkg.rows.is_some() { 2 } else { 1 },
            push: if push.is_empty() {
                std::ptr::null()
            } else {
                push.as_ptr().cast()
            },
            push_size: push.len(),
        };
        IN_CPU_FN.with(|c| c.set(true));
        // SAFETY: `f` is the non-null function pointer C gave with this
        // `user_data`; `p` and the push bytes it points to outlive the call.
        // The C function must not unwind (documented); if it does, the
        // `extern "C"` boundary aborts rather than unwinding into Rust.
        unsafe { (self.f)(&p, self.user_data) };
        IN_CPU_FN.with(|c| c.set(false));
    }
}

fn cpu_fn(f: coexec_cpu_fn, user_data: *mut c_void) -> Option<Arc<CpuFn>> {
    let cb = CpuCallback { f: f?, user_data };
    let f: Arc<CpuFn> = Arc::new(move |pkg: &Package, args: &mut CpuArgs<'_>| cb.call(pkg, args));
    Some(f)
}

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
    });
    // SAFETY: as above.
    unsafe { put(out, coexec_kernel { id }, "out") }
}

/// Builds a kernel from GLSL compute-shader source (compiled at run time for
/// Vulkan 1.2) and, optionally, its CPU implementation `cpu` (NULL: GPU
/// only). On a compile error it returns `COEXEC_ERROR_SHADER_COMPILE` and
/// `coexec_last_error()` holds the compiler's messages. `name` (may be NULL)
/// appears in messages.
///
/// `cpu` is called once per package, from several worker threads at once,
/// with `user_data`: whatever `user_data` points to must be safe to use
/// concurrently and stay valid until `coexec_kernel_destroy` returns `COEXEC_OK`.
/// It returns nothing, so it cannot fail a run: record failures in
/// `user_data` and check them after `coexec_run`.
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

// ---------------------------------------------------------------------------
// Runs.

fn index_space(s: coexec_index_space) -> FfiResult<IndexSpace> {
    match s.dims {
        1 => Ok(IndexSpace::D1(s.width)),
        2 => {
            let w = u32::try_from(s.width)
                .map_err(|_| invalid(format!("2-D width {} exceeds 2^32 - 1", s.width)))?;
            let h = u32::try_from(s.height)
                .map_err(|_| invalid(format!("2-D height {} exceeds 2^32 - 1", s.height)))?;
            Ok(IndexSpace::D2 {
                width: w,
                height: h,
            })
        }
        d => Err(invalid(format!(
            "index space dims must be 1 or 2 (got {d})"
        ))),
    }
}

/// # Safety
/// `s.powers` is NULL or valid for `s.num_powers` reads.
unsafe fn scheduler(s: &coexec_scheduler) -> FfiResult<Scheduler> {
    // SAFETY: NULL or readable for `num_powers` values per the contract.
    let powers = unsafe { slice(s.powers, s.num_powers, "scheduler powers") }?;
    let powers = (!powers.is_empty()).then(|| powers.to_vec());
    Ok(match s.kind {
        0 => Scheduler::HGuided {
            powers,
            k: if s.k == 0.0 { 2.0 } else { s.k },
            min_package: s.min_package.max(1),
        },
        1 => Scheduler::Static { powers },
        2 => Scheduler::Dynamic {
            packages: s.packages,
        },
        k => return Err(invalid(format!("unknown coexec_scheduler_kind {k}"))),
    })
}

fn fill_report(r: &Report) -> coexec_report {
    let empty = coexec_device_report {
        name: [0; COEXEC_NAME_MAX],
        kind: coexec_device_kind::COEXEC_DEVICE_KIND_CPU,
        claimants: 0,
        packages: 0,
        items: 0,
        busy_s: 0.0,
        first_start_s: 0.0,
        finish_s: 0.0,
        failed: false,
    };
    let mut devices = [empty; COEXEC_MAX_DEVICES];
    for (o, d) in devices.iter_mut().zip(&r.devices) {
        *o = coexec_device_report {
            name: name_buf(&d.name),
            kind: match d.kind {
                ::coexec_engine::DeviceKind::Cpu => coexec_device_kind::COEXEC_DEVICE_KIND_CPU,
                ::coexec_engine::DeviceKind::Gpu => coexec_device_kind::COEXEC_DEVICE_KIND_GPU,
            },
            claimants: u32::try_from(d.claimants).unwrap_or(u32::MAX),
            packages: d.packages as u64,
            items: d.items,
            busy_s: d.busy_s,
            first_start_s: d.first_start_s,
            finish_s: d.finish_s,
            failed: d.failure.is_some(),
        };
    }
    coexec_report {
        time_s: r.time_s,
        items: r.items,
        units: r.units,
        packages: r.package_count() as u64,
        balance: r.balance(),
        num_devices: r.devices.len().min(COEXEC_MAX_DEVICES) as u32,
        devices,
    }
}

/// An engine error of a run, for C. The engine sees every C buffer as bytes
/// (`Buffer<u8>`), so its `BufferTooSmall` counts bytes; C counts elements of
/// the buffer's `elem_size`, so that error is restated in elements.
/// `items`: the run's work-items; `layouts[i]`: argument i's element size
/// (checked non-zero) and bytes per work-item (a whole number of elements).
fn run_error(e: Error, items: u64, layouts: &[(usize, usize)]) -> FfiError {
    if let Error::BufferTooSmall { binding, len, .. } = e {
        let i = binding as usize;
        if let Some(&(size, bytes_per_item)) = layouts.get(i) {
            let (size, per) = (size as u64, (bytes_per_item / size) as u64);
            return FfiError::new(
                COEXEC_ERROR_BUFFER_TOO_SMALL,
                format!(
                    "argument {i}: the buffer holds {} elements (of {size} bytes) but the index space needs {} ({items} work-items x {per} per item)",
                    len / size,
                    items * per,
                ),
            );
        }
    }
    e.into()
}

/// A locked buffer of a run.
enum Lock<'a> {
    Read(RwLockReadGuard<'a, Option<Buffer<u8>>>),
    Write(RwLockWriteGuard<'a, Option<Buffer<u8>>>),
}

/// A buffer borrowed for a run's `Args`.
enum Borrow<'a> {
    Shared(&'a Buffer<u8>),
    Exclusive(Option<&'a mut Buffer<u8>>),
}

/// Runs `kernel` over `space` on the devices in `devices` (`COEXEC_DEVICE_*`
/// bits), blocking until every work-item is done, and fills `*report` (may be
/// NULL).
///
/// `args[0..num_args]` are the buffers in binding order; a buffer may be given
/// as an input several times but as an output only once and never as both.
/// `sched` may be NULL for HGuided defaults. `space` counts work-items; the
/// GPU runs whole work-groups, so the shader must bound-check its ids against
/// the size you pass in the push constants (see `coexec_index_space`).
///
/// `push[0..push_size]` are the push-constant bytes (the run's scalar
/// arguments), given to the shader's `layout(push_constant)` block and, as
/// the same bytes, to the CPU function (`pkg->push`). `push_size` must equal
/// the size of the shader's block exactly (the end of its last member:
/// offset + size, without trailing padding); a run that uses the GPU rejects
/// any other size with `COEXEC_ERROR_INTERFACE`. 0 (and `push` NULL) when the
/// shader has none. The bytes are copied as they are, so the C struct must
/// put every member at the offset the GLSL block gives it: std430 rules (the
/// default for push-constant blocks) or explicit `layout(offset = N)`.
/// Scalars (`float`, `int`, `uint`) match `float`, `int32_t`, `uint32_t`
/// packed in order, e.g. `{ float a; uint n; }` is
/// `struct { float a; uint32_t n; }`, 8 bytes; `vec2` is 8-aligned and
/// `vec3`/`vec4` 16-aligned, so pad the C struct to match, and mind a C
/// struct's own trailing padding (`sizeof` may exceed the block's size).
///
/// Outputs may be read-write or `writeonly` in the shader; elements that no
/// work-item writes keep their previous contents (nothing is cleared).
///
/// While the run is in flight, C code must not access the outputs' memory
/// except through the CPU function, which must write only the elements of its
/// package's items. Runs on one engine execute one at a time; a run that needs
/// a buffer another run is writing waits for it. Calling `coexec_run` from a
/// CPU function returns `COEXEC_ERROR_BUSY`.
///
/// # Safety
/// `args` is valid for `num_args` reads (may be NULL only when `num_args` is
/// 0; otherwise NULL is rejected with `COEXEC_ERROR_NULL_POINTER`); `push`
/// likewise for `push_size` bytes; `sched` is NULL (defaults) or valid, and
/// its `powers` valid for `num_powers` reads (NULL with `num_powers` > 0 is
/// rejected); `report` is NULL (not wanted) or writable.
#[no_mangle]
pub unsafe extern "C" fn coexec_run(
    engine: coexec_engine,
    kernel: coexec_kernel,
    args: *const coexec_arg,
    num_args: usize,
    push: *const c_void,
    push_size: usize,
    space: coexec_index_space,
    sched: *const coexec_scheduler,
    devices: u32,
    report: *mut coexec_report,
) -> coexec_status {
    guard("coexec_run", || {
        if IN_CPU_FN.with(|c| c.get()) {
            return Err(FfiError::new(
                COEXEC_ERROR_BUSY,
                "coexec_run was called from inside a CPU function (it would deadlock)",
            ));
        }
        // SAFETY: NULL or readable for `num_args` per the contract.
        let c_args = unsafe { slice(args, num_args, "args") }?;
        // SAFETY: NULL or readable for `push_size` bytes per the contract.
        let push = unsafe { slice(push.cast::<u8>(), push_size, "push") }?;
        let scheduler = if sched.is_null() {
            Scheduler::hguided()
        } else {
            // SAFETY: non-null and readable per the contract, including powers.
            unsafe { scheduler(&sched.read_unaligned()) }?
        };
        let space = index_space(space)?;
        const CPU: u32 = coexec_device_mask::COEXEC_DEVICE_CPU as u32;
        const GPU: u32 = coexec_device_mask::COEXEC_DEVICE_GPU as u32;
        const ALL: u32 = coexec_device_mask::COEXEC_DEVICE_ALL as u32;
        if devices == 0 || devices & !ALL != 0 {
            return Err(invalid(format!(
                "devices must be a non-empty combination of COEXEC_DEVICE_CPU and COEXEC_DEVICE_GPU (got {devices:#x})"
            )));
        }
        let devices = Devices {
            cpu: devices & CPU != 0,
            gpu: devices & GPU != 0,
        };

        let eobj = engine_of(engine)?;
        let kobj = KERNELS.get(kernel.id)?;
        if kobj.engine_id != eobj.engine_id {
            return Err(FfiError::new(
                COEXEC_ERROR_FOREIGN_HANDLE,
                "the kernel belongs to another engine",
            ));
        }
        // Resolve the buffers; each distinct one once, with the access it needs.
        let mut distinct: BTreeMap<u64, (Arc<BufferObj>, bool)> = BTreeMap::new();
        // Per argument: element size and bytes per work-item.
        let mut layouts = Vec::with_capacity(c_args.len());
        for (i, a) in c_args.iter().enumerate() {
            let b = BUFFERS
                .get(a.buffer.id)
                .map_err(|e| FfiError::new(e.code, format!("argument {i}: {}", e.message)))?;
            if b.engine_id != eobj.engine_id {
                return Err(FfiError::new(
                    COEXEC_ERROR_FOREIGN_HANDLE,
                    format!("argument {i}: the buffer belongs to another engine"),
                ));
            }
            let write = match a.access {
                0 => false,
                1 => true,
                v => return Err(invalid(format!("argument {i}: unknown coexec_access {v}"))),
            };
            let elems = usize::try_from(a.per_item.max(1))
                .ok()
                .and_then(|n| n.checked_mul(b.elem_size))
                .ok_or_else(|| invalid(format!("argument {i}: per_item overflows")))?;
            layouts.push((b.elem_size, elems));
            match distinct.get_mut(&a.buffer.id) {
                Some((_, w)) => {
                    if write || *w {
                        return Err(invalid(format!(
                            "argument {i}: a buffer given as an output cannot appear in another argument"
                        )));
                    }
                }
                None => {
                    distinct.insert(a.buffer.id, (b, write));
                }
            }
        }

        // Lock: engine, kernel, then buffers in increasing id order (one global
        // order, so concurrent runs cannot deadlock; destroy/free never waits).
        let eg = handles::read(&eobj.engine, "engine")?;
        let e = eg.as_ref().expect("checked by read");
        let kg = handles::read(&kobj.kernel, "kernel")?;
        let k = kg.as_ref().expect("checked by read");
        let mut locks = Vec::with_capacity(distinct.len());
        for (id, (b, write)) in &distinct {
            locks.push((
                *id,
                if *write {
                    Lock::Write(handles::write(&b.buffer, "buffer")?)
                } else {
                    Lock::Read(handles::read(&b.buffer, "buffer")?)
                },
            ));
        }
        let mut borrows: HashMap<u64, Borrow<'_>> = HashMap::with_capacity(locks.len());
        for (id, lock) in &mut locks {
            let borrow = match lock {
                Lock::Read(g) => Borrow::Shared(g.as_ref().expect("checked by read")),
                Lock::Write(g) => Borrow::Exclusive(Some(g.as_mut().expect("checked by write"))),
            };
            borrows.insert(*id, borrow);
        }
        let mut run_args = Args::new();
        for (a, &(_, elems)) in c_args.iter().zip(&layouts) {
            run_args = match borrows.get_mut(&a.buffer.id) {
                Some(Borrow::Shared(b)) => run_args.input(*b),
                Some(Borrow::Exclusive(b)) => {
                    let b = b.take().expect("outputs appear once (checked above)");
                    run_args.output_per_item(b, elems)
                }
                None => unreachable!("every argument was resolved"),
            };
        }
        let run_args = run_args.push_bytes(push);
        let r = e
            .run(k, run_args, space, &scheduler, devices)
            .map_err(|err| run_error(err, space.items(), &layouts))?;
        if !report.is_null() {
            // SAFETY: non-null and writable per the contract.
            unsafe { put(report, fill_report(&r), "report") }?;
        }
        Ok(())
    })
}
