//! Dev run 32's probe: eight first runs (fresh kernel objects) of the
//! costly fill kernel (tests/common: 1 ms a work-group on the CPU past the
//! first 64) on lavapipe with one CPU worker, staged memory, printing each
//! run's time (the report's) and packages (device, work-groups, start-end, S: stolen).
//! Run: cp docs/benchmarks/dev/run32/probe.rs tests/zz_probe.rs &&
//!   [COEXEC_CHUNK_CAP=0] cargo test --release --features glsl \
//!   --test zz_probe -- --nocapture | grep ^RUN

#![cfg(feature = "glsl")]

mod common;

use coexec::MemoryPlacement;

#[test]
fn probe() {
    let Some(e) = common::engine_placed(MemoryPlacement::Staged, 1) else {
        return;
    };
    for run in 0..8 {
        let (r, _) = common::first_costly_fill(&e, &format!("probe_fill{run}"));
        let mut s = String::new();
        for p in &r.packages {
            s += &format!(
                " [{} {}..{} {:.1}-{:.1}ms{}]",
                p.device,
                p.items.start / 64,
                p.items.end / 64,
                p.start_s * 1e3,
                p.end_s * 1e3,
                if p.stolen { " S" } else { "" }
            );
        }
        eprintln!("RUN {run} {:.1} ms:{s}", r.time_s * 1e3);
    }
}
