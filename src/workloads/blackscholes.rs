//! Black-Scholes: European call and put prices of one option per
//! work-item (log, sqrt, two exp and a polynomial cumulative normal each:
//! transcendental compute, 1-D). f32 on the devices, verified against the
//! same formula in f64 within `1e-4 * (1 + S + X)`.

use super::{off, par_sum, random_f32, spirv, spread, Verification, Workload};
use crate::{
    Args, Buffer, CpuArgs, Devices, Engine, Footprint, IndexSpace, Kernel, Package, Report, Result,
    Scheduler,
};
use std::sync::Arc;

/// The riskless rate.
pub const RATE: f32 = 0.02;
/// The volatility.
pub const VOL: f32 = 0.30;
/// Options the verification recomputes at most (evenly spread).
const CHECK_ITEMS: usize = 1 << 18;

/// Push constants of `shaders/blackscholes.comp`.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
pub struct Params {
    /// The riskless rate.
    pub rate: f32,
    /// The volatility.
    pub vol: f32,
    /// Options.
    pub n: u32,
}

/// The Black-Scholes workload.
pub struct BlackScholes {
    kernel: Kernel,
    spot: Buffer<f32>,
    strike: Buffer<f32>,
    years: Buffer<f32>,
    call: Buffer<f32>,
    put: Buffer<f32>,
    n: u32,
}

/// The Abramowitz-Stegun coefficients of the cumulative normal (26.2.17).
const A: [f64; 5] = [
    0.319_381_53,
    -0.356_563_782,
    1.781_477_937,
    -1.821_255_978,
    1.330_274_429,
];
const RSQRT2PI: f64 = 0.398_942_280_401_432_7;

/// The cumulative normal in f32, as the shader.
fn cnd(d: f32) -> f32 {
    let k = 1.0 / (1.0 + 0.231_641_9 * d.abs());
    let poly = k
        * (A[0] as f32
            + k * (A[1] as f32 + k * (A[2] as f32 + k * (A[3] as f32 + k * A[4] as f32))));
    let c = RSQRT2PI as f32 * (-0.5 * d * d).exp() * poly;
    if d > 0.0 {
        1.0 - c
    } else {
        c
    }
}

/// `(call, put)` of spot `s`, strike `x`, `t` years in f32, as the shader.
pub fn price(s: f32, x: f32, t: f32, rate: f32, vol: f32) -> (f32, f32) {
    let sqrt_t = t.sqrt();
    let d1 = ((s / x).ln() + (rate + 0.5 * vol * vol) * t) / (vol * sqrt_t);
    let d2 = d1 - vol * sqrt_t;
    let (c1, c2) = (cnd(d1), cnd(d2));
    let disc = x * (-rate * t).exp();
    (s * c1 - disc * c2, disc * (1.0 - c2) - s * (1.0 - c1))
}

/// `(call, put)` in f64 (reference).
pub fn price_reference(s: f64, x: f64, t: f64, rate: f64, vol: f64) -> (f64, f64) {
    let cnd = |d: f64| {
        let k = 1.0 / (1.0 + 0.231_641_9 * d.abs());
        let poly = k * (A[0] + k * (A[1] + k * (A[2] + k * (A[3] + k * A[4]))));
        let c = RSQRT2PI * (-0.5 * d * d).exp() * poly;
        if d > 0.0 {
            1.0 - c
        } else {
            c
        }
    };
    let sqrt_t = t.sqrt();
    let d1 = ((s / x).ln() + (rate + 0.5 * vol * vol) * t) / (vol * sqrt_t);
    let d2 = d1 - vol * sqrt_t;
    let disc = x * (-rate * t).exp();
    (
        s * cnd(d1) - disc * cnd(d2),
        disc * (1.0 - cnd(d2)) - s * (1.0 - cnd(d1)),
    )
}

/// The CPU implementation: the options of one package.
pub fn blackscholes_cpu(pkg: &Package, args: &mut CpuArgs<'_>) {
    let p: Params = args.push();
    let r = pkg.items.start as usize..pkg.items.end as usize;
    let (s, x, t) = (
        &args.input::<f32>(0)[r.clone()],
        &args.input::<f32>(1)[r.clone()],
        &args.input::<f32>(2)[r],
    );
    let call = args.output::<f32>(3);
    let put = args.output::<f32>(4);
    for k in 0..call.len() {
        (call[k], put[k]) = price(s[k], x[k], t[k], p.rate, p.vol);
    }
}

impl BlackScholes {
    /// `n` options: spot in [5, 30), strike in [1, 100), 0.25 to 10 years.
    pub fn new(engine: &Engine, n: u64) -> Result<Self> {
        let len = super::len_1d("blackscholes", "options", n)?;
        let scale = |seed, lo: f32, hi: f32| -> Vec<f32> {
            random_f32(seed, len)
                .into_iter()
                .map(|u| lo + (hi - lo) * u)
                .collect()
        };
        let kernel = engine.kernel(
            "blackscholes",
            Some(spirv::BLACKSCHOLES),
            Some(Arc::new(blackscholes_cpu)),
            None,
        )?;
        Ok(BlackScholes {
            kernel,
            spot: engine.buffer_from_slice(&scale(41, 5.0, 30.0))?,
            strike: engine.buffer_from_slice(&scale(42, 1.0, 100.0))?,
            years: engine.buffer_from_slice(&scale(43, 0.25, 10.0))?,
            call: engine.buffer::<f32>(len)?,
            put: engine.buffer::<f32>(len)?,
            n: n as u32,
        })
    }

    /// The call prices of the last run.
    pub fn calls(&self) -> &[f32] {
        &self.call
    }

    /// The put prices, writable (to check that a wrong output fails
    /// verification).
    pub fn puts_mut(&mut self) -> &mut [f32] {
        self.put.as_mut_slice()
    }
}

impl Workload for BlackScholes {
    fn name(&self) -> &'static str {
        "blackscholes"
    }

    fn space(&self) -> IndexSpace {
        IndexSpace::D1(u64::from(self.n))
    }

    fn run(&mut self, engine: &Engine, scheduler: &Scheduler, devices: Devices) -> Result<Report> {
        self.call.as_mut_slice().fill(f32::NAN);
        self.put.as_mut_slice().fill(f32::NAN);
        let space = self.space();
        let args = Args::new()
            .input(&self.spot)
            .footprint(Footprint::Items { per_item: 1 })
            .input(&self.strike)
            .footprint(Footprint::Items { per_item: 1 })
            .input(&self.years)
            .footprint(Footprint::Items { per_item: 1 })
            .output(&mut self.call)
            .output(&mut self.put)
            .push(&Params {
                rate: RATE,
                vol: VOL,
                n: self.n,
            });
        engine.run(&self.kernel, args, space, scheduler, devices)
    }

    fn verify(&self) -> Verification {
        // f32 log/exp (a few ulp on GPUs) and the cancellation in the put's
        // difference of two terms up to S and X: errors scale with S + X.
        let n = self.n as usize;
        let (s, x, t) = (&self.spot[..], &self.strike[..], &self.years[..]);
        let (call, put) = (&self.call[..], &self.put[..]);
        let unwritten = call
            .iter()
            .chain(put.iter())
            .filter(|v| !v.is_finite())
            .count() as u64;
        let items = spread(n, CHECK_ITEMS);
        let mismatches = par_sum(items.len(), |k| {
            let i = items[k];
            let (sf, xf) = (f64::from(s[i]), f64::from(x[i]));
            let (c, p) = price_reference(sf, xf, f64::from(t[i]), f64::from(RATE), f64::from(VOL));
            let tol = 1e-4 * (1.0 + sf + xf);
            u64::from(off(f64::from(call[i]) - c, tol)) + u64::from(off(f64::from(put[i]) - p, tol))
        });
        Verification::sampled(
            2 * items.len() as u64,
            mismatches,
            unwritten,
            format!(
                "every price finite; |d| <= 1e-4 * (1 + S + X) against f64 on {} of {n} options (evenly spread)",
                items.len()
            ),
        )
    }
}
