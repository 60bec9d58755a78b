//! The SPIR-V CPU path: a kernel's CPU share run by a CPU Vulkan device
//! (lavapipe) on the CPU workers' cores. On the dev machine and in CI
//! lavapipe is also the engine's "GPU": the engine opens it a second time
//! for the CPU share.
//!
//! Every run is checked item by item against a CPU reference with an
//! accumulating kernel (`out[i] += hash(i)`), which shows any item run twice
//! or never; the validation layer is on where installed and any error it
//! reports fails the call.

#![cfg(feature = "glsl")]

mod common;

use coexec::workloads::{self, Workload};
use coexec::{
    Args, CpuArgs, CpuImpl, DeviceKind, Devices, Engine, EngineOptions, Error, IndexSpace, Package,
    Report, Scheduler, Validation,
};
use std::sync::Arc;

const GLSL: &str = "#version 450
layout(local_size_x = 64) in;
layout(std430, binding = 0) buffer O { uint o[]; };
layout(push_constant) uniform P { uint n; } p;
void main() {
    uint i = gl_GlobalInvocationID.x;
    if (i >= p.n) return;
    uint h = i;
    for (int r = 0; r < 64; r++) { h = h * 1664525u + 1013904223u; h ^= h >> 13; }
    o[i] += h;
}";

fn hash(i: u32) -> u32 {
    let mut h = i;
    for _ in 0..64 {
        h = h.wrapping_mul(1664525).wrapping_add(1013904223);
        h ^= h >> 13;
    }
    h
}

/// The CPU twin of [`GLSL`].
fn native() -> Arc<coexec::CpuFn> {
    Arc::new(|pkg: &Package, a: &mut CpuArgs<'_>| {
        let start = pkg.items.start as u32;
        for (k, v) in a.output::<u32>(0).iter_mut().enumerate() {
            *v = v.wrapping_add(hash(start + k as u32));
        }
    })
}

/// An engine with one CPU worker, the SPIR-V CPU device where `spirv`, and
/// `cpu_impl`.
fn engine(spirv: bool, cpu_impl: CpuImpl) -> Option<Engine> {
    common::engine_from(EngineOptions {
        workers: Some(1),
        validation: Validation::IfAvailable,
        profiles: false,
        spirv_cpu: spirv,
        cpu_impl,
        ..Default::default()
    })
}

/// Runs `k` `times` over `n` items on `devices`; checks that every item
/// ran exactly `times` times and returns the last report.
fn run_checked(e: &Engine, k: &coexec::Kernel, n: u32, devices: Devices, times: u32) -> Report {
    let mut out = e.buffer::<u32>(n as usize).unwrap();
    // Equal hints: the CPU share takes part whatever its speed.
    let sched = Scheduler::Static {
        powers: Some(vec![1.0; 1 + e.gpu_count()]),
    };
    let mut last = None;
    for _ in 0..times {
        let args = Args::new().output(&mut out).push(&n);
        let sched = if devices == Devices::ALL {
            &sched
        } else {
            &Scheduler::Dynamic { packages: 7 }
        };
        last = Some(
            e.run(k, args, IndexSpace::D1(n as u64), sched, devices)
                .unwrap(),
        );
    }
    for (i, &v) in out.iter().enumerate() {
        assert_eq!(v, hash(i as u32).wrapping_mul(times), "item {i}");
    }
    let r = last.expect("at least one run");
    let items: u64 = r.devices.iter().map(|d| d.items).sum();
    assert_eq!(items, u64::from(n));
    r
}

/// The CPU device of a report.
fn cpu(r: &Report) -> &coexec::DeviceReport {
    r.devices
        .iter()
        .find(|d| d.kind == DeviceKind::Cpu)
        .expect("a CPU entry")
}

/// A kernel without a CPU implementation co-executes: its CPU share runs
/// on the SPIR-V CPU device, reported as `cpu (spirv)`; alone on the CPU
/// too.
#[test]
fn a_kernel_without_a_cpu_implementation_co_executes() {
    let Some(e) = engine(true, CpuImpl::Native) else {
        return;
    };
    assert!(e.spirv_cpu_device().is_some(), "lavapipe serves the path");
    let k = e.kernel_glsl("nocpu", GLSL, None).unwrap();
    let r = run_checked(&e, &k, 50_000, Devices::ALL, 3);
    let c = cpu(&r);
    assert_eq!(c.cpu_impl, Some(CpuImpl::Spirv));
    assert_eq!(c.path(), "cpu (spirv)");
    assert!(c.items > 0, "{r:#?}");
    assert!(r
        .devices
        .iter()
        .any(|d| d.kind == DeviceKind::Gpu && d.items > 0));
    let r = run_checked(&e, &k, 10_001, Devices::CPU, 2);
    assert_eq!(r.devices.len(), 1);
    assert_eq!(cpu(&r).cpu_impl, Some(CpuImpl::Spirv));
    common::assert_validation_clean(&e);
}

/// Without the SPIR-V CPU device such a kernel runs on the GPUs alone, and
/// the report says why; on the CPU alone it is refused with a typed error.
#[test]
fn without_a_cpu_vulkan_device_the_gpus_run_it_alone() {
    let Some(e) = engine(false, CpuImpl::Native) else {
        return;
    };
    if std::env::var("COEXEC_SPIRV_CPU").is_ok_and(|v| v.trim() == "1") {
        return;
    }
    let k = e.kernel_glsl("nocpu", GLSL, None).unwrap();
    let r = run_checked(&e, &k, 20_000, Devices::ALL, 1);
    let c = cpu(&r);
    assert_eq!((c.items, c.cpu_impl), (0, None));
    assert_eq!(c.path(), "cpu");
    let note = c.note.as_deref().unwrap_or_default();
    assert!(note.contains("no CPU implementation"), "{note}");
    let mut out = e.buffer::<u32>(64).unwrap();
    let err = e
        .run(
            &k,
            Args::new().output(&mut out).push(&64u32),
            IndexSpace::D1(64),
            &Scheduler::hguided(),
            Devices::CPU,
        )
        .unwrap_err();
    assert!(matches!(err, Error::MissingImplementation("CPU")), "{err}");
}

/// Both CPU paths in one engine: runs of a kernel with a CPU closure
/// (native) and of one without (spirv) interleave on the same buffer, each
/// item exactly once per run; with `CpuImpl::Spirv` a kernel that has both
/// takes the SPIR-V path.
#[test]
fn both_cpu_paths_in_one_engine_run_every_item_once() {
    let Some(e) = engine(true, CpuImpl::Native) else {
        return;
    };
    let with_cpu = e.kernel_glsl("both", GLSL, Some(native())).unwrap();
    let without = e.kernel_glsl("nocpu", GLSL, None).unwrap();
    let n = 30_000u32;
    let mut out = e.buffer::<u32>(n as usize).unwrap();
    let sched = Scheduler::Static {
        powers: Some(vec![1.0, 1.0]),
    };
    let mut seen = Vec::new();
    for round in 0..6 {
        let k = if round % 2 == 0 { &with_cpu } else { &without };
        let args = Args::new().output(&mut out).push(&n);
        let r = e
            .run(k, args, IndexSpace::D1(u64::from(n)), &sched, Devices::ALL)
            .unwrap();
        assert!(cpu(&r).items > 0, "{r:#?}");
        seen.push(cpu(&r).cpu_impl);
    }
    for (i, &v) in out.iter().enumerate() {
        assert_eq!(v, hash(i as u32).wrapping_mul(6), "item {i}");
    }
    let (nat, spv) = (Some(CpuImpl::Native), Some(CpuImpl::Spirv));
    assert_eq!(seen, [nat, spv, nat, spv, nat, spv]);
    common::assert_validation_clean(&e);

    let Some(e) = engine(true, CpuImpl::Spirv) else {
        return;
    };
    let k = e.kernel_glsl("both", GLSL, Some(native())).unwrap();
    let r = run_checked(&e, &k, 20_000, Devices::ALL, 2);
    assert_eq!(cpu(&r).cpu_impl, Some(CpuImpl::Spirv));
    common::assert_validation_clean(&e);
}

/// Every seed kernel (and the comparable set) at its quick size verifies
/// with `CpuImpl::Spirv`: on the SPIR-V CPU device alone, and co-executed
/// with lavapipe standing for the GPU (equal static hints, so both run).
#[test]
fn every_seed_kernel_verifies_on_the_spirv_path() {
    let Some(e) = engine(true, CpuImpl::Spirv) else {
        return;
    };
    for name in workloads::NAMES.iter().chain(workloads::COMPARABLE) {
        let size = workloads::quick_size(name)
            .or_else(|| workloads::comparable_quick_size(name))
            .expect("a quick size");
        let mut w = workloads::create(name, &e, Some(size)).expect("workload");
        let cases = [
            (Devices::CPU, Scheduler::Dynamic { packages: 5 }),
            (
                Devices::ALL,
                Scheduler::Static {
                    powers: Some(vec![1.0, 1.0]),
                },
            ),
            (Devices::ALL, Scheduler::hguided()),
        ];
        for (devices, sched) in cases {
            let r = verified(&mut *w, &e, &sched, devices, name);
            if devices == Devices::CPU || matches!(sched, Scheduler::Static { .. }) {
                let c = cpu(&r);
                assert_eq!(c.cpu_impl, Some(CpuImpl::Spirv), "{name}");
                assert!(c.items > 0, "{name} {devices}: {r:#?}");
            }
        }
    }
    common::assert_validation_clean(&e);
}

/// One verified run of `w`; its report.
fn verified(
    w: &mut dyn Workload,
    e: &Engine,
    sched: &Scheduler,
    devices: Devices,
    name: &str,
) -> Report {
    let r = w
        .run(e, sched, devices)
        .unwrap_or_else(|err| panic!("{name} {devices}: {err}"));
    let v = w.verify();
    assert!(v.ok, "{name} {devices}: {v:?}");
    let items: u64 = r.devices.iter().map(|d| d.items).sum();
    assert_eq!(items, w.space().items(), "{name} {devices}: items covered");
    r
}

/// `coexec bench --cpu-impl spirv --json` names each device's path, and
/// the run verifies; `native` names the native path.
#[test]
fn bench_reports_the_cpu_path_in_json() {
    if common::engine().is_none() {
        return;
    }
    for (cpu_impl, path) in [("spirv", "cpu (spirv)"), ("native", "cpu (native)")] {
        let o = std::process::Command::new(env!("CARGO_BIN_EXE_coexec"))
            .args([
                "bench", "--kernel", "taylor", "--size", "20000", "--reps", "1",
            ])
            .args(["--scheduler", "static", "--cpu-power", "0.5", "--json"])
            .args(["--cpu-impl", cpu_impl])
            .output()
            .expect("coexec runs");
        let stdout = String::from_utf8_lossy(&o.stdout);
        assert!(
            o.status.success(),
            "{stdout} {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let doc: serde_json::Value = serde_json::from_str(&stdout).expect("one JSON object");
        assert_eq!(doc["verified"], true, "{doc}");
        assert_eq!(doc["cpu_impl"], cpu_impl);
        let devices = doc["per_device"].as_array().expect("per_device");
        let cpu = devices.iter().find(|d| d["kind"] == "cpu").expect("a CPU");
        assert_eq!(cpu["path"], path, "{doc}");
        assert!(cpu["items"].as_u64().unwrap() > 0, "{doc}");
        assert!(devices.iter().any(|d| d["path"] == "gpu"), "{doc}");
    }
}

/// The hardware threads of a `Cpus_allowed_list` ("0-2,5").
fn cpu_list(text: &str) -> Vec<usize> {
    let mut out = Vec::new();
    for part in text.trim().split(',').filter(|p| !p.is_empty()) {
        let (a, b) = part.split_once('-').unwrap_or((part, part));
        let (a, b) = (a.parse::<usize>().unwrap(), b.parse::<usize>().unwrap());
        out.extend(a..=b);
    }
    out
}

/// Lavapipe's shader threads of the SPIR-V CPU device run on the CPU
/// workers' cores (Linux: their affinity in `/proc/self/task`).
#[test]
fn the_spirv_devices_threads_are_pinned_to_the_workers_cores() {
    let Some(e) = engine(true, CpuImpl::Native) else {
        return;
    };
    let mut workers: Vec<usize> = e
        .core_plan()
        .workers
        .iter()
        .flat_map(|c| c.pus.clone())
        .collect();
    workers.sort_unstable();
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        eprintln!("skipping: no /proc");
        return;
    };
    let is_lavapipe = e
        .spirv_cpu_device()
        .is_some_and(|d| d.name.contains("llvmpipe"));
    if !is_lavapipe || workers.is_empty() {
        eprintln!("skipping: the CPU path is not lavapipe, or no workers");
        return;
    }
    let pinned = tasks.flatten().any(|t| {
        let comm = std::fs::read_to_string(t.path().join("comm")).unwrap_or_default();
        let status = std::fs::read_to_string(t.path().join("status")).unwrap_or_default();
        let allowed = status
            .lines()
            .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
            .map(cpu_list);
        comm.starts_with("llvmpipe") && allowed.as_deref() == Some(&workers[..])
    });
    assert!(
        pinned,
        "no llvmpipe thread pinned to the workers' {workers:?}"
    );
    assert_eq!(cpu_list("0-2,5"), [0, 1, 2, 5]);
}

/// On a staged engine (mirrors on each GPU) the SPIR-V CPU device reads and
/// writes the host bytes, as the CPU workers do: every item once per run.
#[test]
fn the_spirv_path_co_executes_with_a_staged_gpu() {
    let Some(e) = common::engine_from(EngineOptions {
        workers: Some(1),
        validation: Validation::IfAvailable,
        profiles: false,
        spirv_cpu: true,
        memory: coexec::MemoryPlacement::Staged,
        ..Default::default()
    }) else {
        return;
    };
    assert_eq!(e.memory_placement(), coexec::MemoryPlacement::Staged);
    let k = e.kernel_glsl("nocpu", GLSL, None).unwrap();
    let r = run_checked(&e, &k, 40_000, Devices::ALL, 3);
    let gpu = r
        .devices
        .iter()
        .find(|d| d.kind == DeviceKind::Gpu)
        .unwrap();
    assert!(gpu.items > 0 && gpu.transfers.download_bytes > 0, "{r:#?}");
    assert_eq!(cpu(&r).cpu_impl, Some(CpuImpl::Spirv));
    assert!(cpu(&r).items > 0, "{r:#?}");
    common::assert_validation_clean(&e);
}

/// `CpuImpl::Spirv` with a kernel that has no SPIR-V (CPU only): the
/// native path runs it.
#[test]
fn a_cpu_only_kernel_stays_native_under_cpu_impl_spirv() {
    let Some(e) = engine(true, CpuImpl::Spirv) else {
        return;
    };
    let k = e
        .kernel("cpuonly", None, Some(native()), Some([64, 1, 1]))
        .unwrap();
    let r = run_checked(&e, &k, 5_000, Devices::CPU, 2);
    assert_eq!(cpu(&r).cpu_impl, Some(CpuImpl::Native));
    assert_eq!(cpu(&r).path(), "cpu (native)");
}
