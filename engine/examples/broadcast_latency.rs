//! Measures the round trip of an empty `Pool::broadcast` (median over 10k broadcasts).
//!
//! `cargo run --release --example broadcast_latency [threads]` (default: one per planned worker).

use std::time::Instant;

use coexec_engine::exec::pool::{Pool, ThreadSpec};
use coexec_engine::exec::topology::{CpuTopology, PlanRequest};

fn main() {
    let topo = CpuTopology::detect();
    print!("{topo}");
    let workers = std::env::args()
        .nth(1)
        .map(|s| s.parse().expect("thread count"));
    let plan = topo
        .plan(&PlanRequest {
            workers,
            ..PlanRequest::default()
        })
        .expect("core plan");
    let pool = Pool::new(ThreadSpec::cpu_workers(&plan.workers)).expect("pool");
    println!("pool: {} threads, pinned {:?}", pool.len(), pool.pinned());
    for _ in 0..1000 {
        pool.broadcast(&|_| {}).expect("broadcast");
    }
    const N: usize = 10_000;
    let mut samples = Vec::with_capacity(N);
    for _ in 0..N {
        let t = Instant::now();
        pool.broadcast(&|_| {}).expect("broadcast");
        samples.push(t.elapsed());
    }
    samples.sort();
    let pct = |p: f64| samples[((N as f64 - 1.0) * p) as usize];
    println!(
        "empty broadcast round trip over {N}: median {:?}, p10 {:?}, p90 {:?}, p99 {:?}, max {:?}",
        pct(0.5),
        pct(0.1),
        pct(0.9),
        pct(0.99),
        samples[N - 1]
    );
}
