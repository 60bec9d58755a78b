//! Binomial option pricing: European calls on a Cox-Ross-Rubinstein lattice
//! of [`STEPS`] steps, one option per work-item with a private array of node
//! values (1-D, regular, compute bound: `STEPS^2 / 2` multiply-adds each).

use super::{off, par_sum, random_f32, spirv, spread, Verification, Workload};
use crate::{
    Args, Buffer, CpuArgs, Devices, Engine, IndexSpace, Kernel, Package, Report, Result, Scheduler,
};
use std::sync::Arc;

/// Lattice steps (the shader's `STEPS`).
pub const STEPS: usize = 255;
/// Options the CPU implementation prices side by side (vectorised).
const LANES: usize = 8;
/// Options the verification reprices at most (evenly spread).
const CHECK_OPTIONS: usize = 1 << 16;

/// Push constants of `shaders/binomial.comp`.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
pub struct Params {
    /// Options.
    pub n: u32,
    /// Risk-free rate (continuous, per year).
    pub rate: f32,
}

/// The binomial option pricing workload.
pub struct Binomial {
    kernel: Kernel,
    options: Buffer<[f32; 4]>,
    price: Buffer<f32>,
    params: Params,
}

/// Lattice coefficients of an option `[S, K, T, sigma]`: `(qu, qd, s0,
/// u^2)`, the discounted up and down probabilities, the lowest payoff node's
/// spot and the ratio between neighbouring nodes (the shader's operations).
fn lattice(o: &[f32; 4], rate: f32) -> (f32, f32, f32, f32) {
    let dt = o[2] / STEPS as f32;
    let sq = o[3] * dt.sqrt();
    let u = sq.exp();
    let d = 1.0 / u;
    let pu = ((rate * dt).exp() - d) / (u - d);
    let disc = (-rate * dt).exp();
    let qu = disc * pu;
    (qu, disc - qu, o[0] * (-(STEPS as f32) * sq).exp(), u * u)
}

/// The price of one call option `[S, K, T, sigma]`.
pub fn price_option(o: &[f32; 4], rate: f32) -> f32 {
    let (qu, qd, mut s, u2) = lattice(o, rate);
    let mut v = [0.0f32; STEPS + 1];
    for x in v.iter_mut() {
        *x = (s - o[1]).max(0.0);
        s *= u2;
    }
    for step in (1..=STEPS).rev() {
        for j in 0..step {
            v[j] = qu * v[j + 1] + qd * v[j];
        }
    }
    v[0]
}

/// The CPU implementation: the options of one package, `LANES` at a time
/// (per option the same operations as [`price_option`]).
pub fn binomial_cpu(pkg: &Package, args: &mut CpuArgs<'_>) {
    let p: Params = args.push();
    let opts = args.input::<[f32; 4]>(0);
    let out = args.output::<f32>(1);
    let opts = &opts[pkg.items.start as usize..pkg.items.end as usize];
    let mut chunks = opts.chunks_exact(LANES);
    let mut done = 0;
    for oc in chunks.by_ref() {
        let mut qu = [0.0f32; LANES];
        let mut qd = [0.0f32; LANES];
        let mut s = [0.0f32; LANES];
        let mut u2 = [0.0f32; LANES];
        for m in 0..LANES {
            (qu[m], qd[m], s[m], u2[m]) = lattice(&oc[m], p.rate);
        }
        let mut v = [[0.0f32; LANES]; STEPS + 1];
        for node in v.iter_mut() {
            for m in 0..LANES {
                node[m] = (s[m] - oc[m][1]).max(0.0);
                s[m] *= u2[m];
            }
        }
        for step in (1..=STEPS).rev() {
            for j in 0..step {
                let up = v[j + 1];
                let node = &mut v[j];
                for m in 0..LANES {
                    node[m] = qu[m] * up[m] + qd[m] * node[m];
                }
            }
        }
        out[done..done + LANES].copy_from_slice(&v[0]);
        done += LANES;
    }
    for (m, o) in chunks.remainder().iter().enumerate() {
        out[done + m] = price_option(o, p.rate);
    }
}

impl Binomial {
    /// `n` random options: S in [10, 100), K in [0.7 S, 1.3 S), T in
    /// [0.25, 2) years, sigma in [0.1, 0.5).
    pub fn new(engine: &Engine, n: u64) -> Result<Self> {
        let len = super::len_1d("binomial", "options", n)?;
        let kernel = engine.kernel(
            "binomial",
            Some(spirv::BINOMIAL),
            Some(Arc::new(binomial_cpu)),
            None,
        )?;
        let r = random_f32(41, 4 * len);
        let opts: Vec<[f32; 4]> = r
            .chunks_exact(4)
            .map(|c| {
                let s = 10.0 + 90.0 * c[0];
                [
                    s,
                    s * (0.7 + 0.6 * c[1]),
                    0.25 + 1.75 * c[2],
                    0.1 + 0.4 * c[3],
                ]
            })
            .collect();
        let options = engine.buffer_from_slice(&opts)?;
        let price = engine.buffer::<f32>(len)?;
        Ok(Binomial {
            kernel,
            options,
            price,
            params: Params {
                n: n as u32,
                rate: 0.02,
            },
        })
    }

    /// The prices of the last run.
    pub fn prices(&self) -> &[f32] {
        &self.price
    }
}

impl Workload for Binomial {
    fn name(&self) -> &'static str {
        "binomial"
    }

    fn space(&self) -> IndexSpace {
        IndexSpace::D1(u64::from(self.params.n))
    }

    fn run(&mut self, engine: &Engine, scheduler: &Scheduler, devices: Devices) -> Result<Report> {
        self.price.as_mut_slice().fill(f32::NAN);
        let space = self.space();
        let args = Args::new()
            .input(&self.options)
            .output(&mut self.price)
            .push(&self.params);
        engine.run(&self.kernel, args, space, scheduler, devices)
    }

    fn verify(&self) -> Verification {
        // exp and sqrt are approximate on GPUs (a few ulp), and the node
        // spots are products of 128 factors of u^2, so prices differ from
        // the CPU's in the last ~5 digits.
        let n = self.params.n as usize;
        let (opts, price) = (&self.options[..], &self.price[..]);
        let unwritten = price.iter().filter(|v| !v.is_finite()).count() as u64;
        let idx = spread(n, CHECK_OPTIONS);
        let mismatches = par_sum(idx.len(), |k| {
            let i = idx[k];
            let r = price_option(&opts[i], self.params.rate);
            u64::from(off(
                f64::from(price[i] - r),
                1e-3 * (1.0 + f64::from(r.abs())),
            ))
        });
        Verification::sampled(idx.len() as u64, mismatches, unwritten, format!(
                "every price finite; |d| <= 1e-3 * (1 + |ref|) on {} of {n} options (evenly spread)",
                idx.len()
            ))
    }
}
