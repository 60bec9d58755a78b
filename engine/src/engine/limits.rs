//! Each device's limits against a run: a GPU (or the SPIR-V CPU device)
//! whose limits cannot serve the run's index space or bindings is left out
//! where another chosen device can run it, with a note in the report; the
//! run fails with the limit's typed error only where none can.

use super::run::Units;
use super::Engine;
use crate::error::{Error, Result};
use crate::exec::gpu::GpuUnit;
use crate::exec::kernel::{Args, Geometry, IndexSpace};
use crate::exec::report::DeviceReport;
use crate::sched::DeviceKind;
use crate::vk::PhysicalDeviceInfo;
use std::borrow::Cow;

/// A device asked for that the run left out, its limits being too small.
pub(super) struct LeftOut {
    /// Its engine index: GPU `g`, or the GPU count for the SPIR-V CPU
    /// device.
    pub(super) device: usize,
    /// Why, for the report: `left out: dispatch limit (...)`.
    pub(super) note: String,
}

impl Engine {
    /// The `units` (engine index, unit) whose limits can serve the run,
    /// and those left out. Where none can and the native CPU workers do
    /// not take part (`native_cpu`), the first device's limit error.
    pub(super) fn within_limits<'e>(
        &self,
        native_cpu: bool,
        units: Units<'e>,
        args: &Args<'_>,
        geometry: &Geometry,
    ) -> Result<(Units<'e>, Vec<LeftOut>)> {
        let mut fit = Vec::with_capacity(units.len());
        let mut left_out = Vec::new();
        let mut first_err = None;
        for (g, unit) in units {
            match check_gpu_limits(&self.limits_of(g, unit), args, geometry) {
                Ok(()) => fit.push((g, unit)),
                Err(e) => {
                    left_out.push(LeftOut {
                        device: g,
                        note: left_out_note(&e),
                    });
                    first_err.get_or_insert(e);
                }
            }
        }
        match first_err {
            Some(e) if fit.is_empty() && !native_cpu => Err(e),
            _ => Ok((fit, left_out)),
        }
    }

    /// The reports of the devices `left_out` of a run.
    pub(super) fn left_out_reports(&self, left_out: &[LeftOut]) -> Vec<DeviceReport> {
        let inner = &*self.inner;
        left_out
            .iter()
            .filter_map(|l| {
                let name = match inner.gpus.get(l.device) {
                    Some(unit) => self.gpu_name(l.device, unit),
                    None => inner.spirv.as_ref()?.device.info().name.clone(),
                };
                let mut r = DeviceReport::sat_out(&name, DeviceKind::Gpu, 1);
                self.mark_spirv(l.device, &mut r);
                r.note = Some(l.note.clone());
                Some(r)
            })
            .collect()
    }

    /// The limits of engine device `g` (`unit`), as lowered by
    /// [`cap_dispatch_groups`](Self::cap_dispatch_groups) (test hooks).
    fn limits_of<'u>(&self, g: usize, unit: &'u GpuUnit) -> Cow<'u, PhysicalDeviceInfo> {
        let info = unit.device.info();
        #[cfg(feature = "test-hooks")]
        {
            let caps = self
                .inner
                .group_caps
                .lock()
                .unwrap_or_else(|p| p.into_inner());
            if let Some(&(_, cap)) = caps.iter().find(|&&(d, _)| d == g) {
                let mut lowered = info.clone();
                for c in &mut lowered.max_group_count {
                    *c = (*c).min(cap);
                }
                return Cow::Owned(lowered);
            }
        }
        #[cfg(not(feature = "test-hooks"))]
        let _ = g;
        Cow::Borrowed(info)
    }

    /// Makes engine device `device` (GPU `g`, or [`gpu_count`] for the
    /// SPIR-V CPU device) report at most `groups` work-groups along each
    /// axis (`maxComputeWorkGroupCount`) from now on, to runs' checks of its
    /// limits (test hook; cargo feature `test-hooks`): lavapipe's devices
    /// all have the same limits.
    ///
    /// [`gpu_count`]: Self::gpu_count
    #[cfg(feature = "test-hooks")]
    pub fn cap_dispatch_groups(&self, device: usize, groups: u32) {
        let mut caps = self
            .inner
            .group_caps
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        caps.retain(|&(d, _)| d != device);
        caps.push((device, groups));
    }
}

/// The note of a device left out of a run by the limit error `e`.
fn left_out_note(e: &Error) -> String {
    match e {
        Error::DispatchLimit {
            axis,
            groups,
            limit,
            ..
        } => format!(
            "left out: dispatch limit ({groups} work-groups along {axis} exceed maxComputeWorkGroupCount[{axis}] = {limit})"
        ),
        Error::BindingRange {
            binding,
            bytes,
            limit,
            ..
        } => format!(
            "left out: binding range (binding {binding} of {bytes} bytes exceeds maxStorageBufferRange = {limit})"
        ),
        e => format!("left out: {e}"),
    }
}

/// A GPU's limits: each binding's size and the work-groups of the index
/// space (the CPU alone has neither).
fn check_gpu_limits(info: &PhysicalDeviceInfo, args: &Args<'_>, g: &Geometry) -> Result<()> {
    for (i, a) in args.buffers.iter().enumerate() {
        if a.raw.bytes() > u64::from(info.max_storage_buffer_range) {
            return Err(Error::BindingRange {
                binding: i as u32,
                bytes: a.raw.bytes(),
                limit: info.max_storage_buffer_range,
                device: info.name.clone(),
            });
        }
    }
    let (axis, groups) = match g.space {
        IndexSpace::D1(_) => (0, g.groups_x),
        IndexSpace::D2 { .. } => {
            if g.groups_x > u64::from(info.max_group_count[0]) {
                (0, g.groups_x)
            } else {
                (1, g.groups_y())
            }
        }
    };
    if groups > u64::from(info.max_group_count[axis]) {
        return Err(Error::DispatchLimit {
            device: info.name.clone(),
            axis,
            groups,
            limit: info.max_group_count[axis],
            hint: if axis == 0 && matches!(g.space, IndexSpace::D1(_)) {
                "; use a 2-D index space or a larger work-group"
            } else {
                ""
            },
        });
    }
    Ok(())
}
