//! Foundation: unified buffers, sub-range dispatch, allocator backends,
//! validation, errors without a device.

// Kernels here are GLSL compiled at run time: the lean build (no feature
// `glsl`) runs none of these tests (its kernels are SPIR-V: tests/workloads.rs).
#![cfg(feature = "glsl")]

mod common;

use coexec::{AllocatorBackend, Args, Devices, IndexSpace, Scheduler};
use coexec_engine::vk::{spirv, ComputePipeline, DispatchRing, StampRead};
use common::{assert_validation_clean, engine, engine_with};
use std::sync::Arc;

const COPY_PLUS_ONE: &str = "#version 450
layout(local_size_x = 64) in;
layout(std430, binding = 0) readonly buffer I { float x[]; };
layout(std430, binding = 1) buffer O { float y[]; };
layout(push_constant) uniform P { uint n; } p;
void main() { uint i = gl_GlobalInvocationID.x; if (i < p.n) y[i] = x[i] + 1.0; }";

#[test]
fn cpu_writes_gpu_reads_and_gpu_writes_cpu_reads_the_same_bytes() {
    let Some(e) = engine() else { return };
    let k = e.kernel_glsl("copy", COPY_PLUS_ONE, None).unwrap();
    let n = 10_000usize;
    let mut x = e.buffer::<f32>(n).unwrap();
    let mut y = e.buffer::<f32>(n).unwrap();
    let x_ptr = x.as_ptr();
    let y_ptr = y.as_ptr();
    // CPU writes straight into the mapped memory...
    for (i, v) in x.as_mut_slice().iter_mut().enumerate() {
        *v = i as f32 * 0.5;
    }
    let args = Args::new().input(&x).output(&mut y).push(&(n as u32));
    e.run(
        &k,
        args,
        IndexSpace::D1(n as u64),
        &Scheduler::Dynamic { packages: 7 },
        Devices::GPU,
    )
    .unwrap();
    // ...the GPU read them, and its writes are read back from the same
    // mapping: no staging buffer, the addresses never changed.
    assert_eq!(x.as_ptr(), x_ptr);
    assert_eq!(y.as_ptr(), y_ptr);
    for (i, v) in y.iter().enumerate() {
        assert_eq!(*v, i as f32 * 0.5 + 1.0, "element {i}");
    }
    assert_validation_clean(&e);
}

/// The compute pipeline of GLSL `glsl` on `e`'s device.
fn pipeline_of(e: &coexec::Engine, glsl: &str, name: &str) -> ComputePipeline {
    let words = coexec::shader::compile_glsl(glsl, name).unwrap();
    let iface = spirv::reflect(&words, "main").unwrap();
    ComputePipeline::new(e.device().clone(), &words, iface).unwrap()
}

#[test]
fn sub_range_dispatch_touches_exactly_its_range_with_global_ids() {
    let Some(e) = engine() else { return };
    // Writes its global id + 1, so a shader that saw package-local ids would
    // write the wrong values.
    let glsl = "#version 450
layout(local_size_x = 4) in;
layout(std430, binding = 0) buffer O { uint o[]; };
void main() { o[gl_GlobalInvocationID.x] = gl_GlobalInvocationID.x + 1u; }";
    let pipeline = pipeline_of(&e, glsl, "ids.comp");
    let mut out = e.buffer::<u32>(64).unwrap();
    let set = pipeline.bind(&[out.binding()]).unwrap();
    let mut ring = DispatchRing::new(e.device().clone(), 2).unwrap();
    // Work-groups 5..8 -> items 20..32.
    // SAFETY: fresh ring (slot idle), set made by this pipeline, buffer alive
    // until the wait below, no push constants in the shader.
    let t = unsafe { ring.submit(&pipeline, &set, &[], [5, 0, 0], [3, 1, 1]) }.unwrap();
    assert!(ring.wait(t, 10_000_000_000).unwrap());
    for (i, v) in out.as_mut_slice().iter().enumerate() {
        let expect = if (20..32).contains(&i) {
            i as u32 + 1
        } else {
            0
        };
        assert_eq!(*v, expect, "element {i}");
    }
    if let Some(span) = ring.span(t).unwrap() {
        assert!(span.end_ns >= span.start_ns);
    }
    drop(set);
    assert_validation_clean(&e);
}

#[test]
fn a_new_pipeline_is_primed_by_an_empty_dispatch_and_its_first_package_runs() {
    // An engine of its own: other tests make pipelines on the shared one.
    let Some(e) = engine_with(Some(1), AllocatorBackend::default()) else {
        return;
    };
    // A pipeline with bindings and push constants: priming binds it, then
    // submits a dispatch of zero work-groups over a scratch buffer with
    // zero push constants, which validation checks like any dispatch.
    let glsl = "#version 450
layout(local_size_x = 4) in;
layout(std430, binding = 0) buffer O { uint o[]; };
layout(push_constant) uniform P { uint add; };
void main() { o[gl_GlobalInvocationID.x] += add; }";
    let before = e.device().primed();
    let submitted = e.device().submissions();
    let pipeline = pipeline_of(&e, glsl, "primed.comp");
    assert_eq!(e.device().primed(), before + 1);
    assert_eq!(e.device().submissions(), submitted + 1);
    let again = pipeline_of(&e, glsl, "primed.comp");
    assert_eq!(e.device().primed(), before + 2);
    assert_eq!(e.device().submissions(), submitted + 2);
    drop(again);
    // Several bindings, one a fixed-size block, and 16 bytes of push
    // constants; each pipeline dropped at once, its priming dispatch
    // perhaps still pending (the drop waits for it: validation reports a
    // pipeline destroyed while in use).
    let blocks = "#version 450
layout(local_size_x = 8) in;
layout(std430, binding = 0) buffer A { float a[]; };
layout(std430, binding = 2) buffer T { vec4 table[256]; float scale; };
layout(std430, binding = 3) buffer C { uint c[]; };
layout(push_constant) uniform P { uint n; uint m; float f; float g; };
void main() {
    uint i = gl_GlobalInvocationID.x;
    if (i < n) { a[i] = table[i % 256u].x * scale * f + g; c[i] = m; }
}";
    for _ in 0..8 {
        drop(pipeline_of(&e, blocks, "blocks.comp"));
    }
    assert_eq!(e.device().primed(), before + 10);
    let mut out = e.buffer::<u32>(16).unwrap();
    let set = pipeline.bind(&[out.binding()]).unwrap();
    let mut ring = DispatchRing::new(e.device().clone(), 2).unwrap();
    // SAFETY: fresh ring (slot idle); the set was made by this pipeline and
    // its buffer outlives the wait; 4 push bytes, the shader's.
    let t =
        unsafe { ring.submit(&pipeline, &set, &7u32.to_ne_bytes(), [0; 3], [4, 1, 1]) }.unwrap();
    assert!(ring.wait(t, 10_000_000_000).unwrap());
    assert!(out.as_mut_slice().iter().all(|&v| v == 7));
    drop(set);
    assert_validation_clean(&e);
}

#[test]
fn a_slot_resubmits_its_recording_only_for_the_same_dispatch() {
    let Some(e) = engine() else { return };
    // Adds the push constant to every element: each submission that runs
    // shows, and so does one that runs with stale push constants or set.
    let glsl = "#version 450
layout(local_size_x = 4) in;
layout(std430, binding = 0) buffer O { uint o[]; };
layout(push_constant) uniform P { uint add; };
void main() { o[gl_GlobalInvocationID.x] += add; }";
    let pipeline = pipeline_of(&e, glsl, "add.comp");
    let mut a = e.buffer::<u32>(64).unwrap();
    let mut b = e.buffer::<u32>(64).unwrap();
    let set_a = pipeline.bind_cached(&[a.binding()]).unwrap();
    let set_b = pipeline.bind_cached(&[b.binding()]).unwrap();
    // The same buffers give the same set; others another.
    assert!(Arc::ptr_eq(
        &set_a,
        &pipeline.bind_cached(&[a.binding()]).unwrap()
    ));
    assert!(!Arc::ptr_eq(&set_a, &set_b));
    let mut ring = DispatchRing::new(e.device().clone(), 2).unwrap();
    let mut run = |set: &coexec_engine::vk::BindingSet, add: u32, groups: u32| {
        // SAFETY: every earlier ticket was waited on (slot idle); the set was
        // made by this pipeline and its buffer outlives the wait; 4 push
        // bytes, the shader's.
        let t = unsafe { ring.submit(&pipeline, set, &add.to_ne_bytes(), [0; 3], [groups, 1, 1]) }
            .unwrap();
        assert!(ring.wait(t, 10_000_000_000).unwrap());
    };
    // Five of the same through two slots: both slots resubmit their
    // recording; each run adds once.
    for _ in 0..5 {
        run(&set_a, 1, 16);
    }
    // Another push constant, another range, another set: each recorded anew.
    run(&set_a, 10, 16);
    run(&set_a, 100, 8);
    run(&set_b, 7, 16);
    run(&set_a, 1, 16);
    for (i, v) in a.as_mut_slice().iter().enumerate() {
        let expect = if i < 32 { 116 } else { 16 };
        assert_eq!(*v, expect, "a[{i}]");
    }
    assert!(b.as_mut_slice().iter().all(|&v| v == 7));
    drop((set_a, set_b));
    assert_validation_clean(&e);
}

#[test]
fn every_timestamp_mode_gives_spans_of_its_own_package() {
    let Some(e) = engine() else { return };
    if !e.device().has_timestamps() {
        eprintln!("skipping: the queue writes no timestamps");
        return;
    }
    // Spins for a while so that a package's span is measurably long.
    let glsl = "#version 450
layout(local_size_x = 64) in;
layout(std430, binding = 0) buffer O { uint o[]; };
void main() {
    uint h = gl_GlobalInvocationID.x;
    for (int r = 0; r < 2000; r++) { h = h * 1664525u + 1013904223u; }
    o[gl_GlobalInvocationID.x] = h;
}";
    let pipeline = pipeline_of(&e, glsl, "spin.comp");
    let out = e.buffer::<u32>(64 * 64).unwrap();
    let set = pipeline.bind(&[out.binding()]).unwrap();
    for read in [StampRead::Copy, StampRead::Query, StampRead::Off] {
        let mut ring = DispatchRing::with_stamps(e.device().clone(), 2, read).unwrap();
        assert_eq!(ring.stamp_read(), read);
        // Five packages through two slots: every slot is reused, and each
        // span must be its own package's, not a stale one of the slot.
        let mut last_end = 0;
        for p in 0..5u32 {
            // SAFETY: the slot is idle (every earlier ticket was waited on
            // below, right after its submission); the set was made by this
            // pipeline and `out` outlives the waits below; no push constants.
            let t = unsafe { ring.submit(&pipeline, &set, &[], [p * 8, 0, 0], [8, 1, 1]) }.unwrap();
            assert!(ring.wait(t, 10_000_000_000).unwrap());
            match (read, ring.span(t).unwrap()) {
                (StampRead::Off, span) => assert_eq!(span, None),
                (_, Some(span)) => {
                    assert!(span.end_ns > span.start_ns, "{read:?}: {span:?}");
                    assert!(span.start_ns >= last_end, "{read:?}: stale span {span:?}");
                    last_end = span.end_ns;
                }
                (_, None) => panic!("{read:?}: no span for a completed package"),
            }
        }
    }
    drop(set);
    assert_validation_clean(&e);
}

/// The safe functions of the Vulkan layer refuse what the driver could not
/// use: a set of the wrong size, another device's buffer, an interface that
/// is not the shader's, and the span of a ticket that did not complete or
/// whose slot was reused.
#[test]
fn the_vulkan_layer_refuses_what_the_driver_cannot_use() {
    let Some(e) = engine() else { return };
    let glsl = "#version 450
layout(local_size_x = 4) in;
layout(std430, binding = 0) buffer O { uint o[]; };
void main() { o[gl_GlobalInvocationID.x] = 7u; }";
    let words = coexec::shader::compile_glsl(glsl, "seven.comp").unwrap();
    let iface = spirv::reflect(&words, "main").unwrap();
    let mut other_iface = iface.clone();
    other_iface.bindings.clear();
    assert!(matches!(
        ComputePipeline::new(e.device().clone(), &words, other_iface),
        Err(coexec::Error::Interface(_))
    ));
    let pipeline = ComputePipeline::new(e.device().clone(), &words, iface).unwrap();
    let out = e.buffer::<u32>(64).unwrap();
    assert!(matches!(
        pipeline.bind(&[]),
        Err(coexec::Error::Interface(_))
    ));
    assert!(matches!(
        pipeline.bind(&[out.binding(), out.binding()]),
        Err(coexec::Error::Interface(_))
    ));
    let other = engine_with(Some(1), AllocatorBackend::default()).unwrap();
    let foreign = other.buffer::<u32>(64).unwrap();
    assert!(matches!(
        pipeline.bind(&[foreign.binding()]),
        Err(coexec::Error::ForeignBuffer { binding: 0 })
    ));
    let set = pipeline.bind(&[out.binding()]).unwrap();
    let mut ring = DispatchRing::new(e.device().clone(), 2).unwrap();
    assert_eq!(ring.span(0).unwrap(), None);
    assert_eq!(ring.span(1).unwrap(), None, "not submitted yet");
    let mut tickets = Vec::new();
    for g in 0..3u32 {
        // SAFETY: each ticket is waited on before the next submission, so
        // the slot is idle; the set was made by this pipeline; `out` lives
        // until the end; no push constants.
        let t = unsafe { ring.submit(&pipeline, &set, &[], [g, 0, 0], [1, 1, 1]) }.unwrap();
        assert!(ring.wait(t, 10_000_000_000).unwrap());
        tickets.push(t);
    }
    // Two slots: the first ticket's slot was reused by the third.
    assert_eq!(ring.span(tickets[0]).unwrap(), None, "slot reused");
    assert_eq!(ring.span(tickets[2] + 1).unwrap(), None, "future ticket");
    if ring.stamp_read() != StampRead::Off {
        assert!(ring.span(tickets[2]).unwrap().is_some());
    }
    assert!(out[..12].iter().all(|&v| v == 7));
    // A timeline of the device: its counter, waits that end and that time
    // out (a device without timelines refuses one: COEXEC_EMULATE_DRIVER).
    match coexec_engine::vk::Timeline::new(e.device(), 5) {
        Ok(t) => {
            assert_eq!(t.value().unwrap(), 5);
            assert!(t.wait(3, 0).unwrap());
            assert!(!t.wait(6, 1_000_000).unwrap());
        }
        Err(err) => assert!(!e.device().sync_mode().has_timelines(), "{err}"),
    }
    drop(set);
    assert_validation_clean(&e);
    assert_validation_clean(&other);
}

/// A device is created from what the driver says, never from a
/// caller's (editable) copy of its facts, and only on its own instance.
#[test]
fn a_device_is_created_from_the_drivers_facts_only() {
    use coexec_engine::vk::{Device, DeviceOptions, Instance, Validation};
    if engine().is_none() {
        return;
    }
    let a = Arc::new(Instance::new(Validation::Off).unwrap());
    let b = Arc::new(Instance::new(Validation::Off).unwrap());
    let mut info = a.physical_devices().unwrap().remove(0);
    let real = (info.maintenance4, info.external_memory_host);
    info.maintenance4 = !real.0;
    info.external_memory_host = !real.1;
    let opts = DeviceOptions {
        pipeline_cache_dir: Some(std::path::PathBuf::new()),
        ..Default::default()
    };
    assert!(matches!(
        Device::new(b, info.clone(), &opts),
        Err(coexec::Error::NoDevice(_))
    ));
    let d = Device::new(a, info, &opts).unwrap();
    assert_eq!((d.info().maintenance4, d.info().external_memory_host), real);
}

fn saxpy_on(backend: AllocatorBackend) {
    let Some(e) = engine_with(Some(1), backend) else {
        return;
    };
    assert_eq!(e.memory().backend(), backend);
    let mut w =
        coexec::workloads::create("saxpy", &e, Some(coexec::workloads::Size::Linear(100_003)))
            .unwrap();
    for d in [Devices::CPU, Devices::GPU, Devices::ALL] {
        w.run(&e, &Scheduler::hguided(), d).unwrap();
        let v = w.verify();
        assert!(v.ok, "{backend} {d:?}: {v:?}");
    }
    // Many buffers of odd sizes come and go.
    for len in [1usize, 3, 4095, 65_537, 1 << 20] {
        let mut b = e.buffer::<u64>(len).unwrap();
        b[len - 1] = len as u64;
        assert_eq!(b[len - 1], len as u64);
        assert!(b[..len - 1].iter().all(|&v| v == 0), "buffers start zeroed");
    }
    assert_validation_clean(&e);
}

#[test]
fn gpu_allocator_backend_runs_and_verifies() {
    saxpy_on(AllocatorBackend::GpuAllocator);
}

#[cfg(feature = "vma")]
#[test]
fn vma_backend_runs_and_verifies() {
    saxpy_on(AllocatorBackend::Vma);
}

#[cfg(not(feature = "vma"))]
#[test]
fn vma_backend_without_the_feature_is_a_clear_error() {
    let opts = coexec::EngineOptions {
        workers: Some(1),
        allocator: AllocatorBackend::Vma,
        ..Default::default()
    };
    match coexec::Engine::with_options(opts) {
        Err(coexec::Error::BackendUnavailable("vma")) => {}
        Err(coexec::Error::NoDevice(_)) => {}
        other => panic!("expected BackendUnavailable, got {other:?}"),
    }
}

#[test]
fn memory_type_is_host_visible_and_coherent() {
    let Some(e) = engine() else { return };
    let info = e.device_info();
    let t = info.memory_types[e.memory_type() as usize];
    assert!(t.host_visible() && t.host_coherent());
    use coexec_engine::vk::ash::vk::MemoryPropertyFlags as F;
    assert!(F::from_raw(t.property_flags()).contains(F::HOST_VISIBLE | F::HOST_COHERENT));
    if !info.is_unified() {
        assert!(!t.device_local(), "never BAR memory on a discrete GPU");
    }
}

#[test]
fn no_vulkan_device_is_a_clear_error_not_a_panic() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_coexec"))
        .arg("info")
        .env("VK_DRIVER_FILES", "/nonexistent/coexec-no-driver.json")
        .env("VK_ICD_FILENAMES", "/nonexistent/coexec-no-driver.json")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(
        stderr.contains("no Vulkan device") || stderr.contains("Vulkan loader"),
        "{stderr}"
    );
}

/// `coexec info`, `GpuChoice::Index` and `Error::DeviceIndex` count devices
/// the same way: Vulkan's enumeration order, every device included.
#[test]
fn one_device_numbering_everywhere() {
    let Ok(all) = coexec::Engine::all_vulkan_devices() else {
        eprintln!("skipping: no Vulkan loader");
        return;
    };
    let usable = coexec::Engine::vulkan_devices().unwrap();
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_coexec"))
        .arg("info")
        .env("COEXEC_VALIDATION", "0")
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    for d in &all {
        assert!(
            out.contains(&format!("  [{}] {}", d.index, d.name)),
            "{out}"
        );
    }
    for d in &usable {
        let Some(e) = common::engine_from(coexec::EngineOptions {
            workers: Some(1),
            gpu: coexec::GpuChoice::Index(d.index),
            validation: coexec::Validation::IfAvailable,
            profiles: false,
            ..Default::default()
        }) else {
            return;
        };
        assert_eq!(e.device().info().index, d.index);
        assert_eq!(e.device().info().name, d.name);
    }
    let err = coexec::Engine::with_options(coexec::EngineOptions {
        gpu: coexec::GpuChoice::Index(all.len()),
        validation: coexec::Validation::Off,
        ..Default::default()
    })
    .unwrap_err();
    assert!(
        matches!(err, coexec::Error::DeviceIndex { index, available } if index == all.len() && available == all.len()),
        "{err}"
    );
}

/// The `coexec` command shows the engine's warnings on stderr (here: a
/// profile that cannot be written under an unwritable cache folder), and
/// COEXEC_LOG filters them.
#[test]
fn the_command_prints_the_engines_warnings() {
    if common::engine().is_none() {
        return;
    }
    let bench = |log: Option<&str>| {
        let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_coexec"));
        c.args([
            "bench", "--kernel", "saxpy", "--size", "4096", "--reps", "1",
        ])
        .args(["--workers", "1"])
        .env("COEXEC_CACHE_DIR", "/proc/coexec-unwritable")
        .env_remove("COEXEC_PROFILE")
        .env_remove("RUST_LOG");
        match log {
            Some(l) => c.env("COEXEC_LOG", l),
            None => c.env_remove("COEXEC_LOG"),
        };
        let o = c.output().unwrap();
        assert!(o.status.success(), "{o:?}");
        String::from_utf8_lossy(&o.stderr).into_owned()
    };
    let stderr = bench(None);
    assert!(
        stderr.contains("WARN") && stderr.contains("could not write profile"),
        "{stderr}"
    );
    let stderr = bench(Some("error"));
    assert!(!stderr.contains("could not write profile"), "{stderr}");
}

/// `coexec bench`'s text line gives the timed runs' median and, apart,
/// the first run's time (the cold one in a fresh process, never among the
/// timed runs however few warm-ups are asked for), matching the JSON's.
#[test]
fn the_bench_line_gives_the_first_run_apart() {
    if common::engine().is_none() {
        return;
    }
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_coexec"))
        .args([
            "bench",
            "--kernel",
            "saxpy",
            "--size",
            "4096",
            "--workers",
            "1",
        ])
        .args(["--warmup", "0", "--reps", "2"])
        .env("COEXEC_PROFILE", "off")
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout.lines().next().unwrap_or_default();
    assert!(
        line.contains("(median of 2 after 1 warm-up; first run "),
        "{line}"
    );
    let first = line
        .split("first run ")
        .nth(1)
        .and_then(|r| r.split(" s)").next())
        .and_then(|v| v.parse::<f64>().ok());
    assert!(first.is_some_and(|t| t > 0.0), "{line}");
}

/// The `coexec` command (not the library) gives lavapipe its thread count:
/// `LP_NUM_THREADS` unset becomes the engine's lavapipe cores; a value the
/// user set is kept.
#[test]
fn the_command_sets_lp_num_threads_unless_set() {
    let info = |lp: Option<&str>| {
        let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_coexec"));
        c.arg("info").env("COEXEC_VALIDATION", "0");
        match lp {
            Some(v) => c.env("LP_NUM_THREADS", v),
            None => c.env_remove("LP_NUM_THREADS"),
        };
        let o = c.output().unwrap();
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    let out = info(None);
    let Some(line) = out.lines().find(|l| l.contains("Vulkan CPU device cores")) else {
        eprintln!("skipping: no CPU Vulkan device\n{out}");
        return;
    };
    let n = coexec::Engine::cpu_device_cores(None).expect("lavapipe has cores");
    assert!(line.contains(&format!("LP_NUM_THREADS={n})")), "{line}");
    let out = info(Some("3"));
    assert!(out.contains("LP_NUM_THREADS=3)"), "{out}");
}

#[test]
fn pipeline_cache_is_persisted() {
    let dir = common::TempDir::new("cache-test");
    {
        let Some(e) = common::engine_from(coexec::EngineOptions {
            workers: Some(1),
            pipeline_cache_dir: Some(dir.to_path_buf()),
            validation: coexec::Validation::IfAvailable,
            ..Default::default()
        }) else {
            return;
        };
        let _k = e.kernel_glsl("copy", COPY_PLUS_ONE, None).unwrap();
    }
    let files: Vec<_> = std::fs::read_dir(&dir).unwrap().collect();
    assert_eq!(files.len(), 1, "one cache file per device");
}

#[test]
fn kernel_errors_are_typed() {
    let Some(e) = engine() else { return };
    // The empty name: shaderc used to abort the process on a source that
    // fails to compile (found by the C ABI fuzz target).
    for name in ["bad", ""] {
        let err = e
            .kernel_glsl(name, "#version 450\nvoid main() { nope(); }", None)
            .unwrap_err();
        assert!(
            matches!(err, coexec::Error::ShaderCompile(_)),
            "{name:?}: {err}"
        );
    }
    let err = e
        .kernel(
            "garbage",
            Some(&[
                1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20,
            ]),
            None,
            None,
        )
        .unwrap_err();
    assert!(matches!(err, coexec::Error::InvalidSpirv(_)), "{err}");
    // A module whose header and interface read fine but which breaks a
    // SPIR-V rule (an OpName's word count swallows the instructions after
    // it): found by the C ABI fuzz target, where lavapipe crashed in
    // vkCreateComputePipelines on it. Validated before any driver sees it.
    let bytes = include_bytes!("data/invalid-opname.spv");
    let words = coexec_engine::vk::spirv::words_from_bytes(bytes).unwrap();
    coexec_engine::vk::spirv::reflect(&words, "main").expect("the interface reads fine");
    let err = e.kernel("invalid", Some(bytes), None, None).unwrap_err();
    assert!(
        matches!(&err, coexec::Error::InvalidSpirv(m) if m.contains("SPIR-V rule")),
        "{err}"
    );
    assert!(matches!(
        e.buffer::<u32>(0),
        Err(coexec::Error::EmptyBuffer)
    ));
    assert!(matches!(
        e.buffer::<()>(4),
        Err(coexec::Error::SizeOverflow(_))
    ));
    assert!(matches!(
        e.buffer::<u64>(usize::MAX / 4),
        Err(coexec::Error::SizeOverflow(_))
    ));
    let err = e.kernel("nothing", None, None, None).unwrap_err();
    assert!(matches!(err, coexec::Error::Interface(_)), "{err}");
    // Too few buffers for the shader.
    let k = e
        .kernel_glsl(
            "copy",
            COPY_PLUS_ONE,
            Some(Arc::new(
                |_: &coexec::Package, _: &mut coexec::CpuArgs<'_>| {},
            )),
        )
        .unwrap();
    let mut y = e.buffer::<f32>(8).unwrap();
    let err = e
        .run(
            &k,
            Args::new().output(&mut y).push(&8u32),
            IndexSpace::D1(8),
            &Scheduler::hguided(),
            Devices::GPU,
        )
        .unwrap_err();
    assert!(matches!(err, coexec::Error::Interface(_)), "{err}");
    assert_validation_clean(&e);
}

/// A run's arguments are checked against the shader the same way whichever
/// devices take part (a CPU-only run of a kernel with SPIR-V included), and
/// a correct run passes on each.
#[test]
fn interface_checks_do_not_depend_on_the_devices() {
    let Some(e) = engine() else { return };
    let copy = |p: &coexec::Package, a: &mut coexec::CpuArgs<'_>| {
        let x = a.input::<f32>(0);
        let y = a.output::<f32>(1);
        for (o, i) in y.iter_mut().zip(p.items.clone()) {
            *o = x[i as usize] + 1.0;
        }
    };
    let k = e
        .kernel_glsl("copy", COPY_PLUS_ONE, Some(Arc::new(copy)))
        .unwrap();
    let x = e.buffer_from_slice(&[1.0f32; 8]).unwrap();
    let xu = e.buffer_from_slice(&[1u16; 8]).unwrap();
    let mut y = e.buffer::<f32>(8).unwrap();
    let mut yd = e.buffer::<f64>(8).unwrap();
    let mut y2 = e.buffer::<f32>(16).unwrap();
    for devices in [Devices::CPU, Devices::GPU, Devices::ALL] {
        let run =
            |args: Args<'_>| e.run(&k, args, IndexSpace::D1(8), &Scheduler::hguided(), devices);
        let what = format!("{devices:?}");
        // Push constants of the wrong size.
        let err = run(Args::new().input(&x).output(&mut y).push(&8u64)).unwrap_err();
        assert!(
            matches!(err, coexec::Error::Interface(ref m) if m.contains("push constants")),
            "{what}: {err}"
        );
        // An input the shader writes, and a missing buffer.
        let err = run(Args::new().input(&x).input(&y2).push(&8u32)).unwrap_err();
        assert!(
            matches!(err, coexec::Error::Interface(ref m) if m.contains("writable")),
            "{what}: {err}"
        );
        let err = run(Args::new().output(&mut y).push(&8u32)).unwrap_err();
        assert!(matches!(err, coexec::Error::Interface(_)), "{what}: {err}");
        // Elements of another size than the shader's float.
        let err = run(Args::new().input(&xu).output(&mut y).push(&8u32)).unwrap_err();
        assert!(
            matches!(err, coexec::Error::Interface(ref m) if m.contains("u16")),
            "{what}: {err}"
        );
        let err = run(Args::new().input(&x).output(&mut yd).push(&8u32)).unwrap_err();
        assert!(
            matches!(err, coexec::Error::Interface(ref m) if m.contains("f64")),
            "{what}: {err}"
        );
        // Zero elements per item.
        let err = run(Args::new()
            .input(&x)
            .output_per_item(&mut y2, 0)
            .push(&8u32))
        .unwrap_err();
        assert!(
            matches!(err, coexec::Error::ZeroPerItem { binding: 1 }),
            "{what}: {err}"
        );
        // The same run with the right arguments passes.
        run(Args::new().input(&x).output(&mut y).push(&8u32)).unwrap();
        assert_eq!(&y[..], &[2.0; 8], "{what}");
        y.fill(0.0);
    }
    assert_validation_clean(&e);
}

#[test]
fn validation_layer_is_on_and_catches_errors() {
    let Some(e) = engine_with(Some(1), AllocatorBackend::default()) else {
        return;
    };
    let instance = e.device().instance();
    let layer_installed = instance.entry().clone();
    // SAFETY: plain query on a loaded entry.
    let layers = unsafe { layer_installed.enumerate_instance_layer_properties() }.unwrap();
    let present = layers
        .iter()
        .any(|l| l.layer_name_as_c_str().ok() == Some(coexec_engine::vk::VALIDATION_LAYER));
    assert_eq!(
        instance.validation_enabled(),
        present,
        "tests run with validation whenever it is installed"
    );
    if !present {
        eprintln!("validation layer not installed: skipping the provoked-error check");
        return;
    }
    let before = e.validation_errors();
    // A zero-sized buffer breaks VUID-VkBufferCreateInfo-size-00912.
    let info = coexec_engine::vk::ash::vk::BufferCreateInfo::default()
        .size(0)
        .usage(coexec_engine::vk::ash::vk::BufferUsageFlags::STORAGE_BUFFER);
    // SAFETY: deliberately invalid for the layer to catch; the layer reports
    // before the driver sees it, and whatever comes back is destroyed at once.
    unsafe {
        if let Ok(b) = e.device().raw().create_buffer(&info, None) {
            e.device().raw().destroy_buffer(b, None);
        }
    }
    assert!(
        e.validation_errors() > before,
        "the layer reported the broken rule"
    );
}

/// A buffer keeps its device (and the memory behind it) alive: dropping the
/// engine first leaves it usable, and freeing it afterwards is clean. This
/// is deliberate, as in vulkano and wgpu: a reference count instead of a
/// lifetime, so that buffers can live in structs and C handles without
/// borrowing the engine, and no order of drops can make one dangle.
#[test]
fn a_buffer_outliving_its_engine_stays_valid() {
    let Some(e) = engine_with(Some(1), AllocatorBackend::default()) else {
        return;
    };
    let k = e.kernel_glsl("copy_plus_one", COPY_PLUS_ONE, None).unwrap();
    let x = e.buffer_from_slice(&[1.0f32, 2.0, 3.0]).unwrap();
    let mut y = e.buffer::<f32>(3).unwrap();
    e.run(
        &k,
        Args::new().input(&x).output(&mut y).push(&3u32),
        IndexSpace::D1(3),
        &Scheduler::hguided(),
        Devices::GPU,
    )
    .unwrap();
    // The instance, kept to read the validation log at the end.
    let instance = e.device().instance().clone();
    drop(k);
    drop(e);
    y[0] += 10.0;
    assert_eq!(&y[..], &[12.0, 3.0, 4.0]);
    assert_eq!(&x[..], &[1.0, 2.0, 3.0]);
    drop(x);
    drop(y);
    let log = instance.validation_log();
    assert_eq!(log.errors(), 0, "{:?}", log.error_messages());
}

/// A kernel whose work-group (shared) memory exceeds the device's
/// `maxComputeSharedMemorySize` is refused with an interface error naming
/// the limit, before any driver sees it; one within the limit builds.
#[test]
fn shared_memory_past_the_device_limit_is_refused() {
    let Some(e) = engine() else { return };
    let glsl = |floats: u64| {
        format!(
            "#version 450
layout(local_size_x = 64) in;
layout(std430, binding = 0) buffer O {{ float o[]; }};
shared float s[{floats}];
void main() {{ s[gl_LocalInvocationID.x] = 1.0; barrier(); o[gl_GlobalInvocationID.x] = s[63u - gl_LocalInvocationID.x]; }}"
        )
    };
    e.kernel_glsl("small", &glsl(64), None).unwrap();
    let err = e.kernel_glsl("huge", &glsl(1 << 28), None).unwrap_err();
    assert!(
        matches!(&err, coexec::Error::Interface(m) if m.contains("maxComputeSharedMemorySize")),
        "{err}"
    );
}
