//! The benchmark suite in quick mode on two small kernels: the JSON record
//! has every field, every run verifies, the efficiencies are sane, and the
//! pictures and traces are written; plus the `coexec suite` command itself.

mod common;

use coexec::suite::{self, Options};
use serde_json::Value;
use std::path::{Path, PathBuf};

const KERNELS: [&str; 2] = ["mandelbrot", "taylor"];

/// A fresh, empty folder under the system's temp dir.
fn temp_dir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("coexec-suite-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn num(v: &Value, key: &str) -> f64 {
    v[key]
        .as_f64()
        .unwrap_or_else(|| panic!("{key} is not a number in {v}"))
}

/// Checks the JSON document of a suite run over [`KERNELS`].
fn check_json(doc: &Value) {
    let m = &doc["machine"];
    for key in ["cpu_model", "vulkan_device_type", "date", "command"] {
        assert!(m[key].is_string(), "machine.{key} missing: {m}");
    }
    assert!(m["cores_used"].as_u64().unwrap() >= 1);
    assert!(!m["gpu_names"].as_array().unwrap().is_empty());
    assert!(m["energy_sources"].is_array());
    let kernels = doc["kernels"].as_array().unwrap();
    assert_eq!(kernels.len(), KERNELS.len());
    for (k, name) in kernels.iter().zip(KERNELS) {
        assert_eq!(k["kernel"], name);
        assert!(k["size"].is_string());
        let (t_cpu, t_gpu) = (num(k, "t_cpu"), num(k, "t_gpu"));
        assert!(t_cpu > 0.0 && t_gpu > 0.0);
        for key in ["t_cpu_scheduler", "t_gpu_scheduler"] {
            let s = k[key].as_str().unwrap();
            assert!(suite::SOLO_SCHEDULERS.contains(&s), "{key} = {s}");
        }
        assert_eq!(k["verified"], true, "{name} did not verify: {k}");
        let runs = k["runs"].as_array().unwrap();
        assert_eq!(runs.len(), suite::SCHEDULERS.len());
        let fastest = t_cpu.min(t_gpu);
        let s_max = fastest * (1.0 / t_cpu + 1.0 / t_gpu);
        for (r, (key, _)) in runs.iter().zip(suite::SCHEDULERS) {
            assert_eq!(r["scheduler"], key);
            assert_eq!(r["verified"], true, "{name} {key} did not verify");
            let (t, s, he) = (num(r, "time_s"), num(r, "speedup"), num(r, "he"));
            assert!((s - fastest / t).abs() <= 1e-9 * s.max(1.0), "{r}");
            assert!((num(r, "s_max") - s_max).abs() <= 1e-9 * s_max, "{r}");
            assert!((he - s / s_max).abs() <= 1e-9, "{r}");
            // No bound from above: HE is a ratio of timings, and a test
            // asserts no timing (a noisy quick run can exceed 1).
            assert!(he > 0.0 && he.is_finite(), "{name} {key}: HE {he}");
            let b = num(r, "balance");
            assert!(b > 0.0 && b <= 1.0, "{r}");
            assert!(r["packages"].as_u64().unwrap() >= 1);
            for key in ["energy_j", "edp_rel"] {
                assert!(r[key].is_null() || r[key].is_number(), "{r}");
            }
        }
    }
    let summary = doc["summary"].as_object().unwrap();
    for (key, _) in suite::SCHEDULERS {
        let s = &summary[key];
        for f in ["mean_he", "geomean_s", "min_he"] {
            assert!(s[f].as_f64().unwrap() > 0.0, "summary.{key}.{f}: {s}");
        }
    }
}

/// Checks the pictures and traces in `out`.
fn check_files(out: &Path) {
    let mut svgs = vec!["speedup.svg".to_string(), "he.svg".to_string()];
    for k in KERNELS {
        svgs.push(format!("timeline-{k}.svg"));
        let trace = std::fs::read_to_string(out.join(format!("trace-{k}.json"))).unwrap();
        let t: Value = serde_json::from_str(&trace).expect("trace is JSON");
        let events = t["traceEvents"].as_array().unwrap();
        assert!(events.iter().any(|e| e["ph"] == "X"), "no package slices");
    }
    for f in svgs {
        assert_svg(&out.join(f));
    }
}

/// The stdout of a `coexec` run that must have succeeded (else the test
/// fails with both of its outputs).
fn succeeded(o: &std::process::Output) -> String {
    let stdout = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(
        o.status.success(),
        "exit {:?}\n{stdout}\n{}",
        o.status,
        String::from_utf8_lossy(&o.stderr)
    );
    stdout
}

/// `path` is a whole SVG document.
fn assert_svg(path: &Path) {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path:?}: {e}"));
    assert!(
        text.starts_with("<svg"),
        "{path:?} does not start with <svg"
    );
    assert!(
        text.trim_end().ends_with("</svg>"),
        "{path:?} is not closed"
    );
}

#[test]
fn quick_suite_records_pictures_and_verifies() {
    let Some(engine) = common::engine() else {
        return;
    };
    let out = temp_dir("api");
    let opts = Options {
        quick: true,
        kernels: Some(KERNELS.iter().map(|k| k.to_string()).collect()),
        reps: Some(1),
        out: Some(out.clone()),
        json: Some(out.join("api.json")),
        scaling: false,
        progress: false,
        energy: true,
        command: "tests/suite.rs".into(),
        ..Options::default()
    };
    let report = suite::run(&engine, &opts).expect("suite runs");
    assert!(report.all_ok(), "{}", report.table());
    // Through text and back, as a user of --json would read it.
    let doc: Value = serde_json::from_str(&report.to_json().to_string()).unwrap();
    check_json(&doc);
    let written: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("api.json")).unwrap()).unwrap();
    assert_eq!(written["complete"], true);
    check_json(&written);
    check_files(&out);
    let table = report.table();
    for k in KERNELS {
        assert!(table.contains(k), "{table}");
    }
    assert!(table.contains("energy:"), "{table}");
    std::fs::remove_dir_all(&out).unwrap();
}

/// The scaling sweep in quick mode: every point has GPU-alone and
/// co-executed times, a CPU-alone time until the CPU series stops (then an
/// extrapolated one, `t_cpu` null), a stop reason per series and a picture.
#[test]
fn quick_scaling_records_each_series() {
    let Some(engine) = common::engine() else {
        return;
    };
    let out = temp_dir("scaling");
    let opts = Options {
        quick: true,
        kernels: Some(vec!["taylor".into()]),
        reps: Some(1),
        out: Some(out.clone()),
        scaling: true,
        progress: false,
        energy: false,
        cpu_solo: Some(vec!["hguided".into()]),
        schedulers: Some(vec!["hguided:hints".into()]),
        command: "tests/suite.rs".into(),
        ..Options::default()
    };
    let report = suite::run(&engine, &opts).expect("suite runs");
    assert!(report.all_ok(), "{}", report.table());
    let doc: Value = serde_json::from_str(&report.to_json().to_string()).unwrap();
    let k = &doc["kernels"][0];
    let points = k["scaling"].as_array().unwrap();
    assert!(!points.is_empty(), "{k}");
    assert!(points[0]["t_cpu"].is_number(), "{k}");
    let mut cpu_stopped = false;
    let mut last_items = 0;
    for p in points {
        let items = p["items"].as_u64().unwrap();
        assert!(items > last_items, "{k}");
        last_items = items;
        assert!(num(p, "t_gpu") > 0.0 && num(p, "t_coexec") > 0.0, "{p}");
        assert_eq!(p["verified"], true, "{p}");
        if p["t_cpu"].is_null() {
            cpu_stopped = true;
            assert!(num(p, "t_cpu_estimate") > 0.0, "{p}");
        } else {
            assert!(!cpu_stopped, "a CPU time after the CPU series stopped: {k}");
            assert!(num(p, "t_cpu") > 0.0, "{p}");
            assert!(p["t_cpu_estimate"].is_null(), "{p}");
        }
    }
    let stop = k["scaling_stop"].as_str().unwrap();
    assert!(stop.starts_with("cpu"), "{stop}");
    for series in ["gpu", "hguided"] {
        assert!(stop.contains(series), "{stop}");
    }
    assert_svg(&out.join("scaling-taylor.svg"));
    std::fs::remove_dir_all(&out).unwrap();
}

#[test]
fn unknown_kernel_is_an_error() {
    let Some(engine) = common::engine() else {
        return;
    };
    let opts = Options {
        kernels: Some(vec!["nope".into()]),
        progress: false,
        ..Default::default()
    };
    let e = suite::run(&engine, &opts).unwrap_err();
    assert!(
        matches!(&e, suite::SuiteError::UnknownKernel(m) if m.contains("unknown kernel")),
        "{e}"
    );
    // An output folder that cannot be created: typed, with its cause.
    let opts = Options {
        kernels: Some(vec!["saxpy".into()]),
        out: Some("/proc/coexec-no/out".into()),
        progress: false,
        ..Default::default()
    };
    let e = suite::run(&engine, &opts).unwrap_err();
    assert!(
        matches!(&e, suite::SuiteError::CreateDir { path, .. } if path.ends_with("out")),
        "{e}"
    );
    assert!(std::error::Error::source(&e).is_some());
}

#[test]
fn suite_command_writes_json_and_pictures() {
    if common::engine().is_none() {
        return;
    }
    let out = temp_dir("cli");
    let json = out.join("suite.json");
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_coexec"))
        .args([
            "suite",
            "--quick",
            "--no-scaling",
            "--reps",
            "1",
            "--kernels",
        ])
        .arg(KERNELS.join(","))
        .args(["--sizes", "taylor=20000,mandelbrot=96x64"])
        .arg("--json")
        .arg(&json)
        .arg("--out")
        .arg(&out)
        .output()
        .expect("coexec runs");
    let stdout = succeeded(&o);
    assert!(stdout.contains("HGuided (hints)"), "{stdout}");
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    check_json(&doc);
    // --sizes took the place of the quick sizes.
    let sizes: Vec<&str> = doc["kernels"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["size"].as_str().unwrap())
        .collect();
    assert_eq!(sizes, ["96x64", "20000"]);
    check_files(&out);
    std::fs::remove_dir_all(&out).unwrap();
}

/// `coexec suite --set comparable --quick`: every kernel of the set runs,
/// verifies, and each co-executed run records its co-running ceiling.
#[test]
fn comparable_set_quick_suite_verifies_and_records_the_ceiling() {
    if common::engine().is_none() {
        return;
    }
    let out = temp_dir("comparable");
    let json = out.join("suite.json");
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_coexec"))
        .args(["suite", "--set", "comparable", "--quick", "--no-scaling"])
        .args(["--reps", "1", "--json"])
        .arg(&json)
        .output()
        .expect("coexec runs");
    let stdout = succeeded(&o);
    assert!(
        stdout.contains("S_ceil") && stdout.contains("cpu_co"),
        "{stdout}"
    );
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(doc["settings"]["set"], "comparable");
    let names: Vec<&str> = doc["kernels"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["kernel"].as_str().unwrap())
        .collect();
    assert_eq!(names, coexec::workloads::COMPARABLE);
    for k in doc["kernels"].as_array().unwrap() {
        assert_eq!(k["verified"], true, "{k}");
        let (t_cpu, t_gpu) = (num(k, "t_cpu"), num(k, "t_gpu"));
        let fastest = t_cpu.min(t_gpu);
        for r in k["runs"].as_array().unwrap() {
            let c = &r["corun"];
            let (cpu, gpu) = (&c["cpu_rate"], &c["gpu_rate"]);
            if let (Some(cr), Some(gr)) = (cpu.as_f64(), gpu.as_f64()) {
                let items: u64 = k["size"]
                    .as_str()
                    .unwrap()
                    .split('x')
                    .map(|v| v.parse::<u64>().unwrap())
                    .product();
                let want = fastest * (cr + gr) / items as f64;
                assert!((num(c, "s_ceiling") - want).abs() <= 1e-9 * want, "{r}");
                assert!(
                    (num(c, "cpu_rel") - cr * t_cpu / items as f64).abs() < 1e-9 * cr,
                    "{r}"
                );
            } else {
                // One device ran nothing: no ceiling.
                assert!(c["s_ceiling"].is_null(), "{r}");
            }
        }
    }
    std::fs::remove_dir_all(&out).unwrap();
}

#[test]
fn suite_command_names_a_bad_size_before_starting() {
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_coexec"))
        .args(["suite", "--quick", "--sizes", "fft=1024"])
        .output()
        .expect("coexec runs");
    assert!(!o.status.success());
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(stderr.contains("unknown kernel `fft`"), "{stderr}");
}
