//! Logical device: one compute queue (and a transfer queue where
//! [`super::queues`] chooses one), its completion tracking
//! ([`SyncMode`]), command and query objects. Each wrapper method is one Vulkan call in one small `unsafe` block.

use super::primer::{PrimeTarget, Primer};
use super::queues::{self, QueueLane};
use super::{
    DriverEmulation, Instance, PhysicalDeviceInfo, PipelineCache, SyncMode, Timeline, TransferQueue,
};
use crate::error::{Error, Result, VkError, VkResultExt};
use ash::vk;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// Options for creating a [`Device`].
#[derive(Debug, Clone, Default)]
pub struct DeviceOptions {
    /// Directory of the on-disk pipeline cache; `None` uses
    /// `$COEXEC_CACHE_DIR`, else the user's cache directory (`~/.cache/coexec`).
    /// An empty path disables the on-disk cache.
    pub pipeline_cache_dir: Option<PathBuf>,
    /// A testing aid: the device is used as the emulated older driver
    /// would offer it ([`DriverEmulation`]).
    pub driver: DriverEmulation,
    /// Where staged transfers are submitted ([`TransferQueue`]).
    pub transfer_queue: TransferQueue,
}

/// A logical Vulkan device with one compute queue, and a transfer queue
/// where it has a transfer-only family (see [`TransferQueue`]).
pub struct Device {
    instance: Arc<Instance>,
    info: PhysicalDeviceInfo,
    raw: ash::Device,
    queue: Mutex<vk::Queue>,
    family: u32,
    /// The transfer queue, where it is not the compute queue.
    transfer_queue: Option<Mutex<vk::Queue>>,
    /// Its family (the compute family where they share a queue).
    transfer_family: u32,
    /// Transfers are ordered with dispatches by semaphores alone (see
    /// [`super::queues`]).
    separate_transfers: bool,
    /// Only a lone GPU's runs transfer on the transfer queue; the others,
    /// and lazy downloads, on the compute queue ([`TransferQueue::Auto`]).
    transfers_lone_only: bool,
    timestamp_bits: u32,
    lost: AtomicBool,
    /// `vkQueueSubmit` calls made so far, on any of its queues (see
    /// [`Device::submissions`]).
    submissions: AtomicU64,
    cache: PipelineCache,
    /// `VK_EXT_external_memory_host` entry points, when the extension is enabled.
    memory_host: Option<ash::ext::external_memory_host::Device>,
    /// How submissions signal completion, chosen at creation.
    sync: SyncMode,
    /// `VK_KHR_timeline_semaphore` entry points, in [`SyncMode::TimelineKhr`].
    timeline_khr: Option<ash::khr::timeline_semaphore::Device>,
    /// Binds each new pipeline once, made on first use (see
    /// [`super::primer`]).
    primer: Mutex<Option<Primer>>,
    /// Pipelines primed so far.
    primed: AtomicU64,
}

impl std::fmt::Debug for Device {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Device")
            .field("name", &self.info.name)
            .field("type", &self.info.device_type)
            .field("queue_family", &self.family)
            .finish()
    }
}

impl Device {
    /// Creates a logical device on `info` with one queue of its compute family
    /// and the completion tracking of its [`SyncMode`]: timeline semaphores
    /// and host query reset on a Vulkan 1.2 device, `VK_KHR_timeline_semaphore`
    /// on a 1.1 device that has it, else fences (and, below 1.2, no GPU
    /// timestamps: they are reset on the host).
    ///
    /// `info` only names the device: every fact used is read again from
    /// `instance`, and a device `instance` did not enumerate is an
    /// [`Error::NoDevice`].
    pub fn new(
        instance: Arc<Instance>,
        info: PhysicalDeviceInfo,
        opts: &DeviceOptions,
    ) -> Result<Arc<Device>> {
        // The facts are read again from the driver: `info` is a plain value
        // that its holder may have changed (a feature flag set on a device
        // without it) or taken from another instance, and the device is
        // created from what it says.
        let mut info = instance
            .physical_devices()?
            .into_iter()
            .find(|d| d.handle == info.handle)
            .ok_or_else(|| {
                Error::NoDevice(format!(
                    "{} is not a usable device of this instance (Vulkan 1.1 with compute)",
                    info.name
                ))
            })?;
        opts.driver.apply(&mut info);
        if let Some(reason) = info.unusable_reason() {
            return Err(Error::NoDevice(format!("{}: {reason}", info.name)));
        }
        let sync = info.sync_mode();
        let family = info
            .compute_family()
            .ok_or_else(|| Error::NoDevice(format!("{} has no compute queue family", info.name)))?;
        let xfer = queues::plan(&info, family.index, opts.transfer_queue, sync);
        let priorities = [1.0f32, 1.0];
        let mut queues = vec![vk::DeviceQueueCreateInfo::default()
            .queue_family_index(family.index)
            .queue_priorities(&priorities[..1])];
        match xfer.queue {
            // A second queue of the compute family.
            Some((f, 1)) if f == family.index => {
                queues[0] = queues[0].queue_priorities(&priorities[..2]);
            }
            Some((f, _)) => queues.push(
                vk::DeviceQueueCreateInfo::default()
                    .queue_family_index(f)
                    .queue_priorities(&priorities[..1]),
            ),
            None => {}
        }
        let mut v12 = vk::PhysicalDeviceVulkan12Features::default()
            .timeline_semaphore(true)
            .host_query_reset(true);
        let mut khr = vk::PhysicalDeviceTimelineSemaphoreFeatures::default().timeline_semaphore(true);
        let mut m4 = vk::PhysicalDeviceMaintenance4Features::default().maintenance4(true);
        let mut create = vk::DeviceCreateInfo::default().queue_create_infos(&queues);
        match sync {
            SyncMode::Timeline => create = create.push_next(&mut v12),
            SyncMode::TimelineKhr => create = create.push_next(&mut khr),
            SyncMode::Fences => {}
        }
        if info.maintenance4 {
            create = create.push_next(&mut m4);
        }
        // VK_EXT_external_memory_host (for importing host memory, see
        // `UnifiedMemory::import_host`); its dependency VK_KHR_external_memory
        // is core in Vulkan 1.1.
        // VK_EXT_memory_budget (heap budgets for staged mirrors, see
        // `Device::heap_budget`).
        let extensions: Vec<*const std::ffi::c_char> = [
            (info.external_memory_host, ash::ext::external_memory_host::NAME),
            (info.memory_budget, ash::ext::memory_budget::NAME),
            (
                sync == SyncMode::TimelineKhr,
                ash::khr::timeline_semaphore::NAME,
            ),
        ]
        .iter()
        .filter(|(on, _)| *on)
        .map(|(_, name)| name.as_ptr())
        .collect();
        if !extensions.is_empty() {
            create = create.enabled_extension_names(&extensions);
        }
        // SAFETY: `info.handle` was enumerated from `instance`, which is alive;
        // the create info and its chain live until the call returns, and only
        // features the device reports (timeline semaphores and host query
        // reset are required by Vulkan 1.2, timeline semaphores by their
        // extension; maintenance4 is checked) and extensions it reports are
        // asked.
        let raw = unsafe { instance.raw().create_device(info.handle, &create, None) }
            .call("vkCreateDevice")?;
        let memory_host = info
            .external_memory_host
            .then(|| ash::ext::external_memory_host::Device::new(instance.raw(), &raw));
        let timeline_khr = (sync == SyncMode::TimelineKhr)
            .then(|| ash::khr::timeline_semaphore::Device::new(instance.raw(), &raw));
        // Host query reset (for timestamps) is core 1.2 only.
        let timestamp_bits = if info.api_version >= vk::API_VERSION_1_2 {
            family.timestamp_bits
        } else {
            0
        };
        // SAFETY: the family and queue index 0 were requested at creation.
        let queue = unsafe { raw.get_device_queue(family.index, 0) };
        let mut transfer_queue = None;
        if let Some((f, i)) = xfer.queue {
            // SAFETY: this family and queue index were requested at creation.
            transfer_queue = Some(Mutex::new(unsafe { raw.get_device_queue(f, i) }));
        }
        let cache = PipelineCache::open(&raw, &info, opts.pipeline_cache_dir.as_deref());
        Ok(Arc::new(Device {
            instance,
            info,
            raw,
            queue: Mutex::new(queue),
            family: family.index,
            transfer_queue,
            transfer_family: xfer.queue.map_or(family.index, |(f, _)| f),
            separate_transfers: xfer.separate,
            transfers_lone_only: xfer.lone_only,
            timestamp_bits,
            lost: AtomicBool::new(false),
            submissions: AtomicU64::new(0),
            cache,
            memory_host,
            sync,
            timeline_khr,
            primer: Mutex::new(None),
            primed: AtomicU64::new(0),
        }))
    }

    /// Primes a new pipeline (see [`super::primer`]): binds it in a command
    /// buffer that is never submitted, then submits a dispatch of zero
    /// work-groups of it, not waited for. A failure of the dispatch leaves
    /// the bind done.
    ///
    /// # Safety
    /// `target`'s objects are live objects of this device, its bindings
    /// those of its set layout; its pipeline is destroyed only after
    /// [`Device::settle_prime`] returned for it.
    pub(super) unsafe fn prime(&self, target: PrimeTarget<'_>) -> Result<(), VkError> {
        let mut primer = self.primer.lock().unwrap_or_else(|p| p.into_inner());
        let primer = match &mut *primer {
            Some(p) => p,
            empty => {
                let types = &self.info.memory_types;
                // SAFETY: this device is live, `family` is its compute
                // queue's family and `types` its memory types.
                empty.insert(self.check(unsafe { Primer::new(&self.raw, self.family, types) })?)
            }
        };
        // SAFETY: made on this device; the lock keeps other threads out;
        // the pipeline per the function contract.
        self.check(unsafe { primer.bind(&self.raw, target.pipeline) })?;
        // Relaxed: a statistic, ordered with nothing.
        self.primed.fetch_add(1, Ordering::Relaxed);
        let submit = |cb, fence| {
            // SAFETY: `cb` was fully recorded by the primer and is not
            // pending; `fence` is its slot's unsignalled fence, kept
            // until the submission completed.
            unsafe { self.submit_fenced(cb, fence) }
        };
        // SAFETY: as above; the submission goes to the compute queue (of
        // the primer's family) with the slot's fence, and the pipeline
        // outlives it by the function contract.
        self.check(unsafe { primer.dispatch(&self.raw, target, submit) })
    }

    /// Waits until no priming dispatch of `pipeline` is pending (see
    /// [`Device::prime`]), or the device is lost.
    pub(super) fn settle_prime(&self, pipeline: vk::Pipeline) {
        let mut primer = self.primer.lock().unwrap_or_else(|p| p.into_inner());
        let Some(primer) = primer.as_mut() else {
            return;
        };
        let step = std::time::Duration::from_millis(100);
        // SAFETY: made on this device; the lock keeps other threads out.
        let r = unsafe { primer.settle(&self.raw, pipeline, step, || !self.is_lost()) };
        if let Err(e) = self.check(r) {
            tracing::debug!(error = %e, "a priming dispatch could not be waited for");
        }
    }

    /// Pipelines primed on this device so far (see [`Device::prime`]).
    pub fn primed(&self) -> u64 {
        // Relaxed: as in `prime`.
        self.primed.load(Ordering::Relaxed)
    }

    /// How many times work was submitted to the device's queues
    /// (`vkQueueSubmit` calls, successful or not) since it was created: a
    /// run in which the device sits out adds none.
    pub fn submissions(&self) -> u64 {
        // Relaxed: a statistic; each count is a single RMW, and readers
        // that need the count of a finished run read it after joining the
        // threads that submitted (the join orders it).
        self.submissions.load(Ordering::Relaxed)
    }

    /// Counts one `vkQueueSubmit` call.
    fn count_submission(&self) {
        // Relaxed: see `submissions`.
        self.submissions.fetch_add(1, Ordering::Relaxed);
    }

    /// The ash device.
    pub fn raw(&self) -> &ash::Device {
        &self.raw
    }

    /// The instance this device belongs to.
    pub fn instance(&self) -> &Arc<Instance> {
        &self.instance
    }

    /// Facts about the physical device.
    pub fn info(&self) -> &PhysicalDeviceInfo {
        &self.info
    }

    /// `VK_EXT_external_memory_host` entry points; `None` when the device
    /// does not support the extension (it is enabled whenever supported).
    pub(crate) fn memory_host(&self) -> Option<&ash::ext::external_memory_host::Device> {
        self.memory_host.as_ref()
    }

    /// `(usage, budget)` in bytes of memory heap `heap` as
    /// `VK_EXT_memory_budget` estimates them now; `None` without the
    /// extension or for a heap the device does not have.
    pub fn heap_budget(&self, heap: u32) -> Option<(u64, u64)> {
        if !self.info.memory_budget || heap as usize >= self.info.heaps.len() {
            return None;
        }
        let mut budget = vk::PhysicalDeviceMemoryBudgetPropertiesEXT::default();
        let mut props = vk::PhysicalDeviceMemoryProperties2::default().push_next(&mut budget);
        // SAFETY: Vulkan 1.1+ query on a physical device of this live
        // instance; the chain holds a structure of an extension the device
        // supports and enabled.
        unsafe {
            self.instance
                .raw()
                .get_physical_device_memory_properties2(self.info.handle, &mut props)
        };
        let h = heap as usize;
        Some((budget.heap_usage[h], budget.heap_budget[h]))
    }

    /// How this device's submissions signal completion.
    pub fn sync_mode(&self) -> SyncMode {
        self.sync
    }

    /// `VK_KHR_timeline_semaphore` entry points, in [`SyncMode::TimelineKhr`]
    /// (the core ones otherwise).
    pub(crate) fn timeline_khr(&self) -> Option<&ash::khr::timeline_semaphore::Device> {
        self.timeline_khr.as_ref()
    }

    /// The queue family used.
    pub fn queue_family(&self) -> u32 {
        self.family
    }

    /// The queue family of the transfer queue (the compute family where
    /// transfers go to the compute queue).
    pub fn transfer_family(&self) -> u32 {
        self.transfer_family
    }

    /// `true` where staged transfers are ordered with the dispatches by
    /// semaphores alone (a separate transfer queue, or the protocol forced
    /// by [`TransferQueue::Separate`]; see [`super::queues`]).
    pub fn separate_transfers(&self) -> bool {
        self.separate_transfers
    }

    /// `true` where only a lone GPU's runs transfer on the transfer queue
    /// (see [`TransferQueue::Auto`]): runs shared with other devices, and
    /// the buffers' lazy downloads, transfer on the compute queue
    /// ([`QueueLane::ComputeCopies`]).
    pub fn transfers_lone_only(&self) -> bool {
        self.separate_transfers && self.transfers_lone_only
    }

    /// The lane of the transfers of runs shared with other devices, and of
    /// the buffers' lazy downloads.
    pub(crate) fn shared_copies_lane(&self) -> QueueLane {
        if self.transfers_lone_only() {
            QueueLane::ComputeCopies
        } else {
            QueueLane::Transfer
        }
    }

    /// `true` where the transfer queue is a queue other than the compute
    /// queue.
    pub fn has_transfer_queue(&self) -> bool {
        self.transfer_queue.is_some()
    }

    /// The two families a buffer is shared `CONCURRENT` between, where
    /// transfers use a family other than the compute family.
    pub(crate) fn concurrent_families(&self) -> Option<[u32; 2]> {
        (self.transfer_family != self.family).then_some([self.family, self.transfer_family])
    }

    /// The queue of `lane`.
    fn queue_of(&self, lane: QueueLane) -> &Mutex<vk::Queue> {
        match (lane, &self.transfer_queue) {
            (QueueLane::Transfer, Some(q)) => q,
            _ => &self.queue,
        }
    }

    /// `true` when the queue family writes timestamps (and the device can
    /// reset them on the host: Vulkan 1.2).
    pub fn has_timestamps(&self) -> bool {
        self.timestamp_bits > 0
    }

    /// The device's pipeline cache.
    pub fn pipeline_cache(&self) -> &PipelineCache {
        &self.cache
    }

    /// `true` once the device reported `VK_ERROR_DEVICE_LOST` (or was marked
    /// failed): it is not used again.
    pub fn is_lost(&self) -> bool {
        // Acquire: pairs with the Release in `mark_lost`, so a thread seeing
        // `true` also sees what the failing thread did before marking.
        self.lost.load(Ordering::Acquire)
    }

    /// Marks the device as failed.
    pub(crate) fn mark_lost(&self) {
        // Release: see `is_lost`.
        self.lost.store(true, Ordering::Release);
    }

    /// Records a failure: a lost device is marked so that it is not used again.
    pub(crate) fn check<T>(&self, r: Result<T, VkError>) -> Result<T, VkError> {
        if let Err(e) = &r {
            if e.is_device_lost() {
                self.mark_lost();
            }
        }
        r
    }

    /// Submits `cb` to the queue of `lane` once timeline `after.0` reached
    /// `after.1` (where given; the transfer lane waits at the transfer
    /// stage, the compute lane at the compute-shader stage), signalling
    /// timeline `sem` to `value` when it completes.
    ///
    /// # Safety
    /// `cb` is a fully recorded primary command buffer of this device that is
    /// not pending; `sem` belongs to this device and stays alive until the
    /// submission completed; `value` is greater than every value `sem` was
    /// or will be signalled to before it; `after`'s timeline belongs to this
    /// device and stays alive until the submission completed.
    pub(crate) unsafe fn submit_after(
        &self,
        lane: QueueLane,
        cb: vk::CommandBuffer,
        after: Option<(&Timeline, u64)>,
        sem: &Timeline,
        value: u64,
    ) -> Result<(), VkError> {
        let cbs = [cb];
        let sems = [sem.raw()];
        let values = [value];
        // At most one wait: arrays sliced to it, no allocation (every GPU
        // package is submitted through here).
        let wait = after.map(|(t, v)| (t.raw(), v));
        let n = usize::from(wait.is_some());
        let (w, wv) = wait.unwrap_or((vk::Semaphore::null(), 0));
        let (waits, wait_values) = ([w], [wv]);
        let stages = [match lane {
            QueueLane::Transfer | QueueLane::ComputeCopies => vk::PipelineStageFlags::TRANSFER,
            QueueLane::Compute => vk::PipelineStageFlags::COMPUTE_SHADER,
        }];
        let (waits, wait_values, stages) = (&waits[..n], &wait_values[..n], &stages[..n]);
        let mut timeline = vk::TimelineSemaphoreSubmitInfo::default()
            .wait_semaphore_values(wait_values)
            .signal_semaphore_values(&values);
        let submit = vk::SubmitInfo::default()
            .wait_semaphores(waits)
            .wait_dst_stage_mask(stages)
            .command_buffers(&cbs)
            .signal_semaphores(&sems)
            .push_next(&mut timeline);
        let queue = self.queue_of(lane).lock().unwrap_or_else(|p| p.into_inner());
        self.count_submission();
        // SAFETY: the queue is externally synchronised by the mutex held here;
        // the caller guarantees the command buffer, semaphore and value rules.
        let r = unsafe { self.raw.queue_submit(*queue, &[submit], vk::Fence::null()) }
            .call("vkQueueSubmit");
        self.check(r)
    }

    /// Submits `cb` signalling `fence` when it completes ([`SyncMode::Fences`]).
    ///
    /// # Safety
    /// `cb` is a fully recorded primary command buffer of this device that
    /// is not pending; `fence` is an unsignalled fence of this device that no
    /// pending submission uses, alive until the submission completed.
    pub(crate) unsafe fn submit_fenced(
        &self,
        cb: vk::CommandBuffer,
        fence: vk::Fence,
    ) -> Result<(), VkError> {
        let cbs = [cb];
        let submit = vk::SubmitInfo::default().command_buffers(&cbs);
        let queue = self.queue.lock().unwrap_or_else(|p| p.into_inner());
        self.count_submission();
        // SAFETY: the queue is externally synchronised by the mutex held here;
        // the caller guarantees the command buffer and fence rules.
        let r = unsafe { self.raw.queue_submit(*queue, &[submit], fence) }.call("vkQueueSubmit");
        self.check(r)
    }

    /// Submits raw submit infos to the queue (test hooks).
    ///
    /// # Safety
    /// Every command buffer and semaphore in `submits` obeys the rules of
    /// `vkQueueSubmit`.
    #[cfg(feature = "test-hooks")]
    pub(crate) unsafe fn submit_raw(&self, submits: &[vk::SubmitInfo<'_>]) -> Result<(), VkError> {
        let queue = self.queue.lock().unwrap_or_else(|p| p.into_inner());
        self.count_submission();
        // SAFETY: the queue is externally synchronised by the mutex held
        // here; the caller guarantees the submissions' validity.
        let r = unsafe { self.raw.queue_submit(*queue, submits, vk::Fence::null()) }
            .call("vkQueueSubmit");
        self.check(r)
    }

    /// Waits until the queues (compute, and transfer where separate) are
    /// idle.
    pub fn wait_idle(&self) -> Result<(), VkError> {
        for q in std::iter::once(&self.queue).chain(&self.transfer_queue) {
            let queue = q.lock().unwrap_or_else(|p| p.into_inner());
            // SAFETY: the queue is externally synchronised by the mutex held here.
            let r = unsafe { self.raw.queue_wait_idle(*queue) }.call("vkQueueWaitIdle");
            self.check(r)?;
        }
        Ok(())
    }
}

impl Drop for Device {
    fn drop(&mut self) {
        // SAFETY: every object created from this device (buffers, pipelines,
        // rings) holds an Arc to it and is gone; waiting idle first makes sure
        // no submitted work still runs when the device is destroyed.
        unsafe {
            let _ = self.raw.device_wait_idle();
        }
        self.cache.save(&self.raw);
        let primer = self.primer.get_mut().unwrap_or_else(|p| p.into_inner());
        // SAFETY: see above; the cache and the primer are destroyed before
        // their device, and the primer is not used again.
        unsafe {
            if let Some(p) = primer.take() {
                p.destroy(&self.raw);
            }
            self.cache.destroy(&self.raw);
            self.raw.destroy_device(None);
        }
    }
}
