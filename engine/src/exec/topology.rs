//! CPU topology detection and core planning.
//!
//! [`CpuTopology::detect`] asks hwloc (cargo feature `hwloc`; `topology/hwloc.rs`) or else Linux
//! sysfs (`topology/sysfs.rs`) for packages, physical cores, PUs (hardware threads), NUMA nodes
//! and data caches, falling back to `std::thread::available_parallelism` when neither is usable.
//! [`CpuTopology::plan`] splits the physical cores between the engine's roles (CPU workers,
//! CPU-implemented Vulkan devices, GPU dispatch loops); see [`CorePlan`] for the
//! rules. [`pin_current_thread`] and [`with_affinity`] apply a [`CoreSet`] to threads.

#[cfg(target_os = "linux")]
mod affinity;
#[cfg(feature = "hwloc")]
mod hwloc;
mod pci;
mod sysfs;

pub use pci::{pci_locality, PciAddress, PciLocality};

use std::collections::BTreeSet;
use std::fmt;
use std::num::NonZeroUsize;

use tracing::{debug, warn};

/// Errors of core planning.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TopologyError {
    /// More CPU workers were requested than the machine has PUs (hardware threads).
    #[error("{requested} CPU workers requested but only {available} PUs (hardware threads) exist")]
    TooManyWorkers {
        /// Number of workers asked for.
        requested: usize,
        /// Total number of PUs, the most workers a plan can place.
        available: usize,
    },
    /// The topology has no physical core with at least one PU.
    #[error("the CPU topology has no usable core")]
    NoCores,
}

/// The machine's CPU topology, as far as the engine cares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CpuTopology {
    /// Number of CPU packages (sockets), at least 1.
    pub packages: usize,
    /// Physical cores, in hwloc logical order.
    pub cores: Vec<PhysicalCore>,
    /// Total number of PUs (hardware threads).
    pub pus: usize,
    /// NUMA nodes (empty when unknown).
    pub numa_nodes: Vec<NumaNode>,
    /// Data/unified CPU caches, grouped by level, size and line size, ordered by level.
    pub caches: Vec<CacheLevel>,
    /// CPU model name, from hwloc's `CPUModel` info attribute or `/proc/cpuinfo`, `"unknown"` if none.
    pub model: String,
}

/// One physical core.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PhysicalCore {
    /// Logical index of the core (0..number of cores).
    pub index: usize,
    /// Logical index of the package holding the core.
    pub package: usize,
    /// OS index of the NUMA node holding the core, if known.
    pub numa_node: Option<usize>,
    /// OS indices of the core's PUs (hardware threads), ascending; never empty.
    pub pus: Vec<usize>,
}

/// One NUMA node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NumaNode {
    /// OS index of the node.
    pub os_index: usize,
    /// Local memory of the node in bytes (0 when unknown).
    pub memory_bytes: u64,
    /// Logical indices of the cores attached to the node.
    pub cores: Vec<usize>,
}

/// A group of identical data (or unified) CPU caches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CacheLevel {
    /// Cache level (1 for L1, ...).
    pub depth: u32,
    /// Size of one cache instance in bytes (0 when unknown).
    pub size_bytes: u64,
    /// Number of cache instances of this level and size.
    pub count: usize,
    /// Cache line size in bytes (0 when unknown).
    pub line_bytes: u32,
}

impl CacheLevel {
    /// Cache levels from instance counts keyed by (level, size in bytes,
    /// line size in bytes), in key order: what both topology backends
    /// gather.
    fn from_counts(counts: std::collections::BTreeMap<(u32, u64, u32), usize>) -> Vec<Self> {
        counts
            .into_iter()
            .map(|((depth, size_bytes, line_bytes), count)| CacheLevel {
                depth,
                size_bytes,
                count,
                line_bytes,
            })
            .collect()
    }
}

/// A set of PUs (hardware threads) a thread may run on.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct CoreSet {
    /// OS indices of the PUs.
    pub pus: Vec<usize>,
}

/// What [`CpuTopology::plan`] must place.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PlanRequest {
    /// Number of CPU workers; `None` = one per remaining core (at least 1); `Some(0)` = no CPU
    /// workers (GPU-only engine).
    pub workers: Option<usize>,
    /// Number of devices that are CPU implementations of Vulkan (e.g. Mesa lavapipe).
    pub cpu_vulkan_devices: usize,
    /// Number of GPU dispatch loop threads (one per discrete/integrated GPU).
    pub gpu_loops: usize,
    /// For each GPU dispatch loop (in order), the OS indices of the PUs
    /// local to its GPU ([`pci_locality`]); a loop past the end, or with
    /// none, has no known locality.
    pub gpu_local_pus: Vec<Vec<usize>>,
}

/// How cores are split between the engine's roles.
///
/// Rules applied by [`CpuTopology::plan`], with `C` physical cores taken in topology order:
///
/// 1. **CPU-implemented Vulkan devices** (lavapipe): each gets
///    `per = max(1, C / (cpu_vulkan_devices + 1))` whole cores (all their PUs), taken from the
///    start of the core list: device `d` gets cores `d*per .. (d+1)*per`. On a 2-core machine
///    with one lavapipe device, lavapipe gets core 0 and leaves core 1 to the CPU worker.
///    Only if there are more such devices than cores (`cpu_vulkan_devices > C`) do devices wrap
///    around and share cores (device `d` gets core `d % C`, with a warning).
/// 2. **GPU dispatch loops**: the cores after the devices' form the remaining list. Loop `g`
///    (in order) takes the *last* core of the remaining list as a dedicated core (all its PUs)
///    when at least 2 cores would still remain for workers after taking it (where its GPU's
///    local PUs are known, [`PlanRequest::gpu_local_pus`], the last core of the remaining list
///    that has one of them, so that the loop runs on its GPU's NUMA node; the last core when
///    none has); otherwise it
///    *shares the last worker's core*: its set is all PUs of the last core left for workers
///    (or of the last core of the machine when none is left). A dispatch loop mostly waits on
///    fences, so sharing costs the worker little, whereas a dedicated core on a small machine
///    would cost a whole worker.
/// 3. **CPU workers**: the cores still in the remaining list are the worker cores. Each worker
///    gets one physical core and is pinned to that core's first PU only (SMT siblings stay
///    free). Default (`workers: None`): one worker per worker core; if there is none, a single
///    worker shares the last core of the machine (warning). `Some(0)`: no workers.
///    `Some(n)` with `n` larger than the number of worker cores is allowed up to the total PU
///    count: workers are then spread over single PUs in this order: first PUs of the worker
///    cores, then the other PUs (SMT siblings) of the worker cores, then the PUs of the other
///    cores from the end of the core list backwards (dedicated GPU-loop cores first, then
///    CPU-Vulkan-device cores), sharing those roles' cores. More than the PU count is
///    [`TopologyError::TooManyWorkers`]. Two workers never share a PU.
///
/// The plan depends only on the topology and the request, not on which devices are active in
/// a run, so a device measured solo and co-executed runs on the same cores.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CorePlan {
    /// One set per CPU worker thread (a single PU each).
    pub workers: Vec<CoreSet>,
    /// One set per CPU-implemented Vulkan device (whole cores).
    pub cpu_vulkan_devices: Vec<CoreSet>,
    /// One set per GPU dispatch loop thread (a whole core, dedicated or shared).
    pub gpu_loops: Vec<CoreSet>,
}

/// CPU model name from `/proc/cpuinfo` (Linux), if any.
fn proc_cpuinfo_model() -> Option<String> {
    cpuinfo_model(&std::fs::read_to_string("/proc/cpuinfo").ok()?)
}

/// The CPU model name in the text of a `/proc/cpuinfo`, if any.
fn cpuinfo_model(text: &str) -> Option<String> {
    text.lines().find_map(|line| {
        let (key, value) = line.split_once(':')?;
        let key = key.trim();
        (key == "model name" || key == "Processor" || key == "cpu model")
            .then(|| value.trim().to_string())
            .filter(|v| !v.is_empty())
    })
}

impl CpuTopology {
    /// Detects the topology: with hwloc (cargo feature `hwloc`), else (or when hwloc fails or
    /// reports no usable core) from Linux sysfs, else [`CpuTopology::fallback`] (with a
    /// `tracing` warning).
    pub fn detect() -> CpuTopology {
        #[cfg(feature = "hwloc")]
        match hwloc::detect() {
            Some(topo) if !topo.cores.is_empty() => return topo,
            Some(_) => warn!("hwloc reported no usable CPU core; reading sysfs"),
            None => warn!("hwloc unavailable; reading sysfs"),
        }
        match sysfs::read_topology(std::path::Path::new("/")) {
            Some(topo) if !topo.cores.is_empty() => topo,
            _ => {
                warn!("no CPU topology in sysfs; using fallback CPU topology");
                Self::fallback()
            }
        }
    }

    /// A topology without hwloc or sysfs: `std::thread::available_parallelism` cores with one PU each
    /// (PU indices from the process affinity mask when it has that many entries, else `0..n`),
    /// one package, no NUMA or cache information.
    pub fn fallback() -> CpuTopology {
        let n = std::thread::available_parallelism().map_or(1, NonZeroUsize::get);
        let ids: Vec<usize> = core_affinity::get_core_ids()
            .map(|ids| ids.into_iter().map(|c| c.id).collect::<Vec<_>>())
            .filter(|ids| ids.len() == n)
            .unwrap_or_else(|| (0..n).collect());
        CpuTopology {
            packages: 1,
            cores: ids
                .iter()
                .enumerate()
                .map(|(index, &pu)| PhysicalCore {
                    index,
                    package: 0,
                    numa_node: None,
                    pus: vec![pu],
                })
                .collect(),
            pus: n,
            numa_nodes: Vec::new(),
            caches: Vec::new(),
            model: proc_cpuinfo_model().unwrap_or_else(|| "unknown".to_string()),
        }
    }

    /// A synthetic topology of `cores` cores with `smt` PUs each (both clamped to at least 1),
    /// one package and one NUMA node. PUs are numbered like Linux does: core `i`'s PUs are
    /// `i, i + cores, i + 2*cores, ...`. No cache information; model `"synthetic"`.
    pub fn synthetic(cores: usize, smt: usize) -> CpuTopology {
        let (n, smt) = (cores.max(1), smt.max(1));
        CpuTopology {
            packages: 1,
            cores: (0..n)
                .map(|i| PhysicalCore {
                    index: i,
                    package: 0,
                    numa_node: Some(0),
                    pus: (0..smt).map(|t| i + t * n).collect(),
                })
                .collect(),
            pus: n * smt,
            numa_nodes: vec![NumaNode {
                os_index: 0,
                memory_bytes: 0,
                cores: (0..n).collect(),
            }],
            caches: Vec::new(),
            model: "synthetic".to_string(),
        }
    }

    /// Number of physical cores.
    pub fn physical_cores(&self) -> usize {
        self.cores.len()
    }

    /// Splits the cores between roles; see [`CorePlan`] for the rules.
    ///
    /// # Errors
    ///
    /// [`TopologyError::NoCores`] if no core has a PU; [`TopologyError::TooManyWorkers`] if
    /// more workers are requested than there are PUs.
    pub fn plan(&self, req: &PlanRequest) -> Result<CorePlan, TopologyError> {
        let cores: Vec<&PhysicalCore> = self.cores.iter().filter(|c| !c.pus.is_empty()).collect();
        let c = cores.len();
        if c == 0 {
            return Err(TopologyError::NoCores);
        }

        // Rule 1: CPU-implemented Vulkan devices, from the start of the list.
        let v = req.cpu_vulkan_devices;
        let per = (c / (v + 1)).max(1);
        if v > c {
            warn!(
                devices = v,
                cores = c,
                "more CPU Vulkan devices than cores; devices share cores"
            );
        }
        let cpu_vulkan_devices: Vec<CoreSet> = (0..v)
            .map(|d| CoreSet {
                pus: (0..per)
                    .flat_map(|k| cores[(d * per + k) % c].pus.iter().copied())
                    .collect(),
            })
            .collect();
        let used = (v * per).min(c);

        // Rule 2: GPU dispatch loops, dedicated cores from the end while >= 2 stay for workers.
        let mut worker_cores: Vec<&PhysicalCore> = cores[used..].to_vec();
        let mut dedicated: Vec<CoreSet> = Vec::new();
        while dedicated.len() < req.gpu_loops && worker_cores.len() >= 3 {
            let local = req
                .gpu_local_pus
                .get(dedicated.len())
                .map_or(&[][..], Vec::as_slice);
            let at = worker_cores
                .iter()
                .rposition(|c| c.pus.iter().any(|p| local.contains(p)))
                .unwrap_or(worker_cores.len() - 1);
            let core = worker_cores.remove(at);
            dedicated.push(CoreSet {
                pus: core.pus.clone(),
            });
        }
        // The core a sharing loop (and a lone default worker) lands on.
        let anchor = worker_cores.last().copied().unwrap_or(cores[c - 1]);
        let gpu_loops: Vec<CoreSet> = (0..req.gpu_loops)
            .map(|g| {
                dedicated.get(g).cloned().unwrap_or_else(|| CoreSet {
                    pus: anchor.pus.clone(),
                })
            })
            .collect();

        // Rule 3: CPU workers.
        let n = match req.workers {
            Some(n) => n,
            None if worker_cores.is_empty() => {
                warn!("no core left for CPU workers; one worker shares the last core");
                1
            }
            None => worker_cores.len(),
        };
        // PU placement order: first PUs of worker cores, their SMT siblings, then the other
        // cores' PUs from the end of the core list backwards.
        let mut seen = BTreeSet::new();
        let worker_idx: BTreeSet<usize> = worker_cores.iter().map(|c| c.index).collect();
        let order: Vec<usize> = worker_cores
            .iter()
            .map(|c| c.pus[0])
            .chain(worker_cores.iter().flat_map(|c| c.pus[1..].iter().copied()))
            .chain(
                cores
                    .iter()
                    .rev()
                    .filter(|c| !worker_idx.contains(&c.index))
                    .flat_map(|c| c.pus.iter().copied()),
            )
            .filter(|&p| seen.insert(p))
            .collect();
        if n > order.len() {
            return Err(TopologyError::TooManyWorkers {
                requested: n,
                available: order.len(),
            });
        }
        if n > worker_cores.len() && req.workers.is_some() {
            debug!(
                workers = n,
                worker_cores = worker_cores.len(),
                "more CPU workers than worker cores; spreading workers over PUs"
            );
        }
        let workers = order[..n]
            .iter()
            .map(|&p| CoreSet { pus: vec![p] })
            .collect();
        Ok(CorePlan {
            workers,
            cpu_vulkan_devices,
            gpu_loops,
        })
    }
}

/// Formats a byte count with a binary unit.
fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 || value.fract() == 0.0 {
        format!("{value:.0} {}", UNITS[unit])
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

impl fmt::Display for CpuTopology {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let smt = self.cores.iter().map(|c| c.pus.len()).max().unwrap_or(0);
        writeln!(f, "CPU model: {}", self.model)?;
        writeln!(
            f,
            "  {} package(s), {} physical core(s), {} PU(s) (up to {} per core)",
            self.packages,
            self.cores.len(),
            self.pus,
            smt
        )?;
        for node in &self.numa_nodes {
            writeln!(
                f,
                "  NUMA node {}: {} core(s), {}",
                node.os_index,
                node.cores.len(),
                human_bytes(node.memory_bytes)
            )?;
        }
        for cache in &self.caches {
            writeln!(
                f,
                "  L{} cache: {} x {} (line {} B)",
                cache.depth,
                cache.count,
                human_bytes(cache.size_bytes),
                cache.line_bytes
            )?;
        }
        write!(f, "  cores (core: PUs):")?;
        for core in &self.cores {
            let pus: Vec<String> = core.pus.iter().map(ToString::to_string).collect();
            write!(f, " {}:[{}]", core.index, pus.join(","))?;
        }
        writeln!(f)
    }
}

/// Binds the calling thread to `set`: to the whole set with hwloc (cargo feature `hwloc`), else
/// (hwloc unavailable or refusing) with `sched_setaffinity` (Linux), else with `core_affinity` to
/// the set's first PU. Returns `false`, with a warning, if the set is empty or the OS refuses.
pub fn pin_current_thread(set: &CoreSet) -> bool {
    let Some(&first) = set.pus.first() else {
        warn!("cannot pin a thread to an empty core set");
        return false;
    };
    #[cfg(feature = "hwloc")]
    if let Some(bound) = hwloc::bind_current_thread(&set.pus) {
        return bound;
    }
    #[cfg(target_os = "linux")]
    if affinity::bind_current_thread(&set.pus) {
        return true;
    }
    if core_affinity::set_for_current(core_affinity::CoreId { id: first }) {
        return true;
    }
    warn!(pus = ?set.pus, "the OS refused to pin the thread; it runs unpinned");
    false
}

/// Binds the calling thread to `pus` with `sched_setaffinity` (Linux),
/// quietly: `false` where the OS refuses or elsewhere (a caller that runs
/// a pool thread's job in its place for a while, see
/// [`Pool::broadcast_with_caller`](crate::exec::pool::Pool::broadcast_with_caller),
/// then runs where it was).
pub(crate) fn bind_current_thread_quietly(pus: &[usize]) -> bool {
    #[cfg(target_os = "linux")]
    {
        !pus.is_empty() && affinity::bind_current_thread(pus)
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = pus;
        false
    }
}

/// OS indices of the PUs the calling thread is currently bound to, as reported by hwloc (cargo
/// feature `hwloc`) or else by `sched_getaffinity` (Linux); `None` if neither can tell.
pub fn current_thread_pus() -> Option<Vec<usize>> {
    #[cfg(feature = "hwloc")]
    if let Some(pus) = hwloc::current_thread_pus() {
        return Some(pus);
    }
    #[cfg(target_os = "linux")]
    if let Some(pus) = affinity::current_thread_pus() {
        return Some(pus);
    }
    None
}

/// The PU the calling thread runs on at this moment (Linux `sched_getcpu`);
/// `None` elsewhere or if the kernel does not tell. A hint only: an unpinned
/// thread may move at any time.
pub fn current_pu() -> Option<usize> {
    #[cfg(target_os = "linux")]
    {
        affinity::current_pu()
    }
    #[cfg(not(target_os = "linux"))]
    {
        None
    }
}

/// Runs `f` on a fresh thread pinned to `set` and returns its result; a panic in `f` is
/// propagated to the caller. Threads created inside `f` inherit the affinity (the engine
/// creates lavapipe devices this way so that lavapipe's own threads stay on their cores).
/// If pinning fails, `f` still runs, unpinned (with a warning).
///
/// # Panics
///
/// Re-raises a panic of `f`; panics if the OS cannot create the thread.
pub fn with_affinity<R: Send>(set: &CoreSet, f: impl FnOnce() -> R + Send) -> R {
    std::thread::scope(|scope| {
        let handle = std::thread::Builder::new()
            .name("coexec-affinity".to_string())
            .spawn_scoped(scope, || {
                pin_current_thread(set);
                f()
            })
            .expect("failed to spawn the coexec-affinity thread");
        match handle.join() {
            Ok(r) => r,
            Err(payload) => std::panic::resume_unwind(payload),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    fn req(workers: Option<usize>, cpu_vulkan_devices: usize, gpu_loops: usize) -> PlanRequest {
        PlanRequest {
            workers,
            cpu_vulkan_devices,
            gpu_loops,
            gpu_local_pus: Vec::new(),
        }
    }

    /// Two sockets of 8 cores (node 0: cores 0-7, node 1: 8-15): each
    /// loop takes a core of its GPU's node, the workers the rest; an
    /// unknown locality keeps today's choice (the last core).
    #[test]
    fn gpu_loops_sit_on_their_gpus_nodes() {
        let topo = CpuTopology::synthetic(16, 1);
        let node = |n: usize| (n * 8..n * 8 + 8).collect::<Vec<_>>();
        let mut r = req(None, 0, 2);
        r.gpu_local_pus = vec![node(0), node(1)];
        let plan = topo.plan(&r).unwrap();
        assert_eq!(pus(&plan.gpu_loops), vec![vec![7], vec![15]]);
        assert_eq!(plan.workers.len(), 14);
        let taken: Vec<usize> = plan.workers.iter().flat_map(|c| c.pus.clone()).collect();
        assert!(!taken.contains(&7) && !taken.contains(&15));
        // Unknown for loop 0, node 0 for loop 1.
        r.gpu_local_pus = vec![Vec::new(), node(0)];
        let plan = topo.plan(&r).unwrap();
        assert_eq!(pus(&plan.gpu_loops), vec![vec![15], vec![7]]);
        // PUs that no core has: the last core, as without locality.
        r.gpu_local_pus = vec![vec![99]];
        assert_eq!(pus(&topo.plan(&r).unwrap().gpu_loops)[0], vec![15]);
    }

    fn pus(sets: &[CoreSet]) -> Vec<Vec<usize>> {
        sets.iter().map(|s| s.pus.clone()).collect()
    }

    /// Checks the documented invariants of `plan` for (topology, request).
    fn check_invariants(topo: &CpuTopology, r: &PlanRequest) -> Result<(), TestCaseError> {
        let c = topo.cores.len();
        let v = r.cpu_vulkan_devices;
        let per = (c / (v + 1)).max(1);
        let remaining = c - (v * per).min(c);
        let n_dedicated = r.gpu_loops.min(remaining.saturating_sub(2));
        let worker_cores = remaining - n_dedicated;
        let default_workers = worker_cores.max(1);
        let want = r.workers.unwrap_or(default_workers);
        let result = topo.plan(r);
        if want > topo.pus {
            prop_assert_eq!(
                result,
                Err(TopologyError::TooManyWorkers {
                    requested: want,
                    available: topo.pus
                })
            );
            return Ok(());
        }
        let plan = result.expect("plan within PU count");
        let all: BTreeSet<usize> = topo.cores.iter().flat_map(|c| c.pus.clone()).collect();
        // Counts as requested.
        prop_assert_eq!(plan.workers.len(), want);
        prop_assert_eq!(plan.cpu_vulkan_devices.len(), v);
        prop_assert_eq!(plan.gpu_loops.len(), r.gpu_loops);
        // Every set non-empty and made of real PUs; workers are single PUs.
        for s in plan
            .workers
            .iter()
            .chain(&plan.cpu_vulkan_devices)
            .chain(&plan.gpu_loops)
        {
            prop_assert!(!s.pus.is_empty());
            prop_assert!(s.pus.iter().all(|p| all.contains(p)));
        }
        prop_assert!(plan.workers.iter().all(|w| w.pus.len() == 1));
        // Workers never share a PU with each other.
        let worker_pus: BTreeSet<usize> = plan.workers.iter().map(|w| w.pus[0]).collect();
        prop_assert_eq!(worker_pus.len(), plan.workers.len());
        // Devices: `per` whole cores each, pairwise disjoint unless more devices than cores.
        let smt = topo.cores[0].pus.len();
        let mut dev_pus = BTreeSet::new();
        for d in &plan.cpu_vulkan_devices {
            prop_assert_eq!(d.pus.len(), per * smt);
            for &p in &d.pus {
                let fresh = dev_pus.insert(p);
                prop_assert!(fresh || v > c, "device PU {} shared", p);
            }
        }
        // Dedicated loops: exactly `n_dedicated`, each a whole core nobody else uses.
        let mut owners: BTreeMap<usize, Vec<&str>> = BTreeMap::new();
        for w in &plan.workers {
            owners.entry(w.pus[0]).or_default().push("worker");
        }
        for p in &dev_pus {
            owners.entry(*p).or_default().push("device");
        }
        for (g, l) in plan.gpu_loops.iter().enumerate() {
            prop_assert_eq!(l.pus.len(), smt);
            if g < n_dedicated {
                for p in &l.pus {
                    owners.entry(*p).or_default().push("dedicated-loop");
                }
            } else {
                // Sharing loop: on the last worker core (or the machine's last core).
                let anchor = if worker_cores > 0 {
                    &topo.cores[c - n_dedicated - 1]
                } else {
                    &topo.cores[c - 1]
                };
                prop_assert_eq!(&l.pus, &anchor.pus);
            }
        }
        // Workers overlap other roles only when oversubscribed past the worker cores' PUs,
        // or in the "no core left" default case.
        let oversubscribed = want > worker_cores * smt || worker_cores == 0;
        for (p, roles) in &owners {
            if roles.len() > 1 {
                let only_device_wrap = roles.iter().all(|r| *r == "device") && v > c;
                prop_assert!(
                    only_device_wrap || (oversubscribed && roles.contains(&"worker")),
                    "PU {} shared by {:?} (plan {:?})",
                    p,
                    roles,
                    plan
                );
            }
        }
        Ok(())
    }

    #[test]
    fn two_cores_one_lavapipe() {
        let topo = CpuTopology::synthetic(2, 1);
        let plan = topo.plan(&req(None, 1, 0)).unwrap();
        assert_eq!(pus(&plan.cpu_vulkan_devices), vec![vec![0]]);
        assert_eq!(pus(&plan.workers), vec![vec![1]]);
        // With a GPU too: the loop shares the worker's core (only 1 core would remain).
        let plan = topo.plan(&req(None, 1, 1)).unwrap();
        assert_eq!(pus(&plan.workers), vec![vec![1]]);
        assert_eq!(pus(&plan.gpu_loops), vec![vec![1]]);
    }

    #[test]
    fn two_cores_gpu_only_shares() {
        let topo = CpuTopology::synthetic(2, 1);
        let plan = topo.plan(&req(None, 0, 1)).unwrap();
        assert_eq!(pus(&plan.workers), vec![vec![0], vec![1]]);
        assert_eq!(pus(&plan.gpu_loops), vec![vec![1]]);
        let plan = topo.plan(&req(None, 0, 2)).unwrap();
        assert_eq!(pus(&plan.gpu_loops), vec![vec![1], vec![1]]);
    }

    #[test]
    fn one_core_everything_shares() {
        for smt in [1, 2] {
            let topo = CpuTopology::synthetic(1, smt);
            let plan = topo.plan(&req(None, 0, 0)).unwrap();
            assert_eq!(pus(&plan.workers), vec![vec![0]]);
            let plan = topo.plan(&req(None, 1, 1)).unwrap();
            assert_eq!(plan.cpu_vulkan_devices[0].pus.len(), smt);
            assert_eq!(pus(&plan.workers), vec![vec![0]]);
            assert_eq!(plan.gpu_loops[0].pus, topo.cores[0].pus);
            assert_eq!(
                topo.plan(&req(Some(smt + 1), 0, 0)),
                Err(TopologyError::TooManyWorkers {
                    requested: smt + 1,
                    available: smt
                })
            );
        }
    }

    #[test]
    fn four_cores_two_gpus() {
        let topo = CpuTopology::synthetic(4, 1);
        // Remaining 4: loop 0 takes core 3 (3 left), loop 1 takes core 2 (2 left).
        let plan = topo.plan(&req(None, 0, 2)).unwrap();
        assert_eq!(pus(&plan.gpu_loops), vec![vec![3], vec![2]]);
        assert_eq!(pus(&plan.workers), vec![vec![0], vec![1]]);
        // With lavapipe: per = 4/2 = 2 cores, 2 remain -> the loop shares core 3.
        let plan = topo.plan(&req(None, 1, 1)).unwrap();
        assert_eq!(pus(&plan.cpu_vulkan_devices), vec![vec![0, 1]]);
        assert_eq!(pus(&plan.workers), vec![vec![2], vec![3]]);
        assert_eq!(pus(&plan.gpu_loops), vec![vec![3]]);
    }

    #[test]
    fn sixteen_cores_smt2() {
        let topo = CpuTopology::synthetic(16, 2);
        let plan = topo.plan(&req(None, 2, 2)).unwrap();
        // per = 16/3 = 5 cores each.
        assert_eq!(
            plan.cpu_vulkan_devices[0].pus,
            vec![0, 16, 1, 17, 2, 18, 3, 19, 4, 20]
        );
        assert_eq!(plan.cpu_vulkan_devices[1].pus.len(), 10);
        assert_eq!(pus(&plan.gpu_loops), vec![vec![15, 31], vec![14, 30]]);
        assert_eq!(plan.workers.len(), 4);
        assert_eq!(
            pus(&plan.workers),
            vec![vec![10], vec![11], vec![12], vec![13]]
        );
        // Oversubscription: siblings of worker cores first, then dedicated-loop cores.
        let plan = topo.plan(&req(Some(9), 2, 2)).unwrap();
        let w: Vec<usize> = plan.workers.iter().map(|s| s.pus[0]).collect();
        assert_eq!(w, vec![10, 11, 12, 13, 26, 27, 28, 29, 15]);
        assert!(topo.plan(&req(Some(32), 2, 2)).is_ok());
        assert!(topo.plan(&req(Some(33), 2, 2)).is_err());
    }

    #[test]
    fn zero_workers_means_gpu_only() {
        let topo = CpuTopology::synthetic(2, 1);
        let plan = topo.plan(&req(Some(0), 0, 1)).unwrap();
        assert!(plan.workers.is_empty());
        assert_eq!(plan.gpu_loops.len(), 1);
    }

    #[test]
    fn table_of_small_cases() {
        for cores in [1, 2, 4, 16] {
            for smt in [1, 2] {
                let topo = CpuTopology::synthetic(cores, smt);
                for v in 0..=2 {
                    for g in 0..=2 {
                        for w in [None, Some(0), Some(1), Some(cores), Some(cores * smt)] {
                            check_invariants(&topo, &req(w, v, g)).unwrap();
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn empty_topology_is_an_error() {
        let mut topo = CpuTopology::synthetic(1, 1);
        topo.cores.clear();
        assert_eq!(
            topo.plan(&PlanRequest::default()),
            Err(TopologyError::NoCores)
        );
    }

    #[test]
    fn detect_finds_this_machine() {
        let topo = CpuTopology::detect();
        assert!(topo.physical_cores() >= 1);
        assert!(topo.pus >= topo.physical_cores());
        assert!(!topo.model.is_empty());
        let text = topo.to_string();
        assert!(text.contains("physical core"), "{text}");
        let fb = CpuTopology::fallback();
        assert!(fb.physical_cores() >= 1);
        assert!(topo.plan(&PlanRequest::default()).is_ok());
    }

    #[test]
    fn pinning_applies_on_linux() {
        let topo = CpuTopology::detect();
        let valid: BTreeSet<usize> = core_affinity::get_core_ids()
            .unwrap_or_default()
            .into_iter()
            .map(|c| c.id)
            .collect();
        let last = topo.cores.last().unwrap().clone();
        assert!(last.pus.iter().all(|p| valid.contains(p)));
        let set = CoreSet {
            pus: last.pus.clone(),
        };
        let bound = with_affinity(&set, || {
            assert!(pin_current_thread(&set), "pinning refused on Linux");
            current_thread_pus()
        });
        if let Some(bound) = bound {
            assert_eq!(bound, last.pus);
        }
        assert!(!pin_current_thread(&CoreSet::default()));
    }

    /// sysfs and hwloc agree on this machine (hwloc is the reference): cores, their PUs,
    /// packages, NUMA nodes (memory aside: hwloc leaves huge pages out) and caches.
    #[cfg(all(feature = "hwloc", target_os = "linux"))]
    #[test]
    fn sysfs_matches_hwloc_here() {
        // hwloc keeps the CPUs outside the process's affinity mask (taskset); sysfs leaves them
        // out. Compare only where the mask is every online CPU.
        let list = |path: &str, prefix: &str| {
            let text = std::fs::read_to_string(path).ok()?;
            let line = text.lines().find_map(|l| l.strip_prefix(prefix))?;
            sysfs::parse_list(line)
        };
        let online = list("/sys/devices/system/cpu/online", "");
        if online != list("/proc/self/status", "Cpus_allowed_list:") {
            eprintln!("the process may not use every online CPU: comparison skipped");
            return;
        }
        let (Some(h), Some(s)) = (
            hwloc::detect(),
            sysfs::read_topology(std::path::Path::new("/")),
        ) else {
            panic!("hwloc and sysfs must both read this machine");
        };
        assert_eq!((s.packages, s.pus), (h.packages, h.pus));
        assert_eq!(s.cores, h.cores);
        let nodes = |t: &CpuTopology| -> Vec<(usize, Vec<usize>)> {
            t.numa_nodes
                .iter()
                .map(|n| (n.os_index, n.cores.clone()))
                .collect()
        };
        if !s.numa_nodes.is_empty() {
            assert_eq!(nodes(&s), nodes(&h));
        }
        assert_eq!(s.caches, h.caches);
    }

    /// The kernel's binding (the lean build's) takes the whole set, as hwloc's does.
    #[cfg(target_os = "linux")]
    #[test]
    fn sched_affinity_binds_the_whole_set() {
        let valid = affinity::current_thread_pus().expect("sched_getaffinity");
        let set = CoreSet { pus: valid.clone() };
        let first = CoreSet {
            pus: vec![valid[0]],
        };
        let seen = with_affinity(&set, || {
            assert!(affinity::bind_current_thread(&first.pus));
            let one = affinity::current_thread_pus();
            assert!(affinity::bind_current_thread(&set.pus));
            (one, affinity::current_thread_pus())
        });
        assert_eq!(seen, (Some(first.pus.clone()), Some(valid)));
        assert!(!affinity::bind_current_thread(&[]));
        assert!(!affinity::bind_current_thread(&[usize::MAX]));
    }

    #[test]
    fn with_affinity_returns_and_propagates_panics() {
        let set = CoreSet { pus: vec![0] };
        let local = [1, 2, 3];
        assert_eq!(with_affinity(&set, || local.iter().sum::<i32>()), 6);
        let caught = std::panic::catch_unwind(|| with_affinity(&set, || panic!("boom")));
        let payload = caught.unwrap_err();
        assert_eq!(payload.downcast_ref::<&str>(), Some(&"boom"));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]
        #[test]
        fn plan_invariants(
            cores in 1usize..=24,
            smt in 1usize..=4,
            v in 0usize..=4,
            g in 0usize..=4,
            workers in proptest::option::of(0usize..=100),
        ) {
            let topo = CpuTopology::synthetic(cores, smt);
            check_invariants(&topo, &req(workers, v, g))?;
        }
    }
}
