//! Argument footprints through the C ABI: which part of each argument a
//! package reads, declared once per kernel (`coexec_kernel_set_footprint`)
//! and applied to every run of it (see `coexec::Footprint`).

#![allow(non_camel_case_types)]

use super::handles::KERNELS;
use super::invalid;
use super::status::{guard, FfiResult};
use super::types::{coexec_kernel, coexec_status, COEXEC_MAX_ARGS};
use ::coexec_engine::Footprint;

/// The shape of a footprint (`coexec_footprint.kind`).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum coexec_footprint_kind {
    /// The default: an input's whole buffer, an output's own items.
    COEXEC_FOOTPRINT_DEFAULT = 0,
    /// Every element of the buffer.
    COEXEC_FOOTPRINT_WHOLE = 1,
    /// The package's own items times `per_item` elements.
    COEXEC_FOOTPRINT_ITEMS = 2,
    /// The package's items widened by `halo` rows (2-D) or items (1-D) on
    /// each side, times `per_item` elements; clipped to the index space.
    COEXEC_FOOTPRINT_HALO = 3,
    /// A sparse structure's: item `i` reads elements `offsets[i] * per_item
    /// .. offsets[i + 1] * per_item`, `offsets` being the `uint32_t`
    /// argument at index `offsets` (an input with one more element than
    /// the index space has items, non-decreasing: a CSR row pointer).
    COEXEC_FOOTPRINT_OFFSETS = 4,
}

/// Which part of an argument one package reads. Staged runs (a discrete GPU,
/// or `COEXEC_MEMORY=staged`) upload only that part of it for each GPU
/// package, less what the buffer's device copy already holds; a kernel that
/// reads outside its footprint reads stale data there.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct coexec_footprint {
    /// A `coexec_footprint_kind` value.
    pub kind: u32,
    /// `ITEMS` and `HALO`: elements (of the buffer's element size) per
    /// work-item, at least 1.
    pub per_item: u64,
    /// `HALO`: rows (2-D) or items (1-D) on each side.
    pub halo: u64,
    /// `OFFSETS`: the argument index of the offsets.
    pub offsets: u32,
}

/// Each argument's footprint of one kernel, by argument index.
pub(crate) type Footprints = std::sync::Mutex<Vec<Option<coexec_footprint>>>;

/// Declares which part of argument `index` (its position in `coexec_run`'s
/// `args`) each package of `kernel` reads, for every later run of it;
/// `COEXEC_FOOTPRINT_DEFAULT` (or `footprint` NULL) restores the default.
/// An output's footprint can only be its own items (`ITEMS` with its
/// `per_item`); another one, or `per_item` 0, makes the run return
/// `COEXEC_ERROR_INVALID_ARGUMENT`. Errors here: `COEXEC_ERROR_INVALID_HANDLE`,
/// `COEXEC_ERROR_INVALID_ARGUMENT` for an index of `COEXEC_MAX_ARGS` or more
/// or an unknown kind.
///
/// # Safety
/// `footprint` is NULL or valid for a read.
#[no_mangle]
pub unsafe extern "C" fn coexec_kernel_set_footprint(
    kernel: coexec_kernel,
    index: u32,
    footprint: *const coexec_footprint,
) -> coexec_status {
    guard("coexec_kernel_set_footprint", || {
        let k = KERNELS.get(kernel.id)?;
        let i = index as usize;
        if i >= COEXEC_MAX_ARGS {
            return Err(invalid(format!(
                "index {index}: a run takes at most COEXEC_MAX_ARGS ({COEXEC_MAX_ARGS}) buffers"
            )));
        }
        let f = if footprint.is_null() {
            None
        } else {
            // SAFETY: non-null and readable per the contract.
            let f = unsafe { footprint.read_unaligned() };
            if f.kind > 4 {
                return Err(invalid(format!("unknown coexec_footprint_kind {}", f.kind)));
            }
            (f.kind != 0).then_some(f)
        };
        let mut all = k.footprints.lock().unwrap_or_else(|p| p.into_inner());
        if all.len() <= i {
            all.resize(i + 1, None);
        }
        all[i] = f;
        Ok(())
    })
}

/// The engine's footprint of `f` for a buffer of `elem_size`-byte elements
/// (the engine counts C buffers in bytes).
pub(crate) fn to_engine(f: &coexec_footprint, elem_size: usize) -> FfiResult<Footprint> {
    let per_item = || {
        f.per_item
            .checked_mul(elem_size as u64)
            .ok_or_else(|| invalid(format!("footprint per_item {} overflows", f.per_item)))
    };
    Ok(match f.kind {
        1 => Footprint::Whole,
        2 => Footprint::Items {
            per_item: per_item()?,
        },
        3 => Footprint::Halo {
            per_item: per_item()?,
            halo: f.halo,
        },
        4 => Footprint::Offsets {
            binding: f.offsets,
            per_item: per_item()?,
        },
        k => return Err(invalid(format!("unknown coexec_footprint_kind {k}"))),
    })
}
