//! The SPIR-V path of the CPU share: a CPU Vulkan device (Mesa lavapipe)
//! opened beside the engine's GPUs, on the cores the engine gives its CPU
//! workers, so that a kernel without a CPU implementation (or one told to
//! use its SPIR-V, [`CpuImpl::Spirv`]) still runs its CPU share there. Its
//! dispatch loop claims packages from the run's queue like any GPU's; in
//! the run it stands where the CPU workers would (run device 0, the CPU's
//! scheduler hints), and reports as the CPU ([`DeviceReport::cpu_impl`]).
//!
//! [`DeviceReport::cpu_impl`]: crate::DeviceReport::cpu_impl

use super::{Devices, Engine, EngineOptions};
use crate::error::Result;
use crate::exec::gpu::GpuUnit;
use crate::exec::kernel::{Geometry, Kernel};
use crate::exec::report::DeviceReport;
use crate::exec::topology::{with_affinity, CorePlan, CoreSet};
use crate::sched::DeviceKind;
use crate::vk::{Device, DeviceOptions, DeviceType, DriverEmulation, Instance, PhysicalDeviceInfo};
use std::sync::Arc;

/// Which code runs a run's CPU share.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub enum CpuImpl {
    /// The kernel's CPU implementation (a Rust closure, a C callback) on
    /// the engine's pinned workers; the kernel's SPIR-V on the engine's CPU
    /// Vulkan device where it has no CPU implementation.
    #[default]
    Native,
    /// The kernel's SPIR-V on the engine's CPU Vulkan device whenever the
    /// kernel has SPIR-V and the engine has that device (else as
    /// [`Native`](Self::Native)).
    Spirv,
}

impl std::fmt::Display for CpuImpl {
    /// `native` or `spirv`, as [`FromStr`](std::str::FromStr) reads them.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            CpuImpl::Native => "native",
            CpuImpl::Spirv => "spirv",
        })
    }
}

impl std::str::FromStr for CpuImpl {
    type Err = String;
    /// `native` or `spirv`.
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s.trim() {
            "native" => Ok(CpuImpl::Native),
            "spirv" => Ok(CpuImpl::Spirv),
            other => Err(format!(
                "unknown CPU implementation {other:?} (native or spirv)"
            )),
        }
    }
}

/// Whether an engine built with `options` opens a CPU Vulkan device for
/// SPIR-V CPU shares: [`EngineOptions::spirv_cpu`] or
/// [`CpuImpl::Spirv`], else the environment variable `COEXEC_SPIRV_CPU`
/// (`1`: yes, anything else: no).
pub(super) fn wanted(options: &EngineOptions) -> bool {
    options.spirv_cpu
        || options.cpu_impl == CpuImpl::Spirv
        || std::env::var("COEXEC_SPIRV_CPU").is_ok_and(|v| v.trim() == "1")
}

/// The CPU Vulkan device for SPIR-V CPU shares among `devs` (every device):
/// the first usable CPU implementation with host-visible coherent memory
/// and `VK_EXT_external_memory_host` (the engine's buffers are shared with
/// it). It may be one of the engine's GPUs too (lavapipe standing for a
/// GPU): it is then opened a second time.
pub(super) fn find(devs: &[PhysicalDeviceInfo]) -> Option<PhysicalDeviceInfo> {
    devs.iter()
        .find(|d| {
            d.device_type == DeviceType::Cpu
                && d.unusable_reason().is_none()
                && d.unified_memory_type().is_some()
                && d.external_memory_host
        })
        .cloned()
}

/// Every hardware thread of the CPU workers' cores: where the SPIR-V CPU
/// device's threads and its dispatch loop run (empty: no pinning).
pub(super) fn cores(plan: &CorePlan) -> CoreSet {
    let mut pus: Vec<usize> = plan.workers.iter().flat_map(|c| c.pus.clone()).collect();
    pus.sort_unstable();
    pus.dedup();
    CoreSet { pus }
}

/// Opens the SPIR-V CPU device `info` on an instance of its own, created
/// (with the device) from a thread pinned to `cores`: lavapipe starts the
/// threads that run compute shaders when an instance enumerates its
/// physical device, one pool per instance shared by every logical device
/// of it, and they inherit that thread's affinity. So they run on the CPU
/// workers' cores only, apart from a lavapipe serving as a GPU of the
/// engine. Their number is lavapipe's `LP_NUM_THREADS` (process-wide; see
/// [`Engine::spirv_cpu_threads`]). The engine's buffers are host memory
/// imported into each device, which needs no common instance; the
/// instance's validation errors count as the engine's.
pub(super) fn open(
    info: &PhysicalDeviceInfo,
    cores: &CoreSet,
    options: &EngineOptions,
) -> Result<Arc<Device>> {
    let dev_opts = DeviceOptions {
        pipeline_cache_dir: options.pipeline_cache_dir.clone(),
        // The same emulation as the engine's other devices.
        driver: DriverEmulation::from_env().unwrap_or(options.driver),
        // It stages nothing.
        transfer_queue: crate::vk::TransferQueue::Compute,
    };
    let validation = options.validation;
    let open = || -> Result<Arc<Device>> {
        let instance = Arc::new(Instance::new(validation)?);
        let all = instance.all_physical_devices()?;
        let info = super::gpus::refind(&all, info.index)?;
        Device::new(instance, info, &dev_opts)
    };
    if cores.pus.is_empty() {
        open()
    } else {
        with_affinity(cores, open)
    }
}

/// How many work-groups (scheduler units) a package of the SPIR-V CPU
/// device takes at least: lavapipe spreads one dispatch's work-groups over
/// its threads, so a package of fewer groups than a few per thread leaves
/// threads idle and pays its submission for little work.
pub(super) fn granule(threads: usize, groups_per_unit: u64) -> u64 {
    const GROUPS_PER_THREAD: u64 = 4;
    (threads.max(1) as u64 * GROUPS_PER_THREAD).div_ceil(groups_per_unit.max(1))
}

impl Engine {
    /// Facts about the engine's CPU Vulkan device of the SPIR-V CPU path
    /// (`None`: not opened; see [`EngineOptions::spirv_cpu`]).
    pub fn spirv_cpu_device(&self) -> Option<&crate::PhysicalDeviceInfo> {
        self.inner.spirv.as_ref().map(|u| u.device.info())
    }

    /// How many hardware threads the CPU workers of an engine built with
    /// `workers` ([`EngineOptions::workers`]) and one GPU have: the
    /// SPIR-V CPU device runs on them, so this is the value for lavapipe's
    /// `LP_NUM_THREADS` where lavapipe serves that path alone (set by the
    /// application before it starts threads, as the `coexec` command does
    /// for `--cpu-impl spirv`). Needs no Vulkan; `None` without workers.
    pub fn spirv_cpu_threads(workers: Option<usize>) -> Option<usize> {
        let plan = crate::exec::topology::CpuTopology::detect()
            .plan(&crate::exec::topology::PlanRequest {
                workers,
                cpu_vulkan_devices: 0,
                gpu_loops: 1,
                ..Default::default()
            })
            .ok()?;
        Some(cores(&plan).pus.len()).filter(|&n| n > 0)
    }

    /// Validation errors of the SPIR-V CPU device's instance (0 without it).
    pub(super) fn spirv_validation_errors(&self) -> u64 {
        self.inner
            .spirv
            .as_ref()
            .map_or(0, |u| u.device.instance().validation_log().errors())
    }

    /// The most recent validation error messages of that instance.
    pub(super) fn spirv_validation_messages(&self) -> Vec<String> {
        self.inner.spirv.as_ref().map_or_else(Vec::new, |u| {
            u.device.instance().validation_log().error_messages()
        })
    }

    /// How a run on `devices` runs `kernel`'s CPU share: `None` where the
    /// CPU is not asked for, else the path, or why there is none.
    pub(super) fn cpu_path(
        &self,
        kernel: &Kernel,
        devices: Devices,
    ) -> Option<std::result::Result<CpuImpl, String>> {
        if !devices.cpu {
            return None;
        }
        let inner = &*self.inner;
        let spirv =
            kernel.pipeline.is_some() && inner.spirv.as_ref().is_some_and(|u| !u.device.is_lost());
        let native = kernel.cpu.is_some() && inner.workers > 0;
        Some(match (inner.options.cpu_impl, native, spirv) {
            (CpuImpl::Spirv, _, true) | (CpuImpl::Native, false, true) => Ok(CpuImpl::Spirv),
            (_, true, _) => Ok(CpuImpl::Native),
            _ if kernel.cpu.is_some() => Err("the engine has no CPU workers".into()),
            _ => Err(self.no_spirv_reason()),
        })
    }

    /// Why a kernel without a CPU implementation cannot run on the CPU.
    fn no_spirv_reason(&self) -> String {
        let inner = &*self.inner;
        let why = match (&inner.spirv, &inner.spirv_missing) {
            (Some(_), _) => "its CPU Vulkan device failed earlier".to_string(),
            (None, Some(missing)) => missing.clone(),
            (None, None) => {
                "the engine opened no CPU Vulkan device (EngineOptions::spirv_cpu)".into()
            }
        };
        format!("no CPU implementation, and {why}: the GPUs ran it alone")
    }

    /// The SPIR-V CPU device's engine index and package granule for a run
    /// over `geometry` (`None`: the engine has none).
    pub(super) fn spirv_slot(&self, geometry: &Geometry) -> Option<(usize, u64)> {
        self.inner.spirv.as_ref()?;
        let threads = lavapipe_threads(cores(&self.inner.plan).pus.len());
        let g = granule(threads, geometry.groups_per_unit());
        Some((self.inner.gpus.len(), g))
    }

    /// Makes the report of engine device `g` that of the CPU where `g` is
    /// the SPIR-V CPU device.
    pub(super) fn mark_spirv(&self, g: usize, report: &mut DeviceReport) {
        if g == self.inner.gpus.len() {
            report.kind = DeviceKind::Cpu;
            report.cpu_impl = Some(CpuImpl::Spirv);
            report.name = format!("{} ({})", self.inner.topology.model, report.name);
        }
    }

    /// The SPIR-V CPU device's report where it could have taken part in a
    /// run (`present` slots) but sat it out (it is not among `gpus`).
    pub(super) fn spirv_sat_out(
        &self,
        present: Vec<usize>,
        gpus: &[(usize, &GpuUnit)],
    ) -> Option<DeviceReport> {
        let g = self.inner.gpus.len();
        let unit = self.inner.spirv.as_ref()?;
        if !present.contains(&(1 + g)) || gpus.iter().any(|&(u, _)| u == g) {
            return None;
        }
        let mut r = DeviceReport::sat_out(&unit.device.info().name, DeviceKind::Gpu, 1);
        self.mark_spirv(g, &mut r);
        Some(r)
    }
}

/// The threads lavapipe runs on the SPIR-V CPU device: `LP_NUM_THREADS`
/// where set, else `cores` (what the `coexec` command sets it to).
fn lavapipe_threads(cores: usize) -> usize {
    std::env::var("LP_NUM_THREADS")
        .ok()
        .and_then(|v| v.trim().parse::<usize>().ok())
        .unwrap_or(cores)
        .max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_impl_parses_and_prints() {
        for (t, v) in [("native", CpuImpl::Native), ("spirv", CpuImpl::Spirv)] {
            assert_eq!(t.parse::<CpuImpl>(), Ok(v));
            assert_eq!(v.to_string(), t);
        }
        assert!("rayon"
            .parse::<CpuImpl>()
            .unwrap_err()
            .contains("native or spirv"));
    }

    #[test]
    fn granule_gives_each_thread_a_few_groups() {
        assert_eq!(granule(4, 1), 16);
        assert_eq!(granule(0, 1), 4);
        // 2-D: units are rows of work-groups.
        assert_eq!(granule(4, 8), 2);
        assert_eq!(granule(1, 100), 1);
    }

    #[test]
    fn cores_are_the_workers_own() {
        let plan = CorePlan {
            workers: vec![CoreSet { pus: vec![3] }, CoreSet { pus: vec![1] }],
            cpu_vulkan_devices: vec![CoreSet { pus: vec![0] }],
            gpu_loops: vec![],
        };
        assert_eq!(cores(&plan).pus, vec![1, 3]);
    }
}
