//! Benchmark workloads: each is a GPU shader, a CPU implementation of the
//! same computation, a deterministic input generator and a CPU reference the
//! co-executed output is checked against.

pub mod binomial;
pub mod blackscholes;
pub mod collatz;
pub mod gather;
pub mod gaussian;
pub mod histogram;
pub mod jacobi;
pub mod mandelbrot;
pub mod matmul;
pub mod nbody;
pub mod rap;
pub mod ray;
pub mod saxpy;
pub mod spmv;
pub mod taylor;

pub use binomial::Binomial;
pub use blackscholes::BlackScholes;
pub use collatz::Collatz;
pub use gather::Gather;
pub use gaussian::Gaussian;
pub use histogram::Histogram;
pub use jacobi::Jacobi;
pub use mandelbrot::Mandelbrot;
pub use matmul::MatMul;
pub use nbody::NBody;
pub use rap::Rap;
pub use ray::Ray;
pub use saxpy::Saxpy;
pub use spmv::Spmv;
pub use taylor::Taylor;

use crate::{Devices, Engine, IndexSpace, Report, Result, Scheduler};

/// The generated SPIR-V of `shaders/*.comp`.
pub mod spirv {
    include!(concat!(env!("OUT_DIR"), "/shaders.rs"));
}

/// A problem size: a count of work-items or an image.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Size {
    /// `n` work-items.
    Linear(u64),
    /// `w` x `h` work-items.
    Image(u32, u32),
}

impl std::str::FromStr for Size {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        let parse = |t: &str| -> std::result::Result<u64, String> {
            let t = t.trim();
            if let Some(e) = t.strip_prefix("2^") {
                let e: u32 = e.parse().map_err(|_| format!("bad exponent in {t:?}"))?;
                return 1u64
                    .checked_shl(e)
                    .filter(|_| e < 63)
                    .ok_or_else(|| format!("{t} is too large"));
            }
            t.parse::<u64>()
                .map_err(|_| format!("{t:?} is not a size (N, 2^K or WxH)"))
        };
        match s.split_once(['x', 'X']) {
            Some((w, h)) => {
                let (w, h) = (parse(w)?, parse(h)?);
                let w = u32::try_from(w).map_err(|_| format!("width {w} is too large"))?;
                let h = u32::try_from(h).map_err(|_| format!("height {h} is too large"))?;
                Ok(Size::Image(w, h))
            }
            None => Ok(Size::Linear(parse(s)?)),
        }
    }
}

impl std::fmt::Display for Size {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Size::Linear(n) => write!(f, "{n}"),
            Size::Image(w, h) => write!(f, "{w}x{h}"),
        }
    }
}

/// Outcome of checking a run's output against the CPU reference.
#[derive(Debug, Clone, PartialEq)]
pub struct Verification {
    /// `true` when within tolerance.
    pub ok: bool,
    /// Elements compared.
    pub checked: u64,
    /// Elements outside tolerance.
    pub mismatches: u64,
    /// The rule applied, e.g. `exact` or `|d| <= 1e-5 * (1 + |ref|)`.
    pub rule: String,
}

impl Verification {
    /// The verdict of a sampled check: `checked` elements compared against
    /// the reference, `mismatches` of them outside the tolerance, plus
    /// `unwritten` elements the run never wrote (found by a full scan);
    /// `ok` only when both are zero.
    pub fn sampled(checked: u64, mismatches: u64, unwritten: u64, rule: String) -> Self {
        Verification {
            ok: unwritten == 0 && mismatches == 0,
            checked,
            mismatches: mismatches + unwritten,
            rule,
        }
    }
}

/// A benchmark workload bound to an engine, with its buffers allocated.
pub trait Workload: Send {
    /// The kernel's name.
    fn name(&self) -> &'static str;
    /// The index space.
    fn space(&self) -> IndexSpace;
    /// Resets the outputs and runs once.
    fn run(&mut self, engine: &Engine, scheduler: &Scheduler, devices: Devices) -> Result<Report>;
    /// Checks the last run's output against the CPU reference.
    fn verify(&self) -> Verification;
}

/// Names of the seed workloads (the suite's default set).
pub const NAMES: &[&str] = &[
    "saxpy",
    "mandelbrot",
    "gaussian",
    "matmul",
    "taylor",
    "binomial",
    "nbody",
    "ray",
    "rap",
];

/// Names of the workloads of the comparable set: kernels of different
/// classes where a CPU and a GPU sharing host memory are within a small
/// factor of each other (`coexec suite --set comparable`).
pub const COMPARABLE: &[&str] = &[
    "spmv",
    "gather",
    "blackscholes",
    "jacobi",
    "histogram",
    "collatz",
];

/// Every workload name: [`NAMES`], then [`COMPARABLE`].
pub fn all_names() -> impl Iterator<Item = &'static str> {
    NAMES.iter().chain(COMPARABLE).copied()
}

/// The default size of workload `name` (a run of about a second on a large
/// GPU plus a many-core CPU; the comparable set: see
/// [`comparable_default_size`]), or `None` for an unknown name.
pub fn default_size(name: &str) -> Option<Size> {
    if let Some(s) = comparable_default_size(name) {
        return Some(s);
    }
    // Measured on an NVIDIA H200 + 15 CPU workers, hguided, GPU only / CPU
    // + GPU / CPU only: gaussian 0.07 / 0.14 / 3.1 s, matmul 1.6 / 1.5 /
    // 7.7 s, taylor 0.005 / 0.006 / 0.36 s, binomial 0.72 / 0.69 / 11.6 s,
    // nbody 0.57 / 0.69 / 33 s, ray 0.14 / 2.8 / 32 s, rap 0.66 / 0.66 / 22 s.
    // Taylor is bound by host-memory traffic, so no size that fits lasts a
    // second. The 1-D sizes stay within 65535 work-groups.
    Some(match name {
        "saxpy" => Size::Linear(1 << 24),
        "mandelbrot" => Size::Image(4096, 4096),
        "gaussian" => Size::Image(16384, 16384),
        "matmul" => Size::Image(8192, 8192),
        "taylor" => Size::Linear(65_535 * 256),
        "binomial" => Size::Linear(1 << 23),
        "nbody" => Size::Linear(786_432),
        "ray" => Size::Image(8192, 8192),
        "rap" => Size::Linear(65_535 * 256),
        _ => return None,
    })
}

/// A small size of workload `name` for smoke tests (every kernel together
/// runs in seconds on a software rasterizer), or `None` for an unknown name.
pub fn quick_size(name: &str) -> Option<Size> {
    if let Some(s) = comparable_quick_size(name) {
        return Some(s);
    }
    Some(match name {
        "saxpy" => Size::Linear(100_003),
        "mandelbrot" => Size::Image(256, 256),
        "gaussian" => Size::Image(192, 128),
        "matmul" => Size::Image(200, 200),
        "taylor" => Size::Linear(30_001),
        "binomial" => Size::Linear(1_500),
        "nbody" => Size::Linear(3_000),
        "ray" => Size::Image(128, 96),
        "rap" => Size::Linear(1_500),
        _ => return None,
    })
}

/// The default size of a workload of [`COMPARABLE`] (`None` for any other
/// name): a run of roughly 0.1 to 1 s on a 16-core CPU plus a large GPU
/// over host memory. The 1-D sizes stay within 65535 work-groups, and no
/// buffer exceeds 128 MiB (lavapipe's largest storage buffer range).
pub fn comparable_default_size(name: &str) -> Option<Size> {
    Some(match name {
        "spmv" => Size::Linear(1 << 21),
        "gather" => Size::Linear(1 << 23),
        "blackscholes" => Size::Linear(65_535 * 256),
        "jacobi" => Size::Image(8192, 4096),
        "histogram" => Size::Linear(1 << 22),
        "collatz" => Size::Linear(1 << 23),
        _ => return None,
    })
}

/// The quick size of a workload of [`COMPARABLE`] (`None` for any other
/// name): the whole set runs in seconds on a software rasterizer.
pub fn comparable_quick_size(name: &str) -> Option<Size> {
    Some(match name {
        "spmv" => Size::Linear(30_001),
        "gather" => Size::Linear(100_003),
        "blackscholes" => Size::Linear(100_003),
        "jacobi" => Size::Image(500, 300),
        "histogram" => Size::Linear(40_000),
        "collatz" => Size::Linear(30_001),
        _ => return None,
    })
}

/// The item count of `size` (an image's pixel count).
fn linear(size: Size) -> u64 {
    match size {
        Size::Linear(n) => n,
        Size::Image(w, h) => u64::from(w) * u64::from(h),
    }
}

/// `size` as an image (a square of at least `n` pixels for `Linear(n)`).
fn image(size: Size) -> (u32, u32) {
    match size {
        Size::Image(w, h) => (w, h),
        Size::Linear(n) => {
            let side = (n as f64).sqrt().ceil() as u32;
            (side, side)
        }
    }
}

/// `size` as the side of a square (`Linear(n)`: `n`; `WxH`: `max(W, H)`).
fn side(size: Size) -> u64 {
    match size {
        Size::Linear(n) => n,
        Size::Image(w, h) => u64::from(w.max(h)),
    }
}

/// Sums `f(i)` for `i` in `0..n` on every core (verification helper).
pub(crate) fn par_sum<F: Fn(usize) -> u64 + Sync>(n: usize, f: F) -> u64 {
    let threads = std::thread::available_parallelism()
        .map(|t| t.get())
        .unwrap_or(1)
        .min(n.max(1));
    let chunk = n.div_ceil(threads.max(1)).max(1);
    let f = &f;
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| s.spawn(move || (t * chunk..((t + 1) * chunk).min(n)).map(f).sum::<u64>()))
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or(u64::MAX))
            .sum()
    })
}

/// What a `u32` output holds before a run, where no item's result can
/// equal it: an element still holding it was never written.
pub(crate) const UNWRITTEN: u32 = u32::MAX;

/// The verdict of an exact check of a `u32` output of `out.len()` items
/// whose unwritten elements hold [`UNWRITTEN`]: every element written, and at
/// most `check` of them, evenly spread, equal to `reference(i)`.
pub(crate) fn verify_exact_u32<F: Fn(usize) -> u32 + Sync>(
    out: &[u32],
    check: usize,
    reference: F,
) -> Verification {
    let n = out.len();
    let unwritten = out.iter().filter(|&&v| v == UNWRITTEN).count() as u64;
    let idx = spread(n, check);
    let mismatches = par_sum(idx.len(), |k| {
        let i = idx[k];
        u64::from(out[i] != reference(i))
    });
    Verification::sampled(
        idx.len() as u64,
        mismatches,
        unwritten,
        format!(
            "every item written; exact on {} of {n} items (evenly spread)",
            idx.len()
        ),
    )
}

/// `true` when `d` is NaN or `|d| > tol` (a verification mismatch).
pub(crate) fn off(d: f64, tol: f64) -> bool {
    d.is_nan() || d.abs() > tol
}

/// At most `max` indices of `0..n`, evenly spread, first and last included
/// (all of them when `n <= max`).
pub(crate) fn spread(n: usize, max: usize) -> Vec<usize> {
    if n <= max || max < 2 {
        return (0..n).collect();
    }
    (0..max).map(|k| k * (n - 1) / (max - 1)).collect()
}

/// `Ok` if `name` is one of [`NAMES`] or [`COMPARABLE`], else the error
/// that lists them.
pub fn check_name(name: &str) -> std::result::Result<(), String> {
    if all_names().any(|n| n == name) {
        Ok(())
    } else {
        Err(format!(
            "unknown kernel `{name}` (one of {})",
            all_names().collect::<Vec<_>>().join(", ")
        ))
    }
}

/// Creates workload `name` of `size` (`None`: its default size) on `engine`.
pub fn create(
    name: &str,
    engine: &Engine,
    size: Option<Size>,
) -> std::result::Result<Box<dyn Workload>, String> {
    check_name(name)?;
    let size = size
        .or_else(|| default_size(name))
        .expect("every name has a default");
    let e = |e: crate::Error| e.to_string();
    match name {
        "saxpy" => Ok(Box::new(Saxpy::new(engine, linear(size)).map_err(e)?)),
        "mandelbrot" => {
            let (w, h) = image(size);
            Ok(Box::new(Mandelbrot::new(engine, w, h, 256).map_err(e)?))
        }
        "gaussian" => {
            let (w, h) = image(size);
            Ok(Box::new(Gaussian::new(engine, w, h).map_err(e)?))
        }
        "matmul" => Ok(Box::new(MatMul::new(engine, side(size)).map_err(e)?)),
        "taylor" => Ok(Box::new(Taylor::new(engine, linear(size)).map_err(e)?)),
        "binomial" => Ok(Box::new(Binomial::new(engine, linear(size)).map_err(e)?)),
        "nbody" => Ok(Box::new(NBody::new(engine, linear(size)).map_err(e)?)),
        "ray" => {
            let (w, h) = image(size);
            Ok(Box::new(Ray::new(engine, w, h).map_err(e)?))
        }
        "rap" => Ok(Box::new(Rap::new(engine, linear(size)).map_err(e)?)),
        "spmv" => Ok(Box::new(Spmv::new(engine, linear(size)).map_err(e)?)),
        "gather" => Ok(Box::new(Gather::new(engine, linear(size)).map_err(e)?)),
        "blackscholes" => Ok(Box::new(
            BlackScholes::new(engine, linear(size)).map_err(e)?,
        )),
        "jacobi" => {
            let (w, h) = image(size);
            Ok(Box::new(Jacobi::new(engine, w, h).map_err(e)?))
        }
        "histogram" => Ok(Box::new(Histogram::new(engine, linear(size)).map_err(e)?)),
        "collatz" => Ok(Box::new(Collatz::new(engine, linear(size)).map_err(e)?)),
        other => unreachable!("{other:?} was checked against the names"),
    }
}

/// The element count of a 1-D workload of `n` `what`s: at least one, and
/// indexable with 32 bits (the shaders' `uint` ids).
fn len_1d(kernel: &str, what: &str, n: u64) -> Result<usize> {
    usize::try_from(n)
        .ok()
        .filter(|&l| l > 0 && n <= u64::from(u32::MAX))
        .ok_or_else(|| crate::Error::SizeOverflow(format!("{kernel}: {n} {what}")))
}

/// The SplitMix64 output function of `z` plus the golden-ratio increment:
/// a well-mixed 64-bit hash, for inputs drawn per index.
pub fn mix64(z: u64) -> u64 {
    let mut z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The top 53 bits of `h` as a float in [0, 1).
pub fn unit_f64(h: u64) -> f64 {
    (h >> 11) as f64 / (1u64 << 53) as f64
}

/// Deterministic pseudo-random floats in [0, 1) (SplitMix64), for inputs.
pub fn random_f32(seed: u64, n: usize) -> Vec<f32> {
    let mut s = seed;
    (0..n)
        .map(|_| {
            s = s.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = s;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^= z >> 31;
            (z >> 40) as f32 / (1u64 << 24) as f32
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse() {
        assert_eq!("1024".parse(), Ok(Size::Linear(1024)));
        assert_eq!("2^20".parse(), Ok(Size::Linear(1 << 20)));
        assert_eq!("640x480".parse(), Ok(Size::Image(640, 480)));
        assert!("2^99".parse::<Size>().is_err());
        assert!("abc".parse::<Size>().is_err());
        assert!("99999999999x2".parse::<Size>().is_err());
    }

    #[test]
    fn random_is_deterministic_and_in_range() {
        let a = random_f32(7, 1000);
        assert_eq!(a, random_f32(7, 1000));
        assert!(a.iter().all(|&v| (0.0..1.0).contains(&v)));
        assert_ne!(a, random_f32(8, 1000));
    }
}
