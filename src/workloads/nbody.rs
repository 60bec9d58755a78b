//! N-body: one time step of all-pairs softened gravity, one work-item per
//! body (1-D, "special": O(n) work per item over the whole input).

use super::{off, par_sum, random_f32, spirv, spread, Verification, Workload};
use crate::{
    Args, Buffer, CpuArgs, Devices, Engine, IndexSpace, Kernel, Package, Report, Result, Scheduler,
};
use std::sync::Arc;

/// Bodies the CPU implementation advances side by side (vectorised).
const LANES: usize = 8;
/// Bodies the verification recomputes at most (evenly spread).
const CHECK_BODIES: usize = 1024;

/// Push constants of `shaders/nbody.comp`.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
pub struct Params {
    /// Bodies.
    pub n: u32,
    /// Time step.
    pub dt: f32,
    /// Softening length squared.
    pub eps2: f32,
}

/// The n-body workload.
pub struct NBody {
    kernel: Kernel,
    pos: Buffer<[f32; 4]>,
    vel: Buffer<[f32; 4]>,
    new_pos: Buffer<[f32; 4]>,
    new_vel: Buffer<[f32; 4]>,
    params: Params,
}

/// The CPU implementation: the bodies of one package, `LANES` at a time,
/// each summing over all bodies in order.
pub fn nbody_cpu(pkg: &Package, args: &mut CpuArgs<'_>) {
    let p: Params = args.push();
    let pos = args.input::<[f32; 4]>(0);
    let vel = args.input::<[f32; 4]>(1);
    let npos = args.output::<[f32; 4]>(2);
    let nvel = args.output::<[f32; 4]>(3);
    let (start, end) = (pkg.items.start as usize, pkg.items.end as usize);
    for b0 in (start..end).step_by(LANES) {
        let lanes = LANES.min(end - b0);
        let me =
            |c: usize| -> [f32; LANES] { std::array::from_fn(|m| pos[(b0 + m).min(end - 1)][c]) };
        let (px, py, pz) = (me(0), me(1), me(2));
        let mut ax = [0.0f32; LANES];
        let mut ay = [0.0f32; LANES];
        let mut az = [0.0f32; LANES];
        for q in pos {
            for m in 0..LANES {
                let dx = q[0] - px[m];
                let dy = q[1] - py[m];
                let dz = q[2] - pz[m];
                let r2 = dx * dx + dy * dy + dz * dz + p.eps2;
                let inv = 1.0 / r2.sqrt();
                let s = q[3] * inv * inv * inv;
                ax[m] += s * dx;
                ay[m] += s * dy;
                az[m] += s * dz;
            }
        }
        for m in 0..lanes {
            let i = b0 + m;
            let v0 = vel[i];
            let v = [
                v0[0] + ax[m] * p.dt,
                v0[1] + ay[m] * p.dt,
                v0[2] + az[m] * p.dt,
            ];
            nvel[i - start] = [v[0], v[1], v[2], 0.0];
            let q = pos[i];
            npos[i - start] = [
                q[0] + v[0] * p.dt,
                q[1] + v[1] * p.dt,
                q[2] + v[2] * p.dt,
                q[3],
            ];
        }
    }
}

impl NBody {
    /// `n` bodies in the cube [-1, 1)^3 with masses summing to about 1 and
    /// small random velocities.
    pub fn new(engine: &Engine, n: u64) -> Result<Self> {
        let len = super::len_1d("nbody", "bodies", n)?;
        let kernel = engine.kernel("nbody", Some(spirv::NBODY), Some(Arc::new(nbody_cpu)), None)?;
        let r = random_f32(51, 7 * len);
        let (mut pos, mut vel) = (Vec::with_capacity(len), Vec::with_capacity(len));
        for c in r.chunks_exact(7) {
            pos.push([
                2.0 * c[0] - 1.0,
                2.0 * c[1] - 1.0,
                2.0 * c[2] - 1.0,
                (0.5 + c[3]) / len as f32,
            ]);
            vel.push([0.1 * c[4] - 0.05, 0.1 * c[5] - 0.05, 0.1 * c[6] - 0.05, 0.0]);
        }
        let pos = engine.buffer_from_slice(&pos)?;
        let vel = engine.buffer_from_slice(&vel)?;
        let new_pos = engine.buffer(len)?;
        let new_vel = engine.buffer(len)?;
        Ok(NBody {
            kernel,
            pos,
            vel,
            new_pos,
            new_vel,
            params: Params {
                n: n as u32,
                dt: 1e-3,
                eps2: 1e-3,
            },
        })
    }

    /// Positions (xyz, mass) after the last run's step.
    pub fn positions(&self) -> &[[f32; 4]] {
        &self.new_pos
    }
}

impl Workload for NBody {
    fn name(&self) -> &'static str {
        "nbody"
    }

    fn space(&self) -> IndexSpace {
        IndexSpace::D1(u64::from(self.params.n))
    }

    fn run(&mut self, engine: &Engine, scheduler: &Scheduler, devices: Devices) -> Result<Report> {
        self.new_pos.as_mut_slice().fill([f32::NAN; 4]);
        self.new_vel.as_mut_slice().fill([f32::NAN; 4]);
        let space = self.space();
        let args = Args::new()
            .input(&self.pos)
            .input(&self.vel)
            .output(&mut self.new_pos)
            .output(&mut self.new_vel)
            .push(&self.params);
        engine.run(&self.kernel, args, space, scheduler, devices)
    }

    fn verify(&self) -> Verification {
        // The reference sums in f64. Each f32 term carries a few ulp (the
        // GPU's inversesqrt is approximate) and n terms of both signs are
        // added, so the bound scales with dt * sum_j |a_ij|.
        let n = self.params.n as usize;
        let Params { dt, eps2, .. } = self.params;
        let (dt, eps2) = (f64::from(dt), f64::from(eps2));
        let (pos, vel, npos, nvel) = (
            &self.pos[..],
            &self.vel[..],
            &self.new_pos[..],
            &self.new_vel[..],
        );
        let unwritten = par_sum(n, |i| {
            u64::from(!(npos[i].iter().chain(&nvel[i]).all(|v| v.is_finite())))
        });
        let idx = spread(n, CHECK_BODIES);
        let mismatches = par_sum(idx.len(), |k| {
            let i = idx[k];
            let pi: [f64; 4] = pos[i].map(f64::from);
            let (mut a, mut mag) = ([0.0f64; 3], 0.0f64);
            for q in pos {
                let d = [0, 1, 2].map(|c| f64::from(q[c]) - pi[c]);
                let r2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2] + eps2;
                let s = f64::from(q[3]) / (r2 * r2.sqrt());
                for c in 0..3 {
                    a[c] += s * d[c];
                }
                mag += s * r2.sqrt();
            }
            let tol_v = 1e-6 + 1e-3 * dt * mag;
            let tol_p = 1e-6 + dt * tol_v;
            let mut bad = false;
            for c in 0..3 {
                let v = f64::from(vel[i][c]) + a[c] * dt;
                let p = pi[c] + v * dt;
                bad |= off(f64::from(nvel[i][c]) - v, tol_v);
                bad |= off(f64::from(npos[i][c]) - p, tol_p);
            }
            bad |= npos[i][3] != pos[i][3];
            u64::from(bad)
        });
        Verification::sampled(idx.len() as u64, mismatches, unwritten, format!(
                "every body finite; per component |dv| <= 1e-6 + 1e-3 * dt * sum_j |a_ij|, |dp| <= 1e-6 + dt * that (f64 reference) on {} of {n} bodies (evenly spread)",
                idx.len()
            ))
    }
}
