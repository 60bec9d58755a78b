//! The benchmark kernels at their quick sizes: every one verifies on the
//! CPU alone, the GPU alone, and both under each scheduler.

mod common;

use coexec::workloads::{self, rap, Workload};
use coexec::{Devices, Scheduler};
use common::{assert_validation_clean, engine};

fn runs_and_verifies(name: &str) {
    let Some(e) = engine() else { return };
    let size = workloads::quick_size(name).expect("a quick size");
    let mut w = workloads::create(name, &e, Some(size)).expect("workload");
    verify_under_every_configuration(&e, name, &size.to_string(), &mut *w);
}

/// Runs `w` on the CPU alone, the GPU alone and both under each scheduler;
/// every run verified and every item covered once.
fn verify_under_every_configuration(
    e: &coexec::Engine,
    name: &str,
    size: &str,
    w: &mut dyn Workload,
) {
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
            .run(e, &scheduler, devices)
            .unwrap_or_else(|err| panic!("{name} {size} {label}: {err}"));
        let v = w.verify();
        assert!(v.ok, "{name} {size} {label}: {v:?}");
        assert!(v.checked > 0, "{name} {label}: nothing checked");
        let items: u64 = report.devices.iter().map(|d| d.items).sum();
        assert_eq!(items, w.space().items(), "{name} {label}: items covered");
    }
    assert_validation_clean(e);
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

/// The subgroup formulation (8 lanes per option: lavapipe's subgroups are 8
/// wide) prices like the reference under every configuration, including a
/// size that ends inside a work-group; a device that cannot run a variant
/// refuses it with a typed error.
#[test]
fn binomial_subgroup_variant() {
    use workloads::binomial::{Binomial, Variant};
    let Some(e) = engine() else { return };
    let info = e.device_info();
    for lanes in [8, 32] {
        let v = Variant::Subgroup(lanes);
        if !v.supported_by(info) {
            let err = Binomial::with_variant(&e, 100, v).err().expect("refused");
            assert!(matches!(err, coexec::Error::Interface(_)), "{err}");
            continue;
        }
        for n in [1u64, 37, 1500] {
            let mut w = Binomial::with_variant(&e, n, v).expect("workload");
            assert_eq!(w.variant(), v);
            verify_under_every_configuration(&e, "binomial", &format!("{n} x{lanes}"), &mut w);
        }
    }
}

/// One SPIR-V serves every device of an engine: the subgroup variant only
/// where each of them runs it (an NVIDIA GPU's subgroups of 32 beside
/// lavapipe's 8 as the SPIR-V CPU device give the private variant).
#[test]
fn binomial_variant_suits_every_device() {
    use coexec::DeviceType;
    use workloads::binomial::Variant;
    let Some(e) = engine() else { return };
    let mut gpu = e.device_info().clone();
    gpu.device_type = DeviceType::Discrete;
    gpu.subgroup_size = 32;
    gpu.subgroup_shuffle_relative = true;
    let mut cpu = gpu.clone();
    cpu.device_type = DeviceType::Cpu;
    cpu.subgroup_size = 8;
    assert_eq!(Variant::for_devices([&gpu]), Variant::Subgroup(32));
    assert_eq!(Variant::for_devices([&gpu, &gpu]), Variant::Subgroup(32));
    assert_eq!(Variant::for_devices([&gpu, &cpu]), Variant::Private);
    assert_eq!(Variant::for_devices([&cpu]), Variant::Private);
    assert_eq!(Variant::for_devices(std::iter::empty()), Variant::Private);
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
fn spmv() {
    runs_and_verifies("spmv");
}

#[test]
fn gather() {
    runs_and_verifies("gather");
}

#[test]
fn blackscholes() {
    runs_and_verifies("blackscholes");
}

#[test]
fn jacobi() {
    runs_and_verifies("jacobi");
}

#[test]
fn histogram() {
    runs_and_verifies("histogram");
}

#[test]
fn collatz() {
    runs_and_verifies("collatz");
}

/// Runs `w` on the GPU, checks that it verifies, then that it fails once
/// `corrupt` changed one output element (and again with an unwritten one).
fn wrong_output_fails<W: Workload>(mut w: W, corrupt: impl Fn(&mut W, bool)) {
    let Some(e) = engine() else { return };
    for unwritten in [false, true] {
        w.run(&e, &Scheduler::hguided(), Devices::GPU)
            .expect("the run");
        assert!(w.verify().ok, "{}: {:?}", w.name(), w.verify());
        corrupt(&mut w, unwritten);
        let v = w.verify();
        assert!(!v.ok, "{} (unwritten: {unwritten}): {v:?}", w.name());
        assert!(v.mismatches >= 1, "{}: {v:?}", w.name());
    }
}

#[test]
fn comparable_kernels_catch_a_wrong_element() {
    use coexec::workloads::{BlackScholes, Collatz, Gather, Histogram, Jacobi, Spmv};
    let Some(e) = engine() else { return };
    // Sizes at which the verification checks every element.
    wrong_output_fails(Spmv::new(&e, 5_000).unwrap(), |w, u| {
        let y = w.y_mut();
        y[1234] = if u { f32::NAN } else { y[1234] + 1e-3 };
    });
    wrong_output_fails(Gather::new(&e, 5_000).unwrap(), |w, u| {
        let s = w.sums_mut();
        s[4999] = if u { u32::MAX } else { s[4999] ^ 1 };
    });
    wrong_output_fails(BlackScholes::new(&e, 5_000).unwrap(), |w, u| {
        let p = w.puts_mut();
        p[0] = if u { f32::NAN } else { p[0] + 0.5 };
    });
    wrong_output_fails(Jacobi::new(&e, 97, 61).unwrap(), |w, u| {
        let g = w.grid_mut();
        g[61 * 50 + 7] = if u {
            f32::NAN
        } else {
            g[61 * 50 + 7] * (1.0 + 1e-5) + 1e-5
        };
    });
    // One count moved from a bin to the next keeps the group's total: only
    // the summed histogram catches it.
    wrong_output_fails(Histogram::new(&e, 3 * 256).unwrap(), |w, u| {
        let p = w.partials_mut();
        if u {
            p[300] = u32::MAX;
        } else {
            p[300] -= 1;
            p[301] += 1;
        }
    });
    wrong_output_fails(Collatz::new(&e, 5_000).unwrap(), |w, u| {
        let s = w.steps_mut();
        s[17] = if u { u32::MAX } else { s[17] + 2 };
    });
    assert_validation_clean(&e);
}

#[test]
fn collatz_matches_the_128_bit_reference_and_flags_overflow() {
    use coexec::workloads::collatz::{start, steps, steps_reference, OVERFLOW, START_BITS};
    for x in [1u64, 2, 3, 7, 27, 97, 8_528_817_511, (1 << START_BITS) - 1] {
        assert_eq!(steps(x), steps_reference(x), "{x}");
    }
    assert_eq!(steps(27), 111);
    assert_eq!(steps(1), 0);
    // Odd and above (2^64 - 2) / 3: 3x + 1 leaves 64 bits.
    let big = u64::MAX / 3 + 2;
    assert_eq!(steps(big | 1), OVERFLOW);
    assert_eq!(steps_reference(big | 1), OVERFLOW);
    // Starts are log-uniform: small and large ones among the first 1000.
    let s: Vec<u64> = (0..1000).map(start).collect();
    assert!(s.iter().all(|x| (1..1 << START_BITS).contains(x)));
    assert!(s.iter().any(|&x| x < 1 << 8) && s.iter().any(|&x| x >= 1 << 32));
}

#[test]
fn spmv_rows_follow_a_power_law() {
    use coexec::workloads::spmv::{row_len, MAX_ROW, MIN_ROW};
    let lens: Vec<u32> = (0..1u64 << 16).map(row_len).collect();
    assert!(lens.iter().all(|&l| (MIN_ROW..=MAX_ROW).contains(&l)));
    let short = lens.iter().filter(|&&l| l < 8).count();
    let long = lens.iter().filter(|&&l| l >= 1000).count();
    // P(len >= 8) = (2/8)^1.1 = 0.22; P(len >= 1000) = 0.0011.
    assert!(short > lens.len() * 7 / 10, "{short}");
    assert!((20..200).contains(&long), "{long}");
}

#[test]
fn every_name_has_sizes_and_unknown_names_are_refused() {
    for name in workloads::COMPARABLE {
        assert!(!workloads::NAMES.contains(name), "{name} in both sets");
        assert!(workloads::comparable_default_size(name).is_some(), "{name}");
        assert!(workloads::comparable_quick_size(name).is_some(), "{name}");
        assert!(workloads::check_name(name).is_ok(), "{name}");
    }
    assert_eq!(workloads::comparable_default_size("rap"), None);
    for name in workloads::all_names() {
        assert!(workloads::default_size(name).is_some(), "{name}");
        assert!(workloads::quick_size(name).is_some(), "{name}");
    }
    assert_eq!(workloads::default_size("nope"), None);
    assert_eq!(workloads::quick_size("nope"), None);
    let Some(e) = engine() else { return };
    let err = workloads::create("nope", &e, None).err().expect("an error");
    assert!(err.contains("rap") && err.contains("collatz"), "{err}");
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
