//! Where a PCI device sits among the CPU's NUMA nodes: the node and the PUs
//! Linux sysfs names local to it (`/sys/bus/pci/devices/<address>/numa_node`
//! and `local_cpulist`). A GPU's dispatch loop is pinned to one of those PUs
//! (see [`CpuTopology::plan`](super::CpuTopology::plan)).

use std::fmt;
use std::path::Path;

/// A PCI address (domain, bus, device, function), as
/// `VK_EXT_pci_bus_info` gives it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PciAddress {
    /// PCI domain (segment).
    pub domain: u32,
    /// Bus number.
    pub bus: u32,
    /// Device number.
    pub device: u32,
    /// Function number.
    pub function: u32,
}

impl fmt::Display for PciAddress {
    /// The sysfs form: `0000:3b:00.0`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:04x}:{:02x}:{:02x}.{:x}",
            self.domain, self.bus, self.device, self.function
        )
    }
}

/// A PCI device's place among the NUMA nodes.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PciLocality {
    /// The NUMA node it is attached to (`None`: the kernel does not say,
    /// e.g. a machine of one node).
    pub numa_node: Option<usize>,
    /// The OS indices of the PUs local to it, ascending (empty: unknown).
    pub local_pus: Vec<usize>,
}

/// The locality of the device at `addr`, from Linux sysfs; `None` where
/// sysfs has no such device (another OS, a container without `/sys`).
pub fn pci_locality(addr: PciAddress) -> Option<PciLocality> {
    locality_in(Path::new("/sys/bus/pci/devices"), addr)
}

/// [`pci_locality`] under the sysfs directory `root` (a fake tree in tests).
pub(crate) fn locality_in(root: &Path, addr: PciAddress) -> Option<PciLocality> {
    let dir = root.join(addr.to_string());
    if !dir.is_dir() {
        return None;
    }
    let read = |name: &str| std::fs::read_to_string(dir.join(name)).ok();
    // `-1`: no node (unparsable as usize, so `None` too).
    let numa_node = read("numa_node").and_then(|s| s.trim().parse::<usize>().ok());
    let local_pus = read("local_cpulist")
        .and_then(|s| parse_cpulist(&s))
        .unwrap_or_default();
    Some(PciLocality {
        numa_node,
        local_pus,
    })
}

/// A Linux CPU list (`0-3,8,10-11`) as ascending PU indices; `None` where
/// malformed (a reversed range, a stray character).
pub(crate) fn parse_cpulist(s: &str) -> Option<Vec<usize>> {
    let mut out = Vec::new();
    for part in s.trim().split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b) = (a.parse::<usize>().ok()?, b.parse::<usize>().ok()?);
                if a > b || b - a > 1 << 16 {
                    return None;
                }
                out.extend(a..=b);
            }
            None => out.push(part.parse().ok()?),
        }
    }
    out.sort_unstable();
    out.dedup();
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_print_as_sysfs_names_them() {
        let a = PciAddress {
            domain: 0,
            bus: 0x3b,
            device: 0,
            function: 0,
        };
        assert_eq!(a.to_string(), "0000:3b:00.0");
    }

    #[test]
    fn cpulists_parse_and_bad_ones_are_refused() {
        assert_eq!(parse_cpulist("0-3,8,10-11\n"), Some(vec![0, 1, 2, 3, 8, 10, 11]));
        assert_eq!(parse_cpulist("5"), Some(vec![5]));
        assert_eq!(parse_cpulist(""), Some(vec![]));
        assert_eq!(parse_cpulist("3-1"), None);
        assert_eq!(parse_cpulist("a"), None);
        assert_eq!(parse_cpulist("0-99999999"), None);
    }

    /// A fake sysfs tree: two GPUs on nodes 0 and 1, one device without a
    /// node (`-1`), one absent.
    #[test]
    fn a_fake_sysfs_tree_maps_devices_to_nodes() {
        let root = std::env::temp_dir().join(format!("coexec-fake-sysfs-{}", std::process::id()));
        let dev = |bus: u32| PciAddress {
            domain: 0,
            bus,
            device: 0,
            function: 0,
        };
        for (bus, node, cpus) in [(0x18, "0", "0-7,16-23"), (0x86, "1", "8-15,24-31"), (0x20, "-1", "")] {
            let d = root.join(dev(bus).to_string());
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(d.join("numa_node"), format!("{node}\n")).unwrap();
            std::fs::write(d.join("local_cpulist"), format!("{cpus}\n")).unwrap();
        }
        let l = locality_in(&root, dev(0x86)).unwrap();
        assert_eq!(l.numa_node, Some(1));
        assert_eq!(l.local_pus, (8..16).chain(24..32).collect::<Vec<_>>());
        assert_eq!(locality_in(&root, dev(0x18)).unwrap().numa_node, Some(0));
        let none = locality_in(&root, dev(0x20)).unwrap();
        assert_eq!((none.numa_node, none.local_pus.len()), (None, 0));
        assert_eq!(locality_in(&root, dev(0x99)), None);
        let _ = std::fs::remove_dir_all(&root);
    }
}
