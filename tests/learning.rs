//! What the engine learns and decides before a run: a power of 0 honoured
//! from the first run, the single-device fallback when co-executing cannot
//! pay, and profiles that carry what was learned to the next process.

// Kernels here are GLSL compiled at run time: the lean build (no feature
// `glsl`) runs none of these tests (its kernels are SPIR-V: tests/workloads.rs).
#![cfg(feature = "glsl")]

mod common;

use coexec::{
    Args, DeviceKind, Devices, Engine, EngineOptions, IndexSpace, Kernel, Report, Scheduler,
    Validation,
};
use std::path::Path;
use std::time::Duration;

const N: u64 = 64 * 512;

fn engine_in(cache: Option<&Path>) -> Option<Engine> {
    common::engine_from(EngineOptions {
        workers: Some(1),
        validation: Validation::IfAvailable,
        pipeline_cache_dir: cache.map(Path::to_path_buf),
        ..Default::default()
    })
}

fn count_kernel(e: &Engine, cpu: std::sync::Arc<coexec::CpuFn>) -> Kernel {
    e.kernel_glsl("count", &common::count_glsl(64, 1, false), Some(cpu))
        .unwrap()
}

/// Runs the count kernel once over `N` items and checks every item ran once.
fn run(e: &Engine, k: &Kernel, sched: &Scheduler) -> Report {
    common::run_count(e, k, N, sched)
}

fn sat_out(r: &Report, kind: DeviceKind) -> bool {
    r.devices
        .iter()
        .any(|d| d.kind == kind && d.packages == 0 && d.declined_s == Some(f64::INFINITY))
}

#[test]
fn a_power_of_zero_is_honoured_from_the_first_run() {
    let Some(e) = engine_in(None) else { return };
    for (sched, idle) in [
        (
            Scheduler::Static {
                powers: Some(vec![1.0, 0.0]),
            },
            DeviceKind::Gpu,
        ),
        (
            Scheduler::Static {
                powers: Some(vec![0.0, 1.0]),
            },
            DeviceKind::Cpu,
        ),
        (
            Scheduler::HGuided {
                powers: Some(vec![1.0, 0.0]),
                k: 2.0,
                min_package: 1,
            },
            DeviceKind::Gpu,
        ),
    ] {
        // A fresh kernel: nothing measured, yet the idle device takes
        // nothing (it used to steal from the other until measured).
        let k = count_kernel(&e, common::count_cpu());
        let r = run(&e, &k, &sched);
        assert!(sat_out(&r, idle), "{sched}: {:#?}", r.devices);
        let worked: u64 = r.devices.iter().map(|d| d.items).sum();
        assert_eq!(worked, N);
        assert_eq!(r.balance(), 1.0);
        // The device that sat out comes last in the report.
        assert_eq!(r.devices.last().unwrap().kind, idle);
    }
    common::assert_validation_clean(&e);
}

#[test]
fn hguided_falls_back_to_one_device_once_co_execution_cannot_pay() {
    let Some(e) = engine_in(None) else { return };
    // A CPU implementation thousands of times slower than any GPU: 50 ms a
    // work-group (a co-executed run, in which the CPU takes at least one,
    // measures slower than the GPU alone however loaded the machine).
    let k = count_kernel(&e, common::slow_count_cpu(Duration::from_millis(50), N));
    let sched = Scheduler::hguided();
    // The first run knows nothing: both devices take part (and measure).
    let first = run(&e, &k, &sched);
    assert!(first
        .devices
        .iter()
        .all(|d| d.declined_s != Some(f64::INFINITY)));
    // Once measured, the CPU sits the run out and its workers stay parked
    // (after the learner has measured the GPU alone against co-executing).
    let mut later = run(&e, &k, &sched);
    for _ in 0..8 {
        if sat_out(&later, DeviceKind::Cpu) {
            break;
        }
        later = run(&e, &k, &sched);
    }
    assert!(sat_out(&later, DeviceKind::Cpu), "{:#?}", later.devices);
    assert_eq!(later.devices[0].kind, DeviceKind::Gpu);
    assert_eq!(later.devices[0].items, N);
    // Hints, or another scheduler: no fallback.
    let r = run(&e, &k, &Scheduler::Dynamic { packages: 8 });
    assert!(!sat_out(&r, DeviceKind::Cpu));
}

/// The child of [`a_profile_written_by_one_process_is_used_by_the_next`]:
/// does nothing unless that test started it.
#[test]
fn profile_child_process() {
    let Some(dir) = std::env::var_os("COEXEC_TEST_PROFILE_CHILD") else {
        return;
    };
    let Some(e) = engine_in(Some(Path::new(&dir))) else {
        return;
    };
    let k = count_kernel(&e, common::count_cpu());
    let r = run(&e, &k, &Scheduler::hguided());
    println!("from_profile={}", r.from_profile);
    let ran: Vec<&str> = r
        .devices
        .iter()
        .filter(|d| d.items > 0)
        .map(|d| match d.kind {
            DeviceKind::Cpu => "cpu",
            _ => "gpu",
        })
        .collect();
    println!("first_ran={}", ran.join(","));
    for _ in 0..3 {
        run(&e, &k, &Scheduler::hguided());
    }
}

fn child(dir: &Path, profile_env: Option<&str>) -> Option<bool> {
    child_output(dir, profile_env)
        .lines()
        .find_map(|l| l.strip_prefix("from_profile="))
        .map(|v| v.trim() == "true")
}

/// The devices that took part in the child's first run (`cpu`, `gpu` or
/// both, comma-separated).
fn child_first_ran(dir: &Path) -> String {
    child_output(dir, None)
        .lines()
        .find_map(|l| l.strip_prefix("first_ran="))
        .unwrap_or_default()
        .trim()
        .to_string()
}

/// The configuration a profile measured fastest, as the devices it runs.
fn fastest_in_profile(text: &str) -> &'static str {
    let mut best = (f64::INFINITY, "");
    for line in text.lines() {
        let f: Vec<&str> = line.split_ascii_whitespace().collect();
        let (devices, t) = match f.as_slice() {
            ["time", "together", t] => ("cpu,gpu", t),
            ["time", "alone", "0", t] => ("cpu", t),
            ["time", "alone", _, t] => ("gpu", t),
            _ => continue,
        };
        let t: f64 = t.parse().unwrap();
        if t < best.0 {
            best = (t, devices);
        }
    }
    best.1
}

fn child_output(dir: &Path, profile_env: Option<&str>) -> String {
    let mut cmd = std::process::Command::new(std::env::current_exe().unwrap());
    cmd.args([
        "--exact",
        "profile_child_process",
        "--nocapture",
        "--test-threads=1",
    ])
    .env("COEXEC_TEST_PROFILE_CHILD", dir);
    match profile_env {
        Some(v) => cmd.env("COEXEC_PROFILE", v),
        None => cmd.env_remove("COEXEC_PROFILE"),
    };
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "{out:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn a_profile_written_by_one_process_is_used_by_the_next() {
    let dir = common::TempDir::new("profile-it");
    // No Vulkan device: the child prints nothing and there is nothing to test.
    let Some(first) = child(&dir, None) else {
        return;
    };
    assert!(!first, "nothing on disk yet");
    let file = common::the_profile(&dir);
    // It holds the devices' costs and the measured time of the
    // configuration the later runs used.
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(text.contains("\ncost "), "{text}");
    assert!(text.contains("\ntime "), "{text}");
    // The next process starts from it: its first run is the profile's
    // fastest configuration.
    let fastest = fastest_in_profile(&text);
    assert!(!fastest.is_empty(), "{text}");
    assert_eq!(child_first_ran(&dir), fastest, "{text}");
    assert_eq!(
        child(&dir, None),
        Some(true),
        "the next process starts from it"
    );
    // Off by the environment: neither read nor written.
    assert_eq!(child(&dir, Some("off")), Some(false));
    // A corrupt profile is ignored (a warning), and the run is still right;
    // it is then rewritten whole.
    std::fs::write(&file, "coexec-profile 1\nkey garbage\ncost x\n").unwrap();
    assert_eq!(child(&dir, None), Some(false));
    assert_eq!(child(&dir, None), Some(true));
}

/// `o[i] = x[i * 1031 % len] + 1` (1-D, work-groups of 64): each item
/// reads anywhere in `x`, so `x` is read whole (the default footprint).
const SCATTERED_GLSL: &str = "#version 450
layout(local_size_x = 64) in;
layout(std430, binding = 0) readonly buffer X { uint x[]; };
layout(std430, binding = 1) writeonly buffer O { uint o[]; };
layout(push_constant) uniform P { uint n; uint len; } p;
void main() {
    uint i = gl_GlobalInvocationID.x;
    if (i < p.n) { o[i] = x[(i * 1031u) % p.len] + 1u; }
}";

/// Runs [`SCATTERED_GLSL`] over `N` items of `x` (holding `data`) with
/// HGuided and checks it against the host.
fn run_scattered(e: &Engine, k: &Kernel, x: &coexec::Buffer<u32>, data: &[u32]) -> Report {
    run_scattered_on(e, k, x, data, Devices::ALL)
}

/// [`run_scattered`] on `devices`.
fn run_scattered_on(
    e: &Engine,
    k: &Kernel,
    x: &coexec::Buffer<u32>,
    data: &[u32],
    devices: Devices,
) -> Report {
    let len = data.len() as u32;
    let mut out = e.buffer::<u32>(N as usize).unwrap();
    let r = e
        .run(
            k,
            Args::new().input(x).output(&mut out).push(&[N as u32, len]),
            IndexSpace::D1(N),
            &Scheduler::hguided(),
            devices,
        )
        .unwrap();
    let want: Vec<u32> = (0..N as u32)
        .map(|i| data[(i.wrapping_mul(1031) % len) as usize].wrapping_add(1))
        .collect();
    assert!(out.iter().eq(want.iter()), "every item right");
    r
}

/// A profile's times were measured with the inputs resident on the GPU: a
/// new process's first run, which must bring a 16 MiB input up first, is
/// not the GPU alone that the profile measured fastest, but co-executed
/// (the GPU alone would wait for all of the upload); once the input is
/// resident, the profile's fastest runs.
#[test]
fn a_first_run_from_a_profile_counts_what_it_must_upload() {
    let Some(s) = Scattered::profiled("up", 4 << 20) else {
        return;
    };
    // What the profile says, made plain: both devices equally fast, and
    // the GPU alone twice as fast per unit as co-executing, inputs
    // resident.
    s.rewrite(&[
        "cost 0 0e0 1e6",
        "cost 1 0e0 1e6",
        "time together 2e-8",
        "time alone 1 1e-8",
        "time alone 0 1e-3",
    ]);
    let (e, k, x) = s.engine();
    // 16 MiB up at the seeded 25 GB/s: 0.67 ms, some 10 us per unit, which
    // the GPU alone pays whole and co-executing in part.
    // (Who ran what of a co-executed run depends on the threads' timing;
    // a device left out by the learner reports that it sat the run out.)
    let first = s.run(&e, &k, &x);
    assert!(first.from_profile);
    assert!(
        !sat_out(&first, DeviceKind::Cpu),
        "the first run co-executed"
    );
    // Once resident (a run of the GPU alone that the caller chose, which
    // the learner does not record, brings it up: the GPU's share of the
    // co-executed run may have been nothing on a loaded machine), the
    // profile's fastest, the GPU alone.
    run_scattered_on(&e, &k, &x, &s.data, Devices::GPU);
    let second = s.run(&e, &k, &x);
    assert!(
        sat_out(&second, DeviceKind::Cpu),
        "the GPU alone once resident"
    );
}

/// A profile whose writer ran the GPU alone from its second run on knows
/// co-executing only from its first run (uploads and one-time costs
/// paid), which the profile keeps: a new process's first run takes it
/// where it beat the GPU alone plus the GPU's upload, and the GPU alone
/// where it did not. The upload is priced at the bandwidth the profile
/// kept (its writer's), not the seed's.
#[test]
fn a_configuration_measured_only_on_a_first_run_counts_at_that() {
    // 32 MiB, which teaches the upload bandwidth.
    let Some(s) = Scattered::profiled("first", 8 << 20) else {
        return;
    };
    for kept in ["first ", "rates 1 "] {
        assert!(
            s.text().lines().any(|l| l.starts_with(kept)),
            "the writer's {kept:?} is kept: {}",
            s.text()
        );
    }
    // 32 MiB up: some microseconds a unit at the seed's 25 GB/s, a
    // fortieth of that at 1 TB/s.
    for (first_together, rates, co_executes) in [
        ("2e-8", "", true),
        ("1e-3", "", false),
        ("1e-6", "", true),
        ("1e-6", "rates 1 1e12 1e12", false),
    ] {
        s.rewrite(&[
            "cost 0 0e0 1e6",
            "cost 1 0e0 1e6",
            "time alone 1 1e-8",
            "time alone 0 1e-3",
            &format!("first together {first_together}"),
            rates,
        ]);
        let (e, k, x) = s.engine();
        let first = s.run(&e, &k, &x);
        assert!(first.from_profile);
        assert_eq!(
            !sat_out(&first, DeviceKind::Cpu),
            co_executes,
            "first together {first_together}, {rates:?}"
        );
    }
}

/// The scattered-read kernel over an input on staged engines that share
/// a profile directory: one engine ran it four times and wrote its
/// profile.
struct Scattered {
    dir: common::TempDir,
    cpu: std::sync::Arc<coexec::CpuFn>,
    data: Vec<u32>,
}

impl Scattered {
    /// `None` without a staged Vulkan device.
    fn profiled(tag: &str, items: usize) -> Option<Self> {
        let dir = common::TempDir::new(&format!("profile-{tag}"));
        let cpu: std::sync::Arc<coexec::CpuFn> =
            std::sync::Arc::new(|p: &coexec::Package, a: &mut coexec::CpuArgs<'_>| {
                let x = a.input::<u32>(0);
                let len = x.len() as u64;
                let o = a.output::<u32>(1);
                for (k, i) in p.items.clone().enumerate() {
                    o[k] = x[(i * 1031 % len) as usize].wrapping_add(1);
                }
            });
        let s = Scattered {
            dir,
            cpu,
            data: common::input(items, 5),
        };
        let e = s.staged()?;
        let k = e
            .kernel_glsl("scattered", SCATTERED_GLSL, Some(s.cpu.clone()))
            .unwrap();
        let x = e.buffer_from_slice(&s.data).unwrap();
        for _ in 0..4 {
            run_scattered(&e, &k, &x, &s.data);
        }
        // Whatever the learner chose, the GPU runs the kernel warm over a
        // fresh copy of the input, which it uploads with nothing else in
        // flight: its bandwidth is learned (and kept) where the input is
        // large enough to teach it.
        for _ in 0..2 {
            let fresh = e.buffer_from_slice(&s.data).unwrap();
            run_scattered_on(&e, &k, &fresh, &s.data, Devices::GPU);
        }
        Some(s)
    }

    fn staged(&self) -> Option<Engine> {
        common::engine_from(EngineOptions {
            workers: Some(1),
            validation: Validation::IfAvailable,
            pipeline_cache_dir: Some(self.dir.to_path_buf()),
            memory: coexec::MemoryPlacement::Staged,
            ..Default::default()
        })
        .filter(|e| e.memory_placement() == coexec::MemoryPlacement::Staged)
    }

    /// A new engine (a new process's view), the kernel and its input.
    fn engine(&self) -> (Engine, coexec::Kernel, coexec::Buffer<u32>) {
        let e = self.staged().unwrap();
        let k = e
            .kernel_glsl("scattered", SCATTERED_GLSL, Some(self.cpu.clone()))
            .unwrap();
        let x = e.buffer_from_slice(&self.data).unwrap();
        (e, k, x)
    }

    fn run(&self, e: &Engine, k: &coexec::Kernel, x: &coexec::Buffer<u32>) -> coexec::Report {
        run_scattered(e, k, x, &self.data)
    }

    fn text(&self) -> String {
        std::fs::read_to_string(common::the_profile(&self.dir)).unwrap()
    }

    /// The profile with its costs and times replaced by `lines` (and the
    /// GPU's cold start its writer measured left out).
    fn rewrite(&self, lines: &[&str]) {
        let text = self.text();
        let mut kept: Vec<&str> = text
            .lines()
            .filter(|l| {
                !["time ", "cost ", "first ", "rates ", "cold "]
                    .iter()
                    .any(|p| l.starts_with(p))
            })
            .collect();
        kept.extend(lines.iter().filter(|l| !l.is_empty()));
        std::fs::write(common::the_profile(&self.dir), kept.join("\n") + "\n").unwrap();
    }
}

/// A GPU whose first package of a kernel in a process pays a long one-time
/// start (a software rasterizer compiles a shader's code at its first
/// dispatch; here the test hook's delay) has that cost kept in the
/// kernel's profile (line `cold`), and a new process's first run from the
/// profile counts it: the GPU's first package would wait for it, so the
/// CPU runs what the GPU could not finish sooner, and the run does not
/// wait for the GPU's start (it did, with the profile's warm times alone).
#[cfg(feature = "test-hooks")]
#[test]
fn a_gpus_cold_start_kept_in_the_profile_counts_at_the_next_first_run() {
    const DELAY: Duration = Duration::from_millis(400);
    let dir = common::TempDir::new("profile-cold");
    let cpu = || common::slow_count_cpu(Duration::ZERO, N);
    {
        let Some(e) = engine_in(Some(&dir)) else {
            return;
        };
        e.delay_cold_gpu_packages(Some(DELAY));
        let k = count_kernel(&e, cpu());
        // The first run pays the GPU's cold start, whoever ran what; the
        // GPU then runs warm, so that its warm cost is known.
        run(&e, &k, &Scheduler::hguided());
        for _ in 0..3 {
            let mut out = e.buffer::<u32>(N as usize).unwrap();
            e.run(
                &k,
                Args::new().output(&mut out).push(&[N as u32, 0, 0]),
                IndexSpace::D1(N),
                &Scheduler::hguided(),
                Devices::GPU,
            )
            .unwrap();
            assert!(out.iter().all(|&v| v == 1));
        }
        run(&e, &k, &Scheduler::hguided());
    }
    let file = common::the_profile(&dir);
    let text = std::fs::read_to_string(&file).unwrap();
    let cold: f64 = text
        .lines()
        .find_map(|l| l.strip_prefix("cold 1 "))
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no cold line: {text}"));
    assert!(cold >= 0.75 * DELAY.as_secs_f64(), "cold {cold}: {text}");
    // What the profile says, made plain: both devices equally fast, the
    // GPU alone twice as fast per unit as co-executing (warm), and its
    // cold start as measured.
    let mut kept: Vec<String> = text
        .lines()
        .filter(|l| {
            !["time ", "cost ", "first ", "rates "]
                .iter()
                .any(|p| l.starts_with(p))
        })
        .map(str::to_string)
        .collect();
    kept.extend(
        [
            "cost 0 0e0 1e6",
            "cost 1 0e0 1e6",
            "time together 2e-8",
            "time alone 1 1e-8",
        ]
        .map(String::from),
    );
    std::fs::write(&file, kept.join("\n") + "\n").unwrap();
    let e = engine_in(Some(&dir)).unwrap();
    e.delay_cold_gpu_packages(Some(DELAY));
    let k = count_kernel(&e, cpu());
    let first = run(&e, &k, &Scheduler::hguided());
    assert!(first.from_profile);
    assert!(
        first.time_s < 0.5 * DELAY.as_secs_f64(),
        "the first run waited for the GPU's start: {first:#?}"
    );
}
