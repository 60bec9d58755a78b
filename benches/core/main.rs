//! Benchmark harness for the co-execution core: claim cost, per-package
//! overheads, GPU idle gaps, the engine against rayon and against a raw
//! dispatch, and Mandelbrot co-execution with every scheduler.
//!
//! `cargo bench --bench core -- [--quick] [--json FILE] [--only NAME,...]`;
//! see `benches/README.md` for every flag and what each figure means. The
//! binary takes everything from its arguments, so it can be copied to a
//! machine without a Rust toolchain and run there.

mod args;
mod claim;
mod coexec_mandelbrot;
mod cpu_package_overhead;
mod cpu_vs_rayon;
mod gpu_gap;
mod gpu_local;
mod gpu_vs_raw;
mod raw_local;
mod stats;
mod table;

use args::{Cli, Opts, SECTIONS};
use clap::Parser;
use coexec::{Engine, EngineOptions, GpuChoice, Validation};
use serde_json::{json, Map, Value};
use std::time::Instant;
use table::Table;

/// The sections `--only` selects (all without it), in [`SECTIONS`] order.
fn selected(o: &Opts) -> Vec<&'static str> {
    SECTIONS
        .iter()
        .copied()
        .filter(|s| {
            o.only
                .as_ref()
                .is_none_or(|only| only.iter().any(|x| x == s))
        })
        .collect()
}

/// The engine, where a selected section needs one (a failure is a note).
fn open_engine(o: &Opts, selected: &[&str], notes: &mut Vec<String>) -> Option<Engine> {
    if selected
        .iter()
        .all(|s| matches!(*s, "claim" | "gpu_local_vs_raw"))
    {
        return None;
    }
    let opts = EngineOptions {
        gpu: o.gpu.map_or(GpuChoice::Auto, GpuChoice::Index),
        workers: o.workers,
        validation: Validation::Off,
        ..Default::default()
    };
    Engine::with_options(opts)
        .map_err(|err| notes.push(format!("no engine: {err}")))
        .ok()
}

/// The machine's description; clamps `--saxpy` to the device's 1-D
/// dispatch limit where a GPU section runs (with a note).
fn machine(o: &mut Opts, e: Option<&Engine>, selected: &[&str], notes: &mut Vec<String>) -> Value {
    let mut machine = json!({
        "available_parallelism": std::thread::available_parallelism().map_or(1, |n| n.get()),
    });
    let Some(e) = e else { return machine };
    let needs_gpu = selected.iter().any(|s| {
        matches!(
            *s,
            "gpu_gap" | "gpu_vs_raw" | "coexec_mandelbrot" | "gpu_local_vs_raw"
        )
    });
    let info = e.device_info();
    // 1-D dispatches are limited to maxComputeWorkGroupCount[0] groups of 256.
    let limit = u64::from(info.max_group_count[0]) * 256;
    if needs_gpu && o.saxpy > limit {
        notes.push(format!(
            "--saxpy {} exceeds the device's 1-D dispatch limit ({} groups of 256): using {limit}",
            o.saxpy, info.max_group_count[0]
        ));
        o.saxpy = limit;
    }
    machine["cpu_model"] = json!(e.topology().model);
    machine["physical_cores"] = json!(e.topology().cores.len());
    machine["pus"] = json!(e.topology().pus);
    machine["workers"] = json!(e.workers());
    machine["vulkan_device"] = json!(info.name);
    machine["vulkan_device_type"] = json!(format!("{:?}", info.device_type));
    machine["gpu_available"] = json!(e.gpu_available());
    println!(
        "coexec core bench: CPU {} ({} cores, {} PUs), {} worker(s); Vulkan device {} ({:?})",
        e.topology().model,
        e.topology().cores.len(),
        e.topology().pus,
        e.workers(),
        info.name,
        info.device_type
    );
    machine
}

/// Runs section `name` into `t`: its JSON figures, or why it failed or was
/// skipped.
fn run_section(
    name: &str,
    o: &Opts,
    engine: Option<&Engine>,
    t: &mut Table,
) -> Result<Value, String> {
    let gpu = |e: &Engine| {
        e.gpu_available()
            .then_some(())
            .ok_or_else(|| "skipped: the GPU is not available".to_string())
    };
    match (name, engine) {
        ("claim", _) => claim::bench_claim(o, t),
        ("gpu_local_vs_raw", _) => gpu_local::bench_gpu_local(o, t),
        (_, None) => Err("skipped: no engine (see note above)".into()),
        ("cpu_package_overhead", Some(e)) => cpu_package_overhead::bench_cpu_overhead(o, e, t),
        ("cpu_vs_rayon", Some(e)) => cpu_vs_rayon::bench_cpu_vs_rayon(o, e, t),
        ("gpu_gap", Some(e)) => gpu(e).and_then(|()| gpu_gap::bench_gpu_gap(o, e, t)),
        ("gpu_vs_raw", Some(e)) => gpu(e).and_then(|()| gpu_vs_raw::bench_gpu_vs_raw(o, e, t)),
        (_, Some(e)) => gpu(e).and_then(|()| coexec_mandelbrot::bench_coexec(o, e, t)),
    }
}

/// Writes the JSON document of the whole run to `--json`'s file.
fn write_json(path: &str, doc: Value) {
    let text = serde_json::to_string_pretty(&doc).expect("JSON of plain values");
    if let Err(err) = std::fs::write(path, text) {
        eprintln!("error: cannot write {path}: {err}");
        std::process::exit(1);
    }
    println!("wrote {path}");
}

fn main() {
    let cli = Cli::parse();
    if cli.list {
        for s in SECTIONS {
            println!("{s}");
        }
        return;
    }
    let mut o = cli.opts();
    let selected = selected(&o);
    let started = Instant::now();
    let mut notes: Vec<String> = Vec::new();
    let engine = open_engine(&o, &selected, &mut notes);
    let machine = machine(&mut o, engine.as_ref(), &selected, &mut notes);
    println!(
        "reps {} (+{} warm-up), mandel {}x{} x{} iterations, saxpy {} elements, claims {}, \
         overhead units {}{}",
        o.reps,
        o.warmup,
        o.mandel.0,
        o.mandel.1,
        o.iters,
        o.saxpy,
        o.claims,
        o.overhead_packages,
        if o.quick { " (quick)" } else { "" }
    );
    for n in &notes {
        println!("note: {n}");
    }
    let mut sections = Map::new();
    let mut errors = Map::new();
    for name in &selected {
        let (title, hdr) = table::headers(name);
        let mut t = Table::new(title, &hdr);
        let t0 = Instant::now();
        let result = run_section(name, &o, engine.as_ref(), &mut t);
        let took = t0.elapsed().as_secs_f64();
        match result {
            Ok(v) => {
                t.note(format!("section took {took:.1} s"));
                t.print();
                sections.insert(name.to_string(), v);
            }
            Err(err) => {
                t.note(format!("FAILED: {err}"));
                t.print();
                errors.insert(name.to_string(), json!(err));
            }
        }
    }
    let total = started.elapsed().as_secs_f64();
    println!("\ntotal {total:.1} s");
    if let Some(path) = &o.json {
        let doc = json!({
            "harness": "coexec benches/core.rs",
            "units": "times in seconds (_s), microseconds (_us) or nanoseconds (ns_); ratios unitless",
            "options": {
                "quick": o.quick, "reps": o.reps, "warmup": o.warmup,
                "mandel": format!("{}x{}", o.mandel.0, o.mandel.1), "iters": o.iters,
                "saxpy": o.saxpy, "claims": o.claims, "overhead_packages": o.overhead_packages,
                "workers": o.workers, "gpu": o.gpu,
            },
            "machine": machine,
            "notes": notes,
            "sections": sections,
            "errors": errors,
            "total_s": total,
        });
        write_json(path, doc);
    }
}
