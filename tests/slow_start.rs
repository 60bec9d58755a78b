//! An unmeasured CPU's first packages in a kernel's first run: beside a
//! GPU whose cold first package keeps it unmeasured (the test hook
//! `Engine::delay_cold_gpu_packages`, as a pipeline's first use on a
//! discrete GPU does), the CPU's workers grow their packages from the
//! probe.
//!
//! Needs the test-only hooks: `cargo test --features test-hooks`.

#![cfg(feature = "glsl")]
#![cfg(feature = "test-hooks")]

mod common;

use coexec::{Args, Devices, EngineOptions, IndexSpace, Scheduler, Validation};
use std::time::Duration;

/// Rounds of the hash kernel (see `common::hash_glsl`).
const ROUNDS: u32 = 256;

/// The delay of the GPU's cold package: it stays unmeasured that long.
const DELAY: Duration = Duration::from_millis(40);

/// A kernel's first run, beside a GPU whose cold first package keeps it
/// unmeasured: the CPU's workers grow their packages from the probe, each
/// at most twice its last (`Plan::slow_start`), instead of the share of a
/// device as fast as the others (a quarter of the run's rest per worker
/// here, with two workers and HGuided's k = 2).
#[test]
fn an_unmeasured_cpu_grows_from_its_probe_in_a_first_run() {
    let Some(e) = common::engine_from(EngineOptions {
        workers: Some(2),
        validation: Validation::IfAvailable,
        gpu_timeout: Duration::from_secs(2),
        ..Default::default()
    }) else {
        return;
    };
    if e.gpu_count() == 0 || e.workers() < 2 {
        eprintln!("skipping: needs a GPU and two CPU workers");
        return;
    }
    e.delay_cold_gpu_packages(Some(DELAY));
    let k = common::hash_kernel(&e, "slow_start", ROUNDS);
    let n = 1u32 << 17;
    let mut out = e.buffer_from_slice(&vec![0u32; n as usize]).unwrap();
    let r = e
        .run(
            &k,
            Args::new().output(&mut out).push(&n),
            IndexSpace::D1(u64::from(n)),
            &Scheduler::hguided(),
            Devices::ALL,
        )
        .unwrap();
    for (i, &v) in out.iter().enumerate() {
        assert_eq!(v, common::hash(i as u32, ROUNDS), "item {i}");
    }
    let cpu_dev = r
        .devices
        .iter()
        .position(|d| d.kind == coexec::DeviceKind::Cpu)
        .expect("the CPU took part");
    // The GPU's first package ends after the delay: until then it is
    // unmeasured, and every fresh CPU package is sized by the rule.
    let gpu_first_end = r
        .packages
        .iter()
        .filter(|p| p.device != cpu_dev)
        .map(|p| p.end_s)
        .fold(f64::INFINITY, f64::min);
    assert!(gpu_first_end >= DELAY.as_secs_f64(), "{gpu_first_end}");
    let mut fresh: Vec<_> = r
        .packages
        .iter()
        .filter(|p| p.device == cpu_dev && !p.stolen && p.start_s < gpu_first_end)
        .collect();
    fresh.sort_by(|a, b| a.start_s.total_cmp(&b.start_s));
    assert!(fresh.len() >= 2, "{:?}", r.packages);
    for lane in 0..2 {
        let sizes: Vec<u64> = fresh
            .iter()
            .filter(|p| p.lane == lane)
            .map(|p| p.units.end - p.units.start)
            .collect();
        for (i, &s) in sizes.iter().enumerate() {
            // The i-th fresh package of a worker: at most 2^i units (the
            // probe, or a first claim after it, is one).
            assert!(s <= 1 << i.min(40), "worker {lane}: sizes {sizes:?}");
        }
    }
    common::assert_validation_clean(&e);
}
