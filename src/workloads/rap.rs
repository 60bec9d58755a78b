//! Resource allocation (RAP): item `i` distributes exactly `B_i` units over
//! [`PROJECTS`] projects to maximise the total value, by a dynamic program
//! over its own budget (1-D, irregular). `B_i` grows like `sqrt(i)` up to
//! [`MAX_BUDGET`], so the work per item, `O(PROJECTS * B_i^2 / 2)`, grows
//! linearly along the index range: each package costs more than the one
//! before. Integer arithmetic: verified exactly.

use super::{random_f32, spirv, Verification, Workload, UNWRITTEN};
use crate::{
    Args, Buffer, CpuArgs, Devices, Engine, IndexSpace, Kernel, Package, Report, Result, Scheduler,
};
use std::sync::Arc;

/// Projects (the shader's `K`).
pub const PROJECTS: usize = 16;
/// Largest budget (the shader's `BMAX`).
pub const MAX_BUDGET: usize = 127;
/// Items the verification recomputes at most (evenly spread).
const CHECK_ITEMS: usize = 1 << 16;
const ROW: usize = MAX_BUDGET + 1;

/// Push constants of `shaders/rap.comp`.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
pub struct Params {
    /// Items.
    pub n: u32,
}

/// The resource allocation workload.
pub struct Rap {
    kernel: Kernel,
    table: Buffer<u32>,
    items: Buffer<[u32; 2]>,
    best: Buffer<u32>,
    n: u32,
}

/// The budget of item `i` of `n`: `floor(sqrt(i * (MAX_BUDGET + 1)^2 / n))`,
/// in `0..=MAX_BUDGET`, non-decreasing in `i`.
pub fn rap_budget(i: u64, n: u64) -> u32 {
    let v = u128::from(i) * (ROW * ROW) as u128 / u128::from(n.max(1));
    let mut r = (v as f64).sqrt() as u128;
    while r * r > v {
        r -= 1;
    }
    while (r + 1) * (r + 1) <= v {
        r += 1;
    }
    r.min(MAX_BUDGET as u128) as u32
}

/// Inner steps (one max of one sum each) of item `i` of `n`: the first
/// project's `B + 1` values, then `(B + 1)(B + 2) / 2` per further project.
pub fn rap_work(i: u64, n: u64) -> u64 {
    let b = u64::from(rap_budget(i, n));
    (b + 1) + (PROJECTS as u64 - 1) * (b + 1) * (b + 2) / 2
}

/// Project `pr`'s value of `x` units for an item with `seed`.
fn value(table: &[u32], pr: usize, x: usize, seed: u32) -> u32 {
    let h = (seed.wrapping_mul(2 * pr as u32 + 1) ^ (x as u32).wrapping_mul(0x9E37_79B9)) >> 28;
    table[pr * ROW + x] + h
}

/// The best total value of one item `[budget, seed]` (reference: the plain
/// dynamic program, as in the shader).
pub fn rap_item(table: &[u32], item: [u32; 2]) -> u32 {
    let bud = (item[0] as usize).min(MAX_BUDGET);
    let seed = item[1];
    let mut dp = [0u32; ROW];
    for (b, d) in dp.iter_mut().enumerate().take(bud + 1) {
        *d = value(table, 0, b, seed);
    }
    for pr in 1..PROJECTS {
        for b in (0..=bud).rev() {
            let mut m = 0;
            for x in 0..=b {
                m = m.max(dp[b - x] + value(table, pr, x, seed));
            }
            dp[b] = m;
        }
    }
    dp[bud]
}

/// The CPU implementation: the items of one package (each project's values
/// tabulated first, so the inner loop is a vectorisable max of sums).
pub fn rap_cpu(pkg: &Package, args: &mut CpuArgs<'_>) {
    let table = args.input::<u32>(0);
    let items = args.input::<[u32; 2]>(1);
    let out = args.output::<u32>(2);
    let items = &items[pkg.items.start as usize..pkg.items.end as usize];
    let mut dp = [0u32; ROW];
    let mut fv = [0u32; ROW];
    for (o, it) in out.iter_mut().zip(items) {
        let bud = (it[0] as usize).min(MAX_BUDGET);
        let seed = it[1];
        for (b, d) in dp.iter_mut().enumerate().take(bud + 1) {
            *d = value(table, 0, b, seed);
        }
        for pr in 1..PROJECTS {
            for (x, f) in fv.iter_mut().enumerate().take(bud + 1) {
                *f = value(table, pr, x, seed);
            }
            for b in (0..=bud).rev() {
                let m = dp[..=b]
                    .iter()
                    .rev()
                    .zip(&fv[..=b])
                    .map(|(d, f)| d + f)
                    .max()
                    .unwrap_or(0);
                dp[b] = m;
            }
        }
        *o = dp[bud];
    }
}

/// The value table: project `pr` gives `a_pr * isqrt(256 x) + b_pr * x`
/// for `x` units (concave, increasing), `a_pr` in 10..60, `b_pr` in 0..4.
pub fn table() -> Vec<u32> {
    let r = random_f32(71, 2 * PROJECTS);
    let mut t = Vec::with_capacity(PROJECTS * ROW);
    for pr in 0..PROJECTS {
        let a = 10 + (50.0 * r[2 * pr]) as u32;
        let b = (4.0 * r[2 * pr + 1]) as u32;
        for x in 0..ROW as u32 {
            t.push(a * ((256 * x) as f64).sqrt() as u32 + b * x);
        }
    }
    t
}

impl Rap {
    /// `n` items, item `i` with budget [`rap_budget`]`(i, n)`.
    pub fn new(engine: &Engine, n: u64) -> Result<Self> {
        let len = super::len_1d("rap", "items", n)?;
        let kernel = engine.kernel("rap", Some(spirv::RAP), Some(Arc::new(rap_cpu)), None)?;
        let items: Vec<[u32; 2]> = (0..n)
            .map(|i| {
                let mut z = i.wrapping_add(1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
                z = (z ^ (z >> 31)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
                [rap_budget(i, n), (z >> 32) as u32]
            })
            .collect();
        let table = engine.buffer_from_slice(&table())?;
        let items = engine.buffer_from_slice(&items)?;
        let best = engine.buffer::<u32>(len)?;
        Ok(Rap {
            kernel,
            table,
            items,
            best,
            n: n as u32,
        })
    }

    /// The best values of the last run.
    pub fn best(&self) -> &[u32] {
        &self.best
    }
}

impl Workload for Rap {
    fn name(&self) -> &'static str {
        "rap"
    }

    fn space(&self) -> IndexSpace {
        IndexSpace::D1(u64::from(self.n))
    }

    fn run(&mut self, engine: &Engine, scheduler: &Scheduler, devices: Devices) -> Result<Report> {
        self.best.as_mut_slice().fill(UNWRITTEN);
        let space = self.space();
        let args = Args::new()
            .input(&self.table)
            .input(&self.items)
            .output(&mut self.best)
            .push(&Params { n: self.n });
        engine.run(&self.kernel, args, space, scheduler, devices)
    }

    fn verify(&self) -> Verification {
        let (table, items) = (&self.table[..], &self.items[..]);
        super::verify_exact_u32(&self.best, CHECK_ITEMS, |i| rap_item(table, items[i]))
    }
}
