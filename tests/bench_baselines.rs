//! The rayon baseline (`Engine::set_rayon_baseline`, `coexec bench
//! --cpu-impl rayon`) and `coexec bench --energy window|sampled`.

#![cfg(feature = "glsl")]

mod common;

use coexec::{Args, Devices, IndexSpace, Scheduler};

/// Every item once, in one package per chunk, on the CPU alone; runs with
/// the GPU and runs after the baseline is turned off are coexec's own.
#[test]
fn the_rayon_baseline_runs_every_item_once() {
    let Some(e) = common::engine() else { return };
    let k = common::count_kernel(&e, "count");
    let run = |n: u64, devices| {
        let mut out = e.buffer::<u32>(n as usize).unwrap();
        let r = e
            .run(
                &k,
                Args::new().output(&mut out).push(&[n as u32, 0, 0]),
                IndexSpace::D1(n),
                &Scheduler::hguided(),
                devices,
            )
            .unwrap();
        assert!(out.iter().all(|&v| v == 1), "an item ran other than once");
        r
    };
    e.set_rayon_baseline(true);
    for n in [1, 63, 64, 100_003] {
        let r = run(n, Devices::CPU);
        assert_eq!(r.devices.len(), 1);
        let cpu = &r.devices[0];
        assert!(cpu.note.as_deref().unwrap().contains("rayon"), "{cpu:?}");
        assert_eq!(cpu.items, n);
        assert_eq!(cpu.packages, r.packages.len());
        let covered: u64 = r.packages.iter().map(|p| p.units.end - p.units.start).sum();
        assert_eq!(covered, r.units);
    }
    // With the GPU: coexec's run, not the baseline.
    let r = run(100_000, Devices::ALL);
    assert!(
        r.devices.iter().all(|d| d.note.is_none()),
        "{:?}",
        r.devices
    );
    e.set_rayon_baseline(false);
    let r = run(100_000, Devices::CPU);
    assert_eq!(r.devices[0].note, None);
    common::assert_validation_clean(&e);
}

fn bench(args: &[&str]) -> serde_json::Value {
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_coexec"))
        .arg("bench")
        .args(args)
        .arg("--json")
        .output()
        .expect("coexec runs");
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{args:?}: {stdout} {}",
        String::from_utf8_lossy(&o.stderr)
    );
    serde_json::from_str(&stdout).expect("one JSON object")
}

/// `--cpu-impl rayon` verifies and reports the baseline; it refuses a run
/// with a GPU.
#[test]
fn bench_runs_the_rayon_baseline() {
    if common::engine().is_none() {
        return;
    }
    let doc = bench(&[
        "--kernel",
        "taylor",
        "--size",
        "20000",
        "--reps",
        "1",
        "--devices",
        "cpu",
        "--cpu-impl",
        "rayon",
    ]);
    assert_eq!(doc["verified"], true, "{doc}");
    assert_eq!(doc["cpu_impl"], "rayon");
    let note = doc["per_device"][0]["note"].as_str().unwrap_or_default();
    assert!(note.contains("rayon"), "{doc}");
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_coexec"))
        .args([
            "bench",
            "--kernel",
            "taylor",
            "--size",
            "2000",
            "--cpu-impl",
            "rayon",
        ])
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("--devices cpu"));
}

/// `--energy window` and `sampled` measure over a window of at least the
/// asked length: every device has an entry, and where no counter reads
/// (this machine: no RAPL, no NVIDIA GPU) the figures are null with a note
/// saying why, never a failure.
#[test]
fn bench_measures_energy_over_a_window() {
    if common::engine().is_none() {
        return;
    }
    for mode in ["window", "sampled"] {
        let doc = bench(&[
            "--kernel",
            "saxpy",
            "--size",
            "20000",
            "--reps",
            "3",
            "--energy",
            mode,
            "--energy-window-s",
            "0.2",
            "--sample-ms",
            "5",
        ]);
        let e = &doc["energy"];
        assert_eq!(e["mode"], mode, "{doc}");
        assert!(e["runs"].as_u64().unwrap() >= 3, "{e}");
        assert!(e["window_s"].as_f64().unwrap() >= 0.2, "{e}");
        let devices = e["devices"].as_array().unwrap();
        assert_eq!(
            devices.len(),
            doc["per_device"].as_array().unwrap().len(),
            "{e}"
        );
        assert!(devices.iter().all(|d| d["busy_s"].as_f64().unwrap() >= 0.0));
        match e["joules_per_run"].as_f64() {
            Some(j) => {
                assert!(j > 0.0);
                let edp = e["edp"].as_f64().unwrap();
                assert!((edp - j * doc["time_s"].as_f64().unwrap()).abs() <= 1e-9 * edp.max(1.0));
            }
            None => {
                assert!(e["edp"].is_null());
                assert!(!e["notes"].as_array().unwrap().is_empty(), "{e}");
            }
        }
    }
    let doc = bench(&["--kernel", "saxpy", "--size", "2000", "--reps", "1"]);
    assert!(doc["energy"].is_null());
}

/// `--json` gives every timed run's time and CPU work-items, in order
/// (which configuration each was): the median is one of the times, and
/// each run's items lie between 0 (the GPU alone) and all of them (the CPU
/// alone); the CPU alone gives every one all of them.
#[test]
fn bench_gives_each_timed_runs_time_and_cpu_items() {
    if common::engine().is_none() {
        return;
    }
    for (devices, all_cpu) in [("all", false), ("cpu", true)] {
        let doc = bench(&[
            "--kernel",
            "saxpy",
            "--size",
            "4096",
            "--warmup",
            "2",
            "--reps",
            "5",
            "--devices",
            devices,
        ]);
        let times = doc["times_s"].as_array().unwrap();
        let items = doc["times_cpu_items"].as_array().unwrap();
        assert_eq!((times.len(), items.len()), (5, 5), "{doc}");
        let median = doc["time_s"].as_f64().unwrap();
        assert!(times.iter().any(|t| t.as_f64() == Some(median)), "{doc}");
        for i in items {
            let i = i.as_u64().unwrap();
            assert!(i <= 4096, "{doc}");
            assert!(!all_cpu || i == 4096, "{doc}");
        }
        // The last timed run is the one `cpu_items` reports.
        assert_eq!(items.last(), Some(&doc["cpu_items"]), "{doc}");
    }
}

/// `--trace` writes the last run's packages, `--trace-first` the first
/// run's: every item once, and the CPU's packages sum to the CPU items the
/// report gives for that run.
#[test]
fn bench_traces_the_first_or_the_last_run() {
    if common::engine().is_none() {
        return;
    }
    let dir = std::env::temp_dir().join(format!("coexec-trace-first-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let n = 1u64 << 16;
    for first in [true, false] {
        let path = dir.join(format!("{first}.json"));
        let p = path.to_str().unwrap();
        let size = n.to_string();
        let mut args = vec![
            "--kernel",
            "saxpy",
            "--size",
            &size,
            "--warmup",
            "2",
            "--reps",
            "2",
            "--devices",
            "all",
            "--trace",
            p,
        ];
        if first {
            args.push("--trace-first");
        }
        let doc = bench(&args);
        let trace: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let events = trace["traceEvents"]
            .as_array()
            .unwrap_or_else(|| trace.as_array().unwrap());
        let cpu_pids: Vec<u64> = events
            .iter()
            .filter(|e| e["ph"] == "M" && e["name"] == "process_name")
            .filter(|e| e["args"]["name"].as_str().unwrap().ends_with("(cpu)"))
            .map(|e| e["pid"].as_u64().unwrap())
            .collect();
        let packages = events.iter().filter(|e| {
            e["ph"] == "X" && e["name"].as_str().is_some_and(|s| s.starts_with("units"))
        });
        let (mut all, mut cpu) = (0, 0);
        for e in packages {
            let items = e["args"]["work_items"].as_u64().unwrap();
            all += items;
            if cpu_pids.contains(&e["pid"].as_u64().unwrap()) {
                cpu += items;
            }
        }
        assert_eq!(all, n, "first {first}: {doc}");
        let want = if first {
            &doc["first_cpu_items"]
        } else {
            &doc["cpu_items"]
        };
        assert_eq!(Some(cpu), want.as_u64(), "first {first}: {doc}");
    }
    let _ = std::fs::remove_dir_all(dir);
}
