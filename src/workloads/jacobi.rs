//! Jacobi: one sweep of the 2-D Laplace equation from one grid into
//! another, a 5-point stencil (2-D, bandwidth-bound). Interior points
//! become `0.25 * (((up + left) + right) + down)`, border points keep their
//! value. Three f32 additions and an exact scaling, in the same order on
//! every device: verified within one rounding of the f32 reference.

use super::{off, par_sum, random_f32, spirv, Verification, Workload};
use crate::{
    Args, Buffer, CpuArgs, Devices, Engine, Footprint, IndexSpace, Kernel, Package, Report, Result,
    Scheduler,
};
use std::sync::Arc;

/// Push constants of `shaders/jacobi.comp`.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
pub struct Params {
    /// Grid width.
    pub width: u32,
    /// Grid height.
    pub height: u32,
}

/// The Jacobi workload.
pub struct Jacobi {
    kernel: Kernel,
    src: Buffer<f32>,
    dst: Buffer<f32>,
    params: Params,
}

/// Point `(x, y)` after one sweep (reference: the plain formula).
pub fn jacobi_point(src: &[f32], width: usize, height: usize, x: usize, y: usize) -> f32 {
    let i = y * width + x;
    if x == 0 || y == 0 || x + 1 == width || y + 1 == height {
        return src[i];
    }
    0.25 * (((src[i - width] + src[i - 1]) + src[i + 1]) + src[i + width])
}

/// One row of the sweep: `out` is row `y` (row-wise, vectorisable).
fn sweep_row(src: &[f32], out: &mut [f32], width: usize, height: usize, y: usize) {
    let row = &src[y * width..(y + 1) * width];
    if y == 0 || y + 1 == height || width < 3 {
        out.copy_from_slice(row);
        return;
    }
    let (up, down) = (
        &src[(y - 1) * width..y * width],
        &src[(y + 1) * width..(y + 2) * width],
    );
    out[0] = row[0];
    out[width - 1] = row[width - 1];
    for x in 1..width - 1 {
        out[x] = 0.25 * (((up[x] + row[x - 1]) + row[x + 1]) + down[x]);
    }
}

/// The CPU implementation: the rows of one package.
pub fn jacobi_cpu(pkg: &Package, args: &mut CpuArgs<'_>) {
    let p: Params = args.push();
    let src = args.input::<f32>(0);
    let out = args.output::<f32>(1);
    let (w, h) = (p.width as usize, p.height as usize);
    for (r, y) in pkg.rows.clone().unwrap_or(0..0).enumerate() {
        sweep_row(src, &mut out[r * w..(r + 1) * w], w, h, y as usize);
    }
}

impl Jacobi {
    /// A random `width` x `height` grid.
    pub fn new(engine: &Engine, width: u32, height: u32) -> Result<Self> {
        let len = usize::try_from(u64::from(width) * u64::from(height))
            .ok()
            .filter(|&l| l > 0 && l <= u32::MAX as usize)
            .ok_or_else(|| crate::Error::SizeOverflow(format!("jacobi: grid {width}x{height}")))?;
        let kernel = engine.kernel(
            "jacobi",
            Some(spirv::JACOBI),
            Some(Arc::new(jacobi_cpu)),
            None,
        )?;
        Ok(Jacobi {
            kernel,
            src: engine.buffer_from_slice(&random_f32(51, len))?,
            dst: engine.buffer::<f32>(len)?,
            params: Params { width, height },
        })
    }

    /// The grid after the last run's sweep, row-major.
    pub fn grid(&self) -> &[f32] {
        &self.dst
    }

    /// The swept grid, writable (to check that a wrong output fails
    /// verification).
    pub fn grid_mut(&mut self) -> &mut [f32] {
        self.dst.as_mut_slice()
    }
}

impl Workload for Jacobi {
    fn name(&self) -> &'static str {
        "jacobi"
    }

    fn space(&self) -> IndexSpace {
        IndexSpace::D2 {
            width: self.params.width,
            height: self.params.height,
        }
    }

    fn run(&mut self, engine: &Engine, scheduler: &Scheduler, devices: Devices) -> Result<Report> {
        self.dst.as_mut_slice().fill(f32::NAN);
        let space = self.space();
        let args = Args::new()
            .input(&self.src)
            // Each row reads the rows above and below it.
            .footprint(Footprint::rows(1))
            .output(&mut self.dst)
            .push(&self.params);
        engine.run(&self.kernel, args, space, scheduler, devices)
    }

    fn verify(&self) -> Verification {
        // The devices add in the same order and scale by a power of two;
        // allow one rounding's difference (2^-23 relative) should a
        // compiler order the additions otherwise.
        let (w, h) = (self.params.width as usize, self.params.height as usize);
        let (src, dst) = (&self.src[..], &self.dst[..]);
        let unwritten = dst.iter().filter(|v| !v.is_finite()).count() as u64;
        let mismatches = par_sum(h, |y| {
            (0..w)
                .filter(|&x| {
                    let r = jacobi_point(src, w, h, x, y);
                    off(
                        f64::from(dst[y * w + x] - r),
                        2.0 * f64::from(f32::EPSILON) * (1.0 + f64::from(r.abs())),
                    )
                })
                .count() as u64
        });
        Verification::sampled(
            (w * h) as u64,
            mismatches,
            unwritten,
            "every point finite; |d| <= 2^-22 * (1 + |ref|) on every point".into(),
        )
    }
}
