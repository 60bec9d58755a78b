//! One run, in named steps: which devices take part, the plan, the claimants
//! at work, and the report.

use super::phases::Phases;
use super::{Devices, Engine};
use crate::error::{Error, Result};
use crate::exec::cpu::{self, CpuRole};
use crate::exec::gpu::{self, GpuRole, GpuUnit};
use crate::exec::idle::Standby;
use crate::exec::kernel::{Args, Geometry, Kernel};
use crate::exec::pool::Pool;
use crate::exec::reduce;
use crate::exec::report::{DeviceReport, PackageLog, Report};
use crate::exec::staging::Staging;
use crate::mem::{BufferBinding, MemoryPlacement};
use crate::outcomes::{median, KEEP};
use crate::sched::{
    Cost, DeviceKind, DeviceSlot, Plan, PowerEstimator, Scheduler, StartCost, StealBoard,
    ThroughputEstimator, WorkQueue,
};
use std::borrow::Cow;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A GPU of a run once its dispatch loop is done: its staged plan, or
/// why it could not take part (its mirrors or binding set could not be
/// made).
#[derive(Default)]
struct Prepared<'a> {
    staging: Option<Staging<'a>>,
    error: Option<Error>,
}

/// The devices of one run.
struct RunDevices<'e> {
    /// The configuration the learner chose to measure, if any (given back
    /// to it with the run's time).
    mode: Option<crate::outcomes::Mode>,
    /// The CPU workers take part.
    cpu: bool,
    /// The GPUs that take part, each with its engine GPU index, in engine
    /// order.
    gpus: Vec<(usize, &'e GpuUnit)>,
    /// Which of the engine's devices (slots: 0 the CPU, `1 + g` engine GPU
    /// `g`, `1 + G` the SPIR-V CPU device of an engine of `G` GPUs) could
    /// take part, including those that sat the run out.
    present: Vec<usize>,
    /// Why the CPU, asked for, could not take part (no implementation).
    cpu_note: Option<String>,
    /// The devices asked for whose limits could not serve the run.
    left_out: Vec<super::limits::LeftOut>,
    /// The run's GPU transfers on its transfer queue: a lone GPU's run
    /// (see [`crate::depth`]), a co-executed first run, or a run of
    /// several GPUs without the CPU workers (see
    /// [`Engine::shared_on_own_queue`]).
    own_queue: bool,
    /// The run measures a device first: the others join it once its time
    /// box has passed (see [`crate::learn::Measure`]).
    measure: Option<crate::learn::Measure>,
}

impl RunDevices<'_> {
    /// Whether engine device `slot` (0: CPU, `1 + g`: GPU `g`) could take
    /// part.
    fn is_present(&self, slot: usize) -> bool {
        self.present.contains(&slot)
    }

    /// Whether one GPU runs alone (no CPU workers, no other GPU).
    fn alone(&self) -> bool {
        !self.cpu && self.gpus.len() == 1
    }

    /// Whether two or more GPUs run without the CPU workers.
    fn gpus_only(&self) -> bool {
        !self.cpu && self.gpus.len() >= 2
    }

    /// Whether pool thread `thread` runs a claimant of the run: a GPU's
    /// dispatch loop, or one of the engine's `workers` CPU workers.
    fn posts_to(&self, thread: usize, workers: usize) -> bool {
        self.gpus.iter().any(|(_, u)| u.thread == thread) || (self.cpu && thread < workers)
    }

    /// The pool thread of `pool` (whose first `workers` threads are the
    /// CPU workers) whose claimant the caller runs itself, the one on the
    /// caller's own core where one of the run's is pinned there, and the
    /// run's standby (see [`Standby`]): a CPU worker, that one where it is
    /// one, else the first. A GPU never stands by, as it may fail and
    /// leave the others' share to nobody: a run without CPU workers has
    /// no standby (every claimant stays until it is done, the caller
    /// parked).
    fn standby(&self, pool: &Pool, workers: usize) -> (Option<usize>, Standby) {
        if !self.cpu || workers == 0 {
            return (None, Standby::none());
        }
        let wake = |thread: usize| self.posts_to(thread, workers);
        let here = pool.thread_here(&wake);
        let worker = here.filter(|&t| t < workers).unwrap_or(0);
        (
            here,
            Standby {
                thread: Some(worker),
            },
        )
    }

    /// Whether the run may have a standby, which polls (see [`Standby`]):
    /// no device of the run runs on the host's cores (a CPU implementation
    /// of Vulkan).
    fn polls(&self) -> bool {
        self.gpus
            .iter()
            .all(|(_, u)| u.device.info().device_type != crate::vk::DeviceType::Cpu)
    }

    /// The pool thread whose job the caller runs itself: a lone GPU's
    /// dispatch loop (see `gpu_inline_in_env`).
    fn on_caller(&self) -> Option<usize> {
        (self.alone() && gpu_inline_in_env()).then(|| self.gpus[0].1.thread)
    }

    /// The run device index of the `k`-th GPU of the run: the CPU (when it
    /// takes part) comes first.
    fn gpu_device(&self, k: usize) -> usize {
        usize::from(self.cpu) + k
    }

    /// The engine GPU that is the run's only device, if one is (no CPU
    /// workers, no other GPU; `n_gpus`: the engine's GPUs, the SPIR-V CPU
    /// device past them).
    fn only_gpu(&self, n_gpus: usize) -> Option<usize> {
        match self.gpus.as_slice() {
            [(g, _)] if !self.cpu && *g < n_gpus => Some(*g),
            _ => None,
        }
    }

    /// The run's devices in order (CPU, then each GPU) as the plan sees
    /// them, and the slot of each in the kernel's estimator.
    /// `spirv`: the SPIR-V CPU device's engine index and package granule;
    /// `wave`: every GPU's wave in units, where a testing aid sets it
    /// (see `Engine::assumed_wave`).
    fn slots(
        &self,
        workers: usize,
        geometry: &Geometry,
        (spirv, wave): (Option<(usize, u64)>, Option<u64>),
    ) -> (Vec<DeviceSlot>, Vec<usize>) {
        let mut slots = Vec::new();
        let mut engine_index = Vec::new();
        if self.cpu {
            slots.push(DeviceSlot::cpu(workers));
            engine_index.push(0usize);
        }
        for &(g, unit) in &self.gpus {
            if let Some(granule) = spirv.filter(|s| s.0 == g).map(|s| s.1) {
                slots.push(DeviceSlot::gpu().with_granule(granule));
                engine_index.push(1 + g);
                continue;
            }
            // One wave of the GPU in units: work-groups (1-D) or rows of
            // work-groups (2-D); 1 where the GPU's width is unknown.
            let granule = wave.unwrap_or_else(|| {
                unit.device.info().shader_cores.map_or(1, |c| {
                    let invocations = geometry.local.iter().map(|&l| l.max(1)).product::<u32>();
                    c.wave_groups(invocations)
                        .div_ceil(geometry.groups_per_unit())
                })
            });
            slots.push(DeviceSlot::gpu().with_granule(granule));
            engine_index.push(1 + g);
        }
        (slots, engine_index)
    }
}

/// What every claimant of one run shares.
struct Shared<'r> {
    geometry: &'r Geometry,
    plan: &'r Plan,
    queue: &'r WorkQueue,
    estimates: &'r Remap<'r>,
    /// Rung when the queue is done or aborted (idle claimants wake).
    bell: &'r crate::exec::idle::Bell,
}

/// What the claimants of one run leave behind.
struct Lanes {
    /// Wall time of the run, in seconds.
    time_s: f64,
    cpu: cpu::Lanes,
    /// One per GPU of the run, in its order.
    gpus: Vec<gpu::Lane>,
}

/// The GPUs a run may use, each with its engine GPU index.
pub(super) type Units<'e> = Vec<(usize, &'e GpuUnit)>;

impl Engine {
    /// [`run`](Self::run) and [`run_range`](Self::run_range) without the
    /// validation check of [`validated`](Self::validated), over the units
    /// `geometry` covers: binds the reductions' partials, runs, and
    /// combines them (see [`crate::exec::reduce`]).
    pub(super) fn run_unvalidated(
        &self,
        kernel: &Kernel,
        mut args: Args<'_>,
        geometry: Geometry,
        scheduler: &Scheduler,
        devices: Devices,
    ) -> Result<Report> {
        if args.reductions.is_empty() {
            return self.run_bound(kernel, args, &geometry, scheduler, devices);
        }
        let mut targets = std::mem::take(&mut args.reductions);
        let memory = &self.inner.memory;
        reduce::prepare(&mut targets, memory, &geometry)?;
        let mut report = {
            let bound = reduce::bind(args, &targets);
            self.run_bound(kernel, bound, &geometry, scheduler, devices)?
        };
        // The combine is part of what the run costs its caller (6 MiB of
        // k-means partials took 0.4-0.6 ms on one core): in its time.
        let combine = Instant::now();
        let spread = |n: usize, task: &(dyn Fn(usize) + Sync)| self.spread(n, task);
        reduce::finish(&mut targets, &geometry, Some(&spread));
        report.time_s += combine.elapsed().as_secs_f64();
        Ok(report)
    }

    /// Runs `task(i)` for every `i` in `0..n` on the engine's pool threads
    /// (but the caller's PU's: see [`crate::exec::pool::Pool::broadcast_elsewhere`]),
    /// each thread taking the next task until none is left (see
    /// [`reduce::SpreadFn`]); `false` where the pool could not run it
    /// (nothing ran then).
    fn spread(&self, n: usize, task: &(dyn Fn(usize) + Sync)) -> bool {
        let pool = &self.inner.pool;
        if pool.is_empty() {
            return false;
        }
        let next = std::sync::atomic::AtomicUsize::new(0);
        let job = |_: usize| loop {
            // Relaxed: the increment only hands out indices, each once (an
            // RMW reads the latest value); the tasks' effects reach the
            // caller through the broadcast's join.
            let i = next.fetch_add(1, Ordering::Relaxed);
            if i >= n {
                break;
            }
            task(i);
        };
        // A task that panicked (none of the built-in combines can) left
        // its block uncombined: an engine bug, reported where it shows.
        match pool.broadcast_elsewhere(&job) {
            Ok(results) => {
                debug_assert!(results.iter().all(Result::is_ok), "a combine panicked");
                true
            }
            Err(_) => false,
        }
    }

    /// A run whose reductions, if any, are bound.
    ///
    /// What the kernel learns is kept for the whole space (its shape
    /// class), also in a run of a sub-range: the estimator's figures are
    /// per unit, so consecutive sub-ranges of one space reuse them.
    fn run_bound(
        &self,
        kernel: &Kernel,
        args: Args<'_>,
        geometry: &Geometry,
        scheduler: &Scheduler,
        devices: Devices,
    ) -> Result<Report> {
        let inner = &*self.inner;
        let mut steps = Phases::start();
        let (use_cpu, units, cpu_note) = self.select(kernel, devices)?;
        self.validate_args(kernel, &args, geometry)?;
        let cpu_alone = use_cpu && units.is_empty();
        let (units, left_out) = self.within_limits(use_cpu, units, &args, geometry)?;
        steps.mark("validated");
        if self.takes_rayon_baseline(kernel, cpu_alone) {
            let _serial = inner.run_lock.lock().unwrap_or_else(|p| p.into_inner());
            return self.run_rayon(kernel, &args, geometry);
        }
        let from_profile = inner
            .learning
            .prepare(kernel, geometry.space, geometry.total);
        let cpu_start = self.cpu_start_cost(&args, use_cpu);
        // Only a first run from a profile counts the GPUs' uploads (see
        // `sit_out`), at the bandwidths the profile kept: reading the
        // mirrors costs every other run nothing.
        let gpu_start = match inner.learning.first_from_profile(kernel) {
            true => {
                self.seed_transfer_rates(kernel);
                self.gpu_start_costs(kernel, &args, &units, geometry)
            }
            false => Vec::new(),
        };
        // What each staged GPU's transfers take per unit, read once for
        // the run: the learner predicts a GPU's run no faster than its
        // downloads carry its results home, the plan sizes packages with
        // both ways.
        let moves = self.gpu_transfers(kernel, &args, &units, geometry);
        let shipping = downloads_by_slot(&moves);
        steps.mark("learner prepared");
        let (mut run, scheduler) = self.sit_out(
            kernel,
            scheduler,
            devices,
            (use_cpu, units, cpu_start),
            (gpu_start, &shipping),
            geometry.units,
        )?;
        run.cpu_note = cpu_note;
        run.left_out = left_out;
        steps.mark("devices chosen");
        self.rouse_claimants(&run);
        let (slots, engine_index) = run.slots(
            inner.workers,
            geometry,
            (self.spirv_slot(geometry), self.assumed_wave()),
        );
        scheduler.validate(slots.len())?;
        let (transfers, uploads, downloads) = transfer_cost(&run, &moves);
        let depth = self.lone_depth(kernel, &run, &scheduler, &transfers);
        run.own_queue = match depth {
            Some((_, d)) => d.own_queue,
            None => self.shared_on_own_queue(kernel, &run, &scheduler, &transfers),
        };
        let estimates = Remap {
            inner: &kernel.estimator,
            map: &engine_index,
            transfers,
            // Where the GPU's transfers share its compute queue they run in
            // queue order with its dispatches: no package's upload
            // overlaps another's compute, and nothing is gained by cutting
            // its packages for it (see `Plan::pipelined`).
            uploads: if run.own_queue { uploads } else { Vec::new() },
            downloads: match run.own_queue && cuts_for_downloads(&run) {
                true => downloads,
                false => Vec::new(),
            },
            scale: inner.learning.split_scales(kernel, &engine_index),
            lone_packages: depth.map(|(_, d)| d.packages),
            class: inner.learning.run_classes(&engine_index),
        };
        let mut plan = Plan::new(&scheduler, &slots, geometry.units, &estimates)?;
        if let Some(m) = run.measure {
            plan = plan.measuring(&joining(&engine_index, m.slot));
        }
        tracing::debug!(
            scale = ?estimates.scale,
            costs = ?(0..slots.len()).map(|d| estimates.cost(d)).collect::<Vec<_>>(),
            irregularity = ?(0..slots.len()).map(|d| estimates.irregularity(d)).collect::<Vec<_>>(),
            "a run's sizing: each run device's split scale, cost and irregularity as the plan reads them"
        );
        let queue = WorkQueue::new(geometry.units);
        steps.mark("planned");
        let _serial = inner.run_lock.lock().unwrap_or_else(|p| p.into_inner());
        let bell = crate::exec::idle::Bell::default();
        let shared = Shared {
            geometry,
            plan: &plan,
            queue: &queue,
            estimates: &estimates,
            bell: &bell,
        };
        let lanes = self.execute(kernel, &args, &run, &shared, &mut steps)?;
        let time_s = lanes.time_s;
        // A GPU's first package brought up the rest of an input read again
        // unchanged: the run's time holds a one-time transfer.
        let one_time = lanes.gpus.iter().any(gpu::Lane::one_time);
        // Each GPU's cold first package of the kernel (by estimator slot,
        // `1 + g`), for the profile.
        let cold: Vec<(usize, u64, f64)> = run
            .gpus
            .iter()
            .zip(&lanes.gpus)
            .filter_map(|(&(g, _), lane)| lane.cold().map(|(n, s)| (1 + g, n, s)))
            .collect();
        let memory = match run.gpus.is_empty() {
            false => inner.memory.placement(),
            true => MemoryPlacement::ZeroCopy,
        };
        let (devices_out, packages) = self.collect(&run, lanes, &queue)?;
        steps.mark("collected");
        let energy = self.energy(time_s, &devices_out);
        steps.mark("energy");
        // `devices_out` lists the run's devices in `engine_index` order.
        let shares: Vec<crate::split::Share> = engine_index
            .iter()
            .zip(&devices_out)
            .map(|(&slot, d)| crate::split::Share {
                slot,
                items: d.items,
                start_s: d.first_start_s,
                finish_s: d.settled_s,
            })
            .collect();
        // A run that paid a one-time transfer measures neither its
        // configuration nor a lone GPU's depth.
        let timed = !one_time;
        let uploaded = devices_out.iter().any(|d| d.transfers.upload_bytes > 0);
        let measured = run.measure.map(|measure| crate::learn::Measured {
            measure,
            seconds: time_s,
            units: geometry.units,
            ran: shares.iter().any(|s| s.slot == measure.slot && s.items > 0),
        });
        let outcome = run
            .mode
            .filter(|_| timed)
            .map(|m| (m, time_s, geometry.units));
        inner.learning.after_run(
            kernel,
            (outcome, measured),
            &shares,
            depth.map(|(slot, d)| (slot, d.packages, time_s, geometry.units)),
            (timed, uploaded),
            (&self.learned_transfer_rates(), &cold),
        );
        steps.mark("reported");
        steps.emit();
        Ok(Report {
            time_s,
            items: geometry.items_in(0..geometry.units),
            units: geometry.units,
            devices: devices_out,
            packages,
            from_profile,
            one_time_transfer: one_time,
            memory,
            energy,
        })
    }

    /// The devices of `devices` that can take part: the CPU workers (where
    /// the engine has some) and the GPUs asked for (unless they failed
    /// earlier). An error where none can, where a GPU asked for by index
    /// does not exist, or where the kernel lacks the implementation of a
    /// device that takes part.
    ///
    /// The CPU share runs natively (the first `bool`), on the SPIR-V CPU
    /// device (then the first of the units), or, where neither can run it
    /// but GPUs can, not at all: the note says why.
    fn select(
        &self,
        kernel: &Kernel,
        devices: Devices,
    ) -> Result<(bool, Units<'_>, Option<String>)> {
        let inner = &*self.inner;
        let path = self.cpu_path(kernel, devices);
        let use_cpu = matches!(path, Some(Ok(crate::CpuImpl::Native)));
        if let Some(missing) = (inner.gpus.len()..crate::engine::MAX_GPUS)
            .find(|&g| !devices.gpu && devices.has_gpu(g))
        {
            return Err(Error::NoDeviceSelected(format!(
                "gpu{missing} does not exist: the engine has {} GPU(s), gpu0..gpu{}",
                inner.gpus.len(),
                inner.gpus.len() - 1
            )));
        }
        let mut units: Units<'_> = inner
            .gpus
            .iter()
            .enumerate()
            .filter(|(g, u)| devices.has_gpu(*g) && !u.device.is_lost())
            .collect();
        if !devices.cpu && !devices.any_gpu() {
            return Err(Error::NoDeviceSelected(
                "select the CPU, a GPU or both".into(),
            ));
        }
        let no_workers = inner.workers == 0 && inner.spirv.is_none();
        if devices.cpu && no_workers && !devices.any_gpu() {
            return Err(Error::NoDeviceSelected(
                "the engine has no CPU workers".into(),
            ));
        }
        let cpu_runs = matches!(path, Some(Ok(_)));
        if devices.any_gpu() && units.is_empty() && !cpu_runs {
            return Err(Error::NoDeviceSelected(
                "the GPU failed earlier and was left out; recreate the engine".into(),
            ));
        }
        if !units.is_empty() && kernel.pipeline.is_none() {
            return Err(Error::MissingImplementation("GPU"));
        }
        let note = match path {
            Some(Err(_)) if units.is_empty() => return Err(Error::MissingImplementation("CPU")),
            // An engine without workers leaves the CPU out silently, as
            // ever; a kernel without a CPU implementation says why.
            Some(Err(why)) => Some(why).filter(|_| kernel.cpu.is_none()),
            Some(Ok(crate::CpuImpl::Spirv)) => {
                // `cpu_path` chose it: the engine has it.
                units.extend(inner.spirv.as_ref().map(|u| (inner.gpus.len(), u)));
                units.rotate_right(usize::from(inner.spirv.is_some()));
                None
            }
            _ => None,
        };
        Ok((use_cpu, units, note))
    }

    /// The devices that take part once those that would only slow the run
    /// down sat it out (the learner's decision, with the configuration it
    /// measures), and the scheduler for them: hints are given for the
    /// devices asked for (the CPU, then each GPU asked for in engine
    /// order), so those of devices that cannot take part are dropped, then
    /// those of devices that sit out. `shipping`: each staged GPU's
    /// downloads per unit, by estimator slot (see
    /// [`downloads_by_slot`]).
    fn sit_out<'a>(
        &'a self,
        kernel: &Kernel,
        scheduler: &'a Scheduler,
        devices: Devices,
        (use_cpu, units, cpu_start): (bool, Units<'a>, StartCost),
        (gpu_start, shipping): (Vec<StartCost>, &[(usize, f64)]),
        n_units: u64,
    ) -> Result<(RunDevices<'a>, Cow<'a, Scheduler>)> {
        let inner = &*self.inner;
        let mut requested: Vec<bool> = Vec::new();
        if devices.cpu {
            let spirv = units.first().is_some_and(|&(g, _)| g == inner.gpus.len());
            requested.push(use_cpu || spirv);
        }
        requested.extend(
            (0..inner.gpus.len())
                .filter(|&g| devices.has_gpu(g))
                .map(|g| units.iter().any(|&(u, _)| u == g)),
        );
        let mut scheduler = Cow::Borrowed(scheduler);
        if requested.contains(&false) {
            scheduler = Cow::Owned(scheduler.for_devices(&requested));
        }
        // The devices that can take part: (estimator slot, claimants).
        let mut present: Vec<(usize, usize)> = Vec::new();
        if use_cpu {
            present.push((0, inner.workers));
        }
        present.extend(units.iter().map(|&(g, _)| (1 + g, 1)));
        scheduler.validate(present.len())?;
        // The cost model counts the CPU's wait alone: a GPU's uploads are
        // mostly paid once (inputs unchanged between runs), and counted in
        // the model they kept a stencil on the CPU alone, whose GPU then
        // never brought its input up. A first run from a profile counts
        // them (see `Outcomes::first_from_profile`).
        let mut start: Vec<StartCost> = Vec::with_capacity(present.len());
        if use_cpu {
            start.push(cpu_start);
        }
        let mut first = start.clone();
        first.extend(gpu_start);
        let decision = inner.learning.decide(
            kernel,
            &scheduler,
            &present,
            (&start, &first, shipping),
            n_units,
        );
        let (sit, edp) = self.edp_sit_out(kernel, &scheduler, &present, n_units, decision.sit);
        let mode = decision.mode.filter(|_| !edp);
        let measure = decision.measure.filter(|_| !edp);
        let sits = |slot: usize| present.iter().zip(&sit).any(|(&(p, _), &s)| p == slot && s);
        let run = RunDevices {
            mode,
            cpu: use_cpu && !sits(0),
            gpus: units.into_iter().filter(|&(g, _)| !sits(1 + g)).collect(),
            present: present.iter().map(|&(p, _)| p).collect(),
            cpu_note: None,
            left_out: Vec::new(),
            own_queue: false,
            measure,
        };
        if sit.contains(&true) {
            let keep: Vec<bool> = sit.iter().map(|s| !s).collect();
            scheduler = Cow::Owned(scheduler.for_devices(&keep));
        }
        Ok((run, scheduler))
    }

    /// Wakes the pool threads the run will post its claimants to (see
    /// [`crate::exec::pool::Pool::rouse`]) while it is being planned; not
    /// where the caller drives a lone GPU's loop itself, nor where the
    /// environment sets `COEXEC_ROUSE=0`.
    fn rouse_claimants(&self, run: &RunDevices<'_>) {
        static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
        if run.on_caller().is_some() || !crate::switches::on_unless_zero(&ON, "COEXEC_ROUSE") {
            return;
        }
        let workers = self.inner.workers;
        self.inner
            .pool
            .rouse(&|thread| run.posts_to(thread, workers));
    }

    /// The run's `k`-th GPU ready to claim: its staged plan (`None`:
    /// zero-copy, or the SPIR-V CPU device; on a staged engine every GPU
    /// binds its own mirrors, allocated here where the buffer could not get
    /// them when it was made), the binding set of the run's buffers (its
    /// mirrors, else its views of the host bytes) and, where it may steal
    /// from the CPU, that of its stolen packages (see
    /// [`GpuRole::steal_set`](gpu::GpuRole::steal_set)).
    fn prepare_gpu<'a>(
        &self,
        kernel: &Kernel,
        args: &'a Args<'_>,
        run: &RunDevices<'_>,
        k: usize,
        geometry: &Geometry,
    ) -> Result<PreparedGpu<'a>> {
        let g = run.gpus[k].0;
        let (pipeline, _) =
            crate::engine::pipeline_on(kernel, g).ok_or(Error::MissingImplementation("GPU"))?;
        let staged =
            self.inner.memory.placement() == MemoryPlacement::Staged && g < self.inner.gpus.len();
        let staging = match staged {
            true => Some(Staging::new(
                &args.buffers,
                pipeline.interface(),
                geometry,
                g,
            )?),
            false => None,
        };
        let bufs: Vec<_> = match &staging {
            Some(s) => s.bindings()?,
            None => args
                .buffers
                .iter()
                .enumerate()
                .map(|(i, b)| {
                    BufferBinding::on(b.raw, g).ok_or(Error::ForeignBuffer { binding: i as u32 })
                })
                .collect::<Result<_>>()?,
        };
        // Stolen packages write the host copies themselves where they can
        // (see `GpuRole::steal_set`): there is a CPU to steal from.
        let steal_set = match staging
            .as_ref()
            .filter(|_| run.cpu && zero_copy_steals_on())
        {
            Some(s) => s
                .steal_bindings()
                .map(|b| b.and_then(|b| pipeline.bind_cached(&b)))
                .transpose()?,
            None => None,
        };
        Ok(PreparedGpu {
            set: pipeline.bind_cached(&bufs)?,
            steal_set,
            staging,
        })
    }

    /// Lazy host coherence, at a run's start: brings the host copies up to
    /// date from the GPUs' mirrors where the run needs them. Returns the
    /// bytes downloaded, and whether each CPU package must instead sync
    /// what it reads itself.
    fn sync_host_at_start(&self, args: &Args<'_>, run: &RunDevices<'_>) -> Result<(u64, bool)> {
        let inner = &*self.inner;
        // Lazy host coherence: the CPU's packages read and write the host
        // copies, and a GPU uploads what it reads from them, so they must
        // hold what earlier runs left in any other GPU's mirrors. A run of
        // the CPU with one GPU at most whose downloads do not queue behind
        // its packages (see `Engine::cpu_package_sync`) leaves that GPU's
        // stale bytes to each CPU package: it downloads what it reads.
        let n = inner.gpus.len();
        let only = run.only_gpu(n);
        let per_package_gpu = match run.gpus.as_slice() {
            [] => Some(None),
            [(g, _)] if *g < n => Some(Some(*g)),
            _ => None,
        };
        // Only what earlier runs left is stale (a run's own GPU results are
        // marked stale once it ended): where nothing is, the CPU packages
        // have nothing to sync and skip the per-package checks.
        let per_cpu_package = run.cpu
            && inner.memory.lazy().is_some()
            && per_package_gpu.is_some_and(|g| self.cpu_package_sync(g))
            && crate::exec::staging::any_stale(&args.buffers);
        let synced = match (per_cpu_package, per_package_gpu.flatten()) {
            (true, Some(g)) => crate::exec::staging::sync_for_host(&args.buffers, |j| j != g)?,
            (true, None) => 0,
            (false, _) => crate::exec::staging::sync_for_host(&args.buffers, |j| only != Some(j))?,
        };
        Ok((synced, per_cpu_package))
    }

    /// Runs the kernel: binds its buffers for each GPU, then every claimant
    /// (each CPU worker, each GPU's dispatch loop) takes packages until the
    /// queue is done.
    fn execute(
        &self,
        kernel: &Kernel,
        args: &Args<'_>,
        run: &RunDevices<'_>,
        shared: &Shared<'_>,
        steps: &mut Phases,
    ) -> Result<Lanes> {
        let inner = &*self.inner;
        // The run's time counts from here: the downloads at its start and
        // the mirrors settled at its end are part of what it costs (and of
        // what the learner compares configurations by).
        let begun = Instant::now();
        let (synced, per_cpu_package) = self.sync_host_at_start(args, run)?;
        let per_package = AtomicU64::new(0);
        let cpu_sync = per_cpu_package.then_some(&per_package);
        steps.mark("host synced");
        let wake = |thread: usize| run.posts_to(thread, inner.workers);
        // One GPU alone: the caller drives its dispatch loop.
        let inline = run.on_caller();
        // Otherwise the caller runs the claimant of its own core (`here`),
        // where the run has a standby.
        let (here, standby) = match inline {
            None if standby_in_env() && (run.polls() || self.standby_anywhere()) => {
                run.standby(&inner.pool, inner.workers)
            }
            _ => (None, Standby::none()),
        };
        let use_cpu = run.cpu;
        let board = StealBoard::new(
            if use_cpu && stealing() {
                inner.workers
            } else {
                0
            },
            shared.geometry.units,
            !run.gpus.is_empty(),
        );
        let cpu_role = use_cpu.then(|| CpuRole {
            device: 0,
            kernel: kernel.cpu.as_deref().expect("checked by select"),
            args,
            geometry: shared.geometry,
            workers: inner.workers,
            board: &board,
            thieves: (0..run.gpus.len()).map(|k| run.gpu_device(k)).collect(),
            bell: shared.bell,
            standby,
            sync: cpu_sync,
            #[cfg(feature = "test-hooks")]
            hold_units: (!run.gpus.is_empty())
                .then(|| {
                    inner
                        .cpu_hold
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .take()
                })
                .flatten(),
        });
        // Each GPU's staged plan once its loop ran, or why it could not
        // take part.
        let prepared: Vec<Mutex<Prepared<'_>>> =
            run.gpus.iter().map(|_| Mutex::default()).collect();
        let lanes = Lanes {
            time_s: 0.0,
            cpu: cpu::Lanes::new(if use_cpu { inner.workers } else { 0 }),
            gpus: run.gpus.iter().map(|_| gpu::Lane::default()).collect(),
        };
        let t0 = Instant::now();
        let (plan, queue, estimates) = (shared.plan, shared.queue, shared.estimates);
        let gpu_of = |thread: usize| run.gpus.iter().position(|(_, u)| u.thread == thread);
        let job = |thread: usize| {
            if let Some(k) = gpu_of(thread) {
                let slot = &mut *prepared[k].lock().unwrap_or_else(|p| p.into_inner());
                tracing::trace!(
                    gpu = k,
                    us = t0.elapsed().as_micros() as u64,
                    "a GPU's loop woke"
                );
                // Its mirrors (allocated on first use: milliseconds) and
                // binding set are made on the GPU's own thread, while the
                // CPU workers already run.
                match self.prepare_gpu(kernel, args, run, k, shared.geometry) {
                    Ok(PreparedGpu {
                        staging,
                        set,
                        steal_set,
                    }) => {
                        tracing::trace!(
                            gpu = k,
                            us = t0.elapsed().as_micros() as u64,
                            "a GPU's run prepared"
                        );
                        if let Some(mut role) =
                            self.gpu_role(kernel, args, run, k, shared, &set, (&board, standby))
                        {
                            role.staging = staging.as_ref();
                            role.steal_set = steal_set.as_deref();
                            gpu::dispatch_loop(&role, plan, queue, estimates, t0, &lanes.gpus[k]);
                        }
                        tracing::trace!(
                            gpu = k,
                            us = t0.elapsed().as_micros() as u64,
                            "a GPU's loop ended"
                        );
                        slot.staging = staging;
                    }
                    Err(e) => {
                        // It claims nothing: what only it would have
                        // claimed goes to the others, and the run fails
                        // with `e` once they are done.
                        let mut state = plan.claimant(run.gpu_device(k), 0);
                        plan.forfeit(queue, &mut state, estimates);
                        // Idle claimants find that work at once, not
                        // after their next sleep.
                        shared.bell.ring();
                        slot.error = Some(e);
                    }
                }
            } else if thread < inner.workers {
                if let Some(role) = &cpu_role {
                    cpu::worker_loop(role, thread, plan, queue, estimates, t0, &lanes.cpu);
                    tracing::trace!(
                        worker = thread,
                        us = t0.elapsed().as_micros() as u64,
                        "a worker's loop ended"
                    );
                }
            }
        };
        let spin = match standby.thread {
            Some(_) => CALLER_POLL,
            None => Duration::ZERO,
        };
        let results = match inline {
            Some(thread) => inner.pool.run_here(thread, &job),
            None => inner.pool.broadcast_with_caller(&wake, &job, here, spin),
        }
        .map_err(|e| Error::Cpu {
            message: "waking the pinned threads".into(),
            source: Some(Box::new(e)),
        })?;
        steps.mark("claimants done");
        tracing::trace!(us = t0.elapsed().as_micros() as u64, "the claimants joined");
        let (stagings, errors): (Vec<_>, Vec<_>) = prepared
            .into_iter()
            .map(|p| {
                let p = p.into_inner().unwrap_or_else(|p| p.into_inner());
                (p.staging, p.error)
            })
            .unzip();
        // (A run without a GPU reports no device of its own to count its
        // start's downloads against.)
        if let Some(lane) = lanes.gpus.first() {
            // Relaxed: the workers were joined above.
            lane.add_download(synced + per_package.load(Ordering::Relaxed));
        }
        self.settle_mirrors(args, run, &stagings, &lanes.gpus, shared.geometry)?;
        steps.mark("mirrors settled");
        if let Some(e) = errors.into_iter().flatten().next() {
            return Err(e);
        }
        let time_s = begun.elapsed().as_secs_f64();
        if let Some(Err(p)) = results.into_iter().find(Result::is_err) {
            // Kernel panics are caught per package; a panic outside a kernel
            // call is an engine bug: report it rather than hide it.
            return Err(Error::Cpu {
                message: format!("an executor thread panicked: {p}"),
                source: None,
            });
        }
        Ok(Lanes { time_s, ..lanes })
    }

    /// After the claimants of a run: what each mirror holds (see
    /// [`crate::exec::staging::finish_all`]), and, lazy, the host copies
    /// brought up to date from the mirrors of each GPU that failed while
    /// they can still be read (or the run fails).
    fn settle_mirrors(
        &self,
        args: &Args<'_>,
        run: &RunDevices<'_>,
        stagings: &[Option<Staging<'_>>],
        lanes: &[gpu::Lane],
        geometry: &Geometry,
    ) -> Result<()> {
        let staged: Vec<&Staging<'_>> = stagings.iter().flatten().collect();
        if staged.is_empty() {
            if self.inner.memory.placement() == MemoryPlacement::Staged {
                // CPU packages wrote the host copies of the outputs alone.
                crate::exec::staging::outputs_written_by_host(&args.buffers, geometry.space);
            }
            return Ok(());
        }
        for (s, lane) in stagings.iter().zip(lanes) {
            if let Some(s) = s {
                lane.staged(s);
            }
        }
        crate::exec::staging::finish_all(&staged);
        for ((s, lane), &(g, _)) in stagings.iter().zip(lanes).zip(&run.gpus) {
            // A failed GPU may be lost with what it left in its mirrors.
            if s.is_some() && lane.failed() {
                let bytes = crate::exec::staging::sync_for_host(&args.buffers, |j| j == g)?;
                lane.add_download(bytes);
            }
        }
        Ok(())
    }

    /// What the CPU would wait for before its first package if it took part
    /// (see [`StartCost`]): under lazy host coherence, bringing back to the
    /// host what earlier runs left in the GPUs' mirrors, at the slowest
    /// GPU's download bandwidth as its packages' downloads taught it (what
    /// it reads whole: all of it; what it reads by its items: its share).
    /// Nothing otherwise.
    fn cpu_start_cost(&self, args: &Args<'_>, use_cpu: bool) -> StartCost {
        if !use_cpu || self.inner.memory.lazy().is_none() {
            return StartCost::default();
        }
        let (whole, by_items) = crate::exec::staging::stale_for_cpu(&args.buffers);
        if whole + by_items == 0 {
            return StartCost::default();
        }
        let down = |s: &crate::exec::stagers::RunStagers| {
            s.rates().bandwidth(crate::sched::transfers::Way::Down)
        };
        // The dispatch loops' stagers: they learn from the GPUs' downloads.
        let stagers = self.inner.gpus.iter().filter_map(|u| u.stagers.as_ref());
        let bw = stagers.map(down).fold(f64::INFINITY, f64::min);
        let bw = if bw.is_finite() && bw > 0.0 {
            bw
        } else {
            crate::sched::transfers::SEED_BANDWIDTH
        };
        StartCost {
            fixed_s: whole as f64 / bw,
            by_share_s: by_items as f64 / bw,
        }
    }

    /// What each GPU of `units` would wait for before its first package
    /// if it took part (see [`StartCost`]), in their order: what its first
    /// package of the kernel in a process cost beyond its warm cost, as the
    /// profile kept it (see [`Learning::profile_cold`](crate::learn::Learning::profile_cold));
    /// and on a staged engine, the uploads of what its mirrors lack, at its upload
    /// bandwidth: what it reads whole (see
    /// [`crate::exec::staging::upfront_bytes`]), and what it reads by its
    /// items, of which it uploads its share. A first
    /// run from a profile adds them to the profile's times, which were
    /// measured with the inputs resident: a GPU alone that must first bring
    /// up a 134 MB input is no longer the fastest configuration its warm
    /// runs measured.
    fn gpu_start_costs(
        &self,
        kernel: &Kernel,
        args: &Args<'_>,
        units: &Units<'_>,
        geometry: &Geometry,
    ) -> Vec<StartCost> {
        let staged = self.inner.memory.placement() == MemoryPlacement::Staged;
        let pipeline = kernel.pipeline.as_ref().filter(|_| staged);
        units
            .iter()
            .map(|&(g, unit)| {
                let (Some(p), Some(stagers)) = (pipeline, unit.stagers.as_ref()) else {
                    return StartCost::default();
                };
                let iface = p.interface();
                let whole = crate::exec::staging::upfront_bytes(&args.buffers, iface, g);
                let (up, _) = crate::exec::staging::bytes_per_unit(
                    &args.buffers,
                    iface,
                    geometry.space,
                    geometry.total,
                    g,
                );
                let by_items = up * geometry.units as f64;
                let s = |bytes: f64| {
                    stagers
                        .rates()
                        .seconds(crate::sched::transfers::Way::Up, bytes)
                };
                StartCost {
                    fixed_s: s(whole as f64),
                    by_share_s: s(by_items),
                }
            })
            .zip(units.iter())
            .map(|(mut c, &(g, _))| {
                c.fixed_s += self.cold_start_s(kernel, g);
                c
            })
            .collect()
    }

    /// What a run of one GPU alone whose transfers have a queue of their
    /// own (see [`crate::exec::stagers`]) is cut into, under HGuided (whose
    /// lone claimant otherwise takes the whole range; the other policies
    /// size packages as asked), with that GPU's estimator slot; `None` for
    /// any other run, and for a run whose packages move nothing
    /// (`transfers`, the run devices' transfer seconds per unit from
    /// [`transfer_cost`], holds none for it): with
    /// no download to run beside the next package's compute, more packages
    /// only add their fixed costs. (A program's steps under lazy host
    /// coherence, whose data stay in the mirrors: conjugate gradient's
    /// lone runs climbed to four packages, 361 us on the host against 281
    /// in one: BENCHMARKS.md, run 22.)
    fn lone_depth(
        &self,
        kernel: &Kernel,
        run: &RunDevices<'_>,
        scheduler: &Scheduler,
        transfers: &[(usize, f64)],
    ) -> Option<(usize, crate::depth::Depth)> {
        let &(g, _) = run.gpus.first()?;
        // GPU `g`'s estimator slot is `1 + g` (0: the CPU workers).
        let slot = 1 + g;
        (run.alone() && own_queue_pays(run, scheduler, transfers))
            .then(|| (slot, self.inner.learning.lone_depth(kernel, slot)))
    }

    /// Whether a co-executed run of GPUs whose transfers have a queue of
    /// their own (see [`crate::exec::stagers`]) transfers on those queues
    /// rather than on the compute queues: with the CPU workers and one
    /// GPU, its kernel's first HGuided run over this space with nothing
    /// learned (no profile), where its packages move bytes, unless
    /// `COEXEC_FIRST_RUN_QUEUE=0`; two or more GPUs without the CPU
    /// workers, every run (see [`gpus_on_own_queues`]).
    ///
    /// # Why
    /// Nothing measured, a first run cuts the GPU's share into a probe and
    /// growing packages, and on the compute queue each package's download
    /// waits behind the next package's dispatch: on an H200 an output-bound
    /// fractal's packages downloaded at 21-34 GB/s there against 48 alone
    /// (BENCHMARKS.md, h200 run 29). With this rule its first runs took
    /// 3.44 ms against 3.81 (medians of five processes), a gather's 4.88
    /// against 5.14, the others' within the spread (run 30). Later runs,
    /// planned from what was measured, keep the compute queue, where they
    /// measured 3-7% faster.
    ///
    /// A run of two or more staged GPUs without the CPU workers transfers
    /// on each GPU's own queue, first or not: two H200s under HGuided were
    /// faster so on six of six kernels, warm by 1-12% (Taylor 3.67 ms
    /// against 3.91 on their compute queues, Collatz 1.58 against 1.79)
    /// and in first runs by 5-26% (Taylor 3.82 against 5.19; BENCHMARKS.md,
    /// section 0e, h200x2 run 16).
    fn shared_on_own_queue(
        &self,
        kernel: &Kernel,
        run: &RunDevices<'_>,
        scheduler: &Scheduler,
        transfers: &[(usize, f64)],
    ) -> bool {
        let first = run.cpu
            && run.gpus.len() == 1
            && own_queue_pays(run, scheduler, transfers)
            && first_run_queue_on()
            && self.inner.learning.first_unlearned(kernel);
        first || gpus_on_own_queues(run, scheduler, transfers)
    }

    /// Starts each staged GPU's transfer bandwidths that this process has
    /// not learned from the figures `kernel`'s profile kept (see
    /// [`TransferRates::seed`](crate::sched::transfers::TransferRates::seed)).
    fn seed_transfer_rates(&self, kernel: &Kernel) {
        use crate::sched::transfers::Way;
        for (slot, up, down) in self.inner.learning.profile_rates(kernel) {
            // Device slot `1 + g` is engine GPU `g` (0: the CPU workers).
            let unit = slot.checked_sub(1).and_then(|g| self.inner.gpus.get(g));
            if let Some(stagers) = unit.and_then(|u| u.stagers.as_ref()) {
                stagers.rates().seed(Way::Up, up);
                stagers.rates().seed(Way::Down, down);
            }
        }
    }

    /// The transfer bandwidths each staged GPU learned in this process, by
    /// device slot, up and down (for the profiles).
    fn learned_transfer_rates(&self) -> Vec<(usize, f64, f64)> {
        use crate::sched::transfers::Way;
        let mut out = Vec::new();
        for (g, unit) in self.inner.gpus.iter().enumerate() {
            let Some(rates) = unit.stagers.as_ref().map(|s| s.rates()) else {
                continue;
            };
            // A direction not learned here keeps the figure it started
            // from (a profile's, or the seed).
            if rates.learned(Way::Up).is_some() || rates.learned(Way::Down).is_some() {
                out.push((1 + g, rates.bandwidth(Way::Up), rates.bandwidth(Way::Down)));
            }
        }
        out
    }

    /// Each staged GPU of `gpus` with the seconds per unit it is expected
    /// to spend moving bytes for `kernel` over `args` (up, and down), as
    /// if it ran every unit (see [`crate::exec::staging::bytes_per_unit`]);
    /// empty where nothing moves (zero-copy memory, no pipeline), and
    /// without the GPUs that have no stagers.
    fn gpu_transfers(
        &self,
        kernel: &Kernel,
        args: &Args<'_>,
        gpus: &[(usize, &GpuUnit)],
        geometry: &Geometry,
    ) -> Moves {
        let Some(pipeline) = kernel.pipeline.as_ref() else {
            return Vec::new();
        };
        if self.inner.memory.placement() != MemoryPlacement::Staged {
            return Vec::new();
        }
        gpus.iter()
            .filter_map(|&(g, unit)| {
                let rates = unit.stagers.as_ref()?.rates();
                let (up, down) = crate::exec::staging::bytes_per_unit(
                    &args.buffers,
                    pipeline.interface(),
                    geometry.space,
                    // Bytes of the whole space over its units: per unit.
                    geometry.total,
                    g,
                );
                Some((
                    g,
                    rates.seconds_per_unit(up, 0.0),
                    rates.seconds_per_unit(0.0, down),
                ))
            })
            .collect()
    }

    /// On a first run from a profile, what engine GPU `g`'s first package
    /// of `kernel` is expected to cost beyond a warm one where the GPU has
    /// not run the kernel yet (see
    /// [`Learning::profile_cold`](crate::learn::Learning::profile_cold));
    /// 0 otherwise.
    fn cold_start_s(&self, kernel: &Kernel, g: usize) -> f64 {
        let learning = &self.inner.learning;
        // Relaxed: as the dispatch loop reads it (`exec::gpu`).
        let warm = crate::engine::pipeline_on(kernel, g)
            .is_none_or(|(_, w)| w.load(std::sync::atomic::Ordering::Relaxed));
        if warm || !learning.first_from_profile(kernel) {
            return 0.0;
        }
        // GPU `g`'s slot is `1 + g`.
        let cold = learning.profile_cold(kernel);
        cold.iter().find(|c| c.0 == 1 + g).map_or(0.0, |c| c.1)
    }

    /// The role in a run of its `k`-th GPU, whose buffers `set` binds.
    #[allow(clippy::too_many_arguments)]
    fn gpu_role<'r>(
        &'r self,
        kernel: &'r Kernel,
        args: &'r Args<'_>,
        run: &RunDevices<'r>,
        k: usize,
        shared: &Shared<'r>,
        set: &'r crate::vk::BindingSet,
        (board, standby): (&'r StealBoard, Standby),
    ) -> Option<GpuRole<'r>> {
        let inner = &*self.inner;
        let &(g, unit) = run.gpus.get(k)?;
        let (pipeline, warm) = crate::engine::pipeline_on(kernel, g)?;
        Some(GpuRole {
            device: run.gpu_device(k),
            unit,
            pipeline,
            set,
            push: &args.push,
            geometry: shared.geometry,
            timeout: inner.options.gpu_timeout,
            bell: shared.bell,
            standby,
            warm,
            #[cfg(feature = "test-hooks")]
            cold_delay: self.cold_delay(),
            staging: None,
            steal_set: None,
            own_queue: run.own_queue,
            cold_start_s: self.cold_start_s(kernel, g),
            // A run that measures another device first: the GPU joins
            // once its box has passed (see `crate::learn::Measure`).
            join_after: run
                .measure
                .filter(|m| m.slot != 1 + g)
                .map(|m| Duration::from_secs_f64(m.box_s.clamp(0.0, 3600.0))),
            cpu: run.cpu.then_some(gpu::CpuPeers {
                board,
                device: 0,
                workers: inner.workers,
            }),
            #[cfg(feature = "test-hooks")]
            fault: self.take_fault(g),
        })
    }

    /// The fault injected for engine GPU `g`, taken (test hooks).
    #[cfg(feature = "test-hooks")]
    fn take_fault(&self, g: usize) -> Option<crate::hooks::FaultInjection> {
        let mut f = self.inner.fault.lock().unwrap_or_else(|p| p.into_inner());
        let i = f.iter().position(|&(gpu, _)| gpu == g)?;
        Some(f.remove(i).1)
    }

    /// The name of engine GPU `g` in reports: its device's, with its engine
    /// index where the engine has several.
    pub(super) fn gpu_name(&self, g: usize, unit: &GpuUnit) -> String {
        let name = &unit.device.info().name;
        match self.inner.gpus.len() {
            1 => name.clone(),
            _ => format!("{name} (gpu{g})"),
        }
    }

    /// The devices' reports (those that sat the run out last) and the
    /// package log; the run's error where a device failed it.
    fn collect(
        &self,
        run: &RunDevices<'_>,
        lanes: Lanes,
        queue: &WorkQueue,
    ) -> Result<(Vec<DeviceReport>, PackageLog)> {
        let inner = &*self.inner;
        let mut devices_out = Vec::new();
        let mut packages = PackageLog::default();
        let mut failure = None;
        if run.cpu {
            let (report, panic) =
                lanes
                    .cpu
                    .finish(&inner.topology.model, inner.workers, &mut packages);
            devices_out.push(report);
            failure = failure.or(panic);
        }
        let mut lost = Vec::new();
        for (&(g, unit), lane) in run.gpus.iter().zip(lanes.gpus) {
            let (mut report, l) = lane.finish(&self.gpu_name(g, unit), &mut packages);
            self.mark_spirv(g, &mut report);
            devices_out.push(report);
            lost.extend(l);
        }
        if let Some(err) = failure {
            return Err(err);
        }
        if !queue.is_done() {
            let cause = devices_out
                .iter()
                .filter_map(|d| d.failure.clone())
                .collect::<Vec<_>>()
                .join("; ");
            // Lost units were counted done only to let the others finish.
            let lost_units: u64 = lost.iter().map(|l| l.units).sum();
            return Err(Error::AllDevicesFailed {
                remaining: queue.total() - queue.completed() + lost_units,
                cause,
            });
        }
        if let Some(l) = lost.into_iter().next() {
            return Err(l.error);
        }
        devices_out.extend(self.sat_out_reports(run));
        Ok((devices_out, packages))
    }

    /// Reports of the devices that could have taken part but sat the run
    /// out by design.
    fn sat_out_reports(&self, run: &RunDevices<'_>) -> Vec<DeviceReport> {
        let inner = &*self.inner;
        let mut out = Vec::new();
        if run.is_present(0) && !run.cpu {
            let mut r =
                DeviceReport::sat_out(&inner.topology.model, DeviceKind::Cpu, inner.workers);
            r.cpu_impl = Some(crate::CpuImpl::Native);
            out.push(r);
        }
        out.extend(self.spirv_sat_out(run.present.clone(), &run.gpus));
        if let Some(note) = &run.cpu_note {
            out.push(DeviceReport::no_cpu_path(&inner.topology.model, note));
        }
        out.extend(self.left_out_reports(&run.left_out));
        for (g, unit) in inner.gpus.iter().enumerate() {
            if run.is_present(1 + g) && !run.gpus.iter().any(|&(u, _)| u == g) {
                out.push(DeviceReport::sat_out(
                    &self.gpu_name(g, unit),
                    DeviceKind::Gpu,
                    1,
                ));
            }
        }
        out
    }
}

/// Maps run device indices to the kernel's estimator slots (0: CPU, `1 + g`:
/// engine GPU `g`), and adds each staged GPU's transfers to its cost.
pub(crate) struct Remap<'a> {
    inner: &'a ThroughputEstimator,
    map: &'a [usize],
    /// Each staged GPU's run device index and the seconds per unit its
    /// transfers add (see [`crate::sched::transfers`]).
    transfers: Vec<(usize, f64)>,
    /// Each staged GPU's run device index and the seconds per unit its
    /// uploads alone are expected to take (see
    /// [`PowerEstimator::upload_s_per_unit`]).
    uploads: Vec<(usize, f64)>,
    /// The same for its downloads, where its packages are cut for them
    /// (see [`PowerEstimator::download_s_per_unit`]).
    downloads: Vec<(usize, f64)>,
    /// Each run device's rate scale from how earlier co-executed runs
    /// ended (see [`crate::split`]); missing entries are 1.
    scale: Vec<f64>,
    /// The packages a lone GPU whose transfers have a queue of their own
    /// cuts the run into (see [`crate::depth`]).
    lone_packages: Option<u64>,
    /// Per run device, the first run device of its class (identical
    /// devices; see [`crate::learn::Learning::run_classes`]); missing
    /// entries are their own.
    class: Vec<usize>,
}

impl Remap<'_> {
    /// `device`'s cost as the run sizes it (see [`shipped`](Self::shipped)):
    /// its fitted cost, or where two or more devices of its class have one,
    /// the median of their fitted costs (overhead and rate each), then
    /// `device`'s own split scale and transfers.
    ///
    /// # Why
    /// Identical devices run at one speed, but each one's fit follows the
    /// packages it happened to run: four H200s' fits of a Jacobi sweep
    /// read 20-46 k units/s on three and 110-840 k on the fourth (one alone:
    /// 86 k), their output downloads into host memory contending at
    /// different moments. Sized by those, one GPU took 28 M of a run's
    /// 33.5 M points, another 0.9 M, and the run waited for the first; a
    /// device given little work is then measured on little and stays
    /// there. Pooled, every member is sized alike and each fit's noise is
    /// averaged over the class. What does set members apart (a GPU whose
    /// results come home later) shows in how runs end, which each device's
    /// split scale still corrects (see [`crate::split`]): pooled after the
    /// scales, a Taylor kernel's four GPUs ended unevenly and ran 3-23%
    /// slower than unpooled.
    fn cost_of(&self, device: usize, fitted: impl Fn(usize) -> Option<Cost>) -> Option<Cost> {
        let own = fitted(device)?;
        let cost = self.class_median(device, &fitted).unwrap_or(own);
        Some(self.shipped(device, cost))
    }

    /// The median of the usable fitted costs of `device`'s class (see
    /// [`crate::learn::members`]), overhead and rate each; `None` where
    /// fewer than two members have one. On every claim's path: gathered
    /// on the stack for up to [`KEEP`] members, no allocation.
    fn class_median(&self, device: usize, fitted: &dyn Fn(usize) -> Option<Cost>) -> Option<Cost> {
        let costs = || {
            crate::learn::members(&self.class, device)
                .filter_map(fitted)
                .filter(Cost::is_usable)
        };
        // Gathered in one pass (records may land meanwhile), on the stack
        // for up to KEEP members.
        let (mut over, mut rate) = ([0.0; KEEP], [0.0; KEEP]);
        let mut n = 0;
        for c in costs() {
            if n < KEEP {
                (over[n], rate[n]) = (c.overhead_s, c.rate);
            }
            n += 1;
        }
        if n < 2 {
            return None;
        }
        if n > KEEP {
            let (over, rate): (Vec<f64>, Vec<f64>) =
                costs().map(|c| (c.overhead_s, c.rate)).unzip();
            return Some(Cost {
                overhead_s: median(&over)?,
                rate: median(&rate)?,
            });
        }
        Some(Cost {
            overhead_s: median(&over[..n])?,
            rate: median(&rate[..n])?,
        })
    }

    /// `cost` of run device `device`, its rate scaled, with its transfers.
    fn shipped(&self, device: usize, mut cost: Cost) -> Cost {
        let scale = self.scale.get(device).copied().unwrap_or(1.0);
        if scale.is_finite() && scale > 0.0 {
            cost.rate *= scale;
        }
        match self.transfers.iter().find(|&&(d, _)| d == device) {
            Some(&(_, s)) => crate::sched::transfers::with_transfers(cost, s),
            None => cost,
        }
    }
}

impl PowerEstimator for Remap<'_> {
    fn record(&self, device: usize, units: u64, seconds: f64) {
        if let Some(&d) = self.map.get(device) {
            self.inner.record(d, units, seconds);
        }
    }
    fn record_parallel(&self, device: usize, units: u64, seconds: f64, parallel: f64) {
        if let Some(&d) = self.map.get(device) {
            self.inner.record_parallel(d, units, seconds, parallel);
        }
    }
    fn record_timed(
        &self,
        device: usize,
        units: u64,
        seconds: f64,
        timed: Option<crate::sched::DeviceTime>,
    ) {
        if let Some(&d) = self.map.get(device) {
            self.inner.record_timed(d, units, seconds, timed);
        }
    }
    fn record_cold(&self, device: usize, units: u64, seconds: f64, parallel: f64) {
        if let Some(&d) = self.map.get(device) {
            self.inner.record_cold(d, units, seconds, parallel);
        }
    }
    fn record_throughput(&self, device: usize, units: u64, seconds: f64, parallel: f64) {
        if let Some(&d) = self.map.get(device) {
            self.inner.record_throughput(d, units, seconds, parallel);
        }
    }
    fn record_cold_device(&self, device: usize, units: u64, device_seconds: f64) {
        if let Some(&d) = self.map.get(device) {
            self.inner.record_cold_device(d, units, device_seconds);
        }
    }
    fn power(&self, device: usize) -> Option<f64> {
        let fitted = |d: usize| {
            let p = self.map.get(d).and_then(|&s| self.inner.power(s))?;
            Some(Cost::rate_only(p))
        };
        Some(self.cost_of(device, fitted)?.rate)
    }
    fn cost(&self, device: usize) -> Option<Cost> {
        self.cost_of(device, |d| {
            self.map.get(d).and_then(|&s| self.inner.cost(s))
        })
    }
    fn run_cost(&self, device: usize) -> Option<Cost> {
        self.map.get(device).and_then(|&d| self.inner.cost(d))
    }
    fn one_size(&self, device: usize) -> Option<u64> {
        self.map.get(device).and_then(|&d| self.inner.one_size(d))
    }
    fn irregularity(&self, device: usize) -> Option<f64> {
        self.map
            .get(device)
            .and_then(|&d| self.inner.irregularity(d))
    }
    fn early_sample(&self, device: usize) -> Option<crate::sched::EarlySample> {
        self.map
            .get(device)
            .and_then(|&d| self.inner.early_sample(d))
    }
    fn lone_packages(&self, _device: usize) -> Option<u64> {
        self.lone_packages
    }
    fn upload_s_per_unit(&self, device: usize) -> Option<f64> {
        per_unit_of(&self.uploads, device)
    }
    fn download_s_per_unit(&self, device: usize) -> Option<f64> {
        per_unit_of(&self.downloads, device)
    }
}

/// The seconds per unit of run device `device` in `per_unit`, where they
/// are a usable figure.
fn per_unit_of(per_unit: &[(usize, f64)], device: usize) -> Option<f64> {
    per_unit
        .iter()
        .find(|&&(d, _)| d == device)
        .and_then(|&(_, s)| crate::sched::usable_power(Some(s)))
}

/// Seconds per unit by run device index (each staged GPU's transfers, or
/// its uploads alone).
type PerUnit = Vec<(usize, f64)>;

/// Each staged GPU of a run's candidates (engine GPU index) with the
/// seconds per unit its uploads and its downloads take (see
/// `Engine::gpu_transfers`).
type Moves = Vec<(usize, f64, f64)>;

/// Each staged GPU of `run` as its run device index with the seconds per
/// unit its transfers are expected to add, and the same for its uploads
/// alone and its downloads alone (empty: zero-copy, or no GPU), from what
/// `moves` read for the run's candidates.
fn transfer_cost(run: &RunDevices<'_>, moves: &Moves) -> (PerUnit, PerUnit, PerUnit) {
    let (mut out, mut uploads, mut downloads) = (Vec::new(), Vec::new(), Vec::new());
    for (k, &(g, _)) in run.gpus.iter().enumerate() {
        if let Some(&(_, up, down)) = moves.iter().find(|m| m.0 == g) {
            out.push((run.gpu_device(k), up + down));
            uploads.push((run.gpu_device(k), up));
            downloads.push((run.gpu_device(k), down));
        }
    }
    (out, uploads, downloads)
}

/// The run devices (indices of `engine_index`, each run device's
/// estimator slot) that join a run measuring the device of estimator slot
/// `slot` (see [`crate::learn::Measure`]): every other one.
fn joining(engine_index: &[usize], slot: usize) -> Vec<usize> {
    (0..engine_index.len())
        .filter(|&d| engine_index[d] != slot)
        .collect()
}

/// Each staged GPU of `moves` as its estimator slot (`1 + g`) and the
/// seconds per unit its downloads are expected to take: what the
/// learner's cost model counts beside its compute (see
/// [`crate::learn::Learning::decide`]). Every run brings its outputs
/// home; what a GPU uploads is mostly what its mirror lacks once (inputs
/// unchanged between runs), and counted per unit it made a histogram's
/// GPU alone look 1.6 times slower than it ran.
fn downloads_by_slot(moves: &Moves) -> PerUnit {
    moves.iter().map(|&(g, _, down)| (1 + g, down)).collect()
}

/// Whether a run of one GPU alone runs its dispatch loop on the caller's
/// thread (`COEXEC_GPU_INLINE`, on unless `0`): it then pays no wake-up of
/// the loop's pool thread, nor of the caller when the run ends (two futex
/// round trips, tens of microseconds on a server, against a resident run of
/// a few hundred), at the price of the loop running where the caller runs
/// rather than on the core chosen near the GPU. Read once per process.
fn gpu_inline_in_env() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    crate::switches::on_unless_zero(&ON, "COEXEC_GPU_INLINE")
}

/// Whether a co-executed run has a standby (see [`Standby`]): the
/// caller runs the claimant of its own core, which stays until the run is
/// done, and the others leave once nothing is left to claim or steal
/// (`COEXEC_STANDBY`, on unless `0`). Read once per process.
fn standby_in_env() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    crate::switches::on_unless_zero(&ON, "COEXEC_STANDBY")
}

/// How long the caller of a run with a standby yields before it parks to
/// wait for the run's claimants: past its own claimant's end,
/// the others' (a GPU's loop leaving the run) take tens of microseconds.
const CALLER_POLL: Duration = Duration::from_millis(1);

/// Whether packages may be split by work stealing: yes, unless the
/// environment sets `COEXEC_STEAL=0` (to measure what stealing changes).
/// Read once per process, not per run.
fn stealing() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    crate::switches::on_unless_zero(&ON, "COEXEC_STEAL")
}

/// Whether the run's first GPU could take its transfer queue to profit:
/// it has one beside its compute queue, HGuided cuts its share in
/// packages, and they move bytes (`transfers`, see
/// `transfer_cost`).
fn own_queue_pays(run: &RunDevices<'_>, scheduler: &Scheduler, transfers: &[(usize, f64)]) -> bool {
    !run.gpus.is_empty() && own_queue_pays_for(run, 0, scheduler, transfers)
}

/// [`own_queue_pays`] for the run's `k`-th GPU.
fn own_queue_pays_for(
    run: &RunDevices<'_>,
    k: usize,
    scheduler: &Scheduler,
    transfers: &[(usize, f64)],
) -> bool {
    let Some(&(_, unit)) = run.gpus.get(k) else {
        return false;
    };
    let overlaps = unit.stagers.as_ref().is_some_and(|s| s.lone_overlaps());
    let guided = matches!(scheduler, Scheduler::HGuided { .. });
    let moves = transfers
        .iter()
        .any(|&(d, s)| d == run.gpu_device(k) && s > 0.0);
    overlaps && guided && moves
}

/// Whether a run of two or more staged GPUs without the CPU workers
/// transfers on each GPU's own queue (see `Engine::shared_on_own_queue`):
/// every GPU's own queue pays ([`own_queue_pays_for`]), unless the
/// environment sets `COEXEC_GPUS_OWN_QUEUE=0` (to measure the rule). Read
/// once per process.
fn gpus_on_own_queues(
    run: &RunDevices<'_>,
    scheduler: &Scheduler,
    transfers: &[(usize, f64)],
) -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    run.gpus_only()
        && (0..run.gpus.len()).all(|k| own_queue_pays_for(run, k, scheduler, transfers))
        && crate::switches::on_unless_zero(&ON, "COEXEC_GPUS_OWN_QUEUE")
}

/// Whether a run's staged GPUs cut their packages for their downloads as
/// for their uploads (see `Plan::pipelined`): a run of two or more GPUs
/// without the CPU workers (see [`gpus_on_own_queues`]), where the
/// environment sets `COEXEC_DOWNLOAD_CAP=1`. Off by default: not yet
/// measured (two H200s under HGuided trailed dynamic:8 by 10-30%, their
/// first packages, about 0.9 of an even share each, ending the run with
/// their downloads; BENCHMARKS.md, section 0e, h200x2 run 16). Read once
/// per process.
fn cuts_for_downloads(run: &RunDevices<'_>) -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    run.gpus_only() && crate::switches::on_if_one(&ON, "COEXEC_DOWNLOAD_CAP")
}

/// Whether a staged GPU's stolen packages write the host copies
/// themselves (see `GpuRole::steal_set`): yes, unless the environment sets
/// `COEXEC_ZERO_COPY_STEALS=0` (to measure what the rule changes). Read
/// once per process.
fn zero_copy_steals_on() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    crate::switches::on_unless_zero(&ON, "COEXEC_ZERO_COPY_STEALS")
}

/// A GPU ready to claim in a run: its staged plan (`None`: zero-copy, or
/// the SPIR-V CPU device), the binding set of the run's buffers, and that
/// of its stolen packages where it has one.
struct PreparedGpu<'a> {
    staging: Option<Staging<'a>>,
    set: Arc<crate::vk::BindingSet>,
    steal_set: Option<Arc<crate::vk::BindingSet>>,
}

/// Whether a co-executed first run transfers on the GPU's own queue (see
/// `Engine::shared_on_own_queue`): yes, unless the environment sets
/// `COEXEC_FIRST_RUN_QUEUE=0` (to measure what the rule changes). Read
/// once per process.
fn first_run_queue_on() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    crate::switches::on_unless_zero(&ON, "COEXEC_FIRST_RUN_QUEUE")
}

#[cfg(test)]
mod tests {
    use super::Remap;
    use crate::sched::ThroughputEstimator;

    /// `est` through `map`, nothing added: no transfers, scales, lone
    /// packages or classes.
    fn bare<'a>(est: &'a ThroughputEstimator, map: &'a [usize]) -> Remap<'a> {
        Remap {
            inner: est,
            map,
            transfers: Vec::new(),
            uploads: Vec::new(),
            downloads: Vec::new(),
            scale: Vec::new(),
            lone_packages: None,
            class: Vec::new(),
        }
    }

    /// What the learner is told a staged GPU's transfers add per unit: by
    /// its estimator slot, what its outputs bring home (4 bytes an item
    /// at the seeded bandwidth), not what its inputs bring up; nothing
    /// over zero-copy memory.
    #[test]
    #[cfg(feature = "glsl")]
    fn the_learner_is_told_each_staged_gpus_transfers() {
        use crate::exec::kernel::{Args, Geometry};
        use crate::sched::transfers::SEED_BANDWIDTH;
        use crate::{IndexSpace, MemoryPlacement};
        let glsl = "#version 450
layout(local_size_x = 64) in;
layout(std430, binding = 0) readonly buffer X { uint x[]; };
layout(std430, binding = 1) writeonly buffer O { uint o[]; };
void main() { uint i = gl_GlobalInvocationID.x; o[i] = x[i] + 1u; }";
        for memory in [MemoryPlacement::Staged, MemoryPlacement::ZeroCopy] {
            let Some(e) = crate::test_engines::one_worker(memory) else {
                return;
            };
            let k = e.kernel_glsl("shipped", glsl, None).unwrap();
            let n = 64 * 64;
            let x = e.buffer_from_slice(&vec![1u32; n]).unwrap();
            let mut out = e.buffer::<u32>(n).unwrap();
            let space = IndexSpace::D1(n as u64);
            let geometry = Geometry::new(space, k.local, k.tiles).unwrap();
            let units: Vec<_> = e.inner.gpus.iter().enumerate().collect();
            let moves_of = |e: &crate::Engine, out: &mut crate::Buffer<u32>| {
                let args = Args::new()
                    .input(&x)
                    .footprint(crate::Footprint::Items { per_item: 1 })
                    .output(out);
                e.gpu_transfers(&k, &args, &units, &geometry)
            };
            if memory == MemoryPlacement::ZeroCopy {
                assert!(super::downloads_by_slot(&moves_of(&e, &mut out)).is_empty());
                continue;
            }
            // 64 items a unit: 256 bytes down (and 256 up, `x` not
            // resident, which the plan counts and the learner does not).
            let unit_s = 256.0 / SEED_BANDWIDTH;
            let moves = moves_of(&e, &mut out);
            let told = super::downloads_by_slot(&moves);
            assert_eq!(told.len(), 1, "{told:?}");
            assert_eq!(told[0].0, 1, "the first GPU's slot");
            assert!((told[0].1 - unit_s).abs() < 1e-15, "{told:?}");
            let (_, up, down) = moves[0];
            assert!((up - unit_s).abs() < 1e-15 && (down - unit_s).abs() < 1e-15);
        }
    }

    /// A staged GPU's uploads per unit reach the plan by its run device
    /// index; a device without uploads (or with none worth a number) has
    /// none.
    #[test]
    fn remap_tells_each_staged_gpu_s_uploads() {
        use crate::sched::PowerEstimator;
        let est = ThroughputEstimator::new(3);
        let map = [0, 1, 2];
        let remap = Remap {
            uploads: vec![(1, 2.5e-6), (2, 0.0)],
            downloads: vec![(2, 4e-6)],
            ..bare(&est, &map)
        };
        assert_eq!(remap.upload_s_per_unit(1), Some(2.5e-6));
        assert_eq!(remap.upload_s_per_unit(2), None);
        assert_eq!(remap.upload_s_per_unit(0), None);
        assert_eq!(remap.download_s_per_unit(2), Some(4e-6));
        assert_eq!(remap.download_s_per_unit(1), None);
    }

    /// The plan sees each run device's fitted cost (overhead included), not
    /// only its rate: every estimator query is forwarded through the map.
    #[test]
    fn remap_forwards_costs_and_powers() {
        use crate::sched::{Cost, PowerEstimator, ThroughputEstimator};
        let est = ThroughputEstimator::new(2);
        est.seed(
            1,
            Cost {
                overhead_s: 1e-4,
                rate: 5e6,
            },
            8.0,
        );
        let map = [1usize];
        let remap = bare(&est, &map);
        assert_eq!(remap.cost(0), est.cost(1));
        assert!(remap.cost(0).is_some_and(|c| c.overhead_s > 0.0));
        assert_eq!(remap.power(0), est.power(1));
        assert_eq!(remap.cost(1), None);
        // Records reach the mapped slot, parallel ones included.
        let est = ThroughputEstimator::new(2);
        let remap = bare(&est, &map);
        for _ in 0..4 {
            remap.record_parallel(0, 100, 1e-3, 4.0);
        }
        assert!(est.power(1).is_some());
        assert_eq!(est.power(0), None);
        // Cold ones too (three are a rate), to the mapped slot.
        let est = ThroughputEstimator::new(2);
        let remap = bare(&est, &map);
        for _ in 0..3 {
            remap.record_cold(0, 100, 1e-3, 4.0);
        }
        assert!(est.power(1).is_some());
        assert_eq!(est.power(0), None);
    }

    /// A staged GPU's transfers slow its rate (not its overhead) by their
    /// seconds per unit; other devices are untouched, and records still
    /// learn compute alone.
    #[test]
    fn remap_adds_transfers_to_the_staged_gpu_only() {
        use crate::sched::{Cost, PowerEstimator, ThroughputEstimator};
        let est = ThroughputEstimator::new(2);
        for (d, rate) in [(0, 1e5), (1, 4e5)] {
            est.seed(
                d,
                Cost {
                    overhead_s: 1e-4,
                    rate,
                },
                8.0,
            );
        }
        let map = [0usize, 1];
        // 7.5 us per unit of transfers: 2.5 us of compute becomes 10 us.
        let remap = Remap {
            transfers: vec![(1, 7.5e-6)],
            ..bare(&est, &map)
        };
        let gpu = remap.cost(1).unwrap();
        let raw = est.cost(1).unwrap();
        assert_eq!(gpu.overhead_s, raw.overhead_s);
        assert!((gpu.rate - 1.0 / (1.0 / raw.rate + 7.5e-6)).abs() < 1e-6);
        assert!((remap.power(1).unwrap() - gpu.rate).abs() < 1e-6);
        assert_eq!(remap.cost(0), est.cost(0));
        // The plan follows: without transfers the GPU (4x the CPU) gets
        // 80% of a static split; with them (now 1x), half.
        use crate::sched::{DeviceSlot, Plan, Scheduler};
        let slots = [DeviceSlot::cpu(1), DeviceSlot::gpu()];
        let sched = Scheduler::Static { powers: None };
        let gpu_share = |r: &Remap<'_>| {
            let plan = Plan::new(&sched, &slots, 1000, r).unwrap();
            plan.claimant(1, 0).share()
        };
        let plain = Remap {
            transfers: Vec::new(),
            uploads: Vec::new(),
            downloads: Vec::new(),
            scale: Vec::new(),
            lone_packages: None,
            class: Vec::new(),
            ..remap
        };
        assert_eq!(gpu_share(&plain), 800);
        assert_eq!(gpu_share(&remap), 500);
        // The split's scale from how co-executed runs ended: the GPU's rate
        // at 0.25 of its fit makes it as fast as the CPU (half), the
        // overhead untouched; records are not scaled.
        let scaled = Remap {
            scale: vec![1.0, 0.25],
            ..plain
        };
        assert_eq!(gpu_share(&scaled), 500);
        let c = scaled.cost(1).unwrap();
        assert_eq!(c.overhead_s, raw.overhead_s);
        assert!((c.rate - raw.rate * 0.25).abs() < 1e-6);
        assert!((scaled.power(1).unwrap() - c.rate).abs() < 1e-6);
        // Bad scales are ignored.
        let bad = Remap {
            scale: vec![f64::NAN, 0.0],
            ..scaled
        };
        assert_eq!(bad.cost(0), est.cost(0));
        assert_eq!(bad.cost(1), est.cost(1));
    }

    /// Several staged GPUs: each pays its own transfers, a GPU without
    /// any (zero-copy fallback, or no entry) its compute alone.
    #[test]
    fn remap_adds_each_staged_gpus_own_transfers() {
        use crate::sched::{Cost, PowerEstimator, ThroughputEstimator};
        let est = ThroughputEstimator::new(4);
        for d in 0..4 {
            let cost = Cost {
                overhead_s: 1e-4,
                rate: 4e5,
            };
            est.seed(d, cost, 8.0);
        }
        let map = [0usize, 1, 2, 3];
        let remap = Remap {
            transfers: vec![(1, 7.5e-6), (2, 2.5e-6)],
            ..bare(&est, &map)
        };
        let rate = |d: usize| remap.cost(d).unwrap().rate;
        // 2.5 us of compute a unit: 10 us with 7.5 of transfers, 5 with 2.5.
        assert!((rate(1) - 1e5).abs() < 1e-3, "{}", rate(1));
        assert!((rate(2) - 2e5).abs() < 1e-3, "{}", rate(2));
        assert_eq!(remap.cost(3), est.cost(3));
        assert_eq!(remap.cost(0), est.cost(0));
    }

    /// Identical devices are sized by the median of their fitted costs,
    /// each of overhead and rate, then each by its own split scale and
    /// transfers; a class of one member, an unmeasured member and the CPU
    /// keep their own.
    #[test]
    fn remap_pools_the_costs_of_identical_devices() {
        use crate::sched::DeviceSlot;
        use crate::sched::{Cost, Plan, PowerEstimator, Scheduler, ThroughputEstimator};
        let est = ThroughputEstimator::new(5);
        // The CPU, then four identical GPUs fitted at very different rates
        // (the fourth unmeasured).
        let seeded = [
            (0, 1e-5, 1e5),
            (1, 1e-4, 2e6),
            (2, 3e-4, 4e6),
            (3, 2e-4, 4e7),
        ];
        for (d, overhead_s, rate) in seeded {
            est.seed(d, Cost { overhead_s, rate }, 8.0);
        }
        let map = [0usize, 1, 2, 3, 4];
        let remap = Remap {
            class: vec![0, 1, 1, 1, 1],
            ..bare(&est, &map)
        };
        let near = |a: f64, b: f64| (a - b).abs() <= 1e-9 * b.abs();
        for d in 1..=3 {
            let c = remap.cost(d).unwrap();
            assert!(
                near(c.overhead_s, 2e-4) && near(c.rate, 4e6),
                "GPU {d}: {c:?}"
            );
            assert!(near(remap.power(d).unwrap(), 4e6), "GPU {d}");
        }
        assert_eq!(remap.cost(4), None);
        assert_eq!(remap.cost(0), est.cost(0));
        // Each member's split scale and transfers apply to the median.
        let scaled = Remap {
            scale: vec![1.0, 2.0],
            transfers: vec![(3, 0.75e-6)],
            class: vec![0, 1, 1, 1, 1],
            ..bare(&est, &map)
        };
        assert!(near(scaled.cost(1).unwrap().rate, 8e6));
        assert!(near(scaled.cost(2).unwrap().rate, 4e6));
        assert!(near(scaled.cost(3).unwrap().rate, 1e6));
        // Two members: their mean; without classes, each its own.
        let two = Remap {
            class: vec![0, 1, 1, 3, 4],
            ..remap
        };
        assert!(near(two.cost(2).unwrap().rate, 3e6));
        assert_eq!(two.cost(3), est.cost(3));
        let own = Remap {
            class: Vec::new(),
            ..two
        };
        assert_eq!(own.cost(3), est.cost(3));
        // The plan sizes the three measured GPUs alike.
        let slots = [
            DeviceSlot::cpu(1),
            DeviceSlot::gpu(),
            DeviceSlot::gpu(),
            DeviceSlot::gpu(),
        ];
        let three = Remap {
            class: vec![0, 1, 1, 1],
            map: &map[..4],
            ..own
        };
        let shares = |r: &Remap<'_>| -> Vec<u64> {
            let plan = Plan::new(&Scheduler::Static { powers: None }, &slots, 10_000, r).unwrap();
            (1..4).map(|d| plan.claimant(d, 0).share()).collect()
        };
        // (The units left by rounding go to the first of the strongest.)
        let pooled = shares(&three);
        assert!(
            pooled.iter().all(|&s| s.abs_diff(pooled[0]) <= 3),
            "{pooled:?}"
        );
        let apart = Remap {
            class: Vec::new(),
            ..three
        };
        let apart = shares(&apart);
        assert!(apart[2] > 5 * apart[1], "{apart:?}");
    }
}
