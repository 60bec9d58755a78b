//! SAXPY: `y = a * x + y`, one element per work-item (memory bound).

use super::{random_f32, spirv, Verification, Workload};
use crate::{
    Args, Buffer, CpuArgs, Devices, Engine, Footprint, IndexSpace, Kernel, Package, Report, Result,
    Scheduler,
};
use std::sync::Arc;

/// The SAXPY workload.
pub struct Saxpy {
    kernel: Kernel,
    x: Buffer<f32>,
    y: Buffer<f32>,
    y0: Vec<f32>,
    a: f32,
    n: u64,
}

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    a: f32,
    n: u32,
}

/// The CPU implementation: one package of SAXPY.
pub fn saxpy_cpu(pkg: &Package, args: &mut CpuArgs<'_>) {
    let p: Params = args.push();
    let x = args.input::<f32>(0);
    let y = args.output::<f32>(1);
    let xs = &x[pkg.items.start as usize..pkg.items.end as usize];
    for (y, x) in y.iter_mut().zip(xs) {
        *y += p.a * *x;
    }
}

impl Saxpy {
    /// Allocates inputs of `n` elements.
    pub fn new(engine: &Engine, n: u64) -> Result<Self> {
        let len =
            usize::try_from(n).map_err(|_| crate::Error::SizeOverflow(format!("{n} elements")))?;
        if n > u64::from(u32::MAX) {
            return Err(crate::Error::SizeOverflow(format!(
                "saxpy indexes with 32 bits; {n} elements is too many"
            )));
        }
        let kernel = engine.kernel("saxpy", Some(spirv::SAXPY), Some(Arc::new(saxpy_cpu)), None)?;
        let x = engine.buffer_from_slice(&random_f32(1, len))?;
        let y0 = random_f32(2, len);
        let y = engine.buffer_from_slice(&y0)?;
        Ok(Saxpy {
            kernel,
            x,
            y,
            y0,
            a: 2.5,
            n,
        })
    }
}

impl Workload for Saxpy {
    fn name(&self) -> &'static str {
        "saxpy"
    }

    fn space(&self) -> IndexSpace {
        IndexSpace::D1(self.n)
    }

    fn run(&mut self, engine: &Engine, scheduler: &Scheduler, devices: Devices) -> Result<Report> {
        self.y.as_mut_slice().copy_from_slice(&self.y0);
        let space = self.space();
        let args = Args::new()
            .input(&self.x)
            .footprint(Footprint::Items { per_item: 1 })
            .output(&mut self.y)
            .push(&Params {
                a: self.a,
                n: self.n as u32,
            });
        engine.run(&self.kernel, args, space, scheduler, devices)
    }

    fn verify(&self) -> Verification {
        // a * x + y in f32 on both sides, one rounding each for * and +
        // unless the GPU fuses them; allow one fused-vs-unfused difference.
        let mut mismatches = 0;
        for ((&y, &x), &y0) in self.y.iter().zip(self.x.iter()).zip(&self.y0) {
            let r = self.a * x + y0;
            if (y - r).abs() > 1e-6 * (1.0 + r.abs()) {
                mismatches += 1;
            }
        }
        Verification {
            ok: mismatches == 0,
            checked: self.n,
            mismatches,
            rule: "|d| <= 1e-6 * (1 + |ref|)".into(),
        }
    }
}
