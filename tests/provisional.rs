//! A GPU that ran only its cold first package of a kernel's first run is
//! known at the second run: its cold package's execution time, from the
//! GPU's own timestamps, is its provisional cost. Here the GPU's cold
//! package is held back (the test hook `Engine::delay_cold_gpu_packages`,
//! as a pipeline's first use on a discrete GPU does) while the CPU runs
//! the rest of the first run. Without the provisional cost the GPU would
//! be unmeasured at the second run, and its first package there a probe of
//! one unit. A provisional cost is never written to the kernel's profile.
//!
//! (Whether the second run is then the GPU's alone depends on the cold
//! package's execution time, which on lavapipe varies from run to run: its
//! first dispatch of a shader can take hundreds of times the next one.
//! The decision itself is tested in `learn.rs`.)
//!
//! Needs the test-only hooks: `cargo test --features test-hooks`.

#![cfg(all(feature = "glsl", feature = "test-hooks"))]

mod common;

use coexec::{
    Args, Buffer, DeviceKind, Devices, Engine, EngineOptions, IndexSpace, Kernel, Package, Report,
    Scheduler, Validation,
};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// Rounds of the hash kernel (see `common::hash_glsl`).
const ROUNDS: u32 = 64;

fn hash(i: u32) -> u32 {
    common::hash(i, ROUNDS)
}

/// Items of each run.
const N: u32 = 1 << 15;

/// What the CPU's twin waits per item: the CPU alone takes about a third
/// of a second for the run, tens of times the GPU's time.
const CPU_WAIT_PER_ITEM: Duration = Duration::from_micros(10);

/// The delay of the GPU's cold package: several times the CPU's whole run.
const COLD_DELAY: Duration = Duration::from_millis(1500);

fn engine(profile_dir: Option<&Path>) -> Option<Engine> {
    let e = common::engine_from(EngineOptions {
        workers: Some(1),
        validation: Validation::IfAvailable,
        gpu_timeout: Duration::from_secs(5),
        pipeline_cache_dir: profile_dir.map(Path::to_path_buf),
        profiles: profile_dir.is_some(),
        ..Default::default()
    })?;
    e.delay_cold_gpu_packages(Some(COLD_DELAY));
    Some(e)
}

fn kernel(e: &Engine) -> Kernel {
    let cpu = Arc::new(|pkg: &Package, args: &mut coexec::CpuArgs<'_>| {
        let out = args.output::<u32>(0);
        std::thread::sleep(CPU_WAIT_PER_ITEM * out.len() as u32);
        for (k, v) in out.iter_mut().enumerate() {
            *v = hash(pkg.items.start as u32 + k as u32);
        }
    });
    e.kernel_glsl("provisional", &common::hash_glsl(ROUNDS), Some(cpu))
        .unwrap()
}

/// One run of `k` on every device under HGuided without hints, its output
/// checked.
fn run(e: &Engine, k: &Kernel, out: &mut Buffer<u32>) -> Report {
    let r = e
        .run(
            k,
            Args::new().output(out).push(&N),
            IndexSpace::D1(u64::from(N)),
            &Scheduler::hguided(),
            Devices::ALL,
        )
        .unwrap();
    for (i, &v) in out.iter().enumerate() {
        assert_eq!(v, hash(i as u32), "item {i}");
    }
    r
}

fn gpu_packages(r: &Report) -> usize {
    r.devices
        .iter()
        .filter(|d| d.kind == DeviceKind::Gpu)
        .map(|d| d.packages)
        .sum()
}

fn cpu_items(r: &Report) -> u64 {
    r.devices
        .iter()
        .filter(|d| d.kind == DeviceKind::Cpu)
        .map(|d| d.items)
        .sum()
}

/// An engine (profiles under `profile_dir`, if any), the kernel, its
/// output and its first run, in which the GPU ran its cold package only;
/// `None` without a GPU.
fn first_run(profile_dir: Option<&Path>) -> Option<(Engine, Kernel, Buffer<u32>, Report)> {
    let e = engine(profile_dir)?;
    if e.gpu_count() == 0 {
        return None;
    }
    let k = kernel(&e);
    let mut out = e.buffer_from_slice(&vec![0u32; N as usize]).unwrap();
    let first = run(&e, &k, &mut out);
    // The premise: the GPU ran its cold package only.
    assert_eq!(gpu_packages(&first), 1, "{first:?}");
    Some((e, k, out, first))
}

#[test]
fn a_gpu_known_only_by_its_cold_package_is_known_at_the_second_run() {
    let Some((e, k, mut out, first)) = first_run(None) else {
        return;
    };
    // ... and the CPU the rest.
    assert!(cpu_items(&first) > u64::from(N) / 2, "{first:?}");
    // Known: its first package of the second run is sized from its cost,
    // not a probe of one unit (what an unmeasured GPU claims first); and a
    // provisional cost never makes it sit out.
    let second = run(&e, &k, &mut out);
    let first_gpu_package = second
        .packages
        .iter()
        .filter(|p| p.device == 1)
        .min_by(|a, b| a.start_s.total_cmp(&b.start_s))
        .map(|p| p.units.end - p.units.start);
    assert!(first_gpu_package > Some(1), "{second:?}");
    common::assert_validation_clean(&e);
}

#[test]
fn a_provisional_cost_is_not_written_to_the_profile() {
    let dir = common::TempDir::new("provisional");
    let Some(ran) = first_run(Some(&dir)) else {
        return;
    };
    // The profile is on disk once the engine is gone.
    drop(ran);
    let text = std::fs::read_to_string(common::the_profile(&dir)).unwrap();
    let slots: Vec<&str> = text
        .lines()
        .filter_map(
            |l| match l.split_whitespace().collect::<Vec<_>>().as_slice() {
                ["cost", slot, _, _] => Some(*slot),
                _ => None,
            },
        )
        .collect();
    assert_eq!(slots, ["0"], "cost lines: {slots:?}");
}
