//! A staged GPU's stolen packages write the host copies themselves (their
//! outputs bound to the host bytes): nothing is downloaded for them, the
//! output is right, and the mirrors do not count those bytes as theirs (a
//! later GPU run that reads the output uploads them).

#![cfg(feature = "glsl")]

mod common;

use coexec::{Args, Devices, IndexSpace, MemoryPlacement, Scheduler};

/// `y[i] = x[i] + 7`.
const ADD: &str = "#version 450
layout(local_size_x = 64) in;
layout(std430, binding = 0) readonly buffer X { uint x[]; };
layout(std430, binding = 1) writeonly buffer Y { uint y[]; };
layout(push_constant) uniform P { uint n; } p;
void main() {
    uint i = gl_GlobalInvocationID.x;
    if (i < p.n) y[i] = x[i] + 7u;
}";

#[test]
fn stolen_packages_write_the_host_copies_themselves() {
    let Some(e) = common::engine_placed(MemoryPlacement::Staged, 1) else {
        return;
    };
    if e.gpu_count() == 0 || e.memory_placement() != MemoryPlacement::Staged {
        eprintln!("skipping: needs a staged GPU");
        return;
    }
    if std::env::var("COEXEC_ZERO_COPY_STEALS").is_ok() || std::env::var("COEXEC_STEAL").is_ok() {
        return;
    }
    let add = e.kernel_glsl("zc_steal_add", ADD, None).unwrap();
    let n = common::FILL_UNITS * 64;
    // Up to four runs, each a kernel's first (a fresh kernel object), in
    // which the worker's second claim, sized from the cheap units, is one
    // the GPU, done with its own, steals back.
    let mut stole = false;
    for run in 0..4 {
        let (r, out) = common::first_costly_fill(&e, &format!("zc_steal_fill{run}"));
        let gpu_dev = r
            .devices
            .iter()
            .position(|d| d.kind == coexec::DeviceKind::Gpu)
            .expect("a GPU report");
        let (mut own, mut stolen) = (0u64, 0u64);
        for p in r.packages.iter().filter(|p| p.device == gpu_dev) {
            let items = p.items.end - p.items.start;
            if p.stolen {
                stolen += items;
            } else {
                own += items;
            }
        }
        // Its records in the order its packages ran (a stolen package is
        // done before an older one whose download is in flight).
        let starts: Vec<f64> = r
            .packages
            .iter()
            .filter(|p| p.device == gpu_dev)
            .map(|p| p.start_s)
            .collect();
        assert!(starts.windows(2).all(|w| w[0] <= w[1]), "{starts:?}");
        // Only its own packages' outputs came down.
        assert_eq!(
            r.devices[gpu_dev].transfers.download_bytes,
            4 * own,
            "{r:#?}"
        );
        stole |= stolen > 0;
        // The mirror does not hold what stolen (or CPU) packages wrote: a
        // GPU run reading the output uploads it, and sees the host's bytes.
        let mut y = e.buffer::<u32>(n as usize).unwrap();
        let r2 = e
            .run(
                &add,
                Args::new().input(&out).output(&mut y).push(&(n as u32)),
                IndexSpace::D1(n),
                &Scheduler::hguided(),
                Devices::GPU,
            )
            .unwrap();
        for (i, &v) in y.iter().enumerate() {
            assert_eq!(
                v,
                common::fill(i as u64).wrapping_add(7),
                "run {run}, item {i}"
            );
        }
        assert_eq!(
            r2.devices[0].transfers.upload_bytes,
            4 * (n - own),
            "{r2:#?}"
        );
        if stole {
            break;
        }
    }
    assert!(stole, "the GPU never stole in four first runs");
    common::assert_validation_clean(&e);
}
