//! Programs of several kernels through the C ABI: `coexec_program_create`,
//! `coexec_program_add_run`, `coexec_program_add_host`, `coexec_program_run`
//! and `coexec_program_destroy` (see `coexec_engine::Program` for what a
//! program does that a loop of `coexec_run` calls does not).

#![allow(non_camel_case_types)]

use super::handles::{self, Registry, ENGINES};
use super::run::{engine_and_kernel, run_args, RunCall};
use super::status::{guard, FfiError, FfiResult};
use super::types::coexec_status::*;
use super::types::*;
use super::{null, put, slice};
use std::ffi::c_void;
use std::sync::Mutex;

/// A program handle. `{0}` is the null handle.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct coexec_program {
    /// Opaque identifier.
    pub id: u64,
}

/// A host step of a program: called on the thread of `coexec_program_run`
/// between the steps around it, with the iteration (from 0) and the
/// `user_data` given with it. Returns `COEXEC_HOST_CONTINUE` (0) to go on,
/// `COEXEC_HOST_STOP` (1) to end the program after this step (no later step
/// runs; `coexec_program_run` returns `COEXEC_OK`), anything else to fail
/// it (`COEXEC_ERROR_KERNEL_FAILED`). It may read and write the program's
/// buffers and the push-constant structs its runs point to; it must not
/// call `coexec_program_run` on the same program.
pub type coexec_host_fn =
    Option<unsafe extern "C" fn(iteration: u64, user_data: *mut c_void) -> i32>;

/// A host step's return: go on with the next step.
pub const COEXEC_HOST_CONTINUE: i32 = 0;
/// A host step's return: stop the program after this step.
pub const COEXEC_HOST_STOP: i32 = 1;

/// One step of a C program.
enum CStep {
    /// A run: `coexec_run`'s arguments, the buffers copied, `push` the
    /// caller's pointer (read at each run).
    Run {
        kernel: coexec_kernel,
        args: Vec<coexec_arg>,
        push: *const c_void,
        push_size: usize,
        space: coexec_index_space,
        sched: Option<(coexec_scheduler, Vec<f64>)>,
        devices: u32,
    },
    /// A host callback.
    Host {
        f: unsafe extern "C" fn(u64, *mut c_void) -> i32,
        user_data: *mut c_void,
    },
}

/// A program behind a handle.
pub(crate) struct ProgramObj {
    engine: coexec_engine,
    steps: Mutex<Vec<CStep>>,
}

// SAFETY: the raw pointers (push constants, user data) are only
// dereferenced by the C code and by runs of this program, on the thread of
// `coexec_program_run`; the caller's contract (documented on
// `coexec_program_add_run` and `coexec_program_add_host`) makes them valid
// there for as long as the program lives. The steps are behind a mutex.
unsafe impl Send for ProgramObj {}
// SAFETY: as for `Send`: shared access goes through the mutex.
unsafe impl Sync for ProgramObj {}

static PROGRAMS: Registry<ProgramObj> = Registry::new("program");

/// Creates an empty program of `engine` in `*out` (the null handle on
/// failure).
///
/// # Safety
/// `out` is writable (NULL is rejected with `COEXEC_ERROR_NULL_POINTER`).
#[no_mangle]
pub unsafe extern "C" fn coexec_program_create(
    engine: coexec_engine,
    out: *mut coexec_program,
) -> coexec_status {
    guard("coexec_program_create", || {
        // SAFETY: NULL (checked) or writable per the contract.
        unsafe { put(out, coexec_program::default(), "out") }?;
        ENGINES.get(engine.id)?;
        let id = PROGRAMS.insert(ProgramObj {
            engine,
            steps: Mutex::new(Vec::new()),
        });
        // SAFETY: as above.
        unsafe { put(out, coexec_program { id }, "out") }
    })
}

/// Adds a run step: `kernel` over `space` with `coexec_run`'s arguments.
/// `args[0..num_args]` and `*sched` (with its powers) are copied now; the
/// handles are checked now and again at each run. `push[0..push_size]` is
/// read at each run of the step, so a host step may change the struct it
/// points to (the scalars of an iterative solver): it must stay valid
/// until the program is destroyed.
///
/// # Safety
/// As for `coexec_run`; `push` stays valid while the program lives.
#[no_mangle]
pub unsafe extern "C" fn coexec_program_add_run(
    program: coexec_program,
    kernel: coexec_kernel,
    args: *const coexec_arg,
    num_args: usize,
    push: *const c_void,
    push_size: usize,
    space: coexec_index_space,
    sched: *const coexec_scheduler,
    devices: u32,
) -> coexec_status {
    guard("coexec_program_add_run", || {
        let p = PROGRAMS.get(program.id)?;
        engine_and_kernel(p.engine, kernel)?;
        // SAFETY: NULL or readable for `num_args` per the contract.
        let args = unsafe { run_args(args, num_args) }?.to_vec();
        if push.is_null() && push_size > 0 {
            return Err(null("push"));
        }
        let sched = match sched.is_null() {
            true => None,
            // SAFETY: non-null and readable per the contract.
            false => Some(unsafe { copy_scheduler(sched) }?),
        };
        let step = CStep::Run {
            kernel,
            args,
            push,
            push_size,
            space,
            sched,
            devices,
        };
        lock(&p.steps).push(step);
        Ok(())
    })
}

/// Adds a host step: `f(iteration, user_data)` (see `coexec_host_fn`).
///
/// # Safety
/// `user_data` is whatever `f` expects; both stay valid while the program
/// lives. A NULL `f` is rejected with `COEXEC_ERROR_NULL_POINTER`.
#[no_mangle]
pub unsafe extern "C" fn coexec_program_add_host(
    program: coexec_program,
    f: coexec_host_fn,
    user_data: *mut c_void,
) -> coexec_status {
    guard("coexec_program_add_host", || {
        let p = PROGRAMS.get(program.id)?;
        let f = f.ok_or_else(|| null("f"))?;
        lock(&p.steps).push(CStep::Host { f, user_data });
        Ok(())
    })
}

/// Runs the program's steps in order, `iterations` times or until a host
/// step returns `COEXEC_HOST_STOP`, with the engine's workers held awake
/// between steps. Writes the iterations started to `*done` (may be NULL).
/// A failing step stops the program: its status is returned, and
/// `coexec_last_error()` names the step (from 0), its iteration and the
/// cause.
///
/// # Safety
/// Each step's pointers are valid, as `coexec_program_add_run` and
/// `coexec_program_add_host` say; `done` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn coexec_program_run(
    program: coexec_program,
    iterations: u64,
    done: *mut u64,
) -> coexec_status {
    guard("coexec_program_run", || {
        let p = PROGRAMS.get(program.id)?;
        let engine = {
            let eobj = ENGINES.get(p.engine.id)?;
            let g = handles::read(&eobj.engine, "engine")?;
            g.as_ref().expect("checked by read").clone()
        };
        let _awake = engine.keep_awake();
        // Held for the whole run: a second run of the program from another
        // thread waits.
        let steps = lock(&p.steps);
        let mut started = 0;
        let result = run_steps(&p, &steps, iterations, &mut started);
        if !done.is_null() {
            // SAFETY: non-null and writable per the contract.
            unsafe { put(done, started, "done") }?;
        }
        result
    })
}

/// Destroys a program (not its kernels and buffers).
/// `COEXEC_ERROR_INVALID_HANDLE` for a null or destroyed handle.
#[no_mangle]
pub extern "C" fn coexec_program_destroy(program: coexec_program) -> coexec_status {
    guard("coexec_program_destroy", || {
        PROGRAMS.remove(program.id)?;
        Ok(())
    })
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// A copy of `*sched` with its powers.
///
/// # Safety
/// `sched` is readable, its `powers` NULL or readable for `num_powers`.
unsafe fn copy_scheduler(
    sched: *const coexec_scheduler,
) -> FfiResult<(coexec_scheduler, Vec<f64>)> {
    // SAFETY: readable per the contract.
    let s = unsafe { sched.read_unaligned() };
    // SAFETY: NULL (then `num_powers` must be 0) or readable per the contract.
    let powers = unsafe { slice(s.powers, s.num_powers, "sched->powers") }?.to_vec();
    Ok((s, powers))
}

/// The iterations of a program; `started` counts them.
fn run_steps(p: &ProgramObj, steps: &[CStep], iterations: u64, started: &mut u64) -> FfiResult {
    for iteration in 0..iterations {
        *started = iteration + 1;
        for (index, step) in steps.iter().enumerate() {
            let stop = run_step(p, step, iteration).map_err(|e| FfiError {
                code: e.code,
                message: format!("program step {index}, iteration {iteration}: {}", e.message),
            })?;
            if stop {
                return Ok(());
            }
        }
    }
    Ok(())
}

/// Runs one step; whether a host step asked to stop.
fn run_step(p: &ProgramObj, step: &CStep, iteration: u64) -> FfiResult<bool> {
    match step {
        CStep::Run {
            kernel,
            args,
            push,
            push_size,
            space,
            sched,
            devices,
        } => {
            let sched = sched.as_ref().map(|(s, powers)| coexec_scheduler {
                powers: match powers.is_empty() {
                    true => std::ptr::null(),
                    false => powers.as_ptr(),
                },
                ..*s
            });
            let call = RunCall {
                engine: p.engine,
                kernel: *kernel,
                args: args.as_ptr(),
                num_args: args.len(),
                push: *push,
                push_size: *push_size,
                space: *space,
                units: None,
                sched: sched.as_ref().map_or(std::ptr::null(), |s| s as *const _),
                devices: *devices,
                report: std::ptr::null_mut(),
            };
            // SAFETY: `args` and the scheduler are the copies made when the
            // step was added (alive for this call); `push` is valid per
            // `coexec_program_add_run`'s contract.
            unsafe { call.run() }?;
            Ok(false)
        }
        CStep::Host { f, user_data } => {
            // SAFETY: the non-null function C gave with this `user_data`
            // (valid per `coexec_program_add_host`'s contract). It must
            // not unwind; if it does, the `extern "C"` boundary aborts.
            match unsafe { f(iteration, *user_data) } {
                COEXEC_HOST_CONTINUE => Ok(false),
                COEXEC_HOST_STOP => Ok(true),
                code => Err(FfiError::new(
                    COEXEC_ERROR_KERNEL_FAILED,
                    format!("the host function returned {code}"),
                )),
            }
        }
    }
}
