//! Binomial option pricing: European calls on a Cox-Ross-Rubinstein lattice
//! of [`STEPS`] steps (1-D, regular, compute bound: `STEPS^2 / 2`
//! multiply-adds each). The GPU prices an option in one of two ways
//! ([`Variant`]), chosen per device: one work-item with a private array of
//! node values, or the lanes of a subgroup with the nodes in registers.

use super::{off, par_sum, random_f32, spirv, spread, Verification, Workload};
use crate::{
    Args, Buffer, CpuArgs, Devices, Engine, Error, IndexSpace, Kernel, Package, PhysicalDeviceInfo,
    Report, Result, Scheduler,
};
use std::ops::Range;
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

/// How the GPU prices an option.
///
/// On NVIDIA's Vulkan driver a dynamically indexed 1 KiB private array lives
/// in per-thread local memory, and [`Variant::Private`] ran 6.5x slower than
/// the same source through OpenCL (BENCHMARKS.md, section 0b); on a CPU
/// implementation (lavapipe) the same array sits in cache and that variant
/// is the fastest. [`Variant::for_device`] picks per device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Variant {
    /// One work-item per option, the nodes in a private array
    /// (`shaders/binomial.comp`).
    Private,
    /// `lanes` invocations of one subgroup per option (8 or 32), each
    /// holding `256 / lanes` nodes in registers, neighbours exchanged by
    /// subgroup shuffles (`shaders/binomial_sg.glsl`). Still one work-item
    /// per option: a work-group prices its 256 options `256 / lanes` at a
    /// time.
    Subgroup(u32),
}

impl Variant {
    /// [`Variant::Subgroup(32)`](Variant::Subgroup) on a GPU (not a CPU
    /// implementation) whose subgroups are a multiple of 32 wide and shuffle
    /// in compute shaders; [`Variant::Private`] elsewhere.
    pub fn for_device(info: &PhysicalDeviceInfo) -> Variant {
        let sg = Variant::Subgroup(32);
        if info.device_type != crate::DeviceType::Cpu && sg.supported_by(info) {
            sg
        } else {
            Variant::Private
        }
    }

    /// The variant for one SPIR-V run by every device of `infos` (the
    /// first is the engine's GPU 0): [`Variant::for_device`]'s choice for
    /// the first where every device can run it, else [`Variant::Private`]
    /// (lavapipe as the SPIR-V CPU device has subgroups of 8 beside an
    /// NVIDIA GPU's 32).
    pub fn for_devices<'a>(infos: impl IntoIterator<Item = &'a PhysicalDeviceInfo>) -> Variant {
        let mut infos = infos.into_iter();
        let Some(first) = infos.next() else {
            return Variant::Private;
        };
        let v = Variant::for_device(first);
        if infos.all(|info| v.supported_by(info)) {
            v
        } else {
            Variant::Private
        }
    }

    /// Whether `info`'s device can run this variant.
    pub fn supported_by(self, info: &PhysicalDeviceInfo) -> bool {
        match self {
            Variant::Private => true,
            Variant::Subgroup(lanes) => {
                matches!(lanes, 8 | 32)
                    && info.subgroup_shuffle_relative
                    && info.subgroup_size >= lanes
                    && info.subgroup_size % lanes == 0
                    && 256 % info.subgroup_size == 0
            }
        }
    }

    fn spirv(self) -> &'static [u8] {
        match self {
            Variant::Subgroup(8) => spirv::BINOMIAL_SG8,
            Variant::Subgroup(_) => spirv::BINOMIAL_SG32,
            Variant::Private => spirv::BINOMIAL,
        }
    }
}

/// The binomial option pricing workload.
pub struct Binomial {
    variant: Variant,
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
    price_range(pkg.items.start as usize..pkg.items.end as usize, args);
}

/// Prices options `range` into the output (the CPU implementation's body).
fn price_range(range: Range<usize>, args: &mut CpuArgs<'_>) {
    let p: Params = args.push();
    let opts = args.input::<[f32; 4]>(0);
    let out = args.output::<f32>(1);
    let opts = &opts[range];
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
    /// [0.25, 2) years, sigma in [0.1, 0.5); the GPU variant
    /// [`Variant::for_device`] picks for the engine's device.
    /// The same SPIR-V runs on every device of the engine (each GPU and the
    /// SPIR-V CPU device), so a subgroup variant is taken only where every
    /// one of them can run it.
    pub fn new(engine: &Engine, n: u64) -> Result<Self> {
        Self::with_variant(engine, n, Variant::for_devices(spirv_devices(engine)))
    }

    /// As [`new`](Self::new) with the GPU variant given;
    /// [`Error::Interface`] when the engine's device cannot run it.
    pub fn with_variant(engine: &Engine, n: u64, variant: Variant) -> Result<Self> {
        let len = super::len_1d("binomial", "options", n)?;
        if let Some(info) = spirv_devices(engine).find(|info| !variant.supported_by(info)) {
            return Err(Error::Interface(format!(
                "binomial: {} (subgroups of {}, relative shuffles {}) cannot run {variant:?}",
                info.name,
                info.subgroup_size,
                if info.subgroup_shuffle_relative {
                    "yes"
                } else {
                    "no"
                }
            )));
        }
        let name = match variant {
            Variant::Private => "binomial",
            Variant::Subgroup(_) => "binomial (subgroup)",
        };
        let kernel = engine.kernel(
            name,
            Some(variant.spirv()),
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
            variant,
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

    /// The GPU variant in use.
    pub fn variant(&self) -> Variant {
        self.variant
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

/// Every device of `engine` that runs the kernel's SPIR-V: its GPUs, and
/// the SPIR-V CPU device where there is one.
fn spirv_devices(engine: &Engine) -> impl Iterator<Item = &PhysicalDeviceInfo> {
    (0..)
        .map_while(|g| engine.gpu_info(g))
        .chain(engine.spirv_cpu_device())
}
