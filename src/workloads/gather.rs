//! Sparse gather: item `i` sums `table[index(i, k)]` over [`K`]
//! pseudo-random indices (a 32-bit hash of `i * K + k`, computed in place)
//! into a table of up to [`MAX_TABLE`] words (64 MiB), larger than the
//! caches: latency-bound random access (1-D). Sums wrap modulo 2^32:
//! verified exactly.

use super::{mix64, spirv, Verification, Workload, UNWRITTEN};
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
/// Items the verification recomputes at most (evenly spread).
const CHECK_ITEMS: usize = 1 << 18;

/// Push constants of `shaders/gather.comp`.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
pub struct Params {
    /// Items.
    pub n: u32,
    /// Table length minus one (the length is a power of two).
    pub mask: u32,
}

/// The sparse gather workload.
pub struct Gather {
    kernel: Kernel,
    table: Buffer<u32>,
    out: Buffer<u32>,
    n: u32,
}

/// A 32-bit hash (Wellons' lowbias32), as the shader's.
pub fn hash32(mut x: u32) -> u32 {
    x ^= x >> 16;
    x = x.wrapping_mul(0x7FEB_352D);
    x ^= x >> 15;
    x = x.wrapping_mul(0x846C_A68B);
    x ^ (x >> 16)
}

/// The table index of read `k` of item `i` (`mask`: table length - 1).
pub fn index(i: u32, k: u32, mask: u32) -> u32 {
    hash32(i.wrapping_mul(K as u32).wrapping_add(k)) & mask
}

/// The table length for `n` items: `16 n` rounded up to a power of two,
/// within `[2^12, MAX_TABLE]`.
pub fn table_len(n: u64) -> usize {
    (n.saturating_mul(16).next_power_of_two() as usize).clamp(1 << 12, MAX_TABLE)
}

/// The CPU implementation: the items of one package, each index hashed
/// first (a vectorisable loop), then the table read at them.
pub fn gather_cpu(pkg: &Package, args: &mut CpuArgs<'_>) {
    let p: Params = args.push();
    let table = args.input::<u32>(0);
    let out = args.output::<u32>(1);
    let mut idx = [0u32; K];
    for (o, i) in out.iter_mut().zip(pkg.items.start as u32..) {
        for (k, j) in idx.iter_mut().enumerate() {
            *j = index(i, k as u32, p.mask);
        }
        *o = idx
            .iter()
            .fold(0u32, |s, &j| s.wrapping_add(table[j as usize]));
    }
}

/// Item `i`'s sum (reference: the plain loop, indices reduced with `%`).
pub fn gather_item(table: &[u32], i: usize) -> u32 {
    (0..K).fold(0u32, |s, k| {
        let j = hash32((i * K + k) as u32) as usize % table.len();
        s.wrapping_add(table[j])
    })
}

impl Gather {
    /// `n` items over a table of [`table_len`]`(n)` words.
    pub fn new(engine: &Engine, n: u64) -> Result<Self> {
        let len = super::len_1d("gather", "items", n)?;
        if len.checked_mul(K).is_none_or(|l| l > 1usize << 32) {
            return Err(crate::Error::SizeOverflow(format!(
                "gather: {n} items x {K} indices (at most 2^32 - 1)"
            )));
        }
        let t = table_len(n);
        let table: Vec<u32> = (0..t as u64)
            .map(|j| (mix64(j ^ 0x6A7E_0001) as u32) % VALUE_BOUND)
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
        let mask = self.table.len() as u32 - 1;
        let args = Args::new()
            .input(&self.table)
            .output(&mut self.out)
            .push(&Params { n: self.n, mask });
        engine.run(&self.kernel, args, space, scheduler, devices)
    }

    fn verify(&self) -> Verification {
        let table = &self.table[..];
        super::verify_exact_u32(&self.out, CHECK_ITEMS, |i| gather_item(table, i))
    }
}
