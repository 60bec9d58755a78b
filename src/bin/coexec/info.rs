//! `coexec info`: Vulkan devices, memory types, queue families and the CPU
//! topology with the engine's core split.

use coexec::error::chain;
use coexec::{Engine, PhysicalDeviceInfo};
use std::process::ExitCode;

/// Prints the devices and the engine's core plan.
pub(crate) fn info() -> Result<ExitCode, String> {
    let devs = Engine::all_vulkan_devices().map_err(|e| chain(&e))?;
    // One numbering: Vulkan's enumeration order, which `GpuChoice::Index`
    // and the C `gpu_index` take too.
    println!("Vulkan devices:");
    for d in &devs {
        match d.unusable_reason() {
            Some(reason) => println!("  [{}] {} (not usable: {reason})", d.index, d.name),
            None => print_device(d),
        }
    }
    let engine = Engine::new().map_err(|e| chain(&e))?;
    print_plan(&engine);
    Ok(ExitCode::SUCCESS)
}

/// One device: type, version, heaps, memory types, queue families, limits.
fn print_device(d: &PhysicalDeviceInfo) {
    println!(
        "  [{}] {} ({}, Vulkan {}, {} memory)",
        d.index,
        d.name,
        d.device_type,
        coexec::version_string(d.api_version),
        if d.is_unified() {
            "unified"
        } else {
            "separate"
        }
    );
    for (i, h) in d.heaps.iter().enumerate() {
        println!(
            "      heap {i}: {} MiB{}",
            h.size >> 20,
            if h.device_local { " device-local" } else { "" }
        );
    }
    let chosen = d.unified_memory_type();
    for (i, t) in d.memory_types.iter().enumerate() {
        println!(
            "      type {i}: heap {} {}{}",
            t.heap,
            t.flags_string(),
            if chosen == Some(i as u32) {
                "  <- unified buffers"
            } else {
                ""
            }
        );
    }
    for f in &d.compute_families {
        println!(
            "      queue family {}: {} queue(s){}, timestamps {} bits",
            f.index,
            f.count,
            if f.graphics {
                " graphics+compute"
            } else {
                " compute-only"
            },
            f.timestamp_bits
        );
    }
    println!(
        "      max work-groups {:?}, max work-group size {:?}, push constants {} B, external host memory: {}",
        d.max_group_count, d.max_group_size, d.max_push_constants, d.external_memory_host
    );
    println!("      completion: {}", d.sync_mode());
}

/// The CPU topology and the engine's split of the cores.
fn print_plan(engine: &Engine) {
    println!("\nCPU topology:\n{}", engine.topology());
    let plan = engine.core_plan();
    // The engine's GPUs as `--devices gpuN` names them, with each one's
    // Vulkan index (the numbering above).
    println!("Engine GPUs (--devices gpuN):");
    for g in 0..engine.gpu_count() {
        if let Some(d) = engine.gpu_info(g) {
            println!(
                "  gpu{g}: [{}] {} (completion: {}), {}",
                d.index,
                d.name,
                d.sync_mode(),
                locality(d.pci_bus)
            );
            if let Some(c) = plan.gpu_loops.get(g) {
                println!("      dispatch loop on PUs {:?}", c.pus);
            }
        }
    }
    println!(
        "  CPU workers: {} on PUs {:?}",
        engine.workers(),
        plan.workers
            .iter()
            .map(|c| c.pus.clone())
            .collect::<Vec<_>>()
    );
    for c in &plan.cpu_vulkan_devices {
        println!(
            "  Vulkan CPU device cores: PUs {:?} (LP_NUM_THREADS={})",
            c.pus,
            std::env::var("LP_NUM_THREADS").unwrap_or_else(|_| "unset".into())
        );
    }
    println!(
        "  unified buffers: memory type {} via {}; GPU runs: {} (COEXEC_MEMORY, auto by default)",
        engine.memory_type(),
        engine.allocator(),
        engine.memory_placement()
    );
}

/// A GPU's PCI address and NUMA node, as far as known (the dispatch loop
/// is pinned near it where they are).
fn locality(pci: Option<coexec::PciAddress>) -> String {
    let Some(addr) = pci else {
        return "PCI address unknown (no VK_EXT_pci_bus_info): loop on the default core".into();
    };
    match coexec::pci_locality(addr) {
        Some(l) => format!(
            "PCI {addr}, NUMA node {}, {} local PU(s)",
            l.numa_node
                .map_or_else(|| "unknown".to_string(), |n| n.to_string()),
            l.local_pus.len()
        ),
        None => format!("PCI {addr}, not in sysfs: loop on the default core"),
    }
}
