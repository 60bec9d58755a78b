//! A staged run's plan: which argument binds which mirror, what the GPU's
//! first package needs uploaded, and what each GPU package downloads (see
//! [`crate::mem::mirror`] for the residency rule).

use super::kernel::{Access, ArgBuffer, Package};
use crate::error::{Error, Result};
use crate::mem::mirror::Mirror;
use crate::mem::{BufferBinding, RawBuffer};
use crate::vk::transfer::Copy;
use crate::vk::ShaderInterface;
use ash::vk;

/// One argument of a staged run.
pub(crate) struct StagedArg<'a> {
    raw: &'a RawBuffer,
    /// Its mirror; `None`: bound zero-copy (the mirror did not fit).
    mirror: Option<vk::Buffer>,
    /// The GPU reads it and the mirror is stale: uploaded whole before the
    /// GPU's first package.
    upload: bool,
    /// Outputs: bytes each work-item writes.
    item_bytes: Option<u64>,
}

/// The staged plan of one run.
pub(crate) struct Staging<'a> {
    args: Vec<StagedArg<'a>>,
    /// Buffers bound zero-copy because their mirror did not fit.
    pub(crate) fallbacks: u32,
}

impl<'a> Staging<'a> {
    /// The plan for `args` of a kernel with shader interface `iface`:
    /// gives each buffer its mirror (allocated on first use). A mirror that
    /// cannot be allocated is [`Error::MirrorUnavailable`] where staging was
    /// demanded, else the buffer is bound zero-copy (a warning).
    pub(crate) fn new(args: &'a [ArgBuffer<'a>], iface: &ShaderInterface) -> Result<Self> {
        let mut out = Staging {
            args: Vec::with_capacity(args.len()),
            fallbacks: 0,
        };
        for (i, a) in args.iter().enumerate() {
            let mirror = mirror_of(i, a.raw)?;
            out.fallbacks += u32::from(mirror.is_none());
            let reads = match a.access {
                Access::Read => true,
                // An output the shader does not declare `writeonly` may
                // read what the host put there.
                Access::Write { .. } => !iface.bindings.get(i).is_some_and(|b| b.write_only),
                // Refused with staged memory (see `exec::reduce`).
                Access::Reduce { .. } => true,
            };
            let stale = a.raw.untracked() || a.raw.mirror().synced != Some(a.raw.host_generation());
            let item_bytes = match a.access {
                Access::Read | Access::Reduce { .. } => None,
                Access::Write { per_item } => Some(per_item * (a.raw.bytes() / a.len.max(1) as u64)),
            };
            out.args.push(StagedArg {
                raw: a.raw,
                mirror,
                upload: mirror.is_some() && reads && stale,
                item_bytes,
            });
        }
        Ok(out)
    }

    /// Every output has a mirror: the GPU writes no host copy directly.
    pub(crate) fn outputs_mirrored(&self) -> bool {
        self.args
            .iter()
            .all(|a| a.item_bytes.is_none() || a.mirror.is_some())
    }

    /// What the descriptor set binds: each mirror, or the buffer itself.
    pub(crate) fn bindings(&self) -> Vec<BufferBinding<'a>> {
        self.args
            .iter()
            .map(|a| match a.mirror {
                Some(m) => BufferBinding::mirrored(a.raw, m),
                None => BufferBinding::of(a.raw),
            })
            .collect()
    }

    /// The copies that bring every stale mirror the GPU reads up to date
    /// (once per buffer, however often it is bound).
    pub(crate) fn uploads(&self) -> Vec<Copy> {
        let mut copies: Vec<Copy> = Vec::new();
        for a in self.args.iter().filter(|a| a.upload) {
            let Some(dst) = a.mirror else { continue };
            if copies.iter().all(|c| c.dst != dst) {
                copies.push(Copy {
                    src: a.raw.handle(),
                    dst,
                    offset: 0,
                    bytes: a.raw.bytes(),
                });
            }
        }
        copies
    }

    /// After the uploads completed: each uploaded mirror equals its host
    /// copy as of the current host-write generation.
    pub(crate) fn uploaded(&self) {
        for a in self.args.iter().filter(|a| a.upload) {
            a.raw.mirror().synced = Some(a.raw.host_generation());
        }
    }

    /// The copies that bring back what package `p` wrote: its items' bytes
    /// of every mirrored output.
    pub(crate) fn downloads(&self, p: &Package) -> Vec<Copy> {
        self.args
            .iter()
            .filter_map(|a| {
                let (mirror, per) = (a.mirror?, a.item_bytes?);
                let start = p.items.start.saturating_mul(per).min(a.raw.bytes());
                let end = p.items.end.saturating_mul(per).min(a.raw.bytes());
                (end > start).then_some(Copy {
                    src: mirror,
                    dst: a.raw.handle(),
                    offset: start,
                    bytes: end - start,
                })
            })
            .collect()
    }

    /// After the run: an output's mirror still equals its host copy only
    /// where the GPU wrote every item of the run (`gpu_did_all`) and the
    /// mirror equalled the host copy before, or the items cover the whole
    /// buffer; CPU packages wrote the host copy alone.
    pub(crate) fn finish(&self, gpu_did_all: bool, items: u64) {
        for a in &self.args {
            let (Some(_), Some(per)) = (a.mirror, a.item_bytes) else {
                continue;
            };
            let gen = a.raw.host_generation();
            let mut slot = a.raw.mirror();
            let covered = items.saturating_mul(per) >= a.raw.bytes();
            let keep = gpu_did_all && (slot.synced == Some(gen) || covered);
            slot.synced = keep.then_some(gen);
        }
    }
}

/// After a run without a staged GPU (CPU only): the outputs' host copies
/// changed, so their mirrors no longer equal them.
pub(crate) fn outputs_written_by_host(args: &[ArgBuffer<'_>]) {
    for a in args.iter().filter(|a| a.access != Access::Read) {
        a.raw.mirror().synced = None;
    }
}

/// The mirror of argument `i`, allocated on first use; `None` when it does
/// not fit and staging was not demanded.
fn mirror_of(i: usize, raw: &RawBuffer) -> Result<Option<vk::Buffer>> {
    let mut slot = raw.mirror();
    if let Some(m) = &slot.mirror {
        return Ok(Some(m.buffer));
    }
    if slot.failed && !raw.memory().staging_demanded() {
        return Ok(None);
    }
    match Mirror::new(raw.memory(), raw.bytes()) {
        Ok(m) => {
            let handle = m.buffer;
            slot.mirror = Some(m);
            slot.synced = None;
            Ok(Some(handle))
        }
        Err(e) if raw.memory().staging_demanded() => Err(Error::MirrorUnavailable {
            binding: i as u32,
            bytes: raw.bytes(),
            device: raw.device().info().name.clone(),
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
