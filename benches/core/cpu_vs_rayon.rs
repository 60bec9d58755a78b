//! Section 4, `cpu_vs_rayon`: the engine CPU-only against rayon on the same work.

use crate::args::Opts;
use crate::stats::{median, Runs};
use crate::table::{f3, ms, target, Table};
use coexec::workloads::mandelbrot::{mandel_pixel, mandelbrot_cpu, Params as MandelParams};
use coexec::workloads::saxpy::saxpy_cpu;
use coexec::workloads::{random_f32, spirv};
use coexec::{Args, Buffer, Devices, Engine, IndexSpace, Scheduler};
use coexec_engine::exec::topology::pin_current_thread;
use rayon::prelude::*;
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Instant;

pub(crate) fn rayon_mandel(pool: &rayon::ThreadPool, p: &MandelParams, out: &mut [u32]) {
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

pub(crate) fn rayon_saxpy(pool: &rayon::ThreadPool, a: f32, x: &[f32], y: &mut [f32]) {
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

pub(crate) fn saxpy_push(a: f32, n: u64) -> Vec<u8> {
    let mut v = a.to_ne_bytes().to_vec();
    v.extend_from_slice(&(n as u32).to_ne_bytes());
    v
}

pub(crate) fn bench_cpu_vs_rayon(o: &Opts, e: &Engine, t: &mut Table) -> Result<Value, String> {
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
