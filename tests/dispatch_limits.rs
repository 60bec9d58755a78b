//! A device whose limits cannot dispatch a run's index space is left out of
//! the run where another chosen device can run it (a note in its report
//! says so), and the run fails with `Error::DispatchLimit` only where none
//! can. Lavapipe's devices all have the same limits: the test hook
//! `Engine::cap_dispatch_groups` lowers one device's.
//!
//! Every run is checked item by item against a CPU reference with an
//! accumulating kernel (`out[i] += hash(i)`).
//!
//! Needs the test-only hooks: `cargo test --features test-hooks`.

#![cfg(feature = "glsl")]
#![cfg(feature = "test-hooks")]

mod common;

use coexec::{
    Args, CpuArgs, CpuImpl, DeviceKind, Devices, Engine, EngineOptions, Error, IndexSpace, Kernel,
    Package, Report, Scheduler, Validation,
};
use std::sync::Arc;

const GLSL: &str = "#version 450
layout(local_size_x = 64) in;
layout(std430, binding = 0) buffer O { uint o[]; };
layout(push_constant) uniform P { uint n; } p;
void main() {
    uint i = gl_GlobalInvocationID.x;
    if (i >= p.n) return;
    uint h = i * 2654435761u;
    o[i] += h ^ (h >> 15);
}";

fn hash(i: u32) -> u32 {
    let h = i.wrapping_mul(2654435761);
    h ^ (h >> 15)
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
/// `copies` logical devices of each GPU.
fn engine(spirv: bool, copies: usize) -> Option<Engine> {
    common::engine_from(EngineOptions {
        workers: Some(1),
        validation: Validation::IfAvailable,
        profiles: false,
        spirv_cpu: spirv,
        cpu_impl: CpuImpl::Native,
        duplicate_devices: copies,
        ..Default::default()
    })
}

/// Runs `k` once over `n` items on `devices` (equal static hints for the
/// devices asked for); on success checks every item ran exactly once.
fn run(e: &Engine, k: &Kernel, n: u32, devices: Devices, hints: usize) -> Result<Report, Error> {
    let mut out = e.buffer::<u32>(n as usize).unwrap();
    let sched = Scheduler::Static {
        powers: Some(vec![1.0; hints]),
    };
    let args = Args::new().output(&mut out).push(&n);
    let r = e.run(k, args, IndexSpace::D1(u64::from(n)), &sched, devices)?;
    for (i, &v) in out.iter().enumerate() {
        assert_eq!(v, hash(i as u32), "item {i}");
    }
    assert_eq!(r.devices.iter().map(|d| d.items).sum::<u64>(), u64::from(n));
    Ok(r)
}

/// The note of the device `which` picks, which ran nothing.
fn left_out_note(r: &Report, which: impl Fn(&coexec::DeviceReport) -> bool) -> String {
    let d = r.devices.iter().find(|d| which(d)).expect("its report");
    assert_eq!(d.items, 0, "{r:#?}");
    d.note.clone().unwrap_or_default()
}

/// A kernel without a CPU implementation, on CPU and GPU, where the SPIR-V
/// CPU device cannot dispatch the space: the GPU runs it alone and the CPU
/// entry says why; with neither able to, or on the CPU alone, the typed
/// error.
#[test]
fn the_spirv_cpu_device_is_left_out_where_it_cannot_dispatch() {
    let Some(e) = engine(true, 1) else { return };
    if e.spirv_cpu_device().is_none() {
        return;
    }
    let k = e.kernel_glsl("nocpu", GLSL, None).unwrap();
    let spirv = e.gpu_count();
    e.cap_dispatch_groups(spirv, 100);
    let n = 200 * 64 - 5;
    let hints = 1 + e.gpu_count();
    let r = run(&e, &k, n, Devices::ALL, hints).unwrap();
    let note = left_out_note(&r, |d| d.kind == DeviceKind::Cpu);
    assert!(note.starts_with("left out: dispatch limit"), "{note}");
    assert!(note.contains("200 work-groups"), "{note}");
    let cpu = r
        .devices
        .iter()
        .find(|d| d.kind == DeviceKind::Cpu)
        .unwrap();
    assert_eq!(cpu.cpu_impl, Some(CpuImpl::Spirv));
    // Within its limit it takes part again.
    let r = run(&e, &k, 100 * 64, Devices::ALL, hints).unwrap();
    assert!(r.devices.iter().all(|d| d.note.is_none()), "{r:#?}");
    // The CPU alone cannot: the typed error.
    let err = run(&e, &k, n, Devices::CPU, 1).unwrap_err();
    assert!(
        matches!(
            err,
            Error::DispatchLimit {
                groups: 200,
                limit: 100,
                ..
            }
        ),
        "{err}"
    );
    // Neither device can: the typed error.
    for g in 0..e.gpu_count() {
        e.cap_dispatch_groups(g, 150);
    }
    let err = run(&e, &k, n, Devices::ALL, hints).unwrap_err();
    assert!(matches!(err, Error::DispatchLimit { axis: 0, .. }), "{err}");
    common::assert_validation_clean(&e);
}

/// On the CPU alone the SPIR-V path over more work-groups than the CPU
/// Vulkan device's real limit is refused with the typed error.
#[test]
fn the_spirv_cpu_device_alone_past_its_real_limit_is_refused() {
    let Some(e) = engine(true, 1) else { return };
    let Some(info) = e.spirv_cpu_device() else {
        return;
    };
    let limit = u64::from(info.max_group_count[0]);
    let n = (limit + 1) * 64;
    if n > u64::from(u32::MAX) || n * 4 > u64::from(info.max_storage_buffer_range) {
        return; // a device with a huge limit: nothing to refuse here
    }
    let k = e.kernel_glsl("nocpu", GLSL, None).unwrap();
    let mut out = e.buffer::<u32>(n as usize).unwrap();
    let args = Args::new().output(&mut out).push(&(n as u32));
    let err = e
        .run(
            &k,
            args,
            IndexSpace::D1(n),
            &Scheduler::hguided(),
            Devices::CPU,
        )
        .unwrap_err();
    assert!(matches!(err, Error::DispatchLimit { axis: 0, .. }), "{err}");
}

/// A GPU of a multi-GPU engine with a smaller limit than the others is
/// left out of a run past it; the others run it.
#[test]
fn a_gpu_with_a_smaller_limit_is_left_out_of_a_multi_gpu_run() {
    let Some(e) = engine(false, 2) else { return };
    assert!(e.gpu_count() >= 2);
    let k = e.kernel_glsl("both", GLSL, Some(native())).unwrap();
    e.cap_dispatch_groups(1, 100);
    let gpus = Devices::gpu(0).with_gpu(1);
    let n = 300 * 64;
    let r = run(&e, &k, n, gpus, 2).unwrap();
    let note = left_out_note(&r, |d| d.name.ends_with("(gpu1)"));
    assert!(note.starts_with("left out: dispatch limit"), "{note}");
    // With the CPU too: the CPU and gpu0 share it.
    let r = run(&e, &k, n, gpus.with_cpu(), 3).unwrap();
    let note = left_out_note(&r, |d| d.name.ends_with("(gpu1)"));
    assert!(note.starts_with("left out: dispatch limit"), "{note}");
    // gpu1 alone cannot: the typed error.
    let err = run(&e, &k, n, Devices::gpu(1), 1).unwrap_err();
    assert!(
        matches!(err, Error::DispatchLimit { limit: 100, .. }),
        "{err}"
    );
    common::assert_validation_clean(&e);
}

/// `coexec bench --json` over more work-groups than lavapipe's GPU can
/// dispatch (saxpy's default 2^24 items, 65536 groups of 256): the native
/// CPU runs it, verified, and the GPU's entry has the note; with the SPIR-V
/// CPU path (the same limit) no device can, and the command says why.
#[test]
fn bench_json_notes_a_device_left_out() {
    let Some(e) = engine(false, 1) else { return };
    if e.device().info().max_group_count[0] != 65_535 {
        return; // another GPU: the space fits
    }
    let bench = |cpu_impl: &str| {
        std::process::Command::new(env!("CARGO_BIN_EXE_coexec"))
            .args([
                "bench",
                "--kernel",
                "saxpy",
                "--devices",
                "all",
                "--reps",
                "1",
            ])
            .args(["--cpu-impl", cpu_impl, "--json"])
            .output()
            .expect("coexec runs")
    };
    let o = bench("native");
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{stdout}");
    let doc: serde_json::Value = serde_json::from_str(&stdout).expect("one JSON object");
    assert_eq!(doc["verified"], true, "{doc}");
    let devs = doc["per_device"].as_array().unwrap();
    let gpu = devs.iter().find(|d| d["kind"] == "gpu").expect("{doc}");
    assert_eq!(gpu["items"], 0, "{doc}");
    let note = gpu["note"].as_str().unwrap_or_default();
    assert!(note.starts_with("left out: dispatch limit"), "{note}");
    // (Where the command opens no CPU Vulkan device, the native path runs.)
    let o = bench("spirv");
    let stderr = String::from_utf8_lossy(&o.stderr);
    if !o.status.success() {
        assert!(stderr.contains("maxComputeWorkGroupCount[0]"), "{stderr}");
    }
}
