//! The co-execution engine: devices, the pinned pool, kernels and runs.
//!
//! A run is one blocking call. Every claimant (each pinned CPU worker, the
//! dispatch loop of the GPU) takes its own packages from the run's
//! [`WorkQueue`] until every unit is done; no thread hands out work.

mod energy;
mod gpus;
mod limits;
mod phases;
mod rayon_baseline;
mod run;
mod spirv_cpu;

use crate::energy::{EnergySources, Objective};
pub(crate) use gpus::pipeline_on;
pub use gpus::MAX_GPUS;
pub use spirv_cpu::CpuImpl;

use crate::error::{Error, Result};
use crate::exec::gpu::GpuUnit;
use crate::exec::kernel::{Access, Args, CpuFn, Geometry, IndexSpace, Kernel};
use crate::exec::pool::{Pool, ThreadSpec};
use crate::exec::report::Report;
use crate::exec::topology::{with_affinity, CorePlan, CoreSet, CpuTopology, PlanRequest};
use crate::learn::Learning;
use crate::mem::{AllocatorBackend, Buffer, HostCoherence, MemoryPlacement, UnifiedMemory};
use crate::sched::{Scheduler, ThroughputEstimator};
use crate::vk::{
    self, ComputePipeline, Device, DeviceOptions, DeviceType, DriverEmulation, Instance,
    PhysicalDeviceInfo, SyncMode, TransferQueue, Validation,
};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Which Vulkan devices the engine uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum GpuChoice {
    /// Every usable discrete and integrated GPU, in Vulkan's enumeration
    /// order (engine GPU 0 is the first); where there is none, the best
    /// device as for [`Auto`](Self::Auto), so a CPU implementation such as
    /// lavapipe is taken only when it is the only choice (or named with
    /// [`Index`](Self::Index) or [`Set`](Self::Set)). With several GPUs,
    /// every buffer lives in host memory imported into each device (see
    /// [`EngineOptions::memory`]).
    #[default]
    All,
    /// The one best device: discrete, then integrated, then a CPU
    /// implementation.
    Auto,
    /// The device with this [`index`](PhysicalDeviceInfo::index): its
    /// position in Vulkan's enumeration order, counting every device (the
    /// number `coexec info` prints). A device coexec cannot use is
    /// [`Error::DeviceUnusable`]; an index past the last device is
    /// [`Error::DeviceIndex`].
    Index(usize),
    /// The devices whose [`index`](PhysicalDeviceInfo::index) bits are set
    /// (bit `i`: device `i`, as for [`Index`](Self::Index); indices below
    /// [`MAX_GPUS`]), in index order: engine GPU 0 is the lowest.
    Set(u64),
}

impl GpuChoice {
    /// The devices of physical indices `indices` ([`GpuChoice::Set`]);
    /// `None` for an index of [`MAX_GPUS`] or more.
    pub fn set(indices: &[usize]) -> Option<GpuChoice> {
        let mut mask = 0u64;
        for &i in indices {
            mask |= 1u64.checked_shl(u32::try_from(i).ok()?)?;
        }
        Some(GpuChoice::Set(mask))
    }
}

impl std::str::FromStr for GpuChoice {
    type Err = String;
    /// `all` ([`GpuChoice::All`]), `best` ([`GpuChoice::Auto`]), a Vulkan
    /// device index ([`GpuChoice::Index`]) or a comma-separated list of
    /// indices ([`GpuChoice::Set`]), as `coexec info` numbers the devices.
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s.trim() {
            "all" => Ok(GpuChoice::All),
            "best" | "auto" => Ok(GpuChoice::Auto),
            list => {
                let indices = list
                    .split(',')
                    .map(|p| p.trim().parse::<usize>())
                    .collect::<std::result::Result<Vec<_>, _>>()
                    .map_err(|_| {
                        format!(
                            "unknown GPU choice {list:?} (all, best, an index or indices as 0,1)"
                        )
                    })?;
                match indices.as_slice() {
                    [one] => Ok(GpuChoice::Index(*one)),
                    many => GpuChoice::set(many).ok_or_else(|| {
                        format!("device indices must be below {MAX_GPUS} (got {list:?})")
                    }),
                }
            }
        }
    }
}

/// How an engine is built.
#[derive(Debug, Clone)]
pub struct EngineOptions {
    /// Which Vulkan devices to use (for memory and, when they run,
    /// kernels); by default every GPU ([`GpuChoice::All`]).
    pub gpu: GpuChoice,
    /// CPU workers; `None`: one per physical core left after the GPU's share,
    /// `Some(0)`: none.
    pub workers: Option<usize>,
    /// Allocator backend for unified buffers.
    pub allocator: AllocatorBackend,
    /// Khronos validation layer.
    pub validation: Validation,
    /// Pipeline cache directory (`None`: `$COEXEC_CACHE_DIR`, else the user's cache directory,
    /// `~/.cache/coexec`; an empty path: no on-disk cache).
    pub pipeline_cache_dir: Option<PathBuf>,
    /// Packages kept in flight per GPU (at least 1, at most
    /// 64; default 2).
    pub gpu_in_flight: usize,
    /// A GPU package running longer than this (or longer than 4x its
    /// expected time at the GPU's measured throughput, where that is longer:
    /// a GPU running alone takes its whole range in one package) is declared
    /// hung: the GPU gets no more work in this run and the other devices go
    /// on. The call returns only once the GPU can no longer write into the
    /// run's buffers (the package ended, or the driver declared the device
    /// lost), because on this memory the GPU writes the buffers in place and
    /// Vulkan cannot cancel submitted work. So a timeout bounds how long the
    /// other devices wait for the GPU's work, not how long the call takes.
    ///
    /// A hung package that ends late counts once; one whose device is lost
    /// while it runs is run again elsewhere only if the kernel's outputs are
    /// all `writeonly` (or the run is staged), else the run returns
    /// [`Error::GpuLostMidPackage`].
    pub gpu_timeout: Duration,
    /// With validation on: a call during which the layer reports an error
    /// (creating a buffer or a kernel, a run) returns [`Error::Validation`]
    /// instead of its result. Errors are counted for the whole instance, so
    /// one reported for another thread's call on the same engine counts too.
    /// Off by default; the tests turn it on, so that any validation error
    /// fails them.
    pub validation_errors_fail: bool,
    /// Keep what the scheduler learns about each kernel (every device's
    /// package cost) in profiles on disk, in `profiles/` under the pipeline
    /// cache directory, and start a kernel's first run in a new process
    /// from its profile. Profiles are keyed by the kernel's SPIR-V, the
    /// devices and their driver, and the index space's shape class; a
    /// missing, stale or corrupt one is ignored (a warning), never an
    /// error. A run whose figures moved queues its profile for a writer
    /// thread (the run does not wait for the disk); every profile an
    /// engine queued is on disk once the engine is dropped. On by default;
    /// off also when the pipeline cache is off or the environment sets
    /// `COEXEC_PROFILE=off`.
    pub profiles: bool,
    /// Where the GPU reads and writes the buffers of a run: zero-copy in
    /// host memory, or device-local mirrors with staged transfers
    /// ([`MemoryPlacement`]; `Auto`, the default, stages on a discrete GPU
    /// only). The environment variable `COEXEC_MEMORY=auto|zero-copy|staged`
    /// overrides it (read once per process). [`Engine::memory_placement`]
    /// says what was chosen. On an engine over several GPUs each buffer's
    /// bytes are host memory of the engine's, imported into every device
    /// with `VK_EXT_external_memory_host`, so every device and the CPU code
    /// see the same bytes; staged, each GPU also keeps device-local mirrors
    /// of its own, each uploaded with what that GPU reads.
    pub memory: MemoryPlacement,
    /// Staged engines: when what the GPU wrote reaches the host copies
    /// ([`HostCoherence`]; `Eager`, the default, downloads it before the
    /// run returns; `Lazy` keeps it resident in the device-local mirrors
    /// until the host can observe it). The environment variable
    /// `COEXEC_HOST_COHERENCE=eager|lazy` overrides it (read once per
    /// process). No effect on zero-copy engines.
    pub host_coherence: HostCoherence,
    /// A testing aid: use the device as an older driver would offer it
    /// (Vulkan 1.1 with `VK_KHR_timeline_semaphore`, or without timeline
    /// semaphores: fences), so that those paths run on a current driver.
    /// The environment variable
    /// `COEXEC_EMULATE_DRIVER=native|vulkan1.1|no-timelines` overrides it.
    /// [`Engine::sync_mode`] says what the device uses.
    pub driver: DriverEmulation,
    /// Staged engines: where uploads and downloads are submitted
    /// ([`TransferQueue`]; `Auto`, the default, chooses per run: a lone
    /// GPU's run on a dedicated queue where the GPU has a transfer-only
    /// family, cut into the packages its measured runs favour, so that
    /// downloads overlap compute; runs shared with other devices on the
    /// compute queue, which measured best for them on an H200; `Compute`
    /// keeps every run on the compute queue, `Dedicated` every run on the
    /// dedicated one). The environment variable
    /// `COEXEC_TRANSFER_QUEUE=auto|compute|dedicated|separate|separate-when-lone`
    /// overrides it; [`Engine::separate_transfers`] says what the engine's
    /// first GPU uses.
    pub transfer_queue: TransferQueue,
    /// What HGuided minimizes: time (the default) or the energy-delay
    /// product, leaving out a device whose speed-up costs more energy than
    /// it saves ([`Objective`]; it uses each device's power learned from
    /// its energy counter over windows of runs where readable, else the
    /// model of [`DevicePower`](crate::energy::DevicePower); see
    /// [`Engine::device_power`]).
    ///
    /// The energy counters (RAPL, NVML) are detected only under
    /// [`Objective::Edp`] or with the environment variable
    /// `COEXEC_ENERGY=1`, and then read once per window of runs (at least
    /// 1 s, [`Engine::set_energy_window`]), never around each run: a read
    /// can cost milliseconds (NVML on an H200: ~9 ms of wall time), and
    /// NVML's counter advances in steps coarser than a short run. The
    /// report's per-run joules are then estimates from the learned power
    /// ([`Basis::Estimated`](crate::energy::Basis)).
    /// [`Engine::set_energy_sources`] installs counters explicitly.
    pub objective: Objective,
    /// Testing aid: opens each chosen Vulkan device this many times, as if
    /// the machine had that many of it, so that multi-GPU co-execution runs
    /// on one GPU (lavapipe included). 0 (the default): the environment
    /// variable `COEXEC_DUPLICATE_DEVICES`, else 1. Not for measuring: the
    /// copies share one GPU.
    pub duplicate_devices: usize,
    /// Open a CPU Vulkan device (Mesa lavapipe) beside the GPUs, on the
    /// CPU workers' cores, so that the CPU share of a kernel without a CPU
    /// implementation runs its SPIR-V there (the "spirv" CPU path; see
    /// [`CpuImpl`]). Off by default, since the extra device makes the
    /// engine a multi-device one (every buffer is host memory imported into
    /// each device; each staged GPU keeps its own mirrors, see
    /// [`EngineOptions::memory`]); also
    /// on with [`CpuImpl::Spirv`] or the environment variable
    /// `COEXEC_SPIRV_CPU=1`. Where no CPU Vulkan device is installed, such
    /// a kernel runs on the GPUs alone and its report says why
    /// ([`DeviceReport::note`](crate::DeviceReport::note)). The device may be
    /// one the engine also uses as a GPU (lavapipe alone): it is then
    /// opened twice.
    pub spirv_cpu: bool,
    /// Which path runs the CPU share of a kernel that has both a CPU
    /// implementation and SPIR-V ([`CpuImpl::Native`] by default).
    pub cpu_impl: CpuImpl,
}

impl Default for EngineOptions {
    fn default() -> Self {
        EngineOptions {
            gpu: GpuChoice::All,
            workers: None,
            allocator: AllocatorBackend::default(),
            validation: Validation::FromEnv,
            pipeline_cache_dir: None,
            gpu_in_flight: 2,
            gpu_timeout: Duration::from_secs(30),
            validation_errors_fail: false,
            profiles: true,
            memory: MemoryPlacement::Auto,
            host_coherence: HostCoherence::Eager,
            driver: DriverEmulation::Native,
            transfer_queue: TransferQueue::Auto,
            objective: Objective::Time,
            duplicate_devices: 0,
            spirv_cpu: false,
            cpu_impl: CpuImpl::Native,
        }
    }
}

/// Which of the engine's devices take part in a run: the CPU workers and a
/// set of the engine's GPUs (numbered from 0 in the engine's order, which is
/// Vulkan's enumeration order of the devices it opened).
///
/// ```
/// use coexec_engine::Devices;
/// assert!(Devices::ALL.has_gpu(3) && Devices::ALL.cpu);
/// let d = Devices::gpu(1).with_cpu();
/// assert!(d.cpu && d.has_gpu(1) && !d.has_gpu(0));
/// assert_eq!("cpu,gpu1".parse::<Devices>(), Ok(d));
/// assert_eq!("cpu,gpu".parse::<Devices>(), Ok(Devices::ALL));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Devices {
    /// The CPU workers.
    pub cpu: bool,
    /// Every GPU of the engine.
    pub gpu: bool,
    /// GPUs taken one by one besides `gpu`: bit `i` is engine GPU `i`.
    pub gpus: u64,
}

impl Devices {
    /// CPU workers only.
    pub const CPU: Devices = Devices {
        cpu: true,
        gpu: false,
        gpus: 0,
    };
    /// Every GPU.
    pub const GPU: Devices = Devices {
        cpu: false,
        gpu: true,
        gpus: 0,
    };
    /// Every device: the CPU workers and every GPU.
    pub const ALL: Devices = Devices {
        cpu: true,
        gpu: true,
        gpus: 0,
    };
    /// No device (a start for [`with_cpu`](Self::with_cpu) and
    /// [`with_gpu`](Self::with_gpu); a run on it is refused).
    pub const NONE: Devices = Devices {
        cpu: false,
        gpu: false,
        gpus: 0,
    };

    /// Engine GPU `i` alone (`i` below [`MAX_GPUS`]; a larger index
    /// selects nothing).
    pub fn gpu(i: usize) -> Devices {
        Devices::NONE.with_gpu(i)
    }

    /// These devices and the CPU workers.
    pub fn with_cpu(self) -> Devices {
        Devices { cpu: true, ..self }
    }

    /// These devices and engine GPU `i` (unchanged for `i` of
    /// [`MAX_GPUS`] or more).
    pub fn with_gpu(self, i: usize) -> Devices {
        let bit = u32::try_from(i)
            .ok()
            .and_then(|i| 1u64.checked_shl(i))
            .unwrap_or(0);
        Devices {
            gpus: self.gpus | bit,
            ..self
        }
    }

    /// Whether engine GPU `i` is among these devices.
    pub fn has_gpu(self, i: usize) -> bool {
        self.gpu || (i < MAX_GPUS && self.gpus & (1u64 << i) != 0)
    }

    /// Whether any GPU is.
    pub fn any_gpu(self) -> bool {
        self.gpu || self.gpus != 0
    }
}

impl std::str::FromStr for Devices {
    type Err = String;
    /// A comma-separated list of `cpu`, `gpu` (every GPU), `gpuN` (engine
    /// GPU N) and `all`.
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        let mut d = Devices::NONE;
        for part in s.split(',') {
            match part.trim() {
                "cpu" => d.cpu = true,
                "gpu" => d.gpu = true,
                "all" => d = Devices::ALL,
                other => match other.strip_prefix("gpu").map(str::parse::<usize>) {
                    Some(Ok(i)) if i < MAX_GPUS => d = d.with_gpu(i),
                    _ => {
                        return Err(format!(
                            "unknown device {other:?} (cpu, gpu, gpu0..gpu{}, all, or a comma-separated list)",
                            MAX_GPUS - 1
                        ))
                    }
                },
            }
        }
        Ok(d)
    }
}

impl std::fmt::Display for Devices {
    /// The form [`FromStr`](std::str::FromStr) reads back.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut parts: Vec<String> = Vec::new();
        if self.cpu {
            parts.push("cpu".into());
        }
        if self.gpu {
            parts.push("gpu".into());
        } else {
            parts.extend(
                (0..MAX_GPUS)
                    .filter(|&i| self.has_gpu(i))
                    .map(|i| format!("gpu{i}")),
            );
        }
        write!(f, "{}", parts.join(","))
    }
}

static NEXT_ENGINE: AtomicU64 = AtomicU64::new(1);

/// A co-execution engine: the CPU workers, one or more Vulkan devices and
/// their unified memory. Cheap to clone (shared); `Send + Sync`.
#[derive(Clone)]
pub struct Engine {
    inner: Arc<Inner>,
}

struct Inner {
    id: u64,
    topology: CpuTopology,
    plan: CorePlan,
    // Field order matters for drop: threads, GPU unit and memory go before
    // the device they use.
    pool: Pool,
    /// The GPUs, in engine order (at least one).
    gpus: Vec<GpuUnit>,
    /// The CPU Vulkan device of the SPIR-V CPU path, if opened: memory
    /// device and pipeline index `gpus.len()`, estimator slot
    /// `1 + gpus.len()`.
    spirv: Option<GpuUnit>,
    /// Why the engine has no such device where one was asked for.
    spirv_missing: Option<String>,
    memory: Arc<UnifiedMemory>,
    workers: usize,
    options: EngineOptions,
    run_lock: Mutex<()>,
    learning: Learning,
    energy: energy::EngineEnergy,
    /// See [`Engine::set_rayon_baseline`].
    rayon_baseline: std::sync::atomic::AtomicBool,
    /// Faults to inject in the next run, by engine GPU.
    #[cfg(feature = "test-hooks")]
    fault: Mutex<Vec<(usize, crate::hooks::FaultInjection)>>,
    /// Units the GPUs claim before the CPU workers start (test hook).
    #[cfg(feature = "test-hooks")]
    cpu_hold: Mutex<Option<u64>>,
    /// Delay added to each GPU's cold package (test hook).
    #[cfg(feature = "test-hooks")]
    cold_delay: Mutex<Option<std::time::Duration>>,
    /// See [`Engine::sync_per_cpu_package`].
    cpu_package_sync: std::sync::atomic::AtomicBool,
    /// Co-executed runs have a standby beside any device (test hook; see
    /// [`Engine::standby_beside_any_device`]).
    #[cfg(feature = "test-hooks")]
    standby_anywhere: std::sync::atomic::AtomicBool,
    /// Units a wave of every GPU holds, 0 where its own width stands (test
    /// hook; see [`Engine::assume_gpu_wave`]).
    #[cfg(feature = "test-hooks")]
    assumed_wave: AtomicU64,
    /// Work-group counts engine devices report at most (test hook; see
    /// [`Engine::cap_dispatch_groups`]).
    #[cfg(feature = "test-hooks")]
    group_caps: Mutex<Vec<(usize, u32)>>,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("device", &self.device().info().name)
            .field("workers", &self.inner.workers)
            .field("gpus", &self.inner.gpus.len())
            .finish()
    }
}

/// The one device `choice` names among `devs`, every physical device in
/// Vulkan's enumeration order (the best one for a choice of several: see
/// `gpus::pick_all` for those).
fn pick(devs: &[PhysicalDeviceInfo], choice: GpuChoice) -> Result<PhysicalDeviceInfo> {
    match choice {
        GpuChoice::Index(i) => {
            let d = find_index(devs, i)?;
            match d.unusable_reason() {
                Some(reason) => Err(Error::DeviceUnusable {
                    index: i,
                    device: d.name.clone(),
                    reason,
                }),
                None => Ok(d.clone()),
            }
        }
        GpuChoice::Auto | GpuChoice::All | GpuChoice::Set(_) => devs
            .iter()
            .filter(|d| d.unusable_reason().is_none() && d.unified_memory_type().is_some())
            .min_by_key(|d| (d.device_type.rank(), d.index))
            .cloned()
            .ok_or_else(|| Error::NoDevice("no device offers host-visible coherent memory".into())),
    }
}

/// The device of physical index `index` among `devs` (every device).
fn find_index(devs: &[PhysicalDeviceInfo], index: usize) -> Result<&PhysicalDeviceInfo> {
    devs.iter()
        .find(|d| d.index == index)
        .ok_or(Error::DeviceIndex {
            index,
            available: devs.len(),
        })
}

impl Engine {
    /// An engine with default options.
    pub fn new() -> Result<Engine> {
        Engine::with_options(EngineOptions::default())
    }

    /// Builds an engine: detects the CPU topology, chooses the Vulkan device,
    /// partitions the cores, and starts the pinned threads (parked until a run).
    ///
    /// When the Vulkan device is itself a CPU implementation (Mesa lavapipe),
    /// it gets cores of its own: the device is created on a thread pinned to
    /// them, so its threads inherit that affinity; the CPU workers are pinned
    /// to the other cores. The partition is the same for every run, whichever
    /// devices take part.
    ///
    /// The engine never changes the environment (that would race any other
    /// thread's `getenv`). Lavapipe sizes its thread pool from
    /// `LP_NUM_THREADS` when its device is created: an application that
    /// wants one lavapipe thread per core of its share sets that variable to
    /// [`Engine::cpu_device_cores`] before it starts any thread, as the
    /// `coexec` command does.
    pub fn with_options(options: EngineOptions) -> Result<Engine> {
        let topology = CpuTopology::detect();
        let driver = DriverEmulation::from_env().unwrap_or(options.driver);
        let probe = Arc::new(Instance::with_api_cap(
            options.validation,
            driver.api_cap(),
        )?);
        let mut devs = probe.all_physical_devices()?;
        devs.iter_mut().for_each(|d| driver.apply(d));
        if devs.iter().all(|d| d.unusable_reason().is_some()) {
            return Err(Error::NoDevice("the loader found no usable device".into()));
        }
        let chosen = gpus::pick_all(&devs, options.gpu)?;
        let copies = gpus::copies(options.duplicate_devices, chosen.len());
        let cpu_impls = chosen
            .iter()
            .filter(|d| d.device_type == DeviceType::Cpu)
            .count();
        let plan = topology
            .plan(&PlanRequest {
                workers: options.workers,
                cpu_vulkan_devices: cpu_impls,
                gpu_loops: (chosen.len() - cpu_impls) * copies,
                gpu_local_pus: local_pus(&chosen, copies),
            })
            .map_err(|e| Error::Cpu {
                message: "planning the cores".into(),
                source: Some(Box::new(e)),
            })?;
        let spirv_info = spirv_cpu::wanted(&options).then(|| spirv_cpu::find(&devs));
        let (mut devices, mut pins) = open_devices(probe, &chosen, copies, &plan, &options)?;
        let gpu_count = devices.len();
        let spirv_missing = match &spirv_info {
            Some(Some(info)) => {
                let cores = spirv_cpu::cores(&plan);
                devices.push(spirv_cpu::open(info, &cores, &options)?);
                pins.push(cores);
                None
            }
            Some(None) => {
                let why = "no CPU Vulkan device with host-memory import is installed";
                tracing::warn!("{why}: kernels without a CPU implementation run on the GPUs alone");
                Some(why.to_string())
            }
            None => None,
        };
        let id = NEXT_ENGINE.fetch_add(1, Ordering::Relaxed); // Relaxed: uniqueness only.
        let memory = match devices.as_slice() {
            [one] => UnifiedMemory::new(one.clone(), options.allocator, id, options.memory)?,
            many => UnifiedMemory::new_shared(many, options.allocator, id, options.memory)?,
        };
        let workers = plan.workers.len();
        let pool = start_pool(&plan, pins, gpu_count)?;
        let mut lines = vec![format!("cpu {} with {workers} workers", topology.model)];
        lines.extend(devices.iter().map(|d| describe_gpu(d.info())));
        if devices.len() > gpu_count {
            lines.push(format!(
                "spirv-cpu on {} core(s)",
                spirv_cpu::cores(&plan).pus.len()
            ));
        }
        let learning = Learning::new(profile_dir(&options), lines);
        let mut units = gpu_units(devices, &memory, &options, workers, gpu_count)?;
        make_lazy_if_asked(&memory, &units[..gpu_count], &options)?;
        let spirv = (units.len() > gpu_count).then(|| units.pop()).flatten();
        let energy = engine_energy(&units, options.objective);
        Ok(Engine {
            inner: Arc::new(Inner {
                id,
                topology,
                plan,
                pool,
                gpus: units,
                spirv,
                spirv_missing,
                memory,
                workers,
                options,
                run_lock: Mutex::new(()),
                learning,
                energy,
                rayon_baseline: std::sync::atomic::AtomicBool::new(false),
                #[cfg(feature = "test-hooks")]
                fault: Mutex::new(Vec::new()),
                #[cfg(feature = "test-hooks")]
                cpu_hold: Mutex::new(None),
                #[cfg(feature = "test-hooks")]
                cold_delay: Mutex::new(None),
                cpu_package_sync: std::sync::atomic::AtomicBool::new(false),
                #[cfg(feature = "test-hooks")]
                standby_anywhere: std::sync::atomic::AtomicBool::new(false),
                #[cfg(feature = "test-hooks")]
                assumed_wave: AtomicU64::new(0),
                #[cfg(feature = "test-hooks")]
                group_caps: Mutex::new(Vec::new()),
            }),
        })
    }

    /// How many hardware threads an engine built with `workers`
    /// ([`EngineOptions::workers`]) gives a Vulkan device that is a CPU
    /// implementation (Mesa lavapipe): the value for `LP_NUM_THREADS`, which
    /// the application sets before it starts threads (see
    /// [`with_options`](Self::with_options)). Needs no Vulkan; `None` when
    /// the CPU topology leaves such a device no cores of its own.
    pub fn cpu_device_cores(workers: Option<usize>) -> Option<usize> {
        let plan = CpuTopology::detect()
            .plan(&PlanRequest {
                workers,
                cpu_vulkan_devices: 1,
                ..Default::default()
            })
            .ok()?;
        plan.cpu_vulkan_devices
            .first()
            .map(|c| c.pus.len())
            .filter(|&n| n > 0)
    }

    /// Every Vulkan device with Vulkan >= 1.1 and a compute queue (a fresh
    /// enumeration). Each keeps its
    /// [`index`](PhysicalDeviceInfo::index) in Vulkan's enumeration order,
    /// which [`GpuChoice::Index`] takes; devices coexec cannot use are left
    /// out (see [`all_vulkan_devices`](Self::all_vulkan_devices)), so the
    /// indices may have gaps.
    pub fn vulkan_devices() -> Result<Vec<PhysicalDeviceInfo>> {
        let mut devs = Self::all_vulkan_devices()?;
        devs.retain(|d| d.unusable_reason().is_none());
        Ok(devs)
    }

    /// Every Vulkan device, usable or not
    /// ([`PhysicalDeviceInfo::unusable_reason`]), in Vulkan's enumeration
    /// order (for `coexec info`).
    /// Under `COEXEC_EMULATE_DRIVER`, as the emulated driver offers them.
    pub fn all_vulkan_devices() -> Result<Vec<PhysicalDeviceInfo>> {
        let driver = DriverEmulation::from_env().unwrap_or_default();
        let mut devs =
            Instance::with_api_cap(Validation::Off, driver.api_cap())?.all_physical_devices()?;
        devs.iter_mut().for_each(|d| driver.apply(d));
        Ok(devs)
    }

    /// The Vulkan device in use (unstable: feature `internals`).
    #[cfg(feature = "internals")]
    pub fn device(&self) -> &Arc<Device> {
        self.inner.memory.device()
    }

    /// The Vulkan device in use.
    #[cfg(not(feature = "internals"))]
    pub(crate) fn device(&self) -> &Arc<Device> {
        self.inner.memory.device()
    }

    /// The unified-memory allocator (unstable: feature `internals`).
    #[cfg(feature = "internals")]
    pub fn memory(&self) -> &Arc<UnifiedMemory> {
        &self.inner.memory
    }

    /// Facts about the Vulkan device in use.
    pub fn device_info(&self) -> &PhysicalDeviceInfo {
        self.device().info()
    }

    /// Index (in [`PhysicalDeviceInfo::memory_types`]) of the memory type
    /// every buffer of this engine lives in.
    pub fn memory_type(&self) -> u32 {
        self.inner.memory.memory_type()
    }

    /// Where GPU runs bind the engine's buffers: [`MemoryPlacement::ZeroCopy`]
    /// or [`MemoryPlacement::Staged`] ([`EngineOptions::memory`] resolved
    /// for the device, after `COEXEC_MEMORY`).
    pub fn memory_placement(&self) -> MemoryPlacement {
        self.inner.memory.placement()
    }

    /// When GPU results reach the host copies: [`HostCoherence::Lazy`] only
    /// on a staged engine that chose it ([`EngineOptions::host_coherence`],
    /// after `COEXEC_HOST_COHERENCE`).
    pub fn host_coherence(&self) -> HostCoherence {
        match self.inner.memory.lazy() {
            Some(_) => HostCoherence::Lazy,
            None => HostCoherence::Eager,
        }
    }

    /// How the engine's GPU signals completion: timeline semaphores (core
    /// or `VK_KHR_timeline_semaphore`) or fences, as its driver offers
    /// ([`EngineOptions::driver`]).
    pub fn sync_mode(&self) -> SyncMode {
        self.device().sync_mode()
    }

    /// Whether the engine's staged transfers run ordered with its
    /// dispatches by semaphores alone (on a dedicated transfer queue, or
    /// as forced by [`TransferQueue::Separate`]), in every run or, under
    /// [`TransferQueue::Auto`], in a lone GPU's runs; `false` for a
    /// zero-copy engine.
    pub fn separate_transfers(&self) -> bool {
        self.memory_placement() == MemoryPlacement::Staged && self.device().separate_transfers()
    }

    /// Whether the engine's staged transfers go to a queue other than its
    /// compute queue (under [`TransferQueue::Auto`]: a lone GPU's runs in
    /// several packages).
    pub fn dedicated_transfer_queue(&self) -> bool {
        self.memory_placement() == MemoryPlacement::Staged && self.device().has_transfer_queue()
    }

    /// The allocator backend of the engine's buffers.
    pub fn allocator(&self) -> AllocatorBackend {
        self.inner.memory.backend()
    }

    /// `minImportedHostPointerAlignment` of the device: the alignment of
    /// pointers and sizes [`Engine::import_host`] accepts; `None` when the
    /// device cannot import host memory (no `VK_EXT_external_memory_host`).
    pub fn host_import_alignment(&self) -> Option<u64> {
        self.inner.memory.host_import_alignment()
    }

    /// A buffer over existing host memory, imported zero-copy with
    /// `VK_EXT_external_memory_host`: CPU code and kernels read and write the
    /// caller's own pages. The memory is not zeroed. On a staged engine it
    /// gets its device-local mirrors now, as [`Engine::buffer`]'s do.
    ///
    /// Errors: [`Error::HostImportUnsupported`] when the device lacks the
    /// extension or rejects the pointer, [`Error::HostImportMisaligned`] when
    /// `ptr` or `len * size_of::<T>()` is not a multiple of
    /// [`host_import_alignment`](Self::host_import_alignment).
    ///
    /// # Safety
    /// - `ptr` points to `len * size_of::<T>()` bytes of readable and writable
    ///   host memory that stays allocated (not freed, unmapped or remapped)
    ///   until the returned buffer is dropped;
    /// - while the buffer lives, that memory is accessed only through it (code
    ///   outside Rust may access it, but never while a run that writes it is
    ///   in flight).
    pub unsafe fn import_host<T: bytemuck::Pod>(
        &self,
        ptr: *mut T,
        len: usize,
    ) -> Result<Buffer<T>> {
        // SAFETY: forwarded from this function's contract.
        let b = unsafe { self.inner.memory.import_host(ptr, len) }?;
        // Its mirrors too, as for `buffer` (its bytes are uploaded every
        // time a run reads them: the host writes them behind the engine's
        // back).
        self.mirror_ahead(b.raw());
        Ok(b)
    }

    /// The CPU topology.
    pub fn topology(&self) -> &CpuTopology {
        &self.inner.topology
    }

    /// How cores were split between the CPU workers and the Vulkan device.
    pub fn core_plan(&self) -> &CorePlan {
        &self.inner.plan
    }

    /// Number of CPU workers.
    pub fn workers(&self) -> usize {
        self.inner.workers
    }

    /// `true` while a GPU can take part in runs (not every one failed).
    pub fn gpu_available(&self) -> bool {
        (0..self.gpu_count()).any(|g| self.gpu_available_on(g))
    }

    /// `true` while engine GPU `gpu` can take part in runs (it exists and
    /// did not fail).
    pub fn gpu_available_on(&self, gpu: usize) -> bool {
        self.inner
            .gpus
            .get(gpu)
            .is_some_and(|g| !g.device.is_lost())
    }

    /// How many GPUs the engine drives (at least 1).
    pub fn gpu_count(&self) -> usize {
        self.inner.gpus.len()
    }

    /// Facts about engine GPU `gpu` (`None` past the last). GPU 0's are
    /// also [`device_info`](Self::device_info)'s.
    pub fn gpu_info(&self, gpu: usize) -> Option<&PhysicalDeviceInfo> {
        self.inner.gpus.get(gpu).map(|g| g.device.info())
    }

    /// How many times engine GPU `gpu` was given work (`vkQueueSubmit`
    /// calls: dispatches, uploads, downloads) since the engine was created;
    /// `None` past the last GPU (test hook; cargo feature `test-hooks`).
    #[cfg(feature = "test-hooks")]
    pub fn gpu_submissions(&self, gpu: usize) -> Option<u64> {
        self.inner.gpus.get(gpu).map(|g| g.device.submissions())
    }

    /// How many runs woke each CPU worker (by worker index) and each engine
    /// GPU's dispatch loop thread (by engine GPU index) since the engine
    /// was created (test hook; cargo feature `test-hooks`): a device that
    /// sits a run out is not woken for it, nor is the thread of a loop the
    /// caller ran itself (one GPU alone, `COEXEC_GPU_INLINE`).
    #[cfg(feature = "test-hooks")]
    pub fn wake_counts(&self) -> (Vec<u64>, Vec<u64>) {
        let jobs = self.inner.pool.jobs_run();
        let workers = jobs.iter().take(self.inner.workers).copied().collect();
        let gpus = self
            .inner
            .gpus
            .iter()
            .map(|g| jobs.get(g.thread).copied().unwrap_or(0))
            .collect();
        (workers, gpus)
    }

    /// Makes GPU 0 fail as described in the next run that uses it (test
    /// hook; cargo feature `test-hooks`).
    #[cfg(feature = "test-hooks")]
    pub fn inject_gpu_fault(&self, fault: crate::hooks::FaultInjection) {
        self.inject_gpu_fault_on(0, fault);
    }

    /// Makes engine GPU `gpu` fail as described in the next run that uses
    /// it (test hook; cargo feature `test-hooks`); replaces a fault injected
    /// earlier for that GPU and not used yet.
    #[cfg(feature = "test-hooks")]
    pub fn inject_gpu_fault_on(&self, gpu: usize, fault: crate::hooks::FaultInjection) {
        let mut f = self.inner.fault.lock().unwrap_or_else(|p| p.into_inner());
        f.retain(|&(g, _)| g != gpu);
        f.push((gpu, fault));
    }

    /// In the next run with a GPU and the CPU, the CPU workers claim
    /// nothing until the GPUs have claimed `units` work units, or handed
    /// their fresh work back (a failed GPU does), or the run is done or
    /// aborted, or 10 s passed (test hook; cargo feature `test-hooks`).
    /// Tests that assert GPU participation use it: on a loaded machine the
    /// CPU can otherwise take every package before the GPU claims one.
    #[cfg(feature = "test-hooks")]
    pub fn hold_cpu_until_gpus_claim(&self, units: u64) {
        *self
            .inner
            .cpu_hold
            .lock()
            .unwrap_or_else(|p| p.into_inner()) = Some(units);
    }

    /// From now on, the first package each GPU runs of a kernel (its cold
    /// package, which the cost model keeps apart: see
    /// [`CostFit::record_cold`](crate::sched::CostFit::record_cold)) takes
    /// `delay` longer, as a pipeline's first use on a discrete GPU does
    /// (test hook; cargo feature `test-hooks`). `None` turns it off.
    #[cfg(feature = "test-hooks")]
    pub fn delay_cold_gpu_packages(&self, delay: Option<std::time::Duration>) {
        *self
            .inner
            .cold_delay
            .lock()
            .unwrap_or_else(|p| p.into_inner()) = delay;
    }

    /// From now on, co-executed runs have a standby (the one CPU worker
    /// that stays until the run is done while the other claimants leave
    /// once nothing is left, the caller running the claimant of its own
    /// core) also beside a device that runs on the host's cores, where
    /// they otherwise have none: so that lavapipe runs that path (test
    /// hook; cargo feature `test-hooks`).
    #[cfg(feature = "test-hooks")]
    pub fn standby_beside_any_device(&self, on: bool) {
        // Relaxed: a setting read by the next runs, which the caller
        // starts after this call (program order).
        self.inner.standby_anywhere.store(on, Ordering::Relaxed);
    }

    /// From now on, every GPU's wave holds `units` units of a run (its
    /// package granule, and what a run must exceed for an unmeasured CPU
    /// to probe: see `Plan::holds_back`), where a GPU's own width is
    /// unknown or otherwise; `None`: each GPU's own again (test hook;
    /// cargo feature `test-hooks`). Lavapipe reports no width: this makes
    /// its runs hold the CPU's probe back as an H200's small runs do.
    #[cfg(feature = "test-hooks")]
    pub fn assume_gpu_wave(&self, units: Option<u64>) {
        // Relaxed: a setting read by the next runs, which the caller
        // starts after this call (program order).
        self.inner
            .assumed_wave
            .store(units.unwrap_or(0), Ordering::Relaxed);
    }

    /// The wave of [`assume_gpu_wave`](Self::assume_gpu_wave) where set
    /// (test hooks), else of the testing aid `COEXEC_ASSUME_GPU_WAVE` (a
    /// number of units, read once per process: lavapipe's runs then hold
    /// an unmeasured CPU's probe back as an H200's small runs do, for
    /// measuring what follows on a machine without such a GPU), if set.
    pub(crate) fn assumed_wave(&self) -> Option<u64> {
        #[cfg(feature = "test-hooks")]
        {
            // Relaxed: as in `assume_gpu_wave`.
            let hook = self.inner.assumed_wave.load(Ordering::Relaxed);
            if hook > 0 {
                return Some(hook);
            }
        }
        static ENV: std::sync::OnceLock<Option<u64>> = std::sync::OnceLock::new();
        *ENV.get_or_init(|| {
            std::env::var("COEXEC_ASSUME_GPU_WAVE")
                .ok()
                .and_then(|v| v.trim().parse::<u64>().ok())
                .filter(|&w| w > 0)
        })
    }

    /// Whether [`standby_beside_any_device`](Self::standby_beside_any_device)
    /// is on (never without test hooks).
    pub(crate) fn standby_anywhere(&self) -> bool {
        #[cfg(feature = "test-hooks")]
        {
            // Relaxed: as in `standby_beside_any_device`.
            self.inner.standby_anywhere.load(Ordering::Relaxed)
        }
        #[cfg(not(feature = "test-hooks"))]
        false
    }

    /// The delay of [`delay_cold_gpu_packages`](Self::delay_cold_gpu_packages).
    #[cfg(feature = "test-hooks")]
    pub(crate) fn cold_delay(&self) -> Option<std::time::Duration> {
        *self
            .inner
            .cold_delay
            .lock()
            .unwrap_or_else(|p| p.into_inner())
    }

    /// Lazy host coherence on a GPU whose transfers share its compute
    /// queue: whether each CPU package of a co-executed run downloads only
    /// the stale bytes it reads (test hook; cargo feature `test-hooks`).
    /// Off by default there, since such a download queues behind the GPU's
    /// packages in flight (a hung package would make the CPU's wait time
    /// out); the run then downloads every stale range at its start. A run
    /// of the CPU with one GPU that has a dedicated transfer queue (or of
    /// the CPU alone, where every GPU has one) always syncs per CPU
    /// package; a run of the CPU with several GPUs syncs at its start.
    #[cfg(feature = "test-hooks")]
    pub fn sync_per_cpu_package(&self, on: bool) {
        // Relaxed: a setting read at the start of later runs.
        self.inner.cpu_package_sync.store(on, Ordering::Relaxed);
    }

    /// Whether the CPU packages of a run with engine GPU `gpu` (`None`:
    /// the CPU alone) sync what they read (see
    /// [`Engine::sync_per_cpu_package`]).
    pub(crate) fn cpu_package_sync(&self, gpu: Option<usize>) -> bool {
        let gpus = &self.inner.gpus;
        // Co-executed runs transfer on a dedicated queue (not where only a
        // lone GPU's runs do, `TransferQueue::Auto`).
        let shared_on_own_queue =
            |u: &GpuUnit| u.device.has_transfer_queue() && !u.device.transfers_lone_only();
        let dedicated = match gpu {
            Some(g) => gpus.get(g).is_some_and(shared_on_own_queue),
            None => !gpus.is_empty() && gpus.iter().all(shared_on_own_queue),
        };
        // Relaxed: as in `sync_per_cpu_package`.
        dedicated || self.inner.cpu_package_sync.load(Ordering::Relaxed)
    }

    /// Makes every new device-local mirror allocation fail from now on
    /// (test hook; cargo feature `test-hooks`); with `as_auto`, staging
    /// counts as chosen by [`MemoryPlacement::Auto`], so the buffer falls
    /// back to zero-copy instead of failing the run.
    #[cfg(feature = "test-hooks")]
    pub fn inject_mirror_failure(&self, as_auto: bool) {
        self.inner.memory.inject_mirror_failure(as_auto);
    }

    /// The engine's process-unique id (buffers carry it; a buffer of another
    /// engine is refused).
    pub fn id(&self) -> u64 {
        self.inner.id
    }

    /// The options the engine was built with.
    pub fn options(&self) -> &EngineOptions {
        &self.inner.options
    }

    /// Validation errors reported so far by the Khronos layer (0 when off).
    pub fn validation_errors(&self) -> u64 {
        self.device().instance().validation_log().errors() + self.spirv_validation_errors()
    }

    /// How many validation error messages a call keeps
    /// ([`with_validation_messages`](Self::with_validation_messages),
    /// [`Error::Validation`]) and [`validation_messages`](Self::validation_messages)
    /// returns at most.
    pub const KEPT_VALIDATION_MESSAGES: usize = vk::KEPT_MESSAGES;

    /// The validation layer's most recent error messages (at most
    /// [`KEPT_VALIDATION_MESSAGES`](Self::KEPT_VALIDATION_MESSAGES)).
    pub fn validation_messages(&self) -> Vec<String> {
        let mut m = self.device().instance().validation_log().error_messages();
        m.extend(self.spirv_validation_messages());
        m
    }

    /// Runs `f` and returns, with its result, the validation layer's error
    /// messages reported while it ran (by any thread using the engine's
    /// instance; the first
    /// [`KEPT_VALIDATION_MESSAGES`](Self::KEPT_VALIDATION_MESSAGES)), however many the
    /// instance reported before. Empty when validation is off.
    pub fn with_validation_messages<R>(&self, f: impl FnOnce() -> R) -> (R, Vec<String>) {
        let capture = self.device().instance().validation_log().capture();
        let r = f();
        (r, capture.finish())
    }

    /// Runs `f`; with [`EngineOptions::validation_errors_fail`], turns its
    /// result into [`Error::Validation`] when the layer reported errors
    /// meanwhile.
    fn validated<R>(&self, f: impl FnOnce() -> Result<R>) -> Result<R> {
        if !self.inner.options.validation_errors_fail {
            return f();
        }
        let before = self.validation_errors();
        let spirv_before = self.spirv_validation_errors();
        let (result, mut messages) = self.with_validation_messages(f);
        let count = self.validation_errors().saturating_sub(before);
        if count == 0 {
            return result;
        }
        if self.spirv_validation_errors() > spirv_before {
            messages.extend(self.spirv_validation_messages());
        }
        Err(Error::Validation { count, messages })
    }

    /// A zero-filled unified buffer of `len` elements. On a staged engine
    /// ([`MemoryPlacement::Staged`]) it gets its device-local mirror on
    /// each GPU now, where that fits (else at its first run).
    pub fn buffer<T: bytemuck::Pod>(&self, len: usize) -> Result<Buffer<T>> {
        self.validated(|| self.inner.memory.buffer(len))
            .inspect(|b| self.mirror_ahead(b.raw()))
    }

    /// A staged engine's new buffer gets its mirrors on every GPU (see
    /// [`crate::exec::staging::mirror_ahead`]).
    fn mirror_ahead(&self, raw: &crate::mem::RawBuffer) {
        if self.inner.memory.placement() == MemoryPlacement::Staged {
            crate::exec::staging::mirror_ahead(raw, self.inner.gpus.len());
        }
    }

    /// A unified buffer holding a copy of `data` (with its mirrors on a
    /// staged engine, as for [`Engine::buffer`]).
    ///
    /// ```
    /// # fn main() -> Result<(), coexec_engine::Error> {
    /// # let Ok(engine) = coexec_engine::Engine::new() else { return Ok(()) }; // no device: skip
    /// let mut x = engine.buffer_from_slice(&[1.0f32, 2.0, 3.0])?;
    /// // The same bytes the kernels bind: no copy either way.
    /// x[1] = 5.0;
    /// assert_eq!(&x[..], &[1.0, 5.0, 3.0]);
    /// # Ok(())
    /// # }
    /// ```
    pub fn buffer_from_slice<T: bytemuck::Pod>(&self, data: &[T]) -> Result<Buffer<T>> {
        self.validated(|| self.inner.memory.buffer_from_slice(data))
            .inspect(|b| self.mirror_ahead(b.raw()))
    }

    /// Builds a kernel from SPIR-V bytes (`None`: CPU only), a CPU closure
    /// (`None`: GPU only) and, for CPU-only kernels, the work-group size the
    /// CPU packages are counted in.
    pub fn kernel(
        &self,
        name: &str,
        spirv: Option<&[u8]>,
        cpu: Option<Arc<CpuFn>>,
        local_size: Option<[u32; 3]>,
    ) -> Result<Kernel> {
        let words = spirv.map(vk::spirv::words_from_bytes).transpose()?;
        self.validated(|| self.build_kernel(name, words, cpu, local_size))
    }

    /// Builds a kernel from GLSL source compiled at run time.
    ///
    /// A build without the cargo feature `glsl` (the lean build) returns
    /// [`Error::GlslUnsupported`]: use [`kernel`](Self::kernel) with SPIR-V.
    pub fn kernel_glsl(&self, name: &str, glsl: &str, cpu: Option<Arc<CpuFn>>) -> Result<Kernel> {
        let words = crate::shader::compile_glsl(glsl, name)?;
        self.validated(|| self.build_kernel(name, Some(words), cpu, None))
    }

    /// [`kernel`](Self::kernel) and [`kernel_glsl`](Self::kernel_glsl)
    /// without the validation check of [`validated`](Self::validated).
    fn build_kernel(
        &self,
        name: &str,
        words: Option<Vec<u32>>,
        cpu: Option<Arc<CpuFn>>,
        local_size: Option<[u32; 3]>,
    ) -> Result<Kernel> {
        if words.is_none() && cpu.is_none() {
            return Err(Error::Interface(
                "a kernel needs SPIR-V, a CPU closure, or both".into(),
            ));
        }
        let (interface, pipeline) = match &words {
            Some(w) => {
                let iface = vk::spirv::reflect(w, "main")?;
                let info = self.device().info();
                check_device_limits(&iface, info)?;
                if iface.uses_local_size_id && !info.maintenance4 {
                    return Err(Error::InvalidSpirv(
                        "the shader uses LocalSizeId, which needs maintenance4; compile for Vulkan 1.2".into(),
                    ));
                }
                if let Some(ls) = local_size {
                    if ls != iface.local_size {
                        return Err(Error::Interface(format!(
                            "local size {ls:?} given but the shader declares {:?}",
                            iface.local_size
                        )));
                    }
                }
                let p = ComputePipeline::new(self.device().clone(), w, iface.clone())?;
                (Some(iface), Some(Arc::new(p)))
            }
            None => (None, None),
        };
        let local = interface
            .as_ref()
            .map(|i| i.local_size)
            .or(local_size)
            .unwrap_or([64, 1, 1]);
        if local.contains(&0) {
            return Err(Error::Interface(format!(
                "local size {local:?} has a zero dimension"
            )));
        }
        // The SPIR-V CPU device's pipeline comes last (index `gpus.len()`).
        let others: Vec<_> = (self.inner.gpus.iter().skip(1))
            .chain(&self.inner.spirv)
            .map(|g| &g.device)
            .collect();
        let other_gpus = gpus::other_pipelines(&pipeline, &words, &others)?;
        Ok(Kernel {
            name: name.to_string(),
            local,
            interface,
            pipeline,
            other_gpus,
            cpu,
            estimator: Arc::new(ThroughputEstimator::new(
                1 + self.inner.gpus.len() + usize::from(self.inner.spirv.is_some()),
            )),
            learned: Arc::default(),
            gpu_warm: Arc::default(),
            identity: match &words {
                Some(w) => crate::profile::fnv1a(bytemuck::cast_slice(w)),
                None => crate::profile::fnv1a(format!("cpu-only {name} {local:?}").as_bytes()),
            },
            tiles: false,
        })
    }

    /// Keeps the engine's CPU workers and GPU dispatch threads awake
    /// between runs until the returned hold is dropped: back-to-back runs
    /// (the steps of a [`Program`](crate::Program), which takes one for
    /// its whole run) then start without waking a parked thread. The
    /// threads spin, yielding their cores, while the hold lives and no run
    /// is in flight, so drop it as soon as the runs are done.
    pub fn keep_awake(&self) -> crate::AwakeHold<'_> {
        self.inner.pool.hold_awake()
    }

    /// Runs `kernel` over `space` on `devices` with `scheduler`, blocking
    /// until every work-item is done.
    ///
    /// Powers given to the scheduler are in device order: the CPU first
    /// (when selected), then the GPU. A selected device that cannot take
    /// part (the GPU left out after a failure, an engine without CPU
    /// workers, or a device whose limits cannot dispatch or bind the run
    /// where another chosen device can: its report notes `left out: ...`)
    /// has its power dropped, so the same call keeps running on what is
    /// left.
    pub fn run(
        &self,
        kernel: &Kernel,
        args: Args<'_>,
        space: IndexSpace,
        scheduler: &Scheduler,
        devices: Devices,
    ) -> Result<Report> {
        self.validated(|| {
            let geometry = Geometry::new(space, kernel.local, kernel.tiles)?;
            self.run_unvalidated(kernel, args, geometry, scheduler, devices)
        })
    }

    /// Runs the units `units` of `space` only: work-groups `units` in 1-D,
    /// rows of work-groups `units` in 2-D ([`Kernel::units`] gives how many
    /// a space has), blocking until they are done. Otherwise as
    /// [`run`](Self::run).
    ///
    /// The run is a part of the whole space's: GPU packages are dispatched
    /// at their true base work-group (`gl_GlobalInvocationID` and
    /// `gl_WorkGroupID` are the space's), CPU packages get the space's item
    /// ids ([`Package::items`], [`Package::rows`]), outputs are checked to
    /// hold the whole space's items, and a reduction combines the
    /// sub-range's work-groups only. What the kernel learns is kept for the
    /// whole space: consecutive runs of sub-ranges of one space (the claims
    /// of a distributed run, say) reuse each other's device costs, and the
    /// profile of its shape class. The report's [`Report::units`] and
    /// [`Report::items`] count the sub-range; its package log names the
    /// space's units and items.
    ///
    /// An empty range, or one reaching past the space's units, is
    /// [`Error::SubRange`].
    ///
    /// [`Package::items`]: crate::Package::items
    /// [`Package::rows`]: crate::Package::rows
    pub fn run_range(
        &self,
        kernel: &Kernel,
        args: Args<'_>,
        space: IndexSpace,
        units: std::ops::Range<u64>,
        scheduler: &Scheduler,
        devices: Devices,
    ) -> Result<Report> {
        self.validated(|| {
            let geometry = Geometry::sub_range(space, kernel.local, kernel.tiles, units)?;
            self.run_unvalidated(kernel, args, geometry, scheduler, devices)
        })
    }

    /// Checks a run's arguments: those of every run, whichever devices
    /// take part ([`check_interface`]); each device's limits are checked
    /// apart ([`within_limits`](Self::within_limits)).
    fn validate_args(&self, kernel: &Kernel, args: &Args<'_>, g: &Geometry) -> Result<()> {
        for (i, b) in args.buffers.iter().enumerate() {
            if b.raw.id().engine != self.inner.id {
                return Err(Error::ForeignBuffer { binding: i as u32 });
            }
            crate::exec::footprint::check_arg(i as u32, &args.buffers, g.space)?;
            if let Access::Write { per_item } = b.access {
                if per_item == 0 {
                    return Err(Error::ZeroPerItem { binding: i as u32 });
                }
                let needed = g.space.items().checked_mul(per_item).ok_or_else(|| {
                    Error::SizeOverflow(format!("{} items x {per_item} elements", g.space.items()))
                })?;
                if (b.len as u64) < needed {
                    return Err(Error::BufferTooSmall {
                        binding: i as u32,
                        len: b.len as u64,
                        needed,
                    });
                }
            }
        }
        if let Some(iface) = &kernel.interface {
            check_interface(iface, args)?;
        }
        Ok(())
    }
}

/// What a kernel's shader declares against the device's limits, checked
/// before any driver sees the module (a driver sizes what it allocates by
/// them: the Vulkan rules leave a shader past a limit undefined): the
/// work-group size, the storage buffers bound, the work-group memory and
/// the push constants.
fn check_device_limits(iface: &vk::ShaderInterface, info: &vk::PhysicalDeviceInfo) -> Result<()> {
    let [x, y, z] = iface.local_size;
    if x > info.max_group_size[0]
        || y > info.max_group_size[1]
        || z > info.max_group_size[2]
        || u64::from(x) * u64::from(y) * u64::from(z) > u64::from(info.max_group_invocations)
    {
        return Err(Error::Interface(format!(
            "work-group size {:?} exceeds {}'s limits (maxComputeWorkGroupSize {:?}, maxComputeWorkGroupInvocations {})",
            iface.local_size, info.name, info.max_group_size, info.max_group_invocations
        )));
    }
    if iface.bindings.len() as u64 > u64::from(info.max_storage_buffers) {
        return Err(Error::Interface(format!(
            "{} storage buffers exceed {}'s maxPerStageDescriptorStorageBuffers / maxDescriptorSetStorageBuffers of {}",
            iface.bindings.len(), info.name, info.max_storage_buffers
        )));
    }
    if iface.shared_memory_bytes > u64::from(info.max_shared_memory) {
        return Err(Error::Interface(format!(
            "work-group (shared) memory of {} bytes exceeds {}'s maxComputeSharedMemorySize of {} bytes",
            iface.shared_memory_bytes, info.name, info.max_shared_memory
        )));
    }
    if iface.push_constant_bytes > info.max_push_constants {
        return Err(Error::Interface(format!(
            "push constants of {} bytes exceed maxPushConstantsSize {}",
            iface.push_constant_bytes, info.max_push_constants
        )));
    }
    Ok(())
}

/// What the kernel's shader declares against the run's arguments: the
/// buffers' number, access and element size, and the push constants' size.
/// Checked for every run of a kernel that has SPIR-V, whichever devices take
/// part, so that a run is accepted or refused the same way on any of them.
fn check_interface(iface: &vk::ShaderInterface, args: &Args<'_>) -> Result<()> {
    if iface.bindings.len() != args.buffers.len() {
        return Err(Error::Interface(format!(
            "the shader declares {} storage buffer(s) but {} were given",
            iface.bindings.len(),
            args.buffers.len()
        )));
    }
    for (i, (b, a)) in iface.bindings.iter().zip(&args.buffers).enumerate() {
        if a.access == Access::Read && !b.read_only {
            return Err(Error::Interface(format!(
                "binding {} is writable in the shader but was given as an input; declare it readonly or pass it as an output",
                b.binding
            )));
        }
        if let Some(stride) = b.elem_stride {
            if a.elem_size != stride as usize {
                return Err(Error::Interface(format!(
                    "argument {i}: the buffer holds {} ({} bytes) but binding {} declares elements of {stride} bytes (its array stride)",
                    a.type_name, a.elem_size, b.binding
                )));
            }
        }
    }
    if iface.push_constant_bytes as usize != args.push.len() {
        return Err(Error::Interface(format!(
            "the shader's push constants take {} bytes but {} were given",
            iface.push_constant_bytes,
            args.push.len()
        )));
    }
    Ok(())
}

/// The pool of pinned threads: the CPU workers of `plan`, then one thread
/// per Vulkan device (pinned to `pins`; the SPIR-V CPU device's, where
/// present, is the one at `gpu_count`).
fn start_pool(plan: &CorePlan, pins: Vec<CoreSet>, gpu_count: usize) -> Result<Pool> {
    let mut specs: Vec<ThreadSpec> = plan
        .workers
        .iter()
        .enumerate()
        .map(|(i, c)| ThreadSpec {
            name: format!("coexec-cpu-{i}"),
            pin: Some(c.clone()),
        })
        .collect();
    specs.extend(pins.into_iter().enumerate().map(|(g, pin)| ThreadSpec {
        name: match g == gpu_count {
            false => format!("coexec-gpu-{g}"),
            true => "coexec-spirv-cpu".to_string(),
        },
        pin: (!pin.pus.is_empty()).then_some(pin),
    }));
    Pool::new(specs).map_err(|e| Error::Cpu {
        message: "starting the pinned threads".into(),
        source: Some(Box::new(e)),
    })
}

/// Each Vulkan device's dispatch ring, thread and (staged memory, GPUs
/// only) stager; the device at `gpu_count`, where present, is the SPIR-V
/// CPU device.
fn gpu_units(
    devices: Vec<Arc<Device>>,
    memory: &UnifiedMemory,
    options: &EngineOptions,
    workers: usize,
    gpu_count: usize,
) -> Result<Vec<GpuUnit>> {
    let mut units = Vec::with_capacity(devices.len());
    for (g, device) in devices.into_iter().enumerate() {
        let ring = vk::DispatchRing::new(device.clone(), options.gpu_in_flight.max(1))?;
        // Staged memory mirrors the buffers on every GPU (see
        // `UnifiedMemory::new_shared`), not on the SPIR-V CPU device,
        // which reads host memory.
        let stagers = match memory.placement() {
            MemoryPlacement::Staged if g < gpu_count => {
                Some(crate::exec::stagers::RunStagers::new(&device)?)
            }
            _ => None,
        };
        units.push(GpuUnit {
            device,
            ring: Mutex::new(ring),
            thread: workers + g,
            stagers,
        });
    }
    Ok(units)
}

/// Lazy host coherence where it is asked for (the options, or the
/// environment) and every GPU is staged: the buffers get stagers of their
/// own, one per GPU.
fn make_lazy_if_asked(
    memory: &UnifiedMemory,
    gpus: &[GpuUnit],
    options: &EngineOptions,
) -> Result<()> {
    let coherence = crate::mem::coherence::env_override().unwrap_or(options.host_coherence);
    let staged = gpus.iter().all(|u| u.stagers.is_some());
    if !(staged && coherence == HostCoherence::Lazy) {
        return Ok(());
    }
    let ns = u64::try_from(options.gpu_timeout.as_nanos()).unwrap_or(u64::MAX);
    // Stagers of the buffers' own, one per GPU (on the queue of its
    // shared runs' transfers): CPU packages sync while the GPU's dispatch
    // loop holds the runs' stager.
    let stagers = gpus
        .iter()
        .map(|u| {
            let lane = u.device.shared_copies_lane();
            Ok(Arc::new(Mutex::new(vk::transfer::Stager::new(
                u.device.clone(),
                lane,
            )?)))
        })
        .collect::<Result<Vec<_>>>()?;
    memory.make_lazy(stagers, ns);
    Ok(())
}

/// The engine's energy sources: none unless `objective` needs metering.
fn engine_energy(units: &[GpuUnit], objective: Objective) -> energy::EngineEnergy {
    // NVML only for one NVIDIA GPU (vendor 0x10de; several GPUs: left
    // out for now); a CPU implementation's energy is the CPU package's.
    let nvidia = match units {
        [u] if u.device.info().vendor_id == 0x10de => Some(u.device.info().device_uuid),
        _ => None,
    };
    // Reading the counters costs milliseconds a run on some drivers
    // (NVML on an H200: ~9 ms of wall time around every run), so the
    // engine meters only when asked (see `EngineOptions::objective`).
    let sources = if metering_wanted(objective) {
        EnergySources::detect(nvidia)
    } else {
        EnergySources::default()
    };
    energy::EngineEnergy::new(sources)
}

/// Opens `copies` logical devices on each of `chosen` (in that order), and
/// the core set each one's dispatch loop is pinned to: a CPU
/// implementation's loop shares that device's own cores (the instance and
/// such devices are created on a thread pinned to them, so their threads
/// inherit that affinity), a GPU's loop gets the plan's next GPU loop core.
fn open_devices(
    probe: Arc<Instance>,
    chosen: &[PhysicalDeviceInfo],
    copies: usize,
    plan: &CorePlan,
    options: &EngineOptions,
) -> Result<(Vec<Arc<Device>>, Vec<CoreSet>)> {
    let driver = DriverEmulation::from_env().unwrap_or(options.driver);
    let dev_opts = DeviceOptions {
        pipeline_cache_dir: options.pipeline_cache_dir.clone(),
        driver,
        transfer_queue: TransferQueue::from_env().unwrap_or(options.transfer_queue),
    };
    let is_cpu = |d: &&PhysicalDeviceInfo| d.device_type == DeviceType::Cpu;
    let (instance, mut cpu_devices) = match plan.cpu_vulkan_devices.first() {
        Some(cores) if chosen.iter().any(|d| is_cpu(&d)) => {
            check_lavapipe_threads(cores.pus.len());
            drop(probe);
            let validation = options.validation;
            with_affinity(cores, || -> Result<_> {
                let instance = Arc::new(Instance::with_api_cap(validation, driver.api_cap())?);
                let all = instance.all_physical_devices()?;
                let mut out = Vec::new();
                for d in chosen.iter().filter(is_cpu) {
                    let info = gpus::refind(&all, d.index)?;
                    for _ in 0..copies {
                        out.push(Device::new(instance.clone(), info.clone(), &dev_opts)?);
                    }
                }
                Ok((instance, out.into_iter()))
            })?
        }
        _ => (probe, Vec::new().into_iter()),
    };
    let all = instance.all_physical_devices()?;
    let (mut devices, mut pins) = (Vec::new(), Vec::new());
    let (mut cpu_k, mut gpu_k) = (0, 0);
    let none = CoreSet { pus: Vec::new() };
    for d in chosen {
        for _ in 0..copies {
            if is_cpu(&d) {
                devices.push(cpu_devices.next().expect("opened above"));
                pins.push(plan.cpu_vulkan_devices.get(cpu_k).unwrap_or(&none).clone());
            } else {
                let info = gpus::refind(&all, d.index)?;
                devices.push(Device::new(instance.clone(), info, &dev_opts)?);
                pins.push(plan.gpu_loops.get(gpu_k).unwrap_or(&none).clone());
                gpu_k += 1;
            }
        }
        cpu_k += usize::from(is_cpu(&d));
    }
    Ok((devices, pins))
}

/// Warns when lavapipe will run more threads than the `cores` hardware
/// threads it was given (`LP_NUM_THREADS` unset, or larger): they then share
/// those cores. Only reads the environment.
fn check_lavapipe_threads(cores: usize) {
    let set = std::env::var("LP_NUM_THREADS").ok();
    match set.as_deref().map(|v| v.trim().parse::<usize>()) {
        Some(Ok(n)) if n <= cores => {}
        Some(Ok(n)) => tracing::warn!(
            "LP_NUM_THREADS={n} but lavapipe has {cores} hardware thread(s) of its own: its threads will share them"
        ),
        _ => tracing::info!(
            "LP_NUM_THREADS is not set: lavapipe starts its default number of threads on its {cores} hardware thread(s); set LP_NUM_THREADS={cores} before starting threads (Engine::cpu_device_cores)"
        ),
    }
}

/// Where profiles live: `profiles/` under the pipeline cache directory, or
/// nowhere when profiles or the cache are off.
fn profile_dir(options: &EngineOptions) -> Option<PathBuf> {
    if !options.profiles {
        return None;
    }
    match &options.pipeline_cache_dir {
        Some(d) if d.as_os_str().is_empty() => None,
        Some(d) => Some(d.join("profiles")),
        None => vk::PipelineCache::default_dir().map(|d| d.join("profiles")),
    }
}

/// What a GPU's measurements depend on: the device and its driver.
/// For each GPU dispatch loop of `chosen` (each GPU `copies` times, CPU
/// implementations left out, as [`PlanRequest::gpu_loops`] counts them),
/// the PUs local to its GPU where its PCI address and sysfs tell them
/// (empty where unknown: lavapipe, no `VK_EXT_pci_bus_info`, no sysfs).
fn local_pus(chosen: &[PhysicalDeviceInfo], copies: usize) -> Vec<Vec<usize>> {
    chosen
        .iter()
        .filter(|d| d.device_type != DeviceType::Cpu)
        .flat_map(|d| {
            let pus = d
                .pci_bus
                .and_then(crate::exec::topology::pci_locality)
                .map(|l| l.local_pus)
                .unwrap_or_default();
            std::iter::repeat_n(pus, copies)
        })
        .collect()
}

fn describe_gpu(info: &PhysicalDeviceInfo) -> String {
    format!(
        "gpu {} {:04x}:{:04x} driver {} cache {}",
        info.name,
        info.vendor_id,
        info.device_id,
        info.driver_version,
        info.pipeline_cache_uuid_hex()
    )
}

/// Whether an engine with this objective reads the energy counters: under
/// [`Objective::Edp`], or where the environment sets `COEXEC_ENERGY=1`.
fn metering_wanted(objective: Objective) -> bool {
    objective == Objective::Edp || std::env::var("COEXEC_ENERGY").is_ok_and(|v| v == "1")
}

#[cfg(test)]
mod tests {
    /// Building an engine (on lavapipe, the path that gives a CPU Vulkan
    /// device its own cores) reads the environment but never writes it.
    #[test]
    fn engine_creation_leaves_the_environment_unchanged() {
        use super::{Engine, EngineOptions};
        let before: Vec<_> = std::env::vars_os().collect();
        let engine = Engine::with_options(EngineOptions {
            workers: Some(1),
            validation: crate::vk::Validation::IfAvailable,
            profiles: false,
            ..Default::default()
        });
        let after: Vec<_> = std::env::vars_os().collect();
        assert_eq!(before, after);
        if let Ok(e) = engine {
            if e.device().info().device_type == crate::vk::DeviceType::Cpu {
                assert_eq!(
                    Engine::cpu_device_cores(Some(1)),
                    e.core_plan()
                        .cpu_vulkan_devices
                        .first()
                        .map(|c| c.pus.len())
                );
            }
        }
    }

    /// Each device limit a kernel's shader is checked against refuses it
    /// one past the limit, naming the limit, and accepts it at the limit.
    #[cfg(feature = "glsl")]
    #[test]
    fn a_shader_past_any_device_limit_is_refused_naming_it() {
        use super::{check_device_limits, Error};
        let Some(e) = crate::test_engines::one_worker(crate::MemoryPlacement::Auto) else {
            return;
        };
        let glsl = "#version 450
layout(local_size_x = 8, local_size_y = 2) in;
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) buffer Y { float y[]; };
layout(push_constant) uniform P { float a; uint n; } p;
shared float s[16];
void main() { s[gl_LocalInvocationIndex] = x[0]; barrier(); y[0] = p.a * s[1] + float(p.n); }";
        let words = crate::shader::compile_glsl(glsl, "limits").unwrap();
        let iface = crate::vk::spirv::reflect(&words, "main").unwrap();
        assert_eq!(iface.shared_memory_bytes, 64);
        let at = |f: &dyn Fn(&mut crate::vk::PhysicalDeviceInfo)| {
            let mut info = e.device().info().clone();
            f(&mut info);
            check_device_limits(&iface, &info)
        };
        let refused = |f: &dyn Fn(&mut crate::vk::PhysicalDeviceInfo), limit: &str| {
            let r = at(f);
            assert!(
                matches!(&r, Err(Error::Interface(m)) if m.contains(limit)),
                "{limit}: {r:?}"
            );
        };
        at(&|i| {
            i.max_group_size = [8, 2, 1];
            i.max_group_invocations = 16;
            i.max_storage_buffers = 2;
            i.max_shared_memory = 64;
            i.max_push_constants = 8;
        })
        .unwrap();
        refused(&|i| i.max_group_size[0] = 7, "maxComputeWorkGroupSize");
        refused(
            &|i| i.max_group_invocations = 15,
            "maxComputeWorkGroupInvocations",
        );
        refused(
            &|i| i.max_storage_buffers = 1,
            "maxPerStageDescriptorStorageBuffers",
        );
        refused(&|i| i.max_shared_memory = 63, "maxComputeSharedMemorySize");
        refused(&|i| i.max_push_constants = 7, "maxPushConstantsSize");
    }

    /// A failing call reports its own messages even after the instance
    /// logged more than the log keeps (the layer's reports are simulated:
    /// it suppresses repeats of one message).
    #[test]
    fn validation_messages_are_the_calls_after_many_earlier_ones() {
        use super::{Engine, EngineOptions, Error};
        let Ok(e) = Engine::with_options(EngineOptions {
            workers: Some(1),
            validation: crate::vk::Validation::Off,
            validation_errors_fail: true,
            profiles: false,
            ..Default::default()
        }) else {
            eprintln!("skipping: no Vulkan device");
            return;
        };
        let log = e.device().instance().validation_log();
        for i in 0..(Engine::KEPT_VALIDATION_MESSAGES + 6) {
            let r = e.validated(|| {
                log.record_error(format!("earlier {i}"));
                Ok(())
            });
            assert!(matches!(r, Err(Error::Validation { count: 1, .. })));
        }
        match e.validated(|| {
            log.record_error("this call".into());
            Ok(())
        }) {
            Err(Error::Validation { count, messages }) => {
                assert_eq!((count, messages), (1, vec!["this call".to_string()]))
            }
            other => panic!("expected Error::Validation, got {other:?}"),
        }
        assert!(e.validated(|| Ok(())).is_ok());
    }

    /// One numbering: `GpuChoice::Index` takes a device's position among
    /// every device, usable or not; an unusable one is named as such.
    #[test]
    fn gpu_index_counts_every_device_and_unusable_ones_are_refused() {
        use super::{pick, Engine, Error, GpuChoice};
        let Some(real) = Engine::vulkan_devices()
            .ok()
            .and_then(|d| d.into_iter().next())
        else {
            eprintln!("skipping: no Vulkan device");
            return;
        };
        let mut old = real.clone();
        old.index = 0;
        old.api_version = ash::vk::API_VERSION_1_0;
        let mut usable = real;
        usable.index = 1;
        let devs = [old, usable];
        match pick(&devs, GpuChoice::Index(0)) {
            Err(Error::DeviceUnusable {
                index: 0, reason, ..
            }) => {
                assert!(
                    reason.contains("1.0") && reason.contains("needs 1.1"),
                    "{reason}"
                )
            }
            other => panic!("expected DeviceUnusable, got {other:?}"),
        }
        assert_eq!(pick(&devs, GpuChoice::Index(1)).unwrap().index, 1);
        assert_eq!(pick(&devs, GpuChoice::Auto).unwrap().index, 1);
        assert!(matches!(
            pick(&devs, GpuChoice::Index(2)),
            Err(Error::DeviceIndex {
                index: 2,
                available: 2
            })
        ));
    }

    /// An engine takes every GPU by default, as its options' documentation,
    /// `GpuChoice`'s default and the C ABI's default options say (it took
    /// the one best device: `coexec info` on four H200s listed one).
    #[test]
    fn every_gpu_by_default() {
        use super::{EngineOptions, GpuChoice};
        assert_eq!(EngineOptions::default().gpu, GpuChoice::All);
        assert_eq!(GpuChoice::default(), GpuChoice::All);
    }

    #[test]
    fn gpu_choices_parse() {
        use super::GpuChoice;
        assert_eq!("all".parse::<GpuChoice>(), Ok(GpuChoice::All));
        assert_eq!("best".parse::<GpuChoice>(), Ok(GpuChoice::Auto));
        assert_eq!("2".parse::<GpuChoice>(), Ok(GpuChoice::Index(2)));
        assert_eq!("0, 3".parse::<GpuChoice>(), Ok(GpuChoice::Set(0b1001)));
        assert!("0,64".parse::<GpuChoice>().is_err());
        assert!("gpu0".parse::<GpuChoice>().is_err());
        assert!("".parse::<GpuChoice>().is_err());
        assert_eq!(GpuChoice::set(&[1, 2]), Some(GpuChoice::Set(0b110)));
        assert_eq!(GpuChoice::set(&[64]), None);
    }

    /// Devices as a set: by kind and by index, and their text form.
    #[test]
    fn devices_are_a_set() {
        use super::Devices;
        assert!(Devices::ALL.cpu && Devices::ALL.has_gpu(0) && Devices::ALL.has_gpu(63));
        assert!(!Devices::CPU.any_gpu() && Devices::GPU.any_gpu());
        let d = Devices::gpu(2).with_gpu(5);
        assert!(d.has_gpu(2) && d.has_gpu(5) && !d.has_gpu(3) && !d.cpu);
        assert_eq!(Devices::gpu(64), Devices::NONE);
        assert!(!Devices::NONE.has_gpu(64));
        for text in ["cpu", "gpu", "cpu,gpu", "gpu1", "cpu,gpu0,gpu3"] {
            assert_eq!(text.parse::<Devices>().unwrap().to_string(), text);
        }
        assert_eq!("all".parse::<Devices>(), Ok(Devices::ALL));
    }

    #[test]
    fn engine_and_kernel_are_send_and_sync() {
        fn is<T: Send + Sync>() {}
        is::<super::Engine>();
        is::<crate::exec::kernel::Kernel>();
    }

    /// An error the layer reports while a call runs fails that call with
    /// `validation_errors_fail`, and only then.
    #[test]
    fn validation_errors_fail_the_call_that_caused_them() {
        use super::{Engine, EngineOptions, Error};
        use crate::vk::Validation;
        let engine = |fail| {
            Engine::with_options(EngineOptions {
                workers: Some(1),
                validation: Validation::IfAvailable,
                validation_errors_fail: fail,
                ..Default::default()
            })
        };
        let Ok(strict) = engine(true) else {
            eprintln!("skipping: no Vulkan device");
            return;
        };
        if !strict.device().instance().validation_enabled() {
            eprintln!("skipping: validation layer not installed");
            return;
        }
        // A zero-sized buffer breaks VUID-VkBufferCreateInfo-size-00912.
        let provoke = |e: &Engine| {
            let info = ash::vk::BufferCreateInfo::default()
                .size(0)
                .usage(ash::vk::BufferUsageFlags::STORAGE_BUFFER);
            // SAFETY: deliberately invalid for the layer to catch; the layer
            // reports before the driver sees it, and whatever comes back is
            // destroyed at once.
            unsafe {
                if let Ok(b) = e.device().raw().create_buffer(&info, None) {
                    e.device().raw().destroy_buffer(b, None);
                }
            }
        };
        assert_eq!(strict.validated(|| Ok(1)).unwrap(), 1);
        let err = strict
            .validated(|| {
                provoke(&strict);
                Ok(())
            })
            .unwrap_err();
        match err {
            Error::Validation { count, messages } => {
                assert!(count >= 1);
                assert!(messages.iter().any(|m| m.contains("00912")), "{messages:?}");
            }
            other => panic!("expected Error::Validation, got {other}"),
        }
        // Earlier errors do not fail later calls.
        assert!(strict.buffer::<u32>(4).is_ok());
        // Without the option, the call keeps its result; the count still grows.
        let lenient = engine(false).expect("a second engine");
        let before = lenient.validation_errors();
        let r = lenient.validated(|| {
            provoke(&lenient);
            Ok(2)
        });
        assert_eq!(r.unwrap(), 2);
        assert!(lenient.validation_errors() > before);
    }
}
