//! A device's cold first package must not distort its learned cost model:
//! two GPUs (the one lavapipe device opened twice, see `tests/multi.rs`)
//! whose first packages of a kernel each take tens of milliseconds longer
//! (the test hook `Engine::delay_cold_gpu_packages`, as a pipeline's first
//! use on a discrete GPU does) both take packages in the warm runs after
//! the cold one, and the costs written to the profile carry no trace of
//! the delay.
//!
//! Its own test binary: it turns the learner's fallback off for the
//! process (`COEXEC_FALLBACK=0`). Two copies of one lavapipe device share
//! the host's cores, so one alone is as fast as both, and the learner
//! would rightly run one alone; without it, the split is the cost model's
//! and the plan's.
//!
//! Needs the test-only hooks: `cargo test --features test-hooks`.

#![cfg(feature = "glsl")]
#![cfg(feature = "test-hooks")]

mod common;

use coexec::{Args, Devices, EngineOptions, IndexSpace, Scheduler, Validation};
use std::time::Duration;

/// Rounds of the hash kernel (see `common::hash_glsl`).
const ROUNDS: u32 = 256;

fn hash(i: u32) -> u32 {
    common::hash(i, ROUNDS)
}

/// The delay of each GPU's cold package: thousands of times a warm
/// package's fixed cost on lavapipe, and about twenty times the most that
/// sharing lavapipe's threads put in a fitted fixed cost (see the profile
/// check).
const DELAY: Duration = Duration::from_millis(200);

#[test]
fn after_a_cold_first_package_both_gpus_take_work() {
    // Set before the engine exists, in a binary of one test: nothing else
    // reads the environment concurrently.
    std::env::set_var("COEXEC_FALLBACK", "0");
    let dir = common::TempDir::new("cold-start");
    let Some(e) = common::engine_from(EngineOptions {
        workers: Some(1),
        validation: Validation::IfAvailable,
        gpu_timeout: Duration::from_secs(2),
        duplicate_devices: 2,
        pipeline_cache_dir: Some(dir.to_path_buf()),
        profiles: true,
        ..Default::default()
    }) else {
        return;
    };
    assert!(e.gpu_count() >= 2, "{} GPUs", e.gpu_count());
    e.delay_cold_gpu_packages(Some(DELAY));
    let k = common::hash_kernel(&e, "cold_start", ROUNDS);
    let n = 1u32 << 17;
    let mut out = e.buffer_from_slice(&vec![0u32; n as usize]).unwrap();
    let mut shares = Vec::new();
    for run in 0..6 {
        let r = e
            .run(
                &k,
                Args::new().output(&mut out).push(&n),
                IndexSpace::D1(u64::from(n)),
                &Scheduler::hguided(),
                Devices::GPU,
            )
            .unwrap();
        for (i, &v) in out.iter().enumerate().step_by(97) {
            assert_eq!(v, hash(i as u32), "item {i} of run {run}");
        }
        let items: Vec<u64> = r.devices.iter().map(|d| d.items).collect();
        assert_eq!(items.iter().sum::<u64>(), u64::from(n), "{r:?}");
        shares.push(items);
    }
    // The cold run splits however its probes fell; every warm run uses
    // both GPUs.
    for (run, items) in shares.iter().enumerate().skip(1) {
        assert!(
            items.len() == 2 && items.iter().all(|&i| i > 0),
            "warm run {run}: items per GPU {items:?} (all runs: {shares:?})"
        );
    }
    common::assert_validation_clean(&e);
    // The profile is on disk once the engine is gone (it is written off
    // the runs' path).
    drop((k, e));
    // The GPUs' costs in the profile (slots 1 and 2): their fixed cost
    // is far below the cold delay. Not a warm package's alone: the two
    // copies share lavapipe's threads, so where each takes one large
    // package (each its share of an even finish) the two run side by
    // side, each package's time holds part of the other's, and a fit over
    // two or three such sizes puts milliseconds of it in the fixed cost
    // (0.03-10.5 ms measured on a 2-core host with a 40 ms delay).
    let overheads = profile_overheads(&dir.join("profiles"));
    assert_eq!(overheads.len(), 2, "{overheads:?}");
    for o in &overheads {
        assert!(*o < DELAY.as_secs_f64() / 8.0, "{overheads:?}");
    }
}

/// The fixed costs of the GPU slots (`cost SLOT OVERHEAD RATE`, slot >= 1)
/// in the one profile under `dir`.
fn profile_overheads(dir: &std::path::Path) -> Vec<f64> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|f| f.ok().map(|f| f.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "profile"))
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    let text = std::fs::read_to_string(files.pop().unwrap()).unwrap();
    text.lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            match f.as_slice() {
                ["cost", slot, overhead, _] if *slot != "0" => overhead.parse().ok(),
                _ => None,
            }
        })
        .collect()
}
