//! Reduction outputs: a kernel's output that is one value (or a fixed-size
//! array of values, such as a histogram) for the whole index space instead
//! of one per work-item.
//!
//! # Design
//!
//! A [`Reduction`] owns a *partials* buffer with one slot (of `width`
//! elements) per work-group of the run, allocated (and grown) by the engine
//! at run start and bound to the shader like any other buffer, at the
//! reduction's position among the arguments.
//!
//! - **GPU**: every work-group combines its invocations' values (the GLSL
//!   include `coexec_reduce.glsl` has the helpers) and *writes* (never
//!   accumulates into) its slot, at index `gl_WorkGroupID.x`.
//! - **CPU**: before the closure runs a package (a chunk of one), the engine
//!   fills the package's slots with the identity; the closure updates a
//!   package-local accumulator, [`CpuArgs::accumulator`], which is the slot
//!   of the package's first work-group.
//! - **Combine**: once the run is over (every GPU submission drained), the
//!   engine combines the slots of all work-groups into [`Reduction::value`],
//!   in a fixed pairwise order over the slot indices: that of [`tree`]
//!   within each block of 1024 consecutive slots, then over the blocks. The
//!   blocks of a large built-in combine (1 MiB of partials and more: 2^24
//!   items of a 24-float k-means partial make 6 MiB) are combined on the
//!   engine's threads at once.
//!
//! Exactly once: each unit of work is completed by exactly one claimant
//! (the queue's guarantee), and whoever runs a work-group overwrites its
//! whole slot, so stealing and splitting (which only move unit boundaries)
//! and a GPU package requeued after a fault (its units run again elsewhere
//! and overwrite whatever the failed submission left, which settled before
//! the requeue) leave one valid partial per work-group, combined once.
//!
//! Determinism: the slots are always combined in the same order, so the only
//! varying part is how the CPU groups work-groups into packages. With
//! [`Reduction::deterministic`] the CPU calls its closure once per
//! work-group, so every slot holds exactly one work-group's partial and the
//! result depends on nothing but the data. For the result to be also the
//! same whichever device ran a work-group, the closure must combine a
//! work-group's items in the order the GLSL helpers do: [`tree`].
//!
//! Staged memory: the partials are bound zero-copy (no mirror): the GPU
//! writes its few partials straight to the host copy, so the combine reads
//! them with no download, eager or lazy.
//!
//! Limits: 1-D index spaces only (refused with [`Error::Reduction`]).

use super::kernel::{Access, ArgBuffer, Args, CpuArgs, CpuFn, Geometry, IndexSpace, Package};
use crate::error::{Error, Result};
use crate::mem::{Buffer, UnifiedMemory};
use std::any::TypeId;
use std::ops::Range;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

/// The GLSL helpers for reductions (`engine/shaders/coexec_reduce.glsl`):
/// what runtime-compiled GLSL gets for `#include "coexec_reduce.glsl"`.
pub const GLSL_INCLUDE: &str = include_str!("../../shaders/coexec_reduce.glsl");

/// A built-in combine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ReduceOp {
    /// The sum (wrapping for integers).
    Sum,
    /// The minimum.
    Min,
    /// The maximum.
    Max,
}

#[allow(unnameable_types)] // the sealed-trait pattern: nameable inside only
mod sealed {
    pub trait Sealed {}
}

/// An element type the built-in combines ([`ReduceOp`]) work on: `f32`,
/// `f64`, `i32`, `u32`, `u64`.
pub trait Element: bytemuck::Pod + PartialOrd + sealed::Sealed + Send + Sync {
    /// The identity of `op`: 0 for a sum, the largest value for a minimum
    /// (+inf for floats), the smallest for a maximum.
    fn identity(op: ReduceOp) -> Self;
    /// `a op b`. Min and max of floats follow GLSL's `min`/`max` for
    /// numbers (NaNs are not supported).
    fn apply(op: ReduceOp, a: Self, b: Self) -> Self;
}

macro_rules! element {
    ($t:ty, $zero:expr, $min:expr, $max:expr, $add:expr) => {
        impl sealed::Sealed for $t {}
        impl Element for $t {
            fn identity(op: ReduceOp) -> Self {
                match op {
                    ReduceOp::Sum => $zero,
                    ReduceOp::Min => $max,
                    ReduceOp::Max => $min,
                }
            }
            #[inline]
            fn apply(op: ReduceOp, a: Self, b: Self) -> Self {
                match op {
                    ReduceOp::Sum => $add(a, b),
                    ReduceOp::Min => {
                        if b < a {
                            b
                        } else {
                            a
                        }
                    }
                    ReduceOp::Max => {
                        if b > a {
                            b
                        } else {
                            a
                        }
                    }
                }
            }
        }
    };
}

element!(f32, 0.0, f32::NEG_INFINITY, f32::INFINITY, |a, b| a + b);
element!(f64, 0.0, f64::NEG_INFINITY, f64::INFINITY, |a, b| a + b);
element!(i32, 0, i32::MIN, i32::MAX, i32::wrapping_add);
element!(u32, 0, u32::MIN, u32::MAX, u32::wrapping_add);
element!(u64, 0, u64::MIN, u64::MAX, u64::wrapping_add);

/// Combines `values` in the canonical work-group order, the one of the GLSL
/// helpers in `coexec_reduce.glsl`: with `p` the smallest power of two at
/// least `values.len()`, for `s = p/2, p/4, .., 1`, `v[i] = v[i] op v[i+s]`
/// for every `i < s` with `i + s < len`. The result (also left in
/// `values[0]`) is bit-identical to the GPU's for the same values; the
/// identity of `op` for an empty slice.
pub fn tree<T: Element>(op: ReduceOp, values: &mut [T]) -> T {
    if values.is_empty() {
        return T::identity(op);
    }
    tree_slots(values, 1, &Combine::Op(op, zip_apply::<T>));
    values[0]
}

/// Combines `partials`, one per work-group in work-group order, in the
/// order the engine combines a reduction's slots (a pairwise tree within
/// each block of 1024 work-groups, then over the blocks' results): a
/// deterministic [`Reduction`] of width 1 whose work-groups produced
/// `partials` has this value, bit for bit. The partials are overwritten;
/// the identity of `op` for an empty slice.
pub fn tree_of_partials<T: Element>(op: ReduceOp, partials: &mut [T]) -> T {
    if partials.is_empty() {
        return T::identity(op);
    }
    combine_in_blocks(partials, 1, &Combine::Op(op, zip_apply::<T>), None);
    partials[0]
}

/// `acc[i] = acc[i] op other[i]`, with `op` fixed in each loop (so that
/// the loop vectorizes).
fn zip_apply<T: Element>(op: ReduceOp, acc: &mut [T], other: &[T]) {
    let mut each = |op: ReduceOp| {
        for (a, &b) in acc.iter_mut().zip(other) {
            *a = T::apply(op, *a, b);
        }
    };
    match op {
        ReduceOp::Sum => each(ReduceOp::Sum),
        ReduceOp::Min => each(ReduceOp::Min),
        ReduceOp::Max => each(ReduceOp::Max),
    }
}

/// A custom combine: `acc = acc op other`, over `width` elements.
pub type CombineFn<T> = dyn Fn(&mut [T], &[T]) + Send + Sync;

/// How a reduction combines.
#[derive(Clone)]
enum Combine<T: bytemuck::Pod> {
    /// A built-in op and its element-wise `acc[i] = acc[i] op other[i]`.
    Op(ReduceOp, fn(ReduceOp, &mut [T], &[T])),
    Custom(Arc<CombineFn<T>>),
}

/// A reduction output: pass it to a run with [`Args::reduce`]; after the
/// run, [`value`](Self::value) holds the combine of every work-item's
/// contribution. See the module's documentation for how the devices
/// produce partials.
///
/// ```
/// # use coexec_engine::{Reduction, ReduceOp};
/// let sum = Reduction::<f32>::new(ReduceOp::Sum, 1);
/// assert_eq!(sum.value(), &[0.0]);
/// let hist = Reduction::<u32>::sum(256).deterministic(true);
/// assert_eq!(hist.value().len(), 256);
/// ```
pub struct Reduction<T: bytemuck::Pod> {
    combine: Combine<T>,
    identity: Vec<T>,
    deterministic: bool,
    partials: Option<Buffer<T>>,
    value: Vec<T>,
}

impl<T: bytemuck::Pod> std::fmt::Debug for Reduction<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reduction")
            .field("elem", &std::any::type_name::<T>())
            .field("width", &self.identity.len())
            .field("deterministic", &self.deterministic)
            .finish()
    }
}

impl<T: Element> Reduction<T> {
    /// A reduction of `width` elements (1: a scalar) combined with `op`,
    /// element by element. A run refuses width 0 ([`Error::Reduction`]).
    pub fn new(op: ReduceOp, width: usize) -> Self {
        let identity = vec![T::identity(op); width];
        Reduction {
            combine: Combine::Op(op, zip_apply::<T>),
            value: identity.clone(),
            identity,
            deterministic: false,
            partials: None,
        }
    }

    /// A sum of `width` elements.
    pub fn sum(width: usize) -> Self {
        Self::new(ReduceOp::Sum, width)
    }

    /// A minimum of `width` elements.
    pub fn min(width: usize) -> Self {
        Self::new(ReduceOp::Min, width)
    }

    /// A maximum of `width` elements.
    pub fn max(width: usize) -> Self {
        Self::new(ReduceOp::Max, width)
    }
}

impl<T: bytemuck::Pod> Reduction<T> {
    /// A reduction with a custom associative `combine` (`acc = acc op
    /// other`, over the whole slot) whose identity is `identity` (its
    /// length is the width). The engine combines the partials with it on
    /// the host; the GPU's shader must produce partials that mean the same.
    pub fn custom(
        identity: Vec<T>,
        combine: impl Fn(&mut [T], &[T]) + Send + Sync + 'static,
    ) -> Self {
        Reduction {
            combine: Combine::Custom(Arc::new(combine)),
            value: identity.clone(),
            identity,
            deterministic: false,
            partials: None,
        }
    }

    /// Whether the result must not depend on which device ran what (see
    /// the module's documentation): the CPU then runs one work-group per
    /// call of its closure.
    pub fn deterministic(mut self, on: bool) -> Self {
        self.deterministic = on;
        self
    }

    /// Elements per slot.
    pub fn width(&self) -> usize {
        self.identity.len()
    }

    /// The result of the last successful run (the identity before any).
    pub fn value(&self) -> &[T] {
        &self.value
    }

    /// The first element of [`value`](Self::value): a scalar reduction's
    /// result.
    pub fn scalar(&self) -> T {
        self.value[0]
    }

    /// Combines the slots `range` of the partials, in place, in the
    /// canonical order (see [`combine_in_blocks`]); a built-in combine of
    /// at least [`SPREAD_BYTES`] of partials spreads its blocks over
    /// `spread`.
    fn combine_slots(&mut self, range: Range<usize>, spread: Spread<'_>)
    where
        T: Send,
    {
        let w = self.identity.len();
        let slots = range.end.saturating_sub(range.start);
        let Some(p) = self.partials.as_mut().filter(|_| slots > 0 && w > 0) else {
            self.value = self.identity.clone();
            return;
        };
        let parts = &mut p.as_mut_slice()[range.start * w..range.end * w];
        // A custom combine stays on the caller: a panic in it unwinds to
        // the run's caller, as from any of its closures.
        let big = std::mem::size_of_val(parts) >= SPREAD_BYTES;
        let spread = spread.filter(|_| big && matches!(self.combine, Combine::Op(..)));
        combine_in_blocks(parts, w, &self.combine, spread);
        self.value = parts[..w].to_vec();
    }
}

/// Slots combined as one block first (see [`combine_in_blocks`]): a block
/// of 24-element `f32` slots is 96 KiB, in a core's L2 while its tree runs,
/// and 65536 work-groups make 64 blocks to spread (smaller blocks cost more
/// in calls than they save: BENCHMARKS.md, run 22, dev machine). Fixed, not
/// tuned per machine: the order of a deterministic reduction depends on it.
pub(crate) const BLOCK_SLOTS: usize = 1024;

/// Partials from which a built-in combine spreads its blocks over the
/// engine's threads: about 1 MiB takes a core tens of microseconds to
/// combine (BENCHMARKS.md, run 22, dev machine), more than waking the
/// threads costs.
pub(crate) const SPREAD_BYTES: usize = 1 << 20;

/// Runs `task(i)` for every `i` in `0..n`, each exactly once, on the
/// engine's threads; `false` where it could not (nothing ran then).
pub(crate) type SpreadFn<'a> = &'a (dyn Fn(usize, &(dyn Fn(usize) + Sync)) -> bool + Sync);

/// Where a combine may spread its blocks, if anywhere.
pub(crate) type Spread<'a> = Option<SpreadFn<'a>>;

/// `slots` (whole slots of `w` elements) combined into its first slot by
/// [`tree`]'s order over slots.
fn tree_slots<T: bytemuck::Pod>(slots: &mut [T], w: usize, combine: &Combine<T>) {
    let n = slots.len() / w;
    let mut s = n.next_power_of_two() / 2;
    while s > 0 {
        // `s < n`: `p / 2 < n` by the choice of `p`. Slot j takes slot
        // j + s for j < m: two contiguous runs of m slots.
        let m = s.min(n - s);
        let (lo, hi) = slots.split_at_mut(s * w);
        let (acc, other) = (&mut lo[..m * w], &hi[..m * w]);
        match combine {
            Combine::Op(op, zip) => zip(*op, acc, other),
            Combine::Custom(f) => {
                for (a, o) in acc.chunks_exact_mut(w).zip(other.chunks_exact(w)) {
                    f(a, o);
                }
            }
        }
        s /= 2;
    }
}

/// Combines the slots of `parts` (of `w` elements each) into its first
/// slot, in the canonical order: each block of [`BLOCK_SLOTS`] consecutive
/// slots (the last one shorter) by [`tree`]'s order over its slots, then
/// the blocks' results by the same order. Pairwise at both levels (a float
/// sum's rounding error grows with the log of the slots), and fixed: a
/// deterministic reduction gives the same bits whoever combines which
/// block. With `spread`, the blocks are combined on the engine's threads
/// (falling back to the caller where it cannot), reading each slot once
/// (a whole-range tree read the partials about twice, out of cache).
fn combine_in_blocks<T: bytemuck::Pod + Send>(
    parts: &mut [T],
    w: usize,
    combine: &Combine<T>,
    spread: Spread<'_>,
) {
    let block = BLOCK_SLOTS * w;
    let blocks = parts.len().div_ceil(block);
    let mut done = false;
    if let Some(spread) = spread.filter(|_| blocks > 1) {
        // One lock per block, each taken once by the task of its index:
        // the blocks are disjoint, the locks only make that visible.
        let cells: Vec<std::sync::Mutex<&mut [T]>> =
            parts.chunks_mut(block).map(std::sync::Mutex::new).collect();
        done = spread(blocks, &|i| {
            let mut b = cells[i].lock().unwrap_or_else(|p| p.into_inner());
            tree_slots(&mut b, w, combine);
        });
    }
    if !done {
        for b in parts.chunks_mut(block) {
            tree_slots(b, w, combine);
        }
    }
    if blocks > 1 {
        let mut heads: Vec<T> = Vec::with_capacity(blocks * w);
        for b in parts.chunks(block) {
            heads.extend_from_slice(&b[..w]);
        }
        tree_slots(&mut heads, w, combine);
        parts[..w].copy_from_slice(&heads[..w]);
    }
}

/// A reduction seen by the engine, whatever its element type.
pub(crate) trait Target: Send + Sync {
    /// Makes the partials hold `slots` slots (allocating in `memory`).
    fn prepare(&mut self, memory: &Arc<UnifiedMemory>, slots: usize) -> Result<()>;
    /// The argument binding the partials (after `prepare`).
    fn arg(&self) -> ArgBuffer<'_>;
    /// Combines the slots `range` into the value (spreading the work over
    /// `spread` where worth it).
    fn finish(&mut self, range: Range<usize>, spread: Spread<'_>);
    /// [`Reduction::deterministic`].
    fn per_group(&self) -> bool;
}

impl<T: bytemuck::Pod + Send + Sync> Target for Reduction<T> {
    fn prepare(&mut self, memory: &Arc<UnifiedMemory>, slots: usize) -> Result<()> {
        let w = self.identity.len();
        if w == 0 {
            return Err(Error::Reduction("a reduction needs a width of at least 1 element".into()));
        }
        let len = slots
            .checked_mul(w)
            .ok_or_else(|| Error::SizeOverflow(format!("{slots} work-groups x {w} elements")))?;
        let fits = self.partials.as_ref().is_some_and(|p| {
            p.len() >= len && Arc::ptr_eq(p.raw().memory(), memory)
        });
        if !fits {
            self.partials = None; // free the old one first
            self.partials = Some(memory.buffer::<T>(len)?);
        }
        Ok(())
    }

    fn arg(&self) -> ArgBuffer<'_> {
        let p = self.partials.as_ref().expect("prepared");
        ArgBuffer {
            raw: p.raw(),
            access: Access::Reduce {
                width: self.identity.len() as u64,
            },
            type_id: TypeId::of::<T>(),
            type_name: std::any::type_name::<T>(),
            len: p.len(),
            elem_size: std::mem::size_of::<T>(),
            identity: bytemuck::cast_slice(&self.identity),
            footprint: None,
        }
    }

    fn finish(&mut self, range: Range<usize>, spread: Spread<'_>) {
        self.combine_slots(range, spread);
    }

    fn per_group(&self) -> bool {
        self.deterministic
    }
}

/// A run's reductions: each with its position among the buffers.
pub(crate) type Targets<'a> = Vec<(usize, &'a mut (dyn Target + 'static))>;

/// Checks that the run can have reductions and gives each its partials.
pub(crate) fn prepare(
    targets: &mut Targets<'_>,
    memory: &Arc<UnifiedMemory>,
    g: &Geometry,
) -> Result<()> {
    if !matches!(g.space, IndexSpace::D1(_)) {
        return Err(Error::Reduction(
            "reductions need a 1-D index space".into(),
        ));
    }
    // Slots for the whole space: a shader writes its work-group's slot, at
    // its global id (also in a run of a sub-range).
    let slots = usize::try_from(g.total)
        .map_err(|_| Error::SizeOverflow(format!("{} work-groups", g.total)))?;
    for (_, t) in targets.iter_mut() {
        t.prepare(memory, slots)?;
    }
    Ok(())
}

/// `args` with the reductions' partials inserted at their positions.
pub(crate) fn bind<'s>(mut args: Args<'s>, targets: &'s Targets<'_>) -> Args<'s> {
    for (pos, t) in targets {
        let at = (*pos).min(args.buffers.len());
        args.buffers.insert(at, t.arg());
        args.per_group |= t.per_group();
    }
    args
}

/// Combines every reduction's partials after a successful run: the slots
/// of the run's work-groups (large ones spread over `spread`).
pub(crate) fn finish(targets: &mut Targets<'_>, g: &Geometry, spread: Spread<'_>) {
    let (first, end) = (g.first as usize, (g.first + g.units) as usize);
    for (_, t) in targets.iter_mut() {
        t.finish(first..end, spread);
    }
}

impl<'a> Args<'a> {
    /// Adds a reduction output (see [`Reduction`]): bound to the shader as
    /// the buffer of work-group partials, at this position among the
    /// buffers; the CPU closure updates its package's accumulator
    /// ([`CpuArgs::accumulator`]). After a successful run its
    /// [`value`](Reduction::value) holds the result.
    pub fn reduce<T: bytemuck::Pod + Send + Sync>(mut self, r: &'a mut Reduction<T>) -> Self {
        let at = self.buffers.len() + self.reductions.len();
        self.reductions.push((at, r));
        self
    }
}

impl<'r> CpuArgs<'r> {
    /// This package's accumulator of reduction `index` (its position in
    /// [`Args`]): `width` elements holding the identity when the package
    /// starts; the closure combines its items' contributions into it.
    ///
    /// # Panics
    /// If `index` is not a reduction, `T` is not its element type, or it
    /// was already taken for this package.
    pub fn accumulator<T: bytemuck::Pod>(&mut self, index: usize) -> &'r mut [T] {
        let a = self.arg::<T>(index);
        let Access::Reduce { width } = a.access else {
            panic!("argument {index} is not a reduction; use CpuArgs::input or CpuArgs::output");
        };
        self.take(index);
        let start = (self.pkg.units.start * width) as usize;
        let end = start + width as usize;
        assert!(end <= a.len, "partials too small (sized at run start)");
        // SAFETY: the run holds `&mut Reduction` whose partials these are,
        // so no code outside the run touches them; the slot of the
        // package's first work-group belongs to this package alone (units
        // are claimed exactly once), and it is handed out once per package
        // (`take`). In range (asserted) and of element type T.
        unsafe { std::slice::from_raw_parts_mut((a.raw.ptr() as *mut T).add(start), end - start) }
    }
}

impl CpuArgs<'_> {
    /// [`accumulator`](Self::accumulator) as bytes, whatever the element
    /// type (for bindings such as the C ABI's, whose closures see bytes):
    /// `None` where argument `index` is not a reduction.
    ///
    /// # Panics
    /// If it was already taken for this package.
    pub fn accumulator_bytes(&mut self, index: usize) -> Option<&mut [u8]> {
        let a = self.buffers.get(index)?;
        let Access::Reduce { .. } = a.access else {
            return None;
        };
        self.take(index);
        let slot = a.identity.len();
        let start = self.pkg.units.start as usize * slot;
        let end = start + slot;
        assert!(end as u64 <= a.raw.bytes(), "partials too small (sized at run start)");
        // SAFETY: as for `accumulator`: this package's own slot, handed out
        // once per package, inside the partials; bytes have no invalid
        // values.
        Some(unsafe { std::slice::from_raw_parts_mut(a.raw.ptr().add(start), slot) })
    }
}

/// Fills the slots of `units` of every reduction with its identity.
fn fill_identity(buffers: &[ArgBuffer<'_>], units: &Range<u64>) {
    for a in buffers {
        let Access::Reduce { width } = a.access else {
            continue;
        };
        let slot = a.identity.len();
        debug_assert_eq!(slot as u64, width * a.elem_size as u64);
        let (from, to) = (units.start as usize, units.end as usize);
        if to * slot > a.raw.bytes() as usize {
            continue; // cannot happen: sized at run start
        }
        for s in from..to {
            // SAFETY: slot `s` is inside the partials (checked above); its
            // work-group belongs to the package being run, which no other
            // claimant runs, and the closure has not been called yet.
            unsafe {
                std::ptr::copy_nonoverlapping(a.identity.as_ptr(), a.raw.ptr().add(s * slot), slot)
            };
        }
    }
}

/// What [`call`] did: the outcome of the call that failed (or of the last
/// one), its [`CpuArgs::fail`] message, and the work-items of the calls
/// made.
pub(crate) struct Called {
    pub(crate) outcome: std::thread::Result<()>,
    pub(crate) failure: Option<String>,
    pub(crate) items: u64,
}

/// Calls the CPU closure on `units`: once per piece (a tiled 2-D package
/// that starts or ends inside a row of work-groups is up to three, see
/// [`Geometry::pieces`]), or once per work-group for a deterministic
/// reduction, until one fails.
pub(crate) fn call(kernel: &CpuFn, args: &Args<'_>, g: &Geometry, units: &Range<u64>) -> Called {
    let mut items = 0;
    let mut each = |pkg: Package| {
        items += pkg.len();
        call_once(kernel, args, pkg)
    };
    let r = match args.per_group {
        false => g.pieces(units.clone()).map(&mut each).find(failed),
        // One unit is one rectangle.
        true => units.clone().map(|u| each(g.package(u..u + 1))).find(failed),
    };
    let (outcome, failure) = r.unwrap_or((Ok(()), None));
    Called {
        outcome,
        failure,
        items,
    }
}

/// Whether a call's outcome is a failure.
fn failed(r: &(std::thread::Result<()>, Option<String>)) -> bool {
    r.0.is_err() || r.1.is_some()
}

fn call_once(
    kernel: &CpuFn,
    args: &Args<'_>,
    pkg: Package,
) -> (std::thread::Result<()>, Option<String>) {
    // The space's units: the slots of the package's work-groups.
    if args.has_reductions() {
        fill_identity(&args.buffers, &pkg.units);
    }
    let mut cargs = CpuArgs {
        buffers: &args.buffers,
        push: &args.push,
        context: args.context,
        pkg: pkg.clone(),
        taken: 0,
        failure: None,
    };
    let outcome = catch_unwind(AssertUnwindSafe(|| kernel(&pkg, &mut cargs)));
    (outcome, cargs.failure)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tree_matches_a_naive_pairwise_order() {
        // 5 values: p = 8; s = 4: v0 += v4; s = 2: v0 += v2, v1 += v3;
        // s = 1: v0 += v1.
        let mut v = [1.0f32, 2.0, 3.0, 4.0, 5.0];
        let r = tree(ReduceOp::Sum, &mut v);
        let want = ((1.0f32 + 5.0) + 3.0) + (2.0 + 4.0);
        assert_eq!(r.to_bits(), want.to_bits());
        assert_eq!(tree(ReduceOp::Max, &mut [3u32, 9, 1]), 9);
        assert_eq!(tree(ReduceOp::Min, &mut [3i32, -9, 1]), -9);
        assert_eq!(tree::<u64>(ReduceOp::Sum, &mut []), 0);
        assert_eq!(tree(ReduceOp::Sum, &mut [7u64]), 7);
    }

    #[test]
    fn identities_are_neutral() {
        for op in [ReduceOp::Sum, ReduceOp::Min, ReduceOp::Max] {
            assert_eq!(f32::apply(op, f32::identity(op), 2.5), 2.5);
            assert_eq!(f64::apply(op, f64::identity(op), -2.5), -2.5);
            assert_eq!(i32::apply(op, i32::identity(op), -7), -7);
            assert_eq!(u32::apply(op, u32::identity(op), 7), 7);
            assert_eq!(u64::apply(op, u64::identity(op), 1 << 40), 1 << 40);
        }
    }

    /// The canonical order, element by element, from [`tree`] alone: each
    /// block of [`BLOCK_SLOTS`] slots, then the blocks' results.
    fn reference(parts: &[f32], w: usize) -> Vec<f32> {
        let slots = parts.len() / w;
        (0..w)
            .map(|e| {
                let mut heads: Vec<f32> = (0..slots)
                    .step_by(BLOCK_SLOTS)
                    .map(|b| {
                        let end = (b + BLOCK_SLOTS).min(slots);
                        let mut v: Vec<f32> = (b..end).map(|j| parts[j * w + e]).collect();
                        tree(ReduceOp::Sum, &mut v)
                    })
                    .collect();
                tree(ReduceOp::Sum, &mut heads)
            })
            .collect()
    }

    /// Values whose float sum depends on the order they are added in.
    fn partials(slots: usize, w: usize) -> Vec<f32> {
        (0..slots * w)
            .map(|i| ((i * 7919 % 1013) as f32 - 500.0) * 1.37e-3 + (i % 3) as f32 * 1e4)
            .collect()
    }

    /// Runs the tasks on scoped threads, the last first.
    fn threads(n: usize, task: &(dyn Fn(usize) + Sync)) -> bool {
        std::thread::scope(|s| {
            for i in (0..n).rev() {
                s.spawn(move || task(i));
            }
        });
        true
    }

    #[test]
    fn slots_combine_block_by_block_then_over_the_blocks() {
        let sum = Combine::Op(ReduceOp::Sum, zip_apply::<f32>);
        // One slot, a short block, whole blocks, whole blocks and a short one.
        for (slots, w) in [(1, 3), (100, 3), (4 * BLOCK_SLOTS, 2), (3 * BLOCK_SLOTS + 37, 24)] {
            let want = reference(&partials(slots, w), w);
            let mut serial = partials(slots, w);
            combine_in_blocks(&mut serial, w, &sum, None);
            assert_eq!(&serial[..w], &want[..], "{slots} slots of {w}, serial");
            let mut spread = partials(slots, w);
            combine_in_blocks(&mut spread, w, &sum, Some(&threads));
            assert_eq!(&spread[..w], &want[..], "{slots} slots of {w}, spread");
            // Where the threads cannot run it, the caller does.
            let mut refused = partials(slots, w);
            combine_in_blocks(&mut refused, w, &sum, Some(&|_, _| false));
            assert_eq!(&refused[..w], &want[..], "{slots} slots of {w}, refused");
        }
    }

    #[test]
    fn slots_combine_in_the_canonical_tree_order() {
        // Without partials (no run yet): the identity.
        let mut r = Reduction::<u32>::custom(vec![0, 0], |acc, x| {
            acc[0] += x[0];
            acc[1] = acc[1].max(x[1]);
        });
        assert_eq!(r.width(), 2);
        r.combine_slots(0..3, None);
        assert_eq!(r.value(), &[0, 0]);
    }
}
