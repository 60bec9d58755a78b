//! The global index space the ranks share, and the range one claim covers.

use crate::error::{Error, Result};
use coexec::IndexSpace;
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

    /// The local engine's index space for this claim: `D1(len)`, or `D2`
    /// of the claim's rows. Item `i` of the local space is global item
    /// `items.start + i` (2-D: local row `r` is global row `rows.start + r`),
    /// so a kernel takes the claim's start as a push constant and adds it.
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
}
