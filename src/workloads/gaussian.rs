//! Gaussian blur: a 33 x 33 weighted window over an f32 image, borders
//! clamped, one work-item per output pixel (2-D, regular).

use super::{off, par_sum, random_f32, spirv, spread, Verification, Workload};
use crate::{
    Args, Buffer, CpuArgs, Devices, Engine, IndexSpace, Kernel, Package, Report, Result, Scheduler,
};
use std::sync::Arc;

/// Filter radius: the window is `2 * RADIUS + 1` taps in each dimension.
pub const RADIUS: usize = 16;
/// Taps per dimension.
pub const SIDE: usize = 2 * RADIUS + 1;

/// Rows the verification recomputes at most (evenly spread).
const CHECK_ROWS: usize = 256;

/// Push constants of `shaders/gaussian.comp`.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
pub struct Params {
    /// Image width.
    pub width: u32,
    /// Image height.
    pub height: u32,
}

/// The Gaussian blur workload.
pub struct Gaussian {
    kernel: Kernel,
    img: Buffer<f32>,
    weights: Buffer<f32>,
    out: Buffer<f32>,
    params: Params,
}

/// The normalised 2-D Gaussian weights (sigma = RADIUS / 2), row-major
/// `SIDE x SIDE`.
pub fn weights() -> Vec<f32> {
    let sigma = RADIUS as f64 / 2.0;
    let r = RADIUS as f64;
    let raw: Vec<f64> = (0..SIDE * SIDE)
        .map(|k| {
            let (dx, dy) = ((k % SIDE) as f64 - r, (k / SIDE) as f64 - r);
            (-(dx * dx + dy * dy) / (2.0 * sigma * sigma)).exp()
        })
        .collect();
    let total: f64 = raw.iter().sum();
    raw.iter().map(|w| (w / total) as f32).collect()
}

/// One output pixel, the reference order: `dy` ascending, then `dx`.
pub fn blur_pixel(img: &[f32], w: &[f32], width: usize, height: usize, x: usize, y: usize) -> f32 {
    let mut sum = 0.0f32;
    for dy in 0..SIDE {
        let yy = (y + dy).saturating_sub(RADIUS).min(height - 1);
        let row = &img[yy * width..(yy + 1) * width];
        for dx in 0..SIDE {
            let xx = (x + dx).saturating_sub(RADIUS).min(width - 1);
            sum += w[dy * SIDE + dx] * row[xx];
        }
    }
    sum
}

/// The CPU implementation: the rows of one package. It accumulates whole
/// rows tap by tap (vectorisable), which adds each pixel's products in the
/// same order as [`blur_pixel`].
pub fn gaussian_cpu(pkg: &Package, args: &mut CpuArgs<'_>) {
    let p: Params = args.push();
    let img = args.input::<f32>(0);
    let w = args.input::<f32>(1);
    let out = args.output::<f32>(2);
    let (width, height) = (p.width as usize, p.height as usize);
    let rows = pkg.rows.clone().unwrap_or(0..0);
    for (r, y) in rows.enumerate() {
        let acc = &mut out[r * width..(r + 1) * width];
        acc.fill(0.0);
        for dy in 0..SIDE {
            let yy = (y as usize + dy).saturating_sub(RADIUS).min(height - 1);
            let src = &img[yy * width..(yy + 1) * width];
            for dx in 0..SIDE {
                let wt = w[dy * SIDE + dx];
                // Source column of x is clamp(x + dx - RADIUS): x < lo reads
                // column 0, x >= hi reads column width - 1.
                let lo = RADIUS.saturating_sub(dx).min(width);
                let hi = (width + RADIUS).saturating_sub(dx).min(width).max(lo);
                for a in &mut acc[..lo] {
                    *a += wt * src[0];
                }
                if hi > lo {
                    let off = lo + dx - RADIUS;
                    for (a, s) in acc[lo..hi].iter_mut().zip(&src[off..off + (hi - lo)]) {
                        *a += wt * *s;
                    }
                }
                for a in &mut acc[hi..] {
                    *a += wt * src[width - 1];
                }
            }
        }
    }
}

impl Gaussian {
    /// A random `width` x `height` image.
    pub fn new(engine: &Engine, width: u32, height: u32) -> Result<Self> {
        let len = usize::try_from(u64::from(width) * u64::from(height))
            .ok()
            .filter(|&l| l > 0 && l <= u32::MAX as usize)
            .ok_or_else(|| crate::Error::SizeOverflow(format!("image {width}x{height}")))?;
        let kernel = engine.kernel(
            "gaussian",
            Some(spirv::GAUSSIAN),
            Some(Arc::new(gaussian_cpu)),
            None,
        )?;
        let img = engine.buffer_from_slice(&random_f32(11, len))?;
        let weights = engine.buffer_from_slice(&weights())?;
        let out = engine.buffer::<f32>(len)?;
        Ok(Gaussian {
            kernel,
            img,
            weights,
            out,
            params: Params { width, height },
        })
    }

    /// The blurred image of the last run, row-major.
    pub fn image(&self) -> &[f32] {
        &self.out
    }
}

impl Workload for Gaussian {
    fn name(&self) -> &'static str {
        "gaussian"
    }

    fn space(&self) -> IndexSpace {
        IndexSpace::D2 {
            width: self.params.width,
            height: self.params.height,
        }
    }

    fn run(&mut self, engine: &Engine, scheduler: &Scheduler, devices: Devices) -> Result<Report> {
        self.out.as_mut_slice().fill(f32::NAN);
        let space = self.space();
        let args = Args::new()
            .input(&self.img)
            .input(&self.weights)
            .output(&mut self.out)
            .push(&self.params);
        engine.run(&self.kernel, args, space, scheduler, devices)
    }

    fn verify(&self) -> Verification {
        // Values are in [0, 1) and the weights sum to 1; 289 products summed
        // in the same order, but the GPU may fuse multiply-adds.
        let (w, h) = (self.params.width as usize, self.params.height as usize);
        let (img, wts, out) = (&self.img[..], &self.weights[..], &self.out[..]);
        let unwritten = par_sum(h, |y| {
            out[y * w..(y + 1) * w]
                .iter()
                .filter(|v| !v.is_finite())
                .count() as u64
        });
        let rows = spread(h, CHECK_ROWS);
        let mismatches = par_sum(rows.len(), |k| {
            let y = rows[k];
            (0..w)
                .filter(|&x| {
                    let r = blur_pixel(img, wts, w, h, x, y);
                    off(
                        f64::from(out[y * w + x] - r),
                        1e-4 * (1.0 + f64::from(r.abs())),
                    )
                })
                .count() as u64
        });
        let checked = (rows.len() * w) as u64;
        Verification::sampled(
            checked,
            mismatches,
            unwritten,
            format!(
                "every pixel finite; |d| <= 1e-4 * (1 + |ref|) on {} of {h} rows (evenly spread)",
                rows.len()
            ),
        )
    }
}
