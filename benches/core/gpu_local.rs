//! Section 7, `gpu_local_vs_raw`: the engine's GPU alone over staged
//! (device-local) memory against a raw Vulkan program of the same shader
//! over device-local buffers ([`RawLocal`]), for data that stays resident
//! and for one-shot data (host in, host out).

use crate::args::Opts;
use crate::raw_local::{Binding, Part, RawLocal};
use crate::stats::{median, Runs};
use crate::table::{f3, ms, target, Table};
use coexec::workloads::{random_f32, spirv};
use coexec::{
    Args, Buffer, Devices, Engine, EngineOptions, GpuChoice, HostCoherence, IndexSpace, Kernel,
    MemoryPlacement, Scheduler, Validation,
};
use serde_json::{json, Value};
use std::time::Instant;

/// One kernel of the section: its shader, buffers, push constants and
/// index space, with the raw program's view of the same.
struct Case {
    name: String,
    spv: &'static [u8],
    /// Initial contents of each binding (f32), in binding order.
    init: Vec<Vec<f32>>,
    /// Which bindings the engine writes (outputs; the others are inputs).
    written: Vec<bool>,
    /// The raw program's transfers per binding.
    parts: Vec<(Part, Part)>,
    push: Vec<u8>,
    space: IndexSpace,
    count: [u32; 3],
    axis: usize,
    /// The CPU reference of each binding after one run from `init` (only
    /// `check` entries are compared: (binding, flat index, value)).
    check: Vec<(usize, usize, f32)>,
}

fn bytes_of_f32s(v: &[f32]) -> &[u8] {
    coexec::bytemuck::cast_slice(v)
}

fn saxpy(n: u64) -> Case {
    let (x, y) = (random_f32(1, n as usize), random_f32(2, n as usize));
    let a = 2.5f32;
    let mut push = a.to_le_bytes().to_vec();
    push.extend((n as u32).to_le_bytes());
    let check = (0..n as usize)
        .step_by((n as usize / 4096).max(1))
        .map(|i| (1, i, a * x[i] + y[i]))
        .collect();
    let per = 256 * 4;
    Case {
        name: format!("saxpy {n}"),
        spv: spirv::SAXPY,
        init: vec![x, y],
        written: vec![false, true],
        parts: vec![
            (Part::PerUnit(per), Part::Nothing),
            (Part::PerUnit(per), Part::PerUnit(per)),
        ],
        push,
        space: IndexSpace::D1(n),
        count: [n.div_ceil(256) as u32, 1, 1],
        axis: 0,
        check,
    }
}

fn matmul(n: u32) -> Case {
    let nn = n as usize * n as usize;
    let (a, b) = (random_f32(3, nn), random_f32(4, nn));
    let at = |r: usize, c: usize| {
        (0..n as usize)
            .map(|k| a[r * n as usize + k] * b[k * n as usize + c])
            .sum::<f32>()
    };
    let check = (0..64)
        .map(|i| {
            let (r, c) = ((i * 7919) % n as usize, (i * 104_729) % n as usize);
            (2, r * n as usize + c, at(r, c))
        })
        .collect();
    // A row of work-groups covers 16 rows of C.
    let per_row = 16 * u64::from(n) * 4;
    Case {
        name: format!("matmul {n}x{n}"),
        spv: spirv::MATMUL,
        init: vec![a, b, vec![0.0; nn]],
        written: vec![false, false, true],
        parts: vec![
            (Part::Whole, Part::Nothing),
            (Part::Whole, Part::Nothing),
            (Part::Nothing, Part::PerUnit(per_row)),
        ],
        push: n.to_le_bytes().to_vec(),
        space: IndexSpace::D2 {
            width: n,
            height: n,
        },
        count: [n.div_ceil(16), n.div_ceil(16), 1],
        axis: 1,
        check,
    }
}

fn jacobi(w: u32, h: u32) -> Case {
    let src = random_f32(5, w as usize * h as usize);
    let wu = w as usize;
    let at = |x: usize, y: usize| {
        let i = y * wu + x;
        if x == 0 || y == 0 || x + 1 == wu || y + 1 == h as usize {
            src[i]
        } else {
            0.25 * (((src[i - wu] + src[i - 1]) + src[i + 1]) + src[i + wu])
        }
    };
    let check = (0..4096)
        .map(|i| {
            let (x, y) = ((i * 7919) % wu, (i * 104_729) % h as usize);
            (1, y * wu + x, at(x, y))
        })
        .collect();
    let per_row = 16 * u64::from(w) * 4;
    let mut push = w.to_le_bytes().to_vec();
    push.extend(h.to_le_bytes());
    Case {
        name: format!("jacobi {w}x{h}"),
        spv: spirv::JACOBI,
        init: vec![src, vec![0.0; wu * h as usize]],
        written: vec![false, true],
        parts: vec![
            (Part::Whole, Part::Nothing),
            (Part::Nothing, Part::PerUnit(per_row)),
        ],
        push,
        space: IndexSpace::D2 {
            width: w,
            height: h,
        },
        count: [w.div_ceil(16), h.div_ceil(16), 1],
        axis: 1,
        check,
    }
}

/// Whether `got` matches the reference within a relative tolerance (the
/// GPU may fuse multiply-adds).
fn close(got: f32, want: f32) -> bool {
    (got - want).abs() <= 1e-3 * want.abs().max(1.0)
}

/// The raw program for `c`, its inputs staged, checked once against the
/// CPU reference (one serial one-shot run).
fn raw_for(c: &Case, index: usize) -> Result<RawLocal, String> {
    let words = coexec_engine::vk::spirv::words_from_bytes(c.spv).map_err(|e| e.to_string())?;
    let bindings: Vec<Binding> = c
        .init
        .iter()
        .zip(&c.parts)
        .map(|(v, &(up, down))| Binding {
            bytes: (v.len() * 4) as u64,
            up,
            down,
        })
        .collect();
    let mut raw = RawLocal::new(index, &words, &bindings, &c.push, c.count, c.axis)?;
    stage(&mut raw, c);
    raw.one_shot(1)?;
    for &(b, i, want) in &c.check {
        let got: f32 = coexec::bytemuck::pod_read_unaligned(&raw.host(b)[i * 4..i * 4 + 4]);
        if !close(got, want) {
            return Err(format!(
                "{}: raw output [{b}][{i}] = {got}, reference {want}",
                c.name
            ));
        }
    }
    stage(&mut raw, c);
    Ok(raw)
}

fn stage(raw: &mut RawLocal, c: &Case) {
    for (i, v) in c.init.iter().enumerate() {
        raw.host(i).copy_from_slice(bytes_of_f32s(v));
    }
}

/// The engine's buffers for `c` and one verified run.
fn engine_for(e: &Engine, c: &Case) -> Result<(Kernel, Vec<Buffer<f32>>), String> {
    let k = e
        .kernel(&c.name, Some(c.spv), None, None)
        .map_err(|x| x.to_string())?;
    let mut bufs: Vec<Buffer<f32>> = c
        .init
        .iter()
        .map(|v| e.buffer_from_slice(v).map_err(|x| x.to_string()))
        .collect::<Result<_, _>>()?;
    run(e, c, &k, &mut bufs)?;
    for &(b, i, want) in &c.check {
        let got = bufs[b].as_slice()[i];
        if !close(got, want) {
            return Err(format!(
                "{}: engine output [{b}][{i}] = {got}, reference {want}",
                c.name
            ));
        }
    }
    Ok((k, bufs))
}

fn run(
    e: &Engine,
    c: &Case,
    k: &Kernel,
    bufs: &mut [Buffer<f32>],
) -> Result<coexec::Report, String> {
    let mut args = Args::new();
    for (b, &w) in bufs.iter_mut().zip(&c.written) {
        args = if w { args.output(b) } else { args.input(b) };
    }
    e.run(
        k,
        args.push_bytes(&c.push),
        c.space,
        &Scheduler::hguided(),
        Devices::GPU,
    )
    .map_err(|x| x.to_string())
}

/// Medians of one case: raw resident, raw one-shot serial, raw one-shot
/// overlapped, engine resident, engine one-shot (wall seconds).
#[derive(Default)]
struct Samples {
    raw_res: Vec<f64>,
    raw_serial: Vec<f64>,
    raw_overlap: Vec<f64>,
    eng_res: Runs,
    eng_shot: Runs,
    /// Lazy host coherence: the run alone, and the host read after it.
    eng_lazy: Runs,
    lazy_read: Vec<f64>,
}

fn measure(
    o: &Opts,
    (e, lazy): (&Engine, &Engine),
    index: usize,
    c: &Case,
    chunks: u64,
) -> Result<Samples, String> {
    let mut raw = raw_for(c, index)?;
    let (k, mut bufs) = engine_for(e, c)?;
    let (lk, mut lbufs) = engine_for(lazy, c)?;
    let mut s = Samples::default();
    let warmup = o.warmup + 1;
    for i in 0..warmup + o.reps {
        let keep = i >= warmup;
        let t = raw.one_shot(1)?;
        let t2 = raw.one_shot(chunks)?;
        raw.upload()?;
        let t3 = raw.resident()?;
        if keep {
            s.raw_serial.push(t);
            s.raw_overlap.push(t2);
            s.raw_res.push(t3);
        }
        // Engine, resident: the host has not written since the last run.
        // Each engine measurement follows an untimed run of the same
        // engine, as the raw program's follows its upload: the GPU switches
        // between the devices' contexts (the raw program's and each
        // engine's), and that switch is not a cost of a program that drives
        // one device.
        run(e, c, &k, &mut bufs)?;
        let t = Instant::now();
        let r = run(e, c, &k, &mut bufs)?;
        s.eng_res.push(keep, t, Some(r));
        // Engine, one-shot: every buffer the raw program uploads written
        // by the host first (the same bytes; the write is what makes the
        // engine upload it again).
        for (b, &(up, _)) in bufs.iter_mut().zip(&c.parts) {
            if up != Part::Nothing {
                let _ = b.as_mut_slice();
            }
        }
        let t = Instant::now();
        let r = run(e, c, &k, &mut bufs)?;
        s.eng_shot.push(keep, t, Some(r));
        // Lazy, resident: the outputs stay in the mirrors; the host's read
        // that downloads them is timed apart.
        run(lazy, c, &lk, &mut lbufs)?;
        let t = Instant::now();
        let r = run(lazy, c, &lk, &mut lbufs)?;
        s.eng_lazy.push(keep, t, Some(r));
        let t = Instant::now();
        for (b, &w) in lbufs.iter().zip(&c.written) {
            if w {
                b.sync().map_err(|x| x.to_string())?;
            }
        }
        if keep {
            s.lazy_read.push(t.elapsed().as_secs_f64());
        }
    }
    Ok(s)
}

/// The section's GPU-only staged engine, with host coherence `coherence`.
fn staged_engine(o: &Opts, coherence: HostCoherence) -> Result<Engine, String> {
    Engine::with_options(EngineOptions {
        gpu: o.gpu.map_or(GpuChoice::Auto, GpuChoice::Index),
        workers: Some(0),
        validation: Validation::Off,
        memory: MemoryPlacement::Staged,
        host_coherence: coherence,
        ..Default::default()
    })
    .map_err(|x| x.to_string())
}

pub(crate) fn bench_gpu_local(o: &Opts, t: &mut Table) -> Result<Value, String> {
    let e = staged_engine(o, HostCoherence::Eager)?;
    let lazy = staged_engine(o, HostCoherence::Lazy)?;
    if !e.gpu_available() {
        return Err("skipped: the GPU is not available".into());
    }
    let index = e.device_info().index;
    let limit = u64::from(e.device_info().max_group_count[0]) * 256;
    let (side, (jw, jh)) = (o.local_matmul, o.local_jacobi);
    let cases = [saxpy(o.saxpy.min(limit)), matmul(side), jacobi(jw, jh)];
    let mut list = Vec::new();
    for c in &cases {
        let s = measure(o, (&e, &lazy), index, c, o.chunks)?;
        let (rr, rs, ro) = (
            median(&s.raw_res),
            median(&s.raw_serial),
            median(&s.raw_overlap),
        );
        let (er, es) = (s.eng_res.wall(), s.eng_shot.wall());
        let (el, lr) = (s.eng_lazy.wall(), median(&s.lazy_read));
        let raw_best = rs.min(ro);
        t.row(vec![
            c.name.clone(),
            ms(rr),
            ms(er),
            f3(rr / er),
            target(rr / er >= 0.95, ">= 0.95"),
            ms(el),
            f3(rr / el),
            ms(lr),
            ms(rs),
            ms(ro),
            ms(es),
            f3(raw_best / es),
            target(raw_best / es >= 0.9, ">= 0.9"),
        ]);
        list.push(json!({
            "workload": c.name, "chunks": o.chunks,
            "raw_resident_s": s.raw_res, "raw_resident_median_s": rr,
            "raw_one_shot_serial_s": s.raw_serial, "raw_one_shot_serial_median_s": rs,
            "raw_one_shot_overlapped_s": s.raw_overlap, "raw_one_shot_overlapped_median_s": ro,
            "engine_resident": s.eng_res.json(), "engine_resident_median_s": er,
            "engine_one_shot": s.eng_shot.json(), "engine_one_shot_median_s": es,
            "ratio_resident": rr / er, "ratio_one_shot": raw_best / es,
            "engine_lazy_resident": s.eng_lazy.json(), "engine_lazy_resident_median_s": el,
            "ratio_lazy_resident": rr / el,
            "lazy_read_s": s.lazy_read, "lazy_read_median_s": lr,
        }));
    }
    t.note(
        "raw = ash alone: device-local buffers, host-visible staging twins, the same SPIR-V. \
         resident: one dispatch of the whole range over data already uploaded. one-shot: upload, \
         compute, download from/to the staging buffers, serial (one command buffer) or in \
         overlapped chunks over transfer and compute queues; the better of the two is the \
         yardstick. Engine: GPU alone, memory staged, wall around Engine::run; resident = no \
         host write since the last run, outputs downloaded before Engine::run returns (eager host \
         coherence); one-shot = every buffer the raw program uploads written by the host first. \
         Engine lazy: HostCoherence::Lazy, wall around Engine::run, outputs left in the mirrors \
         (what an iterative program that does not read between runs pays); lazy read: the \
         download the host's next read of the outputs costs (Buffer::sync), timed apart. \
         Each resident engine run follows an untimed run of the same engine (as the raw \
         resident dispatch follows its upload): the GPU's switch between the devices' contexts \
         is not timed. Outputs of both checked against a CPU reference before timing.",
    );
    Ok(Value::Array(list))
}
