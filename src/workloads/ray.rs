//! Ray tracing: a ground plane and [`SPHERES`] spheres lit by a directional
//! light, one shadow ray per hit and up to [`DEPTH`] mirror bounces, 4 x 4
//! rays per pixel, packed RGBA8 out (2-D, irregular: sky pixels are cheap,
//! reflective spheres bounce).

use super::{par_sum, random_f32, spirv, spread, Verification, Workload};
use crate::{
    Args, Buffer, CpuArgs, Devices, Engine, IndexSpace, Kernel, Package, Report, Result, Scheduler,
};
use std::sync::Arc;

/// Spheres in the scene (the shader holds at most 64).
pub const SPHERES: u32 = 64;
/// Bounces at most per ray (the shader's `DEPTH`).
pub const DEPTH: usize = 4;
/// Rays per pixel along each axis.
pub const SUPERSAMPLE: u32 = 4;
/// Rows the verification recomputes at most (evenly spread).
const CHECK_ROWS: usize = 256;
const EPS: f32 = 1e-3;
const LIGHT: V3 = V3(-0.408_248_3, 0.816_496_6, -0.408_248_3);
const CAM: V3 = V3(0.0, 2.0, -8.0);

/// Push constants of `shaders/ray.comp`.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
pub struct Params {
    /// Image width.
    pub width: u32,
    /// Image height.
    pub height: u32,
    /// Spheres in the scene buffer.
    pub count: u32,
    /// Rays per pixel along each axis.
    pub ss: u32,
}

#[derive(Clone, Copy)]
struct V3(f32, f32, f32);

impl V3 {
    fn add(self, o: V3) -> V3 {
        V3(self.0 + o.0, self.1 + o.1, self.2 + o.2)
    }
    fn sub(self, o: V3) -> V3 {
        V3(self.0 - o.0, self.1 - o.1, self.2 - o.2)
    }
    fn mul(self, s: f32) -> V3 {
        V3(self.0 * s, self.1 * s, self.2 * s)
    }
    fn dot(self, o: V3) -> f32 {
        self.0 * o.0 + self.1 * o.1 + self.2 * o.2
    }
}

/// The ray tracing workload.
pub struct Ray {
    kernel: Kernel,
    /// Two `vec4` per sphere, as the shader declares its elements.
    spheres: Buffer<[f32; 4]>,
    out: Buffer<u32>,
    params: Params,
}

fn hit_sphere(s: &[f32; 8], o: V3, d: V3) -> f32 {
    let oc = o.sub(V3(s[0], s[1], s[2]));
    let b = oc.dot(d);
    let c = oc.dot(oc) - s[3] * s[3];
    let disc = b * b - c;
    if disc < 0.0 {
        return -1.0;
    }
    let q = disc.sqrt();
    let t = -b - q;
    if t > EPS {
        return t;
    }
    let t = -b + q;
    if t > EPS {
        t
    } else {
        -1.0
    }
}

/// The colour of one ray (the shader's operations).
fn trace(spheres: &[[f32; 8]], mut o: V3, mut d: V3) -> V3 {
    let mut col = V3(0.0, 0.0, 0.0);
    let mut w = 1.0f32;
    for _ in 0..DEPTH {
        let mut tbest = 1e30f32;
        let mut hit: Option<Option<usize>> = None; // Some(None): the plane
        if d.1 < 0.0 {
            let tp = -o.1 / d.1;
            if tp > EPS {
                tbest = tp;
                hit = Some(None);
            }
        }
        for (k, s) in spheres.iter().enumerate() {
            let t = hit_sphere(s, o, d);
            if t > 0.0 && t < tbest {
                tbest = t;
                hit = Some(Some(k));
            }
        }
        let Some(hit) = hit else {
            let f = 0.5 * (d.1 + 1.0);
            let sky = V3(1.0 + (0.5 - 1.0) * f, 1.0 + (0.7 - 1.0) * f, 1.0);
            col = col.add(sky.mul(w));
            break;
        };
        let hp = o.add(d.mul(tbest));
        let (n, alb, refl) = match hit {
            None => (V3(0.0, 1.0, 0.0), V3(0.6, 0.6, 0.55), 0.25),
            Some(k) => {
                let s = &spheres[k];
                (
                    hp.sub(V3(s[0], s[1], s[2])).mul(1.0 / s[3]),
                    V3(s[4], s[5], s[6]),
                    s[7],
                )
            }
        };
        let so = hp.add(n.mul(EPS));
        let lit = if spheres.iter().any(|s| hit_sphere(s, so, LIGHT) > 0.0) {
            0.0
        } else {
            1.0
        };
        let diff = n.dot(LIGHT).max(0.0) * lit;
        let k = w * (1.0 - refl) * (0.1 + 0.9 * diff);
        col = col.add(V3(alb.0 * k, alb.1 * k, alb.2 * k));
        w *= refl;
        if w < 0.01 {
            break;
        }
        o = so;
        d = d.sub(n.mul(2.0 * n.dot(d)));
    }
    col
}

/// The packed RGBA8 value of pixel `(px, py)`.
pub fn shade_pixel(spheres: &[[f32; 8]], p: &Params, px: u32, py: u32) -> u32 {
    let aspect = p.width as f32 / p.height as f32;
    let ss = p.ss as f32;
    let mut total = V3(0.0, 0.0, 0.0);
    for sy in 0..p.ss {
        for sx in 0..p.ss {
            let u =
                ((px as f32 + (sx as f32 + 0.5) / ss) / p.width as f32 * 2.0 - 1.0) * aspect * 0.6;
            let v =
                (1.0 - (py as f32 + (sy as f32 + 0.5) / ss) / p.height as f32 * 2.0) * 0.6 - 0.15;
            let d = V3(u, v, 1.0);
            let d = d.mul(1.0 / d.dot(d).sqrt());
            total = total.add(trace(spheres, CAM, d));
        }
    }
    let c = total.mul(1.0 / (ss * ss));
    let q = |x: f32| (x.clamp(0.0, 1.0) * 255.0 + 0.5) as u32;
    q(c.0) | (q(c.1) << 8) | (q(c.2) << 16) | (255 << 24)
}

/// The CPU implementation: the pixels of one package (a tile: its columns
/// of its rows).
pub fn ray_cpu(pkg: &Package, args: &mut CpuArgs<'_>) {
    let p: Params = args.push();
    // Elements are the shader's vec4; a sphere is two of them.
    let sph: &[[f32; 8]] = bytemuck::cast_slice(args.input::<[f32; 4]>(0));
    let spheres = &sph[..(p.count.min(64) as usize).min(sph.len())];
    for (py, row) in args.output_rows::<u32>(1) {
        for (o, px) in row.iter_mut().zip(pkg.cols.clone()) {
            *o = shade_pixel(spheres, &p, px, py);
        }
    }
}

/// The scene: [`SPHERES`] spheres resting on the ground in x in [-5, 5), z
/// in [0, 12); about 30% are mirrors (reflectivity 0.5..0.95).
pub fn scene() -> Vec<[f32; 8]> {
    random_f32(61, 8 * SPHERES as usize)
        .chunks_exact(8)
        .map(|u| {
            let r = 0.3 + 0.6 * u[0];
            let refl = if u[6] < 0.3 {
                0.5 + 0.45 * u[7]
            } else {
                0.05 * u[7]
            };
            [
                -5.0 + 10.0 * u[1],
                r,
                12.0 * u[2],
                r,
                0.2 + 0.8 * u[3],
                0.2 + 0.8 * u[4],
                0.2 + 0.8 * u[5],
                refl,
            ]
        })
        .collect()
}

impl Ray {
    /// A `width` x `height` rendering of [`scene`].
    pub fn new(engine: &Engine, width: u32, height: u32) -> Result<Self> {
        let len = usize::try_from(u64::from(width) * u64::from(height))
            .ok()
            .filter(|&l| l > 0 && l <= u32::MAX as usize)
            .ok_or_else(|| crate::Error::SizeOverflow(format!("image {width}x{height}")))?;
        let kernel = engine
            .kernel("ray", Some(spirv::RAY), Some(Arc::new(ray_cpu)), None)?
            .with_tiles();
        let spheres = engine.buffer_from_slice::<[f32; 4]>(bytemuck::cast_slice(&scene()))?;
        let out = engine.buffer::<u32>(len)?;
        Ok(Ray {
            kernel,
            spheres,
            out,
            params: Params {
                width,
                height,
                count: SPHERES,
                ss: SUPERSAMPLE,
            },
        })
    }

    /// The image of the last run, packed RGBA8, row-major.
    pub fn image(&self) -> &[u32] {
        &self.out
    }
}

impl Workload for Ray {
    fn name(&self) -> &'static str {
        "ray"
    }

    fn space(&self) -> IndexSpace {
        IndexSpace::D2 {
            width: self.params.width,
            height: self.params.height,
        }
    }

    fn run(&mut self, engine: &Engine, scheduler: &Scheduler, devices: Devices) -> Result<Report> {
        self.out.as_mut_slice().fill(0);
        let space = self.space();
        let args = Args::new()
            .input(&self.spheres)
            .output(&mut self.out)
            .push(&self.params);
        engine.run(&self.kernel, args, space, scheduler, devices)
    }

    fn verify(&self) -> Verification {
        // Float rounding (fused multiply-adds, approximate sqrt) can move a
        // silhouette or shadow edge by a pixel, so a few pixels may differ a
        // lot and the rest by a rounding step.
        let p = self.params;
        let w = p.width as usize;
        let sph: &[[f32; 8]] = bytemuck::cast_slice(&self.spheres[..]);
        let out = &self.out[..];
        let unwritten = out.iter().filter(|&&v| v >> 24 != 255).count() as u64;
        let rows = spread(p.height as usize, CHECK_ROWS);
        let mismatches = par_sum(rows.len(), |k| {
            let py = rows[k];
            (0..p.width)
                .filter(|&px| {
                    let (g, r) = (
                        out[py * w + px as usize],
                        shade_pixel(sph, &p, px, py as u32),
                    );
                    (0..3).any(|c| {
                        let (a, b) = ((g >> (8 * c)) & 255, (r >> (8 * c)) & 255);
                        a.abs_diff(b) > 2
                    })
                })
                .count() as u64
        });
        let checked = (rows.len() * w) as u64;
        Verification {
            ok: unwritten == 0 && mismatches * 200 <= checked,
            checked,
            mismatches: mismatches + unwritten,
            rule: format!(
                "every pixel written; every channel within 2/255 on >= 99.5% of the pixels of {} of {} rows (evenly spread)",
                rows.len(),
                p.height
            ),
        }
    }
}
