//! Benchmark harness for the co-execution core: claim cost, per-package
//! overheads, GPU idle gaps, the engine against rayon and against a raw
//! dispatch, and Mandelbrot co-execution with every scheduler.
//!
//! `cargo bench --bench core -- [--quick] [--json FILE] [--only NAME,...]`;
//! see `benches/README.md` for every flag and what each figure means. The
//! binary takes everything from its arguments, so it can be copied to a
//! machine without a Rust toolchain and run there.

use coexec::workloads::mandelbrot::{mandel_pixel, mandelbrot_cpu, Params as MandelParams};
use coexec::workloads::saxpy::saxpy_cpu;
use coexec::workloads::{random_f32, spirv, Mandelbrot, Saxpy, Workload};
use coexec::{
    Args, Buffer, CpuArgs, DeviceKind, Devices, Engine, EngineOptions, GpuChoice, IndexSpace,
    Package, Report, Scheduler, Validation,
};
use coexec_engine::exec::topology::pin_current_thread;
use coexec_engine::sched::{DeviceSlot, Plan, ThroughputEstimator, WorkQueue};
use coexec_engine::vk::{spirv as vkspirv, BindingSet, ComputePipeline, DispatchRing};
use rayon::prelude::*;
use serde_json::{json, Map, Value};
use std::sync::{Arc, Barrier};
use std::time::Instant;

const SECTIONS: &[&str] = &[
    "claim",
    "cpu_package_overhead",
    "gpu_gap",
    "cpu_vs_rayon",
    "gpu_vs_raw",
    "coexec_mandelbrot",
];

const USAGE: &str = "\
usage: core [--quick] [--json FILE] [--only NAME,...] [--reps N] [--warmup N]
            [--mandel WxH] [--iters N] [--saxpy N] [--claims N]
            [--overhead-packages M] [--workers N] [--gpu INDEX] [--list]
sections: claim, cpu_package_overhead, gpu_gap, cpu_vs_rayon, gpu_vs_raw,
          coexec_mandelbrot
--bench (passed by cargo) is accepted and ignored.";

/// Command-line options.
#[derive(Debug, Clone)]
struct Opts {
    quick: bool,
    json: Option<String>,
    only: Option<Vec<String>>,
    reps: usize,
    warmup: usize,
    mandel: (u32, u32),
    iters: u32,
    saxpy: u64,
    claims: u64,
    overhead_packages: u64,
    workers: Option<usize>,
    gpu: Option<usize>,
}

fn parse_num<T: std::str::FromStr>(flag: &str, v: &str) -> Result<T, String> {
    v.trim()
        .parse()
        .map_err(|_| format!("{flag}: cannot parse {v:?}"))
}

fn parse_image(v: &str) -> Result<(u32, u32), String> {
    let (w, h) = v
        .split_once(['x', 'X'])
        .ok_or_else(|| format!("--mandel: expected WxH, got {v:?}"))?;
    let (w, h): (u32, u32) = (parse_num("--mandel", w)?, parse_num("--mandel", h)?);
    if w == 0 || h == 0 {
        return Err("--mandel: width and height must be > 0".into());
    }
    Ok((w, h))
}

fn parse_args() -> Result<Opts, String> {
    let mut quick = false;
    let mut json = None;
    let mut only: Option<Vec<String>> = None;
    let (mut reps, mut warmup, mut mandel, mut iters, mut saxpy) = (None, None, None, None, None);
    let (mut claims, mut overhead, mut workers, mut gpu) = (None, None, None, None);
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let (flag, inline) = match arg.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f.to_string(), Some(v.to_string())),
            _ => (arg.clone(), None),
        };
        let mut value = || -> Result<String, String> {
            inline
                .clone()
                .or_else(|| it.next())
                .ok_or_else(|| format!("{flag} needs a value"))
        };
        match flag.as_str() {
            "--bench" => {}
            "--quick" => quick = true,
            "--help" | "-h" => {
                println!("{USAGE}");
                std::process::exit(0);
            }
            "--list" => {
                for s in SECTIONS {
                    println!("{s}");
                }
                std::process::exit(0);
            }
            "--json" => json = Some(value()?),
            "--only" => {
                let names: Vec<String> = value()?
                    .split(',')
                    .map(|s| s.trim().to_string())
                    .filter(|s| !s.is_empty())
                    .collect();
                for n in &names {
                    if !SECTIONS.contains(&n.as_str()) {
                        return Err(format!(
                            "--only: unknown section {n:?} (known: {})",
                            SECTIONS.join(", ")
                        ));
                    }
                }
                only = Some(names);
            }
            "--reps" => reps = Some(parse_num::<usize>("--reps", &value()?)?.max(1)),
            "--warmup" => warmup = Some(parse_num("--warmup", &value()?)?),
            "--mandel" => mandel = Some(parse_image(&value()?)?),
            "--iters" => iters = Some(parse_num::<u32>("--iters", &value()?)?.max(1)),
            "--saxpy" => saxpy = Some(parse_num::<u64>("--saxpy", &value()?)?.max(1)),
            "--claims" => claims = Some(parse_num::<u64>("--claims", &value()?)?.max(1)),
            "--overhead-packages" => {
                overhead = Some(parse_num::<u64>("--overhead-packages", &value()?)?.max(2))
            }
            "--workers" => workers = Some(parse_num("--workers", &value()?)?),
            "--gpu" => gpu = Some(parse_num("--gpu", &value()?)?),
            other if other.starts_with('-') => {
                return Err(format!("unknown flag {other:?}\n{USAGE}"))
            }
            // A positional filter (as `cargo bench NAME` passes): ignored.
            _ => {}
        }
    }
    Ok(Opts {
        quick,
        json,
        only,
        reps: reps.unwrap_or(if quick { 2 } else { 5 }),
        warmup: warmup.unwrap_or(1),
        mandel: mandel.unwrap_or(if quick { (512, 512) } else { (2048, 2048) }),
        iters: iters.unwrap_or(256),
        saxpy: saxpy.unwrap_or(if quick { 1 << 20 } else { 1 << 24 }),
        claims: claims.unwrap_or(if quick { 200_000 } else { 2_000_000 }),
        overhead_packages: overhead.unwrap_or(if quick { 20_000 } else { 100_000 }),
        workers,
        gpu,
    })
}

// ---------------------------------------------------------------- statistics

fn median(xs: &[f64]) -> f64 {
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

/// Index of the sample at the (lower) median.
fn median_index(xs: &[f64]) -> usize {
    let mut idx: Vec<usize> = (0..xs.len()).collect();
    idx.sort_by(|&a, &b| xs[a].total_cmp(&xs[b]));
    idx.get(xs.len().saturating_sub(1) / 2)
        .copied()
        .unwrap_or(0)
}

/// Engine runs: wall time around each call and the engine's reports.
#[derive(Default)]
struct Runs {
    wall_s: Vec<f64>,
    reports: Vec<Report>,
}

impl Runs {
    /// Records a run that started at `t`, if it is `measured` (not a
    /// warm-up).
    fn push(&mut self, measured: bool, t: Instant, r: Option<Report>) {
        if measured {
            self.wall_s.push(t.elapsed().as_secs_f64());
            self.reports.extend(r);
        }
    }
    fn wall(&self) -> f64 {
        median(&self.wall_s)
    }
    fn times(&self) -> Vec<f64> {
        self.reports.iter().map(|r| r.time_s).collect()
    }
    fn time(&self) -> f64 {
        median(&self.times())
    }
    /// The report of the run with the median engine time.
    fn mid(&self) -> &Report {
        &self.reports[median_index(&self.times())]
    }
    fn json(&self) -> Value {
        let r = self.mid();
        json!({
            "wall_s": self.wall_s,
            "wall_median_s": self.wall(),
            "engine_time_s": self.times(),
            "engine_time_median_s": self.time(),
            "packages": r.package_count(),
            "balance": r.balance(),
            "devices": r.devices.iter().map(|d| json!({
                "name": d.name,
                "kind": d.kind.to_string(),
                "packages": d.packages,
                "items": d.items,
                "busy_s": d.busy_s,
                "finish_s": d.finish_s,
            })).collect::<Vec<_>>(),
        })
    }
}

fn repeat(o: &Opts, mut f: impl FnMut() -> coexec::Result<Report>) -> Result<Runs, String> {
    for _ in 0..o.warmup {
        f().map_err(|e| e.to_string())?;
    }
    let mut runs = Runs::default();
    for _ in 0..o.reps {
        let t = Instant::now();
        let r = f().map_err(|e| e.to_string())?;
        runs.push(true, t, Some(r));
    }
    Ok(runs)
}

// ---------------------------------------------------------------- output

struct Table {
    title: String,
    headers: Vec<String>,
    rows: Vec<Vec<String>>,
    notes: Vec<String>,
}

impl Table {
    fn new(title: &str, headers: &[&str]) -> Self {
        Table {
            title: title.to_string(),
            headers: headers.iter().map(|s| s.to_string()).collect(),
            rows: Vec::new(),
            notes: Vec::new(),
        }
    }
    fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }
    fn note(&mut self, s: impl Into<String>) {
        self.notes.push(s.into());
    }
    fn print(&self) {
        let cols = self.headers.len();
        let mut w: Vec<usize> = self.headers.iter().map(|h| h.len()).collect();
        for r in &self.rows {
            for (i, c) in r.iter().enumerate().take(cols) {
                w[i] = w[i].max(c.len());
            }
        }
        println!("\n== {} ==", self.title);
        let line = |cells: &[String]| {
            let s: Vec<String> = (0..cols)
                .map(|i| {
                    let c = cells.get(i).map(String::as_str).unwrap_or("");
                    if i == 0 {
                        format!("{c:<width$}", width = w[i])
                    } else {
                        format!("{c:>width$}", width = w[i])
                    }
                })
                .collect();
            println!("{}", s.join("  ").trim_end());
        };
        line(&self.headers);
        println!(
            "{}",
            "-".repeat(w.iter().sum::<usize>() + 2 * cols.saturating_sub(1))
        );
        for r in &self.rows {
            line(r);
        }
        for n in &self.notes {
            println!("  note: {n}");
        }
    }
}

fn ms(s: f64) -> String {
    format!("{:.3}", s * 1e3)
}
fn us(s: f64) -> String {
    format!("{:.2}", s * 1e6)
}
fn f3(x: f64) -> String {
    format!("{x:.3}")
}
fn target(ok: bool, what: &str) -> String {
    format!("{what} {}", if ok { "pass" } else { "MISS" })
}

// ---------------------------------------------------------------- 1. claim

/// One thread claims 1-unit packages until exhausted; seconds.
fn claim_uncontended(total: u64) -> Result<f64, String> {
    let est = ThroughputEstimator::new(1);
    let plan = Plan::new(
        &Scheduler::Dynamic { packages: total },
        &[DeviceSlot::cpu(1)],
        total,
        &est,
    )
    .map_err(|e| e.to_string())?;
    let q = WorkQueue::new(total);
    let mut c = plan.claimant(0, 0);
    let t = Instant::now();
    let mut n = 0u64;
    while let Some(r) = plan.claim(&q, &mut c, &est) {
        std::hint::black_box(r);
        n += 1;
    }
    let s = t.elapsed().as_secs_f64();
    if n != total {
        return Err(format!("claimed {n} packages, expected {total}"));
    }
    Ok(s)
}

/// `threads` threads claim 1-unit packages from one queue until exhausted.
/// Returns (wall seconds, mean per-thread ns per claim, claims per thread).
fn claim_contended(total: u64, threads: usize) -> Result<(f64, f64, Vec<u64>), String> {
    let est = ThroughputEstimator::new(1);
    let plan = Plan::new(
        &Scheduler::Dynamic { packages: total },
        &[DeviceSlot::cpu(threads)],
        total,
        &est,
    )
    .map_err(|e| e.to_string())?;
    let q = WorkQueue::new(total);
    let barrier = Barrier::new(threads);
    let base = Instant::now();
    let out: Vec<(f64, f64, u64)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|i| {
                let (plan, q, est, barrier) = (&plan, &q, &est, &barrier);
                s.spawn(move || {
                    let mut c = plan.claimant(0, i);
                    barrier.wait();
                    let t0 = base.elapsed().as_secs_f64();
                    let mut n = 0u64;
                    while let Some(r) = plan.claim(q, &mut c, est) {
                        std::hint::black_box(r);
                        n += 1;
                    }
                    (t0, base.elapsed().as_secs_f64(), n)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("claim thread panicked"))
            .collect()
    });
    let total_claimed: u64 = out.iter().map(|x| x.2).sum();
    if total_claimed != total {
        return Err(format!(
            "claimed {total_claimed} packages, expected {total}"
        ));
    }
    let start = out.iter().map(|x| x.0).fold(f64::INFINITY, f64::min);
    let end = out.iter().map(|x| x.1).fold(0.0, f64::max);
    let per_thread: Vec<f64> = out
        .iter()
        .filter(|x| x.2 > 0)
        .map(|x| (x.1 - x.0) / x.2 as f64 * 1e9)
        .collect();
    let mean = per_thread.iter().sum::<f64>() / per_thread.len().max(1) as f64;
    Ok((end - start, mean, out.iter().map(|x| x.2).collect()))
}

fn bench_claim(o: &Opts, t: &mut Table) -> Result<Value, String> {
    let total = o.claims;
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let _ = claim_uncontended(total.min(100_000))?; // warm-up
    let mut un = Vec::new();
    for _ in 0..o.reps {
        un.push(claim_uncontended(total)?);
    }
    let un_ns = median(&un) / total as f64 * 1e9;
    let _ = claim_contended(total.min(100_000), threads)?; // warm-up
    let (mut walls, mut per_thread, mut splits) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..o.reps {
        let (w, pt, split) = claim_contended(total, threads)?;
        walls.push(w);
        per_thread.push(pt);
        splits.push(split);
    }
    let wall = median(&walls);
    let wall_ns_per_claim_thread = wall * threads as f64 / total as f64 * 1e9;
    let thread_ns = median(&per_thread);
    let rate = total as f64 / wall;
    t.row(vec![
        "uncontended (1 thread)".into(),
        "1".into(),
        total.to_string(),
        format!("{un_ns:.1}"),
        format!("{:.2}", 1e3 / un_ns),
    ]);
    t.row(vec![
        format!("contended ({threads} threads)"),
        threads.to_string(),
        total.to_string(),
        format!("{wall_ns_per_claim_thread:.1} (own: {thread_ns:.1})"),
        format!("{:.2}", rate / 1e6),
    ]);
    t.note(
        "Plan::claim with Scheduler::Dynamic{packages = units}: every claim is one 1-unit package. \
         contended ns/claim/thread = wall * threads / claims; (own) = mean over threads of a \
         thread's own time / its claims.",
    );
    Ok(json!({
        "claims": total,
        "uncontended": { "threads": 1, "time_s": un, "ns_per_claim": un_ns,
                          "claims_per_s": 1e9 / un_ns },
        "contended": { "threads": threads, "wall_s": walls,
                        "ns_per_claim_per_thread": wall_ns_per_claim_thread,
                        "own_ns_per_claim_per_thread": thread_ns,
                        "claims_per_s": rate,
                        "claims_per_thread_last_rep": splits.last() },
    }))
}

// ---------------------------------------------------------------- 2. CPU overhead

fn bench_cpu_overhead(o: &Opts, e: &Engine, t: &mut Table) -> Result<Value, String> {
    let workers = e.workers();
    if workers == 0 {
        return Err("the engine has no CPU workers".into());
    }
    let empty = |_: &Package, _: &mut CpuArgs<'_>| {};
    let k = e
        .kernel("empty", None, Some(Arc::new(empty)), Some([1, 1, 1]))
        .map_err(|x| x.to_string())?;
    let m = o.overhead_packages;
    let space = IndexSpace::D1(m);
    let run = |packages: u64| {
        repeat(o, || {
            e.run(
                &k,
                Args::new(),
                space,
                &Scheduler::Dynamic { packages },
                Devices::CPU,
            )
        })
    };
    let r1 = run(1)?;
    let rm = run(m)?;
    let per_worker = m as f64 / workers as f64;
    let pkg_wall = (rm.wall() - r1.wall()) / per_worker;
    let pkg_engine = (rm.time() - r1.time()) / per_worker;
    for (name, r) in [
        ("Dynamic{1}".to_string(), &r1),
        (format!("Dynamic{{{m}}}"), &rm),
    ] {
        t.row(vec![
            name,
            r.mid().package_count().to_string(),
            ms(r.wall()),
            ms(r.time()),
            String::new(),
            String::new(),
        ]);
    }
    t.row(vec![
        "overhead per package (us)".into(),
        String::new(),
        us(pkg_wall),
        us(pkg_engine),
        target(pkg_wall < 1e-6, "< 1 us"),
        String::new(),
    ]);
    t.row(vec![
        "run overhead, empty run M=1 (us)".into(),
        String::new(),
        us(r1.wall()),
        us(r1.time()),
        String::new(),
        String::new(),
    ]);
    t.note(format!(
        "{m} units of 1 item, empty CPU closure, {workers} worker(s); per package = \
         (T_M - T_1) / (M / workers). wall: around Engine::run; engine: Report.time_s."
    ));
    Ok(json!({
        "workers": workers,
        "units": m,
        "m1": r1.json(),
        "m_large": rm.json(),
        "overhead_per_package_wall_s": pkg_wall,
        "overhead_per_package_engine_s": pkg_engine,
        "run_overhead_wall_s": r1.wall(),
        "run_overhead_engine_s": r1.time(),
        "target_per_package_s": 1e-6,
        "pass": pkg_wall < 1e-6,
    }))
}

// ---------------------------------------------------------------- 3. GPU gaps

fn gap_row(t: &mut Table, name: &str, sched: &Scheduler, runs: &Runs) -> Value {
    let gaps: Vec<_> = runs
        .reports
        .iter()
        .filter_map(|r| {
            r.devices
                .iter()
                .find(|d| d.kind == DeviceKind::Gpu)
                .and_then(|d| d.gpu_gaps)
        })
        .collect();
    let r = runs.mid();
    let pk = r.package_count();
    if gaps.is_empty() {
        t.row(vec![
            name.into(),
            sched.to_string(),
            ms(runs.time()),
            pk.to_string(),
            "n/a".into(),
            "n/a".into(),
            "n/a".into(),
            "0".into(),
            "n/a".into(),
        ]);
        return json!({ "scheduler": sched.to_string(), "runs": runs.json(), "gaps": null });
    }
    let med = median(&gaps.iter().map(|g| g.median_us).collect::<Vec<_>>());
    let total_count: usize = gaps.iter().map(|g| g.count).sum();
    let mean =
        gaps.iter().map(|g| g.mean_us * g.count as f64).sum::<f64>() / total_count.max(1) as f64;
    let max = gaps.iter().map(|g| g.max_us).fold(0.0, f64::max);
    let count = total_count as f64 / gaps.len() as f64;
    t.row(vec![
        name.into(),
        sched.to_string(),
        ms(runs.time()),
        pk.to_string(),
        format!("{med:.2}"),
        format!("{mean:.2}"),
        format!("{max:.2}"),
        format!("{count:.0}"),
        target(med < 10.0, "< 10 us"),
    ]);
    json!({
        "scheduler": sched.to_string(),
        "runs": runs.json(),
        "gap_median_us": med,
        "gap_mean_us": mean,
        "gap_max_us": max,
        "gaps_per_run": count,
        "per_run": gaps.iter().map(|g| json!({
            "count": g.count, "median_us": g.median_us, "mean_us": g.mean_us, "max_us": g.max_us
        })).collect::<Vec<_>>(),
        "target_median_us": 10.0,
        "pass": med < 10.0,
    })
}

fn bench_gpu_gap(o: &Opts, e: &Engine, t: &mut Table) -> Result<Value, String> {
    let mut out = Vec::new();
    let mut saxpy = Saxpy::new(e, o.saxpy).map_err(|x| x.to_string())?;
    for packages in [64, 512] {
        let s = Scheduler::Dynamic { packages };
        let runs = repeat(o, || saxpy.run(e, &s, Devices::GPU))?;
        let name = format!("saxpy {}", o.saxpy);
        out.push(json!({ "workload": name, "result": gap_row(t, &name, &s, &runs) }));
    }
    drop(saxpy);
    let (w, h) = o.mandel;
    let mut mandel = Mandelbrot::new(e, w, h, o.iters).map_err(|x| x.to_string())?;
    // HGuided with the GPU alone is one package (nothing to balance), so its
    // gaps are measured co-executed, where it cuts the range.
    for (s, devices, label) in [
        (Scheduler::Dynamic { packages: 64 }, Devices::GPU, ""),
        (Scheduler::hguided(), Devices::ALL, ", cpu+gpu"),
    ] {
        let runs = repeat(o, || mandel.run(e, &s, devices))?;
        let name = format!("mandelbrot {w}x{h}{label}");
        out.push(json!({ "workload": name, "result": gap_row(t, &name, &s, &runs) }));
    }
    t.note(
        "GPU-only runs except 'cpu+gpu'; gaps from GPU timestamp queries \
         (Report.devices[gpu].gpu_gaps): median = median over reps of each run's median, \
         mean = over all gaps, max = over all runs, count = gaps per run. Timestamps read \
         back by the ring's mode (StampRead; COEXEC_GPU_TIMESTAMPS overrides).",
    );
    Ok(Value::Array(out))
}

// ---------------------------------------------------------------- 4. CPU vs rayon

fn rayon_mandel(pool: &rayon::ThreadPool, p: &MandelParams, out: &mut [u32]) {
    let w = p.width as usize;
    pool.install(|| {
        out.par_chunks_mut(w).enumerate().for_each(|(py, row)| {
            // A local copy, as `mandelbrot_cpu` has (its push constants).
            let p = *p;
            for (px, v) in row.iter_mut().enumerate() {
                *v = mandel_pixel(&p, px as u32, py as u32);
            }
        })
    });
}

fn rayon_saxpy(pool: &rayon::ThreadPool, a: f32, x: &[f32], y: &mut [f32]) {
    pool.install(|| {
        y.par_chunks_mut(4096)
            .zip(x.par_chunks(4096))
            .for_each(|(y, x)| {
                for (y, x) in y.iter_mut().zip(x) {
                    // y + a*x: the same rounding as saxpy_cpu's a*x + y.
                    *y += a * *x;
                }
            })
    });
}

fn saxpy_push(a: f32, n: u64) -> Vec<u8> {
    let mut v = a.to_ne_bytes().to_vec();
    v.extend_from_slice(&(n as u32).to_ne_bytes());
    v
}

fn bench_cpu_vs_rayon(o: &Opts, e: &Engine, t: &mut Table) -> Result<Value, String> {
    let workers = e.workers();
    if workers == 0 {
        return Err("the engine has no CPU workers".into());
    }
    // rayon thread i runs on the PU of engine worker i: same cores.
    let pins = e.core_plan().workers.clone();
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(workers)
        .start_handler(move |i| {
            if let Some(set) = pins.get(i) {
                pin_current_thread(set);
            }
        })
        .build()
        .map_err(|x| x.to_string())?;
    let scheds = [
        Scheduler::hguided(),
        Scheduler::Dynamic {
            packages: workers as u64 * 8,
        },
    ];
    let err = |x: coexec::Error| x.to_string();

    // Mandelbrot: compute bound, irregular. Variants are interleaved rep by
    // rep, so that drift in the machine's load hits them alike.
    let (w, h) = o.mandel;
    let p = MandelParams::view(w, h, o.iters);
    let len = w as usize * h as usize;
    let k = e
        .kernel(
            "mandelbrot",
            Some(spirv::MANDELBROT),
            Some(Arc::new(mandelbrot_cpu)),
            None,
        )
        .map_err(err)?;
    let mut buf: Buffer<u32> = e.buffer(len).map_err(err)?;
    let mut vec_out = vec![0u32; len];
    let space = IndexSpace::D2 {
        width: w,
        height: h,
    };
    let (mut rv, mut rb) = (Runs::default(), Runs::default());
    let mut eng: Vec<Runs> = scheds.iter().map(|_| Runs::default()).collect();
    let mut same = true;
    for i in 0..o.warmup + o.reps {
        let measured = i >= o.warmup;
        let t0 = Instant::now();
        rayon_mandel(&pool, &p, &mut vec_out);
        rv.push(measured, t0, None);
        let t0 = Instant::now();
        rayon_mandel(&pool, &p, buf.as_mut_slice());
        rb.push(measured, t0, None);
        for (s, series) in scheds.iter().zip(&mut eng) {
            buf.as_mut_slice().fill(u32::MAX);
            let t0 = Instant::now();
            let args = Args::new().output(&mut buf).push(&p);
            let r = e.run(&k, args, space, s, Devices::CPU).map_err(err)?;
            series.push(measured, t0, Some(r));
            same &= buf.as_slice() == vec_out.as_slice();
        }
    }
    let mandel = (median(&rb.wall_s), median(&rv.wall_s), eng, Some(same));
    drop(buf);

    // SAXPY: memory bound.
    let n = o.saxpy;
    let a = 2.5f32;
    let ks = e
        .kernel("saxpy", Some(spirv::SAXPY), Some(Arc::new(saxpy_cpu)), None)
        .map_err(err)?;
    let xs = random_f32(1, n as usize);
    let ys = random_f32(2, n as usize);
    let xb = e.buffer_from_slice(&xs).map_err(err)?;
    let mut yb = e.buffer_from_slice(&ys).map_err(err)?;
    let mut yv = ys.clone();
    let push = saxpy_push(a, n);
    let (mut rv, mut rb) = (Runs::default(), Runs::default());
    let mut eng: Vec<Runs> = scheds.iter().map(|_| Runs::default()).collect();
    for i in 0..o.warmup + o.reps {
        let measured = i >= o.warmup;
        let t0 = Instant::now();
        rayon_saxpy(&pool, a, &xs, &mut yv);
        rv.push(measured, t0, None);
        let t0 = Instant::now();
        rayon_saxpy(&pool, a, xb.as_slice(), yb.as_mut_slice());
        rb.push(measured, t0, None);
        for (s, series) in scheds.iter().zip(&mut eng) {
            let t0 = Instant::now();
            let args = Args::new().input(&xb).output(&mut yb).push_bytes(&push);
            let r = e
                .run(&ks, args, IndexSpace::D1(n), s, Devices::CPU)
                .map_err(err)?;
            series.push(measured, t0, Some(r));
        }
    }
    let saxpy = (median(&rb.wall_s), median(&rv.wall_s), eng, None);

    let mut list = Vec::new();
    for (name, (t_rb, t_rv, eng, same)) in [
        (format!("mandelbrot {w}x{h}"), mandel),
        (format!("saxpy {n}"), saxpy),
    ] {
        for (s, runs) in scheds.iter().zip(eng) {
            let ratio = t_rb / runs.wall();
            t.row(vec![
                name.clone(),
                s.to_string(),
                runs.mid().package_count().to_string(),
                ms(runs.wall()),
                ms(t_rb),
                ms(t_rv),
                f3(ratio),
                f3(t_rv / runs.wall()),
                same.map_or("-".into(), |s| if s { "yes".into() } else { "NO".into() }),
                target(ratio >= 0.95, ">= 0.95"),
            ]);
            list.push(json!({
                "workload": name, "scheduler": s.to_string(), "engine": runs.json(),
                "rayon_same_memory_s": t_rb, "rayon_vec_s": t_rv,
                "ratio_rayon_over_engine": ratio, "ratio_rayon_vec_over_engine": t_rv / runs.wall(),
                "output_equals_rayon": same, "target_ratio": 0.95, "pass": ratio >= 0.95,
            }));
        }
    }
    t.note(format!(
        "rayon: ThreadPool of {workers} thread(s) (= engine.workers()), thread i pinned to engine \
         worker i's PU; par_chunks_mut over rows calling mandel_pixel / 4096-element chunks of \
         a*x+y. ratio = T_rayon / T_engine (wall around Engine::run), rayon on the engine's own \
         buffers; 'vec' = rayon into a plain Vec. Variants interleaved rep by rep."
    ));
    Ok(json!({ "workers": workers, "rows": list }))
}

// ---------------------------------------------------------------- 5. GPU vs raw

struct Raw {
    pipeline: ComputePipeline,
    ring: DispatchRing,
}

impl Raw {
    fn new(e: &Engine, spv: &[u8]) -> Result<Raw, String> {
        let words = vkspirv::words_from_bytes(spv).map_err(|x| x.to_string())?;
        let iface = vkspirv::reflect(&words, "main").map_err(|x| x.to_string())?;
        let pipeline =
            ComputePipeline::new(e.device().clone(), &words, iface).map_err(|x| x.to_string())?;
        let ring = DispatchRing::new(e.device().clone(), 2).map_err(|x| x.to_string())?;
        Ok(Raw { pipeline, ring })
    }

    /// One raw dispatch of the whole range and its wait: (wall seconds,
    /// GPU span seconds where the queue has timestamps).
    fn once(
        &mut self,
        set: &BindingSet,
        push: &[u8],
        count: [u32; 3],
    ) -> Result<(f64, Option<f64>), String> {
        let t0 = Instant::now();
        // SAFETY: every earlier ticket of this ring was waited for below, so
        // the slot is idle; `set` was made by this pipeline and its buffers
        // outlive the wait; `push` is the shader's push-constant block
        // (checked against the interface by the caller's sizes).
        let ticket = unsafe {
            self.ring
                .submit(&self.pipeline, set, push, [0, 0, 0], count)
        }
        .map_err(|x| x.to_string())?;
        let done = self
            .ring
            .wait(ticket, 600_000_000_000)
            .map_err(|x| x.to_string())?;
        let wall = t0.elapsed().as_secs_f64();
        if !done {
            return Err("raw dispatch timed out".into());
        }
        let span = self
            .ring
            .span(ticket)
            .map_err(|x| x.to_string())?
            .map(|s| s.end_ns.saturating_sub(s.start_ns) as f64 * 1e-9);
        Ok((wall, span))
    }
}

/// Raw dispatch samples: (wall seconds, GPU span seconds).
type RawSamples = (Vec<f64>, Vec<f64>);

/// Raw dispatches and engine runs (one per scheduler), interleaved rep by
/// rep so that clock and temperature drift hit both alike. Both sides get
/// one warm-up more than `o.warmup`: on lavapipe the first dispatch after a
/// pipeline's first use is still sometimes slow. Returns the raw (walls,
/// spans) and the engine's runs per scheduler.
fn interleaved(
    o: &Opts,
    raw: &mut Raw,
    set: &BindingSet,
    push: &[u8],
    count: [u32; 3],
    scheds: &[Scheduler],
    mut run: impl FnMut(&Scheduler) -> coexec::Result<Report>,
) -> Result<(RawSamples, Vec<Runs>), String> {
    let (mut walls, mut spans) = (Vec::new(), Vec::new());
    let mut runs: Vec<Runs> = scheds.iter().map(|_| Runs::default()).collect();
    let warmup = o.warmup + 1;
    for i in 0..warmup + o.reps {
        let (wall, span) = raw.once(set, push, count)?;
        for (s, r) in scheds.iter().zip(&mut runs) {
            let t = Instant::now();
            let report = run(s).map_err(|e| e.to_string())?;
            r.push(i >= warmup, t, Some(report));
        }
        if i >= warmup {
            walls.push(wall);
            spans.extend(span);
        }
    }
    Ok(((walls, spans), runs))
}

fn bench_gpu_vs_raw(o: &Opts, e: &Engine, t: &mut Table) -> Result<Value, String> {
    let scheds = [Scheduler::hguided(), Scheduler::Static { powers: None }];
    let mut list = Vec::new();
    let mut emit = |name: &str,
                    raw: &RawSamples,
                    s: &Scheduler,
                    runs: &Runs,
                    same: Option<bool>| {
        let raw_t = median(&raw.0);
        let span = if raw.1.is_empty() {
            f64::NAN
        } else {
            median(&raw.1)
        };
        let ratio = raw_t / runs.wall();
        t.row(vec![
            name.into(),
            s.to_string(),
            runs.mid().package_count().to_string(),
            ms(runs.wall()),
            ms(runs.time()),
            ms(raw_t),
            if span.is_nan() {
                "n/a".into()
            } else {
                ms(span)
            },
            f3(ratio),
            match same {
                Some(true) => "yes".into(),
                Some(false) => "NO".into(),
                None => "-".into(),
            },
            target(ratio >= 0.95, ">= 0.95"),
        ]);
        list.push(json!({
            "workload": name, "scheduler": s.to_string(), "engine": runs.json(),
            "raw_wall_s": raw.0, "raw_wall_median_s": raw_t,
            "raw_gpu_span_s": raw.1, "raw_gpu_span_median_s": if span.is_nan() { Value::Null } else { json!(span) },
            "ratio_raw_over_engine": ratio, "output_equals_raw": same,
            "target_ratio": 0.95, "pass": ratio >= 0.95,
        }));
    };

    // Mandelbrot.
    let (w, h) = o.mandel;
    let p = MandelParams::view(w, h, o.iters);
    let k = e
        .kernel("mandelbrot", Some(spirv::MANDELBROT), None, None)
        .map_err(|x| x.to_string())?;
    let mut buf: Buffer<u32> = e
        .buffer(w as usize * h as usize)
        .map_err(|x| x.to_string())?;
    let mut raw = Raw::new(e, spirv::MANDELBROT)?;
    let [lx, ly, _] = k.local_size();
    let count = [w.div_ceil(lx), h.div_ceil(ly), 1];
    let set = raw
        .pipeline
        .bind(&[buf.binding()])
        .map_err(|x| x.to_string())?;
    let push = bytemuck::bytes_of(&p);
    // The raw image first, to compare the engine's output with.
    raw.once(&set, push, count)?;
    let raw_img = buf.as_slice().to_vec();
    let space = IndexSpace::D2 {
        width: w,
        height: h,
    };
    let run = |s: &Scheduler, buf: &mut Buffer<u32>| {
        e.run(&k, Args::new().output(buf).push(&p), space, s, Devices::GPU)
    };
    let (raw_m, runs) = interleaved(o, &mut raw, &set, push, count, &scheds, |s| {
        run(s, &mut buf)
    })?;
    for (s, runs) in scheds.iter().zip(&runs) {
        // One more run into a cleared image: the engine's own output.
        buf.as_mut_slice().fill(u32::MAX);
        run(s, &mut buf).map_err(|x| x.to_string())?;
        let same = buf.as_slice() == raw_img.as_slice();
        emit(&format!("mandelbrot {w}x{h}"), &raw_m, s, runs, Some(same));
    }
    drop(set);
    drop(raw);

    // SAXPY.
    let n = o.saxpy;
    let ks = e
        .kernel("saxpy", Some(spirv::SAXPY), None, None)
        .map_err(|x| x.to_string())?;
    let xb = e
        .buffer_from_slice(&random_f32(1, n as usize))
        .map_err(|x| x.to_string())?;
    let mut yb = e
        .buffer_from_slice(&random_f32(2, n as usize))
        .map_err(|x| x.to_string())?;
    let push = saxpy_push(2.5, n);
    let mut raw = Raw::new(e, spirv::SAXPY)?;
    let groups = n.div_ceil(u64::from(ks.local_size()[0]));
    let count = [
        u32::try_from(groups).map_err(|_| "saxpy: too many work-groups".to_string())?,
        1,
        1,
    ];
    let set = raw
        .pipeline
        .bind(&[xb.binding(), yb.binding()])
        .map_err(|x| x.to_string())?;
    let (raw_s, runs) = interleaved(o, &mut raw, &set, &push, count, &scheds, |s| {
        e.run(
            &ks,
            Args::new().input(&xb).output(&mut yb).push_bytes(&push),
            IndexSpace::D1(n),
            s,
            Devices::GPU,
        )
    })?;
    for (s, runs) in scheds.iter().zip(&runs) {
        emit(&format!("saxpy {n}"), &raw_s, s, runs, None);
    }
    drop(set);
    drop(raw);
    t.note(
        "raw = one DispatchRing::submit of the whole range + wait (an identical pipeline from the \
         same SPIR-V, the same buffers; descriptor set made beforehand), interleaved rep by rep \
         with the engine's runs. ratio = T_raw / T_engine (wall around Engine::run). gpu span = \
         the raw dispatch's GPU timestamps.",
    );
    Ok(Value::Array(list))
}

// ---------------------------------------------------------------- 6. co-execution

fn bench_coexec(o: &Opts, e: &Engine, t: &mut Table) -> Result<Value, String> {
    if e.workers() == 0 {
        return Err("the engine has no CPU workers".into());
    }
    let (w, h) = o.mandel;
    let mut m = Mandelbrot::new(e, w, h, o.iters).map_err(|x| x.to_string())?;
    let hg = Scheduler::hguided();
    // Phase 1: the solo times that the Static and HGuided hints are made of.
    let (mut c1, mut g1) = (Vec::new(), Vec::new());
    for i in 0..o.warmup + o.reps {
        let rc = m.run(e, &hg, Devices::CPU).map_err(|x| x.to_string())?;
        let rg = m.run(e, &hg, Devices::GPU).map_err(|x| x.to_string())?;
        if i >= o.warmup {
            c1.push(rc.time_s);
            g1.push(rg.time_s);
        }
    }
    let powers = vec![1.0 / median(&c1), 1.0 / median(&g1)];
    let configs: Vec<(&str, Devices, Scheduler)> = vec![
        ("CPU alone", Devices::CPU, hg.clone()),
        ("GPU alone", Devices::GPU, hg.clone()),
        (
            "Static (powers 1/T_i)",
            Devices::ALL,
            Scheduler::Static {
                powers: Some(powers.clone()),
            },
        ),
        (
            "Dynamic{5}",
            Devices::ALL,
            Scheduler::Dynamic { packages: 5 },
        ),
        (
            "Dynamic{200}",
            Devices::ALL,
            Scheduler::Dynamic { packages: 200 },
        ),
        (
            "HGuided (hint powers)",
            Devices::ALL,
            Scheduler::HGuided {
                powers: Some(powers.clone()),
                k: coexec_engine::sched::DEFAULT_K,
                min_package: 1,
            },
        ),
        ("HGuided (no hints)", Devices::ALL, hg.clone()),
    ];
    // Phase 2: every configuration (the solo ones again) interleaved rep by
    // rep, so that drift in the machine's load hits them alike; the output is
    // verified after each configuration's last rep.
    let mut runs: Vec<Runs> = configs.iter().map(|_| Runs::default()).collect();
    let mut verified: Vec<(bool, String)> = Vec::new();
    for i in 0..o.warmup + o.reps {
        let last = i + 1 == o.warmup + o.reps;
        for ((_, d, s), se) in configs.iter().zip(&mut runs) {
            let t0 = Instant::now();
            let r = m.run(e, s, *d).map_err(|x| x.to_string())?;
            se.push(i >= o.warmup, t0, Some(r));
            if last {
                let v = m.verify();
                let txt = if v.ok {
                    "yes".to_string()
                } else {
                    format!("NO ({}/{})", v.mismatches, v.checked)
                };
                verified.push((v.ok, txt));
            }
        }
    }
    let (tc, tg) = (runs[0].time(), runs[1].time());
    let t_fast = tc.min(tg);
    let s_max = t_fast * (1.0 / tc + 1.0 / tg);
    let mut list = Vec::new();
    for (((name, d, s), r), (ok, txt)) in configs.iter().zip(&runs).zip(&verified) {
        let co = d.cpu && d.gpu;
        let time = r.time();
        let speedup = t_fast / time;
        let he = speedup / s_max;
        let mid = r.mid();
        let split: Vec<String> = mid.devices.iter().map(|d| d.packages.to_string()).collect();
        let devs = match (d.cpu, d.gpu) {
            (true, true) => "cpu+gpu",
            (true, false) => "cpu",
            _ => "gpu",
        };
        t.row(vec![
            name.to_string(),
            devs.into(),
            ms(time),
            f3(speedup),
            f3(s_max),
            f3(he),
            f3(mid.balance()),
            format!("{} ({})", mid.package_count(), split.join("/")),
            txt.clone(),
            if co {
                target(he >= 0.85, ">= 0.85")
            } else {
                "-".into()
            },
        ]);
        list.push(json!({
            "config": name, "devices": devs, "scheduler": s.to_string(),
            "runs": r.json(), "time_s": time, "speedup": speedup, "s_max": s_max,
            "he": he, "balance": mid.balance(), "packages": mid.package_count(),
            "verified": ok,
        }));
    }
    t.note(format!(
        "mandelbrot {w}x{h}, {} iterations; time = median Report.time_s; solo runs use HGuided. \
         Hint powers [cpu, gpu] = 1/T_i from a first series of solo runs ({:.3e}, {:.3e} 1/s); \
         then all configurations interleaved rep by rep. S = T_fastest / T, S_max = T_fastest * \
         sum 1/T_i (from the interleaved solo runs), HE = S / S_max; packages total (cpu/gpu); \
         HE target 0.85 is the OmpSs paper's figure (informative).",
        o.iters, powers[0], powers[1]
    ));
    Ok(json!({
        "size": format!("{w}x{h}"), "iters": o.iters,
        "hint_powers_per_s": powers, "solo_phase1_cpu_s": c1, "solo_phase1_gpu_s": g1,
        "t_cpu_s": tc, "t_gpu_s": tg, "t_fastest_s": t_fast, "s_max": s_max,
        "rows": list,
    }))
}

// ---------------------------------------------------------------- main

fn headers(name: &str) -> (&'static str, Vec<&'static str>) {
    match name {
        "claim" => (
            "1. claim: cost of one Plan::claim",
            vec!["case", "threads", "claims", "ns/claim/thread", "Mclaims/s"],
        ),
        "cpu_package_overhead" => (
            "2. cpu_package_overhead: Engine::run CPU-only, empty closure",
            vec![
                "case",
                "packages",
                "wall (ms|us)",
                "engine (ms|us)",
                "target",
                "",
            ],
        ),
        "gpu_gap" => (
            "3. gpu_gap: GPU idle gap between consecutive packages (GPU-only)",
            vec![
                "workload",
                "scheduler",
                "time (ms)",
                "packages",
                "median (us)",
                "mean (us)",
                "max (us)",
                "gaps/run",
                "target",
            ],
        ),
        "cpu_vs_rayon" => (
            "4. cpu_vs_rayon: engine CPU-only vs rayon, same work",
            vec![
                "workload",
                "scheduler",
                "packages",
                "engine (ms)",
                "rayon (ms)",
                "rayon vec (ms)",
                "ratio",
                "ratio vec",
                "same out",
                "target",
            ],
        ),
        "gpu_vs_raw" => (
            "5. gpu_vs_raw: engine GPU-only vs one raw dispatch",
            vec![
                "workload",
                "scheduler",
                "packages",
                "engine wall (ms)",
                "engine run (ms)",
                "raw (ms)",
                "raw gpu span (ms)",
                "ratio",
                "same out",
                "target",
            ],
        ),
        _ => (
            "6. coexec_mandelbrot: co-execution vs each device alone",
            vec![
                "config",
                "devices",
                "time (ms)",
                "S",
                "S_max",
                "HE",
                "balance",
                "packages",
                "verified",
                "target HE",
            ],
        ),
    }
}

fn main() {
    let mut o = match parse_args() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(2);
        }
    };
    let selected: Vec<&str> = SECTIONS
        .iter()
        .copied()
        .filter(|s| {
            o.only
                .as_ref()
                .is_none_or(|only| only.iter().any(|x| x == s))
        })
        .collect();
    let needs_engine = selected.iter().any(|s| *s != "claim");
    let needs_gpu = selected
        .iter()
        .any(|s| matches!(*s, "gpu_gap" | "gpu_vs_raw" | "coexec_mandelbrot"));
    let started = Instant::now();
    let mut notes: Vec<String> = Vec::new();

    let engine = if needs_engine {
        let opts = EngineOptions {
            gpu: o.gpu.map_or(GpuChoice::Auto, GpuChoice::Index),
            workers: o.workers,
            validation: Validation::Off,
            ..Default::default()
        };
        match Engine::with_options(opts) {
            Ok(e) => Some(e),
            Err(err) => {
                notes.push(format!("no engine: {err}"));
                None
            }
        }
    } else {
        None
    };
    let mut machine = json!({
        "available_parallelism": std::thread::available_parallelism().map_or(1, |n| n.get()),
    });
    if let Some(e) = &engine {
        let info = e.device().info();
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
    }
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
        let (title, hdr) = headers(name);
        let mut t = Table::new(title, &hdr);
        let t0 = Instant::now();
        let result = match (*name, &engine) {
            ("claim", _) => bench_claim(&o, &mut t),
            (_, None) => Err("skipped: no engine (see note above)".into()),
            (s, Some(e)) if s != "cpu_package_overhead" && s != "cpu_vs_rayon" => {
                if !e.gpu_available() {
                    Err("skipped: the GPU is not available".into())
                } else {
                    match s {
                        "gpu_gap" => bench_gpu_gap(&o, e, &mut t),
                        "gpu_vs_raw" => bench_gpu_vs_raw(&o, e, &mut t),
                        _ => bench_coexec(&o, e, &mut t),
                    }
                }
            }
            ("cpu_package_overhead", Some(e)) => bench_cpu_overhead(&o, e, &mut t),
            (_, Some(e)) => bench_cpu_vs_rayon(&o, e, &mut t),
        };
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
        let text = serde_json::to_string_pretty(&doc).expect("JSON of plain values");
        if let Err(err) = std::fs::write(path, text) {
            eprintln!("error: cannot write {path}: {err}");
            std::process::exit(1);
        }
        println!("wrote {path}");
    }
}
