//! The hwloc backend (cargo feature `hwloc`): topology from hwloc's objects
//! and thread binding with `hwloc_set_cpubind`.

use std::collections::BTreeMap;
use std::num::{NonZeroU64, NonZeroUsize};
use std::sync::OnceLock;

use hwlocality::bitmap::BitmapIndex;
use hwlocality::cpu::binding::CpuBindingFlags;
use hwlocality::cpu::cpuset::CpuSet;
use hwlocality::object::attributes::ObjectAttributes;
use hwlocality::object::types::ObjectType;
use hwlocality::object::TopologyObject;
use hwlocality::Topology;
use tracing::{debug, warn};

use super::{proc_cpuinfo_model, CacheLevel, CpuTopology, NumaNode, PhysicalCore};

/// The process-wide hwloc topology, loaded once (loading takes milliseconds); `None` if hwloc
/// failed.
fn hwloc() -> Option<&'static Topology> {
    static HWLOC: OnceLock<Option<Topology>> = OnceLock::new();
    HWLOC
        .get_or_init(|| match Topology::new() {
            Ok(t) => Some(t),
            Err(e) => {
                warn!(error = %e, "hwloc topology detection failed");
                None
            }
        })
        .as_ref()
}

/// OS indices of the PUs of a hwloc object's cpuset.
fn object_pus(obj: &TopologyObject) -> Vec<usize> {
    obj.cpuset()
        .map(|set| set.iter_set().map(usize::from).collect())
        .unwrap_or_default()
}

/// The topology as hwloc reports it; `None` if hwloc is unusable.
pub(super) fn detect() -> Option<CpuTopology> {
    hwloc().map(from_hwloc)
}

/// Converts a hwloc topology.
fn from_hwloc(topo: &Topology) -> CpuTopology {
    let packages = topo.objects_with_type(ObjectType::Package).count().max(1);
    let numa_objs: Vec<&TopologyObject> = topo.objects_with_type(ObjectType::NUMANode).collect();
    let cores = cores(topo, &numa_objs);
    let numa_nodes = numa_objs
        .iter()
        .filter_map(|n| {
            let os_index = n.os_index()?;
            let memory_bytes = match n.attributes() {
                Some(ObjectAttributes::NUMANode(a)) => a.local_memory().map_or(0, NonZeroU64::get),
                _ => 0,
            };
            let cores = cores
                .iter()
                .filter(|c| c.numa_node == Some(os_index))
                .map(|c| c.index)
                .collect();
            Some(NumaNode {
                os_index,
                memory_bytes,
                cores,
            })
        })
        .collect();
    let model = std::iter::once(topo.root_object())
        .chain(topo.objects_with_type(ObjectType::Package))
        .find_map(|o| o.info("CPUModel"))
        .map(|m| m.to_string_lossy().trim().to_string())
        .filter(|m| !m.is_empty())
        .or_else(proc_cpuinfo_model)
        .unwrap_or_else(|| "unknown".to_string());
    let pus = topo
        .objects_with_type(ObjectType::PU)
        .count()
        .max(cores.iter().map(|c| c.pus.len()).sum());
    CpuTopology {
        packages,
        cores,
        pus,
        numa_nodes,
        caches: caches(topo),
        model,
    }
}

/// The physical cores in hwloc logical order (every PU its own core where hwloc has no Core
/// level).
fn cores(topo: &Topology, numa_objs: &[&TopologyObject]) -> Vec<PhysicalCore> {
    let mut core_objs: Vec<&TopologyObject> = topo.objects_with_type(ObjectType::Core).collect();
    if core_objs.is_empty() {
        core_objs = topo.objects_with_type(ObjectType::PU).collect();
    }
    let mut cores = Vec::with_capacity(core_objs.len());
    for obj in core_objs {
        let pus = object_pus(obj);
        if pus.is_empty() {
            continue;
        }
        let numa_node = obj.cpuset().and_then(|core_set| {
            numa_objs
                .iter()
                .find(|n| n.cpuset().is_some_and(|ns| ns.includes(&*core_set)))
                .and_then(|n| n.os_index())
        });
        cores.push(PhysicalCore {
            index: cores.len(),
            package: obj
                .first_ancestor_with_type(ObjectType::Package)
                .map_or(0, TopologyObject::logical_index),
            numa_node,
            pus,
        });
    }
    cores
}

/// Data and unified caches, grouped by (level, size, line size).
fn caches(topo: &Topology) -> Vec<CacheLevel> {
    let mut groups: BTreeMap<(u32, u64, u32), usize> = BTreeMap::new();
    for obj in topo.objects() {
        if !obj.object_type().is_cpu_data_cache() {
            continue;
        }
        if let Some(ObjectAttributes::Cache(c)) = obj.attributes() {
            let depth = u32::try_from(c.depth()).unwrap_or(u32::MAX);
            let size = c.size().map_or(0, NonZeroU64::get);
            let line = c.line_size().map_or(0, |l| {
                u32::try_from(NonZeroUsize::get(l)).unwrap_or(u32::MAX)
            });
            *groups.entry((depth, size, line)).or_default() += 1;
        }
    }
    CacheLevel::from_counts(groups)
}

/// Binds the calling thread to the PUs `pus` with hwloc. `None` when hwloc is unavailable or
/// refuses (the caller tries the next way), `Some(false)` when a PU index is out of hwloc's
/// range (no other way will do better).
pub(super) fn bind_current_thread(pus: &[usize]) -> Option<bool> {
    let topo = hwloc()?;
    let indices: Result<Vec<BitmapIndex>, _> =
        pus.iter().map(|&p| BitmapIndex::try_from(p)).collect();
    let Ok(indices) = indices else {
        warn!(?pus, "PU index out of range; thread not pinned");
        return Some(false);
    };
    let cpuset: CpuSet = indices.into_iter().collect();
    match topo.bind_cpu(&cpuset, CpuBindingFlags::THREAD) {
        Ok(()) => Some(true),
        Err(e) => {
            debug!(error = %e, ?pus, "hwloc thread binding failed");
            None
        }
    }
}

/// OS indices of the PUs the calling thread is bound to, as hwloc reports them.
pub(super) fn current_thread_pus() -> Option<Vec<usize>> {
    let set = hwloc()?.cpu_binding(CpuBindingFlags::THREAD).ok()?;
    Some(set.iter_set().map(usize::from).collect())
}
