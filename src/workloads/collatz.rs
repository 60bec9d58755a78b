//! Collatz: the number of steps (`x / 2` if even, `3x + 1` if odd) from a
//! 64-bit start to 1, one start per work-item. Starts are log-uniform below
//! 2^33, so the iteration count varies from 0 to over a thousand between
//! neighbouring items (1-D, variable iteration count). Integer: verified
//! exactly against a 128-bit reference.

use super::{mix64, spirv, Verification, Workload, UNWRITTEN};
use crate::{
    Args, Buffer, CpuArgs, Devices, Engine, Footprint, IndexSpace, Kernel, Package, Report, Result,
    Scheduler,
};
use std::sync::Arc;

/// Starts are below `2^START_BITS`: every trajectory below 2^33 stays
/// within 64 bits (the largest excursion there, from 8 528 817 511, peaks
/// just under 2^64).
pub const START_BITS: u32 = 33;
/// The result of an item whose trajectory would leave 64 bits.
pub const OVERFLOW: u32 = 0xFFFF_FFFE;
/// Items the verification recomputes at most (evenly spread).
const CHECK_ITEMS: usize = 1 << 17;

/// Push constants of `shaders/collatz.comp`.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
pub struct Params {
    /// Items.
    pub n: u32,
}

/// The Collatz workload.
pub struct Collatz {
    kernel: Kernel,
    starts: Buffer<[u32; 2]>,
    steps: Buffer<u32>,
    n: u32,
}

/// Start `i`: `2^e` plus random lower bits, `e` uniform in
/// `0..START_BITS` (log-uniform), so at least 1.
pub fn start(i: u64) -> u64 {
    let h = mix64(i ^ 0xC011_A720);
    let e = (h >> 58) % u64::from(START_BITS);
    (1u64 << e) | (h & ((1u64 << e) - 1))
}

/// Steps from `x` to 1 in 64-bit arithmetic ([`OVERFLOW`] if `3x + 1`
/// would not fit), as the shader.
pub fn steps(mut x: u64) -> u32 {
    let mut count = 0u32;
    while x > 1 {
        x = if x & 1 == 0 {
            x >> 1
        } else {
            match x.checked_mul(3).and_then(|t| t.checked_add(1)) {
                Some(t) => t,
                None => return OVERFLOW,
            }
        };
        count += 1;
    }
    count
}

/// Steps from `x` to 1 (reference: 128-bit arithmetic, [`OVERFLOW`] where
/// the trajectory passes 2^64 - 1).
pub fn steps_reference(x: u64) -> u32 {
    let mut v = u128::from(x);
    let mut count = 0u32;
    while v != 1 && v != 0 {
        v = if v % 2 == 0 { v / 2 } else { 3 * v + 1 };
        if v > u128::from(u64::MAX) {
            return OVERFLOW;
        }
        count += 1;
    }
    count
}

/// The CPU implementation: the items of one package.
pub fn collatz_cpu(pkg: &Package, args: &mut CpuArgs<'_>) {
    let starts = args.input::<[u32; 2]>(0);
    let out = args.output::<u32>(1);
    let starts = &starts[pkg.items.start as usize..pkg.items.end as usize];
    for (o, s) in out.iter_mut().zip(starts) {
        *o = steps(u64::from(s[0]) | (u64::from(s[1]) << 32));
    }
}

impl Collatz {
    /// `n` starts, start `i` = [`start`]`(i)`.
    pub fn new(engine: &Engine, n: u64) -> Result<Self> {
        let len = super::len_1d("collatz", "starts", n)?;
        let starts: Vec<[u32; 2]> = (0..n)
            .map(|i| {
                let s = start(i);
                [s as u32, (s >> 32) as u32]
            })
            .collect();
        let kernel = engine.kernel(
            "collatz",
            Some(spirv::COLLATZ),
            Some(Arc::new(collatz_cpu)),
            None,
        )?;
        Ok(Collatz {
            kernel,
            starts: engine.buffer_from_slice(&starts)?,
            steps: engine.buffer::<u32>(len)?,
            n: n as u32,
        })
    }

    /// The step counts of the last run.
    pub fn steps(&self) -> &[u32] {
        &self.steps
    }

    /// The step counts, writable (to check that a wrong output fails
    /// verification).
    pub fn steps_mut(&mut self) -> &mut [u32] {
        self.steps.as_mut_slice()
    }
}

impl Workload for Collatz {
    fn name(&self) -> &'static str {
        "collatz"
    }

    fn space(&self) -> IndexSpace {
        IndexSpace::D1(u64::from(self.n))
    }

    fn run(&mut self, engine: &Engine, scheduler: &Scheduler, devices: Devices) -> Result<Report> {
        self.steps.as_mut_slice().fill(UNWRITTEN);
        let space = self.space();
        let args = Args::new()
            .input(&self.starts)
            // Item i reads its own start.
            .footprint(Footprint::Items { per_item: 1 })
            .output(&mut self.steps)
            .push(&Params { n: self.n });
        engine.run(&self.kernel, args, space, scheduler, devices)
    }

    fn verify(&self) -> Verification {
        let starts = &self.starts[..];
        super::verify_exact_u32(&self.steps, CHECK_ITEMS, |i| {
            steps_reference(u64::from(starts[i][0]) | (u64::from(starts[i][1]) << 32))
        })
    }
}
