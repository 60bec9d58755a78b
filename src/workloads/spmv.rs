//! Sparse matrix-vector product `y = A x` over a CSR matrix whose row
//! lengths follow a power law (Pareto, [`MIN_ROW`] to [`MAX_ROW`] entries,
//! rows in random order), one row per work-item: very irregular cost per
//! item over a sparse structure, with `x` gathered at random columns
//! (1-D). Float sums in storage order; verified against an f64 reference
//! within the rounding-error bound of a recursive f32 sum.

use super::{mix64, par_sum, spirv, spread, unit_f64, Verification, Workload};
use crate::{
    Args, Buffer, CpuArgs, Devices, Engine, IndexSpace, Kernel, Package, Report, Result, Scheduler,
};
use std::sync::Arc;

/// Fewest entries of a row.
pub const MIN_ROW: u32 = 2;
/// Most entries of a row.
pub const MAX_ROW: u32 = 8192;
/// The power law's exponent: `P(len > l) = (MIN_ROW / l)^ALPHA`.
pub const ALPHA: f64 = 1.1;
/// Rows the verification recomputes at most (evenly spread).
const CHECK_ROWS: usize = 1 << 16;

/// Push constants of `shaders/spmv.comp`.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
pub struct Params {
    /// Rows.
    pub n: u32,
}

/// The sparse matrix-vector workload.
pub struct Spmv {
    kernel: Kernel,
    row_ptr: Buffer<u32>,
    cols: Buffer<u32>,
    vals: Buffer<f32>,
    x: Buffer<f32>,
    y: Buffer<f32>,
    n: u32,
}

/// The length of row `i`: `floor(MIN_ROW / u^(1 / ALPHA))` for a uniform
/// `u` in (0, 1] drawn from `i`, at most [`MAX_ROW`].
pub fn row_len(i: u64) -> u32 {
    let u = 1.0 - unit_f64(mix64(i ^ 0x5EED_0001));
    let l = f64::from(MIN_ROW) / u.powf(1.0 / ALPHA);
    l.min(f64::from(MAX_ROW)) as u32
}

/// Entry `k` of row `i` of an `n`-column matrix: `(column, value)`, value
/// in [-1, 1).
pub fn entry(i: u64, k: u32, n: u64) -> (u32, f32) {
    let h = mix64((i << 14) ^ u64::from(k) ^ 0x5EED_0002_0000_0000);
    let col = ((h >> 32) * n) >> 32;
    let val = (h & 0xFF_FFFF) as f32 / (1u32 << 23) as f32 - 1.0;
    (col as u32, val)
}

/// The CPU implementation: the rows of one package, each summed in
/// storage order (as the shader).
pub fn spmv_cpu(pkg: &Package, args: &mut CpuArgs<'_>) {
    let row_ptr = args.input::<u32>(0);
    let cols = args.input::<u32>(1);
    let vals = args.input::<f32>(2);
    let x = args.input::<f32>(3);
    let y = args.output::<f32>(4);
    let rows = pkg.items.start as usize..pkg.items.end as usize;
    for (out, i) in y.iter_mut().zip(rows) {
        let (a, b) = (row_ptr[i] as usize, row_ptr[i + 1] as usize);
        *out = cols[a..b]
            .iter()
            .zip(&vals[a..b])
            .fold(0.0f32, |s, (&c, &v)| s + v * x[c as usize]);
    }
}

/// Row `i` in f64 (reference): the sum and the sum of the terms' magnitudes.
pub fn row_reference(
    row_ptr: &[u32],
    cols: &[u32],
    vals: &[f32],
    x: &[f32],
    i: usize,
) -> (f64, f64) {
    let (a, b) = (row_ptr[i] as usize, row_ptr[i + 1] as usize);
    (a..b).fold((0.0, 0.0), |(s, m), k| {
        let t = f64::from(vals[k]) * f64::from(x[cols[k] as usize]);
        (s + t, m + t.abs())
    })
}

impl Spmv {
    /// An `n x n` matrix of [`row_len`] entries per row and a random `x`.
    pub fn new(engine: &Engine, n: u64) -> Result<Self> {
        let len = super::len_1d("spmv", "rows", n)?;
        let lens: Vec<u32> = (0..n).map(row_len).collect();
        let nnz: u64 = lens.iter().map(|&l| u64::from(l)).sum();
        if nnz > u64::from(u32::MAX) {
            return Err(crate::Error::SizeOverflow(format!(
                "spmv: {n} rows have {nnz} entries (at most 2^32 - 1)"
            )));
        }
        let mut row_ptr = Vec::with_capacity(len + 1);
        let (mut cols, mut vals) = (
            Vec::with_capacity(nnz as usize),
            Vec::with_capacity(nnz as usize),
        );
        row_ptr.push(0u32);
        for (i, &l) in lens.iter().enumerate() {
            for k in 0..l {
                let (c, v) = entry(i as u64, k, n);
                cols.push(c);
                vals.push(v);
            }
            row_ptr.push(cols.len() as u32);
        }
        let x: Vec<f32> = (0..n)
            .map(|i| unit_f64(mix64(i ^ 0x5EED_0003)) as f32)
            .collect();
        let kernel = engine.kernel("spmv", Some(spirv::SPMV), Some(Arc::new(spmv_cpu)), None)?;
        Ok(Spmv {
            kernel,
            row_ptr: engine.buffer_from_slice(&row_ptr)?,
            cols: engine.buffer_from_slice(&cols)?,
            vals: engine.buffer_from_slice(&vals)?,
            x: engine.buffer_from_slice(&x)?,
            y: engine.buffer::<f32>(len)?,
            n: n as u32,
        })
    }

    /// Stored entries.
    pub fn nnz(&self) -> usize {
        self.cols.len()
    }

    /// `y` of the last run.
    pub fn y(&self) -> &[f32] {
        &self.y
    }

    /// `y`, writable (to check that a wrong output fails verification).
    pub fn y_mut(&mut self) -> &mut [f32] {
        self.y.as_mut_slice()
    }
}

impl Workload for Spmv {
    fn name(&self) -> &'static str {
        "spmv"
    }

    fn space(&self) -> IndexSpace {
        IndexSpace::D1(u64::from(self.n))
    }

    fn run(&mut self, engine: &Engine, scheduler: &Scheduler, devices: Devices) -> Result<Report> {
        self.y.as_mut_slice().fill(f32::NAN);
        let space = self.space();
        let args = Args::new()
            .input(&self.row_ptr)
            .input(&self.cols)
            .input(&self.vals)
            .input(&self.x)
            .output(&mut self.y)
            .push(&Params { n: self.n });
        engine.run(&self.kernel, args, space, scheduler, devices)
    }

    fn verify(&self) -> Verification {
        // A recursive f32 sum of L products (fused or not) is within
        // (L + 1) * 2^-24 * sum |terms| (to first order) of the exact sum.
        let n = self.n as usize;
        let (rp, cols, vals, x, y) = (
            &self.row_ptr[..],
            &self.cols[..],
            &self.vals[..],
            &self.x[..],
            &self.y[..],
        );
        let unwritten = y.iter().filter(|v| !v.is_finite()).count() as u64;
        let idx = spread(n, CHECK_ROWS);
        let mismatches = par_sum(idx.len(), |k| {
            let i = idx[k];
            let (r, mag) = row_reference(rp, cols, vals, x, i);
            let len = f64::from(rp[i + 1] - rp[i]);
            let tol = 2.0 * (len + 1.0) * f64::from(f32::EPSILON) * mag + 1e-30;
            u64::from(super::off(f64::from(y[i]) - r, tol))
        });
        Verification::sampled(
            idx.len() as u64,
            mismatches,
            unwritten,
            format!(
                "every row finite; |d| <= 2 (len + 1) eps_f32 sum|a x| against f64 on {} of {n} rows (evenly spread)",
                idx.len()
            ),
        )
    }
}
