//! Tiles through the C ABI: a kernel whose CPU function handles 2-D
//! packages that cover part of their rows (see `coexec::Kernel::with_tiles`).

use super::handles::{self, KERNELS};
use super::status::{guard, FfiResult};
use super::types::{coexec_kernel, coexec_status};

/// Declares that `kernel`'s CPU function handles 2-D packages that cover
/// part of their rows: the columns `col_start .. col_end` of each row
/// `row_start .. row_end` of its `coexec_package` (a tile's items are not
/// contiguous: write item `(x, y)` at `y * width + x`). The scheduler's 2-D
/// units are then single work-groups, in row-major order, instead of rows
/// of them (`coexec_kernel_units` counts them so), and the GPU and other
/// workers can take the unstarted tiles of a row a CPU worker holds: a
/// CPU worker no longer runs a whole row of work-groups before the GPU can
/// help. Call it before the kernel's first run (it resets what the kernel
/// learned); calling it again changes nothing. Nothing changes in 1-D.
/// Errors: `COEXEC_ERROR_INVALID_HANDLE`, `COEXEC_ERROR_BUSY` while a run
/// uses the kernel.
#[no_mangle]
pub extern "C" fn coexec_kernel_take_tiles(kernel: coexec_kernel) -> coexec_status {
    guard("coexec_kernel_take_tiles", || -> FfiResult<()> {
        let k = KERNELS.get(kernel.id)?;
        let mut slot = handles::write(&k.kernel, "kernel")?;
        if let Some(kernel) = slot.take() {
            *slot = Some(kernel.with_tiles());
        }
        Ok(())
    })
}
