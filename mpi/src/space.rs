//! The global index space the ranks share, and the range one claim covers.

use crate::error::{Error, Result};
use coexec::{IndexSpace, Kernel};
use std::ops::Range;

/// The index space of a distributed run, cut into *units*: the atoms the
/// ranks claim (a unit is never split between two ranks).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DistSpace {
    /// `items` work-items along x, claimed in units of `grain` items (the
    /// last unit may be partial). A grain of the kernel's work-group size
    /// keeps every local run in whole work-groups.
    D1 {
        /// Work-items.
        items: u64,
        /// Items per unit (at least 1).
        grain: u64,
    },
    /// A `width` x `height` image claimed by rows, in units of `rows`
    /// rows (the last unit may be partial).
    D2 {
        /// Items per row.
        width: u32,
        /// Rows.
        height: u32,
        /// Rows per unit (at least 1).
        rows: u32,
    },
}

impl DistSpace {
    /// Checks the space: at least one item, and a non-zero grain.
    pub fn validate(&self) -> Result<()> {
        match *self {
            DistSpace::D1 { grain: 0, .. } | DistSpace::D2 { rows: 0, .. } => Err(Error::ZeroGrain),
            _ if self.items() == 0 => Err(Error::EmptySpace),
            _ => Ok(()),
        }
    }

    /// Total work-items.
    pub fn items(&self) -> u64 {
        match *self {
            DistSpace::D1 { items, .. } => items,
            DistSpace::D2 { width, height, .. } => u64::from(width) * u64::from(height),
        }
    }

    /// Total units (0 for an invalid space).
    pub fn units(&self) -> u64 {
        match *self {
            DistSpace::D1 { items, grain } if grain > 0 => items.div_ceil(grain),
            DistSpace::D2 { height, rows, .. } if rows > 0 => u64::from(height.div_ceil(rows)),
            _ => 0,
        }
    }

    /// A space over `space` whose units are `groups` work-groups of
    /// `kernel` (1-D) or `groups` rows of its work-groups (2-D): every
    /// claim is then whole work-groups, which
    /// [`kernel_units`](Self::kernel_units) needs. An empty space or 0
    /// groups is an error.
    pub fn for_kernel(kernel: &Kernel, space: IndexSpace, groups: u32) -> Result<DistSpace> {
        let [lx, ly, _] = kernel.local_size().map(|l| l.max(1));
        let d = match space {
            IndexSpace::D1(items) => DistSpace::D1 {
                items,
                grain: u64::from(groups) * u64::from(lx),
            },
            IndexSpace::D2 { width, height } => DistSpace::D2 {
                width,
                height,
                rows: groups.saturating_mul(ly),
            },
        };
        d.validate().map(|()| d)
    }

    /// The whole space as the engine's index space (what
    /// [`Engine::run_range`](coexec::Engine::run_range) runs a part of).
    pub fn index_space(&self) -> IndexSpace {
        match *self {
            DistSpace::D1 { items, .. } => IndexSpace::D1(items),
            DistSpace::D2 { width, height, .. } => IndexSpace::D2 { width, height },
        }
    }

    /// The units of `kernel` over [`index_space`](Self::index_space) that
    /// `claim` covers: work-groups in 1-D, rows of work-groups in 2-D,
    /// what [`Engine::run_range`](coexec::Engine::run_range) takes. The
    /// claim must begin and end on whole work-groups (or the space's end):
    /// a space made by [`for_kernel`](Self::for_kernel), or a grain that is
    /// a multiple of the work-group size; otherwise
    /// [`coexec::Error::Interface`], naming the grain to use.
    pub fn kernel_units(&self, claim: &Claim, kernel: &Kernel) -> coexec::Result<Range<u64>> {
        let [lx, ly, _] = kernel.local_size().map(|l| u64::from(l.max(1)));
        let (start, end, last, per) = match (&claim.rows, *self) {
            (Some(r), DistSpace::D2 { height, .. }) => {
                (u64::from(r.start), u64::from(r.end), u64::from(height), ly)
            }
            _ => (claim.items.start, claim.items.end, self.items(), lx),
        };
        if start % per != 0 || (end % per != 0 && end != last) {
            let what = if claim.rows.is_some() {
                "rows"
            } else {
                "items"
            };
            return Err(coexec::Error::Interface(format!(
                "the claim's {what} {start}..{end} split a work-group of {per} {what}: make the space's grain a multiple of {per} (DistSpace::for_kernel)"
            )));
        }
        Ok(start / per..end.div_ceil(per))
    }

    /// The claim of `units` (clipped to the space).
    pub fn claim(&self, units: Range<u64>) -> Claim {
        let units = units.start.min(self.units())..units.end.min(self.units());
        match *self {
            DistSpace::D1 { items, grain } => Claim {
                items: (units.start * grain).min(items)..(units.end * grain).min(items),
                rows: None,
                width: 0,
                units,
            },
            DistSpace::D2 {
                width,
                height,
                rows,
            } => {
                // Units are at most ceil(height / rows), so these fit in u32.
                let r0 = (units.start * u64::from(rows)).min(u64::from(height)) as u32;
                let r1 = (units.end * u64::from(rows)).min(u64::from(height)) as u32;
                Claim {
                    items: u64::from(r0) * u64::from(width)..u64::from(r1) * u64::from(width),
                    rows: Some(r0..r1),
                    width,
                    units,
                }
            }
        }
    }
}

/// One package a rank claimed: a contiguous range of the global space.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claim {
    /// Units of the [`DistSpace`].
    pub units: Range<u64>,
    /// Global work-items, in linear (row-major) order.
    pub items: Range<u64>,
    /// 2-D only: the global rows (all columns of each).
    pub rows: Option<Range<u32>>,
    /// 2-D only: items per row (0 in 1-D).
    pub width: u32,
}

impl Claim {
    /// Work-items covered.
    pub fn len(&self) -> u64 {
        self.items.end - self.items.start
    }

    /// `true` when it covers no item.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// An index space of the claim alone: `D1(len)`, or `D2` of the
    /// claim's rows. Item `i` of the local space is global item
    /// `items.start + i` (2-D: local row `r` is global row `rows.start + r`),
    /// so a kernel run over it takes the claim's start as a push constant
    /// and adds it. Every claim is then a new space to the engine, which
    /// learns nothing across claims: prefer
    /// [`DistSpace::kernel_units`] with
    /// [`Engine::run_range`](coexec::Engine::run_range), whose runs see
    /// global ids and reuse what was learned.
    pub fn local_space(&self) -> IndexSpace {
        match &self.rows {
            Some(r) => IndexSpace::D2 {
                width: self.width,
                height: r.end - r.start,
            },
            None => IndexSpace::D1(self.len()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn d1_units_and_claims_clip_to_the_space() {
        let s = DistSpace::D1 {
            items: 1000,
            grain: 64,
        };
        assert_eq!(s.units(), 16);
        let c = s.claim(15..20);
        assert_eq!((c.units.clone(), c.items.clone()), (15..16, 960..1000));
        assert_eq!(c.local_space(), IndexSpace::D1(40));
    }

    #[test]
    fn d2_claims_whole_rows() {
        let s = DistSpace::D2 {
            width: 10,
            height: 7,
            rows: 2,
        };
        assert_eq!(s.units(), 4);
        let c = s.claim(1..4);
        assert_eq!(c.rows, Some(2..7));
        assert_eq!(c.items, 20..70);
        assert_eq!(
            c.local_space(),
            IndexSpace::D2 {
                width: 10,
                height: 5
            }
        );
    }

    #[test]
    fn bad_spaces_are_typed_errors() {
        let zero = DistSpace::D1 { items: 5, grain: 0 };
        assert!(matches!(zero.validate(), Err(Error::ZeroGrain)));
        assert_eq!(zero.units(), 0);
        let empty = DistSpace::D2 {
            width: 0,
            height: 4,
            rows: 1,
        };
        assert!(matches!(empty.validate(), Err(Error::EmptySpace)));
    }

    /// A CPU-only kernel with work-groups of `local`, or `None` without a
    /// Vulkan device.
    fn kernel(local: [u32; 3]) -> Option<Kernel> {
        let e = coexec::Engine::with_options(coexec::EngineOptions {
            workers: Some(1),
            profiles: false,
            ..Default::default()
        })
        .map_err(|e| eprintln!("skipping: {e}"))
        .ok()?;
        let cpu = std::sync::Arc::new(|_: &coexec::Package, _: &mut coexec::CpuArgs<'_>| {});
        e.kernel("k", None, Some(cpu), Some(local)).ok()
    }

    #[test]
    fn claims_map_to_the_kernels_units_of_the_whole_space() {
        let Some(k) = kernel([64, 1, 1]) else { return };
        let s = DistSpace::for_kernel(&k, IndexSpace::D1(1000), 2).unwrap();
        assert_eq!(
            s,
            DistSpace::D1 {
                items: 1000,
                grain: 128
            }
        );
        assert_eq!(s.index_space(), IndexSpace::D1(1000));
        // Units 3..8 are items 384..1000: work-groups 6..16 (the last partial).
        assert_eq!(s.kernel_units(&s.claim(3..8), &k).unwrap(), 6..16);
        assert_eq!(s.kernel_units(&s.claim(0..1), &k).unwrap(), 0..2);
        // A grain that splits work-groups is refused, naming the fix.
        let odd = DistSpace::D1 {
            items: 1000,
            grain: 100,
        };
        let err = odd.kernel_units(&odd.claim(1..2), &k).unwrap_err();
        assert!(err.to_string().contains("multiple of 64"), "{err}");
        assert!(matches!(
            DistSpace::for_kernel(&k, IndexSpace::D1(0), 1),
            Err(Error::EmptySpace)
        ));
        assert!(matches!(
            DistSpace::for_kernel(&k, IndexSpace::D1(10), 0),
            Err(Error::ZeroGrain)
        ));
        let Some(k2) = kernel([8, 4, 1]) else { return };
        let image = IndexSpace::D2 {
            width: 30,
            height: 21,
        };
        let s = DistSpace::for_kernel(&k2, image, 1).unwrap();
        assert_eq!(s.units(), 6);
        // Rows 16..21 (the last, partial row of work-groups): unit 4..6.
        assert_eq!(s.kernel_units(&s.claim(4..6), &k2).unwrap(), 4..6);
        let odd = DistSpace::D2 {
            width: 30,
            height: 21,
            rows: 6,
        };
        assert!(odd.kernel_units(&odd.claim(1..2), &k2).is_err());
        // A claim ending at the space's last row is whole.
        assert_eq!(odd.kernel_units(&odd.claim(2..4), &k2).unwrap(), 3..6);
    }
}
