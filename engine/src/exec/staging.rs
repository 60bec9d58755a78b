//! A staged run's plan on one GPU: which argument binds which of that GPU's
//! mirrors, what each of its packages uploads (its arguments' footprints
//! less what its mirrors hold) and downloads (what it wrote), and, over
//! every GPU of the run ([`finish_all`]), what each mirror holds after the
//! run (see [`crate::mem::mirror`] for the residency rule).

use super::footprint::{item_elements, offset_elements, Footprint};
use super::kernel::{Access, ArgBuffer, Geometry, IndexSpace, Package};
use crate::error::{Error, Result};
use crate::mem::mirror::Mirror;
use crate::mem::ranges::RangeSet;
use crate::mem::{BufferBinding, RawBuffer};
use crate::vk::transfer::Copy;
use crate::vk::ShaderInterface;
use ash::vk;
use std::ops::Range;
use std::sync::Mutex;

/// One argument of a staged run.
pub(crate) struct StagedArg<'a> {
    raw: &'a RawBuffer,
    /// Its host bytes as the run's GPU sees them (the source of uploads,
    /// the destination of downloads).
    host: vk::Buffer,
    /// Its mirror; `None`: bound zero-copy (the mirror did not fit).
    mirror: Option<vk::Buffer>,
    /// What a GPU package reads of it, if the GPU reads it.
    reads: Option<Footprint>,
    /// The offsets of a [`Footprint::Offsets`] read, where their host copy
    /// is current (else `reads` is [`Footprint::Whole`]).
    offsets: Option<(&'a RawBuffer, u64)>,
    /// Outputs: elements each work-item writes.
    per_item: Option<u64>,
    /// Elements it holds, and bytes per element.
    len: u64,
    elem: u64,
    /// Lazy host coherence: what the GPU writes stays in the mirror,
    /// stale on the host (see [`crate::mem::coherence`]).
    lazy: bool,
}

impl StagedArg<'_> {
    /// The bytes of `elements`.
    fn bytes(&self, elements: Range<u64>) -> Range<u64> {
        let end = elements.end.saturating_mul(self.elem).min(self.raw.bytes());
        elements.start.saturating_mul(self.elem).min(end)..end
    }

    /// The bytes the `pieces` of a package write (outputs with a mirror
    /// only).
    fn written(&self, pieces: &[Package]) -> Vec<Range<u64>> {
        match self.mirror {
            Some(_) => self.items_written(pieces),
            None => Vec::new(),
        }
    }

    /// The bytes the `pieces` of a package write (outputs, mirrored or
    /// not): their items' elements, one range per row of a tile.
    fn items_written(&self, pieces: &[Package]) -> Vec<Range<u64>> {
        let Some(per) = self.per_item else {
            return Vec::new();
        };
        pieces
            .iter()
            .flat_map(|p| item_elements(p, per, self.len))
            .map(|r| self.bytes(r))
            .filter(|r| !r.is_empty())
            .collect()
    }
}

/// The staged plan of one run on one GPU.
pub(crate) struct Staging<'a> {
    /// The engine GPU whose mirrors the run binds.
    gpu: usize,
    args: Vec<StagedArg<'a>>,
    space: IndexSpace,
    /// The run's units as packages of one rectangle each (a sub-range run
    /// covers part of `space`).
    run: Vec<Package>,
    /// Per argument: the bytes GPU packages wrote and that were downloaded.
    downloaded: Mutex<Vec<RangeSet>>,
    /// Per mirror: the bytes of uploads submitted and not yet completed.
    queued: Mutex<Vec<(vk::Buffer, RangeSet)>>,
    /// Buffers bound zero-copy because their mirror did not fit.
    pub(crate) fallbacks: u32,
    /// The GPU's first package brings up the rest of an input read again
    /// unchanged (see [`Staging::new`]): a one-time cost, not the run's.
    completes: bool,
}

impl<'a> Staging<'a> {
    /// The plan on engine GPU `gpu` for `args` of a kernel with shader
    /// interface `iface` over `space`: gives each buffer its mirror on that
    /// GPU (allocated on first use). A mirror that cannot be allocated is
    /// [`Error::MirrorUnavailable`] where staging was demanded, else the
    /// buffer is bound zero-copy (a warning).
    pub(crate) fn new(
        args: &'a [ArgBuffer<'a>],
        iface: &ShaderInterface,
        geometry: &Geometry,
        gpu: usize,
    ) -> Result<Self> {
        let space = geometry.space;
        let mut out = Staging {
            gpu,
            args: Vec::with_capacity(args.len()),
            space,
            run: geometry.pieces(0..geometry.units).collect(),
            downloaded: Mutex::new(vec![RangeSet::new(); args.len()]),
            queued: Mutex::new(Vec::new()),
            fallbacks: 0,
            completes: false,
        };
        for (i, a) in args.iter().enumerate() {
            // Reduction partials are bound zero-copy: the GPU writes its
            // few partials straight to the host copy.
            let reduce = matches!(a.access, Access::Reduce { .. });
            let mirror = match reduce {
                true => None,
                false => mirror_of(i, a.raw, gpu)?,
            };
            let host = a
                .raw
                .view_on(gpu)
                .map(|(h, _)| h)
                .ok_or(Error::ForeignBuffer { binding: i as u32 })?;
            out.fallbacks += u32::from(mirror.is_none() && !reduce);
            let reads = gpu_reads(i, a, iface);
            // An input read again unchanged (the mirror holds part of it
            // from earlier runs): the rest comes up at once, so that later
            // runs find it resident, whatever share the GPU takes. (Asked of
            // every argument: it also brings the mirror's valid bytes to the
            // host's generation.)
            let reread = partly_resident(a.raw, gpu) && matches!(a.access, Access::Read);
            out.completes |= reread && mirror.is_some() && a.footprint() != Footprint::Whole;
            let len = a.len as u64;
            let (footprint, offsets) = match reread {
                true => (Footprint::Whole, None),
                false => with_offsets(a.footprint(), args),
            };
            out.args.push(StagedArg {
                raw: a.raw,
                host,
                mirror,
                reads: reads.then_some(footprint),
                offsets,
                per_item: match a.access {
                    Access::Read | Access::Reduce { .. } => None,
                    Access::Write { per_item } => Some(per_item),
                },
                len,
                elem: a.raw.bytes() / len.max(1),
                lazy: lazy(a.raw),
            });
        }
        Ok(out)
    }

    /// Whether the GPU's first package brings up the rest of an input
    /// that earlier runs read unchanged and left partly resident: its time
    /// and the run's then hold a one-time transfer.
    pub(crate) fn completes_residency(&self) -> bool {
        self.completes
    }

    /// The bytes the GPU's first package uploads whatever its size: what
    /// the mirrors lack of the inputs it reads whole (an input read again
    /// unchanged included: see [`Staging::new`]).
    pub(crate) fn upfront_bytes(&self) -> u64 {
        let mut up = 0;
        for a in self.args.iter().filter(|a| a.reads == Some(Footprint::Whole)) {
            if a.mirror.is_none() {
                continue;
            }
            let mut mirrors = a.raw.mirrors();
            let valid = mirrors
                .slot(self.gpu)
                .valid(a.raw.host_generation(), false);
            up += valid
                .missing(0..a.raw.bytes())
                .iter()
                .map(|m| m.end - m.start)
                .sum::<u64>();
        }
        up
    }

    /// Every output has a mirror: the GPU writes no host copy directly.
    pub(crate) fn outputs_mirrored(&self) -> bool {
        self.args
            .iter()
            .all(|a| a.per_item.is_none() || a.mirror.is_some())
    }

    /// What the descriptor set binds: each mirror, or the buffer's host
    /// bytes on the GPU.
    pub(crate) fn bindings(&self) -> Result<Vec<BufferBinding<'a>>> {
        self.args
            .iter()
            .enumerate()
            .map(|(i, a)| {
                match a.mirror {
                    Some(m) => BufferBinding::mirrored(a.raw, m, self.gpu),
                    None => BufferBinding::on(a.raw, self.gpu),
                }
                .ok_or(Error::ForeignBuffer { binding: i as u32 })
            })
            .collect()
    }

    /// What the descriptor set of the GPU's stolen packages binds (see
    /// [`GpuRole::steal_set`](super::gpu::GpuRole::steal_set)): as
    /// [`bindings`](Self::bindings), but every output bound to its host
    /// bytes, so that a stolen package writes the host copy itself and
    /// needs no download. `None` where an output has no mirror or the GPU
    /// reads one (an output read over the host copy could be older there
    /// than in the mirror).
    pub(crate) fn steal_bindings(&self) -> Option<Result<Vec<BufferBinding<'a>>>> {
        let outputs = || self.args.iter().filter(|a| a.per_item.is_some());
        if outputs().next().is_none() || outputs().any(|a| a.mirror.is_none() || a.reads.is_some())
        {
            return None;
        }
        let bind = |(i, a): (usize, &StagedArg<'a>)| {
            match (a.per_item, a.mirror) {
                (None, Some(m)) => BufferBinding::mirrored(a.raw, m, self.gpu),
                _ => BufferBinding::on(a.raw, self.gpu),
            }
            .ok_or(Error::ForeignBuffer { binding: i as u32 })
        };
        Some(self.args.iter().enumerate().map(bind).collect())
    }

    /// The copies that bring what package `p` reads up to date in the
    /// mirrors: each argument's footprint less what its mirror holds, once
    /// per buffer however often it is bound.
    pub(crate) fn uploads(&self, p: &Package) -> Vec<Copy> {
        let mut copies: Vec<Copy> = Vec::new();
        for a in &self.args {
            let (Some(dst), Some(f)) = (a.mirror, a.reads) else {
                continue;
            };
            let want = a.bytes(match a.offsets {
                Some(offsets) => offset_elements(p, offsets, a.len),
                None => f.elements(p, self.space, a.len),
            });
            let mut planned = self.queued_in(dst);
            for c in copies.iter().filter(|c| c.dst == dst) {
                planned.insert(c.offset..c.offset + c.bytes);
            }
            let missing = {
                let mut mirrors = a.raw.mirrors();
                let valid = mirrors
                    .slot(self.gpu)
                    .valid(a.raw.host_generation(), false);
                valid.missing(want)
            };
            for m in missing.into_iter().flat_map(|m| planned.missing(m)) {
                copies.push(Copy {
                    src: a.host,
                    dst,
                    offset: m.start,
                    bytes: m.end - m.start,
                });
            }
        }
        copies
    }

    /// The bytes of `mirror` that uploads in flight bring.
    fn queued_in(&self, mirror: vk::Buffer) -> RangeSet {
        let q = self.queued.lock().unwrap_or_else(|e| e.into_inner());
        q.iter()
            .find(|(m, _)| *m == mirror)
            .map(|(_, set)| set.clone())
            .unwrap_or_default()
    }

    /// `copies` (from [`Staging::uploads`]) were submitted: later packages
    /// do not upload their bytes again.
    pub(crate) fn queued(&self, copies: &[Copy]) {
        let mut q = self.queued.lock().unwrap_or_else(|e| e.into_inner());
        for c in copies {
            let i = match q.iter().position(|(m, _)| *m == c.dst) {
                Some(i) => i,
                None => {
                    q.push((c.dst, RangeSet::new()));
                    q.len() - 1
                }
            };
            q[i].1.insert(c.offset..c.offset + c.bytes);
        }
    }

    /// After `copies` (from [`Staging::uploads`]) completed: their bytes
    /// are valid in the mirrors.
    pub(crate) fn uploaded(&self, copies: &[Copy]) {
        for c in copies {
            if let Some(a) = self.args.iter().find(|a| a.mirror == Some(c.dst)) {
                let gen = a.raw.host_generation();
                let mut mirrors = a.raw.mirrors();
                let valid = mirrors.slot(self.gpu).valid(gen, false);
                valid.insert(c.offset..c.offset + c.bytes);
            }
        }
    }

    /// The copies that bring back what a package (its `pieces`, see
    /// [`Geometry::pieces`]) wrote: its items' bytes of every mirrored
    /// output (none for lazy ones).
    pub(crate) fn downloads(&self, pieces: &[Package]) -> Vec<Copy> {
        let mut copies = Vec::new();
        for a in self.args.iter().filter(|a| !a.lazy) {
            let Some(src) = a.mirror else {
                continue;
            };
            copies.extend(a.written(pieces).into_iter().map(|r| Copy {
                src,
                dst: a.host,
                offset: r.start,
                bytes: r.end - r.start,
            }));
        }
        copies
    }

    /// After the downloads of a package's `pieces` completed (lazy
    /// outputs: after the package did): what it wrote is valid in the
    /// mirror, and in the host copy unless lazy.
    pub(crate) fn downloaded(&self, pieces: &[Package]) {
        let mut done = self.downloaded.lock().unwrap_or_else(|e| e.into_inner());
        for (a, set) in self.args.iter().zip(done.iter_mut()) {
            for r in a.written(pieces) {
                set.insert(r);
            }
        }
    }
}

/// After the run, over the stagings of its GPUs (all of one run's
/// arguments): in every mirror of each output (those of GPUs that sat the
/// run out included), the bytes of the run's items (of its sub-range, not
/// of the rest of the space, which the run left as it was) are valid only
/// where that GPU's packages wrote and downloaded them (CPU packages, other
/// GPUs' packages and those whose outcome is unknown wrote the host copy
/// or another mirror). Lazy outputs: the bytes a GPU wrote are stale on the
/// host in that GPU's mirror alone.
pub(crate) fn finish_all(stagings: &[&Staging<'_>]) {
    let Some(first) = stagings.first() else {
        return;
    };
    for (i, a) in first.args.iter().enumerate() {
        let written = a.items_written(&first.run);
        if written.is_empty() {
            continue;
        }
        let gen = a.raw.host_generation();
        let mut mirrors = a.raw.mirrors();
        for w in written {
            mirrors.forget(gen, false, w);
        }
        for s in stagings {
            let (Some(sa), Some(done)) = (s.args.get(i), s.done(i)) else {
                continue;
            };
            if sa.mirror.is_none() {
                continue;
            }
            let slot = mirrors.slot(s.gpu);
            let valid = slot.valid(gen, false);
            for r in done.ranges() {
                valid.insert(r.clone());
            }
            if sa.lazy {
                for r in done.ranges() {
                    slot.stale_mut().insert(r.clone());
                }
            }
        }
    }
}

impl Staging<'_> {
    /// The bytes of argument `i` this GPU's packages wrote and downloaded.
    fn done(&self, i: usize) -> Option<RangeSet> {
        let d = self.downloaded.lock().unwrap_or_else(|e| e.into_inner());
        d.get(i).cloned()
    }
}

/// Whether the GPU reads argument `i`: inputs, and outputs the shader does
/// not declare `writeonly` (they may read what the host put there).
fn gpu_reads(i: usize, a: &ArgBuffer<'_>, iface: &ShaderInterface) -> bool {
    match a.access {
        Access::Read => true,
        Access::Write { .. } => !iface.bindings.get(i).is_some_and(|b| b.write_only),
        // Refused with staged memory (see `exec::reduce`).
        Access::Reduce { .. } => true,
    }
}

/// The bytes per unit a staged run of `args` over `space` (`units` units)
/// on engine GPU `gpu` is expected to move (up, down), as if that GPU ran
/// every unit:
/// what its footprints that follow the items lack in the mirrors, and the
/// outputs' items. What comes up whole (see [`upfront_bytes`]) is paid
/// once, not per unit, and is left out; so are buffers bound zero-copy.
pub(crate) fn bytes_per_unit(
    args: &[ArgBuffer<'_>],
    iface: &ShaderInterface,
    space: IndexSpace,
    units: u64,
    gpu: usize,
) -> (f64, f64) {
    let all = Package {
        units: 0..units,
        items: 0..space.items(),
        rows: None,
        cols: 0..0,
        width: 0,
    };
    let (mut up, mut down) = (0u64, 0u64);
    for (i, a) in args.iter().enumerate() {
        let len = a.len as u64;
        let elem = a.raw.bytes() / len.max(1);
        let whole = comes_up_whole(a, args, gpu);
        let mut mirrors = a.raw.mirrors();
        let slot = mirrors.slot(gpu);
        let reduce = matches!(a.access, Access::Reduce { .. });
        if reduce || (slot.failed && !a.raw.memory().staging_demanded()) {
            continue;
        }
        let f = a.footprint();
        let r = f.elements(&all, space, len);
        let bytes = r.start.saturating_mul(elem)..r.end.saturating_mul(elem);
        if gpu_reads(i, a, iface) && !whole {
            let valid = slot.valid(a.raw.host_generation(), a.raw.untracked());
            up += valid.missing(bytes.clone()).iter().map(|m| m.end - m.start).sum::<u64>();
        }
        if matches!(a.access, Access::Write { .. }) && !lazy(a.raw) {
            down += bytes.end - bytes.start;
        }
    }
    let n = units.max(1) as f64;
    (up as f64 / n, down as f64 / n)
}

/// Whether what the GPU writes into `raw`'s mirror stays there (lazy host
/// coherence, for a buffer whose host accesses the engine sees).
fn lazy(raw: &RawBuffer) -> bool {
    raw.memory().lazy().is_some() && !raw.untracked()
}

/// Before a run (lazy host coherence): makes the host copy of every buffer
/// it binds current from the mirrors of the engine GPUs `which` accepts;
/// the bytes downloaded.
pub(crate) fn sync_for_host(args: &[ArgBuffer<'_>], which: impl Fn(usize) -> bool) -> Result<u64> {
    let mut bytes = 0;
    for a in args {
        bytes += a.raw.sync_where(&which)?;
    }
    Ok(bytes)
}

/// The bytes a staged run of `args` on engine GPU `gpu` uploads before
/// its first package can run, whatever its share: what the mirrors lack of
/// the inputs it reads whole, and of an input read again unchanged, which
/// comes up whole (see [`Staging::new`]). Buffers bound zero-copy and
/// reduction partials move nothing.
pub(crate) fn upfront_bytes(args: &[ArgBuffer<'_>], iface: &ShaderInterface, gpu: usize) -> u64 {
    let mut up = 0;
    for (i, a) in args.iter().enumerate() {
        let reduce = matches!(a.access, Access::Reduce { .. });
        if reduce || !gpu_reads(i, a, iface) || !comes_up_whole(a, args, gpu) {
            continue;
        }
        let mut mirrors = a.raw.mirrors();
        let slot = mirrors.slot(gpu);
        if slot.failed && !a.raw.memory().staging_demanded() {
            continue;
        }
        let valid = slot.valid(a.raw.host_generation(), a.raw.untracked());
        up += valid
            .missing(0..a.raw.bytes())
            .iter()
            .map(|m| m.end - m.start)
            .sum::<u64>();
    }
    up
}

/// Whether a staged GPU's first package brings all of `a` up (what it
/// lacks of it): read whole (its footprint, or a [`Footprint::Offsets`]
/// whose offsets are stale on the host), or read again unchanged (see
/// [`Staging::new`]).
fn comes_up_whole(a: &ArgBuffer<'_>, args: &[ArgBuffer<'_>], gpu: usize) -> bool {
    let reread = matches!(a.access, Access::Read) && partly_resident(a.raw, gpu);
    reread || with_offsets(a.footprint(), args).0 == Footprint::Whole
}

/// Whether `raw`'s mirror on engine GPU `gpu` holds part, not all, of the
/// bytes the host last wrote, uploaded by earlier runs that read it (no run
/// wrote it since). Host writes since the last run (or untracked ones)
/// leave nothing of the mirror valid.
fn partly_resident(raw: &RawBuffer, gpu: usize) -> bool {
    let (gen, untracked) = (raw.host_generation(), raw.untracked());
    raw.mirrors()
        .slot(gpu)
        .holds_host_part(gen, untracked, raw.bytes())
}

/// A staged argument's footprint and, for a [`Footprint::Offsets`], the
/// offsets it reads: only where their host copy is current (no mirror holds
/// bytes it lacks), else the whole buffer. The offsets are an input of the
/// run (see `check_offsets`), so nothing changes them while it runs.
fn with_offsets<'a>(
    f: Footprint,
    args: &'a [ArgBuffer<'a>],
) -> (Footprint, Option<(&'a RawBuffer, u64)>) {
    let Footprint::Offsets { binding, per_item } = f else {
        return (f, None);
    };
    match args.get(binding as usize) {
        Some(o) if !o.raw.mirrors().any_stale() => (f, Some((o.raw, per_item))),
        _ => (Footprint::Whole, None),
    }
}

/// Whether some mirror of a buffer of `args` holds bytes its host copy
/// lacks (lazy host coherence; never otherwise).
pub(crate) fn any_stale(args: &[ArgBuffer<'_>]) -> bool {
    args.iter().any(|a| a.raw.mirrors().any_stale())
}

/// Lazy host coherence: the bytes stale on the host (in any GPU's mirror)
/// of the arguments a CPU package reads whole, and of those it reads by
/// its items (of which a run brings back only the CPU's share), before the
/// CPU could run its part.
pub(crate) fn stale_for_cpu(args: &[ArgBuffer<'_>]) -> (u64, u64) {
    let (mut whole, mut by_items) = (0, 0);
    for a in args {
        let b = a.raw.mirrors().stale_bytes();
        match a.footprint() {
            Footprint::Whole => whole += b,
            _ => by_items += b,
        }
    }
    (whole, by_items)
}

/// Lazy host coherence, before CPU package `p` of a run over `space`:
/// downloads the stale bytes of what it reads, each argument's footprint of
/// its items (outputs: their own items, which it may read before writing);
/// the bytes downloaded.
///
/// An output's items are synced exactly, row by row for a tile (see
/// [`Package::item_ranges`]): the rest of a tile's rows belongs to other
/// packages, which sync what they need themselves (syncing it here would
/// be safe, since a run writes no stale byte and each sync takes what it
/// moves off the stale set under the mirrors' lock, but it would move
/// bytes this package does not touch). An input's footprint is synced
/// whole.
pub(crate) fn sync_package(args: &[ArgBuffer<'_>], p: &Package, space: IndexSpace) -> Result<u64> {
    let mut bytes = 0;
    for a in args {
        let len = a.len as u64;
        let elem = a.raw.bytes() / len.max(1);
        let sync = |r: Range<u64>| {
            let end = r.end.saturating_mul(elem).min(a.raw.bytes());
            a.raw.sync_range(r.start.saturating_mul(elem).min(end)..end)
        };
        match a.access {
            Access::Write { per_item } => {
                for r in item_elements(p, per_item, len) {
                    bytes += sync(r)?;
                }
            }
            _ => bytes += sync(a.footprint().elements(p, space, len))?,
        }
    }
    Ok(bytes)
}

/// After a run without a staged GPU (CPU only) over `space`: the outputs'
/// host copies changed where the run's items are.
pub(crate) fn outputs_written_by_host(args: &[ArgBuffer<'_>], space: IndexSpace) {
    for a in args {
        let Access::Write { per_item } = a.access else {
            continue;
        };
        let len = a.len as u64;
        let elem = a.raw.bytes() / len.max(1);
        let end = space
            .items()
            .saturating_mul(per_item)
            .min(len)
            .saturating_mul(elem);
        let gen = a.raw.host_generation();
        // (Nothing stale there: runs with the CPU start by syncing, or
        // each CPU package synced its items first.)
        a.raw.mirrors().forget(gen, false, 0..end);
    }
}

/// Allocates `raw`'s mirror on each of engine GPUs `0..gpus` that lacks
/// one, ahead of the first run that binds it: a staged engine's buffer
/// gets its device-local twin when it is made, as a device allocation
/// would, so that a run (the process's first above all) does not wait
/// milliseconds for it (4.3 ms for two 128 MiB mirrors on the H200, the
/// whole of a CPU's run of the same kernel). One that cannot be allocated
/// now is left to the first run that binds it, which decides (see
/// [`Staging::new`]).
pub(crate) fn mirror_ahead(raw: &RawBuffer, gpus: usize) {
    for gpu in 0..gpus {
        let mut mirrors = raw.mirrors();
        let slot = mirrors.slot(gpu);
        if slot.mirror.is_some() || slot.failed {
            continue;
        }
        match Mirror::new(raw.memory(), gpu, raw.bytes()) {
            Ok(m) => {
                slot.mirror = Some(m);
                slot.invalidate();
            }
            Err(e) => tracing::debug!(
                "no mirror ahead on GPU {gpu} for a buffer of {} bytes ({e}): left to its first run",
                raw.bytes()
            ),
        }
    }
}

/// The mirror of argument `i` on engine GPU `gpu`, allocated on first use;
/// `None` when it does not fit and staging was not demanded.
fn mirror_of(i: usize, raw: &RawBuffer, gpu: usize) -> Result<Option<vk::Buffer>> {
    let mut mirrors = raw.mirrors();
    let slot = mirrors.slot(gpu);
    if let Some(m) = &slot.mirror {
        return Ok(Some(m.buffer));
    }
    if slot.failed && !raw.memory().staging_demanded() {
        return Ok(None);
    }
    match Mirror::new(raw.memory(), gpu, raw.bytes()) {
        Ok(m) => {
            let handle = m.buffer;
            slot.mirror = Some(m);
            slot.invalidate();
            Ok(Some(handle))
        }
        Err(e) if raw.memory().staging_demanded() => Err(Error::MirrorUnavailable {
            binding: i as u32,
            bytes: raw.bytes(),
            device: raw
                .view_on(gpu)
                .map_or_else(String::new, |(_, d)| d.info().name.clone()),
            source: Box::new(e),
        }),
        Err(e) => {
            tracing::warn!(
                "argument {i} ({} bytes) has no device-local mirror ({e}): bound zero-copy",
                raw.bytes()
            );
            slot.failed = true;
            Ok(None)
        }
    }
}

#[cfg(all(test, feature = "glsl"))]
mod tests {
    use super::{bytes_per_unit, upfront_bytes};
    use crate::{Args, Devices, Footprint, IndexSpace, MemoryPlacement};

    /// What a staged GPU must bring up before its first package: an input
    /// read whole, all of it, until it is resident; one read by its items,
    /// nothing up front (its bytes per unit instead), and once the GPU holds
    /// part of it from an earlier run, the rest up front.
    #[test]
    fn what_comes_up_before_the_first_package() {
        let Some(e) = crate::test_engines::staged() else {
            return;
        };
        if e.memory_placement() != MemoryPlacement::Staged {
            return;
        }
        let glsl = "#version 450
layout(local_size_x = 64) in;
layout(std430, binding = 0) readonly buffer X { uint x[]; };
layout(std430, binding = 1) writeonly buffer O { uint o[]; };
void main() { uint i = gl_GlobalInvocationID.x; o[i] = x[i] + 1u; }";
        let k = e.kernel_glsl("upfront", glsl, None).unwrap();
        let iface = k.pipeline.as_ref().unwrap().interface().clone();
        let n = 64 * 64;
        let data: Vec<u32> = (0..n as u32).collect();
        let x = e.buffer_from_slice(&data).unwrap();
        let mut out = e.buffer::<u32>(n).unwrap();
        let space = IndexSpace::D1(n as u64);
        let whole = |footprint: Option<Footprint>, out: &mut crate::Buffer<u32>| {
            let mut a = Args::new().input(&x);
            if let Some(f) = footprint {
                a = a.footprint(f);
            }
            let a = a.output(out);
            let up = upfront_bytes(&a.buffers, &iface, 0);
            let (per_unit, _) = bytes_per_unit(&a.buffers, &iface, space, 64, 0);
            // The run's staged plan on that GPU agrees (what its first
            // package's claim waits for).
            let geometry = crate::exec::kernel::Geometry::new(space, k.local, k.tiles).unwrap();
            let plan = super::Staging::new(&a.buffers, &iface, &geometry, 0).unwrap();
            assert_eq!(plan.upfront_bytes(), up);
            (up, per_unit)
        };
        let items = Some(Footprint::Items { per_item: 1 });
        // Nothing resident: whole, all of it; by items, 256 bytes a unit.
        assert_eq!(whole(None, &mut out), (4 * n as u64, 0.0));
        assert_eq!(whole(items, &mut out), (0, 256.0));
        // The GPU ran a sub-range by items: it holds part of `x`, whose
        // rest now comes up at once whatever the footprint.
        let run = |footprint: Option<Footprint>, out: &mut crate::Buffer<u32>, range| {
            let mut a = Args::new().input(&x);
            if let Some(f) = footprint {
                a = a.footprint(f);
            }
            e.run_range(
                &k,
                a.output(out),
                space,
                range,
                &crate::Scheduler::Static { powers: None },
                Devices::GPU,
            )
            .unwrap();
        };
        run(items, &mut out, 0..32);
        assert_eq!(whole(items, &mut out), (2 * n as u64, 0.0));
        assert_eq!(whole(None, &mut out), (2 * n as u64, 0.0));
        // Resident: nothing comes up.
        run(None, &mut out, 0..64);
        assert_eq!(whole(None, &mut out), (0, 0.0));
        assert_eq!(whole(items, &mut out), (0, 0.0));
    }
}
