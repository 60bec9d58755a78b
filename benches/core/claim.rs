//! Section 1, `claim`: the cost of one `Plan::claim`, alone and contended.

use crate::args::Opts;
use crate::stats::median;
use crate::table::Table;
use coexec::Scheduler;
use coexec_engine::sched::{DeviceSlot, Plan, ThroughputEstimator, WorkQueue};
use serde_json::{json, Value};
use std::sync::Barrier;
use std::time::Instant;

/// One thread claims 1-unit packages until exhausted; seconds.
pub(crate) fn claim_uncontended(total: u64) -> Result<f64, String> {
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
pub(crate) fn claim_contended(total: u64, threads: usize) -> Result<(f64, f64, Vec<u64>), String> {
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

pub(crate) fn bench_claim(o: &Opts, t: &mut Table) -> Result<Value, String> {
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
