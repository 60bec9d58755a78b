//! Programs of several kernels over the same buffers, run back to back.
//!
//! A [`Program`] is a list of steps run in order, a number of times or until
//! a host step says stop: kernel steps (a kernel, its index space or a
//! sub-range of it, a scheduler, the devices, and a function that builds
//! the step's [`Args`] from the program's state) and host steps (a closure
//! over that state, between kernels: the scalar updates of an iterative
//! solver, a convergence test over reduction results).
//!
//! # What a program does that a loop of runs does not
//!
//! - **The workers stay awake across steps.** [`Program::run`] holds the
//!   engine's pool awake ([`Engine::keep_awake`]) for its whole length: a
//!   CPU worker or GPU dispatch thread that finished its share of a step
//!   spins (yielding its core) for the next step's packages instead of
//!   parking, so no step pays a futex wake-up and the OS scheduler's
//!   latency to start its claimants. The price: the pool's cores stay busy
//!   while host steps run.
//! - **Each kernel keeps what the scheduler learned** about it across
//!   iterations: its estimator lives in the [`Kernel`], and every step of
//!   one kernel feeds the same one (two steps of one kernel share it).
//! - **Data stays where it is.** On a staged engine (device-local mirrors
//!   on a discrete GPU) a step reads what the earlier steps left in the
//!   mirrors; nothing goes back to the host unless a step on the CPU, or
//!   host code that reads a buffer ([`Buffer::as_slice`]), needs it (the
//!   buffers' lazy host coherence).
//!
//! A step is run exactly once per iteration, in order. A failing step stops
//! the program with [`Error::ProgramStep`], which names the step, its
//! iteration and the cause; a host step fails the program by returning
//! [`Flow::Fail`].
//!
//! The state `S` owns (or borrows) what the steps share: the buffers and
//! reductions, the host's scalars. A kernel step's function borrows from it
//! for that step only, so one step may write a buffer the next one reads.
//!
//! [`Buffer::as_slice`]: crate::Buffer::as_slice

use crate::engine::{Devices, Engine};
use crate::error::{Error, Result};
use crate::exec::kernel::{Args, IndexSpace, Kernel};
use crate::exec::report::Report;
use crate::sched::Scheduler;
use std::ops::Range;
use std::time::Instant;

/// What a host step tells the program.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Flow {
    /// Go on with the next step.
    Continue,
    /// Stop after this step: no later step runs, in this iteration or any
    /// other; [`Program::run`] returns its report.
    Stop,
    /// Fail the program with this message ([`Error::HostStep`] inside
    /// [`Error::ProgramStep`]).
    Fail(String),
}

/// A kernel step's function: the step's arguments, borrowed from the
/// program's state for the step only.
type ArgsFn<'k, S> = Box<dyn for<'a> FnMut(&'a mut S) -> Args<'a> + 'k>;

/// A host step's closure.
type HostFn<'k, S> = Box<dyn FnMut(&mut S) -> Flow + 'k>;

/// One step of a program.
enum Step<'k, S> {
    /// A run of a kernel.
    Kernel {
        kernel: &'k Kernel,
        space: IndexSpace,
        units: Option<Range<u64>>,
        scheduler: Scheduler,
        devices: Devices,
        args: ArgsFn<'k, S>,
    },
    /// Host code between kernels.
    Host(HostFn<'k, S>),
}

impl<S> Step<'_, S> {
    /// The step's name in reports and errors.
    fn name(&self) -> &str {
        match self {
            Step::Kernel { kernel, .. } => kernel.name(),
            Step::Host(_) => "host",
        }
    }
}

/// What one step of a program did over a [`Program::run`].
#[derive(Debug, Clone, Default)]
pub struct StepReport {
    /// The step's name: its kernel's, or `host`.
    pub name: String,
    /// How many times it ran (once per iteration reached).
    pub runs: u64,
    /// Seconds it took in all: the runs' own times ([`Report::time_s`]) for
    /// a kernel step, the closure's wall time for a host step.
    pub time_s: f64,
    /// The report of its last run (kernel steps).
    pub last: Option<Report>,
}

/// What a [`Program::run`] did.
#[derive(Debug, Clone, Default)]
pub struct ProgramReport {
    /// Iterations started (the last one may have stopped early, by
    /// [`Flow::Stop`]).
    pub iterations: u64,
    /// Whether a host step stopped the program.
    pub stopped: bool,
    /// Wall time of the whole run, in seconds.
    pub time_s: f64,
    /// One per step, in program order.
    pub steps: Vec<StepReport>,
}

impl ProgramReport {
    /// Seconds spent in the kernel steps' runs, in all.
    pub fn kernel_time_s(&self) -> f64 {
        self.steps
            .iter()
            .filter(|s| s.last.is_some())
            .map(|s| s.time_s)
            .sum()
    }
}

/// A program of several kernels over the same buffers, with host steps
/// between them. Built by
/// [`Engine::program`], run by [`Program::run`] (as many times as wanted:
/// what the kernels learned carries over).
///
/// ```no_run
/// # use coexec_engine::{Args, Engine, Flow, IndexSpace, Kernel, Buffer};
/// # fn f(engine: &Engine, scale: &Kernel, x: Buffer<f32>, y: Buffer<f32>)
/// #     -> coexec_engine::Result<()> {
/// struct State { x: Buffer<f32>, y: Buffer<f32>, rounds: u32 }
/// let mut state = State { x, y, rounds: 0 };
/// let space = IndexSpace::D1(1024);
/// let mut program = engine
///     .program::<State>()
///     .kernel(scale, space, |s| Args::new().input(&s.x).output(&mut s.y))
///     .kernel(scale, space, |s| Args::new().input(&s.y).output(&mut s.x))
///     .host(|s| {
///         s.rounds += 1;
///         Flow::Continue
///     });
/// let report = program.run(&mut state, 10)?;
/// assert_eq!(report.iterations, 10);
/// # Ok(()) }
/// ```
pub struct Program<'k, S> {
    engine: Engine,
    steps: Vec<Step<'k, S>>,
    scheduler: Scheduler,
    devices: Devices,
    /// Hold the pool awake during [`Program::run`].
    awake: bool,
}

impl<S> std::fmt::Debug for Program<'_, S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.steps.iter().map(Step::name).collect();
        f.debug_struct("Program")
            .field("steps", &names)
            .field("scheduler", &self.scheduler)
            .field("devices", &self.devices)
            .field("awake", &self.awake)
            .finish()
    }
}

impl Engine {
    /// A new, empty program over state `S` (see [`Program`]): its kernel
    /// steps run with HGuided on every device unless
    /// [`Program::scheduler`] and [`Program::devices`] say otherwise.
    pub fn program<'k, S>(&self) -> Program<'k, S> {
        Program {
            engine: self.clone(),
            steps: Vec::new(),
            scheduler: Scheduler::hguided(),
            devices: Devices::ALL,
            awake: true,
        }
    }
}

impl<'k, S> Program<'k, S> {
    /// The scheduler of the kernel steps added after this call.
    pub fn scheduler(mut self, scheduler: Scheduler) -> Self {
        self.scheduler = scheduler;
        self
    }

    /// The devices of the kernel steps added after this call.
    pub fn devices(mut self, devices: Devices) -> Self {
        self.devices = devices;
        self
    }

    /// Whether [`run`](Self::run) holds the pool awake between steps (the
    /// default: yes). `false` lets the threads park after each step, as
    /// separate runs do: what a program gains by holding them can so be
    /// measured, and on a machine whose cores are shared with other work
    /// (or a host step that needs every core) parking may be the better
    /// choice.
    pub fn keep_awake(mut self, on: bool) -> Self {
        self.awake = on;
        self
    }

    /// Adds a step that runs `kernel` over `space` (as [`Engine::run`]),
    /// with the arguments `args` builds from the program's state.
    pub fn kernel<F>(self, kernel: &'k Kernel, space: IndexSpace, args: F) -> Self
    where
        F: for<'a> FnMut(&'a mut S) -> Args<'a> + 'k,
    {
        self.push_kernel(kernel, space, None, Box::new(args))
    }

    /// Adds a step that runs the units `units` of `space` only (as
    /// [`Engine::run_range`]).
    pub fn kernel_range<F>(
        self,
        kernel: &'k Kernel,
        space: IndexSpace,
        units: Range<u64>,
        args: F,
    ) -> Self
    where
        F: for<'a> FnMut(&'a mut S) -> Args<'a> + 'k,
    {
        self.push_kernel(kernel, space, Some(units), Box::new(args))
    }

    /// Adds a host step: `f` runs on the calling thread between the steps
    /// around it, with the state (reduction results, buffers, scalars).
    pub fn host<F>(mut self, f: F) -> Self
    where
        F: FnMut(&mut S) -> Flow + 'k,
    {
        self.steps.push(Step::Host(Box::new(f)));
        self
    }

    /// How many steps the program has.
    pub fn len(&self) -> usize {
        self.steps.len()
    }

    /// Whether the program has no step.
    pub fn is_empty(&self) -> bool {
        self.steps.is_empty()
    }

    fn push_kernel(
        mut self,
        kernel: &'k Kernel,
        space: IndexSpace,
        units: Option<Range<u64>>,
        args: ArgsFn<'k, S>,
    ) -> Self {
        self.steps.push(Step::Kernel {
            kernel,
            space,
            units,
            scheduler: self.scheduler.clone(),
            devices: self.devices,
            args,
        });
        self
    }

    /// Runs the steps in order, `iterations` times or until a host step
    /// returns [`Flow::Stop`], with the pool held awake throughout (see
    /// [`Engine::keep_awake`](crate::Engine::keep_awake)).
    ///
    /// # Errors
    ///
    /// [`Error::ProgramStep`] where a step failed (the cause inside it,
    /// [`Error::HostStep`] for a host step's [`Flow::Fail`]); the steps
    /// after it did not run.
    pub fn run(&mut self, state: &mut S, iterations: u64) -> Result<ProgramReport> {
        let engine = self.engine.clone();
        let _awake = self.awake.then(|| engine.keep_awake());
        let mut report = ProgramReport {
            steps: self
                .steps
                .iter()
                .map(|s| StepReport {
                    name: s.name().to_string(),
                    ..StepReport::default()
                })
                .collect(),
            ..ProgramReport::default()
        };
        let t0 = Instant::now();
        'program: for iteration in 0..iterations {
            report.iterations = iteration + 1;
            for (index, step) in self.steps.iter_mut().enumerate() {
                let flow = run_step(&engine, step, state, &mut report.steps[index]);
                let fail = |source: Error| Error::ProgramStep {
                    step: index,
                    name: report.steps[index].name.clone(),
                    iteration,
                    source: Box::new(source),
                };
                match flow.map_err(fail)? {
                    Flow::Continue => {}
                    Flow::Stop => {
                        report.stopped = true;
                        break 'program;
                    }
                    Flow::Fail(message) => return Err(fail(Error::HostStep(message))),
                }
            }
        }
        report.time_s = t0.elapsed().as_secs_f64();
        Ok(report)
    }
}

/// Runs one step and records it in `out`.
fn run_step<S>(
    engine: &Engine,
    step: &mut Step<'_, S>,
    state: &mut S,
    out: &mut StepReport,
) -> Result<Flow> {
    out.runs += 1;
    match step {
        Step::Kernel {
            kernel,
            space,
            units,
            scheduler,
            devices,
            args,
        } => {
            let args = args(state);
            let r = match units {
                None => engine.run(kernel, args, *space, scheduler, *devices)?,
                Some(u) => {
                    engine.run_range(kernel, args, *space, u.clone(), scheduler, *devices)?
                }
            };
            out.time_s += r.time_s;
            out.last = Some(r);
            Ok(Flow::Continue)
        }
        Step::Host(f) => {
            let t = Instant::now();
            let flow = f(state);
            out.time_s += t.elapsed().as_secs_f64();
            Ok(flow)
        }
    }
}
