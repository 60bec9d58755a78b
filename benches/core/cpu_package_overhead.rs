//! Section 2, `cpu_package_overhead`: `Engine::run` CPU-only with an empty closure.

use crate::args::Opts;
use crate::stats::repeat;
use crate::table::{ms, target, us, Table};
use coexec::{Args, CpuArgs, Devices, Engine, IndexSpace, Package, Scheduler};
use serde_json::{json, Value};
use std::sync::Arc;

pub(crate) fn bench_cpu_overhead(o: &Opts, e: &Engine, t: &mut Table) -> Result<Value, String> {
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
