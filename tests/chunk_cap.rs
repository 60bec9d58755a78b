//! A CPU worker's chunk takes at most an eighth of its package's unstarted
//! units: on a kernel whose first units are cheap, a worker no longer
//! starts its whole package in one chunk, out of an idle GPU's reach.

#![cfg(feature = "glsl")]

mod common;

use coexec::{DeviceKind, EngineOptions};

/// Six first runs (fresh kernel objects) of a kernel whose CPU side costs
/// a worker 1 ms per work-group past the first 64: the one worker's
/// second package, sized from the cheap units, reaches the costly ones,
/// and the GPU, done with its own packages within milliseconds, takes
/// what the worker has not started. Without the cap the worker's third
/// chunk took all of its package left (about 190 costly units) in about
/// half of the runs.
#[test]
fn a_worker_leaves_most_of_its_costly_units_to_an_idle_gpu() {
    let Some(e) = common::engine_placed(EngineOptions::default().memory, 1) else {
        return;
    };
    if e.gpu_count() == 0 {
        eprintln!("skipping: needs a GPU");
        return;
    }
    if ["COEXEC_CHUNK_CAP", "COEXEC_STEAL"]
        .iter()
        .any(|v| std::env::var(v).is_ok())
    {
        return;
    }
    for run in 0..6 {
        let (r, _) = common::first_costly_fill(&e, &format!("chunk_cap_fill{run}"));
        let cpu = r
            .devices
            .iter()
            .position(|d| d.kind == DeviceKind::Cpu)
            .expect("a CPU report");
        // The costly work-groups the worker ran.
        let costly: u64 = r
            .packages
            .iter()
            .filter(|p| p.device == cpu)
            .map(|p| {
                let groups = p.items.start / 64..p.items.end.div_ceil(64);
                groups.filter(|&g| g >= common::FILL_CHEAP).count() as u64
            })
            .sum();
        // Its package reached about 190 of them; an eighth is about 24,
        // and the GPU takes the rest as soon as it is idle.
        assert!(
            costly < 96,
            "run {run}: the worker ran {costly} costly units: {r:#?}"
        );
    }
    common::assert_validation_clean(&e);
}
