//! Benchmark workloads: each is a GPU shader, a CPU implementation of the
//! same computation, a deterministic input generator and a CPU reference the
//! co-executed output is checked against.

pub mod mandelbrot;
pub mod saxpy;

pub use mandelbrot::Mandelbrot;
pub use saxpy::Saxpy;

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

/// Names of the available workloads.
pub const NAMES: &[&str] = &["saxpy", "mandelbrot"];

/// Creates workload `name` of `size` (`None`: its default size) on `engine`.
pub fn create(
    name: &str,
    engine: &Engine,
    size: Option<Size>,
) -> std::result::Result<Box<dyn Workload>, String> {
    match name {
        "saxpy" => {
            let n = match size.unwrap_or(Size::Linear(1 << 24)) {
                Size::Linear(n) => n,
                Size::Image(w, h) => u64::from(w) * u64::from(h),
            };
            Ok(Box::new(Saxpy::new(engine, n).map_err(|e| e.to_string())?))
        }
        "mandelbrot" => {
            let (w, h) = match size.unwrap_or(Size::Image(4096, 4096)) {
                Size::Image(w, h) => (w, h),
                Size::Linear(n) => {
                    let side = (n as f64).sqrt().ceil() as u32;
                    (side, side)
                }
            };
            Ok(Box::new(
                Mandelbrot::new(engine, w, h, 256).map_err(|e| e.to_string())?,
            ))
        }
        other => Err(format!(
            "unknown kernel {other:?}; available: {}",
            NAMES.join(", ")
        )),
    }
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
