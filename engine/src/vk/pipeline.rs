//! Compute pipelines (created with the dispatch-base flag), the on-disk
//! pipeline cache, per-run descriptor sets, and the dispatch ring that records
//! and submits one package per command buffer.

use super::{Device, PhysicalDeviceInfo, ShaderInterface, Timeline};
use crate::error::{Error, Result, VkError, VkResultExt};
use crate::mem::BufferBinding;
use ash::vk;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A `VkPipelineCache` loaded from and saved to disk.
pub struct PipelineCache {
    raw: vk::PipelineCache,
    path: Option<PathBuf>,
}

impl PipelineCache {
    /// The default cache directory: `$COEXEC_CACHE_DIR`, else the user's cache
    /// directory followed by `coexec`.
    pub fn default_dir() -> Option<PathBuf> {
        if let Some(d) = std::env::var_os("COEXEC_CACHE_DIR") {
            return Some(PathBuf::from(d));
        }
        dirs::cache_dir().map(|d| d.join("coexec"))
    }

    /// Path of the cache file for a device inside `dir` (keyed by the
    /// driver's pipeline cache UUID, so another driver never reads it).
    pub fn file_for(dir: &Path, info: &PhysicalDeviceInfo) -> PathBuf {
        dir.join(format!(
            "pipelines-{:04x}-{:04x}-{}.bin",
            info.vendor_id,
            info.device_id,
            info.pipeline_cache_uuid_hex()
        ))
    }

    pub(super) fn open(
        device: &ash::Device,
        info: &PhysicalDeviceInfo,
        dir: Option<&Path>,
    ) -> Self {
        let dir = match dir {
            Some(d) if d.as_os_str().is_empty() => None,
            Some(d) => Some(d.to_path_buf()),
            None => Self::default_dir(),
        };
        let path = dir.map(|d| Self::file_for(&d, info));
        let data = path
            .as_ref()
            .and_then(|p| std::fs::read(p).ok())
            .unwrap_or_default();
        let info_ci = vk::PipelineCacheCreateInfo::default().initial_data(&data);
        // SAFETY: the initial data is only a hint: implementations validate its
        // header (vendor, device, UUID) and ignore data that does not match.
        let raw = match unsafe { device.create_pipeline_cache(&info_ci, None) } {
            Ok(c) => c,
            Err(_) => {
                // A corrupt file may be refused: start empty.
                let empty = vk::PipelineCacheCreateInfo::default();
                // SAFETY: as above, with no initial data.
                unsafe { device.create_pipeline_cache(&empty, None) }
                    .unwrap_or(vk::PipelineCache::null())
            }
        };
        PipelineCache { raw, path }
    }

    /// The raw handle (null if no cache could be created).
    pub fn raw(&self) -> vk::PipelineCache {
        self.raw
    }

    /// Where the cache is persisted, if anywhere.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    pub(super) fn save(&self, device: &ash::Device) {
        let (Some(path), false) = (&self.path, self.raw == vk::PipelineCache::null()) else {
            return;
        };
        // SAFETY: the cache belongs to `device` and is alive.
        let Ok(data) = (unsafe { device.get_pipeline_cache_data(self.raw) }) else {
            return;
        };
        if let Some(parent) = path.parent() {
            let _ = std::fs::create_dir_all(parent);
        }
        // Write then rename so that a concurrent reader never sees half a file.
        let tmp = path.with_extension(format!("tmp{}", std::process::id()));
        if std::fs::write(&tmp, &data).is_ok() {
            let _ = std::fs::rename(&tmp, path);
        }
    }

    /// # Safety
    /// No pipeline creation using this cache is in progress.
    pub(super) unsafe fn destroy(&self, device: &ash::Device) {
        if self.raw != vk::PipelineCache::null() {
            // SAFETY: the caller guarantees no concurrent use.
            unsafe { device.destroy_pipeline_cache(self.raw, None) };
        }
    }
}

/// A compute pipeline of one shader, its descriptor-set layout (storage
/// buffers of set 0) and its push-constant range.
pub struct ComputePipeline {
    device: Arc<Device>,
    set_layout: vk::DescriptorSetLayout,
    layout: vk::PipelineLayout,
    pipeline: vk::Pipeline,
    interface: ShaderInterface,
}

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
        Ok(ComputePipeline {
            device,
            set_layout,
            layout,
            pipeline,
            interface,
        })
    }

    /// The shader interface.
    pub fn interface(&self) -> &ShaderInterface {
        &self.interface
    }

    /// The device it belongs to.
    pub fn device(&self) -> &Arc<Device> {
        &self.device
    }

    /// Creates a descriptor set binding `buffers[i]` at
    /// `self.interface().bindings[i]`.
    ///
    /// Fails with [`Error::Interface`] unless there is exactly one buffer
    /// per binding, [`Error::ForeignBuffer`] for a buffer of another device,
    /// and [`Error::BindingRange`] for one larger than the device's
    /// `maxStorageBufferRange`.
    pub fn bind(&self, buffers: &[BufferBinding<'_>]) -> Result<BindingSet> {
        self.check_bindings(buffers)?;
        let set = self.allocate_set()?;
        let infos: Vec<[vk::DescriptorBufferInfo; 1]> = buffers
            .iter()
            .map(|b| {
                [vk::DescriptorBufferInfo::default()
                    .buffer(b.raw().handle())
                    .offset(0)
                    .range(b.raw().bytes())]
            })
            .collect();
        let writes: Vec<_> = self
            .interface
            .bindings
            .iter()
            .zip(&infos)
            .map(|(b, info)| {
                vk::WriteDescriptorSet::default()
                    .dst_set(set.set)
                    .dst_binding(b.binding)
                    .descriptor_type(vk::DescriptorType::STORAGE_BUFFER)
                    .buffer_info(info)
            })
            .collect();
        // SAFETY: the set is freshly allocated and not in use; every binding
        // of its layout gets one live buffer of this device, within the
        // storage range limit (checked above).
        unsafe { self.device.raw().update_descriptor_sets(&writes, &[]) };
        Ok(set)
    }

    /// Checks that `buffers` fit the interface and the device (see
    /// [`ComputePipeline::bind`]).
    fn check_bindings(&self, buffers: &[BufferBinding<'_>]) -> Result<()> {
        if buffers.len() != self.interface.bindings.len() {
            return Err(Error::Interface(format!(
                "the shader declares {} storage buffer(s) but {} were given",
                self.interface.bindings.len(),
                buffers.len()
            )));
        }
        let info = self.device.info();
        for (i, b) in buffers.iter().enumerate() {
            let binding = i as u32;
            if !Arc::ptr_eq(b.raw().device(), &self.device) {
                return Err(Error::ForeignBuffer { binding });
            }
            if b.raw().bytes() > u64::from(info.max_storage_buffer_range) {
                return Err(Error::BindingRange {
                    binding,
                    bytes: b.raw().bytes(),
                    limit: info.max_storage_buffer_range,
                    device: info.name.clone(),
                });
            }
        }
        Ok(())
    }

    /// A descriptor set of this pipeline's layout, in a pool of its own.
    fn allocate_set(&self) -> Result<BindingSet, VkError> {
        let raw = self.device.raw();
        let n = self.interface.bindings.len().max(1) as u32;
        let sizes = [vk::DescriptorPoolSize::default()
            .ty(vk::DescriptorType::STORAGE_BUFFER)
            .descriptor_count(n)];
        let pool_info = vk::DescriptorPoolCreateInfo::default()
            .max_sets(1)
            .pool_sizes(&sizes);
        // SAFETY: plain object creation on a live device.
        let pool = unsafe { raw.create_descriptor_pool(&pool_info, None) }
            .call("vkCreateDescriptorPool")?;
        let layouts = [self.set_layout];
        let alloc = vk::DescriptorSetAllocateInfo::default()
            .descriptor_pool(pool)
            .set_layouts(&layouts);
        // SAFETY: the pool has room for exactly this set.
        match unsafe { raw.allocate_descriptor_sets(&alloc) } {
            Ok(s) => Ok(BindingSet {
                device: self.device.clone(),
                pool,
                set: s[0],
            }),
            Err(r) => {
                // SAFETY: created above, unused.
                unsafe { raw.destroy_descriptor_pool(pool, None) };
                Err(VkError::from_result("vkAllocateDescriptorSets", r))
            }
        }
    }
}

impl Drop for ComputePipeline {
    fn drop(&mut self) {
        let raw = self.device.raw();
        // SAFETY: runs borrow the pipeline and wait for their GPU work before
        // returning, so nothing pending uses these objects.
        unsafe {
            raw.destroy_pipeline(self.pipeline, None);
            raw.destroy_pipeline_layout(self.layout, None);
            raw.destroy_descriptor_set_layout(self.set_layout, None);
        }
    }
}

/// A descriptor set for one run (its own small pool, destroyed with it).
pub struct BindingSet {
    device: Arc<Device>,
    pool: vk::DescriptorPool,
    set: vk::DescriptorSet,
}

impl Drop for BindingSet {
    fn drop(&mut self) {
        // SAFETY: dropped after the run's GPU work completed (rings wait for
        // every ticket before the run returns).
        unsafe { self.device.raw().destroy_descriptor_pool(self.pool, None) };
    }
}

/// GPU start and end of one package, in nanoseconds on the device clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GpuSpan {
    /// Start (top of pipe).
    pub start_ns: u64,
    /// End (bottom of pipe).
    pub end_ns: u64,
}

/// One package's dispatch, as a [`DispatchRing`] records it: `count`
/// work-groups from work-group `base`, with `pipeline`, `set` and `push`.
#[derive(Clone, Copy)]
pub(crate) struct Dispatch<'a> {
    pub(crate) pipeline: &'a ComputePipeline,
    pub(crate) set: &'a BindingSet,
    pub(crate) push: &'a [u8],
    pub(crate) base: [u32; 3],
    pub(crate) count: [u32; 3],
}

/// A ring of command buffers, one per in-flight package, signalling one
/// timeline semaphore. Nothing is allocated per package: a slot's command
/// buffer is reset and re-recorded (a handful of commands).
pub struct DispatchRing {
    device: Arc<Device>,
    pool: vk::CommandPool,
    cbs: Vec<vk::CommandBuffer>,
    queries: vk::QueryPool,
    /// Present in [`StampRead::Copy`] mode only.
    stamps: Option<Stamps>,
    /// Signalled to each ticket as its package completes; `None` only while
    /// the ring is being built.
    sem: Option<Timeline>,
    last: u64,
}

/// How a ring reads its packages' GPU timestamps back.
///
/// Chosen per device when the ring is created; the environment variable
/// `COEXEC_GPU_TIMESTAMPS` (`copy`, `query` or `off`) overrides the choice,
/// for diagnosis and measurement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StampRead {
    /// Each command buffer copies its two stamps into mapped host memory
    /// (`vkCmdCopyQueryPoolResults`). The default on CPU implementations:
    /// lavapipe's `vkGetQueryPoolResults` waits for its whole queue to idle,
    /// which would serialise the ring.
    Copy,
    /// Stamps are read with `vkGetQueryPoolResults` once the package's
    /// ticket completed: no transfer and no second barrier on the device
    /// between packages. The default on GPUs.
    Query,
    /// No timestamps: packages carry no GPU span.
    Off,
}

impl StampRead {
    /// The mode for `device`: the `COEXEC_GPU_TIMESTAMPS` override if set
    /// to a known value, else [`StampRead::Copy`] on CPU implementations and
    /// [`StampRead::Query`] elsewhere; [`StampRead::Off`] when the queue
    /// writes no timestamps.
    pub fn for_device(device: &Device) -> Self {
        if !device.has_timestamps() {
            return StampRead::Off;
        }
        match std::env::var("COEXEC_GPU_TIMESTAMPS").as_deref() {
            Ok("copy") => return StampRead::Copy,
            Ok("query") => return StampRead::Query,
            Ok("off") => return StampRead::Off,
            Ok(other) => tracing::warn!(
                value = other,
                "COEXEC_GPU_TIMESTAMPS is not copy, query or off; ignored"
            ),
            Err(_) => {}
        }
        if device.info().device_type == super::DeviceType::Cpu {
            StampRead::Copy
        } else {
            StampRead::Query
        }
    }
}

/// Where each command buffer copies its two timestamps
/// (`vkCmdCopyQueryPoolResults`), so that reading them is a plain memory read
/// once the ticket completed: no `vkGetQueryPoolResults` per package, which
/// some drivers (lavapipe) implement by waiting for the whole queue to idle.
struct Stamps {
    buffer: vk::Buffer,
    memory: vk::DeviceMemory,
    ptr: *mut u64,
}

// SAFETY: `ptr` is a persistent mapping owned by the ring; it is only
// dereferenced through `&self`/`&mut self` methods of the ring, which follow
// the ring's own synchronisation (a slot is read after its ticket completed
// and written before it is submitted, by the ring's single owner).
unsafe impl Send for Stamps {}
// SAFETY: see above; shared access only reads.
unsafe impl Sync for Stamps {}

impl Stamps {
    fn new(device: &Device, slots: usize) -> Result<Self, VkError> {
        let raw = device.raw();
        let size = 16 * slots as u64;
        let info = vk::BufferCreateInfo::default()
            .size(size)
            .usage(vk::BufferUsageFlags::TRANSFER_DST)
            .sharing_mode(vk::SharingMode::EXCLUSIVE);
        // SAFETY: plain object creation on a live device.
        let buffer = unsafe { raw.create_buffer(&info, None) }.call("vkCreateBuffer")?;
        // SAFETY: `buffer` is live.
        let req = unsafe { raw.get_buffer_memory_requirements(buffer) };
        let hv = vk::MemoryPropertyFlags::HOST_VISIBLE | vk::MemoryPropertyFlags::HOST_COHERENT;
        let types = &device.info().memory_types;
        let Some(index) = (0..types.len() as u32).find(|&i| {
            req.memory_type_bits & (1 << i) != 0 && types[i as usize].flags.contains(hv)
        }) else {
            // SAFETY: unused.
            unsafe { raw.destroy_buffer(buffer, None) };
            return Err(VkError::from_result(
                "vkAllocateMemory (timestamps)",
                vk::Result::ERROR_FEATURE_NOT_PRESENT,
            ));
        };
        let alloc = vk::MemoryAllocateInfo::default()
            .allocation_size(req.size)
            .memory_type_index(index);
        // SAFETY: a host-visible type the buffer accepts; freed in Drop.
        let memory = match unsafe { raw.allocate_memory(&alloc, None) } {
            Ok(m) => m,
            Err(r) => {
                // SAFETY: unused.
                unsafe { raw.destroy_buffer(buffer, None) };
                return Err(VkError::from_result("vkAllocateMemory", r));
            }
        };
        // SAFETY: fresh memory and buffer of this device; the memory is large
        // enough per `req`; mapping the whole of a host-visible allocation.
        let mapped = unsafe {
            raw.bind_buffer_memory(buffer, memory, 0).and_then(|_| {
                raw.map_memory(memory, 0, vk::WHOLE_SIZE, vk::MemoryMapFlags::empty())
            })
        };
        match mapped {
            Ok(p) => {
                let ptr = p as *mut u64;
                // SAFETY: the mapping holds 2 * slots u64 (size above).
                unsafe { std::ptr::write_bytes(ptr, 0, 2 * slots) };
                Ok(Stamps {
                    buffer,
                    memory,
                    ptr,
                })
            }
            Err(r) => {
                // SAFETY: unused.
                unsafe {
                    raw.destroy_buffer(buffer, None);
                    raw.free_memory(memory, None);
                }
                Err(VkError::from_result("vkMapMemory", r))
            }
        }
    }
}

/// The most slots (GPU packages in flight) a [`DispatchRing`] has: a deeper
/// ring is cut to this. Each slot holds a command buffer, two timestamp
/// queries and a fence value; a few packages in flight already hide the
/// submission gaps, and a depth near `u32::MAX` would allocate tens of GiB.
pub const MAX_IN_FLIGHT: usize = 64;

impl DispatchRing {
    /// Creates a ring with `depth` slots (packages in flight; 0 counts as 1,
    /// more than [`MAX_IN_FLIGHT`] as that many), reading
    /// timestamps back as [`StampRead::for_device`] chooses.
    pub fn new(device: Arc<Device>, depth: usize) -> Result<Self, VkError> {
        let read = StampRead::for_device(&device);
        Self::with_stamps(device, depth, read)
    }

    /// Creates a ring with `depth` slots reading timestamps back by `read`
    /// ([`StampRead::Off`] where the queue writes no timestamps).
    pub fn with_stamps(
        device: Arc<Device>,
        depth: usize,
        read: StampRead,
    ) -> Result<Self, VkError> {
        let read = if device.has_timestamps() {
            read
        } else {
            StampRead::Off
        };
        let raw = device.raw();
        let depth = depth.clamp(1, MAX_IN_FLIGHT);
        let pool_info = vk::CommandPoolCreateInfo::default()
            .flags(vk::CommandPoolCreateFlags::RESET_COMMAND_BUFFER)
            .queue_family_index(device.queue_family());
        // SAFETY: plain object creation on a live device.
        let pool =
            unsafe { raw.create_command_pool(&pool_info, None) }.call("vkCreateCommandPool")?;
        let mut ring = DispatchRing {
            device: device.clone(),
            pool,
            cbs: Vec::new(),
            queries: vk::QueryPool::null(),
            stamps: None,
            sem: None,
            last: 0,
        };
        let alloc = vk::CommandBufferAllocateInfo::default()
            .command_pool(pool)
            .level(vk::CommandBufferLevel::PRIMARY)
            .command_buffer_count(depth as u32);
        // SAFETY: the pool is live and owned by the ring.
        ring.cbs =
            unsafe { raw.allocate_command_buffers(&alloc) }.call("vkAllocateCommandBuffers")?;
        if read != StampRead::Off {
            let qi = vk::QueryPoolCreateInfo::default()
                .query_type(vk::QueryType::TIMESTAMP)
                .query_count(2 * depth as u32);
            // SAFETY: plain object creation on a live device.
            ring.queries = unsafe { raw.create_query_pool(&qi, None) }.call("vkCreateQueryPool")?;
            // SAFETY: host query reset was enabled at device creation; the
            // pool is new and unused.
            unsafe { raw.reset_query_pool(ring.queries, 0, 2 * depth as u32) };
            if read == StampRead::Copy {
                ring.stamps = Some(Stamps::new(&device, depth)?);
            }
        }
        ring.sem = Some(Timeline::new(&device, 0)?);
        Ok(ring)
    }

    /// Number of slots.
    pub fn depth(&self) -> usize {
        self.cbs.len()
    }

    /// The ticket of the last submission (0: none yet).
    pub fn last_ticket(&self) -> u64 {
        self.last
    }

    /// How this ring reads timestamps back.
    pub fn stamp_read(&self) -> StampRead {
        match (self.queries != vk::QueryPool::null(), self.stamps.is_some()) {
            (false, _) => StampRead::Off,
            (true, true) => StampRead::Copy,
            (true, false) => StampRead::Query,
        }
    }

    /// Resets (on the host) the two queries of `slot` and, in copy mode,
    /// zeroes the slot's stamps, so that a submission that writes none reads
    /// as "no span".
    ///
    /// # Safety
    /// The slot is idle: no pending submission uses its queries or stamps.
    unsafe fn clear_slot(&self, slot: usize) {
        if self.queries == vk::QueryPool::null() {
            return;
        }
        // SAFETY: host query reset is enabled at device creation; the
        // slot's queries are not used by any pending submission (contract).
        unsafe {
            self.device
                .raw()
                .reset_query_pool(self.queries, 2 * slot as u32, 2)
        };
        if let Some(st) = &self.stamps {
            // SAFETY: the slot is idle (contract), so the device does not
            // write it now; 2 u64 per slot inside the mapping.
            unsafe { std::ptr::write_bytes(st.ptr.add(2 * slot), 0, 2) };
        }
    }

    /// Records and submits one package: `count` work-groups starting at
    /// work-group `base`. Returns its ticket.
    ///
    /// # Safety
    /// The slot reused by this submission is idle: the ticket `depth()`
    /// submissions back has completed (see [`DispatchRing::wait`]). `set` was
    /// made by `pipeline`, its buffers stay alive until this ticket
    /// completes, and `push` is exactly the pipeline's push-constant size.
    pub unsafe fn submit(
        &mut self,
        pipeline: &ComputePipeline,
        set: &BindingSet,
        push: &[u8],
        base: [u32; 3],
        count: [u32; 3],
    ) -> Result<u64, VkError> {
        let ticket = self.last + 1;
        let d = Dispatch {
            pipeline,
            set,
            push,
            base,
            count,
        };
        // SAFETY: the slot is idle and `d` is valid (function contract).
        let cb = unsafe { self.record(ticket, Some(d))? };
        // SAFETY: `cb` is fully recorded and not pending (slot idle); the
        // timeline is the ring's own, which outlives its submissions (Drop
        // drains them first); the ticket is one more than the last
        // signalled value.
        unsafe { self.device.submit(cb, self.timeline(), ticket)? };
        self.last = ticket;
        Ok(ticket)
    }

    /// Re-records the command buffer of `ticket`'s slot with `dispatch` (or
    /// with nothing, where `None`) and returns it, ready to submit.
    ///
    /// # Safety
    /// The slot is idle, and `dispatch` obeys the contract of
    /// [`DispatchRing::submit`].
    unsafe fn record(
        &self,
        ticket: u64,
        dispatch: Option<Dispatch<'_>>,
    ) -> Result<vk::CommandBuffer, VkError> {
        let raw = self.device.raw();
        let slot = (ticket as usize) % self.cbs.len();
        let cb = self.cbs[slot];
        let begin = vk::CommandBufferBeginInfo::default()
            .flags(vk::CommandBufferUsageFlags::ONE_TIME_SUBMIT);
        let r = {
            // SAFETY: the caller guarantees the slot is idle, so resetting and
            // re-recording its command buffer is allowed (the pool was created
            // with RESET_COMMAND_BUFFER).
            unsafe {
                raw.reset_command_buffer(cb, vk::CommandBufferResetFlags::empty())
                    .and_then(|_| raw.begin_command_buffer(cb, &begin))
            }
        };
        self.device.check(r.call("vkBeginCommandBuffer"))?;
        // The queries are reset here on the host, not by a command: a reset
        // command would sit on the device between this package and the one
        // before it. A slot recorded empty writes no stamps, so they read as
        // "no span".
        // SAFETY: the slot is idle (function contract).
        unsafe { self.clear_slot(slot) };
        if let Some(d) = dispatch {
            // SAFETY: `cb` is recording; `d` is valid (function contract).
            unsafe { self.record_dispatch(cb, slot, d) };
        }
        // SAFETY: `cb` is recording.
        let r = unsafe { raw.end_command_buffer(cb) }.call("vkEndCommandBuffer");
        self.device.check(r)?;
        Ok(cb)
    }

    /// Records one package's commands into `cb`: its stamps, the dispatch,
    /// and the barriers that make its writes visible to the host.
    ///
    /// # Safety
    /// `cb` is the recording command buffer of the idle `slot`; `d` obeys
    /// the contract of [`DispatchRing::submit`].
    unsafe fn record_dispatch(&self, cb: vk::CommandBuffer, slot: usize, d: Dispatch<'_>) {
        let raw = self.device.raw();
        let q = 2 * slot as u32;
        let barrier = vk::MemoryBarrier::default()
            .src_access_mask(vk::AccessFlags::SHADER_WRITE)
            .dst_access_mask(vk::AccessFlags::HOST_READ);
        // SAFETY: `cb` is in the recording state; see the function contract
        // for the pipeline, set and push-constant size.
        unsafe {
            if self.queries != vk::QueryPool::null() {
                raw.cmd_write_timestamp(cb, vk::PipelineStageFlags::TOP_OF_PIPE, self.queries, q);
            }
            raw.cmd_bind_pipeline(cb, vk::PipelineBindPoint::COMPUTE, d.pipeline.pipeline);
            raw.cmd_bind_descriptor_sets(
                cb,
                vk::PipelineBindPoint::COMPUTE,
                d.pipeline.layout,
                0,
                &[d.set.set],
                &[],
            );
            if !d.push.is_empty() {
                raw.cmd_push_constants(
                    cb,
                    d.pipeline.layout,
                    vk::ShaderStageFlags::COMPUTE,
                    0,
                    d.push,
                );
            }
            let (base, count) = (d.base, d.count);
            raw.cmd_dispatch_base(cb, base[0], base[1], base[2], count[0], count[1], count[2]);
            // Make the shader's writes visible to the host once the timeline
            // signal is observed.
            raw.cmd_pipeline_barrier(
                cb,
                vk::PipelineStageFlags::COMPUTE_SHADER,
                vk::PipelineStageFlags::HOST,
                vk::DependencyFlags::empty(),
                &[barrier],
                &[],
                &[],
            );
            if self.queries != vk::QueryPool::null() {
                raw.cmd_write_timestamp(
                    cb,
                    vk::PipelineStageFlags::BOTTOM_OF_PIPE,
                    self.queries,
                    q + 1,
                );
            }
            // Stamps exist only with a query pool (copy mode).
            if let Some(st) = &self.stamps {
                // Copy both stamps to the slot's place in host memory, and
                // make the copy visible to the host with the completion.
                raw.cmd_copy_query_pool_results(
                    cb,
                    self.queries,
                    q,
                    2,
                    st.buffer,
                    16 * slot as u64,
                    8,
                    vk::QueryResultFlags::TYPE_64 | vk::QueryResultFlags::WAIT,
                );
                let copied = vk::MemoryBarrier::default()
                    .src_access_mask(vk::AccessFlags::TRANSFER_WRITE)
                    .dst_access_mask(vk::AccessFlags::HOST_READ);
                raw.cmd_pipeline_barrier(
                    cb,
                    vk::PipelineStageFlags::TRANSFER,
                    vk::PipelineStageFlags::HOST,
                    vk::DependencyFlags::empty(),
                    &[copied],
                    &[],
                    &[],
                );
            }
        }
    }

    /// The ring's timeline semaphore.
    fn timeline(&self) -> &Timeline {
        self.sem.as_ref().expect("a built ring has its timeline")
    }

    /// Waits until `ticket` completed; `Ok(false)` on timeout.
    pub fn wait(&self, ticket: u64, timeout_ns: u64) -> Result<bool, VkError> {
        self.timeline().wait(ticket, timeout_ns)
    }

    /// `true` once `ticket` completed (does not block).
    pub fn is_complete(&self, ticket: u64) -> Result<bool, VkError> {
        Ok(self.timeline().value()? >= ticket)
    }

    /// The GPU span of `ticket`; `None` when the queue has no timestamps,
    /// when the ticket has not completed yet, and when its slot was reused
    /// since (only the last `depth()` tickets are kept).
    pub fn span(&self, ticket: u64) -> Result<Option<GpuSpan>, VkError> {
        if self.queries == vk::QueryPool::null()
            || ticket == 0
            || ticket > self.last
            || self.last - ticket >= self.cbs.len() as u64
            || !self.is_complete(ticket)?
        {
            return Ok(None);
        }
        let slot = (ticket as usize) % self.cbs.len();
        let data = match &self.stamps {
            // SAFETY: the ticket completed (checked above, on the timeline
            // its submission signals), and its command buffer's copy was
            // made visible to the host by the barrier recorded after it; no
            // later ticket reuses the slot (checked above: it is among the
            // last `depth` submissions, and only `&mut self` submits).
            // Volatile: the device, not this thread, wrote the memory.
            Some(st) => unsafe {
                [
                    st.ptr.add(2 * slot).read_volatile(),
                    st.ptr.add(2 * slot + 1).read_volatile(),
                ]
            },
            None => {
                let mut data = [0u64; 2];
                // SAFETY: live pool; the two queries of the slot; `data`
                // holds two 64-bit results. No WAIT: the ticket completed
                // (checked above),
                // so its stamps are available, and a slot whose submission
                // wrote none (reset on the host, see `clear_slot`) answers
                // NOT_READY instead of blocking.
                let r = unsafe {
                    self.device.raw().get_query_pool_results(
                        self.queries,
                        2 * slot as u32,
                        &mut data,
                        vk::QueryResultFlags::TYPE_64,
                    )
                };
                match r {
                    Err(vk::Result::NOT_READY) => return Ok(None),
                    r => {
                        self.device.check(r.call("vkGetQueryPoolResults"))?;
                        data
                    }
                }
            }
        };
        if data == [0, 0] || data[1] < data[0] {
            return Ok(None);
        }
        let period = f64::from(self.device.info().timestamp_period);
        Ok(Some(GpuSpan {
            start_ns: (data[0] as f64 * period) as u64,
            end_ns: (data[1] as f64 * period) as u64,
        }))
    }

    /// Submits a package that waits until the host signals timeline
    /// `blocker` to 1 and then runs `dispatch` (or nothing, where `None`): a
    /// GPU hang that can be ended, after which the package really writes its
    /// outputs. Test hook.
    ///
    /// (A timeline wait is a real blocking wait in every driver; lavapipe's
    /// `vkCmdWaitEvents` spins on a plain field and may never see the set.)
    ///
    /// # Safety
    /// As for [`DispatchRing::submit`] (idle slot, valid dispatch);
    /// `blocker` is a timeline of this device at a value below 1 that the
    /// caller signals before dropping it.
    #[cfg(feature = "test-hooks")]
    pub(crate) unsafe fn submit_blocked(
        &mut self,
        blocker: &Timeline,
        dispatch: Option<Dispatch<'_>>,
    ) -> Result<u64, VkError> {
        let ticket = self.last + 1;
        // SAFETY: the slot is idle and `dispatch` is valid (contract).
        let cb = unsafe { self.record(ticket, dispatch)? };
        let cbs = [cb];
        let waits = [blocker.raw()];
        let wait_values = [1u64];
        let stages = [vk::PipelineStageFlags::COMPUTE_SHADER];
        let signals = [self.timeline().raw()];
        let signal_values = [ticket];
        let mut timeline = vk::TimelineSemaphoreSubmitInfo::default()
            .wait_semaphore_values(&wait_values)
            .signal_semaphore_values(&signal_values);
        let submit = vk::SubmitInfo::default()
            .wait_semaphores(&waits)
            .wait_dst_stage_mask(&stages)
            .command_buffers(&cbs)
            .signal_semaphores(&signals)
            .push_next(&mut timeline);
        // SAFETY: `cb` is fully recorded and not pending (slot idle);
        // `blocker` outlives the submission (caller) and the ring's timeline
        // does (Drop drains first); the ticket is one more than the last
        // signalled value. The queue is only used by this ring's owner during
        // a run (the engine holds the ring's mutex), as for `Device::submit`.
        unsafe { self.device.submit_raw(&[submit])? };
        self.last = ticket;
        Ok(ticket)
    }

    /// Waits for everything submitted, up to `timeout_ns`; `Ok(false)` on timeout.
    pub fn drain(&self, timeout_ns: u64) -> Result<bool, VkError> {
        if self.last == 0 || self.sem.is_none() {
            return Ok(true);
        }
        self.wait(self.last, timeout_ns)
    }
}

impl Drop for DispatchRing {
    fn drop(&mut self) {
        // Never destroy objects the GPU may still use: wait (bounded) first;
        // if the wait fails (device lost) or times out, wait for the whole
        // device, which returns once nothing is pending or the device is lost.
        if !matches!(self.drain(10_000_000_000), Ok(true)) {
            let _ = self.device.wait_idle();
        }
        let raw = self.device.raw();
        // No submission of this ring is pending any more (see above).
        drop(self.sem.take());
        // SAFETY: as above: nothing pending uses these objects.
        unsafe {
            if self.queries != vk::QueryPool::null() {
                raw.destroy_query_pool(self.queries, None);
            }
            if let Some(st) = self.stamps.take() {
                raw.unmap_memory(st.memory);
                raw.destroy_buffer(st.buffer, None);
                raw.free_memory(st.memory, None);
            }
            raw.destroy_command_pool(self.pool, None);
        }
    }
}
