//! `COEXEC_STEAL=0` turns work stealing off: packages run whole, as
//! claimed. Its own test binary, because it sets the environment of the
//! process before any engine exists.

mod common;

use coexec::AllocatorBackend;
use common::{engine_with, run_slow_first_half};

#[test]
fn with_coexec_steal_0_nothing_is_split() {
    // SAFETY: the only test of this binary, run before any other thread of
    // it reads the environment.
    unsafe { std::env::set_var("COEXEC_STEAL", "0") };
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
