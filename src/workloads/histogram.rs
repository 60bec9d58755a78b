//! Histogram: 256 bins of the bytes of the input, privatized. Each
//! work-group of [`GROUP`] items counts its items' [`WORDS`] words (4 bytes
//! each) in a histogram of its own and writes it to its own slot of the
//! output (groups x 256 counts); the CPU implementation writes the same
//! partials for the groups of its package (packages are whole work-groups).
//! The byte values are skewed (most in the low bins), so the shader's
//! shared-memory atomics contend. Verified exactly: the partials summed
//! against the reference histogram, and each partial summing to its group's
//! byte count.

use super::{mix64, spirv, Verification, Workload, UNWRITTEN};
use crate::{
    Args, Buffer, CpuArgs, Devices, Engine, Footprint, IndexSpace, Kernel, Package, Report, Result,
    Scheduler,
};
use std::sync::Arc;

/// Bins.
pub const BINS: usize = 256;
/// Work-items per work-group (the shader's local size).
pub const GROUP: usize = 256;
/// Words (4 bytes each) per work-item (the shader's `WORDS`).
pub const WORDS: usize = 8;

/// The histogram workload.
pub struct Histogram {
    kernel: Kernel,
    data: Buffer<u32>,
    parts: Buffer<u32>,
    items: u32,
}

/// A byte of word `j`'s seed `h`: `floor(256 u^2)` for a uniform `u`, so
/// bin `b` has probability about `(sqrt(b + 1) - sqrt(b)) / 16`.
fn skewed_byte(h: u64) -> u32 {
    let u = (h & 0xFFFF) as u32; // 16 bits
    (u * u) >> 24
}

/// Word `j` of the input: four skewed bytes.
pub fn word(j: u64) -> u32 {
    let h = mix64(j ^ 0x4157_0001);
    (0..4).fold(0, |w, b| w | (skewed_byte(h >> (16 * b)) << (8 * b)))
}

/// The histogram of the words of one group (`GROUP * WORDS` words).
fn group_histogram(words: &[u32], hist: &mut [u32; BINS]) {
    hist.fill(0);
    for &w in words {
        for b in 0..4 {
            hist[((w >> (8 * b)) & 0xFF) as usize] += 1;
        }
    }
}

/// The CPU implementation: one histogram per group of the package, each
/// written to its group's slot.
pub fn histogram_cpu(pkg: &Package, args: &mut CpuArgs<'_>) {
    let data = args.input::<u32>(0);
    let out = args.output::<u32>(1);
    let mut hist = [0u32; BINS];
    let per_group = GROUP * WORDS;
    for (k, g) in (pkg.units.start as usize..pkg.units.end as usize).enumerate() {
        group_histogram(&data[g * per_group..(g + 1) * per_group], &mut hist);
        out[k * BINS..(k + 1) * BINS].copy_from_slice(&hist);
    }
}

impl Histogram {
    /// About `n` work-items (rounded up to whole work-groups of [`GROUP`]),
    /// each reading [`WORDS`] words.
    pub fn new(engine: &Engine, n: u64) -> Result<Self> {
        let too_big = || crate::Error::SizeOverflow(format!("histogram: {n} items"));
        let items = n
            .div_ceil(GROUP as u64)
            .checked_mul(GROUP as u64)
            .ok_or_else(too_big)?;
        let len = super::len_1d("histogram", "items", items)?;
        let words = len
            .checked_mul(WORDS)
            .filter(|&w| w <= u32::MAX as usize)
            .ok_or_else(too_big)?;
        let data: Vec<u32> = (0..words as u64).map(word).collect();
        let kernel = engine.kernel(
            "histogram",
            Some(spirv::HISTOGRAM),
            Some(Arc::new(histogram_cpu)),
            None,
        )?;
        Ok(Histogram {
            kernel,
            data: engine.buffer_from_slice(&data)?,
            parts: engine.buffer::<u32>(len)?,
            items: items as u32,
        })
    }

    /// The per-group partial histograms of the last run (groups x 256).
    pub fn partials(&self) -> &[u32] {
        &self.parts
    }

    /// The partials, writable (to check that a wrong output fails
    /// verification).
    pub fn partials_mut(&mut self) -> &mut [u32] {
        self.parts.as_mut_slice()
    }
}

/// The reference histogram of `data` (one pass, 64-bit counts).
pub fn reference(data: &[u32]) -> Vec<u64> {
    let mut h = vec![0u64; BINS];
    for &w in data {
        for b in 0..4 {
            h[((w >> (8 * b)) & 0xFF) as usize] += 1;
        }
    }
    h
}

impl Workload for Histogram {
    fn name(&self) -> &'static str {
        "histogram"
    }

    fn space(&self) -> IndexSpace {
        IndexSpace::D1(u64::from(self.items))
    }

    fn run(&mut self, engine: &Engine, scheduler: &Scheduler, devices: Devices) -> Result<Report> {
        self.parts.as_mut_slice().fill(UNWRITTEN);
        let space = self.space();
        // Group g reads words g * 256 * WORDS .. (g + 1) * 256 * WORDS: each
        // item's WORDS words (packages are whole groups). Declared, so that
        // a staged GPU uploads only what its packages read.
        let args = Args::new()
            .input(&self.data)
            .footprint(Footprint::Items {
                per_item: WORDS as u64,
            })
            .output(&mut self.parts);
        engine.run(&self.kernel, args, space, scheduler, devices)
    }

    fn verify(&self) -> Verification {
        let parts = &self.parts[..];
        let unwritten = parts.iter().filter(|&&v| v == UNWRITTEN).count() as u64;
        let per_group = (4 * GROUP * WORDS) as u64;
        let mut total = vec![0u64; BINS];
        let mut bad_groups = 0u64;
        for part in parts.chunks(BINS) {
            let sum: u64 = part.iter().map(|&c| u64::from(c)).sum();
            bad_groups += u64::from(sum != per_group);
            for (t, &c) in total.iter_mut().zip(part) {
                *t += u64::from(c);
            }
        }
        let want = reference(&self.data);
        let bad_bins = total.iter().zip(&want).filter(|(a, b)| a != b).count() as u64;
        Verification::sampled(
            BINS as u64 + (parts.len() / BINS) as u64,
            bad_bins + bad_groups,
            unwritten,
            "every count written; each group's partial sums to its byte count; \
             the partials' sum equals the reference histogram exactly (every bin)"
                .into(),
        )
    }
}
