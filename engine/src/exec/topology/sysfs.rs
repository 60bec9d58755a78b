//! The topology from Linux sysfs, with no library: the backend of the lean
//! build (no `hwloc` feature) and the fallback of the hwloc build.
//!
//! Read under a root directory (`/` on a live system, a fake tree in tests):
//! - `sys/devices/system/cpu/online`: the PUs (hardware threads), restricted
//!   to those the process may run on (`Cpus_allowed_list` of
//!   `/proc/self/status`, where given);
//! - `cpuN/topology/`: `physical_package_id`, and `core_cpus_list` (or the
//!   older `thread_siblings_list`) for the PUs of a physical core;
//! - `cpuN/cache/indexM/`: `level`, `type`, `size`, `coherency_line_size`,
//!   `shared_cpu_list` of the data and unified caches;
//! - `sys/devices/system/node/nodeN/`: `cpulist` and `meminfo` (NUMA nodes,
//!   where the kernel has NUMA);
//! - `proc/cpuinfo`: the model name.
//!
//! Cores are ordered by package, then by their first PU, as hwloc orders them.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use super::{cpuinfo_model, CacheLevel, CpuTopology, NumaNode, PhysicalCore};

/// The largest PU index accepted from a list (Linux's `NR_CPUS` is at most
/// 8192); a larger one makes the list malformed, so that a bad file cannot
/// ask for a huge allocation.
const MAX_PU: usize = 1 << 16;

/// Parses a kernel CPU list (`"0-3,8,10-11"`, possibly empty); `None` if it
/// is malformed or names a PU past [`MAX_PU`].
pub(super) fn parse_list(text: &str) -> Option<BTreeSet<usize>> {
    let mut set = BTreeSet::new();
    for part in text.trim().split(',').filter(|p| !p.is_empty()) {
        let (lo, hi): (usize, usize) = match part.split_once('-') {
            Some((lo, hi)) => (lo.trim().parse().ok()?, hi.trim().parse().ok()?),
            None => {
                let p = part.trim().parse().ok()?;
                (p, p)
            }
        };
        if lo > hi || hi > MAX_PU {
            return None;
        }
        set.extend(lo..=hi);
    }
    Some(set)
}

/// Parses a sysfs cache size (`"32K"`, `"1024K"`, `"32M"`, or bytes).
fn parse_size(text: &str) -> Option<u64> {
    let t = text.trim();
    let (digits, unit) = match t.char_indices().find(|(_, c)| !c.is_ascii_digit()) {
        Some((at, _)) => t.split_at(at),
        None => (t, ""),
    };
    let value: u64 = digits.parse().ok()?;
    let scale = match unit.trim() {
        "" => 1,
        "K" | "KB" | "KiB" => 1 << 10,
        "M" | "MB" | "MiB" => 1 << 20,
        "G" | "GB" | "GiB" => 1 << 30,
        _ => return None,
    };
    value.checked_mul(scale)
}

/// The trimmed text of `path`, `None` if it cannot be read.
fn read(path: &Path) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_string())
}

/// Reads the topology under `root`; `None` if no usable PU is found.
pub(super) fn read_topology(root: &Path) -> Option<CpuTopology> {
    let cpu_dir = root.join("sys/devices/system/cpu");
    let mut pus = read(&cpu_dir.join("online")).and_then(|t| parse_list(&t))?;
    let allowed = read(&root.join("proc/self/status")).and_then(|status| {
        status.lines().find_map(|line| {
            let list = line.strip_prefix("Cpus_allowed_list:")?;
            parse_list(list)
        })
    });
    if let Some(allowed) = allowed.filter(|a| !a.is_disjoint(&pus)) {
        pus.retain(|p| allowed.contains(p));
    }
    if pus.is_empty() {
        return None;
    }
    // Each PU's package id and core (its own PU set), keyed by the core's PUs.
    let mut core_package: BTreeMap<Vec<usize>, i64> = BTreeMap::new();
    for &pu in &pus {
        let topo = cpu_dir.join(format!("cpu{pu}/topology"));
        let package = read(&topo.join("physical_package_id"))
            .and_then(|t| t.parse().ok())
            .unwrap_or(0);
        let siblings = read(&topo.join("core_cpus_list"))
            .or_else(|| read(&topo.join("thread_siblings_list")))
            .and_then(|t| parse_list(&t))
            .filter(|s| s.contains(&pu))
            .unwrap_or_else(|| BTreeSet::from([pu]));
        let core: Vec<usize> = siblings.intersection(&pus).copied().collect();
        core_package.entry(core).or_insert(package);
    }
    let package_ids: BTreeSet<i64> = core_package.values().copied().collect();
    let package_rank = |id: i64| package_ids.iter().position(|&p| p == id).unwrap_or(0);
    let mut keyed: Vec<(usize, Vec<usize>)> = core_package
        .into_iter()
        .map(|(core, id)| (package_rank(id), core))
        .collect();
    keyed.sort();
    let nodes = numa_nodes(root, &pus);
    let cores: Vec<PhysicalCore> = keyed
        .into_iter()
        .enumerate()
        .map(|(index, (package, pus))| PhysicalCore {
            index,
            package,
            numa_node: nodes
                .iter()
                .find(|(_, cpus, _)| cpus.contains(&pus[0]))
                .map(|(os, _, _)| *os),
            pus,
        })
        .collect();
    let numa_nodes = nodes
        .iter()
        .map(|(os_index, _, memory_bytes)| NumaNode {
            os_index: *os_index,
            memory_bytes: *memory_bytes,
            cores: cores
                .iter()
                .filter(|c| c.numa_node == Some(*os_index))
                .map(|c| c.index)
                .collect(),
        })
        .collect();
    Some(CpuTopology {
        packages: package_ids.len().max(1),
        pus: pus.len(),
        caches: caches(&cpu_dir, &pus),
        model: read(&root.join("proc/cpuinfo"))
            .and_then(|t| cpuinfo_model(&t))
            .unwrap_or_else(|| "unknown".to_string()),
        cores,
        numa_nodes,
    })
}

/// The online NUMA nodes: (OS index, CPUs among `pus`, memory in bytes).
/// Empty when the kernel has no NUMA directory.
fn numa_nodes(root: &Path, pus: &BTreeSet<usize>) -> Vec<(usize, BTreeSet<usize>, u64)> {
    let dir = root.join("sys/devices/system/node");
    let Some(online) = read(&dir.join("online")).and_then(|t| parse_list(&t)) else {
        return Vec::new();
    };
    online
        .into_iter()
        .map(|n| {
            let node = dir.join(format!("node{n}"));
            let cpus = read(&node.join("cpulist"))
                .and_then(|t| parse_list(&t))
                .unwrap_or_default()
                .intersection(pus)
                .copied()
                .collect();
            // "Node 0 MemTotal:        9136332 kB"
            let memory = read(&node.join("meminfo"))
                .and_then(|t| {
                    t.lines().find_map(|line| {
                        let rest = line.split_once("MemTotal:")?.1.trim();
                        let kb: u64 = rest.strip_suffix("kB")?.trim().parse().ok()?;
                        kb.checked_mul(1024)
                    })
                })
                .unwrap_or(0);
            (n, cpus, memory)
        })
        .collect()
}

/// Data and unified caches of `pus`, one instance per distinct
/// (level, shared PUs), grouped by (level, size, line size).
fn caches(cpu_dir: &Path, pus: &BTreeSet<usize>) -> Vec<CacheLevel> {
    let mut instances: BTreeMap<(u32, Vec<usize>), (u64, u32)> = BTreeMap::new();
    for &pu in pus {
        let Ok(entries) = std::fs::read_dir(cpu_dir.join(format!("cpu{pu}/cache"))) else {
            continue;
        };
        for entry in entries.flatten() {
            let dir = entry.path();
            let is_index = dir
                .file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("index"));
            let kind = read(&dir.join("type"));
            if !is_index || !matches!(kind.as_deref(), Some("Data" | "Unified")) {
                continue;
            }
            let Some(level) = read(&dir.join("level")).and_then(|t| t.parse().ok()) else {
                continue;
            };
            let shared = read(&dir.join("shared_cpu_list"))
                .and_then(|t| parse_list(&t))
                .unwrap_or_else(|| BTreeSet::from([pu]));
            let size = read(&dir.join("size")).and_then(|t| parse_size(&t));
            let line = read(&dir.join("coherency_line_size")).and_then(|t| t.parse().ok());
            instances
                .entry((level, shared.into_iter().collect()))
                .or_insert((size.unwrap_or(0), line.unwrap_or(0)));
        }
    }
    let mut groups: BTreeMap<(u32, u64, u32), usize> = BTreeMap::new();
    for ((level, _), (size, line)) in instances {
        *groups.entry((level, size, line)).or_default() += 1;
    }
    CacheLevel::from_counts(groups)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    /// A fake root directory, removed on drop.
    struct FakeRoot(PathBuf);

    impl FakeRoot {
        fn new(name: &str) -> Self {
            let dir = std::env::temp_dir().join(format!(
                "coexec-sysfs-{name}-{}-{:?}",
                std::process::id(),
                std::thread::current().id()
            ));
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).unwrap();
            FakeRoot(dir)
        }

        fn write(&self, path: &str, text: &str) {
            let path = self.0.join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
    }

    impl Drop for FakeRoot {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    #[test]
    fn lists_parse_and_malformed_ones_are_refused() {
        assert_eq!(
            parse_list("0-3,8,10-11\n"),
            Some(BTreeSet::from([0, 1, 2, 3, 8, 10, 11]))
        );
        assert_eq!(parse_list(""), Some(BTreeSet::new()));
        for bad in ["3-1", "x", "1-", "0-99999999", "1,,2-a"] {
            assert_eq!(parse_list(bad), None, "{bad}");
        }
        assert_eq!(parse_size("32K"), Some(32 << 10));
        assert_eq!(parse_size("32768K"), Some(32 << 20));
        assert_eq!(parse_size("2M"), Some(2 << 20));
        assert_eq!(parse_size("512"), Some(512));
        assert_eq!(parse_size("4Q"), None);
    }

    /// Two packages of two cores with two PUs each, numbered as Linux does
    /// (siblings `i` and `i + 4`), PU 3 offline and the process allowed
    /// everything but PU 7; one NUMA node per package.
    #[test]
    fn a_two_socket_smt_machine_reads_as_hwloc_would() {
        let root = FakeRoot::new("2s");
        root.write("sys/devices/system/cpu/online", "0-2,4-7\n");
        root.write("proc/self/status", "Name:\tx\nCpus_allowed_list:\t0-6\n");
        root.write(
            "proc/cpuinfo",
            "processor\t: 0\nmodel name\t: Fake CPU 9000\n",
        );
        for pu in [0, 1, 2, 4, 5, 6, 7] {
            let core = pu % 4;
            let t = format!("sys/devices/system/cpu/cpu{pu}/topology");
            root.write(&format!("{t}/physical_package_id"), &(core / 2).to_string());
            root.write(
                &format!("{t}/core_cpus_list"),
                &format!("{core},{}", core + 4),
            );
            let c = format!("sys/devices/system/cpu/cpu{pu}/cache");
            for (i, (level, kind, size, shared)) in [
                (1, "Data", "32K", format!("{core},{}", core + 4)),
                (1, "Instruction", "32K", format!("{core},{}", core + 4)),
                (2, "Unified", "1024K", format!("{core},{}", core + 4)),
            ]
            .into_iter()
            .enumerate()
            {
                root.write(&format!("{c}/index{i}/level"), &level.to_string());
                root.write(&format!("{c}/index{i}/type"), kind);
                root.write(&format!("{c}/index{i}/size"), size);
                root.write(&format!("{c}/index{i}/coherency_line_size"), "64");
                root.write(&format!("{c}/index{i}/shared_cpu_list"), &shared);
            }
        }
        root.write("sys/devices/system/node/online", "0-1");
        root.write("sys/devices/system/node/node0/cpulist", "0-1,4-5");
        root.write("sys/devices/system/node/node1/cpulist", "2-3,6-7");
        root.write(
            "sys/devices/system/node/node0/meminfo",
            "Node 0 MemTotal:       1024 kB\nNode 0 MemFree: 1 kB\n",
        );
        let topo = read_topology(&root.0).unwrap();
        assert_eq!(topo.packages, 2);
        assert_eq!(topo.pus, 6);
        assert_eq!(topo.model, "Fake CPU 9000");
        let cores: Vec<(usize, usize, Option<usize>, Vec<usize>)> = topo
            .cores
            .iter()
            .map(|c| (c.index, c.package, c.numa_node, c.pus.clone()))
            .collect();
        assert_eq!(
            cores,
            vec![
                (0, 0, Some(0), vec![0, 4]),
                (1, 0, Some(0), vec![1, 5]),
                (2, 1, Some(1), vec![2, 6]),
            ]
        );
        assert_eq!(
            topo.numa_nodes,
            vec![
                NumaNode {
                    os_index: 0,
                    memory_bytes: 1 << 20,
                    cores: vec![0, 1]
                },
                NumaNode {
                    os_index: 1,
                    memory_bytes: 0,
                    cores: vec![2]
                },
            ]
        );
        // Instruction caches left out; one instance per core and level.
        assert_eq!(
            topo.caches,
            vec![
                CacheLevel {
                    depth: 1,
                    size_bytes: 32 << 10,
                    count: 3,
                    line_bytes: 64
                },
                CacheLevel {
                    depth: 2,
                    size_bytes: 1 << 20,
                    count: 3,
                    line_bytes: 64
                },
            ]
        );
        assert!(topo.plan(&Default::default()).is_ok());
    }

    #[test]
    fn missing_files_degrade_to_one_core_per_pu_and_no_online_list_is_none() {
        let root = FakeRoot::new("bare");
        assert_eq!(read_topology(&root.0), None);
        root.write("sys/devices/system/cpu/online", "0-1");
        let topo = read_topology(&root.0).unwrap();
        assert_eq!(topo.packages, 1);
        assert_eq!(topo.pus, 2);
        assert_eq!(topo.model, "unknown");
        assert_eq!(topo.cores.len(), 2);
        assert!(topo
            .cores
            .iter()
            .all(|c| c.pus.len() == 1 && c.numa_node.is_none()));
        assert!(topo.numa_nodes.is_empty() && topo.caches.is_empty());
        // Garbage in the files is ignored the same way, never a panic.
        root.write("sys/devices/system/cpu/cpu0/topology/core_cpus_list", "9-1");
        root.write(
            "sys/devices/system/cpu/cpu0/topology/physical_package_id",
            "-1",
        );
        root.write("sys/devices/system/node/online", "0");
        root.write("sys/devices/system/node/node0/meminfo", "MemTotal: lots");
        let topo = read_topology(&root.0).unwrap();
        assert_eq!((topo.cores.len(), topo.numa_nodes.len()), (2, 1));
    }

    #[test]
    fn this_machine_reads() {
        let topo = read_topology(Path::new("/")).expect("sysfs on Linux");
        assert!(topo.physical_cores() >= 1);
        assert_eq!(
            topo.pus,
            topo.cores.iter().map(|c| c.pus.len()).sum::<usize>()
        );
    }
}
