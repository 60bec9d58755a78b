//! Sparse gather: item `i` sums `table[idx[k][i]]` over [`K`] pseudo-random
//! indices into a table of up to [`MAX_TABLE`] words (64 MiB), larger than
//! the caches: latency- and bandwidth-bound random access (1-D). Sums wrap
//! modulo 2^32: verified exactly.

use super::{mix64, par_sum, spirv, spread, Verification, Workload};
use crate::{
    Args, Buffer, CpuArgs, Devices, Engine, IndexSpace, Kernel, Package, Report, Result, Scheduler,
};
use std::sync::Arc;

/// Indices per item (the shader's `K`).
pub const K: usize = 16;
/// Largest table, words.
pub const MAX_TABLE: usize = 1 << 24;
/// Table values are below this, so no sum of `K` reaches [`UNWRITTEN`].
const VALUE_BOUND: u32 = 1 << 24;
/// The output's value before a run: no sum of `K` values can equal it.
const UNWRITTEN: u32 = u32::MAX;
/// Items the verification recomputes at most (evenly spread).
const CHECK_ITEMS: usize = 1 << 18;

/// Push constants of `shaders/gather.comp`.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
pub struct Params {
    /// Items.
    pub n: u32,
}

/// The sparse gather workload.
pub struct Gather {
    kernel: Kernel,
    table: Buffer<u32>,
    idx: Buffer<u32>,
    out: Buffer<u32>,
    n: u32,
}

/// The table length for `n` items: `4 n` rounded up to a power of two,
/// within `[2^12, MAX_TABLE]`.
pub fn table_len(n: u64) -> usize {
    (n.saturating_mul(4).next_power_of_two() as usize).clamp(1 << 12, MAX_TABLE)
}

/// The CPU implementation: one package, index row by index row (each a
/// sequential stream; the table reads are random).
pub fn gather_cpu(pkg: &Package, args: &mut CpuArgs<'_>) {
    let p: Params = args.push();
    let table = args.input::<u32>(0);
    let idx = args.input::<u32>(1);
    let out = args.output::<u32>(2);
    let (a, b) = (pkg.items.start as usize, pkg.items.end as usize);
    out.fill(0);
    for k in 0..K {
        let row = &idx[k * p.n as usize + a..k * p.n as usize + b];
        for (o, &j) in out.iter_mut().zip(row) {
            *o = o.wrapping_add(table[j as usize]);
        }
    }
}

/// Item `i`'s sum (reference: the plain loop).
pub fn gather_item(table: &[u32], idx: &[u32], n: usize, i: usize) -> u32 {
    (0..K).fold(0u32, |s, k| s.wrapping_add(table[idx[k * n + i] as usize]))
}

impl Gather {
    /// `n` items over a table of [`table_len`]`(n)` words.
    pub fn new(engine: &Engine, n: u64) -> Result<Self> {
        let len = super::len_1d("gather", "items", n)?;
        if len.checked_mul(K).is_none_or(|l| l > u32::MAX as usize) {
            return Err(crate::Error::SizeOverflow(format!(
                "gather: {n} items x {K} indices (at most 2^32 - 1)"
            )));
        }
        let t = table_len(n);
        let table: Vec<u32> = (0..t as u64)
            .map(|j| (mix64(j ^ 0x6A7E_0001) as u32) % VALUE_BOUND)
            .collect();
        let idx: Vec<u32> = (0..(len * K) as u64)
            .map(|j| (mix64(j ^ 0x6A7E_0002) as usize & (t - 1)) as u32)
            .collect();
        let kernel = engine.kernel(
            "gather",
            Some(spirv::GATHER),
            Some(Arc::new(gather_cpu)),
            None,
        )?;
        Ok(Gather {
            kernel,
            table: engine.buffer_from_slice(&table)?,
            idx: engine.buffer_from_slice(&idx)?,
            out: engine.buffer::<u32>(len)?,
            n: n as u32,
        })
    }

    /// The sums of the last run.
    pub fn sums(&self) -> &[u32] {
        &self.out
    }

    /// The sums, writable (to check that a wrong output fails verification).
    pub fn sums_mut(&mut self) -> &mut [u32] {
        self.out.as_mut_slice()
    }
}

impl Workload for Gather {
    fn name(&self) -> &'static str {
        "gather"
    }

    fn space(&self) -> IndexSpace {
        IndexSpace::D1(u64::from(self.n))
    }

    fn run(&mut self, engine: &Engine, scheduler: &Scheduler, devices: Devices) -> Result<Report> {
        self.out.as_mut_slice().fill(UNWRITTEN);
        let space = self.space();
        let args = Args::new()
            .input(&self.table)
            .input(&self.idx)
            .output(&mut self.out)
            .push(&Params { n: self.n });
        engine.run(&self.kernel, args, space, scheduler, devices)
    }

    fn verify(&self) -> Verification {
        let n = self.n as usize;
        let (table, idx, out) = (&self.table[..], &self.idx[..], &self.out[..]);
        let unwritten = out.iter().filter(|&&v| v == UNWRITTEN).count() as u64;
        let items = spread(n, CHECK_ITEMS);
        let mismatches = par_sum(items.len(), |k| {
            let i = items[k];
            u64::from(out[i] != gather_item(table, idx, n, i))
        });
        Verification::sampled(
            items.len() as u64,
            mismatches,
            unwritten,
            format!(
                "every item written; exact on {} of {n} items (evenly spread)",
                items.len()
            ),
        )
    }
}
