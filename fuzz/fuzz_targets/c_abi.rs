//! The C ABI entry points (`ffi/src`, compiled in as a module) driven by a
//! sequence of operations decoded from the input: buffers allocated, imported
//! (page-aligned and deliberately misaligned), queried, written and freed
//! (twice); kernels built from arbitrary GLSL text, arbitrary and patched
//! SPIR-V, or a CPU function only, and destroyed (twice); engine creation with
//! invalid options; runs with arbitrary handles, argument lists, push bytes,
//! index spaces, schedulers (zero packages, NaN or negative powers, k <= 0,
//! ...) and device masks; status names. Every call must return a status code,
//! never panic, hang or trip ASan; the last-error string is checked after
//! each call.
//!
//! It keeps the C contract: every pointer passed is NULL or valid (strings
//! NUL-terminated, arrays as long as their count, imported memory owned here
//! and kept until its buffer is freed, `user_data` kept until its kernel is
//! destroyed), and the CPU function writes nothing. Handles, however, are
//! any integer: null, stale, double-freed, wrong-kind and foreign handles
//! must come back as error codes. Kernels built from fuzzed GLSL or SPIR-V
//! are never dispatched on the GPU (a shader may index out of bounds, which
//! no API can check); runs selecting the GPU use fixed kernels that guard
//! every access by the buffers' lengths, and runs have at most 4096 items.
//! Fuzzed SPIR-V does reach pipeline creation: the engine validates every
//! module with SPIRV-Tools before a driver sees it.
//!
//! Engines are created once per process (creating a Vulkan device per input
//! would be far too slow): `main` (1 CPU worker), `other` (no workers, for
//! foreign buffers and kernels) and one destroyed at once, whose buffer and
//! kernel stay valid. Without a Vulkan device only the handle paths run.
//! Objects of one input are freed at its end, so inputs stay independent.
//!
//! Input format (little-endian; reads past the end give zeros): a sequence
//! of operations, each an opcode byte (`% 16`, see [`run_op`]) followed by
//! its fields. A handle is a tag byte (`% 4`: 0 and 3 pick a known handle by
//! the next byte, 1 is null, 2 a raw `u64` follows); byte strings are a
//! `u16` length then the bytes.
#![no_main]

// The C ABI crate builds no rlib (see ffi/Cargo.toml), so its source is
// compiled in. Its enums of values C passes as plain integers, and the
// re-exports the fuzz target does not call, are unused here.
#[path = "../../ffi/src/lib.rs"]
#[allow(dead_code, unused_imports)]
mod capi;

use capi::coexec_status::{self, *};
use capi::*;
use libfuzzer_sys::fuzz_target;
use std::alloc::Layout;
use std::ffi::{c_char, c_void, CStr, CString};
use std::mem::MaybeUninit;
use std::ptr::{null, null_mut};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::OnceLock;

/// Largest buffer allocated (1 MiB).
const MAX_BUFFER_BYTES: usize = 1 << 20;
/// Largest index space of a run.
const MAX_ITEMS: u64 = 4096;
/// Operations per input, buffers and kernels alive at once.
const MAX_OPS: usize = 64;
const MAX_SLOTS: usize = 16;

/// A kernel the GPU may run with any arguments: every access is guarded by
/// the bound buffers' lengths, whatever the index space and push constants.
const SAFE_1D: &str = "#version 450
layout(local_size_x = 64) in;
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) buffer Z { float z[]; };
layout(push_constant) uniform P { float a; uint n; } p;
void main() {
    uint i = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * 4096u;
    if (i < uint(z.length()) && i < uint(x.length())) z[i] = p.a * x[i] + float(p.n);
}";

/// As [`SAFE_1D`] with 2-D work-groups, one output and no push constants.
const SAFE_2D: &str = "#version 450
layout(local_size_x = 8, local_size_y = 8) in;
layout(std430, binding = 0) buffer Z { uint z[]; };
void main() {
    uint i = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * 64u;
    if (i < uint(z.length())) z[i] = i;
}";

/// Per-kernel figures kept by the CPU function (its `user_data`).
#[derive(Default)]
struct Counter {
    /// Work-items of all packages run.
    items: AtomicU64,
}

/// The `user_data` of the kernels built once per process.
static STATIC_COUNTER: Counter = Counter {
    items: AtomicU64::new(0),
};
/// Work-items of the run in progress (the CPU function checks its packages
/// against it).
static RUN_ITEMS: AtomicU64 = AtomicU64::new(0);
/// FNV-1a hash of the push bytes of the run in progress.
static RUN_PUSH_HASH: AtomicU64 = AtomicU64::new(0);

fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// The CPU function of every kernel built here: checks the package and the
/// arguments it is handed (buffer views, push bytes), counts its items,
/// writes nothing, and returns 0.
unsafe extern "C" fn count_items(
    pkg: *const coexec_package,
    args: *const coexec_cpu_args,
    user_data: *mut c_void,
) -> i32 {
    // SAFETY: coexec passes a package and arguments valid for the call and
    // the `user_data` given with this function: a `Counter` that lives until
    // the kernel is destroyed.
    let (pkg, args, counter) = unsafe { (&*pkg, &*args, &*(user_data as *const Counter)) };
    assert!(
        pkg.item_start < pkg.item_end && pkg.item_end <= RUN_ITEMS.load(Relaxed),
        "package items {}..{} outside the run's {} items",
        pkg.item_start,
        pkg.item_end,
        RUN_ITEMS.load(Relaxed)
    );
    assert!(pkg.dims == 1 || pkg.dims == 2, "dims {}", pkg.dims);
    assert!(args.num_buffers <= COEXEC_MAX_ARGS);
    if args.num_buffers > 0 {
        // SAFETY: coexec hands `num_buffers` views, valid for the call.
        let bufs = unsafe { std::slice::from_raw_parts(args.buffers, args.num_buffers) };
        for b in bufs {
            assert!(!b.data.is_null() && b.count > 0 && b.elem_size > 0);
            assert!(b.access <= 1 && (b.access == 1) == (b.per_item > 0));
        }
    }
    let push: &[u8] = if args.push_size == 0 {
        &[]
    } else {
        assert!(
            !args.push.is_null(),
            "push_size {} but push NULL",
            args.push_size
        );
        // SAFETY: coexec hands the run's push bytes, valid for the call.
        unsafe { std::slice::from_raw_parts(args.push.cast::<u8>(), args.push_size) }
    };
    assert_eq!(
        fnv1a(push),
        RUN_PUSH_HASH.load(Relaxed),
        "push bytes differ"
    );
    counter
        .items
        .fetch_add(pkg.item_end - pkg.item_start, Relaxed);
    0
}

/// `C_ABI_TRACE=1` prints every call's status and message (to see which
/// paths an input reaches).
fn trace() -> bool {
    static TRACE: OnceLock<bool> = OnceLock::new();
    *TRACE.get_or_init(|| std::env::var_os("C_ABI_TRACE").is_some_and(|v| v == "1"))
}

/// `coexec_last_error()` must be a NUL-terminated UTF-8 string, empty after
/// a success and a message after a failure.
fn check_status(what: &str, status: coexec_status) {
    let p = coexec_last_error();
    assert!(!p.is_null(), "{what}: coexec_last_error() is NULL");
    // SAFETY: non-null, and coexec returns a NUL-terminated string valid until
    // the next coexec call on this thread; it is copied at once.
    let msg = unsafe { CStr::from_ptr(p) }.to_str().map(str::to_owned);
    let msg = msg.unwrap_or_else(|e| panic!("{what}: last error is not UTF-8: {e}"));
    if trace() {
        eprintln!("{what}: {status:?} {msg}");
    }
    assert_ne!(status, COEXEC_ERROR_PANIC, "{what}: {msg}");
    if status == COEXEC_OK {
        assert!(
            msg.is_empty(),
            "{what}: succeeded but last error is {msg:?}"
        );
    } else {
        assert!(!msg.is_empty(), "{what}: {status:?} without a message");
    }
}

/// A `coexec_status_string` result: a static name.
fn check_name(status: i32) {
    let p = coexec_status_string(status);
    assert!(!p.is_null());
    // SAFETY: non-null; coexec returns a static NUL-terminated string.
    let name = unsafe { CStr::from_ptr(p) }.to_str().expect("UTF-8 name");
    let known = (0..=19).contains(&status);
    assert_eq!(name.starts_with("COEXEC_"), known, "{status}: {name}");
}

fn engine_options(workers: i32) -> coexec_engine_options {
    let mut o = coexec_engine_options_default();
    o.workers = workers;
    o.validation = coexec_validation::COEXEC_VALIDATION_OFF as u32;
    // No disk cache: fuzzed shaders would fill it.
    o.pipeline_cache_dir = c"".as_ptr();
    o
}

/// Creates an engine, or `None` (there is no Vulkan device).
fn create_engine(workers: i32) -> Option<coexec_engine> {
    let o = engine_options(workers);
    let mut e = coexec_engine { id: 0 };
    // SAFETY: valid options (a static string) and out pointer.
    let s = unsafe { coexec_engine_create(&o, &mut e) };
    check_status("coexec_engine_create", s);
    (s == COEXEC_OK).then_some(e)
}

/// A kernel from fixed GLSL with the counting CPU function.
fn static_kernel(e: coexec_engine, glsl: &str) -> Option<u64> {
    let src = CString::new(glsl).expect("no NUL");
    let mut k = coexec_kernel::default();
    // SAFETY: NUL-terminated strings; the counter is a static.
    let s = unsafe {
        coexec_kernel_from_glsl(
            e,
            c"safe".as_ptr(),
            src.as_ptr(),
            Some(count_items),
            &STATIC_COUNTER as *const Counter as *mut c_void,
            &mut k,
        )
    };
    check_status("coexec_kernel_from_glsl", s);
    assert_eq!(s, COEXEC_OK);
    Some(k.id)
}

fn static_buffer(e: coexec_engine, bytes: usize) -> u64 {
    let mut b = coexec_buffer::default();
    // SAFETY: a writable out pointer; no host pointer wanted.
    let s = unsafe { coexec_buffer_alloc(e, bytes / 4, 4, &mut b, null_mut()) };
    check_status("coexec_buffer_alloc", s);
    assert_eq!(s, COEXEC_OK);
    b.id
}

/// What lives for the whole process.
struct World {
    /// Engine ids: `main`, `other`, and one already destroyed (0 without a
    /// device).
    engines: [u64; 3],
    /// Kernels built at start-up (fixed, GPU-safe GLSL, or CPU only).
    kernels: Vec<u64>,
    /// Buffers of `other` and of the destroyed engine.
    buffers: Vec<u64>,
    /// `minImportedHostPointerAlignment` of `main` (0: no import).
    import_align: usize,
    /// Valid SPIR-V modules that fuzzed patches start from.
    spirv: Vec<Vec<u8>>,
}

impl World {
    fn new() -> Self {
        let mut w = World {
            engines: [0; 3],
            kernels: Vec::new(),
            buffers: Vec::new(),
            import_align: 0,
            spirv: [SAFE_1D, SAFE_2D]
                .iter()
                .map(|src| {
                    let words = ::coexec_engine::shader::compile_glsl(src, "template.comp")
                        .expect("the templates compile");
                    words.iter().flat_map(|w| w.to_le_bytes()).collect()
                })
                .collect(),
        };
        let Some(main) = create_engine(1) else {
            return w;
        };
        w.engines[0] = main.id;
        let mut info = MaybeUninit::<coexec_engine_info>::uninit();
        // SAFETY: a writable out pointer.
        let s = unsafe { coexec_engine_get_info(main, info.as_mut_ptr()) };
        check_status("coexec_engine_get_info", s);
        assert_eq!(s, COEXEC_OK);
        // SAFETY: filled on success.
        let info = unsafe { info.assume_init() };
        w.import_align = usize::try_from(info.host_import_alignment).unwrap_or(0);
        w.kernels.extend(static_kernel(main, SAFE_1D));
        w.kernels.extend(static_kernel(main, SAFE_2D));
        if let Some(other) = create_engine(0) {
            w.engines[1] = other.id;
            w.kernels.extend(static_kernel(other, SAFE_1D));
            w.buffers.push(static_buffer(other, 4096));
        }
        if let Some(dead) = create_engine(0) {
            w.engines[2] = dead.id;
            w.buffers.push(static_buffer(dead, 256));
            let mut k = coexec_kernel::default();
            // SAFETY: a valid function, a static counter and out pointer.
            let s = unsafe {
                coexec_kernel_cpu_only(
                    dead,
                    null(),
                    16,
                    1,
                    Some(count_items),
                    &STATIC_COUNTER as *const Counter as *mut c_void,
                    &mut k,
                )
            };
            check_status("coexec_kernel_cpu_only", s);
            assert_eq!(s, COEXEC_OK);
            w.kernels.push(k.id);
            let s = coexec_engine_destroy(dead);
            check_status("coexec_engine_destroy", s);
            assert_eq!(s, COEXEC_OK);
        }
        w
    }

    /// Objects the operations must not destroy: later inputs use them.
    fn protected(&self, id: u64) -> bool {
        id != 0
            && (self.engines[..2].contains(&id)
                || self.kernels.contains(&id)
                || self.buffers.contains(&id))
    }
}

fn world() -> &'static World {
    static WORLD: OnceLock<World> = OnceLock::new();
    WORLD.get_or_init(World::new)
}

/// Page-aligned memory owned here, lent to `coexec_buffer_import`.
struct HostMem {
    ptr: *mut u8,
    layout: Layout,
}

impl HostMem {
    fn new(bytes: usize, align: usize) -> Self {
        let layout = Layout::from_size_align(bytes, align).expect("small layout");
        // SAFETY: `bytes` > 0.
        let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
        assert!(!ptr.is_null(), "out of memory");
        HostMem { ptr, layout }
    }
}

impl Drop for HostMem {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with this layout; only dropped once no
        // buffer uses it (after `coexec_buffer_free` returned `COEXEC_OK`).
        unsafe { std::alloc::dealloc(self.ptr, self.layout) };
    }
}

/// A buffer created by this input.
struct Buf {
    id: u64,
    ptr: *mut u8,
    len: usize,
    /// The memory behind an imported buffer.
    mem: Option<HostMem>,
    live: bool,
}

/// A kernel created by this input.
struct Kern {
    id: u64,
    /// Its `user_data`, kept until the kernel is destroyed.
    counter: Option<Box<Counter>>,
    /// No GPU part: any device mask may be asked for.
    cpu_only: bool,
    live: bool,
}

/// The objects of one input.
struct State {
    world: &'static World,
    bufs: Vec<Buf>,
    kerns: Vec<Kern>,
    /// Every handle id seen (stale ones stay, for double frees).
    known: Vec<u64>,
}

impl State {
    fn new(world: &'static World) -> Self {
        let mut known = world.engines.to_vec();
        known.extend(&world.kernels);
        known.extend(&world.buffers);
        State {
            world,
            bufs: Vec::new(),
            kerns: Vec::new(),
            known,
        }
    }

    fn live_bufs(&self) -> usize {
        self.bufs.iter().filter(|b| b.live).count()
    }

    fn live_kerns(&self) -> usize {
        self.kerns.iter().filter(|k| k.live).count()
    }

    /// After `coexec_buffer_free(id)` returned `COEXEC_OK`.
    fn freed(&mut self, id: u64) {
        let b = self.bufs.iter_mut().find(|b| b.live && b.id == id);
        let b = b.unwrap_or_else(|| panic!("freed buffer {id}, which is not live"));
        b.live = false;
        b.mem = None;
    }

    /// After `coexec_kernel_destroy(id)` returned `COEXEC_OK`.
    fn destroyed(&mut self, id: u64) {
        let k = self.kerns.iter_mut().find(|k| k.live && k.id == id);
        let k = k.unwrap_or_else(|| panic!("destroyed kernel {id}, which is not live"));
        k.live = false;
        k.counter = None;
    }

    fn counter(&self, kernel: u64) -> Option<&Counter> {
        if self.world.kernels.contains(&kernel) {
            return Some(&STATIC_COUNTER);
        }
        self.kerns
            .iter()
            .find(|k| k.live && k.id == kernel)
            .and_then(|k| k.counter.as_deref())
    }

    /// Kernels the GPU may run with any arguments.
    fn gpu_safe(&self, kernel: u64) -> bool {
        self.world.kernels.contains(&kernel)
            || self.kerns.iter().any(|k| k.id == kernel && k.cpu_only)
    }
}

impl Drop for State {
    fn drop(&mut self) {
        if std::thread::panicking() {
            return;
        }
        for b in &mut self.bufs {
            if b.live {
                let s = coexec_buffer_free(coexec_buffer { id: b.id });
                check_status("coexec_buffer_free", s);
                assert_eq!(s, COEXEC_OK, "freeing live buffer {}", b.id);
                b.mem = None;
            }
        }
        for k in &mut self.kerns {
            if k.live {
                let s = coexec_kernel_destroy(coexec_kernel { id: k.id });
                check_status("coexec_kernel_destroy", s);
                assert_eq!(s, COEXEC_OK, "destroying live kernel {}", k.id);
                k.counter = None;
            }
        }
    }
}

/// Little-endian fields from the input; zeros past its end.
struct Input<'a> {
    data: &'a [u8],
}

impl<'a> Input<'a> {
    fn take<const N: usize>(&mut self) -> [u8; N] {
        let mut out = [0; N];
        let n = N.min(self.data.len());
        out[..n].copy_from_slice(&self.data[..n]);
        self.data = &self.data[n..];
        out
    }
    fn u8(&mut self) -> u8 {
        self.take::<1>()[0]
    }
    fn u16(&mut self) -> u16 {
        u16::from_le_bytes(self.take())
    }
    fn u32(&mut self) -> u32 {
        u32::from_le_bytes(self.take())
    }
    fn i32(&mut self) -> i32 {
        i32::from_le_bytes(self.take())
    }
    fn u64(&mut self) -> u64 {
        u64::from_le_bytes(self.take())
    }
    fn f64(&mut self) -> f64 {
        f64::from_le_bytes(self.take())
    }
    /// A `u16` length, then that many bytes (fewer at the end).
    fn bytes(&mut self) -> &'a [u8] {
        let n = usize::from(self.u16()).min(self.data.len());
        let (b, rest) = self.data.split_at(n);
        self.data = rest;
        b
    }
    /// A handle id: a known one, null, or raw.
    fn handle(&mut self, known: &[u64]) -> u64 {
        match self.u8() % 4 {
            1 => 0,
            2 => self.u64(),
            _ => known[usize::from(self.u8()) % known.len()],
        }
    }
}

/// A NUL-terminated copy of `b`, cut at its first NUL (C strings cannot hold
/// one).
fn c_string(b: &[u8]) -> CString {
    let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
    CString::new(&b[..end]).expect("no interior NUL")
}

/// `p` for a non-null string, else NULL.
fn c_ptr(s: &CString, null_it: bool) -> *const c_char {
    if null_it {
        null()
    } else {
        s.as_ptr()
    }
}

fn out_ptr<T>(out: &mut T, null_it: bool) -> *mut T {
    if null_it {
        null_mut()
    } else {
        out
    }
}

fn run_op(st: &mut State, op: u8, inp: &mut Input<'_>) {
    match op % 16 {
        0 => op_alloc(st, inp),
        1 => op_import(st, inp),
        2 => {
            let id = inp.handle(&st.known);
            if !st.world.protected(id) {
                let s = coexec_buffer_free(coexec_buffer { id });
                check_status("coexec_buffer_free", s);
                if s == COEXEC_OK {
                    st.freed(id);
                }
            }
        }
        3 => op_buffer_info(st, inp),
        4 => op_write(st, inp),
        5 => op_kernel_glsl(st, inp),
        6 | 7 => op_kernel_spirv(st, inp, op % 16 == 7),
        8 => op_kernel_cpu(st, inp),
        9 => {
            let id = inp.handle(&st.known);
            if !st.world.protected(id) {
                let s = coexec_kernel_destroy(coexec_kernel { id });
                check_status("coexec_kernel_destroy", s);
                if s == COEXEC_OK {
                    st.destroyed(id);
                }
            }
        }
        10 => {
            let id = inp.handle(&st.known);
            if !st.world.protected(id) {
                let s = coexec_engine_destroy(coexec_engine { id });
                check_status("coexec_engine_destroy", s);
                assert_ne!(s, COEXEC_OK, "destroyed engine {id}, which is not live");
            }
        }
        11 => op_engine_info(st, inp),
        12 => op_engine_create_invalid(inp),
        13 => op_run(st, inp),
        14 => check_name(inp.i32()),
        _ => {
            let p = coexec_version();
            // SAFETY: coexec returns a static NUL-terminated string.
            let v = unsafe { CStr::from_ptr(p) };
            assert!(v.to_str().is_ok_and(|v| !v.is_empty()));
        }
    }
}

/// Records a buffer `coexec_buffer_alloc` or `coexec_buffer_import` returned.
fn record_buffer(st: &mut State, id: u64, ptr: *mut u8, len: usize, mem: Option<HostMem>) {
    assert_ne!(id, 0, "success with a null handle");
    assert!(!st.known.contains(&id), "handle {id} reused");
    st.known.push(id);
    st.bufs.push(Buf {
        id,
        ptr,
        len,
        mem,
        live: true,
    });
}

/// Fields: engine handle, count `u32`, elem_size `u8`, flags `u8` (1: out
/// NULL, 2: host_ptr NULL, 4: a size from a list of extreme ones).
fn op_alloc(st: &mut State, inp: &mut Input<'_>) {
    let engine = coexec_engine {
        id: inp.handle(&st.known),
    };
    let (count, elem, flags) = (inp.u32() as usize, usize::from(inp.u8()), inp.u8());
    let (count, elem) = if flags & 4 != 0 {
        const EXTREME: [(usize, usize); 6] = [
            (usize::MAX, 2),
            (1 << 62, 8),
            (1 << 48, 1),
            (0, 4),
            (4, 0),
            (usize::MAX, 1),
        ];
        EXTREME[count % EXTREME.len()]
    } else {
        let elem = elem % 17;
        (count % (MAX_BUFFER_BYTES / elem.max(1) + 1), elem)
    };
    if st.live_bufs() >= MAX_SLOTS {
        return;
    }
    let mut b = coexec_buffer { id: u64::MAX };
    let mut host: *mut c_void = null_mut();
    let out = out_ptr(&mut b, flags & 1 != 0);
    let host_out = out_ptr(&mut host, flags & 2 != 0);
    // SAFETY: out pointers NULL or valid.
    let s = unsafe { coexec_buffer_alloc(engine, count, elem, out, host_out) };
    check_status("coexec_buffer_alloc", s);
    if s == COEXEC_OK {
        // Both non-null here: with a NULL `out` the call fails.
        assert!(flags & 2 != 0 || !host.is_null(), "no host pointer");
        let ptr = if flags & 2 != 0 {
            null_mut()
        } else {
            host.cast()
        };
        record_buffer(st, b.id, ptr, count * elem, None);
    } else if flags & 1 == 0 {
        assert_eq!(b.id, 0, "out not nulled on failure");
    }
}

/// Fields: engine handle, pages `u8`, pointer offset `u16`, size offset
/// `u16` (each used only with its top bit set), elem_size `u8`, flags `u8`
/// (1: out NULL, 2: host_ptr NULL).
fn op_import(st: &mut State, inp: &mut Input<'_>) {
    let engine = coexec_engine {
        id: inp.handle(&st.known),
    };
    let pages = usize::from(inp.u8() % 16) + 1;
    let (ptr_off, size_off) = (usize::from(inp.u16()), usize::from(inp.u16()));
    let (elem, flags) = (usize::from(inp.u8() % 17), inp.u8());
    if st.live_bufs() >= MAX_SLOTS {
        return;
    }
    let align = st.world.import_align.clamp(4096, 1 << 16);
    let total = pages * align;
    let ptr_off = if ptr_off & 0x8000 != 0 {
        ptr_off % align
    } else {
        0
    };
    let size_off = if size_off & 0x8000 != 0 {
        size_off % align
    } else {
        0
    };
    let bytes = total - ptr_off - size_off.min(total - ptr_off);
    let count = bytes.checked_div(elem).unwrap_or(1);
    let mem = HostMem::new(total, align);
    // SAFETY: `ptr_off < align <= total`: inside the allocation.
    let ptr = unsafe { mem.ptr.add(ptr_off) };
    let host = if flags & 2 != 0 { null_mut() } else { ptr };
    let mut b = coexec_buffer { id: u64::MAX };
    let out = out_ptr(&mut b, flags & 1 != 0);
    // SAFETY: `host` is NULL or points to `count * elem <= total - ptr_off`
    // bytes owned by `mem`, kept (in the buffer's record) until the buffer is
    // freed; `out` is NULL or valid.
    let s = unsafe { coexec_buffer_import(engine, host.cast(), count, elem, out) };
    check_status("coexec_buffer_import", s);
    if s == COEXEC_OK {
        record_buffer(st, b.id, ptr, count * elem, Some(mem));
    } else if flags & 1 == 0 {
        assert_eq!(b.id, 0, "out not nulled on failure");
    }
}

/// Fields: buffer handle, flags `u8` (1: out NULL).
fn op_buffer_info(st: &mut State, inp: &mut Input<'_>) {
    let id = inp.handle(&st.known);
    let null_out = inp.u8() & 1 != 0;
    let mut info = MaybeUninit::<coexec_buffer_info>::uninit();
    let out = if null_out {
        null_mut()
    } else {
        info.as_mut_ptr()
    };
    // SAFETY: `out` is NULL or valid for a write.
    let s = unsafe { coexec_buffer_get_info(coexec_buffer { id }, out) };
    check_status("coexec_buffer_get_info", s);
    if s != COEXEC_OK {
        return;
    }
    // SAFETY: filled on success.
    let info = unsafe { info.assume_init() };
    assert_eq!(info.size_bytes, info.count * info.elem_size);
    if let Some(b) = st.bufs.iter().find(|b| b.live && b.id == id) {
        assert_eq!(info.size_bytes, b.len);
        assert!(
            b.ptr.is_null() || b.ptr == info.host_ptr.cast(),
            "host pointer moved"
        );
        assert_eq!(info.imported, b.mem.is_some());
    }
}

/// Writes bytes into a live buffer's host memory (allowed: no run is in
/// flight). Fields: buffer index `u8`, offset `u32`, bytes.
fn op_write(st: &mut State, inp: &mut Input<'_>) {
    let (i, off, data) = (usize::from(inp.u8()), inp.u32() as usize, inp.bytes());
    let live: Vec<&Buf> = st
        .bufs
        .iter()
        .filter(|b| b.live && !b.ptr.is_null())
        .collect();
    if live.is_empty() || data.is_empty() {
        return;
    }
    let b = live[i % live.len()];
    let off = off % b.len;
    let n = data.len().min(b.len - off);
    // SAFETY: the buffer is live, its host memory holds `b.len` bytes, and no
    // run is in flight; `off + n <= b.len`.
    unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), b.ptr.add(off), n) };
}

/// Records a kernel a constructor returned.
fn record_kernel(st: &mut State, id: u64, counter: Box<Counter>, cpu_only: bool) {
    assert_ne!(id, 0, "success with a null handle");
    assert!(!st.known.contains(&id), "handle {id} reused");
    st.known.push(id);
    st.kerns.push(Kern {
        id,
        counter: Some(counter),
        cpu_only,
        live: true,
    });
}

/// Kernel flags `u8`: 1 with the CPU function, 2 name NULL, 4 source NULL, 8
/// out NULL.
struct KernelFlags {
    cpu: coexec_cpu_fn,
    name_null: bool,
    src_null: bool,
    out_null: bool,
}

impl KernelFlags {
    fn read(inp: &mut Input<'_>) -> Self {
        let f = inp.u8();
        KernelFlags {
            cpu: (f & 1 != 0).then_some(count_items as _),
            name_null: f & 2 != 0,
            src_null: f & 4 != 0,
            out_null: f & 8 != 0,
        }
    }
}

/// Fields: engine handle, flags, name bytes, GLSL bytes.
fn op_kernel_glsl(st: &mut State, inp: &mut Input<'_>) {
    let engine = coexec_engine {
        id: inp.handle(&st.known),
    };
    let f = KernelFlags::read(inp);
    let (name, src) = (c_string(inp.bytes()), c_string(inp.bytes()));
    if trace() {
        eprintln!("GLSL {name:?}: {src:?}");
    }
    if st.live_kerns() >= MAX_SLOTS {
        return;
    }
    let counter = Box::<Counter>::default();
    let mut k = coexec_kernel { id: u64::MAX };
    // SAFETY: strings NULL or NUL-terminated; `count_items` keeps the CPU
    // rules; the counter is kept until the kernel is destroyed; out NULL or
    // valid.
    let s = unsafe {
        coexec_kernel_from_glsl(
            engine,
            c_ptr(&name, f.name_null),
            c_ptr(&src, f.src_null),
            f.cpu,
            &*counter as *const Counter as *mut c_void,
            out_ptr(&mut k, f.out_null),
        )
    };
    check_status("coexec_kernel_from_glsl", s);
    if s == COEXEC_OK {
        record_kernel(st, k.id, counter, false);
    } else if !f.out_null {
        assert_eq!(k.id, 0, "out not nulled on failure");
    }
}

/// Fields: engine handle, flags, name bytes, then SPIR-V bytes, or (patched)
/// a template index `u8` and up to 8 patches (count `u8`, each a word index
/// `u16` and a value `u32`).
fn op_kernel_spirv(st: &mut State, inp: &mut Input<'_>, patched: bool) {
    let engine = coexec_engine {
        id: inp.handle(&st.known),
    };
    let f = KernelFlags::read(inp);
    let name = c_string(inp.bytes());
    let spirv: Vec<u8> = if patched {
        let t = &st.world.spirv[usize::from(inp.u8()) % st.world.spirv.len()];
        let mut t = t.clone();
        for _ in 0..inp.u8() % 9 {
            let (at, value) = (usize::from(inp.u16()) % (t.len() / 4), inp.u32());
            t[at * 4..at * 4 + 4].copy_from_slice(&value.to_le_bytes());
        }
        t
    } else {
        inp.bytes().to_vec()
    };
    if trace() {
        let hex: String = spirv.iter().map(|b| format!("{b:02x}")).collect();
        eprintln!("SPIR-V {name:?}: {hex}");
    }
    if st.live_kerns() >= MAX_SLOTS {
        return;
    }
    let counter = Box::<Counter>::default();
    let mut k = coexec_kernel { id: u64::MAX };
    let ptr = if f.src_null {
        null()
    } else {
        spirv.as_ptr().cast()
    };
    // SAFETY: `ptr` is NULL or valid for `spirv.len()` bytes; the rest as in
    // `op_kernel_glsl`.
    let s = unsafe {
        coexec_kernel_from_spirv(
            engine,
            c_ptr(&name, f.name_null),
            ptr,
            spirv.len(),
            f.cpu,
            &*counter as *const Counter as *mut c_void,
            out_ptr(&mut k, f.out_null),
        )
    };
    check_status("coexec_kernel_from_spirv", s);
    if s == COEXEC_OK {
        record_kernel(st, k.id, counter, false);
    } else if !f.out_null {
        assert_eq!(k.id, 0, "out not nulled on failure");
    }
}

/// Fields: engine handle, flags (1 here means the CPU function NULL), name
/// bytes, local_x `u32`, local_y `u32`.
fn op_kernel_cpu(st: &mut State, inp: &mut Input<'_>) {
    let engine = coexec_engine {
        id: inp.handle(&st.known),
    };
    let f = KernelFlags::read(inp);
    let name = c_string(inp.bytes());
    let (x, y) = (inp.u32(), inp.u32());
    if st.live_kerns() >= MAX_SLOTS {
        return;
    }
    let cpu: coexec_cpu_fn = if f.cpu.is_some() {
        None
    } else {
        Some(count_items)
    };
    let counter = Box::<Counter>::default();
    let mut k = coexec_kernel { id: u64::MAX };
    // SAFETY: as in `op_kernel_glsl`.
    let s = unsafe {
        coexec_kernel_cpu_only(
            engine,
            c_ptr(&name, f.name_null),
            x,
            y,
            cpu,
            &*counter as *const Counter as *mut c_void,
            out_ptr(&mut k, f.out_null),
        )
    };
    check_status("coexec_kernel_cpu_only", s);
    if s == COEXEC_OK {
        record_kernel(st, k.id, counter, true);
    } else if !f.out_null {
        assert_eq!(k.id, 0, "out not nulled on failure");
    }
}

/// Fields: engine handle, flags `u8` (1: out NULL).
fn op_engine_info(st: &mut State, inp: &mut Input<'_>) {
    let id = inp.handle(&st.known);
    let null_out = inp.u8() & 1 != 0;
    let mut info = MaybeUninit::<coexec_engine_info>::uninit();
    let out = if null_out {
        null_mut()
    } else {
        info.as_mut_ptr()
    };
    // SAFETY: `out` is NULL or valid for a write.
    let s = unsafe { coexec_engine_get_info(coexec_engine { id }, out) };
    check_status("coexec_engine_get_info", s);
    if s == COEXEC_OK {
        // SAFETY: filled on success.
        let info = unsafe { info.assume_init() };
        assert_eq!(
            info.device_name[COEXEC_NAME_MAX - 1],
            0,
            "name not terminated"
        );
    }
}

/// `coexec_engine_create` with options of which at least one is invalid, so
/// that no Vulkan device is ever created here. Fields: which `u8`, workers
/// `i32`, allocator `u32`, validation `u32`, gpu_index `i32`, gpu_in_flight
/// `u32`, gpu_timeout_s `f64`, flags `u8` (1: options NULL, 2: out NULL,
/// 4: cache dir NULL), cache dir bytes.
fn op_engine_create_invalid(inp: &mut Input<'_>) {
    let which = inp.u8();
    let mut o = coexec_engine_options_default();
    o.workers = inp.i32();
    o.allocator = inp.u32();
    o.validation = inp.u32();
    o.gpu_index = inp.i32();
    o.gpu_in_flight = inp.u32();
    o.gpu_timeout_s = inp.f64();
    let flags = inp.u8();
    let mut dir = c_string(inp.bytes()).into_bytes();
    match which % 8 {
        0 => o.workers = o.workers.min(-2),
        1 => o.allocator = o.allocator.max(2),
        2 => o.validation = o.validation.max(4),
        3 => o.gpu_index = o.gpu_index.min(-3), // -1: every GPU, -2: the best one
        4 => o.gpu_timeout_s = f64::INFINITY,
        5 => o.gpu_timeout_s = f64::NAN,
        6 => o.gpu_in_flight = o.gpu_in_flight.max(COEXEC_MAX_GPU_IN_FLIGHT + 1),
        _ => dir.push(0xff), // not UTF-8
    }
    let dir = CString::new(dir).expect("no NUL");
    o.pipeline_cache_dir = c_ptr(&dir, flags & 4 != 0 && which % 8 != 7);
    // Options NULL means the defaults, which would create a device: only
    // with a NULL `out`, which fails first.
    let options: *const coexec_engine_options = if flags & 3 == 3 { null() } else { &o };
    let mut e = coexec_engine { id: u64::MAX };
    // SAFETY: `options` is NULL or valid (its string NUL-terminated and alive
    // during the call); `out` is NULL or valid.
    let s = unsafe { coexec_engine_create(options, out_ptr(&mut e, flags & 2 != 0)) };
    check_status("coexec_engine_create", s);
    assert_ne!(s, COEXEC_OK, "an engine was created from invalid options");
    if flags & 2 == 0 {
        assert_eq!(e.id, 0, "out not nulled on failure");
    }
}

/// Fields: engine handle, kernel handle, argument count `u8` (`% 9`), each
/// a buffer handle, access `u8` (below 0x80: `& 1`, else raw) and per_item
/// `u8` (below 0xf8: `% 5`, else extreme); flags `u8` (1 args NULL, 2 push
/// NULL, 4 scheduler NULL, 8 report NULL, 16 powers NULL); push bytes; dims
/// `u8` (`% 4`); width and height `u64` (bounded to 4096 items unless the
/// top bit is set in 2-D, which is refused); scheduler kind `u8` (below
/// 0xf0: `% 3`, else raw), packages `u64`, k `f64`, min_package `u64` (both
/// `% 64` unless the top bit is set), power count `u8` (`% 5`) and powers
/// `f64`; devices `u8` (below 0xf0: `% 4`, else invalid bits).
fn op_run(st: &mut State, inp: &mut Input<'_>) {
    let engine = coexec_engine {
        id: inp.handle(&st.known),
    };
    let kernel = coexec_kernel {
        id: inp.handle(&st.known),
    };
    let args: Vec<coexec_arg> = (0..inp.u8() % 9)
        .map(|_| {
            let buffer = coexec_buffer {
                id: inp.handle(&st.known),
            };
            let access = match inp.u8() {
                a @ 0..0x80 => u32::from(a & 1),
                a => u32::from(a),
            };
            let per_item = match inp.u8() {
                p @ 0..0xf8 => u64::from(p % 5),
                p => [
                    u64::MAX,
                    1 << 63,
                    1 << 62,
                    1 << 32,
                    1 << 20,
                    u64::MAX / 3,
                    3,
                    7,
                ][usize::from(p - 0xf8)],
            };
            coexec_arg {
                buffer,
                access,
                per_item,
            }
        })
        .collect();
    let flags = inp.u8();
    let push = inp.bytes();
    let dims = u32::from(inp.u8() % 4);
    let (w, h) = (inp.u64(), inp.u64());
    let (width, height) = if dims == 2 {
        let width = if w >> 63 != 0 { w } else { w % (MAX_ITEMS + 1) };
        let height = if h >> 63 != 0 {
            h
        } else {
            h % (MAX_ITEMS / width.clamp(1, MAX_ITEMS) + 1)
        };
        (width, height)
    } else {
        (w % (MAX_ITEMS + 1), h)
    };
    let space = coexec_index_space {
        dims,
        width,
        height,
    };
    let kind = match inp.u8() {
        k @ 0..0xf0 => u32::from(k % 3),
        k => u32::from(k),
    };
    let small = |v: u64| if v >> 63 != 0 { v } else { v % 64 };
    let (packages, k, min_package) = (small(inp.u64()), inp.f64(), small(inp.u64()));
    let powers: Vec<f64> = (0..inp.u8() % 5).map(|_| inp.f64()).collect();
    let sched = coexec_scheduler {
        kind,
        packages,
        k,
        min_package,
        powers: if flags & 16 != 0 {
            null()
        } else {
            powers.as_ptr()
        },
        num_powers: powers.len(),
    };
    let mut devices = match inp.u8() {
        d @ 0..0xf0 => u32::from(d % 4),
        d => u32::from(d) << 4,
    };
    if devices & 2 != 0 && !st.gpu_safe(kernel.id) {
        // A fuzzed shader may access memory out of bounds: CPU only.
        devices = (devices & !2) | 1;
    }

    let items = match dims {
        1 => width,
        2 => width.saturating_mul(height),
        _ => 0,
    };
    RUN_ITEMS.store(items, Relaxed);
    RUN_PUSH_HASH.store(fnv1a(push), Relaxed);
    let counter = st.counter(kernel.id);
    let before = counter.map(|c| c.items.load(Relaxed));
    let mut report = MaybeUninit::<coexec_report>::uninit();
    // SAFETY: every pointer is NULL or valid for its count (`args`, `push`,
    // `powers` outlive the call); `report` is NULL or writable; imported
    // memory and `user_data` of the kernels are alive; the CPU function
    // writes nothing.
    let s = unsafe {
        coexec_run(
            engine,
            kernel,
            if flags & 1 != 0 {
                null()
            } else {
                args.as_ptr()
            },
            args.len(),
            if flags & 2 != 0 {
                null()
            } else {
                push.as_ptr().cast()
            },
            push.len(),
            space,
            if flags & 4 != 0 { null() } else { &sched },
            devices,
            if flags & 8 != 0 {
                null_mut()
            } else {
                report.as_mut_ptr()
            },
        )
    };
    check_status("coexec_run", s);
    if s != COEXEC_OK {
        return;
    }
    let counted = match (counter, before) {
        (Some(c), Some(b)) => Some(c.items.load(Relaxed) - b),
        _ => None,
    };
    if flags & 8 != 0 {
        assert!(
            counted.is_none_or(|n| n <= items),
            "more items run than exist"
        );
        return;
    }
    // SAFETY: filled on success.
    let r = unsafe { report.assume_init() };
    assert_eq!(r.items, items, "report items");
    assert!(r.num_devices as usize <= COEXEC_MAX_DEVICES);
    let devs = &r.devices[..r.num_devices as usize];
    if devs.iter().all(|d| !d.failed) {
        let sum: u64 = devs.iter().map(|d| d.items).sum();
        assert_eq!(sum, items, "device items do not add up");
    }
    if let Some(n) = counted {
        let cpu: u64 = devs
            .iter()
            .filter(|d| d.kind == coexec_device_kind::COEXEC_DEVICE_KIND_CPU)
            .map(|d| d.items)
            .sum();
        assert_eq!(n, cpu, "CPU items counted vs reported");
    }
}

fuzz_target!(|data: &[u8]| {
    let mut st = State::new(world());
    let mut inp = Input { data };
    for _ in 0..MAX_OPS {
        if inp.data.is_empty() {
            break;
        }
        let op = inp.u8();
        run_op(&mut st, op, &mut inp);
    }
    // `st` drops here: the input's buffers and kernels are freed.
});
