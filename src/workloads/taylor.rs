//! Taylor series: `ln(1 + x)` and `atan(x)` of every element by Horner's
//! rule with a fixed number of terms (1-D, regular, compute bound).

use super::{par_sum, random_f32, spirv, Verification, Workload};
use crate::{
    Args, Buffer, CpuArgs, Devices, Engine, Footprint, IndexSpace, Kernel, Package, Report, Result,
    Scheduler,
};
use std::sync::Arc;

/// Coefficients per series in the shader's table.
pub const MAX_TERMS: usize = 1024;
/// Terms per series of this workload.
pub const TERMS: u32 = 1024;
/// Items the CPU implementation evaluates side by side (vectorised).
const LANES: usize = 8;

/// Push constants of `shaders/taylor.comp`.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
pub struct Params {
    /// Elements.
    pub n: u32,
    /// Terms per series, `1..=MAX_TERMS`.
    pub terms: u32,
}

/// The Taylor workload.
pub struct Taylor {
    kernel: Kernel,
    x: Buffer<f32>,
    coef: Buffer<f32>,
    lg: Buffer<f32>,
    at: Buffer<f32>,
    params: Params,
}

/// The coefficient table: `ln(1 + x)`'s `(-1)^k / (k + 1)` for `k <
/// MAX_TERMS`, then `atan(x)`'s `(-1)^k / (2k + 1)`.
pub fn coefficients() -> Vec<f32> {
    let sign = |k: usize| if k % 2 == 0 { 1.0 } else { -1.0 };
    (0..MAX_TERMS)
        .map(|k| sign(k) / (k + 1) as f64)
        .chain((0..MAX_TERMS).map(|k| sign(k) / (2 * k + 1) as f64))
        .map(|c| c as f32)
        .collect()
}

/// Both series of `v` with `terms` terms (the shader's float operations,
/// unfused): `(ln(1 + v), atan(v))`.
pub fn series(coef: &[f32], terms: u32, v: f32) -> (f32, f32) {
    let t = (terms as usize).clamp(1, MAX_TERMS);
    let y = v * v;
    let mut l = coef[t - 1];
    let mut a = coef[MAX_TERMS + t - 1];
    for k in (1..t).rev() {
        l = l * v + coef[k - 1];
        a = a * y + coef[MAX_TERMS + k - 1];
    }
    (l * v, a * v)
}

/// The CPU implementation: the elements of one package, `LANES` at a time
/// (the same operations as [`series`] per element).
pub fn taylor_cpu(pkg: &Package, args: &mut CpuArgs<'_>) {
    let p: Params = args.push();
    let x = args.input::<f32>(0);
    let coef = args.input::<f32>(1);
    let lg = args.output::<f32>(2);
    let at = args.output::<f32>(3);
    let xs = &x[pkg.items.start as usize..pkg.items.end as usize];
    let t = (p.terms as usize).clamp(1, MAX_TERMS);
    let (cl, ca) = coef.split_at(MAX_TERMS);
    let mut chunks = xs.chunks_exact(LANES);
    let mut done = 0;
    for xc in chunks.by_ref() {
        let v: [f32; LANES] = std::array::from_fn(|m| xc[m]);
        let y: [f32; LANES] = std::array::from_fn(|m| v[m] * v[m]);
        let mut l = [cl[t - 1]; LANES];
        let mut a = [ca[t - 1]; LANES];
        for k in (1..t).rev() {
            for m in 0..LANES {
                l[m] = l[m] * v[m] + cl[k - 1];
                a[m] = a[m] * y[m] + ca[k - 1];
            }
        }
        for m in 0..LANES {
            lg[done + m] = l[m] * v[m];
            at[done + m] = a[m] * v[m];
        }
        done += LANES;
    }
    for (m, &v) in chunks.remainder().iter().enumerate() {
        (lg[done + m], at[done + m]) = series(coef, p.terms, v);
    }
}

impl Taylor {
    /// `n` random elements in [-0.9, 0.9).
    pub fn new(engine: &Engine, n: u64) -> Result<Self> {
        let len = super::len_1d("taylor", "elements", n)?;
        let kernel = engine.kernel(
            "taylor",
            Some(spirv::TAYLOR),
            Some(Arc::new(taylor_cpu)),
            None,
        )?;
        let xs: Vec<f32> = random_f32(31, len)
            .into_iter()
            .map(|u| 1.8 * u - 0.9)
            .collect();
        let x = engine.buffer_from_slice(&xs)?;
        let coef = engine.buffer_from_slice(&coefficients())?;
        let lg = engine.buffer::<f32>(len)?;
        let at = engine.buffer::<f32>(len)?;
        Ok(Taylor {
            kernel,
            x,
            coef,
            lg,
            at,
            params: Params {
                n: n as u32,
                terms: TERMS,
            },
        })
    }
}

impl Workload for Taylor {
    fn name(&self) -> &'static str {
        "taylor"
    }

    fn space(&self) -> IndexSpace {
        IndexSpace::D1(u64::from(self.params.n))
    }

    fn run(&mut self, engine: &Engine, scheduler: &Scheduler, devices: Devices) -> Result<Report> {
        self.lg.as_mut_slice().fill(f32::NAN);
        self.at.as_mut_slice().fill(f32::NAN);
        let space = self.space();
        let args = Args::new()
            .input(&self.x)
            .footprint(Footprint::Items { per_item: 1 })
            .input(&self.coef)
            .output(&mut self.lg)
            .output(&mut self.at)
            .push(&self.params);
        engine.run(&self.kernel, args, space, scheduler, devices)
    }

    fn verify(&self) -> Verification {
        // Same Horner steps on both devices; the GPU may fuse each step's
        // multiply-add, which changes the last bits of each partial result.
        let n = self.params.n as usize;
        let (x, coef, lg, at) = (&self.x[..], &self.coef[..], &self.lg[..], &self.at[..]);
        const BLOCK: usize = 4096;
        let mismatches = par_sum(n.div_ceil(BLOCK), |b| {
            let mut bad = 0;
            for i in b * BLOCK..((b + 1) * BLOCK).min(n) {
                let (rl, ra) = series(coef, self.params.terms, x[i]);
                let close = |g: f32, r: f32| (g - r).abs() <= 1e-5 * (1.0 + r.abs());
                if !close(lg[i], rl) || !close(at[i], ra) {
                    bad += 1;
                }
            }
            bad
        });
        Verification {
            ok: mismatches == 0,
            checked: 2 * n as u64,
            mismatches,
            rule: "both series of every element: |d| <= 1e-5 * (1 + |ref|)".into(),
        }
    }
}
