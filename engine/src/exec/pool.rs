//! Persistent pinned thread pool with scoped broadcast.
//!
//! A [`Pool`] owns a fixed set of named threads, each pinned once at start-up
//! ([`pin_current_thread`]). [`Pool::broadcast`] runs one job on every thread at once and
//! blocks until all have returned; the job may borrow from the caller's stack.
//!
//! # Parking mechanism
//!
//! Each pool thread has a *mailbox* (`Mutex<Option<Command>>`) and sleeps in
//! `std::thread::park()` while the mailbox is empty, so an idle pool burns no CPU. To start a
//! run, the caller puts a command in every mailbox and `unpark()`s each thread (a futex wake on
//! Linux); the thread takes the command, runs the job, stores its result and decrements a shared
//! `remaining` counter; the thread that brings it to zero `unpark()`s the caller. The caller
//! waits on `remaining` with a very short spin/yield (`crossbeam_utils::Backoff`, a few
//! microseconds: runs are often shorter than a millisecond and the wake-up path is the latency
//! that matters) and then parks. `park`/`unpark` carry a wake-up token, so a wake-up sent before
//! the receiver parks is never lost; spurious wake-ups are harmless because both sides re-check
//! their condition (mailbox / counter) in a loop. Per-thread mailboxes avoid the thundering-herd
//! re-locking of a single shared `Condvar`.
//!
//! Where `COEXEC_POOL_SPIN_US` asks for it ([`spin_window`]), a thread spins
//! for that long after a job (yielding) before it parks, so that the next run
//! of a program of several kernels finds it awake.
//!
//! While an [`AwakeHold`] is alive ([`Pool::hold_awake`], taken by a program
//! of several kernels for its whole run), a thread that finished a job does
//! not park at all: it spins (yielding) on its mail flag until the next job
//! or until the last hold is dropped, so the kernels of the program run back
//! to back without a futex wake-up of the workers between them. The one
//! exception is a thread pinned to the PU the caller was last seen on (at a
//! broadcast, `run_here` or hold): it parks, and the caller keeps that core
//! for itself. On a machine whose every core has a pool thread, the caller
//! otherwise took turns with a spinning thread: with the GPU chosen alone
//! for every kernel of a program, each run took 50-75 us longer than with
//! the CPU workers never woken (CG 4096^2 on the H200: 1.34-1.38 against
//! 0.84-0.90 ms per iteration).
//!
//! [`Pool::broadcast_with_caller`] runs one thread's job on the caller instead (bound to that
//! thread's core), so that the caller is running, not parked, when the others end.
//!
//! Broadcasts from several caller threads are serialized by a mutex held for the whole
//! broadcast. A job that calls `broadcast` on its own pool gets [`PoolError::Reentrant`]
//! instead of a deadlock.

use std::cell::Cell;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex, MutexGuard, PoisonError};
use std::thread::{self, JoinHandle, Thread};
use std::time::{Duration, Instant};

use crossbeam_utils::Backoff;
use tracing::warn;

use super::topology::{
    bind_current_thread_quietly, current_pu, current_thread_pus, pin_current_thread, CoreSet,
};

/// Errors of [`Pool`].
#[derive(Debug, thiserror::Error)]
pub enum PoolError {
    /// The OS refused to create a pool thread.
    #[error("failed to spawn pool thread {name:?}: {source}")]
    Spawn {
        /// Name of the thread that could not be created.
        name: String,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// `broadcast` was called from inside a job running on the same pool (it would deadlock).
    #[error("Pool::broadcast called from inside a job of the same pool")]
    Reentrant,
}

/// A job that panicked on one pool thread.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("job panicked on pool thread {thread}: {message}")]
pub struct JobPanic {
    /// Index of the pool thread the job panicked on.
    pub thread: usize,
    /// The panic message (or a placeholder for non-string payloads).
    pub message: String,
}

/// How to create one pool thread.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThreadSpec {
    /// Thread name (e.g. `coexec-cpu-0`).
    pub name: String,
    /// PUs to pin the thread to, once at start-up; `None` = unpinned.
    pub pin: Option<CoreSet>,
}

impl ThreadSpec {
    /// One spec per CPU worker core set, named `coexec-cpu-0`, `coexec-cpu-1`, ...
    pub fn cpu_workers(sets: &[CoreSet]) -> Vec<ThreadSpec> {
        sets.iter()
            .enumerate()
            .map(|(i, set)| ThreadSpec {
                name: format!("coexec-cpu-{i}"),
                pin: Some(set.clone()),
            })
            .collect()
    }
}

/// The job of a broadcast with its borrow lifetime erased (see the SAFETY note in
/// [`Pool::broadcast`]).
type ErasedJob = &'static (dyn Fn(usize) + Sync);

/// What a pool thread finds in its mailbox.
enum Command {
    /// Run the job with this thread's index, then count down and wake `caller` if last.
    Run { job: ErasedJob, caller: Thread },
    /// Leave the thread loop.
    Exit,
}

/// Per-thread state shared between the pool handle and the thread.
struct Slot {
    /// The next command; `None` while idle.
    mailbox: Mutex<Option<Command>>,
    /// Set after a command is posted: what a thread spinning before it
    /// parks watches (see [`wait_for_mail`]).
    mail: AtomicBool,
    /// The outcome of the last job (`Some` only after a panic).
    panic: Mutex<Option<JobPanic>>,
    /// Jobs this thread has run (see [`Pool::jobs_run`]).
    jobs: AtomicU64,
    /// Set by [`Pool::rouse`]: the thread spins for its next command for
    /// up to [`ROUSE_WINDOW`] before it parks again.
    roused: AtomicBool,
}

/// State shared by all threads of one pool.
struct Shared {
    slots: Vec<Slot>,
    /// Number of posted jobs not finished yet in the current broadcast.
    remaining: AtomicUsize,
    /// Live [`AwakeHold`]s: while non-zero, idle threads spin instead of
    /// parking (except the one on the caller's PU: see `caller_pu`).
    holds: AtomicUsize,
    /// The PU the caller was last seen on ([`NO_PU`]: unknown), read at
    /// every broadcast, `run_here` and hold: a held thread pinned there
    /// parks instead of spinning, so that the caller, unpinned, keeps a core
    /// of its own between the steps of a program (its host code, the next
    /// run's planning, a lone GPU's dispatch loop that it drives itself).
    caller_pu: AtomicUsize,
}

/// `caller_pu` when the caller's PU is not known.
const NO_PU: usize = usize::MAX;

/// Locks a mutex, ignoring poisoning: no code holding these locks can panic midway through an
/// update, so the data is consistent.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Unique pool ids for the re-entrancy marker (0 = "not a pool thread").
static NEXT_POOL_ID: AtomicU64 = AtomicU64::new(1);

thread_local! {
    /// Id of the pool the current thread belongs to, 0 if none.
    static CURRENT_POOL: Cell<u64> = const { Cell::new(0) };
}

/// A persistent pool of pinned threads; see the [module docs](self). `Send + Sync`.
pub struct Pool {
    shared: Arc<Shared>,
    handles: Vec<JoinHandle<()>>,
    threads: Vec<Thread>,
    pinned: Vec<bool>,
    /// The PUs each thread is pinned to (empty where it is not).
    pins: Vec<Vec<usize>>,
    /// Held for the whole of a broadcast: serializes concurrent callers.
    run_lock: Mutex<()>,
    id: u64,
}

impl std::fmt::Debug for Pool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pool")
            .field("threads", &self.threads.len())
            .field("pinned", &self.pinned)
            .finish()
    }
}

/// Waits, on drop, until every job posted in the current broadcast has finished. Dropping it is
/// the only way out of `broadcast` once a job was posted, including by unwinding.
struct WaitAll<'a> {
    remaining: &'a AtomicUsize,
    /// How long the caller yields before it parks, from when it starts to
    /// wait (zero: parks once the short backoff is over).
    spin: Duration,
}

impl Drop for WaitAll<'_> {
    fn drop(&mut self) {
        let backoff = Backoff::new();
        let yield_until = (!self.spin.is_zero()).then(|| Instant::now() + self.spin);
        // Acquire: pairs with the Release decrements of the pool threads, so everything the
        // jobs did (and their result slots) happens-before the caller continues, and no thread
        // touches the job after we see 0.
        while self.remaining.load(Ordering::Acquire) != 0 {
            if backoff.is_completed() && yield_until.is_some_and(|t| Instant::now() < t) {
                thread::yield_now();
            } else if backoff.is_completed() {
                // A token from an unpark sent before this park (or spurious wake-up) just
                // re-checks the counter.
                thread::park();
            } else {
                backoff.snooze();
            }
        }
    }
}

impl Slot {
    /// Puts `command` in the mailbox and raises the mail flag (the caller
    /// then unparks the thread, in case it parked).
    fn post(&self, command: Command) {
        *lock(&self.mailbox) = Some(command);
        // Relaxed: a hint only; the command itself is read under the
        // mailbox's mutex, which orders it.
        self.mail.store(true, Ordering::Relaxed);
    }
}

/// How long a pool thread spins for its next command after a job before it
/// parks: `COEXEC_POOL_SPIN_US` microseconds; 0 (park at once) by default.
/// Back-to-back runs (the kernels of an iterative program) then find their
/// threads awake rather than paying a futex wake-up and the scheduler's
/// latency each, at the price of cores kept busy for that long after every
/// run: off until measured where cores are not shared (on the 2-core dev
/// machine under load the difference was lost in the noise, BENCHMARKS.md
/// section 6). Read once per process.
fn spin_window() -> Option<Duration> {
    static US: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    let us = *US.get_or_init(|| {
        std::env::var("COEXEC_POOL_SPIN_US")
            .ok()
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0)
    });
    (us > 0).then(|| Duration::from_micros(us))
}

/// How long a thread woken by [`Pool::rouse`] spins for its command before
/// it parks again (the run that roused it failed before posting one, or
/// was slower to plan than this).
const ROUSE_WINDOW: Duration = Duration::from_millis(1);

/// Whether a hold keeps a thread pinned to `pins` spinning: while a hold
/// is alive, unless the caller is on one of its PUs (the thread would take
/// turns with the caller on that core).
fn held(shared: &Shared, pins: &[usize]) -> bool {
    // Relaxed, both: hints of how to wait, never data (see `wait_for_mail`);
    // a thread that reads a stale PU spins or parks one round more, and any
    // post unparks it.
    let caller = Some(shared.caller_pu.load(Ordering::Relaxed)).filter(|&pu| pu != NO_PU);
    shared.holds.load(Ordering::Relaxed) > 0 && !on_pu(pins, caller)
}

/// Whether a thread pinned to `pins` runs on PU `pu` (`None`: unknown, no).
fn on_pu(pins: &[usize], pu: Option<usize>) -> bool {
    pu.is_some_and(|pu| pins.contains(&pu))
}

/// Waits for mail: spins (yielding the core after the first few tries)
/// while `held` (a hold keeps the thread awake), then until `spin_until`,
/// watching the mail flag, then parks. Returns once mail may have come (the
/// caller re-checks the mailbox).
fn wait_for_mail(slot: &Slot, held: &dyn Fn() -> bool, spin_until: &mut Option<Instant>) {
    // Relaxed: a hint of how to wait (see `Pool::rouse`); the mailbox
    // orders the data. A load first: no write while nobody roused it.
    if slot.roused.load(Ordering::Relaxed) && slot.roused.swap(false, Ordering::Relaxed) {
        let until = Instant::now() + ROUSE_WINDOW;
        *spin_until = Some(spin_until.map_or(until, |u| u.max(until)));
    }
    // `held` reads hints only: a thread that misses a new hold parks and
    // is unparked by the next post as ever, one that misses its release
    // spins one more round.
    if spin_for_mail(slot, held) {
        return;
    }
    if let Some(until) = *spin_until {
        if spin_for_mail(slot, || Instant::now() < until) {
            return;
        }
        *spin_until = None;
    }
    // A token from an unpark sent while spinning (or a spurious wake-up)
    // just re-checks the mailbox.
    thread::park();
}

/// Spins while `go_on` holds, watching `slot`'s mail flag (yielding the
/// core after the first 64 tries); whether mail came.
fn spin_for_mail(slot: &Slot, go_on: impl Fn() -> bool) -> bool {
    let mut tries = 0u32;
    while go_on() {
        // Relaxed: see `Slot::post`. A load first: the swap writes the
        // line, which would pull it from the poster's core at every try.
        if slot.mail.load(Ordering::Relaxed) && slot.mail.swap(false, Ordering::Relaxed) {
            return true;
        }
        if tries < 64 {
            std::hint::spin_loop();
        } else {
            thread::yield_now();
        }
        tries += 1;
    }
    false
}

/// The panic of job `index`, where its `outcome` is one. A payload whose
/// destructor panics must not unwind from here (a pool thread would die and
/// its caller wait forever): that second payload is leaked.
fn caught(index: usize, outcome: std::thread::Result<()>) -> Option<JobPanic> {
    let payload = outcome.err()?;
    let message = crate::error::panic_message(&*payload);
    if let Err(second) = catch_unwind(AssertUnwindSafe(move || drop(payload))) {
        std::mem::forget(second);
    }
    Some(JobPanic {
        thread: index,
        message,
    })
}

/// The loop of pool thread `index`, pinned to the PUs `pins` (empty: not
/// pinned).
fn thread_main(shared: Arc<Shared>, index: usize, pool_id: u64, pins: Vec<usize>) {
    CURRENT_POOL.with(|c| c.set(pool_id));
    let slot = &shared.slots[index];
    let keep_spinning = || held(&shared, &pins);
    // Until when to spin for the next command before parking.
    let mut spin_until: Option<Instant> = None;
    loop {
        let command = lock(&slot.mailbox).take();
        match command {
            None => wait_for_mail(slot, &keep_spinning, &mut spin_until),
            Some(Command::Exit) => break,
            Some(Command::Run { job, caller }) => {
                // Relaxed: a statistic, read by the caller after the
                // broadcast, whose join (the Release decrement below)
                // orders it.
                slot.jobs.fetch_add(1, Ordering::Relaxed);
                // Relaxed: a hint (see `Pool::rouse`). A rouse whose job came
                // before the thread woke is spent: the thread parks after
                // the job as ever, not spinning for a job nobody will post.
                if slot.roused.load(Ordering::Relaxed) {
                    slot.roused.store(false, Ordering::Relaxed);
                }
                let outcome = catch_unwind(AssertUnwindSafe(|| job(index)));
                // `job` is not used past this point: the caller may return (and the borrow end)
                // as soon as `remaining` reaches 0 below.
                if let Some(p) = caught(index, outcome) {
                    *lock(&slot.panic) = Some(p);
                }
                // Release: publishes the job's effects and the result slot to the caller's
                // Acquire load in `WaitAll::drop`; the RMWs form a release sequence, so the
                // caller seeing 0 synchronizes with every thread's decrement.
                if shared.remaining.fetch_sub(1, Ordering::Release) == 1 {
                    caller.unpark();
                }
                spin_until = spin_window().map(|w| Instant::now() + w);
            }
        }
    }
}

impl Pool {
    /// Spawns one thread per spec; each pins itself once (if asked) and parks. Returns after
    /// every thread has started and tried to pin.
    ///
    /// # Errors
    ///
    /// [`PoolError::Spawn`] if the OS refuses a thread (threads already started are joined).
    pub fn new(threads: Vec<ThreadSpec>) -> Result<Pool, PoolError> {
        let n = threads.len();
        // Relaxed: the id only needs to be unique.
        let id = NEXT_POOL_ID.fetch_add(1, Ordering::Relaxed);
        let shared = Arc::new(Shared {
            slots: (0..n)
                .map(|_| Slot {
                    mailbox: Mutex::new(None),
                    mail: AtomicBool::new(false),
                    panic: Mutex::new(None),
                    jobs: AtomicU64::new(0),
                    roused: AtomicBool::new(false),
                })
                .collect(),
            remaining: AtomicUsize::new(0),
            holds: AtomicUsize::new(0),
            caller_pu: AtomicUsize::new(NO_PU),
        });
        let mut pool = Pool {
            shared: Arc::clone(&shared),
            handles: Vec::with_capacity(n),
            threads: Vec::with_capacity(n),
            pinned: vec![false; n],
            pins: threads
                .iter()
                .map(|t| t.pin.as_ref().map(|p| p.pus.clone()).unwrap_or_default())
                .collect(),
            run_lock: Mutex::new(()),
            id,
        };
        let (ready_tx, ready_rx) = mpsc::channel::<(usize, bool)>();
        for (index, spec) in threads.into_iter().enumerate() {
            let shared = Arc::clone(&shared);
            let ready = ready_tx.clone();
            let pin = spec.pin;
            let spawned = thread::Builder::new()
                .name(spec.name.clone())
                .spawn(move || {
                    let pinned = pin.as_ref().is_some_and(pin_current_thread);
                    // The receiver outlives this send unless `new` already failed.
                    let _ = ready.send((index, pinned));
                    drop(ready);
                    let pins = match (pinned, pin) {
                        (true, Some(p)) => p.pus,
                        _ => Vec::new(),
                    };
                    thread_main(shared, index, id, pins);
                });
            match spawned {
                Ok(handle) => {
                    pool.threads.push(handle.thread().clone());
                    pool.handles.push(handle);
                }
                Err(source) => {
                    // `pool` is dropped here: its Drop stops and joins the started threads.
                    return Err(PoolError::Spawn {
                        name: spec.name,
                        source,
                    });
                }
            }
        }
        drop(ready_tx);
        for (index, pinned) in ready_rx.iter() {
            pool.pinned[index] = pinned;
            if !pinned {
                pool.pins[index].clear();
            }
        }
        Ok(pool)
    }

    /// Number of pool threads.
    pub fn len(&self) -> usize {
        self.threads.len()
    }

    /// How many jobs each thread has run since the pool was created, by
    /// thread index: a thread that [`broadcast_to`](Self::broadcast_to)
    /// did not wake runs none, and a job [`run_here`](Self::run_here) ran
    /// in a thread's place (on the caller's) is not counted.
    pub fn jobs_run(&self) -> Vec<u64> {
        self.shared
            .slots
            .iter()
            // Relaxed: see `thread_main`.
            .map(|s| s.jobs.load(Ordering::Relaxed))
            .collect()
    }

    /// Whether the pool has no thread.
    pub fn is_empty(&self) -> bool {
        self.threads.is_empty()
    }

    /// Runs `job(index)` on the calling thread, as pool thread `index`
    /// would in a [`broadcast_to`](Self::broadcast_to) that wakes it alone,
    /// but without waking it: a run that needs one thread (a GPU's
    /// dispatch loop, the CPU workers sitting out) pays neither the futex
    /// wake-up of that thread nor the caller's when it ends. Serialized
    /// with broadcasts; the job runs on the caller's core (unpinned), and
    /// counts as inside this pool, so a broadcast from it is refused as one
    /// from a pool thread would be. The result has one entry per thread, as
    /// a broadcast's.
    ///
    /// # Errors
    ///
    /// As [`broadcast`](Self::broadcast).
    pub fn run_here(
        &self,
        index: usize,
        job: &(dyn Fn(usize) + Sync),
    ) -> Result<Vec<Result<(), JobPanic>>, PoolError> {
        if CURRENT_POOL.with(Cell::get) == self.id {
            return Err(PoolError::Reentrant);
        }
        let _serial = lock(&self.run_lock);
        self.saw_caller(current_pu());
        let outer = CURRENT_POOL.with(|c| c.replace(self.id));
        let outcome = catch_unwind(AssertUnwindSafe(|| job(index)));
        CURRENT_POOL.with(|c| c.set(outer));
        let mut results: Vec<Result<(), JobPanic>> = self.threads.iter().map(|_| Ok(())).collect();
        if let (Some(p), Some(r)) = (caught(index, outcome), results.get_mut(index)) {
            *r = Err(p);
        }
        Ok(results)
    }

    /// Keeps the pool's threads awake between jobs until the returned hold
    /// is dropped: a thread that finished a job spins (yielding its core
    /// after a few tries) for the next one instead of parking, so
    /// back-to-back broadcasts (the steps of a program) wake no thread.
    /// Holds nest; the threads park again once the last one is dropped.
    /// Costs the cores of the threads for as long as it is held, also
    /// while the caller runs host code between broadcasts.
    pub fn hold_awake(&self) -> AwakeHold<'_> {
        self.saw_caller(current_pu());
        // Relaxed: see `wait_for_mail` (a hint; the mailbox orders data).
        self.shared.holds.fetch_add(1, Ordering::Relaxed);
        AwakeHold { pool: self }
    }

    /// Wakes the threads for which `wake` is true ahead of a broadcast to
    /// them: each spins for its command (for up to [`ROUSE_WINDOW`])
    /// instead of parking, so that the broadcast finds it running. A
    /// parked thread takes tens of microseconds to run again once
    /// unparked (a GPU's dispatch loop of a co-executed first run on an
    /// H200 started 40-70 us after the run posted its job), which this
    /// spends while the caller prepares the run. The thread pinned to the
    /// caller's PU is left parked: spinning there, it would take turns
    /// with the caller.
    pub fn rouse(&self, wake: &dyn Fn(usize) -> bool) {
        let here = current_pu();
        for (i, (slot, thread)) in self.shared.slots.iter().zip(&self.threads).enumerate() {
            if wake(i) && !on_pu(&self.pins[i], here) {
                // Relaxed: a hint (see `wait_for_mail`).
                slot.roused.store(true, Ordering::Relaxed);
                thread.unpark();
            }
        }
    }

    /// Notes the PU the caller runs on (see `Shared::caller_pu`).
    fn saw_caller(&self, pu: Option<usize>) {
        // Relaxed: a hint of how held threads wait, never data.
        self.shared
            .caller_pu
            .store(pu.unwrap_or(NO_PU), Ordering::Relaxed);
    }

    /// For each thread, whether pinning it succeeded (`false` also for unpinned specs).
    pub fn pinned(&self) -> &[bool] {
        &self.pinned
    }

    /// Runs `job(thread_index)` on every pool thread at once and blocks until all have
    /// returned. `job` may borrow from the caller's stack (scoped, like `std::thread::scope`).
    /// Concurrent callers are serialized.
    ///
    /// A panic in a job is caught on its thread and reported as `Err(JobPanic)` in that
    /// thread's entry; the thread survives and the pool stays usable.
    ///
    /// # Errors
    ///
    /// [`PoolError::Reentrant`] if called from inside a job running on this pool. (Only direct
    /// re-entry is detected: a job of pool A broadcasting on pool B whose job broadcasts on A
    /// still deadlocks.)
    pub fn broadcast(
        &self,
        job: &(dyn Fn(usize) + Sync),
    ) -> Result<Vec<Result<(), JobPanic>>, PoolError> {
        self.broadcast_to(&|_| true, job)
    }

    /// [`broadcast`](Self::broadcast) to every thread but those pinned to
    /// the caller's PU (to every thread where that leaves none), for work
    /// the caller waits for between runs (combining a reduction's
    /// partials): a thread woken on the caller's core waits for the caller
    /// to let it run, and one such wait cost a k-means iteration a
    /// millisecond. The job must not count on a given thread running it:
    /// share its work out dynamically.
    ///
    /// # Errors
    ///
    /// As [`broadcast`](Self::broadcast).
    pub fn broadcast_elsewhere(
        &self,
        job: &(dyn Fn(usize) + Sync),
    ) -> Result<Vec<Result<(), JobPanic>>, PoolError> {
        let here = current_pu();
        let on_here = |i: usize| on_pu(&self.pins[i], here);
        let anywhere = (0..self.pins.len()).all(on_here);
        self.broadcast_from(here, &|i| anywhere || !on_here(i), job)
    }

    /// [`broadcast`](Self::broadcast) to the threads for which `wake` is
    /// true only: the others stay parked (their entries are `Ok`). Threads
    /// are woken from the last to the first.
    ///
    /// # Errors
    ///
    /// As [`broadcast`](Self::broadcast).
    pub fn broadcast_to(
        &self,
        wake: &dyn Fn(usize) -> bool,
        job: &(dyn Fn(usize) + Sync),
    ) -> Result<Vec<Result<(), JobPanic>>, PoolError> {
        self.broadcast_from(current_pu(), wake, job)
    }

    /// The thread among those `wake` selects that is pinned to the PU the
    /// caller runs on now, if one is: the thread whose job
    /// [`broadcast_with_caller`](Self::broadcast_with_caller) can run on
    /// the caller.
    pub fn thread_here(&self, wake: &dyn Fn(usize) -> bool) -> Option<usize> {
        let here = current_pu()?;
        (0..self.pins.len()).find(|&i| wake(i) && on_pu(&self.pins[i], Some(here)))
    }

    /// [`broadcast_to`](Self::broadcast_to), except that the caller runs
    /// the job of thread `inline` itself (where given and `wake` selects
    /// it; see [`thread_here`](Self::thread_here)) instead of waking that
    /// thread, bound to the PUs that thread is pinned to (its own binding
    /// restored after), and then yields for up to `spin` before it parks
    /// to wait for the others. A thread woken on the caller's PU would take
    /// turns with the caller there; the caller instead runs that thread's
    /// job and is running when the run ends.
    ///
    /// # Errors
    ///
    /// As [`broadcast`](Self::broadcast).
    pub fn broadcast_with_caller(
        &self,
        wake: &dyn Fn(usize) -> bool,
        job: &(dyn Fn(usize) + Sync),
        inline: Option<usize>,
        spin: Duration,
    ) -> Result<Vec<Result<(), JobPanic>>, PoolError> {
        let inline = inline.filter(|&i| i < self.threads.len() && wake(i));
        self.broadcast_inner(current_pu(), wake, job, inline, spin)
    }

    /// Binds the calling thread to the PUs thread `index` is pinned to,
    /// where it is pinned and the caller's own binding is known and the OS
    /// agrees; returns the caller's binding, to restore.
    fn borrow_core(&self, index: usize) -> Option<Vec<usize>> {
        let pins = self.pins.get(index).filter(|p| !p.is_empty())?;
        let own = current_thread_pus()?;
        bind_current_thread_quietly(pins).then_some(own)
    }

    /// [`broadcast_to`](Self::broadcast_to) from a caller on PU `here`.
    fn broadcast_from(
        &self,
        here: Option<usize>,
        wake: &dyn Fn(usize) -> bool,
        job: &(dyn Fn(usize) + Sync),
    ) -> Result<Vec<Result<(), JobPanic>>, PoolError> {
        self.broadcast_inner(here, wake, job, None, Duration::ZERO)
    }

    /// A broadcast from a caller on PU `here` to the threads `wake`
    /// selects, the caller running thread `inline`'s job itself (that
    /// thread is not woken) and yielding for `spin` before it parks.
    fn broadcast_inner(
        &self,
        here: Option<usize>,
        wake: &dyn Fn(usize) -> bool,
        job: &(dyn Fn(usize) + Sync),
        inline: Option<usize>,
        spin: Duration,
    ) -> Result<Vec<Result<(), JobPanic>>, PoolError> {
        if CURRENT_POOL.with(Cell::get) == self.id {
            return Err(PoolError::Reentrant);
        }
        let _serial = lock(&self.run_lock);
        let caller = thread::current();
        let mut inline_panic = None;
        {
            // Declared before any job is posted, so it is dropped (waiting for every posted
            // job) on every path out of this block, unwinding included.
            let _wait = WaitAll {
                remaining: &self.shared.remaining,
                spin,
            };
            // SAFETY: only the lifetime is changed (same fat-pointer layout). The erased
            // reference is used by pool threads only between taking their command and their
            // decrement of `remaining`, and `_wait` (dropped before this block is left, whether
            // by return or by unwinding) does not let `broadcast` finish until `remaining` is
            // back to 0, i.e. every posted job has stopped using it; jobs not yet taken cannot
            // remain because each one counted in `remaining` is taken and run. Holding
            // `run_lock` for the whole broadcast keeps other callers from reusing the counter
            // meanwhile. So `job` outlives every use of the erased reference.
            let erased: ErasedJob =
                unsafe { std::mem::transmute::<&(dyn Fn(usize) + Sync), ErasedJob>(job) };
            self.saw_caller(here);
            for index in wake_order(&self.pins, here) {
                if !wake(index) || inline == Some(index) {
                    continue;
                }
                let (slot, thread) = (&self.shared.slots[index], &self.threads[index]);
                // Relaxed: the increment is sequenced before the mailbox unlock below, which
                // synchronizes with the thread's lock, so the thread's decrement always sees
                // it (coherence); the caller only reads the counter after posting.
                self.shared.remaining.fetch_add(1, Ordering::Relaxed);
                slot.post(Command::Run {
                    job: erased,
                    caller: caller.clone(),
                });
                thread.unpark();
            }
            if let Some(index) = inline {
                // As a pool thread's job: inside this pool (a broadcast from
                // it is refused), its panic caught and reported as that
                // thread's, on that thread's core (the caller could
                // otherwise move onto a core another claimant or a device
                // that runs on the host's cores is using). `_wait` waits
                // for the others after it.
                let restore = self.borrow_core(index);
                let outer = CURRENT_POOL.with(|c| c.replace(self.id));
                let outcome = catch_unwind(AssertUnwindSafe(|| job(index)));
                CURRENT_POOL.with(|c| c.set(outer));
                if let Some(pus) = restore {
                    bind_current_thread_quietly(&pus);
                }
                inline_panic = caught(index, outcome).map(|p| (index, p));
            }
        }
        let mut results: Vec<Result<(), JobPanic>> = self
            .shared
            .slots
            .iter()
            .map(|slot| lock(&slot.panic).take().map_or(Ok(()), Err))
            .collect();
        if let Some((index, p)) = inline_panic {
            results[index] = Err(p);
        }
        Ok(results)
    }
}

/// The order a broadcast wakes the threads pinned to `pins` in, from a
/// caller running on PU `here`: last thread first (an engine's GPU dispatch
/// loops come after its CPU workers, and a GPU's first submission has the
/// longest way to go), except that the threads pinned to `here` come last.
///
/// A thread woken on the caller's own PU preempts the caller there, and the
/// caller, unpinned, waits for that PU or for the scheduler to move it:
/// on a machine whose every core has a pool thread, a whole run's workers
/// started 0.9-2.4 ms late, after the one thread that took the caller's
/// core (the others all started within 40 us of each other once the
/// caller ran again).
fn wake_order(pins: &[Vec<usize>], here: Option<usize>) -> impl Iterator<Item = usize> + '_ {
    let on_here = move |i: &usize| on_pu(&pins[*i], here);
    let elsewhere = (0..pins.len()).rev().filter(move |i| !on_here(i));
    elsewhere.chain((0..pins.len()).rev().filter(on_here))
}

/// Keeps the engine's worker threads and GPU dispatch threads awake while
/// alive: returned by [`Engine::keep_awake`](crate::Engine::keep_awake), held by a
/// program for its whole run.
#[must_use = "the threads park again as soon as the hold is dropped"]
pub struct AwakeHold<'p> {
    pool: &'p Pool,
}

impl std::fmt::Debug for AwakeHold<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AwakeHold").finish_non_exhaustive()
    }
}

impl Drop for AwakeHold<'_> {
    fn drop(&mut self) {
        // Relaxed: see `wait_for_mail`.
        self.pool.shared.holds.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Drop for Pool {
    /// Wakes every thread with an exit command and joins it.
    fn drop(&mut self) {
        for (slot, thread) in self.shared.slots.iter().zip(&self.threads) {
            slot.post(Command::Exit);
            thread.unpark();
        }
        for handle in self.handles.drain(..) {
            let name = handle.thread().name().unwrap_or("?").to_string();
            if handle.join().is_err() {
                warn!(thread = %name, "pool thread panicked outside a job");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec::topology::{current_thread_pus, CpuTopology, PlanRequest};
    use std::sync::atomic::AtomicBool;
    use std::time::Duration;

    fn unpinned(n: usize) -> Pool {
        Pool::new(
            (0..n)
                .map(|i| ThreadSpec {
                    name: format!("test-{i}"),
                    pin: None,
                })
                .collect(),
        )
        .unwrap()
    }

    #[test]
    fn the_thread_on_the_callers_pu_is_woken_last() {
        let pins = vec![vec![0], vec![1], vec![2, 3], vec![], vec![4]];
        let order = |here| wake_order(&pins, here).collect::<Vec<_>>();
        // Last first where the caller's PU has no thread (or is unknown).
        assert_eq!(order(None), [4, 3, 2, 1, 0]);
        assert_eq!(order(Some(9)), [4, 3, 2, 1, 0]);
        // The thread pinned to the caller's PU (alone or with others) last.
        assert_eq!(order(Some(1)), [4, 3, 2, 0, 1]);
        assert_eq!(order(Some(3)), [4, 3, 1, 0, 2]);
        assert_eq!(order(Some(4)), [3, 2, 1, 0, 4]);
        assert_eq!(wake_order(&[], Some(0)).count(), 0);
    }

    #[test]
    fn pool_is_send_sync() {
        fn check<T: Send + Sync>() {}
        check::<Pool>();
    }

    #[test]
    fn every_thread_runs_once_per_broadcast() {
        let pool = unpinned(4);
        assert_eq!(pool.len(), 4);
        let counts: Vec<AtomicUsize> = (0..4).map(|_| AtomicUsize::new(0)).collect();
        for round in 1..=50 {
            let results = pool
                .broadcast(&|i| {
                    counts[i].fetch_add(1, Ordering::Relaxed);
                })
                .unwrap();
            assert!(results.iter().all(Result::is_ok));
            assert!(counts.iter().all(|c| c.load(Ordering::Relaxed) == round));
        }
    }

    #[test]
    fn run_here_runs_on_the_caller_as_the_given_thread() {
        let pool = unpinned(3);
        let me = thread::current().id();
        let seen = Mutex::new(Vec::new());
        let r = pool
            .run_here(2, &|i| lock(&seen).push((i, thread::current().id())))
            .unwrap();
        assert_eq!(r.len(), 3);
        assert!(r.iter().all(Result::is_ok));
        assert_eq!(*lock(&seen), vec![(2, me)]);
        // A panic is reported as that thread's, and the pool stays usable.
        let r = pool.run_here(1, &|_| panic!("boom")).unwrap();
        assert!(matches!(&r[1], Err(p) if p.thread == 1 && p.message.contains("boom")));
        assert!(r[0].is_ok() && r[2].is_ok());
        // Inside the job, the pool refuses to be entered again.
        let nested = Mutex::new(None);
        pool.run_here(0, &|_| {
            *lock(&nested) = Some(pool.broadcast(&|_| {}).is_err());
        })
        .unwrap();
        assert_eq!(*lock(&nested), Some(true));
        // And afterwards the caller may broadcast as ever.
        let count = AtomicUsize::new(0);
        pool.broadcast(&|_| {
            count.fetch_add(1, Ordering::Relaxed);
        })
        .unwrap();
        assert_eq!(count.load(Ordering::Relaxed), 3);
    }

    #[test]
    fn broadcast_to_wakes_only_the_chosen_threads() {
        let pool = unpinned(4);
        let counts: Vec<AtomicUsize> = (0..4).map(|_| AtomicUsize::new(0)).collect();
        for _ in 0..10 {
            let results = pool
                .broadcast_to(&|i| i % 2 == 1, &|i| {
                    counts[i].fetch_add(1, Ordering::Relaxed);
                })
                .unwrap();
            assert_eq!(results.len(), 4);
            assert!(results.iter().all(Result::is_ok));
        }
        let got: Vec<usize> = counts.iter().map(|c| c.load(Ordering::Relaxed)).collect();
        assert_eq!(got, vec![0, 10, 0, 10]);
        // The threads' own counts agree: the others were never woken.
        assert_eq!(pool.jobs_run(), vec![0, 10, 0, 10]);
        // Nobody to wake: returns at once.
        assert!(pool.broadcast_to(&|_| false, &|_| unreachable!()).is_ok());
    }

    /// The caller runs the job of the thread it is given, in place of
    /// that thread (not woken, its job not counted as the thread's), the
    /// other chosen threads theirs; a panic of the caller's job is that
    /// thread's entry; a thread not chosen is not run by the caller either.
    #[test]
    fn the_caller_runs_the_job_of_its_thread_in_its_place() {
        let pool = unpinned(3);
        let ran_on: Vec<Mutex<Option<thread::ThreadId>>> = (0..3).map(|_| Mutex::new(None)).collect();
        let record = |i: usize| *ran_on[i].lock().unwrap() = Some(thread::current().id());
        let spin = Duration::from_millis(1);
        let results = pool
            .broadcast_with_caller(&|_| true, &record, Some(1), spin)
            .unwrap();
        assert!(results.iter().all(Result::is_ok));
        let caller = thread::current().id();
        let ids: Vec<_> = ran_on.iter().map(|m| m.lock().unwrap().take()).collect();
        assert_eq!(ids[1], Some(caller));
        assert!(ids[0].is_some_and(|t| t != caller) && ids[2].is_some_and(|t| t != caller));
        assert_eq!(pool.jobs_run(), vec![1, 0, 1]);
        // Its panic is its thread's entry; the others ran as ever.
        let results = pool
            .broadcast_with_caller(&|_| true, &|i| assert_ne!(i, 2, "the caller's job"), Some(2), spin)
            .unwrap();
        assert!(results[0].is_ok() && results[1].is_ok());
        assert!(results[2].as_ref().is_err_and(|p| p.message.contains("the caller's job")));
        assert_eq!(pool.jobs_run(), vec![2, 1, 1]);
        // A thread the broadcast does not choose runs nothing, in place or not.
        let count = AtomicUsize::new(0);
        pool.broadcast_with_caller(&|i| i != 0, &|_| {
            count.fetch_add(1, Ordering::Relaxed);
        }, Some(0), Duration::ZERO)
        .unwrap();
        assert_eq!(count.load(Ordering::Relaxed), 2);
        assert_eq!(pool.jobs_run(), vec![2, 2, 2]);
    }

    /// A roused thread takes its flag once woken and spins for its
    /// command; one not chosen is left alone; broadcasts after a rouse run
    /// every job once, and a rouse with no broadcast after it leaves the
    /// pool as usable as ever.
    #[test]
    fn roused_threads_run_the_next_broadcast_as_ever() {
        let pool = unpinned(3);
        let roused = |i: usize| pool.shared.slots[i].roused.load(Ordering::Relaxed);
        pool.rouse(&|i| i != 1);
        let t = Instant::now();
        while (roused(0) || roused(2)) && t.elapsed() < Duration::from_secs(10) {
            thread::yield_now();
        }
        assert!(!roused(0) && !roused(2), "woken threads take their flags");
        assert!(!roused(1), "a thread not chosen is not roused");
        let counts: Vec<AtomicUsize> = (0..3).map(|_| AtomicUsize::new(0)).collect();
        pool.broadcast(&|i| {
            counts[i].fetch_add(1, Ordering::Relaxed);
        })
        .unwrap();
        // Past the window, parked again: woken by the next post as ever.
        pool.rouse(&|_| true);
        thread::sleep(ROUSE_WINDOW * 3);
        pool.broadcast(&|i| {
            counts[i].fetch_add(1, Ordering::Relaxed);
        })
        .unwrap();
        let got: Vec<usize> = counts.iter().map(|c| c.load(Ordering::Relaxed)).collect();
        assert_eq!(got, vec![2, 2, 2]);
        // A rouse whose job is posted at once is spent by the job: no thread
        // keeps its flag (to spin after the job) once the broadcast is done.
        pool.rouse(&|_| true);
        pool.broadcast(&|_| {}).unwrap();
        assert!((0..3).all(|i| !roused(i)), "a rouse outlived its job");
    }

    #[test]
    fn thread_names_and_indices() {
        let pool = Pool::new(ThreadSpec::cpu_workers(&[
            CoreSet::default(),
            CoreSet::default(),
        ]))
        .unwrap();
        let names: Vec<Mutex<String>> = (0..2).map(|_| Mutex::new(String::new())).collect();
        pool.broadcast(&|i| {
            *names[i].lock().unwrap() = thread::current().name().unwrap().to_string();
        })
        .unwrap();
        assert_eq!(*names[0].lock().unwrap(), "coexec-cpu-0");
        assert_eq!(*names[1].lock().unwrap(), "coexec-cpu-1");
    }

    #[test]
    fn job_borrows_stack_data() {
        let pool = unpinned(3);
        let input: Vec<u64> = (0..3000).collect();
        let partial: Vec<AtomicUsize> = (0..3).map(|_| AtomicUsize::new(0)).collect();
        pool.broadcast(&|i| {
            let sum: u64 = input[i * 1000..(i + 1) * 1000].iter().sum();
            partial[i].store(sum as usize, Ordering::Relaxed);
        })
        .unwrap();
        let total: usize = partial.iter().map(|p| p.load(Ordering::Relaxed)).sum();
        assert_eq!(total as u64, input.iter().sum::<u64>());
    }

    #[test]
    fn panic_is_reported_and_pool_survives() {
        let pool = unpinned(3);
        let results = pool
            .broadcast(&|i| {
                if i == 1 {
                    panic!("job {i} failed");
                }
            })
            .unwrap();
        assert!(results[0].is_ok() && results[2].is_ok());
        assert_eq!(
            results[1],
            Err(JobPanic {
                thread: 1,
                message: "job 1 failed".to_string()
            })
        );
        let hits = AtomicUsize::new(0);
        let results = pool
            .broadcast(&|_| {
                hits.fetch_add(1, Ordering::Relaxed);
            })
            .unwrap();
        assert!(results.iter().all(Result::is_ok));
        assert_eq!(hits.load(Ordering::Relaxed), 3);
    }

    #[test]
    fn concurrent_callers_are_serialized() {
        const CALLERS: usize = 8;
        const ROUNDS: usize = 1000;
        let pool = unpinned(4);
        let counts: Vec<AtomicUsize> = (0..4).map(|_| AtomicUsize::new(0)).collect();
        // (id of the broadcast whose jobs are running, number of jobs running now).
        let inside = Mutex::new((0usize, 0usize));
        let overlap = AtomicBool::new(false);
        thread::scope(|s| {
            for caller in 0..CALLERS {
                let (pool, counts, inside, overlap) = (&pool, &counts, &inside, &overlap);
                s.spawn(move || {
                    for round in 0..ROUNDS {
                        let id = caller * ROUNDS + round + 1;
                        let mine: Vec<AtomicUsize> = (0..4).map(|_| AtomicUsize::new(0)).collect();
                        let r = pool
                            .broadcast(&|i| {
                                {
                                    let mut g = inside.lock().unwrap();
                                    if g.1 != 0 && g.0 != id {
                                        overlap.store(true, Ordering::Relaxed);
                                    }
                                    *g = (id, g.1 + 1);
                                }
                                counts[i].fetch_add(1, Ordering::Relaxed);
                                mine[i].fetch_add(1, Ordering::Relaxed);
                                inside.lock().unwrap().1 -= 1;
                            })
                            .unwrap();
                        assert!(r.iter().all(Result::is_ok));
                        // This broadcast ran exactly once on every thread.
                        assert!(mine.iter().all(|m| m.load(Ordering::Relaxed) == 1));
                    }
                });
            }
        });
        for c in &counts {
            assert_eq!(c.load(Ordering::Relaxed), CALLERS * ROUNDS);
        }
        assert!(!overlap.load(Ordering::Relaxed), "broadcasts interleaved");
    }

    #[test]
    fn nested_broadcast_is_an_error() {
        let pool = unpinned(2);
        let inner: Vec<Mutex<Option<bool>>> = (0..2).map(|_| Mutex::new(None)).collect();
        let other = unpinned(1);
        pool.broadcast(&|i| {
            let reentrant = matches!(pool.broadcast(&|_| {}), Err(PoolError::Reentrant));
            // Another pool is fine from inside a job.
            assert!(other.broadcast(&|_| {}).is_ok());
            *inner[i].lock().unwrap() = Some(reentrant);
        })
        .unwrap();
        assert!(inner.iter().all(|r| *r.lock().unwrap() == Some(true)));
    }

    #[test]
    fn drop_joins_threads() {
        let pool = unpinned(3);
        let alive = Arc::new(AtomicUsize::new(0));
        struct Tls(Arc<AtomicUsize>);
        impl Drop for Tls {
            fn drop(&mut self) {
                self.0.fetch_sub(1, Ordering::SeqCst);
            }
        }
        thread_local! { static GUARD: std::cell::RefCell<Option<Tls>> = const { std::cell::RefCell::new(None) }; }
        pool.broadcast(&|_| {
            alive.fetch_add(1, Ordering::SeqCst);
            GUARD.with(|g| *g.borrow_mut() = Some(Tls(Arc::clone(&alive))));
        })
        .unwrap();
        assert_eq!(alive.load(Ordering::SeqCst), 3);
        drop(pool);
        // Joined threads have run their thread-local destructors.
        assert_eq!(alive.load(Ordering::SeqCst), 0);
    }

    #[test]
    fn empty_pool_broadcast() {
        let pool = unpinned(0);
        assert!(pool.is_empty());
        assert!(pool.broadcast(&|_| unreachable!()).unwrap().is_empty());
    }

    /// A thread spinning for mail returns as soon as mail is posted,
    /// long before its spin window ends, without parking; past the window
    /// it parks until unparked, and spins no more.
    #[test]
    fn spinning_threads_see_mail_and_then_park() {
        let slot = Arc::new(Slot {
            mailbox: Mutex::new(None),
            mail: AtomicBool::new(false),
            panic: Mutex::new(None),
            jobs: AtomicU64::new(0),
            roused: AtomicBool::new(false),
        });
        let poster = {
            let slot = slot.clone();
            thread::spawn(move || {
                thread::sleep(Duration::from_millis(5));
                slot.post(Command::Exit);
            })
        };
        let t = Instant::now();
        let mut until = Some(t + Duration::from_secs(20));
        wait_for_mail(&slot, &|| false, &mut until);
        assert!(t.elapsed() < Duration::from_secs(10));
        assert!(until.is_some(), "still within the window");
        assert!(matches!(lock(&slot.mailbox).take(), Some(Command::Exit)));
        poster.join().unwrap();
        // Past the window: parks until unparked.
        let me = thread::current();
        let waker = thread::spawn(move || {
            thread::sleep(Duration::from_millis(20));
            me.unpark();
        });
        let mut until = Some(Instant::now());
        wait_for_mail(&slot, &|| false, &mut until);
        assert_eq!(until, None);
        waker.join().unwrap();
    }

    /// Under a hold, a waiting thread never parks: it returns on mail
    /// with no unpark at all, and once the hold count is back to 0 it
    /// parks (here: until unparked).
    #[test]
    fn held_threads_spin_until_mail_or_release() {
        let slot = Arc::new(Slot {
            mailbox: Mutex::new(None),
            mail: AtomicBool::new(false),
            panic: Mutex::new(None),
            jobs: AtomicU64::new(0),
            roused: AtomicBool::new(false),
        });
        let holds = Arc::new(AtomicUsize::new(1));
        // Mail without unpark: only a spinning thread sees it.
        let poster = {
            let slot = slot.clone();
            thread::spawn(move || {
                thread::sleep(Duration::from_millis(20));
                slot.post(Command::Exit);
            })
        };
        let held = || holds.load(Ordering::Relaxed) > 0;
        wait_for_mail(&slot, &held, &mut None);
        assert!(matches!(lock(&slot.mailbox).take(), Some(Command::Exit)));
        poster.join().unwrap();
        // Released: the thread leaves the spin and parks until unparked.
        let me = thread::current();
        let releaser = {
            let holds = holds.clone();
            thread::spawn(move || {
                thread::sleep(Duration::from_millis(20));
                holds.store(0, Ordering::Relaxed);
                thread::sleep(Duration::from_millis(20));
                me.unpark();
            })
        };
        wait_for_mail(&slot, &held, &mut None);
        assert_eq!(holds.load(Ordering::Relaxed), 0);
        releaser.join().unwrap();
    }

    /// A hold keeps spinning every thread but those pinned to the caller's
    /// PU; none without a hold.
    #[test]
    fn a_hold_spins_every_thread_but_the_one_on_the_callers_pu() {
        let shared = Shared {
            slots: Vec::new(),
            remaining: AtomicUsize::new(0),
            holds: AtomicUsize::new(1),
            caller_pu: AtomicUsize::new(3),
        };
        assert!(held(&shared, &[1]));
        assert!(held(&shared, &[]), "an unpinned thread");
        assert!(!held(&shared, &[3]));
        assert!(!held(&shared, &[2, 3]), "a core whose other PU has the caller");
        shared.caller_pu.store(NO_PU, Ordering::Relaxed);
        assert!(held(&shared, &[3]), "the caller's PU unknown");
        shared.holds.store(0, Ordering::Relaxed);
        assert!(!held(&shared, &[1]));
    }

    /// A hold and a broadcast note the PU the caller runs on (where the
    /// OS says it: Linux).
    #[test]
    fn a_broadcast_notes_the_callers_pu() {
        let pool = unpinned(1);
        assert_eq!(pool.shared.caller_pu.load(Ordering::Relaxed), NO_PU);
        let _hold = pool.hold_awake();
        pool.broadcast(&|_| {}).unwrap();
        let seen = pool.shared.caller_pu.load(Ordering::Relaxed);
        if current_pu().is_some() {
            assert_ne!(seen, NO_PU);
        }
    }

    /// A broadcast elsewhere runs on every thread but the one pinned to
    /// the caller's PU, on that one where it is the only thread.
    #[test]
    fn a_broadcast_elsewhere_skips_the_callers_pu() {
        let here = CoreSet { pus: vec![0] };
        // The test thread on PU 0 (where the OS lets it pin).
        if !pin_current_thread(&here) || current_pu() != Some(0) {
            return;
        }
        let pool = Pool::new(
            (0..2)
                .map(|i| ThreadSpec {
                    name: format!("test-{i}"),
                    pin: Some(CoreSet { pus: vec![i] }),
                })
                .collect(),
        )
        .unwrap();
        if pool.pinned() != [true, true] {
            return;
        }
        pool.broadcast_elsewhere(&|_| {}).unwrap();
        assert_eq!(pool.jobs_run(), [0, 1]);
        let lone = Pool::new(vec![ThreadSpec {
            name: "test-0".into(),
            pin: Some(here),
        }])
        .unwrap();
        lone.broadcast_elsewhere(&|_| {}).unwrap();
        assert_eq!(lone.jobs_run(), [1]);
    }

    /// Broadcasts under a hold run every job once each, and the hold
    /// count goes back to 0 when the holds (nested) are dropped.
    #[test]
    fn broadcasts_under_a_hold_run_once_each() {
        let pool = unpinned(3);
        let count = AtomicUsize::new(0);
        {
            let _a = pool.hold_awake();
            let _b = pool.hold_awake();
            for _ in 0..50 {
                pool.broadcast(&|_| {
                    count.fetch_add(1, Ordering::Relaxed);
                })
                .unwrap();
            }
            assert_eq!(pool.shared.holds.load(Ordering::Relaxed), 2);
        }
        assert_eq!(count.load(Ordering::Relaxed), 150);
        assert_eq!(pool.shared.holds.load(Ordering::Relaxed), 0);
        pool.broadcast(&|_| {}).unwrap();
    }

    #[test]
    fn idle_threads_do_not_spin() {
        let pool = Pool::new(
            (0..2)
                .map(|i| ThreadSpec {
                    name: format!("idle-{i}"),
                    pin: None,
                })
                .collect(),
        )
        .unwrap();
        pool.broadcast(&|_| {}).unwrap();
        // Let the threads settle into park(), then check they use no CPU time.
        thread::sleep(Duration::from_millis(50));
        let cpu_ticks = |name_prefix: &str| -> u64 {
            let mut total = 0;
            for entry in std::fs::read_dir("/proc/self/task").unwrap().flatten() {
                let comm = std::fs::read_to_string(entry.path().join("comm")).unwrap_or_default();
                if comm.trim().starts_with(name_prefix) {
                    let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap();
                    let fields: Vec<&str> = stat
                        .rsplit(')')
                        .next()
                        .unwrap()
                        .split_whitespace()
                        .collect();
                    total +=
                        fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
                }
            }
            total
        };
        let before = cpu_ticks("idle-");
        thread::sleep(Duration::from_millis(300));
        let after = cpu_ticks("idle-");
        assert!(
            after - before <= 2,
            "idle pool used {} ticks",
            after - before
        );
    }

    #[test]
    fn pinned_pool_threads() {
        let topo = CpuTopology::detect();
        let plan = topo.plan(&PlanRequest::default()).unwrap();
        let pool = Pool::new(ThreadSpec::cpu_workers(&plan.workers)).unwrap();
        assert_eq!(pool.len(), plan.workers.len());
        // Linux allows a process to pin its own threads to its allowed PUs.
        assert!(pool.pinned().iter().all(|&p| p), "{:?}", pool.pinned());
        let seen: Vec<Mutex<Option<Vec<usize>>>> =
            (0..pool.len()).map(|_| Mutex::new(None)).collect();
        pool.broadcast(&|i| *seen[i].lock().unwrap() = current_thread_pus())
            .unwrap();
        for (i, s) in seen.iter().enumerate() {
            if let Some(bound) = s.lock().unwrap().clone() {
                assert_eq!(bound, plan.workers[i].pus);
            }
        }
    }
}
