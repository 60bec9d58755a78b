//! Mandelbrot: escape-time iteration count per pixel (2-D, irregular).

use super::{spirv, Verification, Workload};
use crate::{
    Args, Buffer, CpuArgs, Devices, Engine, IndexSpace, Kernel, Package, Report, Result, Scheduler,
};
use std::sync::Arc;

/// The Mandelbrot workload.
pub struct Mandelbrot {
    kernel: Kernel,
    out: Buffer<u32>,
    params: Params,
}

/// Push constants of `shaders/mandelbrot.comp`.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
pub struct Params {
    /// Image width.
    pub width: u32,
    /// Image height.
    pub height: u32,
    /// Iteration cap.
    pub max_iter: u32,
    /// Padding.
    pub pad: u32,
    /// Real part at x = 0.
    pub x0: f32,
    /// Imaginary part at y = 0.
    pub y0: f32,
    /// Step along x.
    pub dx: f32,
    /// Step along y.
    pub dy: f32,
}

impl Params {
    /// The view the workload renders, [-2.2, 1.0] x [-1.5, 1.5], on a
    /// `width` x `height` image with `max_iter` iterations at most.
    pub fn view(width: u32, height: u32, max_iter: u32) -> Self {
        Params {
            width,
            height,
            max_iter,
            pad: 0,
            x0: -2.2,
            y0: -1.5,
            dx: 3.2 / width.max(1) as f32,
            dy: 3.0 / height.max(1) as f32,
        }
    }
}

/// Iteration count of one pixel (same float operations as the shader).
pub fn mandel_pixel(p: &Params, px: u32, py: u32) -> u32 {
    let cr = p.x0 + px as f32 * p.dx;
    let ci = p.y0 + py as f32 * p.dy;
    let (mut zr, mut zi) = (0.0f32, 0.0f32);
    let mut i = 0;
    while i < p.max_iter {
        let zr2 = zr * zr;
        let zi2 = zi * zi;
        if zr2 + zi2 > 4.0 {
            break;
        }
        let t = zr2 - zi2 + cr;
        zi = 2.0 * zr * zi + ci;
        zr = t;
        i += 1;
    }
    i
}

/// The CPU implementation: the pixels of one package (a tile: its columns
/// of its rows).
pub fn mandelbrot_cpu(pkg: &Package, args: &mut CpuArgs<'_>) {
    let p: Params = args.push();
    for (py, row) in args.output_rows::<u32>(0) {
        for (o, px) in row.iter_mut().zip(pkg.cols.clone()) {
            *o = mandel_pixel(&p, px, py);
        }
    }
}

impl Mandelbrot {
    /// A `width` x `height` view of the set with `max_iter` iterations.
    pub fn new(engine: &Engine, width: u32, height: u32, max_iter: u32) -> Result<Self> {
        let kernel = engine
            .kernel(
                "mandelbrot",
                Some(spirv::MANDELBROT),
                Some(Arc::new(mandelbrot_cpu)),
                None,
            )?
            .with_tiles();
        let len = usize::try_from(u64::from(width) * u64::from(height))
            .map_err(|_| crate::Error::SizeOverflow("image too large".into()))?;
        let out = engine.buffer::<u32>(len.max(1))?;
        let params = Params::view(width, height, max_iter);
        Ok(Mandelbrot {
            kernel,
            out,
            params,
        })
    }

    /// The iteration counts of the last run, row-major.
    pub fn image(&self) -> &[u32] {
        &self.out
    }

    /// The view's parameters.
    pub fn params(&self) -> &Params {
        &self.params
    }
}

impl Workload for Mandelbrot {
    fn name(&self) -> &'static str {
        "mandelbrot"
    }

    fn space(&self) -> IndexSpace {
        IndexSpace::D2 {
            width: self.params.width,
            height: self.params.height,
        }
    }

    fn run(&mut self, engine: &Engine, scheduler: &Scheduler, devices: Devices) -> Result<Report> {
        self.out.as_mut_slice().fill(u32::MAX);
        let space = self.space();
        let args = Args::new().output(&mut self.out).push(&self.params);
        engine.run(&self.kernel, args, space, scheduler, devices)
    }

    fn verify(&self) -> Verification {
        // Integer output; a GPU may still round one float step differently
        // near the set's boundary, so at most 0.1% of pixels may differ, and
        // a never-written pixel (u32::MAX) always fails.
        let p = &self.params;
        let mut mismatches = 0u64;
        let mut unwritten = 0u64;
        for py in 0..p.height {
            for px in 0..p.width {
                let got = self.out[(py * p.width + px) as usize];
                if got == u32::MAX {
                    unwritten += 1;
                } else if got != mandel_pixel(p, px, py) {
                    mismatches += 1;
                }
            }
        }
        let checked = u64::from(p.width) * u64::from(p.height);
        Verification {
            ok: unwritten == 0 && mismatches * 1000 <= checked,
            checked,
            mismatches: mismatches + unwritten,
            rule: "every pixel written; exact iteration counts on >= 99.9% of pixels".into(),
        }
    }
}
