//! A raw Vulkan program, written with `ash` alone (none of the engine's
//! layers): one compute shader over device-local buffers, the host data in
//! host-visible staging buffers, and hand-written copies in and out. It is
//! the yardstick of section `gpu_local_vs_raw`: what a programmer who owns
//! the whole GPU gets from the same SPIR-V.
//!
//! Three ways to run it:
//! - [`RawLocal::resident`]: the data is already in device-local memory;
//!   one dispatch of the whole range and its wait.
//! - [`RawLocal::one_shot`] with one chunk: upload, dispatch, download in
//!   one command buffer (barriers between them), on the compute queue.
//! - [`RawLocal::one_shot`] with `chunks > 1`: the range split along one
//!   axis into chunks whose upload (transfer queue), compute (compute queue)
//!   and download (a second transfer queue, or the compute queue's second
//!   queue) overlap, ordered by one timeline semaphore per queue.

use ash::vk;
use std::time::Instant;

/// Which bytes of a binding a transfer moves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Part {
    /// None.
    Nothing,
    /// The whole buffer, before the first chunk (uploads) or after the
    /// last (downloads).
    Whole,
    /// `n` bytes per work-group slice along the chunked axis, with the
    /// chunk (clamped to the buffer's size).
    PerUnit(u64),
}

/// One storage buffer of the shader: its size and what moves each way.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Binding {
    pub(crate) bytes: u64,
    pub(crate) up: Part,
    pub(crate) down: Part,
}

/// A device-local buffer, its host-visible staging twin and the mapping.
struct Pair {
    local: vk::Buffer,
    local_mem: vk::DeviceMemory,
    host: vk::Buffer,
    host_mem: vk::DeviceMemory,
    ptr: *mut u8,
    spec: Binding,
}

/// Queues: (family, index) of the compute, upload and download queues.
struct Queues {
    compute: vk::Queue,
    up: vk::Queue,
    down: vk::Queue,
    families: Vec<u32>,
    compute_family: u32,
    up_family: u32,
    down_family: u32,
}

/// The raw program (see the module docs).
pub(crate) struct RawLocal {
    _entry: ash::Entry,
    instance: ash::Instance,
    device: ash::Device,
    q: Queues,
    pairs: Vec<Pair>,
    dsl: vk::DescriptorSetLayout,
    layout: vk::PipelineLayout,
    pipeline: vk::Pipeline,
    dpool: vk::DescriptorPool,
    set: vk::DescriptorSet,
    /// One command pool per queue family in use, with its family.
    pools: Vec<(u32, vk::CommandPool)>,
    /// One timeline per queue role (upload, compute, download) and the
    /// last value each was signalled with: a timeline's values must rise,
    /// and the three queues run concurrently.
    timelines: [vk::Semaphore; 3],
    values: [u64; 3],
    push: Vec<u8>,
    count: [u32; 3],
    axis: usize,
}

type R<T> = Result<T, String>;

/// Queue roles (indices into `RawLocal::timelines`).
const UP: usize = 0;
const COMPUTE: usize = 1;
const DOWN: usize = 2;

fn vkerr(what: &'static str) -> impl Fn(vk::Result) -> String {
    move |e| format!("raw Vulkan: {what}: {e}")
}

/// The index of a memory type in `bits` with `want`, preferring one that
/// also has `prefer` and lacks `avoid`.
fn memory_type(
    props: &vk::PhysicalDeviceMemoryProperties,
    bits: u32,
    want: vk::MemoryPropertyFlags,
    prefer: vk::MemoryPropertyFlags,
    avoid: vk::MemoryPropertyFlags,
) -> Option<u32> {
    let types = &props.memory_types[..props.memory_type_count as usize];
    let ok = |i: usize| bits & (1 << i) != 0 && types[i].property_flags.contains(want);
    let score = |i: usize| {
        let f = types[i].property_flags;
        u32::from(f.contains(prefer)) * 2 + u32::from(!f.intersects(avoid))
    };
    (0..types.len())
        .filter(|&i| ok(i))
        .max_by_key(|&i| (score(i), std::cmp::Reverse(i)))
        .map(|i| i as u32)
}

impl RawLocal {
    /// The program for SPIR-V `words` on Vulkan device `index` (the
    /// enumeration order `coexec info` prints), with these bindings (in
    /// binding order 0..), push constants and dispatch `count`; chunks split
    /// along `axis`.
    pub(crate) fn new(
        index: usize,
        words: &[u32],
        bindings: &[Binding],
        push: &[u8],
        count: [u32; 3],
        axis: usize,
    ) -> R<RawLocal> {
        // SAFETY: loading the system's Vulkan loader runs its initialisers;
        // the loader is the one the engine itself loads.
        let entry = unsafe { ash::Entry::load() }.map_err(|e| format!("raw Vulkan: {e}"))?;
        let app = vk::ApplicationInfo::default().api_version(vk::API_VERSION_1_2);
        let info = vk::InstanceCreateInfo::default().application_info(&app);
        // SAFETY: a valid create info with no extensions or layers.
        let instance =
            unsafe { entry.create_instance(&info, None) }.map_err(vkerr("create_instance"))?;
        let mut raw = Self::on_instance(entry, instance, index, words, bindings, push, count)?;
        raw.axis = axis.min(2);
        Ok(raw)
    }

    fn on_instance(
        entry: ash::Entry,
        instance: ash::Instance,
        index: usize,
        words: &[u32],
        bindings: &[Binding],
        push: &[u8],
        count: [u32; 3],
    ) -> R<RawLocal> {
        // SAFETY: `instance` is live.
        let pdevs = unsafe { instance.enumerate_physical_devices() }
            .map_err(vkerr("enumerate_physical_devices"))?;
        let pdev = *pdevs
            .get(index)
            .ok_or_else(|| format!("raw Vulkan: no device {index}"))?;
        // SAFETY: `pdev` came from this instance.
        let fams = unsafe { instance.get_physical_device_queue_family_properties(pdev) };
        let compute_family = fams
            .iter()
            .position(|f| f.queue_flags.contains(vk::QueueFlags::COMPUTE))
            .ok_or("raw Vulkan: no compute queue")? as u32;
        let transfer_family = fams
            .iter()
            .position(|f| {
                f.queue_flags.contains(vk::QueueFlags::TRANSFER)
                    && !f
                        .queue_flags
                        .intersects(vk::QueueFlags::COMPUTE | vk::QueueFlags::GRAPHICS)
            })
            .map_or(compute_family, |i| i as u32);
        let n_in = |f: u32| fams[f as usize].queue_count.min(2);
        let mut families = vec![compute_family];
        if transfer_family != compute_family {
            families.push(transfer_family);
        }
        let prio = [1.0f32, 1.0];
        let qinfos: Vec<_> = families
            .iter()
            .map(|&f| {
                vk::DeviceQueueCreateInfo::default()
                    .queue_family_index(f)
                    .queue_priorities(&prio[..n_in(f) as usize])
            })
            .collect();
        let mut v12 = vk::PhysicalDeviceVulkan12Features::default().timeline_semaphore(true);
        let dinfo = vk::DeviceCreateInfo::default()
            .queue_create_infos(&qinfos)
            .push_next(&mut v12);
        // SAFETY: the queue families and counts exist on `pdev`; timeline
        // semaphores are core in the 1.2 devices this bench targets (the
        // call fails cleanly where they are not).
        let device = unsafe { instance.create_device(pdev, &dinfo, None) }
            .map_err(vkerr("create_device"))?;
        // Upload on the transfer family's queue 0; download on its queue 1
        // where it has two, else on a second compute queue, else queue 0 of
        // the compute family (then downloads queue behind compute).
        let (down_family, down_index) =
            if transfer_family != compute_family && n_in(transfer_family) > 1 {
                (transfer_family, 1)
            } else if n_in(compute_family) > 1 {
                (compute_family, 1)
            } else {
                (compute_family, 0)
            };
        // SAFETY: each (family, index) pair was created above.
        let q = unsafe {
            Queues {
                compute: device.get_device_queue(compute_family, 0),
                up: device.get_device_queue(transfer_family, 0),
                down: device.get_device_queue(down_family, down_index),
                families,
                compute_family,
                up_family: transfer_family,
                down_family,
            }
        };
        // SAFETY: `pdev` came from this instance.
        let mem = unsafe { instance.get_physical_device_memory_properties(pdev) };
        let mut raw = RawLocal {
            _entry: entry,
            instance,
            device,
            q,
            pairs: Vec::new(),
            dsl: vk::DescriptorSetLayout::null(),
            layout: vk::PipelineLayout::null(),
            pipeline: vk::Pipeline::null(),
            dpool: vk::DescriptorPool::null(),
            set: vk::DescriptorSet::null(),
            pools: Vec::new(),
            timelines: [vk::Semaphore::null(); 3],
            values: [0; 3],
            push: push.to_vec(),
            count,
            axis: 0,
        };
        for b in bindings {
            let p = raw.pair(&mem, *b)?;
            raw.pairs.push(p);
        }
        raw.pipeline(words)?;
        raw.sync_objects()?;
        Ok(raw)
    }

    /// One buffer of `bytes` with `usage` bound to fresh memory of a type
    /// chosen by [`memory_type`].
    fn buffer(
        &self,
        mem: &vk::PhysicalDeviceMemoryProperties,
        bytes: u64,
        usage: vk::BufferUsageFlags,
        want: vk::MemoryPropertyFlags,
        prefer: vk::MemoryPropertyFlags,
        avoid: vk::MemoryPropertyFlags,
    ) -> R<(vk::Buffer, vk::DeviceMemory)> {
        let d = &self.device;
        let mut info = vk::BufferCreateInfo::default().size(bytes).usage(usage);
        info = if self.q.families.len() > 1 {
            info.sharing_mode(vk::SharingMode::CONCURRENT)
                .queue_family_indices(&self.q.families)
        } else {
            info.sharing_mode(vk::SharingMode::EXCLUSIVE)
        };
        // SAFETY: a valid create info on a live device.
        let buf = unsafe { d.create_buffer(&info, None) }.map_err(vkerr("create_buffer"))?;
        // SAFETY: `buf` is live.
        let req = unsafe { d.get_buffer_memory_requirements(buf) };
        let ty = memory_type(mem, req.memory_type_bits, want, prefer, avoid)
            .ok_or("raw Vulkan: no suitable memory type")?;
        let ai = vk::MemoryAllocateInfo::default()
            .allocation_size(req.size)
            .memory_type_index(ty);
        // SAFETY: the type index is one the buffer accepts.
        let m = unsafe { d.allocate_memory(&ai, None) }.map_err(vkerr("allocate_memory"))?;
        // SAFETY: fresh memory of the required size, offset 0.
        unsafe { d.bind_buffer_memory(buf, m, 0) }.map_err(vkerr("bind_buffer_memory"))?;
        Ok((buf, m))
    }

    fn pair(&self, mem: &vk::PhysicalDeviceMemoryProperties, spec: Binding) -> R<Pair> {
        type U = vk::BufferUsageFlags;
        type M = vk::MemoryPropertyFlags;
        let bytes = spec.bytes.max(4);
        let (local, local_mem) = self.buffer(
            mem,
            bytes,
            U::STORAGE_BUFFER | U::TRANSFER_SRC | U::TRANSFER_DST,
            M::DEVICE_LOCAL,
            M::empty(),
            M::HOST_VISIBLE,
        )?;
        let (host, host_mem) = self.buffer(
            mem,
            bytes,
            U::TRANSFER_SRC | U::TRANSFER_DST,
            M::HOST_VISIBLE | M::HOST_COHERENT,
            M::HOST_CACHED,
            M::empty(),
        )?;
        // SAFETY: host-visible memory, mapped once for the program's life.
        let ptr = unsafe {
            self.device
                .map_memory(host_mem, 0, vk::WHOLE_SIZE, vk::MemoryMapFlags::empty())
        }
        .map_err(vkerr("map_memory"))? as *mut u8;
        Ok(Pair {
            local,
            local_mem,
            host,
            host_mem,
            ptr,
            spec: Binding { bytes, ..spec },
        })
    }

    fn pipeline(&mut self, words: &[u32]) -> R<()> {
        let d = &self.device;
        let n = self.pairs.len() as u32;
        let lb: Vec<_> = (0..n)
            .map(|i| {
                vk::DescriptorSetLayoutBinding::default()
                    .binding(i)
                    .descriptor_type(vk::DescriptorType::STORAGE_BUFFER)
                    .descriptor_count(1)
                    .stage_flags(vk::ShaderStageFlags::COMPUTE)
            })
            .collect();
        let li = vk::DescriptorSetLayoutCreateInfo::default().bindings(&lb);
        // SAFETY: (every call in this block) valid create infos on a live device;
        // every handle passed was created above on it.
        unsafe {
            self.dsl = d
                .create_descriptor_set_layout(&li, None)
                .map_err(vkerr("create_descriptor_set_layout"))?;
            let ranges = [vk::PushConstantRange::default()
                .stage_flags(vk::ShaderStageFlags::COMPUTE)
                .size(self.push.len() as u32)];
            let sets = [self.dsl];
            let mut pli = vk::PipelineLayoutCreateInfo::default().set_layouts(&sets);
            if !self.push.is_empty() {
                pli = pli.push_constant_ranges(&ranges);
            }
            self.layout = d
                .create_pipeline_layout(&pli, None)
                .map_err(vkerr("create_pipeline_layout"))?;
            let smi = vk::ShaderModuleCreateInfo::default().code(words);
            let module = d
                .create_shader_module(&smi, None)
                .map_err(vkerr("create_shader_module"))?;
            let name = c"main";
            let stage = vk::PipelineShaderStageCreateInfo::default()
                .stage(vk::ShaderStageFlags::COMPUTE)
                .module(module)
                .name(name);
            let ci = [vk::ComputePipelineCreateInfo::default()
                .flags(vk::PipelineCreateFlags::DISPATCH_BASE)
                .stage(stage)
                .layout(self.layout)];
            let made = d.create_compute_pipelines(vk::PipelineCache::null(), &ci, None);
            d.destroy_shader_module(module, None);
            self.pipeline = made.map_err(|(_, e)| vkerr("create_compute_pipelines")(e))?[0];
            let sizes = [vk::DescriptorPoolSize::default()
                .ty(vk::DescriptorType::STORAGE_BUFFER)
                .descriptor_count(n.max(1))];
            let pi = vk::DescriptorPoolCreateInfo::default()
                .max_sets(1)
                .pool_sizes(&sizes);
            self.dpool = d
                .create_descriptor_pool(&pi, None)
                .map_err(vkerr("create_descriptor_pool"))?;
            let ai = vk::DescriptorSetAllocateInfo::default()
                .descriptor_pool(self.dpool)
                .set_layouts(&sets);
            self.set = d
                .allocate_descriptor_sets(&ai)
                .map_err(vkerr("allocate_descriptor_sets"))?[0];
            let infos: Vec<[vk::DescriptorBufferInfo; 1]> = self
                .pairs
                .iter()
                .map(|p| {
                    [vk::DescriptorBufferInfo::default()
                        .buffer(p.local)
                        .range(vk::WHOLE_SIZE)]
                })
                .collect();
            let writes: Vec<_> = infos
                .iter()
                .enumerate()
                .map(|(i, info)| {
                    vk::WriteDescriptorSet::default()
                        .dst_set(self.set)
                        .dst_binding(i as u32)
                        .descriptor_type(vk::DescriptorType::STORAGE_BUFFER)
                        .buffer_info(info)
                })
                .collect();
            d.update_descriptor_sets(&writes, &[]);
        }
        Ok(())
    }

    fn sync_objects(&mut self) -> R<()> {
        let d = &self.device;
        let mut fams = vec![self.q.compute_family, self.q.up_family, self.q.down_family];
        fams.sort_unstable();
        fams.dedup();
        let mut ti = vk::SemaphoreTypeCreateInfo::default()
            .semaphore_type(vk::SemaphoreType::TIMELINE)
            .initial_value(0);
        // SAFETY: (every call in this block) valid create infos on a live device.
        unsafe {
            for f in fams {
                let ci = vk::CommandPoolCreateInfo::default()
                    .queue_family_index(f)
                    .flags(vk::CommandPoolCreateFlags::RESET_COMMAND_BUFFER);
                let pool = d.create_command_pool(&ci, None).map_err(vkerr("pool"))?;
                self.pools.push((f, pool));
            }
            for t in &mut self.timelines {
                let si = vk::SemaphoreCreateInfo::default().push_next(&mut ti);
                *t = d.create_semaphore(&si, None).map_err(vkerr("semaphore"))?;
            }
        }
        Ok(())
    }

    /// The staging bytes of binding `i` (what the host reads and writes).
    pub(crate) fn host(&mut self, i: usize) -> &mut [u8] {
        let p = &self.pairs[i];
        // SAFETY: `ptr` maps `bytes` bytes of host-coherent memory for the
        // program's life; `&mut self` keeps the GPU from running (every
        // method that submits waits before it returns).
        unsafe { std::slice::from_raw_parts_mut(p.ptr, p.spec.bytes as usize) }
    }

    fn pool(&self, family: u32) -> vk::CommandPool {
        self.pools
            .iter()
            .find(|&&(f, _)| f == family)
            .map_or(self.pools[0].1, |&(_, p)| p)
    }

    fn begin(&self, family: u32) -> R<vk::CommandBuffer> {
        let ai = vk::CommandBufferAllocateInfo::default()
            .command_pool(self.pool(family))
            .level(vk::CommandBufferLevel::PRIMARY)
            .command_buffer_count(1);
        // SAFETY: a pool of this device; the buffer is recorded once.
        unsafe {
            let cb = self
                .device
                .allocate_command_buffers(&ai)
                .map_err(vkerr("cb"))?[0];
            self.device
                .begin_command_buffer(
                    cb,
                    &vk::CommandBufferBeginInfo::default()
                        .flags(vk::CommandBufferUsageFlags::ONE_TIME_SUBMIT),
                )
                .map_err(vkerr("begin"))?;
            Ok(cb)
        }
    }

    /// A global barrier from `src` stage/access to `dst`.
    fn barrier(
        &self,
        cb: vk::CommandBuffer,
        src: (vk::PipelineStageFlags, vk::AccessFlags),
        dst: (vk::PipelineStageFlags, vk::AccessFlags),
    ) {
        let mb = [vk::MemoryBarrier::default()
            .src_access_mask(src.1)
            .dst_access_mask(dst.1)];
        // SAFETY: `cb` is recording.
        unsafe {
            self.device.cmd_pipeline_barrier(
                cb,
                src.0,
                dst.0,
                vk::DependencyFlags::empty(),
                &mb,
                &[],
                &[],
            )
        };
    }

    /// The byte range `[off, off + len)` of a binding's part for the chunk of
    /// units `[u0, u1)` (whole parts only with `whole`).
    fn range(part: Part, bytes: u64, units: (u64, u64), whole: bool) -> Option<(u64, u64)> {
        match part {
            Part::Nothing => None,
            Part::Whole => whole.then_some((0, bytes)),
            Part::PerUnit(per) => {
                let a = (units.0 * per).min(bytes);
                let b = (units.1 * per).min(bytes);
                (b > a).then_some((a, b - a))
            }
        }
    }

    /// Records the copies of chunk `units` in one direction into `cb`.
    fn copies(&self, cb: vk::CommandBuffer, up: bool, units: (u64, u64), whole: bool) -> bool {
        let mut any = false;
        for p in &self.pairs {
            let part = if up { p.spec.up } else { p.spec.down };
            if let Some((off, len)) = Self::range(part, p.spec.bytes, units, whole) {
                let r = [vk::BufferCopy::default()
                    .src_offset(off)
                    .dst_offset(off)
                    .size(len)];
                let (s, d) = if up {
                    (p.host, p.local)
                } else {
                    (p.local, p.host)
                };
                // SAFETY: `cb` is recording; both buffers hold the range.
                unsafe { self.device.cmd_copy_buffer(cb, s, d, &r) };
                any = true;
            }
        }
        any
    }

    /// Records the dispatch of units `[u0, u1)` along the axis.
    fn dispatch(&self, cb: vk::CommandBuffer, units: (u64, u64)) {
        let mut base = [0u32; 3];
        let mut count = self.count;
        base[self.axis] = units.0 as u32;
        count[self.axis] = (units.1 - units.0) as u32;
        // SAFETY: `cb` is recording; the pipeline, layout and set belong to
        // this device, the push bytes match the layout's range.
        unsafe {
            let d = &self.device;
            d.cmd_bind_pipeline(cb, vk::PipelineBindPoint::COMPUTE, self.pipeline);
            d.cmd_bind_descriptor_sets(
                cb,
                vk::PipelineBindPoint::COMPUTE,
                self.layout,
                0,
                &[self.set],
                &[],
            );
            if !self.push.is_empty() {
                d.cmd_push_constants(
                    cb,
                    self.layout,
                    vk::ShaderStageFlags::COMPUTE,
                    0,
                    &self.push,
                );
            }
            d.cmd_dispatch_base(cb, base[0], base[1], base[2], count[0], count[1], count[2]);
        }
    }

    /// Ends `cb` and submits it on the queue of `role` (0 upload, 1
    /// compute, 2 download), after timeline `wait` = (role, value) if
    /// given; signals the role's timeline with its next value, returned.
    fn submit(&mut self, role: usize, cb: vk::CommandBuffer, wait: Option<(usize, u64)>) -> R<u64> {
        self.values[role] += 1;
        let signal = self.values[role];
        let queue = [self.q.up, self.q.compute, self.q.down][role];
        let sig_sems = [self.timelines[role]];
        let sig_vals = [signal];
        let (wait_sems, wait_vals) = match wait {
            Some((r, v)) => (vec![self.timelines[r]], vec![v]),
            None => (Vec::new(), Vec::new()),
        };
        let stages = vec![vk::PipelineStageFlags::ALL_COMMANDS; wait_sems.len()];
        let cbs = [cb];
        let mut ts = vk::TimelineSemaphoreSubmitInfo::default()
            .signal_semaphore_values(&sig_vals)
            .wait_semaphore_values(&wait_vals);
        let si = [vk::SubmitInfo::default()
            .command_buffers(&cbs)
            .signal_semaphores(&sig_sems)
            .wait_semaphores(&wait_sems)
            .wait_dst_stage_mask(&stages)
            .push_next(&mut ts)];
        // SAFETY: `cb` was recorded for this queue's family; the semaphores
        // are timelines of this device, and `signal` is above every value
        // this role's timeline was signalled with before (only this queue
        // signals it, in `values` order).
        unsafe {
            self.device.end_command_buffer(cb).map_err(vkerr("end"))?;
            self.device
                .queue_submit(queue, &si, vk::Fence::null())
                .map_err(vkerr("queue_submit"))?;
        }
        Ok(signal)
    }

    /// Waits until every timeline reaches its last signalled value, then
    /// frees every command buffer.
    fn finish(&mut self) -> R<()> {
        let wi = vk::SemaphoreWaitInfo::default()
            .semaphores(&self.timelines)
            .values(&self.values);
        // SAFETY: the semaphores are live and every value was submitted;
        // after the wait no command buffer of the pools is pending, so
        // resetting them is allowed.
        unsafe {
            self.device
                .wait_semaphores(&wi, 600_000_000_000)
                .map_err(vkerr("wait_semaphores"))?;
            for &(_, p) in &self.pools {
                self.device
                    .reset_command_pool(p, vk::CommandPoolResetFlags::empty())
                    .map_err(vkerr("reset_command_pool"))?;
            }
        }
        Ok(())
    }

    fn units(&self) -> u64 {
        u64::from(self.count[self.axis])
    }

    /// Copies every uploaded part to device-local memory (the data made
    /// resident) and waits.
    pub(crate) fn upload(&mut self) -> R<()> {
        let cb = self.begin(self.q.up_family)?;
        self.copies(cb, true, (0, self.units()), true);
        self.submit(UP, cb, None)?;
        self.finish()
    }

    /// One dispatch of the whole range over resident data and its wait:
    /// wall seconds (recording included, as a program would pay it).
    pub(crate) fn resident(&mut self) -> R<f64> {
        let t = Instant::now();
        let cb = self.begin(self.q.compute_family)?;
        self.dispatch(cb, (0, self.units()));
        self.submit(COMPUTE, cb, None)?;
        self.finish()?;
        Ok(t.elapsed().as_secs_f64())
    }

    /// Upload, compute, download of the whole range from and to the staging
    /// buffers, in `chunks` overlapped chunks (1: one command buffer, no
    /// overlap): wall seconds.
    pub(crate) fn one_shot(&mut self, chunks: u64) -> R<f64> {
        let t = Instant::now();
        if chunks <= 1 {
            self.one_shot_serial()?;
        } else {
            self.one_shot_overlapped(chunks)?;
        }
        Ok(t.elapsed().as_secs_f64())
    }

    fn one_shot_serial(&mut self) -> R<()> {
        type S = vk::PipelineStageFlags;
        type A = vk::AccessFlags;
        let all = (0, self.units());
        let cb = self.begin(self.q.compute_family)?;
        self.copies(cb, true, all, true);
        self.barrier(
            cb,
            (S::TRANSFER, A::TRANSFER_WRITE),
            (S::COMPUTE_SHADER, A::SHADER_READ | A::SHADER_WRITE),
        );
        self.dispatch(cb, all);
        self.barrier(
            cb,
            (S::COMPUTE_SHADER, A::SHADER_WRITE),
            (S::TRANSFER, A::TRANSFER_READ),
        );
        self.copies(cb, false, all, true);
        self.barrier(
            cb,
            (S::TRANSFER, A::TRANSFER_WRITE),
            (S::HOST, A::HOST_READ),
        );
        self.submit(COMPUTE, cb, None)?;
        self.finish()
    }

    /// Chunk `i` of `n`: uploads on the upload queue, the dispatch on the
    /// compute queue after them, the download on the download queue after
    /// the dispatch; whole parts go up with the first chunk and down after
    /// the last.
    fn one_shot_overlapped(&mut self, n: u64) -> R<()> {
        type S = vk::PipelineStageFlags;
        type A = vk::AccessFlags;
        let units = self.units();
        let n = n.min(units.max(1));
        for i in 0..n {
            let range = (units * i / n, units * (i + 1) / n);
            let up = self.begin(self.q.up_family)?;
            self.copies(up, true, range, i == 0);
            let up_v = self.submit(UP, up, None)?;
            let comp = self.begin(self.q.compute_family)?;
            self.dispatch(comp, range);
            // The upload queue runs its submissions in order and its
            // timeline rises with them: waiting for `up_v` covers the
            // earlier chunks' uploads too (the whole parts among them).
            let comp_v = self.submit(COMPUTE, comp, Some((UP, up_v)))?;
            let down = self.begin(self.q.down_family)?;
            if self.copies(down, false, range, false) {
                self.barrier(
                    down,
                    (S::TRANSFER, A::TRANSFER_WRITE),
                    (S::HOST, A::HOST_READ),
                );
            }
            self.submit(DOWN, down, Some((COMPUTE, comp_v)))?;
        }
        // Whole downloads after every chunk's compute.
        let down = self.begin(self.q.down_family)?;
        if self.copies(down, false, (0, 0), true) {
            self.barrier(
                down,
                (S::TRANSFER, A::TRANSFER_WRITE),
                (S::HOST, A::HOST_READ),
            );
        }
        let last = self.values[COMPUTE];
        self.submit(DOWN, down, Some((COMPUTE, last)))?;
        self.finish()
    }
}

impl Drop for RawLocal {
    fn drop(&mut self) {
        // SAFETY: every submission was waited for (each method waits before
        // it returns); the handles belong to this device and are destroyed
        // once, children before the device and the device before the
        // instance.
        unsafe {
            let d = &self.device;
            let _ = d.device_wait_idle();
            for &t in &self.timelines {
                d.destroy_semaphore(t, None);
            }
            for &(_, p) in &self.pools {
                d.destroy_command_pool(p, None);
            }
            d.destroy_descriptor_pool(self.dpool, None);
            d.destroy_pipeline(self.pipeline, None);
            d.destroy_pipeline_layout(self.layout, None);
            d.destroy_descriptor_set_layout(self.dsl, None);
            for p in &self.pairs {
                d.unmap_memory(p.host_mem);
                d.destroy_buffer(p.local, None);
                d.destroy_buffer(p.host, None);
                d.free_memory(p.local_mem, None);
                d.free_memory(p.host_mem, None);
            }
            d.destroy_device(None);
            self.instance.destroy_instance(None);
        }
    }
}
