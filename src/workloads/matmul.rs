//! Matrix multiplication `C = A x B` of square f32 matrices, one work-item
//! per element of `C` (2-D, regular); the GPU tiles A and B through shared
//! memory in 16 x 16 tiles.

use super::{off, par_sum, random_f32, spirv, spread, Verification, Workload};
use crate::{
    Args, Buffer, CpuArgs, Devices, Engine, IndexSpace, Kernel, Package, Report, Result, Scheduler,
};
use std::sync::Arc;

/// Rows of `C` the verification recomputes at most (evenly spread).
const CHECK_ROWS: usize = 64;
/// Column block of the CPU implementation.
const JB: usize = 1024;
/// Inner-dimension block of the CPU implementation.
const KB: usize = 128;

/// Push constants of `shaders/matmul.comp`.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
pub struct Params {
    /// Matrix side.
    pub n: u32,
}

/// The matrix multiplication workload.
pub struct MatMul {
    kernel: Kernel,
    a: Buffer<f32>,
    b: Buffer<f32>,
    c: Buffer<f32>,
    n: u32,
}

/// The CPU implementation: the elements of `C` of one package (its columns
/// of its rows: a tile), by an i-k-j loop
/// blocked over columns and k (each element still sums its products in k
/// order, starting from 0).
pub fn matmul_cpu(pkg: &Package, args: &mut CpuArgs<'_>) {
    let p: Params = args.push();
    let n = p.n as usize;
    let a = args.input::<f32>(0);
    let b = args.input::<f32>(1);
    // The package's columns of each of its rows of C (a tile: part of them).
    let cols = pkg.cols.start as usize..pkg.cols.end as usize;
    let mut crows: Vec<(u32, &mut [f32])> = args.output_rows::<f32>(2).collect();
    for (_, c) in crows.iter_mut() {
        c.fill(0.0);
    }
    for j0 in cols.clone().step_by(JB) {
        let j1 = (j0 + JB).min(cols.end);
        for k0 in (0..n).step_by(KB) {
            let k1 = (k0 + KB).min(n);
            for (i, c) in crows.iter_mut() {
                let crow = &mut c[j0 - cols.start..j1 - cols.start];
                let arow = &a[*i as usize * n..(*i as usize + 1) * n];
                for (k, &aik) in arow.iter().enumerate().take(k1).skip(k0) {
                    let brow = &b[k * n + j0..k * n + j1];
                    for (cv, bv) in crow.iter_mut().zip(brow) {
                        *cv += aik * *bv;
                    }
                }
            }
        }
    }
}

impl MatMul {
    /// Random `n x n` matrices with elements in [-1, 1).
    pub fn new(engine: &Engine, n: u64) -> Result<Self> {
        let len = n
            .checked_mul(n)
            .filter(|&l| l > 0 && n <= 65_535)
            .and_then(|l| usize::try_from(l).ok())
            .ok_or_else(|| {
                crate::Error::SizeOverflow(format!("matmul needs 1 <= n <= 65535, got {n}"))
            })?;
        let kernel = engine
            .kernel(
                "matmul",
                Some(spirv::MATMUL),
                Some(Arc::new(matmul_cpu)),
                None,
            )?
            .with_tiles();
        let signed = |seed| -> Vec<f32> {
            random_f32(seed, len)
                .into_iter()
                .map(|v| 2.0 * v - 1.0)
                .collect()
        };
        let a = engine.buffer_from_slice(&signed(21))?;
        let b = engine.buffer_from_slice(&signed(22))?;
        let c = engine.buffer::<f32>(len)?;
        Ok(MatMul {
            kernel,
            a,
            b,
            c,
            n: n as u32,
        })
    }

    /// `C` of the last run, row-major.
    pub fn result(&self) -> &[f32] {
        &self.c
    }
}

impl Workload for MatMul {
    fn name(&self) -> &'static str {
        "matmul"
    }

    fn space(&self) -> IndexSpace {
        IndexSpace::D2 {
            width: self.n,
            height: self.n,
        }
    }

    fn run(&mut self, engine: &Engine, scheduler: &Scheduler, devices: Devices) -> Result<Report> {
        self.c.as_mut_slice().fill(f32::NAN);
        let space = self.space();
        let args = Args::new()
            .input(&self.a)
            .input(&self.b)
            .output(&mut self.c)
            .push(&Params { n: self.n });
        engine.run(&self.kernel, args, space, scheduler, devices)
    }

    fn verify(&self) -> Verification {
        // Sums of n products in f32, in k order on both devices but possibly
        // fused on the GPU; the reference is computed in f64, and the bound
        // scales with the sum of the products' magnitudes.
        let n = self.n as usize;
        let (a, b, c) = (&self.a[..], &self.b[..], &self.c[..]);
        let unwritten = par_sum(n, |i| {
            c[i * n..(i + 1) * n]
                .iter()
                .filter(|v| !v.is_finite())
                .count() as u64
        });
        let rows = spread(n, CHECK_ROWS);
        let mismatches = par_sum(rows.len(), |r| {
            let i = rows[r];
            let mut acc = vec![0.0f64; n];
            let mut mag = vec![0.0f64; n];
            for k in 0..n {
                let aik = f64::from(a[i * n + k]);
                for ((s, m), &bkj) in acc.iter_mut().zip(&mut mag).zip(&b[k * n..(k + 1) * n]) {
                    let t = aik * f64::from(bkj);
                    *s += t;
                    *m += t.abs();
                }
            }
            (0..n)
                .filter(|&j| off(f64::from(c[i * n + j]) - acc[j], 1e-4 * mag[j] + 1e-6))
                .count() as u64
        });
        Verification::sampled((rows.len() * n) as u64, mismatches, unwritten, format!(
                "every element finite; |d| <= 1e-4 * sum_k |a_ik * b_kj| + 1e-6 (f64 reference) on {} of {n} rows (evenly spread)",
                rows.len()
            ))
    }
}
