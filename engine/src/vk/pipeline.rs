//! Compute pipelines, created with the dispatch-base flag so that a package
//! runs through `vkCmdDispatchBase` and sees the global ids of its range.

use super::primer::PrimeTarget;
use super::{Device, ShaderInterface};
use crate::error::{Error, Result, VkError, VkResultExt};
use ash::vk;
use std::sync::Arc;

/// A compute pipeline of one shader, its descriptor-set layout (storage
/// buffers of set 0) and its push-constant range.
pub struct ComputePipeline {
    pub(super) device: Arc<Device>,
    pub(super) set_layout: vk::DescriptorSetLayout,
    pub(super) layout: vk::PipelineLayout,
    pub(super) pipeline: vk::Pipeline,
    pub(super) interface: ShaderInterface,
    /// The binding sets of its latest runs ([`ComputePipeline::bind_cached`]).
    pub(super) sets: super::set_cache::SetCache,
    /// Sets of its layout allocated when it was made ([`SPARE_SETS`]), not
    /// yet written: the first [`ComputePipeline::bind`]s write them (see
    /// [`ComputePipeline::new`]).
    pub(super) spare: std::sync::Mutex<Vec<super::BindingSet>>,
}

/// The binding sets a new pipeline allocates ahead of its first runs: the
/// run's own set, and a staged co-executed run's set for the packages its
/// GPU steals from the CPU workers (see `GpuRole::steal_set`), which a
/// first co-executed run otherwise allocated on the GPU's thread before
/// its first package (the GPU of a co-executed first run on an H200 began
/// 70-90 us into the run, the GPU alone's 15-20: BENCHMARKS.md, run 38).
const SPARE_SETS: usize = 2;

impl std::fmt::Debug for ComputePipeline {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ComputePipeline")
            .field("interface", &self.interface)
            .finish()
    }
}

impl ComputePipeline {
    /// Creates the pipeline for entry point `main` of `words`, whose interface
    /// was read by [`super::spirv::reflect`].
    ///
    /// The module is validated first ([`super::spirv::validate`]): an
    /// invalid one is an [`Error::InvalidSpirv`](crate::Error::InvalidSpirv),
    /// never handed to the driver; an `interface` other than the module's
    /// is an [`Error::Interface`] (the pipeline's layout is built from it).
    ///
    /// The new pipeline is bound once in a command buffer that is never
    /// submitted, so that a driver that finishes pipelines on their first
    /// bind does it here rather than in the first package; and a descriptor
    /// set of its layout is allocated now for its first run to write: on
    /// the H200 (NVIDIA 1.4.312) the first set of a fresh process took
    /// 350-420 us to make, in a cold run's GPU start, against 25-35 us
    /// for the next ones.
    pub fn new(device: Arc<Device>, words: &[u32], interface: ShaderInterface) -> Result<Self> {
        if super::spirv::reflect(words, "main")? != interface {
            return Err(Error::Interface(
                "the interface given is not the shader's (see spirv::reflect)".into(),
            ));
        }
        super::spirv::validate(words, device.info().api_version)?;
        let raw = device.raw();
        let module_info = vk::ShaderModuleCreateInfo::default().code(words);
        // SAFETY: the words were checked by `reflect` (header, instruction
        // lengths, one GLCompute entry point named main) and by SPIRV-Tools'
        // validator for the device's Vulkan version.
        let module =
            unsafe { raw.create_shader_module(&module_info, None) }.call("vkCreateShaderModule")?;
        let result = (|| -> Result<_, VkError> {
            let bindings: Vec<_> = interface
                .bindings
                .iter()
                .map(|b| {
                    vk::DescriptorSetLayoutBinding::default()
                        .binding(b.binding)
                        .descriptor_type(vk::DescriptorType::STORAGE_BUFFER)
                        .descriptor_count(1)
                        .stage_flags(vk::ShaderStageFlags::COMPUTE)
                })
                .collect();
            let set_info = vk::DescriptorSetLayoutCreateInfo::default().bindings(&bindings);
            // SAFETY: plain object creation on a live device.
            let set_layout = unsafe { raw.create_descriptor_set_layout(&set_info, None) }
                .call("vkCreateDescriptorSetLayout")?;
            let ranges = [vk::PushConstantRange::default()
                .stage_flags(vk::ShaderStageFlags::COMPUTE)
                .offset(0)
                .size(interface.push_constant_bytes)];
            let set_layouts = [set_layout];
            let mut layout_info = vk::PipelineLayoutCreateInfo::default().set_layouts(&set_layouts);
            if interface.push_constant_bytes > 0 {
                layout_info = layout_info.push_constant_ranges(&ranges);
            }
            // SAFETY: plain object creation on a live device.
            let layout = match unsafe { raw.create_pipeline_layout(&layout_info, None) } {
                Ok(l) => l,
                Err(r) => {
                    // SAFETY: created above, unused.
                    unsafe { raw.destroy_descriptor_set_layout(set_layout, None) };
                    return Err(VkError::from_result("vkCreatePipelineLayout", r));
                }
            };
            let stage = vk::PipelineShaderStageCreateInfo::default()
                .stage(vk::ShaderStageFlags::COMPUTE)
                .module(module)
                .name(c"main");
            // DISPATCH_BASE: packages run through vkCmdDispatchBase and see the
            // global ids of the whole range.
            let info = vk::ComputePipelineCreateInfo::default()
                .flags(vk::PipelineCreateFlags::DISPATCH_BASE)
                .stage(stage)
                .layout(layout);
            // SAFETY: module, layout and cache are live objects of this device.
            match unsafe {
                raw.create_compute_pipelines(device.pipeline_cache().raw(), &[info], None)
            } {
                Ok(p) => Ok((set_layout, layout, p[0])),
                Err((_, r)) => {
                    // SAFETY: created above, unused.
                    unsafe {
                        raw.destroy_pipeline_layout(layout, None);
                        raw.destroy_descriptor_set_layout(set_layout, None);
                    }
                    Err(VkError::from_result("vkCreateComputePipelines", r))
                }
            }
        })();
        // SAFETY: the module is no longer needed once the pipeline exists.
        unsafe { raw.destroy_shader_module(module, None) };
        let (set_layout, layout, pipeline) = device.check(result)?;
        let bindings: Vec<u32> = interface.bindings.iter().map(|b| b.binding).collect();
        let target = PrimeTarget {
            pipeline,
            layout,
            set_layout,
            bindings: &bindings,
            push_constant_bytes: interface.push_constant_bytes,
        };
        // SAFETY: the objects were just created on this device, the set
        // layout from these bindings (storage buffers); the pipeline's
        // `Drop` settles the priming before destroying it.
        if let Err(e) = unsafe { device.prime(target) } {
            // Priming only moves a cost earlier: without it the first
            // package pays it. A lost device shows in the next call.
            tracing::debug!(error = %e, "the new pipeline could not be primed");
        }
        let made = ComputePipeline {
            device,
            set_layout,
            layout,
            pipeline,
            interface,
            sets: Default::default(),
            spare: Default::default(),
        };
        for _ in 0..SPARE_SETS {
            match made.allocate_set() {
                Ok(set) => made.spare.lock().unwrap_or_else(|p| p.into_inner()).push(set),
                // A run makes its own: this only moves a cost earlier.
                Err(e) => {
                    tracing::debug!(error = %e, "no spare set for the new pipeline");
                    break;
                }
            }
        }
        Ok(made)
    }

    /// The shader interface.
    pub fn interface(&self) -> &ShaderInterface {
        &self.interface
    }

    /// The device it belongs to.
    pub fn device(&self) -> &Arc<Device> {
        &self.device
    }
}

impl Drop for ComputePipeline {
    fn drop(&mut self) {
        // The kept sets and the spare go first (a set may outlive its
        // layout, but nothing is gained by that).
        drop(std::mem::take(
            &mut *self.sets.0.lock().unwrap_or_else(|p| p.into_inner()),
        ));
        drop(std::mem::take(
            &mut *self.spare.lock().unwrap_or_else(|p| p.into_inner()),
        ));
        self.device.settle_prime(self.pipeline);
        let raw = self.device.raw();
        // SAFETY: runs borrow the pipeline and wait for their GPU work before
        // returning, and its priming dispatch is settled, so nothing pending
        // uses these objects.
        unsafe {
            raw.destroy_pipeline(self.pipeline, None);
            raw.destroy_pipeline_layout(self.layout, None);
            raw.destroy_descriptor_set_layout(self.set_layout, None);
        }
    }
}

#[cfg(all(test, feature = "glsl"))]
mod tests {
    use super::SPARE_SETS;
    use crate::{Args, Devices, IndexSpace, MemoryPlacement, Scheduler};

    /// A new pipeline holds sets of its layout for its first runs (a
    /// driver's first descriptor set of a process took 350-420 us on the
    /// H200, in a cold run's GPU start): the first binds write those sets,
    /// later binds make their own, every run's output is right, and
    /// validation stays clean.
    #[test]
    fn the_first_bind_writes_the_set_made_with_the_pipeline() {
        let Some(e) = crate::test_engines::one_worker(MemoryPlacement::Auto) else {
            return;
        };
        let glsl = "#version 450
layout(local_size_x = 64) in;
layout(std430, binding = 0) buffer O { uint o[]; };
void main() { o[gl_GlobalInvocationID.x] += 1u; }";
        let k = e.kernel_glsl("spare", glsl, None).unwrap();
        let pipeline = k.pipeline.clone().unwrap();
        let spare = || pipeline.spare.lock().unwrap().len();
        assert_eq!(spare(), SPARE_SETS);
        let mut out = e.buffer::<u32>(256).unwrap();
        let space = IndexSpace::D1(256);
        let dynamic = Scheduler::Dynamic { packages: 2 };
        for runs in 1..=2u32 {
            e.run(&k, Args::new().output(&mut out), space, &dynamic, Devices::GPU)
                .unwrap();
            // The run's one set is kept for the next run of the buffer.
            assert_eq!(spare(), SPARE_SETS - 1, "run {runs}");
            assert!(out.iter().all(|&v| v == runs), "run {runs}");
        }
        // The other spare goes to the next bind; binds beyond the spares
        // make their own sets.
        let other = e.buffer::<u32>(256).unwrap();
        let bound = || crate::mem::BufferBinding::of(other.raw());
        let sets: Vec<_> = (0..SPARE_SETS + 1)
            .map(|_| pipeline.bind(&[bound()]).unwrap())
            .collect();
        assert_eq!(spare(), 0);
        assert!(sets.windows(2).all(|w| w[0].serial != w[1].serial));
        drop(sets);
        assert_eq!(e.validation_errors(), 0, "{:?}", e.validation_messages());
    }
}
