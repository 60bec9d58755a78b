//! `COEXEC_STEAL=0` turns work stealing off: packages run whole, as
//! claimed. The engine reads the variable once per process, so the test
//! runs itself again in a child process whose environment sets it (no test
//! writes its own process's environment, which would race other threads).

mod common;

use coexec::AllocatorBackend;
use common::{engine_with, run_slow_first_half};

#[test]
fn with_coexec_steal_0_nothing_is_split() {
    if std::env::var("COEXEC_STEAL").as_deref() != Ok("0") {
        let status = std::process::Command::new(std::env::current_exe().expect("test binary"))
            .args([
                "--exact",
                "with_coexec_steal_0_nothing_is_split",
                "--nocapture",
            ])
            .env("COEXEC_STEAL", "0")
            .status()
            .expect("the test binary runs again");
        assert!(status.success(), "the child run failed: {status}");
        return;
    }
    let Some(e) = engine_with(Some(2), AllocatorBackend::default()) else {
        return;
    };
    const UNITS: u64 = 40;
    // The first half is slow: with stealing, the worker of the second half
    // would take part of it (see tests/coexec.rs).
    let r = run_slow_first_half(&e, UNITS, std::time::Duration::from_millis(1));
    assert!(r.packages.iter().all(|p| !p.stolen), "{:?}", r.packages);
    let mut sizes: Vec<u64> = r
        .packages
        .iter()
        .map(|p| p.units.end - p.units.start)
        .collect();
    sizes.sort_unstable();
    assert_eq!(sizes, vec![UNITS / 2, UNITS / 2]);
}
