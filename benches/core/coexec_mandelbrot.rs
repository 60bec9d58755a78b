//! Section 6, `coexec_mandelbrot`: co-execution against each device alone.

use crate::args::Opts;
use crate::stats::{median, Runs};
use crate::table::{f3, ms, target, Table};
use coexec::workloads::{Mandelbrot, Workload};
use coexec::{Devices, Engine, Scheduler};
use serde_json::{json, Value};
use std::time::Instant;

pub(crate) fn bench_coexec(o: &Opts, e: &Engine, t: &mut Table) -> Result<Value, String> {
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
                k: coexec::DEFAULT_K,
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
