//! Which part of a buffer argument a package touches: staged runs upload
//! only the part a GPU package reads (where the mirror does not hold it
//! already) and download only the part it writes.

use super::kernel::{Access, ArgBuffer, IndexSpace, Package};
use crate::error::{Error, Result};
use crate::mem::RawBuffer;
use std::ops::Range;

/// The part of a buffer argument that one package reads, in the buffer's
/// own elements ([`Args::footprint`](crate::Args::footprint)).
///
/// Only staged runs ([`MemoryPlacement::Staged`](crate::MemoryPlacement))
/// use it: a GPU package's upload is its footprint less what the buffer's
/// mirror already holds. A kernel that reads outside its declared footprint
/// reads stale data on a staged GPU, so declare the whole buffer where in
/// doubt. Inputs default to [`Footprint::Whole`]. An output's footprint is
/// always its own items times its elements per item (what a package writes
/// and, where the shader does not declare it `writeonly`, may read back):
/// declaring another one is [`Error::Footprint`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Footprint {
    /// Every element of the buffer.
    Whole,
    /// The package's own items times `per_item` elements (item `i` reads
    /// elements `i * per_item .. (i + 1) * per_item`).
    Items {
        /// Elements per work-item (at least 1).
        per_item: u64,
    },
    /// A sparse structure's: item `i` reads elements `offsets[i] *
    /// per_item .. offsets[i + 1] * per_item`, where `offsets` is the input
    /// at argument index `binding`, of 4-byte elements (`u32`), at least one
    /// more than the index space has items, non-decreasing: the row
    /// pointer of a CSR matrix, whose column indices and values this
    /// footprint fits (`per_item` 1). A staged GPU then uploads only its
    /// packages' rows of them; where the offsets' host copy is not current
    /// when a run starts, the whole buffer, as [`Whole`](Self::Whole).
    Offsets {
        /// The argument index of the offsets.
        binding: u32,
        /// Elements per offset (at least 1).
        per_item: u64,
    },
    /// The package's items widened by `halo` on each side, times
    /// `per_item` elements: in 2-D `halo` counts rows (a stencil reading
    /// `halo` rows above and below its own), in 1-D items. Clipped to the
    /// index space.
    Halo {
        /// Elements per work-item (at least 1).
        per_item: u64,
        /// Rows (2-D) or items (1-D) on each side.
        halo: u64,
    },
}

impl Footprint {
    /// The package's rows plus `halo` rows above and below, one element per
    /// item: the input of a 2-D stencil.
    pub fn rows(halo: u32) -> Footprint {
        Footprint::Halo {
            per_item: 1,
            halo: u64::from(halo),
        }
    }

    /// Elements per item, where the footprint follows the items.
    fn per_item(&self) -> Option<u64> {
        match *self {
            Footprint::Whole | Footprint::Offsets { .. } => None,
            Footprint::Items { per_item } | Footprint::Halo { per_item, .. } => Some(per_item),
        }
    }

    /// Checks the footprint of binding `binding`, a buffer of `len`
    /// elements, over `space`: elements per item at least 1, and every
    /// item's elements inside the buffer.
    pub(crate) fn check(&self, binding: u32, len: u64, space: IndexSpace) -> Result<()> {
        let Some(per_item) = self.per_item() else {
            return Ok(());
        };
        if per_item == 0 {
            return Err(Error::Footprint {
                binding,
                message: "0 elements per work-item".into(),
            });
        }
        let needed = space.items().checked_mul(per_item).ok_or_else(|| {
            Error::SizeOverflow(format!("{} items x {per_item} elements", space.items()))
        })?;
        if len < needed {
            return Err(Error::BufferTooSmall {
                binding,
                len,
                needed,
            });
        }
        Ok(())
    }

    /// The elements of a buffer of `len` elements that package `p` of a
    /// run over `space` touches: all of them for [`Offsets`](Self::Offsets),
    /// whose rows only [`offset_elements`] reads.
    pub(crate) fn elements(&self, p: &Package, space: IndexSpace, len: u64) -> Range<u64> {
        let items = match *self {
            Footprint::Whole | Footprint::Offsets { .. } => return 0..len,
            Footprint::Items { .. } => p.items.clone(),
            Footprint::Halo { halo, .. } => widen(p, space, halo),
        };
        let per = self.per_item().unwrap_or(1);
        let start = items.start.saturating_mul(per).min(len);
        let end = items.end.saturating_mul(per).min(len);
        start..end.max(start)
    }
}

/// The elements of a buffer of `len` elements that package `p` reads under
/// a [`Footprint::Offsets`] whose offsets are `offsets` (their host copy,
/// current): `offsets[first item] .. offsets[end of its items]`, clipped to
/// the buffer; all of it where an offset cannot be read.
pub(crate) fn offset_elements(
    p: &Package,
    (offsets, per_item): (&RawBuffer, u64),
    len: u64,
) -> Range<u64> {
    match (
        offsets.host_u32(p.items.start),
        offsets.host_u32(p.items.end),
    ) {
        (Some(a), Some(b)) => {
            let end = u64::from(b).saturating_mul(per_item).min(len);
            u64::from(a).saturating_mul(per_item).min(end)..end
        }
        _ => 0..len,
    }
}

/// Checks argument `i`'s [`Footprint::Offsets`] (`offsets`, `per_item`)
/// over `space`: the offsets are another of `args`, an input of 4-byte
/// elements, with at least one more element than `space` has items.
fn check_offsets(
    i: u32,
    (offsets, per_item): (u32, u64),
    args: &[ArgBuffer<'_>],
    space: IndexSpace,
) -> Result<()> {
    let fail = |message: String| Err(Error::Footprint { binding: i, message });
    if per_item == 0 {
        return fail("0 elements per offset".into());
    }
    let Some(o) = args.get(offsets as usize).filter(|_| offsets != i) else {
        return fail(format!("its offsets are argument {offsets}: no such other argument"));
    };
    if !matches!(o.access, Access::Read) || o.elem_size != 4 {
        return fail(format!(
            "its offsets (argument {offsets}) must be an input of 4-byte elements (u32)"
        ));
    }
    let needed = space.items().saturating_add(1);
    let held = o.raw.bytes() / 4;
    if held < needed {
        return fail(format!(
            "its offsets (argument {offsets}) hold {held} offsets, {needed} needed (one per item and one more)"
        ));
    }
    Ok(())
}

/// The elements of package `p`'s own items, `per_item` each, in a buffer
/// of `len` elements (clipped to it): one range per row of a tile (see
/// [`Package::item_ranges`]), else one. What an output's package writes.
pub(crate) fn item_elements(
    p: &Package,
    per_item: u64,
    len: u64,
) -> impl Iterator<Item = Range<u64>> + '_ {
    p.item_ranges().map(move |r| {
        let start = r.start.saturating_mul(per_item).min(len);
        let end = r.end.saturating_mul(per_item).min(len);
        start..end.max(start)
    })
}

/// Checks the declared footprint of argument `binding` of `args` over
/// `space` (see [`Footprint`]; an output may only restate its own items).
pub(crate) fn check_arg(binding: u32, args: &[ArgBuffer<'_>], space: IndexSpace) -> Result<()> {
    let Some(a) = args.get(binding as usize) else {
        return Ok(());
    };
    let Some(f) = a.footprint else {
        return Ok(());
    };
    if let Access::Write { per_item } = a.access {
        if f != (Footprint::Items { per_item }) {
            return Err(Error::Footprint {
                binding,
                message: format!(
                    "an output's footprint is its own items ({per_item} elements each), {f:?} given"
                ),
            });
        }
    }
    if let Footprint::Offsets { binding: o, per_item } = f {
        return check_offsets(binding, (o, per_item), args, space);
    }
    f.check(binding, a.len as u64, space)
}

/// The items of `p` widened by `halo` rows (2-D) or items (1-D) on each
/// side, clipped to `space`.
fn widen(p: &Package, space: IndexSpace, halo: u64) -> Range<u64> {
    match (space, &p.rows) {
        (IndexSpace::D2 { width, height }, Some(rows)) => {
            let w = u64::from(width);
            let r0 = u64::from(rows.start).saturating_sub(halo);
            let r1 = u64::from(rows.end)
                .saturating_add(halo)
                .min(u64::from(height));
            r0 * w..r1 * w
        }
        _ => {
            let end = p.items.end.saturating_add(halo).min(space.items());
            p.items.start.saturating_sub(halo)..end
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec::kernel::Geometry;

    #[test]
    fn halos_widen_by_rows_in_2d_and_items_in_1d_clipped() {
        let space = IndexSpace::D2 {
            width: 10,
            height: 8,
        };
        let g = Geometry::new(space, [4, 2, 1], false).unwrap();
        // Units 1..3 are rows 2..6.
        let p = g.package(1..3);
        assert_eq!(Footprint::rows(1).elements(&p, space, 80), 10..70);
        assert_eq!(Footprint::rows(3).elements(&p, space, 80), 0..80);
        assert_eq!(Footprint::Whole.elements(&p, space, 80), 0..80);
        let items = Footprint::Items { per_item: 2 };
        assert_eq!(items.elements(&p, space, 200), 40..120);
        // Clipped to the buffer.
        assert_eq!(items.elements(&p, space, 100), 40..100);

        let space = IndexSpace::D1(100);
        let g = Geometry::new(space, [16, 1, 1], false).unwrap();
        let p = g.package(6..7); // items 96..100
        let halo = Footprint::Halo {
            per_item: 1,
            halo: 3,
        };
        assert_eq!(halo.elements(&p, space, 100), 93..100);
        assert_eq!(halo.elements(&g.package(0..1), space, 100), 0..19);
    }

    #[test]
    fn bad_footprints_are_typed_errors() {
        let space = IndexSpace::D1(100);
        let zero = Footprint::Items { per_item: 0 };
        assert!(matches!(
            zero.check(2, 100, space),
            Err(Error::Footprint { binding: 2, .. })
        ));
        let two = Footprint::Items { per_item: 2 };
        assert!(matches!(
            two.check(0, 150, space),
            Err(Error::BufferTooSmall { needed: 200, .. })
        ));
        assert!(two.check(0, 200, space).is_ok());
        assert!(Footprint::Whole.check(0, 1, space).is_ok());
        let huge = Footprint::Items { per_item: u64::MAX };
        assert!(matches!(
            huge.check(0, 1, space),
            Err(Error::SizeOverflow(_))
        ));
    }
}
