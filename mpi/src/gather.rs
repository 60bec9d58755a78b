//! Results of a distributed run: each rank keeps what its claims produced
//! (`Pieces`), then either keeps them (distributed) or sends them once to a
//! root, which places them and checks that they cover the space exactly
//! once.

use crate::error::{Error, Result};
use coexec::bytemuck::{self, Pod};
use mpi::datatype::PartitionMut;
use mpi::topology::{Communicator, Rank, SimpleCommunicator};
use mpi::traits::Root;
use mpi::Count;
use std::ops::Range;

/// The results a rank computed: for each claim, its global items and
/// `per_item` elements per item.
#[derive(Debug, Clone, PartialEq)]
pub struct Pieces<T> {
    per_item: usize,
    ranges: Vec<Range<u64>>,
    data: Vec<T>,
}

impl<T: Pod> Pieces<T> {
    /// No pieces yet; each item will have `per_item` elements (at least 1).
    pub fn new(per_item: usize) -> Result<Self> {
        if per_item == 0 || std::mem::size_of::<T>() == 0 {
            return Err(Error::Options(
                "per_item must be at least 1 and elements not zero-sized".into(),
            ));
        }
        Ok(Pieces {
            per_item,
            ranges: Vec::new(),
            data: Vec::new(),
        })
    }

    /// Adds the results of global `items`: `data` holds `per_item`
    /// elements for each, in order.
    pub fn push(&mut self, items: Range<u64>, data: &[T]) -> Result<()> {
        let needed = items.end.saturating_sub(items.start) * self.per_item as u64;
        if items.end < items.start || needed != data.len() as u64 {
            return Err(Error::PieceLength {
                items,
                per_item: self.per_item,
                needed,
                got: data.len(),
            });
        }
        self.ranges.push(items);
        self.data.extend_from_slice(data);
        Ok(())
    }

    /// The ranges held, in the order they were pushed.
    pub fn ranges(&self) -> &[Range<u64>] {
        &self.ranges
    }

    /// The elements held, the pieces one after the other.
    pub fn data(&self) -> &[T] {
        &self.data
    }

    /// Elements per item.
    pub fn per_item(&self) -> usize {
        self.per_item
    }

    /// Collective: sends every rank's pieces to `root`, which returns the
    /// whole result (`total` items, in order); the other ranks return
    /// `None`. Each piece travels once. The root checks that the pieces
    /// cover `0..total` exactly once ([`Error::Coverage`] otherwise).
    pub fn gather(
        &self,
        comm: &SimpleCommunicator,
        root: Rank,
        total: u64,
    ) -> Result<Option<Vec<T>>> {
        let flat: Vec<u64> = self.ranges.iter().flat_map(|r| [r.start, r.end]).collect();
        let ranges = gather_bytes(comm, root, bytemuck::cast_slice(&flat), "ranges")?;
        let data = gather_bytes(comm, root, bytemuck::cast_slice(&self.data), "results")?;
        let (Some(ranges), Some(data)) = (ranges, data) else {
            return Ok(None);
        };
        let mut pieces = Vec::new();
        for (r, d) in ranges.iter().zip(&data) {
            let bounds: Vec<u64> = decode(r);
            let elems: Vec<T> = decode(d);
            let mut at = 0usize;
            for pair in bounds.chunks_exact(2) {
                let n = (pair[1].saturating_sub(pair[0]) as usize).saturating_mul(self.per_item);
                // A rank's data matches its ranges (`push` checks); a short
                // one gives an empty piece, which `assemble` refuses.
                let piece = elems.get(at..at.saturating_add(n)).unwrap_or(&[]);
                pieces.push((pair[0]..pair[1], piece.to_vec()));
                at = at.saturating_add(n);
            }
        }
        assemble(total, self.per_item, &pieces).map(Some)
    }
}

/// The `T`s in `bytes` (any alignment; a partial trailing element is
/// dropped). `T` is not zero-sized (`Pieces::new` refuses those).
fn decode<T: Pod>(bytes: &[u8]) -> Vec<T> {
    bytes
        .chunks_exact(std::mem::size_of::<T>().max(1))
        .map(bytemuck::pod_read_unaligned)
        .collect()
}

/// Collective: every rank's bytes, at `root` (one vector per rank).
fn gather_bytes(
    comm: &SimpleCommunicator,
    root: Rank,
    bytes: &[u8],
    what: &'static str,
) -> Result<Option<Vec<Vec<u8>>>> {
    let len = Count::try_from(bytes.len()).map_err(|_| Error::TooLarge {
        what,
        len: bytes.len(),
    })?;
    let process = comm.process_at_rank(root);
    if comm.rank() != root {
        process.gather_into(&len);
        process.gather_varcount_into(bytes);
        return Ok(None);
    }
    let mut counts = vec![0 as Count; comm.size() as usize];
    process.gather_into_root(&len, &mut counts[..]);
    let mut displs = Vec::with_capacity(counts.len());
    let mut total: usize = 0;
    for &c in &counts {
        displs.push(Count::try_from(total).map_err(|_| Error::TooLarge { what, len: total })?);
        total += c as usize;
    }
    Count::try_from(total).map_err(|_| Error::TooLarge { what, len: total })?;
    let mut all = vec![0u8; total];
    {
        let mut part = PartitionMut::new(&mut all[..], &counts[..], &displs[..]);
        process.gather_varcount_into_root(bytes, &mut part);
    }
    Ok(Some(
        counts
            .iter()
            .zip(&displs)
            .map(|(&c, &d)| all[d as usize..(d + c) as usize].to_vec())
            .collect(),
    ))
}

/// Places `pieces` into one vector of `total` items, checking that they
/// cover `0..total` exactly once and that each holds its items' elements.
pub fn assemble<T: Pod>(
    total: u64,
    per_item: usize,
    pieces: &[(Range<u64>, Vec<T>)],
) -> Result<Vec<T>> {
    let coverage = |problem: String| Error::Coverage { total, problem };
    let mut order: Vec<&(Range<u64>, Vec<T>)> = pieces.iter().collect();
    order.sort_by_key(|(r, _)| (r.start, r.end));
    let mut out = Vec::with_capacity(usize::try_from(total).unwrap_or(0) * per_item);
    let mut next = 0u64;
    for (r, d) in order {
        if r.start < next {
            return Err(coverage(format!("items {r:?} overlap items before {next}")));
        }
        if r.start > next {
            return Err(coverage(format!("items {next}..{} are missing", r.start)));
        }
        if r.end > total || r.end < r.start {
            return Err(coverage(format!("items {r:?} are outside the space")));
        }
        let needed = (r.end - r.start) * per_item as u64;
        if d.len() as u64 != needed {
            return Err(Error::PieceLength {
                items: r.clone(),
                per_item,
                needed,
                got: d.len(),
            });
        }
        out.extend_from_slice(d);
        next = r.end;
    }
    if next != total {
        return Err(coverage(format!("items {next}..{total} are missing")));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_in_any_order_assemble() {
        let p = vec![
            (2..4u64, vec![20u32, 21, 30, 31]),
            (0..2, vec![0, 1, 10, 11]),
        ];
        assert_eq!(
            assemble(4, 2, &p).unwrap(),
            vec![0, 1, 10, 11, 20, 21, 30, 31]
        );
    }

    #[test]
    fn gaps_overlaps_and_strays_are_refused() {
        let gap = vec![(0..1u64, vec![0u8]), (2..3, vec![2])];
        assert!(matches!(assemble(3, 1, &gap), Err(Error::Coverage { .. })));
        let overlap = vec![(0..2u64, vec![0u8, 1]), (1..3, vec![1, 2])];
        assert!(matches!(
            assemble(3, 1, &overlap),
            Err(Error::Coverage { .. })
        ));
        let short = vec![(0..2u64, vec![0u8, 1])];
        assert!(matches!(
            assemble(3, 1, &short),
            Err(Error::Coverage { .. })
        ));
        let past = vec![(0..4u64, vec![0u8; 4])];
        assert!(matches!(assemble(3, 1, &past), Err(Error::Coverage { .. })));
        let wrong = vec![(0..3u64, vec![0u8; 2])];
        assert!(matches!(
            assemble(3, 1, &wrong),
            Err(Error::PieceLength { .. })
        ));
    }

    #[test]
    fn pushing_checks_lengths() {
        let mut p = Pieces::<f32>::new(3).unwrap();
        p.push(5..7, &[0.0; 6]).unwrap();
        assert!(matches!(
            p.push(7..8, &[0.0; 2]),
            Err(Error::PieceLength { .. })
        ));
        assert_eq!(p.ranges().len(), 1);
        assert_eq!(p.ranges()[0], 5..7);
        assert!(Pieces::<f32>::new(0).is_err());
    }
}
