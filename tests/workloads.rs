//! The benchmark kernels at their quick sizes: every one verifies on the
//! CPU alone, the GPU alone, and both under each scheduler.

mod common;

use coexec::workloads::{self, rap};
use coexec::{Devices, Scheduler};
use common::{assert_validation_clean, engine};

fn runs_and_verifies(name: &str) {
    let Some(e) = engine() else { return };
    let size = workloads::quick_size(name).expect("a quick size");
    let mut w = workloads::create(name, &e, Some(size)).expect("workload");
    let cases = [
        ("cpu", Devices::CPU, Scheduler::hguided()),
        ("gpu", Devices::GPU, Scheduler::hguided()),
        ("all hguided", Devices::ALL, Scheduler::hguided()),
        (
            "all dynamic:13",
            Devices::ALL,
            Scheduler::Dynamic { packages: 13 },
        ),
        (
            "all static",
            Devices::ALL,
            Scheduler::Static { powers: None },
        ),
    ];
    for (label, devices, scheduler) in cases {
        let report = w
            .run(&e, &scheduler, devices)
            .unwrap_or_else(|err| panic!("{name} {size} {label}: {err}"));
        let v = w.verify();
        assert!(v.ok, "{name} {size} {label}: {v:?}");
        assert!(v.checked > 0, "{name} {label}: nothing checked");
        let items: u64 = report.devices.iter().map(|d| d.items).sum();
        assert_eq!(items, w.space().items(), "{name} {label}: items covered");
    }
    assert_validation_clean(&e);
}

#[test]
fn gaussian() {
    runs_and_verifies("gaussian");
}

#[test]
fn matmul() {
    runs_and_verifies("matmul");
}

#[test]
fn taylor() {
    runs_and_verifies("taylor");
}

#[test]
fn binomial() {
    runs_and_verifies("binomial");
}

#[test]
fn nbody() {
    runs_and_verifies("nbody");
}

#[test]
fn ray() {
    runs_and_verifies("ray");
}

#[test]
fn rap() {
    runs_and_verifies("rap");
}

#[test]
fn every_name_has_sizes_and_unknown_names_are_refused() {
    for name in workloads::NAMES {
        assert!(workloads::default_size(name).is_some(), "{name}");
        assert!(workloads::quick_size(name).is_some(), "{name}");
    }
    assert_eq!(workloads::default_size("nope"), None);
    assert_eq!(workloads::quick_size("nope"), None);
    let Some(e) = engine() else { return };
    let err = workloads::create("nope", &e, None).err().expect("an error");
    assert!(err.contains("rap"), "{err}");
}

#[test]
fn rap_work_grows_along_the_range() {
    for n in [3_000u64, 1 << 16, 1 << 22] {
        let work: Vec<u64> = (0..n).map(|i| rap::rap_work(i, n)).collect();
        assert!(
            work.windows(2).all(|w| w[0] <= w[1]),
            "n = {n}: work per item must not decrease"
        );
        let tenth = (n / 10) as usize;
        let first: u64 = work[..tenth].iter().sum();
        let last: u64 = work[work.len() - tenth..].iter().sum();
        assert!(
            last > 3 * first,
            "n = {n}: last 10% {last} vs first 10% {first}"
        );
        // Every later tenth costs more than the one before.
        let tenths: Vec<u64> = work.chunks(tenth).map(|c| c.iter().sum()).collect();
        assert!(
            tenths[..10].windows(2).all(|w| w[0] < w[1]),
            "n = {n}: {tenths:?}"
        );
        assert_eq!(rap::rap_budget(n - 1, n) as usize, rap::MAX_BUDGET);
    }
}
