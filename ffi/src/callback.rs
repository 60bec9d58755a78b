//! The C CPU function of a kernel: how the engine's CPU closure calls it,
//! hands it the run's arguments, and learns that it failed.
//!
//! A kernel is built once, but every run brings its own buffers: the run
//! attaches a [`RunView`] (the C view of its buffers) to its `Args` as the
//! engine's per-run context, and the kernel's closure passes it on to C.

use super::types::{coexec_access, coexec_cpu_args, coexec_cpu_buffer, coexec_package};
use ::coexec_engine::{CpuArgs, CpuFn, Package};
use std::cell::Cell;
use std::ffi::c_void;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::Arc;

thread_local! {
    /// Set while this thread runs a C CPU function (to refuse `coexec_run`
    /// from inside one, which would deadlock).
    static IN_CPU_FN: Cell<bool> = const { Cell::new(false) };
}

/// `true` while this thread is inside a C CPU function.
pub(crate) fn in_cpu_fn() -> bool {
    IN_CPU_FN.with(Cell::get)
}

/// The C signature of a CPU function (`coexec_cpu_fn` without the `Option`).
type RawCpuFn =
    unsafe extern "C" fn(*const coexec_package, *const coexec_cpu_args, *mut c_void) -> i32;

/// One run as its C CPU function sees it: the buffer arguments, and the
/// first non-zero value the function returned.
pub(crate) struct RunView {
    buffers: Vec<coexec_cpu_buffer>,
    /// Indices of the reduction arguments, whose `data` is each call's
    /// accumulator.
    reductions: Vec<usize>,
    code: AtomicI32,
}

// SAFETY: the raw pointers are the run's buffers' host addresses; coexec
// never dereferences them, it only hands them to the C function, whose
// contract says which elements each call may touch. The run holds the
// buffers' locks while the view is in use.
unsafe impl Sync for RunView {}
// SAFETY: as above; the view is moved only between the run's own threads.
unsafe impl Send for RunView {}

impl RunView {
    pub(crate) fn new(buffers: Vec<coexec_cpu_buffer>) -> Self {
        let reductions = (buffers.iter().enumerate())
            .filter(|(_, b)| b.access & 0xff > coexec_access::COEXEC_ACCESS_OUTPUT as u32)
            .map(|(i, _)| i)
            .collect();
        RunView {
            buffers,
            reductions,
            code: AtomicI32::new(0),
        }
    }

    /// The first non-zero value a call returned in this run (0: none).
    pub(crate) fn code(&self) -> i32 {
        // Relaxed: read after the run returned, and the run returns only after
        // every worker finished (the pool's join orders their writes before).
        self.code.load(Ordering::Relaxed)
    }

    /// Keeps `code` if it is the run's first failure.
    fn record(&self, code: i32) {
        // Relaxed: only the value matters (see `code`); the first writer wins.
        let _ = self
            .code
            .compare_exchange(0, code, Ordering::Relaxed, Ordering::Relaxed);
    }
}

/// A C CPU function with its user data.
struct CpuCallback {
    f: RawCpuFn,
    user_data: *mut c_void,
}

// SAFETY: the C side owns `user_data` and, per the documented contract of the
// kernel constructors, makes whatever it points to safe to use from several
// threads at once and keeps it alive until the kernel is destroyed; coexec
// never dereferences it, only passes it back.
unsafe impl Send for CpuCallback {}
// SAFETY: as above; `call` takes `&self` and only copies the two pointers.
unsafe impl Sync for CpuCallback {}

/// The C description of `pkg`.
fn c_package(pkg: &Package) -> coexec_package {
    let rows = pkg.rows.clone().unwrap_or(0..0);
    coexec_package {
        item_start: pkg.items.start,
        item_end: pkg.items.end,
        unit_start: pkg.units.start,
        unit_end: pkg.units.end,
        row_start: rows.start,
        row_end: rows.end,
        width: pkg.width,
        dims: if pkg.rows.is_some() { 2 } else { 1 },
        col_start: pkg.cols.start,
        col_end: pkg.cols.end,
    }
}

impl CpuCallback {
    fn call(&self, pkg: &Package, args: &mut CpuArgs<'_>) {
        let Some(view) = args.context().and_then(|c| c.downcast_ref::<RunView>()) else {
            args.fail("the run has no C view of its arguments (a coexec bug)");
            return;
        };
        let push = args.push_bytes();
        // With reductions, this call's own view: each one's accumulator.
        let mut own = Vec::new();
        if !view.reductions.is_empty() {
            own.extend_from_slice(&view.buffers);
            for &i in &view.reductions {
                if let Some(acc) = args.accumulator_bytes(i) {
                    own[i].data = acc.as_mut_ptr().cast();
                }
            }
        }
        let buffers = if own.is_empty() { &view.buffers } else { &own };
        let cargs = coexec_cpu_args {
            buffers: buffers.as_ptr(),
            num_buffers: view.buffers.len(),
            push: if push.is_empty() {
                std::ptr::null()
            } else {
                push.as_ptr().cast()
            },
            push_size: push.len(),
        };
        let p = c_package(pkg);
        IN_CPU_FN.with(|c| c.set(true));
        // SAFETY: `f` is the non-null function pointer C gave with this
        // `user_data`; `p`, `cargs` and what they point to (the view, the
        // push bytes) outlive the call. The C function must not unwind
        // (documented); if it does, the `extern "C"` boundary aborts rather
        // than unwinding into Rust.
        let code = unsafe { (self.f)(&p, &cargs, self.user_data) };
        IN_CPU_FN.with(|c| c.set(false));
        if code != 0 {
            view.record(code);
            args.fail(format!(
                "the CPU function returned {code} on items {}..{}",
                pkg.items.start, pkg.items.end
            ));
        }
    }
}

/// The engine's CPU closure for a C function (`None` for NULL).
pub(crate) fn cpu_fn(f: Option<RawCpuFn>, user_data: *mut c_void) -> Option<Arc<CpuFn>> {
    let cb = CpuCallback { f: f?, user_data };
    let f: Arc<CpuFn> = Arc::new(move |pkg: &Package, args: &mut CpuArgs<'_>| cb.call(pkg, args));
    Some(f)
}
