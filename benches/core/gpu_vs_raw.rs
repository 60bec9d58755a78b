//! Section 5, `gpu_vs_raw`: the engine GPU-only against one raw dispatch.

use crate::args::Opts;
use crate::cpu_vs_rayon::saxpy_push;
use crate::stats::{median, Runs};
use crate::table::{f3, ms, target, Table};
use coexec::workloads::mandelbrot::Params as MandelParams;
use coexec::workloads::{random_f32, spirv};
use coexec::{Args, Buffer, Devices, Engine, IndexSpace, Report, Scheduler};
use coexec_engine::vk::{spirv as vkspirv, BindingSet, ComputePipeline, DispatchRing};
use serde_json::{json, Value};
use std::time::Instant;

pub(crate) struct Raw {
    pipeline: ComputePipeline,
    ring: DispatchRing,
}

impl Raw {
    pub(crate) fn new(e: &Engine, spv: &[u8]) -> Result<Raw, String> {
        let words = vkspirv::words_from_bytes(spv).map_err(|x| x.to_string())?;
        let iface = vkspirv::reflect(&words, "main").map_err(|x| x.to_string())?;
        let pipeline =
            ComputePipeline::new(e.device().clone(), &words, iface).map_err(|x| x.to_string())?;
        let ring = DispatchRing::new(e.device().clone(), 2).map_err(|x| x.to_string())?;
        Ok(Raw { pipeline, ring })
    }

    /// One raw dispatch of the whole range and its wait: (wall seconds,
    /// GPU span seconds where the queue has timestamps).
    pub(crate) fn once(
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
pub(crate) fn interleaved(
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

pub(crate) fn bench_gpu_vs_raw(o: &Opts, e: &Engine, t: &mut Table) -> Result<Value, String> {
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
